// The process facts: what an exec tells about a process and what the process
// table keeps, defined once. This is an X-macro table, like the event schema
// (bpf/shared/event_types.h). Each row is
//
//   X(Type, name, init, exec, rec, opts)
//
//   Type, name, init  the member and its default value
//   exec  where event::ExecData carries it:
//           E0  in the original exec payload, whose order is frozen
//               (VG_EXEC_HEAD below lists it)
//           E1  appended to the exec payload, in table order (absent in older
//               capture files: read as the default)
//           E_  not in ExecData
//   rec   where state::Process keeps it:
//           P0  in the process record of the first capture format
//           Pn  appended to the process record in revision n, 1 to 9 (absent
//               in older capture files: a revision's facts are all there or
//               all absent)
//           P_  not in state::Process
//   opts  how the JSON form writes it (event::FieldOpt)
//
// Rows are in the process record's order. A fact in both structs is copied
// from the exec into the process when it execs.
//
// Everything else derives from this table: the members of ExecData and
// Process, their fields() lists (so the capture codec, the JSON form and the
// rule-test reader), the copy into the state (for_each_exec_fact) and the
// rule-test exec made from a test's process. Adding a fact the exec reports
// and the process keeps is one row at the end, `E1, P<last + 1>`, then the
// sensor (bpf/shared/events.h, the BPF program, engine/sensor/decoder.cpp)
// and the rule fields that read it. The build checks the table's own rules
// (the static_asserts below): revisions only grow, a written revision is
// frozen (kRevisionSizes), the exec head lists exactly the E0 rows.
//
// Two rows share a name twice: ExecData's exe and args (the file the kernel
// runs, the whole argv) are not Process's (argv[0], the arguments after it);
// the state derives Process's from ExecData's, with exepath (state.cpp).
//
// Thread-safety: macros, constants and templates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// clang-format off
#define VG_PROCESS_FACTS(X)                                                                      \
  /* Who and where: from the event header (and /proc at start) */                                \
  X(std::uint32_t, pid, 0, E_, P0, 0)                                                            \
  X(std::uint32_t, ppid, 0, E_, P0, 0)                                                           \
  X(std::uint32_t, uid, 0, E_, P0, 0)                                                            \
  X(std::uint32_t, gid, 0, E_, P0, 0)                                                            \
  X(std::uint32_t, loginuid, 0xffffffff, E0, P0, 0)                                              \
  X(std::string, comm, {}, E_, P0, 0)              /* the task comm (15 bytes max) */            \
  /* ExecData: the path given to execve (the script, for #! scripts) */                          \
  X(std::string, filename, {}, E0, P_, 0)                                                        \
  /* ExecData: the executable now running (the interpreter, for scripts) */                      \
  X(std::string, exe, {}, E0, P_, 0)                                                             \
  /* ExecData: argv, argv[0] included; bounded by the sensor */                                  \
  X(std::vector<std::string>, args, {}, E0, P_, 0)                                               \
  X(std::string, exe, {}, E_, P0, 0)               /* argv[0] of the last exec (proc.exe) */     \
  X(std::string, exepath, {}, E_, P0, 0)           /* the executable file (proc.exepath) */      \
  X(std::vector<std::string>, args, {}, E_, P0, 0) /* argv without argv[0] */                    \
  X(bool, args_truncated, false, E0, P0, 0)        /* argv was longer than the sensor keeps */   \
  X(std::string, cwd, {}, E0, P0, 0)                                                             \
  /* controlling tty (0 = none), numbered as /proc/PID/stat's tty_nr and Falco's proc.tty */     \
  X(std::uint32_t, tty, 0, E0, P0, 0)                                                            \
  X(std::uint64_t, cgroup_id, 0, E_, P0, 0)                                                      \
  X(std::string, container_id, {}, E_, P0, 0)      /* "" for host processes */                   \
  X(std::uint32_t, pid_ns, 0, E_, P0, 0)                                                         \
  X(std::uint32_t, mnt_ns, 0, E_, P0, 0)                                                         \
  X(std::uint32_t, net_ns, 0, E_, P0, 0)                                                         \
  X(std::uint32_t, vpid, 0, E_, P0, 0)             /* pid in its pid namespace, where known */   \
  X(std::uint64_t, start_ts_ns, 0, E_, P0, 0)      /* when it was forked (or first seen) */      \
  X(std::uint64_t, exec_ts_ns, 0, E_, P0, 0)       /* when it last exec'd */                     \
  X(bool, stdin_is_socket, false, E0, P0, 0)       /* fd 0 of the new program is a socket */     \
  X(bool, stdout_is_socket, false, E0, P0, 0)      /* fd 1 of the new program is a socket */     \
  X(bool, from_proc, false, E_, P0, 0)             /* seeded from /proc, not seen forking */     \
  /* Learnt from the process's own events: it allocated a GPU compute/channel class */           \
  X(bool, gpu_compute, false, E_, P0, 0)                                                         \
  X(std::uint32_t, gpu_devices_opened, 0, E_, P0, 0) /* distinct NVIDIA minors it opened */      \
  /* A 32-bit ELF: its open/ioctl/bpf (compat) syscalls are not traced */                        \
  X(bool, elf32, false, E1, P1, 0)                                                               \
  X(bool, exe_from_memfd, false, E1, P2, 0)        /* runs from a memfd, not a file on disk */   \
  X(bool, exe_upper_layer, false, E1, P2, 0)       /* file in an overlay's upper layer */        \
  X(bool, exe_writable, false, E1, P2, 0)          /* file writable by the user who runs it */   \
  /* Capability sets (bit n: capability n) after the exec (capset, /proc at start) */            \
  X(std::uint64_t, cap_effective, 0, E1, P2, 0)                                                  \
  X(std::uint64_t, cap_permitted, 0, E1, P2, 0)                                                  \
  X(std::uint64_t, cap_inheritable, 0, E1, P2, 0)                                                \
  X(std::uint32_t, sid, 0, E1, P3, 0)              /* session id (host numbering) */             \
  X(std::uint32_t, vpgid, 0, E1, P3, 0)            /* process group id in its pid namespace */   \
  /* What the program file is (engine/ident; empty when it could not be read in time): */        \
  /* a #! script (or binfmt_misc): filename is the script, exe its interpreter */                \
  X(bool, interpreted, false, E1, P_, 0)                                                         \
  X(std::string, exe_sha256, {}, E1, P4, kOmitEmpty)   /* SHA-256 (first 64 MiB), hex */         \
  X(std::string, exe_build_id, {}, E1, P4, kOmitEmpty) /* ELF GNU build-id, hex */               \
  X(std::string, exe_known_as, {}, E1, P4, kOmitEmpty) /* known shell/interpreter ("dash") */    \
  X(std::uint8_t, exe_class, 0, E1, P4, 0)         /* 0 none, 1 shell, 2 interpreter */          \
  X(bool, exe_deleted, false, E1, P4, 0)           /* deleted (not a memfd) when read */         \
  X(bool, exe_name_mismatch, false, E1, P4, 0)     /* known program under another name */        \
  /* Command lines of the images it ran before its current one, most recent first */             \
  /* (state.cpp: remember_prior_image) */                                                        \
  X(std::vector<std::string>, prior_cmdlines, {}, E_, P4, 0)                                     \
  /* The program file's inode as the kernel saw it at exec (0: unknown) */                       \
  X(std::uint64_t, exe_ino, 0, E1, P4, 0)                                                        \
  X(std::uint64_t, exe_dev, 0, E1, P4, 0)          /* st_dev numbering (makedev) */              \
  X(std::int64_t, exe_ctime_ns, 0, E1, P4, 0)      /* inode change time, ns since the epoch */   \
  /* The image it runs is none vigil saw it exec: a forked child still running its */            \
  /* parent's, or a process first seen at its exec. Its next exec remembers nothing of it. */    \
  X(bool, image_unknown, false, E_, P4, 0)                                                       \
  X(std::int64_t, exe_mtime_ns, 0, E1, P5, 0)      /* modification time, ns since the epoch */ \
  /* The environment the program started with ("NAME=value"), its first VG_ENV_MAX bytes. */    \
  /* The exec's only: kept per process it would cost ~3 KiB of every process in the table. */   \
  X(std::vector<std::string>, env, {}, E1, P_, kOmitEmpty)                                       \
  X(bool, env_truncated, false, E1, P_, 0)         /* the environment was longer than kept */  \
  /* The kernel killed it at exec: an enforced rule denies it (docs/prevention.md) */            \
  X(bool, killed_at_exec, false, E1, P_, 0)

// The original exec payload (the first capture format), in its frozen order.
#define VG_EXEC_HEAD(H) \
  H(filename) H(exe) H(args) H(args_truncated) H(cwd) H(tty) H(loginuid) H(stdin_is_socket) H(stdout_is_socket)
// clang-format on

// Row selectors: VG_FACT_IN_EXEC_##exec(x) is x when ExecData carries the
// fact; VG_FACT_APPENDED_##exec(x) when it is appended to the exec payload;
// VG_FACT_IN_PROCESS_##rec(x) when Process keeps it; VG_FACT_REV_##rec is its
// process record revision; VG_FACT_EXEC_##exec is 0 (head), 1 (appended) or
// -1.
#define VG_FACT_IN_EXEC_E0(...) __VA_ARGS__
#define VG_FACT_IN_EXEC_E1(...) __VA_ARGS__
#define VG_FACT_IN_EXEC_E_(...)
#define VG_FACT_APPENDED_E0(...)
#define VG_FACT_APPENDED_E1(...) __VA_ARGS__
#define VG_FACT_APPENDED_E_(...)
#define VG_FACT_IN_PROCESS_P0(...) __VA_ARGS__
#define VG_FACT_IN_PROCESS_P1(...) __VA_ARGS__
#define VG_FACT_IN_PROCESS_P2(...) __VA_ARGS__
#define VG_FACT_IN_PROCESS_P3(...) __VA_ARGS__
#define VG_FACT_IN_PROCESS_P4(...) __VA_ARGS__
#define VG_FACT_IN_PROCESS_P5(...) __VA_ARGS__
#define VG_FACT_IN_PROCESS_P6(...) __VA_ARGS__
#define VG_FACT_IN_PROCESS_P7(...) __VA_ARGS__
#define VG_FACT_IN_PROCESS_P8(...) __VA_ARGS__
#define VG_FACT_IN_PROCESS_P9(...) __VA_ARGS__
#define VG_FACT_IN_PROCESS_P_(...)
#define VG_FACT_EXEC_E0 0
#define VG_FACT_EXEC_E1 1
#define VG_FACT_EXEC_E_ (-1)
#define VG_FACT_REV_P0 0
#define VG_FACT_REV_P1 1
#define VG_FACT_REV_P2 2
#define VG_FACT_REV_P3 3
#define VG_FACT_REV_P4 4
#define VG_FACT_REV_P5 5
#define VG_FACT_REV_P6 6
#define VG_FACT_REV_P7 7
#define VG_FACT_REV_P8 8
#define VG_FACT_REV_P9 9
#define VG_FACT_REV_P_ (-1)

// A struct's members: ExecData's rows, Process's rows.
#define VG_FACT_MEMBER_EXEC(T, name, init, exec, rec, opts) VG_FACT_IN_EXEC_##exec(T name = init;)
#define VG_FACT_MEMBER_PROCESS(T, name, init, exec, rec, opts) VG_FACT_IN_PROCESS_##rec(T name = init;)

namespace vigil::event::facts {

// One row, as data, for the checks below and for tests.
struct Row {
  std::string_view name;
  int exec = -1;  // 0 in the exec head (E0), 1 appended (E1), -1 not in ExecData
  int rec = -1;   // process record revision, -1 when Process does not keep it
};

#define VG_FACT_ROW(T, name, init, exec, rec, opts) Row{#name, VG_FACT_EXEC_##exec, VG_FACT_REV_##rec},
inline constexpr Row kRows[] = {VG_PROCESS_FACTS(VG_FACT_ROW)};
#undef VG_FACT_ROW

#define VG_FACT_HEAD_NAME(name) std::string_view(#name),
inline constexpr std::string_view kExecHead[] = {VG_EXEC_HEAD(VG_FACT_HEAD_NAME)};
#undef VG_FACT_HEAD_NAME

// How many facts each process record revision holds, as written by the
// versions that wrote it: a written revision never changes (older files and
// older readers depend on it). A new fact starts a new revision; add its
// count here.
inline constexpr std::size_t kRevisionSizes[] = {25, 1, 6, 2, 11, 1};

// The process record's revisions only grow along the table.
constexpr bool revisions_grow() {
  int last = 0;
  for (const Row& r : kRows) {
    if (r.rec < 0) continue;
    if (r.rec < last) return false;
    last = r.rec;
  }
  return true;
}

constexpr bool revisions_frozen() {
  std::size_t n[std::size(kRevisionSizes) + 1] = {};
  for (const Row& r : kRows) {
    if (r.rec < 0) continue;
    if (static_cast<std::size_t>(r.rec) >= std::size(kRevisionSizes)) return false;
    ++n[r.rec];
  }
  for (std::size_t i = 0; i < std::size(kRevisionSizes); ++i) {
    if (n[i] != kRevisionSizes[i]) return false;
  }
  return true;
}

// VG_EXEC_HEAD names each E0 row once, and nothing else.
constexpr bool exec_head_matches() {
  std::size_t e0 = 0;
  for (const Row& r : kRows) e0 += r.exec == 0 ? 1 : 0;
  if (e0 != std::size(kExecHead)) return false;
  for (std::size_t i = 0; i < std::size(kExecHead); ++i) {
    bool found = false;
    for (const Row& r : kRows) found = found || (r.exec == 0 && r.name == kExecHead[i]);
    for (std::size_t j = 0; j < i; ++j) {
      if (kExecHead[j] == kExecHead[i]) return false;
    }
    if (!found) return false;
  }
  return true;
}

static_assert(revisions_grow(), "process_facts.h: a fact of the process record goes after every older one");
static_assert(revisions_frozen(),
              "process_facts.h: a written process record revision is frozen; a new fact starts a new "
              "revision (and its count goes in kRevisionSizes)");
static_assert(exec_head_matches(), "process_facts.h: VG_EXEC_HEAD must list each E0 row once");

}  // namespace vigil::event::facts

namespace vigil::event {

// Calls f(process_member, exec_member) for each fact an exec copies into the
// process (the rows in both structs), in table order. Templates, so that this
// header needs neither struct: f(p.tty, e.tty), ...
template <class P, class E, class F>
void for_each_exec_fact(P& p, E& e, F&& f) {
#define VG_FACT_PAIR(T, name, init, exec, rec, opts) \
  VG_FACT_IN_EXEC_##exec(VG_FACT_IN_PROCESS_##rec(f(p.name, e.name);))
  VG_PROCESS_FACTS(VG_FACT_PAIR)
#undef VG_FACT_PAIR
}

// Calls f(name, a_member, b_member) for each fact two processes keep (the
// table's Process rows), in table order: comparisons fact by fact.
template <class A, class B, class F>
void for_each_process_fact(A& a, B& b, F&& f) {
#define VG_FACT_BOTH(T, name, init, exec, rec, opts) VG_FACT_IN_PROCESS_##rec(f(#name, a.name, b.name);)
  VG_PROCESS_FACTS(VG_FACT_BOTH)
#undef VG_FACT_BOTH
}

}  // namespace vigil::event
