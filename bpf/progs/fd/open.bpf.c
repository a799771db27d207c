// SPDX-License-Identifier: GPL-2.0
/* Opens (open, openat, openat2) of character devices and of the paths the
 * rules ask about: the open filter. A successful open is judged by the file
 * it opened (its name, the first components of its resolved path), a failed
 * one by the path as given, against the prefixes user space wrote into the
 * configuration (config.bpf.h, cfg_prefix and after); what passes is sent as
 * a vg_open record, which user space judges by the exact path.
 * Compiled as part of fd.bpf.c (which says why). */
#include "bpf/progs/helpers.bpf.h"

VG_DEFINE_READ_USER(read_user_u64, __u64)

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
      bpf_probe_read_user(&how, sizeof(how.flags) + sizeof(how.mode),
                          (void *)PT_REGS_PARM3_SYSCALL(regs));
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

/* What an open opened, judged by its inode: a character or block device
 * (oflags, with its numbers), else the file's type (ftype). */
struct vg_opened {
  __u8 oflags;
  __u8 ftype;
  __u32 major;
  __u32 minor;
};

static __always_inline void open_file_kind(struct file *f, struct vg_opened *o)
{
  umode_t m = 0;
  dev_t rdev = 0;
  vg_file_dev(f, &m, &rdev);
  if ((m & S_IFMT) == S_IFCHR)
    o->oflags |= VG_OPEN_CHR;
  else if ((m & S_IFMT) == S_IFBLK)
    o->oflags |= VG_OPEN_BLK;
  else if ((m & S_IFMT) == S_IFDIR)
    o->ftype = VG_OPEN_DIR;
  else if ((m & S_IFMT) == S_IFIFO)
    o->ftype = VG_OPEN_FIFO;
  else if ((m & S_IFMT) == S_IFREG)
    o->ftype = VG_OPEN_REG;
  if (o->oflags) {
    o->major = rdev >> 20;
    o->minor = rdev & 0xfffff;
  }
}

/* The open filter, for an open that is not of a character device: is it sent?
 * It is only where a rule's literal path may match it. A successful one is
 * judged as fd.name will hold it, by the file it opened (f): its name against
 * the whole paths' last components, the first components of its resolved
 * path against the resolved prefixes (both from kernel memory; user space
 * compares the whole path), and the path as given against the given
 * prefixes. A failed open, or one whose resolved path does not end in a name
 * of this file, by the path as given against every literal; one the walk
 * cannot place, against every prefix. Returns 0: not sent; 1: sent, with
 * *n_given how many of cfg_prefix the given path is still to be compared with
 * once read (0: sent by device, by name or by its resolved path). The given
 * path's arguments are read into `a` (*have_args) where they are needed. */
static __always_inline int open_filter(struct task_struct *t, struct file *f,
                                       enum vg_open_kind kind, struct vg_open_args *a,
                                       int *have_args, __u32 *n_given)
{
  *n_given = 0;
  if (!cfg_n_prefixes)
    return 0;
  struct dentry *parent = 0;
  struct dentry *leaf = 0;
  if (f)
    leaf = cfg_n_prefixes > cfg_n_whole_end ? vg_file_leaf_parent(f, &parent) : vg_file_leaf(f);
  if (leaf && ((cfg_n_whole_end > cfg_n_path_prefixes && name_may_match(leaf, 0)) ||
               (parent && name_may_match(parent, 1))))
    return 1;      /* by name */
  int by_path = 0; /* sent by its resolved path */
  *n_given = leaf ? cfg_n_given : cfg_n_prefixes;
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
      *n_given = cfg_n_path_prefixes;
  }
  if (by_path) {
    *n_given = 0;
    return 1;
  }
  if (!*n_given)
    return 0;
  if (!*have_args) {
    open_regs_args(t, kind, a);
    *have_args = 1;
  }
  return prefix_may_match(a->filename, *n_given);
}

/* Fills and submits the vg_open record: the path as given (compared with
 * cfg_prefix[0, n_given) first, where n_given), and the opened file's path. */
static __always_inline void open_send(const struct vg_open_args *a, long ret, struct file *f,
                                      const struct vg_opened *o, __u32 n_given)
{
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return;
  struct vg_open *e = (struct vg_open *)buf;
  __u32 off = sizeof(*e);
  __u8 trunc = 0;
  __u32 n = vg_put_user_str(buf, off, a->filename, VG_PATH_MAX, &trunc);
  if (n_given && (n == 0 || !match_prefix(buf, off, n_given)))
    return;
  vg_fill_hdr(&e->hdr, VG_OPEN);
  e->flags = a->flags;
  e->mode = a->mode;
  e->result = ret;
  e->dev_major = o->major;
  e->dev_minor = o->minor;
  e->path_len = n;
  off += n;
  n = 0;
  if (f)
    n = vg_put_dpath(buf, off, BPF_CORE_READ(f, f_path.dentry), BPF_CORE_READ(f, f_path.mnt),
                     &trunc);
  e->fpath_len = n;
  off += n;
  e->oflags = o->oflags | o->ftype | (trunc ? VG_OPEN_PATH_TRUNC : 0);
  e->pad0[0] = e->pad0[1] = e->pad0[2] = 0;
  vg_submit(buf, off);
}

/* An open's exit: its arguments (from the registers, or kept by the enter
 * program), the file it opened, the open filter, the record. */
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

  struct vg_opened o = {};
  struct file *f = 0;
  if (ret >= 0) {
    f = t ? vg_task_fd_file(t, (int)ret) : vg_fd_file((int)ret);
    if (f)
      open_file_kind(f, &o);
  }
  __u32 n_given = 0;
  if (!(o.oflags & VG_OPEN_CHR) && !open_filter(t, f, kind, &a, &have_args, &n_given))
    return 0;
  if (!have_args)
    open_regs_args(t, kind, &a);
  if (!a.filename && f)
    a.flags = BPF_CORE_READ(f, f_flags);
  open_send(&a, ret, f, &o, n_given);
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
