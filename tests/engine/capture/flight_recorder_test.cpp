// Flight recorder: the window before an alert, the time after it, the pod /
// container / process-tree filter, and the bounds on memory and disk.
#include "engine/capture/flight_recorder.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "engine/capture/reader.h"
#include "tests/engine/capture/sample_records.h"

namespace vigil::capture {
namespace {

namespace fs = std::filesystem;
constexpr std::uint64_t kSec = 1'000'000'000;
constexpr std::uint64_t kT0 = 1'700'000'000 * kSec;

class FlightRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "vigil-flight-test-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
  }
  void TearDown() override { fs::remove_all(dir_); }

  FlightRecorderOptions options() {
    FlightRecorderOptions o;
    o.dir = dir_ + "/flight";
    o.window_ns = 10 * kSec;
    o.after_ns = 2 * kSec;
    o.min_priority = event::Priority::kWarning;
    o.info = testing::fixed_info();
    return o;
  }

  // A world of two pods (one container each) and host processes.
  void SetUpWorld() {
    for (int i = 0; i < 2; ++i) {
      state::Pod pod;
      pod.uid = "pod-uid-" + std::to_string(i);
      pod.name = "pod-" + std::to_string(i);
      pod.ns = "ml";
      pods_.push_back(pod);
      state::Container c;
      c.id = std::string(64, static_cast<char>('a' + i));
      c.pod_uid = pod.uid;
      c.cgroup_id = 1000 + i;
      containers_.push_back(c);
    }
  }

  state::Process& proc(std::uint32_t pid, std::uint32_t ppid, int pod) {
    auto& p = procs_[pid];
    p.pid = pid;
    p.ppid = ppid;
    p.comm = "p" + std::to_string(pid);
    if (pod >= 0) {
      p.container_id = containers_[pod].id;
      p.cgroup_id = containers_[pod].cgroup_id;
    }
    return p;
  }

  event::Event ev(std::uint64_t ts, std::uint32_t pid, event::Type type = event::Type::kOpen) {
    event::Event e;
    e.hdr.ts_ns = ts;
    e.hdr.type = type;
    e.hdr.pid = pid;
    const auto& p = procs_.at(pid);
    e.hdr.ppid = p.ppid;
    e.hdr.cgroup_id = p.cgroup_id;
    if (type == event::Type::kOpen) e.data = event::OpenData{"/dev/nvidia0"};
    return e;
  }

  state::EvalContext ctx_for(const event::Event& e) {
    state::EvalContext ctx;
    ctx.ev = &e;
    auto it = procs_.find(e.hdr.pid);
    if (it != procs_.end()) {
      ctx.proc = &it->second;
      for (std::size_t i = 0; i < containers_.size(); ++i) {
        if (containers_[i].id == it->second.container_id) {
          ctx.container = &containers_[i];
          ctx.pod = &pods_[i];
        }
      }
    }
    return ctx;
  }

  void feed(FlightRecorder& fr, const event::Event& e) { fr.on_event(e, ctx_for(e)); }

  event::Alert alert_on(FlightRecorder& fr, const event::Event& e, event::Priority prio = event::Priority::kCritical,
                        std::vector<std::string> tags = {}) {
    event::Alert a;
    a.rule = "Shell in GPU pod";
    a.priority = prio;
    a.tags = std::move(tags);
    a.time_ns = e.hdr.ts_ns;
    fr.on_alert(e, ctx_for(e), a);
    return a;
  }

  static std::string capture_of(const event::Alert& a) {
    for (const auto& [k, v] : a.extra) {
      if (k == "capture") return v;
    }
    return "";
  }

  struct Read {
    std::vector<event::Event> events;
    std::vector<state::Process> procs;
    std::vector<state::Container> containers;
    std::vector<state::Pod> pods;
  };
  static Read read(const std::string& path) {
    Read out;
    auto r = CaptureReader::open(path);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    if (!r) return out;
    Record rec;
    for (;;) {
      auto more = (*r)->next(rec);
      EXPECT_TRUE(more);
      if (!more || !*more) break;
      if (auto* e = std::get_if<event::Event>(&rec.data)) out.events.push_back(*e);
      if (auto* p = std::get_if<state::Process>(&rec.data)) out.procs.push_back(*p);
      if (auto* c = std::get_if<state::Container>(&rec.data)) out.containers.push_back(*c);
      if (auto* p = std::get_if<state::Pod>(&rec.data)) out.pods.push_back(*p);
    }
    return out;
  }

  std::string dir_;
  std::vector<state::Pod> pods_;
  std::vector<state::Container> containers_;
  std::map<std::uint32_t, state::Process> procs_;
};

TEST_F(FlightRecorderTest, WritesTheWindowBeforeAndTheTimeAfterTheAlert) {
  proc(100, 1, -1);
  FlightRecorder fr(options());
  for (int s = 0; s <= 60; ++s) feed(fr, ev(kT0 + s * kSec, 100));
  auto a = alert_on(fr, ev(kT0 + 60 * kSec, 100));
  std::string path = capture_of(a);
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(path.rfind(dir_ + "/flight/vigil-flight-", 0), 0u) << path;
  for (int s = 61; s <= 65; ++s) feed(fr, ev(kT0 + s * kSec, 100));
  fr.finish();
  ASSERT_TRUE(fs::exists(path));
  auto got = read(path);
  ASSERT_FALSE(got.events.empty());
  // 10 s before (t=50..60) and 2 s after (t=61, 62); t=63 closed the capture.
  EXPECT_EQ(got.events.front().hdr.ts_ns, kT0 + 50 * kSec);
  EXPECT_EQ(got.events.back().hdr.ts_ns, kT0 + 62 * kSec);
  EXPECT_EQ(got.events.size(), 13u);
  ASSERT_EQ(got.procs.size(), 1u);
  EXPECT_EQ(got.procs[0].pid, 100u);
  EXPECT_EQ(fr.stats().captures, 1u);
}

TEST_F(FlightRecorderTest, LowerPriorityAlertsGetNoCapture) {
  proc(100, 1, -1);
  FlightRecorder fr(options());
  feed(fr, ev(kT0, 100));
  auto a = alert_on(fr, ev(kT0, 100), event::Priority::kNotice);
  EXPECT_EQ(capture_of(a), "");
  fr.finish();
  EXPECT_EQ(fr.stats().captures, 0u);
}

// Every refusal and every response is recorded, whatever the rule's
// priority; a monitor-mode alert (would_prevent) is not.
TEST_F(FlightRecorderTest, RefusalsAndResponsesAreCapturedAtAnyPriority) {
  proc(100, 1, -1);
  FlightRecorder fr(options());
  feed(fr, ev(kT0, 100));
  auto prevented = alert_on(fr, ev(kT0, 100), event::Priority::kNotice, {"egress", "prevented"});
  auto responded = alert_on(fr, ev(kT0 + kSec, 100), event::Priority::kInformational, {"responded"});
  auto would = alert_on(fr, ev(kT0 + kSec, 100), event::Priority::kNotice, {"would_prevent"});
  EXPECT_NE(capture_of(prevented), "");
  EXPECT_NE(capture_of(responded), "");
  EXPECT_EQ(capture_of(would), "");
  fr.finish();
  EXPECT_TRUE(fs::exists(capture_of(prevented)));
  EXPECT_TRUE(fs::exists(capture_of(responded)));
  EXPECT_EQ(fr.stats().captures, 2u);
}

TEST_F(FlightRecorderTest, KeepsOnlyTheAlertsPod) {
  SetUpWorld();
  proc(200, 1, 0);
  proc(201, 200, 0);
  proc(300, 1, 1);
  proc(400, 1, -1);
  FlightRecorder fr(options());
  for (int s = 0; s < 5; ++s) {
    feed(fr, ev(kT0 + s * kSec, 200));
    feed(fr, ev(kT0 + s * kSec, 201));
    feed(fr, ev(kT0 + s * kSec, 300));
    feed(fr, ev(kT0 + s * kSec, 400));
  }
  event::Event xid;
  xid.hdr.ts_ns = kT0 + 5 * kSec;
  xid.hdr.type = event::Type::kXid;
  xid.data = event::XidData{"kmsg", 0, 4, "0000:3b:00.0", 79};
  fr.on_event(xid, state::EvalContext{});
  auto a = alert_on(fr, ev(kT0 + 5 * kSec, 201));
  fr.finish();
  auto got = read(capture_of(a));
  std::set<std::uint32_t> pids;
  bool saw_xid = false;
  for (const auto& e : got.events) {
    if (e.hdr.type == event::Type::kXid) saw_xid = true;
    else pids.insert(e.hdr.pid);
  }
  EXPECT_EQ(pids, (std::set<std::uint32_t>{200, 201}));
  EXPECT_TRUE(saw_xid);  // GPU faults are node-wide context
  ASSERT_EQ(got.pods.size(), 1u);
  EXPECT_EQ(got.pods[0].uid, "pod-uid-0");
  ASSERT_EQ(got.containers.size(), 1u);
  EXPECT_EQ(got.containers[0].cgroup_id, 1000u);
}

TEST_F(FlightRecorderTest, OutsideContainersKeepsTheProcessTree) {
  // 10 -> 20 (shell) -> 30 (alerting) -> 40 (child, forked after the alert)
  //    -> 21 (a sibling of the shell: not part of the story)
  proc(10, 1, -1);
  proc(20, 10, -1);
  proc(21, 10, -1);
  proc(30, 20, -1);
  proc(40, 30, -1);
  SetUpWorld();
  proc(500, 1, 0);  // a pod process: never in a host capture
  FlightRecorder fr(options());
  for (std::uint32_t pid : {10u, 20u, 21u, 30u, 500u}) feed(fr, ev(kT0 + pid, pid));
  auto trigger = ev(kT0 + 100, 30);
  feed(fr, trigger);
  auto a = alert_on(fr, trigger);
  event::Event fork = ev(kT0 + 200, 30, event::Type::kFork);
  fork.data = event::ForkData{40, 40, false};
  feed(fr, fork);
  feed(fr, ev(kT0 + 300, 40));
  feed(fr, ev(kT0 + 400, 21));
  fr.finish();
  auto got = read(capture_of(a));
  std::multiset<std::uint32_t> pids;
  for (const auto& e : got.events) pids.insert(e.hdr.pid);
  EXPECT_EQ(pids, (std::multiset<std::uint32_t>{10, 20, 30, 30, 30, 40}));
}

TEST_F(FlightRecorderTest, WindowMemoryIsBounded) {
  proc(100, 1, -1);
  auto o = options();
  o.max_bytes = 64 * 1024;
  o.window_ns = 1'000'000 * kSec;
  FlightRecorder fr(o);
  for (int i = 0; i < 20000; ++i) feed(fr, ev(kT0 + i, 100));
  EXPECT_LE(fr.stats().window_bytes, o.max_bytes);
  EXPECT_GT(fr.stats().evicted, 0u);
  auto a = alert_on(fr, ev(kT0 + 20000, 100));
  fr.finish();
  EXPECT_LE(fs::file_size(capture_of(a)), o.max_bytes);
  auto got = read(capture_of(a));
  EXPECT_GT(got.events.size(), 100u);
  EXPECT_EQ(got.events.back().hdr.ts_ns, kT0 + 19999);  // the newest are the ones kept
}

TEST_F(FlightRecorderTest, DiskUseIsBoundedByKeepCount) {
  proc(100, 1, -1);
  auto o = options();
  o.keep = 3;
  o.after_ns = 0;
  FlightRecorder fr(o);
  std::vector<std::string> paths;
  for (int i = 0; i < 6; ++i) {
    feed(fr, ev(kT0 + i * kSec, 100));
    paths.push_back(capture_of(alert_on(fr, ev(kT0 + i * kSec, 100))));
    fr.drain();
  }
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(o.dir)) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 3u);
  EXPECT_FALSE(fs::exists(paths[0]));
  EXPECT_TRUE(fs::exists(paths[5]));
  EXPECT_EQ(fr.stats().removed, 3u);
}

TEST_F(FlightRecorderTest, DiskUseIsBoundedByBytes) {
  proc(100, 1, -1);
  auto o = options();
  o.after_ns = 0;
  o.zstd_level = 0;
  FlightRecorder probe_fr(o);
  for (int i = 0; i < 50; ++i) feed(probe_fr, ev(kT0 + i, 100));
  auto first = capture_of(alert_on(probe_fr, ev(kT0 + 50, 100)));
  probe_fr.finish();
  auto one = fs::file_size(first);
  fs::remove_all(o.dir);

  o.max_disk_bytes = one * 2 + one / 2;  // room for two
  FlightRecorder fr(o);
  for (int i = 0; i < 50; ++i) feed(fr, ev(kT0 + i, 100));
  for (int i = 0; i < 4; ++i) {
    EXPECT_NE(capture_of(alert_on(fr, ev(kT0 + 50, 100))), "");
    fr.drain();
  }
  std::uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(o.dir)) total += entry.file_size();
  EXPECT_LE(total, o.max_disk_bytes);
  EXPECT_GE(total, one * 2);  // the two newest fit and are kept
  EXPECT_EQ(fr.stats().captures, 4u);
  EXPECT_EQ(fr.stats().removed, 2u);
}

TEST_F(FlightRecorderTest, TooManyCapturesAtOnceAreCountedNotQueued) {
  proc(100, 1, -1);
  auto o = options();
  o.max_captures = 2;
  o.after_ns = 100 * kSec;  // nothing completes while we alert
  FlightRecorder fr(o);
  feed(fr, ev(kT0, 100));
  int named = 0;
  for (int i = 0; i < 5; ++i) named += !capture_of(alert_on(fr, ev(kT0, 100))).empty();
  EXPECT_EQ(named, 2);
  EXPECT_EQ(fr.stats().dropped, 3u);
  fr.finish();
  EXPECT_EQ(fr.stats().captures, 2u);
}

// Replay resolves GPU allocations through the node's NVIDIA inventory: every
// capture begins with it (before the pod), and a change announced while a
// capture collects its "after" window lands in order with its events.
TEST_F(FlightRecorderTest, EachCaptureBeginsWithTheNvidiaInventory) {
  SetUpWorld();
  proc(200, 1, 0);
  FlightRecorder fr(options());
  state::StateListener& listener = fr;
  // No inventory known yet: none written.
  feed(fr, ev(kT0, 200));
  auto first = alert_on(fr, ev(kT0, 200));
  listener.on_nvidia(testing::sample_nvidia());
  feed(fr, ev(kT0 + 1 * kSec, 200));
  feed(fr, ev(kT0 + 5 * kSec, 200));  // past the after window: the first capture completes
  auto second = alert_on(fr, ev(kT0 + 5 * kSec, 200));
  state::NvidiaInfo changed = testing::sample_nvidia();
  changed.gpus.pop_back();
  listener.on_nvidia(changed);
  feed(fr, ev(kT0 + 6 * kSec, 200));
  fr.finish();

  auto kinds = [](const std::string& path) {
    std::vector<std::string> out;
    std::vector<state::NvidiaInfo> inv;
    auto r = CaptureReader::open(path);
    EXPECT_TRUE(r);
    if (!r) return std::make_pair(out, inv);
    Record rec;
    for (;;) {
      auto more = (*r)->next(rec);
      EXPECT_TRUE(more);
      if (!more || !*more) break;
      if (auto* n = std::get_if<state::NvidiaInfo>(&rec.data)) {
        out.push_back("nvidia");
        inv.push_back(*n);
      } else if (std::holds_alternative<state::Pod>(rec.data)) {
        out.push_back("pod");
      } else if (std::holds_alternative<event::Event>(rec.data)) {
        out.push_back("event");
      } else {
        out.push_back("state");
      }
    }
    return std::make_pair(out, inv);
  };
  // The first alert came before the inventory was known; it was announced
  // during its after window, so it sits between the events.
  auto [k1, inv1] = kinds(capture_of(first));
  ASSERT_FALSE(k1.empty());
  EXPECT_EQ(k1.front(), "pod");
  ASSERT_EQ(inv1.size(), 1u);
  EXPECT_EQ(inv1[0], testing::sample_nvidia());
  auto at = std::find(k1.begin(), k1.end(), "nvidia") - k1.begin();
  EXPECT_GT(at, 1);
  EXPECT_EQ(k1[static_cast<std::size_t>(at) + 1], "event");

  auto [k2, inv2] = kinds(capture_of(second));
  ASSERT_GE(k2.size(), 3u);
  EXPECT_EQ(k2[0], "nvidia");
  EXPECT_EQ(k2[1], "pod");
  ASSERT_EQ(inv2.size(), 2u);
  EXPECT_EQ(inv2[0], testing::sample_nvidia());
  EXPECT_EQ(inv2[1], changed);
  EXPECT_EQ(k2.back(), "event");
}

// Issue 16, item 8: the recorder writes each capture to NAME.tmp, then renames
// it to NAME. A link planted at NAME.tmp is refused (the capture counts as
// failed); a link at NAME is replaced by the capture. Neither target changes.
TEST_F(FlightRecorderTest, LinksAtTheCaptureNamesAreNotWrittenThrough) {
  proc(100, 1, -1);
  const std::string victim = dir_ + "/victim.txt";
  std::ofstream(victim) << "precious\n";
  ASSERT_TRUE(fs::create_directories(dir_ + "/flight"));
  FlightRecorder fr(options());
  feed(fr, ev(kT0, 100));
  const std::string tmp_linked = capture_of(alert_on(fr, ev(kT0, 100)));
  const std::string final_linked = capture_of(alert_on(fr, ev(kT0, 100)));
  ASSERT_FALSE(tmp_linked.empty());
  ASSERT_FALSE(final_linked.empty());
  fs::create_symlink(victim, tmp_linked + ".tmp");
  fs::create_symlink(victim, final_linked);
  for (int s = 1; s <= 5; ++s) feed(fr, ev(kT0 + s * kSec, 100));
  fr.finish();
  EXPECT_EQ(fr.stats().failed, 1u);
  EXPECT_EQ(fr.stats().captures, 1u);
  EXPECT_FALSE(fs::exists(tmp_linked));
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(final_linked)));
  EXPECT_FALSE(read(final_linked).events.empty());
  std::ifstream in(victim);
  std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, "precious\n");
}

// Issue 16, item 9: under umask 000 the flight directory was created 0777.
TEST_F(FlightRecorderTest, DirectoryIs0700AndCaptures0640UnderUmaskZero) {
  proc(100, 1, -1);
  const mode_t old = ::umask(0);
  std::string path;
  {
    FlightRecorder fr(options());
    feed(fr, ev(kT0, 100));
    path = capture_of(alert_on(fr, ev(kT0, 100)));
    for (int s = 1; s <= 5; ++s) feed(fr, ev(kT0 + s * kSec, 100));
    fr.finish();
  }
  ::umask(old);
  ASSERT_FALSE(path.empty());
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/flight").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

}  // namespace
}  // namespace vigil::capture
