// NVIDIA ioctl counts (gpu_usage events) and one-by-one events against what
// processes really issued on stand-in nodes: exact across threads, CPUs,
// thread exits and reports, a second process on the same CPU, and an fd
// number reused for another device. Each test runs with the per-CPU slots of
// the last usage key (Config::ioctl_cache) and without, with the arguments
// read at sys_exit and with the enter/exit pairs.
// Needs root and a kernel with BTF; skipped with a message otherwise.
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "engine/sensor/sensor.h"
#include "tests/engine/sensor/sensor_test_util.h"
#include "tests/support/temp_dir.h"

namespace vigil::sensor {
namespace {

using support::TempDir;

constexpr unsigned long kRmControl = 0xC020462AUL;  // NV_ESC_RM_CONTROL, NVOS54 (32 bytes)
constexpr unsigned long kRmAlloc = 0xC030462BUL;    // NV_ESC_RM_ALLOC, NVOS64 (48 bytes)
constexpr unsigned long kCardInfo = 0xC01046C8UL;   // nr 0xC8: only counted, sent at first use
constexpr std::uint32_t kCardInfoNr = 0xC8;

struct Nvos64 {
  std::uint32_t hRoot, hObjectParent, hObjectNew, hClass;
  std::uint64_t pAllocParms, pRightsRequested;
  std::uint32_t paramsSize, flags, status, pad;
};
static_assert(sizeof(Nvos64) == 48);

// (ioctl_cache, enter_exit_pairs)
class IoctlCounts : public ::testing::TestWithParam<std::tuple<bool, bool>> {
 protected:
  Config config(std::chrono::milliseconds interval) const {
    Config cfg;
    cfg.event_types = {Type::kIoctl, Type::kGpuUsage};
    cfg.ioctl_cache = std::get<0>(GetParam());
    cfg.enter_exit_pairs = std::get<1>(GetParam());
    cfg.usage_interval = interval;
    return cfg;
  }
};

// The CPUs this process may run on.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);  // this thread only
}

// (major, minor, nr) -> count, summed over every report of one process.
using Usage = std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::uint64_t>;

Usage usage_in(const std::vector<Event>& events) {
  Usage u;
  for (const Event& e : events)
    if (const auto* d = e.as<event::GpuUsageData>())
      for (const auto& en : d->entries) u[{en.dev_major, en.dev_minor, en.nr}] += en.count;
  return u;
}

std::uint64_t total(const Usage& u) {
  std::uint64_t n = 0;
  for (const auto& [k, v] : u) n += v;
  return n;
}

// Every count reported for `pid`: once the reports reach `expected` calls (or
// 5 s pass), and then three more report intervals, in which nothing more may
// come (a call counted twice would).
Usage reported(Recorder& rec, std::uint32_t pid, std::uint64_t expected, std::chrono::milliseconds interval) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (total(usage_in(rec.events_of(pid, 100))) < expected && std::chrono::steady_clock::now() < deadline) {}
  return usage_in(rec.events_of(pid, static_cast<int>(3 * interval.count())));
}

// The ioctl events of `pid` with escape number `nr` (and control command
// `ctl` where nonzero).
int sent(Recorder& rec, std::uint32_t pid, std::uint32_t nr, std::uint32_t ctl = 0) {
  int n = 0;
  for (const Event& e : rec.events_of(pid, 0)) {
    const auto* i = e.as<event::IoctlData>();
    if (i && i->nr == nr && (ctl == 0 || i->rm_control == ctl)) ++n;
  }
  return n;
}

// Eight threads of one process issue RM controls (three commands in turn, in
// runs), counted allocations and a counted escape on a second device, moving
// to another CPU each round and pausing, while the test polls the sensor so
// that reports (and the drains of the per-CPU slots) fall in the middle; the
// threads end one after another. The reports add up to exactly what was
// issued, and each control command and the second device's first use is
// sent once.
TEST_P(IoctlCounts, ExactAcrossThreadsCpusThreadExitsAndReports) {
  REQUIRE_ROOT();
  TempDir dir("vigil-ioctl");
  struct stat null_st {
  }, zero_st{};
  ASSERT_EQ(stat("/dev/null", &null_st), 0);
  ASSERT_EQ(stat("/dev/zero", &zero_st), 0);
  const std::string node0 = make_standin_node(dir, "nvidia0", "/dev/null");
  const std::string node1 = make_standin_node(dir, "nvidia1", "/dev/zero");
  ASSERT_FALSE(node0.empty() || node1.empty());
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());

  const auto interval = std::chrono::milliseconds(100);
  auto s = open_sensor(config(interval));
  ASSERT_TRUE(s);
  Recorder rec(*s);

  constexpr int kThreads = 8, kRepeat = 25;
  auto rounds = [](int i) { return 8 + 4 * i; };
  Child c = Child::run([&] {
    const int a = open(node0.c_str(), O_RDWR), b = open(node1.c_str(), O_RDWR);
    if (a < 0 || b < 0) return 1;
    std::vector<std::thread> ts;
    for (int i = 0; i < kThreads; ++i) {
      ts.emplace_back([&, i] {
        for (int r = 0; r < rounds(i); ++r) {
          pin(cpus[static_cast<std::size_t>(i + r) % cpus.size()]);
          std::uint32_t ctl[8] = {};
          ctl[2] = 0x20800110 + static_cast<std::uint32_t>(r % 3);
          for (int k = 0; k < kRepeat; ++k) ioctl(a, kRmControl, ctl);
          Nvos64 dev{};
          dev.hClass = 0x0080;  // NV01_DEVICE_0: counted, not sent
          ioctl(a, kRmAlloc, &dev);
          unsigned char card[16] = {};
          for (int k = 0; k <= i; ++k) ioctl(b, kCardInfo, card);
          if (r % 2 == 1) usleep(20000);
        }
      });
    }
    for (auto& t : ts) t.join();
    return 0;
  });
  const auto pid = static_cast<std::uint32_t>(c.pid());
  rec.events_of(pid, 1000);  // the reports (and slot drains) while the threads run
  const int status = c.wait();
  ASSERT_EQ(status, 0) << Child::what(status);

  Usage want;
  for (int i = 0; i < kThreads; ++i) {
    want[{major(null_st.st_rdev), minor(null_st.st_rdev), 0x2A}] += static_cast<std::uint64_t>(rounds(i) * kRepeat);
    want[{major(null_st.st_rdev), minor(null_st.st_rdev), 0x2B}] += static_cast<std::uint64_t>(rounds(i));
    want[{major(zero_st.st_rdev), minor(zero_st.st_rdev), kCardInfoNr}] +=
        static_cast<std::uint64_t>(rounds(i) * (i + 1));
  }
  const Usage got = reported(rec, pid, total(want), interval);
  EXPECT_EQ(got, want);
  int reports = 0;
  for (const Event& e : rec.events_of(pid, 0)) reports += e.as<event::GpuUsageData>() != nullptr;
  EXPECT_GE(reports, 2) << "the calls should span reports (the last thread sleeps 360 ms in all)";
  for (std::uint32_t c = 0x20800110; c < 0x20800113; ++c)
    EXPECT_EQ(sent(rec, pid, 0x2A, c), 1) << "control command " << std::hex << c << " is sent once per process";
  EXPECT_EQ(sent(rec, pid, kCardInfoNr), 1) << "the second device's first use is sent once";
  EXPECT_EQ(sent(rec, pid, 0x2B), 0) << "NV01_DEVICE_0 allocations are only counted";
}

// Two processes, one after the other, issue the same calls on the same device
// from the same CPU, the second starting with the call the first ended with.
// The second is a process of its own: its first call (its first use of the
// device, and a control command new to it) is sent, and each process's calls
// are counted under its own pid.
TEST_P(IoctlCounts, ASecondProcessOnTheSameCpuIsCountedAndSeenOnItsOwn) {
  REQUIRE_ROOT();
  TempDir dir("vigil-ioctl");
  const std::string node = make_standin_node(dir);
  ASSERT_FALSE(node.empty());
  struct stat st {};
  ASSERT_EQ(stat(node.c_str(), &st), 0);
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  const auto interval = std::chrono::milliseconds(200);
  auto s = open_sensor(config(interval));
  ASSERT_TRUE(s);
  Recorder rec(*s);

  auto run = [&](int cards, int ctls, bool cards_first) {
    Child c = Child::run([&] {
      pin(cpus[0]);
      int fd = open(node.c_str(), O_RDWR);
      if (fd < 0) return 1;
      unsigned char card[16] = {};
      std::uint32_t ctl[8] = {};
      ctl[2] = 0x20800112;
      for (int pass = 0; pass < 2; ++pass) {
        if ((pass == 0) == cards_first) {
          for (int k = 0; k < cards; ++k) ioctl(fd, kCardInfo, card);
        } else {
          for (int k = 0; k < ctls; ++k) ioctl(fd, kRmControl, ctl);
        }
      }
      return 0;
    });
    EXPECT_EQ(c.wait(), 0);
    return static_cast<std::uint32_t>(c.pid());
  };
  const std::uint32_t first = run(40, 10, true);
  const std::uint32_t second = run(30, 7, false);

  const std::uint32_t ma = major(st.st_rdev), mi = minor(st.st_rdev);
  EXPECT_EQ(reported(rec, first, 50, interval), (Usage{{{ma, mi, kCardInfoNr}, 40}, {{ma, mi, 0x2A}, 10}}));
  EXPECT_EQ(reported(rec, second, 37, interval), (Usage{{{ma, mi, kCardInfoNr}, 30}, {{ma, mi, 0x2A}, 7}}));
  // The first process: its first call (first use), then its control command.
  EXPECT_EQ(sent(rec, first, kCardInfoNr), 1);
  EXPECT_EQ(sent(rec, first, 0x2A, 0x20800112), 1);
  // The second: its first call is the control command (first use and a new
  // command, one event); nothing else.
  EXPECT_EQ(sent(rec, second, 0x2A, 0x20800112), 1) << "the second process's first call";
  EXPECT_EQ(sent(rec, second, kCardInfoNr), 0);
}

// One fd number, reused: a stand-in node, then another device (other
// numbers), then /dev/null itself (not NVIDIA). Each device's calls are
// counted under it, the second device's first use is sent, and the calls on
// /dev/null are neither counted nor sent.
TEST_P(IoctlCounts, AnFdNumberReusedForAnotherDeviceAndANonNvidiaFile) {
  REQUIRE_ROOT();
  TempDir dir("vigil-ioctl");
  struct stat null_st {
  }, zero_st{};
  ASSERT_EQ(stat("/dev/null", &null_st), 0);
  ASSERT_EQ(stat("/dev/zero", &zero_st), 0);
  const std::string node0 = make_standin_node(dir, "nvidia0", "/dev/null");
  const std::string node1 = make_standin_node(dir, "nvidia1", "/dev/zero");
  ASSERT_FALSE(node0.empty() || node1.empty());
  const auto interval = std::chrono::milliseconds(200);
  auto s = open_sensor(config(interval));
  ASSERT_TRUE(s);
  Recorder rec(*s);

  Child c = Child::run([&] {
    unsigned char card[16] = {};
    int fds[3] = {-1, -1, -1};
    const char* paths[3] = {node0.c_str(), node1.c_str(), "/dev/null"};
    const int calls[3] = {20, 10, 5};
    for (int i = 0; i < 3; ++i) {
      fds[i] = open(paths[i], O_RDWR);  // the lowest free number: the same each time
      for (int k = 0; k < calls[i]; ++k) ioctl(fds[i], kCardInfo, card);
      close(fds[i]);
    }
    return fds[0] >= 0 && fds[0] == fds[1] && fds[1] == fds[2] ? 0 : 1;
  });
  const int status = c.wait();
  ASSERT_EQ(status, 0) << "the three opens did not share one fd number: " << Child::what(status);
  const auto pid = static_cast<std::uint32_t>(c.pid());
  const Usage want{{{major(null_st.st_rdev), minor(null_st.st_rdev), kCardInfoNr}, 20},
                   {{major(zero_st.st_rdev), minor(zero_st.st_rdev), kCardInfoNr}, 10}};
  EXPECT_EQ(reported(rec, pid, 30, interval), want);
  int first_null = 0, first_zero = 0;
  for (const Event& e : rec.events_of(pid, 0)) {
    const auto* i = e.as<event::IoctlData>();
    if (!i) continue;
    if (i->dev_major == major(null_st.st_rdev) && i->dev_minor == minor(null_st.st_rdev)) ++first_null;
    if (i->dev_major == major(zero_st.st_rdev) && i->dev_minor == minor(zero_st.st_rdev)) ++first_zero;
  }
  EXPECT_EQ(first_null, 1) << "the first device's first use, and nothing from /dev/null";
  EXPECT_EQ(first_zero, 1) << "the second device's first use through the reused fd number";
}

// Calls the driver surface table does not know are sent one by one, and
// still counted: an allocation of an unknown class at every call (as a
// security-relevant class is), an unknown escape once per usage interval of
// the process and device (not at every call), while a known class and a known
// escape after the first use are only counted. Nothing is read from the
// caller for it: the events carry what the counted path decodes.
TEST_P(IoctlCounts, CallsTheDriverSurfaceTableDoesNotKnowAreSent) {
  REQUIRE_ROOT();
  TempDir dir("vigil-ioctl");
  const std::string node = make_standin_node(dir, "nvidia0", "/dev/null");
  ASSERT_FALSE(node.empty());
  const auto interval = std::chrono::milliseconds(200);
  auto s = open_sensor(config(interval));
  ASSERT_TRUE(s);
  Recorder rec(*s);

  constexpr std::uint32_t kUnknownNr = 0x26;  // no NV_ESC_* has this number
  Child c = Child::run([&] {
    int fd = open(node.c_str(), O_RDWR);
    if (fd < 0) return 1;
    unsigned char card[16] = {};
    ioctl(fd, kCardInfo, card);  // the first use: sent
    Nvos64 known{};
    known.hClass = 0x0080;  // NV01_DEVICE_0: counted only
    for (int i = 0; i < 4; ++i) ioctl(fd, kRmAlloc, &known);
    Nvos64 unknown{};
    unknown.hClass = 0xBEEF;  // no RM class has this id
    for (int i = 0; i < 3; ++i) ioctl(fd, kRmAlloc, &unknown);
    unsigned char block[32] = {};
    for (int i = 0; i < 5; ++i) ioctl(fd, 0xC0204600UL | kUnknownNr, block);
    for (int i = 0; i < 3; ++i) ioctl(fd, kCardInfo, card);  // a known escape again: counted only
    close(fd);
    return 0;
  });
  ASSERT_EQ(c.wait(), 0);
  const auto pid = static_cast<std::uint32_t>(c.pid());
  const Usage u = reported(rec, pid, 16, interval);
  EXPECT_EQ(total(u), 16u) << "every call is still counted";
  int unknown_class = 0, known_class = 0;
  for (const Event& e : rec.events_of(pid, 0)) {
    const auto* i = e.as<event::IoctlData>();
    if (!i || i->nr != 0x2B) continue;
    unknown_class += i->rm_class == 0xBEEF;
    known_class += i->rm_class == 0x0080;
  }
  EXPECT_EQ(unknown_class, 3) << "an allocation of an unknown class is sent at every call";
  EXPECT_EQ(known_class, 0) << "an allocation of a known, counted class is not sent";
  EXPECT_EQ(sent(rec, pid, kUnknownNr), 1) << "an unknown escape is sent once in the interval";
  EXPECT_EQ(sent(rec, pid, kCardInfoNr), 1) << "a known escape only at the first use";
}

// Two threads on two CPUs issue the same new control commands at the same
// moment, 2000 of them: each command is still sent once for the process
// (the first-time check and its mark are one step). A mark the kernel
// refuses outright (its bucket lock gave up) lets the call be sent again
// rather than lost, and is counted: only those may repeat.
TEST_P(IoctlCounts, AControlCommandIssuedOnTwoCpusAtOnceIsSentOnce) {
  REQUIRE_ROOT();
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
  TempDir dir("vigil-ioctl");
  const std::string node = make_standin_node(dir);
  ASSERT_FALSE(node.empty());
  auto s = open_sensor(config(std::chrono::milliseconds(1000)));
  ASSERT_TRUE(s);
  Recorder rec(*s);
  const std::uint64_t refused_before = s->counters().map_full;

  constexpr std::uint32_t kBase = 0x20801000, kCommands = 2000;
  Child c = Child::run([&] {
    const int fd = open(node.c_str(), O_RDWR);
    if (fd < 0) return 1;
    std::atomic<std::uint32_t> ready[2] = {0, 0};
    auto issue = [&](int me) {
      pin(cpus[static_cast<std::size_t>(me)]);
      for (std::uint32_t k = 1; k <= kCommands; ++k) {
        ready[me].store(k);
        while (ready[1 - me].load() < k) {}
        std::uint32_t ctl[8] = {};
        ctl[2] = kBase + k;
        ioctl(fd, kRmControl, ctl);
      }
    };
    std::thread t(issue, 1);
    issue(0);
    t.join();
    return 0;
  });
  const int status = c.wait(std::chrono::seconds(60));
  ASSERT_EQ(status, 0) << Child::what(status);
  const auto pid = static_cast<std::uint32_t>(c.pid());
  rec.wait_for([&](const Event& e) {
    const auto* i = e.as<event::IoctlData>();
    return i && e.hdr.pid == pid && i->rm_control == kBase + kCommands;
  });
  std::map<std::uint32_t, int> per_command;
  for (const Event& e : rec.events_of(pid, 300))
    if (const auto* i = e.as<event::IoctlData>(); i && i->nr == 0x2A) ++per_command[i->rm_control];
  int twice = 0;
  for (const auto& [cmd, n] : per_command) twice += n > 1;
  EXPECT_EQ(per_command.size(), kCommands);
  const std::uint64_t refused = s->counters().map_full - refused_before;
  EXPECT_LE(static_cast<std::uint64_t>(twice), refused)
      << "control commands sent more than once, with " << refused << " marks refused";
}

// A pid the kernel gives again to a later process: that process's first use
// of the device and its first control command are sent too (the marks of
// what a process was already seen doing are kept per pid and start time; a
// pid alone made the later process invisible until the marks were evicted).
// The pid is reused through the root namespace's ns_last_pid.
TEST_P(IoctlCounts, APidReusedByALaterProcessHasItsOwnFirstUses) {
  // (the per-CPU slot keeps the last key across reports, so it holds the
  // process's start time too)
  REQUIRE_ROOT();
  TempDir dir("vigil-ioctl");
  const std::string node = make_standin_node(dir);
  ASSERT_FALSE(node.empty());
  const auto interval = std::chrono::milliseconds(200);
  auto s = open_sensor(config(interval));
  ASSERT_TRUE(s);
  Recorder rec(*s);
  constexpr std::uint32_t kCtl = 0x20800a11;
  // Both on one CPU, so that with the per-CPU slots the later process finds
  // the slot its predecessor left.
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  auto use = [&](pid_t want) {
    if (want != 0 && getpid() != want) return 2;  // not the pid asked for: try again
    pin(cpus[0]);
    const int fd = open(node.c_str(), O_RDWR);
    if (fd < 0) return 1;
    std::uint32_t ctl[8] = {};
    ctl[2] = kCtl;
    ioctl(fd, kRmControl, ctl);
    close(fd);
    return 0;
  };
  Child a = Child::run([&] { return use(0); });
  ASSERT_EQ(a.wait(), 0);
  const pid_t pid = a.pid();
  const auto upid = static_cast<std::uint32_t>(pid);
  // Its one call is its first use of the device and its first use of the
  // command: one event.
  ASSERT_TRUE(rec.wait_for([&](const Event& e) { return e.hdr.pid == upid && e.as<event::IoctlData>(); }));
  rec.events_of(upid, static_cast<int>(3 * interval.count()));  // the usage reports of the interval pass
  ASSERT_EQ(sent(rec, upid, 0x2A, kCtl), 1);

  bool reused = false;
  for (int attempt = 0; attempt < 200 && !reused; ++attempt) {
    FILE* f = std::fopen("/proc/sys/kernel/ns_last_pid", "w");
    if (!f) GTEST_SKIP() << "cannot write /proc/sys/kernel/ns_last_pid";
    std::fprintf(f, "%d", pid - 1);
    std::fclose(f);
    Child b = Child::run([&] { return use(pid); });
    const int st = b.wait();
    reused = b.pid() == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  if (!reused) GTEST_SKIP() << "pid " << pid << " was not given again in 200 tries (a busy machine)";
  rec.events_of(upid, 1000);
  EXPECT_EQ(sent(rec, upid, 0x2A, kCtl), 2)
      << "the later process with pid " << pid << " was not sent its first use of the device and command";
}

INSTANTIATE_TEST_SUITE_P(SensorIntegration, IoctlCounts, ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<bool, bool>>& i) {
                           return std::string(std::get<0>(i.param) ? "Cache" : "NoCache") +
                                  (std::get<1>(i.param) ? "EnterExitPairs" : "ArgsAtExit");
                         });

}  // namespace
}  // namespace vigil::sensor
