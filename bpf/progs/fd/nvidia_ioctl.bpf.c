// SPDX-License-Identifier: GPL-2.0
/* ioctls on NVIDIA device fds: each call is classified (device, escape
 * number, RM class or control command), counted per process / device /
 * command in gpu_usage (through this CPU's ioctl_slot where user space can
 * drain it), and sent one by one only where a rule needs it: a process's
 * first use of a device, the allocations of is_sent_class, each distinct RM
 * control command once per process, UVM tools memory access, and the calls
 * the driver surface table does not know (nv_surface).
 * Compiled as part of fd.bpf.c (which says why). */
#include "bpf/progs/helpers.bpf.h"

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
VG_DEFINE_READ_USER(read_user_xfer, struct vg_xfer)

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
  case 0xC5C0:
  case 0xC6C0:
  case 0xC7C0:
  case 0xC9C0:
  case 0xCBC0:
  case 0xCDC0:
  case 0xCEC0:
  case 0x900E: /* MPS_COMPUTE */
  /* channel GPFIFO */
  case 0xC36F:
  case 0xC46F:
  case 0xC56F:
  case 0xC86F:
  case 0xC96F:
  case 0xCA6F:
  /* debugger, profilers, counter collection */
  case 0x83DE:
  case 0x90CC:
  case 0xB1CC:
  case 0xB2CC:
  case 0xCBCA:
  /* MIG: GPU/compute instance subscriptions, config and monitor sessions */
  case 0xC637:
  case 0xC638:
  case 0xC639:
  case 0xC640: return 1;
  }
  return 0;
}

/* The numbers the driver surface table knows (engine/event/nvidia_surface.tsv),
 * filled by user space between load and attach. A call the table does not
 * know is sent one by one: an allocation of an unknown class every time (as
 * the allocations of is_sent_class are), an unknown escape or UVM command when
 * its usage key is new in the interval (once per process, device and number
 * per usage report). Judged by lookup alone: no user memory is read for it.
 *
 * nv_surface: escapes and UVM commands, key (part << 32) | number, looked up
 * only for a key new in the interval. nv_classes: RM classes as a bitmap of
 * ids 0..0xFFFF (bit id & 31 of word id >> 5; a larger id is unknown), looked
 * up on every allocation: an array lookup the verifier inlines, not a hash. */
#define VG_NV_ESCAPE 0ULL
#define VG_NV_UVM 1ULL
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u64);
  __type(value, __u8);
} nv_surface SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 2048);
  __type(key, __u32);
  __type(value, __u32);
} nv_classes SEC(".maps");

static __always_inline int nv_unknown(__u64 part, __u32 value)
{
  __u64 k = (part << 32) | value;
  return bpf_map_lookup_elem(&nv_surface, &k) == 0;
}

static __always_inline int nv_unknown_class(__u32 cls)
{
  if (cls > 0xFFFF)
    return 1;
  __u32 i = cls >> 5;
  __u32 *w = bpf_map_lookup_elem(&nv_classes, &i);
  return !w || !((*w >> (cls & 31)) & 1);
}

/* UVM tools calls that read or write another process's GPU memory
 * (UVM_TOOLS_READ_PROCESS_MEMORY 62, UVM_TOOLS_WRITE_PROCESS_MEMORY 63). */
static __always_inline int is_sent_uvm(__u32 cmd)
{
  return cmd == 62 || cmd == 63;
}

/* An ioctl on an NVIDIA device, as decoded so far. */
struct vg_nv_call {
  __u64 arg;  /* the parameter block (after the XFER unwrap) */
  __u32 cmd;  /* the command as issued */
  __u32 nr;   /* the escape number (UVM: the command) */
  __u32 size; /* the parameter block's size */
  __u32 major;
  __u32 minor;
  __u32 rm_class;   /* NV_ESC_RM_ALLOC: the class allocated */
  __u32 rm_control; /* NV_ESC_RM_CONTROL: the control command */
  __u32 soff;       /* where the RM status word sits, 0: none */
  __u8 iflags;
  __u8 uvm; /* nvidia-uvm, whose numbers are not _IOC encoded */
};

/* Is open file `f` an NVIDIA device? 1 with c's device numbers and uvm
 * filled; 0: it is not (a non-device fd costs a few direct loads). */
static __always_inline int nv_device(struct file *f, struct vg_nv_call *c)
{
  umode_t m = 0;
  dev_t rdev = 0;
  vg_file_dev(f, &m, &rdev);
  if ((m & S_IFMT) != S_IFCHR)
    return 0;
  c->major = rdev >> 20;
  c->minor = rdev & 0xfffff;
  if (c->major == NV_MAJOR) {
    c->uvm = 0;
  } else if (cfg_uvm_major && c->major == cfg_uvm_major) {
    c->uvm = 1;
  } else {
    /* Fallback for stand-in nodes: the device file's name starts with "nvidia". */
    int named = vg_file_nvidia_name(f);
    if (!named)
      return 0;
    c->uvm = named == 2;
  }
  return 1;
}

/* Decodes c->cmd: the escape number and size (unwrapped from an XFER), and
 * the RM class or control command from the parameter block. */
static __always_inline void nv_escape(struct vg_nv_call *c)
{
  c->nr = c->cmd & 0xff;
  c->size = (c->cmd >> 16) & 0x3fff;
  c->iflags = c->uvm ? VG_IOCTL_UVM : 0;
  if (c->uvm) {
    c->nr = c->cmd; /* UVM numbers are not _IOC encoded */
    return;
  }
  if (c->nr == NV_ESC_IOCTL_XFER_CMD) {
    struct vg_xfer x = {};
    if (read_user_xfer(&x, (void *)c->arg) == 0) {
      c->nr = x.cmd & 0xff;
      c->size = x.size;
      c->arg = x.ptr;
      c->iflags |= VG_IOCTL_XFER;
    } else {
      vg_drop(VG_DROP_READ_FAIL);
    }
  }
  __u32 v = 0;
  if (c->nr == NV_ESC_RM_ALLOC && (c->size == 32 || c->size == 48)) {
    if (read_user_u32(&v, (void *)(c->arg + 12)) != 0)
      vg_drop(VG_DROP_READ_FAIL);
    c->rm_class = v;
    c->soff = c->size == 48 ? 40 : 28;
  } else if (c->nr == NV_ESC_RM_CONTROL && c->size == 32) {
    if (read_user_u32(&v, (void *)(c->arg + 8)) != 0)
      vg_drop(VG_DROP_READ_FAIL);
    c->rm_control = v;
    c->soff = 28;
  }
}

/* What counting a call found: the key was counted before in this usage
 * interval (known), and the call repeats the key's last control command or
 * is not a control (ctl_known). */
struct vg_nv_seen {
  int known;
  int ctl_known;
};

/* Counts a call of key `uk` (process start `start`; control command
 * `rm_control` where `is_ctl`) per process / device / command: in this CPU's
 * slot where it repeats the slot's key, else in gpu_usage, and the slot
 * takes the key. A key already counted in this interval (gpu_usage has it),
 * or the one this CPU counted last (its slot), has been through the
 * first-use check, and its last control command through the control check. */
static __always_inline struct vg_nv_seen nv_count(const struct vg_usage_key *uk, __u64 start,
                                                  int is_ctl, __u32 rm_control)
{
  struct vg_nv_seen seen = {.known = 0, .ctl_known = !is_ctl};
  struct vg_ioctl_slot *slot = 0;
  if (cfg_ioctl_slot) {
    __u32 zero = 0;
    slot = bpf_map_lookup_elem(&ioctl_slot, &zero);
  }
  /* The slot outlives its process: the start time tells a later process
   * given the same pid from it. */
  if (slot && slot->key.pid == uk->pid && slot->key.dev == uk->dev && slot->key.nr == uk->nr &&
      slot->start_lo == (__u32)start) {
    seen.known = 1;
    if (is_ctl)
      seen.ctl_known = slot->ctl_set && slot->last_ctl == rm_control;
    slot->busy = 1;
    barrier();
    slot->count += 1;
    if (is_ctl) {
      slot->last_ctl = rm_control;
      slot->ctl_set = 1;
    }
    barrier();
    slot->busy = 0;
    return seen;
  }
  struct vg_usage_val *uv = bpf_map_lookup_elem(&gpu_usage, uk);
  if (uv) {
    __sync_fetch_and_add(&uv->count, 1);
    seen.known = 1;
    if (is_ctl) {
      seen.ctl_known = uv->last_ctl_set && uv->last_ctl == rm_control;
      uv->last_ctl = rm_control;
      uv->last_ctl_set = 1;
    }
  } else {
    struct vg_usage_val one = {.count = 1, .last_ctl = rm_control, .last_ctl_set = is_ctl};
    if (bpf_map_update_elem(&gpu_usage, uk, &one, BPF_NOEXIST) != 0) {
      uv = bpf_map_lookup_elem(&gpu_usage, uk);
      if (uv)
        __sync_fetch_and_add(&uv->count, 1);
      else
        vg_drop(VG_DROP_MAP_FULL);
    }
  }
  if (slot)
    slot_take(slot, uk, rm_control, is_ctl, (__u32)start);
  return seen;
}

/* Makes the mark `key` in `map` (an LRU hash of __u8): 1 where this call made
 * it, 0 where it was there already. Another thread making the same mark on
 * another CPU at the same moment finds it made (-EEXIST). The insert can
 * fail for other reasons too (the kernel's bucket locks give up rather than
 * spin forever, and an LRU may find no free node): then a mark that another
 * CPU made meanwhile still counts as made, the insert is tried once more,
 * and a mark that still cannot be made lets the call be sent (a repeat
 * rather than a loss) and is counted as VG_DROP_MAP_FULL. */
static __always_inline int mark_new(void *map, const void *key)
{
  __u8 one = 1;
  if (bpf_map_lookup_elem(map, key))
    return 0;
  long err = bpf_map_update_elem(map, key, &one, BPF_NOEXIST);
  if (err == 0)
    return 1;
  if (err == -EEXIST || bpf_map_lookup_elem(map, key))
    return 0;
  err = bpf_map_update_elem(map, key, &one, BPF_NOEXIST);
  if (err == -EEXIST)
    return 0;
  if (err != 0)
    vg_drop(VG_DROP_MAP_FULL);
  return 1;
}

/* Makes the marks of a call not yet known: a process's first use of a device
 * (gpu_seen; VG_IOCTL_FIRST_USE in *iflags) and its first use of an RM control
 * command (ctl_seen). A (process, device) or (process, command) is new only to
 * the CPU whose insert makes its mark (mark_new). 1: either mark is new. */
static __always_inline int nv_mark_first(const struct vg_usage_key *uk, __u64 start,
                                         struct vg_nv_seen seen, __u32 rm_control, __u8 *iflags)
{
  int first = 0;
  if (!seen.known) {
    struct vg_seen_key sk = {.pid = uk->pid, .dev = uk->dev, .start = start};
    if (mark_new(&gpu_seen, &sk)) {
      first = 1;
      *iflags |= VG_IOCTL_FIRST_USE;
    }
  }
  int new_ctl = 0;
  if (!seen.ctl_known) {
    struct vg_ctl_key ck = {.pid = uk->pid, .cmd = rm_control, .start = start};
    new_ctl = mark_new(&ctl_seen, &ck);
  }
  return first || new_ctl;
}

/* Classifies an ioctl on fd `fd` (open file `f`) of the current task:
 * not on an NVIDIA device → 0; counted in gpu_usage → 0; to be sent one by
 * one → 1 with rec (all but the header), *argp (the parameter block, after the
 * XFER unwrap) and *status_off (where the RM status word sits, 0: none)
 * filled. `t` is the current task where the caller has it (its tgid is read
 * in place), NULL otherwise. Runs on every ioctl of every process: a
 * non-device fd costs a few direct loads; the NVIDIA hot path (a command the
 * process already used in this interval) one user read and one map lookup
 * more.
 *
 * Sent one by one: the first use of a device by a process, the allocations
 * of is_sent_class() and of classes the driver surface table does not know,
 * each distinct RM control command once per process, an escape (UVM command)
 * the table does not know once per process, device and usage interval, and
 * UVM tools memory access. Everything else is counted. */
static __always_inline int ioctl_decode(struct task_struct *t, struct file *f, int fd, __u32 cmd,
                                        __u64 arg, struct vg_ioctl *rec, __u64 *argp,
                                        __u32 *status_off)
{
  struct vg_nv_call c = {.arg = arg, .cmd = cmd};
  if (!f || !nv_device(f, &c))
    return 0;
  nv_escape(&c);

  __u32 pid = t ? (__u32)t->tgid : (__u32)(bpf_get_current_pid_tgid() >> 32);
  if (pid == cfg_vigil_tgid)
    return 0;
  struct vg_usage_key uk = {.pid = pid, .dev = VG_MKDEV(c.major, c.minor), .nr = c.nr, .pad0 = 0};
  int is_ctl = !c.uvm && c.nr == NV_ESC_RM_CONTROL && c.soff;
  int alloc = (c.nr == NV_ESC_RM_ALLOC && !c.uvm &&
               (is_sent_class(c.rm_class) || nv_unknown_class(c.rm_class))) ||
              (c.uvm && is_sent_uvm(cmd));
  const __u64 start = proc_start(t);
  struct vg_nv_seen seen = nv_count(&uk, start, is_ctl, c.rm_control);
  /* A known key whose call repeats its last control command (or is not a
   * control) and is not sent is done. */
  if (seen.known && seen.ctl_known && !alloc)
    return 0;
  if (alloc)
    c.iflags |= VG_IOCTL_ALLOC;
  /* A key new in this interval: is its escape (UVM command) one the table knows? */
  int unknown = !seen.known && nv_unknown(c.uvm ? VG_NV_UVM : VG_NV_ESCAPE, c.nr);
  if (!nv_mark_first(&uk, start, seen, c.rm_control, &c.iflags) && !alloc && !unknown)
    return 0;

  rec->fd = fd;
  rec->cmd = cmd;
  rec->nr = c.nr;
  rec->dev_major = c.major;
  rec->dev_minor = c.minor;
  rec->rm_class = c.rm_class;
  rec->rm_control = c.rm_control;
  rec->rm_status = 0;
  rec->result = 0;
  rec->iflags = c.iflags;
  __builtin_memset(rec->pad0, 0, sizeof(rec->pad0));
  *argp = c.arg;
  *status_off = c.soff;
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
