// Loads the real BPF programs and checks what they report about real
// processes. Needs root and a kernel with BTF; skipped with a message otherwise.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
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


// Runs fn in a forked child (the test process itself is vigil's pid, which the
// sensor filters out); returns the child's pid after it exited.
pid_t in_child(const std::function<int()>& fn) {
  pid_t pid = fork();
  if (pid == 0) _exit(fn());
  int st = 0;
  waitpid(pid, &st, 0);
  return pid;
}

struct TempDir {
  TempDir() {
    char t[] = "/tmp/vigil-sensor-XXXXXX";
    path = mkdtemp(t);
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
  std::string path;
};

struct Nvos64 {
  std::uint32_t hRoot, hObjectParent, hObjectNew, hClass;
  std::uint64_t pAllocParms, pRightsRequested;
  std::uint32_t paramsSize, flags, status, pad;
};
static_assert(sizeof(Nvos64) == 48);
struct Xfer {
  std::uint32_t cmd, size;
  std::uint64_t ptr;
};

TEST(SensorIntegration, OpenAndIoctlOnAStandInNvidiaNode) {
  REQUIRE_ROOT();
  TempDir dir;
  struct stat null_st{};
  ASSERT_EQ(stat("/dev/null", &null_st), 0);
  std::string node = dir.path + "/nvidia0";
  ASSERT_EQ(mknod(node.c_str(), S_IFCHR | 0666, null_st.st_rdev), 0) << std::strerror(errno);

  Config cfg;
  cfg.event_types = {Type::kOpen, Type::kIoctl, Type::kGpuUsage};
  cfg.usage_interval = std::chrono::milliseconds(200);
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);

  pid_t child = in_child([&] {
    int fd = open(node.c_str(), O_RDWR);
    if (fd < 0) return 1;
    Nvos64 a{};
    a.hClass = 0xC6C0;  // AMPERE_COMPUTE_A
    ioctl(fd, 0xC030462B, &a);  // NV_ESC_RM_ALLOC, NVOS64
    Nvos64 b{};
    b.hClass = 0xC7C0;  // AMPERE_COMPUTE_B, through NV_ESC_IOCTL_XFER_CMD
    Xfer x{0x2B, sizeof(b), reinterpret_cast<std::uint64_t>(&b)};
    ioctl(fd, 0xC01046D3, &x);
    Nvos64 c{};
    c.hClass = 0x0080;  // NV01_DEVICE_0: counted, not sent
    for (int i = 0; i < 5; ++i) ioctl(fd, 0xC030462B, &c);
    close(fd);
    // /dev/null itself: a device, but not NVIDIA: its ioctls are ignored.
    int nfd = open("/dev/null", O_RDONLY);
    ioctl(nfd, 0xC030462B, &a);
    close(nfd);
    return 0;
  });
  const auto cpid = static_cast<std::uint32_t>(child);

  auto op = rec.wait_for([&](const Event& e) {
    auto* o = e.as<event::OpenData>();
    return o && e.hdr.pid == cpid && o->path == node;
  });
  ASSERT_TRUE(op) << "no open event for " << node;
  const auto* o = op->as<event::OpenData>();
  EXPECT_TRUE(o->is_device);
  EXPECT_EQ(o->dev_major, major(null_st.st_rdev));
  EXPECT_EQ(o->dev_minor, minor(null_st.st_rdev));
  EXPECT_GE(o->result, 0);
  EXPECT_EQ(o->flags & O_ACCMODE, static_cast<std::uint32_t>(O_RDWR));

  auto alloc = rec.wait_for([&](const Event& e) {
    auto* i = e.as<event::IoctlData>();
    return i && e.hdr.pid == cpid && i->rm_class == 0xC6C0;
  });
  ASSERT_TRUE(alloc) << "no RM_ALLOC ioctl event";
  const auto* i = alloc->as<event::IoctlData>();
  EXPECT_EQ(i->nr, 0x2Bu);
  EXPECT_EQ(i->cmd, 0xC030462Bu);
  EXPECT_FALSE(i->xfer);
  EXPECT_FALSE(i->uvm);
  EXPECT_EQ(i->result, -ENOTTY);  // /dev/null's driver refuses it

  auto xfer = rec.wait_for([&](const Event& e) {
    auto* i = e.as<event::IoctlData>();
    return i && e.hdr.pid == cpid && i->rm_class == 0xC7C0;
  });
  ASSERT_TRUE(xfer) << "no XFER-wrapped RM_ALLOC event";
  EXPECT_TRUE(xfer->as<event::IoctlData>()->xfer);
  EXPECT_EQ(xfer->as<event::IoctlData>()->nr, 0x2Bu);
  EXPECT_EQ(xfer->as<event::IoctlData>()->cmd, 0xC01046D3u);

  // The five NV01_DEVICE_0 allocations are counted, not sent one by one.
  auto usage = rec.wait_for([&](const Event& e) {
    auto* u = e.as<event::GpuUsageData>();
    return u && e.hdr.pid == cpid;
  }, 3000);
  ASSERT_TRUE(usage) << "no GPU usage report";
  std::uint64_t allocs = 0;
  for (const auto& en : usage->as<event::GpuUsageData>()->entries)
    if (en.nr == 0x2B) allocs += en.count;
  EXPECT_EQ(allocs, 7u);  // 1 + 1 (XFER, unwrapped) + 5
  auto sent_device0 = rec.wait_for([&](const Event& e) {
    auto* i = e.as<event::IoctlData>();
    return i && e.hdr.pid == cpid && i->rm_class == 0x0080;
  }, 0);
  EXPECT_FALSE(sent_device0);
  auto devnull = rec.wait_for([&](const Event& e) {
    auto* i = e.as<event::IoctlData>();
    return i && e.hdr.pid == cpid && i->dev_major == major(null_st.st_rdev) && i->fd != alloc->as<event::IoctlData>()->fd;
  }, 0);
  EXPECT_FALSE(devnull) << "an ioctl on /dev/null was reported as NVIDIA";
}

TEST(SensorIntegration, OpenOfARulePathPrefix) {
  REQUIRE_ROOT();
  TempDir dir;
  Config cfg;
  cfg.event_types = {Type::kOpen};
  cfg.open_path_prefixes = {dir.path + "/watched"};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  std::string watched = dir.path + "/watched-file";
  std::string other = dir.path + "/other-file";
  pid_t child = in_child([&] {
    int a = open(watched.c_str(), O_CREAT | O_WRONLY, 0600);
    int b = open(other.c_str(), O_CREAT | O_WRONLY, 0600);
    int c = open((dir.path + "/watched-missing/x").c_str(), O_RDONLY);
    close(a);
    close(b);
    return c >= 0;
  });
  const auto cpid = static_cast<std::uint32_t>(child);
  auto ev = rec.wait_for([&](const Event& e) {
    auto* o = e.as<event::OpenData>();
    return o && e.hdr.pid == cpid && o->path == watched;
  });
  ASSERT_TRUE(ev);
  EXPECT_FALSE(ev->as<event::OpenData>()->is_device);
  EXPECT_TRUE(ev->as<event::OpenData>()->flags & O_CREAT);
  auto failed = rec.wait_for([&](const Event& e) {
    auto* o = e.as<event::OpenData>();
    return o && e.hdr.pid == cpid && o->result == -ENOENT;
  });
  ASSERT_TRUE(failed) << "a failed open of a watched path is reported with its errno";
  EXPECT_EQ(failed->as<event::OpenData>()->path, dir.path + "/watched-missing/x");
  auto not_watched = rec.wait_for([&](const Event& e) {
    auto* o = e.as<event::OpenData>();
    return o && e.hdr.pid == cpid && o->path == other;
  }, 300);
  EXPECT_FALSE(not_watched);
}

}  // namespace
}  // namespace vigil::sensor
