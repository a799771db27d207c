// Webhook transport: HTTP(S) POST through net::HttpClient (one kept-alive
// connection), one alert per request or a batch per request (JSON array or
// NDJSON). Errors name the endpoint by scheme, host and port only: webhook
// paths often carry the secret (Slack-style URLs).
//
// Answers: 2xx -> kOk; 408, 425, 429, 5xx and transport errors (refused,
// reset, timeout, TLS) -> kRetry (429/503 carry Retry-After, seconds or an
// HTTP date, capped at one hour); other 4xx -> kFatal.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/net/http_client.h"
#include "engine/util/result.h"
#include "outputs/transport.h"

namespace vigil::outputs {

enum class WebhookBatch : std::uint8_t { kSingle, kArray, kNdjson };

struct WebhookOptions {
  std::string url;
  WebhookBatch batch = WebhookBatch::kSingle;
  std::string content_type;  // empty: application/json, application/x-ndjson or text/plain
  std::vector<std::pair<std::string, std::string>> headers;
  std::string bearer_token;  // resolved from inline, file or env by config; never logged
  std::string ca_file;       // empty: system trust store
  std::string cert_file;     // client certificate (mutual TLS)
  std::string key_file;
  bool tls_verify = true;
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds timeout{10000};  // whole request
};

// "Retry-After" value -> delay (seconds or IMF-fixdate), capped at 1 h.
std::chrono::milliseconds parse_retry_after(std::string_view value, std::chrono::system_clock::time_point now);

class WebhookTransport final : public Transport {
 public:
  // `json_body`: whether the sink's format is a JSON object (json, ocsf);
  // array batching requires it.
  static Result<std::unique_ptr<WebhookTransport>> create(WebhookOptions o, bool json_body);
  SendResult send(std::span<const Message> batch) noexcept override;
  void interrupt() noexcept override {
    interrupted_ = true;
    http_.cancel();
  }

 private:
  WebhookTransport(WebhookOptions o, bool json_body);
  SendResult post(const std::string& body);

  WebhookOptions o_;
  bool json_body_;
  net::HttpRequest request_;  // everything but the body
  net::HttpClient http_;
  std::atomic<bool> interrupted_{false};
};

}  // namespace vigil::outputs
