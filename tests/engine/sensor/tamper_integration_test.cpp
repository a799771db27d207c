// The self-protection events, from the real BPF programs: bpf() enumeration
// reported once per process and command, signals and ptrace aimed at the
// sensor's own process (the test process stands in for vigil: the sensor
// takes its pid), perf_event_open of tracepoints, the opens of vigil's own
// files (whole paths: no open pays for a read of its path), and module
// loads. Needs root.
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <string>
#include <thread>

#include "tests/engine/sensor/sensor_test_util.h"
#include "tests/support/temp_dir.h"

namespace vigil::sensor {
namespace {

using support::TempDir;

// bpf(cmd) with an attribute block of zeros but for its first word.
long bpf_call(int cmd, std::uint32_t first) {
  union {
    std::uint32_t first;
    char pad[128];
  } attr{};
  attr.first = first;
  return syscall(SYS_bpf, cmd, &attr, sizeof(attr));
}

constexpr int kProgGetNextId = 11, kMapGetNextId = 12;

TEST_P(SyscallArgs, BpfEnumerationIsReportedOncePerProcessAndCommand) {
  REQUIRE_ROOT();
  Config cfg;
  cfg.event_types = {Type::kBpf};
  cfg.enter_exit_pairs = GetParam();
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  // A walk over every program id, as `bpftool prog list` makes (the sensor's
  // own programs are loaded, so there are some), then one map id.
  auto walker = [] {
    std::uint32_t id = 0;
    for (int i = 0; i < 200; ++i) {
      union {
        struct {
          std::uint32_t start_id, next_id;
        } ids;
        char pad[128];
      } attr{};
      attr.ids.start_id = id;
      if (syscall(SYS_bpf, kProgGetNextId, &attr, sizeof(attr)) != 0) break;
      id = attr.ids.next_id;
    }
    bpf_call(kMapGetNextId, 0);
    return 0;
  };
  const auto first = static_cast<std::uint32_t>(in_child(walker));
  const auto second = static_cast<std::uint32_t>(in_child(walker));
  ASSERT_TRUE(rec.wait_for([&](const Event& e) {
    auto* b = e.as<event::BpfData>();
    return b && e.hdr.pid == second && b->cmd == static_cast<std::uint32_t>(kMapGetNextId);
  })) << "no BPF_MAP_GET_NEXT_ID event of the second walker";
  for (std::uint32_t pid : {first, second}) {
    int prog_ids = 0, map_ids = 0;
    for (const auto& e : rec.events_of(pid)) {
      auto* b = e.as<event::BpfData>();
      if (!b) continue;
      if (b->cmd == static_cast<std::uint32_t>(kProgGetNextId)) ++prog_ids;
      if (b->cmd == static_cast<std::uint32_t>(kMapGetNextId)) ++map_ids;
    }
    // Each process is new to the sensor: one event per command kind.
    EXPECT_EQ(prog_ids, 1) << "pid " << pid;
    EXPECT_EQ(map_ids, 1) << "pid " << pid;
  }
}

TEST(SensorTamper, SignalsToTheSensorsProcessAreReportedWithTheSender) {
  REQUIRE_ROOT();
  Config cfg;
  cfg.event_types = {Type::kVigilSignal};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  // SIGUSR1 is ignored here, as vigil's runner reads and ignores it: the
  // signal is still generated (and reported, result "ignored").
  struct sigaction old {};
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigaction(SIGUSR1, &ign, &old);
  const pid_t me = getpid();
  // A thread of this process, which a sender may name instead of its pid.
  std::atomic<pid_t> worker_tid{0};
  std::atomic<bool> done{false};
  std::thread worker([&] {
    worker_tid = static_cast<pid_t>(syscall(SYS_gettid));
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  while (worker_tid == 0) std::this_thread::yield();
  const auto sender = static_cast<std::uint32_t>(in_child([&] {
    kill(me, SIGUSR1);
    syscall(SYS_tgkill, me, worker_tid.load(), SIGUSR1);
    return 0;
  }));
  auto ev = rec.wait_for([&](const Event& e) {
    auto* d = e.as<event::SysCallData>();
    return d && e.hdr.type == Type::kVigilSignal && e.hdr.pid == sender && (d->a3 & 0xffffffffu) != d->a1;
  });
  done = true;
  worker.join();
  sigaction(SIGUSR1, &old, nullptr);
  ASSERT_TRUE(ev) << "no vigil_signal event for the tgkill at a thread";
  const auto* t = ev->as<event::SysCallData>();
  EXPECT_EQ(t->a0, static_cast<std::uint64_t>(SIGUSR1));
  EXPECT_EQ(t->a1, static_cast<std::uint64_t>(me));
  EXPECT_EQ(t->a3 & 0xffffffffu, static_cast<std::uint64_t>(worker_tid.load()));
  EXPECT_EQ(static_cast<std::int64_t>(t->a2), -6);  // SI_TKILL
  EXPECT_EQ(t->result, 1);                          // ignored
  bool kill_seen = false, sigchld_seen = false;
  for (const auto& e : rec.events_of(sender)) {
    auto* d = e.as<event::SysCallData>();
    if (!d || e.hdr.type != Type::kVigilSignal) continue;
    if (d->a0 == static_cast<std::uint64_t>(SIGUSR1) && d->a2 == 0) kill_seen = true;  // SI_USER
    if (d->a0 == static_cast<std::uint64_t>(SIGCHLD)) sigchld_seen = true;
  }
  EXPECT_TRUE(kill_seen) << "no vigil_signal event for kill(pid, SIGUSR1)";
  // The sender's exit sends SIGCHLD to this process: the kernel's own
  // signal (CLD_EXITED), not reported.
  EXPECT_FALSE(sigchld_seen);
}

// kill: signals between other processes, named by the kernel's numbers, one
// event per process a group kill reaches; a process signalling itself and the
// kernel's SIGCHLD are not sent.
TEST(SensorTamper, KillEventsNameTheTargetEachProcessOfAGroupAndNotSelfSignals) {
  REQUIRE_ROOT();
  Config cfg;
  cfg.event_types = {Type::kKill};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const auto parent = static_cast<std::uint32_t>(in_child([&] {
    // Two children in a process group of their own, then a third alone.
    pid_t a = fork();
    if (a == 0) {
      setpgid(0, 0);
      pause();
      _exit(0);
    }
    setpgid(a, a);
    pid_t b = fork();
    if (b == 0) {
      setpgid(0, a);
      pause();
      _exit(0);
    }
    setpgid(b, a);
    pid_t c = fork();
    if (c == 0) {
      pause();
      _exit(0);
    }
    std::uint32_t ids[3] = {static_cast<std::uint32_t>(a), static_cast<std::uint32_t>(b),
                            static_cast<std::uint32_t>(c)};
    (void)write(fds[1], ids, sizeof(ids));
    usleep(100 * 1000);
    raise(SIGWINCH);       // to itself: not sent
    kill(0 - a, SIGTERM);  // the group: a and b
    syscall(SYS_tgkill, c, c, SIGKILL);
    waitpid(a, nullptr, 0);
    waitpid(b, nullptr, 0);
    waitpid(c, nullptr, 0);
    return 0;
  }));
  std::uint32_t ids[3] = {};
  ASSERT_EQ(read(fds[0], ids, sizeof(ids)), static_cast<ssize_t>(sizeof(ids)));
  close(fds[0]);
  close(fds[1]);
  auto last = rec.wait_for([&](const Event& e) {
    auto* d = e.as<event::SysCallData>();
    return d && e.hdr.type == Type::kKill && e.hdr.pid == parent && d->a1 == ids[2];
  });
  ASSERT_TRUE(last) << "no kill event for the tgkill";
  EXPECT_EQ(last->as<event::SysCallData>()->a0, static_cast<std::uint64_t>(SIGKILL));
  EXPECT_EQ(static_cast<std::int64_t>(last->as<event::SysCallData>()->a2), -6);  // SI_TKILL
  bool to_a = false, to_b = false, to_self = false, sigchld = false;
  for (const auto& e : rec.events_of(parent)) {
    auto* d = e.as<event::SysCallData>();
    if (!d || e.hdr.type != Type::kKill) continue;
    if (d->a1 == ids[0] && d->a0 == static_cast<std::uint64_t>(SIGTERM) && d->a2 == 0) to_a = true;
    if (d->a1 == ids[1] && d->a0 == static_cast<std::uint64_t>(SIGTERM) && d->a2 == 0) to_b = true;
    if (d->a1 == parent) to_self = true;
  }
  // The children's exits send SIGCHLD to the parent: the kernel's (CLD_*).
  for (std::uint32_t child : ids) {
    for (const auto& e : rec.events_of(child, 0)) {
      auto* d = e.as<event::SysCallData>();
      if (d && e.hdr.type == Type::kKill && d->a0 == static_cast<std::uint64_t>(SIGCHLD)) sigchld = true;
    }
  }
  EXPECT_TRUE(to_a) << "no kill event for the group's first process";
  EXPECT_TRUE(to_b) << "no kill event for the group's second process";
  EXPECT_FALSE(to_self) << "a signal the process sent itself was reported";
  EXPECT_FALSE(sigchld) << "the kernel's SIGCHLD was reported";
}

TEST(SensorTamper, SignalsBetweenOtherProcessesAreNotReported) {
  REQUIRE_ROOT();
  Config cfg;
  cfg.event_types = {Type::kVigilSignal};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  const auto parent = static_cast<std::uint32_t>(in_child([] {
    pid_t c = fork();
    if (c == 0) {
      pause();
      _exit(0);
    }
    kill(c, SIGTERM);
    waitpid(c, nullptr, 0);
    return 0;
  }));
  for (const auto& e : rec.events_of(parent, 500)) EXPECT_NE(e.hdr.type, Type::kVigilSignal);
}

TEST(SensorTamper, PtraceSeizeOfAThreadOfTheSensorsProcessIsMarked) {
  REQUIRE_ROOT();
  Config cfg;
  cfg.event_types = {Type::kPtrace};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  std::atomic<pid_t> worker_tid{0};
  std::atomic<bool> done{false};
  std::thread worker([&] {
    worker_tid = static_cast<pid_t>(syscall(SYS_gettid));
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  while (worker_tid == 0) std::this_thread::yield();
  // PTRACE_SEIZE does not stop the tracee; the tracer detaches by exiting.
  // Then the same seize of an unrelated process (its own child).
  const auto tracer = static_cast<std::uint32_t>(in_child([&] {
    long r = ptrace(PTRACE_SEIZE, worker_tid.load(), nullptr, nullptr);
    pid_t c = fork();
    if (c == 0) {
      pause();
      _exit(0);
    }
    ptrace(PTRACE_SEIZE, c, nullptr, nullptr);
    kill(c, SIGKILL);
    waitpid(c, nullptr, 0);
    return r == 0 ? 0 : 1;
  }));
  auto evs = rec.events_of(tracer, 500);
  done = true;
  worker.join();
  int to_vigil = 0, other = 0;
  for (const auto& e : evs) {
    auto* p = e.as<event::PtraceData>();
    if (!p || p->request != PTRACE_SEIZE) continue;
    if (p->target == static_cast<std::uint32_t>(worker_tid.load())) {
      EXPECT_EQ(p->result, 0);
      EXPECT_TRUE(p->to_vigil) << "the seize of a thread of the sensor's process is not marked";
      ++to_vigil;
    } else {
      EXPECT_FALSE(p->to_vigil) << "the seize of an unrelated process is marked";
      ++other;
    }
  }
  EXPECT_EQ(to_vigil, 1);
  EXPECT_EQ(other, 1);
}

// The id of a tracepoint, from the tracing file system; -1 when not found.
long tracepoint_id(const std::string& name) {
  for (const char* root : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    std::ifstream in(std::string(root) + "/events/" + name + "/id");
    long id = -1;
    if (in >> id) return id;
  }
  return -1;
}

TEST_P(SyscallArgs, PerfEventOpenOfATracepointIsReportedAndACounterIsNot) {
  REQUIRE_ROOT();
  const long tp = tracepoint_id("sched/sched_process_fork");
  if (tp < 0) GTEST_SKIP() << "no tracing file system with sched/sched_process_fork here";
  Config cfg;
  cfg.event_types = {Type::kPerfEventOpen};
  cfg.enter_exit_pairs = GetParam();
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  const auto cpid = static_cast<std::uint32_t>(in_child([&] {
    perf_event_attr a{};
    a.size = sizeof(a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    long sw = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    a = perf_event_attr{};
    a.size = sizeof(a);
    a.type = PERF_TYPE_TRACEPOINT;
    a.config = static_cast<std::uint64_t>(tp);
    long fd = syscall(SYS_perf_event_open, &a, -1, 0, -1, 0);
    return fd >= 0 && sw >= 0 ? 0 : 1;
  }));
  ASSERT_TRUE(rec.wait_for([&](const Event& e) { return e.hdr.type == Type::kPerfEventOpen && e.hdr.pid == cpid; }))
      << "no perf_event_open event";
  int n = 0;
  for (const auto& e : rec.events_of(cpid)) {
    auto* d = e.as<event::SysCallData>();
    if (!d || e.hdr.type != Type::kPerfEventOpen) continue;
    ++n;
    EXPECT_EQ(d->a0, static_cast<std::uint64_t>(PERF_TYPE_TRACEPOINT));
    EXPECT_EQ(d->a1, static_cast<std::uint64_t>(tp));
    EXPECT_EQ(static_cast<std::int64_t>(d->a2), -1);  // every process
    EXPECT_EQ(d->a3, 1u);                             // a tracepoint
    EXPECT_GE(d->result, 0);
  }
  EXPECT_EQ(n, 1) << "the software counter was reported too";
}

TEST(SensorTamper, OpensOfTheOwnFilesAreSentWithoutARuleAskingForThem) {
  REQUIRE_ROOT();
  TempDir own("vigil-own"), other("vigil-other");
  const std::string mine = own.path() + "/vigil-own-rules.yaml", theirs = other.path() + "/app.yaml";
  Config cfg;
  cfg.event_types = {Type::kOpen};
  cfg.open_path_whole = {"/nonexistent-dir/hosts"};  // what a rule asked for
  cfg.own_files = {mine};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  const auto cpid = static_cast<std::uint32_t>(in_child([&] {
    for (const std::string& p : {mine, theirs}) {
      int fd = open(p.c_str(), O_CREAT | O_WRONLY, 0600);
      if (fd < 0) return 1;
      close(fd);
    }
    return 0;
  }));
  ASSERT_TRUE(rec.wait_for([&](const Event& e) {
    auto* o = e.as<event::OpenData>();
    return o && e.hdr.pid == cpid && o->path == mine;
  })) << "no open event for the own file";
  for (const auto& e : rec.events_of(cpid)) {
    if (auto* o = e.as<event::OpenData>()) {
      EXPECT_NE(o->path, theirs);
    }
  }
}

TEST(SensorTamper, ModuleLoadsAreReportedWhereTheKernelHasModules) {
  REQUIRE_ROOT();
  bool has = false;
  for (const char* root : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    has = has || access((std::string(root) + "/events/syscalls/sys_exit_init_module").c_str(), F_OK) == 0;
  }
  if (!has) {
    GTEST_SKIP() << "syscalls:sys_exit_init_module and syscalls:sys_exit_finit_module missing on this kernel "
                    "(built without module support: nothing can be loaded, and the sensor attaches neither)";
  }
  Config cfg;
  cfg.event_types = {Type::kModule};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  const auto cpid = static_cast<std::uint32_t>(in_child([] {
    static const char junk[16] = "not a module";
    syscall(SYS_init_module, junk, sizeof(junk), "x=1");  // refused, still reported
    return 0;
  }));
  auto ev = rec.wait_for([&](const Event& e) { return e.hdr.type == Type::kModule && e.hdr.pid == cpid; });
  ASSERT_TRUE(ev) << "no init_module event";
  const auto* m = ev->as<event::ModuleData>();
  EXPECT_EQ(m->syscall, event::Syscall::kInitModule);
  EXPECT_EQ(m->args, "x=1");
  EXPECT_LT(m->result, 0);
}

INSTANTIATE_TEST_SUITE_P(SensorTamper, SyscallArgs, ::testing::Values(false, true),
                         [](const auto& i) { return i.param ? "EnterExitPairs" : "ArgsAtExit"; });

}  // namespace
}  // namespace vigil::sensor
