// SPDX-License-Identifier: GPL-2.0
/* CUDA driver API probes (plugins/cuda): uprobes on libcuda's entry points.
 *
 * Two programs (each also in a copy for multi-uprobe links, below), attached
 * by the plugin once per distinct libcuda file and entry point, each with a
 * cookie that names the entry point and the library
 * (cuda_probe.h):
 *   cuda_launch  every kernel-launch and graph-launch entry point. The hot
 *                path: it only counts, per (process, library), in a per-CPU
 *                hash; user space reads the counts once per interval.
 *   cuda_call    every other entry point (context creation, module load,
 *                memory allocation and free): one ring-buffer record per
 *                call with the first six arguments, and for module loads the
 *                path or the image's first bytes.
 * Lost records (ring full) and uncounted launches (map full) are counted per
 * CPU in `drops`. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define __VIGIL_CUDA_BPF__ 1
#include "plugins/cuda/cuda_probe.h"

/* libbpf before 1.2 has no PT_REGS_PARM6. */
#if defined(PT_REGS_PARM6)
#define CUDA_PARM6(x) PT_REGS_PARM6(x)
#elif defined(__TARGET_ARCH_x86)
#define CUDA_PARM6(x) ((x)->r9)
#elif defined(__TARGET_ARCH_arm64)
#define CUDA_PARM6(x) (((const struct user_pt_regs *)(x))->regs[5])
#else
#error "CUDA probes: unsupported architecture"
#endif

char LICENSE[] SEC("license") = "GPL";

/* The names the mmap watch looks for, set by user space before load. */
const volatile __u32 cfg_n_names = 0;
const volatile __u32 cfg_name_len[CUDA_WATCH_NAMES] = {};
const volatile char cfg_names[CUDA_WATCH_NAMES][CUDA_WATCH_NAME_LEN] = {};

/* Set by user space before load. 0: wake the reader on every call record.
 * Else records are submitted without a wakeup (which costs the calling
 * thread an interrupt) until this many bytes wait; the plugin also reads the
 * ring every flush_interval, which bounds the delay. */
const volatile __u32 cfg_wakeup_bytes = 0;

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 256 * 1024); /* user space sets the configured size before load */
} cuda_events SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, 8192); /* user space sets the configured size before load */
  __type(key, struct cuda_launch_key);
  __type(value, struct cuda_launch_val);
} cuda_launches SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 16 * 1024);
} cuda_mmaps SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, CUDA_DROP_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} cuda_drops SEC(".maps");

static __always_inline void count_drop(__u32 reason)
{
  __u64 *n = bpf_map_lookup_elem(&cuda_drops, &reason);
  if (n)
    *n += 1;
}

static __always_inline int count_launch(struct pt_regs *ctx)
{
  __u64 cookie = bpf_get_attach_cookie(ctx);
  struct cuda_launch_key key = {
      .pid = (__u32)(bpf_get_current_pid_tgid() >> 32),
      .lib = CUDA_COOKIE_LIB(cookie),
  };
  int graph = CUDA_CALL_IS_GRAPH(CUDA_COOKIE_CALL(cookie));
  struct cuda_launch_val *v = bpf_map_lookup_elem(&cuda_launches, &key);
  if (!v) {
    struct cuda_launch_val zero = {};
    /* EEXIST: another CPU created it in between; count into it all the same. */
    bpf_map_update_elem(&cuda_launches, &key, &zero, BPF_NOEXIST);
    v = bpf_map_lookup_elem(&cuda_launches, &key);
    if (!v) {
      count_drop(CUDA_DROP_LAUNCH_MAP);
      return 0;
    }
  }
  /* This CPU's own slot: no other CPU writes it. */
  if (graph)
    v->graphs += 1;
  else
    v->count += 1;
  return 0;
}

static __always_inline int send_call(struct pt_regs *ctx)
{
  __u64 cookie = bpf_get_attach_cookie(ctx);
  __u32 call = CUDA_COOKIE_CALL(cookie);
  struct cuda_call_rec *r = bpf_ringbuf_reserve(&cuda_events, sizeof(*r), 0);
  if (!r) {
    count_drop(CUDA_DROP_RING);
    return 0;
  }
  __u64 id = bpf_get_current_pid_tgid();
  r->ts_ns = bpf_ktime_get_ns();
  r->pid = (__u32)(id >> 32);
  r->tid = (__u32)id;
  r->call = call;
  r->lib = CUDA_COOKIE_LIB(cookie);
  r->args[0] = PT_REGS_PARM1(ctx);
  r->args[1] = PT_REGS_PARM2(ctx);
  r->args[2] = PT_REGS_PARM3(ctx);
  r->args[3] = PT_REGS_PARM4(ctx);
  r->args[4] = PT_REGS_PARM5(ctx);
  r->args[5] = CUDA_PARM6(ctx);
  r->str_len = 0;
  r->str_kind = CUDA_STR_NONE;
  const void *p = (const void *)r->args[1];
  if (p && CUDA_CALL_IS_PATH(call)) {
    long n = bpf_probe_read_user_str(r->str, sizeof(r->str), p);
    if (n > 0) {
      r->str_len = (__u32)(n - 1);
      r->str_kind = CUDA_STR_PATH;
    }
  } else if (p && CUDA_CALL_IS_IMAGE(call)) {
    /* A short image may end before CUDA_IMAGE_HEAD bytes on an unmapped
     * page: then keep its first 16 (enough for the magic). */
    if (bpf_probe_read_user(r->str, CUDA_IMAGE_HEAD, p) == 0) {
      r->str_len = CUDA_IMAGE_HEAD;
      r->str_kind = CUDA_STR_IMAGE;
    } else if (bpf_probe_read_user(r->str, 16, p) == 0) {
      r->str_len = 16;
      r->str_kind = CUDA_STR_IMAGE;
    }
  }
  __u64 flags = 0;
  if (cfg_wakeup_bytes)
    flags = bpf_ringbuf_query(&cuda_events, BPF_RB_AVAIL_DATA) + sizeof(*r) >= cfg_wakeup_bytes
                ? BPF_RB_FORCE_WAKEUP
                : BPF_RB_NO_WAKEUP;
  bpf_ringbuf_submit(r, flags);
  return 0;
}

/* Attached one link per entry point (any kernel with uprobe cookies, 5.15+). */
SEC("uprobe")
int cuda_launch(struct pt_regs *ctx)
{
  return count_launch(ctx);
}

SEC("uprobe")
int cuda_call(struct pt_regs *ctx)
{
  return send_call(ctx);
}

/* The same, loaded for multi-uprobe links (6.6+: one link per library and
 * program, so attaching and detaching cost one kernel round trip, not one per
 * entry point). User space sets their expected attach type before load and
 * leaves them out where the kernel refuses them. */
SEC("uprobe")
int cuda_launch_multi(struct pt_regs *ctx)
{
  return count_launch(ctx);
}

SEC("uprobe")
int cuda_call_multi(struct pt_regs *ctx)
{
  return send_call(ctx);
}

/* ---- mmap watch ---------------------------------------------------------
 * The dynamic loader maps a library's code with an mmap(PROT_EXEC). When the
 * file's name is one of cfg_names (or one of them followed by '.'), the
 * process's pid goes to user space, which reads its maps at once: a libcuda
 * file new to the plugin is then probed before the process's first CUDA
 * calls, not at the next scan. */

#define CUDA_VM_EXEC 0x00000004UL

struct vma_match {
  __u32 hit;
};

static __always_inline int name_matches(const char *name)
{
  for (__u32 i = 0; i < CUDA_WATCH_NAMES; i++) {
    if (i >= cfg_n_names)
      break;
    __u32 len = cfg_name_len[i];
    if (len == 0 || len >= CUDA_WATCH_NAME_LEN)
      continue;
    int same = 1;
    for (__u32 k = 0; k < CUDA_WATCH_NAME_LEN; k++) {
      if (k >= len)
        break;
      if (name[k] != cfg_names[i][k]) {
        same = 0;
        break;
      }
    }
    if (same && (name[len & (CUDA_WATCH_NAME_LEN - 1)] == 0 ||
                 name[len & (CUDA_WATCH_NAME_LEN - 1)] == '.'))
      return 1;
  }
  return 0;
}

static long check_vma(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
  struct vma_match *m = data;
  if (!(BPF_CORE_READ(vma, vm_flags) & CUDA_VM_EXEC))
    return 0;
  struct file *f = BPF_CORE_READ(vma, vm_file);
  if (!f)
    return 0;
  const unsigned char *name = BPF_CORE_READ(f, f_path.dentry, d_name.name);
  char buf[CUDA_WATCH_NAME_LEN + 1] = {};
  if (bpf_probe_read_kernel_str(buf, CUDA_WATCH_NAME_LEN, name) <= 0)
    return 0;
  m->hit = name_matches(buf);
  return 0;
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int cuda_mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
  long ret = ctx->ret;
  if (ret < 0 && ret > -4096)
    return 0;
  struct vma_match m = {};
  bpf_find_vma(bpf_get_current_task_btf(), (__u64)ret, check_vma, &m, 0);
  if (!m.hit)
    return 0;
  struct cuda_mmap_rec *r = bpf_ringbuf_reserve(&cuda_mmaps, sizeof(*r), 0);
  if (!r) {
    count_drop(CUDA_DROP_MMAP);
    return 0;
  }
  r->pid = (__u32)(bpf_get_current_pid_tgid() >> 32);
  r->pad = 0;
  bpf_ringbuf_submit(r, 0);
  return 0;
}
