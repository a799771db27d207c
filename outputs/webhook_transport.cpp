#include "outputs/webhook_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

namespace vigil::outputs {
namespace {

constexpr auto kMaxRetryAfter = std::chrono::hours(1);

struct Response {
  std::string retry_after;
  std::size_t body_bytes = 0;
};

std::size_t on_body(char*, std::size_t size, std::size_t n, void* user) {
  auto* r = static_cast<Response*>(user);
  r->body_bytes += size * n;  // discarded: only the status matters
  return size * n;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto* r = static_cast<Response*>(user);
  std::string_view line(data, size * n);
  constexpr std::string_view kName = "retry-after:";
  if (line.size() > kName.size()) {
    bool match = true;
    for (std::size_t i = 0; i < kName.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(line[i])) != kName[i]) {
        match = false;
        break;
      }
    }
    if (match) {
      std::string_view v = line.substr(kName.size());
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' '))
        v.remove_suffix(1);
      r->retry_after.assign(v.substr(0, 64));
    }
  }
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<std::atomic<bool>*>(user)->load() ? 1 : 0;  // non-zero aborts
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Header values must not carry CR/LF (header injection).
bool header_safe(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) { return c == '\r' || c == '\n' || c == '\0'; });
}

}  // namespace

std::chrono::milliseconds parse_retry_after(std::string_view value,
                                            std::chrono::system_clock::time_point now) {
  if (value.empty()) return std::chrono::milliseconds(0);
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (value.size() > 7) return kMaxRetryAfter;
    const auto secs = std::chrono::seconds(std::stol(std::string(value)));
    return std::min<std::chrono::milliseconds>(secs, kMaxRetryAfter);
  }
  const std::string s(value);
  const time_t when = curl_getdate(s.c_str(), nullptr);
  if (when < 0) return std::chrono::milliseconds(0);
  const auto delta = std::chrono::system_clock::from_time_t(when) - now;
  if (delta <= std::chrono::milliseconds(0)) return std::chrono::milliseconds(0);
  return std::min<std::chrono::milliseconds>(
      std::chrono::duration_cast<std::chrono::milliseconds>(delta), kMaxRetryAfter);
}

WebhookTransport::WebhookTransport(WebhookOptions o, bool json_body)
    : o_(std::move(o)), json_body_(json_body) {}

Result<std::unique_ptr<WebhookTransport>> WebhookTransport::create(WebhookOptions o,
                                                                   bool json_body) {
  if (o.batch == WebhookBatch::kArray && !json_body) {
    return Error::bad_input("batch: array needs a JSON format (json or ocsf)");
  }
  for (const auto& [k, v] : o.headers) {
    if (k.empty() || !header_safe(k) || !header_safe(v) || k.find(':') != std::string::npos) {
      return Error::bad_input("headers: invalid header name or value for '" +
                              (header_safe(k) ? k : std::string("?")) + "'");
    }
  }
  if (!header_safe(o.bearer_token)) return Error::bad_input("bearer token contains a line break");
  global_init();
  std::unique_ptr<WebhookTransport> t(new WebhookTransport(std::move(o), json_body));
  CURL* c = curl_easy_init();
  if (!c) return Error::runtime("webhook: curl_easy_init failed");
  t->curl_ = c;
  curl_slist* h = nullptr;
  std::string ct = t->o_.content_type;
  if (ct.empty()) {
    ct = t->o_.batch == WebhookBatch::kNdjson ? "application/x-ndjson"
         : json_body                          ? "application/json"
                                              : "text/plain; charset=utf-8";
  }
  h = curl_slist_append(h, ("Content-Type: " + ct).c_str());
  h = curl_slist_append(h, "Expect:");  // no 100-continue round trip
  if (!t->o_.bearer_token.empty()) {
    h = curl_slist_append(h, ("Authorization: Bearer " + t->o_.bearer_token).c_str());
  }
  for (const auto& [k, v] : t->o_.headers) h = curl_slist_append(h, (k + ": " + v).c_str());
  t->header_list_ = h;
  curl_easy_setopt(c, CURLOPT_URL, t->o_.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(t->o_.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(t->o_.timeout.count()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "vigil");
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t->interrupted_);
  if (!t->o_.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, t->o_.ca_file.c_str());
  if (!t->o_.cert_file.empty()) curl_easy_setopt(c, CURLOPT_SSLCERT, t->o_.cert_file.c_str());
  if (!t->o_.key_file.empty()) curl_easy_setopt(c, CURLOPT_SSLKEY, t->o_.key_file.c_str());
  if (!t->o_.tls_verify) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  return t;
}

WebhookTransport::~WebhookTransport() {
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
  if (header_list_) curl_slist_free_all(static_cast<curl_slist*>(header_list_));
}

SendResult WebhookTransport::post(const std::string& body) {
  if (interrupted_) return SendResult::retry("webhook: interrupted by shutdown");
  CURL* c = static_cast<CURL*>(curl_);
  Response resp;
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &resp);
  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    SendResult r = SendResult::retry(std::string("webhook: ") + curl_easy_strerror(rc));
    switch (rc) {
      case CURLE_OPERATION_TIMEDOUT: return r.with_class(ErrorClass::kTimeout);
      case CURLE_SSL_CONNECT_ERROR:
      case CURLE_PEER_FAILED_VERIFICATION:
      case CURLE_SSL_CERTPROBLEM:
      case CURLE_SSL_CIPHER:
      case CURLE_SSL_CACERT_BADFILE:
      case CURLE_SSL_ISSUER_ERROR:
        return r.with_class(ErrorClass::kTls);
      case CURLE_COULDNT_CONNECT:
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_SEND_ERROR:
      case CURLE_RECV_ERROR:
      case CURLE_GOT_NOTHING:
        return r.with_class(ErrorClass::kConnect);
      default: return r;
    }
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 200 && status < 300) return SendResult::ok(1);
  const std::string why = "webhook: HTTP " + std::to_string(status);
  if (status == 408 || status == 425 || status == 429 || status >= 500) {
    SendResult r = SendResult::retry(why);
    r.error_class = status >= 500 ? ErrorClass::kHttpServer : ErrorClass::kHttpClient;
    if (status == 429 || status == 503) {
      r.retry_after = parse_retry_after(resp.retry_after, std::chrono::system_clock::now());
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
