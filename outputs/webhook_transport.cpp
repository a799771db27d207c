#include "outputs/webhook_transport.h"

#include <algorithm>
#include <cctype>

namespace vigil::outputs {
namespace {

constexpr auto kMaxRetryAfter = std::chrono::hours(1);
constexpr std::size_t kMaxAnswerBody = 4096;

using net::header_safe;

// scheme://host[:port] of a URL, which is all that errors show of it.
std::string origin_of(std::string_view url) {
  std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return "webhook";
  std::size_t end = url.find_first_of("/?#", scheme_end + 3);
  return net::redact_url(url.substr(0, end));
}

}  // namespace

std::chrono::milliseconds parse_retry_after(std::string_view value, std::chrono::system_clock::time_point now) {
  if (value.empty()) return std::chrono::milliseconds(0);
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (value.size() > 7) return kMaxRetryAfter;
    const auto secs = std::chrono::seconds(std::stol(std::string(value)));
    return std::min<std::chrono::milliseconds>(secs, kMaxRetryAfter);
  }
  const auto when = net::parse_http_date(value);
  if (!when) return std::chrono::milliseconds(0);
  const auto delta = *when - now;
  if (delta <= std::chrono::milliseconds(0)) return std::chrono::milliseconds(0);
  return std::min<std::chrono::milliseconds>(std::chrono::duration_cast<std::chrono::milliseconds>(delta),
                                             kMaxRetryAfter);
}

WebhookTransport::WebhookTransport(WebhookOptions o, bool json_body) : o_(std::move(o)), json_body_(json_body) {}

Result<std::unique_ptr<WebhookTransport>> WebhookTransport::create(WebhookOptions o, bool json_body) {
  if (o.batch == WebhookBatch::kArray && !json_body) {
    return Error::bad_input("batch: array needs a JSON format (json or ocsf)");
  }
  for (const auto& [k, v] : o.headers) {
    if (k.empty() || !header_safe(k) || !header_safe(v) || k.find(':') != std::string::npos) {
      return Error::bad_input("headers: invalid header name or value for '" + (header_safe(k) ? k : std::string("?")) +
                              "'");
    }
  }
  if (!header_safe(o.bearer_token)) return Error::bad_input("bearer token contains a line break");
  std::unique_ptr<WebhookTransport> t(new WebhookTransport(std::move(o), json_body));
  net::HttpRequest& r = t->request_;
  r.method = net::HttpMethod::kPost;
  r.url = t->o_.url;
  r.url_for_errors = origin_of(t->o_.url);
  std::string ct = t->o_.content_type;
  if (ct.empty()) {
    ct = t->o_.batch == WebhookBatch::kNdjson ? "application/x-ndjson"
         : json_body                          ? "application/json"
                                              : "text/plain; charset=utf-8";
  }
  r.headers.emplace_back("Content-Type", ct);
  for (const auto& h : t->o_.headers) r.headers.push_back(h);
  r.bearer_token = t->o_.bearer_token;
  r.tls.ca_file = t->o_.ca_file;
  r.tls.cert_file = t->o_.cert_file;
  r.tls.key_file = t->o_.key_file;
  r.tls.verify = t->o_.tls_verify;
  r.connect_timeout = t->o_.connect_timeout;
  r.timeout = t->o_.timeout;
  r.max_body = kMaxAnswerBody;  // only the status matters; the rest is cut
  r.truncate_body = true;
  return t;
}

SendResult WebhookTransport::post(const std::string& body) {
  if (interrupted_) return SendResult::retry("webhook: interrupted by shutdown");
  request_.body = body;  // a view: body outlives the request
  const net::HttpResult res = http_.perform(request_);
  request_.body = {};
  if (!res.ok()) {
    SendResult r = SendResult::retry("webhook: " + res.error);
    switch (res.failure) {
      case net::HttpFailure::kTimeout: return r.with_class(ErrorClass::kTimeout);
      case net::HttpFailure::kTls: return r.with_class(ErrorClass::kTls);
      case net::HttpFailure::kConnect: return r.with_class(ErrorClass::kConnect);
      case net::HttpFailure::kInvalid: return SendResult::fatal(r.error);
      default: return r;
    }
  }
  const long status = res.status;
  if (status >= 200 && status < 300) return SendResult::ok(1);
  const std::string why = "webhook: " + res.target + ": HTTP " + std::to_string(status);
  if (status == 408 || status == 425 || status == 429 || status >= 500) {
    SendResult r = SendResult::retry(why);
    r.error_class = status >= 500 ? ErrorClass::kHttpServer : ErrorClass::kHttpClient;
    if (status == 429 || status == 503) {
      r.retry_after = parse_retry_after(res.header("retry-after"), std::chrono::system_clock::now());
      r.error_class = ErrorClass::kThrottled;
    }
    return r;
  }
  return SendResult::fatal(why).with_class(status >= 400 && status < 500 ? ErrorClass::kHttpClient
                                                                         : ErrorClass::kOther);
}

SendResult WebhookTransport::send(std::span<const Message> batch) noexcept {
  try {
    if (o_.batch == WebhookBatch::kSingle) {
      for (std::size_t i = 0; i < batch.size(); ++i) {
        SendResult r = post(batch[i].body);
        if (r.code != SendCode::kOk) {
          r.delivered = i;
          return r;
        }
      }
      return SendResult::ok(batch.size());
    }
    std::string body;
    if (o_.batch == WebhookBatch::kArray) body += '[';
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (o_.batch == WebhookBatch::kArray && i) body += ',';
      body += batch[i].body;
      if (o_.batch == WebhookBatch::kNdjson) body += '\n';
    }
    if (o_.batch == WebhookBatch::kArray) body += ']';
    SendResult r = post(body);
    r.delivered = r.code == SendCode::kOk ? batch.size() : 0;
    return r;
  } catch (...) {
    return SendResult::retry("out of memory");
  }
}

}  // namespace vigil::outputs
