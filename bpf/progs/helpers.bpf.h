/* The helpers shared by the BPF programs of bpf/progs: they fill the common
 * header, append variable-length data to the per-CPU scratch record and
 * submit it to the ring buffer, walk paths, read files, fds and saved
 * registers of the current task. A program file includes this header, which
 * brings the configuration (config.bpf.h) and the shared maps (maps.bpf.h).
 * Verifier workarounds used here are explained in docs/bpf/verifier.md.
 */
#ifndef VIGIL_BPF_PROGS_HELPERS_BPF_H
#define VIGIL_BPF_PROGS_HELPERS_BPF_H

#include "bpf/progs/maps.bpf.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#ifndef S_IFMT
#ifndef EEXIST
#define EEXIST 17 /* what a BPF_NOEXIST insert of a present key returns, negated */
#endif

#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define S_IFBLK 0060000
#define S_IFCHR 0020000
#define S_IFDIR 0040000
#define S_IFIFO 0010000
#define S_IFREG 0100000
#endif

#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10
#define SOCK_STREAM 1
#define SOCK_DGRAM 2
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17

/* A typed read-only view of kernel memory (kernels 6.2+; the verifier turns
 * the call into a move). Loads through it are plain fault-handled loads, a
 * few ns each instead of one bpf_probe_read_kernel call per field: this
 * matters on paths that run for every ioctl. __weak: NULL where the kernel
 * lacks it, and the BPF_CORE_READ branch runs instead. Use it from one
 * object only (fd.bpf.c): bpftool's linker in libbpf 1.1 cannot link one
 * extern kfunc referenced from two objects. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

static __always_inline void vg_drop(__u32 reason)
{
  __u64 *c = bpf_map_lookup_elem(&drops, &reason);
  if (c)
    *c += 1; /* per-CPU value: no atomics needed */
}

static __always_inline __u8 *vg_scratch_buf(void)
{
  __u32 zero = 0;
  struct vg_scratch *s = bpf_map_lookup_elem(&scratch, &zero);
  return s ? s->buf : 0;
}

static __always_inline int vg_is_self(void)
{
  return (__u32)(bpf_get_current_pid_tgid() >> 32) == cfg_vigil_tgid;
}

/* The common header, from the current task. `tracing`: the caller may walk
 * the task through bpf_get_current_task_btf with direct loads, a few ns each
 * (tracing programs; the cgroup socket programs where cfg_sock_task_btf says
 * so); otherwise one helper read per field. */
static __always_inline void vg_fill_hdr_from(struct vg_hdr *h, __u16 type, int tracing)
{
  __u64 pt = bpf_get_current_pid_tgid();
  __u64 ug = bpf_get_current_uid_gid();
  h->type = type;
  h->abi = VG_ABI_VERSION;
  h->flags = 0;
  h->len = 0;
  h->ts_ns = bpf_ktime_get_boot_ns();
  h->pid = pt >> 32;
  h->tid = (__u32)pt;
  h->uid = (__u32)ug;
  h->gid = ug >> 32;
  struct pid *tp;
  if (tracing && bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_current_task_btf)) {
    /* Direct loads (a NULL pointer on the way reads as 0, like the helper). */
    struct task_struct *tt = bpf_get_current_task_btf();
    h->ppid = tt->real_parent->tgid;
    tp = tt->thread_pid;
    h->mnt_ns = tt->nsproxy->mnt_ns->ns.inum;
    h->net_ns = tt->nsproxy->net_ns->ns.inum;
  } else {
    struct task_struct *t = (struct task_struct *)bpf_get_current_task();
    h->ppid = BPF_CORE_READ(t, real_parent, tgid);
    tp = BPF_CORE_READ(t, thread_pid);
    h->mnt_ns = BPF_CORE_READ(t, nsproxy, mnt_ns, ns.inum);
    h->net_ns = BPF_CORE_READ(t, nsproxy, net_ns, ns.inum);
  }
  /* numbers[] is indexed by the pid's level: helper reads (a direct load
   * needs a constant offset). */
  unsigned int level = BPF_CORE_READ(tp, level);
  h->pid_ns = BPF_CORE_READ(tp, numbers[level & 31].ns, ns.inum);
  h->cgroup_id = bpf_get_current_cgroup_id();
  bpf_get_current_comm(h->comm, sizeof(h->comm));
}

#define vg_fill_hdr(h, type) vg_fill_hdr_from((h), (type), 1)
#define vg_fill_hdr_sock(h, type) vg_fill_hdr_from((h), (type), cfg_sock_task_btf)

/* Small fixed-size user reads, each in a BPF subprogram of its own. A program
 * whose stack frame is 64 bytes or more runs on a private per-CPU stack
 * (kernels 6.14+), and bpf_probe_read_user's hardened-usercopy check then
 * takes its slow path for the destination (kernel text overlap, heap object
 * lookup through virt_addr_valid), a cost comparable to the copy itself. These
 * subprograms keep their frame under 64 bytes, so they run on the task's
 * stack, where the check stops at "on the stack". Used on the per-call paths
 * (every NVIDIA ioctl, every open); elsewhere the inline read is fine. */
#define VG_DEFINE_READ_USER(name, type)                                                            \
  static __noinline long name(type *out, const void *src)                                          \
  {                                                                                                \
    type v;                                                                                        \
    __builtin_memset(&v, 0, sizeof(v));                                                            \
    long err = bpf_probe_read_user(&v, sizeof(v), src);                                            \
    *out = v;                                                                                      \
    return err;                                                                                    \
  }

/* Appends a NUL-terminated string (user memory when `user`, else kernel) at
 * buf[off]; returns the bytes written (NUL included, 0 on failure). Sets
 * *trunc when the string filled `max`. */
static __always_inline __u32 vg_put_str(__u8 *buf, __u32 off, const void *src, __u32 max,
                                        __u8 *trunc, int user)
{
  if (!src)
    return 0;
  /* max: a constant */
  long n = user ? bpf_probe_read_user_str(buf + (off & VG_OFF_MASK), max, src)
                : bpf_probe_read_kernel_str(buf + (off & VG_OFF_MASK), max, src);
  if (n < 0) {
    vg_drop(VG_DROP_READ_FAIL);
    return 0;
  }
  if ((__u32)n >= max) {
    *trunc = 1;
    vg_drop(VG_DROP_TRUNCATED);
  }
  return (__u32)n & (VG_CHUNK_MAX - 1);
}

#define vg_put_user_str(buf, off, src, max, trunc)                                                 \
  vg_put_str((buf), (off), (src), (max), (trunc), 1)
#define vg_put_kernel_str(buf, off, src, max, trunc)                                               \
  vg_put_str((buf), (off), (src), (max), (trunc), 0)

/* Appends the path of (dentry, vfsmount) relative to the current task's root,
 * as components from the leaf up, each NUL-terminated. Crosses mount points.
 * Returns the bytes written; sets *trunc when the depth or size bound hit. */
static __always_inline __u32 vg_put_dpath(__u8 *buf, __u32 off, struct dentry *d0,
                                          struct vfsmount *vm0, __u8 *trunc)
{
  __u32 zero = 0;
  struct vg_walk *w = bpf_map_lookup_elem(&walk_state, &zero);
  if (!w)
    return 0;
  struct task_struct *t = (struct task_struct *)bpf_get_current_task();
  w->root_d = (__u64)BPF_CORE_READ(t, fs, root.dentry);
  w->root_m = (__u64)BPF_CORE_READ(t, fs, root.mnt);
  w->d = (__u64)d0;
  w->vm = (__u64)vm0;
  w->mnt = (__u64)container_of(vm0, struct mount, mnt);
  w->pos = 0;
  w->done = 0;
  w->rooted = 0;
  int i;
  for (i = 0; i < VG_DPATH_DEPTH; i++) {
    struct dentry *d = (struct dentry *)w->d;
    struct vfsmount *vm = (struct vfsmount *)w->vm;
    struct mount *mnt = (struct mount *)w->mnt;
    if (!d || (w->d == w->root_d && w->vm == w->root_m)) {
      w->done = 1;
      w->rooted = d != 0;
      break;
    }
    struct dentry *parent = BPF_CORE_READ(d, d_parent);
    struct dentry *mnt_root = BPF_CORE_READ(vm, mnt_root);
    if (d == mnt_root || d == parent) {
      struct mount *mp = BPF_CORE_READ(mnt, mnt_parent);
      if (!mp || mp == mnt || d != mnt_root) {
        w->done = 1; /* the real root, or a detached dentry */
        w->rooted = d == mnt_root;
        break;
      }
      w->d = (__u64)BPF_CORE_READ(mnt, mnt_mountpoint);
      w->mnt = (__u64)mp;
      w->vm = (__u64)&mp->mnt;
      continue;
    }
    __u32 pos = w->pos;
    if (pos >= VG_DPATH_MAX - 1)
      break;
    const unsigned char *name = BPF_CORE_READ(d, d_name.name);
    long n = bpf_probe_read_kernel_str(buf + ((off + (pos & (VG_DPATH_MAX - 1))) & VG_OFF_MASK),
                                       256, name);
    if (n <= 0) {
      vg_drop(VG_DROP_READ_FAIL);
      w->done = 1;
      break;
    }
    w->pos = pos + ((__u32)n & 511);
    w->d = (__u64)parent;
  }
  __u32 pos = w->pos;
  if (!w->done) {
    *trunc = 1;
    vg_drop(VG_DROP_TRUNCATED);
  } else if (pos == 0 && w->rooted) {
    /* The root itself: one empty component, which reads as "/" (no
     * component at all means no path: a dentry outside any tree). */
    buf[off & VG_OFF_MASK] = 0;
    pos = 1;
  }
  return pos & (2 * VG_DPATH_MAX - 1);
}

_Static_assert(VG_SCRATCH_SIZE >= VG_OFF_MASK + 1 + VG_CHUNK_MAX, "scratch too small");

/* Returns v (1 <= v <= mask+1 expected) as a value the verifier knows is in
 * [1, mask+1]. The masking is done in inline asm so that clang cannot move
 * the bounds check away from the register the helper call uses
 * (docs/bpf/verifier.md, "variable sizes"). mask must be 2^k - 1. */
#define VG_SIZE_BOUND(v, mask)                                                                     \
  ({                                                                                               \
    __u64 __x = (__u64)(v)-1;                                                                      \
    asm volatile("%[x] &= " #mask : [x] "+r"(__x));                                                \
    __x + 1;                                                                                       \
  })

/* Sends buf[0..len) as one record; counts a drop when the ring buffer is full. */
static __always_inline void vg_submit(__u8 *buf, __u32 len)
{
  struct vg_hdr *h = (struct vg_hdr *)buf;
  if (len > VG_RECORD_MAX)
    len = VG_RECORD_MAX;
  __u64 n = VG_SIZE_BOUND(len, 16383); /* VG_RECORD_MAX - 1 */
  h->len = n;
  __u64 wake = 0;
  if (cfg_wakeup_bytes)
    wake = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) + n >= cfg_wakeup_bytes
               ? BPF_RB_FORCE_WAKEUP
               : BPF_RB_NO_WAKEUP;
  if (bpf_ringbuf_output(&events, buf, n, wake) != 0)
    vg_drop(VG_DROP_RINGBUF_FULL);
}

/* A field of a kernel object: a direct load where the kernel has
 * bpf_rdonly_cast, a helper read otherwise (resolved at load time). */
#define VG_KREAD(ptr, type, field)                                                                 \
  (bpf_rdonly_cast                                                                                 \
       ? ((type *)bpf_rdonly_cast((const void *)(ptr), bpf_core_type_id_kernel(type)))->field      \
       : BPF_CORE_READ((type *)(ptr), field))

/* Mode and device number of the inode behind an open file. */
static __always_inline void vg_file_dev(struct file *f, umode_t *mode, dev_t *rdev)
{
  struct inode *ino = VG_KREAD(f, struct file, f_inode);
  *mode = VG_KREAD(ino, struct inode, i_mode);
  *rdev = VG_KREAD(ino, struct inode, i_rdev);
}

/* The name (last path component) of an open file. */
static __always_inline const unsigned char *vg_file_name(struct file *f)
{
  struct dentry *d = VG_KREAD(f, struct file, f_path.dentry);
  return VG_KREAD(d, struct dentry, d_name.name);
}

/* struct dentry before 6.14 kept short names in d_iname (now d_shortname). */
struct dentry___iname {
  unsigned char d_iname[40];
} __attribute__((preserve_access_index));

/* The first 16 bytes where a dentry's name is kept; bytes past the name's
 * end are left from earlier names. Short names live inside the dentry: read
 * them with direct loads (bpf_rdonly_cast) instead of a helper, which costs
 * more than the rest of the ioctl path. Long names (40 bytes and more, kept
 * outside the dentry), and kernels without bpf_rdonly_cast, take the helper. */
static __always_inline void vg_dentry_name_raw(struct dentry *d, __u64 w[2])
{
  int inline_read = 0;
  w[0] = w[1] = 0;
  if (bpf_rdonly_cast) {
    struct dentry *td = bpf_rdonly_cast(d, bpf_core_type_id_kernel(struct dentry));
    __u64 name = (__u64)td->d_name.name;
    if (bpf_core_field_exists(td->d_shortname)) {
      if (name == (__u64)&td->d_shortname) {
        w[0] = td->d_shortname.words[0];
        w[1] = td->d_shortname.words[1];
        inline_read = 1;
      }
    } else {
      struct dentry___iname *od = (struct dentry___iname *)td;
      if (bpf_core_field_exists(od->d_iname) && name == (__u64)&od->d_iname) {
        w[0] = *(__u64 *)&od->d_iname[0];
        w[1] = *(__u64 *)&od->d_iname[8];
        inline_read = 1;
      }
    }
  }
  if (!inline_read)
    bpf_probe_read_kernel(w, 16, VG_KREAD(d, struct dentry, d_name.name));
}

/* The first 16 bytes of a dentry's name of `len` bytes, zero past its end. */
static __always_inline void vg_dentry_name_head(struct dentry *d, __u32 len, __u64 w[2])
{
  vg_dentry_name_raw(d, w);
  if (len < 16) {
    if (len <= 8) {
      w[1] = 0;
      if (len < 8)
        w[0] &= (1ULL << (len * 8)) - 1;
    } else {
      w[1] &= (1ULL << ((len - 8) * 8)) - 1;
    }
  }
}

#define VG_NAME_NVIDIA 0x61696469766eULL /* "nvidia", little-endian */
#define VG_NAME_UVM_HI 0x6d76            /* "vm", bytes 8 and 9 of "nvidia-uvm" */

/* Is the open file's name "nvidia..." (1), "nvidia-uvm..." (2), or neither
 * (0)? This is the stand-in fallback: real NVIDIA nodes match on their major
 * number before it. */
static __always_inline int vg_file_nvidia_name(struct file *f)
{
  struct dentry *d = VG_KREAD(f, struct file, f_path.dentry);
  __u32 len = VG_KREAD(d, struct dentry, d_name.len);
  __u64 w[2];
  if (len < 6)
    return 0;
  vg_dentry_name_raw(d, w); /* the length is checked before each byte is used */
  if ((w[0] & 0xffffffffffffULL) != VG_NAME_NVIDIA)
    return 0;
  return len >= 10 && ((w[0] >> 48) & 0xff) == '-' && (w[0] >> 56) == 'u' &&
                 (w[1] & 0xffff) == VG_NAME_UVM_HI
             ? 2
             : 1;
}

/* The dentry whose name ends an open file's path as vg_put_dpath walks it
 * (so the last component of fd.name): the file's own, or, where the file is
 * the root of a mount (a file bind-mounted into a container), the dentry it
 * is mounted on. NULL where the walk would not end in a name: a dentry
 * outside any tree, a filesystem's root, mounts stacked deeper than this
 * looks. Where the file is the task's root the walk gives "/", which no
 * whole path (it has a last component) equals, whatever name this returns. */
/* *parent (where not NULL) gets the dentry whose name is the component
 * before it (fd.directory's last), found the same way, or NULL where there is
 * none (the file is just below the root) or mounts stack deeper than this
 * looks. */
static __always_inline struct dentry *vg_file_leaf_parent(struct file *f, struct dentry **parent)
{
  __u64 d = (__u64)VG_KREAD(f, struct file, f_path.dentry);
  __u64 vm = (__u64)VG_KREAD(f, struct file, f_path.mnt);
  const __u64 mnt_off = bpf_core_field_offset(struct mount, mnt);
  __u64 leaf = 0;
  if (parent)
    *parent = 0;
  for (int i = 0; i < 8; i++) {
    if (!d)
      return 0;
    __u64 up = (__u64)VG_KREAD(d, struct dentry, d_parent);
    if (d != (__u64)VG_KREAD(vm, struct vfsmount, mnt_root)) {
      if (d == up)
        return 0;
      if (leaf) {
        *parent = (struct dentry *)d;
        return (struct dentry *)leaf;
      }
      leaf = d;
      if (!parent)
        return (struct dentry *)leaf;
      d = up; /* now the parent's */
      continue;
    }
    __u64 m = vm - mnt_off;
    __u64 mp = (__u64)VG_KREAD(m, struct mount, mnt_parent);
    if (!mp || mp == m)
      return (struct dentry *)leaf; /* the real root */
    d = (__u64)VG_KREAD(m, struct mount, mnt_mountpoint);
    vm = mp + mnt_off;
  }
  return (struct dentry *)leaf;
}

static __always_inline struct dentry *vg_file_leaf(struct file *f)
{
  return vg_file_leaf_parent(f, 0);
}

/* The user registers saved when task `t` (the current task) entered its
 * syscall. At a sys_exit tracepoint they still hold the syscall's arguments
 * (only the return-value register changes), so one exit program sees
 * arguments and result and the syscall pays for one tracepoint instead of two
 * (DESIGN.md "Pick hooks by what they cost"). NULL where user space chose the
 * enter/exit pairs (cfg_args_at_exit 0: kernels before 5.15 have no
 * bpf_task_pt_regs). */
static __always_inline int vg_args_at_exit(void)
{
  return cfg_args_at_exit && bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs);
}

static __always_inline struct pt_regs *vg_task_syscall_regs(struct task_struct *t)
{
  return vg_args_at_exit() ? (struct pt_regs *)bpf_task_pt_regs(t) : 0;
}

static __always_inline struct pt_regs *vg_syscall_regs(void)
{
  return vg_task_syscall_regs(bpf_get_current_task_btf());
}

/* The struct file behind fd `fd` of task `t` (the current task, from
 * bpf_get_current_task_btf), or NULL. The chain task->files->fdt->fd[fd] is
 * followed with direct (BTF) loads rather than helper calls: this runs on
 * every ioctl and every successful open. The fd is a number user space chose:
 * besides the bounds check, the index is clamped without a branch (as the
 * kernel's own fd lookup does with array_index_nospec), so a mispredicted
 * bounds check cannot load past the table. */
static __always_inline struct file *vg_task_fd_file(struct task_struct *t, int fd)
{
  struct files_struct *files = t->files;
  if (!files)
    return 0;
  struct fdtable *fdt = files->fdt;
  if (!fdt)
    return 0;
  __u64 max = fdt->max_fds;
  __u64 idx = (__u32)fd;
  if (fd < 0 || idx >= max)
    return 0;
  /* Hidden from the compiler, which would otherwise fold the mask away using
   * the bounds check above. */
  barrier_var(idx);
  idx &= (__u64)((__s64)(idx - max) >> 63); /* all ones while idx < max */
  __u64 slot = (__u64)fdt->fd + idx * sizeof(struct file *);
  struct file *f = 0;
  if (bpf_rdonly_cast) {
    /* The slot read as the first word of a kernel struct: list_head.next is
     * one pointer at offset 0, like the slot. */
    struct list_head *l = bpf_rdonly_cast((void *)slot, bpf_core_type_id_kernel(struct list_head));
    return (struct file *)l->next;
  }
  bpf_probe_read_kernel(&f, sizeof(f), (void *)slot);
  return f;
}

static __always_inline struct file *vg_fd_file(int fd)
{
  if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_current_task_btf)) {
    /* Kernels before 5.11: the same walk with helper reads. Resolved at load
     * time (CO-RE), the other branch is dead code to the verifier. */
    struct task_struct *ct = (struct task_struct *)bpf_get_current_task();
    struct fdtable *cfdt = BPF_CORE_READ(ct, files, fdt);
    if (fd < 0 || (unsigned int)fd >= BPF_CORE_READ(cfdt, max_fds))
      return 0;
    struct file **cfds = BPF_CORE_READ(cfdt, fd);
    struct file *cf = 0;
    bpf_probe_read_kernel(&cf, sizeof(cf), (void *)((__u64)cfds + (__u64)fd * sizeof(cf)));
    return cf;
  }
  return vg_task_fd_file(bpf_get_current_task_btf(), fd);
}

/* ---- arguments of the rarer syscalls (sys.bpf.c; dup and the socket-fd
 * calls in fd/socket.bpf.c) ----
 * Their exit programs read the arguments from the saved user registers; where
 * the kernel cannot give those (cfg_args_at_exit 0), one generic enter
 * program, vg_enter_args, attached to each of their sys_enter tracepoints,
 * keeps the six raw arguments per thread until the exit. */

/* The current syscall's arguments, at its exit. 0: nothing to report
 * (vigil's own call, or the enter program kept nothing). */
static __always_inline int vg_sys_args(struct vg_sys_args *out)
{
  if (vg_is_self())
    return 0;
  struct pt_regs *regs = vg_syscall_regs();
  if (regs) {
    out->a[0] = PT_REGS_PARM1_SYSCALL(regs);
    out->a[1] = PT_REGS_PARM2_SYSCALL(regs);
    out->a[2] = PT_REGS_PARM3_SYSCALL(regs);
    out->a[3] = PT_REGS_PARM4_SYSCALL(regs);
    out->a[4] = PT_REGS_PARM5_SYSCALL(regs);
    out->a[5] = 0;
    return 1;
  }
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct vg_sys_args *p = bpf_map_lookup_elem(&pending_args, &tid);
  if (!p)
    return 0;
  *out = *p;
  bpf_map_delete_elem(&pending_args, &tid);
  return 1;
}

#endif /* VIGIL_BPF_PROGS_HELPERS_BPF_H */
