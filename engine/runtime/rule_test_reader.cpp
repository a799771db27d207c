#include "engine/runtime/rule_test_reader.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <type_traits>

#include "engine/event/nvidia.h"
#include "engine/event/schema.h"
#include "engine/ident/known.h"
#include "engine/rules/document.h"
#include "engine/rules/fields.h"

namespace vigil::runtime::test_file {

using rules::parse_ip;

void bad(const YAML::Node& n, std::string msg) { throw BadTest{n.Mark(), std::move(msg)}; }

std::string scalar(const YAML::Node& n, const char* what) {
  if (!n.IsScalar()) bad(n, std::string("'") + what + "' must be a scalar");
  return n.Scalar();
}

std::uint64_t number(const YAML::Node& n, const char* what) {
  std::string s = scalar(n, what);
  std::uint64_t v = 0;
  int base = 10;
  std::string_view t = s;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    base = 16;
    t.remove_prefix(2);
  }
  auto r = std::from_chars(t.data(), t.data() + t.size(), v, base);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size()) bad(n, std::string("'") + what + "' must be a number");
  return v;
}

std::int64_t signed_number(const YAML::Node& n, const char* what) {
  std::string s = scalar(n, what);
  std::int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) bad(n, std::string("'") + what + "' must be a number");
  return v;
}

bool boolean(const YAML::Node& n, const char* what) {
  std::string s = scalar(n, what);
  if (s == "true") return true;
  if (s == "false") return false;
  bad(n, std::string("'") + what + "' must be true or false");
}

std::vector<std::string> strings(const YAML::Node& n, const char* what) {
  std::vector<std::string> v;
  if (!n || n.IsNull()) return v;
  if (n.IsScalar()) {
    v.push_back(n.Scalar());
    return v;
  }
  if (!n.IsSequence()) bad(n, std::string("'") + what + "' must be a list");
  for (const auto& e : n) v.push_back(scalar(e, what));
  return v;
}

namespace {

event::IpAddr ip(const YAML::Node& n, const char* what) {
  event::IpAddr a;
  if (!parse_ip(scalar(n, what), a)) bad(n, std::string("'") + what + "' must be an IP address");
  return a;
}

std::uint32_t open_flags(const YAML::Node& n) {
  std::string s = scalar(n, "flags");
  if (!s.empty() && std::isdigit(static_cast<unsigned char>(s[0])))
    return static_cast<std::uint32_t>(number(n, "flags"));
  static const std::map<std::string, std::uint32_t> kFlags = {
      {"O_RDONLY", O_RDONLY},       {"O_WRONLY", O_WRONLY},     {"O_RDWR", O_RDWR},
      {"O_CREAT", O_CREAT},         {"O_EXCL", O_EXCL},         {"O_TRUNC", O_TRUNC},
      {"O_APPEND", O_APPEND},       {"O_NONBLOCK", O_NONBLOCK}, {"O_CLOEXEC", O_CLOEXEC},
      {"O_DIRECTORY", O_DIRECTORY}, {"O_NOFOLLOW", O_NOFOLLOW}, {"O_PATH", O_PATH},
      {"O_NOCTTY", O_NOCTTY},       {"O_SYNC", O_SYNC}};
  std::uint32_t v = 0;
  std::string_view rest = s;
  while (!rest.empty()) {
    auto bar = rest.find('|');
    std::string name(rest.substr(0, bar));
    name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
    auto it = kFlags.find(name);
    if (it == kFlags.end()) bad(n, "unknown open flag '" + name + "'");
    v |= it->second;
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  return v;
}

// exe_class: shell, interpreter or none (ident::ExeClass).
std::uint8_t exe_class(const YAML::Node& v) {
  std::string c = scalar(v, "exe_class");
  if (c == "shell") return static_cast<std::uint8_t>(ident::ExeClass::kShell);
  if (c == "interpreter") return static_cast<std::uint8_t>(ident::ExeClass::kInterpreter);
  if (c == "none") return static_cast<std::uint8_t>(ident::ExeClass::kNone);
  bad(v, "exe_class must be shell, interpreter or none");
}

// Reads the payload of a test event from its map `e` (the key named like the
// payload: exec:, open:...). Payloads with an overload below accept the
// shorthand the rule tests use (names for NVIDIA numbers, defaults from the
// test's process); every other payload reads its fields by their names in
// event.h (fields()), so a new event type is readable without a case here.
struct PayloadInput {
  const YAML::Node& n;  // the whole event
  const YAML::Node& e;  // its payload map
  const Built& b;
  const std::string& type;
};

template <class T>
void read_fields(const YAML::Node& e, T& d);

template <class T>
void read_value(const YAML::Node& v, const char* name, T& x) {
  if constexpr (std::is_same_v<T, bool>) {
    x = boolean(v, name);
  } else if constexpr (std::is_same_v<T, event::Syscall>) {
    // By name ("symlink") as evt.type shows it.
    std::string s = scalar(v, name);
    x = event::Syscall::kNone;
    for (auto i = 1; i < static_cast<int>(event::Syscall::kCount); ++i) {
      if (event::syscall_name(static_cast<event::Syscall>(i)) == s) x = static_cast<event::Syscall>(i);
    }
    if (x == event::Syscall::kNone) bad(v, std::string("'") + name + "': not a syscall vigil reports: " + s);
  } else if constexpr (std::is_same_v<T, event::L4>) {
    std::string s = scalar(v, name);
    x = s == "tcp"    ? event::L4::kTcp
        : s == "udp"  ? event::L4::kUdp
        : s == "unix" ? event::L4::kUnix
                      : event::L4::kUnknown;
    if (x == event::L4::kUnknown) bad(v, std::string("'") + name + "' must be tcp, udp or unix");
  } else if constexpr (std::is_enum_v<T>) {
    x = static_cast<T>(number(v, name));
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    x = static_cast<T>(signed_number(v, name));
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    // A raw register word (a0..a3): a negative number is its two's
    // complement, as the kernel stores an int argument (-1, an si_code).
    const std::string t = scalar(v, name);
    x = !t.empty() && t[0] == '-' ? static_cast<std::uint64_t>(signed_number(v, name)) : number(v, name);
  } else if constexpr (std::is_integral_v<T>) {
    x = static_cast<T>(number(v, name));
  } else if constexpr (std::is_same_v<T, std::string>) {
    x = scalar(v, name);
  } else if constexpr (std::is_same_v<T, event::IpAddr>) {
    x = ip(v, name);
  } else if constexpr (event::kIsVector<T>) {
    if (!v.IsSequence()) bad(v, std::string("'") + name + "' must be a list");
    x.clear();
    for (const auto& item : v) read_value(item, name, x.emplace_back());
  } else {
    if (!v.IsMap()) bad(v, std::string("'") + name + "' must be a map");
    read_fields(v, x);
  }
}

struct YamlField {
  const std::string& key;
  const YAML::Node& value;
  bool& found;
  std::string& names;
  void appended() {}
  template <class V>
  void operator()(const char* name, V& member, unsigned = 0) {
    names += names.empty() ? name : std::string(", ") + name;
    if (key != name) return;
    read_value(value, name, member);
    found = true;
  }
};

template <class T>
void read_fields(const YAML::Node& e, T& d) {
  for (auto kv = e.begin(); kv != e.end(); ++kv) {
    std::string key = scalar(kv->first, "key");
    bool found = false;
    std::string names;
    YamlField field{key, kv->second, found, names};
    T::fields(field, d);
    if (!found) bad(kv->first, "unknown key '" + key + "' (its fields: " + names + ")");
  }
}

template <class T>
void read_payload(T& d, const PayloadInput& in) {
  if (in.e.IsMap()) read_fields(in.e, d);
}

// The exec reports what the test's process is (every fact of the process
// facts table that both hold); the exec's own keys override a few.
void read_payload(event::ExecData& d, const PayloadInput& in) {
  const YAML::Node& e = in.e;
  const Built& b = in.b;
  event::for_each_exec_fact(b.proc, d, [](const auto& kept, auto& reported) { reported = kept; });
  d.filename = e["filename"] ? scalar(e["filename"], "filename") : b.proc.exepath;
  d.exe = b.proc.exepath;
  d.args.push_back(b.proc.exe);
  d.args.insert(d.args.end(), b.proc.args.begin(), b.proc.args.end());
  if (e["stdin_is_socket"]) d.stdin_is_socket = boolean(e["stdin_is_socket"], "stdin_is_socket");
  if (e["stdout_is_socket"]) d.stdout_is_socket = boolean(e["stdout_is_socket"], "stdout_is_socket");
  if (e["is_32bit"]) d.elf32 = boolean(e["is_32bit"], "is_32bit");
  if (e["args_truncated"]) d.args_truncated = boolean(e["args_truncated"], "args_truncated");
  // The environment belongs to the exec alone (the process table keeps none).
  if (e["env"]) d.env = strings(e["env"], "env");
  if (e["env_truncated"]) d.env_truncated = boolean(e["env_truncated"], "env_truncated");
  if (e["killed_at_exec"]) d.killed_at_exec = boolean(e["killed_at_exec"], "killed_at_exec");
}

void read_payload(event::ForkData& d, const PayloadInput& in) {
  [[maybe_unused]] const YAML::Node& n = in.n;
  [[maybe_unused]] const YAML::Node& e = in.e;
  [[maybe_unused]] const Built& b = in.b;
  [[maybe_unused]] const std::string& type = in.type;
  if (e["child_pid"]) d.child_pid = static_cast<std::uint32_t>(number(e["child_pid"], "child_pid"));
  d.child_tid = d.child_pid;
  if (e["is_thread"]) d.is_thread = boolean(e["is_thread"], "is_thread");
}

void read_payload(event::ExitData& d, const PayloadInput& in) {
  [[maybe_unused]] const YAML::Node& n = in.n;
  [[maybe_unused]] const YAML::Node& e = in.e;
  [[maybe_unused]] const Built& b = in.b;
  [[maybe_unused]] const std::string& type = in.type;
  if (e["code"]) d.exit_code = static_cast<std::int32_t>(signed_number(e["code"], "code"));
  if (e["signal"]) d.signal = static_cast<std::int32_t>(signed_number(e["signal"], "signal"));
}

void read_payload(event::ConnectData& d, const PayloadInput& in) {
  [[maybe_unused]] const YAML::Node& n = in.n;
  [[maybe_unused]] const YAML::Node& e = in.e;
  [[maybe_unused]] const Built& b = in.b;
  [[maybe_unused]] const std::string& type = in.type;
  if (e["proto"]) {
    std::string p = scalar(e["proto"], "proto");
    if (p == "tcp") d.proto = event::L4::kTcp;
    else if (p == "udp") d.proto = event::L4::kUdp;
    else if (p == "unix") d.proto = event::L4::kUnix;
    else bad(e["proto"], "proto must be tcp, udp or unix");
  } else {
    d.proto = type == "connect" ? event::L4::kTcp : event::L4::kUdp;
  }
  if (d.proto == event::L4::kUnix || e["path"]) {
    d.family = AF_UNIX;
    d.proto = event::L4::kUnix;
    if (e["path"]) d.unix_path = scalar(e["path"], "path");
  } else {
    if (!e["daddr"]) bad(n, "a connect event needs 'daddr'");
    d.daddr = ip(e["daddr"], "daddr");
    d.family = d.daddr.family;
    if (e["saddr"]) d.saddr = ip(e["saddr"], "saddr");
    else parse_ip(d.family == AF_INET ? "10.0.0.2" : "fd00::2", d.saddr);
    d.dport = static_cast<std::uint16_t>(e["dport"] ? number(e["dport"], "dport") : 0);
    d.sport = static_cast<std::uint16_t>(e["sport"] ? number(e["sport"], "sport") : 40000);
  }
  if (e["family"]) {
    std::string f = scalar(e["family"], "family");
    d.family = f == "inet6" || f == "ipv6" || f == "AF_INET6" ? AF_INET6
               : f == "unix" || f == "AF_UNIX"                ? AF_UNIX
                                                              : AF_INET;
  }
  d.result = e["result"] ? signed_number(e["result"], "result") : 0;
}

void read_payload(event::OpenData& d, const PayloadInput& in) {
  [[maybe_unused]] const YAML::Node& n = in.n;
  [[maybe_unused]] const YAML::Node& e = in.e;
  [[maybe_unused]] const Built& b = in.b;
  [[maybe_unused]] const std::string& type = in.type;
  if (!e["path"]) bad(n, "an open event needs 'path'");
  d.path = scalar(e["path"], "path");
  if (e["raw"]) d.raw = scalar(e["raw"], "raw");
  d.flags = e["flags"] ? open_flags(e["flags"]) : O_RDONLY;
  if (e["mode"]) d.mode = static_cast<std::uint32_t>(number(e["mode"], "mode"));
  if (e["major"] || e["minor"]) {
    d.is_device = true;
    d.dev_major = static_cast<std::uint32_t>(e["major"] ? number(e["major"], "major") : event::nvidia::kMajor);
    d.dev_minor = static_cast<std::uint32_t>(e["minor"] ? number(e["minor"], "minor") : 0);
  } else if (d.path.rfind("/dev/nvidia", 0) == 0) {
    // A stand-in device node: the conventional numbers for its name.
    int idx = event::nvidia::gpu_index_from_path(d.path);
    d.is_device = true;
    d.dev_major = event::nvidia::kMajor;
    if (idx >= 0) d.dev_minor = static_cast<std::uint32_t>(idx);
    else if (d.path == "/dev/nvidiactl") d.dev_minor = event::nvidia::kCtlMinor;
    else if (d.path == "/dev/nvidia-modeset") d.dev_minor = event::nvidia::kModesetMinor;
    else d.is_device = false;
  }
  d.result = e["result"] ? signed_number(e["result"], "result") : 3;
  if (e["file_type"]) {
    const std::string t = scalar(e["file_type"], "file_type");
    if (t == "file") d.file_type = event::OpenData::kFileRegular;
    else if (t == "directory") d.file_type = event::OpenData::kFileDirectory;
    else if (t == "pipe") d.file_type = event::OpenData::kFileFifo;
    else if (t == "device") d.file_type = event::OpenData::kFileDevice;
    else bad(e["file_type"], "file_type must be file, directory, pipe or device");
  } else if (d.result >= 0) {
    d.file_type = d.is_device ? event::OpenData::kFileDevice : event::OpenData::kFileRegular;
  }
}

void read_payload(event::IoctlData& d, const PayloadInput& in) {
  [[maybe_unused]] const YAML::Node& n = in.n;
  [[maybe_unused]] const YAML::Node& e = in.e;
  [[maybe_unused]] const Built& b = in.b;
  [[maybe_unused]] const std::string& type = in.type;
  if (e["nr"]) {
    std::string s = scalar(e["nr"], "nr");
    if (auto v = event::nvidia::escape_from_name(s)) d.nr = *v;
    else d.nr = static_cast<std::uint32_t>(number(e["nr"], "nr"));
  }
  if (e["rm_class"]) {
    std::string s = scalar(e["rm_class"], "rm_class");
    if (auto v = event::nvidia::class_from_name(s)) d.rm_class = *v;
    else d.rm_class = static_cast<std::uint32_t>(number(e["rm_class"], "rm_class"));
    if (!e["nr"]) d.nr = event::nvidia::kEscRmAlloc;
  }
  if (e["rm_control"]) {
    d.rm_control = static_cast<std::uint32_t>(number(e["rm_control"], "rm_control"));
    if (!e["nr"]) d.nr = event::nvidia::kEscRmControl;
  }
  d.dev_major = static_cast<std::uint32_t>(e["major"] ? number(e["major"], "major") : event::nvidia::kMajor);
  d.dev_minor = static_cast<std::uint32_t>(e["minor"] ? number(e["minor"], "minor") : event::nvidia::kCtlMinor);
  if (e["uvm"]) d.uvm = boolean(e["uvm"], "uvm");
  if (e["cmd"]) d.cmd = static_cast<std::uint32_t>(number(e["cmd"], "cmd"));
  if (e["fd"]) d.fd = static_cast<std::int32_t>(signed_number(e["fd"], "fd"));
  if (e["result"]) d.result = signed_number(e["result"], "result");
}

void read_payload(event::GpuUsageData& d, const PayloadInput& in) {
  [[maybe_unused]] const YAML::Node& n = in.n;
  [[maybe_unused]] const YAML::Node& e = in.e;
  [[maybe_unused]] const Built& b = in.b;
  [[maybe_unused]] const std::string& type = in.type;
  if (e["interval_ms"]) d.interval_ns = number(e["interval_ms"], "interval_ms") * 1000000ull;
  if (e["entries"]) {
    for (const auto& en : e["entries"]) {
      event::GpuUsageData::Entry x;
      x.dev_major = event::nvidia::kMajor;
      if (en["minor"]) x.dev_minor = static_cast<std::uint32_t>(number(en["minor"], "minor"));
      if (en["nr"]) {
        std::string s = scalar(en["nr"], "nr");
        if (auto v = event::nvidia::escape_from_name(s)) x.nr = *v;
        else x.nr = static_cast<std::uint32_t>(number(en["nr"], "nr"));
      }
      if (en["count"]) x.count = number(en["count"], "count");
      d.entries.push_back(x);
    }
  }
}

void read_payload(event::XidData& d, const PayloadInput& in) {
  [[maybe_unused]] const YAML::Node& n = in.n;
  [[maybe_unused]] const YAML::Node& e = in.e;
  [[maybe_unused]] const Built& b = in.b;
  [[maybe_unused]] const std::string& type = in.type;
  if (e["code"]) d.code = static_cast<std::uint32_t>(number(e["code"], "code"));
  if (e["pci"]) d.pci = scalar(e["pci"], "pci");
  if (e["text"]) d.text = scalar(e["text"], "text");
  if (e["pid"]) d.xid_pid = static_cast<std::uint32_t>(number(e["pid"], "pid"));
  if (e["comm"]) d.xid_comm = scalar(e["comm"], "comm");
  d.source = e["source"] ? scalar(e["source"], "source") : "kmsg";
  if (e["facility"]) d.facility = static_cast<std::int32_t>(signed_number(e["facility"], "facility"));
  else if (d.source == "kmsg") d.facility = 0;
  if (e["level"]) d.level = static_cast<std::int32_t>(signed_number(e["level"], "level"));
}

void read_payload(event::DnsData& d, const PayloadInput& in) {
  [[maybe_unused]] const YAML::Node& n = in.n;
  [[maybe_unused]] const YAML::Node& e = in.e;
  [[maybe_unused]] const Built& b = in.b;
  [[maybe_unused]] const std::string& type = in.type;
  if (e["name"]) d.name = scalar(e["name"], "name");
  d.qtype = 1;
  if (e["qtype"]) {
    std::string q = scalar(e["qtype"], "qtype");
    if (q == "A") d.qtype = 1;
    else if (q == "AAAA") d.qtype = 28;
    else if (q == "TXT") d.qtype = 16;
    else if (q == "CNAME") d.qtype = 5;
    else d.qtype = static_cast<std::uint16_t>(number(e["qtype"], "qtype"));
  }
  if (e["answers"]) {
    for (const auto& a : e["answers"]) d.answers.push_back(ip(a, "answers"));
    d.is_response = true;
  }
  if (e["response"]) d.is_response = boolean(e["response"], "response");
  if (e["rcode"]) d.rcode = static_cast<std::uint16_t>(number(e["rcode"], "rcode"));
  if (e["server"]) d.server = ip(e["server"], "server");
  else parse_ip("10.96.0.10", d.server);
  d.server_port = 53;
}

void read_payload(event::PayloadData& d, const PayloadInput& in) {
  [[maybe_unused]] const YAML::Node& n = in.n;
  [[maybe_unused]] const YAML::Node& e = in.e;
  [[maybe_unused]] const Built& b = in.b;
  [[maybe_unused]] const std::string& type = in.type;
  if (!e["daddr"]) bad(n, "a payload event needs 'daddr'");
  d.daddr = ip(e["daddr"], "daddr");
  d.family = d.daddr.family;
  parse_ip(d.family == AF_INET ? "10.0.0.2" : "fd00::2", d.saddr);
  d.sport = 40000;
  if (e["dport"]) d.dport = static_cast<std::uint16_t>(number(e["dport"], "dport"));
  if (e["bytes"]) d.bytes = scalar(e["bytes"], "bytes");
}

// A plugin event: its envelope, and its data as text (`data`) or as the hex
// that capture JSON writes (`data_hex`), for binary encodings.
void read_payload(event::PluginData& d, const PayloadInput& in) {
  const YAML::Node& e = in.e;
  if (e["plugin"]) d.plugin = scalar(e["plugin"], "plugin");
  if (e["source"]) d.source = scalar(e["source"], "source");
  if (d.source.empty()) d.source = d.plugin;
  if (d.source.empty()) bad(in.n, "a pluginevent needs its 'source' (or 'plugin')");
  if (d.plugin.empty()) d.plugin = d.source;
  d.name = e["name"] ? scalar(e["name"], "name") : "event";
  if (e["gpu_minor"]) d.gpu_minor = static_cast<std::int32_t>(signed_number(e["gpu_minor"], "gpu_minor"));
  if (e["data"] && e["data_hex"]) bad(e, "a pluginevent has 'data' or 'data_hex', not both");
  if (e["data"]) d.data = scalar(e["data"], "data");
  if (e["data_hex"]) {
    const std::string hex = scalar(e["data_hex"], "data_hex");
    if (hex.size() % 2 != 0) bad(e["data_hex"], "'data_hex' must have an even number of hex digits");
    auto digit = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      bad(e["data_hex"], std::string("'data_hex' holds a non-hex character '") + c + "'");
    };
    d.data.reserve(hex.size() / 2);
    for (std::size_t i = 0; i < hex.size(); i += 2) {
      d.data.push_back(static_cast<char>(digit(hex[i]) * 16 + digit(hex[i + 1])));
    }
  }
}

void read_payload(event::BpfData& d, const PayloadInput& in) {
  [[maybe_unused]] const YAML::Node& n = in.n;
  [[maybe_unused]] const YAML::Node& e = in.e;
  [[maybe_unused]] const Built& b = in.b;
  [[maybe_unused]] const std::string& type = in.type;
  if (e["cmd"]) {
    static const std::map<std::string, std::uint32_t> kCmds = {{"BPF_MAP_CREATE", 0},
                                                               {"BPF_PROG_LOAD", 5},
                                                               {"BPF_OBJ_PIN", 6},
                                                               {"BPF_OBJ_GET", 7},
                                                               {"BPF_PROG_ATTACH", 8},
                                                               {"BPF_PROG_DETACH", 9},
                                                               {"BPF_PROG_GET_NEXT_ID", 11},
                                                               {"BPF_MAP_GET_NEXT_ID", 12},
                                                               {"BPF_PROG_GET_FD_BY_ID", 13},
                                                               {"BPF_MAP_GET_FD_BY_ID", 14},
                                                               {"BPF_OBJ_GET_INFO_BY_FD", 15},
                                                               {"BPF_PROG_QUERY", 16},
                                                               {"BPF_RAW_TRACEPOINT_OPEN", 17},
                                                               {"BPF_BTF_GET_FD_BY_ID", 19},
                                                               {"BPF_TASK_FD_QUERY", 20},
                                                               {"BPF_BTF_GET_NEXT_ID", 23},
                                                               {"BPF_LINK_CREATE", 28},
                                                               {"BPF_LINK_UPDATE", 29},
                                                               {"BPF_LINK_GET_FD_BY_ID", 30},
                                                               {"BPF_LINK_GET_NEXT_ID", 31},
                                                               {"BPF_LINK_DETACH", 34}};
    std::string s = scalar(e["cmd"], "cmd");
    auto it = kCmds.find(s);
    d.cmd = it != kCmds.end() ? it->second : static_cast<std::uint32_t>(number(e["cmd"], "cmd"));
  }
  if (e["prog_type"]) d.prog_type = static_cast<std::uint32_t>(number(e["prog_type"], "prog_type"));
  if (e["prog_name"]) d.prog_name = scalar(e["prog_name"], "prog_name");
  if (e["result"]) d.result = signed_number(e["result"], "result");
}

// The test's names for three facts (docs/rules-testing.md); every other
// fact is read by its name in the process facts table.
std::string_view fact_named(std::string_view key) {
  if (key == "name") return "comm";
  if (key == "is_32bit") return "elf32";
  if (key == "start_ns") return "start_ts_ns";
  return key;
}

// Reads the process fact named `key`, when there is one.
struct ProcessFact {
  std::string_view key;
  const YAML::Node& value;
  bool& found;
  void revision(int) {}
  template <class V>
  void operator()(const char* name, V& member) {
    if (key != name) return;
    found = true;
    if constexpr (std::is_same_v<V, std::vector<std::string>>) {
      member = strings(value, name);
    } else if constexpr (std::is_integral_v<V> && std::is_unsigned_v<V> && !std::is_same_v<V, bool>) {
      // -1 is the all-ones value (loginuid: -1, none).
      const std::string s = scalar(value, name);
      member =
          !s.empty() && s[0] == '-' ? static_cast<V>(signed_number(value, name)) : static_cast<V>(number(value, name));
    } else {
      read_value(value, name, member);
    }
  }
};

state::Process make_process(const YAML::Node& n, bool leaf) {
  state::Process p;
  if (!n || !n.IsMap()) bad(n, "a process must be a map");
  for (auto kv = n.begin(); kv != n.end(); ++kv) {
    std::string k = scalar(kv->first, "key");
    const YAML::Node v = kv->second;
    if (k == "exe_class") {
      p.exe_class = exe_class(v);
      continue;
    }
    bool found = false;
    ProcessFact fact{fact_named(k), v, found};
    state::Process::fields(fact, p);
    if (!found) bad(kv->first, "unknown process key '" + k + "'");
  }
  if (p.pid == 0) bad(n, "a process needs a 'pid'");
  if (p.comm.size() > 15) p.comm.resize(15);
  if (p.exe.empty()) p.exe = p.exepath;
  // A known program's class follows from its name unless the test says.
  if (!p.exe_known_as.empty() && !n["exe_class"]) {
    for (const auto& c : ident::candidates())
      if (c.name == p.exe_known_as) p.exe_class = static_cast<std::uint8_t>(c.cls);
  }
  if (p.comm.empty() && !p.exepath.empty()) {
    auto s = p.exepath.rfind('/');
    p.comm = p.exepath.substr(s == std::string::npos ? 0 : s + 1).substr(0, 15);
  }
  // The test's own process is what its exec made: the image it ran before
  // is only what prior_cmdlines says.
  if (!n["image_unknown"]) p.image_unknown = leaf;
  return p;
}

}  // namespace

Built build_context(const Context& c) {
  Built b;
  if (!c.process) bad(YAML::Node(), "the test has no 'process'");
  b.proc = make_process(c.process, true);
  if (c.parents) {
    if (!c.parents.IsSequence()) bad(c.parents, "'parents' must be a list");
    for (const auto& p : c.parents) b.parents.push_back(make_process(p, false));
  }
  // Chain: the process's parent is parents[0], whose parent is parents[1], ...
  if (!b.parents.empty() && b.proc.ppid == 0) b.proc.ppid = b.parents[0].pid;
  for (std::size_t i = 0; i + 1 < b.parents.size(); ++i) {
    if (b.parents[i].ppid == 0) b.parents[i].ppid = b.parents[i + 1].pid;
  }
  if (c.container && !c.container.IsNull()) {
    state::Container ct;
    const YAML::Node& n = c.container;
    if (!n.IsMap()) bad(n, "'container' must be a map");
    for (auto kv = n.begin(); kv != n.end(); ++kv) {
      std::string k = scalar(kv->first, "key");
      const YAML::Node v = kv->second;
      if (k == "id") ct.id = scalar(v, "id");
      else if (k == "name") ct.name = scalar(v, "name");
      else if (k == "image") ct.image = scalar(v, "image");
      else if (k == "image_id") ct.image_id = scalar(v, "image_id");
      else if (k == "runtime") ct.runtime = scalar(v, "runtime");
      else if (k == "privileged") ct.privileged = boolean(v, "privileged");
      else bad(kv->first, "unknown container key '" + k + "'");
    }
    if (ct.id.empty()) bad(n, "a container needs an 'id'");
    if (ct.runtime.empty()) ct.runtime = state::ContainerRuntime::kContainerd;
    b.container = ct;
  }
  if (c.pod && !c.pod.IsNull()) {
    if (!b.container) bad(c.pod, "a 'pod' needs a 'container'");
    state::Pod pod;
    state::PodContainer pc;
    pc.id = b.container->id;
    pc.name = b.container->name;
    pc.image = b.container->image;
    pc.privileged = b.container->privileged;
    const YAML::Node& n = c.pod;
    if (!n.IsMap()) bad(n, "'pod' must be a map");
    for (auto kv = n.begin(); kv != n.end(); ++kv) {
      std::string k = scalar(kv->first, "key");
      const YAML::Node v = kv->second;
      if (k == "name") pod.name = scalar(v, "name");
      else if (k == "namespace") pod.ns = scalar(v, "namespace");
      else if (k == "uid") pod.uid = scalar(v, "uid");
      else if (k == "node") pod.node = scalar(v, "node");
      else if (k == "labels" || k == "annotations") {
        if (!v.IsMap()) bad(v, "'" + k + "' must be a map");
        auto& m = k == "labels" ? pod.labels : pod.annotations;
        for (auto l = v.begin(); l != v.end(); ++l) m[scalar(l->first, "label")] = scalar(l->second, "label");
      } else if (k == "gpu_limit") pc.gpu_limit = signed_number(v, "gpu_limit");
      else if (k == "nvidia_visible_devices") pc.nvidia_visible_devices = scalar(v, k.c_str());
      else if (k == "gpu_devices") pc.gpu_devices = strings(v, "gpu_devices");
      else if (k == "owner_kind") pod.owner_kind = scalar(v, "owner_kind");
      else if (k == "owner_name") pod.owner_name = scalar(v, "owner_name");
      else bad(kv->first, "unknown pod key '" + k + "'");
    }
    if (pod.uid.empty()) pod.uid = "pod-" + pod.ns + "-" + pod.name;
    pod.containers.push_back(pc);
    b.container->pod_uid = pod.uid;
    b.pod = pod;
  }
  if (b.container) {
    b.proc.container_id = b.container->id;
    for (auto& p : b.parents) {
      // Ancestors inside the container share it until the runtime's shim.
      if (p.exepath.find("containerd-shim") == std::string::npos && p.pid != 1) p.container_id = b.container->id;
    }
  }
  return b;
}

bool same(const state::Process& a, const state::Process& b) {
  bool eq = true;
  event::for_each_process_fact(a, b, [&](const char*, const auto& x, const auto& y) { eq = eq && x == y; });
  return eq;
}

YAML::Node merged(const YAML::Node& base, const YAML::Node& over) {
  if (!over) return base;
  if (!base || !base.IsMap() || !over.IsMap()) return over;
  YAML::Node m = YAML::Clone(base);
  for (auto kv = over.begin(); kv != over.end(); ++kv) m[kv->first.Scalar()] = kv->second;
  return m;
}

// `after: 30s`: the time since the previous event, as a sequence's `within`
// is written (ms, s, m, h); `0s` is the same instant.
std::uint64_t after_ns(const YAML::Node& n) {
  const std::string s = scalar(n, "after");
  if (s == "0s" || s == "0ms" || s == "0") return 0;
  std::uint64_t ns = 0;
  std::string err;
  if (!rules::parse_window(s, ns, err)) bad(n, "'after': a duration such as 30s or 500ms (at most 24h)");
  return ns;
}

event::Event make_event(const YAML::Node& n, const Built& b, std::uint64_t ts) {
  event::Event ev;
  std::string type = scalar(n["type"], "type");
  ev.hdr.ts_ns = ts;
  ev.hdr.pid = b.proc.pid;
  ev.hdr.tid = b.proc.pid;
  ev.hdr.ppid = b.proc.ppid;
  ev.hdr.uid = b.proc.uid;
  ev.hdr.gid = b.proc.gid;
  ev.hdr.comm = b.proc.comm;
  // `thread: {tid, name}`: the thread that made the call and its comm as the
  // event carries it (a worker thread, a name set by prctl(PR_SET_NAME));
  // by default the main thread under the process's name.
  if (const YAML::Node th = n["thread"]) {
    if (!th.IsMap()) bad(th, "'thread' must be a map with 'tid' and/or 'name'");
    for (auto kv = th.begin(); kv != th.end(); ++kv) {
      const std::string k = scalar(kv->first, "thread key");
      if (k == "tid") ev.hdr.tid = static_cast<std::uint32_t>(number(kv->second, "tid"));
      else if (k == "name") ev.hdr.comm = scalar(kv->second, "name").substr(0, 15);
      else bad(kv->first, "unknown 'thread' key '" + k + "' (tid, name)");
    }
  }
  ev.hdr.type = event::type_from_name(type);
  if (ev.hdr.type == event::Type::kUnknown) bad(n["type"], "unknown event type '" + type + "'");
  ev.data = event::make_payload(ev.hdr.type);
  const std::string_view key = event::info(ev.hdr.type).payload_key;
  const YAML::Node e = n[std::string(key)] ? n[std::string(key)] : YAML::Node(YAML::NodeType::Map);
  std::visit(
      [&](auto& d) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(d)>, std::monostate>) {
          read_payload(d, PayloadInput{n, e, b, type});
        }
      },
      ev.data);
  return ev;
}

// `baseline:` (the file's, then the test's keys over it): baselines on for
// the test, profiles in memory only (docs/rules-testing.md).
std::optional<baseline::Config> baseline_config(const YAML::Node& file_level, const YAML::Node& test_level) {
  if ((!file_level || file_level.IsNull()) && (!test_level || test_level.IsNull())) return std::nullopt;
  if (test_level && test_level.IsScalar()) {  // `baseline: off` in a test: baselines off for it
    if (test_level.Scalar() == "off" || test_level.Scalar() == "false") return std::nullopt;
    bad(test_level, "'baseline' must be a map, or off");
  }
  baseline::Config c;
  for (const YAML::Node& n : {file_level, test_level}) {
    if (!n || n.IsNull()) continue;
    if (!n.IsMap()) bad(n, "'baseline' must be a map");
    for (auto kv = n.begin(); kv != n.end(); ++kv) {
      const std::string k = scalar(kv->first, "key");
      const YAML::Node v = kv->second;
      if (k == "key") {
        auto m = baseline::key_mode_from_name(scalar(v, "key"));
        if (!m) bad(v, "baseline key: image, image_digest or owner");
        c.key = *m;
      } else if (k == "learn_for") {
        c.learn_for_ns = scalar(v, "learn_for") == "0" ? 0 : after_ns(v);
      } else if (k == "v4_prefix") {
        c.v4_prefix = static_cast<int>(std::min<std::uint64_t>(number(v, "v4_prefix"), 32));
      } else if (k == "v6_prefix") {
        c.v6_prefix = static_cast<int>(std::min<std::uint64_t>(number(v, "v6_prefix"), 128));
      } else if (k == "ephemeral_from") {
        c.ephemeral_from = static_cast<std::uint32_t>(std::min<std::uint64_t>(number(v, "ephemeral_from"), 65535));
      } else if (k == "watch_paths") {
        c.watch_paths = strings(v, "watch_paths");
      } else if (k == "max_workloads") {
        c.max_workloads = number(v, "max_workloads");
      } else if (k == "max_exes") {
        c.caps.exes = number(v, "max_exes");
      } else if (k == "max_destinations") {
        c.caps.destinations = number(v, "max_destinations");
      } else if (k == "max_files") {
        c.caps.files = number(v, "max_files");
      } else if (k == "max_gpu_classes") {
        c.caps.gpu_classes = number(v, "max_gpu_classes");
      } else {
        bad(kv->first, "unknown baseline key '" + k +
                           "' (key, learn_for, v4_prefix, v6_prefix, ephemeral_from, watch_paths, "
                           "max_workloads, max_exes, max_destinations, max_files, max_gpu_classes)");
      }
    }
  }
  return c;
}

Expectation expectation(const YAML::Node& n) {
  Expectation e;
  if (!n || n.IsNull()) return e;
  if (!n.IsMap()) bad(n, "'expect' must be a map");
  e.fire = strings(n["fire"], "fire");
  e.not_fire = strings(n["not_fire"], "not_fire");
  if (n["output"]) {
    if (!n["output"].IsMap()) bad(n["output"], "'output' must be a map of rule: text");
    for (auto kv = n["output"].begin(); kv != n["output"].end(); ++kv) {
      e.output[scalar(kv->first, "rule")] = scalar(kv->second, "output");
    }
  }
  return e;
}

}  // namespace vigil::runtime::test_file
