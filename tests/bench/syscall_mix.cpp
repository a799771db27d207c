// The workload of the live-overhead benchmark (tests/bench/live_overhead.sh):
// runs each phase of a syscall mix and prints the CPU time it cost this
// process (user + system, and its children's for fork+exec) per operation.
//
//   syscall_mix [--iterations N] [--nvidia-node PATH] [--phase NAME]...
//
// Output: one line per phase, "phase=<name> ops=<n> cpu_ns_per_op=<x>".
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

double cpu_ns(int who) {
  rusage ru{};
  getrusage(who, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

void report(const char* name, long ops, double ns) {
  std::printf("phase=%s ops=%ld cpu_ns_per_op=%.1f\n", name, ops, ns / static_cast<double>(ops));
  std::fflush(stdout);
}

template <typename F>
void run_phase(const char* name, long ops, F&& body, bool children = false) {
  double c0 = cpu_ns(RUSAGE_SELF) + (children ? cpu_ns(RUSAGE_CHILDREN) : 0);
  for (long i = 0; i < ops; ++i) body(i);
  double c1 = cpu_ns(RUSAGE_SELF) + (children ? cpu_ns(RUSAGE_CHILDREN) : 0);
  report(name, ops, c1 - c0);
}

}  // namespace

int main(int argc, char** argv) {
  long n = 200000;
  std::string node;
  std::string open_path = "/etc/hostname";  // openclose: under /etc/, which Falco's traversal rule watches
  // udpsend (only with --udp-dest): 64-byte datagrams to an address that is
  // not 127/8, so each is counted by the egress hook (tests/bench/
  // egress_bench.sh puts 198.18.0.1 on lo for it).
  std::string udp_dest;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iterations" && i + 1 < argc) {
      n = std::strtol(argv[++i], nullptr, 10);
    } else if (a == "--nvidia-node" && i + 1 < argc) {
      node = argv[++i];
    } else if (a == "--phase" && i + 1 < argc) {
      only.emplace_back(argv[++i]);
    } else if (a == "--open-path" && i + 1 < argc) {
      open_path = argv[++i];
    } else if (a == "--udp-dest" && i + 1 < argc) {
      udp_dest = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: syscall_mix [--iterations N] [--nvidia-node PATH] [--open-path PATH] [--udp-dest ADDR] "
                   "[--phase NAME]...\n");
      return 2;
    }
  }
  auto want = [&](const char* p) {
    if (only.empty()) return true;
    for (auto& o : only)
      if (o == p) return true;
    return false;
  };

  if (want("getppid")) run_phase("getppid", n, [](long) { (void)getppid(); });

  if (want("read")) {
    int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    char buf[64];
    run_phase("read", n, [&](long) { (void)!read(fd, buf, sizeof(buf)); });
    close(fd);
  }

  if (want("openclose")) {
    run_phase("openclose", n / 4, [&](long) {
      int fd = open(open_path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) close(fd);
    });
  }

  if (want("connect")) {
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    bind(ls, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
    socklen_t sl = sizeof(sa);
    getsockname(ls, reinterpret_cast<sockaddr*>(&sa), &sl);
    listen(ls, 4096);
    // Both ends close with a reset (SO_LINGER 0): a normal close leaves a
    // TIME_WAIT socket per connection, and tens of thousands of them (the
    // kernel keeps up to 128k for a minute) turn each connect into a long
    // search for a free port whose cost depends on what ran before, not on
    // the connect itself.
    const linger reset{1, 0};
    run_phase("connect", n / 40, [&](long) {
      int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      setsockopt(s, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
      if (connect(s, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0) {
        int c = accept(ls, nullptr, nullptr);
        if (c >= 0) {
          setsockopt(c, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
          close(c);
        }
      }
      close(s);
    });
    close(ls);
  }

  if (want("udpsend") && !udp_dest.empty()) {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(9);
    if (inet_pton(AF_INET, udp_dest.c_str(), &to.sin_addr) != 1) {
      std::fprintf(stderr, "syscall_mix: --udp-dest %s: not an IPv4 address\n", udp_dest.c_str());
      return 1;
    }
    // Where the address is this host's, a bound socket takes the datagrams
    // (its queue fills and the rest are dropped after the egress hooks ran),
    // so no ICMP error turns a send into ECONNREFUSED.
    int rs = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (rs >= 0 && bind(rs, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
      close(rs);
      rs = -1;
    }
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0 || connect(s, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
      std::fprintf(stderr, "syscall_mix: udp %s: %s\n", udp_dest.c_str(), std::strerror(errno));
      return 1;
    }
    const char payload[64] = {};
    run_phase("udpsend", n / 4, [&](long) { (void)!send(s, payload, sizeof(payload), 0); });
    close(s);
    if (rs >= 0) close(rs);
  }

  if (want("ioctl") && !node.empty()) {
    int fd = open(node.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      std::fprintf(stderr, "syscall_mix: open %s: %s\n", node.c_str(), std::strerror(errno));
      return 1;
    }
    // An NV_ESC_RM_CONTROL-shaped request (nr 0x2A, size 32) on the stand-in node.
    unsigned char params[32] = {};
    const unsigned long cmd = 0xC020462AUL;
    run_phase("ioctl", n, [&](long) { (void)ioctl(fd, cmd, params); });
    close(fd);
  }
  // The same node, alternating an RM control (nr 0x2A) with an RM
  // allocation of a class that is only counted (nr 0x2B, NV01_DEVICE_0):
  // two usage keys in turn, the worst case for the sensor's per-CPU cache
  // of the last key (docs/performance.md).
  if (want("ioctlalt") && !node.empty()) {
    int fd = open(node.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      std::fprintf(stderr, "syscall_mix: open %s: %s\n", node.c_str(), std::strerror(errno));
      return 1;
    }
    unsigned char ctl[32] = {};
    std::uint32_t alloc[12] = {};
    alloc[3] = 0x0080;  // hClass at byte 12
    run_phase("ioctlalt", n, [&](long i) {
      if (i & 1) (void)ioctl(fd, 0xC030462BUL, alloc);
      else (void)ioctl(fd, 0xC020462AUL, ctl);
    });
    close(fd);
  }
  // What most ioctls on a node are: on a socket (FIONREAD), which the
  // sensor rejects as not NVIDIA.
  if (want("sockioctl")) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int avail = 0;
    run_phase("sockioctl", n, [&](long) { (void)ioctl(s, FIONREAD, &avail); });
    close(s);
  }

  // The rarer calls Falco's rules watch (their hooks are attached only with
  // such rules): a dup and a socket, each closed again, and a symlink
  // created and removed in a temporary directory.
  if (want("dupclose")) {
    int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    run_phase("dupclose", n / 2, [&](long) { close(dup(fd)); });
    close(fd);
  }
  if (want("socketclose")) {
    run_phase("socketclose", n / 4, [](long) { close(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)); });
  }
  if (want("symlink")) {
    char dir[] = "/tmp/vigil-mix-XXXXXX";
    if (mkdtemp(dir) == nullptr) {
      std::fprintf(stderr, "syscall_mix: mkdtemp: %s\n", std::strerror(errno));
      return 1;
    }
    const std::string link = std::string(dir) + "/l";
    run_phase("symlink", n / 8, [&](long) {
      (void)symlink("/etc/hostname", link.c_str());
      (void)unlink(link.c_str());
    });
    rmdir(dir);
  }

  if (want("forkexec")) {
    run_phase(
        "forkexec", n / 400 > 0 ? n / 400 : 1,
        [](long) {
          pid_t p = fork();
          if (p == 0) {
            execl("/bin/true", "true", static_cast<char*>(nullptr));
            _exit(127);
          }
          int st = 0;
          waitpid(p, &st, 0);
        },
        /*children=*/true);
  }
  return 0;
}
