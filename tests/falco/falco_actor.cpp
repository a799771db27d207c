// vigil_falco_actor: the program the Falco-rule end-to-end tests run to stage
// one action each. The tests copy it under the names the rules look for
// (nginx, sshd, runc, ssh, ...) and give it steps on its command line, run in
// order:
//
//   open PATH              open PATH read-only (the fd is kept)
//   openw PATH             open PATH for writing, O_CREAT|O_TRUNC
//   chdir DIR              change the working directory to DIR
//   sleep MS               sleep MS milliseconds
//   note TEXT              nothing (an argument for the command line to carry)
//   symlink TARGET LINK    symlink(TARGET, LINK)
//   link OLD NEW           link(OLD, NEW)
//   unlink PATH            unlink(PATH)
//   mkdir PATH / rmdir PATH
//   packet                 socket(AF_PACKET, SOCK_RAW, ETH_P_ALL)
//   dupnet PORT            connect a TCP socket to a listener on 127.0.0.1:PORT
//                          and dup2 it onto stdout (fd 1)
//   finit                  finit_module(-1, "", 0) (fails with EBADF)
//   ptrace_attach          PTRACE_ATTACH to a child of its own, then detach
//   traceme                a child of its own calls PTRACE_TRACEME and exits
//   memfd                  copy /bin/true into a memfd and run it (fexecve) in a child
//   setuid UID             drop to UID (and the same gid, no groups)
//   addr ADDR              add the IPv4 address ADDR/32 to loopback (lo:7)
//   connect ADDR PORT      listen on ADDR:PORT, connect a TCP socket to it, accept
//   dns NAME ADDR          a DNS server on 127.0.0.1:53 answers an A query for
//                          NAME with ADDR; the query is sent and the answer read
//   overlay DIR NAME       in a private mount namespace, mount an overlay on
//                          DIR/merged (DIR/lower, upper, work), copy /bin/true
//                          into it as NAME (it lands in the upper layer), run it
//   spawn PATH ARGV0 ARG... [--end]   fork, exec PATH, wait; go on after --end
//   pty PATH ARGV0 ARG... [--end]     the same on a new pseudo-terminal (forkpty):
//                          the program has a controlling terminal
//
// Exit status: 0 when every step ran, 10 + the index of the first failed step.
#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/if_ether.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

int wait_child(pid_t pid) {
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return st;
}

bool copy_file(const char* from, int to_fd) {
  int in = open(from, O_RDONLY | O_CLOEXEC);
  if (in < 0) return false;
  char buf[65536];
  ssize_t n;
  bool ok = true;
  while ((n = read(in, buf, sizeof(buf))) > 0) {
    if (write(to_fd, buf, static_cast<size_t>(n)) != n) {
      ok = false;
      break;
    }
  }
  close(in);
  return ok && n == 0;
}

sockaddr_in v4(const char* addr, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, addr, &a.sin_addr);
  return a;
}

// A listener on addr:port and a TCP socket connected to it; -1 on failure.
// The listener is returned in *ls.
int connected_socket(const char* addr, int port, int* ls) {
  sockaddr_in a = v4(addr, port);
  *ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (*ls < 0) return -1;
  int one = 1;
  setsockopt(*ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(*ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(*ls, 4) != 0) return -1;
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(s);
    return -1;
  }
  return s;
}

bool step_connect(const char* addr, const char* port) {
  int ls = -1;
  int s = connected_socket(addr, std::atoi(port), &ls);
  bool ok = s >= 0;
  if (ok) {
    int c = accept(ls, nullptr, nullptr);
    ok = c >= 0;
    if (c >= 0) close(c);
    close(s);
  }
  if (ls >= 0) close(ls);
  return ok;
}

bool step_dupnet(const char* port) {
  int ls = -1;
  int s = connected_socket("127.0.0.1", std::atoi(port), &ls);
  if (s < 0) return false;
  bool ok = dup2(s, 1) == 1;
  int dn = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (dn >= 0) {
    dup2(dn, 1);
    close(dn);
  }
  close(s);
  close(ls);
  return ok;
}

bool step_addr(const char* addr) {
  int sk = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sk < 0) return false;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo:7", IFNAMSIZ - 1);
  sockaddr_in a = v4(addr, 0);
  std::memcpy(&ifr.ifr_addr, &a, sizeof(a));
  bool ok = ioctl(sk, SIOCSIFADDR, &ifr) == 0;
  sockaddr_in m = v4("255.255.255.255", 0);
  std::memcpy(&ifr.ifr_netmask, &m, sizeof(m));
  ok = ok && ioctl(sk, SIOCSIFNETMASK, &ifr) == 0;
  close(sk);
  return ok;
}

bool step_dns(const char* name, const char* answer) {
  sockaddr_in a = v4("127.0.0.1", 53);
  int srv = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (srv < 0 || bind(srv, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return false;
  int cl = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  std::vector<std::uint8_t> q = {0x4b, 0x38, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  std::string n = name;
  std::size_t start = 0;
  while (start <= n.size()) {
    std::size_t dot = n.find('.', start);
    if (dot == std::string::npos) dot = n.size();
    q.push_back(static_cast<std::uint8_t>(dot - start));
    for (std::size_t i = start; i < dot; ++i) q.push_back(static_cast<std::uint8_t>(n[i]));
    start = dot + 1;
  }
  q.push_back(0);
  for (std::uint8_t b : {0, 1, 0, 1}) q.push_back(b);  // type A, class IN
  if (sendto(cl, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof(a)) < 0) return false;
  std::uint8_t buf[512];
  sockaddr_in from{};
  socklen_t fl = sizeof(from);
  ssize_t got = recvfrom(srv, buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &fl);
  if (got <= 0) return false;
  std::vector<std::uint8_t> r(buf, buf + got);
  r[2] = 0x81;
  r[3] = 0x80;
  r[7] = 1;  // one answer
  in_addr ip{};
  inet_pton(AF_INET, answer, &ip);
  std::uint8_t ipb[4];
  std::memcpy(ipb, &ip, 4);
  std::vector<std::uint8_t> ans = {0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, ipb[0], ipb[1], ipb[2], ipb[3]};
  r.insert(r.end(), ans.begin(), ans.end());
  if (sendto(srv, r.data(), r.size(), 0, reinterpret_cast<sockaddr*>(&from), fl) < 0) return false;
  bool ok = recv(cl, buf, sizeof(buf), 0) > 0;
  close(cl);
  close(srv);
  return ok;
}

bool step_ptrace_attach() {
  pid_t c = fork();
  if (c == 0) {
    for (;;) pause();
  }
  if (c < 0) return false;
  bool ok = ptrace(PTRACE_ATTACH, c, nullptr, nullptr) == 0;
  if (ok) {
    int st = 0;
    waitpid(c, &st, 0);
    ptrace(PTRACE_DETACH, c, nullptr, nullptr);
  }
  kill(c, SIGKILL);
  wait_child(c);
  return ok;
}

bool step_traceme() {
  pid_t c = fork();
  if (c == 0) _exit(ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) == 0 ? 0 : 1);
  if (c < 0) return false;
  int st = wait_child(c);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

bool step_memfd() {
  int m = static_cast<int>(syscall(SYS_memfd_create, "payload", 0));
  if (m < 0 || !copy_file("/bin/true", m)) return false;
  pid_t c = fork();
  if (c == 0) {
    char* argv[] = {const_cast<char*>("payload"), nullptr};
    char* envp[] = {nullptr};
    fexecve(m, argv, envp);
    _exit(127);
  }
  close(m);
  int st = wait_child(c);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

bool step_overlay(const std::string& dir, const std::string& name) {
  pid_t c = fork();
  if (c == 0) {
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(2);
    for (const char* d : {"lower", "upper", "work", "merged"}) mkdir((dir + "/" + d).c_str(), 0755);
    const std::string opts = "lowerdir=" + dir + "/lower,upperdir=" + dir + "/upper,workdir=" + dir + "/work";
    if (mount("overlay", (dir + "/merged").c_str(), "overlay", 0, opts.c_str()) != 0) _exit(3);
    const std::string prog = dir + "/merged/" + name;
    int fd = open(prog.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    if (fd < 0 || !copy_file("/bin/true", fd)) _exit(4);
    close(fd);
    pid_t p = fork();
    if (p == 0) {
      execl(prog.c_str(), name.c_str(), nullptr);
      _exit(127);
    }
    int st = wait_child(p);
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 5);
  }
  int st = wait_child(c);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

// fork + exec argv[from, to) (argv[from] is the path, the rest argv0 and
// arguments), on a new pseudo-terminal when `pty`.
bool step_spawn(char** argv, int from, int to, bool pty) {
  std::vector<char*> a(argv + from + 1, argv + to);
  a.push_back(nullptr);
  int master = -1;
  pid_t c = pty ? forkpty(&master, nullptr, nullptr, nullptr) : fork();
  if (c == 0) {
    execv(argv[from], a.data());
    _exit(127);
  }
  if (c < 0) return false;
  if (master >= 0) {
    char buf[256];
    while (read(master, buf, sizeof(buf)) > 0) {}
  }
  int st = wait_child(c);
  if (master >= 0) close(master);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> keep;
  int step = 0;
  for (int i = 1; i < argc; ++step) {
    const std::string op = argv[i];
    const int left = argc - i - 1;
    bool ok = false;
    int used = 1;
    if (op == "open" && left >= 1) {
      int fd = open(argv[i + 1], O_RDONLY | O_CLOEXEC);
      ok = fd >= 0;
      if (ok) keep.push_back(fd);
      used = 2;
    } else if (op == "openw" && left >= 1) {
      int fd = open(argv[i + 1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      ok = fd >= 0;
      if (ok) keep.push_back(fd);
      used = 2;
    } else if (op == "chdir" && left >= 1) {
      ok = chdir(argv[i + 1]) == 0;
      used = 2;
    } else if (op == "sleep" && left >= 1) {
      usleep(static_cast<useconds_t>(std::atoi(argv[i + 1])) * 1000);
      ok = true;
      used = 2;
    } else if (op == "note" && left >= 1) {
      ok = true;
      used = 2;
    } else if (op == "symlink" && left >= 2) {
      ok = symlink(argv[i + 1], argv[i + 2]) == 0;
      used = 3;
    } else if (op == "link" && left >= 2) {
      ok = link(argv[i + 1], argv[i + 2]) == 0;
      used = 3;
    } else if (op == "unlink" && left >= 1) {
      ok = unlink(argv[i + 1]) == 0;
      used = 2;
    } else if (op == "mkdir" && left >= 1) {
      ok = mkdir(argv[i + 1], 0755) == 0;
      used = 2;
    } else if (op == "rmdir" && left >= 1) {
      ok = rmdir(argv[i + 1]) == 0;
      used = 2;
    } else if (op == "packet") {
      int s = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
      ok = s >= 0;
      if (ok) close(s);
    } else if (op == "dupnet" && left >= 1) {
      ok = step_dupnet(argv[i + 1]);
      used = 2;
    } else if (op == "finit") {
      long r = syscall(SYS_finit_module, -1, "", 0);
      ok = r != 0;  // EBADF expected: nothing is loaded
    } else if (op == "ptrace_attach") {
      ok = step_ptrace_attach();
    } else if (op == "traceme") {
      ok = step_traceme();
    } else if (op == "memfd") {
      ok = step_memfd();
    } else if (op == "setuid" && left >= 1) {
      const auto id = static_cast<uid_t>(std::atoi(argv[i + 1]));
      ok = setgroups(0, nullptr) == 0 && setgid(id) == 0 && setuid(id) == 0;
      used = 2;
    } else if (op == "addr" && left >= 1) {
      ok = step_addr(argv[i + 1]);
      used = 2;
    } else if (op == "connect" && left >= 2) {
      ok = step_connect(argv[i + 1], argv[i + 2]);
      used = 3;
    } else if (op == "dns" && left >= 2) {
      ok = step_dns(argv[i + 1], argv[i + 2]);
      used = 3;
    } else if (op == "overlay" && left >= 2) {
      ok = step_overlay(argv[i + 1], argv[i + 2]);
      used = 3;
    } else if ((op == "spawn" || op == "pty") && left >= 2) {
      int end = i + 1;
      while (end < argc && std::strcmp(argv[end], "--end") != 0) ++end;
      ok = step_spawn(argv, i + 1, end, op == "pty");
      used = end - i + (end < argc ? 1 : 0);
    } else {
      std::fprintf(stderr, "falco actor: bad step '%s'\n", op.c_str());
      return 10 + step;
    }
    if (!ok) {
      std::fprintf(stderr, "falco actor: step %d '%s' failed: %s\n", step, op.c_str(), std::strerror(errno));
      return 10 + step;
    }
    i += used;
  }
  return 0;
}
