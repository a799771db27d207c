// Server: the webserver of `webserver: {enabled: true, listen: ...}`. It
// serves, over HTTP/1.1 (cpp-httplib), on its own threads:
//   GET /metrics  the Prometheus text format (0.0.4) from `metrics()`
//   GET /healthz  200 "ok", or 503 with one reason per line (`health()`)
//   GET /readyz   200 "ready", or 503 with why not (`ready()`)
// and calls `sample()` once a second on a thread of its own, so the health
// check measures its windows whether or not anyone is asking.
//
//   auto s = metrics::Server::start({"0.0.0.0:8765", log}, handlers);
//   ...
//   (*s)->stop();   // also done by the destructor
//
// Bounded: two worker threads, requests of at most 4 KiB, 5 s read and
// write timeouts, no request body accepted.
//
// Thread-safety: the handlers run on the server's threads, concurrently;
// they must be thread-safe. start()/stop() from the owner.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "engine/metrics/health.h"
#include "engine/util/result.h"

namespace httplib {
class Server;
}

namespace vigil::metrics {

struct ServerOptions {
  std::string listen = "0.0.0.0:8765";  // host:port, [v6]:port
  std::shared_ptr<spdlog::logger> log;  // null: nothing is logged
};

struct Handlers {
  std::function<std::string()> metrics;
  std::function<Verdict()> health;
  std::function<Verdict()> ready;
  std::function<void()> sample;  // once a second (may be empty)
};

struct ListenAddress {
  std::string host;
  int port = 0;
};
// "0.0.0.0:8765", "[::1]:8765", "localhost:9000": an error saying what is
// wrong otherwise (port 0 is refused: probes need a known port).
Result<ListenAddress> parse_listen(std::string_view s);

class Server {
 public:
  // Binds and starts serving; Error::bad_input for a malformed address,
  // Error::runtime when the port cannot be bound (in use, no permission).
  static Result<std::unique_ptr<Server>> start(const ServerOptions& opts, Handlers h);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void stop();
  int port() const { return port_; }  // the bound port

 private:
  Server() = default;
  std::unique_ptr<httplib::Server> http_;
  std::thread serve_thread_;
  std::thread sample_thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  int port_ = 0;
  Handlers h_;
};

}  // namespace vigil::metrics
