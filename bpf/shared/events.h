/* The kernel-to-user event records: the one definition shared by the BPF
 * programs (bpf/progs/NAME.bpf.c) and the user-space decoder (engine/sensor).
 *
 * Every record starts with struct vg_hdr. hdr.len is the total length of the
 * record in bytes (header + fixed body + variable data). Variable-length
 * fields follow the fixed body, in the order the body lists their lengths.
 *
 * Rules for changing this file (the ABI between kernel and user space):
 *  - only append fields at the end of a body, and bump VG_ABI_VERSION;
 *  - fixed-width types only, explicit padding, every size asserted below;
 *  - the user-space decoder treats every record as hostile: it checks hdr.len
 *    against the bytes it received and every variable length against hdr.len.
 *
 * Paths read from kernel dentries ("dpath" fields) are encoded as the path's
 * components from the leaf up to the root, each terminated by a NUL byte;
 * user space reverses them. The BPF side cannot cheaply build the string
 * front-to-back (see docs/bpf/verifier.md).
 */
#ifndef VIGIL_BPF_SHARED_EVENTS_H
#define VIGIL_BPF_SHARED_EVENTS_H

#ifdef __VIGIL_BPF__
/* BPF side: types come from vmlinux.h. */
#else
#include <linux/types.h>
#endif

#define VG_ABI_VERSION 4

/* Record ids: derived from the event schema (event_types.h), the same numbers
 * as vigil::event::Type. */
#include "bpf/shared/event_types.h"
#define VG_TYPE_ENUMERATOR(Cxx, C, id, ...) VG_##C = id,
enum vg_type { VG_EVENT_TYPES(VG_TYPE_ENUMERATOR) };
#undef VG_TYPE_ENUMERATOR

/* Drop reasons: index into the per-CPU "drops" array map. */
enum vg_drop {
  VG_DROP_RINGBUF_FULL = 0, /* bpf_ringbuf_output failed */
  VG_DROP_TRUNCATED = 1,    /* a string or buffer was cut to its bound */
  VG_DROP_MAP_FULL = 2,     /* a map update failed (pending syscalls, usage) */
  VG_DROP_READ_FAIL = 3,    /* a kernel/user memory read failed */
  VG_DROP_COUNT = 4,
};

/* Bounds of variable-length fields (bytes). */
#define VG_COMM_LEN 16
#define VG_PATH_MAX 1024     /* a filename given to exec/open */
#define VG_DPATH_MAX 1024    /* a path walked from a dentry */
#define VG_DPATH_DEPTH 32    /* components walked at most */
#define VG_ARGS_MAX 2048     /* argv bytes kept */
#define VG_ENV_MAX 4096      /* environment bytes kept (the start of envp) */
#define VG_UNIX_PATH_MAX 108 /* sizeof(sun_path) */
#define VG_XID_MSG_MAX 512
#define VG_DNS_MAX 512      /* DNS message bytes copied from a packet */
#define VG_PAYLOAD_MAX 4096 /* upper bound of Config::payload_bytes */
#define VG_PREFIX_LEN 64    /* an open-filter path's bytes, NUL included */
#define VG_RP_COMPS 4       /* path components a resolved prefix is judged by */
#define VG_CONTAINS_MAX 8   /* name fragments (fd.name contains) a traversal rule may add */

/* The largest record the BPF side can build (scratch buffer size). */
#define VG_RECORD_MAX 16384

struct vg_hdr {
  __u16 type;  /* enum vg_type */
  __u8 abi;    /* VG_ABI_VERSION */
  __u8 flags;  /* VG_HF_* */
  __u32 len;   /* total record length */
  __u64 ts_ns; /* bpf_ktime_get_boot_ns() */
  __u32 pid;   /* tgid */
  __u32 tid;
  __u32 ppid; /* real_parent's tgid */
  __u32 uid;
  __u32 gid;
  __u32 pid_ns; /* inode numbers of the task's namespaces */
  __u32 mnt_ns;
  __u32 net_ns;
  __u64 cgroup_id; /* cgroup v2 id */
  char comm[VG_COMM_LEN];
};

/* hdr.flags */
#define VG_HF_NO_TASK 0x01 /* the header fields other than cgroup_id are not the sender's */

/* exec: data = filename, exe (dpath), args (NUL-separated argv), cwd (dpath),
 * interp (string), env (NUL-separated "NAME=value" strings) */
struct vg_exec {
  struct vg_hdr hdr;
  __u32 tty; /* new_encode_dev-style: major << 20 | minor; 0 = none */
  __u32 loginuid;
  __u16 filename_len;
  __u16 exe_len;
  __u16 args_len;
  __u16 cwd_len;
  __u16 interp_len;
  __u8 flags;  /* VG_EXEC_* */
  __u8 flags2; /* VG_EXEC2_* */
  __u16 env_len;
  __u16 pad1;
  __u64 cap_effective; /* the new program's capability sets */
  __u64 cap_permitted;
  __u64 cap_inheritable;
  __u32 sid;   /* session id (the host's number) */
  __u32 vpgid; /* process group id, as seen in the process's pid namespace */
  /* The program file's inode: its identity for user space's cache
   * (engine/ident), so a process that is gone by the time its exec is read
   * still finds a file identified before. */
  __u64 exe_ino;
  __s64 exe_ctime_ns; /* inode change time (any write changes it) */
  __u32 exe_dev;      /* the kernel's dev_t of its filesystem: major << 20 | minor */
  __u32 pad2;
  __s64 exe_mtime_ns; /* inode modification time (writes to its data) */
};
#define VG_EXEC_STDIN_SOCK 0x01
#define VG_EXEC_STDOUT_SOCK 0x02
#define VG_EXEC_ARGS_TRUNC 0x04
#define VG_EXEC_PATH_TRUNC 0x08
#define VG_EXEC_ELF32 0x10      /* the new program is a 32-bit ELF (ia32/x32 syscalls) */
#define VG_EXEC_MEMFD 0x20      /* the program file is a memfd (memfd_create) */
#define VG_EXEC_UPPER 0x40      /* the program file is in an overlay's upper layer */
#define VG_EXEC_WRITABLE 0x80   /* the program file is writable by the user running it */
#define VG_EXEC2_ENV_TRUNC 0x01 /* the environment was longer than VG_ENV_MAX */
#define VG_EXEC2_KILLED                                                                            \
  0x02 /* an enforced rule denies it: killed at exec (bpf/progs/policy.bpf.h) */

struct vg_fork {
  struct vg_hdr hdr;
  __u32 child_pid;
  __u32 child_tid;
  __u32 flags; /* VG_FORK_THREAD */
  __u32 pad0;
};
#define VG_FORK_THREAD 0x01

struct vg_exit {
  struct vg_hdr hdr;
  __u32 exit_code; /* the kernel's wait status: (code << 8) | signal */
  __u32 pad0;
};

/* connect / unconnected sendmsg: data = unix path (unix_path_len bytes) */
struct vg_connect {
  struct vg_hdr hdr;
  __u16 family;   /* AF_INET, AF_INET6, AF_UNIX */
  __u8 proto;     /* VG_L4_* */
  __u8 flags;     /* VG_CONN_* */
  __u16 sport;    /* host byte order */
  __u16 dport;    /* host byte order */
  __u8 saddr[16]; /* network byte order; IPv4 in the first 4 bytes */
  __u8 daddr[16];
  __s32 result; /* valid when VG_CONN_HAS_RESULT */
  __u16 unix_path_len;
  __u16 pad0;
};
#define VG_L4_TCP 1
#define VG_L4_UDP 2
#define VG_L4_UNIX 3
#define VG_CONN_HAS_RESULT 0x01
#define VG_CONN_SENDMSG 0x02

/* open: data = path as given (path_len), the opened file's dpath (fpath_len) */
struct vg_open {
  struct vg_hdr hdr;
  __u32 flags;
  __u32 mode;
  __s64 result;
  __u32 dev_major;
  __u32 dev_minor;
  __u16 path_len;
  __u16 fpath_len;
  __u8 oflags; /* VG_OPEN_* */
  __u8 pad0[3];
};
#define VG_OPEN_CHR 0x01
#define VG_OPEN_BLK 0x02
#define VG_OPEN_PATH_TRUNC 0x04
#define VG_OPEN_DIR 0x08  /* the opened file is a directory */
#define VG_OPEN_FIFO 0x10 /* the opened file is a named pipe */
#define VG_OPEN_REG 0x20  /* the opened file is a regular file */

/* The open filter's tables: hash maps user space sizes to what the rules ask
 * and fills before the programs attach (engine/sensor/open_tables.cpp). Each
 * value is a set of VG_OF_* bits: which kind of literal put the key there. */
#define VG_OF_ANY 0x01       /* a prefix (or name) for any open */
#define VG_OF_WRITE 0x02     /* a prefix for opens for writing only */
#define VG_OF_TRAVERSAL 0x04 /* only where the path as given holds "../" */
#define VG_OF_GIVEN 0x08     /* given-path table: a prefix of the path as given */
#define VG_OF_OTHER 0x10     /* given-path table: another literal, for failed opens */

/* A name (a whole path's last component, or a directory's): its length, 0 for
 * a whole path or 1 for a directory, its first 16 bytes zero-padded. */
struct vg_of_name {
  __u32 len;
  __u32 dir;
  __u64 head[2];
};

/* A resolved prefix is a path of components from the root: the trie's edge
 * from node `node` by a component of `len` bytes whose first 16 are `head`
 * (masked to len); VG_OF_PARTIAL in len: the prefix ends inside the name
 * ("/dev/sd" names "sd..."), which is then at least that long. Node 0 is the
 * root, whose own entry has len 0. */
#define VG_OF_PARTIAL 0x80000000u
/* A node's id is a hash of the components that lead to it (the root's 0), so
 * two rule sets' tables agree on every node they share: a reload adds and
 * removes edges while the programs walk the trie. */
struct vg_of_edge {
  __u64 node;
  __u32 len;
  __u32 pad;
  __u64 head[2];
};
struct vg_of_node {
  __u64 node; /* the node this edge leads to */
  __u32 ends; /* VG_OF_* of the prefixes that end here */
  __u32 pad;
  __u64 partial_lens; /* bit n: an edge from this node ends a prefix inside a name at n bytes */
};

/* The open filter's knobs: which tables hold anything, and masks of the
 * lengths they hold, so that most opens are judged without a lookup. They
 * live in a data section user space rewrites on a reload (bpf/progs/
 * config.bpf.h, vg_of), with the tables. */
struct vg_of_knobs {
  __u32 n_literals;     /* literals in use (0: the filter is off) */
  __u32 have_whole;     /* whole paths in open_names */
  __u32 have_dirs;      /* directories in open_names */
  __u32 have_rp;        /* resolved prefixes in open_trie */
  __u32 have_write_rp;  /* some of them for opens for writing only */
  __u32 have_given;     /* given prefixes (VG_OF_GIVEN) */
  __u32 have_traversal; /* traversal literals: a failed open's given path is scanned for "../" */
  __u32 rp_maxcomp;     /* the most components a prefix compares */
  __u32 given_heads;    /* bits 1 to 8: head lengths in open_heads, of the given prefixes */
  __u32 lit_heads;      /* the same, of every literal */
  __u32 n_contains;     /* name fragments (VG_CONTAINS_MAX + 1: every name counts) */
  __u32 want_payload;   /* payload events are collected (net.bpf.c) */
  __u32 want_egress;    /* egress bytes are counted per container and destination (net.bpf.c) */
  __u32 pad_egress;
  __u64 dir_len_mask;  /* bit n: a directory's last component has n bytes */
  __u64 leaf_len_mask; /* bit n: a whole path's last component has n bytes */
  __u64
      rp_top_len_mask; /* bit n: a resolved prefix's first component may be n bytes (63: longer) */
  __u64 rp_any_len_mask; /* the same, of the prefixes for any open */
  __u64 given_lens;      /* bit n: a given prefix of n bytes in open_given */
  __u64 lit_lens;        /* bit n: a literal of n bytes in open_given */
  __u32 contains_len[VG_CONTAINS_MAX];
  __u64 contains_head[VG_CONTAINS_MAX][2];
};

/* A literal compared with the path as given: its length and bytes (zero past
 * the end); and its first min(len, 8) bytes, the pre-check of every open. */
struct vg_of_given {
  __u32 len;
  __u32 pad;
  __u8 bytes[VG_PREFIX_LEN]; /* read and written as 8-byte words */
} __attribute__((aligned(8)));
struct vg_of_head {
  __u32 len;
  __u32 pad;
  __u64 head;
};

struct vg_ioctl {
  struct vg_hdr hdr;
  __s32 fd;
  __u32 cmd;
  __u32 nr;
  __u32 dev_major;
  __u32 dev_minor;
  __u32 rm_class;
  __u32 rm_control;
  __u32 rm_status;
  __s64 result;
  __u8 iflags; /* VG_IOCTL_* */
  __u8 pad0[7];
};
#define VG_IOCTL_XFER 0x01
#define VG_IOCTL_UVM 0x02
#define VG_IOCTL_FIRST_USE 0x04
#define VG_IOCTL_ALLOC 0x08
#define VG_IOCTL_STATUS 0x10 /* rm_status was read at exit */

/* nvidia:nvidia_dev_xid: data = dev name (dev_len), message (msg_len) */
struct vg_xid {
  struct vg_hdr hdr;
  __u32 code;
  __u16 dev_len;
  __u16 msg_len;
};

/* DNS over UDP port 53: data = the DNS message (dns_len bytes, from the UDP
 * payload). saddr/daddr are the packet's. */
struct vg_dns {
  struct vg_hdr hdr;
  __u16 family;
  __u8 ingress; /* 1 = received (an answer), 0 = sent */
  __u8 pad0;
  __u16 sport;
  __u16 dport;
  __u8 saddr[16];
  __u8 daddr[16];
  __u16 dns_len;
  __u16 wire_len; /* the UDP payload's length on the wire */
  __u32 pad1;
};

/* first bytes of a new outbound TCP connection: data = bytes (data_len) */
struct vg_payload {
  struct vg_hdr hdr;
  __u16 family;
  __u16 sport;
  __u16 dport;
  __u16 data_len;
  __u8 saddr[16];
  __u8 daddr[16];
  __u32 wire_len; /* the segment's payload length */
  __u32 pad0;
};

struct vg_bpf {
  struct vg_hdr hdr;
  __u32 cmd;
  __u32 prog_type;
  __s64 result;
  char prog_name[16];
};

/* symlink, link, unlink, rename, mkdir, rmdir, chmod: data = the first path
 * as given (path_len), the second (path2_len; symlink's linkpath, link's and
 * rename's newpath). fd: the dirfd of the first path (VG_AT_FDCWD where the
 * call has none), fchmod's fd. */
struct vg_fileop {
  struct vg_hdr hdr;
  __s64 result;
  __s32 fd;
  __s32 fd2;   /* the dirfd of the second path */
  __u32 flags; /* linkat, unlinkat, renameat2 flags; mknod's dev (new_encode_dev) */
  __u32 mode;  /* mkdir, chmod */
  __u16 path_len;
  __u16 path2_len;
  __u8 syscall; /* VG_SC_*: which call of the family */
  __u8 pad0[3];
};
#define VG_AT_FDCWD (-100)

/* Which syscall of a family made a record (vg_fileop.syscall, vg_dup.syscall). */
enum vg_syscall {
  VG_SC_SYMLINK = 1,
  VG_SC_SYMLINKAT,
  VG_SC_LINK,
  VG_SC_LINKAT,
  VG_SC_UNLINK,
  VG_SC_UNLINKAT,
  VG_SC_RENAME,
  VG_SC_RENAMEAT,
  VG_SC_RENAMEAT2,
  VG_SC_MKDIR,
  VG_SC_MKDIRAT,
  VG_SC_RMDIR,
  VG_SC_CHMOD,
  VG_SC_FCHMOD,
  VG_SC_FCHMODAT,
  VG_SC_DUP,
  VG_SC_DUP2,
  VG_SC_DUP3,
  VG_SC_INIT_MODULE,
  VG_SC_FINIT_MODULE,
  VG_SC_SETUID,
  VG_SC_SETREUID,
  VG_SC_SETRESUID,
  VG_SC_SETGID,
  VG_SC_SETREGID,
  VG_SC_SETRESGID,
  VG_SC_ACCEPT,
  VG_SC_ACCEPT4,
  VG_SC_DELETE_MODULE,
  VG_SC_MKNOD,
  VG_SC_MKNODAT,
};

/* A call on a socket fd, with the socket's endpoints as the kernel holds
 * them (family 0 when the fd is no inet or unix socket). saddr/sport are the
 * local end, daddr/dport the remote one.
 *  dup, dup2, dup3: fd = the old fd, result = the new fd, flags = dup3's;
 *  accept, accept4: fd = the listening fd, result = the new fd (whose
 *    endpoints these are), flags = accept4's;
 *  listen: fd, flags = the backlog; bind: fd (local end after the bind). */
struct vg_sockfd {
  struct vg_hdr hdr;
  __s64 result;
  __s32 fd;
  __u32 flags;
  __u16 family;
  __u8 proto;   /* VG_L4_* */
  __u8 syscall; /* VG_SC_* */
  __u16 sport;
  __u16 dport;
  __u8 saddr[16];
  __u8 daddr[16];
};

/* Calls whose arguments are a few numbers and at most one string:
 * setuid/setgid and their re/res forms, setns, unshare, userfaultfd, prctl,
 * io_uring_setup, ptrace (request, pid, addr, 1 when the tracee is vigil), socket (domain, type,
 * protocol), memfd_create (its name); capset: the effective, permitted and
 * inheritable sets the task holds after the call; vigil_signal (a signal to vigil:
 * signal, target tgid, si_code, target tid | group << 32); perf_event_open
 * (attr.type, attr.config, pid, VG_PERF_*). data = the string
 * (str_len). */
struct vg_sys {
  struct vg_hdr hdr;
  __s64 result;
  __u64 a[4]; /* the call's arguments, in its order */
  __u16 str_len;
  __u8 syscall; /* VG_SC_* */
  __u8 pad0[5];
};

/* vg_sys.a[3] of perf_event_open: what the event watches. */
#define VG_PERF_TRACEPOINT 1
#define VG_PERF_KPROBE 2
#define VG_PERF_UPROBE 3
#define VG_PERF_BREAKPOINT 4

/* init_module, finit_module: data = the module's parameters (args_len);
 * delete_module: data = the module's name. */
struct vg_module {
  struct vg_hdr hdr;
  __s64 result;
  __s32 fd; /* finit_module's fd, -1 for init_module */
  __u32 flags;
  __u16 args_len;
  __u8 syscall; /* VG_SC_*_MODULE */
  __u8 pad0[5];
};

/* Bytes sent per container cgroup and destination (LRU hash "egress_bytes",
 * bpf/progs/net.bpf.c), drained by the sensor every egress interval. */
struct vg_egress_key {
  __u64 cgroup_id; /* the sending socket's cgroup (v2 id) */
  __u8 daddr[16];  /* IPv4 in the first 4 bytes */
  __u16 dport;     /* host order */
  __u8 family;     /* AF_INET, AF_INET6 */
  __u8 proto;      /* IPPROTO_TCP, IPPROTO_UDP */
  __u32 pad0;
};
struct vg_egress_val {
  __u64 bytes;   /* IP packet lengths, headers included */
  __u64 packets; /* packets (a GSO packet counts once, its bytes all) */
};

/* Per-process, per-command count of NVIDIA ioctls (hash map "gpu_usage"). */
struct vg_usage_key {
  __u32 pid;
  __u32 dev; /* major << 20 | minor */
  __u32 nr;  /* escape number (unwrapped), or the raw cmd for UVM */
  __u32 pad0;
};

/* Value of the "gpu_usage" map: the count since the last drain, and the last
 * RM control command this key saw (set: last_ctl_set), so that a process
 * repeating one control command is counted without a ctl_seen lookup. */
struct vg_usage_val {
  __u64 count;
  __u32 last_ctl;
  __u32 last_ctl_set;
};

/* Value of the per-CPU array "ioctl_slot": the last usage key counted on a
 * CPU and its calls not yet in "gpu_usage" (bpf/progs/fd/nvidia_ioctl.bpf.c). */
struct vg_ioctl_slot {
  struct vg_usage_key key; /* pid 0: none yet */
  __u64 count;             /* calls of `key` counted here, not yet in gpu_usage */
  __u32 last_ctl;          /* the last RM control command of `key` seen here */
  __u32 ctl_set;           /* last_ctl is set */
  __u32 busy;              /* an ioctl program is changing the slot */
  __u32 start_lo; /* low 32 bits of `key`'s process start time: a reused pid is another key */
};

/* "first use of a device by a process" (LRU hash "gpu_seen"). */
/* A process is its pid and its start time (the group leader's, in ns): a
 * pid reused by a later process is another key. */
struct vg_seen_key {
  __u32 pid;
  __u32 dev;
  __u64 start;
};

/* Prevention (bpf/progs/policy.bpf.h, engine/policy): the kernel's share of
 * the rules whose action is enforced, in maps user space fills
 * (engine/sensor/policy_maps.cpp). A rule has a slot (0 to VG_POL_RULES-1)
 * and one hook; a container's cgroup has an entry only once its pod is known,
 * with the slots whose container part holds for it. No entry, no refusal: the
 * host, vigil, the runtime and a container not yet resolved are never refused. */
#define VG_POL_RULES 64

enum vg_pol_hook {
  VG_POL_NONE = 0,
  VG_POL_DEVICE = 1, /* cgroup/dev: open and mknod of NVIDIA device nodes */
  VG_POL_NET = 2,    /* cgroup/connect4|6, sendmsg4|6: destinations */
  VG_POL_SOCK = 3,   /* cgroup/sock_create: socket families and types */
  VG_POL_EXEC = 4,   /* sched_process_exec: a program killed before it runs */
};

/* NVIDIA node kinds (bit n: kind n), as engine/state/gpu.h classifies them. */
#define VG_POL_NODE_GPU 0x01
#define VG_POL_NODE_CTL 0x02
#define VG_POL_NODE_MODESET 0x04
#define VG_POL_NODE_UVM 0x08
#define VG_POL_NODE_UVM_TOOLS 0x10
#define VG_POL_NODE_CAPS 0x20
#define VG_POL_NODE_NVLINK 0x40
#define VG_POL_NODE_NVSWITCH 0x80
#define VG_POL_NODE_OTHER 0x100

/* vg_pol_rule.flags */
#define VG_POLR_COMM 0x01         /* the task's comm is judged against pol_comm */
#define VG_POLR_COMM_NEG 0x02     /* ... and must not be there */
#define VG_POLR_NET 0x04          /* the destination is judged against pol_net4|6 */
#define VG_POLR_NET_NEG 0x08      /* ... and must not be there */
#define VG_POLR_PORTS 0x10        /* the destination port is judged against pol_ports */
#define VG_POLR_PORTS_NEG 0x20    /* ... must not be */
#define VG_POLR_MEMFD 0x40        /* exec: the program runs from a memfd */
#define VG_POLR_UPPER 0x80        /* exec: the program file is in an overlay's upper layer */
#define VG_POLR_NOT_ALLOWED 0x100 /* device: only nodes the container's allocation does not allow */
#define VG_POLR_TCP 0x200         /* net: TCP only */
#define VG_POLR_UDP 0x400         /* net: UDP only */
#define VG_POLR_OPEN 0x800        /* device: opens (the rule is about open calls) */
#define VG_POLR_MKNOD 0x1000      /* device: mknod (the rule is about mknod calls) */
#define VG_POLR_EXE 0x2000        /* exec: the program file is one pol_exe holds for the slot */

struct vg_pol_rule {
  __u32 hook;     /* enum vg_pol_hook */
  __u32 flags;    /* VG_POLR_* */
  __u32 kinds;    /* device: the node kinds refused (VG_POL_NODE_*) */
  __u32 families; /* socket: bit n, family n (n < 32) */
  __u32 types;    /* socket: bit n, type n (SOCK_RAW 3, SOCK_PACKET 10) */
  __u32 pad;
};

/* A container cgroup's entry. */
#define VG_POL_GPU_ANY 0x01 /* the container was allocated a GPU */
struct vg_pol_cg {
  __u64 rules;         /* slot r: rule r's container part holds here */
  __u64 gpu_minors[4]; /* major 195 minors its allocation allows */
  __u32 gpu_flags;     /* VG_POL_GPU_* */
  __u32 pad;
};

/* The comm sets of the rules (pol_comm) and their port sets (pol_ports,
 * keyed by the port in host order): slot bits. */
struct vg_pol_comm {
  char comm[VG_COMM_LEN];
};

/* pol_net4|6: LPM tries of the rules' destinations; value: slot bits. */
struct vg_pol_net4 {
  __u32 prefixlen;
  __u8 addr[4];
};
struct vg_pol_net6 {
  __u32 prefixlen;
  __u8 addr[16];
};

/* The hooks' slots and the dynamic NVIDIA majors, in a data section user
 * space rewrites (bpf/progs/policy.bpf.h, vg_pol). */
struct vg_pol_knobs {
  __u64 device; /* slots per hook */
  __u64 net;
  __u64 sock;
  __u64 exec;
  __u64 comm_slots; /* slots with a comm set: pol_comm is looked up only for them */
  __u64 exe_slots;  /* slots with a file set: pol_exe is looked up only for them */
  __u32 uvm_major;
  __u32 caps_major;
  __u32 nvlink_major;
  __u32 nvswitch_major;
};

/* A device refusal, kept for the thread's open exit (which reports the call
 * with its path: the device program sees only numbers). */
struct vg_pol_refusal {
  __u32 major;
  __u32 minor;
  __u64 ts_ns;
};

/* pol_exe: the program files enforced rules deny by identity (a SHA-256 or
 * an ELF build-id, which the kernel cannot compute): user space adds a file
 * once it has identified it, keyed by the inode the exec record reports. The
 * change time must still be the one identified: a file written since is
 * another program until identified again. */
struct vg_pol_exe_key {
  __u64 ino;
  __u32 dev; /* the kernel's dev_t: major << 20 | minor */
  __u32 pad;
};
struct vg_pol_exe_val {
  __u64 slots;
  __s64 ctime_ns;
};

#define VG_MKDEV(ma, mi) (((__u32)(ma) << 20) | ((__u32)(mi)&0xfffff))

#ifndef __VIGIL_BPF__
#ifdef __cplusplus
#define VG_STATIC_ASSERT static_assert
#else
#define VG_STATIC_ASSERT _Static_assert
#endif
#define VG_OFFSETOF(t, f) __builtin_offsetof(t, f)
VG_STATIC_ASSERT(sizeof(struct vg_hdr) == 72, "vg_hdr size");
VG_STATIC_ASSERT(VG_OFFSETOF(struct vg_hdr, len) == 4, "vg_hdr.len");
VG_STATIC_ASSERT(VG_OFFSETOF(struct vg_hdr, ts_ns) == 8, "vg_hdr.ts_ns");
VG_STATIC_ASSERT(VG_OFFSETOF(struct vg_hdr, pid) == 16, "vg_hdr.pid");
VG_STATIC_ASSERT(VG_OFFSETOF(struct vg_hdr, cgroup_id) == 48, "vg_hdr.cgroup_id");
VG_STATIC_ASSERT(VG_OFFSETOF(struct vg_hdr, comm) == 56, "vg_hdr.comm");
VG_STATIC_ASSERT(sizeof(struct vg_exec) == 160, "vg_exec size");
VG_STATIC_ASSERT(VG_OFFSETOF(struct vg_exec, exe_mtime_ns) == 152, "vg_exec.exe_mtime_ns");
VG_STATIC_ASSERT(sizeof(struct vg_fork) == 88, "vg_fork size");
VG_STATIC_ASSERT(sizeof(struct vg_exit) == 80, "vg_exit size");
VG_STATIC_ASSERT(sizeof(struct vg_connect) == 120, "vg_connect size");
VG_STATIC_ASSERT(VG_OFFSETOF(struct vg_connect, saddr) == 80, "vg_connect.saddr");
VG_STATIC_ASSERT(sizeof(struct vg_open) == 104, "vg_open size");
VG_STATIC_ASSERT(sizeof(struct vg_ioctl) == 120, "vg_ioctl size");
VG_STATIC_ASSERT(sizeof(struct vg_xid) == 80, "vg_xid size");
VG_STATIC_ASSERT(sizeof(struct vg_dns) == 120, "vg_dns size");
VG_STATIC_ASSERT(sizeof(struct vg_payload) == 120, "vg_payload size");
VG_STATIC_ASSERT(sizeof(struct vg_bpf) == 104, "vg_bpf size");
VG_STATIC_ASSERT(sizeof(struct vg_fileop) == 104, "vg_fileop size");
VG_STATIC_ASSERT(sizeof(struct vg_sockfd) == 128, "vg_sockfd size");
VG_STATIC_ASSERT(sizeof(struct vg_sys) == 120, "vg_sys size");
VG_STATIC_ASSERT(sizeof(struct vg_module) == 96, "vg_module size");
VG_STATIC_ASSERT(sizeof(struct vg_usage_key) == 16, "vg_usage_key size");
VG_STATIC_ASSERT(sizeof(struct vg_egress_key) == 32, "vg_egress_key size");
VG_STATIC_ASSERT(sizeof(struct vg_egress_val) == 16, "vg_egress_val size");
VG_STATIC_ASSERT(sizeof(struct vg_seen_key) == 16, "vg_seen_key size");
VG_STATIC_ASSERT(sizeof(struct vg_usage_val) == 16, "vg_usage_val size");
VG_STATIC_ASSERT(sizeof(struct vg_ioctl_slot) == 40, "vg_ioctl_slot size");
VG_STATIC_ASSERT(sizeof(struct vg_pol_rule) == 24, "vg_pol_rule size");
VG_STATIC_ASSERT(sizeof(struct vg_pol_cg) == 48, "vg_pol_cg size");
VG_STATIC_ASSERT(sizeof(struct vg_pol_knobs) == 64, "vg_pol_knobs size");
VG_STATIC_ASSERT(sizeof(struct vg_pol_exe_key) == 16, "vg_pol_exe_key size");
VG_STATIC_ASSERT(sizeof(struct vg_pol_exe_val) == 16, "vg_pol_exe_val size");
VG_STATIC_ASSERT(sizeof(struct vg_pol_net6) == 20, "vg_pol_net6 size");
#endif

#endif /* VIGIL_BPF_SHARED_EVENTS_H */
