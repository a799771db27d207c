// SPDX-License-Identifier: GPL-2.0
/* Process lifecycle: exec, fork/clone, exit. BTF tracepoints on sched_*:
 * they cost nothing measurable on system calls (DESIGN.md) and are always
 * attached, because the process table depends on them. */
#include "bpf/progs/helpers.bpf.h"
#include "bpf/progs/policy.bpf.h"

char LICENSE[] SEC("license") = "GPL";

static __always_inline int vg_is_socket(struct file **fds, int i)
{
  struct file *f = 0;
  if (bpf_probe_read_kernel(&f, sizeof(f), &fds[i]) != 0 || !f)
    return 0;
  umode_t mode = BPF_CORE_READ(f, f_inode, i_mode);
  return (mode & S_IFMT) == S_IFSOCK;
}

#define VG_OVERLAYFS_MAGIC 0x794c7630
#define VG_CAP_DAC_OVERRIDE 1

/* The program file's facts Falco's proc.is_exe_* fields give: a memfd (its
 * dentry is named "memfd:..."), a file of an overlay's upper layer (the
 * overlay inode has an upper dentry: the file was written in the container),
 * writable by the user who runs it. */
static __always_inline __u8 exe_flags(struct file *exe, const struct cred *cred, __u64 cap_eff)
{
  __u8 flags = 0;
  struct dentry *d = BPF_CORE_READ(exe, f_path.dentry);
  const unsigned char *name = BPF_CORE_READ(d, d_name.name);
  char head[6] = {};
  if (name && bpf_probe_read_kernel(head, sizeof(head), name) == 0 && head[0] == 'm' &&
      head[1] == 'e' && head[2] == 'm' && head[3] == 'f' && head[4] == 'd' && head[5] == ':')
    flags |= VG_EXEC_MEMFD;

  struct inode *ino = BPF_CORE_READ(d, d_inode);
  if (ino && BPF_CORE_READ(ino, i_sb, s_magic) == VG_OVERLAYFS_MAGIC) {
    /* struct ovl_inode embeds the inode (vfs_inode); __upperdentry follows it. */
    __u64 off = bpf_core_type_size(struct inode);
    if (bpf_core_type_exists(struct ovl_inode))
      off = bpf_core_field_offset(struct ovl_inode, __upperdentry) -
            bpf_core_field_offset(struct ovl_inode, vfs_inode);
    struct dentry *upper = 0;
    bpf_probe_read_kernel(&upper, sizeof(upper), (__u8 *)ino + off);
    if (upper)
      flags |= VG_EXEC_UPPER;
  }

  struct inode *fino = BPF_CORE_READ(exe, f_inode);
  umode_t mode = BPF_CORE_READ(fino, i_mode);
  __u32 fsuid = BPF_CORE_READ(cred, fsuid.val);
  __u32 fsgid = BPF_CORE_READ(cred, fsgid.val);
  if ((mode & 0002) || (fsuid == BPF_CORE_READ(fino, i_uid.val) && (mode & 0200)) ||
      (fsgid == BPF_CORE_READ(fino, i_gid.val) && (mode & 0020)) ||
      (cap_eff & (1ULL << VG_CAP_DAC_OVERRIDE)))
    flags |= VG_EXEC_WRITABLE;
  return flags;
}

/* The inode's change time moved twice: __i_ctime (6.6 to 6.10), i_ctime
 * before, i_ctime_sec/nsec since 6.11 (the committed vmlinux.h). Since
 * multigrain timestamps (6.13) the top bit of i_ctime_nsec is a flag
 * (I_CTIME_QUERIED), not time: masked, as inode_get_ctime_nsec() does. */
#define VG_CTIME_NSEC_MASK 0x7fffffffU
struct inode___ctime_6_6 {
  struct timespec64 __i_ctime;
};
struct inode___ctime_old {
  struct timespec64 i_ctime;
};

static __always_inline __s64 vg_inode_ctime_ns(struct inode *ino)
{
  if (bpf_core_field_exists(ino->i_ctime_sec))
    return BPF_CORE_READ(ino, i_ctime_sec) * 1000000000LL +
           (BPF_CORE_READ(ino, i_ctime_nsec) & VG_CTIME_NSEC_MASK);
  struct inode___ctime_6_6 *mid = (void *)ino;
  if (bpf_core_field_exists(mid->__i_ctime))
    return BPF_CORE_READ(mid, __i_ctime.tv_sec) * 1000000000LL +
           BPF_CORE_READ(mid, __i_ctime.tv_nsec);
  struct inode___ctime_old *old = (void *)ino;
  if (bpf_core_field_exists(old->i_ctime))
    return BPF_CORE_READ(old, i_ctime.tv_sec) * 1000000000LL + BPF_CORE_READ(old, i_ctime.tv_nsec);
  return 0;
}

/* The modification time moved likewise, one release later: __i_mtime (6.7
 * to 6.10), i_mtime before, i_mtime_sec/nsec since 6.11. Its nsec carries
 * no flag bit. */
struct inode___mtime_6_7 {
  struct timespec64 __i_mtime;
};
struct inode___mtime_old {
  struct timespec64 i_mtime;
};

static __always_inline __s64 vg_inode_mtime_ns(struct inode *ino)
{
  if (bpf_core_field_exists(ino->i_mtime_sec))
    return BPF_CORE_READ(ino, i_mtime_sec) * 1000000000LL + BPF_CORE_READ(ino, i_mtime_nsec);
  struct inode___mtime_6_7 *mid = (void *)ino;
  if (bpf_core_field_exists(mid->__i_mtime))
    return BPF_CORE_READ(mid, __i_mtime.tv_sec) * 1000000000LL +
           BPF_CORE_READ(mid, __i_mtime.tv_nsec);
  struct inode___mtime_old *old = (void *)ino;
  if (bpf_core_field_exists(old->i_mtime))
    return BPF_CORE_READ(old, i_mtime.tv_sec) * 1000000000LL + BPF_CORE_READ(old, i_mtime.tv_nsec);
  return 0;
}

/* Copies the user memory [start, end) of the new program (its argv or envp
 * area), at most max bytes (a constant: the function is inlined), to
 * buf[off]; returns the bytes copied. *cut: the area was longer, or starts
 * past where a record may be written (counted as truncated). */
static __always_inline __u32 put_user_area(__u8 *buf, __u32 off, unsigned long start,
                                           unsigned long end, __u32 max, int *cut)
{
  if (end <= start)
    return 0;
  unsigned long want = end - start;
  if (want > max || off > VG_OFF_MASK) {
    want = off > VG_OFF_MASK ? 0 : max;
    *cut = 1;
    vg_drop(VG_DROP_TRUNCATED);
  }
  __u32 len = want;
  if (len > max)
    len = max;
  if (len && bpf_probe_read_user(buf + (off & VG_OFF_MASK), len, (const void *)start) != 0) {
    vg_drop(VG_DROP_READ_FAIL);
    return 0;
  }
  return len;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(vg_sched_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
  if (vg_is_self())
    return 0;
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return 0;
  struct vg_exec *e = (struct vg_exec *)buf;
  vg_fill_hdr(&e->hdr, VG_EXEC);
  e->flags = 0;
  e->flags2 = 0;
  e->env_len = 0;
  e->pad1 = 0;

  /* controlling tty */
  struct tty_struct *tty = BPF_CORE_READ(p, signal, tty);
  e->tty = 0;
  if (tty) {
    int major = BPF_CORE_READ(tty, driver, major);
    int minor = BPF_CORE_READ(tty, driver, minor_start) + BPF_CORE_READ(tty, index);
    e->tty = VG_MKDEV(major, minor);
  }
  e->loginuid = 0xffffffff;
  if (bpf_core_field_exists(p->loginuid))
    e->loginuid = BPF_CORE_READ(p, loginuid.val);

  struct file **fds = BPF_CORE_READ(p, files, fdt, fd);
  if (fds) {
    if (vg_is_socket(fds, 0))
      e->flags |= VG_EXEC_STDIN_SOCK;
    if (vg_is_socket(fds, 1))
      e->flags |= VG_EXEC_STDOUT_SOCK;
  }

  /* A 32-bit ELF makes compat syscalls, which the syscalls:* tracepoints
   * skip: flag it. bprm->buf holds the head of the file that runs (the
   * interpreter's, for scripts). */
  if (bprm->buf[0] == 0x7f && bprm->buf[1] == 'E' && bprm->buf[2] == 'L' && bprm->buf[3] == 'F' &&
      bprm->buf[4] == 1 /* ELFCLASS32 */)
    e->flags |= VG_EXEC_ELF32;

  /* The new program's credentials (committed before this tracepoint). */
  const struct cred *cred = BPF_CORE_READ(p, cred);
  e->cap_effective = 0;
  e->cap_permitted = 0;
  e->cap_inheritable = 0;
  bpf_core_read(&e->cap_effective, sizeof(e->cap_effective), &cred->cap_effective);
  bpf_core_read(&e->cap_permitted, sizeof(e->cap_permitted), &cred->cap_permitted);
  bpf_core_read(&e->cap_inheritable, sizeof(e->cap_inheritable), &cred->cap_inheritable);
  e->flags |= exe_flags(BPF_CORE_READ(bprm, file), cred, e->cap_effective);
  struct inode *exe_inode = BPF_CORE_READ(bprm, file, f_inode);
  e->exe_ino = BPF_CORE_READ(exe_inode, i_ino);
  e->exe_dev = BPF_CORE_READ(exe_inode, i_sb, s_dev);
  e->exe_ctime_ns = vg_inode_ctime_ns(exe_inode);
  e->pad2 = 0;
  e->exe_mtime_ns = vg_inode_mtime_ns(exe_inode);

  /* Session and process group: the session by the host's number, the group
   * as the process's own pid namespace numbers it. */
  struct pid *sidp = BPF_CORE_READ(p, signal, pids[PIDTYPE_SID]);
  struct pid *pgp = BPF_CORE_READ(p, signal, pids[PIDTYPE_PGID]);
  unsigned int level = BPF_CORE_READ(p, thread_pid, level);
  e->sid = BPF_CORE_READ(sidp, numbers[0].nr);
  e->vpgid = 0;
  if (pgp && BPF_CORE_READ(pgp, level) >= level)
    e->vpgid = BPF_CORE_READ(pgp, numbers[level & 31].nr);

  __u8 trunc = 0;
  __u32 off = sizeof(*e);
  const char *filename = BPF_CORE_READ(bprm, filename);
  __u32 n = vg_put_kernel_str(buf, off, filename, VG_PATH_MAX, &trunc);
  e->filename_len = n;
  off += n;

  struct file *exe = BPF_CORE_READ(bprm, file);
  n = vg_put_dpath(buf, off, BPF_CORE_READ(exe, f_path.dentry), BPF_CORE_READ(exe, f_path.mnt),
                   &trunc);
  if (n == 0 && (e->flags & VG_EXEC_MEMFD)) {
    /* A memfd lives on an internal mount no walk reaches: its name
     * ("memfd:NAME", what Falco's proc.exepath gives) as the one component. */
    n = vg_put_kernel_str(buf, off, BPF_CORE_READ(exe, f_path.dentry, d_name.name), 256, &trunc);
  }
  e->exe_len = n;
  off += n;

  /* argv: the new program's argument area */
  struct mm_struct *mm = BPF_CORE_READ(p, mm);
  int cut = 0;
  __u32 alen = put_user_area(buf, off, BPF_CORE_READ(mm, arg_start), BPF_CORE_READ(mm, arg_end),
                             VG_ARGS_MAX, &cut);
  if (cut)
    e->flags |= VG_EXEC_ARGS_TRUNC;
  e->args_len = alen;
  off += alen;

  n = vg_put_dpath(buf, off, BPF_CORE_READ(p, fs, pwd.dentry), BPF_CORE_READ(p, fs, pwd.mnt),
                   &trunc);
  e->cwd_len = n;
  off += n;

  const char *interp = BPF_CORE_READ(bprm, interp);
  n = 0;
  if (interp && interp != filename)
    n = vg_put_kernel_str(buf, off, interp, 256, &trunc);
  e->interp_len = n;
  off += n;

  /* The environment: the start of the new program's envp area, the same
   * pages the kernel just wrote argv into, so one more copy of resident
   * memory. It goes last, so a long one only loses its own tail. */
  cut = 0;
  __u32 vlen = put_user_area(buf, off, BPF_CORE_READ(mm, env_start), BPF_CORE_READ(mm, env_end),
                             VG_ENV_MAX, &cut);
  if (cut)
    e->flags2 |= VG_EXEC2_ENV_TRUNC;
  e->env_len = vlen;
  off += vlen;

  if (cfg_watch_comm) {
    __u32 tgid = BPF_CORE_READ(p, tgid);
    __u64 c8 = 0;
    bpf_probe_read_kernel(&c8, sizeof(c8), p->comm);
    if ((c8 & cfg_watch_comm_mask) == cfg_watch_comm) {
      __u8 one = 1;
      long r = bpf_map_update_elem(&watched, &tgid, &one, BPF_NOEXIST);
      if (r == 0)
        __sync_fetch_and_add(&vg_watched_live, 1);
      else if (r != -EEXIST)
        vg_drop(VG_DROP_MAP_FULL);
    } else if (vg_watched_live && bpf_map_delete_elem(&watched, &tgid) == 0) {
      __sync_fetch_and_add(&vg_watched_live,
                           (__u32)-1); /* it ran a hook, now runs something else */
    }
  }

  if (trunc)
    e->flags |= VG_EXEC_PATH_TRUNC;

  /* A program an enforced rule denies is killed here, in its own context,
   * before it runs its first instruction: the exec itself succeeded (the
   * record says what ran, and that it was killed), the process never
   * returns to user space. */
  int kill = 0;
  __u64 cand = 0;
  if (vg_pol_cgroup(vg_pol.exec, &cand)) {
    struct vg_pol_facts f = {};
    f.comm_bits = vg_pol_comm_bits(cand);
    f.exec = e->flags;
    f.exe_bits = vg_pol_exe_bits(cand, e->exe_ino, e->exe_dev, e->exe_ctime_ns);
    if (!f.exe_bits)
      f.exe_bits = vg_pol_buildid_bits(ctx, cand);
    kill = vg_pol_match(cand, &f) >= 0;
  }
  if (kill)
    e->flags2 |= VG_EXEC2_KILLED;
  vg_submit(buf, off);
  if (kill)
    bpf_send_signal(VG_SIGKILL);
  return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(vg_sched_fork, struct task_struct *parent, struct task_struct *child)
{
  if (vg_is_self())
    return 0;
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return 0;
  struct vg_fork *e = (struct vg_fork *)buf;
  vg_fill_hdr(&e->hdr, VG_FORK);
  e->child_pid = BPF_CORE_READ(child, tgid);
  e->child_tid = BPF_CORE_READ(child, pid);
  e->flags = e->child_pid == BPF_CORE_READ(parent, tgid) ? VG_FORK_THREAD : 0;
  e->pad0 = 0;
  vg_submit(buf, sizeof(*e));
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(vg_sched_exit, struct task_struct *p)
{
  if (vg_is_self())
    return 0;
  /* Only when the whole thread group is gone: signal->live reached 0 just
   * before this tracepoint fires. */
  int live = BPF_CORE_READ(p, signal, live.counter);
  if (live != 0)
    return 0;
  if (vg_watched_live) {
    __u32 tgid = BPF_CORE_READ(p, tgid);
    if (bpf_map_delete_elem(&watched, &tgid) == 0)
      __sync_fetch_and_add(&vg_watched_live, (__u32)-1);
  }
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return 0;
  struct vg_exit *e = (struct vg_exit *)buf;
  vg_fill_hdr(&e->hdr, VG_EXIT);
  e->exit_code = BPF_CORE_READ(p, exit_code);
  e->pad0 = 0;
  vg_submit(buf, sizeof(*e));
  return 0;
}
