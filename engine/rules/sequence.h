// Sequences: the mutable half of a sequence rule. The compiled Ruleset holds
// each sequence's steps (indexed and guarded like rules) and is immutable; the
// partial matches live in a SequenceState that the evaluating thread owns
// (the pipeline's), one PartialMatches table per sequence, bounded.
//
//   rules::SequenceStats stats;                       // outlives reloads
//   rules::SequenceState seq(*ruleset, &stats);       // one per ruleset in force
//   ruleset->evaluate(ctx, alerts, &seq);
//
// Time is the events' time (hdr.ts_ns), never the clock, so a replay of a
// capture completes and evicts exactly what the live run did.
//
// Thread-safety: PartialMatches and SequenceState belong to one thread.
// SequenceStats may be read (snapshot) from any thread while that thread
// counts evictions (relaxed atomics).
#pragma once

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/event/alert.h"

namespace vigil::rules {

class Ruleset;

// Evictions of one sequence's partial matches, by reason.
struct EvictionCounts {
  std::atomic<std::uint64_t> expired{0};   // the window passed before the last step
  std::atomic<std::uint64_t> capacity{0};  // the table was full: the oldest made room
};

// The eviction counters of every sequence ever loaded, by name: they survive
// reloads, so the metrics' counters only grow.
class SequenceStats {
 public:
  // The counters of `sequence` (created on first use); stable for the
  // lifetime of this object. Past kMaxSequences names (reloads that rename
  // sequences), new names share the counters of "_other".
  EvictionCounts* counts(const std::string& sequence);
  static constexpr std::size_t kMaxSequences = 500;
  struct Row {
    std::string sequence;
    std::uint64_t expired = 0;
    std::uint64_t capacity = 0;
  };
  std::vector<Row> snapshot() const;  // sorted by name

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, std::unique_ptr<EvictionCounts>>> counts_;  // guarded by mu_
};

// What one partial match may hold, so that the table's memory is bounded
// whatever the events carry: a rendered field of an earlier step is cut to
// kMaxStepFieldBytes (ending in "..."), and a correlation key longer than
// kMaxKeyBytes is kept as its first bytes and a 128-bit hash of the whole.
inline constexpr std::size_t kMaxStepFieldBytes = 256;
inline constexpr std::size_t kMaxKeyBytes = 256;

// Cuts `text` to kMaxStepFieldBytes (the last three bytes "...").
void bound_step_field(std::string& text);
// Replaces a key longer than kMaxKeyBytes by its head and a hash of the whole.
void bound_key(std::string& key);

// A rendered output field of a step that is over: what the alert needs of
// it once its event is gone.
struct StepField {
  std::string text;            // as the output text shows it
  event::FieldValue value;     // as output_fields carries it, unless value_is_text
  bool value_is_text = false;  // a string field: its value is `text`
};

// One partial match: the steps done so far for one key.
struct Partial {
  std::uint64_t first_ns = 0;     // time of the first step's event: the window starts here
  std::uint32_t next = 1;         // the step it waits for (0: a counted first step, not done yet)
  std::vector<StepField> fields;  // the earlier steps' output fields, in output token order
  // A first step with a `count`: the times of its matches within the window
  // (oldest first, at most its count; first_ns is the oldest). The window
  // slides: a time that falls out of it is dropped, not the whole match.
  std::vector<std::uint64_t> first_times;
  std::uint32_t step_hits = 0;        // matches of the awaited later step so far (a counted step)
  std::vector<std::string> distinct;  // the `distinct` values of the steps done (each bounded as a key)
};

// The partial matches of one sequence, by correlation key, at most
// `capacity` of them, oldest first (by the time of their first step).
class PartialMatches {
 public:
  PartialMatches(std::uint64_t window_ns, std::size_t capacity, EvictionCounts* counts);

  // The live partial match of `key` at time `now_ns`; null when there is none
  // or when its window passed (then it is evicted and counted as expired).
  Partial* find(std::string_view key, std::uint64_t now_ns);
  // A fresh partial match for `key` whose first step happened at `now_ns`
  // (one that was there starts again, its field buffers reused). Evicts the expired first, then, when
  // the table is full, the oldest (counted as capacity).
  Partial& start(std::string_view key, std::uint64_t now_ns);
  void erase(std::string_view key);
  // Evicts the matches whose window passed at `now_ns` (oldest first; stops
  // at the first that is still live).
  void expire(std::uint64_t now_ns);

  std::size_t size() const { return index_.size(); }
  std::uint64_t window_ns() const { return window_ns_; }

 private:
  struct Entry {
    std::string key;
    Partial p;
  };
  bool expired(const Partial& p, std::uint64_t now_ns) const {
    return now_ns > p.first_ns && now_ns - p.first_ns > window_ns_;
  }
  void drop(std::list<Entry>::iterator it);
  // An expired match of a counted first step keeps its matches still within
  // the window (first step not done any more); true when it has some left.
  bool slide(Partial& p, std::uint64_t now_ns) const;

  std::uint64_t window_ns_;
  std::size_t capacity_;
  EvictionCounts* counts_;                                                  // may be null
  std::list<Entry> order_;                                                  // oldest first
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;  // views into order_'s keys
};

// The partial matches of every sequence of one Ruleset. Made for that
// Ruleset: a reload that swaps the Ruleset makes a new one (the partial
// matches of the old set are dropped).
class SequenceState {
 public:
  // `stats` (may be null) must outlive this object.
  SequenceState(const Ruleset& rules, SequenceStats* stats);
  const Ruleset* ruleset() const { return rules_; }
  PartialMatches& table(std::size_t sequence) { return tables_[sequence]; }
  // Partial matches held now, all sequences together.
  std::size_t size() const;
  // Buffers for the correlation keys of one event (the sequence's, and one
  // per step with its own `by`), reused so a lookup does not allocate.
  std::string* key_buffers() { return keys_; }
  static constexpr std::size_t kKeyBuffers = 9;  // kMaxSequenceSteps + 1
  // The buffer for an event's `distinct` values.
  std::string* distinct_buffer() { return &distinct_; }

 private:
  const Ruleset* rules_;
  std::vector<PartialMatches> tables_;
  std::string keys_[kKeyBuffers];
  std::string distinct_;
};

}  // namespace vigil::rules
