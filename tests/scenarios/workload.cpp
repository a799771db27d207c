// vigil_scenario_workload: the program the scenario tests run inside stand-in
// pods. It is installed under telling names (xmrig, vllm, nvidia-smi, runc...)
// so that its comm is what a real workload's would be, and it does what the
// steps in $VIGIL_STEPS say (its argv is left free for realistic command lines):
//
//   open:PATH:r|w|rw        open a file or device node (the fd is kept)
//   alloc:CLASS             NV_ESC_RM_ALLOC (NVOS64) of RM class CLASS (hex) on /dev/nvidiactl
//   control:CMD             NV_ESC_RM_CONTROL (NVOS54) of control CMD (hex) on /dev/nvidiactl
//   escape:NR               an ioctl of escape number NR (hex) with a 32-byte block on /dev/nvidiactl
//   dns:NAME@SERVER         send a DNS A question for NAME to SERVER:53, wait for the answer
//   tcp:ADDR:PORT           connect a TCP socket (kept as "the last socket")
//   send:TEXT               send TEXT (\n for a newline) on the last socket
//   push:BYTES              send BYTES zero bytes on the last socket (a bulk upload)
//   udp:ADDR:PORT           send one UDP datagram
//   exec:ARGV0|ARG1|...     fork, exec ARGV0 with $VIGIL_CHILD_STEPS as its steps, wait
//   sockshell:ADDR:PORT     fork a /bin/sh whose stdin and stdout are a TCP socket
//   ttyshell:SHELL          fork SHELL -c 'exit 0' on a new pseudo-terminal (controlling tty)
//   bpf                     load a two-instruction socket-filter BPF program
//   mknod:PATH:MAJOR:MINOR  create a character device node
//   unix:PATH               connect a unix stream socket to PATH
//   sleep:MS                sleep
//   write:PATH:TEXT         create (or truncate) a file and write TEXT
//   socket:packet|raw       open an AF_PACKET raw socket, or an AF_INET raw one
//   rename:NAME             prctl(PR_SET_NAME, NAME) on the main thread
//   execa:PATH|ARGV0|...    fork, exec PATH with the argv given (argv[0] chosen: exec -a), wait
//   kill:PID:SIG            send signal SIG to process PID
//   copy:SRC:DST            copy file SRC to DST (created, mode 0755)
//   tmpfs:DIR               mount a tmpfs on DIR (the pod's mount namespace is private)
//   mkdir:DIR               create a directory
//   listen:ADDR:PORT        listen on a TCP socket (kept open)
//
// open modes: r, w (O_WRONLY), rw, a (O_WRONLY|O_APPEND: written to, left intact),
// c (O_WRONLY|O_CREAT, 0644).
//
// A step ending in !ERRNO (EPERM, ENXIO, EACCES, ENOENT) must fail with that errno:
// "open:/dev/nvidia3:rw!EPERM".
//
// Exit status: 0 when every step ran, 10 + the index of the first failed step.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return out;
}

// "ADDR:PORT" (ADDR may be IPv6: the port follows the last colon).
bool parse_endpoint(const std::string& s, sockaddr_storage& ss, socklen_t& len) {
  auto c = s.rfind(':');
  if (c == std::string::npos) return false;
  std::string addr = s.substr(0, c);
  int port = std::atoi(s.c_str() + c + 1);
  std::memset(&ss, 0, sizeof(ss));
  auto* a4 = reinterpret_cast<sockaddr_in*>(&ss);
  if (inet_pton(AF_INET, addr.c_str(), &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<std::uint16_t>(port));
    len = sizeof(*a4);
    return true;
  }
  auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET6, addr.c_str(), &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<std::uint16_t>(port));
    len = sizeof(*a6);
    return true;
  }
  return false;
}

int tcp_connect(const std::string& ep) {
  sockaddr_storage ss;
  socklen_t len = 0;
  if (!parse_endpoint(ep, ss, len)) return -1;
  int s = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  timeval tv{2, 0};
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (connect(s, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    close(s);
    return -1;
  }
  return s;
}

int nv_ctl() {
  static int fd = -1;
  if (fd < 0) fd = open("/dev/nvidiactl", O_RDWR | O_CLOEXEC);
  return fd;
}

bool step_alloc(std::uint32_t cls) {
  int fd = nv_ctl();
  if (fd < 0) return false;
  // NVOS64_PARAMETERS: hRoot@0 hObjectParent@4 hObjectNew@8 hClass@12 ... status@40 (48 bytes).
  unsigned char p[48] = {};
  std::memcpy(p + 12, &cls, sizeof(cls));
  ioctl(fd, 0xC030462B, p);  // a stand-in node is not the driver: the call itself fails
  return true;
}

bool step_control(std::uint32_t cmd) {
  int fd = nv_ctl();
  if (fd < 0) return false;
  // NVOS54_PARAMETERS: hClient@0 hObject@4 cmd@8 flags@12 params@16 paramsSize@24 status@28.
  unsigned char p[32] = {};
  std::memcpy(p + 8, &cmd, sizeof(cmd));
  ioctl(fd, 0xC020462A, p);
  return true;
}

bool step_escape(std::uint32_t nr) {
  int fd = nv_ctl();
  if (fd < 0) return false;
  unsigned char p[32] = {};
  ioctl(fd, 0xC0204600UL | (nr & 0xff), p);  // _IOWR('F', nr, 32 bytes)
  return true;
}

bool step_dns(const std::string& arg) {
  auto at = arg.find('@');
  if (at == std::string::npos) return false;
  std::string name = arg.substr(0, at);
  sockaddr_storage ss;
  socklen_t len = 0;
  if (!parse_endpoint(arg.substr(at + 1) + ":53", ss, len)) return false;
  std::vector<unsigned char> q = {0x5c, 0x01, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  for (const auto& label : split(name, '.')) {
    q.push_back(static_cast<unsigned char>(label.size()));
    q.insert(q.end(), label.begin(), label.end());
  }
  q.insert(q.end(), {0, 0, 1, 0, 1});
  int s = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  if (sendto(s, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&ss), len) < 0) return false;
  pollfd pf{s, POLLIN, 0};
  if (poll(&pf, 1, 2000) == 1) {
    unsigned char buf[512];
    (void)recv(s, buf, sizeof(buf), 0);
  }
  close(s);
  return true;
}

bool step_udp(const std::string& ep) {
  sockaddr_storage ss;
  socklen_t len = 0;
  if (!parse_endpoint(ep, ss, len)) return false;
  int s = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  bool ok = sendto(s, "x", 1, 0, reinterpret_cast<sockaddr*>(&ss), len) == 1;
  close(s);
  return ok;
}

int wait_child(pid_t pid) {
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

bool step_exec(const std::string& arg) {
  auto parts = split(arg, '|');
  pid_t pid = fork();
  if (pid == 0) {
    const char* next = std::getenv("VIGIL_CHILD_STEPS");
    if (next) setenv("VIGIL_STEPS", next, 1);
    else unsetenv("VIGIL_STEPS");
    unsetenv("VIGIL_CHILD_STEPS");
    std::vector<char*> argv;
    for (auto& p : parts) argv.push_back(p.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return wait_child(pid) != 127;
}

// exec PATH with argv ARGV0 ARG1...: the program runs under the name given.
bool step_execa(const std::string& arg) {
  auto parts = split(arg, '|');
  if (parts.size() < 2) return false;
  pid_t pid = fork();
  if (pid == 0) {
    unsetenv("VIGIL_STEPS");
    std::vector<char*> argv;
    for (std::size_t i = 1; i < parts.size(); ++i) argv.push_back(parts[i].data());
    argv.push_back(nullptr);
    execv(parts[0].c_str(), argv.data());
    _exit(127);
  }
  return wait_child(pid) != 127;
}

bool step_copy(const std::string& arg) {
  auto c = arg.find(':');
  if (c == std::string::npos) return false;
  int in = open(arg.substr(0, c).c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return false;
  int out = open(arg.substr(c + 1).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  bool ok = out >= 0;
  char buf[65536];
  ssize_t n = 0;
  while (ok && (n = read(in, buf, sizeof(buf))) > 0) ok = write(out, buf, static_cast<std::size_t>(n)) == n;
  close(in);
  if (out >= 0) close(out);
  return ok && n == 0;
}

int tcp_listen(const std::string& ep) {
  sockaddr_storage ss;
  socklen_t len = 0;
  if (!parse_endpoint(ep, ss, len)) return -1;
  int s = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s, reinterpret_cast<sockaddr*>(&ss), len) != 0 || listen(s, 4) != 0) {
    close(s);
    return -1;
  }
  return s;
}

bool step_sockshell(const std::string& ep) {
  int s = tcp_connect(ep);
  if (s < 0) return false;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(s, 0);
    dup2(s, 1);
    execl("/bin/sh", "sh", "-c", "exit 0", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(s);
  return wait_child(pid) == 0;
}

bool step_ttyshell(const std::string& shell) {
  int master = -1, slave = -1;
  if (openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) return false;
  pid_t pid = fork();
  if (pid == 0) {
    close(master);
    setsid();
    ioctl(slave, TIOCSCTTY, 0);
    dup2(slave, 0);
    dup2(slave, 1);
    dup2(slave, 2);
    if (slave > 2) close(slave);
    std::string name = shell.substr(shell.rfind('/') + 1);
    execl(shell.c_str(), name.c_str(), "-c", "exit 0", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(slave);
  int rc = wait_child(pid);
  close(master);
  return rc == 0;
}

bool step_bpf() {
  // r0 = 0; exit
  struct bpf_insn insns[2] = {};
  insns[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
  insns[0].dst_reg = BPF_REG_0;
  insns[1].code = BPF_JMP | BPF_EXIT;
  union bpf_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
  attr.insn_cnt = 2;
  attr.insns = reinterpret_cast<std::uint64_t>(insns);
  attr.license = reinterpret_cast<std::uint64_t>("GPL");
  std::strncpy(attr.prog_name, "scenario_prog", sizeof(attr.prog_name) - 1);
  long fd = syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
  if (fd < 0) return false;
  close(static_cast<int>(fd));
  return true;
}

std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == 'n') {
      out += '\n';
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

int main() {
  const char* steps_env = std::getenv("VIGIL_STEPS");
  if (!steps_env || !*steps_env) return 0;
  std::vector<int> keep;
  int last_sock = -1;
  auto steps = split(steps_env, ';');
  for (std::size_t i = 0; i < steps.size(); ++i) {
    std::string step = steps[i];
    if (step.empty()) continue;
    // "!ERRNO": the step must fail with that errno.
    int want_errno = 0;
    if (auto bang = step.rfind('!'); bang != std::string::npos && bang > 0) {
      const std::string name = step.substr(bang + 1);
      want_errno = name == "EPERM"    ? EPERM
                   : name == "ENXIO"  ? ENXIO
                   : name == "EACCES" ? EACCES
                   : name == "ENOENT" ? ENOENT
                                      : -1;
      if (want_errno > 0) step.resize(bang);
      else want_errno = 0;
    }
    errno = 0;
    auto colon = step.find(':');
    std::string op = step.substr(0, colon);
    std::string arg = colon == std::string::npos ? "" : step.substr(colon + 1);
    bool ok = false;
    if (op == "open") {
      auto c = arg.rfind(':');
      std::string mode = arg.substr(c + 1);
      int flags = mode == "r"   ? O_RDONLY
                  : mode == "w" ? O_WRONLY
                  : mode == "a" ? O_WRONLY | O_APPEND
                  : mode == "c" ? O_WRONLY | O_CREAT
                                : O_RDWR;
      int fd = open(arg.substr(0, c).c_str(), flags | O_CLOEXEC, 0644);
      ok = fd >= 0;
      if (ok) keep.push_back(fd);
    } else if (op == "alloc") {
      ok = step_alloc(static_cast<std::uint32_t>(std::strtoul(arg.c_str(), nullptr, 16)));
    } else if (op == "control") {
      ok = step_control(static_cast<std::uint32_t>(std::strtoul(arg.c_str(), nullptr, 16)));
    } else if (op == "escape") {
      ok = step_escape(static_cast<std::uint32_t>(std::strtoul(arg.c_str(), nullptr, 16)));
    } else if (op == "dns") {
      ok = step_dns(arg);
    } else if (op == "tcp") {
      last_sock = tcp_connect(arg);
      ok = last_sock >= 0;
    } else if (op == "send") {
      std::string text = unescape(arg);
      ok = last_sock >= 0 && send(last_sock, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size());
    } else if (op == "push") {
      static const std::string chunk(65536, '\0');
      std::uint64_t left = std::strtoull(arg.c_str(), nullptr, 10);
      ok = last_sock >= 0;
      while (ok && left > 0) {
        const std::size_t n = left < chunk.size() ? static_cast<std::size_t>(left) : chunk.size();
        const ssize_t w = send(last_sock, chunk.data(), n, 0);
        ok = w > 0;
        if (ok) left -= static_cast<std::uint64_t>(w);
      }
    } else if (op == "udp") {
      ok = step_udp(arg);
    } else if (op == "exec") {
      ok = step_exec(arg);
    } else if (op == "sockshell") {
      ok = step_sockshell(arg);
    } else if (op == "ttyshell") {
      ok = step_ttyshell(arg);
    } else if (op == "mknod") {
      auto f = split(arg, ':');
      ok = f.size() == 3 && mknod(f[0].c_str(), S_IFCHR | 0600,
                                  makedev(static_cast<unsigned>(std::atoi(f[1].c_str())),
                                          static_cast<unsigned>(std::atoi(f[2].c_str())))) == 0;
    } else if (op == "unix") {
      int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un a{};
      a.sun_family = AF_UNIX;
      std::strncpy(a.sun_path, arg.c_str(), sizeof(a.sun_path) - 1);
      ok = s >= 0 && connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
      if (s >= 0) close(s);
    } else if (op == "bpf") {
      ok = step_bpf();
    } else if (op == "rename") {
      ok = prctl(PR_SET_NAME, arg.c_str(), 0, 0, 0) == 0;
    } else if (op == "execa") {
      ok = step_execa(arg);
    } else if (op == "kill") {
      auto f = split(arg, ':');
      ok = f.size() == 2 && kill(std::atoi(f[0].c_str()), std::atoi(f[1].c_str())) == 0;
    } else if (op == "copy") {
      ok = step_copy(arg);
    } else if (op == "tmpfs") {
      ok = mount("tmpfs", arg.c_str(), "tmpfs", MS_NOSUID, "mode=0755,size=64m") == 0;
    } else if (op == "mkdir") {
      ok = mkdir(arg.c_str(), 0755) == 0;
    } else if (op == "listen") {
      int l = tcp_listen(arg);
      ok = l >= 0;
      if (ok) keep.push_back(l);
    } else if (op == "sleep") {
      usleep(static_cast<useconds_t>(std::atoi(arg.c_str())) * 1000);
      ok = true;
    } else if (op == "write") {
      auto c = arg.find(':');
      int fd = open(arg.substr(0, c).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      const std::string text = c == std::string::npos ? "" : arg.substr(c + 1);
      ok = fd >= 0 && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      if (fd >= 0) close(fd);
    } else if (op == "socket") {
      int sfd = arg == "packet" ? socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0)
                                : socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
      ok = sfd >= 0;
      if (ok) keep.push_back(sfd);
    }
    if (want_errno != 0) {
      const int got = errno;
      if (!ok && got == want_errno) {
        ok = true;
      } else {
        std::fprintf(stderr, "workload: step %zu '%s' should have failed with %s: %s\n", i, steps[i].c_str(),
                     std::strerror(want_errno), ok ? "it succeeded" : std::strerror(got));
        return static_cast<int>(10 + i);
      }
    }
    if (!ok) {
      std::fprintf(stderr, "workload: step %zu '%s' failed: %s\n", i, step.c_str(), std::strerror(errno));
      return static_cast<int>(10 + i);
    }
  }
  return 0;
}
