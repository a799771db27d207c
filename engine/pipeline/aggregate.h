// Aggregator: repeats of a rule's alert become one summary (docs/outputs.md,
// "Aggregation"). A condition that holds, such as a miner computing for an
// hour, is one incident, not an alert per event.
//
//   pipeline::Aggregator agg({}, publish);
//   agg.advance(ev.hdr.ts_ns);                            // each event, before its alerts
//   switch (agg.offer(alert, ruleset->aggregate_of(alert.rule))) { ... }
//   agg.flush();                                         // end of input, shutdown
//
// For a rule with an aggregation (rules::AggregateSpec) the key of an alert
// is the rule and the values of the spec's `by` fields in the alert's
// output_fields (the rule loader puts them there; no `by`: every output
// field). Time is the alerts' event time, never the clock, so a replay of a
// capture gives the alerts the live run gave:
//   - the first alert of a key goes out at once (kSend) and opens a window
//     [its time, its time + window);
//   - an alert of an open key is a repeat: counted, kept as the latest, not
//     sent (kCounted; kRepeat when repeats are wanted by an output that does
//     not aggregate: the caller publishes it marked Alert::repeat);
//   - when event time (the largest time advance() was given) reaches the
//     window's end, a window with repeats is published as one summary: the
//     latest repeat, tagged "aggregated", with Alert::aggregate (the count,
//     the first and last times, the window) and a uuid derived from the
//     first alert's; the key stays open for the next window, so an incident
//     that goes on gives one summary per window and no new first alert. A
//     window without repeats closes the key: the next alert is a first one;
//   - open keys are bounded (AggregatorOptions): past a bound the key with
//     the earliest window end is closed at once, its summary published with
//     reason "evicted";
//   - flush() publishes the summary of every open window (reason "end") and
//     closes every key: nothing counted is lost at the end of a replay or at
//     shutdown.
// Summaries are published in order of window end (then of opening), so the
// output depends on nothing but the alerts and the times given.
//
// Ownership: owns its open keys; `publish` must outlive it. Thread-safety:
// offer(), advance() and flush() on the pipeline thread only;
// set_repeats_wanted() and stats() from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/event/alert.h"
#include "engine/pipeline/pipeline.h"

namespace vigil::rules {
struct AggregateSpec;
}

namespace vigil::pipeline {

struct AggregatorOptions {
  // Open keys, all rules together, and of one rule. The configuration's
  // aggregation.max_keys and aggregation.max_keys_per_rule.
  std::size_t max_keys = kDefaultMaxKeys;
  std::size_t max_keys_per_rule = kDefaultMaxKeysPerRule;
  static constexpr std::size_t kDefaultMaxKeys = 4096;
  static constexpr std::size_t kDefaultMaxKeysPerRule = 1024;
};

// What the aggregation did, by rule (any thread).
class AggregatorStats {
 public:
  struct Rule {
    std::string rule;
    std::uint64_t counted = 0;  // repeats counted into a summary instead of sent
    // Summaries published, by why their window ended.
    std::uint64_t summaries_window = 0, summaries_evicted = 0, summaries_end = 0;
    std::uint64_t evicted = 0;  // keys closed early by a bound (with or without repeats)
  };
  // Rules in name order; only rules with a repeat, a summary or an eviction.
  // Past kMaxRules names, the others are counted as one, "_other".
  std::vector<Rule> snapshot() const;
  static constexpr std::size_t kMaxRules = 500;
  std::uint64_t open() const { return open_.load(std::memory_order_relaxed); }

 private:
  friend class Aggregator;
  Rule& of(const std::string& rule);  // REQUIRES: mu_ held
  mutable std::mutex mu_;
  std::map<std::string, Rule, std::less<>> rules_;  // guarded by mu_; bounded by the rule names
  std::atomic<std::uint64_t> open_{0};
};

class Aggregator {
 public:
  enum class Verdict : std::uint8_t {
    kSend,     // publish the alert as it is
    kRepeat,   // a repeat, marked Alert::repeat: publish it (for outputs that do not aggregate)
    kCounted,  // a repeat, counted: the alert was taken, publish nothing
  };

  Aggregator(AggregatorOptions opts, Publisher publish);
  ~Aggregator();
  Aggregator(const Aggregator&) = delete;
  Aggregator& operator=(const Aggregator&) = delete;

  // Judges one alert of a rule whose aggregation is `spec` (null: kSend,
  // the alert untouched). kCounted moves the alert out of `a`.
  Verdict offer(event::Alert& a, const rules::AggregateSpec* spec);
  // Event time reached `now_ns`: publishes the summaries of the windows that
  // ended by then. Costs one comparison when none did.
  void advance(std::uint64_t now_ns);
  // Publishes the summary of every open window and closes every key.
  void flush();
  // Whether an output delivers every alert (outputs' `aggregate: false`):
  // then repeats are kRepeat, not kCounted.
  void set_repeats_wanted(bool wanted) { repeats_wanted_.store(wanted, std::memory_order_relaxed); }

  std::size_t open() const { return keys_.size(); }
  std::uint64_t now() const { return now_; }
  const AggregatorStats& stats() const { return stats_; }

 private:
  struct Key {
    std::string rule;
    std::vector<std::string> by;
    std::uint64_t window_ns = 0;
    std::uint64_t start_ns = 0, end_ns = 0;  // the window in force
    std::uint64_t seq = 0;                   // opening order: ties of end_ns
    std::uint64_t count = 0, first_ns = 0, last_ns = 0, total = 0;
    std::string first_uuid;
    std::optional<event::Alert> last;  // the latest repeat of the window
  };
  using Order = std::pair<std::uint64_t, std::uint64_t>;  // (end_ns, seq)
  enum class Why : std::uint8_t { kWindow, kEvicted, kEnd };

  // Publishes the summary of `k`'s window when it has repeats.
  void summarise(Key& k, Why why);
  // Closes the key at `it` of order_ (evicted or flushed).
  void close(std::map<Order, const std::string*>::iterator it, Why why);
  // Makes room for one more key of `rule`.
  void make_room(const std::string& rule);

  AggregatorOptions opts_;
  Publisher publish_;
  std::atomic<bool> repeats_wanted_{false};
  std::uint64_t now_ = 0;  // event time: the largest advance() had
  std::uint64_t next_seq_ = 0;
  std::unordered_map<std::string, Key> keys_;  // "rule\0key values" -> its key
  std::map<Order, const std::string*> order_;  // every open key by window end (keys_ holds the string)
  // Per rule, its open keys by window end (for the per-rule bound).
  std::unordered_map<std::string, std::map<Order, const std::string*>> by_rule_;
  AggregatorStats stats_;
};

}  // namespace vigil::pipeline
