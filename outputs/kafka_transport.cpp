#include "outputs/kafka_transport.h"

#include <librdkafka/rdkafka.h>
#include <spdlog/logger.h>

#include <unordered_map>

namespace vigil::outputs {
namespace {

bool is_secret_key(const std::string& k) {
  return k.find("password") != std::string::npos || k.find("secret") != std::string::npos ||
         k.find("key") != std::string::npos || k.find("token") != std::string::npos;
}

}  // namespace

struct KafkaTransport::Impl {
  rd_kafka_t* rk = nullptr;
  rd_kafka_topic_t* topic = nullptr;
  // Delivery state of the batch in flight: slot per message, by sequence id.
  std::uint64_t base_id = 0;  // id of slot 0 of the current batch
  std::vector<int> slots;     // 0 pending, 1 delivered, -1 failed
  std::size_t pending = 0;
  std::string last_error;
  std::uint64_t* ok = nullptr;
  std::uint64_t* failed = nullptr;
  std::shared_ptr<spdlog::logger> log;

  ~Impl() {
    if (topic) rd_kafka_topic_destroy(topic);
    if (rk) rd_kafka_destroy(rk);
  }
};

namespace {

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* impl = static_cast<KafkaTransport::Impl*>(opaque);
  const auto id = reinterpret_cast<std::uintptr_t>(m->_private);
  const bool ok = m->err == RD_KAFKA_RESP_ERR_NO_ERROR;
  ++*(ok ? impl->ok : impl->failed);
  if (!ok) impl->last_error = rd_kafka_err2str(m->err);
  if (id < impl->base_id) return;  // a report for an earlier, already settled batch
  const std::uint64_t slot = id - impl->base_id;
  if (slot >= impl->slots.size() || impl->slots[slot] != 0) return;
  impl->slots[slot] = ok ? 1 : -1;
  --impl->pending;
}

void on_log(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  auto* impl = static_cast<KafkaTransport::Impl*>(rd_kafka_opaque(rk));
  if (!impl || !impl->log) return;
  const auto lvl = level <= 3   ? spdlog::level::err
                   : level == 4 ? spdlog::level::warn
                   : level <= 6 ? spdlog::level::info
                                : spdlog::level::debug;
  impl->log->log(lvl, "kafka {}: {}", fac, buf);
}

}  // namespace

KafkaTransport::KafkaTransport(KafkaOptions o) : o_(std::move(o)), impl_(std::make_unique<Impl>()) {
  impl_->ok = &dr_ok_;
  impl_->failed = &dr_failed_;
}

Result<std::unique_ptr<KafkaTransport>> KafkaTransport::create(KafkaOptions o, std::shared_ptr<spdlog::logger> log) {
  std::unique_ptr<KafkaTransport> t(new KafkaTransport(std::move(o)));
  t->impl_->log = std::move(log);
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const std::string& k, const std::string& v) -> Status {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      // librdkafka's message names the key, not the value.
      return Error::bad_input("kafka property " + k + ": " +
                              (is_secret_key(k) ? std::string("invalid value") : std::string(err)));
    }
    return {};
  };
  std::vector<std::pair<std::string, std::string>> all = {
      {"bootstrap.servers", t->o_.brokers},
      {"acks", t->o_.acks},
      {"enable.idempotence", t->o_.idempotence ? "true" : "false"},
      {"compression.type", t->o_.compression},
      {"linger.ms", "5"},
      {"client.id", "vigil"},
  };
  for (const auto& p : t->o_.properties) all.push_back(p);  // user properties win
  for (const auto& [k, v] : all) {
    if (Status st = set(k, v); !st) {
      rd_kafka_conf_destroy(conf);
      return st.error();
    }
  }
  rd_kafka_conf_set_opaque(conf, t->impl_.get());
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_conf_set_log_cb(conf, on_log);
  t->impl_->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (!t->impl_->rk) {
    rd_kafka_conf_destroy(conf);
    return Error::bad_input(std::string("kafka: ") + err);
  }
  t->impl_->topic = rd_kafka_topic_new(t->impl_->rk, t->o_.topic.c_str(), nullptr);
  if (!t->impl_->topic) return Error::bad_input("kafka: invalid topic '" + t->o_.topic + "'");
  return t;
}

KafkaTransport::~KafkaTransport() = default;

SendResult KafkaTransport::send(std::span<const Message> batch) noexcept {
  try {
    Impl& im = *impl_;
    im.base_id += im.slots.size();
    im.slots.assign(batch.size(), 0);
    im.pending = batch.size();
    im.last_error.clear();
    std::size_t produced = 0;
    std::string produce_error;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const Message& m = batch[i];
      const std::string& key = o_.key == KeyKind::kRule ? m.rule : o_.key == KeyKind::kPod ? m.pod : m.hostname;
      rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
      for (int tries = 0; tries < 50; ++tries) {
        e = rd_kafka_producev(
            im.rk, RD_KAFKA_V_RKT(im.topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_VALUE(const_cast<char*>(m.body.data()), m.body.size()), RD_KAFKA_V_KEY(key.data(), key.size()),
            RD_KAFKA_V_HEADER("rule", m.rule.data(), static_cast<ssize_t>(m.rule.size())),
            RD_KAFKA_V_HEADER("priority", m.priority.data(), static_cast<ssize_t>(m.priority.size())),
            RD_KAFKA_V_HEADER("hostname", m.hostname.data(), static_cast<ssize_t>(m.hostname.size())),
            RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<std::uintptr_t>(im.base_id + i))), RD_KAFKA_V_END);
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL || interrupted_) break;
        rd_kafka_poll(im.rk, 10);  // let delivery reports free the queue
      }
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        produce_error = rd_kafka_err2str(e);
        break;
      }
      ++produced;
    }
    // Messages never produced count as settled-failed.
    for (std::size_t i = produced; i < batch.size(); ++i) {
      im.slots[i] = -1;
      --im.pending;
    }
    const auto deadline = std::chrono::steady_clock::now() + o_.batch_timeout;
    while (im.pending > 0 && std::chrono::steady_clock::now() < deadline && !interrupted_) {
      rd_kafka_flush(im.rk, 50);
      rd_kafka_poll(im.rk, 0);
    }
    const bool timed_out = im.pending > 0;
    if (timed_out) {
      // Give up on this batch: purge so every message gets its report now.
      rd_kafka_purge(im.rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
      for (int i = 0; i < 200 && im.pending > 0; ++i) rd_kafka_poll(im.rk, 10);
    }
    std::size_t delivered = 0;
    while (delivered < batch.size() && im.slots[delivered] == 1) ++delivered;
    if (delivered == batch.size()) return SendResult::ok(batch.size());
    std::string why = "kafka: ";
    why += !produce_error.empty()   ? produce_error
           : !im.last_error.empty() ? im.last_error
                                    : std::string("delivery timed out");
    return SendResult::retry(why, delivered)
        .with_class(timed_out || (produce_error.empty() && im.last_error.find("timed out") != std::string::npos)
                        ? ErrorClass::kTimeout
                        : ErrorClass::kOther);
  } catch (...) {
    return SendResult::retry("out of memory");
  }
}

void KafkaTransport::close() noexcept {
  if (impl_ && impl_->rk) rd_kafka_flush(impl_->rk, 1000);
}

}  // namespace vigil::outputs
