#include "engine/capture/codec.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace vigil::capture {
namespace {

// ---- CRC-32C ---------------------------------------------------------------

constexpr std::uint32_t kCrcPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

using CrcTables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr CrcTables make_crc_tables() {
  CrcTables t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kCrcPoly : c >> 1;
    t[0][i] = c;
  }
  for (std::uint32_t i = 0; i < 256; ++i) {
    for (std::size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
  return t;
}

constexpr CrcTables kCrcTables = make_crc_tables();

std::uint32_t crc32c_soft(std::uint32_t crc, const unsigned char* p, std::size_t n) {
  while (n >= 8) {
    std::uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;
    crc = kCrcTables[7][lo & 0xff] ^ kCrcTables[6][(lo >> 8) & 0xff] ^
          kCrcTables[5][(lo >> 16) & 0xff] ^ kCrcTables[4][lo >> 24] ^
          kCrcTables[3][hi & 0xff] ^ kCrcTables[2][(hi >> 8) & 0xff] ^
          kCrcTables[1][(hi >> 16) & 0xff] ^ kCrcTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ kCrcTables[0][(crc ^ *p++) & 0xff];
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t crc32c_hw(std::uint32_t crc,
                                                          const unsigned char* p,
                                                          std::size_t n) {
  std::uint64_t c = crc;
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

bool have_sse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

// ---- encoding ---------------------------------------------------------------

void put_u8(std::string& out, std::uint8_t v) { out.push_back(static_cast<char>(v)); }
void put_i32(std::string& out, std::int32_t v) { put_u32(out, static_cast<std::uint32_t>(v)); }
void put_i64(std::string& out, std::int64_t v) { put_u64(out, static_cast<std::uint64_t>(v)); }
void put_bool(std::string& out, bool v) { put_u8(out, v ? 1 : 0); }
void put_str(std::string& out, std::string_view s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out.append(s.data(), s.size());
}
void put_strs(std::string& out, const std::vector<std::string>& v) {
  put_u32(out, static_cast<std::uint32_t>(v.size()));
  for (const auto& s : v) put_str(out, s);
}
void put_ip(std::string& out, const event::IpAddr& a) {
  put_u8(out, a.family);
  out.append(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size());
}
void put_map(std::string& out, const std::map<std::string, std::string>& m) {
  put_u32(out, static_cast<std::uint32_t>(m.size()));
  for (const auto& [k, v] : m) {
    put_str(out, k);
    put_str(out, v);
  }
}

// Reserves the record header, lets `body` append the body, then fills the length.
template <typename F>
void with_record(std::string& out, RecordType type, F&& body) {
  put_u8(out, static_cast<std::uint8_t>(type));
  std::size_t len_at = out.size();
  put_u32(out, 0);
  body();
  auto len = static_cast<std::uint32_t>(out.size() - len_at - 4);
  unsigned char b[4] = {static_cast<unsigned char>(len), static_cast<unsigned char>(len >> 8),
                        static_cast<unsigned char>(len >> 16),
                        static_cast<unsigned char>(len >> 24)};
  std::memcpy(out.data() + len_at, b, 4);
}

void put_payload(std::string& out, const event::Payload& data) {
  using namespace event;
  put_u8(out, static_cast<std::uint8_t>(data.index()));
  std::visit(
      [&](const auto& d) {
        using T = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<T, ExecData>) {
          put_str(out, d.filename);
          put_str(out, d.exe);
          put_strs(out, d.args);
          put_bool(out, d.args_truncated);
          put_str(out, d.cwd);
          put_u32(out, d.tty);
          put_u32(out, d.loginuid);
          put_bool(out, d.stdin_is_socket);
          put_bool(out, d.stdout_is_socket);
          put_bool(out, d.elf32);
        } else if constexpr (std::is_same_v<T, ForkData>) {
          put_u32(out, d.child_pid);
          put_u32(out, d.child_tid);
          put_bool(out, d.is_thread);
        } else if constexpr (std::is_same_v<T, ExitData>) {
          put_i32(out, d.exit_code);
          put_i32(out, d.signal);
        } else if constexpr (std::is_same_v<T, ConnectData>) {
          put_u8(out, d.family);
          put_u8(out, static_cast<std::uint8_t>(d.proto));
          put_ip(out, d.saddr);
          put_u16(out, d.sport);
          put_ip(out, d.daddr);
          put_u16(out, d.dport);
          put_str(out, d.unix_path);
          put_i64(out, d.result);
        } else if constexpr (std::is_same_v<T, OpenData>) {
          put_str(out, d.path);
          put_u32(out, d.flags);
          put_u32(out, d.mode);
          put_i64(out, d.result);
          put_u32(out, d.dev_major);
          put_u32(out, d.dev_minor);
          put_bool(out, d.is_device);
          put_str(out, d.raw);  // appended after is_device: older captures end before it
        } else if constexpr (std::is_same_v<T, IoctlData>) {
          put_i32(out, d.fd);
          put_u32(out, d.cmd);
          put_u32(out, d.nr);
          put_bool(out, d.xfer);
          put_bool(out, d.uvm);
          put_u32(out, d.dev_major);
          put_u32(out, d.dev_minor);
          put_u32(out, d.rm_class);
          put_u32(out, d.rm_control);
          put_i64(out, d.result);
          put_u32(out, d.rm_status);
        } else if constexpr (std::is_same_v<T, GpuUsageData>) {
          put_u64(out, d.interval_ns);
          put_u32(out, static_cast<std::uint32_t>(d.entries.size()));
          for (const auto& e : d.entries) {
            put_u32(out, e.dev_major);
            put_u32(out, e.dev_minor);
            put_u32(out, e.nr);
            put_u64(out, e.count);
          }
        } else if constexpr (std::is_same_v<T, XidData>) {
          put_str(out, d.source);
          put_i32(out, d.facility);
          put_i32(out, d.level);
          put_str(out, d.pci);
          put_u32(out, d.code);
          put_u32(out, d.xid_pid);
          put_str(out, d.xid_comm);
          put_str(out, d.text);
        } else if constexpr (std::is_same_v<T, DnsData>) {
          put_bool(out, d.is_response);
          put_u16(out, d.id);
          put_str(out, d.name);
          put_u16(out, d.qtype);
          put_u16(out, d.rcode);
          put_u32(out, static_cast<std::uint32_t>(d.answers.size()));
          for (const auto& a : d.answers) put_ip(out, a);
          put_ip(out, d.server);
          put_u16(out, d.server_port);
        } else if constexpr (std::is_same_v<T, PayloadData>) {
          put_u8(out, d.family);
          put_ip(out, d.saddr);
          put_u16(out, d.sport);
          put_ip(out, d.daddr);
          put_u16(out, d.dport);
          put_str(out, d.bytes);
          put_bool(out, d.truncated);
        } else if constexpr (std::is_same_v<T, BpfData>) {
          put_u32(out, d.cmd);
          put_u32(out, d.prog_type);
          put_str(out, d.prog_name);
          put_i64(out, d.result);
        }
      },
      data);
}

// ---- decoding ---------------------------------------------------------------

// Reads fields from a bounded span. The first failure sets `bad` with the field
// name; later reads return zero values, so callers check once at the end.
class Cursor {
 public:
  explicit Cursor(std::string_view s)
      : p_(reinterpret_cast<const unsigned char*>(s.data())), end_(p_ + s.size()) {}

  bool failed() const { return bad_ != nullptr; }
  const char* failure() const { return bad_; }
  std::size_t left() const { return static_cast<std::size_t>(end_ - p_); }

  bool need(std::size_t n, const char* what) {
    if (bad_) return false;
    if (left() < n) {
      bad_ = what;
      return false;
    }
    return true;
  }
  std::uint8_t u8(const char* what) { return need(1, what) ? *p_++ : 0; }
  bool boolean(const char* what) { return u8(what) != 0; }
  std::uint16_t u16(const char* what) {
    if (!need(2, what)) return 0;
    auto v = get_u16(p_);
    p_ += 2;
    return v;
  }
  std::uint32_t u32(const char* what) {
    if (!need(4, what)) return 0;
    auto v = get_u32(p_);
    p_ += 4;
    return v;
  }
  std::uint64_t u64(const char* what) {
    if (!need(8, what)) return 0;
    auto v = get_u64(p_);
    p_ += 8;
    return v;
  }
  std::int32_t i32(const char* what) { return static_cast<std::int32_t>(u32(what)); }
  std::int64_t i64(const char* what) { return static_cast<std::int64_t>(u64(what)); }
  void str(std::string& s, const char* what) {
    std::uint32_t n = u32(what);
    if (!need(n, what)) return;
    s.assign(reinterpret_cast<const char*>(p_), n);
    p_ += n;
  }
  // A string of at most `max` bytes; a longer one is malformed.
  void bounded_str(std::string& s, std::size_t max, const char* what) {
    std::uint32_t n = u32(what);
    if (!bad_ && n > max) {
      bad_ = what;
      return;
    }
    if (!need(n, what)) return;
    s.assign(reinterpret_cast<const char*>(p_), n);
    p_ += n;
  }
  // A count of items each at least `min_size` bytes long: bounded by what remains.
  std::uint32_t count(std::size_t min_size, const char* what) {
    std::uint32_t n = u32(what);
    if (!bad_ && static_cast<std::uint64_t>(n) * min_size > left()) {
      bad_ = what;
      return 0;
    }
    return n;
  }
  void strs(std::vector<std::string>& v, const char* what) {
    std::uint32_t n = count(4, what);
    v.clear();
    v.reserve(n);
    for (std::uint32_t i = 0; i < n && !bad_; ++i) str(v.emplace_back(), what);
  }
  void ip(event::IpAddr& a, const char* what) {
    if (!need(17, what)) return;
    a.family = *p_++;
    std::memcpy(a.bytes.data(), p_, 16);
    p_ += 16;
  }
  void map(std::map<std::string, std::string>& m, const char* what) {
    std::uint32_t n = count(8, what);
    m.clear();
    for (std::uint32_t i = 0; i < n && !bad_; ++i) {
      std::string k, v;
      str(k, what);
      str(v, what);
      m.emplace(std::move(k), std::move(v));
    }
  }

 private:
  const unsigned char* p_;
  const unsigned char* end_;
  const char* bad_ = nullptr;
};

// The payload alternative T, reusing the one `data` holds (and its string and
// vector capacity) when it is already a T. Every field is assigned after this.
template <typename T>
T& reuse(event::Payload& data) {
  if (auto* p = std::get_if<T>(&data)) return *p;
  return data.emplace<T>();
}

// Returns false when the payload kind is not one this version knows (skip).
bool get_payload(Cursor& c, std::uint8_t kind, event::Payload& data) {
  using namespace event;
  switch (kind) {
    case 0:
      data = std::monostate{};
      return true;
    case 1: {
      ExecData& d = reuse<ExecData>(data);
      c.str(d.filename, "exec.filename");
      c.str(d.exe, "exec.exe");
      c.strs(d.args, "exec.args");
      d.args_truncated = c.boolean("exec.args_truncated");
      c.str(d.cwd, "exec.cwd");
      d.tty = c.u32("exec.tty");
      d.loginuid = c.u32("exec.loginuid");
      d.stdin_is_socket = c.boolean("exec.stdin_is_socket");
      d.stdout_is_socket = c.boolean("exec.stdout_is_socket");
      d.elf32 = c.left() > 0 && c.boolean("exec.elf32");  // appended later: absent in older files
      return true;
    }
    case 2: {
      ForkData& d = reuse<ForkData>(data);
      d.child_pid = c.u32("fork.child_pid");
      d.child_tid = c.u32("fork.child_tid");
      d.is_thread = c.boolean("fork.is_thread");
      return true;
    }
    case 3: {
      ExitData& d = reuse<ExitData>(data);
      d.exit_code = c.i32("exit.exit_code");
      d.signal = c.i32("exit.signal");
      return true;
    }
    case 4: {
      ConnectData& d = reuse<ConnectData>(data);
      d.family = c.u8("connect.family");
      d.proto = static_cast<L4>(c.u8("connect.proto"));
      c.ip(d.saddr, "connect.saddr");
      d.sport = c.u16("connect.sport");
      c.ip(d.daddr, "connect.daddr");
      d.dport = c.u16("connect.dport");
      c.str(d.unix_path, "connect.unix_path");
      d.result = c.i64("connect.result");
      return true;
    }
    case 5: {
      OpenData& d = reuse<OpenData>(data);
      c.str(d.path, "open.path");
      d.flags = c.u32("open.flags");
      d.mode = c.u32("open.mode");
      d.result = c.i64("open.result");
      d.dev_major = c.u32("open.dev_major");
      d.dev_minor = c.u32("open.dev_minor");
      d.is_device = c.boolean("open.is_device");
      if (c.left() > 0) c.str(d.raw, "open.raw");
      else d.raw.clear();
      return true;
    }
    case 6: {
      IoctlData& d = reuse<IoctlData>(data);
      d.fd = c.i32("ioctl.fd");
      d.cmd = c.u32("ioctl.cmd");
      d.nr = c.u32("ioctl.nr");
      d.xfer = c.boolean("ioctl.xfer");
      d.uvm = c.boolean("ioctl.uvm");
      d.dev_major = c.u32("ioctl.dev_major");
      d.dev_minor = c.u32("ioctl.dev_minor");
      d.rm_class = c.u32("ioctl.rm_class");
      d.rm_control = c.u32("ioctl.rm_control");
      d.result = c.i64("ioctl.result");
      d.rm_status = c.u32("ioctl.rm_status");
      return true;
    }
    case 7: {
      GpuUsageData& d = reuse<GpuUsageData>(data);
      d.interval_ns = c.u64("gpu_usage.interval_ns");
      std::uint32_t n = c.count(20, "gpu_usage.entries");
      d.entries.clear();
      d.entries.reserve(n);
      for (std::uint32_t i = 0; i < n && !c.failed(); ++i) {
        auto& e = d.entries.emplace_back();
        e.dev_major = c.u32("gpu_usage.dev_major");
        e.dev_minor = c.u32("gpu_usage.dev_minor");
        e.nr = c.u32("gpu_usage.nr");
        e.count = c.u64("gpu_usage.count");
      }
      return true;
    }
    case 8: {
      XidData& d = reuse<XidData>(data);
      c.str(d.source, "xid.source");
      d.facility = c.i32("xid.facility");
      d.level = c.i32("xid.level");
      c.str(d.pci, "xid.pci");
      d.code = c.u32("xid.code");
      d.xid_pid = c.u32("xid.xid_pid");
      c.str(d.xid_comm, "xid.xid_comm");
      c.str(d.text, "xid.text");
      return true;
    }
    case 9: {
      DnsData& d = reuse<DnsData>(data);
      d.is_response = c.boolean("dns.is_response");
      d.id = c.u16("dns.id");
      c.str(d.name, "dns.name");
      d.qtype = c.u16("dns.qtype");
      d.rcode = c.u16("dns.rcode");
      std::uint32_t n = c.count(17, "dns.answers");
      d.answers.resize(n);
      for (std::uint32_t i = 0; i < n && !c.failed(); ++i) c.ip(d.answers[i], "dns.answers");
      c.ip(d.server, "dns.server");
      d.server_port = c.u16("dns.server_port");
      return true;
    }
    case 10: {
      PayloadData& d = reuse<PayloadData>(data);
      d.family = c.u8("payload.family");
      c.ip(d.saddr, "payload.saddr");
      d.sport = c.u16("payload.sport");
      c.ip(d.daddr, "payload.daddr");
      d.dport = c.u16("payload.dport");
      c.str(d.bytes, "payload.bytes");
      d.truncated = c.boolean("payload.truncated");
      return true;
    }
    case 11: {
      BpfData& d = reuse<BpfData>(data);
      d.cmd = c.u32("bpf.cmd");
      d.prog_type = c.u32("bpf.prog_type");
      c.str(d.prog_name, "bpf.prog_name");
      d.result = c.i64("bpf.result");
      return true;
    }
    default:
      return false;
  }
}

static_assert(std::variant_size_v<event::Payload> == 12,
              "a payload kind was added to event.h: give it an encoding here and in "
              "docs/capture-format.md");

}  // namespace

void put_u16(std::string& out, std::uint16_t v) {
  char b[2] = {static_cast<char>(v), static_cast<char>(v >> 8)};
  out.append(b, 2);
}
void put_u32(std::string& out, std::uint32_t v) {
  char b[4] = {static_cast<char>(v), static_cast<char>(v >> 8), static_cast<char>(v >> 16),
               static_cast<char>(v >> 24)};
  out.append(b, 4);
}
void put_u64(std::string& out, std::uint64_t v) {
  put_u32(out, static_cast<std::uint32_t>(v));
  put_u32(out, static_cast<std::uint32_t>(v >> 32));
}
std::uint16_t get_u16(const unsigned char* p) {
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}
std::uint32_t get_u32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
std::uint64_t get_u64(const unsigned char* p) {
  return static_cast<std::uint64_t>(get_u32(p)) | (static_cast<std::uint64_t>(get_u32(p + 4)) << 32);
}

std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t len) {
  auto p = static_cast<const unsigned char*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  crc = have_sse42() ? crc32c_hw(crc, p, len) : crc32c_soft(crc, p, len);
#else
  crc = crc32c_soft(crc, p, len);
#endif
  return ~crc;
}

void append_event(const event::Event& ev, std::string& out) {
  with_record(out, RecordType::kEvent, [&] {
    const auto& h = ev.hdr;
    put_u64(out, h.ts_ns);
    put_u8(out, static_cast<std::uint8_t>(h.type));
    put_u32(out, h.pid);
    put_u32(out, h.tid);
    put_u32(out, h.ppid);
    put_u32(out, h.uid);
    put_u32(out, h.gid);
    put_u64(out, h.cgroup_id);
    put_u32(out, h.pid_ns);
    put_u32(out, h.mnt_ns);
    put_u32(out, h.net_ns);
    put_str(out, h.comm);
    put_payload(out, ev.data);
  });
}

void append_process(const state::Process& p, std::string& out) {
  with_record(out, RecordType::kProcess, [&] {
    put_u32(out, p.pid);
    put_u32(out, p.ppid);
    put_u32(out, p.uid);
    put_u32(out, p.gid);
    put_u32(out, p.loginuid);
    put_str(out, p.comm);
    put_str(out, p.exe);
    put_str(out, p.exepath);
    put_strs(out, p.args);
    put_bool(out, p.args_truncated);
    put_str(out, p.cwd);
    put_u32(out, p.tty);
    put_u64(out, p.cgroup_id);
    put_str(out, p.container_id);
    put_u32(out, p.pid_ns);
    put_u32(out, p.mnt_ns);
    put_u32(out, p.net_ns);
    put_u32(out, p.vpid);
    put_u64(out, p.start_ts_ns);
    put_u64(out, p.exec_ts_ns);
    put_bool(out, p.stdin_is_socket);
    put_bool(out, p.stdout_is_socket);
    put_bool(out, p.from_proc);
    put_bool(out, p.gpu_compute);
    put_u32(out, p.gpu_devices_opened);
    put_bool(out, p.elf32);
  });
}

void append_container(const state::Container& c, std::string& out) {
  with_record(out, RecordType::kContainer, [&] {
    put_str(out, c.id);
    put_str(out, c.runtime);
    put_str(out, c.pod_uid);
    put_str(out, c.cgroup_path);
    put_u64(out, c.cgroup_id);
    put_str(out, c.name);
    put_str(out, c.image);
    put_str(out, c.image_id);
    put_bool(out, c.privileged);
  });
}

void append_pod(const state::Pod& p, std::string& out) {
  with_record(out, RecordType::kPod, [&] {
    put_str(out, p.uid);
    put_str(out, p.name);
    put_str(out, p.ns);
    put_str(out, p.node);
    put_map(out, p.labels);
    put_map(out, p.annotations);
    put_u32(out, static_cast<std::uint32_t>(p.containers.size()));
    for (const auto& pc : p.containers) {
      put_str(out, pc.name);
      put_str(out, pc.image);
      put_str(out, pc.id);
      put_i64(out, pc.gpu_limit);
      put_str(out, pc.nvidia_visible_devices);
      put_strs(out, pc.gpu_devices);
      put_bool(out, pc.privileged);
    }
    put_str(out, p.resource_version);
  });
}

void append_pod_removed(std::string_view uid, std::string& out) {
  with_record(out, RecordType::kPodRemoved, [&] { put_str(out, uid); });
}

void append_nvidia(const state::NvidiaInfo& n, std::string& out) {
  auto bounded = [](std::string_view v) { return v.substr(0, kMaxNvidiaString); };
  with_record(out, RecordType::kNvidia, [&] {
    put_u32(out, n.uvm_major);
    put_u32(out, n.caps_major);
    auto count = static_cast<std::uint32_t>(std::min<std::size_t>(n.gpus.size(), kMaxNvidiaGpus));
    put_u32(out, count);
    for (std::uint32_t i = 0; i < count; ++i) {
      const state::GpuInfo& g = n.gpus[i];
      put_str(out, bounded(g.uuid));
      put_str(out, bounded(g.pci));
      put_u32(out, g.minor);
      put_str(out, bounded(g.model));
    }
  });
}

void append_record(const RecordData& rec, std::string& out) {
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, event::Event>) append_event(r, out);
        else if constexpr (std::is_same_v<T, state::Process>) append_process(r, out);
        else if constexpr (std::is_same_v<T, state::Container>) append_container(r, out);
        else if constexpr (std::is_same_v<T, state::Pod>) append_pod(r, out);
        else if constexpr (std::is_same_v<T, PodRemoved>) append_pod_removed(r.uid, out);
        else if constexpr (std::is_same_v<T, state::NvidiaInfo>) append_nvidia(r, out);
      },
      rec);
}

DecodeOutcome decode_record(std::uint8_t type, std::string_view body, RecordData& out,
                            std::string& why) {
  Cursor c(body);
  switch (static_cast<RecordType>(type)) {
    case RecordType::kEvent: {
      // Decoded in place when `out` already holds an event: replay reuses one
      // Record, so strings and vectors keep their capacity across events.
      auto* evp = std::get_if<event::Event>(&out);
      event::Event& ev = evp ? *evp : out.emplace<event::Event>();
      auto& h = ev.hdr;
      h.ts_ns = c.u64("event.ts");
      std::uint8_t t = c.u8("event.type");
      h.pid = c.u32("event.pid");
      h.tid = c.u32("event.tid");
      h.ppid = c.u32("event.ppid");
      h.uid = c.u32("event.uid");
      h.gid = c.u32("event.gid");
      h.cgroup_id = c.u64("event.cgroup_id");
      h.pid_ns = c.u32("event.pid_ns");
      h.mnt_ns = c.u32("event.mnt_ns");
      h.net_ns = c.u32("event.net_ns");
      c.str(h.comm, "event.comm");
      std::uint8_t kind = c.u8("event.payload_kind");
      if (c.failed()) break;
      // An event type or payload kind from a later version: skip the record.
      if (t >= static_cast<std::uint8_t>(event::Type::kCount)) return DecodeOutcome::kSkipped;
      h.type = static_cast<event::Type>(t);
      if (!get_payload(c, kind, ev.data)) return DecodeOutcome::kSkipped;
      if (c.failed()) break;
      return DecodeOutcome::kOk;
    }
    case RecordType::kProcess: {
      state::Process p;
      p.pid = c.u32("process.pid");
      p.ppid = c.u32("process.ppid");
      p.uid = c.u32("process.uid");
      p.gid = c.u32("process.gid");
      p.loginuid = c.u32("process.loginuid");
      c.str(p.comm, "process.comm");
      c.str(p.exe, "process.exe");
      c.str(p.exepath, "process.exepath");
      c.strs(p.args, "process.args");
      p.args_truncated = c.boolean("process.args_truncated");
      c.str(p.cwd, "process.cwd");
      p.tty = c.u32("process.tty");
      p.cgroup_id = c.u64("process.cgroup_id");
      c.str(p.container_id, "process.container_id");
      p.pid_ns = c.u32("process.pid_ns");
      p.mnt_ns = c.u32("process.mnt_ns");
      p.net_ns = c.u32("process.net_ns");
      p.vpid = c.u32("process.vpid");
      p.start_ts_ns = c.u64("process.start_ts");
      p.exec_ts_ns = c.u64("process.exec_ts");
      p.stdin_is_socket = c.boolean("process.stdin_is_socket");
      p.stdout_is_socket = c.boolean("process.stdout_is_socket");
      p.from_proc = c.boolean("process.from_proc");
      p.gpu_compute = c.boolean("process.gpu_compute");
      p.gpu_devices_opened = c.u32("process.gpu_devices_opened");
      p.elf32 = c.left() > 0 && c.boolean("process.elf32");  // appended later: absent in older files
      if (c.failed()) break;
      out = std::move(p);
      return DecodeOutcome::kOk;
    }
    case RecordType::kContainer: {
      state::Container k;
      c.str(k.id, "container.id");
      c.str(k.runtime, "container.runtime");
      c.str(k.pod_uid, "container.pod_uid");
      c.str(k.cgroup_path, "container.cgroup_path");
      k.cgroup_id = c.u64("container.cgroup_id");
      c.str(k.name, "container.name");
      c.str(k.image, "container.image");
      c.str(k.image_id, "container.image_id");
      k.privileged = c.boolean("container.privileged");
      if (c.failed()) break;
      out = std::move(k);
      return DecodeOutcome::kOk;
    }
    case RecordType::kPod: {
      state::Pod p;
      c.str(p.uid, "pod.uid");
      c.str(p.name, "pod.name");
      c.str(p.ns, "pod.ns");
      c.str(p.node, "pod.node");
      c.map(p.labels, "pod.labels");
      c.map(p.annotations, "pod.annotations");
      std::uint32_t n = c.count(29, "pod.containers");
      p.containers.reserve(n);
      for (std::uint32_t i = 0; i < n && !c.failed(); ++i) {
        auto& pc = p.containers.emplace_back();
        c.str(pc.name, "pod.container.name");
        c.str(pc.image, "pod.container.image");
        c.str(pc.id, "pod.container.id");
        pc.gpu_limit = c.i64("pod.container.gpu_limit");
        c.str(pc.nvidia_visible_devices, "pod.container.nvidia_visible_devices");
        c.strs(pc.gpu_devices, "pod.container.gpu_devices");
        pc.privileged = c.boolean("pod.container.privileged");
      }
      c.str(p.resource_version, "pod.resource_version");
      if (c.failed()) break;
      out = std::move(p);
      return DecodeOutcome::kOk;
    }
    case RecordType::kPodRemoved: {
      PodRemoved r;
      c.str(r.uid, "pod_removed.uid");
      if (c.failed()) break;
      out = std::move(r);
      return DecodeOutcome::kOk;
    }
    case RecordType::kNvidia: {
      state::NvidiaInfo n;
      n.uvm_major = c.u32("nvidia.uvm_major");
      n.caps_major = c.u32("nvidia.caps_major");
      // Each GPU is at least 16 bytes (three empty strings and the minor).
      std::uint32_t count = c.count(16, "nvidia.gpus");
      if (count > kMaxNvidiaGpus) {
        why = "nvidia.gpus: " + std::to_string(count) + " GPUs (at most " +
              std::to_string(kMaxNvidiaGpus) + ")";
        return DecodeOutcome::kBad;
      }
      n.gpus.reserve(count);
      for (std::uint32_t i = 0; i < count && !c.failed(); ++i) {
        state::GpuInfo& g = n.gpus.emplace_back();
        c.bounded_str(g.uuid, kMaxNvidiaString, "nvidia.gpu.uuid");
        c.bounded_str(g.pci, kMaxNvidiaString, "nvidia.gpu.pci");
        g.minor = c.u32("nvidia.gpu.minor");
        c.bounded_str(g.model, kMaxNvidiaString, "nvidia.gpu.model");
      }
      if (c.failed()) break;
      out = std::move(n);
      return DecodeOutcome::kOk;
    }
    default:
      return DecodeOutcome::kSkipped;
  }
  why = std::string("record body too short or malformed at field ") +
        (c.failure() ? c.failure() : "?");
  return DecodeOutcome::kBad;
}

}  // namespace vigil::capture
