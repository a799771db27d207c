#include "engine/sensor/hooks.h"

#include <deque>
#include <string>

namespace vigil::sensor {
namespace {

using event::Type;

// The process, file, network, bpf and Xid hooks, each named by hand.
std::vector<Hook> named_hooks() {
  return {
      {"vg_sched_exec", "tp_btf/sched_process_exec", AttachKind::kAuto, {}, nullptr, false},
      {"vg_sched_fork", "tp_btf/sched_process_fork", AttachKind::kAuto, {}, nullptr, false},
      {"vg_sched_exit", "tp_btf/sched_process_exit", AttachKind::kAuto, {}, nullptr, false},
      {"vg_enter_openat",
       "syscalls:sys_enter_openat",
       AttachKind::kAuto,
       {Type::kOpen},
       "syscalls/sys_enter_openat",
       false},
      {"vg_exit_openat",
       "syscalls:sys_exit_openat",
       AttachKind::kAuto,
       {Type::kOpen},
       "syscalls/sys_exit_openat",
       false},
      {"vg_enter_openat2",
       "syscalls:sys_enter_openat2",
       AttachKind::kAuto,
       {Type::kOpen},
       "syscalls/sys_enter_openat2",
       true},
      {"vg_exit_openat2",
       "syscalls:sys_exit_openat2",
       AttachKind::kAuto,
       {Type::kOpen},
       "syscalls/sys_exit_openat2",
       true},
      {"vg_enter_open", "syscalls:sys_enter_open", AttachKind::kAuto, {Type::kOpen}, "syscalls/sys_enter_open", true},
      {"vg_exit_open", "syscalls:sys_exit_open", AttachKind::kAuto, {Type::kOpen}, "syscalls/sys_exit_open", true},
      {"vg_enter_ioctl",
       "syscalls:sys_enter_ioctl",
       AttachKind::kAuto,
       {Type::kIoctl, Type::kGpuUsage},
       "syscalls/sys_enter_ioctl",
       false},
      {"vg_exit_ioctl",
       "syscalls:sys_exit_ioctl",
       AttachKind::kAuto,
       {Type::kIoctl, Type::kGpuUsage},
       "syscalls/sys_exit_ioctl",
       false},
      {"vg_connect4", "cgroup/connect4", AttachKind::kCgroup, {Type::kPayload}, nullptr, false},
      {"vg_connect6", "cgroup/connect6", AttachKind::kCgroup, {Type::kPayload}, nullptr, false},
      {"vg_sendmsg4", "cgroup/sendmsg4", AttachKind::kCgroup, {Type::kConnect}, nullptr, false},
      {"vg_sendmsg6", "cgroup/sendmsg6", AttachKind::kCgroup, {Type::kConnect}, nullptr, false},
      {"vg_enter_connect",
       "syscalls:sys_enter_connect",
       AttachKind::kAuto,
       {Type::kConnect},
       "syscalls/sys_enter_connect",
       false},
      {"vg_exit_connect",
       "syscalls:sys_exit_connect",
       AttachKind::kAuto,
       {Type::kConnect},
       "syscalls/sys_exit_connect",
       false},
      // Prevention (bpf/progs/policy.bpf.c): attached while an enforced
      // rule needs them (sensor.cpp wanted()), whatever the event types.
      {"vg_dev_policy", "cgroup/dev", AttachKind::kCgroup, {Type::kOpen, Type::kMknod}, nullptr, false},
      {"vg_sock_policy", "cgroup/sock_create", AttachKind::kCgroup, {Type::kSocket}, nullptr, false},
      {"vg_skb_egress",
       "cgroup_skb/egress",
       AttachKind::kCgroup,
       {Type::kDns, Type::kPayload, Type::kEgress},
       nullptr,
       false},
      {"vg_skb_ingress", "cgroup_skb/ingress", AttachKind::kCgroup, {Type::kDns}, nullptr, false},
      {"vg_enter_bpf", "syscalls:sys_enter_bpf", AttachKind::kAuto, {Type::kBpf}, "syscalls/sys_enter_bpf", false},
      {"vg_exit_bpf", "syscalls:sys_exit_bpf", AttachKind::kAuto, {Type::kBpf}, "syscalls/sys_exit_bpf", false},
      {"vg_signal_generate", "tp_btf/signal_generate", AttachKind::kAuto, {Type::kVigilSignal}, nullptr, false},
      {"vg_signal_kill", "tp_btf/signal_generate (kill)", AttachKind::kAuto, {Type::kKill}, nullptr, false},
      {"vg_nvidia_xid",
       "nvidia:nvidia_dev_xid",
       AttachKind::kXidTracepoint,
       {Type::kXid},
       "nvidia/nvidia_dev_xid",
       true},
  };
}

// The rarer syscalls (bpf/progs/sys.bpf.c, dup in fd/socket.bpf.c): an exit
// program each, and the one generic enter program on each enter tracepoint
// where the exits cannot read the registers. The older call of a pair
// (symlink beside symlinkat) is missing on some architectures, and the
// module calls on kernels built without modules (nothing can be loaded
// there): optional.
void append_rare_syscall_hooks(std::vector<Hook>& all) {
  struct Call {
    const char* name;
    Type type;
    bool optional;
  };
  static const Call kCalls[] = {
      {"symlink", Type::kSymlink, true},
      {"symlinkat", Type::kSymlink, false},
      {"link", Type::kLink, true},
      {"linkat", Type::kLink, false},
      {"unlink", Type::kUnlink, true},
      {"unlinkat", Type::kUnlink, false},
      {"rename", Type::kRename, true},
      {"renameat", Type::kRename, true},
      {"renameat2", Type::kRename, false},
      {"mkdir", Type::kMkdir, true},
      {"mkdirat", Type::kMkdir, false},
      {"rmdir", Type::kRmdir, true},
      {"chmod", Type::kChmod, true},
      {"fchmod", Type::kChmod, false},
      {"fchmodat", Type::kChmod, false},
      {"mknod", Type::kMknod, true},
      {"mknodat", Type::kMknod, false},
      {"ptrace", Type::kPtrace, false},
      {"socket", Type::kSocket, false},
      {"dup", Type::kDup, false},
      {"dup2", Type::kDup, true},
      {"dup3", Type::kDup, false},
      {"init_module", Type::kModule, true},
      {"finit_module", Type::kModule, true},
      {"setuid", Type::kSetuid, false},
      {"setreuid", Type::kSetuid, false},
      {"setresuid", Type::kSetuid, false},
      {"setgid", Type::kSetgid, false},
      {"setregid", Type::kSetgid, false},
      {"setresgid", Type::kSetgid, false},
      {"setns", Type::kSetns, false},
      {"unshare", Type::kUnshare, false},
      {"accept", Type::kAccept, true},
      {"accept4", Type::kAccept, false},
      {"listen", Type::kListen, false},
      {"bind", Type::kBind, false},
      {"userfaultfd", Type::kUserfaultfd, true},
      {"memfd_create", Type::kMemfdCreate, false},
      {"prctl", Type::kPrctl, false},
      {"io_uring_setup", Type::kIoUringSetup, true},
      {"delete_module", Type::kDeleteModule, true},
      {"capset", Type::kCapset, false},
      {"perf_event_open", Type::kPerfEventOpen, false},
  };
  static std::deque<std::string> names;  // the Hook strings (a deque never moves them)
  for (const Call& c : kCalls) {
    for (const char* dir : {"enter", "exit"}) {
      const bool enter = dir[1] == 'n';
      names.push_back(enter ? "vg_enter_args" : std::string("vg_exit_") + c.name);
      const char* prog = names.back().c_str();
      names.push_back(std::string("syscalls:sys_") + dir + "_" + c.name);
      const char* name = names.back().c_str();
      names.push_back(std::string("syscalls/sys_") + dir + "_" + c.name);
      const char* tp = names.back().c_str();
      all.push_back({prog, name, enter ? AttachKind::kSyscallEnter : AttachKind::kAuto, {c.type}, tp, c.optional});
    }
  }
}

}  // namespace

const std::vector<Hook>& hooks() {
  static const std::vector<Hook> kAll = [] {
    std::vector<Hook> all = named_hooks();
    append_rare_syscall_hooks(all);
    return all;
  }();
  return kAll;
}

}  // namespace vigil::sensor
