// proc.* and thread.*: the process the event comes from, its ancestors, its
// program file and its credentials, from the event and the process table.
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/rules/field_extractors.h"

namespace vigil::rules {

using namespace fx;

void fx::x_loginuid(const X& x, const F&, E& o) noexcept {
  if (auto* p = proc_of(x)) num(o, p->loginuid == 0xffffffffu ? -1 : static_cast<std::int64_t>(p->loginuid));
}

void fx::caps_string(const X& x, std::uint64_t caps, E& o) noexcept {
  static constexpr std::string_view kCaps[] = {"CAP_CHOWN",
                                               "CAP_DAC_OVERRIDE",
                                               "CAP_DAC_READ_SEARCH",
                                               "CAP_FOWNER",
                                               "CAP_FSETID",
                                               "CAP_KILL",
                                               "CAP_SETGID",
                                               "CAP_SETUID",
                                               "CAP_SETPCAP",
                                               "CAP_LINUX_IMMUTABLE",
                                               "CAP_NET_BIND_SERVICE",
                                               "CAP_NET_BROADCAST",
                                               "CAP_NET_ADMIN",
                                               "CAP_NET_RAW",
                                               "CAP_IPC_LOCK",
                                               "CAP_IPC_OWNER",
                                               "CAP_SYS_MODULE",
                                               "CAP_SYS_RAWIO",
                                               "CAP_SYS_CHROOT",
                                               "CAP_SYS_PTRACE",
                                               "CAP_SYS_PACCT",
                                               "CAP_SYS_ADMIN",
                                               "CAP_SYS_BOOT",
                                               "CAP_SYS_NICE",
                                               "CAP_SYS_RESOURCE",
                                               "CAP_SYS_TIME",
                                               "CAP_SYS_TTY_CONFIG",
                                               "CAP_MKNOD",
                                               "CAP_LEASE",
                                               "CAP_AUDIT_WRITE",
                                               "CAP_AUDIT_CONTROL",
                                               "CAP_SETFCAP",
                                               "CAP_MAC_OVERRIDE",
                                               "CAP_MAC_ADMIN",
                                               "CAP_SYSLOG",
                                               "CAP_WAKE_ALARM",
                                               "CAP_BLOCK_SUSPEND",
                                               "CAP_AUDIT_READ",
                                               "CAP_PERFMON",
                                               "CAP_BPF",
                                               "CAP_CHECKPOINT_RESTORE"};
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

namespace {

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
  if (auto* p = proc_of(x); p && !p->exepath.empty()) {
    str(o, p->exepath);
    return;
  }
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
// The environment the program started with, from its exec (the process
// table does not keep it: see process_facts.h).
void x_env(const X& x, const F& f, E& o) noexcept {
  const auto* e = ev(x).as<event::ExecData>();
  if (!e) return;
  const auto* env = &e->env;
  if (f.has_arg) {
    // proc.env[NAME]: the value of the first NAME=, as getenv(3) reads it.
    for (const auto& v : *env) {
      if (v.size() > f.arg.size() && v[f.arg.size()] == '=' && std::string_view(v).starts_with(f.arg)) {
        str(o, std::string_view(v).substr(f.arg.size() + 1));
        return;
      }
    }
    return;
  }
  if (env->empty()) return;
  Arena& a = *x.arena;
  a.begin();
  bool first = true;
  for (const auto& v : *env) {
    if (!first) a.append(' ');
    a.append(v);
    first = false;
  }
  str(o, a.finish());
}
void x_tty(const X& x, const F&, E& o) noexcept {
  if (auto* p = proc_of(x)) num(o, p->tty);
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
  if (auto* e = ev(x).as<event::ExecData>()) {
    fn(*e, o);
    return;
  }
  if (auto* p = proc_of(x)) fn(*p, o);
}
void x_exe_sha256(const X& x, const F&, E& o) noexcept {
  exe_fact(x, o, [](const auto& s, E& out) {
    if (!s.exe_sha256.empty()) str(out, s.exe_sha256);
  });
}
void x_exe_build_id(const X& x, const F&, E& o) noexcept {
  exe_fact(x, o, [](const auto& s, E& out) {
    if (!s.exe_build_id.empty()) str(out, s.exe_build_id);
  });
}
void x_exe_known_as(const X& x, const F&, E& o) noexcept {
  exe_fact(x, o, [](const auto& s, E& out) {
    if (!s.exe_known_as.empty()) str(out, s.exe_known_as);
  });
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
  exe_fact(x, o, [](const auto& s, E& out) {
    if (s.exe_ino) num(out, static_cast<std::int64_t>(s.exe_ino));
  });
}
void x_exe_ino_ctime(const X& x, const F&, E& o) noexcept {
  exe_fact(x, o, [](const auto& s, E& out) {
    if (s.exe_ino) num(out, s.exe_ctime_ns);
  });
}
void x_exe_ino_mtime(const X& x, const F&, E& o) noexcept {
  // 0: not recorded (a capture written before vigil kept it).
  exe_fact(x, o, [](const auto& s, E& out) {
    if (s.exe_ino && s.exe_mtime_ns) num(out, s.exe_mtime_ns);
  });
}
// Falco's proc.exe_ino.ctime_duration_proc_start: the process's start (its
// fork, or when vigil first saw it) less its program file's ctime; negative
// when the file changed after the fork (Falco prints that wrapped unsigned).
void x_exe_ino_ctime_to_start(const X& x, const F&, E& o) noexcept {
  auto* p = proc_of(x);
  if (!p || p->start_ts_ns == 0) return;
  exe_fact(x, o, [p](const auto& s, E& out) {
    if (s.exe_ino && s.exe_ctime_ns) num(out, static_cast<std::int64_t>(p->start_ts_ns) - s.exe_ctime_ns);
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
  if (auto* e = ev(x).as<event::ExecData>()) {
    boolean(o, e->stdin_is_socket);
    return;
  }
  if (auto* p = proc_of(x)) boolean(o, p->stdin_is_socket);
}
void x_stdout_socket(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) {
    boolean(o, e->stdout_is_socket);
    return;
  }
  if (auto* p = proc_of(x)) boolean(o, p->stdout_is_socket);
}
void x_is_32bit(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) {
    boolean(o, e->elf32);
    return;
  }
  if (auto* p = proc_of(x)) boolean(o, p->elf32);
}
void x_exe_memfd(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) {
    boolean(o, e->exe_from_memfd);
    return;
  }
  if (auto* p = proc_of(x)) boolean(o, p->exe_from_memfd);
}
void x_exe_upper(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) {
    boolean(o, e->exe_upper_layer);
    return;
  }
  if (auto* p = proc_of(x)) boolean(o, p->exe_upper_layer);
}
void x_exe_writable(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) {
    boolean(o, e->exe_writable);
    return;
  }
  if (auto* p = proc_of(x)) boolean(o, p->exe_writable);
}
template <std::uint64_t event::ExecData::*E_, std::uint64_t event::CapsData::*C_, std::uint64_t state::Process::*P_>
void x_caps(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>()) {
    caps_string(x, e->*E_, o);
    return;
  }
  if (auto* c = ev(x).as<event::CapsData>()) {
    caps_string(x, c->*C_, o);
    return;
  }
  if (auto* p = proc_of(x)) caps_string(x, p->*P_, o);
}
void x_sid(const X& x, const F&, E& o) noexcept {
  if (auto* e = ev(x).as<event::ExecData>(); e && e->sid) {
    num(o, e->sid);
    return;
  }
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
  if (auto* e = ev(x).as<event::ExecData>(); e && e->vpgid) {
    num(o, e->vpgid);
    return;
  }
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

}  // namespace

namespace {

// The process and its ancestors.
void append_process_rows(std::vector<FieldDef>& fields) {
  using T = FieldType;
  using A = ArgMode;
  fields.insert(
      fields.end(),
      {
          {"proc.pid", T::kInt, A::kNone, false, "*", "Process id (thread group id).", x_pid},
          {"thread.tid", T::kInt, A::kNone, false, "*", "Thread id.", x_tid},
          {"proc.ppid", T::kInt, A::kNone, false, "*", "Parent process id.", x_ppid},
          {"proc.vpid", T::kInt, A::kNone, false, "*", "Process id inside its pid namespace.", x_vpid},
          {"proc.name", T::kString, A::kNone, false, "*", "Process name (the kernel's comm, 15 bytes).", x_name},
          {"proc.exe", T::kString, A::kNone, false, "*", "First command-line argument (argv[0]).", x_exe},
          {"proc.exepath", T::kString, A::kNone, false, "*", "Full path of the executable.", x_exepath},
          {"proc.args", T::kString, A::kNone, false, "*", "Command-line arguments after argv[0], joined by spaces.",
           x_args},
          {"proc.cmdline", T::kString, A::kNone, false, "*", "proc.name followed by the arguments.", x_cmdline},
          {"proc.cwd", T::kString, A::kNone, false, "*", "Working directory at exec.", x_cwd},
          {"proc.env", T::kString, A::kOptionalKey, false, "execve",
           "The environment the program started with, NAME=value joined by spaces (its first 4096 bytes), on "
           "its exec; proc.env[NAME]: the value of NAME.",
           x_env},
          {"proc.tty", T::kInt, A::kNone, false, "*", "Controlling terminal device number (0 = none).", x_tty},
          {"proc.loginuid", T::kInt, A::kNone, false, "*", "Audit login uid (-1 = unset).", x_loginuid},
          {"proc.duration", T::kInt, A::kNone, false, "*", "Nanoseconds since the process started.", x_duration},
          {"proc.pname", T::kString, A::kNone, false, "*", "Parent process name.", x_pname},
          {"proc.pexe", T::kString, A::kNone, false, "*", "Parent's argv[0].", x_pexe},
          {"proc.pexepath", T::kString, A::kNone, false, "*", "Parent's executable path.", x_pexepath},
          {"proc.pcmdline", T::kString, A::kNone, false, "*", "Parent's command line.", x_pcmdline},
          {"proc.aname", T::kString, A::kOptionalIndex, true, "*",
           "Ancestor name: proc.aname[N] is the Nth ancestor (1 = parent); without N, any ancestor.", x_aname},
          {"proc.apid", T::kInt, A::kOptionalIndex, true, "*", "Ancestor pid: proc.apid[N]; without N, any ancestor.",
           x_apid},
          {"proc.aexe", T::kString, A::kOptionalIndex, true, "*",
           "Ancestor argv[0]: proc.aexe[N]; without N, any ancestor.", x_aexe},
          {"proc.aexepath", T::kString, A::kOptionalIndex, true, "*",
           "Ancestor executable path: proc.aexepath[N]; without N, any ancestor.", x_aexepath},
      });
}

// The program the process runs: its file, its identity, what it ran before.
void append_program_rows(std::vector<FieldDef>& fields) {
  using T = FieldType;
  using A = ArgMode;
  fields.insert(fields.end(),
                {
                    {"proc.stdin.socket", T::kBool, A::kNone, false, "execve",
                     "fd 0 of the program was a socket at exec.", x_stdin_socket},
                    {"proc.stdout.socket", T::kBool, A::kNone, false, "execve",
                     "fd 1 of the program was a socket at exec.", x_stdout_socket},
                    {"proc.is_32bit", T::kBool, A::kNone, false, "*",
                     "The program is a 32-bit ELF (ia32/x32): the kernel's syscall tracepoints skip its compat "
                     "syscalls, so its opens, ioctls and bpf() calls are not seen (execs and connects are).",
                     x_is_32bit},
                    {"proc.is_exe_from_memfd", T::kBool, A::kNone, false, "*",
                     "The program runs from a memfd (memfd_create): fileless execution.", x_exe_memfd},
                    {"proc.is_exe_upper_layer", T::kBool, A::kNone, false, "*",
                     "The program file is in an overlay's upper (writable) layer: written in the container after it "
                     "started, not part of its image. Known from the exec on; false for processes found in /proc at "
                     "start.",
                     x_exe_upper},
                    {"proc.is_exe_writable", T::kBool, A::kNone, false, "*",
                     "The program file is writable by the user running it (owner, group or other write bit for its "
                     "fsuid/fsgid, or CAP_DAC_OVERRIDE).",
                     x_exe_writable},
                    {"proc.exe_sha256", T::kString, A::kNone, false, "*",
                     "SHA-256 (hex) of the program file, read through /proc/PID/exe when the exec is seen, once per "
                     "distinct file (cached by device, inode, size, mtime, ctime); of its first 64 MiB when larger. "
                     "No value when vigil could not read it in time (a process that exited at once) and for "
                     "processes found at start.",
                     x_exe_sha256},
                    {"proc.exe_build_id", T::kString, A::kNone, false, "*",
                     "ELF GNU build-id (hex) of the program file; no value when it has none or could not be read.",
                     x_exe_build_id},
                    {"proc.exe_known_as", T::kString, A::kNone, false, "*",
                     "The known shell or interpreter the program file is, whatever it is called: the canonical name "
                     "(dash, bash, busybox, python3, perl...) under which a file of the same identity (build-id, "
                     "else SHA-256) is installed on the node or in the process's container image. No value for other "
                     "programs.",
                     x_exe_known_as},
                    {"proc.is_exe_shell", T::kBool, A::kNone, false, "*",
                     "The program file is a known shell by identity (proc.exe_known_as is a shell): a renamed or "
                     "relocated copy of dash is a shell. busybox counts only when it runs its sh/ash/hush applet.",
                     x_exe_is_shell},
                    {"proc.is_exe_interpreter", T::kBool, A::kNone, false, "*",
                     "The program file is a known script interpreter by identity (python, perl, ruby, node, php, "
                     "lua, tclsh, Rscript).",
                     x_exe_is_interpreter},
                    {"proc.is_exe_deleted", T::kBool, A::kNone, false, "*",
                     "The program file had been deleted (unlinked) when vigil read it at exec; memfds are "
                     "proc.is_exe_from_memfd.",
                     x_exe_deleted},
                    {"proc.is_exe_name_mismatch", T::kBool, A::kNone, false, "*",
                     "A known shell or interpreter was started under a name (proc.name) it is not installed as: a "
                     "renamed copy, or a link of another name. #! scripts (named after the script) and busybox "
                     "applets are not counted.",
                     x_exe_name_mismatch},
                    {"proc.exe_ino", T::kInt, A::kNone, false, "*",
                     "Inode number of the program file, as the kernel saw it at exec (Falco's proc.exe_ino); no "
                     "value for processes found at start.",
                     x_exe_ino},
                    {"proc.exe_ino.ctime", T::kInt, A::kNone, false, "*",
                     "Change time of the program file's inode at exec, ns since the epoch (Falco's "
                     "proc.exe_ino.ctime): a file written just before it ran has a recent one.",
                     x_exe_ino_ctime},
                    {"proc.exe_ino.mtime", T::kInt, A::kNone, false, "*",
                     "Modification time of the program file's inode at exec (when its data was last written), ns "
                     "since the epoch (Falco's proc.exe_ino.mtime); no value for processes found at start and in "
                     "captures written before vigil recorded it. Unlike the ctime, touch -d can set it to any time.",
                     x_exe_ino_mtime},
                    {"proc.exe_ino.ctime_duration_proc_start", T::kInt, A::kNone, false, "*",
                     "ns from the program file's inode change (proc.exe_ino.ctime) to the process's start, its fork "
                     "or when vigil first saw it (as Falco's proc.exe_ino.ctime_duration_proc_start): small for a "
                     "binary written just before it ran. Negative when the file changed after the fork (Falco prints "
                     "that as a huge unsigned number). No value when either time is unknown.",
                     x_exe_ino_ctime_to_start},
                    {"proc.exe_kind", T::kString, A::kNone, false, "*",
                     "Where the program file lives: memfd, deleted, devshm (/dev/shm, /run/shm), upper_layer "
                     "(written in the container), tmp (/tmp, /var/tmp) or regular; the first that holds, in that "
                     "order.",
                     x_exe_kind},
                    {"proc.is_exe_fileless", T::kBool, A::kNone, false, "*",
                     "The program runs from no file on a disk: a memfd, a deleted file or a file in /dev/shm "
                     "(proc.exe_kind is memfd, deleted or devshm).",
                     x_exe_fileless},
                    {"proc.aexe_known_as", T::kString, A::kOptionalIndex, true, "*",
                     "Ancestor identity: proc.aexe_known_as[N] is proc.exe_known_as of the Nth ancestor; without N, "
                     "any ancestor (up to 32).",
                     x_aexe_known_as},
                    {"proc.acmdline", T::kString, A::kOptionalIndex, true, "*",
                     "Ancestor command lines: proc.acmdline[N] is the Nth ancestor's (1 = parent); without N, any "
                     "ancestor's (up to 32). Each ancestor also gives the command lines of the images it exec'd from "
                     "(proc.prior_cmdline), so a server that exec'd into something else is still seen. Each value is "
                     "cut to 256 bytes.",
                     x_acmdline},
                    {"proc.prior_cmdline", T::kString, A::kNone, true, "*",
                     "Command lines of the images this process ran before its current one (exec chains), most recent "
                     "first, at most 4, each cut to 512 bytes.",
                     x_prior_cmdline},
                });
}

// Names: the one the exec gave (proc.name), the one the thread carries now
// (thread.name), and whether they, or argv[0], name another program than the
// one running (proc.is_renamed).
constexpr std::size_t kCommMax = 15;  // the kernel's comm: TASK_COMM_LEN - 1 bytes
std::string_view comm_cut(std::string_view s) noexcept { return s.substr(0, kCommMax); }
// An event from outside the process (a plugin's sample of it, an Xid) is
// not a call of one of its threads: the main thread's name as its latest
// event gave it stands in (the exec's while it has not renamed itself).
std::string_view current_comm(const X& x, const state::Process* p, bool& main_thread) noexcept {
  const event::Header& h = ev(x).hdr;
  if (h.type == event::Type::kPlugin || h.type == event::Type::kXid) {
    main_thread = true;
    if (!p) return {};
    return !p->comm_now.empty() ? std::string_view(p->comm_now) : std::string_view(p->comm);
  }
  main_thread = h.tid == h.pid;
  return h.comm;
}
void x_thread_name(const X& x, const F&, E& o) noexcept {
  bool main_thread = false;
  std::string_view c = current_comm(x, proc_of(x), main_thread);
  if (!c.empty()) str(o, c);
}
// argv[0] names a program other than the one the kernel ran (`exec -a NAME`,
// execve with a chosen argv[0]): its file name, without a login shell's '-',
// is neither the comm the exec set nor the executable's file name. Not
// renamed: a #! script (the kernel's argv is the interpreter's, the comm the
// script's: argv[1] or argv[2] names it), busybox (its applets are argv[0]
// by design), an exec through /proc/self/exe or /dev/fd/N (the comm names
// that path), and a process read from /proc at start (its argv there may
// have been rewritten since, as setproctitle does).
bool argv0_renamed(const X& x, const state::Process& p) noexcept {
  if (p.image_unknown || p.from_proc || p.exe.empty() || p.comm.empty()) return false;
  std::string_view a0 = p.exe;
  if (a0.front() == '-') a0.remove_prefix(1);
  const std::string_view name = comm_cut(basename_of(a0));
  if (name.empty() || name == p.comm) return false;
  const std::string_view prog = basename_of(p.exepath);
  if (name == comm_cut(prog) || prog == "busybox") return false;
  for (std::size_t i = 0; i < 2 && i < p.args.size(); ++i)
    if (comm_cut(basename_of(p.args[i])) == p.comm) return false;
  if (const auto* e = ev(x).as<event::ExecData>()) {
    const std::string_view f = e->filename;
    if (f.starts_with("/proc/") || f.starts_with("/dev/fd/")) return false;
  }
  return true;
}
// The process renamed itself (prctl(PR_SET_NAME), a write to
// /proc/self/comm): the event's thread is the main thread and its comm now is
// not the one the exec set, nor argv[0]'s or the executable's file name.
// Other threads name themselves freely (worker pools) and are not judged.
bool comm_renamed(const X& x, const state::Process& p) noexcept {
  bool main_thread = false;
  const std::string_view now = current_comm(x, &p, main_thread);
  if (!main_thread || now.empty() || p.comm.empty() || now == p.comm) return false;
  std::string_view a0 = p.exe;
  if (!a0.empty() && a0.front() == '-') a0.remove_prefix(1);
  return now != comm_cut(basename_of(a0)) && now != comm_cut(basename_of(p.exepath));
}
void x_is_renamed(const X& x, const F&, E& o) noexcept {
  const state::Process* p = proc_of(x);
  if (!p) return;
  boolean(o, comm_renamed(x, *p) || argv0_renamed(x, *p));
}
void x_renamed_by(const X& x, const F&, E& o) noexcept {
  const state::Process* p = proc_of(x);
  if (!p) return;
  if (comm_renamed(x, *p)) str(o, "comm");
  else if (argv0_renamed(x, *p)) str(o, "argv0");
}

void append_name_rows(std::vector<FieldDef>& fields) {
  using T = FieldType;
  using A = ArgMode;
  fields.insert(
      fields.end(),
      {
          {"thread.name", T::kString, A::kNone, false, "*",
           "The comm of the thread that made the call, as the event carries it: after prctl(PR_SET_NAME) or a "
           "write to /proc/self/comm, the new name (proc.name stays the name the last exec gave). On an event "
           "from outside the process (a plugin's sample of it, an Xid), the name its main thread carries now: the "
           "one it last gave itself, else the exec's.",
           x_thread_name},
          {"proc.is_renamed", T::kBool, A::kNone, false, "*",
           "The process runs under a name that is not its program's: its main thread's comm is no longer the one "
           "its exec set (prctl(PR_SET_NAME), /proc/self/comm) and names neither argv[0] nor the executable; or "
           "argv[0] names another program than the one the kernel ran (exec -a, execve with a chosen argv[0]). "
           "Not renamed: other threads naming themselves, a login shell's '-', #! scripts, busybox applets, execs "
           "through /proc/self/exe or /dev/fd, processes read from /proc at start (for argv[0]).",
           x_is_renamed},
          {"proc.renamed_by", T::kString, A::kNone, false, "*",
           "How the process is renamed (proc.is_renamed): comm (it set its own name) or argv0 (argv[0] names "
           "another program); no value when it is not.",
           x_renamed_by},
      });
}

// Its session and process group, its capabilities, its GPU use.
void append_session_rows(std::vector<FieldDef>& fields) {
  using T = FieldType;
  using A = ArgMode;
  fields.insert(
      fields.end(),
      {
          {"proc.sname", T::kString, A::kNone, false, "*",
           "Name (comm) of the process's session leader, the process whose pid is proc.sid. No value when "
           "vigil does not know the leader (it exited before vigil saw it, or the pid was reused); Falco "
           "then names the eldest ancestor in the same session.",
           x_sname},
          {"proc.sid", T::kInt, A::kNone, false, "*",
           "Session id of the process (the host's number), as of its last exec.", x_sid},
          {"proc.vpgid", T::kInt, A::kNone, false, "*",
           "Process group id, as seen in the process's pid namespace, as of its last exec.", x_vpgid},
          {"proc.is_sid_leader", T::kBool, A::kNone, false, "*", "The process leads its session (proc.pid = proc.sid).",
           x_is_sid_leader},
          {"proc.is_vpgid_leader", T::kBool, A::kNone, false, "*",
           "The process leads its process group (proc.vpid = proc.vpgid).", x_is_vpgid_leader},
          {"thread.cap_effective", T::kString, A::kNone, false, "*",
           "Effective capabilities (CAP_SYS_ADMIN CAP_NET_RAW ...), as of the last exec or capset (or "
           "/proc at start).",
           x_caps<&event::ExecData::cap_effective, &event::CapsData::effective, &state::Process::cap_effective>},
          {"thread.cap_permitted", T::kString, A::kNone, false, "*",
           "Permitted capabilities, as of the last exec or capset (or /proc at start).",
           x_caps<&event::ExecData::cap_permitted, &event::CapsData::permitted, &state::Process::cap_permitted>},
          {"thread.cap_inheritable", T::kString, A::kNone, false, "*",
           "Inheritable capabilities, as of the last exec or capset (or /proc at start).",
           x_caps<&event::ExecData::cap_inheritable, &event::CapsData::inheritable, &state::Process::cap_inheritable>},
          {"proc.gpu.compute", T::kBool, A::kNone, false, "*",
           "The process allocated a GPU compute or channel class earlier.", x_gpu_compute},
      });
}

}  // namespace

void append_proc_fields(std::vector<FieldDef>& fields) {
  append_process_rows(fields);
  append_program_rows(fields);
  append_session_rows(fields);
  append_name_rows(fields);
}

}  // namespace vigil::rules
