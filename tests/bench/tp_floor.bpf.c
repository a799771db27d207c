// SPDX-License-Identifier: GPL-2.0
/* The floor under vigil's syscall probes: programs that do nothing, attached
 * where vigil attaches its own (tracepoint_floor.cpp loads them, for
 * tests/bench/tracepoint_floor.sh). What a workload pays with these attached
 * is what the kernel charges for the hook itself; the rest of vigil's cost is
 * its programs' own work. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

/* Runs counted, so the loader can tell the programs ran at all. */
__u64 runs;

/* One empty program, attached to each syscall tracepoint given (the way
 * vigil attaches one program per syscall:sys_exit_* it needs). */
SEC("tracepoint")
int floor_syscall(void *ctx)
{
  __sync_fetch_and_add(&runs, 1);
  return 0;
}

/* The same, plus what reading an NVIDIA RM control's command costs: the
 * saved user registers (for the parameter block's address, the ioctl's
 * third argument) and one 4-byte read of user memory at its offset 8. vigil
 * reads that word on every NVIDIA ioctl (docs/events.md, ioctl). */
SEC("tracepoint")
int floor_syscall_read(void *ctx)
{
  struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
  __u32 cmd = 0;
  if (regs && bpf_probe_read_user(&cmd, sizeof(cmd), (void *)(regs->dx + 8)) == 0)
    __sync_fetch_and_add(&runs, 1);
  return 0;
}

/* The same, plus what judging an open by the path as given costs: the saved
 * user registers (for the path's address, the syscall's first or second
 * argument) and one 8-byte read of the path. vigil makes that read on an
 * open it has not placed by the file opened when a rule compares the path
 * as given (Falco's fd.nameraw, e.g. its directory traversal rule). */
static __always_inline int read_path_head(const char *path)
{
  __u64 head = 0;
  if (bpf_probe_read_user(&head, sizeof(head), path) == 0)
    __sync_fetch_and_add(&runs, 1);
  return 0;
}

SEC("tracepoint")
int floor_openat_read(void *ctx) /* openat, openat2: the path is the second argument */
{
  struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
  return regs ? read_path_head((const char *)regs->si) : 0;
}

SEC("tracepoint")
int floor_open_read(void *ctx) /* open: the first */
{
  struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
  return regs ? read_path_head((const char *)regs->di) : 0;
}

/* The other design: one BTF tracepoint on every syscall exit that hands the
 * syscalls of interest to their program by a tail call (the way sensors that
 * use the raw sys_enter/sys_exit tracepoints dispatch). */
struct {
  __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
  __uint(max_entries, 512);
  __type(key, __u32);
  __type(value, __u32);
} floor_exit_progs SEC(".maps");

SEC("tp_btf/sys_exit")
int BPF_PROG(floor_dispatch, struct pt_regs *regs, long ret)
{
  bpf_tail_call(ctx, &floor_exit_progs, (__u32)regs->orig_ax);
  return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(floor_exit_handler, struct pt_regs *regs, long ret)
{
  __sync_fetch_and_add(&runs, 1);
  return 0;
}

/* The same on every syscall entry too: sensors that collect both halves of
 * each syscall from the raw tracepoints (Falco's modern eBPF probe does)
 * pay both dispatches. */
struct {
  __uint(type, BPF_MAP_TYPE_PROG_ARRAY);
  __uint(max_entries, 512);
  __type(key, __u32);
  __type(value, __u32);
} floor_enter_progs SEC(".maps");

SEC("tp_btf/sys_enter")
int BPF_PROG(floor_enter_dispatch, struct pt_regs *regs, long id)
{
  bpf_tail_call(ctx, &floor_enter_progs, (__u32)id);
  return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(floor_enter_handler, struct pt_regs *regs, long id)
{
  __sync_fetch_and_add(&runs, 1);
  return 0;
}
