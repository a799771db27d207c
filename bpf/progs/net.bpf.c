// SPDX-License-Identifier: GPL-2.0
/* Unconnected UDP sends, DNS and the first bytes of new TCP connections (the
 * connect syscall itself is reported from fd/socket.bpf.c, which reads the
 * destination from the socket behind the fd).
 *
 * cgroup/sendmsg4|6 on the cgroup v2 root see every unconnected UDP send of
 * every container; cgroup/connect4|6 (attached only when a rule wants the
 * first bytes) mark new TCP sockets with their owner (socket local storage).
 * cgroup_skb/egress|ingress on the root see packets: UDP port 53 for DNS, and
 * the first data segment of the marked sockets. Every other packet is judged
 * from its socket before a byte of it is read: a TCP packet costs one storage
 * lookup, a packet of any other protocol none. */
#include "bpf/progs/helpers.bpf.h"
#include "bpf/progs/policy.bpf.h"
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "GPL";

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD

/* Per-socket owner, set at connect (TCP: payload wanted) or at a DNS query
 * (UDP): who to attribute later packets of this socket to. */
struct vg_sk_owner {
  struct vg_hdr hdr;
  __u32 want_payload;
  __u32 pad;
};

struct {
  __uint(type, BPF_MAP_TYPE_SK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct vg_sk_owner);
} sk_owner SEC(".maps");

/* Unconnected UDP sends reported once per socket and destination. */
struct vg_send_key {
  __u64 cookie;
  __u8 daddr[16];
  __u16 dport;
  __u16 pad0;
  __u32 pad1;
};

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, struct vg_send_key);
  __type(value, __u8);
} sent_once SEC(".maps");

/* A TCP connect: the socket is marked so that its first data segment is
 * captured (on_tcp_egress), with the connecting task as its owner. Attached
 * only when a rule asks for the first bytes; the connect event itself comes
 * from sys_exit_connect. */
static __always_inline int on_connect(struct bpf_sock_addr *ctx, int v6)
{
  if (vg_pol_refuse_dest(ctx, v6))
    return 0; /* EPERM: reported by sys_exit_connect with its destination */
  if (!vg_of.want_payload || ctx->type != SOCK_STREAM || !ctx->sk || vg_is_self())
    return 1;
  struct vg_sk_owner *o = bpf_sk_storage_get(&sk_owner, ctx->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
  if (!o) {
    vg_drop(VG_DROP_MAP_FULL);
    return 1;
  }
  vg_fill_hdr_sock(&o->hdr, VG_PAYLOAD);
  o->want_payload = 1;
  return 1;
}

static __always_inline int on_sendmsg(struct bpf_sock_addr *ctx, int v6)
{
  if (vg_is_self())
    return 1;
  const int refused = vg_pol_refuse_dest(ctx, v6);
  struct vg_send_key k = {.cookie = bpf_get_socket_cookie(ctx),
                          .dport = bpf_ntohs((__u16)ctx->user_port)};
  if (v6) {
    __u32 *d = (__u32 *)k.daddr;
    d[0] = ctx->user_ip6[0];
    d[1] = ctx->user_ip6[1];
    d[2] = ctx->user_ip6[2];
    d[3] = ctx->user_ip6[3];
  } else {
    *(__u32 *)k.daddr = ctx->user_ip4;
  }
  if (bpf_map_lookup_elem(&sent_once, &k))
    return !refused; /* reported once per socket and destination, refused or not */
  __u8 one = 1;
  bpf_map_update_elem(&sent_once, &k, &one, BPF_ANY);
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return !refused;
  struct vg_connect *c = (struct vg_connect *)buf;
  __builtin_memset(c, 0, sizeof(*c));
  vg_fill_hdr_sock(&c->hdr, VG_CONNECT);
  c->family = v6 ? AF_INET6 : AF_INET;
  c->proto = ctx->type == SOCK_STREAM ? VG_L4_TCP : ctx->type == SOCK_DGRAM ? VG_L4_UDP : 0;
  c->dport = k.dport;
  __builtin_memcpy(c->daddr, k.daddr, sizeof(c->daddr));
  c->flags = VG_CONN_SENDMSG;
  if (refused) {
    c->flags |= VG_CONN_HAS_RESULT;
    c->result = -VG_EPERM;
  }
  vg_submit((__u8 *)c, sizeof(*c));
  return !refused;
}

SEC("cgroup/connect4")
int vg_connect4(struct bpf_sock_addr *ctx)
{
  return on_connect(ctx, 0);
}

SEC("cgroup/connect6")
int vg_connect6(struct bpf_sock_addr *ctx)
{
  return on_connect(ctx, 1);
}

SEC("cgroup/sendmsg4")
int vg_sendmsg4(struct bpf_sock_addr *ctx)
{
  return on_sendmsg(ctx, 0);
}

SEC("cgroup/sendmsg6")
int vg_sendmsg6(struct bpf_sock_addr *ctx)
{
  return on_sendmsg(ctx, 1);
}

/* ---------------- packets ---------------- */

struct vg_l4 {
  __u16 family;
  __u8 proto;
  __u8 pad;
  __u32 l4_off;
  __u8 saddr[16];
  __u8 daddr[16];
};

static __always_inline int parse_ip(struct __sk_buff *skb, struct vg_l4 *l)
{
  __builtin_memset(l, 0, sizeof(*l));
  if (skb->protocol == bpf_htons(ETH_P_IP)) {
    struct iphdr ip;
    if (bpf_skb_load_bytes(skb, 0, &ip, sizeof(ip)) != 0)
      return -1;
    if (ip.frag_off & bpf_htons(0x1fff)) /* not the first fragment */
      return -1;
    l->family = AF_INET;
    l->proto = ip.protocol;
    l->l4_off = (ip.ihl & 0xf) * 4;
    __builtin_memcpy(l->saddr, &ip.saddr, 4);
    __builtin_memcpy(l->daddr, &ip.daddr, 4);
    return 0;
  }
  if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr ip6;
    if (bpf_skb_load_bytes(skb, 0, &ip6, sizeof(ip6)) != 0)
      return -1;
    l->family = AF_INET6;
    l->proto = ip6.nexthdr; /* extension headers are not followed */
    l->l4_off = sizeof(ip6);
    __builtin_memcpy(l->saddr, &ip6.saddr, 16);
    __builtin_memcpy(l->daddr, &ip6.daddr, 16);
    return 0;
  }
  return -1;
}

/* Header of a packet event from the socket's owner when known, else from the
 * current task (egress runs in the sender's context for UDP). */
static __always_inline void skb_hdr(struct vg_hdr *h, __u16 type, struct vg_sk_owner *o,
                                    struct __sk_buff *skb, int ingress)
{
  if (o) {
    __builtin_memcpy(h, &o->hdr, sizeof(*h));
    h->type = type;
    h->ts_ns = bpf_ktime_get_boot_ns();
    return;
  }
  struct task_struct *t = (struct task_struct *)bpf_get_current_task();
  __builtin_memset(h, 0, sizeof(*h));
  h->type = type;
  h->abi = VG_ABI_VERSION;
  h->ts_ns = bpf_ktime_get_boot_ns();
  h->cgroup_id = bpf_skb_cgroup_id(skb);
  if (ingress) {
    h->flags = VG_HF_NO_TASK;
    return;
  }
  h->pid = BPF_CORE_READ(t, tgid);
  h->tid = BPF_CORE_READ(t, pid);
  h->ppid = BPF_CORE_READ(t, real_parent, tgid);
  h->uid = BPF_CORE_READ(t, cred, uid.val);
  h->gid = BPF_CORE_READ(t, cred, gid.val);
  h->mnt_ns = BPF_CORE_READ(t, nsproxy, mnt_ns, ns.inum);
  h->net_ns = BPF_CORE_READ(t, nsproxy, net_ns, ns.inum);
  struct pid *tp = BPF_CORE_READ(t, thread_pid);
  unsigned int level = BPF_CORE_READ(tp, level);
  h->pid_ns = BPF_CORE_READ(tp, numbers[level & 31].ns, ns.inum);
  bpf_probe_read_kernel_str(h->comm, sizeof(h->comm), &t->comm);
}

static __always_inline int on_dns(struct __sk_buff *skb, struct vg_l4 *l, __u16 sport, __u16 dport,
                                  int ingress)
{
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return 1;
  struct vg_sk_owner *o = 0;
  struct bpf_sock *sk = skb->sk;
  if (sk)
    sk = bpf_sk_fullsock(sk);
  if (sk) {
    o = bpf_sk_storage_get(&sk_owner, sk, 0, ingress ? 0 : BPF_SK_STORAGE_GET_F_CREATE);
    if (o && !ingress) {
      /* remember the querier so the answer can be attributed to it */
      skb_hdr(&o->hdr, VG_DNS, 0, skb, 0);
      o->want_payload = 0;
    }
  }
  struct vg_dns *e = (struct vg_dns *)buf;
  skb_hdr(&e->hdr, VG_DNS, o, skb, ingress);
  e->family = l->family;
  e->ingress = ingress;
  e->pad0 = 0;
  e->sport = sport;
  e->dport = dport;
  __builtin_memcpy(e->saddr, l->saddr, 16);
  __builtin_memcpy(e->daddr, l->daddr, 16);
  __u32 off = l->l4_off + 8;
  __u32 len = skb->len > off ? skb->len - off : 0;
  e->wire_len = len;
  if (len < 12)
    return 1;
  if (len > VG_DNS_MAX) {
    len = VG_DNS_MAX;
    vg_drop(VG_DROP_TRUNCATED);
  }
  e->pad1 = 0;
  __u64 n = VG_SIZE_BOUND(len, 511);
  if (bpf_skb_load_bytes(skb, off, buf + sizeof(*e), n) != 0) {
    vg_drop(VG_DROP_READ_FAIL);
    return 1;
  }
  e->dns_len = len;
  vg_submit(buf, sizeof(*e) + len);
  return 1;
}

/* The first data segment of a socket marked at connect (`o`, want_payload
 * set): its first bytes, once. */
static __always_inline int on_tcp_egress(struct __sk_buff *skb, struct vg_l4 *l,
                                         struct vg_sk_owner *o)
{
  struct tcphdr th;
  if (bpf_skb_load_bytes(skb, l->l4_off, &th, sizeof(th)) != 0)
    return 1;
  __u32 off = l->l4_off + th.doff * 4;
  if (skb->len <= off)
    return 1; /* SYN, pure ACK: no data yet */
  o->want_payload = 0;
  __u8 *buf = vg_scratch_buf();
  if (!buf)
    return 1;
  struct vg_payload *e = (struct vg_payload *)buf;
  skb_hdr(&e->hdr, VG_PAYLOAD, o, skb, 0);
  e->family = l->family;
  e->sport = bpf_ntohs(th.source);
  e->dport = bpf_ntohs(th.dest);
  __builtin_memcpy(e->saddr, l->saddr, 16);
  __builtin_memcpy(e->daddr, l->daddr, 16);
  __u32 len = skb->len - off;
  e->wire_len = len;
  e->pad0 = 0;
  __u32 want = cfg_payload_bytes;
  if (want > VG_PAYLOAD_MAX)
    want = VG_PAYLOAD_MAX;
  if (len > want) {
    len = want;
    vg_drop(VG_DROP_TRUNCATED);
  }
  if (len == 0 || len > VG_PAYLOAD_MAX)
    return 1;
  __u64 n = VG_SIZE_BOUND(len, 4095); /* VG_PAYLOAD_MAX - 1 */
  if (bpf_skb_load_bytes(skb, off, buf + sizeof(*e), n) != 0) {
    vg_drop(VG_DROP_READ_FAIL);
    return 1;
  }
  e->data_len = len;
  vg_submit(buf, sizeof(*e) + len);
  return 1;
}

/* Bytes sent per container cgroup and destination: counted here, reported
 * and reset by the sensor every egress interval (egress events). Bounded:
 * an LRU map, whose oldest destinations give way (their bytes since the last
 * report are lost, and a full map is counted). */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, struct vg_egress_key);
  __type(value, struct vg_egress_val);
} egress_bytes SEC(".maps");

/* One packet's bytes to its destination. Loopback is left out (it never
 * leaves the node), and so are protocols other than TCP and UDP. */
static __always_inline void count_egress(struct __sk_buff *skb)
{
  struct vg_l4 l;
  if (parse_ip(skb, &l) != 0 || (l.proto != IPPROTO_TCP && l.proto != IPPROTO_UDP))
    return;
  if (l.family == AF_INET && l.daddr[0] == 127)
    return;
  if (l.family == AF_INET6) {
    const __u64 *w = (const __u64 *)l.daddr;
    if (w[0] == 0 && w[1] == bpf_cpu_to_be64(1))
      return; /* ::1 */
  }
  __u16 dport = 0;
  if (bpf_skb_load_bytes(skb, l.l4_off + 2, &dport, sizeof(dport)) != 0)
    return;
  struct vg_egress_key k = {};
  k.cgroup_id = bpf_skb_cgroup_id(skb);
  __builtin_memcpy(k.daddr, l.daddr, sizeof(k.daddr));
  k.dport = bpf_ntohs(dport);
  k.family = (__u8)l.family;
  k.proto = l.proto;
  struct vg_egress_val *v = bpf_map_lookup_elem(&egress_bytes, &k);
  if (!v) {
    struct vg_egress_val first = {};
    /* Another CPU may have made it meanwhile: either way, look it up. */
    bpf_map_update_elem(&egress_bytes, &k, &first, BPF_NOEXIST);
    v = bpf_map_lookup_elem(&egress_bytes, &k);
    if (!v) {
      vg_drop(VG_DROP_MAP_FULL);
      return;
    }
  }
  __sync_fetch_and_add(&v->bytes, skb->len);
  __sync_fetch_and_add(&v->packets, 1);
}

SEC("cgroup_skb/egress")
int vg_skb_egress(struct __sk_buff *skb)
{
  if (vg_of.want_egress)
    count_egress(skb);
  /* Judged from the socket first: a TCP packet of an unmarked socket (nearly
   * all of them) is done after one storage lookup, without reading a byte. */
  struct bpf_sock *sk = skb->sk;
  if (sk)
    sk = bpf_sk_fullsock(sk);
  struct vg_sk_owner *o = 0;
  if (sk) {
    if (sk->protocol == IPPROTO_TCP) {
      if (!vg_of.want_payload)
        return 1;
      o = bpf_sk_storage_get(&sk_owner, sk, 0, 0);
      if (!o || !o->want_payload)
        return 1;
    } else if (sk->protocol != IPPROTO_UDP) {
      return 1;
    }
  }
  struct vg_l4 l;
  if (parse_ip(skb, &l) != 0)
    return 1;
  if (l.proto == IPPROTO_UDP) {
    struct udphdr uh;
    if (bpf_skb_load_bytes(skb, l.l4_off, &uh, sizeof(uh)) != 0)
      return 1;
    if (uh.dest == bpf_htons(53))
      return on_dns(skb, &l, bpf_ntohs(uh.source), 53, 0);
    return 1;
  }
  if (l.proto == IPPROTO_TCP && o)
    return on_tcp_egress(skb, &l, o);
  return 1;
}

SEC("cgroup_skb/ingress")
int vg_skb_ingress(struct __sk_buff *skb)
{
  struct bpf_sock *sk = skb->sk;
  if (sk)
    sk = bpf_sk_fullsock(sk);
  if (sk && sk->protocol != IPPROTO_UDP)
    return 1; /* only DNS answers are read on the way in */
  struct vg_l4 l;
  if (parse_ip(skb, &l) != 0 || l.proto != IPPROTO_UDP)
    return 1;
  struct udphdr uh;
  if (bpf_skb_load_bytes(skb, l.l4_off, &uh, sizeof(uh)) != 0)
    return 1;
  if (uh.source == bpf_htons(53))
    return on_dns(skb, &l, 53, bpf_ntohs(uh.dest), 1);
  return 1;
}
