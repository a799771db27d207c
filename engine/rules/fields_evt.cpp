// evt.*: the event itself: its type, time, result, the open flags it was
// made with, and (through fields_evt_arg.cpp) the call's arguments.
#include <cerrno>
#include <charconv>
#include <ctime>
#include <string_view>
#include <vector>

#include "engine/rules/field_extractors.h"

namespace vigil::rules {

using namespace fx;

namespace {

// The calls whose result vigil records (evt.res, evt.rawres, evt.failed).
constexpr std::string_view kResultEv =
    "execve, open, openat, connect, ioctl, bpf, symlink, link, unlink, rename, mkdir, rmdir, chmod, "
    "ptrace, socket, dup, init_module, setuid, setgid, setns, unshare, accept, listen, bind, userfaultfd, "
    "memfd_create, prctl, io_uring_setup, delete_module, capset, mknodat";

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
  if (auto* p = ev(x).as<event::PluginData>()) {
    str(o, p->source);
    return;
  }
  str(o, "syscall");
}
void x_evt_rawtime(const X& x, const F&, E& o) noexcept { num(o, static_cast<std::int64_t>(ev(x).hdr.ts_ns)); }
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
// HH:MM:SS.nnnnnnnnn, the clock part of evt.time and evt.time.iso8601.
void append_clock(Arena& a, const std::tm& tm, std::uint64_t ns) noexcept {
  pad(a, static_cast<std::uint64_t>(tm.tm_hour), 2);
  a.append(':');
  pad(a, static_cast<std::uint64_t>(tm.tm_min), 2);
  a.append(':');
  pad(a, static_cast<std::uint64_t>(tm.tm_sec), 2);
  a.append('.');
  pad(a, ns % 1000000000ull, 9);
}
void x_evt_time(const X& x, const F&, E& o) noexcept {
  std::uint64_t ns = ev(x).hdr.ts_ns;
  std::tm tm{};
  time_parts(ns, tm);
  Arena& a = *x.arena;
  a.begin();
  append_clock(a, tm, ns);
  str(o, a.finish());
}
void x_evt_iso(const X& x, const F&, E& o) noexcept {
  std::uint64_t ns = ev(x).hdr.ts_ns;
  std::tm tm{};
  time_parts(ns, tm);
  Arena& a = *x.arena;
  a.begin();
  pad(a, static_cast<std::uint64_t>(tm.tm_year + 1900), 4);
  a.append('-');
  pad(a, static_cast<std::uint64_t>(tm.tm_mon + 1), 2);
  a.append('-');
  pad(a, static_cast<std::uint64_t>(tm.tm_mday), 2);
  a.append('T');
  append_clock(a, tm, ns);
  a.append('Z');
  str(o, a.finish());
}

}  // namespace

bool fx::result_of(const event::Event& e, std::int64_t& r) noexcept {
  if (auto* p = e.as<event::OpenData>()) {
    r = p->result;
    return true;
  }
  if (auto* p = e.as<event::ConnectData>()) {
    if (p->result == event::ConnectData::kResultUnknown) return false;
    r = p->result;
    return true;
  }
  if (auto* p = e.as<event::IoctlData>()) {
    r = p->result;
    return true;
  }
  if (auto* p = e.as<event::BpfData>()) {
    r = p->result;
    return true;
  }
  if (e.as<event::ExecData>()) {
    r = 0;
    return true;
  }
  if (auto* p = e.as<event::FileOpData>()) {
    r = p->result;
    return true;
  }
  if (auto* p = e.as<event::PtraceData>()) {
    r = p->result;
    return true;
  }
  if (auto* p = e.as<event::SocketData>()) {
    r = p->result;
    return true;
  }
  if (auto* p = e.as<event::DupData>()) {
    r = p->result;
    return true;
  }
  if (auto* p = e.as<event::ModuleData>()) {
    r = p->result;
    return true;
  }
  if (auto* p = e.as<event::CredData>()) {
    r = p->result;
    return true;
  }
  if (auto* p = e.as<event::NsData>()) {
    r = p->result;
    return true;
  }
  if (auto* p = e.as<event::InboundData>()) {
    r = p->result;
    return true;
  }
  if (auto* p = e.as<event::SysCallData>()) {
    r = p->result;
    return true;
  }
  if (auto* p = e.as<event::CapsData>()) {
    r = p->result;
    return true;
  }
  return false;
}

namespace {

std::string_view errno_name(std::int64_t e) noexcept {
  switch (e) {
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ESRCH: return "ESRCH";
    case EINTR: return "EINTR";
    case EIO: return "EIO";
    case ENXIO: return "ENXIO";
    case E2BIG: return "E2BIG";
    case ENOEXEC: return "ENOEXEC";
    case EBADF: return "EBADF";
    case ECHILD: return "ECHILD";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES";
    case EFAULT: return "EFAULT";
    case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST";
    case EXDEV: return "EXDEV";
    case ENODEV: return "ENODEV";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case ENFILE: return "ENFILE";
    case EMFILE: return "EMFILE";
    case ENOTTY: return "ENOTTY";
    case ETXTBSY: return "ETXTBSY";
    case EFBIG: return "EFBIG";
    case ENOSPC: return "ENOSPC";
    case EROFS: return "EROFS";
    case EPIPE: return "EPIPE";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOSYS: return "ENOSYS";
    case ELOOP: return "ELOOP";
    case ENOTSOCK: return "ENOTSOCK";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EADDRINUSE: return "EADDRINUSE";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case ENETUNREACH: return "ENETUNREACH";
    case ECONNREFUSED: return "ECONNREFUSED";
    case ECONNRESET: return "ECONNRESET";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case EALREADY: return "EALREADY";
    case EINPROGRESS: return "EINPROGRESS";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    default: return {};
  }
}

void x_evt_res(const X& x, const F&, E& o) noexcept {
  std::int64_t r;
  if (!result_of(ev(x), r)) return;
  if (r >= 0) {
    str(o, "SUCCESS");
    return;
  }
  auto n = errno_name(-r);
  if (!n.empty()) {
    str(o, n);
    return;
  }
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

// vigil does not number events: evt.num has no value, so Falco's never_true
// idiom (evt.num=0) stays false.
void x_evt_num(const X&, const F&, E&) noexcept {}

}  // namespace

void append_evt_fields(std::vector<FieldDef>& fields) {
  using T = FieldType;
  using A = ArgMode;
  fields.insert(
      fields.end(),
      {
          {"evt.type", T::kString, A::kNone, false, "*",
           "Event type: Falco's syscall name (execve, openat, connect, clone, procexit, ioctl, bpf, "
           "symlinkat, linkat, unlinkat, renameat2, mkdirat, rmdir, fchmodat, ptrace, socket, dup, "
           "init_module) or vigil's own (gpu_usage, xid, dns, payload). A type stands for its family in "
           "conditions (evt.type = symlink matches symlink and symlinkat); the value shown is the call "
           "that was made where the event records it (symlink, dup2, finit_module...).",
           x_evt_type},
          {"evt.dir", T::kString, A::kNone, false, "*",
           "Event direction; always '<' (exit events only, as Falco since 0.42).", x_evt_dir},
          {"evt.source", T::kString, A::kNone, false, "*",
           "Event source: 'syscall' for the kernel's events, the plugin's source name for a plugin's.", x_evt_source},
          {"evt.time", T::kString, A::kNone, false, "*", "Event time of day, UTC, HH:MM:SS.nnnnnnnnn.", x_evt_time},
          {"evt.time.iso8601", T::kString, A::kNone, false, "*", "Event time, RFC 3339 UTC with nanoseconds.",
           x_evt_iso},
          {"evt.rawtime", T::kUint, A::kNone, false, "*", "Event time in ns since the Unix epoch.", x_evt_rawtime},
          {"evt.res", T::kString, A::kNone, false, kResultEv, "Result: SUCCESS or the errno name (ENOENT...).",
           x_evt_res},
          {"evt.rawres", T::kInt, A::kNone, false, kResultEv, "Result as a number (fd, 0, or a negative errno).",
           x_evt_rawres},
          {"evt.failed", T::kBool, A::kNone, false, kResultEv, "True when the call failed.", x_evt_failed},
          {"evt.is_open_read", T::kBool, A::kNone, false, kOpenEv, "The open was for reading (O_RDONLY or O_RDWR).",
           x_open_read},
          {"evt.is_open_write", T::kBool, A::kNone, false, kOpenEv, "The open was for writing (O_WRONLY or O_RDWR).",
           x_open_write},
          {"evt.is_open_exec", T::kBool, A::kNone, false, kOpenEv, "The open created a file with an execute bit.",
           x_open_exec},
          {"evt.arg.flags", T::kString, A::kNone, false, "open, openat, openat2, creat, execve",
           "Open flags as names (O_RDWR|O_CREAT); execve: what the program file is (EXE_WRITABLE, "
           "EXE_UPPER_LAYER, EXE_FROM_MEMFD).",
           x_arg_flags},
          {"evt.arg.name", T::kString, A::kNone, false,
           "open, openat, openat2, creat, execve, symlink, "
           "link, unlink, rename, mkdir, rmdir, chmod",
           "Path argument of the call, as given (relative paths stay relative; fd.name is an open's "
           "resolved path).",
           x_arg_path},
          {"evt.arg.path", T::kString, A::kNone, false,
           "open, openat, openat2, creat, execve, symlink, "
           "link, unlink, rename, mkdir, rmdir, chmod",
           "Path argument of the call, as given (relative paths stay relative; fd.name is an open's "
           "resolved path).",
           x_arg_path},
          {"evt.arg.pathname", T::kString, A::kNone, false,
           "open, openat, openat2, creat, execve, "
           "symlink, link, unlink, rename, mkdir, rmdir, chmod",
           "Path argument of the call, as given (relative paths stay relative; fd.name is an open's "
           "resolved path).",
           x_arg_path},
          {"evt.arg.filename", T::kString, A::kNone, false, "execve, chmod", "Path given to execve (or opened).",
           x_arg_path},
          {"evt.arg", T::kString, A::kRequiredKey, false,
           "open, openat, openat2, creat, execve, ioctl, "
           "bpf, symlink, link, unlink, rename, mkdir, rmdir, chmod, ptrace, socket, dup, init_module, "
           "setuid, setgid, setns, unshare, accept, listen, bind, userfaultfd, memfd_create, prctl, "
           "io_uring_setup, delete_module, capset, kill",
           "A named argument of the call, by Falco's argument names: evt.arg.NAME or evt.arg[NAME] (open: "
           "name, path, flags, mode, fd; execve: filename, exe, cwd; ioctl: request, fd; bpf: cmd; "
           "symlink(at): target, linkpath, linkdirfd; link(at), rename(at)(2): oldpath, newpath, olddirfd, "
           "newdirfd, flags; unlink(at), mkdir(at), rmdir: path/name, dirfd, flags, mode; chmod, fchmodat: "
           "filename, mode, dirfd; fchmod: fd, mode; ptrace: request (PTRACE_ATTACH...), pid, addr; "
           "socket: domain (AF_PACKET...), type, proto, fd; dup: fd, newfd, flags; init_module, "
           "finit_module: fd, uargs, flags; delete_module: name, flags; capset: cap_effective, "
           "cap_permitted, cap_inheritable (after the call); setuid/setgid: uid/gid, and ruid, euid, suid "
           "(rgid...) for the re/res forms; setns: fd, nstype; unshare: flags (CLONE_NEW* names); accept, "
           "listen, bind: fd, flags/backlog; memfd_create: name, flags; userfaultfd: flags; prctl: option, "
           "arg2_int; io_uring_setup: entries; kill: pid, tid (the target, host numbering), sig (SIGKILL...), "
           "code (si_code: 0 kill, -1 sigqueue, -6 tkill/tgkill); each call: res). Arguments of syscalls vigil does not "
           "collect have no value.",
           x_arg_generic},
          {"evt.args", T::kString, A::kNone, false, "*",
           "The call's arguments as one string, Falco's names: res=RESULT name=value ... (for the calls "
           "vigil collects).",
           x_evt_args},
          {"evt.num", T::kInt, A::kNone, false, "*",
           "Event number. vigil does not number events: no value (so Falco's never_true idiom, evt.num=0, "
           "stays false).",
           x_evt_num},
      });
}

}  // namespace vigil::rules
