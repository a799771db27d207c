// SPDX-License-Identifier: GPL-2.0
/* Sockets and the fds behind them: connect() with the destination the
 * socket holds, and the calls that make or move a socket fd (dup, dup2,
 * dup3, accept, accept4, listen, bind) with the socket's endpoints.
 * Compiled as part of fd.bpf.c (which says why). */
#include "bpf/progs/helpers.bpf.h"
#include <bpf/bpf_endian.h>

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
  __be32 w4;      /* sin_addr; sin6_flowinfo */
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
  struct vg_connect_args a = {
      .addr = ctx->args[1], .len = (__u32)ctx->args[2], .fd = (__s32)ctx->args[0]};
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
static __always_inline void sockfd_send(__u16 type, __u8 sc, long ret, __s32 fd, __s32 sock_fd,
                                        __u32 flags)
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

#define VG_SOCKFD_EXIT(name, type, sc, sock_fd_expr, flags_expr)                                   \
  SEC("tracepoint/syscalls/sys_exit_" #name)                                                       \
  int vg_exit_##name(struct trace_event_raw_sys_exit *ctx)                                         \
  {                                                                                                \
    struct vg_sys_args a;                                                                          \
    if (vg_sys_args(&a))                                                                           \
      sockfd_send(type, sc, ctx->ret, (__s32)a.a[0], (sock_fd_expr), (flags_expr));                \
    return 0;                                                                                      \
  }

VG_SOCKFD_EXIT(dup, VG_DUP, VG_SC_DUP, (__s32)a.a[0], 0)
VG_SOCKFD_EXIT(dup2, VG_DUP, VG_SC_DUP2, (__s32)a.a[0], 0)
VG_SOCKFD_EXIT(dup3, VG_DUP, VG_SC_DUP3, (__s32)a.a[0], (__u32)a.a[2])
VG_SOCKFD_EXIT(accept, VG_ACCEPT, VG_SC_ACCEPT, (__s32)ctx->ret, 0)
VG_SOCKFD_EXIT(accept4, VG_ACCEPT, VG_SC_ACCEPT4, (__s32)ctx->ret, (__u32)a.a[3])
VG_SOCKFD_EXIT(listen, VG_LISTEN, 0, (__s32)a.a[0], (__u32)a.a[1])
VG_SOCKFD_EXIT(bind, VG_BIND, 0, (__s32)a.a[0], 0)
