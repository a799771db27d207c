// Kafka transport (librdkafka producer). Built when VIGIL_WITH_KAFKA is on.
//
// send() produces the batch (key per KeyKind; headers rule, priority,
// hostname), then waits for every delivery report, up to `batch_timeout`;
// what is still undelivered then is purged from librdkafka's queues, so each
// message of the batch ends either delivered (counted as sent) or returned
// for retry/spool. Messages at the front of the batch that were delivered are
// reported in SendResult::delivered; delivery after a purge race can
// duplicate (at-least-once; receivers de-duplicate by uuid).
//
// Defaults: acks=all, enable.idempotence=true, compression.type=none.
// `properties` are passed to librdkafka as they are (SASL, SSL, ...); their
// values are never logged.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/util/result.h"
#include "outputs/sink.h"
#include "outputs/transport.h"

namespace spdlog {
class logger;
}

namespace vigil::outputs {

struct KafkaOptions {
  std::string brokers;
  std::string topic;
  KeyKind key = KeyKind::kHostname;
  std::string acks = "all";
  bool idempotence = true;
  std::string compression = "none";
  std::vector<std::pair<std::string, std::string>> properties;  // librdkafka pass-through
  std::chrono::milliseconds batch_timeout{10000};
};

class KafkaTransport final : public Transport {
 public:
  // librdkafka's own log lines go to `log` (debug/info/warn/error by syslog
  // level); with no logger they are dropped.
  static Result<std::unique_ptr<KafkaTransport>> create(KafkaOptions o, std::shared_ptr<spdlog::logger> log = nullptr);
  ~KafkaTransport() override;
  SendResult send(std::span<const Message> batch) noexcept override;
  void close() noexcept override;
  void interrupt() noexcept override { interrupted_ = true; }

  // Delivery reports seen: ok and failed (all batches, including purged).
  std::uint64_t delivery_ok() const { return dr_ok_; }
  std::uint64_t delivery_failed() const { return dr_failed_; }

  struct Impl;  // librdkafka handles and the in-flight batch's delivery state

 private:
  explicit KafkaTransport(KafkaOptions o);

  KafkaOptions o_;
  std::unique_ptr<Impl> impl_;
  std::uint64_t dr_ok_ = 0;
  std::uint64_t dr_failed_ = 0;
  std::atomic<bool> interrupted_{false};
};

}  // namespace vigil::outputs
