// Seeds the state from the real /proc and cgroup v2 tree (root, real kernel).
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "engine/state/cgroup.h"
#include "engine/state/state.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace vigil::state {
namespace {

class RealProcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: reads every process in /proc";
  }
};

TEST_F(RealProcTest, SeedFindsThisProcessAndAChildStartedBefore) {
  // A child that exists before seeding: sleep with a recognisable argv.
  pid_t child = -1;
  std::string a0 = "sleep", a1 = "30";
  char* argv[] = {a0.data(), a1.data(), nullptr};
  ASSERT_EQ(::posix_spawnp(&child, "sleep", nullptr, nullptr, argv, environ), 0);

  Config cfg;
  State s(cfg);
  Status st = s.seed_from_proc();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_GT(s.process_count(), 2u);

  const Process* self = s.process(static_cast<std::uint32_t>(::getpid()));
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(self->ppid, static_cast<std::uint32_t>(::getppid()));
  EXPECT_EQ(self->uid, 0u);
  EXPECT_TRUE(self->from_proc);
  EXPECT_NE(self->exepath.find("state_integration_test"), std::string::npos) << self->exepath;
  EXPECT_NE(self->pid_ns, 0u);
  EXPECT_NE(self->net_ns, 0u);

  const Process* c = s.process(static_cast<std::uint32_t>(child));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->ppid, static_cast<std::uint32_t>(::getpid()));
  EXPECT_EQ(c->comm, "sleep");
  EXPECT_EQ(c->args, std::vector<std::string>{"30"});
  ASSERT_NE(s.ancestor(*c, 1), nullptr);
  EXPECT_EQ(s.ancestor(*c, 1)->pid, static_cast<std::uint32_t>(::getpid()));

  // The cgroup v2 hierarchy was found, and our cgroup id is its directory's inode.
  if (!s.cgroup_root().empty()) {
    auto path = cgroup_v2_path(support::read_file("/proc/self/cgroup"));
    ASSERT_TRUE(path.has_value());
    EXPECT_EQ(self->cgroup_id, cgroup_id_of(s.cgroup_root() + *path));
    EXPECT_NE(self->cgroup_id, 0u);
  }
}

TEST_F(RealProcTest, SeededGpuFdsOfAStandInNvidiaNode) {
  char tmpl[] = "/tmp/vigil-nv-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  std::string node = dir + "/nvidia0";
  struct stat null_st {};
  ASSERT_EQ(::stat("/dev/null", &null_st), 0);
  if (::mknod(node.c_str(), S_IFCHR | 0666, null_st.st_rdev) != 0) {
    ::rmdir(dir.c_str());
    GTEST_SKIP() << "cannot create a device node in /tmp (mknod)";
  }
  // A process holding the stand-in node open on fd 3 (and a plain file on fd 4).
  std::string script = "exec 3<>'" + node + "' 4</etc/hostname; exec sleep 30";
  std::string a0 = "sh", a1 = "-c";
  char* argv[] = {a0.data(), a1.data(), script.data(), nullptr};
  pid_t child = -1;
  ASSERT_EQ(::posix_spawnp(&child, "sh", nullptr, nullptr, argv, environ), 0);
  // Wait until the shell has become sleep with its fds in place.
  for (int i = 0; i < 200; ++i) {
    if (support::read_file("/proc/" + std::to_string(child) + "/comm") == "sleep\n") break;
    ::usleep(10000);
  }
  Config cfg;
  State s(cfg);
  Status st = s.seed_from_proc();
  const Process* p = s.process(static_cast<std::uint32_t>(child));
  std::vector<GpuFd> fds = p ? p->gpu_fds : std::vector<GpuFd>{};
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::unlink(node.c_str());
  ::rmdir(dir.c_str());
  ASSERT_TRUE(st.ok());
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(fds.size(), 1u);
  EXPECT_EQ(fds[0].fd, 3);
  EXPECT_EQ(fds[0].major, 195u);  // what the name nvidia0 stands for
  EXPECT_EQ(fds[0].minor, 0u);
}

TEST_F(RealProcTest, EventInAKubeletCgroupIsAttributedByCgroupIdAlone) {
  Config cfg;
  State s(cfg);
  if (s.cgroup_root().empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted";
  const std::string id(64, 'e');
  const std::string uid_us = "0f0f0f0f_1111_4222_8333_444444444444";
  const std::string pod_dir =
      s.cgroup_root() + "/kubepods.slice/kubepods-besteffort.slice/" + "kubepods-besteffort-pod" + uid_us + ".slice";
  const std::string dir = pod_dir + "/cri-containerd-" + id + ".scope";
  std::string mk = "mkdir -p '" + dir + "'";
  if (std::system(mk.c_str()) != 0) GTEST_SKIP() << "cannot create cgroups under " << s.cgroup_root();
  std::uint64_t cid = cgroup_id_of(dir);

  // A process that came and went before vigil could read /proc: only the event.
  event::Event ev;
  ev.hdr.type = event::Type::kExec;
  ev.hdr.pid = 4000000;  // above pid_max: certainly not in /proc
  ev.hdr.cgroup_id = cid;
  ev.hdr.comm = "sh";
  event::ExecData ed;
  ed.filename = "/bin/sh";
  ed.args = {"sh", "-c", "true"};
  ev.data = ed;
  s.apply(ev);
  EvalContext ctx = s.enrich(ev);
  std::string rm = "rmdir '" + dir + "' '" + pod_dir + "' '" + s.cgroup_root() +
                   "/kubepods.slice/kubepods-besteffort.slice' '" + s.cgroup_root() + "/kubepods.slice' 2>/dev/null";
  (void)std::system(rm.c_str());
  ASSERT_NE(cid, 0u);
  ASSERT_NE(ctx.container, nullptr);
  EXPECT_EQ(ctx.container->id, id);
  EXPECT_EQ(ctx.container->pod_uid, "0f0f0f0f-1111-4222-8333-444444444444");
  ASSERT_NE(ctx.proc, nullptr);
  EXPECT_EQ(ctx.proc->container_id, id);
}

}  // namespace
}  // namespace vigil::state
