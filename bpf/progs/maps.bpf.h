/* The maps more than one program file uses: the ring buffer, the drop
 * counters, the per-CPU scratch record, the NVIDIA usage counts, the path
 * walk's state and the rarer syscalls' saved arguments. A map one program
 * file uses alone is declared there. Included through helpers.bpf.h.
 *
 * Each is __weak, so that the objects of several .bpf.c files link (bpftool
 * gen object) into one with a single copy of each; the skeleton's map names
 * are these.
 */
#ifndef VIGIL_BPF_PROGS_MAPS_BPF_H
#define VIGIL_BPF_PROGS_MAPS_BPF_H

#include "bpf/progs/config.bpf.h"

/* Offsets inside the scratch buffer are masked with VG_OFF_MASK, and no single
 * read appends more than VG_CHUNK_MAX bytes, so buf[off .. off+VG_CHUNK_MAX)
 * is always inside the buffer (the verifier can prove it). */
#define VG_OFF_MASK 8191
#define VG_CHUNK_MAX 4096
#define VG_SCRATCH_SIZE VG_RECORD_MAX /* >= VG_OFF_MASK + 1 + VG_CHUNK_MAX */

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 8 << 20); /* resized by user space before load */
} events SEC(".maps") __weak;

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, VG_DROP_COUNT);
  __type(key, __u32);
  __type(value, __u64);
} drops SEC(".maps") __weak;

struct vg_scratch {
  __u8 buf[VG_SCRATCH_SIZE];
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct vg_scratch);
} scratch SEC(".maps") __weak;

/* NVIDIA ioctl counts, per process / device / command; drained by user space. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, struct vg_usage_key);
  __type(value, struct vg_usage_val);
} gpu_usage SEC(".maps") __weak;

/* Loop state of vg_put_dpath, kept in map memory rather than registers: the
 * verifier does not track values loaded from a map, so every iteration looks
 * alike and its states prune (see docs/bpf/verifier.md). */
struct vg_walk {
  __u64 d;
  __u64 vm;
  __u64 mnt;
  __u64 root_d;
  __u64 root_m;
  __u32 pos;
  __u32 done;
  __u32 rooted; /* the walk ended at a root (the task's or the filesystem's) */
  __u32 pad;
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct vg_walk);
} walk_state SEC(".maps") __weak;

/* The six raw arguments of a rarer syscall, kept per thread by vg_enter_args
 * where the exit program cannot read them (vg_sys_args, helpers.bpf.h). */
struct vg_sys_args {
  __u64 a[6];
};

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __type(value, struct vg_sys_args);
} pending_args SEC(".maps") __weak;

/* The watched processes (cfg_watch_comm) by tgid, and how many there are:
 * an open looks its process up only while one is running, so the usual
 * cost is one load of the count. A full map leaves a process unwatched
 * (counted as map_full). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, __u8);
} watched SEC(".maps") __weak;
__u32 vg_watched_live __weak = 0;

#endif /* VIGIL_BPF_PROGS_MAPS_BPF_H */
