// SPDX-License-Identifier: GPL-2.0
/* The rarer syscalls Falco's rules ask about: symlink, link, unlink, rename,
 * mkdir, rmdir, chmod, mknod (paths as given), ptrace, socket, init_module and
 * finit_module. Each has a sys_exit program that reads its arguments from the
 * saved user registers (vg_sys_args); user space attaches a syscall's
 * programs only when a loaded rule asks for its event type. None of these
 * calls is frequent enough for the per-syscall tracepoint to matter
 * (DESIGN.md "Pick hooks by what they cost"); dup is in fd/socket.bpf.c, beside
 * the socket reads it shares with connect. */
#include "bpf/progs/helpers.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Attached to the sys_enter tracepoint of each syscall below, only where
 * the exit programs cannot read the registers (see vg_sys_args). */
SEC("tracepoint")
int vg_enter_args(struct trace_event_raw_sys_enter *ctx)
{
  if (vg_is_self())
    return 0;
  /* A helper read, not loads from the context: the kernel refuses to attach
   * a program whose loads reach past the record of a syscall with fewer
   * arguments (rmdir has one), and a program shared by all of them would. The
   * record sits in a per-CPU buffer larger than six arguments; the extra words
   * are never used for a call that lacks them. */
  struct vg_sys_args a = {};
  bpf_probe_read_kernel(&a, sizeof(a),
                        (const __u8 *)ctx +
                            __builtin_offsetof(struct trace_event_raw_sys_enter, args));
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  if (bpf_map_update_elem(&pending_args, &tid, &a, BPF_ANY) != 0)
    vg_drop(VG_DROP_MAP_FULL);
  return 0;
}

/* One path-call record. p1/p2: user pointers to the paths (0: none). */
static __always_inline void fileop_send(__u16 type, __u8 sc, long ret, const char *p1,
                                        const char *p2, __s32 fd, __s32 fd2, __u32 flags,
                                        __u32 mode)
{
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return;
  struct vg_fileop *e = (struct vg_fileop *)buf;
  vg_fill_hdr(&e->hdr, type);
  e->result = ret;
  e->fd = fd;
  e->fd2 = fd2;
  e->flags = flags;
  e->mode = mode;
  e->syscall = sc;
  e->pad0[0] = e->pad0[1] = e->pad0[2] = 0;
  __u8 trunc = 0;
  __u32 off = sizeof(*e);
  __u32 n = vg_put_user_str(buf, off, p1, VG_PATH_MAX, &trunc);
  e->path_len = n;
  off += n;
  n = p2 ? vg_put_user_str(buf, off, p2, VG_PATH_MAX, &trunc) : 0;
  e->path2_len = n;
  off += n;
  vg_submit(buf, off);
}

#define VG_EXIT_PROG(name)                                                                         \
  SEC("tracepoint/syscalls/sys_exit_" #name)                                                       \
  int vg_exit_##name(struct trace_event_raw_sys_exit *ctx)

#define VG_ARGS_OR_RETURN(a)                                                                       \
  struct vg_sys_args a;                                                                            \
  if (!vg_sys_args(&a))                                                                            \
  return 0

#define P(i) ((const char *)a.a[i])
#define FD(i) ((__s32)a.a[i])
#define U(i) ((__u32)a.a[i])

/* One exit program per path call: fileop_send(type, call, ret, args...)
 * with the arguments in that call's order. */
#define VG_FILEOP_EXIT(name, type, sc, ...)                                                        \
  VG_EXIT_PROG(name)                                                                               \
  {                                                                                                \
    VG_ARGS_OR_RETURN(a);                                                                          \
    fileop_send(type, sc, ctx->ret, __VA_ARGS__);                                                  \
    return 0;                                                                                      \
  }

VG_FILEOP_EXIT(symlink, VG_SYMLINK, VG_SC_SYMLINK, P(0), P(1), VG_AT_FDCWD, VG_AT_FDCWD, 0, 0)
VG_FILEOP_EXIT(symlinkat, VG_SYMLINK, VG_SC_SYMLINKAT, P(0), P(2), VG_AT_FDCWD, FD(1), 0, 0)
VG_FILEOP_EXIT(link, VG_LINK, VG_SC_LINK, P(0), P(1), VG_AT_FDCWD, VG_AT_FDCWD, 0, 0)
VG_FILEOP_EXIT(linkat, VG_LINK, VG_SC_LINKAT, P(1), P(3), FD(0), FD(2), U(4), 0)
VG_FILEOP_EXIT(unlink, VG_UNLINK, VG_SC_UNLINK, P(0), 0, VG_AT_FDCWD, VG_AT_FDCWD, 0, 0)
VG_FILEOP_EXIT(unlinkat, VG_UNLINK, VG_SC_UNLINKAT, P(1), 0, FD(0), VG_AT_FDCWD, U(2), 0)
VG_FILEOP_EXIT(rename, VG_RENAME, VG_SC_RENAME, P(0), P(1), VG_AT_FDCWD, VG_AT_FDCWD, 0, 0)
VG_FILEOP_EXIT(renameat, VG_RENAME, VG_SC_RENAMEAT, P(1), P(3), FD(0), FD(2), 0, 0)
VG_FILEOP_EXIT(renameat2, VG_RENAME, VG_SC_RENAMEAT2, P(1), P(3), FD(0), FD(2), U(4), 0)
VG_FILEOP_EXIT(mkdir, VG_MKDIR, VG_SC_MKDIR, P(0), 0, VG_AT_FDCWD, VG_AT_FDCWD, 0, U(1))
VG_FILEOP_EXIT(mkdirat, VG_MKDIR, VG_SC_MKDIRAT, P(1), 0, FD(0), VG_AT_FDCWD, 0, U(2))
VG_FILEOP_EXIT(rmdir, VG_RMDIR, VG_SC_RMDIR, P(0), 0, VG_AT_FDCWD, VG_AT_FDCWD, 0, 0)
VG_FILEOP_EXIT(chmod, VG_CHMOD, VG_SC_CHMOD, P(0), 0, VG_AT_FDCWD, VG_AT_FDCWD, 0, U(1))
VG_FILEOP_EXIT(fchmod, VG_CHMOD, VG_SC_FCHMOD, 0, 0, FD(0), VG_AT_FDCWD, 0, U(1))
VG_FILEOP_EXIT(fchmodat, VG_CHMOD, VG_SC_FCHMODAT, P(1), 0, FD(0), VG_AT_FDCWD, 0, U(2))
/* mknod's dev goes in the record's flags. */
VG_FILEOP_EXIT(mknod, VG_MKNOD, VG_SC_MKNOD, P(0), 0, VG_AT_FDCWD, VG_AT_FDCWD, U(2), U(1))
VG_FILEOP_EXIT(mknodat, VG_MKNOD, VG_SC_MKNODAT, P(1), 0, FD(0), VG_AT_FDCWD, U(3), U(2))

/* init_module, finit_module (str: the parameters), delete_module (str: the
 * module's name). */
static __always_inline void module_send(__u16 type, __u8 sc, long ret, __s32 fd, const char *str,
                                        __u32 flags)
{
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return;
  struct vg_module *e = (struct vg_module *)buf;
  vg_fill_hdr(&e->hdr, type);
  e->result = ret;
  e->fd = fd;
  e->flags = flags;
  e->syscall = sc;
  for (int i = 0; i < 5; i++)
    e->pad0[i] = 0;
  __u8 trunc = 0;
  __u32 n = vg_put_user_str(buf, sizeof(*e), str, 256, &trunc);
  e->args_len = n;
  vg_submit(buf, sizeof(*e) + n);
}

VG_EXIT_PROG(init_module)
{
  VG_ARGS_OR_RETURN(a);
  module_send(VG_MODULE, VG_SC_INIT_MODULE, ctx->ret, -1, P(2), 0);
  return 0;
}

VG_EXIT_PROG(delete_module)
{
  VG_ARGS_OR_RETURN(a);
  module_send(VG_DELETE_MODULE, VG_SC_DELETE_MODULE, ctx->ret, -1, P(0), U(1));
  return 0;
}

VG_EXIT_PROG(finit_module)
{
  VG_ARGS_OR_RETURN(a);
  module_send(VG_MODULE, VG_SC_FINIT_MODULE, ctx->ret, FD(0), P(1), U(2));
  return 0;
}

/* setuid & co, setns, unshare, userfaultfd, memfd_create, prctl,
 * io_uring_setup, ptrace, socket: a few numbers, and memfd_create's name. */
static __always_inline void sys_send(__u16 type, __u8 sc, long ret, __u64 a0, __u64 a1, __u64 a2,
                                     __u64 a3, const char *str)
{
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return;
  struct vg_sys *e = (struct vg_sys *)buf;
  vg_fill_hdr(&e->hdr, type);
  e->result = ret;
  e->a[0] = a0;
  e->a[1] = a1;
  e->a[2] = a2;
  e->a[3] = a3;
  e->syscall = sc;
  for (int i = 0; i < 5; i++)
    e->pad0[i] = 0;
  __u8 trunc = 0;
  __u32 n = str ? vg_put_user_str(buf, sizeof(*e), str, 256, &trunc) : 0;
  e->str_len = n;
  vg_submit(buf, sizeof(*e) + n);
}

#define VG_SYS_EXIT(name, type, sc, nargs, str)                                                    \
  VG_EXIT_PROG(name)                                                                               \
  {                                                                                                \
    VG_ARGS_OR_RETURN(a);                                                                          \
    sys_send(type, sc, ctx->ret, a.a[0], (nargs) > 1 ? a.a[1] : 0, (nargs) > 2 ? a.a[2] : 0,       \
             (nargs) > 3 ? a.a[3] : 0, (str));                                                     \
    return 0;                                                                                      \
  }

VG_SYS_EXIT(setuid, VG_SETUID, VG_SC_SETUID, 1, 0)
VG_SYS_EXIT(setreuid, VG_SETUID, VG_SC_SETREUID, 2, 0)
VG_SYS_EXIT(setresuid, VG_SETUID, VG_SC_SETRESUID, 3, 0)
VG_SYS_EXIT(setgid, VG_SETGID, VG_SC_SETGID, 1, 0)
VG_SYS_EXIT(setregid, VG_SETGID, VG_SC_SETREGID, 2, 0)
VG_SYS_EXIT(setresgid, VG_SETGID, VG_SC_SETRESGID, 3, 0)
VG_SYS_EXIT(setns, VG_SETNS, 0, 2, 0)
VG_SYS_EXIT(unshare, VG_UNSHARE, 0, 1, 0)
VG_SYS_EXIT(userfaultfd, VG_USERFAULTFD, 0, 1, 0)
VG_SYS_EXIT(memfd_create, VG_MEMFD_CREATE, 0, 2, P(0))
VG_SYS_EXIT(prctl, VG_PRCTL, 0, 4, 0)
VG_SYS_EXIT(io_uring_setup, VG_IO_URING_SETUP, 0, 1, 0)

/* ptrace: a[3] is 1 when the tracee is vigil's process. After a successful
 * PTRACE_ATTACH or PTRACE_SEIZE the tracee heads the tracer thread's
 * `ptraced` list (ptrace_link adds it there), so its thread group is read
 * from the kernel whichever thread id the caller named; otherwise the pid
 * given is compared, for callers in the initial pid namespace (whose pid
 * numbers are vigil's). */
#define VG_PTRACE_ATTACH 16
#define VG_PTRACE_SEIZE 0x4206
VG_EXIT_PROG(ptrace)
{
  VG_ARGS_OR_RETURN(a);
  __u64 to_vigil = 0;
  struct task_struct *t = (struct task_struct *)bpf_get_current_task();
  if (ctx->ret == 0 && (a.a[0] == VG_PTRACE_ATTACH || a.a[0] == VG_PTRACE_SEIZE)) {
    __u64 first = (__u64)BPF_CORE_READ(t, ptraced.next);
    __u64 head = (__u64)t + bpf_core_field_offset(struct task_struct, ptraced);
    if (first && first != head) {
      struct task_struct *tracee =
          (struct task_struct *)(first - bpf_core_field_offset(struct task_struct, ptrace_entry));
      to_vigil = BPF_CORE_READ(tracee, tgid) == cfg_vigil_tgid;
    }
  } else if (BPF_CORE_READ(t, thread_pid, level) == 0) {
    to_vigil = (__u32)a.a[1] == cfg_vigil_tgid;
  }
  sys_send(VG_PTRACE, 0, ctx->ret, a.a[0], a.a[1], a.a[2], to_vigil, 0);
  return 0;
}
VG_SYS_EXIT(socket, VG_SOCKET, 0, 3, 0)

/* capset: the sets the task holds after the call, from its credentials (the
 * caller's buffer could be rewritten; the kernel's copy is what counts). */
VG_EXIT_PROG(capset)
{
  VG_ARGS_OR_RETURN(a);
  struct task_struct *t = (struct task_struct *)bpf_get_current_task();
  const struct cred *cred = BPF_CORE_READ(t, cred);
  __u64 eff = 0, prm = 0, inh = 0;
  bpf_core_read(&eff, sizeof(eff), &cred->cap_effective);
  bpf_core_read(&prm, sizeof(prm), &cred->cap_permitted);
  bpf_core_read(&inh, sizeof(inh), &cred->cap_inheritable);
  sys_send(VG_CAPSET, 0, ctx->ret, eff, prm, inh, 0, 0);
  return 0;
}
