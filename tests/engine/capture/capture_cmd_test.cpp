// `vigil replay` and the argument parsers of `vigil capture`/`vigil replay`,
// driven through the command functions (no root needed: replay reads files).
#include "engine/cli/capture_cmd.h"
#include "engine/capture/writer.h"
#include "tests/engine/capture/run_cli.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace vigil::cli {
namespace {

namespace fs = std::filesystem;
const char* kFixture = "tests/engine/capture/fixtures/v1_sample.vcap";

int run(std::vector<std::string> args) { return testing::run_cli(std::move(args)); }

TEST(CaptureCmd, ParsesDurationsSizesAndTimes) {
  EXPECT_EQ(parse_duration_ns("90"), 90'000'000'000ull);
  EXPECT_EQ(parse_duration_ns("1.5s"), 1'500'000'000ull);
  EXPECT_EQ(parse_duration_ns("500ms"), 500'000'000ull);
  EXPECT_EQ(parse_duration_ns("5m"), 300'000'000'000ull);
  EXPECT_EQ(parse_duration_ns("2h"), 7'200'000'000'000ull);
  EXPECT_FALSE(parse_duration_ns("5 minutes"));
  EXPECT_FALSE(parse_duration_ns("-1s"));
  EXPECT_FALSE(parse_duration_ns(""));
  EXPECT_EQ(parse_size("512K"), 512u * 1024);
  EXPECT_EQ(parse_size("64M"), 64ull << 20);
  EXPECT_EQ(parse_size("2G"), 2ull << 30);
  EXPECT_EQ(parse_size("100"), 100u);
  EXPECT_FALSE(parse_size("12X"));
  EXPECT_EQ(parse_time_ns("1970-01-01T00:00:01Z"), 1'000'000'000ull);
  EXPECT_EQ(parse_time_ns("2023-11-14T22:13:20.5Z"), 1'700'000'000'500'000'000ull);
  EXPECT_EQ(parse_time_ns("2023-11-15T00:13:20+02:00"), 1'700'000'000'000'000'000ull);
  EXPECT_EQ(parse_time_ns("1700000000.25"), 1'700'000'000'250'000'000ull);
  EXPECT_FALSE(parse_time_ns("2023-13-01T00:00:00Z"));
  EXPECT_FALSE(parse_time_ns("2023-11-14 22:13:20"));
  EXPECT_FALSE(parse_time_ns("yesterday"));
}

TEST(CaptureCmd, ReplayPrintsEveryEventAsAJsonLine) {
  ::testing::internal::CaptureStdout();
  int rc = run({"replay", kFixture, "--events"});
  std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0);
  std::istringstream in(out);
  std::string line;
  int n = 0;
  bool saw_pod = false;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);  // each line is one valid JSON object
    EXPECT_TRUE(j.contains("ts_ns"));
    EXPECT_TRUE(j.contains("type"));
    if (j.value("k8s.pod.name", "") == "trainer-0") saw_pod = true;
    ++n;
  }
  EXPECT_EQ(n, 13);  // the fixture's events
  EXPECT_TRUE(saw_pod);
}

TEST(CaptureCmd, ReplayWindowAndFilterNarrowTheEvents) {
  ::testing::internal::CaptureStdout();
  int rc = run({"replay", kFixture, "--events", "--filter", "evt.type = connect"});
  std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2);  // two connects in the fixture
  ::testing::internal::CaptureStdout();
  // The fixture's 13 events are 0..12 ns after 1700000001 s: keep the last three.
  rc = run({"replay", kFixture, "--events", "--since", "1700000001.000000010"});
  out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3);
}

TEST(CaptureCmd, ReplayWritesATimelineAndRunsTheBundledRules) {
  std::string tmpl = (fs::temp_directory_path() / "vigil-cmd-XXXXXX").string();
  std::string dir = mkdtemp(tmpl.data());
  std::string tl = dir + "/t.json";
  ::testing::internal::CaptureStdout();
  int rc = run({"replay", kFixture, "-r", "rules/vigil_rules.yaml", "--timeline", tl});
  std::string alerts = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  std::ifstream f(tl);
  auto doc = nlohmann::json::parse(f);
  EXPECT_GT(doc["traceEvents"].size(), 10u);
  std::istringstream in(alerts);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    EXPECT_TRUE(j.contains("rule"));
    EXPECT_TRUE(j.contains("uuid"));
  }
  fs::remove_all(dir);
}

// A capture written before the event schema table, and the alerts that
// build's replay printed for it (tests/engine/capture/fixtures/README.md):
// a file already on disk must replay to the same alerts with every later build
// (append_output, which came later and appends the container and pod fields
// by default, is turned off by no_append_output.yaml).
TEST(CaptureCmd, ACaptureFromBeforeTheSchemaReplaysToTheSameAlerts) {
  const std::string dir = "tests/engine/capture/fixtures/";
  ::testing::internal::CaptureStdout();
  int rc = run({"replay", dir + "pre_schema_node.vcap", "-r", dir + "pre_schema_rules.yaml", "-r",
                "rules/vigil_rules.yaml", "-c", dir + "no_append_output.yaml"});
  std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0);
  std::vector<std::string> got;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    got.push_back(j["time"].get<std::string>() + " " + j["priority"].get<std::string>() + " " +
                  j["output"].get<std::string>());
  }
  std::ifstream f(dir + "pre_schema_node.alerts");
  std::vector<std::string> want;
  while (std::getline(f, line)) want.push_back(line);
  ASSERT_EQ(want.size(), 292u);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "alert " << i;
}

// A miner restarted every 10 s for 10 minutes (a new pid each time) and a
// shell now and then, written as a capture.
void write_miner_capture(const std::string& path) {
  capture::WriterOptions wo;
  wo.flush_interval_ns = 0;
  auto w = capture::CaptureWriter::open(path, wo);
  ASSERT_TRUE(w) << w.error().message;
  const std::uint64_t t0 = 1'767'225'600'000'000'000ull;
  for (std::uint32_t i = 0; i < 60; ++i) {
    for (const char* prog : {"/tmp/.x/xmrig", "/bin/bash"}) {
      if (prog[1] == 'b' && i % 20 != 0) continue;
      event::Header h;
      h.type = event::Type::kExec;
      h.ts_ns = t0 + i * 10'000'000'000ull + (prog[1] == 'b' ? 1 : 0);
      h.pid = h.tid = 5000 + 2 * i + (prog[1] == 'b' ? 1 : 0);
      h.ppid = 1;
      std::string p(prog);
      h.comm = p.substr(p.rfind('/') + 1);
      event::ExecData ex;
      ex.filename = prog;
      ex.exe = prog;
      ex.args = {h.comm, "-o", "pool:3333"};
      event::Event ev{h, ex};
      ASSERT_TRUE((*w)->write_event(ev));
    }
  }
  ASSERT_TRUE((*w)->close());
}

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> v;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) v.push_back(nlohmann::json::parse(line));
  }
  return v;
}

// docs/outputs.md, "Aggregation": in event time, so replaying the same
// capture gives the same alerts, summaries and counts every time; an output
// with `aggregate: false` gets every alert.
TEST(CaptureCmd, AggregatedRulesReplayToTheSameSummariesEveryTime) {
  std::string tmpl = (fs::temp_directory_path() / "vigil-agg-XXXXXX").string();
  std::string dir = mkdtemp(tmpl.data());
  write_miner_capture(dir + "/miner.vcap");
  std::ofstream(dir + "/rules.yaml") << R"yaml(
- rule: Miner started
  desc: a miner ran
  condition: evt.type = execve and proc.name = xmrig
  output: "miner started (proc.pid=%proc.pid proc.cmdline=%proc.cmdline)"
  priority: CRITICAL
  tags: [crypto_mining]
  aggregate: {by: [proc.exepath], window: 3m}
- rule: Shell started
  desc: a shell ran
  condition: evt.type = execve and proc.name = bash
  output: "shell (proc.pid=%proc.pid)"
  priority: WARNING
)yaml";
  std::ofstream(dir + "/every.yaml") << "outputs: [{type: stdout, aggregate: false}]\n";
  auto replay = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"replay", dir + "/miner.vcap", "-r", dir + "/rules.yaml"};
    args.insert(args.end(), extra.begin(), extra.end());
    ::testing::internal::CaptureStdout();
    const int rc = run(args);
    std::string out = ::testing::internal::GetCapturedStdout();
    EXPECT_EQ(rc, 0);
    return out;
  };
  const std::string first = replay({});
  EXPECT_EQ(replay({}), first) << "a second replay prints the same bytes";
  std::size_t miners = 0, shells = 0;
  std::uint64_t counted = 0;
  std::vector<std::string> starts;
  for (const auto& j : json_lines(first)) {
    if (j["rule"] == "Shell started") {
      ++shells;
      EXPECT_FALSE(j.contains("aggregate"));
      continue;
    }
    if (!j.contains("aggregate")) {
      ++miners;
      EXPECT_EQ(j["output_fields"]["proc.exepath"], "/tmp/.x/xmrig") << "the key's field is in the alert";
      continue;
    }
    const auto& g = j["aggregate"];
    counted += g["count"].get<std::uint64_t>();
    EXPECT_EQ(g["window_s"], 180);
    EXPECT_EQ(g["by"], nlohmann::json::array({"proc.exepath"}));
    EXPECT_NE(std::find(j["tags"].begin(), j["tags"].end(), "aggregated"), j["tags"].end());
    EXPECT_NE(j["output"].get<std::string>().find("(aggregated: "), std::string::npos);
    starts.push_back(g["window_start"].get<std::string>());
  }
  // 60 starts in 600 s with 3-minute windows: one alert at once, then a
  // summary per window (the last at the end of the capture), 59 counted.
  EXPECT_EQ(miners, 1u);
  EXPECT_EQ(shells, 3u);
  EXPECT_EQ(counted, 59u);
  EXPECT_EQ(starts, (std::vector<std::string>{"2026-01-01T00:00:00.000000000Z", "2026-01-01T00:03:00.000000000Z",
                                              "2026-01-01T00:06:00.000000000Z", "2026-01-01T00:09:00.000000000Z"}));
  // An output that does not aggregate: every alert, no summary.
  std::size_t all = 0;
  for (const auto& j : json_lines(replay({"-c", dir + "/every.yaml"}))) {
    EXPECT_FALSE(j.contains("aggregate"));
    ++all;
  }
  EXPECT_EQ(all, 63u);
  fs::remove_all(dir);
}

TEST(CaptureCmd, BadInputExitsTwoAndNamesTheOffset) {
  std::string tmpl = (fs::temp_directory_path() / "vigil-cmd-XXXXXX").string();
  std::string dir = mkdtemp(tmpl.data());
  std::ifstream in(kFixture, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes[bytes.size() - 5] ^= 0x55;  // damage the last block's payload
  std::ofstream(dir + "/bad.vcap", std::ios::binary) << bytes;
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  int rc = run({"replay", dir + "/bad.vcap", "--events"});
  ::testing::internal::GetCapturedStdout();
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, 2);
  EXPECT_NE(err.find("checksum mismatch"), std::string::npos) << err;
  EXPECT_NE(err.find("byte offset"), std::string::npos) << err;
  EXPECT_EQ(run({"replay", dir + "/missing.vcap"}), 2);
  EXPECT_EQ(run({"replay"}), 2);
  EXPECT_EQ(run({"replay", kFixture, "--since", "noon"}), 2);
  EXPECT_EQ(run({"replay", kFixture, "--filter", "proc.name ="}), 2);
  EXPECT_EQ(run({"capture"}), 2);  // -w is required
  EXPECT_EQ(run({"capture", "-w", "x", "--size", "lots"}), 2);
  fs::remove_all(dir);
}

TEST(CaptureCmd, CaptureRejectsBadKubernetesSettingsBeforeRecording) {
  std::string tmpl = (fs::temp_directory_path() / "vigil-cmd-XXXXXX").string();
  std::string dir = mkdtemp(tmpl.data());
  const std::string out = dir + "/never.vcap";
  std::ofstream(dir + "/kubeconfig") << "apiVersion: v1\nkind: Config\ncurrent-context: gone\n";
  std::ofstream(dir + "/bad.yaml") << "k8s: [unclosed\n";
  ::testing::internal::CaptureStderr();
  // The same k8s settings as `vigil run`: a kubeconfig, the k8s: section, -o.
  EXPECT_EQ(run({"capture", "-w", out, "--kubeconfig", dir + "/missing"}), 2);
  EXPECT_EQ(run({"capture", "-w", out, "--kubeconfig", dir + "/kubeconfig"}), 2);
  EXPECT_EQ(run({"capture", "-w", out, "-c", dir + "/bad.yaml"}), 2);
  EXPECT_EQ(run({"capture", "-w", out, "-c", dir + "/missing.yaml"}), 2);
  EXPECT_EQ(run({"capture", "-w", out, "-o", "k8s.api"}), 2);  // not key=value
  EXPECT_EQ(run({"capture", "-w", out, "--k8s-api"}), 2);      // needs a value
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("kubeconfig"), std::string::npos) << err;
  EXPECT_NE(err.find("has no server"), std::string::npos) << err;
  EXPECT_NE(err.find("bad.yaml:"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out));  // nothing was recorded
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vigil::cli
