#include "tests/support/process.h"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

namespace vigil::support {
namespace {

// Moves the calling process into the cgroup directory `dir`.
bool join_cgroup(const std::string& dir) {
  const std::string procs = dir + "/cgroup.procs";
  const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const std::string me = std::to_string(::getpid());
  const bool ok = ::write(fd, me.data(), me.size()) == static_cast<ssize_t>(me.size());
  ::close(fd);
  return ok;
}

// Brings up the loopback of the calling process's network namespace.
bool bring_loopback_up() {
  const int sk = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sk < 0) return false;
  struct ifreq ifr {};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  bool up = ::ioctl(sk, SIOCGIFFLAGS, &ifr) == 0;
  ifr.ifr_flags |= IFF_UP;
  up = up && ::ioctl(sk, SIOCSIFFLAGS, &ifr) == 0;
  ::close(sk);
  return up;
}

// A tmpfs on /dev in a private mount namespace holding /dev/null and `nodes`,
// all with /dev/null's numbers. Returns 0 or the Child exit code of the failure.
int make_private_dev(const std::vector<std::string>& nodes) {
  struct stat null_st {};
  if (::stat("/dev/null", &null_st) != 0) return Child::kPrivateDevFailed;
  if (::unshare(CLONE_NEWNS) != 0) return Child::kPrivateDevFailed;
  if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return Child::kPrivateDevFailed;
  if (::mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "mode=0755,size=1m") != 0) return Child::kPrivateDevFailed;
  if (::mknod("/dev/null", S_IFCHR | 0666, null_st.st_rdev) != 0) return Child::kMknodFailed;
  for (const std::string& n : nodes) {
    if (::mknod(("/dev/" + n).c_str(), S_IFCHR | 0666, null_st.st_rdev) != 0) return Child::kMknodFailed;
  }
  return 0;
}

}  // namespace

std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "exit " + std::to_string(WEXITSTATUS(status));
}

int wait_or_kill(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int st = 0;
  while (true) {
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) return st;
    if (r < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) return -1;
      }
      return st;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Child Child::spawn(const std::vector<std::string>& argv, const SpawnOptions& o) {
  return run(
      [&argv] {
        std::vector<char*> a;
        for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
        a.push_back(nullptr);
        if (!argv.empty()) ::execv(a[0], a.data());
        return kExecFailed;
      },
      o);
}

Child Child::run(const std::function<int()>& fn, const SpawnOptions& o) {
  Child c;
  int in[2] = {-1, -1};
  if (o.stdin_pipe && ::pipe2(in, O_CLOEXEC) != 0) return c;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives a crashed test
    if (o.stdin_pipe) ::dup2(in[0], 0);
    const int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    if (!o.cgroup.empty() && !join_cgroup(o.cgroup)) ::_exit(kCgroupFailed);
    if (o.new_netns) {
      if (::unshare(CLONE_NEWNET) != 0) ::_exit(kNetnsFailed);
      if (!bring_loopback_up()) ::_exit(kLoopbackFailed);
    }
    if (!o.private_dev_nodes.empty()) {
      if (const int r = make_private_dev(o.private_dev_nodes); r != 0) ::_exit(r);
    }
    ::_exit(fn());
  }
  if (o.stdin_pipe) {
    ::close(in[0]);
    if (pid > 0) {
      c.stdin_ = in[1];
    } else {
      ::close(in[1]);
    }
  }
  c.pid_ = pid;
  return c;
}

Child& Child::operator=(Child&& o) noexcept {
  std::swap(pid_, o.pid_);
  std::swap(stdin_, o.stdin_);
  std::swap(status_, o.status_);
  return *this;
}

Child::~Child() {
  if (stdin_ >= 0) ::close(stdin_);
  if (pid_ > 0 && !status_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void Child::poke() {
  if (stdin_ >= 0) {
    (void)::write(stdin_, "x", 1);
    ::close(stdin_);
    stdin_ = -1;
  }
}

int Child::wait(std::chrono::milliseconds timeout) {
  if (status_) return *status_;
  if (pid_ <= 0) return -1;
  const int st = wait_or_kill(pid_, timeout);
  if (st != -1) status_ = st;
  return st;
}

std::string Child::what(int status) {
  if (WIFSIGNALED(status)) return describe_wait_status(status);
  switch (WEXITSTATUS(status)) {
    case kCgroupFailed: return "exit 90 (could not join the cgroup)";
    case kNetnsFailed: return "exit 91 (unshare(CLONE_NEWNET) failed)";
    case kLoopbackFailed: return "exit 92 (could not bring loopback up)";
    case kPrivateDevFailed: return "exit 93 (could not mount a private /dev)";
    case kMknodFailed: return "exit 94 (mknod in the private /dev failed)";
    case kExecFailed: return "exit 95 (exec failed)";
    default: return describe_wait_status(status);
  }
}

}  // namespace vigil::support
