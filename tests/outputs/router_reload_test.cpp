// Router::prepare/commit (issue 14, "Reload and configuration"): an unchanged
// sink is carried over with its queue, file and counters; a changed one is
// replaced once the old one has drained; an error changes nothing; alerts
// published across a commit are delivered exactly once; the counters of
// removed sinks stay in the totals.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "outputs/router.h"
#include "tests/outputs/test_alert.h"
#include "tests/support/temp_dir.h"

namespace vigil::outputs {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// uuid -> how many times it is in the JSON lines of `paths`.
std::map<std::string, int> uuids_in(const std::vector<std::string>& paths) {
  std::map<std::string, int> seen;
  for (const auto& p : paths) {
    for (const auto& l : lines_of(p)) ++seen[nlohmann::json::parse(l)["uuid"].get<std::string>()];
  }
  return seen;
}

std::shared_ptr<const event::Alert> alert(int i) {
  return std::make_shared<const event::Alert>(testing::small_alert(std::to_string(i)));
}

std::unique_ptr<Router> router(const std::string& yaml, RouterOptions o) {
  auto r = Router::from_config(YAML::Load(yaml), o);
  EXPECT_TRUE(r) << r.error().message;
  return r ? std::move(*r) : nullptr;
}

void reload(Router& r, const std::string& yaml, Router::Plan* seen = nullptr) {
  auto plan = r.prepare(YAML::Load(yaml));
  ASSERT_TRUE(plan) << plan.error().message;
  if (seen) {
    seen->kept = (*plan)->kept;
    seen->added = (*plan)->added;
    seen->replaced = (*plan)->replaced;
    seen->removed = (*plan)->removed;
  }
  ASSERT_TRUE(r.commit(std::move(*plan)));
}

class RouterReloadTest : public ::testing::Test {
 protected:
  support::TempDir dir_{"vigil-router-reload"};
  RouterOptions opts() const { return testing::router_options("h", dir_.path() + "/state"); }
  std::string file(const std::string& name) const { return dir_.path() + "/" + name; }
};

TEST_F(RouterReloadTest, AnUnchangedSinkIsTheSameSinkAndAChangedOneIsReplaced) {
  auto r =
      router("[{type: file, path: '" + file("a.json") + "'}, {type: file, path: '" + file("b.json") + "'}]", opts());
  ASSERT_TRUE(r);
  for (int i = 0; i < 3; ++i) r->publish(alert(i));
  // Both sinks have written (so a.json is open) before a.json is moved away.
  for (int i = 0; i < 200 && (r->stats()[0].sent < 3 || r->stats()[1].sent < 3); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  std::filesystem::rename(file("a.json"), file("a-moved.json"));
  Router::Plan what;
  // file-0: the same entry written differently (key order, quoting); file-1: a new format.
  reload(*r,
         "[{path: \"" + file("a.json") +
             "\", type: file}, "
             "{type: file, format: text, path: '" +
             file("b.json") + "'}]",
         &what);
  EXPECT_EQ(what.kept, std::vector<std::string>{"file-0"});
  EXPECT_EQ(what.replaced, std::vector<std::string>{"file-1"});
  EXPECT_TRUE(what.added.empty());
  EXPECT_TRUE(what.removed.empty());
  for (int i = 3; i < 5; ++i) r->publish(alert(i));
  r->shutdown(2s);
  // The carried sink still writes through the file it opened (a new sink
  // would have made a new a.json), and its counter went on.
  EXPECT_EQ(lines_of(file("a-moved.json")).size(), 5u);
  EXPECT_FALSE(std::filesystem::exists(file("a.json")));
  const auto st = r->stats();
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].sent, 5u);
  // The replaced sink's counters carry the old one's: 3 + 2.
  EXPECT_EQ(st[1].sent, 5u);
  const auto b = lines_of(file("b.json"));
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[0].front(), '{');  // json before the reload
  EXPECT_NE(b[4].front(), '{');  // text after it
}

TEST_F(RouterReloadTest, AnErrorChangesNothing) {
  auto r = router("[{type: file, path: '" + file("a.json") + "'}]", opts());
  ASSERT_TRUE(r);
  for (const std::string& bad : std::vector<std::string>{
           "[{type: file, path: '" + file("a.json") + "', colour: red}]", "[{type: carrier_pigeon}]",
           "[{type: file, path: '" + file("no/such/dir/b.json") + "'}]", "{type: stdout}"}) {
    auto plan = r->prepare(YAML::Load(bad));
    EXPECT_FALSE(plan) << bad;
  }
  r->publish(alert(1));
  r->shutdown(2s);
  EXPECT_EQ(lines_of(file("a.json")).size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(file("no/such/dir/b.json")));
}

TEST_F(RouterReloadTest, APlanMadeBeforeTheLastCommitIsRefused) {
  auto r = router("[{type: file, path: '" + file("a.json") + "'}]", opts());
  ASSERT_TRUE(r);
  auto p1 = r->prepare(YAML::Load("[{type: file, path: '" + file("b.json") + "'}]"));
  auto p2 = r->prepare(YAML::Load("[{type: file, path: '" + file("c.json") + "'}]"));
  ASSERT_TRUE(p1 && p2);
  EXPECT_TRUE(r->commit(std::move(*p1)));
  EXPECT_FALSE(r->commit(std::move(*p2)));
  r->publish(alert(1));
  r->shutdown(2s);
  EXPECT_EQ(lines_of(file("b.json")).size(), 1u);
  EXPECT_EQ(lines_of(file("c.json")).size(), 0u);
}

// Alerts published without pause while the outputs change: every alert is
// in exactly one file (the old sinks drain before they stop, the new ones
// take what comes after the commit), and a changed sink writing the same
// file starts after the old one finished, so nothing interleaves.
TEST_F(RouterReloadTest, AlertsAcrossReloadsAreDeliveredExactlyOnce) {
  const std::string q = ", queue: {max_events: 1000000}";
  const std::vector<std::string> configs = {
      "[{type: file, path: '" + file("one.json") + "'" + q + "}]",
      "[{type: file, path: '" + file("two.json") + "'" + q + "}]",
      "[{type: file, path: '" + file("two.json") + "', batch: {max_events: 7}" + q + "}]",
      "[{type: file, name: renamed, path: '" + file("three.json") + "'" + q + "}]",
  };
  auto r = router(configs[0], opts());
  ASSERT_TRUE(r);
  constexpr int kAlerts = 20000;
  std::atomic<int> published{0};
  std::atomic<int> reloaded{0};
  std::thread pub([&] {
    for (int i = 0; i < kAlerts; ++i) {
      // Reload c starts once c/5 of the alerts are out and runs while they
      // keep coming; on a loaded machine the publisher could otherwise pass
      // the last reload altogether, so it waits for reload c at
      // c/5 + 1/10 of the alerts.
      for (int c = 1; c < static_cast<int>(configs.size()); ++c)
        if (i == c * kAlerts / 5 + kAlerts / 10)
          while (reloaded.load() < c) std::this_thread::yield();
      r->publish(alert(i));
      published = i + 1;
      if (i % 100 == 0) std::this_thread::yield();
    }
  });
  for (std::size_t c = 1; c < configs.size(); ++c) {
    while (published.load() < static_cast<int>(c) * kAlerts / 5) std::this_thread::yield();
    reload(*r, configs[c]);
    reloaded = static_cast<int>(c);
  }
  pub.join();
  r->shutdown(5s);
  const auto seen = uuids_in({file("one.json"), file("two.json"), file("three.json")});
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kAlerts));
  int dup = 0;
  for (const auto& [u, n] : seen) dup += n != 1;
  EXPECT_EQ(dup, 0);
  EXPECT_EQ(r->drops_total(), 0u) << r->describe_drops();
  EXPECT_FALSE(lines_of(file("one.json")).empty());
  EXPECT_FALSE(lines_of(file("three.json")).empty());
  // two.json: the alerts of file-0 then those of its replacement, each run in order.
  std::vector<int> two;
  for (const auto& l : lines_of(file("two.json"))) {
    two.push_back(std::stoi(nlohmann::json::parse(l)["uuid"].get<std::string>()));
  }
  EXPECT_TRUE(std::is_sorted(two.begin(), two.end()));
}

// A changed sink with a spool takes over the spool of the one it replaces
// once that one has stopped: what was spooled stays on disk and is the new
// sink's to deliver.
TEST_F(RouterReloadTest, AReplacedSinkTakesOverTheSpool) {
  RouterOptions o = opts();
  o.retire_deadline = 200ms;
  // Nothing listens on port 1: every send fails, the alerts stay spooled.
  const std::string hook = "{type: webhook, url: 'http://127.0.0.1:1/', spool: true";
  auto r = router("[" + hook + ", retry: {initial_backoff_ms: 50}}]", o);
  ASSERT_TRUE(r);
  for (int i = 0; i < 10; ++i) r->publish(alert(i));
  for (int i = 0; i < 200 && r->stats()[0].spool_depth < 10; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(r->stats()[0].spool_depth, 10u);
  Router::Plan what;
  reload(*r, "[" + hook + ", retry: {initial_backoff_ms: 60}}]", &what);
  EXPECT_EQ(what.replaced, std::vector<std::string>{"webhook-0"});
  r->publish(alert(10));
  std::uint64_t depth = 0;
  for (int i = 0; i < 300 && depth < 11; ++i) {
    depth = r->stats()[0].spool_depth;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(depth, 11u);
  r->shutdown(100ms);
  EXPECT_EQ(r->drops_total(), 0u) << r->describe_drops();
}

// A removed sink's losses stay in drops_total() and describe_drops().
TEST_F(RouterReloadTest, ARemovedSinksDropsStayCounted) {
  RouterOptions o = opts();
  o.retire_deadline = 200ms;
  auto r = router("[{type: file, path: '" + file("a.json") +
                      "'}, {type: webhook, url: 'http://127.0.0.1:1/', "
                      "retry: {max_attempts: 1}}]",
                  o);
  ASSERT_TRUE(r);
  for (int i = 0; i < 5; ++i) r->publish(alert(i));
  for (int i = 0; i < 300 && r->drops_total() < 5; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(r->drops_total(), 5u);
  Router::Plan what;
  reload(*r, "[{type: file, path: '" + file("a.json") + "'}]", &what);
  EXPECT_EQ(what.removed, std::vector<std::string>{"webhook-1"});
  EXPECT_EQ(r->stats().size(), 1u);
  EXPECT_EQ(r->drops_total(), 5u);
  r->shutdown(1s);
  EXPECT_EQ(r->drops_total(), 5u);
  EXPECT_NE(r->describe_drops().find("webhook-1/retries_exhausted=5"), std::string::npos) << r->describe_drops();
}

// A changed sink waits for the one it replaces; removed before it even
// started (two reloads in quick succession), it still starts, drains and
// stops in order, and nothing it was given is lost.
TEST_F(RouterReloadTest, ASinkStillWaitingForItsPredecessorCanBeRemoved) {
  RouterOptions o = opts();
  o.retire_deadline = 300ms;
  const std::string hook = "{type: webhook, url: 'http://127.0.0.1:1/', spool: true";
  auto r = router("[" + hook + ", retry: {initial_backoff_ms: 50}}]", o);
  ASSERT_TRUE(r);
  for (int i = 0; i < 5; ++i) r->publish(alert(i));
  reload(*r, "[" + hook + ", retry: {initial_backoff_ms: 60}}]");  // webhook-0 replaced: waits ~300 ms
  r->publish(alert(5));
  Router::Plan what;
  reload(*r, "[{type: file, path: '" + file("a.json") + "'}]", &what);
  EXPECT_EQ(what.removed, std::vector<std::string>{"webhook-0"});
  r->publish(alert(6));
  r->shutdown(1s);
  EXPECT_EQ(lines_of(file("a.json")).size(), 1u);
  EXPECT_EQ(r->drops_total(), 0u) << r->describe_drops();
  // Everything the webhook sinks took is in their spool for the next run.
  auto spool = Spool::open(dir_.path() + "/state/spool/webhook-0", 1 << 20);
  ASSERT_TRUE(spool) << spool.error().message;
  EXPECT_EQ((*spool)->count(), 6u);
}

}  // namespace
}  // namespace vigil::outputs
