// SPDX-License-Identifier: GPL-2.0
/* Tamper signals and GPU errors: bpf() calls that load, attach, detach, pin
 * or enumerate programs, maps and links (syscalls:sys_exit_bpf, arguments
 * from the saved registers; bpf() is rare, so the per-syscall tracepoint
 * costs nothing measurable); signals sent to vigil's own process
 * (signal:signal_generate, a non-syscall tracepoint) and, on the same
 * tracepoint, signals one process sends another (kill); perf_event_open of
 * tracepoints, kprobes, uprobes and breakpoints (syscalls:sys_exit_perf_event_open);
 * and the NVIDIA driver's nvidia:nvidia_dev_xid tracepoint where the driver has it. */
#include "bpf/progs/helpers.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct vg_bpf_pending {
  __u32 cmd;
  __u32 prog_type;
  char prog_name[16];
};

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, struct vg_bpf_pending);
} pending_bpf SEC(".maps");

/* Enumeration commands already reported for a process: (tgid, cmd) -> the
 * process's start time, so a pid reused by a new process reports again. A
 * tool such as `bpftool prog list` walks every id (GET_NEXT_ID, GET_FD_BY_ID,
 * OBJ_GET_INFO_BY_FD per object): one event per command kind, not hundreds. */
struct vg_bpf_seen_key {
  __u32 tgid;
  __u32 cmd;
};

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, struct vg_bpf_seen_key);
  __type(value, __u64);
} bpf_seen SEC(".maps");

/* 0: not reported; 1: every call (changes what runs in the kernel, or pins);
 * 2: enumeration, once per process and command. */
static __always_inline int bpf_cmd_kind(__u32 cmd)
{
  switch (cmd) {
  case BPF_PROG_LOAD:
  case BPF_PROG_ATTACH:
  case BPF_PROG_DETACH:
  case BPF_RAW_TRACEPOINT_OPEN:
  case BPF_LINK_CREATE:
  case BPF_LINK_UPDATE:
  case BPF_LINK_DETACH:
  case BPF_OBJ_PIN:
  case BPF_OBJ_GET: return 1;
  case BPF_PROG_GET_NEXT_ID:
  case BPF_MAP_GET_NEXT_ID:
  case BPF_LINK_GET_NEXT_ID:
  case BPF_BTF_GET_NEXT_ID:
  case BPF_PROG_GET_FD_BY_ID:
  case BPF_MAP_GET_FD_BY_ID:
  case BPF_LINK_GET_FD_BY_ID:
  case BPF_BTF_GET_FD_BY_ID:
  case BPF_OBJ_GET_INFO_BY_FD:
  case BPF_PROG_QUERY:
  case BPF_TASK_FD_QUERY: return 2;
  }
  return 0;
}

/* An enumeration command this process has not made before (and remembers
 * it). Checked at exit, once the call is known to be reported. */
static __always_inline int bpf_first_enum(__u32 cmd)
{
  struct vg_bpf_seen_key k = {.tgid = (__u32)(bpf_get_current_pid_tgid() >> 32), .cmd = cmd};
  struct task_struct *t = (struct task_struct *)bpf_get_current_task();
  __u64 start = BPF_CORE_READ(t, group_leader, start_time);
  __u64 *seen = bpf_map_lookup_elem(&bpf_seen, &k);
  if (seen && *seen == start)
    return 0;
  if (bpf_map_update_elem(&bpf_seen, &k, &start, BPF_ANY) != 0)
    vg_drop(VG_DROP_MAP_FULL);
  return 1;
}

static __always_inline int bpf_args(__u32 cmd, const __u8 *attr, struct vg_bpf_pending *p)
{
  if (!bpf_cmd_kind(cmd) || vg_is_self())
    return 0;
  p->cmd = cmd;
  if (cmd == BPF_PROG_LOAD && attr) {
    bpf_probe_read_user(&p->prog_type, sizeof(p->prog_type), attr);
    bpf_probe_read_user(p->prog_name, sizeof(p->prog_name),
                        attr + __builtin_offsetof(union bpf_attr, prog_name));
  }
  return 1;
}

static __always_inline void bpf_send(const struct vg_bpf_pending *p, long ret)
{
  if (bpf_cmd_kind(p->cmd) == 2 && !bpf_first_enum(p->cmd))
    return;
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return;
  struct vg_bpf *e = (struct vg_bpf *)buf;
  vg_fill_hdr(&e->hdr, VG_BPF);
  e->cmd = p->cmd;
  e->prog_type = p->prog_type;
  e->result = ret;
  __builtin_memcpy(e->prog_name, p->prog_name, sizeof(e->prog_name));
  vg_submit(buf, sizeof(*e));
}

/* Only attached where the exit program cannot read the arguments itself. */
SEC("tracepoint/syscalls/sys_enter_bpf")
int vg_enter_bpf(struct trace_event_raw_sys_enter *ctx)
{
  struct vg_bpf_pending p = {};
  if (!bpf_args((__u32)ctx->args[0], (const __u8 *)ctx->args[1], &p))
    return 0;
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  if (bpf_map_update_elem(&pending_bpf, &tid, &p, BPF_ANY) != 0)
    vg_drop(VG_DROP_MAP_FULL);
  return 0;
}

SEC("tracepoint/syscalls/sys_exit_bpf")
int vg_exit_bpf(struct trace_event_raw_sys_exit *ctx)
{
  struct pt_regs *regs = vg_syscall_regs();
  if (regs) {
    struct vg_bpf_pending p = {};
    if (bpf_args((__u32)PT_REGS_PARM1_SYSCALL(regs), (const __u8 *)PT_REGS_PARM2_SYSCALL(regs), &p))
      bpf_send(&p, ctx->ret);
    return 0;
  }
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct vg_bpf_pending *p = bpf_map_lookup_elem(&pending_bpf, &tid);
  if (!p)
    return 0;
  bpf_send(p, ctx->ret);
  bpf_map_delete_elem(&pending_bpf, &tid);
  return 0;
}

/* A signal aimed at vigil's process (any of its threads), sent by another
 * process: kill, tkill, tgkill, rt_sigqueueinfo, pidfd_send_signal, or an
 * fd's SIGIO owner. A non-syscall tracepoint, so no syscall pays for it; every
 * other signal on the node costs one load and a compare. Signals the kernel
 * raises itself (SIGCHLD of a child, a fault, an expiring timer: si_code > 0)
 * are not sent. Record: vg_sys, a = {sig, target tgid, si_code, target tid};
 * result: the tracepoint's (0 delivered, 1 ignored, 2 already pending...). */
SEC("tp_btf/signal_generate")
int BPF_PROG(vg_signal_generate, int sig, struct kernel_siginfo *info, struct task_struct *task,
             int group, int result)
{
  if (!task || task->tgid != cfg_vigil_tgid || vg_is_self())
    return 0;
  int code;
  if ((__u64)info == 0)      /* SEND_SIG_NOINFO: kill() and friends */
    code = 0;                /* SI_USER */
  else if ((__u64)info == 1) /* SEND_SIG_PRIV: the kernel's own */
    code = 0x80;             /* SI_KERNEL */
  else
    code = BPF_CORE_READ(info, si_code);
  if (code > 0)
    return 0;
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return 0;
  struct vg_sys *e = (struct vg_sys *)buf;
  vg_fill_hdr(&e->hdr, VG_VIGIL_SIGNAL);
  e->result = result;
  e->a[0] = (__u32)sig;
  e->a[1] = task->tgid;
  e->a[2] = (__u64)(__s64)code;
  e->a[3] = task->pid | ((__u64)(group ? 1 : 0) << 32);
  e->str_len = 0;
  e->syscall = 0;
  for (int i = 0; i < 5; i++)
    e->pad0[i] = 0;
  vg_submit(buf, sizeof(*e));
  return 0;
}

/* A signal one process sends another (kill, tkill, tgkill, rt_sigqueueinfo,
 * pidfd_send_signal): the kill event. The same non-syscall tracepoint as the
 * program above, attached only when a rule asks for kill, so no syscall pays
 * for it. Fired in the sender's context for these calls, it names the target
 * as the kernel resolved it: host pid numbers, each process of a group or
 * kill(-1) named on its own, whatever pid namespace the sender numbered it
 * in. Not sent: signals a process sends itself (raise(), abort(), the Go
 * runtime's preemption signals to its own threads: most signals on a node),
 * the kernel's own (si_code > 0, SEND_SIG_PRIV), timers, message queues and
 * SIGIO (their si_code is none of SI_USER, SI_QUEUE, SI_TKILL), a kill the
 * kernel refused before generating it (EPERM, ESRCH) and signal 0 (no signal
 * is generated). Record: vg_sys as vigil_signal's, a = {sig, target tgid,
 * si_code, target tid | group << 32}; result: the tracepoint's. */
SEC("tp_btf/signal_generate")
int BPF_PROG(vg_signal_kill, int sig, struct kernel_siginfo *info, struct task_struct *task,
             int group, int result)
{
  if (!task)
    return 0;
  __u32 sender = (__u32)(bpf_get_current_pid_tgid() >> 32);
  __u32 target = task->tgid;
  if (sender == target || sender == cfg_vigil_tgid)
    return 0;
  int code;
  if ((__u64)info == 0) /* SEND_SIG_NOINFO: kill() and friends */
    code = 0;           /* SI_USER */
  else if ((__u64)info == 1)
    return 0; /* SEND_SIG_PRIV: the kernel's own */
  else
    code = BPF_CORE_READ(info, si_code);
  if (code != 0 && code != -1 && code != -6) /* SI_USER, SI_QUEUE, SI_TKILL */
    return 0;
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return 0;
  struct vg_sys *e = (struct vg_sys *)buf;
  vg_fill_hdr(&e->hdr, VG_KILL);
  e->result = result;
  e->a[0] = (__u32)sig;
  e->a[1] = target;
  e->a[2] = (__u64)(__s64)code;
  e->a[3] = task->pid | ((__u64)(group ? 1 : 0) << 32);
  e->str_len = 0;
  e->syscall = 0;
  for (int i = 0; i < 5; i++)
    e->pad0[i] = 0;
  vg_submit(buf, sizeof(*e));
  return 0;
}

/* perf_event_open of what can watch the kernel or another program:
 * tracepoints, kprobes and uprobes (their PMU types are dynamic: user space
 * reads them from /sys/bus/event_source/devices/{kprobe,uprobe}/type) and
 * hardware breakpoints. Counters (hardware, software, cache, raw) are the
 * profilers' daily bread and are not sent. Record: vg_sys, a = {attr.type,
 * attr.config, pid argument, VG_PERF_* kind}; result: the new fd. */
SEC("tracepoint/syscalls/sys_exit_perf_event_open")
int vg_exit_perf_event_open(struct trace_event_raw_sys_exit *ctx)
{
  struct vg_sys_args a;
  if (!vg_sys_args(&a))
    return 0;
  const __u8 *attr = (const __u8 *)a.a[0];
  __u32 type = 0;
  __u64 config = 0;
  if (!attr || bpf_probe_read_user(&type, sizeof(type), attr) != 0)
    return 0;
  __u64 kind;
  if (type == 2) /* PERF_TYPE_TRACEPOINT */
    kind = VG_PERF_TRACEPOINT;
  else if (type == 5) /* PERF_TYPE_BREAKPOINT */
    kind = VG_PERF_BREAKPOINT;
  else if (cfg_perf_kprobe_type && type == cfg_perf_kprobe_type)
    kind = VG_PERF_KPROBE;
  else if (cfg_perf_uprobe_type && type == cfg_perf_uprobe_type)
    kind = VG_PERF_UPROBE;
  else
    return 0;
  bpf_probe_read_user(&config, sizeof(config), attr + 8); /* perf_event_attr.config */
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return 0;
  struct vg_sys *e = (struct vg_sys *)buf;
  vg_fill_hdr(&e->hdr, VG_PERF_EVENT_OPEN);
  e->result = ctx->ret;
  e->a[0] = type;
  e->a[1] = config;
  e->a[2] = (__u64)(__s64)(__s32)a.a[1];
  e->a[3] = kind;
  e->str_len = 0;
  e->syscall = 0;
  for (int i = 0; i < 5; i++)
    e->pad0[i] = 0;
  vg_submit(buf, sizeof(*e));
  return 0;
}

/* Field offsets come from the tracepoint's format file (cfg_xid_*_off): the
 * module's BTF is usually absent, so CO-RE cannot relocate them. */
SEC("tracepoint/nvidia/nvidia_dev_xid")
int vg_nvidia_xid(void *ctx)
{
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return 0;
  struct vg_xid *e = (struct vg_xid *)buf;
  vg_fill_hdr(&e->hdr, VG_XID);
  e->hdr.flags |= VG_HF_NO_TASK; /* fired in driver context, not the faulting process */
  __u32 code = 0, dev_loc = 0, msg_loc = 0;
  bpf_probe_read_kernel(&code, sizeof(code), (__u8 *)ctx + (cfg_xid_code_off & 0xff));
  bpf_probe_read_kernel(&dev_loc, sizeof(dev_loc), (__u8 *)ctx + (cfg_xid_dev_off & 0xff));
  bpf_probe_read_kernel(&msg_loc, sizeof(msg_loc), (__u8 *)ctx + (cfg_xid_msg_off & 0xff));
  e->code = code;
  __u8 trunc = 0;
  __u32 off = sizeof(*e);
  __u32 n = vg_put_kernel_str(buf, off, (__u8 *)ctx + (dev_loc & 0xffff), 64, &trunc);
  e->dev_len = n;
  off += n;
  n = vg_put_kernel_str(buf, off, (__u8 *)ctx + (msg_loc & 0xffff), VG_XID_MSG_MAX, &trunc);
  e->msg_len = n;
  off += n;
  vg_submit(buf, off);
  return 0;
}
