// evt.arg.NAME, evt.arg[NAME] and evt.args: the arguments of the calls vigil
// collects, by Falco's argument names, printed as Falco prints them (flags
// and requests by name, modes in octal). Which names each event type has and
// the payload field each reads are the event schema's (event::kFalcoArgs,
// engine/event/schema.h); this file renders them. The rows are in
// fields_evt.cpp.
#include <sys/socket.h>

#include <array>
#include <charconv>
#include <cstdint>
#include <string_view>

#include "engine/event/schema.h"
#include "engine/rules/field_extractors.h"

namespace vigil::rules {

using namespace fx;

namespace {

// execve's flags as Falco names them: what the program file is (bits as
// event::ArgForm::kExecFlags packs them).
void exec_flags(const X& x, std::int64_t bits, E& o) noexcept {
  Arena& a = *x.arena;
  a.begin();
  bool any = false;
  auto add = [&](bool on, std::string_view name) {
    if (!on) return;
    if (any) a.append('|');
    a.append(name);
    any = true;
  };
  add(bits & 1, "EXE_WRITABLE");
  add(bits & 2, "EXE_UPPER_LAYER");
  add(bits & 4, "EXE_FROM_MEMFD");
  str(o, a.finish());
}
// An open's flags as names: O_WRONLY|O_CREAT...
void open_flags(const X& x, std::uint32_t flags, E& o) noexcept {
  static constexpr std::pair<std::uint32_t, std::string_view> kFlags[] = {
      {0100, "O_CREAT"},        {0200, "O_EXCL"},        {0400, "O_NOCTTY"},      {01000, "O_TRUNC"},
      {02000, "O_APPEND"},      {04000, "O_NONBLOCK"},   {010000, "O_DSYNC"},     {040000, "O_DIRECT"},
      {0200000, "O_DIRECTORY"}, {0400000, "O_NOFOLLOW"}, {01000000, "O_NOATIME"}, {02000000, "O_CLOEXEC"},
      {010000000, "O_PATH"},    {020000000, "O_TMPFILE"}};
  Arena& a = *x.arena;
  a.begin();
  auto acc = flags & 3u;
  a.append(acc == 0 ? "O_RDONLY" : acc == 1 ? "O_WRONLY" : acc == 2 ? "O_RDWR" : "O_ACCMODE");
  for (const auto& [bit, name] : kFlags) {
    if ((flags & bit) == bit && !(bit == 020000000 && (flags & 0200000))) {
      a.append('|');
      a.append(name);
    }
  }
  str(o, a.finish());
}
void int_arg(const X& x, std::int64_t v, E& o) noexcept {
  Arena& ar = *x.arena;
  ar.begin();
  ar.append_int(v);
  str(o, ar.finish());
}
// A symbolic name where one is known, the number otherwise.
void symbol_or_number(const X& x, std::string_view name, std::int64_t v, E& o) noexcept {
  if (!name.empty()) str(o, name);
  else int_arg(x, v, o);
}
void octal_arg(const X& x, std::uint32_t v, E& o) noexcept {
  Arena& ar = *x.arena;
  ar.begin();
  char tmp[16];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v, 8);
  ar.append('0');
  ar.append(std::string_view(tmp, static_cast<std::size_t>(r.ptr - tmp)));
  str(o, ar.finish());
}
std::string_view ptrace_request_name(std::uint32_t r) noexcept {
  switch (r) {
    case 0: return "PTRACE_TRACEME";
    case 1: return "PTRACE_PEEKTEXT";
    case 2: return "PTRACE_PEEKDATA";
    case 3: return "PTRACE_PEEKUSR";
    case 4: return "PTRACE_POKETEXT";
    case 5: return "PTRACE_POKEDATA";
    case 6: return "PTRACE_POKEUSR";
    case 7: return "PTRACE_CONT";
    case 8: return "PTRACE_KILL";
    case 9: return "PTRACE_SINGLESTEP";
    case 12: return "PTRACE_GETREGS";
    case 13: return "PTRACE_SETREGS";
    case 14: return "PTRACE_GETFPREGS";
    case 15: return "PTRACE_SETFPREGS";
    case 16: return "PTRACE_ATTACH";
    case 17: return "PTRACE_DETACH";
    case 24: return "PTRACE_SYSCALL";
    case 0x4200: return "PTRACE_SETOPTIONS";
    case 0x4201: return "PTRACE_GETEVENTMSG";
    case 0x4202: return "PTRACE_GETSIGINFO";
    case 0x4203: return "PTRACE_SETSIGINFO";
    case 0x4204: return "PTRACE_GETREGSET";
    case 0x4205: return "PTRACE_SETREGSET";
    case 0x4206: return "PTRACE_SEIZE";
    case 0x4207: return "PTRACE_INTERRUPT";
    case 0x4208: return "PTRACE_LISTEN";
    default: return {};
  }
}
std::string_view bpf_cmd_name(std::uint32_t c) noexcept {
  static constexpr std::string_view kNames[] = {"BPF_MAP_CREATE",        "BPF_MAP_LOOKUP_ELEM",
                                                "BPF_MAP_UPDATE_ELEM",   "BPF_MAP_DELETE_ELEM",
                                                "BPF_MAP_GET_NEXT_KEY",  "BPF_PROG_LOAD",
                                                "BPF_OBJ_PIN",           "BPF_OBJ_GET",
                                                "BPF_PROG_ATTACH",       "BPF_PROG_DETACH",
                                                "BPF_PROG_TEST_RUN",     "BPF_PROG_GET_NEXT_ID",
                                                "BPF_MAP_GET_NEXT_ID",   "BPF_PROG_GET_FD_BY_ID",
                                                "BPF_MAP_GET_FD_BY_ID",  "BPF_OBJ_GET_INFO_BY_FD",
                                                "BPF_PROG_QUERY",        "BPF_RAW_TRACEPOINT_OPEN",
                                                "BPF_BTF_LOAD",          "BPF_BTF_GET_FD_BY_ID",
                                                "BPF_TASK_FD_QUERY",     "BPF_MAP_LOOKUP_AND_DELETE_ELEM",
                                                "BPF_MAP_FREEZE",        "BPF_BTF_GET_NEXT_ID",
                                                "BPF_MAP_LOOKUP_BATCH",  "BPF_MAP_LOOKUP_AND_DELETE_BATCH",
                                                "BPF_MAP_UPDATE_BATCH",  "BPF_MAP_DELETE_BATCH",
                                                "BPF_LINK_CREATE",       "BPF_LINK_UPDATE",
                                                "BPF_LINK_GET_FD_BY_ID", "BPF_LINK_GET_NEXT_ID",
                                                "BPF_ENABLE_STATS",      "BPF_ITER_CREATE",
                                                "BPF_LINK_DETACH",       "BPF_PROG_BIND_MAP",
                                                "BPF_TOKEN_CREATE"};
  return c < std::size(kNames) ? kNames[c] : std::string_view{};
}
std::string_view signal_name(std::uint64_t s) noexcept {
  static constexpr std::string_view kNames[] = {
      {},          "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",   "SIGTRAP", "SIGABRT", "SIGBUS",
      "SIGFPE",    "SIGKILL", "SIGUSR1",   "SIGSEGV", "SIGUSR2",  "SIGPIPE", "SIGALRM", "SIGTERM",
      "SIGSTKFLT", "SIGCHLD", "SIGCONT",   "SIGSTOP", "SIGTSTP",  "SIGTTIN", "SIGTTOU", "SIGURG",
      "SIGXCPU",   "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO",   "SIGPWR",  "SIGSYS"};
  return s < std::size(kNames) ? kNames[s] : std::string_view{};
}
// perf_event_open: what the event watches (the sensor's VG_PERF_* kind).
std::string_view perf_kind_name(std::uint64_t k) noexcept {
  switch (k) {
    case 1: return "PERF_TYPE_TRACEPOINT";
    case 2: return "kprobe";
    case 3: return "uprobe";
    case 4: return "PERF_TYPE_BREAKPOINT";
    default: return {};
  }
}
std::string_view socket_domain_name(std::uint32_t d) noexcept {
  switch (d) {
    case AF_UNIX: return "AF_UNIX";
    case AF_INET: return "AF_INET";
    case AF_INET6: return "AF_INET6";
    case AF_NETLINK: return "AF_NETLINK";
    case AF_PACKET: return "AF_PACKET";
    case AF_KEY: return "AF_KEY";
    case AF_VSOCK: return "AF_VSOCK";
    case AF_BLUETOOTH: return "AF_BLUETOOTH";
    case AF_ALG: return "AF_ALG";
    case AF_XDP: return "AF_XDP";
    case AF_CAN: return "AF_CAN";
    default: return {};
  }
}
void socket_type_arg(const X& x, std::uint32_t t, E& o) noexcept {
  std::string_view base;
  switch (t & 0xf) {
    case SOCK_STREAM: base = "SOCK_STREAM"; break;
    case SOCK_DGRAM: base = "SOCK_DGRAM"; break;
    case SOCK_RAW: base = "SOCK_RAW"; break;
    case SOCK_SEQPACKET: base = "SOCK_SEQPACKET"; break;
    case SOCK_PACKET: base = "SOCK_PACKET"; break;
    default: int_arg(x, t, o); return;
  }
  Arena& ar = *x.arena;
  ar.begin();
  ar.append(base);
  if (t & SOCK_NONBLOCK) ar.append("|SOCK_NONBLOCK");
  if (t & SOCK_CLOEXEC) ar.append("|SOCK_CLOEXEC");
  str(o, ar.finish());
}
// CLONE_NEW* namespace flags as names (setns's nstype, unshare's flags).
void clone_flags_arg(const X& x, std::uint64_t f, E& o) noexcept {
  static constexpr std::pair<std::uint64_t, std::string_view> kNs[] = {
      {0x00020000, "CLONE_NEWNS"},  {0x02000000, "CLONE_NEWCGROUP"}, {0x04000000, "CLONE_NEWUTS"},
      {0x08000000, "CLONE_NEWIPC"}, {0x10000000, "CLONE_NEWUSER"},   {0x20000000, "CLONE_NEWPID"},
      {0x40000000, "CLONE_NEWNET"}, {0x00000080, "CLONE_NEWTIME"},   {0x00000200, "CLONE_FS"},
      {0x00000400, "CLONE_FILES"},  {0x00040000, "CLONE_SYSVSEM"}};
  Arena& a = *x.arena;
  a.begin();
  bool first = true;
  for (const auto& [bit, name] : kNs) {
    if (!(f & bit)) continue;
    if (!first) a.append('|');
    first = false;
    a.append(name);
  }
  if (first) a.append_uint(f);
  str(o, a.finish());
}

// An argument's value, printed as its form says.
void render(const X& x, event::ArgForm form, const event::ArgValue& v, E& o) noexcept {
  using event::ArgForm;
  const auto u32 = static_cast<std::uint32_t>(v.num);
  const auto u64 = static_cast<std::uint64_t>(v.num);
  switch (form) {
    case ArgForm::kInt: int_arg(x, v.num, o); return;
    case ArgForm::kText: str(o, v.text); return;
    case ArgForm::kOctal: octal_arg(x, u32, o); return;
    case ArgForm::kOpenFlags: open_flags(x, u32, o); return;
    case ArgForm::kExecFlags: exec_flags(x, v.num, o); return;
    case ArgForm::kBpfCmd: symbol_or_number(x, bpf_cmd_name(u32), v.num, o); return;
    case ArgForm::kPtraceRequest: symbol_or_number(x, ptrace_request_name(u32), v.num, o); return;
    case ArgForm::kSocketDomain: symbol_or_number(x, socket_domain_name(u32), v.num, o); return;
    case ArgForm::kSocketType: socket_type_arg(x, u32, o); return;
    case ArgForm::kNsFlags: clone_flags_arg(x, u64, o); return;
    case ArgForm::kCaps: caps_string(x, u64, o); return;
    case ArgForm::kSignal: symbol_or_number(x, signal_name(u64), v.num, o); return;
    case ArgForm::kPerfType: symbol_or_number(x, perf_kind_name(v.aux), v.num, o); return;
  }
}

// Whether `names` (space-separated) has `name`.
bool has_name(std::string_view names, std::string_view name) noexcept {
  while (!names.empty()) {
    auto sp = names.find(' ');
    if (names.substr(0, sp) == name) return true;
    if (sp == std::string_view::npos) break;
    names.remove_prefix(sp + 1);
  }
  return false;
}

// The rows of each event type, in table order (indexes into kFalcoArgs),
// made when vigil builds: a lookup reads only its type's rows.
struct RowsByType {
  static constexpr std::size_t kMax = 16;
  std::array<std::array<std::uint8_t, kMax>, event::kTypeCount> row{};
  std::array<std::uint8_t, event::kTypeCount> count{};
};
constexpr RowsByType rows_by_type() {
  static_assert(std::size(event::kFalcoArgs) < 256);
  RowsByType r;
  for (std::size_t i = 0; i < std::size(event::kFalcoArgs); ++i) {
    for (std::size_t t = 1; t < event::kTypeCount; ++t) {
      if (!event::kFalcoArgs[i].types.test(static_cast<event::Type>(t))) continue;
      if (r.count[t] == RowsByType::kMax) throw "kFalcoArgs: more rows for one type than RowsByType::kMax";
      r.row[t][r.count[t]++] = static_cast<std::uint8_t>(i);
    }
  }
  return r;
}
constexpr RowsByType kRowsByType = rows_by_type();

template <class Fn>
void for_each_row(event::Type t, Fn fn) noexcept {
  const auto i = static_cast<std::size_t>(t);
  if (i >= event::kTypeCount) return;
  for (std::size_t k = 0; k < kRowsByType.count[i]; ++k) {
    if (!fn(event::kFalcoArgs[kRowsByType.row[i][k]])) return;
  }
}

// The argument `name` of the event: the first row of its type with that
// name, for its call.
void arg_value(const X& x, std::string_view name, E& o) noexcept {
  const event::Event& e = ev(x);
  for_each_row(e.hdr.type, [&](const event::FalcoArg& a) {
    if (!has_name(a.names, name) || (a.when && !a.when(e))) return true;
    event::ArgValue v;
    if (a.get(e, v)) render(x, a.form, v, o);
    return false;
  });
}

}  // namespace

void fx::x_arg_flags(const X& x, const F&, E& o) noexcept {
  if (event::ArgValue v; event::args::exec_flags(ev(x), v)) {
    exec_flags(x, v.num, o);
    return;
  }
  if (auto* p = ev(x).as<event::OpenData>()) open_flags(x, p->flags, o);
}
void fx::x_arg_path(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) {
    str(o, given_path(*p));
    return;
  }
  if (auto* p = ev(x).as<event::ExecData>()) {
    str(o, p->filename);
    return;
  }
  if (auto* p = ev(x).as<event::FileOpData>(); p && !p->path.empty()) str(o, p->path);
}

// evt.arg.NAME / evt.arg[NAME]: the named argument of the calls vigil
// collects; other names (arguments of syscalls vigil does not collect) have no value.
void fx::x_arg_generic(const X& x, const F& f, E& o) noexcept { arg_value(x, f.arg, o); }

// evt.args: the call's arguments as Falco prints them, "name=value" pairs
// (the result first), the rows the schema lists for the event's type, each
// read as evt.arg.NAME reads it.
void fx::x_evt_args(const X& x, const F&, E& o) noexcept {
  const event::Event& e = ev(x);
  std::int64_t res = 0;
  const bool has_res = result_of(e, res) && !e.as<event::ExecData>();
  // Each value is extracted into the arena first, then the whole string is
  // composed after them (a composition cannot nest).
  std::string_view names[8];
  std::string_view vals[8];
  std::size_t n = 0;
  for_each_row(e.hdr.type, [&](const event::FalcoArg& a) {
    if (n == std::size(vals)) return false;
    if (!a.listed.test(e.hdr.type) || (a.listed_when && !a.listed_when(e))) return true;
    names[n] = a.names.substr(0, a.names.find(' '));
    Extracted one;
    arg_value(x, names[n], one);
    vals[n++] = one.n ? one.v[0].s : std::string_view("<NA>");
    return true;
  });
  if (n == 0 && !has_res) return;
  Arena& a = *x.arena;
  a.begin();
  bool first = true;
  if (has_res) {
    a.append("res=");
    a.append_int(res);
    first = false;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!first) a.append(' ');
    first = false;
    a.append(names[i]);
    a.append('=');
    a.append(vals[i]);
  }
  str(o, a.finish());
}

}  // namespace vigil::rules
