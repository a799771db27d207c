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
// Reload, in two steps so that a configuration with an error changes nothing:
//
//   auto plan = r->prepare(new_cfg["outputs"]);   // any thread: parses, opens, validates
//   if (!plan) { log->error(plan.error().message); return; }   // nothing changed
//   r->commit(std::move(*plan));                    // the owner: one step
//
// A sink whose entry is unchanged (same name, same YAML once canonically
// serialised, same resolved secret) is carried over as the same object: same
// queue, spool and counters. A new entry starts a new sink. A removed or
// changed one is retired: it gets opts.retire_deadline to deliver what it
// holds (with a spool, what is left stays in the spool on disk), off the
// caller's thread. A changed sink that shares its name, spool directory or
// file with a retiring one starts only once that one has finished, so two
// sinks never write one spool or interleave one file.
//
// Counters: stats() lists the sinks in force; the counters of a retired sink
// are added to the sink in force of the same name, if any, so they never go
// down. drops_total() and describe_drops() also count the retired sinks.
//
// Thread-safety: publish(), stats(), drops_total(), describe_drops() and
// prepare() may be called from any thread, also concurrently; commit() and
// shutdown() from the owner, one at a time (prepare/commit pairs in order:
// a plan is made against the sinks in force when it is prepared).
// shutdown() once. publish() after shutdown() counts the alert as dropped.
// commit() waits for the publish() calls in progress (each only queues), so
// an alert is in the old sinks before they start to retire, or in the new ones.
#pragma once

#include <yaml-cpp/yaml.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
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
  // How long a sink removed or changed by a reload may take to deliver what
  // it holds before it stops (with a spool, the rest stays on disk).
  std::chrono::milliseconds retire_deadline{5000};
};

class Router {
 private:
  // One sink in force: its reload key (name + canonical entry; "" for sinks
  // given to the constructor, which a reload always replaces) and what it
  // holds that a successor must not share while it runs.
  struct Entry {
    std::string key;
    std::vector<std::string> resources;  // "name:x", "spool:/dir", "file:/path"
    std::shared_ptr<Sink> sink;
    // Ready once the sink's start() has run (a changed sink starts after the
    // one it replaces has stopped): it is retired only after that.
    std::shared_future<void> started;
  };

 public:
  // A new set of sinks, built and checked, not yet in force (prepare()).
  // Dropping a plan closes what it opened.
  class Plan {
   public:
    // Names of the sinks the commit keeps as they are, starts, replaces
    // (same name, new configuration) and stops.
    std::vector<std::string> kept, added, replaced, removed;
    // "kept stdout-0; added file-1; removed webhook-2" ("unchanged" if so).
    std::string describe() const;

   private:
    friend class Router;
    struct Item {
      Entry entry;
      bool carried = false;        // entry.sink is the sink in force
      std::string deferred_spool;  // open this spool dir once the predecessors stopped
      std::uint64_t spool_max_bytes = 0;
    };
    std::vector<Item> items;
    std::uint64_t generation = 0;
  };

  // `outputs` is the YAML sequence under `outputs:` (null/absent -> one
  // stdout json sink). Errors are Error::bad_input naming the entry and key,
  // or Error::runtime when a sink cannot start (file not writable, spool
  // directory not creatable).
  static Result<std::unique_ptr<Router>> from_config(const YAML::Node& outputs, const RouterOptions& opts);
  // Takes already-built sinks (tests, embedding). Starts them.
  Router(std::vector<std::unique_ptr<Sink>> sinks, RouterOptions opts);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Never blocks on a sink; never throws.
  void publish(std::shared_ptr<const event::Alert> a) noexcept;

  // Builds the sinks `outputs` describes (the errors of from_config), reusing
  // the unchanged ones in force. Nothing in force changes.
  Result<std::unique_ptr<Plan>> prepare(const YAML::Node& outputs) const;
  // Puts a plan in force in one step: the next publish() goes to the new set.
  // Never waits on a sink. REQUIRES: no commit since the plan was prepared
  // (else the plan is refused, logged, and nothing changes; returns false).
  bool commit(std::unique_ptr<Plan> plan);

  // Waits for the reload retirements, then delivers what it can before
  // `deadline` (from then), spools or counts the rest, stops the workers.
  void shutdown(std::chrono::milliseconds deadline);
  // Counters of every sink in force, in configuration order (the metrics
  // endpoint reads these; see SinkStats::drops for the loss by reason).
  std::vector<SinkStats> stats() const;
  // Whether a sink in force has `aggregate: false` (it delivers every
  // repeat, so the aggregation must publish them; pipeline/aggregate.h).
  bool repeats_wanted() const;
  // Alerts lost in the outputs, all sinks (retired ones too) and reasons together.
  std::uint64_t drops_total() const;
  // "webhook-0/queue_full=149 webhook-0/retries_exhausted=25", or "none".
  std::string describe_drops() const;

 private:
  struct Retiring {
    std::vector<std::string> resources;
    std::shared_ptr<Sink> sink;
    std::shared_future<void> done;
  };
  struct Background {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> finished;
  };
  using Snapshot = std::shared_ptr<const std::vector<Entry>>;

  Router(Snapshot sinks, RouterOptions opts);
  Snapshot snapshot() const;
  // The sinks in force with the retired counters of their names added, then
  // (when `orphans`) the retired and retiring sinks whose name is not in force.
  std::vector<SinkStats> collect(bool orphans) const;
  void run_in_background(std::function<void()> fn);
  void join_finished();

  RouterOptions opts_;
  // publish() holds it shared while it offers, so that once commit() (which
  // holds it exclusively to swap) returns, no alert is still on its way into
  // a sink that is about to retire.
  mutable std::shared_mutex mu_;
  Snapshot sinks_;                            // guarded by mu_ (the pointer)
  std::vector<Retiring> retiring_;            // guarded by mu_
  std::map<std::string, SinkStats> retired_;  // guarded by mu_: final counters by name
  std::uint64_t generation_ = 0;              // guarded by mu_: commits so far
  std::vector<Background> background_;        // owner only
  bool stopped_ = false;                      // owner only
};

}  // namespace vigil::outputs
