// The HTTP client against a scripted server on loopback (TCP or a unix
// socket) that answers each connection with bytes the test wrote: bounded
// bodies and lines, timeouts, cancel, headers, errors naming the URL. TLS is
// exercised through its users (tests/outputs/webhook_test.cpp and
// tests/engine/state/pod_watcher_test.cpp run HTTPS servers with private CAs).
#include "engine/net/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <gtest/gtest.h>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/temp_dir.h"

namespace vigil::net {
namespace {

using namespace std::chrono_literals;

// Serves one connection at a time: reads the request head (and a body of
// Content-Length bytes), records it, writes `answer`, then either closes or,
// with hold_open, keeps the connection until the test ends.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::string answer, bool hold_open = false, std::string unix_path = "")
      : answer_(std::move(answer)), hold_open_(hold_open) {
    if (unix_path.empty()) {
      fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
      int one = 1;
      ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
      socklen_t len = sizeof(sa);
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
      port_ = ntohs(sa.sin_port);
    } else {
      fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
      sockaddr_un sa{};
      sa.sun_family = AF_UNIX;
      unix_path.copy(sa.sun_path, sizeof(sa.sun_path) - 1);
      ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
    }
    ::listen(fd_, 8);
    thread_ = std::thread([this] { loop(); });
  }
  ~ScriptedServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    for (int c : open_) ::close(c);
    ::close(fd_);
  }
  std::string url(const std::string& path = "/p") const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  std::vector<std::string> requests() {
    std::lock_guard lk(mu_);
    return requests_;
  }

 private:
  void loop() {
    while (!stop_) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string req;
      char buf[4096];
      std::size_t want = std::string::npos;
      while (want == std::string::npos || req.size() < want) {
        ssize_t n = ::read(c, buf, sizeof(buf));
        if (n <= 0) break;
        req.append(buf, static_cast<std::size_t>(n));
        std::size_t end = req.find("\r\n\r\n");
        if (end != std::string::npos && want == std::string::npos) {
          std::size_t cl = req.find("Content-Length: ");
          std::size_t body =
              cl == std::string::npos || cl > end ? 0 : std::stoul(req.substr(cl + 16, req.find("\r\n", cl) - cl - 16));
          want = end + 4 + body;
        }
      }
      {
        std::lock_guard lk(mu_);
        requests_.push_back(req);
      }
      std::size_t off = 0;
      while (off < answer_.size()) {
        ssize_t n = ::write(c, answer_.data() + off, answer_.size() - off);
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
      }
      if (hold_open_) {
        open_.push_back(c);
      } else {
        ::close(c);
      }
    }
  }

  std::string answer_;
  bool hold_open_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<int> open_;  // server thread only, then the destructor
  std::mutex mu_;
  std::vector<std::string> requests_;
};

std::string response(const std::string& status, const std::string& body, const std::string& extra_headers = "") {
  return "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n" +
         extra_headers + "\r\n" + body;
}

TEST(HttpClient, GetsABodyAndSendsHeadersAndToken) {
  ScriptedServer s(response("200 OK", "hello", "Retry-After: 7\r\nX-Two: a\r\n"));
  HttpClient c;
  HttpRequest r;
  r.url = s.url("/api?x=1");
  r.bearer_token = "tok-123";
  r.headers = {{"Accept", "application/json"}};
  HttpResult res = c.perform(r);
  ASSERT_TRUE(res.success()) << res.describe();
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.body, "hello");
  EXPECT_EQ(res.header("retry-after"), "7");
  EXPECT_EQ(res.header("x-two"), "a");
  EXPECT_EQ(res.describe(), "");
  ASSERT_EQ(s.requests().size(), 1u);
  const std::string req = s.requests()[0];
  EXPECT_EQ(req.rfind("GET /api?x=1 HTTP/1.1\r\n", 0), 0u) << req;
  EXPECT_NE(req.find("Authorization: Bearer tok-123\r\n"), std::string::npos) << req;
  EXPECT_NE(req.find("Accept: application/json\r\n"), std::string::npos) << req;
}

TEST(HttpClient, PostsTheBody) {
  ScriptedServer s(response("202 Accepted", ""));
  HttpClient c;
  HttpRequest r;
  r.method = HttpMethod::kPost;
  r.url = s.url("/alerts");
  r.body = R"({"rule":"x"})";
  r.headers = {{"Content-Type", "application/json"}};
  HttpResult res = c.perform(r);
  ASSERT_TRUE(res.success()) << res.describe();
  ASSERT_EQ(s.requests().size(), 1u);
  const std::string req = s.requests()[0];
  EXPECT_EQ(req.rfind("POST /alerts HTTP/1.1\r\n", 0), 0u) << req;
  EXPECT_EQ(req.substr(req.size() - r.body.size()), r.body);
  EXPECT_EQ(req.find("Expect:"), std::string::npos) << "no 100-continue round trip";
}

TEST(HttpClient, NonSuccessStatusIsAResponseThatDescribesItself) {
  ScriptedServer s(response("403 Forbidden", "pods is forbidden\x01\n"));
  HttpClient c;
  HttpRequest r;
  r.url = "http://user:secret@127.0.0.1:" + s.url().substr(s.url().rfind(':') + 1) + "?token=abc";
  HttpResult res = c.perform(r);
  ASSERT_TRUE(res.ok()) << res.error;
  EXPECT_FALSE(res.success());
  EXPECT_EQ(res.status, 403);
  std::string d = res.describe();
  EXPECT_NE(d.find("GET http://127.0.0.1:"), std::string::npos) << d;
  EXPECT_NE(d.find("HTTP 403: pods is forbidden"), std::string::npos) << d;
  EXPECT_EQ(d.find("secret"), std::string::npos) << "user info is not shown: " << d;
  EXPECT_EQ(d.find("abc"), std::string::npos) << "the query is not shown: " << d;
  EXPECT_EQ(d.find('\x01'), std::string::npos) << "control characters are not shown";
}

TEST(HttpClient, RedirectsAreNotFollowed) {
  ScriptedServer s(response("302 Found", "", "Location: file:///etc/passwd\r\n"));
  HttpClient c;
  HttpRequest r;
  r.url = s.url();
  HttpResult res = c.perform(r);
  ASSERT_TRUE(res.ok()) << res.error;
  EXPECT_EQ(res.status, 302);
  EXPECT_EQ(s.requests().size(), 1u);
}

TEST(HttpClient, OversizedBodyFailsOrIsTruncated) {
  ScriptedServer s(response("200 OK", std::string(10000, 'x')));
  HttpClient c;
  HttpRequest r;
  r.url = s.url("/big");
  r.max_body = 1000;
  HttpResult res = c.perform(r);
  EXPECT_EQ(res.failure, HttpFailure::kTooLarge);
  EXPECT_NE(res.error.find("GET " + s.url("/big") + ": the response is larger than 1000 bytes"), std::string::npos)
      << res.error;
  EXPECT_TRUE(res.body.size() <= 1000u);

  r.truncate_body = true;
  res = c.perform(r);
  ASSERT_TRUE(res.success()) << res.describe();
  EXPECT_EQ(res.body, std::string(1000, 'x'));
  EXPECT_TRUE(res.truncated);
}

TEST(HttpClient, HeadersAreBounded) {
  std::string many;
  for (int i = 0; i < 200; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
  many += "X-Long: " + std::string(HttpClient::kMaxHeaderBytes + 10, 'y') + "\r\n";
  ScriptedServer s(response("200 OK", "ok", many));
  HttpClient c;
  HttpRequest r;
  r.url = s.url();
  HttpResult res = c.perform(r);
  ASSERT_TRUE(res.success()) << res.describe();
  EXPECT_LE(res.headers.size(), HttpClient::kMaxHeaders);
  EXPECT_EQ(res.header("x-long"), "");
}

TEST(HttpClient, StreamsLinesAcrossChunksAndStopsOnRequest) {
  std::string body = "{\"a\":1}\r\n\n{\"b\":2}\n{\"c\":3}";  // the last line has no newline
  ScriptedServer s(response("200 OK", body));
  HttpClient c;
  HttpRequest r;
  r.url = s.url("/watch");
  std::vector<std::string> lines;
  HttpResult res = c.stream_lines(r, [&](std::string_view l) {
    lines.emplace_back(l);
    return true;
  });
  ASSERT_TRUE(res.success()) << res.describe();
  EXPECT_EQ(lines, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "{\"c\":3}"}));
  EXPECT_TRUE(res.body.empty()) << "a stream is not buffered";

  lines.clear();
  res = c.stream_lines(r, [&](std::string_view l) {
    lines.emplace_back(l);
    return false;
  });
  EXPECT_EQ(res.failure, HttpFailure::kStopped) << res.describe();
  EXPECT_EQ(lines.size(), 1u);
}

TEST(HttpClient, OversizedStreamLineFails) {
  ScriptedServer s(response("200 OK", "short\n" + std::string(5000, 'z') + "\nafter\n"));
  HttpClient c;
  HttpRequest r;
  r.url = s.url("/watch");
  r.max_body = 100;
  std::vector<std::string> lines;
  HttpResult res = c.stream_lines(r, [&](std::string_view l) {
    lines.emplace_back(l);
    return true;
  });
  EXPECT_EQ(res.failure, HttpFailure::kTooLarge);
  EXPECT_NE(res.error.find("a line of the response is larger than 100 bytes"), std::string::npos) << res.error;
  EXPECT_EQ(lines, std::vector<std::string>{"short"});
}

TEST(HttpClient, ErrorBodyOfAStreamIsNotHandedToTheReader) {
  ScriptedServer s(response("410 Gone", "{\"kind\":\"Status\",\"code\":410}\n"));
  HttpClient c;
  HttpRequest r;
  r.url = s.url("/watch");
  bool called = false;
  HttpResult res = c.stream_lines(r, [&](std::string_view) {
    called = true;
    return true;
  });
  ASSERT_TRUE(res.ok()) << res.error;
  EXPECT_EQ(res.status, 410);
  EXPECT_FALSE(called);
  EXPECT_NE(res.describe().find("HTTP 410: {\"kind\":\"Status\""), std::string::npos) << res.describe();
}

// Headers promise a body that never comes.
const std::string kStall = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial";

TEST(HttpClient, WholeRequestTimeout) {
  ScriptedServer s(kStall, /*hold_open=*/true);
  HttpClient c;
  HttpRequest r;
  r.url = s.url();
  r.timeout = 300ms;
  auto t0 = std::chrono::steady_clock::now();
  HttpResult res = c.perform(r);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(res.failure, HttpFailure::kTimeout) << res.error;
  EXPECT_EQ(res.error.rfind("GET " + s.url() + ": ", 0), 0u) << res.error;
}

TEST(HttpClient, IdleTimeoutEndsASilentStream) {
  ScriptedServer s("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nline1\n\r\n",
                   /*hold_open=*/true);
  HttpClient c;
  HttpRequest r;
  r.url = s.url("/watch");
  r.timeout = 0ms;
  r.idle_timeout = 1000ms;
  std::vector<std::string> lines;
  auto t0 = std::chrono::steady_clock::now();
  HttpResult res = c.stream_lines(r, [&](std::string_view l) {
    lines.emplace_back(l);
    return true;
  });
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3500ms);
  EXPECT_EQ(res.failure, HttpFailure::kTimeout) << res.error;
  EXPECT_NE(res.error.find("no data for 1000 ms"), std::string::npos) << res.error;
  EXPECT_EQ(lines, std::vector<std::string>{"line1"});
}

TEST(HttpClient, CancelEndsARequestInProgressAndLaterOnes) {
  ScriptedServer s(kStall, /*hold_open=*/true);
  HttpClient c;
  HttpRequest r;
  r.url = s.url();
  r.timeout = 0ms;
  std::thread canceller([&] {
    std::this_thread::sleep_for(300ms);
    c.cancel();
  });
  auto t0 = std::chrono::steady_clock::now();
  HttpResult res = c.perform(r);
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  EXPECT_EQ(res.failure, HttpFailure::kCancelled) << res.error;
  EXPECT_EQ(c.perform(r).failure, HttpFailure::kCancelled) << "cancel sticks until reset";
  EXPECT_EQ(s.requests().size(), 1u);
  c.reset_cancel();
  EXPECT_FALSE(c.cancelled());
}

TEST(HttpClient, UnixSocket) {
  support::TempDir dir;
  std::string sock = dir.path() + "/api.sock";
  ScriptedServer s(response("200 OK", "over unix"), false, sock);
  HttpClient c;
  HttpRequest r;
  r.url = "http://localhost/v1/list";
  r.unix_socket = sock;
  HttpResult res = c.perform(r);
  ASSERT_TRUE(res.success()) << res.describe();
  EXPECT_EQ(res.body, "over unix");
  ASSERT_EQ(s.requests().size(), 1u);
  EXPECT_EQ(s.requests()[0].rfind("GET /v1/list HTTP/1.1\r\n", 0), 0u);
}

TEST(HttpClient, ConnectionFailureNamesTheUrl) {
  HttpClient c;
  HttpRequest r;
  {
    ScriptedServer gone("");  // a port that was free a moment ago
    r.url = gone.url("/x");
  }
  r.connect_timeout = 2000ms;
  HttpResult res = c.perform(r);
  EXPECT_EQ(res.failure, HttpFailure::kConnect) << res.error;
  EXPECT_EQ(res.error.rfind("GET " + r.url + ": ", 0), 0u) << res.error;
}

TEST(HttpClient, InvalidRequestsAreRefusedBeforeSending) {
  HttpClient c;
  HttpRequest r;
  r.url = "file:///etc/passwd";
  EXPECT_EQ(c.perform(r).failure, HttpFailure::kInvalid);
  r.url = "gopher://x/";
  EXPECT_EQ(c.perform(r).failure, HttpFailure::kInvalid);
  r.url = "http://127.0.0.1:9/";
  r.headers = {{"X-Evil", "a\r\nInjected: 1"}};
  HttpResult res = c.perform(r);
  EXPECT_EQ(res.failure, HttpFailure::kInvalid);
  EXPECT_NE(res.error.find("X-Evil"), std::string::npos) << res.error;
  r.headers = {{"Bad:Name", "v"}};
  EXPECT_EQ(c.perform(r).failure, HttpFailure::kInvalid);
  r.headers.clear();
  r.bearer_token = "t\nX: y";
  EXPECT_EQ(c.perform(r).failure, HttpFailure::kInvalid);
}

TEST(HttpClient, UrlForErrorsReplacesTheUrl) {
  HttpClient c;
  HttpRequest r;
  r.url = "ftp://hooks.example/services/T0/B0/SECRET";
  r.url_for_errors = "https://hooks.example";
  HttpResult res = c.perform(r);
  EXPECT_EQ(res.error.find("SECRET"), std::string::npos) << res.error;
  EXPECT_NE(res.error.find("GET https://hooks.example: "), std::string::npos) << res.error;
}

TEST(HttpUrl, RedactAndEncode) {
  EXPECT_EQ(redact_url("https://u:p@h:443/a/b?token=x#f"), "https://h:443/a/b");
  EXPECT_EQ(redact_url("http://h"), "http://h");
  EXPECT_EQ(redact_url("http://h#frag"), "http://h");
  EXPECT_EQ(redact_url("http://a@b@h/p"), "http://h/p");
  EXPECT_EQ(url_encode("spec.nodeName=n-1 x/y~_"), "spec.nodeName%3Dn-1%20x%2Fy~_");
  EXPECT_TRUE(header_safe("a b"));
  EXPECT_FALSE(header_safe(std::string("a\0b", 3)));
}

}  // namespace
}  // namespace vigil::net
