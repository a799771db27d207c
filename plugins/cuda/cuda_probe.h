/* The records the CUDA probes (cuda.bpf.c) hand to the plugin (probes.cpp):
 * plain C, fixed-size fields only, shared by the BPF program and user space.
 *
 * Every uprobe carries a 64-bit attach cookie: the entry point's id in the
 * low 16 bits (enum cuda_call_id, calls.h) and the library's slot in the next
 * 16 (the plugin's table of attached libcuda files). */
#ifndef VIGIL_PLUGINS_CUDA_CUDA_PROBE_H
#define VIGIL_PLUGINS_CUDA_CUDA_PROBE_H

#ifndef __VIGIL_CUDA_BPF__
#include <stdint.h>
typedef uint8_t cp_u8;
typedef uint16_t cp_u16;
typedef uint32_t cp_u32;
typedef uint64_t cp_u64;
#else
typedef __u8 cp_u8;
typedef __u16 cp_u16;
typedef __u32 cp_u32;
typedef __u64 cp_u64;
#endif

#define CUDA_COOKIE_CALL(c) ((cp_u32)((c)&0xffffu))
#define CUDA_COOKIE_LIB(c) ((cp_u32)(((c) >> 16) & 0xffffu))
#define CUDA_COOKIE(call, lib) ((((cp_u64)(lib)&0xffffu) << 16) | ((cp_u64)(call)&0xffffu))

/* The entry points the plugin knows (calls.cpp has their names and how to
 * read their arguments). Values are stored in captures: append only. */
enum cuda_call_id {
  CUDA_CALL_NONE = 0,
  /* context */
  CUDA_CALL_CTX_CREATE_V2 = 1,
  CUDA_CALL_CTX_CREATE_V3 = 2,
  CUDA_CALL_CTX_CREATE_V4 = 3,
  CUDA_CALL_PRIMARY_CTX_RETAIN = 4,
  /* module: calls whose second argument is a path */
  CUDA_CALL_MODULE_LOAD = 5,
  CUDA_CALL_LIBRARY_LOAD_FROM_FILE = 6,
  /* module: calls whose second argument is an in-memory image */
  CUDA_CALL_MODULE_LOAD_DATA = 7,
  CUDA_CALL_MODULE_LOAD_DATA_EX = 8,
  CUDA_CALL_MODULE_LOAD_FAT_BINARY = 9,
  CUDA_CALL_LIBRARY_LOAD_DATA = 10,
  /* memory */
  CUDA_CALL_MEM_ALLOC_V2 = 11,
  CUDA_CALL_MEM_ALLOC_MANAGED = 12,
  CUDA_CALL_MEM_ALLOC_ASYNC = 13,
  CUDA_CALL_MEM_ALLOC_ASYNC_PTSZ = 14,
  CUDA_CALL_MEM_FREE_V2 = 15,
  /* kernel launch: counted in the kernel, never sent one by one */
  CUDA_CALL_LAUNCH_KERNEL = 16,
  CUDA_CALL_LAUNCH_KERNEL_PTSZ = 17,
  CUDA_CALL_LAUNCH_KERNEL_EX = 18,
  CUDA_CALL_LAUNCH_KERNEL_EX_PTSZ = 19,
  CUDA_CALL_LAUNCH_COOPERATIVE = 20,
  CUDA_CALL_LAUNCH_COOPERATIVE_PTSZ = 21,
  /* graph launch: one call starts a whole graph of kernels; counted apart */
  CUDA_CALL_GRAPH_LAUNCH = 22,
  CUDA_CALL_GRAPH_LAUNCH_PTSZ = 23,
  CUDA_CALL_MAX = 24
};

#define CUDA_CALL_IS_PATH(c) ((c) == CUDA_CALL_MODULE_LOAD || (c) == CUDA_CALL_LIBRARY_LOAD_FROM_FILE)
#define CUDA_CALL_IS_GRAPH(c) ((c) == CUDA_CALL_GRAPH_LAUNCH || (c) == CUDA_CALL_GRAPH_LAUNCH_PTSZ)
#define CUDA_CALL_IS_IMAGE(c) ((c) >= CUDA_CALL_MODULE_LOAD_DATA && (c) <= CUDA_CALL_LIBRARY_LOAD_DATA)

/* Bytes of a string argument (cuModuleLoad's file name) or of an image's
 * first bytes (cuModuleLoadData) copied into a call record. */
#define CUDA_STR_MAX 256
/* Bytes of an image's start kept (enough for its magic and a PTX header). */
#define CUDA_IMAGE_HEAD 64

/* One call of an entry point other than a kernel launch. */
struct cuda_call_rec {
  cp_u64 ts_ns;    /* bpf_ktime_get_ns() at entry (CLOCK_MONOTONIC) */
  cp_u32 pid;      /* host tgid */
  cp_u32 tid;      /* host tid */
  cp_u32 call;     /* enum cuda_call_id */
  cp_u32 lib;      /* library slot */
  cp_u64 args[6];  /* the first six integer arguments, as passed (x86-64 SysV / aarch64) */
  cp_u32 str_len;  /* bytes at str (string: without the NUL) */
  cp_u32 str_kind; /* CUDA_STR_NONE, CUDA_STR_PATH, CUDA_STR_IMAGE */
  cp_u8 str[CUDA_STR_MAX];
};

#define CUDA_STR_NONE 0
#define CUDA_STR_PATH 1  /* a NUL-terminated path argument */
#define CUDA_STR_IMAGE 2 /* the first bytes of an in-memory module image */

/* The kernel-launch count map: key (tgid, library slot), one value per CPU. */
struct cuda_launch_key {
  cp_u32 pid;
  cp_u32 lib;
};

struct cuda_launch_val {
  cp_u64 count;  /* kernel launches */
  cp_u64 graphs; /* graph launches */
};

/* A process mapped an executable file whose name is a library name the plugin
 * looks for (syscalls:sys_exit_mmap): its maps are read at once, not at the
 * next scan. */
struct cuda_mmap_rec {
  cp_u32 pid;
  cp_u32 pad;
};

/* Library names the mmap watch compares (the configuration's library_names
 * that fit). */
#define CUDA_WATCH_NAMES 4
#define CUDA_WATCH_NAME_LEN 32

/* Drop counters (a per-CPU array indexed by these). */
#define CUDA_DROP_RING 0       /* ring buffer full: a call record lost */
#define CUDA_DROP_LAUNCH_MAP 1 /* launch map full: a process's launches not counted */
#define CUDA_DROP_MMAP 2       /* mmap watch ring full: the process waits for the next scan */
#define CUDA_DROP_COUNT 3

#endif /* VIGIL_PLUGINS_CUDA_CUDA_PROBE_H */
