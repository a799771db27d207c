// SPDX-License-Identifier: GPL-2.0
/* Prevention's own hooks (policy.bpf.h has the maps and the judgement):
 *   cgroup/dev          refuses open and mknod of NVIDIA device nodes a
 *                       container was not allocated, where a rule says so;
 *   cgroup/sock_create  refuses the socket families and types rules name.
 * Both attach to the cgroup v2 root, and only while an enforced rule needs
 * them: the kernel runs every program attached above a task's cgroup, so a
 * container's own device program (runc's) still applies; this one can only
 * refuse more. A refused open is reported by the open's exit with its path
 * (pol_refused); a refused mknod or socket by its own exit, with EPERM. */
#include "bpf/progs/policy.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define VG_NVIDIA_MAJOR 195
#define VG_NVIDIA_MAX_GPU_MINOR 247 /* engine/state/gpu.h kNvidiaMaxGpuMinor */
#define VG_DEVCG_DEV_CHAR 2
#define VG_DEVCG_ACC_MKNOD 1

/* The kind of an NVIDIA node by its numbers (engine/state/gpu.cpp
 * nvidia_node); 0: not an NVIDIA node. */
static __always_inline __u32 node_kind(__u32 major, __u32 minor)
{
  if (major == VG_NVIDIA_MAJOR) {
    if (minor <= VG_NVIDIA_MAX_GPU_MINOR)
      return VG_POL_NODE_GPU;
    if (minor == 255)
      return VG_POL_NODE_CTL;
    if (minor == 254)
      return VG_POL_NODE_MODESET;
    return VG_POL_NODE_OTHER;
  }
  if (vg_pol.uvm_major && major == vg_pol.uvm_major)
    return minor == 1 ? VG_POL_NODE_UVM_TOOLS : VG_POL_NODE_UVM;
  if (vg_pol.caps_major && major == vg_pol.caps_major)
    return VG_POL_NODE_CAPS;
  if (vg_pol.nvlink_major && major == vg_pol.nvlink_major)
    return VG_POL_NODE_NVLINK;
  if (vg_pol.nvswitch_major && major == vg_pol.nvswitch_major)
    return VG_POL_NODE_NVSWITCH;
  return 0;
}

/* What the container's allocation allows (engine/state/gpu.cpp
 * allocation_allows): the control, modeset and UVM nodes with any GPU, a GPU
 * node by its minor, nothing else. */
static __always_inline __u32 node_allowed(const struct vg_pol_cg *cg, __u32 kind, __u32 minor)
{
  switch (kind) {
  case VG_POL_NODE_CTL:
  case VG_POL_NODE_MODESET:
  case VG_POL_NODE_UVM: return (cg->gpu_flags & VG_POL_GPU_ANY) != 0;
  case VG_POL_NODE_GPU: return (cg->gpu_minors[(minor >> 6) & 3] >> (minor & 63)) & 1;
  }
  return 0;
}

SEC("cgroup/dev")
int vg_dev_policy(struct bpf_cgroup_dev_ctx *ctx)
{
  if ((ctx->access_type & 0xffff) != VG_DEVCG_DEV_CHAR)
    return 1;
  const __u32 kind = node_kind(ctx->major, ctx->minor);
  if (!kind)
    return 1;
  __u64 cand = 0;
  const struct vg_pol_cg *cg = vg_pol_cgroup(vg_pol.device, &cand);
  if (!cg)
    return 1;
  struct vg_pol_facts f = {};
  f.comm_bits = vg_pol_comm_bits(cand);
  f.kind = kind;
  f.allowed = node_allowed(cg, kind, ctx->minor);
  f.mknod = ((ctx->access_type >> 16) & VG_DEVCG_ACC_MKNOD) != 0;
  if (vg_pol_match(cand, &f) < 0)
    return 1;
  if (!f.mknod) {
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct vg_pol_refusal r = {
        .major = ctx->major, .minor = ctx->minor, .ts_ns = bpf_ktime_get_ns()};
    bpf_map_update_elem(&pol_refused, &tid, &r, BPF_ANY);
  }
  return 0;
}

SEC("cgroup/sock_create")
int vg_sock_policy(struct bpf_sock *sk)
{
  __u64 cand = 0;
  if (!vg_pol_cgroup(vg_pol.sock, &cand))
    return 1;
  struct vg_pol_facts f = {};
  f.comm_bits = vg_pol_comm_bits(cand);
  f.family = sk->family;
  f.type = sk->type;
  return vg_pol_match(cand, &f) < 0;
}
