// Sink behaviour with scripted transports: queue bounds and overflow policy,
// filters, rate limit, retries, backoff, fatal errors, spool, isolation.
#include "outputs/sink.h"

#include <gtest/gtest.h>

#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>

#include <filesystem>
#include <sstream>

#include "outputs/router.h"
#include "tests/outputs/fake_transport.h"
#include "tests/outputs/peer_util.h"
#include "tests/outputs/test_alert.h"

namespace vigil::outputs {
namespace {

using namespace std::chrono_literals;
using testing::FakePeer;
using testing::FakeTransport;
using testing::small_alert;

std::shared_ptr<const event::Alert> A(std::string uuid, std::string rule = "r",
                                      event::Priority p = event::Priority::kWarning,
                                      std::vector<std::string> tags = {}) {
  return std::make_shared<const event::Alert>(small_alert(std::move(uuid), std::move(rule), p, std::move(tags)));
}

SinkOptions opts(std::string name = "t") {
  SinkOptions o;
  o.name = std::move(name);
  o.type = "fake";
  o.retry.initial_backoff = 1ms;
  o.retry.max_backoff = 5ms;
  return o;
}

std::string tmpdir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("vigil-sink-test-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

TEST(Sink, DeliversInOrderAndCounts) {
  auto peer = std::make_shared<FakePeer>();
  auto o = opts();
  o.batch.max_events = 7;
  Sink s(o, std::make_unique<FakeTransport>(peer), nullptr);
  s.start();
  for (int i = 0; i < 100; ++i) s.offer(A(std::to_string(i)), 100);
  ASSERT_TRUE(peer->wait_for(100, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(peer->received[i].uuid, std::to_string(i));
  const auto st = s.stats();
  EXPECT_EQ(st.sent, 100u);
  EXPECT_EQ(st.dropped, 0u);
  EXPECT_EQ(st.latency_count, 100u);
  EXPECT_EQ(st.queue_depth, 0u);
}

TEST(Sink, FullQueueDropsNewestByDefault) {
  auto peer = std::make_shared<FakePeer>();
  peer->set_stall(true);
  auto o = opts();
  o.queue_max_events = 3;
  Sink s(o, std::make_unique<FakeTransport>(peer), nullptr);
  s.start();
  s.offer(A("0"), 10);
  // Wait until the worker holds "0" inside the stalled send.
  for (int i = 0; i < 200 && s.stats().queue_depth != 0; ++i) std::this_thread::sleep_for(1ms);
  for (int i = 1; i <= 6; ++i) s.offer(A(std::to_string(i)), 10);
  EXPECT_EQ(s.stats().queue_depth, 3u);
  EXPECT_EQ(s.stats().dropped, 3u);
  peer->set_stall(false);
  ASSERT_TRUE(peer->wait_for(4, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  std::vector<std::string> got;
  for (const auto& m : peer->received) got.push_back(m.uuid);
  EXPECT_EQ(got, (std::vector<std::string>{"0", "1", "2", "3"}));
}

TEST(Sink, DropOldestKeepsTheLatest) {
  auto peer = std::make_shared<FakePeer>();
  peer->set_stall(true);
  auto o = opts();
  o.queue_max_events = 3;
  o.overflow = Overflow::kDropOldest;
  Sink s(o, std::make_unique<FakeTransport>(peer), nullptr);
  s.start();
  s.offer(A("0"), 10);
  for (int i = 0; i < 200 && s.stats().queue_depth != 0; ++i) std::this_thread::sleep_for(1ms);
  for (int i = 1; i <= 6; ++i) s.offer(A(std::to_string(i)), 10);
  EXPECT_EQ(s.stats().dropped, 3u);
  peer->set_stall(false);
  ASSERT_TRUE(peer->wait_for(4, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  std::vector<std::string> got;
  for (const auto& m : peer->received) got.push_back(m.uuid);
  EXPECT_EQ(got, (std::vector<std::string>{"0", "4", "5", "6"}));
}

TEST(Sink, DropOldestMakesRoomByBytes) {
  auto peer = std::make_shared<FakePeer>();
  auto o = opts();
  o.queue_max_bytes = 1000;
  o.overflow = Overflow::kDropOldest;
  Sink s(o, std::make_unique<FakeTransport>(peer), nullptr);
  for (int i = 0; i < 4; ++i) s.offer(A(std::to_string(i)), 300);  // 900 bytes queued
  s.offer(A("big"), 700);                                          // needs three of the old ones gone
  EXPECT_EQ(s.stats().dropped, 3u);
  EXPECT_LE(s.stats().queue_bytes, 1000u);
  s.start();
  ASSERT_TRUE(peer->wait_for(2, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  ASSERT_EQ(peer->received.size(), 2u);
  EXPECT_EQ(peer->received[0].uuid, "3");
  EXPECT_EQ(peer->received[1].uuid, "big");
}

TEST(Sink, QueueIsBoundedInBytes) {
  auto peer = std::make_shared<FakePeer>();
  peer->set_stall(true);
  auto o = opts();
  o.queue_max_bytes = 1000;
  Sink s(o, std::make_unique<FakeTransport>(peer), nullptr);
  s.start();
  s.offer(A("0"), 10);
  for (int i = 0; i < 200 && s.stats().queue_depth != 0; ++i) std::this_thread::sleep_for(1ms);
  for (int i = 1; i <= 5; ++i) s.offer(A(std::to_string(i)), 400);
  EXPECT_EQ(s.stats().queue_depth, 2u);
  EXPECT_LE(s.stats().queue_bytes, 1000u);
  EXPECT_EQ(s.stats().dropped, 3u);
  peer->set_stall(false);
  s.shutdown(std::chrono::steady_clock::now() + 1s);
}

TEST(Sink, OfferNeverBlocksOnAStalledTransport) {
  auto peer = std::make_shared<FakePeer>();
  peer->set_stall(true);
  auto o = opts();
  o.queue_max_events = 100;
  Sink s(o, std::make_unique<FakeTransport>(peer), nullptr);
  s.start();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 10000; ++i) s.offer(A(std::to_string(i)), 10);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_GE(s.stats().dropped, 9800u);
  peer->set_stall(false);
  s.shutdown(std::chrono::steady_clock::now() + 1s);
}

TEST(Sink, FiltersByPriorityRulesAndTags) {
  auto peer = std::make_shared<FakePeer>();
  auto o = opts();
  o.filter.min_priority = event::Priority::kError;
  o.filter.rules_exclude = {"noisy"};
  o.filter.tags_include = {"crypto_mining", "egress"};
  o.filter.tags_exclude = {"test"};
  Sink s(o, std::make_unique<FakeTransport>(peer), nullptr);
  s.start();
  s.offer(A("1", "r", event::Priority::kCritical, {"crypto_mining"}), 10);    // pass
  s.offer(A("2", "r", event::Priority::kWarning, {"crypto_mining"}), 10);     // priority
  s.offer(A("3", "noisy", event::Priority::kCritical, {"egress"}), 10);       // rule
  s.offer(A("4", "r", event::Priority::kCritical, {"tamper"}), 10);           // tag not included
  s.offer(A("5", "r", event::Priority::kEmergency, {"egress", "test"}), 10);  // tag excluded
  s.offer(A("6", "r", event::Priority::kError, {"egress"}), 10);              // pass
  ASSERT_TRUE(peer->wait_for(2, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  ASSERT_EQ(peer->received.size(), 2u);
  EXPECT_EQ(peer->received[0].uuid, "1");
  EXPECT_EQ(peer->received[1].uuid, "6");
  EXPECT_EQ(s.stats().filtered, 4u);
}

TEST(Sink, RulesIncludeKeepsOnlyNamedRules) {
  FilterOptions fo;
  fo.rules_include = {"a"};
  Filter f(fo);
  EXPECT_EQ(f.check(small_alert("1", "a"), std::chrono::steady_clock::now()), Filter::Verdict::kPass);
  EXPECT_EQ(f.check(small_alert("1", "b"), std::chrono::steady_clock::now()), Filter::Verdict::kFiltered);
}

// docs/outputs.md, "Aggregation": an output that aggregates (the default)
// takes summaries and not repeats; one with `aggregate: false` the other way
// round. Neither counts the other form as filtered.
TEST(Filter, AggregatingOutputsTakeSummariesAndTheOthersTakeRepeats) {
  event::Alert plain = small_alert("1"), repeat = small_alert("2"), summary = small_alert("3");
  repeat.repeat = true;
  summary.aggregate = event::AlertAggregate{};
  const auto now = std::chrono::steady_clock::now();
  Filter aggregating{FilterOptions{}};
  EXPECT_EQ(aggregating.check(plain, now), Filter::Verdict::kPass);
  EXPECT_EQ(aggregating.check(repeat, now), Filter::Verdict::kOtherForm);
  EXPECT_EQ(aggregating.check(summary, now), Filter::Verdict::kPass);
  FilterOptions fo;
  fo.aggregate = false;
  Filter every(fo);
  EXPECT_EQ(every.check(plain, now), Filter::Verdict::kPass);
  EXPECT_EQ(every.check(repeat, now), Filter::Verdict::kPass);
  EXPECT_EQ(every.check(summary, now), Filter::Verdict::kOtherForm);

  auto peer = std::make_shared<FakePeer>();
  auto o = opts();
  o.filter.aggregate = false;
  Sink s(o, std::make_unique<FakeTransport>(peer), nullptr);
  s.start();
  s.offer(std::make_shared<const event::Alert>(plain), 10);
  s.offer(std::make_shared<const event::Alert>(summary), 10);
  s.offer(std::make_shared<const event::Alert>(repeat), 10);
  ASSERT_TRUE(peer->wait_for(2, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  ASSERT_EQ(peer->received.size(), 2u);
  EXPECT_EQ(peer->received[0].uuid, "1");
  EXPECT_EQ(peer->received[1].uuid, "2");
  EXPECT_EQ(s.stats().filtered, 0u);
}

TEST(Filter, TokenBucketLimitsAndRefills) {
  FilterOptions fo;
  fo.rate_per_s = 10;
  fo.burst = 5;
  Filter f(fo);
  const auto t0 = std::chrono::steady_clock::now();
  int pass = 0;
  for (int i = 0; i < 20; ++i) pass += f.check(small_alert("x"), t0) == Filter::Verdict::kPass;
  EXPECT_EQ(pass, 5);  // the burst
  // 300 ms later 3 tokens are back.
  pass = 0;
  for (int i = 0; i < 20; ++i) {
    pass += f.check(small_alert("x"), t0 + 300ms) == Filter::Verdict::kPass;
  }
  EXPECT_EQ(pass, 3);
}

TEST(Sink, RateLimitReportsSuppressedCount) {
  auto peer = std::make_shared<FakePeer>();
  auto o = opts();
  o.filter.rate_per_s = 1;
  o.filter.burst = 2;
  Sink s(o, std::make_unique<FakeTransport>(peer), nullptr);
  s.start();
  for (int i = 0; i < 10; ++i) s.offer(A(std::to_string(i)), 10);
  ASSERT_TRUE(peer->wait_for(2, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  EXPECT_EQ(s.stats().sent, 2u);
  EXPECT_EQ(s.stats().rate_limited, 8u);
}

TEST(Sink, RetriesTransientErrorsThenDelivers) {
  auto peer = std::make_shared<FakePeer>();
  peer->script = {SendResult::retry("503"), SendResult::retry("503")};
  Sink s(opts(), std::make_unique<FakeTransport>(peer), nullptr);
  s.start();
  s.offer(A("1"), 10);
  ASSERT_TRUE(peer->wait_for(1, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  EXPECT_EQ(s.stats().retried, 2u);
  EXPECT_EQ(s.stats().sent, 1u);
  EXPECT_EQ(s.stats().failed, 0u);
}

TEST(Sink, GivesUpAfterMaxAttempts) {
  auto peer = std::make_shared<FakePeer>();
  peer->set_down(true);
  auto o = opts();
  o.retry.max_attempts = 3;
  Sink s(o, std::make_unique<FakeTransport>(peer), nullptr);
  s.start();
  s.offer(A("1"), 10);
  for (int i = 0; i < 1000 && s.stats().failed == 0; ++i) std::this_thread::sleep_for(1ms);
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  EXPECT_EQ(s.stats().failed, 1u);
  EXPECT_EQ(s.stats().retried, 3u);
  EXPECT_EQ(peer->calls, 3);
}

TEST(Sink, FatalIsNotRetried) {
  auto peer = std::make_shared<FakePeer>();
  peer->script = {SendResult::fatal("400")};
  Sink s(opts(), std::make_unique<FakeTransport>(peer), nullptr);
  s.start();
  s.offer(A("1"), 10);
  s.offer(A("2"), 10);
  ASSERT_TRUE(peer->wait_for(1, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  EXPECT_EQ(s.stats().failed, 1u);
  EXPECT_EQ(s.stats().sent, 1u);
  EXPECT_EQ(peer->received[0].uuid, "2");
}

TEST(Sink, FatalForOneMessageKeepsTheRestOfTheBatch) {
  auto peer = std::make_shared<FakePeer>();
  peer->script = {SendResult::fatal("too large", 1, 1)};  // #0 delivered, #1 rejected
  auto o = opts();
  o.batch.max_events = 10;
  Sink s(o, std::make_unique<FakeTransport>(peer), nullptr);
  for (int i = 0; i < 4; ++i) s.offer(A(std::to_string(i)), 10);  // queued before start: one batch
  s.start();
  ASSERT_TRUE(peer->wait_for(3, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  std::vector<std::string> got;
  for (const auto& m : peer->received) got.push_back(m.uuid);
  EXPECT_EQ(got, (std::vector<std::string>{"0", "2", "3"}));
  EXPECT_EQ(s.stats().failed, 1u);
  EXPECT_EQ(s.stats().sent, 3u);
}

TEST(Sink, PartialDeliveryIsNotResent) {
  auto peer = std::make_shared<FakePeer>();
  peer->set_stall(true);
  SendResult partial = SendResult::retry("conn reset", 2);
  peer->script = {partial};
  auto o = opts();
  o.batch.max_events = 10;
  Sink s(o, std::make_unique<FakeTransport>(peer), nullptr);
  s.start();
  for (int i = 0; i < 5; ++i) s.offer(A(std::to_string(i)), 10);
  peer->set_stall(false);
  ASSERT_TRUE(peer->wait_for(5, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  std::vector<std::string> got;
  for (const auto& m : peer->received) got.push_back(m.uuid);
  // The first send may have taken 1..5 alerts; in any case none twice, all in order.
  EXPECT_EQ(got, (std::vector<std::string>{"0", "1", "2", "3", "4"}));
  EXPECT_EQ(s.stats().sent, 5u);
}

TEST(Sink, HonoursRetryAfter) {
  auto peer = std::make_shared<FakePeer>();
  SendResult r = SendResult::retry("429");
  r.retry_after = 300ms;
  peer->script = {r};
  Sink s(opts(), std::make_unique<FakeTransport>(peer), nullptr);
  s.start();
  const auto t0 = std::chrono::steady_clock::now();
  s.offer(A("1"), 10);
  ASSERT_TRUE(peer->wait_for(1, 5s));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);
  s.shutdown(std::chrono::steady_clock::now() + 1s);
}

TEST(Sink, SpoolsWhileDownAndDeliversInOrderWhenBack) {
  const std::string dir = tmpdir("spool");
  auto peer = std::make_shared<FakePeer>();
  peer->set_down(true);
  auto o = opts();
  o.batch.max_events = 4;
  auto spool = Spool::open(dir, 1 << 20);
  ASSERT_TRUE(spool);
  Sink s(o, std::make_unique<FakeTransport>(peer), nullptr, std::move(*spool));
  s.start();
  for (int i = 0; i < 50; ++i) s.offer(A(std::to_string(i)), 10);
  for (int i = 0; i < 2000 && s.stats().spool_depth < 50; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(s.stats().spooled, 50u);
  EXPECT_EQ(s.stats().spool_depth, 50u);
  peer->set_down(false);
  ASSERT_TRUE(peer->wait_for(50, 10s));
  for (int i = 50; i < 60; ++i) s.offer(A(std::to_string(i)), 10);
  ASSERT_TRUE(peer->wait_for(60, 10s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  for (int i = 0; i < 60; ++i) EXPECT_EQ(peer->received[i].uuid, std::to_string(i));
  EXPECT_EQ(s.stats().sent, 60u);
  EXPECT_EQ(s.stats().spool_depth, 0u);
  std::filesystem::remove_all(dir);
}

// With a spool, every queued alert is in the log at once, even while the
// only send in flight is stalled: the memory queue is not where they wait.
TEST(Sink, SpoolLogsEveryAlertWhileASendIsStalled) {
  const std::string dir = tmpdir("wal");
  auto peer = std::make_shared<FakePeer>();
  peer->set_stall(true);
  auto o = opts();
  o.spool.sync_interval = 0ms;
  auto spool = Spool::open(dir, 1 << 20);
  ASSERT_TRUE(spool);
  Sink s(o, std::make_unique<FakeTransport>(peer), nullptr, std::move(*spool));
  s.start();
  for (int i = 0; i < 30; ++i) s.offer(A(std::to_string(i)), 10);
  ASSERT_TRUE(testing::wait_until([&] { return s.stats().spooled == 30; }, 5s));
  EXPECT_EQ(s.stats().queue_depth, 0u);
  EXPECT_EQ(s.stats().spool_depth, 30u);  // the stalled one included: not yet committed
  {
    auto copy = Spool::open(dir, 1 << 20);  // what a restart would find now
    ASSERT_TRUE(copy);
    EXPECT_EQ((*copy)->count(), 30u);
  }
  peer->set_stall(false);
  ASSERT_TRUE(peer->wait_for(30, 5s));
  ASSERT_TRUE(testing::wait_until([&] { return s.stats().spool_depth == 0; }, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(peer->received[i].uuid, std::to_string(i));
  EXPECT_EQ(s.stats().sent, 30u);
  EXPECT_EQ(s.stats().drops_total(), 0u);
  std::filesystem::remove_all(dir);
}

TEST(Sink, SpoolSurvivesRestart) {
  const std::string dir = tmpdir("restart");
  {
    auto peer = std::make_shared<FakePeer>();
    peer->set_down(true);
    auto spool = Spool::open(dir, 1 << 20);
    ASSERT_TRUE(spool);
    Sink s(opts(), std::make_unique<FakeTransport>(peer), nullptr, std::move(*spool));
    s.start();
    for (int i = 0; i < 20; ++i) s.offer(A(std::to_string(i)), 10);
    s.shutdown(std::chrono::steady_clock::now() + 200ms);
    EXPECT_EQ(s.stats().sent, 0u);
    EXPECT_EQ(s.stats().spool_depth, 20u);
  }
  auto peer = std::make_shared<FakePeer>();
  auto spool = Spool::open(dir, 1 << 20);
  ASSERT_TRUE(spool);
  EXPECT_EQ((*spool)->count(), 20u);
  Sink s(opts(), std::make_unique<FakeTransport>(peer), nullptr, std::move(*spool));
  s.start();
  s.offer(A("20"), 10);
  ASSERT_TRUE(peer->wait_for(21, 10s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  for (int i = 0; i <= 20; ++i) EXPECT_EQ(peer->received[i].uuid, std::to_string(i));
  std::filesystem::remove_all(dir);
}

TEST(Sink, FullSpoolDropsAndCounts) {
  const std::string dir = tmpdir("full");
  auto peer = std::make_shared<FakePeer>();
  peer->set_down(true);
  auto spool = Spool::open(dir, 4096);
  ASSERT_TRUE(spool);
  Sink s(opts(), std::make_unique<FakeTransport>(peer), nullptr, std::move(*spool));
  s.start();
  for (int i = 0; i < 100; ++i) s.offer(A(std::to_string(i)), 10);
  for (int i = 0; i < 2000 && s.stats().spooled + s.stats().dropped < 100; ++i) std::this_thread::sleep_for(1ms);
  const auto st = s.stats();
  EXPECT_EQ(st.spooled + st.dropped, 100u);
  EXPECT_GT(st.dropped, 0u);
  EXPECT_LE(st.spool_bytes, 4096u);
  s.shutdown(std::chrono::steady_clock::now() + 100ms);
  std::filesystem::remove_all(dir);
}

TEST(Router, AStalledSinkDelaysNoOtherSink) {
  auto slow = std::make_shared<FakePeer>();
  auto fast = std::make_shared<FakePeer>();
  slow->set_stall(true);
  std::vector<std::unique_ptr<Sink>> sinks;
  sinks.push_back(std::make_unique<Sink>(opts("slow"), std::make_unique<FakeTransport>(slow), nullptr));
  sinks.push_back(std::make_unique<Sink>(opts("fast"), std::make_unique<FakeTransport>(fast), nullptr));
  Router r(std::move(sinks), testing::router_options("h"));
  // The slow sink stalls until released, so were the fast one behind it, it would get
  // nothing at all; no tight time bound is needed to tell.
  for (int i = 0; i < 50; ++i) r.publish(A(std::to_string(i)));
  ASSERT_TRUE(fast->wait_for(50, 10s)) << "the fast sink got " << r.stats()[1].sent;
  EXPECT_EQ(r.stats()[0].sent, 0u);
  slow->set_stall(false);
  r.shutdown(1s);
  const auto st = r.stats();
  EXPECT_EQ(st[1].sent, 50u);
  EXPECT_EQ(st[0].sent, 50u);
}

TEST(Router, FillsInHostname) {
  auto peer = std::make_shared<FakePeer>();
  std::vector<std::unique_ptr<Sink>> sinks;
  sinks.push_back(std::make_unique<Sink>(opts(), std::make_unique<FakeTransport>(peer), nullptr));
  Router r(std::move(sinks), testing::router_options("gpu-node-7"));
  auto a = small_alert("1");
  a.hostname.clear();
  r.publish(std::make_shared<const event::Alert>(a));
  ASSERT_TRUE(peer->wait_for(1, 5s));
  r.shutdown(1s);
  EXPECT_EQ(peer->received[0].hostname, "gpu-node-7");
}

// A logger that writes "level message" lines into `out`.
std::shared_ptr<spdlog::logger> string_logger(std::ostringstream& out) {
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  sink->set_pattern("%l %v");
  return std::make_shared<spdlog::logger>("test", sink);
}

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

TEST(Sink, DropsAreLoggedRateLimitedWithTheCountSinceTheLastLine) {
  auto peer = std::make_shared<FakePeer>();
  peer->set_stall(true);
  auto o = opts("w");
  o.queue_max_events = 1;
  o.drop_log_interval = 300ms;
  std::ostringstream out;
  Sink s(o, std::make_unique<FakeTransport>(peer), string_logger(out));
  s.start();
  s.offer(A("0"), 10);
  for (int i = 0; i < 200 && s.stats().queue_depth != 0; ++i) std::this_thread::sleep_for(1ms);
  s.offer(A("1"), 10);                                             // queued
  for (int i = 2; i < 12; ++i) s.offer(A(std::to_string(i)), 10);  // 10 dropped
  // The first drop is logged at once; the 9 after it wait for the interval.
  EXPECT_EQ(count_of(out.str(), "alerts dropped"), 1u) << out.str();
  EXPECT_NE(out.str().find("warning output w: 1 alerts dropped (queue_full=1); 1 dropped since start"),
            std::string::npos)
      << out.str();
  std::this_thread::sleep_for(350ms);
  s.offer(A("12"), 10);  // the interval has passed: this drop logs the 10 since the last line
  EXPECT_NE(out.str().find("output w: 10 alerts dropped (queue_full=10); 11 dropped since start"), std::string::npos)
      << out.str();
  s.offer(A("13"), 10);
  EXPECT_EQ(count_of(out.str(), "alerts dropped"), 2u) << out.str();
  peer->set_stall(false);
  ASSERT_TRUE(peer->wait_for(2, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  // Shutdown reports what the rate limit held back.
  EXPECT_NE(out.str().find("output w: 1 alerts dropped (queue_full=1); 12 dropped since start"), std::string::npos)
      << out.str();
  const auto st = s.stats();
  EXPECT_EQ(st.drops[static_cast<std::size_t>(DropReason::kQueueFull)], 12u);
  EXPECT_EQ(st.drops_total(), 12u);
  EXPECT_EQ(st.sent + st.drops_total(), 14u);
}

TEST(Sink, EveryLossHasOneReasonAndFailedPlusDroppedIsTheTotal) {
  auto peer = std::make_shared<FakePeer>();
  peer->set_down(true);
  auto o = opts();
  o.retry.max_attempts = 2;
  o.batch.max_events = 4;
  Sink s(o, std::make_unique<FakeTransport>(peer), nullptr);
  s.start();
  for (int i = 0; i < 8; ++i) s.offer(A(std::to_string(i)), 10);
  ASSERT_TRUE(testing::wait_until([&] { return s.stats().failed == 8; }, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 100ms);
  s.offer(A("late"), 10);
  const auto st = s.stats();
  EXPECT_EQ(st.drops[static_cast<std::size_t>(DropReason::kRetriesExhausted)], 8u);
  EXPECT_EQ(st.drops[static_cast<std::size_t>(DropReason::kShutdown)], 1u);
  EXPECT_EQ(st.failed, 8u);
  EXPECT_EQ(st.dropped, 1u);
  EXPECT_EQ(st.drops_total(), 9u);
  EXPECT_EQ(st.describe_drops(), "retries_exhausted=8 shutdown=1");
}

TEST(Router, ShutdownCountsWhatCouldNotBeSent) {
  auto peer = std::make_shared<FakePeer>();
  peer->set_down(true);
  auto o = opts();
  o.retry.max_attempts = 1000;
  o.retry.initial_backoff = 50ms;
  std::vector<std::unique_ptr<Sink>> sinks;
  sinks.push_back(std::make_unique<Sink>(o, std::make_unique<FakeTransport>(peer), nullptr));
  Router r(std::move(sinks), RouterOptions{});
  for (int i = 0; i < 5; ++i) r.publish(A(std::to_string(i)));
  const auto t0 = std::chrono::steady_clock::now();
  r.shutdown(200ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  const auto st = r.stats()[0];
  EXPECT_EQ(st.sent, 0u);
  EXPECT_EQ(st.failed + st.dropped, 5u);
  EXPECT_EQ(r.drops_total(), 5u);
  r.publish(A("late"));
  EXPECT_EQ(r.stats()[0].dropped, st.dropped + 1);
  EXPECT_EQ(r.drops_total(), 6u);
  EXPECT_NE(r.describe_drops().find("t/shutdown="), std::string::npos) << r.describe_drops();
}

}  // namespace
}  // namespace vigil::outputs
