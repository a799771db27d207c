// The transport seam: what a sink's worker hands a destination, and what the
// destination answers. A transport only moves bytes; batching, retries,
// backoff, spooling and counting belong to the Sink that owns it (sink.h).
//
// Ownership: a Sink owns its Transport and calls it from its one worker
// thread only, so a transport needs no locking of its own.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace vigil::outputs {

// One formatted alert as a transport sees it. `body` is the formatted alert
// (one record, no trailing newline); the other fields are the attributes
// transports use for keys, headers and structured data.
struct Message {
  std::string body;
  std::string uuid;
  std::string rule;
  std::string priority;
  std::string hostname;
  std::string pod;                // output field k8s.pod.name, "" when absent
  std::uint64_t time_ns = 0;      // the alert's time (syslog timestamps)
  std::uint64_t enqueued_ns = 0;  // steady-clock ns when published; 0 if unknown (spooled)
};

// Why a send failed, for the per-sink failure counters.
enum class ErrorClass : std::uint8_t {
  kConnect,     // refused, reset, unreachable, peer closed
  kTimeout,     // connect, request or delivery timeout
  kTls,         // handshake or certificate verification
  kThrottled,   // HTTP 429 / 503
  kHttpServer,  // other HTTP 5xx
  kHttpClient,  // HTTP 4xx other than 429
  kRejected,    // the message itself cannot be sent (too large, invalid)
  kOther,
};
inline constexpr std::size_t kErrorClassCount = 8;
std::string_view error_class_name(ErrorClass c);

enum class SendCode : std::uint8_t {
  kOk,     // everything delivered
  kRetry,  // transient (peer down, 5xx, 429, queue full): try again later
  kFatal,  // will never succeed (4xx, message too large): give up on these
};

struct SendResult {
  SendCode code = SendCode::kOk;
  // Messages at the front of the batch known to be delivered even when code is
  // not kOk (they are counted as sent and not sent again).
  std::size_t delivered = 0;
  std::string error;                         // for logs; never contains secrets
  std::chrono::milliseconds retry_after{0};  // the peer's Retry-After, 0 if none
  // kFatal only: how many messages after the delivered ones are rejected for
  // good (the rest of the batch is sent again). Default: all of them.
  std::size_t rejected = static_cast<std::size_t>(-1);
  ErrorClass error_class = ErrorClass::kOther;  // when code is not kOk

  SendResult& with_class(ErrorClass c) {
    error_class = c;
    return *this;
  }

  static SendResult ok(std::size_t n) { return {SendCode::kOk, n, {}, {}}; }
  static SendResult retry(std::string why, std::size_t delivered = 0) {
    return {SendCode::kRetry, delivered, std::move(why), {}};
  }
  static SendResult fatal(std::string why, std::size_t delivered = 0,
                          std::size_t rejected = static_cast<std::size_t>(-1)) {
    return {SendCode::kFatal, delivered, std::move(why), {}, rejected};
  }
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Delivers `batch` in order. Must return within the transport's configured
  // timeouts; must not throw.
  virtual SendResult send(std::span<const Message> batch) noexcept = 0;
  // Called once from the worker before it exits (flush, close sockets).
  virtual void close() noexcept {}
  // Called from another thread when the shutdown deadline has passed while a
  // send() is still running: make it return soon (with kRetry). Thread-safe.
  virtual void interrupt() noexcept {}
};

}  // namespace vigil::outputs
