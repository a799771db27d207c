#include "engine/rules/fields.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <span>

#include "engine/event/nvidia.h"
#include "engine/event/schema.h"

namespace vigil::rules {

std::string_view field_type_name(FieldType t) {
  switch (t) {
    case FieldType::kString: return "string";
    case FieldType::kInt: return "int";
    case FieldType::kUint: return "uint";
    case FieldType::kBool: return "bool";
    case FieldType::kIp: return "ip";
    case FieldType::kList: return "list";
  }
  return "?";
}

// ---------------------------------------------------------------- Arena

std::string_view Arena::put(std::string_view s) noexcept {
  begin();
  append(s);
  return finish();
}

void Arena::append(std::string_view s) noexcept {
  std::size_t n = std::min(s.size(), kSize - used_);
  std::memcpy(buf_ + used_, s.data(), n);
  used_ += n;
}

void Arena::append_uint(std::uint64_t v) noexcept {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  append(std::string_view(tmp, static_cast<std::size_t>(r.ptr - tmp)));
}

void Arena::append_int(std::int64_t v) noexcept {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  append(std::string_view(tmp, static_cast<std::size_t>(r.ptr - tmp)));
}

// ---------------------------------------------------------------- IPs

bool parse_ip(std::string_view s, event::IpAddr& out) {
  if (s.empty() || s.size() > 45) return false;
  char buf[64];
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = 0;
  event::IpAddr a;
  if (inet_pton(AF_INET, buf, a.bytes.data()) == 1) {
    a.family = AF_INET;
    out = a;
    return true;
  }
  if (inet_pton(AF_INET6, buf, a.bytes.data()) == 1) {
    a.family = AF_INET6;
    out = a;
    return true;
  }
  return false;
}

bool parse_cidr(std::string_view s, Cidr& out) {
  auto slash = s.find('/');
  Cidr c;
  if (!parse_ip(s.substr(0, slash), c.net)) return false;
  int max_bits = c.net.family == AF_INET ? 32 : 128;
  if (slash == std::string_view::npos) {
    c.prefix = max_bits;
  } else {
    auto p = s.substr(slash + 1);
    int bits = -1;
    auto r = std::from_chars(p.data(), p.data() + p.size(), bits);
    if (r.ec != std::errc() || r.ptr != p.data() + p.size() || bits < 0 || bits > max_bits) {
      return false;
    }
    c.prefix = bits;
  }
  out = c;
  return true;
}

bool Cidr::contains(const event::IpAddr& a) const noexcept {
  if (a.family != net.family) return false;
  int full = prefix / 8;
  if (std::memcmp(a.bytes.data(), net.bytes.data(), static_cast<std::size_t>(full)) != 0) return false;
  int rest = prefix % 8;
  if (rest == 0) return true;
  auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (a.bytes[static_cast<std::size_t>(full)] & mask) == (net.bytes[static_cast<std::size_t>(full)] & mask);
}

namespace {

void append_ip(Arena& a, const event::IpAddr& ip) noexcept {
  char buf[INET6_ADDRSTRLEN];
  if (ip.family == AF_INET || ip.family == AF_INET6) {
    if (inet_ntop(ip.family, ip.bytes.data(), buf, sizeof buf)) a.append(std::string_view(buf));
  }
}

}  // namespace

// ---------------------------------------------------------------- evt.type

event::TypeMask evt_type_mask(std::string_view n, bool& known) {
  known = true;
  if (event::Type t = event::type_from_name(n); t != event::Type::kUnknown) return event::TypeMask(t);
  // Syscalls Falco knows that vigil does not report: accepted, never match.
  known = event::is_unreported_syscall(n);
  return {};
}

// ---------------------------------------------------------------- extractors

namespace {

using event::Type;
using X = ExtractCtx;
using F = FieldInst;
using E = Extracted;

const event::Event& ev(const X& x) { return *x.ctx->ev; }

void str(E& o, std::string_view s) noexcept { o.add().s = s; }
void num(E& o, std::int64_t i) noexcept { o.add().i = i; }
void boolean(E& o, bool b) noexcept { o.add().b = b; }
void ip(E& o, const event::IpAddr& a) noexcept {
  if (a.family == 0) return;
  o.add().ip = &a;
}

const state::Process* proc_of(const X& x) noexcept { return x.ctx->proc; }
const state::Process* lookup(const X& x, std::uint32_t pid) noexcept {
  if (!x.ctx->state || pid == 0) return nullptr;
  return x.ctx->state->process(pid);
}

// The last '/' of a path: memrchr (vectorised) instead of string_view's
// byte loop; fd.directory, fd.filename and the GPU device test run per open.
std::size_t last_slash(std::string_view p) noexcept {
  if (p.empty()) return std::string_view::npos;
  const void* s = ::memrchr(p.data(), '/', p.size());
  return s ? static_cast<std::size_t>(static_cast<const char*>(s) - p.data()) : std::string_view::npos;
}
std::string_view basename_of(std::string_view p) noexcept {
  auto s = last_slash(p);
  return s == std::string_view::npos ? p : p.substr(s + 1);
}
std::string_view dirname_of(std::string_view p) noexcept {
  auto s = last_slash(p);
  if (s == std::string_view::npos) return {};
  if (s == 0) return "/";
  return p.substr(0, s);
}

// ----- evt.*

// The syscall of a family the event came from (symlink for a symlinkat
// event made by symlink()), kNone when its payload does not say.
event::Syscall syscall_of(const event::Event& e) noexcept {
  if (auto* p = e.as<event::FileOpData>()) return p->syscall;
  if (auto* p = e.as<event::DupData>()) return p->syscall;
  if (auto* p = e.as<event::ModuleData>()) return p->syscall;
  if (auto* p = e.as<event::CredData>()) return p->syscall;
  if (auto* p = e.as<event::InboundData>()) return p->syscall;
  return event::Syscall::kNone;
}
void x_evt_type(const X& x, const F&, E& o) noexcept {
  auto n = event::syscall_name(syscall_of(ev(x)));
  str(o, n.empty() ? event::type_name(ev(x).hdr.type) : n);
}
void x_evt_dir(const X&, const F&, E& o) noexcept { str(o, "<"); }
void x_evt_source(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::PluginData>()) { str(o, p->source); return; }
  str(o, "syscall");
}
void x_evt_rawtime(const X& x, const F&, E& o) noexcept {
  num(o, static_cast<std::int64_t>(ev(x).hdr.ts_ns));
}
void time_parts(std::uint64_t ns, std::tm& tm) noexcept {
  std::time_t secs = static_cast<std::time_t>(ns / 1000000000ull);
  gmtime_r(&secs, &tm);
}
void pad(Arena& a, std::uint64_t v, int width) noexcept {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  int len = static_cast<int>(r.ptr - tmp);
  for (int i = len; i < width; ++i) a.append('0');
  a.append(std::string_view(tmp, static_cast<std::size_t>(len)));
}
void x_evt_time(const X& x, const F&, E& o) noexcept {
  std::uint64_t ns = ev(x).hdr.ts_ns;
  std::tm tm{};
  time_parts(ns, tm);
  Arena& a = *x.arena;
  a.begin();
  pad(a, static_cast<std::uint64_t>(tm.tm_hour), 2); a.append(':');
  pad(a, static_cast<std::uint64_t>(tm.tm_min), 2); a.append(':');
  pad(a, static_cast<std::uint64_t>(tm.tm_sec), 2); a.append('.');
  pad(a, ns % 1000000000ull, 9);
  str(o, a.finish());
}
void x_evt_iso(const X& x, const F&, E& o) noexcept {
  std::uint64_t ns = ev(x).hdr.ts_ns;
  std::tm tm{};
  time_parts(ns, tm);
  Arena& a = *x.arena;
  a.begin();
  pad(a, static_cast<std::uint64_t>(tm.tm_year + 1900), 4); a.append('-');
  pad(a, static_cast<std::uint64_t>(tm.tm_mon + 1), 2); a.append('-');
  pad(a, static_cast<std::uint64_t>(tm.tm_mday), 2); a.append('T');
  pad(a, static_cast<std::uint64_t>(tm.tm_hour), 2); a.append(':');
  pad(a, static_cast<std::uint64_t>(tm.tm_min), 2); a.append(':');
  pad(a, static_cast<std::uint64_t>(tm.tm_sec), 2); a.append('.');
  pad(a, ns % 1000000000ull, 9); a.append('Z');
  str(o, a.finish());
}

// The syscall result of the event, when it has one.
bool result_of(const event::Event& e, std::int64_t& r) noexcept {
  if (auto* p = e.as<event::OpenData>()) { r = p->result; return true; }
  if (auto* p = e.as<event::ConnectData>()) {
    if (p->result == event::ConnectData::kResultUnknown) return false;
    r = p->result;
    return true;
  }
  if (auto* p = e.as<event::IoctlData>()) { r = p->result; return true; }
  if (auto* p = e.as<event::BpfData>()) { r = p->result; return true; }
  if (e.as<event::ExecData>()) { r = 0; return true; }
  if (auto* p = e.as<event::FileOpData>()) { r = p->result; return true; }
  if (auto* p = e.as<event::PtraceData>()) { r = p->result; return true; }
  if (auto* p = e.as<event::SocketData>()) { r = p->result; return true; }
  if (auto* p = e.as<event::DupData>()) { r = p->result; return true; }
  if (auto* p = e.as<event::ModuleData>()) { r = p->result; return true; }
  if (auto* p = e.as<event::CredData>()) { r = p->result; return true; }
  if (auto* p = e.as<event::NsData>()) { r = p->result; return true; }
  if (auto* p = e.as<event::InboundData>()) { r = p->result; return true; }
  if (auto* p = e.as<event::SysCallData>()) { r = p->result; return true; }
  if (auto* p = e.as<event::CapsData>()) { r = p->result; return true; }
  return false;
}

std::string_view errno_name(std::int64_t e) noexcept {
  switch (e) {
    case EPERM: return "EPERM"; case ENOENT: return "ENOENT"; case ESRCH: return "ESRCH";
    case EINTR: return "EINTR"; case EIO: return "EIO"; case ENXIO: return "ENXIO";
    case E2BIG: return "E2BIG"; case ENOEXEC: return "ENOEXEC"; case EBADF: return "EBADF";
    case ECHILD: return "ECHILD"; case EAGAIN: return "EAGAIN"; case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES"; case EFAULT: return "EFAULT"; case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST"; case EXDEV: return "EXDEV"; case ENODEV: return "ENODEV";
    case ENOTDIR: return "ENOTDIR"; case EISDIR: return "EISDIR"; case EINVAL: return "EINVAL";
    case ENFILE: return "ENFILE"; case EMFILE: return "EMFILE"; case ENOTTY: return "ENOTTY";
    case ETXTBSY: return "ETXTBSY"; case EFBIG: return "EFBIG"; case ENOSPC: return "ENOSPC";
    case EROFS: return "EROFS"; case EPIPE: return "EPIPE"; case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOSYS: return "ENOSYS"; case ELOOP: return "ELOOP"; case ENOTSOCK: return "ENOTSOCK";
    case EAFNOSUPPORT: return "EAFNOSUPPORT"; case EADDRINUSE: return "EADDRINUSE";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL"; case ENETUNREACH: return "ENETUNREACH";
    case ECONNREFUSED: return "ECONNREFUSED"; case ECONNRESET: return "ECONNRESET";
    case ETIMEDOUT: return "ETIMEDOUT"; case EHOSTUNREACH: return "EHOSTUNREACH";
    case EALREADY: return "EALREADY"; case EINPROGRESS: return "EINPROGRESS";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    default: return {};
  }
}

void x_evt_res(const X& x, const F&, E& o) noexcept {
  std::int64_t r;
  if (!result_of(ev(x), r)) return;
  if (r >= 0) { str(o, "SUCCESS"); return; }
  auto n = errno_name(-r);
  if (!n.empty()) { str(o, n); return; }
  Arena& a = *x.arena;
  a.begin();
  a.append('E');
  a.append_int(-r);
  str(o, a.finish());
}
void x_evt_rawres(const X& x, const F&, E& o) noexcept {
  std::int64_t r;
  if (result_of(ev(x), r)) num(o, r);
}
void x_evt_failed(const X& x, const F&, E& o) noexcept {
  std::int64_t r;
  if (result_of(ev(x), r)) boolean(o, r < 0);
}
void x_open_read(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) {
    auto acc = p->flags & 3u;
    boolean(o, acc == 0 || acc == 2);
  }
}
void x_open_write(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) {
    auto acc = p->flags & 3u;
    boolean(o, acc == 1 || acc == 2);
  }
}
void x_open_exec(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) {
    constexpr std::uint32_t kCreat = 0100;
    boolean(o, (p->flags & kCreat) != 0 && (p->mode & 0111) != 0);
  }
}
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
void x_arg_flags(const X& x, const F&, E& o) noexcept {
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
// The path argument as the process gave it (Falco's evt.arg.path/name): for
// an open, fd.nameraw; fd.name is the resolved path.
std::string_view given_path(const event::OpenData& p) noexcept { return p.raw.empty() ? p.path : p.raw; }
void x_arg_path(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) { str(o, given_path(*p)); return; }
  if (auto* p = ev(x).as<event::ExecData>()) { str(o, p->filename); return; }
  if (auto* p = ev(x).as<event::FileOpData>(); p && !p->path.empty()) str(o, p->path);
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

void caps_string(const X& x, std::uint64_t caps, E& o) noexcept;  // thread.cap_*, below

// evt.arg.NAME / evt.arg[NAME]: the named argument of the calls vigil
// collects; other names (arguments of syscalls vigil does not collect) have no value.
void x_arg_generic(const X& x, const F& f, E& o) noexcept {
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
// vigil does not number events: evt.num has no value, so Falco's never_true
// idiom (evt.num=0) stays false.
void x_evt_num(const X&, const F&, E&) noexcept {}

// ----- proc.*

void x_pid(const X& x, const F&, E& o) noexcept { num(o, ev(x).hdr.pid); }
void x_tid(const X& x, const F&, E& o) noexcept { num(o, ev(x).hdr.tid); }
void x_ppid(const X& x, const F&, E& o) noexcept {
  auto* p = proc_of(x);
  num(o, p && p->ppid ? p->ppid : ev(x).hdr.ppid);
}
void x_vpid(const X& x, const F&, E& o) noexcept {
  if (auto* p = proc_of(x); p && p->vpid) num(o, p->vpid);
}
std::string_view comm_of(const X& x) noexcept {
  auto* p = proc_of(x);
  if (p && !p->comm.empty()) return p->comm;
  return ev(x).hdr.comm;
}
void x_name(const X& x, const F&, E& o) noexcept {
  auto c = comm_of(x);
  if (!c.empty()) str(o, c);
}
void x_exe(const X& x, const F&, E& o) noexcept {
  if (auto* p = proc_of(x); p && !p->exe.empty()) str(o, p->exe);
}
void x_exepath(const X& x, const F&, E& o) noexcept {
  if (auto* p = proc_of(x); p && !p->exepath.empty()) { str(o, p->exepath); return; }
  if (auto* e = ev(x).as<event::ExecData>(); e && !e->exe.empty()) str(o, e->exe);
}
void join_args(Arena& a, const state::Process& p) noexcept {
  bool first = true;
  for (const auto& s : p.args) {
    if (!first) a.append(' ');
    a.append(s);
    first = false;
  }
}
void x_args(const X& x, const F&, E& o) noexcept {
  auto* p = proc_of(x);
  if (!p) return;
  x.arena->begin();
  join_args(*x.arena, *p);
  str(o, x.arena->finish());
}
void cmdline(const X& x, const state::Process& p, std::string_view comm, E& o) noexcept {
  Arena& a = *x.arena;
  a.begin();
  a.append(comm);
  if (!p.args.empty()) {
    a.append(' ');
    join_args(a, p);
  }
  str(o, a.finish());
}
void x_cmdline(const X& x, const F&, E& o) noexcept {
  auto* p = proc_of(x);
  if (!p) {
    auto c = comm_of(x);
    if (!c.empty()) str(o, c);
    return;
  }
  cmdline(x, *p, comm_of(x), o);
}
void x_cwd(const X& x, const F&, E& o) noexcept {
  if (auto* p = proc_of(x); p && !p->cwd.empty()) str(o, p->cwd);
}
void x_tty(const X& x, const F&, E& o) noexcept {
  if (auto* p = proc_of(x)) num(o, p->tty);
}
void x_loginuid(const X& x, const F&, E& o) noexcept {
  if (auto* p = proc_of(x)) num(o, p->loginuid == 0xffffffffu ? -1 : static_cast<std::int64_t>(p->loginuid));
}
void x_duration(const X& x, const F&, E& o) noexcept {
  auto* p = proc_of(x);
  if (p && p->start_ts_ns && ev(x).hdr.ts_ns >= p->start_ts_ns) {
    num(o, static_cast<std::int64_t>(ev(x).hdr.ts_ns - p->start_ts_ns));
  }
}
const state::Process* parent(const X& x) noexcept {
  auto* p = proc_of(x);
  std::uint32_t ppid = p && p->ppid ? p->ppid : ev(x).hdr.ppid;
  return lookup(x, ppid);
}
void x_pname(const X& x, const F&, E& o) noexcept {
  if (auto* p = parent(x); p && !p->comm.empty()) str(o, p->comm);
}
void x_pexe(const X& x, const F&, E& o) noexcept {
  if (auto* p = parent(x); p && !p->exe.empty()) str(o, p->exe);
}
void x_pexepath(const X& x, const F&, E& o) noexcept {
  if (auto* p = parent(x); p && !p->exepath.empty()) str(o, p->exepath);
}
void x_pcmdline(const X& x, const F&, E& o) noexcept {
  if (auto* p = parent(x)) cmdline(x, *p, p->comm, o);
}

// Ancestors: index 0 = the process itself, 1 = parent, ... Loops and depth are bounded.
template <typename Emit>
void ancestors(const X& x, const F& f, E& o, Emit emit) noexcept {
  constexpr int kMaxDepth = 32;
  const state::Process* cur = proc_of(x);
  std::uint32_t self_pid = ev(x).hdr.pid;
  if (f.index == 0) {
    if (cur) emit(*cur, o);
    return;
  }
  std::uint32_t ppid = cur && cur->ppid ? cur->ppid : ev(x).hdr.ppid;
  for (int depth = 1; depth <= kMaxDepth; ++depth) {
    const state::Process* p = lookup(x, ppid);
    if (!p || p->pid == self_pid) return;
    if (f.index < 0) {
      emit(*p, o);
      if (o.n >= Extracted::kMax) return;
    } else if (depth == f.index) {
      emit(*p, o);
      return;
    }
    if (p->ppid == p->pid) return;
    ppid = p->ppid;
  }
}
void x_aname(const X& x, const F& f, E& o) noexcept {
  ancestors(x, f, o, [](const state::Process& p, E& out) {
    if (!p.comm.empty()) str(out, p.comm);
  });
}
void x_apid(const X& x, const F& f, E& o) noexcept {
  ancestors(x, f, o, [](const state::Process& p, E& out) { num(out, p.pid); });
}
void x_aexepath(const X& x, const F& f, E& o) noexcept {
  ancestors(x, f, o, [](const state::Process& p, E& out) {
    if (!p.exepath.empty()) str(out, p.exepath);
  });
}
void x_aexe(const X& x, const F& f, E& o) noexcept {
  ancestors(x, f, o, [](const state::Process& p, E& out) {
    if (!p.exe.empty()) str(out, p.exe);
  });
}
// Program identity (engine/ident): from the exec event, else the process's
// last exec. ExecData and Process name the facts alike, so one generic
// lambda reads either.
template <typename Fn>
void exe_fact(const X& x, E& o, Fn fn) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) { fn(*e, o); return; }
  if (auto* p = proc_of(x)) fn(*p, o);
}
void x_exe_sha256(const X& x, const F&, E& o) noexcept {
  exe_fact(x, o, [](const auto& s, E& out) { if (!s.exe_sha256.empty()) str(out, s.exe_sha256); });
}
void x_exe_build_id(const X& x, const F&, E& o) noexcept {
  exe_fact(x, o, [](const auto& s, E& out) { if (!s.exe_build_id.empty()) str(out, s.exe_build_id); });
}
void x_exe_known_as(const X& x, const F&, E& o) noexcept {
  exe_fact(x, o, [](const auto& s, E& out) { if (!s.exe_known_as.empty()) str(out, s.exe_known_as); });
}
void x_exe_is_shell(const X& x, const F&, E& o) noexcept {
  exe_fact(x, o, [](const auto& s, E& out) { boolean(out, s.exe_class == 1); });
}
void x_exe_is_interpreter(const X& x, const F&, E& o) noexcept {
  exe_fact(x, o, [](const auto& s, E& out) { boolean(out, s.exe_class == 2); });
}
void x_exe_deleted(const X& x, const F&, E& o) noexcept {
  exe_fact(x, o, [](const auto& s, E& out) { boolean(out, s.exe_deleted); });
}
void x_exe_name_mismatch(const X& x, const F&, E& o) noexcept {
  exe_fact(x, o, [](const auto& s, E& out) { boolean(out, s.exe_name_mismatch); });
}
// Where the program file lives: the first that holds of memfd, deleted,
// devshm, upper_layer, tmp; else regular.
std::string_view exe_kind(bool memfd, bool deleted, bool upper, std::string_view path) noexcept {
  if (memfd) return "memfd";
  if (deleted) return "deleted";
  if (path.starts_with("/dev/shm/") || path.starts_with("/run/shm/")) return "devshm";
  if (upper) return "upper_layer";
  if (path.starts_with("/tmp/") || path.starts_with("/var/tmp/")) return "tmp";
  return "regular";
}
void x_exe_kind(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) {
    str(o, exe_kind(e->exe_from_memfd, e->exe_deleted, e->exe_upper_layer, e->exe));
    return;
  }
  if (auto* p = proc_of(x); p && !p->exepath.empty())
    str(o, exe_kind(p->exe_from_memfd, p->exe_deleted, p->exe_upper_layer, p->exepath));
}
// exe_kind() is memfd, deleted or devshm (a flag guard on every exec: no
// kind string is made and compared).
bool exe_fileless(bool memfd, bool deleted, std::string_view path) noexcept {
  return memfd || deleted || path.starts_with("/dev/shm/") || path.starts_with("/run/shm/");
}
void x_exe_fileless(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) {
    boolean(o, exe_fileless(e->exe_from_memfd, e->exe_deleted, e->exe));
    return;
  }
  if (auto* p = proc_of(x); p && !p->exepath.empty())
    boolean(o, exe_fileless(p->exe_from_memfd, p->exe_deleted, p->exepath));
}
void x_exe_ino(const X& x, const F&, E& o) noexcept {
  exe_fact(x, o, [](const auto& s, E& out) { if (s.exe_ino) num(out, static_cast<std::int64_t>(s.exe_ino)); });
}
void x_exe_ino_ctime(const X& x, const F&, E& o) noexcept {
  exe_fact(x, o, [](const auto& s, E& out) { if (s.exe_ino) num(out, s.exe_ctime_ns); });
}
void x_exe_ino_mtime(const X& x, const F&, E& o) noexcept {
  // 0: not recorded (a capture written before vigil kept it).
  exe_fact(x, o, [](const auto& s, E& out) { if (s.exe_ino && s.exe_mtime_ns) num(out, s.exe_mtime_ns); });
}
// Falco's proc.exe_ino.ctime_duration_proc_start: the process's start (its
// fork, or when vigil first saw it) less its program file's ctime; negative
// when the file changed after the fork (Falco prints that wrapped unsigned).
void x_exe_ino_ctime_to_start(const X& x, const F&, E& o) noexcept {
  auto* p = proc_of(x);
  if (!p || p->start_ts_ns == 0) return;
  exe_fact(x, o, [p](const auto& s, E& out) {
    if (s.exe_ino && s.exe_ctime_ns)
      num(out, static_cast<std::int64_t>(p->start_ts_ns) - s.exe_ctime_ns);
  });
}
void x_aexe_known_as(const X& x, const F& f, E& o) noexcept {
  ancestors(x, f, o, [](const state::Process& p, E& out) {
    if (!p.exe_known_as.empty()) str(out, p.exe_known_as);
  });
}
// Ancestor command lines, each followed by the earlier images it exec'd
// from; each cut to kLineageBytes, and the walk stops before it could fill
// more than half of the arena.
constexpr std::size_t kLineageBytes = 256;
void x_acmdline(const X& x, const F& f, E& o) noexcept {
  Arena& a = *x.arena;
  ancestors(x, f, o, [&x, &a](const state::Process& p, E& out) {
    if (a.used() > Arena::kSize / 2 || out.n >= Extracted::kMax) return;
    a.begin();
    a.append(std::string_view(p.comm).substr(0, kLineageBytes));
    for (const auto& s : p.args) {
      if (a.finish().size() >= kLineageBytes) break;
      a.append(' ');
      a.append(std::string_view(s).substr(0, kLineageBytes));
    }
    auto c = a.finish();
    str(out, c.substr(0, kLineageBytes));
    for (const auto& prior : p.prior_cmdlines) {
      if (out.n >= Extracted::kMax || a.used() > Arena::kSize / 2) return;
      str(out, a.put(std::string_view(prior).substr(0, kLineageBytes)));
    }
    (void)x;
  });
}
void x_prior_cmdline(const X& x, const F&, E& o) noexcept {
  if (auto* p = proc_of(x))
    for (const auto& c : p->prior_cmdlines) str(o, c);
}
void x_stdin_socket(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) { boolean(o, e->stdin_is_socket); return; }
  if (auto* p = proc_of(x)) boolean(o, p->stdin_is_socket);
}
void x_stdout_socket(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) { boolean(o, e->stdout_is_socket); return; }
  if (auto* p = proc_of(x)) boolean(o, p->stdout_is_socket);
}
void x_is_32bit(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) { boolean(o, e->elf32); return; }
  if (auto* p = proc_of(x)) boolean(o, p->elf32);
}
void x_exe_memfd(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) { boolean(o, e->exe_from_memfd); return; }
  if (auto* p = proc_of(x)) boolean(o, p->exe_from_memfd);
}
void x_exe_upper(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) { boolean(o, e->exe_upper_layer); return; }
  if (auto* p = proc_of(x)) boolean(o, p->exe_upper_layer);
}
void x_exe_writable(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) { boolean(o, e->exe_writable); return; }
  if (auto* p = proc_of(x)) boolean(o, p->exe_writable);
}
// Capability sets as Falco prints them: the names, space-separated.
void caps_string(const X& x, std::uint64_t caps, E& o) noexcept {
  static constexpr std::string_view kCaps[] = {
      "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
      "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE",
      "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
      "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT",
      "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME",
      "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL",
      "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
      "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE"};
  Arena& a = *x.arena;
  a.begin();
  bool first = true;
  for (std::size_t i = 0; i < 64; ++i) {
    if (!(caps >> i & 1u)) continue;
    if (!first) a.append(' ');
    first = false;
    if (i < std::size(kCaps)) {
      a.append(kCaps[i]);
    } else {
      a.append("CAP_");
      a.append_uint(i);
    }
  }
  str(o, a.finish());
}
template <std::uint64_t event::ExecData::*E_, std::uint64_t event::CapsData::*C_,
          std::uint64_t state::Process::*P_>
void x_caps(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) { caps_string(x, e->*E_, o); return; }
  if (auto* c = ev(x).as<event::CapsData>()) { caps_string(x, c->*C_, o); return; }
  if (auto* p = proc_of(x)) caps_string(x, p->*P_, o);
}
void x_sid(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>(); e && e->sid) { num(o, e->sid); return; }
  if (auto* p = proc_of(x); p && p->sid) num(o, p->sid);
}
// The session leader is the process whose pid is the session id: its comm.
// No value when the session id or the leader is not known, or when the pid
// now belongs to a process of another session (a reused pid). Falco falls
// back to the eldest ancestor in the same session; vigil does not guess.
void x_sname(const X& x, const F&, E& o) noexcept {
  const auto* e = ev(x).as<event::ExecData>();
  const auto* p = proc_of(x);
  const std::uint32_t sid = e && e->sid ? e->sid : p ? p->sid : 0;
  if (sid == 0) return;
  if (sid == ev(x).hdr.pid) {
    auto c = comm_of(x);
    if (!c.empty()) str(o, c);
    return;
  }
  const state::Process* leader = lookup(x, sid);
  if (!leader || leader->comm.empty() || (leader->sid != 0 && leader->sid != sid)) return;
  str(o, leader->comm);
}
void x_vpgid(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>(); e && e->vpgid) { num(o, e->vpgid); return; }
  if (auto* p = proc_of(x); p && p->vpgid) num(o, p->vpgid);
}
void x_is_sid_leader(const X& x, const F&, E& o) noexcept {
  const auto* e = ev(x).as<event::ExecData>();
  const auto* p = proc_of(x);
  const std::uint32_t sid = e && e->sid ? e->sid : p ? p->sid : 0;
  if (sid) boolean(o, sid == ev(x).hdr.pid);
}
void x_is_vpgid_leader(const X& x, const F&, E& o) noexcept {
  const auto* e = ev(x).as<event::ExecData>();
  const auto* p = proc_of(x);
  const std::uint32_t vpgid = e && e->vpgid ? e->vpgid : p ? p->vpgid : 0;
  const std::uint32_t vpid = p && p->vpid ? p->vpid : ev(x).hdr.pid;
  if (vpgid) boolean(o, vpgid == vpid);
}
void x_gpu_compute(const X& x, const F&, E& o) noexcept {
  if (auto* p = proc_of(x)) boolean(o, p->gpu_compute);
}

// ----- user.* / group.*

std::uint32_t uid_of(const X& x) noexcept {
  auto* p = proc_of(x);
  return p ? p->uid : ev(x).hdr.uid;
}
std::uint32_t gid_of(const X& x) noexcept {
  auto* p = proc_of(x);
  return p ? p->gid : ev(x).hdr.gid;
}
void x_uid(const X& x, const F&, E& o) noexcept { num(o, uid_of(x)); }
void x_gid(const X& x, const F&, E& o) noexcept { num(o, gid_of(x)); }
// Names come from the state's passwd/group tables; without them only id 0
// has a name vigil can know.
void x_user_name(const X& x, const F&, E& o) noexcept {
  std::uint32_t uid = uid_of(x);
  if (x.ctx->state) {
    auto n = x.ctx->state->user_name(uid);
    if (!n.empty()) { str(o, n); return; }
  }
  if (uid == 0) str(o, "root");
}
void x_group_name(const X& x, const F&, E& o) noexcept {
  std::uint32_t gid = gid_of(x);
  if (x.ctx->state) {
    auto n = x.ctx->state->group_name(gid);
    if (!n.empty()) { str(o, n); return; }
  }
  if (gid == 0) str(o, "root");
}
void x_loginname(const X& x, const F&, E& o) noexcept {
  auto* p = proc_of(x);
  if (!p || p->loginuid == 0xffffffffu) return;
  if (x.ctx->state) {
    auto n = x.ctx->state->user_name(p->loginuid);
    if (!n.empty()) { str(o, n); return; }
  }
  if (p->loginuid == 0) str(o, "root");
}

// ----- fd.*

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
void x_evt_args(const X& x, const F&, E& o) noexcept {
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

struct Endpoints {
  std::uint8_t family = 0;
  event::L4 proto = event::L4::kUnknown;
  const event::IpAddr* client = nullptr;
  std::uint16_t cport = 0;
  const event::IpAddr* server = nullptr;
  std::uint16_t sport = 0;
  std::string_view unix_path;
  bool inbound = false;  // the local end is the server (accept, listen, bind)
};
bool endpoints(const event::Event& e, Endpoints& ep) noexcept {
  if (auto* c = e.as<event::ConnectData>()) {
    ep.family = c->family;
    ep.proto = c->proto;
    ep.client = &c->saddr;
    ep.cport = c->sport;
    ep.server = &c->daddr;
    ep.sport = c->dport;
    ep.unix_path = c->unix_path;
    return true;
  }
  if (auto* d = e.as<event::DupData>(); d && d->family != 0) {
    ep.family = d->family;
    ep.proto = d->proto;
    ep.client = &d->saddr;
    ep.cport = d->sport;
    ep.server = &d->daddr;
    ep.sport = d->dport;
    return true;
  }
  if (auto* d = e.as<event::InboundData>(); d && d->family != 0) {
    ep.family = d->family;
    ep.proto = d->proto;
    ep.client = &d->raddr;
    ep.cport = d->rport;
    ep.server = &d->laddr;
    ep.sport = d->lport;
    ep.inbound = true;
    return true;
  }
  if (auto* p = e.as<event::PayloadData>()) {
    ep.family = p->family;
    ep.proto = event::L4::kTcp;
    ep.client = &p->saddr;
    ep.cport = p->sport;
    ep.server = &p->daddr;
    ep.sport = p->dport;
    return true;
  }
  return false;
}
void x_fd_name(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) { str(o, p->path); return; }
  Endpoints ep;
  if (!endpoints(ev(x), ep)) return;
  if (ep.family == AF_UNIX) {
    if (!ep.unix_path.empty()) str(o, ep.unix_path);
    return;
  }
  Arena& a = *x.arena;
  a.begin();
  append_ip(a, *ep.client);
  a.append(':');
  a.append_uint(ep.cport);
  a.append("->");
  append_ip(a, *ep.server);
  a.append(':');
  a.append_uint(ep.sport);
  str(o, a.finish());
}
void x_fd_nameraw(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) str(o, given_path(*p));
}
void x_fd_directory(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) {
    auto d = dirname_of(p->path);
    if (!d.empty()) str(o, d);
  }
}
void x_fd_filename(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) str(o, basename_of(p->path));
}
void x_fd_type(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) {
    str(o, p->file_type == event::OpenData::kFileDirectory ? "directory"
           : p->file_type == event::OpenData::kFileFifo    ? "pipe"
                                                           : "file");
    return;
  }
  Endpoints ep;
  if (!endpoints(ev(x), ep)) return;
  if (ep.family == AF_INET) str(o, "ipv4");
  else if (ep.family == AF_INET6) str(o, "ipv6");
  else if (ep.family == AF_UNIX) str(o, "unix");
}
void x_fd_typechar(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) {
    str(o, p->file_type == event::OpenData::kFileDirectory ? "d"
           : p->file_type == event::OpenData::kFileFifo    ? "p"
                                                           : "f");
    return;
  }
  Endpoints ep;
  if (!endpoints(ev(x), ep)) return;
  if (ep.family == AF_INET) str(o, "4");
  else if (ep.family == AF_INET6) str(o, "6");
  else if (ep.family == AF_UNIX) str(o, "u");
}
void x_fd_sockfamily(const X& x, const F&, E& o) noexcept {
  std::uint32_t family = 0;
  if (auto* s = ev(x).as<event::SocketData>()) {
    family = s->domain;
  } else if (Endpoints ep; endpoints(ev(x), ep)) {
    family = ep.family;
  }
  if (family == AF_INET || family == AF_INET6) str(o, "ip");
  else if (family == AF_UNIX) str(o, "unix");
}
void x_fd_l4proto(const X& x, const F&, E& o) noexcept {
  Endpoints ep;
  if (!endpoints(ev(x), ep)) return;
  if (ep.proto == event::L4::kTcp) str(o, "tcp");
  else if (ep.proto == event::L4::kUdp) str(o, "udp");
}
void x_fd_num(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) { num(o, p->result >= 0 ? p->result : -1); return; }
  if (auto* p = ev(x).as<event::IoctlData>()) { num(o, p->fd); return; }
  if (auto* p = ev(x).as<event::DupData>()) { num(o, p->oldfd); return; }
  if (auto* p = ev(x).as<event::SocketData>()) { num(o, p->result); return; }
  if (auto* p = ev(x).as<event::InboundData>()) num(o, p->syscall == event::Syscall::kNone ? p->fd : p->result);
}
bool inet(const X& x, Endpoints& ep) noexcept {
  return endpoints(ev(x), ep) && (ep.family == AF_INET || ep.family == AF_INET6);
}
void x_fd_sip(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) ip(o, *ep.server);
}
void x_fd_cip(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) ip(o, *ep.client);
}
void x_fd_ip(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) {
    ip(o, *ep.client);
    ip(o, *ep.server);
  }
}
void x_fd_sport(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) num(o, ep.sport);
}
void x_fd_cport(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) num(o, ep.cport);
}
void x_fd_port(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) {
    num(o, ep.cport);
    num(o, ep.sport);
  }
}
// fd.lip/rip/lport/rport/lnet/rnet: the local end is the client of an
// outbound connection and the server of an inbound one.
void x_fd_lip(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) ip(o, ep.inbound ? *ep.server : *ep.client);
}
void x_fd_rip(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep) && !(ep.inbound && ep.cport == 0)) ip(o, ep.inbound ? *ep.client : *ep.server);
}
void x_fd_lport(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) num(o, ep.inbound ? ep.sport : ep.cport);
}
void x_fd_rport(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep) && !(ep.inbound && ep.cport == 0)) num(o, ep.inbound ? ep.cport : ep.sport);
}
void x_fd_cip_name(const X& x, const F&, E& o) noexcept {
  Endpoints ep;
  if (!inet(x, ep) || !x.ctx->state) return;
  auto n = x.ctx->state->dns_name_for(*x.ctx, *ep.client);
  if (!n.empty()) str(o, n);
}
void x_fd_connected(const X& x, const F&, E& o) noexcept {
  if (auto* c = ev(x).as<event::ConnectData>(); c && c->proto == event::L4::kTcp) boolean(o, true);
  else if (ev(x).as<event::PayloadData>()) boolean(o, true);
}
void x_fd_name_changed(const X& x, const F&, E& o) noexcept {
  // A connect (or unconnected send) gives the socket its tuple.
  if (ev(x).as<event::ConnectData>()) boolean(o, true);
}
void x_fd_sip_name(const X& x, const F&, E& o) noexcept {
  Endpoints ep;
  if (!inet(x, ep) || !x.ctx->state) return;
  auto n = x.ctx->state->dns_name_for(*x.ctx, *ep.server);
  if (!n.empty()) str(o, n);
}

// ----- container.* / k8s.*

void x_container_id(const X& x, const F&, E& o) noexcept {
  std::string_view id;
  if (x.ctx->container) id = x.ctx->container->id;
  else if (auto* p = proc_of(x)) id = p->container_id;
  if (id.empty()) { str(o, "host"); return; }
  str(o, id.substr(0, 12));
}
void x_container_full_id(const X& x, const F&, E& o) noexcept {
  std::string_view id;
  if (x.ctx->container) id = x.ctx->container->id;
  else if (auto* p = proc_of(x)) id = p->container_id;
  str(o, id.empty() ? std::string_view("host") : id);
}
void x_container_name(const X& x, const F&, E& o) noexcept {
  auto* c = x.ctx->container;
  if (!c) {
    if (auto* p = proc_of(x); !p || p->container_id.empty()) str(o, "host");
    return;
  }
  if (!c->name.empty()) str(o, c->name);
  else if (x.ctx->pod_container && !x.ctx->pod_container->name.empty()) str(o, x.ctx->pod_container->name);
}
std::string_view image_of(const X& x) noexcept {
  if (x.ctx->container && !x.ctx->container->image.empty()) return x.ctx->container->image;
  if (x.ctx->pod_container) return x.ctx->pod_container->image;
  return {};
}
// Splits "registry/repo:tag@digest" into repository and tag.
void split_image(std::string_view img, std::string_view& repo, std::string_view& tag) noexcept {
  auto at = img.find('@');
  std::string_view base = img.substr(0, at);
  auto slash = base.rfind('/');
  auto colon = base.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    repo = base.substr(0, colon);
    tag = base.substr(colon + 1);
  } else {
    repo = base;
    tag = {};
  }
}
void x_image(const X& x, const F&, E& o) noexcept {
  auto i = image_of(x);
  if (!i.empty()) str(o, i);
}
void x_image_repo(const X& x, const F&, E& o) noexcept {
  auto i = image_of(x);
  if (i.empty()) return;
  std::string_view r, t;
  split_image(i, r, t);
  str(o, r);
}
void x_image_tag(const X& x, const F&, E& o) noexcept {
  auto i = image_of(x);
  if (i.empty()) return;
  std::string_view r, t;
  split_image(i, r, t);
  if (!t.empty()) str(o, t);
}
void x_container_type(const X& x, const F&, E& o) noexcept {
  if (x.ctx->container && !x.ctx->container->runtime.empty()) str(o, x.ctx->container->runtime);
}
void x_privileged(const X& x, const F&, E& o) noexcept {
  if (x.ctx->container || x.ctx->pod_container) {
    boolean(o, (x.ctx->container && x.ctx->container->privileged) ||
                   (x.ctx->pod_container && x.ctx->pod_container->privileged));
  }
}
// When the container started: its pod's status.containerStatuses[].state.
// running.startedAt. vigil reads no runtime metadata, so no value for
// containers outside known pods.
void x_container_start_ts(const X& x, const F&, E& o) noexcept {
  if (auto* pc = x.ctx->pod_container; pc && pc->started_at_ns > 0) num(o, pc->started_at_ns);
}
void x_ns(const X& x, const F&, E& o) noexcept {
  if (x.ctx->pod) str(o, x.ctx->pod->ns);
}
void x_pod_name(const X& x, const F&, E& o) noexcept {
  if (x.ctx->pod) str(o, x.ctx->pod->name);
}
void x_pod_uid(const X& x, const F&, E& o) noexcept {
  if (x.ctx->pod) str(o, x.ctx->pod->uid);
}
void x_pod_label(const X& x, const F& f, E& o) noexcept {
  if (!x.ctx->pod) return;
  auto it = x.ctx->pod->labels.find(f.arg);
  if (it != x.ctx->pod->labels.end()) str(o, it->second);
}
void x_pod_labels(const X& x, const F&, E& o) noexcept {
  if (!x.ctx->pod) return;
  Arena& a = *x.arena;
  for (const auto& [k, v] : x.ctx->pod->labels) {
    if (o.n >= Extracted::kMax) break;
    a.begin();
    a.append(k);
    a.append(':');
    a.append(v);
    str(o, a.finish());
  }
}

// ----- gpu.*

// The NVIDIA device the event is about: path, major, minor.
struct GpuDev {
  std::string_view path;
  std::uint32_t major = 0;
  std::uint32_t minor = 0;
  bool has_numbers = false;
};
bool gpu_dev(const X& x, GpuDev& d) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) {
    // The same test as the sensor and the state: /dev/nvidia*, major 195, or a
    // device node whose file name starts with "nvidia" (stand-in nodes).
    const std::string_view path = p->path;
    bool nvidia_name = path.starts_with("/dev/nvidia") || (p->is_device && basename_of(path).starts_with("nvidia"));
    if (!nvidia_name && !(p->is_device && p->dev_major == event::nvidia::kMajor)) return false;
    d.path = p->path;
    d.major = p->dev_major;
    d.minor = p->dev_minor;
    d.has_numbers = p->is_device;
    return true;
  }
  if (auto* p = ev(x).as<event::IoctlData>()) {
    d.major = p->dev_major;
    d.minor = p->dev_minor;
    d.has_numbers = true;
    if (p->uvm) d.path = p->dev_minor == 1 ? "/dev/nvidia-uvm-tools" : "/dev/nvidia-uvm";
    else if (p->dev_major == event::nvidia::kMajor && p->dev_minor == event::nvidia::kCtlMinor) d.path = "/dev/nvidiactl";
    else if (p->dev_major == event::nvidia::kMajor && p->dev_minor == event::nvidia::kModesetMinor) d.path = "/dev/nvidia-modeset";
    return true;
  }
  // A plugin event about a GPU (NVML's per-process samples): /dev/nvidiaN.
  if (auto* p = ev(x).as<event::PluginData>();
      p && p->gpu_minor >= 0 && static_cast<std::uint32_t>(p->gpu_minor) <= event::nvidia::kMaxGpuMinor) {
    d.major = event::nvidia::kMajor;
    d.minor = static_cast<std::uint32_t>(p->gpu_minor);
    d.has_numbers = true;
    return true;
  }
  return false;
}
void x_gpu_device(const X& x, const F&, E& o) noexcept {
  GpuDev d;
  if (!gpu_dev(x, d)) return;
  if (!d.path.empty()) { str(o, d.path); return; }
  if (d.major == event::nvidia::kMajor && d.minor <= event::nvidia::kMaxGpuMinor) {
    Arena& a = *x.arena;
    a.begin();
    a.append("/dev/nvidia");
    a.append_uint(d.minor);
    str(o, a.finish());
  }
}
void x_gpu_major(const X& x, const F&, E& o) noexcept {
  if (GpuDev d; gpu_dev(x, d) && d.has_numbers) num(o, d.major);
}
void x_gpu_minor(const X& x, const F&, E& o) noexcept {
  if (GpuDev d; gpu_dev(x, d) && d.has_numbers) num(o, d.minor);
}
int gpu_index(const GpuDev& d) noexcept {
  if (!d.path.empty()) {
    int i = event::nvidia::gpu_index_from_path(d.path);
    if (i >= 0 || !d.has_numbers) return i;
  }
  if (d.has_numbers && d.major == event::nvidia::kMajor && d.minor <= event::nvidia::kMaxGpuMinor &&
      (d.path.empty() || d.path.rfind("/dev/nvidia", 0) == 0)) {
    // A path that names a control node (nvidiactl, uvm) is not an index.
    if (!d.path.empty() && event::nvidia::gpu_index_from_path(d.path) < 0) return -1;
    return static_cast<int>(d.minor);
  }
  return -1;
}
void x_gpu_index(const X& x, const F&, E& o) noexcept {
  GpuDev d;
  if (!gpu_dev(x, d)) return;
  int i = gpu_index(d);
  if (i >= 0) num(o, i);
}
void x_gpu_ioctl(const X& x, const F&, E& o) noexcept {
  auto* p = ev(x).as<event::IoctlData>();
  if (!p) return;
  auto n = p->uvm ? event::nvidia::uvm_ioctl_name(p->cmd) : event::nvidia::escape_name(p->nr);
  if (!n.empty()) str(o, n);
}
void x_gpu_ioctl_nr(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>()) num(o, p->nr);
}
void x_gpu_uvm(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>()) boolean(o, p->uvm);
}
void x_gpu_class(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>(); p && p->rm_class) num(o, p->rm_class);
}
void x_gpu_class_name(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>(); p && p->rm_class) {
    auto n = event::nvidia::class_name(p->rm_class);
    if (!n.empty()) str(o, n);
  }
}
void x_gpu_class_kind(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>(); p && p->rm_class) {
    auto n = event::nvidia::class_kind(p->rm_class);
    if (!n.empty()) str(o, n);
  }
}
void x_gpu_control(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>(); p && p->rm_control) num(o, p->rm_control);
}
void x_gpu_control_name(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>(); p && p->rm_control) {
    auto n = event::nvidia::control_name(p->rm_control);
    if (!n.empty()) str(o, n);
  }
}
void x_gpu_control_kind(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>(); p && p->rm_control) {
    auto n = event::nvidia::control_kind(p->rm_control);
    if (!n.empty()) str(o, n);
  }
}
void x_gpu_usage_count(const X& x, const F&, E& o) noexcept {
  auto* p = ev(x).as<event::GpuUsageData>();
  if (!p) return;
  std::uint64_t total = 0;
  for (const auto& e : p->entries) total += e.count;
  num(o, static_cast<std::int64_t>(total));
}
void x_xid(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::XidData>()) num(o, p->code);
}
void x_xid_text(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::XidData>()) str(o, p->text);
}
void x_gpu_pci(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::XidData>(); p && !p->pci.empty()) str(o, p->pci);
}
void x_xid_source(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::XidData>(); p && !p->source.empty()) str(o, p->source);
}
void x_xid_facility(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::XidData>(); p && p->facility >= 0) num(o, p->facility);
}
void x_xid_pid(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::XidData>(); p && p->xid_pid) num(o, p->xid_pid);
}
void x_xid_comm(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::XidData>(); p && !p->xid_comm.empty()) str(o, p->xid_comm);
}
const state::GpuAllocation* allocation(const X& x) noexcept {
  return x.ctx->state ? x.ctx->state->gpu_allocation(*x.ctx) : nullptr;
}
void x_gpu_limit(const X& x, const F&, E& o) noexcept {
  if (auto* a = allocation(x)) { num(o, a->limit); return; }
  if (auto* pc = x.ctx->pod_container) num(o, pc->gpu_limit);
}
void x_visible(const X& x, const F&, E& o) noexcept {
  if (auto* pc = x.ctx->pod_container; pc && !pc->nvidia_visible_devices.empty()) {
    str(o, pc->nvidia_visible_devices);
  }
}
// The GPUs given to the container: the kubelet's device ids, else the
// comma-separated NVIDIA_VISIBLE_DEVICES ("none"/"void" give nothing).
template <typename Fn>
void for_each_allocated(const state::PodContainer& pc, Fn fn) noexcept {
  if (!pc.gpu_devices.empty()) {
    for (const auto& d : pc.gpu_devices) fn(std::string_view(d));
    return;
  }
  std::string_view v = pc.nvidia_visible_devices;
  if (v.empty() || v == "none" || v == "void") return;
  while (!v.empty()) {
    auto c = v.find(',');
    auto item = v.substr(0, c);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) fn(item);
    if (c == std::string_view::npos) break;
    v.remove_prefix(c + 1);
  }
}
void x_allocated(const X& x, const F&, E& o) noexcept {
  if (auto* a = allocation(x)) {
    for (const auto& d : a->devices) {
      if (o.n < Extracted::kMax) str(o, d);
    }
    return;
  }
  auto* pc = x.ctx->pod_container;
  if (!pc) return;
  for_each_allocated(*pc, [&](std::string_view s) {
    if (o.n < Extracted::kMax) str(o, s);
  });
}
void x_allowed(const X& x, const F&, E& o) noexcept {
  GpuDev d;
  if (!gpu_dev(x, d)) return;
  bool in_container = x.ctx->container != nullptr ||
                      (proc_of(x) && !proc_of(x)->container_id.empty());
  if (!in_container) { boolean(o, true); return; }
  // The state knows the node's GPUs (UUID -> minor): ask it when the device
  // numbers are known.
  if (x.ctx->state && d.has_numbers && allocation(x)) {
    boolean(o, x.ctx->state->gpu_allowed(*x.ctx, d.major, d.minor));
    return;
  }
  auto* pc = x.ctx->pod_container;
  if (!pc) return;  // a container vigil has no pod spec for: unknown
  if (pc->nvidia_visible_devices == "all" && pc->gpu_devices.empty()) { boolean(o, true); return; }
  bool any = pc->gpu_limit > 0;
  bool numeric_match = false, has_numeric = false, has_uuid = false;
  int idx = gpu_index(d);
  for_each_allocated(*pc, [&](std::string_view s) {
    any = true;
    if (s == "all") { numeric_match = true; has_numeric = true; return; }
    int v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec == std::errc() && r.ptr == s.data() + s.size()) {
      has_numeric = true;
      if (v == idx) numeric_match = true;
    } else {
      has_uuid = true;
    }
  });
  if (idx < 0) { boolean(o, any); return; }   // nvidiactl, uvm, modeset
  if (numeric_match) { boolean(o, true); return; }
  if (has_uuid && !has_numeric) return;     // UUIDs cannot be mapped to a minor here
  boolean(o, false);
}

// ----- dns.* / conn.*

void x_dns_name(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::DnsData>(); p && !p->name.empty()) str(o, p->name);
}
void x_dns_type(const X& x, const F&, E& o) noexcept {
  auto* p = ev(x).as<event::DnsData>();
  if (!p) return;
  switch (p->qtype) {
    case 1: str(o, "A"); return;
    case 2: str(o, "NS"); return;
    case 5: str(o, "CNAME"); return;
    case 6: str(o, "SOA"); return;
    case 12: str(o, "PTR"); return;
    case 15: str(o, "MX"); return;
    case 16: str(o, "TXT"); return;
    case 28: str(o, "AAAA"); return;
    case 33: str(o, "SRV"); return;
    case 65: str(o, "HTTPS"); return;
    case 255: str(o, "ANY"); return;
    default: {
      Arena& a = *x.arena;
      a.begin();
      a.append("TYPE");
      a.append_uint(p->qtype);
      str(o, a.finish());
    }
  }
}
void x_dns_rcode(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::DnsData>(); p && p->is_response) num(o, p->rcode);
}
void x_dns_answers(const X& x, const F&, E& o) noexcept {
  auto* p = ev(x).as<event::DnsData>();
  if (!p) return;
  Arena& a = *x.arena;
  for (const auto& ans : p->answers) {
    if (o.n >= Extracted::kMax) break;
    a.begin();
    append_ip(a, ans);
    str(o, a.finish());
  }
}
void x_dns_response(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::DnsData>()) boolean(o, p->is_response);
}
void x_dns_server(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::DnsData>()) ip(o, p->server);
}
void x_payload(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::PayloadData>()) str(o, p->bytes);
}
bool has_sub(std::string_view h, std::string_view n) { return h.find(n) != std::string_view::npos; }
void x_protocol(const X& x, const F&, E& o) noexcept {
  auto* p = ev(x).as<event::PayloadData>();
  if (!p) return;
  std::string_view b = p->bytes;
  std::size_t i = 0;
  while (i < b.size() && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n')) ++i;
  std::string_view t = b.substr(i);
  if (!t.empty() && t[0] == '{' &&
      (has_sub(t, "mining.subscribe") || has_sub(t, "mining.authorize") ||
       has_sub(t, "mining.extranonce") || (has_sub(t, "\"login\"") && has_sub(t, "\"agent\"")) ||
       has_sub(t, "eth_submitLogin"))) {
    str(o, "stratum");
    return;
  }
  if (b.size() >= 3 && static_cast<unsigned char>(b[0]) == 0x16 && static_cast<unsigned char>(b[1]) == 0x03) {
    str(o, "tls");
    return;
  }
  if (b.rfind("SSH-", 0) == 0) { str(o, "ssh"); return; }
  static constexpr std::string_view kMethods[] = {"GET ", "POST ", "PUT ", "HEAD ", "DELETE ",
                                                  "OPTIONS ", "PATCH ", "CONNECT ", "PRI * HTTP/2"};
  for (auto m : kMethods) {
    if (b.rfind(m, 0) == 0) { str(o, "http"); return; }
  }
  str(o, "unknown");
}

// ----- vigil.*: the agent itself as the target

// Is `path` one of vigil's own files, or inside one of its directories?
bool is_vigil_path(const X& x, std::string_view path) noexcept {
  if (path.empty() || !x.ctx->state) return false;
  for (const std::string& own : x.ctx->state->vigil_paths()) {
    if (own.empty() || path.size() < own.size() || path.compare(0, own.size(), own) != 0) continue;
    if (path.size() == own.size() || own.back() == '/' || path[own.size()] == '/') return true;
  }
  return false;
}
void x_vigil_file(const X& x, const F&, E& o) noexcept {
  const event::Event& e = ev(x);
  if (auto* p = e.as<event::OpenData>()) {
    boolean(o, is_vigil_path(x, p->path) || is_vigil_path(x, p->raw));
    return;
  }
  if (auto* p = e.as<event::FileOpData>()) boolean(o, is_vigil_path(x, p->path) || is_vigil_path(x, p->path2));
}
void x_vigil_targeted(const X& x, const F&, E& o) noexcept {
  const event::Event& e = ev(x);
  if (e.hdr.type == Type::kVigilSignal) { boolean(o, true); return; }
  if (auto* p = e.as<event::PtraceData>()) boolean(o, p->to_vigil);
}

constexpr std::string_view kOpenEv = "open, openat, openat2, creat";
constexpr std::string_view kNetEv = "connect, sendto, sendmsg, payload, dup, accept, listen, bind";
constexpr std::string_view kGpuEv = "open, openat, openat2, ioctl, pluginevent";

}  // namespace

// ---------------------------------------------------------------- catalogue

void append_baseline_fields(std::vector<FieldDef>& fields);  // fields_baseline.cpp

FieldCatalog::FieldCatalog() {
  using T = FieldType;
  using A = ArgMode;
  fields_ = {
      {"evt.type", T::kString, A::kNone, false, "*", "Event type: Falco's syscall name (execve, openat, connect, clone, procexit, ioctl, bpf, symlinkat, linkat, unlinkat, renameat2, mkdirat, rmdir, fchmodat, ptrace, socket, dup, init_module) or vigil's own (gpu_usage, xid, dns, payload). A type stands for its family in conditions (evt.type = symlink matches symlink and symlinkat); the value shown is the call that was made where the event records it (symlink, dup2, finit_module...).", x_evt_type},
      {"evt.dir", T::kString, A::kNone, false, "*", "Event direction; always '<' (exit events only, as Falco since 0.42).", x_evt_dir},
      {"evt.source", T::kString, A::kNone, false, "*", "Event source: 'syscall' for the kernel's events, the plugin's source name for a plugin's.", x_evt_source},
      {"evt.time", T::kString, A::kNone, false, "*", "Event time of day, UTC, HH:MM:SS.nnnnnnnnn.", x_evt_time},
      {"evt.time.iso8601", T::kString, A::kNone, false, "*", "Event time, RFC 3339 UTC with nanoseconds.", x_evt_iso},
      {"evt.rawtime", T::kUint, A::kNone, false, "*", "Event time in ns since the Unix epoch.", x_evt_rawtime},
      {"evt.res", T::kString, A::kNone, false, "execve, open, openat, connect, ioctl, bpf, symlink, link, unlink, rename, mkdir, rmdir, chmod, ptrace, socket, dup, init_module, setuid, setgid, setns, unshare, accept, listen, bind, userfaultfd, memfd_create, prctl, io_uring_setup, delete_module, capset", "Result: SUCCESS or the errno name (ENOENT...).", x_evt_res},
      {"evt.rawres", T::kInt, A::kNone, false, "execve, open, openat, connect, ioctl, bpf, symlink, link, unlink, rename, mkdir, rmdir, chmod, ptrace, socket, dup, init_module, setuid, setgid, setns, unshare, accept, listen, bind, userfaultfd, memfd_create, prctl, io_uring_setup, delete_module, capset", "Result as a number (fd, 0, or a negative errno).", x_evt_rawres},
      {"evt.failed", T::kBool, A::kNone, false, "execve, open, openat, connect, ioctl, bpf, symlink, link, unlink, rename, mkdir, rmdir, chmod, ptrace, socket, dup, init_module, setuid, setgid, setns, unshare, accept, listen, bind, userfaultfd, memfd_create, prctl, io_uring_setup, delete_module, capset", "True when the call failed.", x_evt_failed},
      {"evt.is_open_read", T::kBool, A::kNone, false, kOpenEv, "The open was for reading (O_RDONLY or O_RDWR).", x_open_read},
      {"evt.is_open_write", T::kBool, A::kNone, false, kOpenEv, "The open was for writing (O_WRONLY or O_RDWR).", x_open_write},
      {"evt.is_open_exec", T::kBool, A::kNone, false, kOpenEv, "The open created a file with an execute bit.", x_open_exec},
      {"evt.arg.flags", T::kString, A::kNone, false, "open, openat, openat2, creat, execve", "Open flags as names (O_RDWR|O_CREAT); execve: what the program file is (EXE_WRITABLE, EXE_UPPER_LAYER, EXE_FROM_MEMFD).", x_arg_flags},
      {"evt.arg.name", T::kString, A::kNone, false, "open, openat, openat2, creat, execve, symlink, link, unlink, rename, mkdir, rmdir, chmod", "Path argument of the call, as given (relative paths stay relative; fd.name is an open's resolved path).", x_arg_path},
      {"evt.arg.path", T::kString, A::kNone, false, "open, openat, openat2, creat, execve, symlink, link, unlink, rename, mkdir, rmdir, chmod", "Path argument of the call, as given (relative paths stay relative; fd.name is an open's resolved path).", x_arg_path},
      {"evt.arg.pathname", T::kString, A::kNone, false, "open, openat, openat2, creat, execve, symlink, link, unlink, rename, mkdir, rmdir, chmod", "Path argument of the call, as given (relative paths stay relative; fd.name is an open's resolved path).", x_arg_path},
      {"evt.arg.filename", T::kString, A::kNone, false, "execve, chmod", "Path given to execve (or opened).", x_arg_path},
      {"evt.arg", T::kString, A::kRequiredKey, false, "open, openat, openat2, creat, execve, ioctl, bpf, symlink, link, unlink, rename, mkdir, rmdir, chmod, ptrace, socket, dup, init_module, setuid, setgid, setns, unshare, accept, listen, bind, userfaultfd, memfd_create, prctl, io_uring_setup, delete_module, capset", "A named argument of the call, by Falco's argument names: evt.arg.NAME or evt.arg[NAME] (open: name, path, flags, mode, fd; execve: filename, exe, cwd; ioctl: request, fd; bpf: cmd; symlink(at): target, linkpath, linkdirfd; link(at), rename(at)(2): oldpath, newpath, olddirfd, newdirfd, flags; unlink(at), mkdir(at), rmdir: path/name, dirfd, flags, mode; chmod, fchmodat: filename, mode, dirfd; fchmod: fd, mode; ptrace: request (PTRACE_ATTACH...), pid, addr; socket: domain (AF_PACKET...), type, proto, fd; dup: fd, newfd, flags; init_module, finit_module: fd, uargs, flags; delete_module: name, flags; capset: cap_effective, cap_permitted, cap_inheritable (after the call); setuid/setgid: uid/gid, and ruid, euid, suid (rgid...) for the re/res forms; setns: fd, nstype; unshare: flags (CLONE_NEW* names); accept, listen, bind: fd, flags/backlog; memfd_create: name, flags; userfaultfd: flags; prctl: option, arg2_int; io_uring_setup: entries; each call: res). Arguments of syscalls vigil does not collect have no value.", x_arg_generic},
      {"evt.args", T::kString, A::kNone, false, "*", "The call's arguments as one string, Falco's names: res=RESULT name=value ... (for the calls vigil collects).", x_evt_args},
      {"evt.num", T::kInt, A::kNone, false, "*", "Event number. vigil does not number events: no value (so Falco's never_true idiom, evt.num=0, stays false).", x_evt_num},
      {"proc.pid", T::kInt, A::kNone, false, "*", "Process id (thread group id).", x_pid},
      {"thread.tid", T::kInt, A::kNone, false, "*", "Thread id.", x_tid},
      {"proc.ppid", T::kInt, A::kNone, false, "*", "Parent process id.", x_ppid},
      {"proc.vpid", T::kInt, A::kNone, false, "*", "Process id inside its pid namespace.", x_vpid},
      {"proc.name", T::kString, A::kNone, false, "*", "Process name (the kernel's comm, 15 bytes).", x_name},
      {"proc.exe", T::kString, A::kNone, false, "*", "First command-line argument (argv[0]).", x_exe},
      {"proc.exepath", T::kString, A::kNone, false, "*", "Full path of the executable.", x_exepath},
      {"proc.args", T::kString, A::kNone, false, "*", "Command-line arguments after argv[0], joined by spaces.", x_args},
      {"proc.cmdline", T::kString, A::kNone, false, "*", "proc.name followed by the arguments.", x_cmdline},
      {"proc.cwd", T::kString, A::kNone, false, "*", "Working directory at exec.", x_cwd},
      {"proc.tty", T::kInt, A::kNone, false, "*", "Controlling terminal device number (0 = none).", x_tty},
      {"proc.loginuid", T::kInt, A::kNone, false, "*", "Audit login uid (-1 = unset).", x_loginuid},
      {"proc.duration", T::kInt, A::kNone, false, "*", "Nanoseconds since the process started.", x_duration},
      {"proc.pname", T::kString, A::kNone, false, "*", "Parent process name.", x_pname},
      {"proc.pexe", T::kString, A::kNone, false, "*", "Parent's argv[0].", x_pexe},
      {"proc.pexepath", T::kString, A::kNone, false, "*", "Parent's executable path.", x_pexepath},
      {"proc.pcmdline", T::kString, A::kNone, false, "*", "Parent's command line.", x_pcmdline},
      {"proc.aname", T::kString, A::kOptionalIndex, true, "*", "Ancestor name: proc.aname[N] is the Nth ancestor (1 = parent); without N, any ancestor.", x_aname},
      {"proc.apid", T::kInt, A::kOptionalIndex, true, "*", "Ancestor pid: proc.apid[N]; without N, any ancestor.", x_apid},
      {"proc.aexe", T::kString, A::kOptionalIndex, true, "*", "Ancestor argv[0]: proc.aexe[N]; without N, any ancestor.", x_aexe},
      {"proc.aexepath", T::kString, A::kOptionalIndex, true, "*", "Ancestor executable path: proc.aexepath[N]; without N, any ancestor.", x_aexepath},
      {"proc.stdin.socket", T::kBool, A::kNone, false, "execve", "fd 0 of the program was a socket at exec.", x_stdin_socket},
      {"proc.stdout.socket", T::kBool, A::kNone, false, "execve", "fd 1 of the program was a socket at exec.", x_stdout_socket},
      {"proc.is_32bit", T::kBool, A::kNone, false, "*", "The program is a 32-bit ELF (ia32/x32): the kernel's syscall tracepoints skip its compat syscalls, so its opens, ioctls and bpf() calls are not seen (execs and connects are).", x_is_32bit},
      {"proc.is_exe_from_memfd", T::kBool, A::kNone, false, "*", "The program runs from a memfd (memfd_create): fileless execution.", x_exe_memfd},
      {"proc.is_exe_upper_layer", T::kBool, A::kNone, false, "*", "The program file is in an overlay's upper (writable) layer: written in the container after it started, not part of its image. Known from the exec on; false for processes found in /proc at start.", x_exe_upper},
      {"proc.is_exe_writable", T::kBool, A::kNone, false, "*", "The program file is writable by the user running it (owner, group or other write bit for its fsuid/fsgid, or CAP_DAC_OVERRIDE).", x_exe_writable},
      {"proc.exe_sha256", T::kString, A::kNone, false, "*", "SHA-256 (hex) of the program file, read through /proc/PID/exe when the exec is seen, once per distinct file (cached by device, inode, size, mtime, ctime); of its first 64 MiB when larger. No value when vigil could not read it in time (a process that exited at once) and for processes found at start.", x_exe_sha256},
      {"proc.exe_build_id", T::kString, A::kNone, false, "*", "ELF GNU build-id (hex) of the program file; no value when it has none or could not be read.", x_exe_build_id},
      {"proc.exe_known_as", T::kString, A::kNone, false, "*", "The known shell or interpreter the program file is, whatever it is called: the canonical name (dash, bash, busybox, python3, perl...) under which a file of the same identity (build-id, else SHA-256) is installed on the node or in the process's container image. No value for other programs.", x_exe_known_as},
      {"proc.is_exe_shell", T::kBool, A::kNone, false, "*", "The program file is a known shell by identity (proc.exe_known_as is a shell): a renamed or relocated copy of dash is a shell. busybox counts only when it runs its sh/ash/hush applet.", x_exe_is_shell},
      {"proc.is_exe_interpreter", T::kBool, A::kNone, false, "*", "The program file is a known script interpreter by identity (python, perl, ruby, node, php, lua, tclsh, Rscript).", x_exe_is_interpreter},
      {"proc.is_exe_deleted", T::kBool, A::kNone, false, "*", "The program file had been deleted (unlinked) when vigil read it at exec; memfds are proc.is_exe_from_memfd.", x_exe_deleted},
      {"proc.is_exe_name_mismatch", T::kBool, A::kNone, false, "*", "A known shell or interpreter was started under a name (proc.name) it is not installed as: a renamed copy, or a link of another name. #! scripts (named after the script) and busybox applets are not counted.", x_exe_name_mismatch},
      {"proc.exe_ino", T::kInt, A::kNone, false, "*", "Inode number of the program file, as the kernel saw it at exec (Falco's proc.exe_ino); no value for processes found at start.", x_exe_ino},
      {"proc.exe_ino.ctime", T::kInt, A::kNone, false, "*", "Change time of the program file's inode at exec, ns since the epoch (Falco's proc.exe_ino.ctime): a file written just before it ran has a recent one.", x_exe_ino_ctime},
      {"proc.exe_ino.mtime", T::kInt, A::kNone, false, "*", "Modification time of the program file's inode at exec (when its data was last written), ns since the epoch (Falco's proc.exe_ino.mtime); no value for processes found at start and in captures written before vigil recorded it. Unlike the ctime, touch -d can set it to any time.", x_exe_ino_mtime},
      {"proc.exe_ino.ctime_duration_proc_start", T::kInt, A::kNone, false, "*", "ns from the program file's inode change (proc.exe_ino.ctime) to the process's start, its fork or when vigil first saw it (as Falco's proc.exe_ino.ctime_duration_proc_start): small for a binary written just before it ran. Negative when the file changed after the fork (Falco prints that as a huge unsigned number). No value when either time is unknown.", x_exe_ino_ctime_to_start},
      {"proc.exe_kind", T::kString, A::kNone, false, "*", "Where the program file lives: memfd, deleted, devshm (/dev/shm, /run/shm), upper_layer (written in the container), tmp (/tmp, /var/tmp) or regular; the first that holds, in that order.", x_exe_kind},
      {"proc.is_exe_fileless", T::kBool, A::kNone, false, "*", "The program runs from no file on a disk: a memfd, a deleted file or a file in /dev/shm (proc.exe_kind is memfd, deleted or devshm).", x_exe_fileless},
      {"proc.aexe_known_as", T::kString, A::kOptionalIndex, true, "*", "Ancestor identity: proc.aexe_known_as[N] is proc.exe_known_as of the Nth ancestor; without N, any ancestor (up to 32).", x_aexe_known_as},
      {"proc.acmdline", T::kString, A::kOptionalIndex, true, "*", "Ancestor command lines: proc.acmdline[N] is the Nth ancestor's (1 = parent); without N, any ancestor's (up to 32). Each ancestor also gives the command lines of the images it exec'd from (proc.prior_cmdline), so a server that exec'd into something else is still seen. Each value is cut to 256 bytes.", x_acmdline},
      {"proc.prior_cmdline", T::kString, A::kNone, true, "*", "Command lines of the images this process ran before its current one (exec chains), most recent first, at most 4, each cut to 512 bytes.", x_prior_cmdline},
      {"proc.sname", T::kString, A::kNone, false, "*", "Name (comm) of the process's session leader, the process whose pid is proc.sid. No value when vigil does not know the leader (it exited before vigil saw it, or the pid was reused); Falco then names the eldest ancestor in the same session.", x_sname},
      {"proc.sid", T::kInt, A::kNone, false, "*", "Session id of the process (the host's number), as of its last exec.", x_sid},
      {"proc.vpgid", T::kInt, A::kNone, false, "*", "Process group id, as seen in the process's pid namespace, as of its last exec.", x_vpgid},
      {"proc.is_sid_leader", T::kBool, A::kNone, false, "*", "The process leads its session (proc.pid = proc.sid).", x_is_sid_leader},
      {"proc.is_vpgid_leader", T::kBool, A::kNone, false, "*", "The process leads its process group (proc.vpid = proc.vpgid).", x_is_vpgid_leader},
      {"thread.cap_effective", T::kString, A::kNone, false, "*", "Effective capabilities (CAP_SYS_ADMIN CAP_NET_RAW ...), as of the last exec or capset (or /proc at start).", x_caps<&event::ExecData::cap_effective, &event::CapsData::effective, &state::Process::cap_effective>},
      {"thread.cap_permitted", T::kString, A::kNone, false, "*", "Permitted capabilities, as of the last exec or capset (or /proc at start).", x_caps<&event::ExecData::cap_permitted, &event::CapsData::permitted, &state::Process::cap_permitted>},
      {"thread.cap_inheritable", T::kString, A::kNone, false, "*", "Inheritable capabilities, as of the last exec or capset (or /proc at start).", x_caps<&event::ExecData::cap_inheritable, &event::CapsData::inheritable, &state::Process::cap_inheritable>},
      {"proc.gpu.compute", T::kBool, A::kNone, false, "*", "The process allocated a GPU compute or channel class earlier.", x_gpu_compute},
      {"user.uid", T::kInt, A::kNone, false, "*", "User id.", x_uid},
      {"user.name", T::kString, A::kNone, false, "*", "User name, from the host passwd table (uid 0 is root).", x_user_name},
      {"user.loginuid", T::kInt, A::kNone, false, "*", "Audit login uid (-1 = unset).", x_loginuid},
      {"user.loginname", T::kString, A::kNone, false, "*", "Login user name (known for loginuid 0 only).", x_loginname},
      {"group.gid", T::kInt, A::kNone, false, "*", "Group id.", x_gid},
      {"group.name", T::kString, A::kNone, false, "*", "Group name (known for gid 0 only).", x_group_name},
      {"fd.name", T::kString, A::kNone, false, "open, openat, openat2, creat, connect, sendto, sendmsg, payload", "File path (of an open: resolved; as given when the open failed), or the connection tuple cip:cport->sip:sport.", x_fd_name},
      {"fd.nameraw", T::kString, A::kNone, false, kOpenEv, "The path as given to the call (not normalised).", x_fd_nameraw},
      {"fd.directory", T::kString, A::kNone, false, kOpenEv, "Directory of the opened file.", x_fd_directory},
      {"fd.filename", T::kString, A::kNone, false, kOpenEv, "Base name of the opened file.", x_fd_filename},
      {"fd.type", T::kString, A::kNone, false, "open, openat, openat2, creat, connect, sendto, sendmsg, payload, dup, accept, listen, bind", "file (a regular file or a device), directory, pipe, ipv4, ipv6 or unix.", x_fd_type},
      {"fd.typechar", T::kString, A::kNone, false, "open, openat, openat2, creat, connect, sendto, sendmsg, payload, dup, accept, listen, bind", "f (a regular file or a device), d (directory), p (pipe), 4, 6 or u.", x_fd_typechar},
      {"fd.l4proto", T::kString, A::kNone, false, kNetEv, "tcp or udp.", x_fd_l4proto},
      {"fd.sockfamily", T::kString, A::kNone, false, "connect, sendto, sendmsg, payload, dup, accept, listen, bind, socket", "Socket family: ip (IPv4 or IPv6) or unix.", x_fd_sockfamily},
      {"fd.num", T::kInt, A::kNone, false, "open, openat, openat2, creat, ioctl, dup, socket, accept, listen, bind", "File descriptor number (-1 for a failed open; dup: the old fd; socket, accept: the new one).", x_fd_num},
      {"fd.sip", T::kIp, A::kNone, false, kNetEv, "Server (destination) IP address.", x_fd_sip},
      {"fd.rip", T::kIp, A::kNone, false, kNetEv, "Remote IP address (the server of an outbound connection, the client of an accepted one).", x_fd_rip},
      {"fd.cip", T::kIp, A::kNone, false, kNetEv, "Client (source) IP address.", x_fd_cip},
      {"fd.lip", T::kIp, A::kNone, false, kNetEv, "Local IP address (the client of an outbound connection, the server of an accepted one).", x_fd_lip},
      {"fd.ip", T::kIp, A::kNone, true, kNetEv, "Either IP address of the connection.", x_fd_ip},
      {"fd.net", T::kIp, A::kNone, true, kNetEv, "Either IP address, compared with networks (CIDR).", x_fd_ip},
      {"fd.snet", T::kIp, A::kNone, false, kNetEv, "Server IP address, compared with networks (CIDR).", x_fd_sip},
      {"fd.rnet", T::kIp, A::kNone, false, kNetEv, "Remote IP address, compared with networks (CIDR).", x_fd_rip},
      {"fd.cnet", T::kIp, A::kNone, false, kNetEv, "Client IP address, compared with networks (CIDR).", x_fd_cip},
      {"fd.lnet", T::kIp, A::kNone, false, kNetEv, "Local IP address, compared with networks (CIDR).", x_fd_lip},
      {"fd.sport", T::kInt, A::kNone, false, kNetEv, "Server (destination) port.", x_fd_sport},
      {"fd.rport", T::kInt, A::kNone, false, kNetEv, "Remote port (the server's for an outbound connection, the client's for an accepted one).", x_fd_rport},
      {"fd.cport", T::kInt, A::kNone, false, kNetEv, "Client (source) port.", x_fd_cport},
      {"fd.lport", T::kInt, A::kNone, false, kNetEv, "Local port (the client's for an outbound connection, the server's for an accepted or listening one).", x_fd_lport},
      {"fd.port", T::kInt, A::kNone, true, kNetEv, "Either port of the connection.", x_fd_port},
      {"fd.connected", T::kBool, A::kNone, false, kNetEv, "The socket is connected (TCP connects; unknown for UDP).", x_fd_connected},
      {"fd.name_changed", T::kBool, A::kNone, false, kNetEv, "The event gave the socket its address tuple (every connect event).", x_fd_name_changed},
      {"fd.sip.name", T::kString, A::kNone, false, kNetEv, "The DNS name this pod resolved to the server IP, where seen.", x_fd_sip_name},
      {"fd.rip.name", T::kString, A::kNone, false, kNetEv, "The DNS name this pod resolved to the remote IP, where seen.", x_fd_sip_name},
      {"fd.cip.name", T::kString, A::kNone, false, kNetEv, "The DNS name this pod resolved to the client IP, where seen.", x_fd_cip_name},
      {"fd.lip.name", T::kString, A::kNone, false, kNetEv, "The DNS name this pod resolved to the local IP, where seen.", x_fd_cip_name},
      {"container.id", T::kString, A::kNone, false, "*", "Container id, 12 characters; 'host' for host processes.", x_container_id},
      {"container.full_id", T::kString, A::kNone, false, "*", "Full container id; 'host' for host processes.", x_container_full_id},
      {"container.name", T::kString, A::kNone, false, "*", "Container name ('host' for host processes).", x_container_name},
      {"container.image", T::kString, A::kNone, false, "*", "Container image (registry/repository:tag).", x_image},
      {"container.image.repository", T::kString, A::kNone, false, "*", "Image repository without the tag.", x_image_repo},
      {"container.image.tag", T::kString, A::kNone, false, "*", "Image tag.", x_image_tag},
      {"container.type", T::kString, A::kNone, false, "*", "Container runtime (containerd, cri-o, docker, podman).", x_container_type},
      {"container.start_ts", T::kInt, A::kNone, false, "*", "When the container started, ns since the epoch: its pod's status.containerStatuses[].state.running.startedAt (whole seconds, as the API gives it). No value for host processes and containers of pods the API has not reported (vigil reads no container runtime metadata).", x_container_start_ts},
      {"container.privileged", T::kBool, A::kNone, false, "*", "The container runs privileged.", x_privileged},
      {"k8s.ns.name", T::kString, A::kNone, false, "*", "Kubernetes namespace of the pod.", x_ns},
      {"k8s.pod.name", T::kString, A::kNone, false, "*", "Kubernetes pod name.", x_pod_name},
      {"k8s.pod.uid", T::kString, A::kNone, false, "*", "Kubernetes pod uid.", x_pod_uid},
      {"k8s.pod.id", T::kString, A::kNone, false, "*", "Kubernetes pod uid (Falco's older name).", x_pod_uid},
      {"k8s.pod.label", T::kString, A::kRequiredKey, false, "*", "A pod label: k8s.pod.label[app] or k8s.pod.label.app.", x_pod_label},
      {"k8s.pod.labels", T::kList, A::kNone, false, "*", "All pod labels as key:value.", x_pod_labels},
      {"gpu.device", T::kString, A::kNone, false, kGpuEv, "NVIDIA device path: opened, or from the ioctl's device numbers.", x_gpu_device},
      {"gpu.major", T::kInt, A::kNone, false, kGpuEv, "Device major number.", x_gpu_major},
      {"gpu.minor", T::kInt, A::kNone, false, kGpuEv, "Device minor number.", x_gpu_minor},
      {"gpu.index", T::kInt, A::kNone, false, kGpuEv, "GPU index N of /dev/nvidiaN.", x_gpu_index},
      {"gpu.ioctl", T::kString, A::kNone, false, "ioctl", "Ioctl name: NV_ESC_* escape, or the UVM ioctl on nvidia-uvm.", x_gpu_ioctl},
      {"gpu.ioctl.nr", T::kInt, A::kNone, false, "ioctl", "Ioctl escape number.", x_gpu_ioctl_nr},
      {"gpu.uvm", T::kBool, A::kNone, false, "ioctl", "The ioctl was on nvidia-uvm.", x_gpu_uvm},
      {"gpu.class", T::kInt, A::kNone, false, "ioctl", "RM class allocated (NV_ESC_RM_ALLOC).", x_gpu_class},
      {"gpu.class.name", T::kString, A::kNone, false, "ioctl", "RM class name (AMPERE_COMPUTE_A...).", x_gpu_class_name},
      {"gpu.class.kind", T::kString, A::kNone, false, "ioctl", "What the class is: compute, channel, memory, mig, debugger, profiler, ...", x_gpu_class_kind},
      {"gpu.control", T::kInt, A::kNone, false, "ioctl", "RM control command (NV_ESC_RM_CONTROL).", x_gpu_control},
      {"gpu.control.name", T::kString, A::kNone, false, "ioctl", "RM control command name.", x_gpu_control_name},
      {"gpu.control.kind", T::kString, A::kNone, false, "ioctl", "What the control changes: clock, power, ecc, reset, mig, other.", x_gpu_control_kind},
      {"gpu.usage.count", T::kInt, A::kNone, false, "gpu_usage", "Total NVIDIA ioctls in a usage report.", x_gpu_usage_count},
      {"gpu.xid", T::kInt, A::kNone, false, "xid", "Xid error code.", x_xid},
      {"gpu.xid.text", T::kString, A::kNone, false, "xid", "Xid message text.", x_xid_text},
      {"gpu.pci", T::kString, A::kNone, false, "xid", "PCI address of the GPU (0000:3b:00.0).", x_gpu_pci},
      {"gpu.xid.source", T::kString, A::kNone, false, "xid", "kmsg or tracepoint.", x_xid_source},
      {"gpu.xid.facility", T::kInt, A::kNone, false, "xid", "Syslog facility of the kmsg line (0 = kernel).", x_xid_facility},
      {"gpu.xid.pid", T::kInt, A::kNone, false, "xid", "Pid named by the Xid line.", x_xid_pid},
      {"gpu.xid.comm", T::kString, A::kNone, false, "xid", "Process name named by the Xid line.", x_xid_comm},
      {"gpu.limit", T::kInt, A::kNone, false, "*", "The container's nvidia.com/gpu limit.", x_gpu_limit},
      {"gpu.visible_devices", T::kString, A::kNone, false, "*", "The container's NVIDIA_VISIBLE_DEVICES.", x_visible},
      {"gpu.allocated", T::kList, A::kNone, false, "*", "GPU indexes/UUIDs given to the container.", x_allocated},
      {"gpu.allowed", T::kBool, A::kNone, false, kGpuEv, "The device used is one the container was given (control nodes: any GPU given; 'all': every device).", x_allowed},
      {"dns.name", T::kString, A::kNone, false, "dns", "Question name, lower case, no trailing dot.", x_dns_name},
      {"dns.type", T::kString, A::kNone, false, "dns", "Question type (A, AAAA, TXT, ...).", x_dns_type},
      {"dns.rcode", T::kInt, A::kNone, false, "dns", "Response code (responses only).", x_dns_rcode},
      {"dns.answers", T::kList, A::kNone, false, "dns", "Addresses in the answer.", x_dns_answers},
      {"dns.is_response", T::kBool, A::kNone, false, "dns", "The packet is a response.", x_dns_response},
      {"dns.server", T::kIp, A::kNone, false, "dns", "The DNS server address.", x_dns_server},
      {"conn.payload", T::kString, A::kNone, false, "payload", "First bytes sent on a new outbound TCP connection.", x_payload},
      {"conn.protocol", T::kString, A::kNone, false, "payload", "Protocol guessed from the first bytes: stratum, http, tls, ssh, unknown.", x_protocol},
      {"vigil.file", T::kBool, A::kNone, false, "open, openat, openat2, creat, symlink, link, unlink, rename, mkdir, rmdir, chmod", "The path (an open's fd.name or the path as given; either path of a rename, link or symlink, as given) is one of vigil's own files or inside one of its directories: its configuration file, rule files and directories, state directory (output spools), flight recorder directory and capture file. Relative paths and paths seen from another mount namespace do not match.", x_vigil_file},
      {"vigil.targeted", T::kBool, A::kNone, false, "vigil_signal, ptrace", "The call aims at vigil's own process: every vigil_signal event (a signal another process sent to vigil), a ptrace whose tracee is vigil (after a successful attach, whichever thread was named; otherwise the pid given, for callers in the host's pid namespace).", x_vigil_targeted},
  };
  append_baseline_fields(fields_);
}

const FieldCatalog& FieldCatalog::builtin() {
  static const FieldCatalog kCatalog;
  return kCatalog;
}

Result<std::unique_ptr<FieldCatalog>> FieldCatalog::extend(const FieldCatalog& base,
                                                          std::vector<FieldDef> extra) {
  std::unique_ptr<FieldCatalog> c(new FieldCatalog(base));
  c->fields_.reserve(base.fields_.size() + extra.size());
  for (FieldDef& f : extra) {
    if (c->find(f.name)) {
      return Error::bad_input("field '" + std::string(f.name) + "' is already defined");
    }
    c->fields_.push_back(f);
  }
  return c;
}

const FieldDef* FieldCatalog::find(std::string_view name) const {
  for (const auto& f : fields_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool FieldCatalog::resolve(std::string_view name, bool has_arg, std::string_view arg,
                           FieldInst& out, std::string& error, bool& unknown) const {
  unknown = false;
  const FieldDef* def = find(name);
  if (!def && !has_arg) {
    // Dotted key form: k8s.pod.label.app
    for (std::string_view prefix : {std::string_view("k8s.pod.label."), std::string_view("evt.arg.")}) {
      if (name.rfind(prefix, 0) == 0 && name.size() > prefix.size()) {
        def = find(prefix.substr(0, prefix.size() - 1));
        arg = name.substr(prefix.size());
        has_arg = true;
        break;
      }
    }
  }
  if (!def) {
    unknown = true;
    error = "unknown field '" + std::string(name) + "'";
    return false;
  }
  out = FieldInst{};
  out.def = def;
  switch (def->arg) {
    case ArgMode::kNone:
      if (has_arg) {
        error = "field '" + std::string(def->name) + "' takes no argument";
        return false;
      }
      break;
    case ArgMode::kOptionalKey:
      if (has_arg) {
        out.arg = std::string(arg);
        out.has_arg = true;
      }
      break;
    case ArgMode::kRequiredKey:
      if (!has_arg || arg.empty()) {
        error = "field '" + std::string(def->name) + "' needs an argument, e.g. " +
                std::string(def->name) + "[key]";
        return false;
      }
      out.arg = std::string(arg);
      out.has_arg = true;
      break;
    case ArgMode::kOptionalIndex:
    case ArgMode::kRequiredIndex: {
      if (!has_arg) {
        if (def->arg == ArgMode::kRequiredIndex) {
          error = "field '" + std::string(def->name) + "' needs an index argument";
          return false;
        }
        break;
      }
      std::int64_t idx = -1;
      auto r = std::from_chars(arg.data(), arg.data() + arg.size(), idx);
      if (r.ec != std::errc() || r.ptr != arg.data() + arg.size() || idx < 0 || idx > 32) {
        error = "field '" + std::string(def->name) + "' needs a numeric index 0..32, got '" +
                std::string(arg) + "'";
        return false;
      }
      out.arg = std::string(arg);
      out.has_arg = true;
      out.index = idx;
      break;
    }
  }
  return true;
}

std::string_view render_value(FieldType t, const Extracted& e, Arena& a) noexcept {
  if (e.n == 0) return "<NA>";
  a.begin();
  for (std::size_t i = 0; i < e.n; ++i) {
    if (i) a.append(',');
    const Val& v = e.v[i];
    switch (t) {
      case FieldType::kString:
      case FieldType::kList: a.append(v.s); break;
      case FieldType::kInt:
      case FieldType::kUint: a.append_int(v.i); break;
      case FieldType::kBool: a.append(v.b ? "true" : "false"); break;
      case FieldType::kIp: append_ip(a, *v.ip); break;
    }
  }
  return a.finish();
}

}  // namespace vigil::rules
