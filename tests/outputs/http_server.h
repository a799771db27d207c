// A scriptable HTTP/1.1 and HTTPS server on loopback for webhook tests. Each
// request takes the next scripted answer (default 200): a status with
// optional Retry-After, a stall (no answer until released), or a dropped
// connection.
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/outputs/peer_util.h"

namespace vigil::outputs::testing {

struct HttpRequest {
  std::string method, path, body;
  std::map<std::string, std::string> headers;  // lower-case names
};

struct HttpAnswer {
  enum Kind { kStatus, kStall, kDrop };
  HttpAnswer() = default;
  HttpAnswer(Kind k, int s = 200, std::string ra = "")  // NOLINT: brace-initialised in tests
      : kind(k), status(s), retry_after(std::move(ra)) {}
  Kind kind = kStatus;
  int status = 200;
  std::string retry_after;
};

class HttpServer {
 public:
  // tls: server cert/key; ca non-empty: require a client certificate from it.
  explicit HttpServer(std::string cert = "", std::string key = "", std::string client_ca = "") {
    if (!cert.empty()) {
      ctx_ = SSL_CTX_new(TLS_server_method());
      SSL_CTX_use_certificate_chain_file(ctx_, cert.c_str());
      SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM);
      if (!client_ca.empty()) {
        SSL_CTX_load_verify_locations(ctx_, client_ca.c_str(), nullptr);
        SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      }
    }
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
    ::listen(fd_, 16);
    socklen_t len = sizeof(sa);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~HttpServer() {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
      stalled_ = false;
    }
    cv_.notify_all();
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
    if (ctx_) SSL_CTX_free(ctx_);
  }
  std::uint16_t port() const { return port_; }
  std::string url(const std::string& path = "/alerts") const {
    return std::string(ctx_ ? "https" : "http") + "://" + (ctx_ ? "localhost" : "127.0.0.1") + ":" +
           std::to_string(port_) + path;
  }
  void script(std::vector<HttpAnswer> a) {
    std::lock_guard lk(mu_);
    for (auto& x : a) script_.push_back(x);
  }
  // Every request from now on gets `a` until cleared.
  void set_default(HttpAnswer a) {
    {
      std::lock_guard lk(mu_);
      default_ = a;
      stalled_ = a.kind == HttpAnswer::kStall;
    }
    cv_.notify_all();
  }
  // Every answer from now on is written this long after the request was read
  // (the request counts as received at once).
  void set_delay(std::chrono::milliseconds d) {
    std::lock_guard lk(mu_);
    delay_ = d;
  }
  std::vector<HttpRequest> requests() {
    std::lock_guard lk(mu_);
    return ok_requests_;
  }
  int attempts() {
    std::lock_guard lk(mu_);
    return attempts_;
  }
  bool wait_requests(std::size_t n, std::chrono::milliseconds t) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, t, [&] { return ok_requests_.size() >= n; });
  }

 private:
  struct Conn {
    int fd;
    SSL* ssl;
    int read(char* b, int n) { return ssl ? SSL_read(ssl, b, n) : static_cast<int>(::read(fd, b, n)); }
    void write(const std::string& s) {
      if (ssl) SSL_write(ssl, s.data(), static_cast<int>(s.size()));
      else (void)!::write(fd, s.data(), s.size());
    }
  };

  void loop() {
    block_sigpipe_in_this_thread();  // a client that hangs up must not kill the test
    for (;;) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      {
        std::lock_guard lk(mu_);
        if (stop_) {
          ::close(c);
          return;
        }
      }
      serve(c);  // one connection at a time is enough for one sink
    }
  }

  void serve(int c) {
    timeval tv{5, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    Conn conn{c, nullptr};
    if (ctx_) {
      conn.ssl = SSL_new(ctx_);
      SSL_set_fd(conn.ssl, c);
      if (SSL_accept(conn.ssl) != 1) {
        SSL_free(conn.ssl);
        ::close(c);
        return;
      }
    }
    std::string buf;
    char tmp[8192];
    for (;;) {  // keep-alive: several requests per connection
      std::size_t hdr_end;
      while ((hdr_end = buf.find("\r\n\r\n")) == std::string::npos) {
        const int n = conn.read(tmp, sizeof(tmp));
        if (n <= 0) return close(conn);
        buf.append(tmp, static_cast<std::size_t>(n));
      }
      HttpRequest req;
      const auto lines = split_crlf(buf.substr(0, hdr_end));
      if (lines.empty()) return close(conn);
      const auto sp1 = lines[0].find(' ');
      const auto sp2 = lines[0].find(' ', sp1 + 1);
      req.method = lines[0].substr(0, sp1);
      req.path = lines[0].substr(sp1 + 1, sp2 - sp1 - 1);
      for (std::size_t i = 1; i < lines.size(); ++i) {
        const auto colon = lines[i].find(':');
        if (colon == std::string::npos) continue;
        std::string name = lines[i].substr(0, colon);
        for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        std::string value = lines[i].substr(colon + 1);
        while (!value.empty() && value[0] == ' ') value.erase(0, 1);
        req.headers[name] = value;
      }
      const std::size_t clen = req.headers.count("content-length") ? std::stoul(req.headers["content-length"]) : 0;
      buf.erase(0, hdr_end + 4);
      while (buf.size() < clen) {
        const int n = conn.read(tmp, sizeof(tmp));
        if (n <= 0) return close(conn);
        buf.append(tmp, static_cast<std::size_t>(n));
      }
      req.body = buf.substr(0, clen);
      buf.erase(0, clen);
      HttpAnswer a;
      std::chrono::milliseconds delay{0};
      {
        std::unique_lock lk(mu_);
        delay = delay_;
        ++attempts_;
        if (!script_.empty()) {
          a = script_.front();
          script_.pop_front();
        } else {
          a = default_;
        }
        if (a.kind == HttpAnswer::kStall) {
          cv_.wait(lk, [&] { return !stalled_ || stop_; });
          if (stop_) return close(conn);
          a = HttpAnswer{};  // released: answer 200 (the client has likely given up)
        }
        if (a.kind == HttpAnswer::kStatus && a.status >= 200 && a.status < 300) {
          ok_requests_.push_back(req);
        }
      }
      cv_.notify_all();
      if (a.kind == HttpAnswer::kDrop) return close(conn);
      if (delay.count() > 0) std::this_thread::sleep_for(delay);
      std::string resp = "HTTP/1.1 " + std::to_string(a.status) + " X\r\nContent-Length: 2\r\n";
      if (!a.retry_after.empty()) resp += "Retry-After: " + a.retry_after + "\r\n";
      resp += "\r\nok";
      conn.write(resp);
    }
  }

  static std::vector<std::string> split_crlf(const std::string& s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
      const auto e = s.find("\r\n", start);
      out.push_back(s.substr(start, e == std::string::npos ? std::string::npos : e - start));
      if (e == std::string::npos) break;
      start = e + 2;
    }
    return out;
  }

  void close(Conn& c) {
    if (c.ssl) {
      SSL_free(c.ssl);
      c.ssl = nullptr;
    }
    ::close(c.fd);
  }

  SSL_CTX* ctx_ = nullptr;
  int fd_;
  std::uint16_t port_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<HttpAnswer> script_;
  HttpAnswer default_;
  bool stalled_ = false;
  bool stop_ = false;
  int attempts_ = 0;
  std::chrono::milliseconds delay_{0};
  std::vector<HttpRequest> ok_requests_;
};

// A CA, a server certificate for localhost/127.0.0.1 and a client
// certificate, made with the openssl command line in `dir`.
inline bool make_test_pki(const std::string& dir) {
  const std::string q = "cd '" + dir + "' && ";
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
  const std::string cmds = q + "openssl req -x509" + ec + "-keyout ca.key -out ca.crt -days 2 -subj /CN=vigil-test-ca" +
                           " && openssl req" + ec + "-keyout server.key -out server.csr -subj /CN=localhost" +
                           " && printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > san.ext" +
                           " && openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial" +
                           " -out server.crt -days 2 -extfile san.ext" + " && openssl req" + ec +
                           "-keyout client.key -out client.csr -subj /CN=vigil-agent" +
                           " && openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial" +
                           " -out client.crt -days 2 > /dev/null 2>&1";
  return std::system(("(" + cmds + ") > /dev/null 2>&1").c_str()) == 0;
}

}  // namespace vigil::outputs::testing
