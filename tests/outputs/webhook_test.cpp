// Webhook delivery against a local HTTP(S) server: headers and batching,
// retries on 500, 429 Retry-After, dropped and stalled connections, spooling
// with nothing lost, TLS with a private CA and mutual TLS, and that a stalled
// webhook delays no other sink.
#include "outputs/webhook_transport.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>

#include <set>
#include <sstream>

#include "outputs/router.h"
#include "tests/outputs/http_server.h"
#include "tests/outputs/test_alert.h"

namespace vigil::outputs {
namespace {

using namespace std::chrono_literals;
using testing::HttpAnswer;
using testing::HttpServer;

std::shared_ptr<const event::Alert> A(int i) {
  return std::make_shared<const event::Alert>(testing::small_alert(std::to_string(i)));
}

SinkOptions webhook_sink(const std::string& name = "webhook") {
  SinkOptions o;
  o.name = name;
  o.type = "webhook";
  o.retry.initial_backoff = 10ms;
  o.retry.max_backoff = 50ms;
  return o;
}

std::unique_ptr<Transport> transport(WebhookOptions w, bool json = true) {
  auto t = WebhookTransport::create(std::move(w), json);
  EXPECT_TRUE(t) << (t ? "" : t.error().message);
  return std::move(*t);
}

std::vector<std::string> uuids(HttpServer& s) {
  std::vector<std::string> out;
  for (const auto& r : s.requests()) {
    if (!r.body.empty() && r.body[0] == '[') {
      for (const auto& j : nlohmann::json::parse(r.body)) out.push_back(j["uuid"]);
    } else {
      for (const auto& line : testing::split_lines(r.body)) {
        out.push_back(nlohmann::json::parse(line)["uuid"]);
      }
    }
  }
  return out;
}

std::vector<std::string> seq(int from, int to) {
  std::vector<std::string> v;
  for (int i = from; i < to; ++i) v.push_back(std::to_string(i));
  return v;
}

TEST(Webhook, PostsJsonWithHeadersAndBearerToken) {
  HttpServer server;
  WebhookOptions w;
  w.url = server.url();
  w.bearer_token = "tok-123";
  w.headers = {{"X-Tenant", "gpu-fleet"}};
  Sink s(webhook_sink(), transport(w), nullptr);
  s.start();
  s.offer(A(1), 100);
  ASSERT_TRUE(server.wait_requests(1, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  const auto r = server.requests()[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, "/alerts");
  EXPECT_EQ(r.headers.at("authorization"), "Bearer tok-123");
  EXPECT_EQ(r.headers.at("x-tenant"), "gpu-fleet");
  EXPECT_EQ(r.headers.at("content-type"), "application/json");
  EXPECT_EQ(nlohmann::json::parse(r.body)["uuid"], "1");
}

TEST(Webhook, BatchesAsJsonArrayAndNdjson) {
  for (auto mode : {WebhookBatch::kArray, WebhookBatch::kNdjson}) {
    HttpServer server;
    WebhookOptions w;
    w.url = server.url();
    w.batch = mode;
    auto o = webhook_sink();
    o.batch.max_events = 10;
    o.batch.max_delay = 200ms;
    Sink s(o, transport(w), nullptr);
    s.start();
    for (int i = 0; i < 25; ++i) s.offer(A(i), 100);
    s.shutdown(std::chrono::steady_clock::now() + 5s);
    EXPECT_EQ(uuids(server), seq(0, 25));
    EXPECT_LE(server.requests().size(), 4u);
    EXPECT_EQ(server.requests()[0].headers.at("content-type"),
              mode == WebhookBatch::kArray ? "application/json" : "application/x-ndjson");
  }
}

TEST(Webhook, RetriesServerErrorsAndDroppedConnections) {
  HttpServer server;
  server.script({{HttpAnswer::kStatus, 500}, {HttpAnswer::kDrop}, {HttpAnswer::kStatus, 502}});
  WebhookOptions w;
  w.url = server.url();
  Sink s(webhook_sink(), transport(w), nullptr);
  s.start();
  s.offer(A(7), 100);
  ASSERT_TRUE(server.wait_requests(1, 10s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  EXPECT_EQ(server.attempts(), 4);
  EXPECT_GE(s.stats().retried, 2u);  // curl itself may retry a request on a dropped reused connection
  EXPECT_EQ(s.stats().sent, 1u);
  EXPECT_EQ(uuids(server), seq(7, 8));
  EXPECT_EQ(s.stats().errors[static_cast<std::size_t>(ErrorClass::kHttpServer)], 2u);  // 500, 502
}

TEST(Webhook, Honours429RetryAfter) {
  HttpServer server;
  server.script({{HttpAnswer::kStatus, 429, "1"}});
  WebhookOptions w;
  w.url = server.url();
  Sink s(webhook_sink(), transport(w), nullptr);
  s.start();
  const auto t0 = std::chrono::steady_clock::now();
  s.offer(A(1), 100);
  ASSERT_TRUE(server.wait_requests(1, 10s));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1s);  // not the 10 ms backoff
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  EXPECT_EQ(s.stats().errors[static_cast<std::size_t>(ErrorClass::kThrottled)], 1u);
}

TEST(Webhook, ParsesRetryAfter) {
  const auto now = std::chrono::system_clock::from_time_t(1700000000);
  EXPECT_EQ(parse_retry_after("7", now), 7s);
  EXPECT_EQ(parse_retry_after("99999999999", now), std::chrono::hours(1));
  EXPECT_EQ(parse_retry_after("Tue, 14 Nov 2023 22:13:50 GMT", now), 30s);
  EXPECT_EQ(parse_retry_after("garbage", now), 0ms);
}

TEST(Webhook, ClientErrorsAreNotRetried) {
  HttpServer server;
  server.script({{HttpAnswer::kStatus, 400}});
  WebhookOptions w;
  w.url = server.url();
  Sink s(webhook_sink(), transport(w), nullptr);
  s.start();
  s.offer(A(1), 100);
  s.offer(A(2), 100);
  ASSERT_TRUE(server.wait_requests(1, 5s));
  s.shutdown(std::chrono::steady_clock::now() + 1s);
  EXPECT_EQ(s.stats().failed, 1u);
  EXPECT_EQ(s.stats().errors[static_cast<std::size_t>(ErrorClass::kHttpClient)], 1u);
  EXPECT_EQ(uuids(server), seq(2, 3));
}

TEST(Webhook, ErrorsNameTheEndpointButNotItsSecretPath) {
  HttpServer server;
  server.script({{HttpAnswer::kStatus, 403}});
  WebhookOptions w;
  w.url = server.url("/services/T000/B000/s3cr3t?token=abc");
  auto t = transport(w);
  std::vector<Message> batch(1);
  batch[0].body = "{}";
  SendResult r = t->send(batch);
  EXPECT_EQ(r.code, SendCode::kFatal);
  const std::string origin = server.url("");
  EXPECT_NE(r.error.find("POST " + origin + ": HTTP 403"), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find("s3cr3t"), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find("abc"), std::string::npos) << r.error;
  // The request itself goes to the whole URL (the next one is answered 200 and recorded).
  EXPECT_EQ(t->send(batch).code, SendCode::kOk);
  ASSERT_TRUE(server.wait_requests(1, 5s));
  EXPECT_EQ(server.requests()[0].path, "/services/T000/B000/s3cr3t?token=abc");
}

TEST(Webhook, StalledServerTimesOutAndSpoolLosesNothing) {
  HttpServer server;
  const std::string dir = testing::temp_dir("webhook-spool");
  WebhookOptions w;
  w.url = server.url();
  w.timeout = 300ms;
  w.batch = WebhookBatch::kNdjson;
  auto o = webhook_sink();
  o.batch.max_events = 5;
  auto spool = Spool::open(dir, 1 << 20);
  ASSERT_TRUE(spool);
  Sink s(o, transport(w), nullptr, std::move(*spool));
  s.start();
  for (int i = 0; i < 10; ++i) s.offer(A(i), 100);
  ASSERT_TRUE(server.wait_requests(1, 5s));
  server.set_default({HttpAnswer::kStall});
  for (int i = 10; i < 40; ++i) {
    s.offer(A(i), 100);
    std::this_thread::sleep_for(5ms);
  }
  // The stalled request times out; its alert stays in the spool.
  ASSERT_TRUE(
      testing::wait_until([&] { return s.stats().errors[static_cast<std::size_t>(ErrorClass::kTimeout)] > 0; }, 5s));
  server.set_default({HttpAnswer::kDrop});
  for (int i = 40; i < 60; ++i) s.offer(A(i), 100);
  std::this_thread::sleep_for(300ms);
  server.set_default({});  // back
  ASSERT_TRUE(testing::wait_until([&] { return s.stats().spool_depth == 0 && s.stats().queue_depth == 0; }, 15s));
  s.shutdown(std::chrono::steady_clock::now() + 2s);
  // Every alert arrived; after de-duplication by uuid, in order.
  std::vector<std::string> got = uuids(server);
  std::vector<std::string> dedup;
  std::set<std::string> seen;
  for (const auto& u : got) {
    if (seen.insert(u).second) dedup.push_back(u);
  }
  EXPECT_EQ(dedup, seq(0, 60));
  EXPECT_GT(s.stats().retried, 0u);
  EXPECT_GT(s.stats().errors[static_cast<std::size_t>(ErrorClass::kTimeout)], 0u);  // the stall
  std::filesystem::remove_all(dir);
}

TEST(Webhook, SpoolSurvivesRestartThroughRouter) {
  const std::string dir = testing::temp_dir("webhook-restart");
  HttpServer server;
  server.set_default({HttpAnswer::kStatus, 503});
  const std::string cfg = "[{type: webhook, url: '" + server.url() +
                          "', retry: {initial_backoff_ms: 10, max_backoff_ms: 50}, spool: true}]";
  {
    auto r = Router::from_config(YAML::Load(cfg), testing::router_options("h", dir));
    ASSERT_TRUE(r) << r.error().message;
    for (int i = 0; i < 5; ++i) (*r)->publish(A(i));
    (*r)->shutdown(300ms);
    EXPECT_EQ((*r)->stats()[0].spool_depth, 5u);
  }
  server.set_default({});
  auto r = Router::from_config(YAML::Load(cfg), testing::router_options("h", dir));
  ASSERT_TRUE(r);
  (*r)->publish(A(5));
  ASSERT_TRUE(server.wait_requests(6, 10s));
  (*r)->shutdown(1s);
  EXPECT_EQ(uuids(server), seq(0, 6));
  std::filesystem::remove_all(dir);
}

// The issue's case: a webhook with a 50-alert queue, no spool, and a server
// that is down (503) while 201 alerts are published, then back. Every alert
// is either delivered or counted under one reason, and the warning says so.
TEST(Webhook, DownServerDropsAreCountedByReasonAndAddUp) {
  HttpServer server;
  server.set_default({HttpAnswer::kStatus, 503});
  const std::string cfg = "[{type: webhook, url: '" + server.url() + "', queue: {max_events: 50}," +
                          " retry: {max_attempts: 3, initial_backoff_ms: 5, max_backoff_ms: 20}}]";
  std::ostringstream log_text;
  auto log_sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_text);
  log_sink->set_pattern("%l %v");
  auto opts = testing::router_options("h");
  opts.log = std::make_shared<spdlog::logger>("test", log_sink);
  auto r = Router::from_config(YAML::Load(cfg), opts);
  ASSERT_TRUE(r) << r.error().message;
  for (int i = 0; i < 201; ++i) (*r)->publish(A(i));
  ASSERT_TRUE(testing::wait_until([&] { return (*r)->stats()[0].failed > 0; }, 10s));
  server.set_default({});  // back
  ASSERT_TRUE(testing::wait_until([&] { return (*r)->stats()[0].queue_depth == 0; }, 20s));
  (*r)->shutdown(2s);
  const SinkStats st = (*r)->stats()[0];
  const std::vector<std::string> got = uuids(server);
  const std::set<std::string> distinct(got.begin(), got.end());
  EXPECT_EQ(got.size(), distinct.size());
  EXPECT_EQ(st.sent, got.size());
  const auto queue_full = st.drops[static_cast<std::size_t>(DropReason::kQueueFull)];
  const auto exhausted = st.drops[static_cast<std::size_t>(DropReason::kRetriesExhausted)];
  EXPECT_GE(queue_full, 100u);  // 201 published at once into a queue of 50
  EXPECT_GT(exhausted, 0u);
  EXPECT_EQ(queue_full + exhausted, st.drops_total()) << st.describe_drops();
  EXPECT_EQ(st.sent + st.drops_total(), 201u) << "sent " << st.sent << ", " << st.describe_drops();
  EXPECT_EQ((*r)->drops_total(), 201u - got.size());
  EXPECT_EQ((*r)->describe_drops(), st.name + "/queue_full=" + std::to_string(queue_full) + " " + st.name +
                                        "/retries_exhausted=" + std::to_string(exhausted));
  // The first drop was logged at once; the rest by the line at shutdown.
  const std::string text = log_text.str();
  EXPECT_NE(text.find("warning output " + st.name + ": 1 alerts dropped (queue_full=1)"), std::string::npos) << text;
  EXPECT_NE(text.find(std::to_string(st.drops_total()) + " dropped since start"), std::string::npos) << text;
}

// The issue's case: a webhook that answers 200 after 0.5 s, 200 alerts
// published, then vigil killed with SIGKILL while most of them wait. The
// spool is a write-ahead log, so after a restart every alert arrives; the
// only duplicates are requests the server took but whose answer the killed
// process never read (at most one per request in flight: one here).
TEST(Webhook, KillNineLosesNoAlertOfASlowSink) {
  const std::string dir = testing::temp_dir("webhook-kill9");
  HttpServer server;
  server.set_delay(500ms);
  const std::string cfg = "[{type: webhook, url: '" + server.url() + "', spool: true}]";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the vigil that is killed: publishes 200 alerts and waits
    auto r = Router::from_config(YAML::Load(cfg), testing::router_options("h", dir));
    if (!r) _exit(3);
    for (int i = 0; i < 200; ++i) (*r)->publish(A(i));
    const char c = 'p';
    (void)!write(ready[1], &c, 1);
    for (;;) pause();
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1) << "the child did not start its router";
  ::close(ready[0]);
  ASSERT_TRUE(server.wait_requests(3, 10s));  // ~1.5 s later, three delivered
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  const std::size_t before = uuids(server).size();
  EXPECT_LT(before, 10u);  // most alerts were still waiting when it died

  server.set_delay(0ms);
  auto r = Router::from_config(YAML::Load(cfg), testing::router_options("h", dir));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_GE((*r)->stats()[0].spool_depth, 200u - before);
  ASSERT_TRUE(testing::wait_until(
      [&] {
        const auto got = uuids(server);
        return std::set<std::string>(got.begin(), got.end()).size() >= 200;
      },
      30s));
  (*r)->shutdown(2s);
  const std::vector<std::string> got = uuids(server);
  const std::set<std::string> distinct(got.begin(), got.end());
  const std::vector<std::string> want = seq(0, 200);
  EXPECT_EQ(distinct, std::set<std::string>(want.begin(), want.end()));
  const std::size_t duplicates = got.size() - distinct.size();
  EXPECT_LE(duplicates, 1u) << got.size() << " requests for 200 alerts";
  EXPECT_EQ((*r)->drops_total(), 0u) << (*r)->describe_drops();
  std::filesystem::remove_all(dir);
}

class WebhookTls : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::temp_dir("pki");
    if (!testing::make_test_pki(dir_)) GTEST_SKIP() << "openssl could not make a test CA";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(WebhookTls, HttpsWithPrivateCa) {
  testing::block_sigpipe_in_this_thread();  // as on a sink's worker
  HttpServer server(dir_ + "/server.crt", dir_ + "/server.key");
  WebhookOptions w;
  w.url = server.url();
  w.ca_file = dir_ + "/ca.crt";
  std::vector<Message> b(1);
  b[0].body = R"({"uuid":"tls"})";
  EXPECT_EQ(transport(w)->send(b).code, SendCode::kOk);
  // Without the CA the server is not trusted: a retryable failure, nothing sent.
  WebhookOptions untrusted;
  untrusted.url = server.url();
  untrusted.ca_file = dir_ + "/client.crt";  // a certificate that is not the CA
  const SendResult r = transport(untrusted)->send(b);
  EXPECT_EQ(r.code, SendCode::kRetry);
  EXPECT_EQ(r.error_class, ErrorClass::kTls);
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST_F(WebhookTls, MutualTls) {
  testing::block_sigpipe_in_this_thread();  // as on a sink's worker
  HttpServer server(dir_ + "/server.crt", dir_ + "/server.key", dir_ + "/ca.crt");
  std::vector<Message> b(1);
  b[0].body = R"({"uuid":"mtls"})";
  WebhookOptions no_cert;
  no_cert.url = server.url();
  no_cert.ca_file = dir_ + "/ca.crt";
  no_cert.timeout = 2s;
  EXPECT_NE(transport(no_cert)->send(b).code, SendCode::kOk);
  WebhookOptions w = no_cert;
  w.cert_file = dir_ + "/client.crt";
  w.key_file = dir_ + "/client.key";
  EXPECT_EQ(transport(w)->send(b).code, SendCode::kOk);
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].body, R"({"uuid":"mtls"})");
}

TEST(Webhook, StalledWebhookDelaysNoOtherSink) {
  HttpServer server;
  server.set_default({HttpAnswer::kStall});
  int pipefd[2];
  ASSERT_EQ(pipe2(pipefd, O_CLOEXEC), 0);
  WebhookOptions w;
  w.url = server.url();
  w.timeout = 5s;
  std::vector<std::unique_ptr<Sink>> sinks;
  sinks.push_back(std::make_unique<Sink>(webhook_sink(), transport(w), nullptr));
  SinkOptions so;
  so.name = "stdout";
  so.type = "stdout";
  sinks.push_back(std::make_unique<Sink>(so, std::make_unique<FdTransport>(pipefd[1]), nullptr));
  Router r(std::move(sinks), testing::router_options("h"));
  std::string buf;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    r.publish(A(i));
    // Read one line from the stdout sink within 100 ms.
    bool got = false;
    while (!got && std::chrono::steady_clock::now() - t0 < 100ms) {
      pollfd p{pipefd[0], POLLIN, 0};
      if (::poll(&p, 1, 5) == 1) {
        char c[4096];
        const ssize_t n = ::read(pipefd[0], c, sizeof(c));
        if (n > 0) buf.append(c, static_cast<std::size_t>(n));
      }
      got = std::count(buf.begin(), buf.end(), '\n') == i + 1;
    }
    EXPECT_TRUE(got) << "alert " << i << " not on stdout within 100 ms";
  }
  server.set_default({});
  r.shutdown(200ms);
  ::close(pipefd[0]);
  ::close(pipefd[1]);
}

TEST(Webhook, ShutdownInterruptsAStalledRequestAtTheDeadline) {
  HttpServer server;
  server.set_default({HttpAnswer::kStall});
  const std::string dir = testing::temp_dir("webhook-deadline");
  const std::string cfg = "[{type: webhook, url: '" + server.url() + "', timeout_ms: 30000, spool: true}]";
  auto r = Router::from_config(YAML::Load(cfg), testing::router_options("h", dir));
  ASSERT_TRUE(r) << r.error().message;
  (*r)->publish(A(1));
  (*r)->publish(A(2));
  ASSERT_TRUE(testing::wait_until([&] { return server.attempts() == 1; }, 5s));
  const auto t0 = std::chrono::steady_clock::now();
  (*r)->shutdown(300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);  // not the 30 s request timeout
  const auto st = (*r)->stats()[0];
  EXPECT_EQ(st.spool_depth, 2u);  // the stalled alert and the queued one wait on disk
  server.set_default({});
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vigil::outputs
