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
/* The open filter (bpf/progs/fd/open.bpf.c). Its tables are hash maps
 * (open_names, open_trie, open_given, open_heads) sized to what the rules ask;
 * these knobs say which tables hold anything, and masks of the lengths they
 * hold, so that most opens are judged without a lookup. */
const volatile __u32 cfg_n_prefixes __weak = 0; /* open-filter literals in use (0: filter off) */
const volatile __u32 cfg_have_whole __weak = 0; /* whole paths in open_names */
const volatile __u32 cfg_have_dirs __weak = 0;  /* directories in open_names */
const volatile __u32 cfg_have_rp __weak = 0;    /* resolved prefixes in open_trie */
/* 1: some resolved prefixes are for opens for writing only (VG_OF_WRITE). */
const volatile __u32 cfg_have_write_rp __weak = 0;
const volatile __u32 cfg_have_given __weak = 0; /* given prefixes (VG_OF_GIVEN) */
/* 1: some literals hold only where the path as given holds "../"
 * (VG_OF_TRAVERSAL): a failed open's given path is scanned for it. */
const volatile __u32 cfg_have_traversal __weak = 0;
const volatile __u64 cfg_dir_len_mask __weak =
    0; /* bit n: some directory's last component has n bytes */
const volatile __u64 cfg_leaf_len_mask __weak =
    0; /* bit n: some whole path's last component has n bytes */
const volatile __u32 cfg_rp_maxcomp __weak = 0; /* the most components any prefix compares */
/* bit n: a resolved prefix's first component may be n bytes (63: longer);
 * of all of them, and of those for any open. */
const volatile __u64 cfg_rp_top_len_mask __weak = 0;
const volatile __u64 cfg_rp_any_len_mask __weak = 0;
/* Lengths in open_given (bit n: a literal of n bytes), of the given prefixes
 * and of all literals; and the same of open_heads (bits 1 to 8). */
const volatile __u64 cfg_given_lens __weak = 0;
const volatile __u64 cfg_lit_lens __weak = 0;
const volatile __u32 cfg_given_heads __weak = 0;
const volatile __u32 cfg_lit_heads __weak = 0;
/* Name fragments a traversal rule asks for (fd.name contains "id_rsa"): the
 * opened file's name is scanned for them (its first 16 bytes; a longer name
 * may hold one further on and is taken as holding one). */
const volatile __u32 cfg_n_contains __weak = 0;
const volatile __u32 cfg_contains_len[VG_CONTAINS_MAX] __weak = {};
const volatile __u64 cfg_contains_head[VG_CONTAINS_MAX][2] __weak = {};
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

#endif /* VIGIL_BPF_PROGS_CONFIG_BPF_H */
