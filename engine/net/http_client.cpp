#include "engine/net/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <string>
#include <utility>

namespace vigil::net {
namespace {

constexpr std::size_t kMaxBodyInError = 200;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

std::string_view method_name(HttpMethod m) {
  switch (m) {
    case HttpMethod::kGet: return "GET";
    case HttpMethod::kPost: return "POST";
    case HttpMethod::kPatch: return "PATCH";
    case HttpMethod::kDelete: return "DELETE";
  }
  return "GET";
}

HttpFailure classify(CURLcode rc) {
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT: return HttpFailure::kTimeout;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_USE_SSL_FAILED: return HttpFailure::kTls;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING: return HttpFailure::kConnect;
    case CURLE_ABORTED_BY_CALLBACK: return HttpFailure::kCancelled;
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT: return HttpFailure::kInvalid;
    default: return HttpFailure::kOther;
  }
}

// Printable ASCII only, so that a hostile server cannot write control
// characters into a log line.
std::string printable(std::string_view s, std::size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) {
    out.push_back(c >= 0x20 && c < 0x7f ? c : ' ');
  }
  if (s.size() > max) out += "...";
  return out;
}

struct CurlSlist {
  curl_slist* list = nullptr;
  ~CurlSlist() { curl_slist_free_all(list); }
  bool append(const std::string& line) {
    curl_slist* l = curl_slist_append(list, line.c_str());
    if (!l) return false;
    list = l;
    return true;
  }
};

// What makes a request invalid before it is sent ("" when nothing does):
// another scheme, or a line break in the URL, the token or a header.
std::string invalid_request(const HttpRequest& req) {
  if (!starts_with_ci(req.url, "http://") && !starts_with_ci(req.url, "https://")) {
    return "only http:// and https:// URLs are supported";
  }
  if (!header_safe(req.url) || !header_safe(req.bearer_token)) {
    return "line break in the URL or the bearer token";
  }
  for (const auto& [k, v] : req.headers) {
    if (k.empty() || k.find(':') != std::string::npos || !header_safe(k) || !header_safe(v)) {
      return "invalid header name or value for '" + printable(k, 64) + "'";
    }
  }
  return "";
}

// The request's headers, the bearer token's and no 100-continue; false when
// out of memory.
bool request_headers(const HttpRequest& req, CurlSlist& headers) {
  bool headers_ok = true;
  for (const auto& [k, v] : req.headers) headers_ok &= headers.append(k + ": " + v);
  if (!req.bearer_token.empty()) {
    headers_ok &= headers.append("Authorization: Bearer " + req.bearer_token);
  }
  if (req.method != HttpMethod::kGet) headers_ok &= headers.append("Expect:");  // no 100-continue
  return headers_ok;
}

// The request itself: URL, protocols, headers, method and body, timeouts.
void set_request_options(CURL* h, const HttpRequest& req, curl_slist* headers, char* errbuf) {
  curl_easy_setopt(h, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_USERAGENT, req.user_agent.c_str());
  if (headers) curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  if (!req.unix_socket.empty()) {
    curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, req.unix_socket.c_str());
  }
  if (req.http2_prior_knowledge) {
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE));
  }
  if (req.method != HttpMethod::kGet) {
    // PATCH and DELETE go as a POST with the method's name (a body, possibly empty).
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    // Never NULL: libcurl would read the body from stdin.
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, req.body.empty() ? "" : req.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  }
  // The handle is reused: a method set by an earlier request must not stay.
  curl_easy_setopt(
      h, CURLOPT_CUSTOMREQUEST,
      req.method == HttpMethod::kPatch || req.method == HttpMethod::kDelete ? method_name(req.method).data() : nullptr);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(req.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(req.timeout.count()));
  if (req.accept_encoding) curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
}

// Verification, the CA and the client certificate and key, from files or
// from memory.
void set_tls_options(CURL* h, const TlsOptions& tls) {
  if (!tls.verify) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!tls.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, tls.ca_file.c_str());
  if (!tls.ca_pem.empty()) {
    curl_blob b{const_cast<char*>(tls.ca_pem.data()), tls.ca_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
  }
  if (!tls.cert_file.empty()) curl_easy_setopt(h, CURLOPT_SSLCERT, tls.cert_file.c_str());
  if (!tls.key_file.empty()) curl_easy_setopt(h, CURLOPT_SSLKEY, tls.key_file.c_str());
  if (!tls.cert_pem.empty()) {
    curl_blob b{const_cast<char*>(tls.cert_pem.data()), tls.cert_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &b);
  }
  if (!tls.key_pem.empty()) {
    curl_blob b{const_cast<char*>(tls.key_pem.data()), tls.key_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &b);
  }
}

// Forgets the pointers into one call's locals before they go away (the
// handle, and its connection cache, outlive the call).
void forget_call_pointers(CURL* h) {
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 1L);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, nullptr);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, nullptr);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, nullptr);
}

}  // namespace

std::string_view http_failure_name(HttpFailure f) {
  switch (f) {
    case HttpFailure::kNone: return "none";
    case HttpFailure::kInvalid: return "invalid";
    case HttpFailure::kConnect: return "connect";
    case HttpFailure::kTls: return "tls";
    case HttpFailure::kTimeout: return "timeout";
    case HttpFailure::kTooLarge: return "too_large";
    case HttpFailure::kCancelled: return "cancelled";
    case HttpFailure::kStopped: return "stopped";
    case HttpFailure::kOther: return "other";
  }
  return "other";
}

bool header_safe(std::string_view s) {
  return std::none_of(s.begin(), s.end(), [](char c) { return c == '\r' || c == '\n' || c == '\0'; });
}

std::string redact_url(std::string_view url) {
  std::size_t scheme_end = url.find("://");
  std::size_t auth_begin = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
  std::size_t auth_end = url.find_first_of("/?#", auth_begin);
  if (auth_end == std::string_view::npos) auth_end = url.size();
  std::string_view authority = url.substr(auth_begin, auth_end - auth_begin);
  std::size_t at = authority.rfind('@');
  if (at != std::string_view::npos) authority.remove_prefix(at + 1);
  std::size_t path_end = url.find_first_of("?#", auth_end);
  if (path_end == std::string_view::npos) path_end = url.size();
  std::string out(url.substr(0, auth_begin));
  out += authority;
  out += url.substr(auth_end, path_end - auth_end);
  return out;
}

std::string url_encode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::optional<std::chrono::system_clock::time_point> parse_http_date(std::string_view s) {
  if (s.empty() || s.size() > 64 || !header_safe(s)) return std::nullopt;
  const std::string text(s);
  const time_t when = curl_getdate(text.c_str(), nullptr);
  if (when < 0) return std::nullopt;
  return std::chrono::system_clock::from_time_t(when);
}

std::string_view HttpResult::header(std::string_view lower_name) const {
  for (const auto& [k, v] : headers) {
    if (k == lower_name) return v;
  }
  return {};
}

std::string HttpResult::describe() const {
  if (!ok()) return error;
  if (status >= 200 && status < 300) return "";
  std::string s = target + ": HTTP " + std::to_string(status);
  if (!body.empty()) s += ": " + printable(body, kMaxBodyInError);
  return s;
}

// The state of one request, shared with libcurl's callbacks.
struct HttpClient::Transfer {
  enum class Mode : std::uint8_t { kBuffer, kLinesPending, kLines };
  const HttpRequest* req = nullptr;
  const LineHandler* on_line = nullptr;
  HttpResult* res = nullptr;
  CURL* curl = nullptr;
  const std::atomic<bool>* cancelled = nullptr;
  Mode mode = Mode::kBuffer;
  std::string line;  // the partial line of a stream
  bool too_large = false;
  bool stopped = false;
  bool idle_expired = false;
  std::size_t header_bytes = 0;
  curl_off_t last_received = 0;
  std::chrono::steady_clock::time_point last_activity = std::chrono::steady_clock::now();

  bool buffer(std::string_view data, bool may_truncate) {
    std::size_t room = req->max_body - std::min(req->max_body, res->body.size());
    if (data.size() > room) {
      if (!may_truncate) {
        too_large = true;
        return false;
      }
      res->body.append(data.substr(0, room));
      res->truncated = true;
      return true;
    }
    res->body.append(data);
    return true;
  }

  bool deliver(std::string_view l) {
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.empty()) return true;
    if (!(*on_line)(l)) {
      stopped = true;
      return false;
    }
    return true;
  }

  bool lines(std::string_view chunk) {
    while (!chunk.empty()) {
      std::size_t nl = chunk.find('\n');
      std::string_view part = chunk.substr(0, nl);  // npos: all of it
      if (line.size() + part.size() > req->max_body) {
        too_large = true;
        return false;
      }
      if (nl == std::string_view::npos) {
        line.append(part);
        return true;
      }
      chunk.remove_prefix(nl + 1);
      bool go_on;
      if (line.empty()) {
        go_on = deliver(part);
      } else {
        line.append(part);
        std::string whole;
        whole.swap(line);
        go_on = deliver(whole);
      }
      if (!go_on) return false;
    }
    return true;
  }

  static std::size_t on_write(char* data, std::size_t size, std::size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const std::size_t len = size * n;
    std::string_view chunk(data, len);
    try {
      if (t->mode == Mode::kLinesPending) {
        // The status is known once the body starts: only a 2xx body is a stream.
        long status = 0;
        curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
        t->mode = status >= 200 && status < 300 ? Mode::kLines : Mode::kBuffer;
      }
      if (t->mode == Mode::kLines) return t->lines(chunk) ? len : 0;
      // A non-2xx body of a stream is only kept for the error message.
      bool may_truncate = t->req->truncate_body || t->on_line != nullptr;
      return t->buffer(chunk, may_truncate) ? len : 0;
    } catch (...) {  // out of memory, or a handler that threw: end the transfer
      t->stopped = true;
      return 0;
    }
  }

  static std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const std::size_t len = size * n;
    std::string_view l(data, len);
    try {
      if (starts_with_ci(l, "http/")) {  // a new response (after 100 Continue, say)
        t->res->headers.clear();
        t->header_bytes = 0;
        return len;
      }
      std::size_t colon = l.find(':');
      if (colon == std::string_view::npos || colon == 0) return len;
      if (t->res->headers.size() >= kMaxHeaders || len > kMaxHeaderBytes) return len;
      std::string name(l.substr(0, colon));
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string_view v = l.substr(colon + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ' || v.back() == '\t')) {
        v.remove_suffix(1);
      }
      t->res->headers.emplace_back(std::move(name), std::string(v));
    } catch (...) {
      return 0;
    }
    return len;
  }

  // Hands libcurl this transfer's callbacks (body, headers, progress).
  void attach(CURL* h) {
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &Transfer::on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &Transfer::on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, this);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &Transfer::on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, this);
  }

  // After a transfer that ended well: a stream's last line may lack its
  // newline. False when the reader stopped there.
  bool end_of_stream() {
    if (mode == Mode::kLines && !line.empty()) {
      std::string last;
      last.swap(line);
      try {
        deliver(last);
      } catch (...) {
        stopped = true;
      }
      if (stopped) return false;
    }
    return true;
  }

  // Why a transfer that did not end well failed: this side's reasons first
  // (too large, stopped, idle, cancelled), then libcurl's.
  std::pair<HttpFailure, std::string> failure(CURLcode rc, const char* errbuf) const {
    if (too_large) {
      return {HttpFailure::kTooLarge, std::string(mode == Mode::kLines ? "a line of the response" : "the response") +
                                          " is larger than " + std::to_string(req->max_body) + " bytes"};
    }
    if (stopped) return {HttpFailure::kStopped, "stopped by the reader"};
    if (idle_expired) {
      return {HttpFailure::kTimeout, "no data for " + std::to_string(req->idle_timeout.count()) + " ms"};
    }
    if (rc == CURLE_ABORTED_BY_CALLBACK) return {HttpFailure::kCancelled, "cancelled"};
    std::string why = errbuf[0] ? printable(errbuf, CURL_ERROR_SIZE) : curl_easy_strerror(rc);
    return {classify(rc), why};
  }

  // Called at least once a second while the transfer runs, idle or not.
  static int on_progress(void* user, curl_off_t, curl_off_t received, curl_off_t, curl_off_t) {
    auto* t = static_cast<Transfer*>(user);
    if (t->cancelled->load()) return 1;  // non-zero aborts the transfer
    const auto now = std::chrono::steady_clock::now();
    if (received != t->last_received) {
      t->last_received = received;
      t->last_activity = now;
    } else if (t->req->idle_timeout.count() > 0 && now - t->last_activity > t->req->idle_timeout) {
      t->idle_expired = true;
      return 1;
    }
    return 0;
  }
};

HttpClient::HttpClient() = default;

HttpClient::~HttpClient() {
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

HttpResult HttpClient::perform(const HttpRequest& req) { return run(req, nullptr); }

HttpResult HttpClient::stream_lines(const HttpRequest& req, const LineHandler& on_line) { return run(req, &on_line); }

HttpResult HttpClient::run(const HttpRequest& req, const LineHandler* on_line) {
  HttpResult res;
  res.target = std::string(method_name(req.method)) + " " +
               (req.url_for_errors.empty() ? redact_url(req.url) : req.url_for_errors);
  auto fail = [&](HttpFailure f, const std::string& why) {
    res.failure = f;
    res.error = res.target + ": " + why;
    return res;
  };
  if (std::string why = invalid_request(req); !why.empty()) return fail(HttpFailure::kInvalid, why);
  if (cancelled_) return fail(HttpFailure::kCancelled, "cancelled");

  global_init();
  if (!curl_) curl_ = curl_easy_init();
  CURL* h = static_cast<CURL*>(curl_);
  if (!h) return fail(HttpFailure::kOther, "cannot create a libcurl handle");
  curl_easy_reset(h);  // keeps the connection cache

  CurlSlist headers;
  if (!request_headers(req, headers)) return fail(HttpFailure::kOther, "out of memory");

  Transfer t;
  t.req = &req;
  t.on_line = on_line;
  t.res = &res;
  t.curl = h;
  t.cancelled = &cancelled_;
  t.mode = on_line ? Transfer::Mode::kLinesPending : Transfer::Mode::kBuffer;
  char errbuf[CURL_ERROR_SIZE] = {};
  set_request_options(h, req, headers.list, errbuf);
  t.attach(h);
  set_tls_options(h, req.tls);

  const CURLcode rc = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &res.status);
  forget_call_pointers(h);

  if (rc == CURLE_OK) {
    if (!t.end_of_stream()) return fail(HttpFailure::kStopped, "stopped by the reader");
    return res;
  }
  const auto [failure, why] = t.failure(rc, errbuf);
  return fail(failure, why);
}

}  // namespace vigil::net
