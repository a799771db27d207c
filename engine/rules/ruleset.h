// The rule engine's public API: load rules files into an immutable, compiled
// Ruleset indexed by event type, and evaluate it for one event.
//
//   vigil::rules::LoadOptions opts;
//   auto r = vigil::rules::load_rules({"/etc/vigil/rules"}, opts);
//   for (const auto& d : r.diagnostics) std::cerr << d.to_string() << "\n";
//   if (!r.ruleset) return 2;
//   std::vector<vigil::event::Alert> alerts;
//   r.ruleset->evaluate(ctx, alerts);
//
// A reload builds a new Ruleset; the pipeline swaps the shared_ptr atomically
// and keeps the previous one when the new load has errors.
//
// Sequence rules keep partial matches between events in a SequenceState
// (engine/rules/sequence.h) that the caller owns and passes to evaluate().
//
// Thread-safety: a Ruleset is immutable; evaluate() is const and may run on
// several threads at once, each with its own SequenceState (or none).
// load_rules() is reentrant.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/event/alert.h"
#include "engine/event/event.h"
#include "engine/event/schema.h"
#include "engine/rules/diagnostic.h"
#include "engine/rules/open_paths.h"
#include "engine/state/model.h"

namespace vigil::rules {

class AppendOutput;
class Expr;
class FieldCatalog;
class OutputFormat;
struct FNode;
class GuardIndex;
class SequenceState;
struct ExtractCtx;
struct PreventionRule;
enum class PreventionMode : std::uint8_t;

// How the alerts of one rule are aggregated (a rule's `aggregate`, or the
// configuration's `aggregation` default; engine/pipeline/aggregate.h): the
// fields whose values make the key (empty: every output field, i.e. the
// same alert again) and the window of event time.
struct AggregateSpec {
  std::vector<std::string> by;
  std::uint64_t window_ns = 0;
  bool operator==(const AggregateSpec&) const = default;
};
inline constexpr std::size_t kMaxAggregateKeyFields = 8;
// A rule's `aggregate` map without a `window`.
inline constexpr std::uint64_t kDefaultAggregateWindowNs = 60ull * 1000000000ull;

struct LoadOptions {
  std::set<std::string> disabled_tags;                     // rules with any of these tags are disabled
  std::set<std::string> disabled_rules;                    // by name
  std::set<std::string> enabled_rules;                     // by name: enabled even if the file disables them
  event::Priority min_priority = event::Priority::kDebug;  // less severe rules are disabled
  std::string hostname;                                    // copied into every alert
  std::size_t max_file_bytes = 32u << 20;
  // false: conditions are evaluated as written, without the evaluator's
  // reordering, constant folding, literal-set merging and prefilters. Same
  // alerts, slower; a reference for tests of those optimisations.
  bool optimise = true;
  // The fields rules may use: null for vigil's own (FieldCatalog::builtin()),
  // else that plus the loaded plugins' fields (engine/plugin). Must outlive
  // the Ruleset.
  const FieldCatalog* fields = nullptr;
  // Event sources besides "syscall" (the loaded source plugins'): a rule with
  // `source: X` loads when X is here, and sees only X's events.
  std::set<std::string> plugin_sources;
  // append_output (append_output.h), compiled against `fields`: what the
  // configuration adds to the output text and output_fields of the rules and
  // sequences it selects, applied as each compiles. null: nothing.
  std::shared_ptr<const AppendOutput> append_output;
  // Bounds on the work of one load, for rule files nobody vetted (a reload
  // compiles on a thread of its own while events flow, but it must end):
  // the most syntax-tree nodes one condition may have once its macros,
  // exceptions and lists are in (0: no limit; a larger condition is error
  // E014 naming the rule, file and line, and is not compiled), and the time
  // the compile may take (0: no limit) or a flag that cancels it: checked
  // before each rule and each event type's index, it ends the load with
  // error E015 naming the rule it reached.
  std::size_t max_condition_nodes = kDefaultMaxConditionNodes;
  std::chrono::milliseconds compile_budget{0};
  const std::atomic<bool>* cancel = nullptr;  // must outlive the load
  static constexpr std::size_t kDefaultMaxConditionNodes = 10000;
  // The most partial matches one sequence holds (distinct correlation keys
  // between a first and a last step); past it the oldest is evicted.
  std::size_t max_sequence_matches = kDefaultMaxSequenceMatches;
  static constexpr std::size_t kDefaultMaxSequenceMatches = 10000;
  // The configuration's prevention.mode (docs/prevention.md): 0 off, 1
  // monitor, 2 enforce (PreventionMode, prevention.h). A rule's own
  // action_mode overrides it. In enforce mode a deny the kernel cannot take
  // is an error.
  std::uint8_t prevention_mode = 0;
  // The configuration's `aggregation` default (window_s and by), for the
  // rules without an `aggregate` key of their own; null: those rules are
  // not aggregated. Its `by` fields must be known (else error E017).
  std::optional<AggregateSpec> aggregate_default;
};

// What prevention did, or would have done, about one event (judge_prevention).
struct PreventionDecision {
  std::string rule;
  std::string outcome;         // "prevented", "would_prevent", "not_prevented", "respond", "would_respond"
  std::uint32_t pid = 0;       // the process (a kill response's target)
  std::size_t alert = 0;       // index of the rule's alert in evaluate()'s output
  std::uint8_t responses = 0;  // the responses to carry out (rules::Response bits): the rule's, or
                               // kill for the first exec of a file a deny rule names by identity
};

// The tag and the `prevention` key of the decision's alert.
void tag_prevention_alert(const PreventionDecision& d, event::Alert& a);

// What `rules list` shows about one rule.
struct RuleInfo {
  std::string name;
  std::string desc;
  event::Priority priority = event::Priority::kWarning;
  std::vector<std::string> tags;
  std::string source;
  bool enabled = true;
  std::vector<std::string> event_types;  // evt.type names it is indexed under
  std::string file;
  int line = 0;
};

// What `rules list` shows about one sequence.
struct SequenceInfo {
  std::string name;
  std::string desc;
  event::Priority priority = event::Priority::kWarning;
  std::vector<std::string> tags;
  bool enabled = true;
  std::vector<std::string> by;        // the correlation key's fields
  std::vector<std::string> distinct;  // fields each step's event must not repeat (empty: none)
  std::uint64_t within_ns = 0;
  std::vector<std::vector<std::string>> step_event_types;  // per step
  std::string file;
  int line = 0;
};

class Ruleset {
 public:
  struct Rule;
  struct Sequence;
  Ruleset();
  ~Ruleset();
  Ruleset(const Ruleset&) = delete;
  Ruleset& operator=(const Ruleset&) = delete;

  // Appends an Alert for every enabled rule the event matches (in load order).
  // Allocates only when a rule matches. Never throws; an alert that cannot be
  // built for lack of memory is dropped.
  // With `sequences` (made for this Ruleset), the event also advances the
  // partial matches of the sequences whose steps it matches, and a sequence
  // it completes appends its Alert (after the rules'). Without, sequences
  // are not evaluated.
  void evaluate(const state::EvalContext& ctx, std::vector<event::Alert>& out,
                SequenceState* sequences = nullptr) const noexcept;

  // Renders again the container.* and k8s.* fields of `alert`, which this
  // Ruleset made, for the container and pod records in `ctx` (ctx.ev may be
  // null: nothing else is read): in the output text, in output_fields, and
  // append_output's extra fields made only of such fields. For an alert that
  // waited for its pod (engine/pipeline/metadata_wait.h). False when no rule
  // or sequence has the alert's name. Never throws (out of memory: false,
  // the alert as it was or partly rendered again).
  bool rerender_metadata(const state::EvalContext& ctx, event::Alert& alert) const noexcept;
  // Event types at least one enabled rule is indexed under (the sensor
  // attaches only the hooks these need).
  std::set<event::Type> event_types() const;
  // Literal paths the enabled open rules compare their path fields with, for
  // the in-kernel open filter (OpenPaths, compiler.h); open_any_path() is
  // true when some open rule may match a path outside them (then every open
  // is needed); open_unfiltered_rules() names them.
  const OpenPaths& open_paths() const { return open_paths_; }
  bool open_any_path() const { return !open_unfiltered_.empty(); }
  const std::vector<std::string>& open_unfiltered_rules() const { return open_unfiltered_; }

  std::vector<RuleInfo> rules() const;  // the rules, not the sequences' steps
  // The rules with an `action` (prevention.h), in load order, enabled or
  // not, with what the kernel can judge of each.
  const std::vector<PreventionRule>& prevention() const { return prevention_; }
  // After evaluate(): for each enabled rule with an action whose mode is not
  // off and whose judgement holds for the event, a decision (prevented,
  // would_prevent, not_prevented, respond, would_respond) naming the rule's
  // alert in `alerts`; for a call the kernel refused or would refuse that
  // the rule's own condition did not match (it wants a successful call), the
  // rule's alert is appended. The caller tags the alerts
  // (tag_prevention_alert) once it has the final outcomes. Never throws.
  void judge_prevention(const state::EvalContext& ctx, std::vector<event::Alert>& alerts,
                        std::vector<PreventionDecision>& decisions) const noexcept;
  bool has_prevention() const { return !prevention_.empty(); }
  // The configuration's mode the set was loaded with.
  PreventionMode prevention_mode() const { return prevention_mode_; }
  std::vector<SequenceInfo> sequences() const;
  // How the named rule's alerts are aggregated; null: they are not (no
  // `aggregate` and no default, `aggregate: off`, or no such rule).
  const AggregateSpec* aggregate_of(std::string_view rule) const noexcept;
  std::size_t sequence_count() const { return sequences_.size(); }
  std::size_t sequence_capacity() const { return sequence_capacity_; }
  // How the named rule's condition is evaluated for events of type `t`
  // (Expr::plan); "" when no rule has that name.
  std::string plan(std::string_view rule, event::Type t) const;
  // The fields whose values pick the rules to evaluate for events of type `t`
  // (GuardIndex); empty when every rule indexed under `t` runs.
  std::vector<std::string> guard_fields(event::Type t) const;
  std::size_t size() const { return rules_.size() - steps_; }  // rules, not steps
  // The enabled rules (those evaluate() runs), not counting sequences.
  std::size_t enabled_count() const;

 private:
  friend class RulesetBuilder;
  // A sequence's steps `mask` (bit i: step i) matched the event in `x`.
  void advance(std::uint32_t sequence, std::uint32_t mask, const ExtractCtx& x, SequenceState& st,
               std::vector<event::Alert>& out) const noexcept;

  // The rules, then the steps of every sequence (Rule::sequence >= 0), in
  // order: a sequence's steps are adjacent in each index_ list.
  std::vector<std::unique_ptr<Rule>> rules_;
  std::size_t steps_ = 0;  // how many of rules_ are steps
  std::vector<std::unique_ptr<Sequence>> sequences_;
  std::size_t sequence_capacity_ = LoadOptions::kDefaultMaxSequenceMatches;
  // Per event type, the enabled rules that can match it, in load order, and
  // their condition programs laid end to end in programs_ (one array per type).
  struct IndexEntry {
    std::uint32_t rule;
    std::uint32_t at;  // offset of its program in programs_[type]
    // The rule's Rule::sequence and Rule::step, here so that a rule that
    // does not match is evaluated without reading its Rule at all.
    std::int32_t sequence;
    std::uint32_t step;
  };
  std::vector<IndexEntry> index_[static_cast<std::size_t>(event::Type::kCount)];
  std::vector<FNode> programs_[static_cast<std::size_t>(event::Type::kCount)];
  // Per event type, how many CheckCache words its programs' check ids need
  // (each event clears only those).
  std::size_t check_words_[static_cast<std::size_t>(event::Type::kCount)] = {};
  // Per event type, which of index_[type] may match an event (compiler.h).
  std::unique_ptr<GuardIndex> guards_[static_cast<std::size_t>(event::Type::kCount)];
  event::TypeMask type_bits_;  // event types enabled rules are listed under
  OpenPaths open_paths_;
  std::vector<std::string> open_unfiltered_;
  std::vector<PreventionRule> prevention_;
  PreventionMode prevention_mode_{};
  std::map<std::string, AggregateSpec, std::less<>> aggregates_;  // by rule name: the aggregated rules
  bool needs_dns_ = false;  // a rule reads a name DNS answers give (fd.sip.name...)
  std::string hostname_;
};

struct LoadResult {
  std::shared_ptr<const Ruleset> ruleset;  // null when any error
  std::vector<Diagnostic> diagnostics;     // errors and warnings, in file order
  std::size_t loaded = 0, skipped = 0, errors = 0;
  std::size_t sequences = 0;  // sequences loaded
  // Each skipped rule: its name and why ("unknown_field", "unknown_source").
  std::vector<std::pair<std::string, std::string>> skipped_rules;
};

// Loads files and directories (a directory: its *.yaml/*.yml files, sorted by
// name) in order, as one rule set.
LoadResult load_rules(const std::vector<std::string>& paths, const LoadOptions& opts);

// Loads rules from text (tests, fuzzing). `name` stands for the file name.
LoadResult load_rules_text(const std::vector<std::pair<std::string, std::string>>& files, const LoadOptions& opts);

// The Alert uuid: a version-8 UUID hashed from the event (ts, pid, tid, type)
// and the rule name, so a replay of a capture gives the live run's uuid.
std::string alert_uuid(const event::Event& ev, std::string_view rule);

// The summary line `vigil rules validate` prints.
std::string summary_line(const LoadResult& r);

}  // namespace vigil::rules
