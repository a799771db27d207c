/* Prevention: the maps user space fills from the rules whose action is
 * enforced (engine/policy, engine/sensor/policy_maps.cpp), and the judgement
 * the hooks share (bpf/shared/events.h, "Prevention", has the records).
 *
 * Every judgement starts from the current task's cgroup: a cgroup without an
 * entry in pol_cgroup (the host, vigil, the runtime, a container whose pod is
 * not known yet) is never refused, and a hook whose slots are all clear costs
 * one load of vg_pol. Refusals are counted per slot (pol_refusals).
 * Included by the programs that judge: policy.bpf.c (devices, sockets),
 * net.bpf.c (connect, sendmsg), proc.bpf.c (exec: comm, memfd, upper layer,
 * the files denied by identity, pol_exe, and the denied build-ids,
 * pol_buildid); each map is __weak so that the objects link with one copy. */
#ifndef VIGIL_BPF_PROGS_POLICY_BPF_H
#define VIGIL_BPF_PROGS_POLICY_BPF_H

#include "bpf/progs/helpers.bpf.h"
#include <bpf/bpf_endian.h>

#define VG_EPERM 1
#define VG_SIGKILL 9

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u64);
  __type(value, struct vg_pol_cg);
} pol_cgroup SEC(".maps") __weak;

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, VG_POL_RULES);
  __type(key, __u32);
  __type(value, struct vg_pol_rule);
} pol_rules SEC(".maps") __weak;

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct vg_pol_comm);
  __type(value, __u64);
} pol_comm SEC(".maps") __weak;

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u32);
  __type(value, __u64);
} pol_ports SEC(".maps") __weak;

struct {
  __uint(type, BPF_MAP_TYPE_LPM_TRIE);
  __uint(max_entries, 16384);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct vg_pol_net4);
  __type(value, __u64);
} pol_net4 SEC(".maps") __weak;

struct {
  __uint(type, BPF_MAP_TYPE_LPM_TRIE);
  __uint(max_entries, 16384);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct vg_pol_net6);
  __type(value, __u64);
} pol_net6 SEC(".maps") __weak;

/* Program files denied by identity (user space adds them once identified). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct vg_pol_exe_key);
  __type(value, struct vg_pol_exe_val);
} pol_exe SEC(".maps") __weak;

/* Denied ELF build-ids (the kernel's form: the note's bytes, zero-padded to
 * 20), read by the kernel at exec for a program that starts in its own file. */
struct vg_pol_buildid_key {
  __u8 id[sizeof(((struct bpf_stack_build_id *)0)->build_id)];
};
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct vg_pol_buildid_key);
  __type(value, __u64);
} pol_buildid SEC(".maps") __weak;

/* Device refusals by thread, for the open's exit (fd/open.bpf.c). */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __type(value, struct vg_pol_refusal);
} pol_refused SEC(".maps") __weak;

/* Refusals (and exec kills) per slot. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, VG_POL_RULES);
  __type(key, __u32);
  __type(value, __u64);
} pol_refusals SEC(".maps") __weak;

struct vg_pol_knobs vg_pol SEC(".data.policy") __weak = {};
/* The slots with a build-id in pol_buildid: the exec program reads the
 * program's build-id only for them. */
__u64 vg_pol_buildid_slots SEC(".data.policy") __weak = 0;

/* What a hook knows of the call it judges. */
struct vg_pol_facts {
  __u64 comm_bits; /* slots whose comm set holds the task's comm */
  __u64 net_bits;  /* slots whose destinations hold the call's */
  __u64 port_bits; /* slots whose ports hold the call's */
  __u64 exe_bits;  /* exec: slots whose files hold the program's */
  __u32 kind;      /* device: VG_POL_NODE_* */
  __u32 allowed;   /* device: the container's allocation allows the node */
  __u32 family;    /* socket */
  __u32 type;      /* socket */
  __u16 dport;     /* net, host order */
  __u8 l4;         /* net: VG_L4_TCP, VG_L4_UDP */
  __u8 exec;       /* exec: VG_EXEC_* flags */
  __u8 mknod;      /* device: the access is a mknod (else an open) */
};

/* The container entry of the current task's cgroup, where some slot of
 * `hook_slots` applies to it; NULL otherwise (the usual case: no refusal). */
static __always_inline const struct vg_pol_cg *vg_pol_cgroup(__u64 hook_slots, __u64 *cand)
{
  if (!hook_slots)
    return 0;
  __u64 id = bpf_get_current_cgroup_id();
  const struct vg_pol_cg *cg = bpf_map_lookup_elem(&pol_cgroup, &id);
  if (!cg)
    return 0;
  *cand = cg->rules & hook_slots;
  if (!*cand)
    return 0;
  /* Never pid 1 or vigil, whatever cgroup they sit in. */
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  if (tgid == 1 || tgid == cfg_vigil_tgid)
    return 0;
  return cg;
}

static __always_inline __u64 vg_pol_comm_bits(__u64 cand)
{
  if (!(cand & vg_pol.comm_slots))
    return 0;
  struct vg_pol_comm k = {};
  bpf_get_current_comm(k.comm, sizeof(k.comm));
  __u64 *bits = bpf_map_lookup_elem(&pol_comm, &k);
  return bits ? *bits : 0;
}

/* The slots whose denied files hold the program file (dev, ino), where its
 * change time is still the one user space identified. */
static __always_inline __u64 vg_pol_exe_bits(__u64 cand, __u64 ino, __u32 dev, __s64 ctime_ns)
{
  if (!(cand & vg_pol.exe_slots))
    return 0;
  struct vg_pol_exe_key k = {.ino = ino, .dev = dev};
  const struct vg_pol_exe_val *v = bpf_map_lookup_elem(&pol_exe, &k);
  return v && v->ctime_ns == ctime_ns ? v->slots : 0;
}

/* The slots whose denied build-ids hold the program's, read at exec by the
 * kernel's own ELF note parser: the build-id of the file mapped at the user
 * instruction pointer, from the page cache (the kernel just read the file's
 * headers), so a copy or a renamed file is judged at its first exec. Only for
 * a program that starts in its own code (statically linked): one that starts
 * in its interpreter (ld.so) would give the interpreter's build-id, so it is
 * left to pol_exe, once identified. Needs bpf_task_pt_regs (5.15+). */
static __always_inline __u64 vg_pol_buildid_bits(void *ctx, __u64 cand)
{
  if (!(cand & vg_pol_buildid_slots))
    return 0;
  if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs))
    return 0;
  struct task_struct *t = bpf_get_current_task_btf();
  struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
  struct mm_struct *mm = t->mm;
  if (!regs || !mm)
    return 0;
  __u64 ip = PT_REGS_IP_CORE(regs);
  if (ip < mm->start_code || ip >= mm->end_code)
    return 0;
  struct bpf_stack_build_id b = {};
  long n = bpf_get_stack(ctx, &b, sizeof(b), BPF_F_USER_STACK | BPF_F_USER_BUILD_ID);
  if (n < (long)sizeof(b) || b.status != BPF_STACK_BUILD_ID_VALID)
    return 0;
  const __u64 *bits = bpf_map_lookup_elem(&pol_buildid, b.build_id);
  return bits ? *bits & cand : 0;
}

/* Does slot i's rule hold for the call? The hook is the rule's own (user
 * space puts a slot in one hook's set only). */
static __always_inline int vg_pol_holds(const struct vg_pol_rule *r, __u64 bit,
                                        const struct vg_pol_facts *f)
{
  if ((r->flags & VG_POLR_COMM) &&
      ((f->comm_bits & bit) != 0) == ((r->flags & VG_POLR_COMM_NEG) != 0))
    return 0;
  switch (r->hook) {
  case VG_POL_DEVICE:
    if (!(r->flags & (f->mknod ? VG_POLR_MKNOD : VG_POLR_OPEN)))
      return 0;
    if (!(r->kinds & f->kind))
      return 0;
    if ((r->flags & VG_POLR_NOT_ALLOWED) && f->allowed)
      return 0;
    return 1;
  case VG_POL_NET:
    if ((r->flags & VG_POLR_NET) &&
        ((f->net_bits & bit) != 0) == ((r->flags & VG_POLR_NET_NEG) != 0))
      return 0;
    if ((r->flags & VG_POLR_PORTS) &&
        ((f->port_bits & bit) != 0) == ((r->flags & VG_POLR_PORTS_NEG) != 0))
      return 0;
    if ((r->flags & VG_POLR_TCP) && f->l4 != VG_L4_TCP)
      return 0;
    if ((r->flags & VG_POLR_UDP) && f->l4 != VG_L4_UDP)
      return 0;
    return 1;
  case VG_POL_SOCK:
    if (r->families && (f->family >= 32 || !(r->families & (1u << f->family))))
      return 0;
    if (r->types && (f->type >= 32 || !(r->types & (1u << f->type))))
      return 0;
    return 1;
  case VG_POL_EXEC:
    if ((r->flags & VG_POLR_MEMFD) && !(f->exec & VG_EXEC_MEMFD))
      return 0;
    if ((r->flags & VG_POLR_UPPER) && !(f->exec & VG_EXEC_UPPER))
      return 0;
    if ((r->flags & VG_POLR_EXE) && !(f->exe_bits & bit))
      return 0;
    return 1;
  }
  return 0;
}

/* The first slot of `cand` whose rule holds, counted; -1 when none does. */
static __always_inline int vg_pol_match(__u64 cand, const struct vg_pol_facts *f)
{
  for (__u32 i = 0; i < VG_POL_RULES; i++) {
    const __u64 bit = 1ULL << i;
    if (!(cand & bit))
      continue;
    __u32 slot = i;
    const struct vg_pol_rule *r = bpf_map_lookup_elem(&pol_rules, &slot);
    if (!r || !vg_pol_holds(r, bit, f))
      continue;
    __u64 *n = bpf_map_lookup_elem(&pol_refusals, &slot);
    if (n)
      *n += 1;
    return (int)i;
  }
  return -1;
}

/* A connect or unconnected send from a container: refused (1) when an
 * enforced rule's destinations hold it. An IPv4-mapped IPv6 address is
 * judged as the IPv4 address. */
static __always_inline int vg_pol_refuse_dest(struct bpf_sock_addr *ctx, int v6)
{
  __u64 cand = 0;
  if (!vg_pol_cgroup(vg_pol.net, &cand))
    return 0;
  struct vg_pol_facts f = {};
  f.comm_bits = vg_pol_comm_bits(cand);
  f.dport = bpf_ntohs((__u16)ctx->user_port);
  f.l4 = ctx->type == SOCK_STREAM ? VG_L4_TCP : ctx->type == SOCK_DGRAM ? VG_L4_UDP : 0;
  __u32 a4 = 0;
  int is4 = !v6;
  if (v6) {
    if (ctx->user_ip6[0] == 0 && ctx->user_ip6[1] == 0 && ctx->user_ip6[2] == bpf_htonl(0xffff)) {
      a4 = ctx->user_ip6[3];
      is4 = 1;
    }
  } else {
    a4 = ctx->user_ip4;
  }
  __u64 *bits;
  if (is4) {
    struct vg_pol_net4 k = {.prefixlen = 32};
    __builtin_memcpy(k.addr, &a4, 4);
    bits = bpf_map_lookup_elem(&pol_net4, &k);
  } else {
    struct vg_pol_net6 k = {.prefixlen = 128};
    __u32 *d = (__u32 *)k.addr;
    d[0] = ctx->user_ip6[0];
    d[1] = ctx->user_ip6[1];
    d[2] = ctx->user_ip6[2];
    d[3] = ctx->user_ip6[3];
    bits = bpf_map_lookup_elem(&pol_net6, &k);
  }
  f.net_bits = bits ? *bits : 0;
  __u32 port = f.dport;
  __u64 *pbits = bpf_map_lookup_elem(&pol_ports, &port);
  f.port_bits = pbits ? *pbits : 0;
  return vg_pol_match(cand, &f) >= 0;
}

#endif /* VIGIL_BPF_PROGS_POLICY_BPF_H */
