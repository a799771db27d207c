// The output router: fans each alert out to every configured sink without
// ever waiting on one (see sink.h for the per-sink queue, filters, retries
// and spool; docs/outputs.md for the user's view).
//
//   auto r = vigil::outputs::Router::from_config(cfg["outputs"], {host, log});
//   if (!r) { log->error(r.error().message); return 2; }
//   (*r)->publish(std::make_shared<const vigil::event::Alert>(alert));
//   ...
//   (*r)->shutdown(std::chrono::seconds(5));
//
// Thread-safety: publish() and stats() may be called from any thread, also
// concurrently; shutdown() once, from the owner. publish() after shutdown()
// counts the alert as dropped.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/event/alert.h"
#include "engine/util/result.h"
#include "outputs/config.h"
#include "outputs/format.h"
#include "outputs/sink.h"

namespace spdlog {
class logger;
}

namespace vigil::outputs {

struct RouterOptions {
  std::string hostname;  // filled into alerts whose hostname is empty
  std::shared_ptr<spdlog::logger> log;
  std::string state_dir = "/var/lib/vigil";
};

class Router {
 public:
  // `outputs` is the YAML sequence under `outputs:` (null/absent -> one
  // stdout json sink). Errors are Error::bad_input naming the entry and key,
  // or Error::runtime when a sink cannot start (file not writable, spool
  // directory not creatable).
  static Result<std::unique_ptr<Router>> from_config(const YAML::Node& outputs,
                                                     const RouterOptions& opts);
  // Takes already-built sinks (tests, embedding). Starts them.
  Router(std::vector<std::unique_ptr<Sink>> sinks, RouterOptions opts);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Never blocks on a sink; never throws.
  void publish(std::shared_ptr<const event::Alert> a) noexcept;
  // Delivers what it can before `deadline` (from now), spools or counts the
  // rest, stops the workers.
  void shutdown(std::chrono::milliseconds deadline);
  // Counters of every sink, in configuration order (the metrics endpoint
  // reads these; see SinkStats::drops for the loss by reason).
  std::vector<SinkStats> stats() const;
  // Alerts lost in the outputs, all sinks and reasons together.
  std::uint64_t drops_total() const;
  // "webhook-0/queue_full=149 webhook-0/retries_exhausted=25", or "none".
  std::string describe_drops() const;

 private:
  std::vector<std::unique_ptr<Sink>> sinks_;
  RouterOptions opts_;
  bool stopped_ = false;
};

}  // namespace vigil::outputs
