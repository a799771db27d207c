/* The event schema: every event type vigil knows, defined once.
 *
 * This is an X-macro table shared by the BPF programs (C, through events.h)
 * and the engine (C++, through engine/event/event.h). Each row is
 *
 *   X(Cxx, C, id, "name", "aliases", Payload, "syscalls", "category")
 *
 *   Cxx       the engine's enumerator: event::Type::k<Cxx>
 *   C         the BPF record id: VG_<C> (enum vg_type)
 *   id        the stable number written into ring-buffer records and capture
 *             files. Append only; never reuse or renumber.
 *   name      Falco's evt.type for this event (what evt.type returns)
 *   aliases   other evt.type names, separated by spaces, that a rule may use
 *             for it: older types that stand for a family of syscalls the
 *             sensor does not tell apart ("" when none)
 *   Payload   the C++ payload struct (event.h) that holds its fields; several
 *             types may share one
 *   syscalls  where it comes from (documentation: vigil fields, docs/events.md)
 *   category  the timeline's category for it
 *
 * Everything else derives from this table: the C and C++ enums, evt.type
 * names and masks, the capture codec, the JSON form, the timeline and the
 * rule-test reader. Adding an event type is: a row here, the BPF program, the decoder case
 * (sensor/decoder.cpp), its evt.arg names (kFalcoArgs, event/schema.h) and its rule fields.
 * Ids are contiguous from 1: the engine asserts it.
 */
#ifndef VIGIL_BPF_SHARED_EVENT_TYPES_H
#define VIGIL_BPF_SHARED_EVENT_TYPES_H

#define VG_EVENT_TYPES(X)                                                                          \
  X(Exec, EXEC, 1, "execve", "execveat", ExecData, "execve, execveat (sched_process_exec)",        \
    "exec")                                                                                        \
  X(Fork, FORK, 2, "clone", "clone3 fork vfork", ForkData,                                         \
    "clone, clone3, fork, vfork (sched_process_fork)", "fork")                                     \
  X(Exit, EXIT, 3, "procexit", "", ExitData, "a process exited (sched_process_exit)", "exit")      \
  X(Connect, CONNECT, 4, "connect", "sendto sendmsg", ConnectData,                                 \
    "connect; sendto/sendmsg of unconnected UDP (cgroup/sendmsg4|6)", "net")                       \
  X(Open, OPEN, 5, "openat", "open openat2 creat", OpenData, "open, openat, openat2, creat",       \
    "file")                                                                                        \
  X(Ioctl, IOCTL, 6, "ioctl", "", IoctlData, "ioctl on an NVIDIA device fd", "gpu")                \
  X(GpuUsage, GPU_USAGE, 7, "gpu_usage", "", GpuUsageData,                                         \
    "periodic counts of NVIDIA ioctls (kernel map)", "gpu")                                        \
  X(Xid, XID, 8, "xid", "", XidData, "nvidia:nvidia_dev_xid, NVRM lines of /dev/kmsg", "gpu_xid")  \
  X(Dns, DNS, 9, "dns", "", DnsData, "DNS over UDP port 53 (cgroup_skb)", "dns")                   \
  X(Payload, PAYLOAD, 10, "payload", "", PayloadData,                                              \
    "first bytes of a new outbound TCP connection (cgroup_skb/egress)", "net")                     \
  X(Bpf, BPF, 11, "bpf", "", BpfData, "bpf() that loads, attaches or detaches programs", "bpf")    \
  X(Symlink, SYMLINK, 12, "symlinkat", "symlink", FileOpData, "symlink, symlinkat", "file")        \
  X(Link, LINK, 13, "linkat", "link", FileOpData, "link, linkat", "file")                          \
  X(Unlink, UNLINK, 14, "unlinkat", "unlink", FileOpData, "unlink, unlinkat", "file")              \
  X(Rename, RENAME, 15, "renameat2", "rename renameat", FileOpData, "rename, renameat, renameat2", \
    "file")                                                                                        \
  X(Mkdir, MKDIR, 16, "mkdirat", "mkdir", FileOpData, "mkdir, mkdirat", "file")                    \
  X(Rmdir, RMDIR, 17, "rmdir", "", FileOpData, "rmdir", "file")                                    \
  X(Chmod, CHMOD, 18, "fchmodat", "chmod fchmod", FileOpData, "chmod, fchmod, fchmodat", "file")   \
  X(Ptrace, PTRACE, 19, "ptrace", "", PtraceData, "ptrace", "proc")                                \
  X(Socket, SOCKET, 20, "socket", "", SocketData, "socket", "net")                                 \
  X(Dup, DUP, 21, "dup", "dup2 dup3", DupData, "dup, dup2, dup3", "file")                          \
  X(Module, MODULE, 22, "init_module", "finit_module", ModuleData, "init_module, finit_module",    \
    "proc")                                                                                        \
  X(Setuid, SETUID, 23, "setuid", "setreuid setresuid", CredData, "setuid, setreuid, setresuid",   \
    "proc")                                                                                        \
  X(Setgid, SETGID, 24, "setgid", "setregid setresgid", CredData, "setgid, setregid, setresgid",   \
    "proc")                                                                                        \
  X(Setns, SETNS, 25, "setns", "", NsData, "setns", "proc")                                        \
  X(Unshare, UNSHARE, 26, "unshare", "", NsData, "unshare", "proc")                                \
  X(Accept, ACCEPT, 27, "accept", "accept4", InboundData, "accept, accept4", "net")                \
  X(Listen, LISTEN, 28, "listen", "", InboundData, "listen", "net")                                \
  X(Bind, BIND, 29, "bind", "", InboundData, "bind", "net")                                        \
  X(Userfaultfd, USERFAULTFD, 30, "userfaultfd", "", SysCallData, "userfaultfd", "proc")           \
  X(MemfdCreate, MEMFD_CREATE, 31, "memfd_create", "", SysCallData, "memfd_create", "file")        \
  X(Prctl, PRCTL, 32, "prctl", "", SysCallData, "prctl", "proc")                                   \
  X(IoUringSetup, IO_URING_SETUP, 33, "io_uring_setup", "", SysCallData,                           \
    "io_uring_setup: the process uses io_uring, whose opens and connects syscalls do not show",    \
    "proc")                                                                                        \
  X(DeleteModule, DELETE_MODULE, 34, "delete_module", "", ModuleData, "delete_module", "proc")     \
  X(Capset, CAPSET, 35, "capset", "", CapsData, "capset (the capability sets after the call)",     \
    "proc")                                                                                        \
  X(Plugin, PLUGIN, 36, "pluginevent", "", PluginData,                                             \
    "an event from a plugin's source (plugins/, docs/plugins.md)", "plugin")                       \
  X(VigilSignal, VIGIL_SIGNAL, 37, "vigil_signal", "", SysCallData,                                \
    "a signal sent to vigil's own process by another (signal:signal_generate)", "proc")            \
  X(PerfEventOpen, PERF_EVENT_OPEN, 38, "perf_event_open", "", SysCallData,                        \
    "perf_event_open of a tracepoint, kprobe, uprobe or breakpoint", "proc")                       \
  X(Mknod, MKNOD, 39, "mknodat", "mknod", FileOpData,                                              \
    "mknod, mknodat (a device node, FIFO or socket file created)", "file")                         \
  X(GpuPosture, GPU_POSTURE, 40, "gpu_posture", "", PostureData,                                   \
    "the node's GPU security posture, read at start and when it changes (not a syscall)", "gpu")   \
  X(Kill, KILL, 41, "kill", "tkill tgkill", SysCallData,                                           \
    "kill, tkill, tgkill, rt_sigqueueinfo, pidfd_send_signal: a signal one process sends another " \
    "(signal:signal_generate)",                                                                    \
    "proc")                                                                                        \
  X(Egress, EGRESS, 42, "egress", "", EgressData,                                                  \
    "bytes a container sent to one destination over an interval, counted per packet "              \
    "(cgroup_skb/egress; not a syscall)",                                                          \
    "net")

#endif /* VIGIL_BPF_SHARED_EVENT_TYPES_H */
