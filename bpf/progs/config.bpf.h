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
const volatile __u32 cfg_n_prefixes __weak = 0;      /* open path prefixes in use */
const volatile __u32 cfg_prefix_len[VG_OPEN_PREFIXES] __weak = {};
const volatile char cfg_prefix[VG_OPEN_PREFIXES][VG_PREFIX_LEN] __weak
    __attribute__((aligned(8))) = {};
/* cfg_prefix[0, cfg_n_given) are prefixes of the path as given,
 * [cfg_n_given, cfg_n_path_prefixes) prefixes of the resolved path (from
 * cfg_n_any_prefixes on, those only opens for writing can match), then to
 * cfg_n_whole_end whole paths and from there directories (fd.directory =),
 * each with its last component's length and first 16 bytes (zero-padded),
 * which a successful open's name (its parent's, for a directory) is judged
 * by. */
const volatile __u32 cfg_n_given __weak = 0;
const volatile __u32 cfg_n_any_prefixes __weak = 0;
const volatile __u32 cfg_n_path_prefixes __weak = 0;
const volatile __u32 cfg_n_whole_end __weak = 0;
const volatile __u64 cfg_dir_len_mask __weak =
    0; /* bit n: some directory's last component has n bytes */
/* Whole paths and directories are each sorted by their last component's
 * length: those of n bytes are cfg_prefix[lo[n], hi[n]). */
const volatile __u8 cfg_whole_lo[64] __weak = {};
const volatile __u8 cfg_whole_hi[64] __weak = {};
const volatile __u8 cfg_dir_lo[64] __weak = {};
const volatile __u8 cfg_dir_hi[64] __weak = {};
/* A resolved prefix as the first path components it names, compared with the
 * components of the opened file's path below the root: for component k of
 * prefix i, its length, its first 16 bytes and which of them to compare
 * (mask), and whether it is whole (the name must be that long) or a name
 * prefix (at least that long: "/etc/ld.so" names "ld.so..."). A prefix of
 * more components, or a longer name, is compared by its first ones: the
 * kernel sends a superset, user space judges the exact path. */
const volatile __u32 cfg_rp_ncomp[VG_OPEN_PREFIXES] __weak = {};
const volatile __u32 cfg_rp_clen[VG_OPEN_PREFIXES][VG_RP_COMPS] __weak = {};
const volatile __u32 cfg_rp_cpartial[VG_OPEN_PREFIXES][VG_RP_COMPS] __weak = {};
const volatile __u64 cfg_rp_chead[VG_OPEN_PREFIXES][VG_RP_COMPS][2] __weak = {};
const volatile __u64 cfg_rp_cmask[VG_OPEN_PREFIXES][VG_RP_COMPS][2] __weak = {};
const volatile __u32 cfg_rp_maxcomp __weak = 0; /* the most components any prefix compares */
/* bit n: a resolved prefix's first component may be n bytes (63: longer);
 * of all of them, and of those for any open. */
const volatile __u64 cfg_rp_top_len_mask __weak = 0;
const volatile __u64 cfg_rp_any_len_mask __weak = 0;
const volatile __u32 cfg_leaf_len[VG_OPEN_PREFIXES] __weak = {};
const volatile __u64 cfg_leaf_head[VG_OPEN_PREFIXES][2] __weak = {};
const volatile __u64 cfg_leaf_len_mask __weak =
    0; /* bit n: some whole path's last component has n bytes */
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
