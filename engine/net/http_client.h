// The one HTTP client of vigil (libcurl underneath): the Kubernetes API
// (LIST and the streamed WATCH), the kubelet pod-resources API (gRPC, HTTP/2
// over a unix socket) and the webhook sink all go through it.
//
//   HttpClient c;
//   HttpRequest r;
//   r.url = "https://10.96.0.1:443/api/v1/pods?limit=100";
//   r.tls.ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
//   r.bearer_token = token;
//   r.max_body = 16u << 20;
//   HttpResult res = c.perform(r);
//   if (!res.ok()) log(res.describe());   // "GET https://10.96.0.1:443/api/v1/pods: ..."
//
// What it guarantees, whatever the server sends:
// - Memory is bounded: a buffered body larger than max_body fails the request
//   (kTooLarge), or is cut at max_body when truncate_body is set; a streamed
//   line longer than max_body fails it; at most kMaxHeaders response headers
//   of at most kMaxHeaderBytes each are kept. Decompression (accept_encoding)
//   is bounded the same way: the limits apply to the decoded bytes.
// - Time is bounded: a connect timeout, a whole-request timeout and, for
//   streams, an idle timeout (no byte for that long).
// - Only http:// and https:// URLs (also after nothing: redirects are never
//   followed).
// - cancel() from any thread ends the request in progress within about a
//   second and makes later requests fail at once until reset_cancel().
// - Errors name the method and the URL (without user info, query string or
//   fragment, which may carry secrets; see HttpRequest::url_for_errors).
//
// Ownership and threads: an HttpClient owns one libcurl handle, reused by
// consecutive requests so that connections are kept alive. perform() and
// stream_lines() must not be called from two threads at once; cancel(),
// reset_cancel() and cancelled() may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vigil::net {

struct TlsOptions {
  std::string ca_file;    // PEM CA bundle; "" and no ca_pem: the system trust store
  std::string ca_pem;     // PEM CA given inline
  std::string cert_file;  // client certificate (mutual TLS)
  std::string key_file;
  std::string cert_pem;  // client certificate and key given inline
  std::string key_pem;
  bool verify = true;  // false: no check of the peer's certificate or name (tests only)
};

enum class HttpMethod : std::uint8_t { kGet, kPost, kPatch, kDelete };

struct HttpRequest {
  HttpMethod method = HttpMethod::kGet;
  std::string url;                                           // http:// or https:// only
  std::string unix_socket;                                   // connect to this socket instead of the URL's host
  bool http2_prior_knowledge = false;                        // HTTP/2 without an upgrade (gRPC over cleartext)
  std::vector<std::pair<std::string, std::string>> headers;  // no CR, LF or NUL (checked)
  std::string bearer_token;                                  // "Authorization: Bearer ..."; never appears in errors
  std::string_view body;                                     // POST/PATCH/DELETE body (DELETE: may be empty);
                                                             // must stay valid until perform() returns
  TlsOptions tls;
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds timeout{30000};   // the whole request; 0 = none
  std::chrono::milliseconds idle_timeout{0};  // no byte received for this long fails (checked
                                              // about once a second); 0 = none
  std::size_t max_body = 1u << 20;            // buffered body, or one streamed line
  bool truncate_body = false;                 // keep the first max_body bytes instead of failing
  bool accept_encoding = false;               // offer gzip/deflate (decoded before the limits apply)
  std::string user_agent = "vigil";
  // How errors name the URL; "" = the URL without user info, query and
  // fragment. Set it where even the path is secret (webhook URLs often are).
  std::string url_for_errors;
};

enum class HttpFailure : std::uint8_t {
  kNone,       // a response arrived (any status; see HttpResult::status)
  kInvalid,    // the request itself is wrong (scheme, header with a line break)
  kConnect,    // cannot resolve, connect, send or receive
  kTls,        // handshake or certificate failure
  kTimeout,    // connect, whole-request or idle timeout
  kTooLarge,   // body or streamed line over max_body
  kCancelled,  // cancel() was called
  kStopped,    // the stream callback asked to stop
  kOther,
};

std::string_view http_failure_name(HttpFailure f);

struct HttpResult {
  std::string target;  // "GET https://host/path": the method and the URL as errors name it
  HttpFailure failure = HttpFailure::kNone;
  std::string error;                                         // empty when failure == kNone; names method and URL
  long status = 0;                                           // HTTP status of the (last) response; 0 when none arrived
  std::string body;                                          // buffered requests only
  bool truncated = false;                                    // truncate_body cut the body
  std::vector<std::pair<std::string, std::string>> headers;  // lower-case names, final response

  // A response arrived (of any status).
  bool ok() const { return failure == HttpFailure::kNone; }
  // A response arrived with a 2xx status.
  bool success() const { return ok() && status >= 200 && status < 300; }
  // The first value of a response header (name in lower case), or "".
  std::string_view header(std::string_view lower_name) const;
  // "" after a 2xx response, else one line saying what went wrong, naming
  // the method and URL ("GET https://h/api/v1/pods: HTTP 403").
  std::string describe() const;
};

// Called with each complete line of a streamed response (without its '\n'
// or '\r\n'; empty lines are skipped); returns false to end the stream.
using LineHandler = std::function<bool(std::string_view line)>;

class HttpClient {
 public:
  static constexpr std::size_t kMaxHeaders = 64;
  static constexpr std::size_t kMaxHeaderBytes = 8192;

  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends the request and buffers the response body (bounded by max_body).
  HttpResult perform(const HttpRequest& req);
  // Sends the request and hands the response body to on_line line by line
  // (each line bounded by max_body); the body is not kept. Lines of a non-2xx
  // response are not handed over: its first max_body bytes land in
  // HttpResult::body instead, for the error message.
  HttpResult stream_lines(const HttpRequest& req, const LineHandler& on_line);

  void cancel() noexcept { cancelled_ = true; }
  void reset_cancel() noexcept { cancelled_ = false; }
  bool cancelled() const noexcept { return cancelled_; }

 private:
  struct Transfer;
  HttpResult run(const HttpRequest& req, const LineHandler* on_line);

  void* curl_ = nullptr;  // CURL*, created on first use
  std::atomic<bool> cancelled_{false};
};

// The URL as errors show it: without user info, query string and fragment.
std::string redact_url(std::string_view url);
// Percent-encodes everything but RFC 3986 unreserved characters (for query values).
std::string url_encode(std::string_view s);
// Whether s may go into a header name or value (no CR, LF or NUL).
bool header_safe(std::string_view s);
// An HTTP date (IMF-fixdate, and the obsolete RFC 850 and asctime forms), as
// in Retry-After; nullopt when it is not one.
std::optional<std::chrono::system_clock::time_point> parse_http_date(std::string_view s);

}  // namespace vigil::net
