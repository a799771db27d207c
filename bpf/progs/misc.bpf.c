// SPDX-License-Identifier: GPL-2.0
/* Tamper signals and GPU errors: bpf() calls that load, attach or detach
 * programs (syscalls:sys_exit_bpf, arguments from the saved registers; bpf()
 * is rare, so the per-syscall tracepoint costs nothing measurable), and the NVIDIA driver's
 * nvidia:nvidia_dev_xid tracepoint where the driver has it. */
#include "bpf/progs/vigil.bpf.h"

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

static __always_inline int interesting_bpf_cmd(__u32 cmd)
{
  switch (cmd) {
  case BPF_PROG_LOAD:
  case BPF_PROG_ATTACH:
  case BPF_PROG_DETACH:
  case BPF_RAW_TRACEPOINT_OPEN:
  case BPF_LINK_CREATE:
  case BPF_LINK_DETACH:
    return 1;
  }
  return 0;
}

static __always_inline int bpf_args(__u32 cmd, const __u8 *attr, struct vg_bpf_pending *p)
{
  if (!interesting_bpf_cmd(cmd) || vg_is_self())
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
