// Loads the real BPF programs and checks what they report about real
// processes. Needs root and a kernel with BTF; skipped with a message otherwise.
#include <algorithm>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/sensor/klog.h"
#include "engine/sensor/kmsg.h"
#include "engine/sensor/sensor.h"
#include "tests/engine/sensor/sensor_test_util.h"
#include "tests/support/cgroup.h"
#include "tests/support/process.h"
#include "tests/support/skip.h"
#include "tests/support/temp_dir.h"

#include <bpf/libbpf.h>

namespace vigil::sensor {
namespace {

using event::Event;
using event::Type;

using support::Child;
using support::PodCgroup;
using support::TempDir;

// Runs argv as a child (fork + execv); returns its pid after it exited.
pid_t run_child(const std::vector<std::string>& argv, int* status) {
  Child c = Child::spawn(argv);
  *status = c.wait();
  return c.pid();
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
  const std::string script = "cd /; /bin/true grandchild; exit 7";
  pid_t child = run_child({"/bin/sh", "-c", script, "arg-with-space x"}, &status);
  ASSERT_EQ(WEXITSTATUS(status), 7);

  auto fork_ev = rec.wait_for(
      [&](const Event& e) { return e.hdr.type == Type::kFork && e.hdr.pid == static_cast<std::uint32_t>(child); });
  ASSERT_TRUE(fork_ev) << "no fork event from child " << child;
  const auto* fk = fork_ev->as<event::ForkData>();
  ASSERT_NE(fk, nullptr);
  EXPECT_FALSE(fk->is_thread);
  std::uint32_t grandchild = fk->child_pid;
  EXPECT_NE(grandchild, 0u);
  auto gexec = rec.wait_for([&](const Event& e) { return e.hdr.type == Type::kExec && e.hdr.pid == grandchild; });
  ASSERT_TRUE(gexec) << "no exec event for grandchild " << grandchild;
  EXPECT_EQ(gexec->hdr.ppid, static_cast<std::uint32_t>(child));
  std::vector<std::string> gargs = {"/bin/true", "grandchild"};
  EXPECT_EQ(gexec->as<event::ExecData>()->args, gargs);
  EXPECT_EQ(gexec->as<event::ExecData>()->cwd, "/") << "the root directory is a cwd too";

  // Events come in order per CPU only: the child's exec may be polled
  // before or after the grandchild's, so look it up among what was seen.
  auto exec_ev = rec.wait_for(
      [&](const Event& e) { return e.hdr.type == Type::kExec && e.hdr.pid == static_cast<std::uint32_t>(child); });
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
  struct stat st {};
  ASSERT_EQ(stat("/proc/self/ns/net", &st), 0);
  EXPECT_EQ(exec_ev->hdr.net_ns, st.st_ino);
  ASSERT_EQ(stat("/proc/self/ns/pid", &st), 0);
  EXPECT_EQ(exec_ev->hdr.pid_ns, st.st_ino);
  ASSERT_EQ(stat("/proc/self/ns/mnt", &st), 0);
  EXPECT_EQ(exec_ev->hdr.mnt_ns, st.st_ino);
  // Wall clock: within a minute of now.
  auto now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LT(std::llabs(static_cast<long long>(exec_ev->hdr.ts_ns) - now), 60'000'000'000LL);

  auto exit_ev = rec.wait_for(
      [&](const Event& e) { return e.hdr.type == Type::kExit && e.hdr.pid == static_cast<std::uint32_t>(child); });
  ASSERT_TRUE(exit_ev);
  EXPECT_EQ(exit_ev->as<event::ExitData>()->exit_code, 7);
  EXPECT_EQ(exit_ev->as<event::ExitData>()->signal, 0);
  EXPECT_EQ(s->counters().ringbuf_full, 0u);
}

TEST(SensorIntegration, LongArgvIsTruncatedAndFlagged) {
  REQUIRE_ROOT();
  auto s = open_sensor(Config{});
  ASSERT_TRUE(s);
  Recorder rec(*s);
  int status = 0;
  std::string big(3000, 'a');
  pid_t child = run_child({"/bin/true", big}, &status);
  auto ev = rec.wait_for(
      [&](const Event& e) { return e.hdr.type == Type::kExec && e.hdr.pid == static_cast<std::uint32_t>(child); });
  ASSERT_TRUE(ev);
  const auto* x = ev->as<event::ExecData>();
  EXPECT_TRUE(x->args_truncated);
  ASSERT_EQ(x->args.size(), 2u);
  EXPECT_EQ(x->args[0], "/bin/true");
  EXPECT_LT(x->args[1].size(), big.size());
  EXPECT_GT(s->counters().truncated, 0u);
}

TEST(SensorIntegration, ExecReportsTheEnvironmentItStartedWith) {
  REQUIRE_ROOT();
  auto s = open_sensor(Config{});
  ASSERT_TRUE(s);
  Recorder rec(*s);
  Child c = Child::run([] {
    char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
    char* const envp[] = {const_cast<char*>("PATH=/usr/bin"), const_cast<char*>("CUDA_INJECTION64_PATH=/tmp/poc.so"),
                          nullptr};
    execve("/bin/true", argv, envp);
    return 127;
  });
  c.wait();
  auto ev = rec.wait_for(
      [&](const Event& e) { return e.hdr.type == Type::kExec && e.hdr.pid == static_cast<std::uint32_t>(c.pid()); });
  ASSERT_TRUE(ev);
  const auto* x = ev->as<event::ExecData>();
  EXPECT_EQ(x->env, (std::vector<std::string>{"PATH=/usr/bin", "CUDA_INJECTION64_PATH=/tmp/poc.so"}));
  EXPECT_FALSE(x->env_truncated);

  // An environment past the bound is cut and flagged; what is kept is whole.
  Child big = Child::run([] {
    std::string v = "BIG=" + std::string(6000, 'x');
    char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
    char* const envp[] = {const_cast<char*>("FIRST=1"), v.data(), nullptr};
    execve("/bin/true", argv, envp);
    return 127;
  });
  big.wait();
  ev = rec.wait_for(
      [&](const Event& e) { return e.hdr.type == Type::kExec && e.hdr.pid == static_cast<std::uint32_t>(big.pid()); });
  ASSERT_TRUE(ev);
  EXPECT_TRUE(ev->as<event::ExecData>()->env_truncated);
  EXPECT_EQ(ev->as<event::ExecData>()->env, (std::vector<std::string>{"FIRST=1"}));
}

TEST_P(SyscallArgs, MknodReportsTheNodeCreated) {
  REQUIRE_ROOT();
  Config cfg;
  cfg.enter_exit_pairs = GetParam();
  cfg.event_types = {Type::kMknod};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  TempDir dir("vigil-mknod");
  const std::string node = dir.path() + "/nvidia7";
  Child c = Child::run([&] { return mknod(node.c_str(), S_IFCHR | 0600, makedev(195, 7)) == 0 ? 0 : 1; });
  ASSERT_EQ(c.wait(), 0) << "mknod of 195:7 failed";
  auto ev = rec.wait_for(
      [&](const Event& e) { return e.hdr.type == Type::kMknod && e.hdr.pid == static_cast<std::uint32_t>(c.pid()); });
  ASSERT_TRUE(ev) << "no mknod event";
  const auto* d = ev->as<event::FileOpData>();
  EXPECT_EQ(d->path, node);
  EXPECT_EQ(d->syscall, event::Syscall::kMknodat) << "glibc's mknod is mknodat";
  EXPECT_EQ(d->dev, makedev(195, 7));
  EXPECT_EQ(d->mode & S_IFMT, static_cast<std::uint32_t>(S_IFCHR));
  EXPECT_EQ(d->result, 0);
}

// A watched program (the toolkit's hooks, by comm) has every open sent,
// though no rule names the path; another program's same open is not.
TEST_P(SyscallArgs, EveryOpenOfAWatchedProgramIsSent) {
  REQUIRE_ROOT();
  Config cfg;
  cfg.enter_exit_pairs = GetParam();
  cfg.event_types = {Type::kOpen};
  cfg.open_path_whole = {"/etc/vigil-no-such-file"};  // the filter is on, and names nothing opened here
  cfg.watch_comm_prefix = "vgwatch-";
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  TempDir dir("vigil-watch");
  const std::string lib = dir.path() + "/payload.so";
  std::ofstream(lib) << "x";
  // The same program under two names: comm comes from the name it is run as.
  const std::string watched = dir.path() + "/vgwatch-hook", other = dir.path() + "/plain-tool";
  ASSERT_EQ(symlink("/bin/cat", watched.c_str()), 0);
  ASSERT_EQ(symlink("/bin/cat", other.c_str()), 0);
  int st = 0;
  pid_t w = run_child({watched, lib}, &st);
  pid_t o = run_child({other, lib}, &st);
  auto ev = rec.wait_for([&](const Event& e) {
    auto* p = e.as<event::OpenData>();
    return e.hdr.type == Type::kOpen && e.hdr.pid == static_cast<std::uint32_t>(w) && p && p->path == lib;
  });
  ASSERT_TRUE(ev) << "the watched program's open was not sent";
  // The other program's exit comes after its open: once it is seen, the
  // open would have been too.
  ASSERT_TRUE(rec.wait_for(
      [&](const Event& e) { return e.hdr.type == Type::kExit && e.hdr.pid == static_cast<std::uint32_t>(o); }));
  for (const Event& e : rec.events_of(static_cast<std::uint32_t>(o))) {
    auto* p = e.as<event::OpenData>();
    EXPECT_FALSE(e.hdr.type == Type::kOpen && p && p->path == lib) << "an unwatched program's open was sent";
  }
}

TEST(SensorIntegration, KilledChildReportsSignal) {
  REQUIRE_ROOT();
  auto s = open_sensor(Config{});
  ASSERT_TRUE(s);
  Recorder rec(*s);
  int status = 0;
  pid_t child = run_child({"/bin/sh", "-c", "kill -9 $$"}, &status);
  auto ev = rec.wait_for(
      [&](const Event& e) { return e.hdr.type == Type::kExit && e.hdr.pid == static_cast<std::uint32_t>(child); });
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::ExitData>()->signal, 9);
}

// Runs fn in a forked child (the test process itself is vigil's pid, which the
// sensor filters out); returns the child's pid after it exited.

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

TEST_P(SyscallArgs, OpenAndIoctlOnAStandInNvidiaNode) {
  REQUIRE_ROOT();
  TempDir dir("vigil-sensor");
  struct stat null_st {};
  ASSERT_EQ(stat("/dev/null", &null_st), 0);
  const std::string node = make_standin_node(dir);
  ASSERT_FALSE(node.empty());

  Config cfg;
  cfg.event_types = {Type::kOpen, Type::kIoctl, Type::kGpuUsage};
  cfg.enter_exit_pairs = GetParam();
  cfg.usage_interval = std::chrono::milliseconds(200);
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);

  pid_t child = in_child([&] {
    int fd = open(node.c_str(), O_RDWR);
    if (fd < 0) return 1;
    Nvos64 a{};
    a.hClass = 0xC6C0;          // AMPERE_COMPUTE_A
    ioctl(fd, 0xC030462B, &a);  // NV_ESC_RM_ALLOC, NVOS64
    Nvos64 b{};
    b.hClass = 0xC7C0;  // AMPERE_COMPUTE_B, through NV_ESC_IOCTL_XFER_CMD
    Xfer x{0x2B, sizeof(b), reinterpret_cast<std::uint64_t>(&b)};
    ioctl(fd, 0xC01046D3, &x);
    Nvos64 c{};
    c.hClass = 0x0080;  // NV01_DEVICE_0: counted, not sent
    for (int i = 0; i < 5; ++i) ioctl(fd, 0xC030462B, &c);
    Nvos64 d{};
    d.hClass = 0x83DE;  // GT200_DEBUGGER: a security-relevant class, sent
    ioctl(fd, 0xC030462B, &d);
    // NVOS54 (RM_CONTROL, 32 bytes): cmd @8. Each distinct command is sent
    // once per process.
    std::uint32_t ctl[8] = {};
    ctl[2] = 0x20800112;  // NV2080_CTRL_CMD_GPU_SET_POWER
    for (int i = 0; i < 3; ++i) ioctl(fd, 0xC020462A, ctl);
    std::uint32_t ctl2[8] = {};
    ctl2[2] = 0x20800110;  // another command between repeats of the first
    ioctl(fd, 0xC020462A, ctl2);
    ioctl(fd, 0xC020462A, ctl);
    ioctl(fd, 0xC020462A, ctl2);
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
  auto usage = rec.wait_for(
      [&](const Event& e) {
        auto* u = e.as<event::GpuUsageData>();
        return u && e.hdr.pid == cpid;
      },
      3000);
  ASSERT_TRUE(usage) << "no GPU usage report";
  std::uint64_t allocs = 0;
  for (const auto& en : usage->as<event::GpuUsageData>()->entries)
    if (en.nr == 0x2B) allocs += en.count;
  EXPECT_EQ(allocs, 8u);  // 1 + 1 (XFER, unwrapped) + 5 + 1 (debugger)
  auto debugger = rec.wait_for(
      [&](const Event& e) {
        auto* i = e.as<event::IoctlData>();
        return i && e.hdr.pid == cpid && i->rm_class == 0x83DE;
      },
      0);
  EXPECT_TRUE(debugger) << "a GPU debugger allocation is sent one by one";
  int ctl_events = 0, ctl2_events = 0;
  rec.wait_for(
      [&](const Event& e) {
        auto* i = e.as<event::IoctlData>();
        if (i && e.hdr.pid == cpid && i->nr == 0x2A && i->rm_control == 0x20800112) ++ctl_events;
        if (i && e.hdr.pid == cpid && i->nr == 0x2A && i->rm_control == 0x20800110) ++ctl2_events;
        return false;
      },
      0);
  EXPECT_EQ(ctl_events, 1) << "a control command is reported once per process";
  EXPECT_EQ(ctl2_events, 1) << "each distinct control command is reported, once";
  auto sent_device0 = rec.wait_for(
      [&](const Event& e) {
        auto* i = e.as<event::IoctlData>();
        return i && e.hdr.pid == cpid && i->rm_class == 0x0080;
      },
      0);
  EXPECT_FALSE(sent_device0);
  auto devnull = rec.wait_for(
      [&](const Event& e) {
        auto* i = e.as<event::IoctlData>();
        return i && e.hdr.pid == cpid && i->dev_major == major(null_st.st_rdev) &&
               i->fd != alloc->as<event::IoctlData>()->fd;
      },
      0);
  EXPECT_FALSE(devnull) << "an ioctl on /dev/null was reported as NVIDIA";
}

// The fd number indexes the task's fd table from the BPF program: a device
// behind a high fd (the table grown past its first 64 slots) is still found,
// and an fd number past the table is not an NVIDIA fd.
TEST_P(SyscallArgs, IoctlBehindAHighFdNumber) {
  REQUIRE_ROOT();
  TempDir dir("vigil-sensor");
  struct stat null_st {};
  ASSERT_EQ(stat("/dev/null", &null_st), 0);
  const std::string node = make_standin_node(dir);
  ASSERT_FALSE(node.empty());

  Config cfg;
  cfg.event_types = {Type::kIoctl};
  cfg.enter_exit_pairs = GetParam();
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);

  constexpr int kHighFd = 1000;
  pid_t child = in_child([&] {
    int fd = open(node.c_str(), O_RDWR);
    if (fd < 0 || dup2(fd, kHighFd) != kHighFd) return 1;
    close(fd);
    Nvos64 a{};
    a.hClass = 0xC6C0;  // AMPERE_COMPUTE_A: sent one by one
    ioctl(kHighFd, 0xC030462B, &a);
    Nvos64 b{};
    b.hClass = 0xC7C0;
    ioctl(1 << 20, 0xC030462B, &b);  // far past the fd table: EBADF
    close(kHighFd);
    return 0;
  });
  const auto cpid = static_cast<std::uint32_t>(child);

  auto hit = rec.wait_for([&](const Event& e) {
    auto* i = e.as<event::IoctlData>();
    return i && e.hdr.pid == cpid && i->rm_class == 0xC6C0;
  });
  ASSERT_TRUE(hit) << "no ioctl event for the stand-in node at fd " << kHighFd;
  EXPECT_EQ(hit->as<event::IoctlData>()->fd, kHighFd);
  EXPECT_EQ(hit->as<event::IoctlData>()->dev_major, major(null_st.st_rdev));
  auto bad = rec.wait_for(
      [&](const Event& e) {
        auto* i = e.as<event::IoctlData>();
        return i && e.hdr.pid == cpid && i->rm_class == 0xC7C0;
      },
      0);
  EXPECT_FALSE(bad) << "an ioctl on an fd past the table was reported";
}

TEST_P(SyscallArgs, OpenOfARulePathPrefix) {
  REQUIRE_ROOT();
  TempDir dir("vigil-sensor");
  Config cfg;
  cfg.event_types = {Type::kOpen};
  cfg.enter_exit_pairs = GetParam();
  cfg.open_path_prefixes = {dir.path() + "/watched"};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  std::string watched = dir.path() + "/watched-file";
  std::string other = dir.path() + "/other-file";
  pid_t child = in_child([&] {
    int a = open(watched.c_str(), O_CREAT | O_WRONLY, 0600);
    int b = open(other.c_str(), O_CREAT | O_WRONLY, 0600);
    int c = open((dir.path() + "/watched-missing/x").c_str(), O_RDONLY);
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
  EXPECT_EQ(failed->as<event::OpenData>()->path, dir.path() + "/watched-missing/x");
  auto not_watched = rec.wait_for(
      [&](const Event& e) {
        auto* o = e.as<event::OpenData>();
        return o && e.hdr.pid == cpid && o->path == other;
      },
      300);
  EXPECT_FALSE(not_watched);
}

// A prefix of the resolved path (fd.name startswith, fd.directory) is judged
// by the file opened, as fd.name will hold it: a relative open from inside the
// directory, a "../" in the middle of the path, a symlink into it and an open
// through a second mount of a parent all match; a file beside it does not,
// even through a path that starts with the prefix as given ("watched/../x").
TEST_P(SyscallArgs, OpenOfAResolvedPrefixHoweverReached) {
  REQUIRE_ROOT();
  TempDir dir("vigil-sensor");
  const std::string d = dir.path();
  for (const char* sub : {"/watched", "/watched/deep", "/watched/deep/er", "/other", "/sub"})
    ASSERT_EQ(mkdir((d + sub).c_str(), 0755), 0) << sub;
  ASSERT_EQ(symlink((d + "/watched").c_str(), (d + "/sub/link").c_str()), 0);
  Config cfg;
  cfg.event_types = {Type::kOpen};
  cfg.enter_exit_pairs = GetParam();
  cfg.open_path_prefixes = {d + "/watched/"};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  const auto cpid = static_cast<std::uint32_t>(in_child([&] {
    if (chdir((d + "/watched").c_str()) != 0) return 1;
    close(open("rel", O_CREAT | O_WRONLY, 0600));                                  // relative
    close(open((d + "/other/../watched/mid").c_str(), O_CREAT | O_WRONLY, 0600));  // ".." inside
    close(open((d + "/sub/link/sym").c_str(), O_CREAT | O_WRONLY, 0600));          // through a symlink
    close(open((d + "/watched/deep/er/leaf").c_str(), O_CREAT | O_WRONLY, 0600));  // deeper than 4 names
    close(open("../other/beside", O_CREAT | O_WRONLY, 0600));                      // beside it
    close(open((d + "/watched/../other/x").c_str(), O_CREAT | O_WRONLY, 0600));    // starts so as given only
    return 0;
  }));
  std::set<std::string> paths;
  for (const auto& e : rec.events_of(cpid, 1500)) {
    auto* o = e.as<event::OpenData>();
    if (o && o->path.starts_with(d)) paths.insert(o->path);
  }
  const std::set<std::string> want = {d + "/watched/rel", d + "/watched/mid", d + "/watched/sym",
                                      d + "/watched/deep/er/leaf"};
  EXPECT_EQ(paths, want);
}

// Prefixes only an open for writing can match (the rule needs
// evt.is_open_write) do not send reads; a whole directory (fd.directory =)
// is judged by the name of the file's parent, also where the directory is a
// mount point (the parent dentry is then the mounted filesystem's root).
TEST_P(SyscallArgs, WritePrefixesAndWholeDirectories) {
  REQUIRE_ROOT();
  TempDir dir("vigil-sensor");
  const std::string d = dir.path();
  for (const char* sub : {"/w", "/conf.d", "/conf.d/deeper", "/mnt"})
    ASSERT_EQ(mkdir((d + sub).c_str(), 0755), 0) << sub;
  for (const char* f : {"/w/old", "/conf.d/deeper/x"}) close(open((d + f).c_str(), O_CREAT | O_WRONLY, 0600));
  Config cfg;
  cfg.event_types = {Type::kOpen};
  cfg.enter_exit_pairs = GetParam();
  cfg.open_write_prefixes = {d + "/w/"};
  cfg.open_dirs = {d + "/conf.d", d + "/mnt"};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  const auto cpid = static_cast<std::uint32_t>(in_child([&] {
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("tmpfs", (d + "/mnt").c_str(), "tmpfs", 0, nullptr) != 0)
      return 1;
    close(open((d + "/w/new").c_str(), O_CREAT | O_WRONLY, 0600));  // a write under the prefix
    close(open((d + "/w/old").c_str(), O_RDONLY));                  // a read: not judged by it
    if (chdir((d + "/conf.d").c_str()) != 0) return 1;
    close(open("rel", O_CREAT | O_WRONLY, 0600));                   // in the directory, relative
    close(open("deeper/x", O_RDONLY));                              // below it: not in it
    close(open((d + "/mnt/m").c_str(), O_CREAT | O_WRONLY, 0600));  // in a mounted directory
    return 0;
  }));
  std::set<std::string> paths;
  for (const auto& e : rec.events_of(cpid, 1500)) {
    auto* o = e.as<event::OpenData>();
    if (o && o->path.starts_with(d)) paths.insert(o->path);
  }
  EXPECT_EQ(paths, (std::set<std::string>{d + "/w/new", d + "/conf.d/rel", d + "/mnt/m"}));
}

// A whole path (fd.name = / in) is matched against what fd.name holds for a
// successful open, the resolved path: reached by a relative path, through a
// symlink, or as a file bind-mounted onto it (the way a container gets its
// /etc/hosts), it is reported, with the resolved path. A failed open is
// judged by the path as given.
TEST_P(SyscallArgs, OpenOfAWholeRulePathHoweverReached) {
  REQUIRE_ROOT();
  TempDir dir("vigil-sensor");
  Config cfg;
  cfg.event_types = {Type::kOpen};
  cfg.enter_exit_pairs = GetParam();
  const std::string watched = dir.path() + "/watched.conf";
  cfg.open_path_whole = {watched};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  ASSERT_EQ(mkdir((dir.path() + "/sub").c_str(), 0755), 0);
  for (const char* f : {"/watched.conf", "/other.conf", "/source.file"}) {
    int fd = open((dir.path() + f).c_str(), O_CREAT | O_WRONLY, 0600);
    ASSERT_GE(fd, 0) << f;
    close(fd);
  }
  ASSERT_EQ(symlink(watched.c_str(), (dir.path() + "/sub/link").c_str()), 0);

  auto opened = [&](const std::function<int()>& fn) {
    const auto cpid = static_cast<std::uint32_t>(in_child(fn));
    return [&rec, cpid](const std::string& path, int wait_ms) {
      return rec.wait_for(
          [&](const Event& e) {
            auto* o = e.as<event::OpenData>();
            return o && e.hdr.pid == cpid && o->path == path;
          },
          wait_ms);
    };
  };
  auto relative = opened([&] {
    if (chdir(dir.path().c_str()) != 0) return 1;
    int a = open("watched.conf", O_RDONLY);
    int b = open("other.conf", O_RDONLY);
    close(a);
    close(b);
    return 0;
  });
  auto rel = relative(watched, 5000);
  ASSERT_TRUE(rel) << "a relative open of a whole rule path";
  EXPECT_EQ(rel->as<event::OpenData>()->raw, "watched.conf") << "the path as given, for fd.nameraw";
  EXPECT_FALSE(relative(dir.path() + "/other.conf", 300)) << "a file no rule names";

  auto symlinked = opened([&] {
    int a = open((dir.path() + "/sub/link").c_str(), O_RDONLY);
    close(a);
    return 0;
  });
  EXPECT_TRUE(symlinked(watched, 5000)) << "an open through a symlink, reported by the resolved path";

  // In its own mount namespace, the child bind-mounts a file named otherwise
  // onto the watched path: the open file's own name is "source.file".
  auto bound = opened([&] {
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount((dir.path() + "/source.file").c_str(), watched.c_str(), nullptr, MS_BIND, nullptr) != 0)
      return 1;
    int a = open(watched.c_str(), O_RDONLY);
    close(a);
    return 0;
  });
  EXPECT_TRUE(bound(watched, 5000)) << "a file bind-mounted onto a whole rule path";

  auto failed = opened([&] {
    int a = open(watched.c_str(), O_RDONLY | O_DIRECTORY);           // ENOTDIR
    int b = open((dir.path() + "/watched.conX").c_str(), O_RDONLY);  // ENOENT, not the path
    return a >= 0 || b >= 0;
  });
  auto f = failed(watched, 5000);
  ASSERT_TRUE(f) << "a failed open of a whole rule path, by the path as given";
  EXPECT_EQ(f->as<event::OpenData>()->result, -ENOTDIR);
  EXPECT_FALSE(failed(dir.path() + "/watched.conX", 300));
}

// Prefixes shorter than the 8 bytes the open filter looks at first, paths
// shorter than the prefix, and a path whose 8 bytes cannot be read (its NUL
// is the last byte before an unmapped page): each decided as the full
// comparison would.
TEST_P(SyscallArgs, ShortOpenPrefixesAndAPathAtAPageEnd) {
  REQUIRE_ROOT();
  TempDir dir("vigil-sensor");
  Config cfg;
  cfg.event_types = {Type::kOpen};
  cfg.enter_exit_pairs = GetParam();
  cfg.open_given_prefixes = {"vgq"};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  pid_t child = in_child([&] {
    if (chdir(dir.path().c_str()) != 0) return 1;
    int a = open("vgq-file", O_CREAT | O_WRONLY, 0600);  // matches
    int b = open("vgx-file", O_CREAT | O_WRONLY, 0600);  // differs in the 3rd byte
    int c = open("vg", O_RDONLY);                        // shorter than the prefix
    const long pg = sysconf(_SC_PAGESIZE);
    auto* m = static_cast<char*>(mmap(nullptr, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (m == MAP_FAILED || mprotect(m + pg, pg, PROT_NONE) != 0) return 1;
    char* tail = m + pg - 4;
    std::memcpy(tail, "vgq", 4);
    int d = open(tail, O_RDONLY);  // no such file: a failed open, reported by prefix
    if (a >= 0) close(a);
    if (b >= 0) close(b);
    return (c >= 0 || d >= 0) ? 1 : 0;
  });
  const auto cpid = static_cast<std::uint32_t>(child);
  auto path_seen = [&](const std::string& path, int wait_ms) {
    return rec.wait_for(
        [&](const Event& e) {
          auto* o = e.as<event::OpenData>();
          return o && e.hdr.pid == cpid && o->path == path;
        },
        wait_ms);
  };
  // A successful open reports the resolved path; a failed one the path as given.
  auto hit = path_seen(dir.path() + "/vgq-file", 5000);
  ASSERT_TRUE(hit);
  EXPECT_GE(hit->as<event::OpenData>()->result, 0);
  auto page_end = path_seen("vgq", 2000);
  ASSERT_TRUE(page_end) << "a path whose first 8 bytes are unreadable is still matched";
  EXPECT_EQ(page_end->as<event::OpenData>()->result, -ENOENT);
  EXPECT_FALSE(path_seen(dir.path() + "/vgx-file", 300));
  EXPECT_FALSE(path_seen("vg", 0));
}

TEST(SensorIntegration, XidLineWrittenToDevKmsg) {
  REQUIRE_ROOT();
  auto s = KmsgSource::open("/dev/kmsg");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ((*s)->attached(), std::vector<std::string>{"kmsg:/dev/kmsg"});
  Recorder rec(**s);
  int fd = open("/dev/kmsg", O_WRONLY);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  std::string line = "<4>NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n";
  ASSERT_EQ(write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  close(fd);
  auto ev = rec.wait_for([](const Event& e) { return e.hdr.type == Type::kXid; });
  ASSERT_TRUE(ev) << "no Xid event from /dev/kmsg";
  const auto* x = ev->as<event::XidData>();
  EXPECT_EQ(x->source, "kmsg");
  EXPECT_EQ(x->code, 79u);
  EXPECT_EQ(x->pci, "0000:3b:00");
  EXPECT_EQ(x->xid_pid, 1234u);
  EXPECT_EQ(x->xid_comm, "python3");
  EXPECT_EQ(x->text, "GPU has fallen off the bus.");
  EXPECT_EQ(ev->hdr.pid, 1234u);
  // What the kernel really does with a user-space write: "<4>" sets the level;
  // a facility of 0 (kernel) cannot be claimed, so it stays LOG_USER (1).
  EXPECT_EQ(x->facility, 1);
  EXPECT_EQ(x->level, 4);
}

// Issue 14: a pod that is not privileged cannot open /dev/kmsg (the device
// cgroup); the same Xid line comes through syslog(2).
TEST(SensorIntegration, XidLineReadThroughSyslog) {
  REQUIRE_ROOT();
  auto s = KlogSource::open(std::chrono::milliseconds(50));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ((*s)->attached(), std::vector<std::string>{"kmsg:syslog(2)"});
  Recorder rec(**s);
  int fd = open("/dev/kmsg", O_WRONLY);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  std::string line = "<3>NVRM: Xid (PCI:0000:86:00): 48, pid=4321, name=trainer, An uncorrectable double bit error.\n";
  for (int i = 0; i < 2; ++i) ASSERT_EQ(write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  close(fd);
  // Both lines, once each: not again at the next polls.
  std::vector<Event> got = rec.events_of(4321, 1000);
  ASSERT_EQ(got.size(), 2u) << "the two Xid lines, read once each through syslog(2)";
  const auto* x = got[0].as<event::XidData>();
  EXPECT_EQ(x->source, "kmsg");
  EXPECT_EQ(x->code, 48u);
  EXPECT_EQ(x->pci, "0000:86:00");
  EXPECT_EQ(x->xid_comm, "trainer");
  EXPECT_EQ((*s)->drops().total(), 0u);
}

TEST_P(SyscallArgs, BpfProgramLoadByAnotherProcess) {
  REQUIRE_ROOT();
  Config cfg;
  cfg.event_types = {Type::kBpf};
  cfg.enter_exit_pairs = GetParam();
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  pid_t child = in_child([] {
    // r0 = 0; exit — a socket filter that accepts nothing.
    std::uint64_t insns[2] = {0x00000000000000b7ULL, 0x0000000000000095ULL};
    union bpf_attr_min {
      struct {
        std::uint32_t prog_type, insn_cnt;
        std::uint64_t insns, license;
        std::uint32_t log_level, log_size;
        std::uint64_t log_buf;
        std::uint32_t kern_version, prog_flags;
        char prog_name[16];
      } load;
      char pad[128];
    } attr{};
    static const char lic[] = "GPL";
    attr.load.prog_type = 1;  // BPF_PROG_TYPE_SOCKET_FILTER
    attr.load.insn_cnt = 2;
    attr.load.insns = reinterpret_cast<std::uint64_t>(insns);
    attr.load.license = reinterpret_cast<std::uint64_t>(lic);
    std::memcpy(attr.load.prog_name, "vgtest_prog", 12);
    long fd = syscall(SYS_bpf, 5 /* BPF_PROG_LOAD */, &attr, sizeof(attr));
    return fd >= 0 ? 0 : 1;
  });
  auto ev = rec.wait_for(
      [&](const Event& e) { return e.hdr.type == Type::kBpf && e.hdr.pid == static_cast<std::uint32_t>(child); });
  ASSERT_TRUE(ev) << "no bpf() event";
  const auto* b = ev->as<event::BpfData>();
  EXPECT_EQ(b->cmd, 5u);
  EXPECT_EQ(b->prog_type, 1u);
  EXPECT_EQ(b->prog_name, "vgtest_prog");
  EXPECT_GE(b->result, 0);
}

// The kubelet-style cgroup (systemd driver, containerd) of a Guaranteed pod's
// container under the cgroup v2 root, made for a test and removed afterwards.
constexpr const char* kPodUid = "0b1c2d3e-1111-2222-3333-444455556666";
std::string pod_container_id() { return std::string(64, 'a').replace(0, 8, "0123abcd"); }

// In a child: join the cgroup, get a private network namespace with loopback
// up, then run fn. Reports the child's netns inode through *netns.
pid_t in_pod_child(const PodCgroup& cg, std::uint32_t* netns, const std::function<int()>& fn) {
  int p[2];
  if (pipe(p) != 0) return -1;
  Child c = Child::run(
      [&] {
        close(p[0]);
        struct stat st {};
        stat("/proc/self/ns/net", &st);
        std::uint32_t ino = static_cast<std::uint32_t>(st.st_ino);
        if (write(p[1], &ino, sizeof(ino)) != sizeof(ino)) return 92;
        close(p[1]);
        return fn();
      },
      {.cgroup = cg.scope(), .new_netns = true});
  close(p[1]);
  if (read(p[0], netns, sizeof(*netns)) != sizeof(*netns)) *netns = 0;
  close(p[0]);
  c.wait();
  return c.pid();
}

int tcp_exchange(int family, const char* addr, std::uint16_t port, const std::string& payload) {
  int ls = socket(family, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    inet_pton(AF_INET, addr, &a->sin_addr);
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    inet_pton(AF_INET6, addr, &a->sin6_addr);
    len = sizeof(*a);
  }
  if (bind(ls, reinterpret_cast<sockaddr*>(&ss), len) != 0 || listen(ls, 4) != 0) return 1;
  int c = socket(family, SOCK_STREAM, 0);
  if (connect(c, reinterpret_cast<sockaddr*>(&ss), len) != 0) return 2;
  if (!payload.empty() && send(c, payload.data(), payload.size(), 0) != static_cast<ssize_t>(payload.size())) return 3;
  int a = accept(ls, nullptr, nullptr);
  char buf[2048];
  if (!payload.empty() && recv(a, buf, sizeof(buf), 0) <= 0) return 4;
  close(a);
  close(c);
  close(ls);
  return 0;
}

TEST_P(SyscallArgs, ConnectFromAPodCgroupInItsOwnNetns) {
  REQUIRE_ROOT();
  PodCgroup cg(kPodUid, pod_container_id(), support::QosClass::kGuaranteed);
  ASSERT_NE(cg.id(), 0u) << "could not create a kubelet-style cgroup under the cgroup v2 root: " << cg.error();
  Config cfg;
  cfg.event_types = {Type::kConnect, Type::kPayload};
  cfg.enter_exit_pairs = GetParam();
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  const std::string stratum = R"({"id":1,"method":"mining.subscribe","params":["xmrig/6.21"]})"
                              "\n";
  std::uint32_t netns = 0;
  pid_t child = in_pod_child(cg, &netns, [&] {
    if (int r = tcp_exchange(AF_INET, "127.0.0.1", 3333, stratum)) return 10 + r;
    if (int r = tcp_exchange(AF_INET6, "::1", 4444, "")) return 20 + r;
    // An unconnected UDP send, twice to one destination: reported once.
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in d{};
    d.sin_family = AF_INET;
    d.sin_port = htons(9999);
    inet_pton(AF_INET, "127.0.0.1", &d.sin_addr);
    sendto(u, "x", 1, 0, reinterpret_cast<sockaddr*>(&d), sizeof(d));
    sendto(u, "y", 1, 0, reinterpret_cast<sockaddr*>(&d), sizeof(d));
    close(u);
    // A refused connect: nothing listens on 5555.
    int c = socket(AF_INET, SOCK_STREAM, 0);
    d.sin_port = htons(5555);
    connect(c, reinterpret_cast<sockaddr*>(&d), sizeof(d));
    close(c);
    return 0;
  });
  ASSERT_NE(netns, 0u);
  struct stat host {};
  ASSERT_EQ(stat("/proc/self/ns/net", &host), 0);
  ASSERT_NE(netns, host.st_ino);
  const auto cpid = static_cast<std::uint32_t>(child);
  auto conn = [&](std::uint16_t port) {
    return rec.wait_for([&](const Event& e) {
      auto* c = e.as<event::ConnectData>();
      return c && e.hdr.pid == cpid && c->dport == port;
    });
  };
  auto v4 = conn(3333);
  ASSERT_TRUE(v4) << "no TCP v4 connect";
  EXPECT_EQ(v4->hdr.cgroup_id, cg.id());
  EXPECT_EQ(v4->hdr.net_ns, netns);
  const auto* c4 = v4->as<event::ConnectData>();
  EXPECT_EQ(c4->proto, event::L4::kTcp);
  EXPECT_EQ(event::to_string(c4->daddr), "127.0.0.1");
  EXPECT_EQ(c4->result, 0);
  // Read from the connected socket: the source the kernel chose is known too.
  EXPECT_EQ(event::to_string(c4->saddr), "127.0.0.1");
  EXPECT_NE(c4->sport, 0);

  auto v6 = conn(4444);
  ASSERT_TRUE(v6) << "no TCP v6 connect";
  EXPECT_EQ(v6->hdr.cgroup_id, cg.id());
  EXPECT_EQ(v6->hdr.net_ns, netns);
  EXPECT_EQ(event::to_string(v6->as<event::ConnectData>()->daddr), "::1");
  EXPECT_EQ(v6->as<event::ConnectData>()->family, AF_INET6);
  EXPECT_EQ(event::to_string(v6->as<event::ConnectData>()->saddr), "::1");
  EXPECT_NE(v6->as<event::ConnectData>()->sport, 0);

  auto udp = conn(9999);
  ASSERT_TRUE(udp) << "no UDP sendmsg";
  EXPECT_EQ(udp->as<event::ConnectData>()->proto, event::L4::kUdp);
  EXPECT_EQ(udp->hdr.cgroup_id, cg.id());
  EXPECT_EQ(udp->as<event::ConnectData>()->result, event::ConnectData::kResultUnknown);

  auto refused = conn(5555);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->as<event::ConnectData>()->result, -ECONNREFUSED);

  auto pl = rec.wait_for([&](const Event& e) {
    auto* p = e.as<event::PayloadData>();
    return p && p->dport == 3333;
  });
  ASSERT_TRUE(pl) << "no first-payload event";
  EXPECT_EQ(pl->as<event::PayloadData>()->bytes, stratum);
  EXPECT_FALSE(pl->as<event::PayloadData>()->truncated);
  EXPECT_EQ(pl->hdr.pid, cpid);
  EXPECT_EQ(pl->hdr.cgroup_id, cg.id());

  const auto ports = rec.connects_of(
      cpid, [](const event::ConnectData& c) { return std::to_string(c.dport); }, 0);
  EXPECT_EQ(std::count(ports.begin(), ports.end(), "9999"), 1);
}

TEST(SensorIntegration, DnsQuestionAndAnswerWithALocalServer) {
  REQUIRE_ROOT();
  PodCgroup cg(kPodUid, pod_container_id(), support::QosClass::kGuaranteed);
  ASSERT_NE(cg.id(), 0u) << cg.error();
  Config cfg;
  cfg.event_types = {Type::kDns};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  std::uint32_t netns = 0;
  pid_t child = in_pod_child(cg, &netns, [] {
    int srv = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(53);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (bind(srv, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return 1;
    int cl = socket(AF_INET, SOCK_DGRAM, 0);
    std::vector<std::uint8_t> q = {0xbe, 0xef, 0x01, 0x00, 0,   1,   0,   0,   0,   0,   0,   0,   4,
                                   'p',  'o',  'o',  'l',  10,  's', 'u', 'p', 'p', 'o', 'r', 't', 'x',
                                   'm',  'r',  3,    'c',  'o', 'm', 0,   0,   1,   0,   1};
    if (sendto(cl, q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof(a)) < 0) return 2;
    std::uint8_t buf[512];
    sockaddr_in from{};
    socklen_t fl = sizeof(from);
    ssize_t n = recvfrom(srv, buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &fl);
    if (n <= 0) return 3;
    std::vector<std::uint8_t> r(buf, buf + n);
    r[2] = 0x81;
    r[3] = 0x80;
    r[7] = 1;
    std::vector<std::uint8_t> ans = {0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 1, 2, 3};
    r.insert(r.end(), ans.begin(), ans.end());
    if (sendto(srv, r.data(), r.size(), 0, reinterpret_cast<sockaddr*>(&from), fl) < 0) return 4;
    if (recv(cl, buf, sizeof(buf), 0) <= 0) return 5;
    return 0;
  });
  const auto cpid = static_cast<std::uint32_t>(child);
  auto q = rec.wait_for([&](const Event& e) {
    auto* d = e.as<event::DnsData>();
    return d && !d->is_response && d->id == 0xbeef;
  });
  ASSERT_TRUE(q) << "no DNS question";
  EXPECT_EQ(q->as<event::DnsData>()->name, "pool.supportxmr.com");
  EXPECT_EQ(q->as<event::DnsData>()->qtype, 1);
  EXPECT_EQ(event::to_string(q->as<event::DnsData>()->server), "127.0.0.1");
  EXPECT_EQ(q->as<event::DnsData>()->server_port, 53);
  EXPECT_EQ(q->hdr.pid, cpid);
  EXPECT_EQ(q->hdr.cgroup_id, cg.id());
  EXPECT_EQ(q->hdr.net_ns, netns);
  auto r = rec.wait_for([&](const Event& e) {
    auto* d = e.as<event::DnsData>();
    return d && d->is_response && d->id == 0xbeef;
  });
  ASSERT_TRUE(r) << "no DNS answer";
  ASSERT_EQ(r->as<event::DnsData>()->answers.size(), 1u);
  EXPECT_EQ(event::to_string(r->as<event::DnsData>()->answers[0]), "10.1.2.3");
  EXPECT_EQ(r->as<event::DnsData>()->name, "pool.supportxmr.com");
  // The answer is attributed to the process that asked.
  EXPECT_EQ(r->hdr.pid, cpid);
  EXPECT_EQ(r->hdr.cgroup_id, cg.id());
}

TEST(SensorIntegration, ScriptExecReportsScriptAndInterpreter) {
  REQUIRE_ROOT();
  TempDir dir("vigil-sensor");
  std::string script = dir.path() + "/hello.sh";
  std::ofstream(script) << "#!/bin/sh\nexit 0\n";
  chmod(script.c_str(), 0755);
  auto s = open_sensor(Config{});
  ASSERT_TRUE(s);
  Recorder rec(*s);
  int status = 0;
  pid_t child = run_child({script, "one"}, &status);
  auto ev = rec.wait_for(
      [&](const Event& e) { return e.hdr.type == Type::kExec && e.hdr.pid == static_cast<std::uint32_t>(child); });
  ASSERT_TRUE(ev);
  const auto* x = ev->as<event::ExecData>();
  EXPECT_EQ(x->filename, script);
  char real[4096] = {};
  ASSERT_NE(realpath("/bin/sh", real), nullptr);
  EXPECT_EQ(x->exe, real);  // the interpreter actually running
  EXPECT_FALSE(x->elf32);
  ASSERT_GE(x->args.size(), 2u);
  EXPECT_EQ(x->args.back(), "one");
}

// A minimal static i386 ELF that exits with `code` through int 0x80: an ELF
// header, one PT_LOAD program header, nine bytes of code.
std::string write_elf32_exit(const std::string& path, std::uint8_t code) {
  std::vector<std::uint8_t> b;
  auto u16 = [&](std::uint16_t v) {
    b.push_back(v & 0xff);
    b.push_back(v >> 8);
  };
  auto u32 = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back((v >> (8 * i)) & 0xff);
  };
  const std::uint32_t base = 0x08048000, ehsize = 52, phsize = 32;
  const std::uint8_t text[] = {0xB8, 0x01, 0x00, 0x00, 0x00,  // mov eax, 1 (exit)
                               0xBB, code, 0x00, 0x00, 0x00,  // mov ebx, code
                               0xCD, 0x80};                   // int 0x80
  const std::uint32_t size = ehsize + phsize + sizeof(text);
  const std::uint8_t ident[16] = {0x7f, 'E', 'L', 'F', 1 /* 32-bit */, 1 /* LE */, 1};
  b.insert(b.end(), ident, ident + 16);
  u16(2);
  u16(3);
  u32(1);  // ET_EXEC, EM_386, EV_CURRENT
  u32(base + ehsize + phsize);
  u32(ehsize);
  u32(0);
  u32(0);  // entry, phoff, shoff, flags
  u16(ehsize);
  u16(phsize);
  u16(1);
  u16(0);
  u16(0);
  u16(0);
  u32(1);
  u32(0);
  u32(base);
  u32(base);  // PT_LOAD from offset 0 at base
  u32(size);
  u32(size);
  u32(5);
  u32(0x1000);  // R+X
  b.insert(b.end(), text, text + sizeof(text));
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  chmod(path.c_str(), 0755);
  return path;
}

// Stand-in nodes are recognised by name: a short name is read from inside
// the dentry, a long one (> 40 bytes) through the string helper; "nvidia-uvm"
// names are UVM nodes. Each is seen on its first ioctl.
TEST(SensorIntegration, StandInNodeNamesShortLongAndUvm) {
  REQUIRE_ROOT();
  TempDir dir("vigil-sensor");
  const std::vector<std::string> names = {"nvidia3", "nvidia-uvm",
                                          "nvidia7-a-stand-in-node-whose-name-is-longer-than-forty-bytes", "nvidiX9"};
  for (const auto& n : names) ASSERT_FALSE(make_standin_node(dir, n).empty());
  Config cfg;
  cfg.event_types = {Type::kIoctl};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  std::vector<pid_t> pids;
  for (const auto& n : names) {
    const std::string node = dir.path() + "/" + n;
    Child c = Child::run([node] {
      int fd = open(node.c_str(), O_RDWR);
      if (fd < 0) return 1;
      std::uint32_t ctl[8] = {};
      ioctl(fd, 0xC020462A, ctl);
      return 0;
    });
    ASSERT_EQ(c.wait(), 0) << n;
    pids.push_back(c.pid());
  }
  auto first_use = [&](pid_t p) {
    return rec.wait_for(
        [&](const Event& e) {
          auto* i = e.as<event::IoctlData>();
          return i && e.hdr.pid == static_cast<std::uint32_t>(p);
        },
        3000);
  };
  auto short_ev = first_use(pids[0]);
  ASSERT_TRUE(short_ev) << "short stand-in name not recognised";
  EXPECT_FALSE(short_ev->as<event::IoctlData>()->uvm);
  auto uvm_ev = first_use(pids[1]);
  ASSERT_TRUE(uvm_ev) << "nvidia-uvm stand-in not recognised";
  EXPECT_TRUE(uvm_ev->as<event::IoctlData>()->uvm);
  auto long_ev = first_use(pids[2]);
  ASSERT_TRUE(long_ev) << "long stand-in name not recognised";
  EXPECT_FALSE(long_ev->as<event::IoctlData>()->uvm);
  EXPECT_FALSE(first_use(pids[3])) << "a name that only looks like nvidia must not match";
}

TEST(SensorIntegration, Exec32BitProgramIsFlagged) {
  REQUIRE_ROOT();
  TempDir dir("vigil-sensor");
  const std::string prog = write_elf32_exit(dir.path() + "/tiny32", 42);
  auto s = open_sensor(Config{});
  ASSERT_TRUE(s);
  Recorder rec(*s);
  int status = 0;
  pid_t child = run_child({prog}, &status);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 42)
    GTEST_SKIP() << "this kernel cannot run 32-bit programs (no IA32 emulation): " << Child::what(status);
  auto ev = rec.wait_for(
      [&](const Event& e) { return e.hdr.type == Type::kExec && e.hdr.pid == static_cast<std::uint32_t>(child); });
  ASSERT_TRUE(ev) << "no exec event for the 32-bit program";
  EXPECT_TRUE(ev->as<event::ExecData>()->elf32);
  EXPECT_EQ(ev->as<event::ExecData>()->exe, prog);
}

TEST_P(SyscallArgs, UnixSocketConnect) {
  REQUIRE_ROOT();
  TempDir dir("vigil-sensor");
  std::string path = dir.path() + "/sock";
  Config cfg;
  cfg.event_types = {Type::kConnect};
  cfg.enter_exit_pairs = GetParam();
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  pid_t child = in_child([&] {
    int ls = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
    if (bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(ls, 1) != 0) return 1;
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    return connect(c, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 ? 0 : 2;
  });
  auto ev = rec.wait_for([&](const Event& e) {
    auto* c = e.as<event::ConnectData>();
    return c && e.hdr.pid == static_cast<std::uint32_t>(child) && c->family == AF_UNIX;
  });
  ASSERT_TRUE(ev) << "no unix connect";
  EXPECT_EQ(ev->as<event::ConnectData>()->unix_path, path);
  EXPECT_EQ(ev->as<event::ConnectData>()->proto, event::L4::kUnix);
  EXPECT_EQ(ev->as<event::ConnectData>()->result, 0);
}

// One thread connecting again and again: TCP, then AF_UNIX, then TCP to
// another port. Each connect is reported once with its own destination (the
// destination kept between the cgroup hook and the syscall's exit is reused
// per thread, and must not leak into the next connect).
TEST_P(SyscallArgs, RepeatedConnectsFromOneThread) {
  REQUIRE_ROOT();
  TempDir dir("vigil-sensor");
  const std::string upath = dir.path() + "/sock";
  Config cfg;
  cfg.event_types = {Type::kConnect};
  cfg.enter_exit_pairs = GetParam();
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  auto listen_tcp = [](std::uint16_t* port) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t l = sizeof(a);
    if (bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(ls, 4) != 0 ||
        getsockname(ls, reinterpret_cast<sockaddr*>(&a), &l) != 0)
      return -1;
    *port = ntohs(a.sin_port);
    return ls;
  };
  std::uint16_t p1 = 0, p2 = 0;
  int l1 = listen_tcp(&p1), l2 = listen_tcp(&p2);
  ASSERT_GE(l1, 0);
  ASSERT_GE(l2, 0);
  pid_t child = in_child([&] {
    auto tcp = [](std::uint16_t port) {
      int c = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(port);
      int r = connect(c, reinterpret_cast<sockaddr*>(&a), sizeof(a));
      close(c);
      return r;
    };
    int us = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un ua{};
    ua.sun_family = AF_UNIX;
    std::strncpy(ua.sun_path, upath.c_str(), sizeof(ua.sun_path) - 1);
    if (bind(us, reinterpret_cast<sockaddr*>(&ua), sizeof(ua)) != 0 || listen(us, 1) != 0) return 1;
    if (tcp(p1) != 0) return 2;
    int uc = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(uc, reinterpret_cast<sockaddr*>(&ua), sizeof(ua)) != 0) return 3;
    if (tcp(p2) != 0) return 4;
    return 0;
  });
  const auto cpid = static_cast<std::uint32_t>(child);
  // The last connect seen, then a little longer for anything that would be a
  // repeat; then one pass over everything recorded, in order.
  rec.wait_for([&](const Event& e) {
    auto* c = e.as<event::ConnectData>();
    return c && e.hdr.pid == cpid && c->family == AF_INET && c->dport == p2;
  });
  const auto seen = rec.connects_of(cpid, [](const event::ConnectData& c) {
    return c.family == AF_UNIX ? "unix:" + c.unix_path : "tcp:" + std::to_string(c.dport);
  });
  close(l1);
  close(l2);
  EXPECT_EQ(seen,
            (std::vector<std::string>{"tcp:" + std::to_string(p1), "unix:" + upath, "tcp:" + std::to_string(p2)}));
}

// A datagram socket connected, then disconnected (AF_UNSPEC), then connected
// to an IPv4 address through an IPv6 socket: two connects, each with its
// destination; the disconnect is not a connect to anywhere.
TEST_P(SyscallArgs, UdpConnectDisconnectAndMappedAddress) {
  REQUIRE_ROOT();
  Config cfg;
  cfg.event_types = {Type::kConnect};
  cfg.enter_exit_pairs = GetParam();
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  pid_t child = in_child([&] {
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(7001);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(u, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return 1;
    sockaddr unspec{};
    unspec.sa_family = AF_UNSPEC;
    if (connect(u, &unspec, sizeof(unspec)) != 0) return 2;
    int u6 = socket(AF_INET6, SOCK_DGRAM, 0);
    sockaddr_in6 m{};
    m.sin6_family = AF_INET6;
    m.sin6_port = htons(7002);
    inet_pton(AF_INET6, "::ffff:127.0.0.1", &m.sin6_addr);
    if (connect(u6, reinterpret_cast<sockaddr*>(&m), sizeof(m)) != 0) return 3;
    return 0;
  });
  const auto cpid = static_cast<std::uint32_t>(child);
  ASSERT_TRUE(rec.wait_for([&](const Event& e) {
    auto* c = e.as<event::ConnectData>();
    return c && e.hdr.pid == cpid && c->dport == 7002;
  })) << "no connect of the IPv6 socket";
  const auto seen = rec.connects_of(cpid, [](const event::ConnectData& c) {
    return std::string(c.proto == event::L4::kUdp ? "udp:" : "?:") + event::to_string(c.daddr) + ":" +
           std::to_string(c.dport) + " result=" + std::to_string(c.result);
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"udp:127.0.0.1:7001 result=0", "udp:::ffff:127.0.0.1:7002 result=0"}));
}

TEST(SensorIntegration, OnlyTheHooksTheRulesNeedAreAttached) {
  REQUIRE_ROOT();
  Config cfg;
  cfg.event_types = {Type::kExec};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  auto att = s->attached();
  for (const auto& h : att) {
    EXPECT_EQ(h.rfind("syscalls:", 0), std::string::npos) << h << " attached although no rule needs it";
    EXPECT_EQ(h.rfind("cgroup", 0), std::string::npos) << h;
    EXPECT_EQ(h.find("raw_syscalls"), std::string::npos) << h;
  }
  EXPECT_EQ(att.size(), 3u);  // exec, fork, exit
}

TEST(SensorIntegration, TracedSyscallsPayForOneTracepointEach) {
  REQUIRE_ROOT();
  Config cfg;
  cfg.event_types = {Type::kOpen, Type::kIoctl, Type::kConnect, Type::kBpf};
  cfg.open_path_prefixes = {"/etc/"};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  auto att = s->attached();
  auto has = [&](const char* h) { return std::find(att.begin(), att.end(), h) != att.end(); };
  EXPECT_TRUE(has("syscalls:sys_exit_openat"));
  EXPECT_TRUE(has("syscalls:sys_exit_ioctl"));
  EXPECT_TRUE(has("syscalls:sys_exit_connect"));
  EXPECT_TRUE(has("syscalls:sys_exit_bpf"));
  // Where the kernel has bpf_task_pt_regs (5.15+), no enter program at all.
  if (libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, BPF_FUNC_task_pt_regs, nullptr) == 1) {
    for (const auto& h : att) EXPECT_EQ(h.rfind("syscalls:sys_enter_", 0), std::string::npos) << h;
  } else {
    std::printf("note: no bpf_task_pt_regs on this kernel: the enter/exit pairs are the default\n");
  }

  cfg.enter_exit_pairs = true;
  s.reset();
  s = open_sensor(cfg);
  ASSERT_TRUE(s);
  att = s->attached();
  EXPECT_TRUE(has("syscalls:sys_enter_openat"));
  EXPECT_TRUE(has("syscalls:sys_enter_ioctl"));
}

INSTANTIATE_TEST_SUITE_P(SensorIntegration, SyscallArgs, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? std::string("EnterExitPairs") : std::string("ArgsAtExit");
                         });

}  // namespace
}  // namespace vigil::sensor
