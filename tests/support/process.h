// Child processes for tests: forked, optionally placed in a cgroup, a
// private network namespace and a private /dev before they run; killed and
// reaped when the test is done with them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace vigil::support {

// How a wait status reads to a person: "exit N" or "killed by signal N".
std::string describe_wait_status(int status);

// Waits up to `timeout` for the child `pid` to exit, then SIGKILLs and reaps
// it; returns its wait status, -1 when it is not a child of this process.
// (Child::wait and VigilProcess::wait_exit are this.)
int wait_or_kill(pid_t pid, std::chrono::milliseconds timeout);

struct SpawnOptions {
  std::string cgroup{};     // join this cgroup (its directory) first
  bool new_netns = false;   // a private network namespace with loopback up
  bool stdin_pipe = false;  // stdin is a pipe the test writes to (Child::poke)
  // Stand-in device nodes (e.g. "nvidia0") made, with /dev/null's numbers, in
  // a private /dev (a tmpfs in a private mount namespace).
  std::vector<std::string> private_dev_nodes{};
};

// A child process; killed (SIGKILL) and reaped on destruction if still
// running. It dies with the test process (PR_SET_PDEATHSIG), and its stdout
// goes to /dev/null.
class Child {
 public:
  // Exit codes of a child whose setup failed before it ran anything.
  static constexpr int kCgroupFailed = 90;
  static constexpr int kNetnsFailed = 91;
  static constexpr int kLoopbackFailed = 92;
  static constexpr int kPrivateDevFailed = 93;
  static constexpr int kMknodFailed = 94;
  static constexpr int kExecFailed = 95;

  Child() = default;
  // Forks, sets the child up as `o` says and execs argv (argv[0] is a path).
  static Child spawn(const std::vector<std::string>& argv, const SpawnOptions& o = {});
  // Forks, sets the child up as `o` says and exits it with fn()'s result.
  static Child run(const std::function<int()>& fn, const SpawnOptions& o = {});

  Child(Child&& o) noexcept { *this = std::move(o); }
  Child& operator=(Child&& o) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  // -1 when the fork failed.
  pid_t pid() const { return pid_; }
  // Writes a byte to the child's stdin pipe and closes it (lets a child that
  // waits for its stdin go on).
  void poke();
  // Waits for the exit (up to `timeout`, then kills it); returns the wait
  // status, -1 when there is no child.
  int wait(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // The exit code (with what the setup codes above mean), or how it ended
  // when it did not exit normally.
  static std::string what(int status);

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  std::optional<int> status_;
};

}  // namespace vigil::support
