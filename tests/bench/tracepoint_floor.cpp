// The floor under vigil's syscall probes, for tracepoint_floor.sh: attaches a
// program that does nothing to each syscall tracepoint named, and holds it
// until SIGINT or SIGTERM.
//
//   tracepoint_floor sys_exit_ioctl:16 sys_exit_openat:257 ...
//       one empty program on each syscalls:<name> tracepoint (vigil's design)
//   tracepoint_floor --read sys_exit_ioctl:16 ...
//       the same, the program on sys_exit_ioctl also reading the 4-byte word
//       at the ioctl's third argument + 8 (an RM control's command, as vigil
//       reads it)
//   tracepoint_floor --read-path sys_exit_openat:257 ...
//       the same, the programs on sys_exit_open, sys_exit_openat and
//       sys_exit_openat2 also reading the first 8 bytes of the path as given
//       (what vigil reads where a rule compares that path)
//   tracepoint_floor --raw sys_exit_ioctl:16 ...
//       one program on the BTF tracepoint sys_exit, for every syscall, that
//       tail-calls an empty program for the numbers given
//   tracepoint_floor --raw-both sys_exit_ioctl:16 ...
//       the same on sys_enter too (both halves of every syscall)
//
// Prints "ready" once attached, and on exit how many times the empty
// programs ran.
#include <bpf/libbpf.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "bpf/tp_floor.skel.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Target {
  std::string tracepoint;  // sys_exit_ioctl
  unsigned nr = 0;         // its syscall number (for --raw)
};

bool parse(const char* arg, Target& t) {
  const char* colon = std::strchr(arg, ':');
  if (!colon || colon == arg) return false;
  t.tracepoint.assign(arg, colon);
  char* end = nullptr;
  unsigned long nr = std::strtoul(colon + 1, &end, 10);
  if (*end != '\0' || end == colon + 1 || nr >= 512) return false;
  t.nr = static_cast<unsigned>(nr);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bool raw = false, read = false, read_path = false, both = false;
  std::vector<Target> targets;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--raw") == 0) {
      raw = true;
      continue;
    }
    if (std::strcmp(argv[i], "--raw-both") == 0) {
      raw = both = true;
      continue;
    }
    if (std::strcmp(argv[i], "--read") == 0) {
      read = true;
      continue;
    }
    if (std::strcmp(argv[i], "--read-path") == 0) {
      read_path = true;
      continue;
    }
    Target t;
    if (!parse(argv[i], t)) {
      std::fprintf(stderr, "tracepoint_floor: expected TRACEPOINT:NR (sys_exit_ioctl:16), got '%s'\n", argv[i]);
      return 2;
    }
    targets.push_back(t);
  }
  if (targets.empty()) {
    std::fprintf(stderr, "usage: tracepoint_floor [--raw | --raw-both | [--read] [--read-path]] sys_exit_NAME:NR...\n");
    return 2;
  }

  tp_floor* skel = tp_floor__open();
  if (!skel) {
    std::perror("tracepoint_floor: open");
    return 1;
  }
  bpf_program__set_autoload(skel->progs.floor_syscall, !raw);
  bpf_program__set_autoload(skel->progs.floor_syscall_read, !raw && read);
  bpf_program__set_autoload(skel->progs.floor_openat_read, !raw && read_path);
  bpf_program__set_autoload(skel->progs.floor_open_read, !raw && read_path);
  bpf_program__set_autoload(skel->progs.floor_dispatch, raw);
  bpf_program__set_autoload(skel->progs.floor_exit_handler, raw);
  bpf_program__set_autoload(skel->progs.floor_enter_dispatch, both);
  bpf_program__set_autoload(skel->progs.floor_enter_handler, both);
  if (tp_floor__load(skel) != 0) {
    std::fprintf(stderr, "tracepoint_floor: load failed\n");
    tp_floor__destroy(skel);
    return 1;
  }
  std::vector<bpf_link*> links;
  bool ok = true;
  if (raw) {
    struct Half {
      bpf_map* progs;
      bpf_program* handler;
      bpf_program* dispatch;
    };
    std::vector<Half> halves = {
        {skel->maps.floor_exit_progs, skel->progs.floor_exit_handler, skel->progs.floor_dispatch}};
    if (both)
      halves.push_back(
          {skel->maps.floor_enter_progs, skel->progs.floor_enter_handler, skel->progs.floor_enter_dispatch});
    for (const Half& h : halves) {
      const int handler = bpf_program__fd(h.handler);
      for (const auto& t : targets) {
        __u32 key = t.nr;
        if (bpf_map__update_elem(h.progs, &key, sizeof(key), &handler, sizeof(handler), 0) != 0) {
          std::fprintf(stderr, "tracepoint_floor: syscall %u: %s\n", t.nr, std::strerror(errno));
          ok = false;
        }
      }
      bpf_link* l = bpf_program__attach(h.dispatch);
      if (l) links.push_back(l);
      else ok = false;
    }
  } else {
    for (const auto& t : targets) {
      // The reads are an NVIDIA ioctl's and an open's: on the other syscalls
      // the empty program.
      bpf_program* prog = skel->progs.floor_syscall;
      if (read && t.tracepoint == "sys_exit_ioctl") prog = skel->progs.floor_syscall_read;
      if (read_path && (t.tracepoint == "sys_exit_openat" || t.tracepoint == "sys_exit_openat2"))
        prog = skel->progs.floor_openat_read;
      if (read_path && t.tracepoint == "sys_exit_open") prog = skel->progs.floor_open_read;
      bpf_link* l = bpf_program__attach_tracepoint(prog, "syscalls", t.tracepoint.c_str());
      if (!l) {
        std::fprintf(stderr, "tracepoint_floor: syscalls:%s: %s\n", t.tracepoint.c_str(), std::strerror(errno));
        ok = false;
        continue;
      }
      links.push_back(l);
    }
  }
  if (ok) {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::printf("ready: %zu attached (%s)\n", links.size(),
                both                ? "raw sys_enter and sys_exit"
                : raw               ? "raw sys_exit"
                : read || read_path ? "syscall tracepoints, reading"
                                    : "syscall tracepoints");
    std::fflush(stdout);
    while (!g_stop) pause();
    std::printf("runs=%llu\n", static_cast<unsigned long long>(skel->bss->runs));
  }
  for (auto* l : links) bpf_link__destroy(l);
  tp_floor__destroy(skel);
  return ok ? 0 : 1;
}
