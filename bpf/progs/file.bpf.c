// SPDX-License-Identifier: GPL-2.0
/* Syscalls on file descriptors: opens (of character devices and of paths the
 * rules ask about), ioctls on NVIDIA device fds, and connect() with the socket
 * behind its fd. Per-syscall tracepoints: only these syscalls pay (DESIGN.md
 * "Pick hooks by what they cost"), never raw_syscalls. They share this object
 * because they read the fd table in place through bpf_rdonly_cast, which one
 * object only may reference (vigil.bpf.h). */
#include "bpf/progs/vigil.bpf.h"
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "GPL";

#define NV_MAJOR 195
#define NV_ESC_RM_CONTROL 0x2A
#define NV_ESC_RM_ALLOC 0x2B
#define NV_ESC_IOCTL_XFER_CMD 0xD3

/* The NVIDIA escape layer's XFER wrapper: the real command, size and pointer. */
struct vg_xfer {
  __u32 cmd;
  __u32 size;
  __u64 ptr;
};

VG_DEFINE_READ_USER(read_user_u32, __u32)
VG_DEFINE_READ_USER(read_user_u64, __u64)
VG_DEFINE_READ_USER(read_user_xfer, struct vg_xfer)

/* ---------------- open ---------------- */

struct vg_open_args {
  const char *filename;
  __u32 flags;
  __u32 mode;
};

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, struct vg_open_args);
} pending_open SEC(".maps");

static __always_inline int open_enter(const char *filename, __u32 flags, __u32 mode)
{
  if (vg_is_self())
    return 0;
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct vg_open_args a = {.filename = filename, .flags = flags, .mode = mode};
  if (bpf_map_update_elem(&pending_open, &tid, &a, BPF_ANY) != 0)
    vg_drop(VG_DROP_MAP_FULL);
  return 0;
}

/* Does the user-given path at buf[off] start with one of cfg_prefix[0, n)? */
static __always_inline int match_prefix(const __u8 *buf, __u32 off, __u32 n)
{
  const __u8 *p = buf + (off & VG_OFF_MASK);
  for (int i = 0; i < VG_OPEN_PREFIXES; i++) {
    if (i >= n)
      return 0;
    __u32 len = cfg_prefix_len[i];
    int ok = len > 0;
    for (int j = 0; j < VG_PREFIX_LEN; j++) {
      if (j >= len)
        break;
      if (p[j] != (__u8)cfg_prefix[i][j]) {
        ok = 0;
        break;
      }
    }
    if (ok)
      return 1;
  }
  return 0;
}

/* A first look at a path before reading all of it: can it start with one of
 * cfg_prefix[0, n), judging by its first 8 bytes? Most opens are of paths no
 * rule asks about, and one 8-byte read rejects them where the full string
 * read costs as much as the rest of the program. Where those 8 bytes cannot
 * be read (a path shorter than 8 bytes at the very end of a mapping), the
 * full read decides. */
static __always_inline int prefix_may_match(const char *filename, __u32 n)
{
  __u64 w = 0;
  if (read_user_u64(&w, filename) != 0)
    return 1;
  for (int i = 0; i < VG_OPEN_PREFIXES; i++) {
    if (i >= n)
      return 0;
    __u32 len = cfg_prefix_len[i];
    __u64 mask = len >= 8 ? ~0ULL : (1ULL << (len * 8)) - 1;
    __u64 head = *(const volatile __u64 *)cfg_prefix[i];
    if (len > 0 && ((w ^ head) & mask) == 0)
      return 1;
  }
  return 0;
}

/* Is dentry d's name the last component of one of the whole paths (dir 0)
 * or directories (dir 1)? The length is looked up first (one bit test), so
 * most names are never read, and a name read is compared only with the
 * entries of its length. */
static __always_inline int name_may_match(struct dentry *d, int dir)
{
  __u32 len = VG_KREAD(d, struct dentry, d_name.len);
  if (len >= 64 || !(((dir ? cfg_dir_len_mask : cfg_leaf_len_mask) >> len) & 1))
    return 0;
  __u32 lo = dir ? cfg_dir_lo[len & 63] : cfg_whole_lo[len & 63];
  __u32 hi = dir ? cfg_dir_hi[len & 63] : cfg_whole_hi[len & 63];
  __u64 w[2];
  vg_dentry_name_head(d, len, w);
  for (int k = 0; k < VG_OPEN_PREFIXES; k++) {
    __u32 i = lo + k;
    if (i >= hi || i >= VG_OPEN_PREFIXES)
      break;
    if (cfg_leaf_head[i][0] == w[0] && cfg_leaf_head[i][1] == w[1])
      return 1;
  }
  return 0;
}

/* The walk's state lives in a per-CPU map, as vg_put_dpath's does: the
 * verifier then sees unknown scalars at each turn of the loop instead of
 * pointers it must track one by one, and checks the loop in linear time. */
struct vg_top_walk {
  __u64 d, vm, root_d, root_m;
  __u64 c[VG_RP_COMPS];
  __u32 n;
  __s32 result;
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct vg_top_walk);
} top_walk SEC(".maps");

/* The first components of an open file's path, as vg_put_dpath walks it
 * (crossing mounts, up to the task's root or the real root): w->c[k] is the
 * dentry of component k (0: the one just below the root). Returns w with
 * w->result the number of components the path has (at most
 * VG_DPATH_DEPTH), or -1 where the walk cannot place the file (deeper than
 * that, or a dentry outside any tree); NULL without the map. */
static __always_inline struct vg_top_walk *vg_path_top(struct task_struct *t, struct file *f)
{
  __u32 zero = 0;
  struct vg_top_walk *w = bpf_map_lookup_elem(&top_walk, &zero);
  if (!w)
    return 0;
  if (!t)
    t = (struct task_struct *)bpf_get_current_task();
  struct fs_struct *fs = VG_KREAD(t, struct task_struct, fs);
  w->root_d = (__u64)VG_KREAD(fs, struct fs_struct, root.dentry);
  w->root_m = (__u64)VG_KREAD(fs, struct fs_struct, root.mnt);
  w->d = (__u64)VG_KREAD(f, struct file, f_path.dentry);
  w->vm = (__u64)VG_KREAD(f, struct file, f_path.mnt);
  w->c[0] = w->c[1] = w->c[2] = w->c[3] = 0;
  w->n = 0;
  w->result = -1;
  const __u64 mnt_off = bpf_core_field_offset(struct mount, mnt);
  for (int i = 0; i < VG_DPATH_DEPTH + 8; i++) {
    __u64 d = w->d, vm = w->vm;
    if (!d)
      break;
    if (d == w->root_d && vm == w->root_m) {
      w->result = w->n;
      break;
    }
    __u64 parent = (__u64)VG_KREAD(d, struct dentry, d_parent);
    __u64 mnt_root = (__u64)VG_KREAD(vm, struct vfsmount, mnt_root);
    if (d == mnt_root || d == parent) {
      __u64 m = vm - mnt_off;
      __u64 mp = (__u64)VG_KREAD(m, struct mount, mnt_parent);
      if (!mp || mp == m || d != mnt_root) {
        if (d == mnt_root)
          w->result = w->n; /* the real root; otherwise a detached dentry */
        break;
      }
      w->d = (__u64)VG_KREAD(m, struct mount, mnt_mountpoint);
      w->vm = mp + mnt_off;
      continue;
    }
    if (w->n >= VG_DPATH_DEPTH)
      break;
    w->c[3] = w->c[2];
    w->c[2] = w->c[1];
    w->c[1] = w->c[0];
    w->c[0] = d;
    w->n++;
    w->d = parent;
  }
  return w;
}

/* Does the resolved path of open file f start with one of the resolved
 * prefixes cfg_prefix[cfg_n_given, end), whose first components' lengths are
 * the bits of len_mask? 1 yes, 0 no, -1 where the walk cannot place the file
 * (judge it by the path as given). No user memory is read and no string is
 * compared: the first components' lengths and first 16 bytes, from the
 * dentries. */
static __always_inline int resolved_prefix_match(struct task_struct *t, struct file *f, __u32 end,
                                                 __u64 len_mask)
{
  struct vg_top_walk *tw = vg_path_top(t, f);
  if (!tw)
    return -1;
  int depth = tw->result;
  if (depth < 0)
    return -1;
  if (depth == 0)
    return cfg_rp_maxcomp == 0; /* the root itself: only "/" starts it */
  __u32 len[VG_RP_COMPS] = {};
  __u64 w[VG_RP_COMPS][2] = {};
  for (int k = 0; k < VG_RP_COMPS; k++) {
    if (k >= depth || k >= cfg_rp_maxcomp)
      break;
    struct dentry *d = (struct dentry *)tw->c[k & (VG_RP_COMPS - 1)];
    len[k] = VG_KREAD(d, struct dentry, d_name.len);
    if (k == 0 && !((len_mask >> (len[0] < 63 ? len[0] : 63)) & 1))
      return 0; /* no prefix's first component is that long: most opens end here */
    vg_dentry_name_head(d, len[k], w[k]);
  }
  for (int i = 0; i < VG_OPEN_PREFIXES; i++) {
    if (i >= end)
      break;
    if (i < cfg_n_given)
      continue;
    __u32 nc = cfg_rp_ncomp[i];
    if (nc > (__u32)depth)
      continue;
    int ok = 1;
    for (int k = 0; k < VG_RP_COMPS; k++) {
      if (k >= nc)
        break;
      __u32 cl = cfg_rp_clen[i][k];
      if (cfg_rp_cpartial[i][k] ? len[k] < cl : len[k] != cl) {
        ok = 0;
        break;
      }
      if (((w[k][0] ^ cfg_rp_chead[i][k][0]) & cfg_rp_cmask[i][k][0]) ||
          ((w[k][1] ^ cfg_rp_chead[i][k][1]) & cfg_rp_cmask[i][k][1])) {
        ok = 0;
        break;
      }
    }
    if (ok)
      return 1;
  }
  return 0;
}

/* Where each open syscall keeps its arguments. */
enum vg_open_kind { VG_SYS_OPENAT, VG_SYS_OPENAT2, VG_SYS_OPEN };

/* The open's arguments, from task t's saved user registers. */
static __always_inline void open_regs_args(struct task_struct *t, enum vg_open_kind kind,
                                           struct vg_open_args *a)
{
  struct pt_regs *regs = vg_task_syscall_regs(t);
  if (!regs)
    return;
  if (kind == VG_SYS_OPEN) {
    a->filename = (const char *)PT_REGS_PARM1_SYSCALL(regs);
    a->flags = (__u32)PT_REGS_PARM2_SYSCALL(regs);
    a->mode = (__u32)PT_REGS_PARM3_SYSCALL(regs);
  } else {
    a->filename = (const char *)PT_REGS_PARM2_SYSCALL(regs);
    if (kind == VG_SYS_OPENAT) {
      a->flags = (__u32)PT_REGS_PARM3_SYSCALL(regs);
      a->mode = (__u32)PT_REGS_PARM4_SYSCALL(regs);
    } else {
      struct open_how how = {};
      bpf_probe_read_user(&how, sizeof(how.flags) + sizeof(how.mode), (void *)PT_REGS_PARM3_SYSCALL(regs));
      a->flags = (__u32)how.flags;
      a->mode = (__u32)how.mode;
    }
  }
}

/* Where the exit program cannot read the registers (enter/exit pairs): the
 * arguments the enter program kept. Returns 0 when there is nothing to
 * report. */
static __always_inline int open_saved_args(long ret, struct vg_open_args *a)
{
  if (cfg_n_prefixes) {
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct vg_open_args *ap = bpf_map_lookup_elem(&pending_open, &tid);
    if (!ap)
      return 0;
    *a = *ap;
    bpf_map_delete_elem(&pending_open, &tid);
    return 1;
  }
  /* No path literals: the enter programs are not attached, only successful
   * opens of character devices are reported, and the flags come from the
   * open file. */
  return ret >= 0 && !vg_is_self();
}

static __always_inline int open_exit(enum vg_open_kind kind, long ret)
{
  /* The current task, fetched once (kernels before 5.11 have no BTF task:
   * there the enter programs and helper reads are used). */
  struct task_struct *t = 0;
  if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_current_task_btf))
    t = bpf_get_current_task_btf();
  const int args_at_exit = t && vg_args_at_exit();
  struct vg_open_args a = {};
  int have_args = 0;
  if (args_at_exit) {
    /* Without path literals only successful opens of character devices are
     * reported: a failed open is dropped before any work. The arguments are
     * read from the registers only once they are needed. */
    if ((ret < 0 && !cfg_n_prefixes) || (__u32)t->tgid == cfg_vigil_tgid)
      return 0;
  } else {
    if (!open_saved_args(ret, &a))
      return 0;
    have_args = 1;
  }

  __u8 oflags = 0, ftype = 0;
  __u32 major = 0, minor = 0;
  struct file *f = 0;
  if (ret >= 0) {
    f = t ? vg_task_fd_file(t, (int)ret) : vg_fd_file((int)ret);
    if (f) {
      umode_t m = 0;
      dev_t rdev = 0;
      vg_file_dev(f, &m, &rdev);
      if ((m & S_IFMT) == S_IFCHR)
        oflags |= VG_OPEN_CHR;
      else if ((m & S_IFMT) == S_IFBLK)
        oflags |= VG_OPEN_BLK;
      else if ((m & S_IFMT) == S_IFDIR)
        ftype = VG_OPEN_DIR;
      else if ((m & S_IFMT) == S_IFIFO)
        ftype = VG_OPEN_FIFO;
      else if ((m & S_IFMT) == S_IFREG)
        ftype = VG_OPEN_REG;
      if (oflags) {
        major = rdev >> 20;
        minor = rdev & 0xfffff;
      }
    }
  }

  /* An open that is not of a character device is sent only where a rule's
   * literal path may match it. A successful one is judged as fd.name will
   * hold it, by the file it opened: its name against the whole paths' last
   * components, the first components of its resolved path against the
   * resolved prefixes (both from kernel memory; user space compares the whole
   * path), and the path as given against the given prefixes. A failed open,
   * or one whose resolved path does not end in a name of this file, by the
   * path as given against every literal; one the walk cannot place, against
   * every prefix. n_given: how many of cfg_prefix the given path is compared
   * with (0: sent by device, by name or by its resolved path). */
  __u32 n_given = 0;
  if (!(oflags & VG_OPEN_CHR)) {
    if (!cfg_n_prefixes)
      return 0;
    struct dentry *parent = 0;
    struct dentry *leaf = 0;
    if (f)
      leaf = cfg_n_prefixes > cfg_n_whole_end ? vg_file_leaf_parent(f, &parent) : vg_file_leaf(f);
    if (!leaf ||
        !((cfg_n_whole_end > cfg_n_path_prefixes && name_may_match(leaf, 0)) ||
          (parent && name_may_match(parent, 1)))) {
      int by_path = 0; /* sent by its resolved path */
      n_given = leaf ? cfg_n_given : cfg_n_prefixes;
      if (leaf && cfg_n_path_prefixes > cfg_n_given) {
        /* An open not for writing is judged by the prefixes for any open
         * only, and where there are none costs no walk: most opens read. */
        __u32 end = cfg_n_path_prefixes;
        __u64 len_mask = cfg_rp_top_len_mask;
        if (cfg_n_any_prefixes < cfg_n_path_prefixes) {
          __u32 acc = VG_KREAD(f, struct file, f_flags) & 3;
          if (acc != 1 && acc != 2) {
            end = cfg_n_any_prefixes;
            len_mask = cfg_rp_any_len_mask;
          }
        }
        int r = end > cfg_n_given ? resolved_prefix_match(t, f, end, len_mask) : 0;
        if (r > 0)
          by_path = 1;
        else if (r < 0)
          n_given = cfg_n_path_prefixes;
      }
      if (by_path) {
        n_given = 0;
      } else {
        if (!n_given)
          return 0;
        if (!have_args) {
          open_regs_args(t, kind, &a);
          have_args = 1;
        }
        if (!prefix_may_match(a.filename, n_given))
          return 0;
      }
    }
  }
  if (!have_args)
    open_regs_args(t, kind, &a);
  if (!a.filename && f)
    a.flags = BPF_CORE_READ(f, f_flags);

  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return 0;
  struct vg_open *e = (struct vg_open *)buf;
  __u32 off = sizeof(*e);
  __u8 trunc = 0;
  __u32 n = vg_put_user_str(buf, off, a.filename, VG_PATH_MAX, &trunc);
  if (n_given && (n == 0 || !match_prefix(buf, off, n_given)))
    return 0;
  vg_fill_hdr(&e->hdr, VG_OPEN);
  e->flags = a.flags;
  e->mode = a.mode;
  e->result = ret;
  e->dev_major = major;
  e->dev_minor = minor;
  e->path_len = n;
  off += n;
  n = 0;
  if (f)
    n = vg_put_dpath(buf, off, BPF_CORE_READ(f, f_path.dentry), BPF_CORE_READ(f, f_path.mnt),
                     &trunc);
  e->fpath_len = n;
  off += n;
  e->oflags = oflags | ftype | (trunc ? VG_OPEN_PATH_TRUNC : 0);
  e->pad0[0] = e->pad0[1] = e->pad0[2] = 0;
  vg_submit(buf, off);
  return 0;
}

/* The enter programs are attached only where the exit programs cannot read
 * the arguments themselves (cfg_args_at_exit 0) and path prefixes are in use. */
SEC("tracepoint/syscalls/sys_enter_openat")
int vg_enter_openat(struct trace_event_raw_sys_enter *ctx)
{
  return open_enter((const char *)ctx->args[1], (__u32)ctx->args[2], (__u32)ctx->args[3]);
}

SEC("tracepoint/syscalls/sys_exit_openat")
int vg_exit_openat(struct trace_event_raw_sys_exit *ctx)
{
  return open_exit(VG_SYS_OPENAT, ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_openat2")
int vg_enter_openat2(struct trace_event_raw_sys_enter *ctx)
{
  struct open_how how = {};
  bpf_probe_read_user(&how, sizeof(how.flags) + sizeof(how.mode), (void *)ctx->args[2]);
  return open_enter((const char *)ctx->args[1], (__u32)how.flags, (__u32)how.mode);
}

SEC("tracepoint/syscalls/sys_exit_openat2")
int vg_exit_openat2(struct trace_event_raw_sys_exit *ctx)
{
  return open_exit(VG_SYS_OPENAT2, ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_open")
int vg_enter_open(struct trace_event_raw_sys_enter *ctx)
{
  return open_enter((const char *)ctx->args[0], (__u32)ctx->args[1], (__u32)ctx->args[2]);
}

SEC("tracepoint/syscalls/sys_exit_open")
int vg_exit_open(struct trace_event_raw_sys_exit *ctx)
{
  return open_exit(VG_SYS_OPEN, ctx->ret);
}

/* ---------------- ioctl on NVIDIA fds ---------------- */

#ifndef EEXIST
#define EEXIST 17 /* what a BPF_NOEXIST insert of a present key returns, negated */
#endif

struct vg_pending_ioctl {
  struct vg_ioctl rec;
  __u64 arg;        /* user pointer to the parameter block (after XFER unwrap) */
  __u32 status_off; /* where the RM status word sits, 0 = none */
  __u32 pad;
};

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __type(value, struct vg_pending_ioctl);
} pending_ioctl SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, struct vg_seen_key);
  __type(value, __u8);
} gpu_seen SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct vg_pending_ioctl);
} ioctl_scratch SEC(".maps");

/* RM control commands already reported for a process: each distinct command
 * a process issues is sent once, so management commands (clocks, power, ECC,
 * reset, MIG) are seen without a list of them in the kernel. The process's
 * start time is in the key, as in vg_seen_key: a later process with the same
 * pid has its own first uses and commands. */
struct vg_ctl_key {
  __u32 pid;
  __u32 cmd;
  __u64 start;
};

/* The start time of the current task's process (its group leader's). */
static __always_inline __u64 proc_start(struct task_struct *t)
{
  if (t) {
    struct task_struct *leader = VG_KREAD(t, struct task_struct, group_leader);
    return VG_KREAD(leader, struct task_struct, start_time);
  }
  struct task_struct *c = (struct task_struct *)bpf_get_current_task();
  return BPF_CORE_READ(c, group_leader, start_time);
}

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 65536);
  __type(key, struct vg_ctl_key);
  __type(value, __u8);
} ctl_seen SEC(".maps");

/* 1: each CPU keeps the last usage key it counted (ioctl_slot below). Set by
 * user space where it can run vg_ioctl_slot_drain on every CPU (kernels
 * 5.10+); 0: every NVIDIA ioctl is counted in gpu_usage directly. */
const volatile __u32 cfg_ioctl_slot __weak = 0;

/* The last usage key counted on this CPU, and the calls of it counted here
 * since that are not in gpu_usage yet. NVIDIA ioctls mostly repeat the
 * previous one's process, device and escape number (a CUDA process issuing RM
 * controls on /dev/nvidiactl one after another): a repeat is counted here, a
 * per-CPU array slot the verifier inlines, instead of through a hash lookup
 * in gpu_usage. The count moves to gpu_usage when the CPU counts another key,
 * and when user space runs vg_ioctl_slot_drain on this CPU before each usage
 * report, so every report has every call made before it.
 *
 * Who writes a slot: the ioctl programs on its CPU, which never overlap each
 * other (syscall tracepoints run their programs with preemption disabled and
 * one at a time per CPU), and vg_ioctl_slot_drain, which user space runs on
 * that CPU, from an interrupt when the CPU is not its own: it may land
 * between any two instructions of an ioctl program, which therefore marks the
 * slot `busy` while it changes it; the drain leaves a busy slot alone, and
 * user space asks again. (struct vg_ioctl_slot: bpf/shared/events.h.) */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct vg_ioctl_slot);
} ioctl_slot SEC(".maps");

/* Adds `n` calls of key `k` to gpu_usage; 0, or -1 where the map refused. */
static __always_inline int usage_add(const struct vg_usage_key *k, __u64 n)
{
  struct vg_usage_val *uv = bpf_map_lookup_elem(&gpu_usage, k);
  if (!uv) {
    struct vg_usage_val v = {.count = n};
    if (bpf_map_update_elem(&gpu_usage, k, &v, BPF_NOEXIST) == 0)
      return 0;
    uv = bpf_map_lookup_elem(&gpu_usage, k); /* another CPU added it first */
    if (!uv)
      return -1;
  }
  __sync_fetch_and_add(&uv->count, n);
  return 0;
}

/* This CPU's slot now counts key `k` (whose call at hand gpu_usage counted),
 * with control command `ctl` where `is_ctl`; what the slot held moves to
 * gpu_usage. */
static __always_inline void slot_take(struct vg_ioctl_slot *s, const struct vg_usage_key *k,
                                      __u32 ctl, int is_ctl, __u32 start_lo)
{
  s->busy = 1;
  barrier();
  struct vg_usage_key old = s->key;
  __u64 n = s->count;
  s->key = *k;
  s->start_lo = start_lo;
  s->count = 0;
  s->last_ctl = ctl;
  s->ctl_set = is_ctl;
  barrier();
  s->busy = 0;
  if (n && old.pid && usage_add(&old, n) != 0)
    vg_drop(VG_DROP_MAP_FULL);
}

/* Allocations sent one by one (everything else is only counted): compute and
 * channel classes (a CUDA context exists), and the classes a security rule
 * needs to see: GPU debugger, profilers, MIG partitions/sessions, MPS.
 * Keep in sync with event::nvidia::class_kind (engine/event/nvidia.cpp). */
static __always_inline int is_sent_class(__u32 cls)
{
  switch (cls) {
  /* compute */
  case 0xC5C0: case 0xC6C0: case 0xC7C0: case 0xC9C0: case 0xCBC0: case 0xCDC0: case 0xCEC0:
  case 0x900E: /* MPS_COMPUTE */
  /* channel GPFIFO */
  case 0xC36F: case 0xC46F: case 0xC56F: case 0xC86F: case 0xC96F: case 0xCA6F:
  /* debugger, profilers, counter collection */
  case 0x83DE: case 0x90CC: case 0xB1CC: case 0xB2CC: case 0xCBCA:
  /* MIG: GPU/compute instance subscriptions, config and monitor sessions */
  case 0xC637: case 0xC638: case 0xC639: case 0xC640:
    return 1;
  }
  return 0;
}

/* UVM tools calls that read or write another process's GPU memory
 * (UVM_TOOLS_READ_PROCESS_MEMORY 62, UVM_TOOLS_WRITE_PROCESS_MEMORY 63). */
static __always_inline int is_sent_uvm(__u32 cmd)
{
  return cmd == 62 || cmd == 63;
}

/* Classifies an ioctl on fd `fd` (open file `f`) of the current task:
 * not on an NVIDIA device → 0; counted in gpu_usage → 0; to be sent one by
 * one → 1 with rec (all but the header), *argp (the parameter block, after the
 * XFER unwrap) and *status_off (where the RM status word sits, 0: none)
 * filled. `t` is the current task where the caller has it (its tgid is read
 * in place), NULL otherwise. Runs on every ioctl of every process: a
 * non-device fd costs a few direct loads; the NVIDIA hot path (a command the
 * process already used in this interval) one user read and one map lookup
 * more. */
static __always_inline int ioctl_decode(struct task_struct *t, struct file *f, int fd, __u32 cmd,
                                        __u64 arg, struct vg_ioctl *rec, __u64 *argp,
                                        __u32 *status_off)
{
  if (!f)
    return 0;
  umode_t m = 0;
  dev_t rdev = 0;
  vg_file_dev(f, &m, &rdev);
  if ((m & S_IFMT) != S_IFCHR)
    return 0;
  __u32 major = rdev >> 20, minor = rdev & 0xfffff;
  int uvm = 0;
  if (major == NV_MAJOR) {
    uvm = 0;
  } else if (cfg_uvm_major && major == cfg_uvm_major) {
    uvm = 1;
  } else {
    /* Fallback for stand-in nodes: the device file's name starts with "nvidia". */
    int named = vg_file_nvidia_name(f);
    if (!named)
      return 0;
    uvm = named == 2;
  }

  __u32 nr = cmd & 0xff;
  __u32 size = (cmd >> 16) & 0x3fff;
  __u8 iflags = uvm ? VG_IOCTL_UVM : 0;
  __u32 rm_class = 0, rm_control = 0, soff = 0;
  if (uvm) {
    nr = cmd; /* UVM numbers are not _IOC encoded */
  } else {
    if (nr == NV_ESC_IOCTL_XFER_CMD) {
      struct vg_xfer x = {};
      if (read_user_xfer(&x, (void *)arg) == 0) {
        nr = x.cmd & 0xff;
        size = x.size;
        arg = x.ptr;
        iflags |= VG_IOCTL_XFER;
      } else {
        vg_drop(VG_DROP_READ_FAIL);
      }
    }
    if (nr == NV_ESC_RM_ALLOC && (size == 32 || size == 48)) {
      if (read_user_u32(&rm_class, (void *)(arg + 12)) != 0)
        vg_drop(VG_DROP_READ_FAIL);
      soff = size == 48 ? 40 : 28;
    } else if (nr == NV_ESC_RM_CONTROL && size == 32) {
      if (read_user_u32(&rm_control, (void *)(arg + 8)) != 0)
        vg_drop(VG_DROP_READ_FAIL);
      soff = 28;
    }
  }

  /* Counted per process / device / command. A key already counted in this
   * usage interval (gpu_usage has it), or the one this CPU counted last (its
   * slot), has been through the first-use check below, and its last control
   * command through the control check: when the call repeats that command
   * (or is not a control) and is not sent, it is done. */
  __u32 pid = t ? (__u32)t->tgid : (__u32)(bpf_get_current_pid_tgid() >> 32);
  if (pid == cfg_vigil_tgid)
    return 0;
  struct vg_usage_key uk = {.pid = pid, .dev = VG_MKDEV(major, minor), .nr = nr, .pad0 = 0};
  int is_ctl = !uvm && nr == NV_ESC_RM_CONTROL && soff;
  int alloc = (nr == NV_ESC_RM_ALLOC && !uvm && is_sent_class(rm_class)) || (uvm && is_sent_uvm(cmd));
  struct vg_ioctl_slot *slot = 0;
  if (cfg_ioctl_slot) {
    __u32 zero = 0;
    slot = bpf_map_lookup_elem(&ioctl_slot, &zero);
  }
  int known = 0, ctl_known = !is_ctl;
  /* The slot outlives its process: the start time tells a later process
   * given the same pid from it. */
  const __u64 start = proc_start(t);
  if (slot && slot->key.pid == pid && slot->key.dev == uk.dev && slot->key.nr == nr &&
      slot->start_lo == (__u32)start) {
    known = 1;
    if (is_ctl)
      ctl_known = slot->ctl_set && slot->last_ctl == rm_control;
    slot->busy = 1;
    barrier();
    slot->count += 1;
    if (is_ctl) {
      slot->last_ctl = rm_control;
      slot->ctl_set = 1;
    }
    barrier();
    slot->busy = 0;
  } else {
    struct vg_usage_val *uv = bpf_map_lookup_elem(&gpu_usage, &uk);
    if (uv) {
      __sync_fetch_and_add(&uv->count, 1);
      known = 1;
      if (is_ctl) {
        ctl_known = uv->last_ctl_set && uv->last_ctl == rm_control;
        uv->last_ctl = rm_control;
        uv->last_ctl_set = 1;
      }
    } else {
      struct vg_usage_val one = {.count = 1, .last_ctl = rm_control, .last_ctl_set = is_ctl};
      if (bpf_map_update_elem(&gpu_usage, &uk, &one, BPF_NOEXIST) != 0) {
        uv = bpf_map_lookup_elem(&gpu_usage, &uk);
        if (uv)
          __sync_fetch_and_add(&uv->count, 1);
        else
          vg_drop(VG_DROP_MAP_FULL);
      }
    }
    if (slot)
      slot_take(slot, &uk, rm_control, is_ctl, (__u32)start);
  }
  if (known && ctl_known && !alloc)
    return 0;

  /* Sent one by one: the first use of a device by a process, the
   * allocations of is_sent_class(), each distinct RM control command once per
   * process, and UVM tools memory access. Everything else is counted. A
   * (process, device) or (process, command) is new only to the CPU whose
   * insert makes its mark: another thread issuing the same call on another
   * CPU at the same moment finds the mark made (-EEXIST). A mark that cannot
   * be made for another reason still lets the call be sent. */
  int first = 0;
  if (!known) {
    struct vg_seen_key sk = {.pid = pid, .dev = VG_MKDEV(major, minor), .start = start};
    __u8 one = 1;
    if (!bpf_map_lookup_elem(&gpu_seen, &sk) &&
        bpf_map_update_elem(&gpu_seen, &sk, &one, BPF_NOEXIST) != -EEXIST) {
      first = 1;
      iflags |= VG_IOCTL_FIRST_USE;
    }
  }
  if (alloc)
    iflags |= VG_IOCTL_ALLOC;
  int new_ctl = 0;
  if (!ctl_known) {
    struct vg_ctl_key ck = {.pid = pid, .cmd = rm_control, .start = start};
    __u8 one = 1;
    if (!bpf_map_lookup_elem(&ctl_seen, &ck) &&
        bpf_map_update_elem(&ctl_seen, &ck, &one, BPF_NOEXIST) != -EEXIST)
      new_ctl = 1;
  }
  if (!first && !alloc && !new_ctl)
    return 0;

  rec->fd = fd;
  rec->cmd = cmd;
  rec->nr = nr;
  rec->dev_major = major;
  rec->dev_minor = minor;
  rec->rm_class = rm_class;
  rec->rm_control = rm_control;
  rec->rm_status = 0;
  rec->result = 0;
  rec->iflags = iflags;
  __builtin_memset(rec->pad0, 0, sizeof(rec->pad0));
  *argp = arg;
  *status_off = soff;
  return 1;
}

/* Sends a decoded ioctl (`rec`, header not yet filled) with the syscall's
 * result and the RM status word the driver wrote back into the parameter
 * block. The scratch buffer is only looked up here, off the counted path. */
static __always_inline void ioctl_send(const struct vg_ioctl *rec, long ret, __u64 arg,
                                       __u32 status_off)
{
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return;
  struct vg_ioctl *e = (struct vg_ioctl *)buf;
  /* The body only: the header is filled here. */
  __builtin_memcpy(&e->fd, &rec->fd, sizeof(*e) - __builtin_offsetof(struct vg_ioctl, fd));
  vg_fill_hdr(&e->hdr, VG_IOCTL);
  e->result = ret;
  if (status_off) {
    __u32 st = 0;
    if (bpf_probe_read_user(&st, sizeof(st), (void *)(arg + (status_off & 63))) == 0) {
      e->rm_status = st;
      e->iflags |= VG_IOCTL_STATUS;
    }
  }
  vg_submit(buf, sizeof(*e));
}

/* Only attached where the exit program cannot read the arguments itself. */
SEC("tracepoint/syscalls/sys_enter_ioctl")
int vg_enter_ioctl(struct trace_event_raw_sys_enter *ctx)
{
  if (vg_is_self())
    return 0;
  __u32 zero = 0;
  struct vg_pending_ioctl *p = bpf_map_lookup_elem(&ioctl_scratch, &zero);
  if (!p)
    return 0;
  int fd = (int)ctx->args[0];
  if (!ioctl_decode(0, vg_fd_file(fd), fd, (__u32)ctx->args[1], ctx->args[2], &p->rec, &p->arg,
                    &p->status_off))
    return 0;
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  if (bpf_map_update_elem(&pending_ioctl, &tid, p, BPF_ANY) != 0)
    vg_drop(VG_DROP_MAP_FULL);
  return 0;
}

SEC("tracepoint/syscalls/sys_exit_ioctl")
int vg_exit_ioctl(struct trace_event_raw_sys_exit *ctx)
{
  struct task_struct *t = bpf_get_current_task_btf();
  struct pt_regs *regs = vg_task_syscall_regs(t);
  if (regs) {
    /* vigil's own ioctls are dropped in ioctl_decode, after the cheap
     * not-an-NVIDIA-fd exits. */
    struct vg_ioctl rec;
    __u64 arg = 0;
    __u32 status_off = 0;
    int fd = (int)PT_REGS_PARM1_SYSCALL(regs);
    if (ioctl_decode(t, vg_task_fd_file(t, fd), fd, (__u32)PT_REGS_PARM2_SYSCALL(regs),
                     PT_REGS_PARM3_SYSCALL(regs), &rec, &arg, &status_off))
      ioctl_send(&rec, ctx->ret, arg, status_off);
    return 0;
  }
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct vg_pending_ioctl *p = bpf_map_lookup_elem(&pending_ioctl, &tid);
  if (!p)
    return 0;
  ioctl_send(&p->rec, ctx->ret, p->arg, p->status_off);
  bpf_map_delete_elem(&pending_ioctl, &tid);
  return 0;
}

/* Moves the calls waiting in this CPU's ioctl_slot into gpu_usage. User space
 * runs it (BPF_PROG_RUN on a chosen CPU: on another CPU than its own, from an
 * interrupt) on each CPU whose slot holds calls, before it reads gpu_usage.
 * 0: done (or nothing to move); 1: it interrupted an ioctl program changing
 * the slot; 2: gpu_usage refused the count (full, or its bucket lock not
 * taken). On 1 and 2 the calls stay in the slot: user space tries again, and
 * what it cannot move now goes in a later report. */
SEC("raw_tp")
int vg_ioctl_slot_drain(void *ctx)
{
  __u32 zero = 0;
  struct vg_ioctl_slot *s = bpf_map_lookup_elem(&ioctl_slot, &zero);
  if (!s)
    return 0;
  if (s->busy)
    return 1;
  __u64 n = s->count;
  if (!n)
    return 0;
  struct vg_usage_key k = s->key;
  if (usage_add(&k, n) != 0)
    return 2;
  s->count = 0;
  return 0;
}

/* ---------------- connect ---------------- */

/* connect() is reported at its exit, with its result, from the socket behind
 * the fd: the kernel's own copy of the destination (and the source address
 * and port it chose), not user memory another thread may have rewritten since.
 * Where the socket holds no destination (the connect failed before setting
 * one) the user's sockaddr says where it was going; an AF_UNIX path is read
 * from the user's sockaddr. One tracepoint per connect and no map: the cgroup
 * connect hooks are attached only to mark sockets whose first bytes a rule
 * wants (net.bpf.c). */

struct vg_connect_args {
  __u64 addr; /* user pointer to the sockaddr */
  __u32 len;
  __s32 fd;
};

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __type(value, struct vg_connect_args);
} pending_connect SEC(".maps");

/* An AF_INET or AF_INET6 sockaddr as user space passed it. */
struct vg_user_sockaddr {
  __u16 family;
  __be16 port;
  __be32 w4;     /* sin_addr; sin6_flowinfo */
  __u8 addr6[16]; /* sin6_addr */
  __u32 scope;
};

struct vg_user_sockaddr4 {
  __u16 family;
  __be16 port;
  __be32 addr;
  __u8 zero[8];
};

VG_DEFINE_READ_USER(read_user_sockaddr, struct vg_user_sockaddr)
VG_DEFINE_READ_USER(read_user_sockaddr4, struct vg_user_sockaddr4)

/* Only attached where the exit program cannot read the arguments itself. */
SEC("tracepoint/syscalls/sys_enter_connect")
int vg_enter_connect(struct trace_event_raw_sys_enter *ctx)
{
  if (vg_is_self())
    return 0;
  struct vg_connect_args a = {.addr = ctx->args[1], .len = (__u32)ctx->args[2], .fd = (__s32)ctx->args[0]};
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  if (bpf_map_update_elem(&pending_connect, &tid, &a, BPF_ANY) != 0)
    vg_drop(VG_DROP_MAP_FULL);
  return 0;
}

/* The connect's arguments: from the saved user registers, or from what the
 * enter program kept. 0: nothing to report (vigil's own, or no enter). */
static __always_inline int connect_args(struct task_struct *t, struct vg_connect_args *a)
{
  struct pt_regs *regs = t ? vg_task_syscall_regs(t) : 0;
  if (regs) {
    if ((__u32)t->tgid == cfg_vigil_tgid)
      return 0;
    a->fd = (__s32)PT_REGS_PARM1_SYSCALL(regs);
    a->addr = PT_REGS_PARM2_SYSCALL(regs);
    a->len = (__u32)PT_REGS_PARM3_SYSCALL(regs);
    return 1;
  }
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct vg_connect_args *p = bpf_map_lookup_elem(&pending_connect, &tid);
  if (!p)
    return 0;
  *a = *p;
  bpf_map_delete_elem(&pending_connect, &tid);
  return 1;
}

/* The socket behind an open file (NULL: not a socket), with its type
 * (SOCK_STREAM, SOCK_DGRAM...). */
static __always_inline struct sock *vg_file_sock(struct file *f, __u16 *type)
{
  umode_t m = 0;
  dev_t rdev = 0;
  vg_file_dev(f, &m, &rdev);
  if ((m & S_IFMT) != S_IFSOCK)
    return 0;
  struct socket *s = VG_KREAD(f, struct file, private_data);
  *type = (__u16)VG_KREAD(s, struct socket, type);
  return VG_KREAD(s, struct socket, sk);
}

/* The inet socket's family, and in c its destination, source and ports as
 * the kernel holds them. Returns the family (AF_UNIX too, with nothing
 * filled); 0 for other families. *has_dst: the socket holds a destination. */
static __always_inline __u16 sock_endpoints(struct sock *sk, struct vg_connect *c, int *has_dst)
{
  __u16 family = VG_KREAD(sk, struct sock, __sk_common.skc_family);
  *has_dst = 0;
  if (family != AF_INET && family != AF_INET6)
    return family == AF_UNIX ? AF_UNIX : 0;
  __be16 dport = VG_KREAD(sk, struct sock, __sk_common.skc_dport);
  if (!dport)
    return family;
  *has_dst = 1;
  c->dport = bpf_ntohs(dport);
  c->sport = VG_KREAD(sk, struct sock, __sk_common.skc_num);
  if (family == AF_INET) {
    *(__u32 *)c->daddr = VG_KREAD(sk, struct sock, __sk_common.skc_daddr);
    *(__u32 *)c->saddr = VG_KREAD(sk, struct sock, __sk_common.skc_rcv_saddr);
  } else {
    __u32 *d = (__u32 *)c->daddr, *s = (__u32 *)c->saddr;
    d[0] = VG_KREAD(sk, struct sock, __sk_common.skc_v6_daddr.in6_u.u6_addr32[0]);
    d[1] = VG_KREAD(sk, struct sock, __sk_common.skc_v6_daddr.in6_u.u6_addr32[1]);
    d[2] = VG_KREAD(sk, struct sock, __sk_common.skc_v6_daddr.in6_u.u6_addr32[2]);
    d[3] = VG_KREAD(sk, struct sock, __sk_common.skc_v6_daddr.in6_u.u6_addr32[3]);
    s[0] = VG_KREAD(sk, struct sock, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32[0]);
    s[1] = VG_KREAD(sk, struct sock, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32[1]);
    s[2] = VG_KREAD(sk, struct sock, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32[2]);
    s[3] = VG_KREAD(sk, struct sock, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32[3]);
  }
  return family;
}

/* The destination from the user's sockaddr, for a socket of `family` that
 * holds none. 0: unreadable, or not a destination of that family (AF_UNSPEC
 * disconnects a datagram socket). */
static __always_inline int user_endpoint(__u64 addr, __u32 len, __u16 family, struct vg_connect *c)
{
  struct vg_user_sockaddr sa = {};
  if (!addr)
    return 0;
  if (read_user_sockaddr(&sa, (const void *)addr) != 0) {
    /* a short sockaddr_in at the very end of a mapping */
    struct vg_user_sockaddr4 s4 = {};
    if (read_user_sockaddr4(&s4, (const void *)addr) != 0)
      return 0;
    sa.family = s4.family;
    sa.port = s4.port;
    sa.w4 = s4.addr;
  }
  if (sa.family == AF_INET && len >= sizeof(struct vg_user_sockaddr4)) {
    /* an AF_INET6 socket may connect to an IPv4 address (mapped) */
    c->dport = bpf_ntohs(sa.port);
    if (family == AF_INET6) {
      __u32 *d = (__u32 *)c->daddr;
      d[2] = bpf_htonl(0xffff);
      d[3] = sa.w4;
    } else {
      *(__u32 *)c->daddr = sa.w4;
    }
    return 1;
  }
  if (sa.family == AF_INET6 && family == AF_INET6 && len >= 24) {
    c->dport = bpf_ntohs(sa.port);
    __builtin_memcpy(c->daddr, sa.addr6, 16);
    return 1;
  }
  return 0;
}

/* Appends the AF_UNIX path of the user's sockaddr at buf[off]; its length. */
static __always_inline __u32 unix_path(__u8 *buf, __u32 off, __u64 addr, __u32 len)
{
  if (!addr || len <= 2)
    return 0;
  len -= 2;
  if (len > VG_UNIX_PATH_MAX)
    len = VG_UNIX_PATH_MAX;
  /* A fixed-size read (see docs/bpf/verifier.md); a shorter sockaddr at the
   * end of a mapping falls back to a string read. */
  __u8 *dst = buf + (off & VG_OFF_MASK);
  if (bpf_probe_read_user(dst, VG_UNIX_PATH_MAX, (const __u8 *)addr + 2) == 0)
    return len;
  long n = bpf_probe_read_user_str(dst, VG_UNIX_PATH_MAX, (const __u8 *)addr + 2);
  return n > 0 ? (__u32)n : 0;
}

SEC("tracepoint/syscalls/sys_exit_connect")
int vg_exit_connect(struct trace_event_raw_sys_exit *ctx)
{
  struct task_struct *t = 0;
  if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_current_task_btf))
    t = bpf_get_current_task_btf();
  struct vg_connect_args a = {};
  if (!connect_args(t, &a))
    return 0;
  struct file *f = t ? vg_task_fd_file(t, a.fd) : vg_fd_file(a.fd);
  __u16 type = 0;
  struct sock *sk = f ? vg_file_sock(f, &type) : 0;
  if (!sk)
    return 0; /* not a socket: nothing was connected */
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return 0;
  struct vg_connect *e = (struct vg_connect *)buf;
  __builtin_memset(e, 0, sizeof(*e));
  int has_dst = 0;
  __u16 family = sock_endpoints(sk, e, &has_dst);
  __u32 n = 0;
  if (family == AF_UNIX) {
    e->proto = VG_L4_UNIX;
    n = unix_path(buf, sizeof(*e), a.addr, a.len) & 127;
  } else if (!family || (!has_dst && !user_endpoint(a.addr, a.len, family, e))) {
    return 0;
  } else {
    e->proto = type == SOCK_STREAM ? VG_L4_TCP : type == SOCK_DGRAM ? VG_L4_UDP : 0;
  }
  vg_fill_hdr(&e->hdr, VG_CONNECT);
  e->family = family;
  e->result = (__s32)ctx->ret;
  e->flags = VG_CONN_HAS_RESULT;
  e->unix_path_len = n;
  vg_submit(buf, sizeof(*e) + n);
  return 0;
}

/* Calls on a socket fd (arguments through vg_sys_args, like sys.bpf.c),
 * with the socket's endpoints read from the kernel's socket:
 *  - dup, dup2, dup3: the old fd; a shell whose stdin/stdout become a network
 *    connection ("reverse shell") is a dup of a connected socket onto fd 0, 1
 *    or 2;
 *  - accept, accept4: the new connection (the fd returned);
 *  - listen, bind: the local end. */

/* The local end of an inet socket (address and port), and its remote end
 * where it has one. Returns the family (AF_UNIX too, with nothing filled). */
static __always_inline __u16 sock_both_ends(struct sock *sk, struct vg_connect *c)
{
  int has_dst = 0;
  __u16 family = sock_endpoints(sk, c, &has_dst);
  if (has_dst || (family != AF_INET && family != AF_INET6))
    return family;
  c->sport = VG_KREAD(sk, struct sock, __sk_common.skc_num);
  if (family == AF_INET) {
    *(__u32 *)c->saddr = VG_KREAD(sk, struct sock, __sk_common.skc_rcv_saddr);
  } else {
    __u32 *s = (__u32 *)c->saddr;
    s[0] = VG_KREAD(sk, struct sock, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32[0]);
    s[1] = VG_KREAD(sk, struct sock, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32[1]);
    s[2] = VG_KREAD(sk, struct sock, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32[2]);
    s[3] = VG_KREAD(sk, struct sock, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32[3]);
  }
  return family;
}

/* sock_fd: the fd whose socket the record describes. */
static __always_inline void sockfd_send(__u16 type, __u8 sc, long ret, __s32 fd, __s32 sock_fd, __u32 flags)
{
  struct task_struct *t = 0;
  if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_current_task_btf))
    t = bpf_get_current_task_btf();
  struct file *f = t ? vg_task_fd_file(t, sock_fd) : vg_fd_file(sock_fd);
  __u16 stype = 0;
  struct sock *sk = f ? vg_file_sock(f, &stype) : 0;
  struct vg_connect c = {};
  __u16 family = sk ? sock_both_ends(sk, &c) : 0;
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return;
  struct vg_sockfd *e = (struct vg_sockfd *)buf;
  __builtin_memset(e, 0, sizeof(*e));
  vg_fill_hdr(&e->hdr, type);
  e->result = ret;
  e->fd = fd;
  e->flags = flags;
  e->syscall = sc;
  e->family = family;
  if (family == AF_UNIX)
    e->proto = VG_L4_UNIX;
  else if (family)
    e->proto = stype == SOCK_STREAM ? VG_L4_TCP : stype == SOCK_DGRAM ? VG_L4_UDP : 0;
  e->sport = c.sport;
  e->dport = c.dport;
  __builtin_memcpy(e->saddr, c.saddr, 16);
  __builtin_memcpy(e->daddr, c.daddr, 16);
  vg_submit(buf, sizeof(*e));
}

#define VG_SOCKFD_EXIT(name, type, sc, sock_fd_expr, flags_expr)   \
  SEC("tracepoint/syscalls/sys_exit_" #name)                      \
  int vg_exit_##name(struct trace_event_raw_sys_exit *ctx)        \
  {                                                               \
    struct vg_sys_args a;                                         \
    if (vg_sys_args(&a))                                          \
      sockfd_send(type, sc, ctx->ret, (__s32)a.a[0], (sock_fd_expr), (flags_expr)); \
    return 0;                                                     \
  }

VG_SOCKFD_EXIT(dup, VG_DUP, VG_SC_DUP, (__s32)a.a[0], 0)
VG_SOCKFD_EXIT(dup2, VG_DUP, VG_SC_DUP2, (__s32)a.a[0], 0)
VG_SOCKFD_EXIT(dup3, VG_DUP, VG_SC_DUP3, (__s32)a.a[0], (__u32)a.a[2])
VG_SOCKFD_EXIT(accept, VG_ACCEPT, VG_SC_ACCEPT, (__s32)ctx->ret, 0)
VG_SOCKFD_EXIT(accept4, VG_ACCEPT, VG_SC_ACCEPT4, (__s32)ctx->ret, (__u32)a.a[3])
VG_SOCKFD_EXIT(listen, VG_LISTEN, 0, (__s32)a.a[0], (__u32)a.a[1])
VG_SOCKFD_EXIT(bind, VG_BIND, 0, (__s32)a.a[0], 0)
