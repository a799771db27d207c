// Kafka delivery against librdkafka's mock cluster (real Kafka protocol,
// in-process brokers), read back by kcat as an independent consumer:
// keys, headers, acks, a broker outage mid-stream with spooling (every alert
// exactly once after de-duplication by uuid, in order per key), and latency
// next to a stalled webhook.
#include "outputs/kafka_transport.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include "outputs/router.h"
#include "outputs/webhook_transport.h"
#include "tests/outputs/http_server.h"
#include "tests/outputs/peer_util.h"
#include "tests/outputs/test_alert.h"

namespace vigil::outputs {
namespace {

using namespace std::chrono_literals;

class MockCluster {
 public:
  explicit MockCluster(int brokers, const std::string& topic, int partitions) {
    char err[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "0", err, sizeof(err));
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    mc_ = rd_kafka_mock_cluster_new(rk_, brokers);
    rd_kafka_mock_topic_create(mc_, topic.c_str(), partitions, std::min(brokers, 3));
    brokers_ = brokers;
  }
  ~MockCluster() {
    rd_kafka_mock_cluster_destroy(mc_);
    rd_kafka_destroy(rk_);
  }
  std::string bootstraps() const { return rd_kafka_mock_cluster_bootstraps(mc_); }
  void all_down() {
    for (int b = 1; b <= brokers_; ++b) rd_kafka_mock_broker_set_down(mc_, b);
  }
  void all_up() {
    for (int b = 1; b <= brokers_; ++b) rd_kafka_mock_broker_set_up(mc_, b);
  }

 private:
  rd_kafka_t* rk_;
  rd_kafka_mock_cluster_t* mc_;
  int brokers_;
};

struct Consumed {
  std::string key, headers, value;
  int partition;
};

// kcat reads the whole topic from the beginning and exits at its end.
std::vector<Consumed> kcat_consume(const std::string& brokers, const std::string& topic) {
  const std::string kcat = testing::find_program("kcat");
  const std::string out = testing::temp_dir("kcat") + "/out";
  testing::Child c({kcat, "-b", brokers, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f",
                    "%p\x1f%k\x1f%h\x1f%s\x1e", "-X", "log_level=0"},
                   out);
  c.wait(30s);
  std::vector<Consumed> res;
  const std::string data = testing::slurp(out);
  std::size_t start = 0;
  while (start < data.size()) {
    const auto end = data.find('\x1e', start);
    if (end == std::string::npos) break;
    const std::string rec = data.substr(start, end - start);
    start = end + 1;
    std::vector<std::string> parts;
    std::size_t s = 0;
    for (int i = 0; i < 3; ++i) {
      const auto e = rec.find('\x1f', s);
      parts.push_back(rec.substr(s, e - s));
      s = e + 1;
    }
    parts.push_back(rec.substr(s));
    res.push_back({parts[1], parts[2], parts[3], std::stoi(parts[0])});
  }
  return res;
}

class Kafka : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testing::find_program("kcat").empty()) GTEST_SKIP() << "kcat is not installed";
  }
};

std::shared_ptr<const event::Alert> A(int i, const std::string& rule = "r", const std::string& host = "node-a") {
  auto a = testing::small_alert(std::to_string(i), rule, event::Priority::kCritical);
  a.hostname = host;
  return std::make_shared<const event::Alert>(a);
}

TEST_F(Kafka, DeliversWithKeysAndHeadersReadByKcat) {
  MockCluster mc(3, "vigil-alerts", 4);
  const std::string cfg = "[{type: kafka, brokers: '" + mc.bootstraps() +
                          "', topic: vigil-alerts, key: rule, compression: lz4, format: json}]";
  auto r = Router::from_config(YAML::Load(cfg), testing::router_options("h"));
  ASSERT_TRUE(r) << r.error().message;
  for (int i = 0; i < 30; ++i) (*r)->publish(A(i, "rule-" + std::to_string(i % 3)));
  (*r)->shutdown(10s);
  EXPECT_EQ((*r)->stats()[0].sent, 30u);
  const auto got = kcat_consume(mc.bootstraps(), "vigil-alerts");
  ASSERT_EQ(got.size(), 30u);
  std::map<std::string, std::vector<int>> per_key;
  for (const auto& m : got) {
    const auto j = nlohmann::json::parse(m.value);
    EXPECT_EQ(m.key, j["rule"]);
    EXPECT_NE(m.headers.find("rule=" + m.key), std::string::npos) << m.headers;
    EXPECT_NE(m.headers.find("priority=Critical"), std::string::npos);
    EXPECT_NE(m.headers.find("hostname=node-a"), std::string::npos);
    per_key[m.key].push_back(std::stoi(j["uuid"].get<std::string>()));
  }
  for (const auto& [k, v] : per_key) {
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end())) << k;
    EXPECT_EQ(v.size(), 10u);
  }
}

TEST_F(Kafka, BrokersDownMidStreamThenBackLosesNothing) {
  MockCluster mc(3, "faults", 3);
  const std::string dir = testing::temp_dir("kafka-spool");
  const std::string cfg = "[{type: kafka, brokers: '" + mc.bootstraps() +
                          "', topic: faults, key: hostname, batch_timeout_ms: 500, batch: {max_events: 20},"
                          " retry: {initial_backoff_ms: 50, max_backoff_ms: 200}, spool: true}]";
  auto r = Router::from_config(YAML::Load(cfg), testing::router_options("h", dir));
  ASSERT_TRUE(r) << r.error().message;
  const std::vector<std::string> hosts = {"node-a", "node-b", "node-c"};
  int n = 0;
  for (; n < 100; ++n) (*r)->publish(A(n, "r", hosts[n % 3]));
  ASSERT_TRUE(testing::wait_until([&] { return (*r)->stats()[0].sent == 100; }, 10s));
  mc.all_down();
  for (; n < 200; ++n) {
    (*r)->publish(A(n, "r", hosts[n % 3]));
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(testing::wait_until([&] { return (*r)->stats()[0].spooled > 0; }, 10s));
  mc.all_up();
  for (; n < 300; ++n) (*r)->publish(A(n, "r", hosts[n % 3]));
  ASSERT_TRUE(testing::wait_until(
      [&] {
        const auto s = (*r)->stats()[0];
        return s.spool_depth == 0 && s.queue_depth == 0 && s.sent >= 300;
      },
      60s));
  (*r)->shutdown(10s);
  const auto st = (*r)->stats()[0];
  EXPECT_EQ(st.failed, 0u);
  EXPECT_EQ(st.dropped, 0u);
  EXPECT_GT(st.retried, 0u);

  const auto got = kcat_consume(mc.bootstraps(), "faults");
  std::set<std::string> seen;
  std::map<std::string, std::vector<int>> per_key;
  for (const auto& m : got) {
    const std::string uuid = nlohmann::json::parse(m.value)["uuid"];
    if (!seen.insert(uuid).second) continue;  // de-duplicate by uuid
    per_key[m.key].push_back(std::stoi(uuid));
  }
  EXPECT_EQ(seen.size(), 300u);  // every alert, exactly once after de-duplication
  for (const auto& [k, v] : per_key) {
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end())) << "order broken for key " << k;
  }
  std::filesystem::remove_all(dir);
}

TEST_F(Kafka, StalledWebhookDoesNotDelayKafka) {
  // The webhook answers nothing for 30 s. Were Kafka queued behind it, not one of the alerts
  // below could reach Kafka before that; the bound is a fraction of it, so a slow CI machine
  // still tells the two apart.
  MockCluster mc(1, "fast", 1);
  testing::HttpServer server;
  server.set_default({testing::HttpAnswer::kStall});
  const std::string cfg = "[{type: webhook, url: '" + server.url() + "', timeout_ms: 30000}, {type: kafka, brokers: '" +
                          mc.bootstraps() + "', topic: fast}]";
  auto r = Router::from_config(YAML::Load(cfg), testing::router_options("h"));
  ASSERT_TRUE(r) << r.error().message;
  for (int i = 0; i < 20; ++i) {
    (*r)->publish(A(i));
    std::this_thread::sleep_for(10ms);  // one by one, as a live node sends them
  }
  EXPECT_TRUE(testing::wait_until([&] { return (*r)->stats()[1].sent == 20; }, 10s))
      << "Kafka acknowledged " << (*r)->stats()[1].sent << " of 20 alerts";
  EXPECT_EQ((*r)->stats()[0].sent, 0u) << "the stalled webhook cannot have delivered";
  server.set_default({});
  (*r)->shutdown(2s);
}

TEST(KafkaTransport, UnreachableBrokersAreRetry) {
  KafkaOptions o;
  o.brokers = "127.0.0.1:" + std::to_string(testing::free_port());
  o.topic = "t";
  o.batch_timeout = 300ms;
  auto t = KafkaTransport::create(o);
  ASSERT_TRUE(t) << t.error().message;
  std::vector<Message> b(3);
  for (auto& m : b) m.body = "x";
  const SendResult r = (*t)->send(b);
  EXPECT_EQ(r.code, SendCode::kRetry);
  EXPECT_EQ(r.delivered, 0u);
  EXPECT_EQ((*t)->delivery_failed(), 3u);
  EXPECT_EQ(r.error_class, ErrorClass::kTimeout);
}

TEST(KafkaTransport, ShutdownDoesNotWaitForTheBatchTimeout) {
  const std::string cfg = "[{type: kafka, brokers: '127.0.0.1:" + std::to_string(testing::free_port()) +
                          "', topic: t, batch_timeout_ms: 30000}]";
  auto r = Router::from_config(YAML::Load(cfg), testing::router_options("h"));
  ASSERT_TRUE(r) << r.error().message;
  for (int i = 0; i < 3; ++i) (*r)->publish(A(i));
  std::this_thread::sleep_for(100ms);
  const auto t0 = std::chrono::steady_clock::now();
  (*r)->shutdown(300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  const auto st = (*r)->stats()[0];
  EXPECT_EQ(st.sent, 0u);
  EXPECT_EQ(st.failed + st.dropped, 3u);  // counted, not silently lost
}

}  // namespace
}  // namespace vigil::outputs
