/* The configuration of the BPF programs: read-only data (rodata) that user
 * space sets before load (engine/sensor/sensor.cpp, through the skeleton's
 * rodata members, which keep these names), and the kernel includes and shared
 * records every program needs. Included through helpers.bpf.h.
 *
 * Each knob is `const volatile`, so the verifier sees its loaded value and
 * prunes the branches it turns off, and __weak, so that the objects of
 * several .bpf.c files link (bpftool gen object) into one with a single copy
 * of each (docs/bpf/verifier.md).
 */
#ifndef VIGIL_BPF_PROGS_CONFIG_BPF_H
#define VIGIL_BPF_PROGS_CONFIG_BPF_H

#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define __VIGIL_BPF__ 1
#include "bpf/shared/events.h"

const volatile __u32 cfg_vigil_tgid __weak = 0;      /* vigil's own pid: never traced */
const volatile __u32 cfg_uvm_major __weak = 0;       /* nvidia-uvm's dynamic major */
const volatile __u32 cfg_payload_bytes __weak = 256; /* first bytes of a TCP connection */
/* The open filter's knobs (bpf/progs/fd/open.bpf.c, bpf/shared/events.h):
 * not read-only data but a data section of their own, which user space
 * rewrites when a reload changes the rules' paths (with the filter's tables,
 * hash maps). want_payload is there too: a reload may start the payload
 * events. */
struct vg_of_knobs vg_of SEC(".data.openf") __weak = {};

/* nvidia:nvidia_dev_xid field offsets, read from its format file (module BTF
 * is usually absent, so CO-RE cannot relocate them). */
const volatile __u32 cfg_xid_dev_off __weak = 0;
const volatile __u32 cfg_xid_code_off __weak = 0;
const volatile __u32 cfg_xid_msg_off __weak = 0;
/* The dynamic PMU types of kprobe and uprobe perf events
 * (/sys/bus/event_source/devices/{kprobe,uprobe}/type; 0: none). */
const volatile __u32 cfg_perf_kprobe_type __weak = 0;
const volatile __u32 cfg_perf_uprobe_type __weak = 0;
/* 1: the sys_exit programs read the syscall's arguments from the saved user
 * registers (vg_syscall_regs) and no sys_enter program is attached; 0: the
 * sys_enter programs keep the arguments in per-thread maps for the exit. */
const volatile __u32 cfg_args_at_exit __weak = 0;
/* Wake the reader only once this many bytes wait in the ring buffer (0: for
 * every record). A wake-up costs about a microsecond on the traced thread
 * (irq_work + wake_up); user space also drains on a short timer, so a quiet
 * node's events wait at most that long. */
const volatile __u32 cfg_wakeup_bytes __weak = 0;
/* 1: the cgroup socket programs may call bpf_get_current_task_btf (probed by
 * user space at load: tracing programs have it from 5.11, the cgroup ones
 * only on later kernels) and fill the header with direct loads. */
const volatile __u32 cfg_sock_task_btf __weak = 0;
/* 1: each CPU keeps the last usage key it counted (ioctl_slot below). Set by
 * user space where it can run vg_ioctl_slot_drain on every CPU (kernels
 * 5.10+); 0: every NVIDIA ioctl is counted in gpu_usage directly. */
const volatile __u32 cfg_ioctl_slot __weak = 0;
/* Watched programs: a process whose comm, after its exec, starts with these
 * bytes (little-endian, under the mask; 0: none) has every successful open
 * sent, whatever the open filter says: the NVIDIA Container Toolkit's hooks
 * ("nvidia-c": nvidia-ctk, nvidia-cdi-hook, nvidia-container-*), which run as
 * host root in a container's context, so that the libraries they load and
 * the files they touch reach the rules (bpf/progs/proc.bpf.c marks them). */
const volatile __u64 cfg_watch_comm __weak = 0;
const volatile __u64 cfg_watch_comm_mask __weak = 0;

#endif /* VIGIL_BPF_PROGS_CONFIG_BPF_H */
