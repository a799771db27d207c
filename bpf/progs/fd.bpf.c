// SPDX-License-Identifier: GPL-2.0
/* Syscalls on file descriptors, one file per concern:
 *   fd/open.bpf.c          opens, and the open filter (which paths are sent);
 *   fd/nvidia_ioctl.bpf.c  ioctls on NVIDIA device fds: decoding and counting;
 *   fd/socket.bpf.c        connect() and the socket-fd calls (dup, accept,
 *                          listen, bind).
 * Per-syscall tracepoints: only these syscalls pay (DESIGN.md "Pick hooks by
 * what they cost"), never raw_syscalls.
 *
 * The three are compiled as one object, this file, because all of them read
 * the fd table in place through bpf_rdonly_cast (vg_task_fd_file), and one
 * object only may reference that kfunc: bpftool's linker in libbpf 1.1 cannot
 * link one extern kfunc referenced from two objects (helpers.bpf.h). Each
 * file includes what it uses, so it reads on its own. */
#include "bpf/progs/helpers.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#include "bpf/progs/fd/open.bpf.c"
#include "bpf/progs/fd/nvidia_ioctl.bpf.c"
#include "bpf/progs/fd/socket.bpf.c"
