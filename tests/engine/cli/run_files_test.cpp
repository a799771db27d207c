// The files `vigil run` and `vigil capture` are told to write (issue 16, item
// 8): a symbolic link at a configured path, or a directory others can write
// to, stops vigil at start-up with exit 2 and a message naming the path,
// before any probe is loaded, and the link's target is left as it was.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"
#include "tests/support/vigil_process.h"

namespace vigil::cli {
namespace {

using namespace std::chrono_literals;

constexpr const char* kRule =
    "- rule: never\n"
    "  desc: d\n"
    "  condition: evt.type = execve and proc.name = no-such-program-h16\n"
    "  output: o\n"
    "  priority: WARNING\n";

struct Outcome {
  int code = -1;  // exit code; -1 when vigil did not exit by itself in time
  std::string log;
};

Outcome vigil(const std::string& command, const std::vector<std::string>& args) {
  support::VigilProcess v(VIGIL_BINARY);
  Outcome o;
  if (!v.start_command(command, args)) return o;
  const int st = v.wait_exit(60s);
  o.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  o.log = v.stderr_text();
  return o;
}

class RunFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    rules_ = dir_.write("rules.yaml", kRule);
    victim_ = dir_.write("victim.txt", "precious\n");
  }
  // A directory anyone can write to, as /tmp would be without its sticky bit.
  std::string world_writable(const std::string& rel) {
    const std::string d = dir_.mkdirs(rel);
    EXPECT_EQ(::chmod(d.c_str(), 0777), 0);
    return d;
  }
  void expect_refused(const Outcome& o, const std::string& path, const std::string& why) {
    EXPECT_EQ(o.code, 2) << o.log;
    EXPECT_NE(o.log.find(path), std::string::npos) << o.log;
    EXPECT_NE(o.log.find(why), std::string::npos) << o.log;
    EXPECT_EQ(o.log.find("ready"), std::string::npos) << o.log;
    EXPECT_EQ(support::read_file(victim_), "precious\n");
  }

  support::TempDir dir_{"vigil-run-files"};
  std::string rules_, victim_;
};

TEST_F(RunFilesTest, RunCaptureToASymlinkExitsTwo) {
  const std::string link = dir_.symlink("link.vcap", "victim.txt");
  ASSERT_FALSE(link.empty());
  auto o = vigil("run", {"-r", rules_, "-o", "flight_recorder.enabled=false", "--capture", link});
  expect_refused(o, link, "symbolic link");
}

TEST_F(RunFilesTest, CaptureCommandToASymlinkExitsTwo) {
  const std::string link = dir_.symlink("link.vcap", "victim.txt");
  ASSERT_FALSE(link.empty());
  auto o = vigil("capture", {"-w", link, "--duration", "1"});
  expect_refused(o, link, "symbolic link");
}

TEST_F(RunFilesTest, FileOutputAtASymlinkExitsTwo) {
  const std::string link = dir_.symlink("alerts.json", "victim.txt");
  ASSERT_FALSE(link.empty());
  const std::string cfg =
      dir_.write("vigil.yaml", "state_dir: " + dir_.path() + "/state\n" + "flight_recorder: {enabled: false}\n" +
                                   "outputs:\n  - {type: file, path: " + link + "}\n");
  auto o = vigil("run", {"-c", cfg, "-r", rules_});
  expect_refused(o, link, "symbolic link");
}

TEST_F(RunFilesTest, FileOutputInAWorldWritableDirectoryExitsTwo) {
  const std::string ww = world_writable("ww");
  const std::string cfg = dir_.write("vigil.yaml",
                                     "flight_recorder: {enabled: false}\n"
                                     "outputs:\n  - {type: file, path: " +
                                         ww + "/alerts.json}\n");
  auto o = vigil("run", {"-c", cfg, "-r", rules_});
  expect_refused(o, ww, "writable by group or others");
  EXPECT_EQ(support::read_file(ww + "/alerts.json"), "");
}

TEST_F(RunFilesTest, SpoolUnderAWorldWritableStateDirExitsTwo) {
  const std::string ww = world_writable("ww");
  const std::string cfg =
      dir_.write("vigil.yaml", "state_dir: " + ww + "/state\n" + "flight_recorder: {enabled: false}\n" +
                                   "outputs:\n  - {type: webhook, url: 'http://127.0.0.1:9/', spool: true}\n");
  auto o = vigil("run", {"-c", cfg, "-r", rules_});
  expect_refused(o, ww, "writable by group or others");
  struct stat st {};
  EXPECT_NE(::stat((ww + "/state").c_str(), &st), 0) << "nothing is made under a refused directory";
}

TEST_F(RunFilesTest, FlightRecorderUnderAWorldWritableStateDirExitsTwo) {
  const std::string ww = world_writable("ww");
  const std::string cfg = dir_.write("vigil.yaml", "state_dir: " + ww + "/state\n");
  auto o = vigil("run", {"-c", cfg, "-r", rules_});
  expect_refused(o, ww, "writable by group or others");
  EXPECT_NE(o.log.find("flight recorder"), std::string::npos) << o.log;
}

}  // namespace
}  // namespace vigil::cli
