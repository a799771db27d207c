// Unit tests of the shared test rigs (no root): what the integration and
// scenario tests rely on when a rig tells them a process exited, an alert
// arrived or a directory is gone.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/cgroup.h"
#include "tests/support/net.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/vigil_process.h"

namespace vigil::support {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

TEST(TempDir, WritesReplacesInstallsAndRemovesEverything) {
  std::string path;
  {
    TempDir dir("vigil-support-test");
    ASSERT_TRUE(dir.ok());
    path = dir.path();
    EXPECT_NE(fs::path(path).filename().string().find("vigil-support-test-"), std::string::npos) << path;
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0755u) << "another user (vigil run as nobody) must read what a test writes";

    const std::string file = dir.write("a/b/rules.yaml", "first\n");
    EXPECT_EQ(file, path + "/a/b/rules.yaml");
    EXPECT_EQ(read_file(file), "first\n");
    dir.write("a/b/rules.yaml", "second\n");
    EXPECT_EQ(read_file(file), "second\n");
    EXPECT_FALSE(fs::exists(file + ".tmp"));

    const std::string prog = dir.install("/bin/true", "copied-true");
    ASSERT_EQ(prog, path + "/copied-true");
    EXPECT_EQ(::access(prog.c_str(), X_OK), 0);
    EXPECT_EQ(dir.install(path + "/no-such-program", "x"), "");
  }
  EXPECT_FALSE(fs::exists(path)) << "the directory and its content are removed";
}

// What the state tests build fake /proc and cgroup trees with.
TEST(TempDir, MakesLinksDirectoriesAndReportsInodes) {
  TempDir dir("vigil-support-test");
  ASSERT_TRUE(dir.ok());
  const std::string& path = dir.path();

  // A link whose target does not exist, stored as given (/proc/PID/ns/*).
  const std::string ns = dir.symlink("proc/42/ns/net", "net:[4026531840]");
  EXPECT_EQ(ns, path + "/proc/42/ns/net");
  EXPECT_EQ(fs::read_symlink(ns).string(), "net:[4026531840]");
  // A second link at the same place replaces the first.
  dir.write("files/tool", "x");
  EXPECT_EQ(dir.symlink("proc/42/exe", "/usr/bin/python3"), path + "/proc/42/exe");
  EXPECT_EQ(dir.symlink("proc/42/exe", path + "/files/tool"), path + "/proc/42/exe");
  EXPECT_EQ(fs::read_symlink(path + "/proc/42/exe").string(), path + "/files/tool");
  EXPECT_FALSE(fs::exists(fs::symlink_status(path + "/proc/42/exe.tmp")));
  EXPECT_EQ(dir.symlink("files/tool/under-a-file", "x"), "") << "a file is not a directory";

  EXPECT_EQ(dir.mkdirs("cg/kubepods.slice/a.scope"), path + "/cg/kubepods.slice/a.scope");
  EXPECT_TRUE(fs::is_directory(path + "/cg/kubepods.slice/a.scope"));
  EXPECT_EQ(dir.mkdirs("cg/kubepods.slice/a.scope"), path + "/cg/kubepods.slice/a.scope") << "already there";
  EXPECT_EQ(dir.mkdirs("files/tool/sub"), "");

  struct stat st {};
  ASSERT_EQ(::stat((path + "/cg/kubepods.slice/a.scope").c_str(), &st), 0);
  EXPECT_EQ(dir.inode("cg/kubepods.slice/a.scope"), st.st_ino);
  EXPECT_NE(dir.inode("cg/kubepods.slice"), dir.inode("cg/kubepods.slice/a.scope"));
  ASSERT_EQ(::stat((path + "/files/tool").c_str(), &st), 0);
  EXPECT_EQ(dir.inode("proc/42/exe"), st.st_ino) << "the link is followed";
  EXPECT_EQ(dir.inode("proc/42/ns/net"), 0u) << "a dangling link";
  EXPECT_EQ(dir.inode("no/such/dir"), 0u);
}

TEST(ReadFile, MissingFileReadsEmpty) { EXPECT_EQ(read_file("/nonexistent/vigil/file"), ""); }

TEST(Cgroup2Root, IsTheCgroupV2MountWhenThereIsOne) {
  const std::string root = cgroup2_root();
  if (root.empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted here";
  EXPECT_TRUE(fs::exists(root + "/cgroup.controllers")) << root;
}

TEST(Child, RunReportsTheFunctionsExitCode) {
  Child c = Child::run([] { return 7; });
  ASSERT_GT(c.pid(), 0);
  const int st = c.wait();
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 7);
  EXPECT_EQ(c.wait(), st) << "a second wait returns the same status";
  EXPECT_EQ(Child::what(st), "exit 7");
}

TEST(Child, SpawnOfAMissingProgramSaysExecFailed) {
  Child c = Child::spawn({"/nonexistent/program"});
  const int st = c.wait();
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), Child::kExecFailed);
  EXPECT_EQ(Child::what(st), "exit 95 (exec failed)");
}

TEST(Child, JoiningACgroupThatIsNotThereFailsBeforeRunning) {
  Child c = Child::run([] { return 0; }, {.cgroup = "/nonexistent/cgroup"});
  const int st = c.wait();
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), Child::kCgroupFailed) << Child::what(st);
}

TEST(Child, WaitKillsAChildThatOutlivesTheTimeout) {
  Child c = Child::spawn({"/bin/sleep", "30"});
  const auto t0 = std::chrono::steady_clock::now();
  const int st = c.wait(200ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  ASSERT_TRUE(WIFSIGNALED(st));
  EXPECT_EQ(WTERMSIG(st), SIGKILL);
  EXPECT_EQ(Child::what(st), "killed by signal 9");
}

TEST(Child, PokeLetsAChildWaitingOnItsStdinGoOn) {
  Child c = Child::spawn({"/bin/sh", "-c", "read x; test \"$x\" = x"}, {.stdin_pipe = true});
  ASSERT_GT(c.pid(), 0);
  c.poke();
  EXPECT_EQ(c.wait(), 0);
}

TEST(Child, DestructionKillsAndReapsARunningChild) {
  pid_t pid = -1;
  {
    Child c = Child::spawn({"/bin/sleep", "30"});
    pid = c.pid();
    ASSERT_GT(pid, 0);
  }
  EXPECT_EQ(::kill(pid, 0), -1) << "the child is gone (and reaped: no zombie left)";
}

TEST(Child, MovedFromChildLeavesTheProcessToTheNewOwner) {
  Child a = Child::run([] { return 3; });
  Child b = std::move(a);
  EXPECT_EQ(a.pid(), -1);
  EXPECT_EQ(a.wait(), -1);
  EXPECT_EQ(WEXITSTATUS(b.wait()), 3);
}

TEST(TcpListener, ListensOnAFreeLoopbackPort) {
  TcpListener l("127.0.0.1", 0);
  ASSERT_TRUE(l.ok()) << l.error();
  ASSERT_NE(l.port(), 0);
  const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(l.port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0) << "the kernel completes the handshake";
  ::close(c);
}

TEST(TcpListener, RefusesWhatIsNotAnAddress) {
  TcpListener l("not-an-address", 0);
  EXPECT_FALSE(l.ok());
  EXPECT_NE(l.error().find("not-an-address"), std::string::npos) << l.error();
}

// A stand-in for the vigil binary: a shell script given as `binary`, run as
// `script COMMAND ARGS...`.
class VigilProcessTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()); }
  // Writes the stand-in with `body` after its #! line; returns its path.
  std::string fake_vigil(const std::string& body) {
    const std::string path = dir_.write("fake-vigil", "#!/bin/sh\n" + body);
    ::chmod(path.c_str(), 0755);
    return path;
  }

  TempDir dir_{"vigil-support-test"};
};

TEST_F(VigilProcessTest, ReadyAlertsLogAndExitCode) {
  const std::string bin = fake_vigil(R"(
test "$1" = run || exit 9
echo "$FAKE_GREETING" >&2
echo '{"rule":"r1","priority":"Warning","output_fields":{"proc.pid":42}}'
echo 'not json'
echo '{"no":"rule"}'
echo '[1,2]'
trap 'echo stopped >&2; exit 3' TERM
echo "ready: 1 rules loaded" >&2
while :; do sleep 0.05; done
)");
  VigilProcess v(bin);
  ASSERT_TRUE(v.start({"-r", "x.yaml"}, {{"FAKE_GREETING", "hello from the environment"}}));
  ASSERT_TRUE(v.wait_ready(20s)) << v.diag();
  auto got = v.alerts_where("r1", "proc.pid", 42, 20s);
  ASSERT_EQ(got.size(), 1u) << v.diag();
  EXPECT_EQ(got[0].value("priority", ""), "Warning");
  EXPECT_TRUE(v.alerts_where("r1", "proc.pid", 43).empty());
  EXPECT_EQ(v.alerts([](const VigilProcess::json&) { return true; }).size(), 1u)
      << "only JSON objects with a rule are alerts" << v.diag();
  EXPECT_EQ(v.stderr_count("hello from the environment"), 1) << v.diag();
  EXPECT_EQ(v.stop(), 3) << v.diag();
  EXPECT_TRUE(v.exited());
  EXPECT_EQ(v.stdout_lines().size(), 4u) << v.diag();
  EXPECT_NE(v.stdout_text().find("not json\n"), std::string::npos) << v.diag();
  EXPECT_EQ(v.stderr_count("stopped"), 1) << "what it logs on the way out is read" << v.diag();
  EXPECT_NE(v.diag().find("--- vigil stderr ---"), std::string::npos);
}

TEST_F(VigilProcessTest, ExitBeforeReadyIsSeenAtOnce) {
  const std::string bin = fake_vigil("echo \"error: $1 $2\" >&2\nexit 2\n");
  VigilProcess v(bin);
  ASSERT_TRUE(v.start_command("replay", {"capture.vcap"}));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(v.wait_ready(20s));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s) << "no wait for the timeout once it exited";
  const int st = v.wait_exit();
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 2);
  EXPECT_NE(v.stderr_text().find("error: replay capture.vcap"), std::string::npos) << v.diag();
  EXPECT_FALSE(v.start({})) << "one run per object";
}

TEST_F(VigilProcessTest, WaitExitKillsAProcessThatDoesNotStop) {
  const std::string bin = fake_vigil("trap '' TERM\necho ready >&2\nwhile :; do sleep 0.05; done\n");
  VigilProcess v(bin);
  ASSERT_TRUE(v.start({}));
  ASSERT_TRUE(v.wait_ready(20s)) << v.diag();
  v.signal(SIGTERM);
  const int st = v.wait_exit(300ms);
  ASSERT_TRUE(WIFSIGNALED(st));
  EXPECT_EQ(WTERMSIG(st), SIGKILL);
  EXPECT_EQ(v.stop(), -1) << "not a normal exit";
}

TEST(VigilProcess, AMissingBinaryExitsWith127) {
  VigilProcess v("/nonexistent/vigil");
  ASSERT_TRUE(v.start({}));
  const int st = v.wait_exit();
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 127);
}

}  // namespace
}  // namespace vigil::support
