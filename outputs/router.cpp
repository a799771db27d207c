#include "outputs/router.h"

#include <spdlog/logger.h>

namespace vigil::outputs {

Result<std::unique_ptr<Router>> Router::from_config(const YAML::Node& outputs,
                                                    const RouterOptions& opts) {
  auto cfg = parse_outputs(outputs, opts.state_dir);
  if (!cfg) return cfg.error();
  std::vector<std::unique_ptr<Sink>> sinks;
  for (const OutputConfig& c : *cfg) {
    auto t = make_transport(c, opts.log);
    if (!t) return t.error();
    std::unique_ptr<Spool> spool;
    if (!c.sink.spool.dir.empty()) {
      auto s = Spool::open(c.sink.spool.dir, c.sink.spool.max_bytes);
      if (!s) return Error{s.error().kind, "output " + c.sink.name + ": " + s.error().message};
      spool = std::move(*s);
      if (opts.log && !spool->empty()) {
        opts.log->info("output {}: {} spooled alerts from an earlier run will be delivered first",
                       c.sink.name, spool->count());
      }
    }
    sinks.push_back(std::make_unique<Sink>(c.sink, std::move(*t), opts.log, std::move(spool)));
    if (opts.log) {
      opts.log->info("output {}: type {}, format {}", c.sink.name, c.sink.type,
                     format_name(c.sink.format));
    }
  }
  return std::make_unique<Router>(std::move(sinks), opts);
}

Router::Router(std::vector<std::unique_ptr<Sink>> sinks, RouterOptions opts)
    : sinks_(std::move(sinks)), opts_(std::move(opts)) {
  for (auto& s : sinks_) s->start();
}

Router::~Router() {
  if (!stopped_) shutdown(std::chrono::milliseconds(0));
}

void Router::publish(std::shared_ptr<const event::Alert> a) noexcept {
  if (!a) return;
  if (a->hostname.empty() && !opts_.hostname.empty()) {
    try {
      auto copy = std::make_shared<event::Alert>(*a);
      copy->hostname = opts_.hostname;
      a = std::move(copy);
    } catch (...) {  // out of memory: deliver without the hostname
    }
  }
  const std::size_t bytes = alert_bytes(*a);
  for (auto& s : sinks_) s->offer(a, bytes);
}

void Router::shutdown(std::chrono::milliseconds deadline) {
  stopped_ = true;
  const auto until = std::chrono::steady_clock::now() + deadline;
  // Stop all sinks in parallel so one slow sink does not eat the others' time.
  std::vector<std::thread> stoppers;
  for (auto& s : sinks_) {
    stoppers.emplace_back([&s, until] { s->shutdown(until); });
  }
  for (auto& t : stoppers) t.join();
}

std::vector<SinkStats> Router::stats() const {
  std::vector<SinkStats> out;
  out.reserve(sinks_.size());
  for (const auto& s : sinks_) out.push_back(s->stats());
  return out;
}

}  // namespace vigil::outputs

namespace vigil::outputs {

std::uint64_t Router::drops_total() const {
  std::uint64_t t = 0;
  for (const SinkStats& s : stats()) t += s.drops_total();
  return t;
}

std::string Router::describe_drops() const {
  std::string out;
  for (const SinkStats& s : stats()) {
    for (std::size_t i = 0; i < kDropReasonCount; ++i) {
      if (s.drops[i] == 0) continue;
      if (!out.empty()) out += ' ';
      out += s.name + '/' + std::string(drop_reason_name(static_cast<DropReason>(i))) + '=' +
             std::to_string(s.drops[i]);
    }
  }
  return out.empty() ? "none" : out;
}

}  // namespace vigil::outputs
