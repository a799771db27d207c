// Loads the real BPF programs and checks what they report about real
// processes. Needs root and a kernel with BTF; skipped with a message otherwise.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/sensor/sensor.h"

namespace vigil::sensor {
namespace {

using event::Event;
using event::Type;

#define REQUIRE_ROOT()                                                                   \
  do {                                                                                   \
    if (geteuid() != 0) GTEST_SKIP() << "integration test needs root (loads eBPF programs)"; \
  } while (0)

std::unique_ptr<Sensor> open_sensor(Config cfg) {
  auto s = Sensor::open(cfg);
  if (!s) {
    ADD_FAILURE() << s.error().message;
    return nullptr;
  }
  return std::move(*s);
}

// Keeps every event polled, so tests can look for several events in any
// order (the ring buffer orders events per CPU only).
class Recorder {
 public:
  explicit Recorder(Sensor& s) : s_(s) {}
  // Polls until an event accepted by `pred` has been seen or the deadline passes.
  std::optional<Event> wait_for(const std::function<bool(const Event&)>& pred, int ms = 5000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (true) {
      for (const auto& e : seen_)
        if (pred(e)) return e;
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      int r = s_.poll(100, [&](Event&& ev) { seen_.push_back(std::move(ev)); });
      if (r < 0) {
        ADD_FAILURE() << "poll: " << std::strerror(-r);
        return std::nullopt;
      }
    }
  }

 private:
  Sensor& s_;
  std::vector<Event> seen_;
};

// Runs argv as a child (fork + execv); returns its pid after it exited.
pid_t run_child(const std::vector<std::string>& argv, int* status) {
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  waitpid(pid, status, 0);
  return pid;
}

TEST(SensorIntegration, ExecForkExitOfARealChild) {
  REQUIRE_ROOT();
  auto s = open_sensor(Config{});
  ASSERT_TRUE(s);
  Recorder rec(*s);
  auto att = s->attached();
  EXPECT_NE(std::find(att.begin(), att.end(), "tp_btf/sched_process_exec"), att.end());

  int status = 0;
  // The shell forks once for /bin/true (not its last command), then exits 7.
  // (The test process itself is filtered out as "vigil", so the fork checked
  // is the shell's.)
  const std::string script = "/bin/true grandchild; exit 7";
  pid_t child = run_child({"/bin/sh", "-c", script, "arg-with-space x"}, &status);
  ASSERT_EQ(WEXITSTATUS(status), 7);

  auto fork_ev = rec.wait_for([&](const Event& e) {
    return e.hdr.type == Type::kFork && e.hdr.pid == static_cast<std::uint32_t>(child);
  });
  ASSERT_TRUE(fork_ev) << "no fork event from child " << child;
  const auto* fk = fork_ev->as<event::ForkData>();
  ASSERT_NE(fk, nullptr);
  EXPECT_FALSE(fk->is_thread);
  std::uint32_t grandchild = fk->child_pid;
  EXPECT_NE(grandchild, 0u);
  auto gexec = rec.wait_for([&](const Event& e) {
    return e.hdr.type == Type::kExec && e.hdr.pid == grandchild;
  });
  ASSERT_TRUE(gexec) << "no exec event for grandchild " << grandchild;
  EXPECT_EQ(gexec->hdr.ppid, static_cast<std::uint32_t>(child));
  std::vector<std::string> gargs = {"/bin/true", "grandchild"};
  EXPECT_EQ(gexec->as<event::ExecData>()->args, gargs);

  // Events come in order per CPU only: the child's exec may be polled
  // before or after the grandchild's, so look it up among what was seen.
  auto exec_ev = rec.wait_for([&](const Event& e) {
    return e.hdr.type == Type::kExec && e.hdr.pid == static_cast<std::uint32_t>(child);
  });
  ASSERT_TRUE(exec_ev) << "no exec event for child " << child;
  const auto* x = exec_ev->as<event::ExecData>();
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->filename, "/bin/sh");
  std::vector<std::string> want = {"/bin/sh", "-c", script, "arg-with-space x"};
  EXPECT_EQ(x->args, want);
  EXPECT_FALSE(x->args_truncated);
  EXPECT_EQ(exec_ev->hdr.ppid, static_cast<std::uint32_t>(getpid()));
  char real[4096] = {};
  ASSERT_NE(realpath("/bin/sh", real), nullptr);
  EXPECT_EQ(x->exe, real);
  char cwd[4096] = {};
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  EXPECT_EQ(x->cwd, cwd);
  EXPECT_EQ(exec_ev->hdr.comm, "sh");
  EXPECT_EQ(exec_ev->hdr.uid, 0u);
  EXPECT_NE(exec_ev->hdr.cgroup_id, 0u);
  struct stat st{};
  ASSERT_EQ(stat("/proc/self/ns/net", &st), 0);
  EXPECT_EQ(exec_ev->hdr.net_ns, st.st_ino);
  ASSERT_EQ(stat("/proc/self/ns/pid", &st), 0);
  EXPECT_EQ(exec_ev->hdr.pid_ns, st.st_ino);
  ASSERT_EQ(stat("/proc/self/ns/mnt", &st), 0);
  EXPECT_EQ(exec_ev->hdr.mnt_ns, st.st_ino);
  // Wall clock: within a minute of now.
  auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                 std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LT(std::llabs(static_cast<long long>(exec_ev->hdr.ts_ns) - now), 60'000'000'000LL);

  auto exit_ev = rec.wait_for([&](const Event& e) {
    return e.hdr.type == Type::kExit && e.hdr.pid == static_cast<std::uint32_t>(child);
  });
  ASSERT_TRUE(exit_ev);
  EXPECT_EQ(exit_ev->as<event::ExitData>()->exit_code, 7);
  EXPECT_EQ(exit_ev->as<event::ExitData>()->signal, 0);
  EXPECT_EQ(s->drops().ringbuf_full, 0u);
}

TEST(SensorIntegration, LongArgvIsTruncatedAndFlagged) {
  REQUIRE_ROOT();
  auto s = open_sensor(Config{});
  ASSERT_TRUE(s);
  Recorder rec(*s);
  int status = 0;
  std::string big(3000, 'a');
  pid_t child = run_child({"/bin/true", big}, &status);
  auto ev = rec.wait_for([&](const Event& e) {
    return e.hdr.type == Type::kExec && e.hdr.pid == static_cast<std::uint32_t>(child);
  });
  ASSERT_TRUE(ev);
  const auto* x = ev->as<event::ExecData>();
  EXPECT_TRUE(x->args_truncated);
  ASSERT_EQ(x->args.size(), 2u);
  EXPECT_EQ(x->args[0], "/bin/true");
  EXPECT_LT(x->args[1].size(), big.size());
  EXPECT_GT(s->drops().truncated, 0u);
}

TEST(SensorIntegration, KilledChildReportsSignal) {
  REQUIRE_ROOT();
  auto s = open_sensor(Config{});
  ASSERT_TRUE(s);
  Recorder rec(*s);
  int status = 0;
  pid_t child = run_child({"/bin/sh", "-c", "kill -9 $$"}, &status);
  auto ev = rec.wait_for([&](const Event& e) {
    return e.hdr.type == Type::kExit && e.hdr.pid == static_cast<std::uint32_t>(child);
  });
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::ExitData>()->signal, 9);
}

}  // namespace
}  // namespace vigil::sensor
