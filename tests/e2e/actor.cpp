// vigil_e2e_actor: the program the end-to-end tests run as "real activity".
// The tests copy it under unique names, so that its comm is one no other
// process on the machine has, and give it steps on its command line:
//
//   connect ADDR PORT    listen on ADDR:PORT, connect a TCP socket to it, accept
//   nvalloc PATH CLASS   open PATH read-write and issue NV_ESC_RM_ALLOC (NVOS64)
//                        of RM class CLASS (hex) on it
//   open PATH            open PATH read-only (the fd is kept)
//   write PATH           create or truncate PATH (0644), write a byte, close it
//   wait                 block until a byte (or EOF) arrives on stdin
//   sleep MS             sleep MS milliseconds
//   note TEXT            nothing (an argument for the command line to carry)
//   bpfenum              walk the BPF program ids (BPF_PROG_GET_NEXT_ID), as
//                        `bpftool prog list` starts
//   kill PID SIG         send signal number SIG to PID
//   ptseize PID          PTRACE_SEIZE PID (never stops it; released at exit)
//   openw PATH           open PATH write-only, append, and close it unchanged
//   spawn PATH ARGV0 ARG...  fork, exec PATH with argv ARGV0 ARG... (the rest of
//                        the command line), wait for it; exit with its status
//   memfdspawn PATH ARGV0 ARG...  the same, but the child copies PATH into a
//                        memfd (memfd_create) and runs that (fexecve): fileless
//
// Exit status: 0 when every step ran, 10 + the index of the first failed step.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool step_connect(const char* addr, const char* port_text) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(std::atoi(port_text)));
  if (inet_pton(AF_INET, addr, &a.sin_addr) != 1) return false;
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0) return false;
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(ls, 4) != 0) {
    close(ls);
    return false;
  }
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool ok = s >= 0 && connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  if (ok) {
    int c = accept(ls, nullptr, nullptr);
    ok = c >= 0;
    if (c >= 0) close(c);
  }
  if (s >= 0) close(s);
  close(ls);
  return ok;
}

// NVOS64_PARAMETERS (48 bytes): hRoot@0 hObjectParent@4 hObjectNew@8 hClass@12
// pAllocParms@16 paramsSize@24 flags@28 ... status@40.
bool step_nvalloc(const char* path, const char* class_hex) {
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  std::uint32_t cls = static_cast<std::uint32_t>(std::strtoul(class_hex, nullptr, 16));
  unsigned char params[48] = {};
  std::memcpy(params + 12, &cls, sizeof(cls));
  // A stand-in node is not the driver: the call itself fails (ENOTTY); what
  // matters is that it was made on an NVIDIA-named device.
  (void)ioctl(fd, 0xC030462B, params);  // _IOWR('F', 0x2B, NVOS64_PARAMETERS)
  close(fd);
  return true;
}

// Walks the BPF program ids; true when at least one id was read.
bool step_bpfenum() {
  std::uint32_t id = 0;
  int n = 0;
  for (; n < 1000; ++n) {
    union {
      struct {
        std::uint32_t start_id, next_id;
      } ids;
      char pad[128];
    } attr{};
    attr.ids.start_id = id;
    if (syscall(SYS_bpf, 11 /* BPF_PROG_GET_NEXT_ID */, &attr, sizeof(attr)) != 0) break;
    id = attr.ids.next_id;
  }
  return n > 0;
}

// In a forked child: PATH's bytes into a memfd named "e2e", then fexecve.
[[noreturn]] void memfd_exec(const char* path, char* const* argv) {
  int in = open(path, O_RDONLY | O_CLOEXEC);
  int mfd = memfd_create("e2e", MFD_CLOEXEC);
  if (in < 0 || mfd < 0) _exit(126);
  char buf[65536];
  ssize_t n;
  while ((n = read(in, buf, sizeof(buf))) > 0) {
    if (write(mfd, buf, static_cast<std::size_t>(n)) != n) _exit(126);
  }
  close(in);
  fexecve(mfd, argv, ::environ);
  _exit(127);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> keep;
  int step = 0;
  for (int i = 1; i < argc; ++step) {
    std::string op = argv[i];
    bool ok = false;
    if (op == "connect" && i + 2 < argc) {
      ok = step_connect(argv[i + 1], argv[i + 2]);
      i += 3;
    } else if (op == "nvalloc" && i + 2 < argc) {
      ok = step_nvalloc(argv[i + 1], argv[i + 2]);
      i += 3;
    } else if (op == "open" && i + 1 < argc) {
      int fd = open(argv[i + 1], O_RDONLY | O_CLOEXEC);
      ok = fd >= 0;
      if (ok) keep.push_back(fd);
      i += 2;
    } else if (op == "bpfenum") {
      ok = step_bpfenum();
      i += 1;
    } else if (op == "kill" && i + 2 < argc) {
      ok = kill(std::atoi(argv[i + 1]), std::atoi(argv[i + 2])) == 0;
      i += 3;
    } else if (op == "ptseize" && i + 1 < argc) {
      ok = ptrace(PTRACE_SEIZE, std::atoi(argv[i + 1]), nullptr, nullptr) == 0;
      i += 2;
    } else if (op == "openw" && i + 1 < argc) {
      int fd = open(argv[i + 1], O_WRONLY | O_APPEND | O_CLOEXEC);
      ok = fd >= 0;
      if (ok) close(fd);
      i += 2;
    } else if (op == "write" && i + 1 < argc) {
      int fd = open(argv[i + 1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      ok = fd >= 0 && write(fd, "x", 1) == 1;
      if (fd >= 0) close(fd);
      i += 2;
    } else if (op == "wait") {
      char c;
      ssize_t n;
      do {
        n = read(0, &c, 1);
      } while (n < 0 && errno == EINTR);
      ok = true;
      i += 1;
    } else if (op == "sleep" && i + 1 < argc) {
      usleep(static_cast<useconds_t>(std::atoi(argv[i + 1])) * 1000);
      ok = true;
      i += 2;
    } else if (op == "note" && i + 1 < argc) {
      ok = true;
      i += 2;
    } else if ((op == "spawn" || op == "memfdspawn") && i + 1 < argc) {
      pid_t pid = fork();
      if (pid == 0) {
        if (op == "memfdspawn") memfd_exec(argv[i + 1], argv + i + 2);
        execv(argv[i + 1], argv + i + 2);
        _exit(127);
      }
      int st = 0;
      if (pid < 0 || waitpid(pid, &st, 0) != pid) return 10 + step;
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    } else {
      std::fprintf(stderr, "actor: bad step '%s'\n", op.c_str());
      return 10 + step;
    }
    if (!ok) {
      std::fprintf(stderr, "actor: step %d '%s' failed: %s\n", step, op.c_str(), std::strerror(errno));
      return 10 + step;
    }
  }
  return 0;
}
