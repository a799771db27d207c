// evt.arg.NAME, evt.arg[NAME] and evt.args: the arguments of the calls vigil
// collects, by Falco's argument names, printed as Falco prints them (flags
// and requests by name, modes in octal). The rows are in fields_evt.cpp.
#include <sys/socket.h>

#include <charconv>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "engine/rules/field_extractors.h"

namespace vigil::rules {

using namespace fx;

namespace {

// execve's flags as Falco names them: what the program file is.
void exec_flags(const X& x, const event::ExecData& e, E& o) noexcept {
  Arena& a = *x.arena;
  a.begin();
  bool any = false;
  auto add = [&](bool on, std::string_view name) {
    if (!on) return;
    if (any) a.append('|');
    a.append(name);
    any = true;
  };
  add(e.exe_writable, "EXE_WRITABLE");
  add(e.exe_upper_layer, "EXE_UPPER_LAYER");
  add(e.exe_from_memfd, "EXE_FROM_MEMFD");
  str(o, a.finish());
}

}  // namespace

void fx::x_arg_flags(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) { exec_flags(x, *e, o); return; }
  auto* p = ev(x).as<event::OpenData>();
  if (!p) return;
  static constexpr std::pair<std::uint32_t, std::string_view> kFlags[] = {
      {0100, "O_CREAT"},      {0200, "O_EXCL"},       {0400, "O_NOCTTY"},
      {01000, "O_TRUNC"},     {02000, "O_APPEND"},    {04000, "O_NONBLOCK"},
      {010000, "O_DSYNC"},    {040000, "O_DIRECT"},   {0200000, "O_DIRECTORY"},
      {0400000, "O_NOFOLLOW"}, {01000000, "O_NOATIME"}, {02000000, "O_CLOEXEC"},
      {010000000, "O_PATH"},  {020000000, "O_TMPFILE"}};
  Arena& a = *x.arena;
  a.begin();
  auto acc = p->flags & 3u;
  a.append(acc == 0 ? "O_RDONLY" : acc == 1 ? "O_WRONLY" : acc == 2 ? "O_RDWR" : "O_ACCMODE");
  for (const auto& [bit, name] : kFlags) {
    if ((p->flags & bit) == bit && !(bit == 020000000 && (p->flags & 0200000))) {
      a.append('|');
      a.append(name);
    }
  }
  str(o, a.finish());
}
void fx::x_arg_path(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) { str(o, given_path(*p)); return; }
  if (auto* p = ev(x).as<event::ExecData>()) { str(o, p->filename); return; }
  if (auto* p = ev(x).as<event::FileOpData>(); p && !p->path.empty()) str(o, p->path);
}

namespace {

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
    case 0: return "PTRACE_TRACEME"; case 1: return "PTRACE_PEEKTEXT"; case 2: return "PTRACE_PEEKDATA";
    case 3: return "PTRACE_PEEKUSR"; case 4: return "PTRACE_POKETEXT"; case 5: return "PTRACE_POKEDATA";
    case 6: return "PTRACE_POKEUSR"; case 7: return "PTRACE_CONT"; case 8: return "PTRACE_KILL";
    case 9: return "PTRACE_SINGLESTEP"; case 12: return "PTRACE_GETREGS"; case 13: return "PTRACE_SETREGS";
    case 14: return "PTRACE_GETFPREGS"; case 15: return "PTRACE_SETFPREGS"; case 16: return "PTRACE_ATTACH";
    case 17: return "PTRACE_DETACH"; case 24: return "PTRACE_SYSCALL"; case 0x4200: return "PTRACE_SETOPTIONS";
    case 0x4201: return "PTRACE_GETEVENTMSG"; case 0x4202: return "PTRACE_GETSIGINFO";
    case 0x4203: return "PTRACE_SETSIGINFO"; case 0x4204: return "PTRACE_GETREGSET";
    case 0x4205: return "PTRACE_SETREGSET"; case 0x4206: return "PTRACE_SEIZE";
    case 0x4207: return "PTRACE_INTERRUPT"; case 0x4208: return "PTRACE_LISTEN";
    default: return {};
  }
}
std::string_view bpf_cmd_name(std::uint32_t c) noexcept {
  static constexpr std::string_view kNames[] = {
      "BPF_MAP_CREATE", "BPF_MAP_LOOKUP_ELEM", "BPF_MAP_UPDATE_ELEM", "BPF_MAP_DELETE_ELEM",
      "BPF_MAP_GET_NEXT_KEY", "BPF_PROG_LOAD", "BPF_OBJ_PIN", "BPF_OBJ_GET", "BPF_PROG_ATTACH",
      "BPF_PROG_DETACH", "BPF_PROG_TEST_RUN", "BPF_PROG_GET_NEXT_ID", "BPF_MAP_GET_NEXT_ID",
      "BPF_PROG_GET_FD_BY_ID", "BPF_MAP_GET_FD_BY_ID", "BPF_OBJ_GET_INFO_BY_FD", "BPF_PROG_QUERY",
      "BPF_RAW_TRACEPOINT_OPEN", "BPF_BTF_LOAD", "BPF_BTF_GET_FD_BY_ID", "BPF_TASK_FD_QUERY",
      "BPF_MAP_LOOKUP_AND_DELETE_ELEM", "BPF_MAP_FREEZE", "BPF_BTF_GET_NEXT_ID", "BPF_MAP_LOOKUP_BATCH",
      "BPF_MAP_LOOKUP_AND_DELETE_BATCH", "BPF_MAP_UPDATE_BATCH", "BPF_MAP_DELETE_BATCH", "BPF_LINK_CREATE",
      "BPF_LINK_UPDATE", "BPF_LINK_GET_FD_BY_ID", "BPF_LINK_GET_NEXT_ID", "BPF_ENABLE_STATS",
      "BPF_ITER_CREATE", "BPF_LINK_DETACH", "BPF_PROG_BIND_MAP", "BPF_TOKEN_CREATE"};
  return c < std::size(kNames) ? kNames[c] : std::string_view{};
}
std::string_view signal_name(std::uint64_t s) noexcept {
  static constexpr std::string_view kNames[] = {
      {},        "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",    "SIGTRAP", "SIGABRT", "SIGBUS",
      "SIGFPE",  "SIGKILL", "SIGUSR1",   "SIGSEGV", "SIGUSR2",   "SIGPIPE", "SIGALRM", "SIGTERM",
      "SIGSTKFLT", "SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP",   "SIGTTIN", "SIGTTOU", "SIGURG",
      "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH",  "SIGIO",   "SIGPWR",  "SIGSYS"};
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
    case AF_UNIX: return "AF_UNIX"; case AF_INET: return "AF_INET"; case AF_INET6: return "AF_INET6";
    case AF_NETLINK: return "AF_NETLINK"; case AF_PACKET: return "AF_PACKET"; case AF_KEY: return "AF_KEY";
    case AF_VSOCK: return "AF_VSOCK"; case AF_BLUETOOTH: return "AF_BLUETOOTH"; case AF_ALG: return "AF_ALG";
    case AF_XDP: return "AF_XDP"; case AF_CAN: return "AF_CAN";
    default: return {};
  }
}
void socket_type_arg(const X& x, std::uint32_t t, E& o) noexcept {
  std::string_view base;
  switch (t & 0xf) {
    case SOCK_STREAM: base = "SOCK_STREAM"; break; case SOCK_DGRAM: base = "SOCK_DGRAM"; break;
    case SOCK_RAW: base = "SOCK_RAW"; break; case SOCK_SEQPACKET: base = "SOCK_SEQPACKET"; break;
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
// Falco's argument names for the path calls.
void file_op_arg(const X& x, const event::FileOpData& p, std::string_view a, E& o) noexcept {
  using S = event::Syscall;
  const bool two_paths = !p.path2.empty() || p.syscall == S::kSymlink || p.syscall == S::kSymlinkat ||
                         p.syscall == S::kLink || p.syscall == S::kLinkat || p.syscall == S::kRename ||
                         p.syscall == S::kRenameat || p.syscall == S::kRenameat2;
  const bool symlink = p.syscall == S::kSymlink || p.syscall == S::kSymlinkat;
  if (two_paths) {
    if (a == (symlink ? "target" : "oldpath")) { str(o, p.path); return; }
    if (a == (symlink ? "linkpath" : "newpath")) { str(o, p.path2); return; }
    if (a == (symlink ? "linkdirfd" : "newdirfd") || a == "newdir") { int_arg(x, p.fd2, o); return; }
    if (!symlink && (a == "olddirfd" || a == "olddir")) { int_arg(x, p.fd, o); return; }
  } else if (a == "name" || a == "path" || a == "pathname" || a == "filename") {
    if (!p.path.empty()) str(o, p.path);
    return;
  }
  if (a == "dirfd" || a == "fd") { int_arg(x, p.fd, o); return; }
  if (a == "flags") { int_arg(x, p.flags, o); return; }
  if (a == "mode") { octal_arg(x, p.mode, o); return; }
  if (a == "res") int_arg(x, p.result, o);
}

}  // namespace

// evt.arg.NAME / evt.arg[NAME]: the named argument of the calls vigil
// collects; other names (arguments of syscalls vigil does not collect) have no value.
void fx::x_arg_generic(const X& x, const F& f, E& o) noexcept {
  std::string_view a = f.arg;
  const event::Event& e = ev(x);
  if (auto* p = e.as<event::OpenData>()) {
    if (a == "name" || a == "path" || a == "pathname" || a == "filename") { str(o, given_path(*p)); return; }
    if (a == "flags") { x_arg_flags(x, f, o); return; }
    if (a == "mode") { octal_arg(x, p->mode, o); return; }
    if (a == "fd") int_arg(x, p->result, o);
    return;
  }
  if (auto* p = e.as<event::ExecData>()) {
    if (a == "flags") { exec_flags(x, *p, o); return; }
    if (a == "filename" || a == "path" || a == "name") str(o, p->filename);
    else if (a == "exe") str(o, p->exe);
    else if (a == "cwd") str(o, p->cwd);
    return;
  }
  if (auto* p = e.as<event::BpfData>()) {
    if (a == "cmd") symbol_or_number(x, bpf_cmd_name(p->cmd), p->cmd, o);
    else if (a == "res") int_arg(x, p->result, o);
    return;
  }
  if (auto* p = e.as<event::IoctlData>()) {
    Arena& ar = *x.arena;
    ar.begin();
    if (a == "request") ar.append_uint(p->cmd);
    else if (a == "fd") ar.append_int(p->fd);
    else return;
    str(o, ar.finish());
    return;
  }
  if (auto* p = e.as<event::FileOpData>()) { file_op_arg(x, *p, a, o); return; }
  if (auto* p = e.as<event::PtraceData>()) {
    if (a == "request") { symbol_or_number(x, ptrace_request_name(p->request), p->request, o); return; }
    if (a == "pid") int_arg(x, p->target, o);
    else if (a == "addr") int_arg(x, static_cast<std::int64_t>(p->addr), o);
    else if (a == "res") int_arg(x, p->result, o);
    return;
  }
  if (auto* p = e.as<event::SocketData>()) {
    if (a == "domain") symbol_or_number(x, socket_domain_name(p->domain), p->domain, o);
    else if (a == "type") socket_type_arg(x, p->type, o);
    else if (a == "proto") int_arg(x, p->protocol, o);
    else if (a == "fd" || a == "res") int_arg(x, p->result, o);
    return;
  }
  if (auto* p = e.as<event::DupData>()) {
    if (a == "fd" || a == "oldfd") int_arg(x, p->oldfd, o);
    else if (a == "res" || a == "newfd") int_arg(x, p->result, o);
    else if (a == "flags") int_arg(x, p->flags, o);
    return;
  }
  if (auto* p = e.as<event::CredData>()) {
    using S = event::Syscall;
    const bool single = p->syscall == S::kSetuid || p->syscall == S::kSetgid;
    const bool gid = p->syscall == S::kSetgid || p->syscall == S::kSetregid || p->syscall == S::kSetresgid;
    if (single && a == (gid ? "gid" : "uid")) int_arg(x, p->effective, o);
    else if (!single && a == (gid ? "rgid" : "ruid")) int_arg(x, p->real, o);
    else if (!single && a == (gid ? "egid" : "euid")) int_arg(x, p->effective, o);
    else if (!single && a == (gid ? "sgid" : "suid")) int_arg(x, p->saved, o);
    else if (a == "res") int_arg(x, p->result, o);
    return;
  }
  if (auto* p = e.as<event::NsData>()) {
    if (a == "fd") int_arg(x, p->fd, o);
    else if (a == "nstype" || a == "flags") clone_flags_arg(x, p->flags, o);
    else if (a == "res") int_arg(x, p->result, o);
    return;
  }
  if (auto* p = e.as<event::InboundData>()) {
    if (a == "fd") int_arg(x, p->fd, o);
    else if (a == "backlog" || a == "flags") int_arg(x, p->flags, o);
    else if (a == "res") int_arg(x, p->result, o);
    return;
  }
  if (auto* p = e.as<event::SysCallData>()) {
    const event::Type t = e.hdr.type;
    if (a == "res") int_arg(x, p->result, o);
    else if (t == event::Type::kMemfdCreate && a == "name") str(o, p->name);
    else if (t == event::Type::kMemfdCreate && a == "flags") int_arg(x, static_cast<std::int64_t>(p->a1), o);
    else if (t == event::Type::kUserfaultfd && a == "flags") int_arg(x, static_cast<std::int64_t>(p->a0), o);
    else if (t == event::Type::kPrctl && a == "option") int_arg(x, static_cast<std::int64_t>(p->a0), o);
    else if (t == event::Type::kPrctl && a == "arg2_int") int_arg(x, static_cast<std::int64_t>(p->a1), o);
    else if (t == event::Type::kIoUringSetup && a == "entries") int_arg(x, static_cast<std::int64_t>(p->a0), o);
    else if (t == event::Type::kVigilSignal && a == "sig") symbol_or_number(x, signal_name(p->a0), static_cast<std::int64_t>(p->a0), o);
    else if (t == event::Type::kVigilSignal && a == "pid") int_arg(x, static_cast<std::int64_t>(p->a1), o);
    else if (t == event::Type::kVigilSignal && a == "code") int_arg(x, static_cast<std::int64_t>(p->a2), o);
    else if (t == event::Type::kVigilSignal && a == "tid") int_arg(x, static_cast<std::int64_t>(p->a3 & 0xffffffffu), o);
    else if (t == event::Type::kPerfEventOpen && a == "type") symbol_or_number(x, perf_kind_name(p->a3), static_cast<std::int64_t>(p->a0), o);
    else if (t == event::Type::kPerfEventOpen && a == "config") int_arg(x, static_cast<std::int64_t>(p->a1), o);
    else if (t == event::Type::kPerfEventOpen && a == "pid") int_arg(x, static_cast<std::int64_t>(p->a2), o);
    else if (t == event::Type::kPerfEventOpen && a == "fd") int_arg(x, p->result, o);
    return;
  }
  if (auto* p = e.as<event::CapsData>()) {
    if (a == "cap_effective") caps_string(x, p->effective, o);
    else if (a == "cap_permitted") caps_string(x, p->permitted, o);
    else if (a == "cap_inheritable") caps_string(x, p->inheritable, o);
    else if (a == "res") int_arg(x, p->result, o);
    return;
  }
  if (auto* p = e.as<event::ModuleData>(); p && p->syscall == event::Syscall::kDeleteModule) {
    if (a == "name") str(o, p->args);
    else if (a == "flags") int_arg(x, p->flags, o);
    else if (a == "res") int_arg(x, p->result, o);
    return;
  }
  if (auto* p = e.as<event::ModuleData>()) {
    if (a == "fd") int_arg(x, p->fd, o);
    else if (a == "uargs") str(o, p->args);
    else if (a == "flags") int_arg(x, p->flags, o);
    else if (a == "res") int_arg(x, p->result, o);
  }
}

namespace {


// evt.args: the call's arguments as Falco prints them, "name=value" pairs
// (the result first), from the same names evt.arg.NAME reads.
std::span<const std::string_view> arg_names(const event::Event& e) noexcept {
  using T = event::Type;
  using S = event::Syscall;
  static constexpr std::string_view kOpen[] = {"fd", "name", "flags", "mode"};
  static constexpr std::string_view kExec[] = {"filename", "flags"};
  static constexpr std::string_view kIoctl[] = {"fd", "request"};
  static constexpr std::string_view kBpf[] = {"cmd"};
  static constexpr std::string_view kSymlink[] = {"target", "linkpath"};
  static constexpr std::string_view kTwoPaths[] = {"oldpath", "newpath", "flags"};
  static constexpr std::string_view kPath[] = {"path", "flags", "mode"};
  static constexpr std::string_view kChmod[] = {"filename", "mode"};
  static constexpr std::string_view kFchmod[] = {"fd", "mode"};
  static constexpr std::string_view kPtrace[] = {"request", "pid"};
  static constexpr std::string_view kSocket[] = {"domain", "type", "proto"};
  static constexpr std::string_view kFd[] = {"fd", "flags"};
  static constexpr std::string_view kModule[] = {"fd", "uargs", "flags"};
  static constexpr std::string_view kDelModule[] = {"name", "flags"};
  static constexpr std::string_view kCapset[] = {"cap_effective", "cap_permitted", "cap_inheritable"};
  static constexpr std::string_view kUid[] = {"uid"};
  static constexpr std::string_view kGid[] = {"gid"};
  static constexpr std::string_view kResuid[] = {"ruid", "euid", "suid"};
  static constexpr std::string_view kResgid[] = {"rgid", "egid", "sgid"};
  static constexpr std::string_view kSetns[] = {"fd", "nstype"};
  static constexpr std::string_view kFlags[] = {"flags"};
  static constexpr std::string_view kMemfd[] = {"name", "flags"};
  static constexpr std::string_view kPrctl[] = {"option"};
  static constexpr std::string_view kUring[] = {"entries"};
  static constexpr std::string_view kKill[] = {"pid", "sig"};
  static constexpr std::string_view kPerf[] = {"type", "config", "pid"};
  switch (e.hdr.type) {
    case T::kOpen: return kOpen;
    case T::kExec: return kExec;
    case T::kIoctl: return kIoctl;
    case T::kBpf: return kBpf;
    case T::kSymlink: return kSymlink;
    case T::kLink:
    case T::kRename: return kTwoPaths;
    case T::kUnlink:
    case T::kMkdir:
    case T::kRmdir: return kPath;
    case T::kChmod: {
      auto* p = e.as<event::FileOpData>();
      if (p && p->syscall == S::kFchmod) return kFchmod;
      return kChmod;
    }
    case T::kPtrace: return kPtrace;
    case T::kSocket: return kSocket;
    case T::kDup:
    case T::kAccept:
    case T::kListen:
    case T::kBind: return kFd;
    case T::kModule: return kModule;
    case T::kDeleteModule: return kDelModule;
    case T::kCapset: return kCapset;
    case T::kSetuid:
    case T::kSetgid: {
      auto* p = e.as<event::CredData>();
      const bool single = p && (p->syscall == S::kSetuid || p->syscall == S::kSetgid);
      if (e.hdr.type == T::kSetuid) return single ? std::span<const std::string_view>(kUid) : kResuid;
      return single ? std::span<const std::string_view>(kGid) : kResgid;
    }
    case T::kSetns: return kSetns;
    case T::kUnshare:
    case T::kUserfaultfd: return kFlags;
    case T::kMemfdCreate: return kMemfd;
    case T::kPrctl: return kPrctl;
    case T::kIoUringSetup: return kUring;
    case T::kVigilSignal: return kKill;
    case T::kPerfEventOpen: return kPerf;
    default: return {};
  }
}

}  // namespace

void fx::x_evt_args(const X& x, const F&, E& o) noexcept {
  const event::Event& e = ev(x);
  auto names = arg_names(e);
  std::int64_t res = 0;
  const bool has_res = result_of(e, res) && !e.as<event::ExecData>();
  if (names.empty() && !has_res) return;
  // Each value is extracted into the arena first, then the whole string is
  // composed after them (a composition cannot nest).
  std::string_view vals[8];
  std::size_t n = 0;
  for (auto name : names) {
    if (n == std::size(vals)) break;
    FieldInst fi;
    fi.arg = std::string(name);  // short: no allocation
    fi.has_arg = true;
    Extracted one;
    x_arg_generic(x, fi, one);
    vals[n++] = one.n ? one.v[0].s : std::string_view("<NA>");
  }
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
