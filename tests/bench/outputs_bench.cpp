// Outputs benchmark: alerts/s through each formatter and each sink (on
// loopback peers started here), and publish-to-delivery latency p50/p99 for
// stdout and Kafka at 1000 alerts/s. Figures go to docs/performance.md
// ("Outputs").
//
//   build-*/bench/outputs_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <fcntl.h>

#include <algorithm>
#include <mutex>

#include "outputs/router.h"
#include "outputs/webhook_transport.h"
#include "tests/outputs/http_server.h"
#include "tests/outputs/test_alert.h"
#ifdef VIGIL_WITH_KAFKA
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "outputs/kafka_transport.h"
#endif

namespace vigil::outputs {
namespace {

using namespace std::chrono_literals;

constexpr int kAlerts = 20000;

std::shared_ptr<const event::Alert> make_alert(int i) {
  auto a = testing::golden_alert();
  a.uuid = std::to_string(i);
  return std::make_shared<const event::Alert>(std::move(a));
}

void BM_Format(benchmark::State& state) {
  const auto f = static_cast<Format>(state.range(0));
  const auto a = testing::golden_alert();
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string s = format_alert(f, a);
    bytes += s.size();
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.SetLabel(std::string(format_name(f)));
}
BENCHMARK(BM_Format)->DenseRange(0, 3);

SinkOptions sink_opts(const std::string& type, std::size_t batch) {
  SinkOptions o;
  o.name = type;
  o.type = type;
  o.queue_max_events = kAlerts * 2;
  o.queue_max_bytes = 1ULL << 32;
  o.batch.max_events = batch;
  return o;
}

// Publishes kAlerts and waits until the sink has delivered them all.
// With `spool_dir`, through a fresh write-ahead log there each time.
void run_sink(benchmark::State& state, const std::function<std::unique_ptr<Transport>()>& make, SinkOptions o,
              const std::string& spool_dir = "") {
  std::vector<std::shared_ptr<const event::Alert>> alerts;
  for (int i = 0; i < kAlerts; ++i) alerts.push_back(make_alert(i));
  std::uint64_t sent = 0;
  for (auto _ : state) {
    std::unique_ptr<Spool> spool;
    if (!spool_dir.empty()) {
      std::filesystem::remove_all(spool_dir);
      spool = Spool::open(spool_dir, 1ULL << 30).value();
    }
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(std::make_unique<Sink>(o, make(), nullptr, std::move(spool)));
    Router r(std::move(sinks), testing::router_options("h"));
    for (const auto& a : alerts) r.publish(a);
    r.shutdown(120s);
    sent += r.stats()[0].sent;
    if (r.stats()[0].sent != kAlerts) state.SkipWithError("not everything was delivered");
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(sent));
}

void BM_SinkStdoutDevNull(benchmark::State& state) {
  const int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  run_sink(
      state, [fd] { return std::make_unique<FdTransport>(fd); }, sink_opts("stdout", 64));
  ::close(fd);
}
BENCHMARK(BM_SinkStdoutDevNull)->Unit(benchmark::kMillisecond)->UseRealTime();

// The cost of the write-ahead log: the same sink to /dev/null, alerts kept in
// memory only (arg 0) or first appended to a spool with the default batched
// fdatasync (arg 1). docs/performance.md ("Outputs") gives the ratio.
void BM_SinkDevNullMemoryVsWal(benchmark::State& state) {
  const bool wal = state.range(0) == 1;
  const std::string dir = testing::temp_dir("bench-wal");
  const int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  run_sink(
      state, [fd] { return std::make_unique<FdTransport>(fd); }, sink_opts("stdout", 64), wal ? dir + "/spool" : "");
  ::close(fd);
  std::filesystem::remove_all(dir);
  state.SetLabel(wal ? "write-ahead log" : "memory queue");
}
BENCHMARK(BM_SinkDevNullMemoryVsWal)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SinkFile(benchmark::State& state) {
  const std::string dir = testing::temp_dir("bench-file");
  run_sink(
      state,
      [&] {
        FileOptions f;
        f.path = dir + "/alerts.json";
        f.rotate_bytes = 64ULL << 20;
        return std::unique_ptr<Transport>(FileTransport::open(f).value());
      },
      sink_opts("file", 256));
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_SinkFile)->Unit(benchmark::kMillisecond)->UseRealTime();

// Drains a TCP port so the syslog sink measures its own cost.
class Drain {
 public:
  Drain() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
    ::listen(fd_, 8);
    socklen_t len = sizeof(sa);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    t_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        char buf[65536];
        while (::read(c, buf, sizeof(buf)) > 0) {}
        ::close(c);
      }
    });
  }
  ~Drain() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    t_.join();
  }
  std::uint16_t port() const { return port_; }

 private:
  int fd_;
  std::uint16_t port_;
  std::thread t_;
};

void BM_SinkSyslogTcp(benchmark::State& state) {
  Drain drain;
  run_sink(
      state,
      [&] {
        SyslogOptions s;
        (void)parse_syslog_address("tcp://127.0.0.1:" + std::to_string(drain.port()), s);
        return std::unique_ptr<Transport>(SyslogTransport::create(s).value());
      },
      sink_opts("syslog", 64));
}
BENCHMARK(BM_SinkSyslogTcp)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SinkWebhook(benchmark::State& state) {
  const auto mode = static_cast<WebhookBatch>(state.range(0));
  testing::HttpServer server;
  run_sink(
      state,
      [&] {
        WebhookOptions w;
        w.url = server.url();
        w.batch = mode;
        return std::unique_ptr<Transport>(WebhookTransport::create(w, true).value());
      },
      sink_opts("webhook", mode == WebhookBatch::kSingle ? 1 : 100));
  state.SetLabel(mode == WebhookBatch::kSingle ? "one alert per POST" : "ndjson, 100 per POST");
}
BENCHMARK(BM_SinkWebhook)
    ->Arg(static_cast<int>(WebhookBatch::kSingle))
    ->Arg(static_cast<int>(WebhookBatch::kNdjson))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

// Webhook, NDJSON with 100 per POST: memory queue (arg 0) vs write-ahead log (arg 1).
void BM_SinkWebhookMemoryVsWal(benchmark::State& state) {
  const bool wal = state.range(0) == 1;
  const std::string dir = testing::temp_dir("bench-webhook-wal");
  testing::HttpServer server;
  run_sink(
      state,
      [&] {
        WebhookOptions w;
        w.url = server.url();
        w.batch = WebhookBatch::kNdjson;
        return std::unique_ptr<Transport>(WebhookTransport::create(w, true).value());
      },
      sink_opts("webhook", 100), wal ? dir + "/spool" : "");
  std::filesystem::remove_all(dir);
  state.SetLabel(wal ? "write-ahead log" : "memory queue");
}
BENCHMARK(BM_SinkWebhookMemoryVsWal)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

#ifdef VIGIL_WITH_KAFKA
struct Mock {
  Mock() {
    char err[256];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    mc = rd_kafka_mock_cluster_new(rk, 3);
    rd_kafka_mock_topic_create(mc, "bench", 6, 3);
  }
  ~Mock() {
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
  }
  rd_kafka_t* rk;
  rd_kafka_mock_cluster_t* mc;
};

std::unique_ptr<Transport> kafka_transport(Mock& m) {
  KafkaOptions k;
  k.brokers = rd_kafka_mock_cluster_bootstraps(m.mc);
  k.topic = "bench";
  return std::unique_ptr<Transport>(KafkaTransport::create(k).value());
}

void BM_SinkKafkaMock(benchmark::State& state) {
  Mock m;
  run_sink(
      state, [&] { return kafka_transport(m); }, sink_opts("kafka", 1000));
  state.SetLabel("acks=all, idempotent, 3 mock brokers");
}
BENCHMARK(BM_SinkKafkaMock)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);
#endif

// Wraps a transport and records publish-to-delivered latency of each message.
class Timed final : public Transport {
 public:
  Timed(std::unique_ptr<Transport> inner, std::vector<double>* us, std::mutex* mu)
      : inner_(std::move(inner)), us_(us), mu_(mu) {}
  SendResult send(std::span<const Message> batch) noexcept override {
    SendResult r = inner_->send(batch);
    const std::size_t n = r.code == SendCode::kOk ? batch.size() : r.delivered;
    const auto now = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
    std::lock_guard lk(*mu_);
    for (std::size_t i = 0; i < n; ++i) {
      us_->push_back(static_cast<double>(now - batch[i].enqueued_ns) / 1000.0);
    }
    return r;
  }
  void close() noexcept override { inner_->close(); }

 private:
  std::unique_ptr<Transport> inner_;
  std::vector<double>* us_;
  std::mutex* mu_;
};

// 1000 alerts/s for 3 s, paced; reports p50/p99/max in microseconds.
void run_latency(benchmark::State& state, std::unique_ptr<Transport> inner, SinkOptions o) {
  std::vector<double> us;
  std::mutex mu;
  for (auto _ : state) {
    std::vector<std::unique_ptr<Sink>> sinks;
    sinks.push_back(std::make_unique<Sink>(o, std::make_unique<Timed>(std::move(inner), &us, &mu), nullptr));
    Router r(std::move(sinks), testing::router_options("h"));
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 3000; ++i) {
      std::this_thread::sleep_until(start + std::chrono::microseconds(1000 * i));
      r.publish(make_alert(i));
    }
    r.shutdown(10s);
  }
  std::sort(us.begin(), us.end());
  auto pct = [&](double p) { return us.empty() ? 0 : us[static_cast<std::size_t>(p * (us.size() - 1))]; };
  state.counters["p50_us"] = pct(0.50);
  state.counters["p99_us"] = pct(0.99);
  state.counters["max_us"] = us.empty() ? 0 : us.back();
  state.counters["alerts"] = static_cast<double>(us.size());
}

void BM_LatencyStdout1k(benchmark::State& state) {
  const int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  run_latency(state, std::make_unique<FdTransport>(fd), sink_opts("stdout", 64));
  ::close(fd);
}
BENCHMARK(BM_LatencyStdout1k)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

#ifdef VIGIL_WITH_KAFKA
void BM_LatencyKafka1k(benchmark::State& state) {
  Mock m;
  run_latency(state, kafka_transport(m), sink_opts("kafka", 1000));
}
BENCHMARK(BM_LatencyKafka1k)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

}  // namespace
}  // namespace vigil::outputs

BENCHMARK_MAIN();
