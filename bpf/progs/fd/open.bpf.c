// SPDX-License-Identifier: GPL-2.0
/* Opens (open, openat, openat2) of character devices and of the paths the
 * rules ask about: the open filter. A successful open is judged by the file
 * it opened (its name, the first components of its resolved path), a failed
 * one by the path as given, against the tables user space filled from the
 * rules' literal paths (the hash maps below, sized to what the rules ask: no
 * count limit); what passes is sent as a vg_open record, which user space
 * judges by the exact path.
 * Compiled as part of fd.bpf.c (which says why). */
#include "bpf/progs/helpers.bpf.h"
#include "bpf/progs/policy.bpf.h"

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

/* The open filter's tables (bpf/shared/events.h, "The open filter's
 * tables"); user space sizes them before load (room for reloads: an entry
 * takes memory only once added), fills them before any program attaches,
 * and changes them on a reload. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct vg_of_name);
  __type(value, __u8);
} open_names SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct vg_of_edge);
  __type(value, struct vg_of_node);
} open_trie SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct vg_of_given);
  __type(value, __u8);
} open_given SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct vg_of_head);
  __type(value, __u8);
} open_heads SEC(".maps");

/* How a sent open's path as given is still to be judged once read (0: it is
 * sent as it is): against the given prefixes, against every literal (a
 * failed open, or one the walk cannot place), and/or by holding "../". */
#define VG_GIVEN_PREFIXES 1
#define VG_GIVEN_ALL 2
#define VG_GIVEN_DOTDOT 4

/* The first n bytes of w (1 <= n <= 8), the rest zero. */
static __always_inline __u64 vg_low_bytes(__u64 w, __u32 n)
{
  return n >= 8 ? w : w & ((1ULL << (n * 8)) - 1);
}

/* The open filter's longer loops are global functions: the verifier checks
 * each once, whatever state the program reaches it in, where an inlined copy
 * would be checked again for each (docs/bpf/verifier.md). Their arguments
 * are plain numbers, kernel pointers passed as such. */

/* Does the path as given, read at buf[off] (n bytes, its NUL included),
 * start with a literal of open_given that `mode` compares it with? One
 * lookup per length the table holds. */
static __always_inline int match_given(const __u8 *buf, __u32 off, __u32 n, __u32 mode)
{
  const __u64 lens = (mode & VG_GIVEN_ALL) ? vg_of.lit_lens : vg_of.given_lens;
  const __u8 want = (mode & VG_GIVEN_ALL) ? (VG_OF_GIVEN | VG_OF_OTHER) : VG_OF_GIVEN;
  const __u64 *p = (const __u64 *)(buf + (off & VG_OFF_MASK));
  struct vg_of_given k = {};
  __u64 *kw = (__u64 *)k.bytes;
  for (__u32 len = 1; len < VG_PREFIX_LEN; len++) {
    if (len >= n)
      break;
    if (!((lens >> len) & 1))
      continue;
    k.len = len;
    for (__u32 i = 0; i < VG_PREFIX_LEN / 8; i++) {
      if (8 * i >= len)
        kw[i] = 0;
      else
        kw[i] = vg_low_bytes(p[i], len - 8 * i);
    }
    __u8 *v = bpf_map_lookup_elem(&open_given, &k);
    if (v && (*v & want))
      return 1;
  }
  return 0;
}

/* Does the path as given, read at buf[off] (n bytes, its NUL included), hold
 * "../"? */
static __always_inline int has_dotdot(const __u8 *buf, __u32 off, __u32 n)
{
  const __u8 *p = buf + (off & VG_OFF_MASK);
  for (__u32 i = 0; i + 3 < VG_PATH_MAX; i++) {
    if (i + 3 >= n)
      break;
    if (p[i] == '.' && p[i + 1] == '.' && p[i + 2] == '/')
      return 1;
  }
  return 0;
}

/* Is the path as given, read into the scratch record at `off` (n bytes,
 * its NUL included), one that `mode` sends? */
__noinline int vg_of_given_path(__u32 off, __u32 n, __u32 mode)
{
  const __u8 *buf = vg_scratch_buf();
  if (!buf || n == 0)
    return 0;
  if ((mode & (VG_GIVEN_PREFIXES | VG_GIVEN_ALL)) && match_given(buf, off, n, mode))
    return 1;
  return (mode & VG_GIVEN_DOTDOT) && has_dotdot(buf, off, n);
}

/* A first look at a path before reading all of it: can it start with a
 * literal `mode` compares it with, judging by its first 8 bytes? Most opens
 * are of paths no rule asks about, and one 8-byte read rejects them where
 * the full string read costs as much as the rest of the program. Where those
 * 8 bytes cannot be read (a path shorter than 8 bytes at the very end of a
 * mapping), the full read decides. */
static __always_inline int prefix_may_match(const char *filename, __u32 mode)
{
  const __u32 heads = (mode & VG_GIVEN_ALL) ? vg_of.lit_heads : vg_of.given_heads;
  const __u8 want = (mode & VG_GIVEN_ALL) ? (VG_OF_GIVEN | VG_OF_OTHER) : VG_OF_GIVEN;
  if (!heads)
    return 0;
  __u64 w = 0;
  if (read_user_u64(&w, filename) != 0)
    return 1;
  struct vg_of_head k = {};
  for (__u32 len = 1; len <= 8; len++) {
    if (!((heads >> len) & 1))
      continue;
    k.len = len;
    k.head = vg_low_bytes(w, len);
    __u8 *v = bpf_map_lookup_elem(&open_heads, &k);
    if (v && (*v & want))
      return 1;
  }
  return 0;
}

/* The VG_OF_* bits of dentry d's name as the last component of a whole path
 * (dir 0) or a directory (dir 1); 0 for none. The length is looked up first
 * (one bit test), so most names are never read. */
static __always_inline __u8 name_flags(struct dentry *d, int dir)
{
  __u32 len = VG_KREAD(d, struct dentry, d_name.len);
  if (len >= 64 || !(((dir ? vg_of.dir_len_mask : vg_of.leaf_len_mask) >> len) & 1))
    return 0;
  struct vg_of_name k = {.len = len, .dir = dir};
  vg_dentry_name_head(d, len, k.head);
  __u8 *v = bpf_map_lookup_elem(&open_names, &k);
  return v ? *v : 0;
}

/* Does a name of len bytes, whose first 16 are w0 and w1 (zero-padded),
 * hold one of the name fragments (vg_of.contains_*)? Its first 16 bytes are
 * searched; a longer name is taken as holding one (the
 * kernel sends a superset, user space judges the exact path). */
__noinline int vg_of_name_contains(__u32 len, __u64 w0, __u64 w1)
{
  if (len > 16 || vg_of.n_contains > VG_CONTAINS_MAX)
    return 1;
  __u64 w[2] = {w0, w1};
  for (__u32 i = 0; i < VG_CONTAINS_MAX; i++) {
    if (i >= vg_of.n_contains)
      break;
    __u32 cl = vg_of.contains_len[i];
    if (cl == 0 || cl > 16 || cl > len)
      continue;
    __u64 m0 = cl >= 8 ? ~0ULL : (1ULL << (cl * 8)) - 1;
    __u64 m1 = cl <= 8 ? 0 : cl >= 16 ? ~0ULL : (1ULL << ((cl - 8) * 8)) - 1;
    for (__u32 o = 0; o < 16; o++) {
      if (o + cl > len)
        break;
      __u64 lo, hi;
      if (o == 0) {
        lo = w[0];
        hi = w[1];
      } else if (o < 8) {
        lo = (w[0] >> (o * 8)) | (w[1] << (64 - o * 8));
        hi = w[1] >> (o * 8);
      } else {
        lo = w[1] >> ((o - 8) * 8);
        hi = 0;
      }
      if (((lo ^ vg_of.contains_head[i][0]) & m0) == 0 &&
          ((hi ^ vg_of.contains_head[i][1]) & m1) == 0)
        return 1;
    }
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

/* The walk's start: open file f's dentry and mount, and the root of task t
 * (the current task where t is NULL), into the per-CPU state. Returns it,
 * NULL without the map. */
static __always_inline struct vg_top_walk *vg_path_top_start(struct task_struct *t, struct file *f)
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
  return w;
}

/* The first components of the path vg_path_top_start began, as vg_put_dpath
 * walks it (crossing mounts, up to the task's root or the real root):
 * w->c[k] is the dentry of component k (0: the one just below the root).
 * Returns w with w->result the number of components the path has (at most
 * VG_DPATH_DEPTH), or -1 where the walk cannot place the file (deeper than
 * that, or a dentry outside any tree); NULL without the map. */
static __always_inline struct vg_top_walk *vg_path_top(void)
{
  __u32 zero = 0;
  struct vg_top_walk *w = bpf_map_lookup_elem(&top_walk, &zero);
  if (!w)
    return 0;
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

/* Does the resolved path of the open file vg_path_top_start was given start
 * with a prefix of open_trie
 * that `want` (VG_OF_ANY, VG_OF_WRITE for an open for writing) takes? The
 * trie is walked by the first components of the path below the root, each
 * edge looked up by a component's length and first 16 bytes (from the
 * dentries: no user memory is read, no string compared); `len_mask` holds
 * the lengths a first component may have (bit 63: longer). Returns
 * VG_OF_ANY when one does, else the VG_OF_TRAVERSAL bit where a prefix that
 * holds only for a path as given with "../" does (0: none); -1 where the walk
 * cannot place the file (judge it by the path as given). */
__noinline int vg_of_resolved(__u32 want, __u64 len_mask)
{
  struct vg_top_walk *tw = vg_path_top();
  if (!tw)
    return -1;
  int depth = tw->result;
  if (depth < 0)
    return -1;
  struct vg_of_edge e = {};
  struct vg_of_node *v = bpf_map_lookup_elem(&open_trie, &e);
  if (!v)
    return 0;
  if (v->ends & want)
    return VG_OF_ANY; /* "/": every path */
  int found = v->ends & VG_OF_TRAVERSAL;
  __u64 node = 0;
  __u64 partial = v->partial_lens;
  for (int k = 0; k < VG_RP_COMPS; k++) {
    if (k >= depth || k >= vg_of.rp_maxcomp)
      break;
    struct dentry *d = (struct dentry *)tw->c[k & (VG_RP_COMPS - 1)];
    __u32 len = VG_KREAD(d, struct dentry, d_name.len);
    if (k == 0 && !((len_mask >> (len < 63 ? len : 63)) & 1))
      return found; /* no prefix's first component is that long: most opens end here */
    __u64 w[2];
    vg_dentry_name_head(d, len, w);
    e.node = node;
    if (partial) {
      /* Prefixes that end inside this name: one lookup per length. */
      for (__u32 b = 1; b < 63; b++) {
        if (b > len)
          break;
        if (!((partial >> b) & 1))
          continue;
        e.len = b | VG_OF_PARTIAL;
        e.head[0] = vg_low_bytes(w[0], b);
        e.head[1] = b <= 8 ? 0 : vg_low_bytes(w[1], b - 8);
        struct vg_of_node *pv = bpf_map_lookup_elem(&open_trie, &e);
        if (pv) {
          if (pv->ends & want)
            return VG_OF_ANY;
          found |= pv->ends & VG_OF_TRAVERSAL;
        }
      }
    }
    e.len = len;
    e.head[0] = w[0];
    e.head[1] = w[1];
    v = bpf_map_lookup_elem(&open_trie, &e);
    if (!v)
      break;
    if (v->ends & want)
      return VG_OF_ANY;
    found |= v->ends & VG_OF_TRAVERSAL;
    node = v->node;
    partial = v->partial_lens;
  }
  return found;
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
  if (vg_of.n_literals) {
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
 * the whole paths' and directories' last components, the first components
 * of its resolved path against the resolved prefixes (both from kernel
 * memory; user space compares the whole path), and the path as given against
 * the given prefixes. A failed open, or one the walk cannot place, by the
 * path as given against every literal. A literal a traversal rule gave
 * (VG_OF_TRAVERSAL: the rule also needs "../" in the path as given) sends
 * the open only where the path as given holds "../", and so does any failed
 * open while such a rule is loaded. Returns 0: not sent; 1: sent, with *mode
 * how its path as given is still to be judged once read (VG_GIVEN_*; 0: it
 * is sent as it is). The given path's arguments are read into `a`
 * (*have_args) where they are needed. */
static __always_inline int open_filter(struct task_struct *t, struct file *f,
                                       enum vg_open_kind kind, struct vg_open_args *a,
                                       int *have_args, __u32 *mode)
{
  *mode = 0;
  if (!vg_of.n_literals)
    return 0;
  struct dentry *parent = 0;
  struct dentry *leaf = 0;
  if (f)
    leaf = vg_of.have_dirs ? vg_file_leaf_parent(f, &parent) : vg_file_leaf(f);
  __u32 m = 0;
  if (leaf) {
    __u8 nf = vg_of.have_whole ? name_flags(leaf, 0) : 0;
    if (parent)
      nf |= name_flags(parent, 1);
    if (nf & VG_OF_ANY)
      return 1; /* by name */
    if (nf & VG_OF_TRAVERSAL) {
      m |= VG_GIVEN_DOTDOT;
    } else if (vg_of.n_contains) {
      __u32 len = VG_KREAD(leaf, struct dentry, d_name.len);
      __u64 w[2];
      vg_dentry_name_head(leaf, len, w);
      if (vg_of_name_contains(len, w[0], w[1]))
        m |= VG_GIVEN_DOTDOT;
    }
    if (vg_of.have_given)
      m |= VG_GIVEN_PREFIXES;
    if (vg_of.have_rp) {
      /* An open not for writing is judged by the prefixes for any open
       * only: most opens read. */
      __u32 want = VG_OF_ANY;
      __u64 len_mask = vg_of.rp_any_len_mask;
      if (vg_of.have_write_rp) {
        __u32 acc = VG_KREAD(f, struct file, f_flags) & 3;
        if (acc == 1 || acc == 2) {
          want |= VG_OF_WRITE;
          len_mask = vg_of.rp_top_len_mask;
        }
      }
      /* No prefix for this kind of open (the bundled rules' are all for
       * writes): no walk at all. */
      int r = 0;
      if (len_mask)
        r = vg_path_top_start(t, f) ? vg_of_resolved(want, len_mask) : -1;
      if (r < 0)
        m = VG_GIVEN_ALL | (vg_of.have_traversal ? VG_GIVEN_DOTDOT : 0);
      else if (r & VG_OF_ANY)
        return 1; /* by its resolved path */
      else if (r & VG_OF_TRAVERSAL)
        m |= VG_GIVEN_DOTDOT;
    }
  } else {
    m = VG_GIVEN_ALL | (vg_of.have_traversal ? VG_GIVEN_DOTDOT : 0);
  }
  if (!m)
    return 0;
  *mode = m;
  if (!*have_args) {
    open_regs_args(t, kind, a);
    *have_args = 1;
  }
  /* "../" may sit anywhere in the path: only the full read tells. */
  return (m & VG_GIVEN_DOTDOT) || prefix_may_match(a->filename, m);
}

/* Fills and submits the vg_open record: the path as given (judged first as
 * `mode` says, where it is not 0), and the opened file's path. */
static __always_inline void open_send(const struct vg_open_args *a, long ret, struct file *f,
                                      const struct vg_opened *o, __u32 mode)
{
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return;
  struct vg_open *e = (struct vg_open *)buf;
  __u32 off = sizeof(*e);
  __u8 trunc = 0;
  __u32 n = vg_put_user_str(buf, off, a->filename, VG_PATH_MAX, &trunc);
  if (mode && !vg_of_given_path(off, n, mode))
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
  /* An open of a device node the device policy refused (policy.bpf.c): sent
   * whatever the open filter says, with the node's numbers. */
  struct vg_pol_refusal refusal = {};
  int refused = 0;
  if (ret == -VG_EPERM && vg_pol.device) {
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct vg_pol_refusal *r = bpf_map_lookup_elem(&pol_refused, &tid);
    if (r) {
      refusal = *r;
      refused = 1;
      bpf_map_delete_elem(&pol_refused, &tid);
    }
  }
  if (args_at_exit) {
    /* Without path literals only successful opens of character devices are
     * reported: a failed open is dropped before any work. The arguments are
     * read from the registers only once they are needed. */
    if ((ret < 0 && !vg_of.n_literals && !refused) || (__u32)t->tgid == cfg_vigil_tgid)
      return 0;
  } else {
    /* (A refused open without kept arguments is sent without its path.) */
    if (!open_saved_args(ret, &a) && !refused)
      return 0;
    have_args = 1;
  }

  struct vg_opened o = {};
  if (refused) {
    o.major = refusal.major;
    o.minor = refusal.minor;
    o.oflags = VG_OPEN_CHR;
  }
  struct file *f = 0;
  if (ret >= 0) {
    f = t ? vg_task_fd_file(t, (int)ret) : vg_fd_file((int)ret);
    if (f)
      open_file_kind(f, &o);
  }
  __u32 mode = 0;
  /* A watched process (cfg_watch_comm): its every successful open. */
  int watched_open = 0;
  if (vg_watched_live && f) {
    __u32 tgid = t ? (__u32)t->tgid : (__u32)(bpf_get_current_pid_tgid() >> 32);
    watched_open = bpf_map_lookup_elem(&watched, &tgid) != 0;
  }
  if (!(o.oflags & VG_OPEN_CHR) && !watched_open && !open_filter(t, f, kind, &a, &have_args, &mode))
    return 0;
  if (!have_args)
    open_regs_args(t, kind, &a);
  if (!a.filename && f)
    a.flags = BPF_CORE_READ(f, f_flags);
  open_send(&a, ret, f, &o, mode);
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
