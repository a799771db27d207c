// Timeline: valid Chrome-trace JSON with pods as processes, processes as
// threads, exec spans, instants for connects/GPU/Xid, and marked alerts.
#include "engine/capture/timeline.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <fstream>
#include <sstream>

#include "tests/engine/capture/sample_records.h"

namespace vigil::capture {
namespace {

using nlohmann::json;

json render(TimelineBuilder& tl) {
  std::stringstream ss;
  EXPECT_TRUE(tl.write(ss));
  return json::parse(ss.str());  // throws (fails the test) on invalid JSON
}

std::vector<json> with(const json& doc, const std::string& ph, const std::string& name_prefix) {
  std::vector<json> out;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == ph && e["name"].get<std::string>().rfind(name_prefix, 0) == 0) out.push_back(e);
  }
  return out;
}

TEST(Timeline, EveryRecordTypeGivesValidJsonWithTracksPerPodAndProcess) {
  TimelineBuilder tl;
  auto recs = testing::sample_records();
  for (const auto& r : recs) tl.add(r);
  event::Event last = std::get<event::Event>(recs[3]);
  event::Alert alert;
  alert.rule = "Terminal shell in GPU pod";
  alert.priority = event::Priority::kCritical;
  alert.time_ns = last.hdr.ts_ns + 1;
  alert.output = "shell \"sh\" \x01 in pod";
  alert.tags = {"inference_shell", "T1059"};
  tl.add_alert(last, alert);
  json doc = render(tl);
  EXPECT_EQ(doc["otherData"]["start_ns"], last.hdr.ts_ns);

  // The sample's processes run in the pod's container: the pod is one trace process.
  auto pods = with(doc, "M", "process_name");
  ASSERT_FALSE(pods.empty());
  EXPECT_EQ(pods[0]["args"]["name"], "pod ml/trainer-0");
  int pod_track = pods[0]["pid"];
  auto threads = with(doc, "M", "thread_name");
  ASSERT_FALSE(threads.empty());
  EXPECT_EQ(threads[0]["tid"], 4242);
  EXPECT_EQ(threads[0]["pid"], pod_track);

  auto spans = with(doc, "X", "/bin/sh");
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0]["tid"], 4242);
  EXPECT_EQ(spans[0]["ts"], 0.0);
  EXPECT_EQ(spans[0]["args"]["cmdline"], "/bin/sh -c id");

  auto connects = with(doc, "i", "connect 203.0.113.9:3333");
  ASSERT_EQ(connects.size(), 1u);
  EXPECT_EQ(connects[0]["args"]["result"], -111);
  EXPECT_EQ(with(doc, "i", "connect /run/containerd/containerd.sock").size(), 1u);
  EXPECT_EQ(with(doc, "i", "open /dev/nvidia0")[0]["cat"], "gpu");
  auto ioctls = with(doc, "i", "ioctl ");
  ASSERT_EQ(ioctls.size(), 1u);
  EXPECT_EQ(ioctls[0]["cat"], "gpu");
  auto xids = with(doc, "i", "Xid 79");
  ASSERT_EQ(xids.size(), 1u);
  EXPECT_EQ(xids[0]["s"], "g");
  EXPECT_EQ(with(doc, "i", "gpu ioctls x").size(), 1u);

  auto alerts = with(doc, "i", "ALERT ");
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0]["cname"], "terrible");
  EXPECT_EQ(alerts[0]["args"]["priority"], "Critical");
  EXPECT_EQ(alerts[0]["args"]["output"], "shell \"sh\" \x01 in pod");
  EXPECT_EQ(alerts[0]["ts"], 0.001);
}

TEST(Timeline, ExecSpansLastUntilTheNextExecOrExit) {
  TimelineBuilder tl;
  constexpr std::uint64_t t0 = 1'700'000'000'000'000'000;
  tl.add(testing::sample_exec(t0, 10, 1, 0, "/bin/bash"));
  tl.add(testing::sample_exec(t0 + 5'000, 10, 1, 0, "/usr/bin/xmrig"));
  event::Event exit;
  exit.hdr.ts_ns = t0 + 12'000;
  exit.hdr.type = event::Type::kExit;
  exit.hdr.pid = 10;
  exit.data = event::ExitData{0, 9};
  tl.add(exit);
  tl.add(testing::sample_exec(t0 + 20'000, 11, 1, 0, "/bin/sleep"));
  json doc = render(tl);
  auto bash = with(doc, "X", "/bin/bash");
  auto xmrig = with(doc, "X", "/usr/bin/xmrig");
  auto sleep = with(doc, "X", "/bin/sleep");
  ASSERT_EQ(bash.size(), 1u);
  ASSERT_EQ(xmrig.size(), 1u);
  ASSERT_EQ(sleep.size(), 1u);
  EXPECT_DOUBLE_EQ(bash[0]["dur"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(xmrig[0]["ts"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(xmrig[0]["dur"].get<double>(), 7.0);
  EXPECT_DOUBLE_EQ(sleep[0]["dur"].get<double>(), 0.0);  // still running at the end
  EXPECT_EQ(with(doc, "i", "exit 0 (signal 9)").size(), 1u);
  EXPECT_EQ(with(doc, "M", "process_name")[0]["args"]["name"], "host");
}

TEST(Timeline, HostileStringsStayValidJsonAndTheEventCountIsBounded) {
  TimelineBuilder tl(TimelineOptions{50});
  for (int i = 0; i < 200; ++i) {
    auto ev = testing::sample_exec(1000 + i, 10 + i, 1, 0, std::string("/bin/\xff\xfe\"\\\n") + "x");
    ev.hdr.comm = std::string("\xc3\x28\x00z", 4);
    tl.add(ev);
  }
  json doc = render(tl);
  EXPECT_LE(doc["traceEvents"].size(), 50u);
  EXPECT_GT(tl.dropped(), 0u);
  EXPECT_EQ(json_quote("a\xe2\x82\xac\xff"), "\"a\xe2\x82\xac\\ufffd\"");
}

// --timeline writes its file like a capture: 0640 whatever the umask, never
// through a link (issue 16, items 8 and 9).
TEST(Timeline, WriteFileIs0640AndRefusesALink) {
  testing::ScratchDir dir;
  TimelineBuilder tl;
  for (int i = 0; i < 3000; ++i) tl.add(testing::sample_exec(1000 + i, 10 + i, 1, 0, "/bin/true"));
  const std::string path = dir.file("t.json");
  const mode_t old = ::umask(0);
  Status written = tl.write_file(path);
  ::umask(old);
  ASSERT_TRUE(written) << written.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  std::ifstream in(path);
  json doc = json::parse(in);  // the whole file, past the stream buffer's 64 KiB
  EXPECT_GE(doc["traceEvents"].size(), 3000u);

  const std::string victim = dir.file("victim.txt"), link = dir.file("link.json");
  std::ofstream(victim) << "precious\n";
  ASSERT_EQ(::symlink("victim.txt", link.c_str()), 0);
  Status refused = tl.write_file(link);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, Error::Kind::kBadInput);
  EXPECT_NE(refused.error().message.find("symbolic link"), std::string::npos) << refused.error().message;
  std::ifstream v(victim);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(v)), std::istreambuf_iterator<char>()), "precious\n");
}

}  // namespace
}  // namespace vigil::capture
