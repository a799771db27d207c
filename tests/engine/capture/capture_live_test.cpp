// Integration (root + a real kernel): `vigil capture` records live events from
// the real BPF sensor; the capture replays, and a rule written after the
// capture finds the recorded exec. Skipped with a message when not root.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/capture/reader.h"
#include "engine/cli/capture_cmd.h"
#include "tests/engine/capture/run_cli.h"

namespace vigil::cli {
namespace {

namespace fs = std::filesystem;

int run(std::vector<std::string> args) { return testing::run_cli(std::move(args)); }

TEST(CaptureLive, RecordsARealExecAndARetroHuntRuleFindsItOnReplay) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "needs root to load the BPF sensor (run as root: ctest -L integration)";
  }
  std::string tmpl = (fs::temp_directory_path() / "vigil-live-capture-XXXXXX").string();
  std::string dir = mkdtemp(tmpl.data());
  const std::string path = dir + "/live.vcap";
  const std::string marker = "vigil-capture-marker-" + std::to_string(getpid());

  int rc = -1;
  std::thread recorder([&] { rc = run({"capture", "-w", path, "--duration", "7s"}); });
  // Give the sensor time to attach (it verifies every program it can run at
  // start, about 2 s on a 2-core VM), then run a marked program a few times.
  std::this_thread::sleep_for(std::chrono::milliseconds(4500));
  for (int i = 0; i < 3; ++i) {
    pid_t child = fork();
    if (child == 0) {
      execl("/bin/sh", "sh", "-c", "exit 0", marker.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(child, &status, 0);
  }
  recorder.join();
  if (rc == 1) {
    fs::remove_all(dir);
    GTEST_SKIP() << "the BPF sensor could not start on this kernel (see the log above)";
  }
  ASSERT_EQ(rc, 0);

  // The capture reads cleanly and holds the exec with its marker argument.
  auto r = capture::CaptureReader::open(path);
  ASSERT_TRUE(r) << r.error().message;
  capture::Record rec;
  int marked = 0, processes = 0, records = 0;
  for (;;) {
    auto more = (*r)->next(rec);
    ASSERT_TRUE(more) << more.error().message;
    if (!*more) break;
    // The node's NVIDIA inventory (empty without a driver) opens the snapshot.
    if (records++ == 0) {
      EXPECT_TRUE(std::holds_alternative<state::NvidiaInfo>(rec.data)) << rec.data.index();
    }
    if (std::holds_alternative<state::Process>(rec.data)) ++processes;
    const auto* ev = std::get_if<event::Event>(&rec.data);
    const auto* ex = ev ? ev->as<event::ExecData>() : nullptr;
    if (ex && !ex->args.empty() && ex->args.back() == marker) ++marked;
  }
  EXPECT_GT(processes, 0);  // the /proc snapshot comes first
  EXPECT_EQ(marked, 3);

  // A rule written after the capture finds the execs on replay.
  const std::string hunt = dir + "/hunt.yaml";
  std::ofstream(hunt) << "- rule: Marker hunt\n"
                         "  desc: retro-hunt for the test marker\n"
                         "  condition: evt.type = execve and proc.args contains \""
                      << marker
                      << "\"\n"
                         "  output: \"marker (proc.pid=%proc.pid proc.cmdline=%proc.cmdline)\"\n"
                         "  priority: WARNING\n"
                         "  tags: [tamper]\n";
  ::testing::internal::CaptureStdout();
  int replay_rc = run({"replay", path, "-r", hunt});
  std::string alerts = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(replay_rc, 0);
  std::size_t hits = 0;
  for (std::size_t at = alerts.find("\"rule\":\"Marker hunt\""); at != std::string::npos;
       at = alerts.find("\"rule\":\"Marker hunt\"", at + 1)) {
    ++hits;
  }
  EXPECT_EQ(hits, 3u) << alerts;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vigil::cli
