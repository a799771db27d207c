// A source plugin as a source::EventSource.
//
// The plugin's vigil_plugin_next_batch() runs on a thread of its own, which
// copies each event into a bounded queue (by events and by bytes) and wakes
// the runner through an eventfd. The runner's poll() drains the queue on the
// pipeline thread. So a plugin that blocks stalls only its own thread, and one
// that floods loses its own events (counted as queue_full) — never detection.
//
// The events become event::Event of type kPlugin: pid/tid from the plugin (the
// state enriches them with process, container and pod), the time the plugin
// gave or the time vigil took the event, and PluginData holding the plugin's
// name, source, event name, GPU minor and bytes.
//
// Thread-safety: the runner's thread calls every method; the source thread is
// internal.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/plugin/plugin.h"
#include "engine/source/source.h"

namespace spdlog {
class logger;
}

namespace vigil::plugin {

struct SourceOptions {
  std::size_t queue_events = 8192;             // events waiting for the pipeline, at most
  std::size_t queue_bytes = 16u << 20;         // their data bytes, at most
  std::uint32_t batch = 256;                   // events asked of next_batch at once
  std::uint32_t timeout_ms = 100;              // next_batch's wait (how fast a stop is seen)
  std::chrono::milliseconds stop_grace{2000};  // how long a stop waits for a blocked plugin
};

class PluginSource final : public source::EventSource {
 public:
  // Starts the source thread. `plugin` must be initialised, a source, and
  // outlive this object.
  static Result<std::unique_ptr<PluginSource>> start(Plugin& plugin, SourceOptions opts,
                                                     std::shared_ptr<spdlog::logger> log);
  ~PluginSource() override;  // stops the thread (see SourceOptions::stop_grace)

  std::string_view name() const override { return name_; }
  int wait_fd() const override;
  Result<std::size_t> poll(std::size_t budget, const Emit& emit) override;
  Health health() const override;
  std::string failure() const override;
  source::Drops drops() const override;
  // The queue between the plugin's thread and the loop, in events (any thread).
  std::optional<source::Backlog> backlog() const override;
  std::vector<std::string> attached() const override { return {name_}; }

  // Copies of the first `max` events waiting in the queue, as poll() will
  // give them; they stay queued. For a look at what a plugin reported before
  // the loop runs (the agent's ready line reads the GPUs' ECC this way).
  std::vector<event::Event> peek(std::size_t max) const;

  // Stops asking the plugin for events (the queue still drains). Idempotent.
  void stop();

  class Impl;

 private:
  PluginSource() = default;
  std::string name_;
  std::shared_ptr<Impl> impl_;  // shared with the thread, which may outlive a stop that timed out
};

}  // namespace vigil::plugin
