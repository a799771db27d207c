#include "engine/metrics/server.h"

#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include <httplib.h>

namespace vigil::metrics {
namespace {

constexpr const char* kMetricsType = "text/plain; version=0.0.4; charset=utf-8";

std::string verdict_body(const Verdict& v, std::string_view ok_text) {
  if (v.ok) return std::string(ok_text) + "\n";
  std::string out;
  for (const std::string& r : v.reasons) out += r + "\n";
  return out;
}

}  // namespace

Result<ListenAddress> parse_listen(std::string_view s) {
  auto bad = [&](std::string_view why) {
    return Error::bad_input("webserver.listen '" + std::string(s) + "': " + std::string(why));
  };
  std::string_view host, port;
  if (!s.empty() && s.front() == '[') {
    const auto close = s.find(']');
    if (close == std::string_view::npos || close + 1 >= s.size() || s[close + 1] != ':') {
      return bad("expected [ipv6]:port");
    }
    host = s.substr(1, close - 1);
    port = s.substr(close + 2);
  } else {
    const auto colon = s.rfind(':');
    if (colon == std::string_view::npos) return bad("expected host:port");
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return bad("an IPv6 address goes in brackets: [::]:8765");
  }
  if (host.empty()) return bad("the host is empty (0.0.0.0 listens on every address)");
  int p = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || ptr != port.data() + port.size() || p < 1 || p > 65535) {
    return bad("the port must be a number from 1 to 65535");
  }
  return ListenAddress{std::string(host), p};
}

Result<std::unique_ptr<Server>> Server::start(const ServerOptions& opts, Handlers h) {
  auto addr = parse_listen(opts.listen);
  if (!addr) return addr.error();
  std::unique_ptr<Server> s(new Server());
  s->h_ = std::move(h);
  s->http_ = std::make_unique<httplib::Server>();
  httplib::Server& http = *s->http_;
  // SO_REUSEADDR only: with httplib's default SO_REUSEPORT a second agent on
  // the node would share the port and answer half the probes.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  http.new_task_queue = [] { return new httplib::ThreadPool(2); };
  http.set_payload_max_length(4096);
  http.set_read_timeout(std::chrono::seconds(5));
  http.set_write_timeout(std::chrono::seconds(5));
  http.set_keep_alive_max_count(100);
  Server* self = s.get();
  http.Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    res.set_content(self->h_.metrics ? self->h_.metrics() : std::string(), kMetricsType);
  });
  auto verdict = [](const std::function<Verdict()>& fn, std::string_view ok_text, httplib::Response& res) {
    const Verdict v = fn ? fn() : Verdict{};
    res.status = v.ok ? 200 : 503;
    res.set_content(verdict_body(v, ok_text), "text/plain; charset=utf-8");
  };
  http.Get("/healthz",
           [self, verdict](const httplib::Request&, httplib::Response& res) { verdict(self->h_.health, "ok", res); });
  http.Get("/readyz",
           [self, verdict](const httplib::Request&, httplib::Response& res) { verdict(self->h_.ready, "ready", res); });
  errno = 0;
  if (!http.bind_to_port(addr->host, addr->port)) {
    const int err = errno;
    return Error::runtime("webserver: cannot listen on " + opts.listen + ": " +
                          (err ? std::strerror(err) : "the address could not be resolved or bound"));
  }
  s->port_ = addr->port;
  s->serve_thread_ = std::thread([self, log = opts.log] {
    if (!self->http_->listen_after_bind() && log) log->error("webserver: stopped serving");
  });
  // Until it runs, stop() could not interrupt it: wait for it (briefly).
  for (int i = 0; i < 2000 && !http.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  s->sample_thread_ = std::thread([self] {
    std::unique_lock<std::mutex> l(self->mu_);
    while (!self->stopping_) {
      l.unlock();
      if (self->h_.sample) self->h_.sample();
      l.lock();
      self->cv_.wait_for(l, std::chrono::seconds(1), [self] { return self->stopping_; });
    }
  });
  if (opts.log) opts.log->info("webserver: /metrics, /healthz and /readyz on {}", opts.listen);
  return s;
}

void Server::stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (http_) http_->stop();
  if (serve_thread_.joinable()) serve_thread_.join();
  if (sample_thread_.joinable()) sample_thread_.join();
}

Server::~Server() { stop(); }

}  // namespace vigil::metrics
