#include "engine/pipeline/pipeline.h"

#include <utility>

#include "engine/pipeline/aggregate.h"
#include "engine/pipeline/metadata_wait.h"
#include "engine/rules/ruleset.h"
#include "engine/rules/sequence.h"
#include "engine/state/state.h"

namespace vigil::pipeline {

namespace {
std::unique_ptr<rules::SequenceState> sequence_state(const rules::Ruleset* r, rules::SequenceStats& stats) {
  if (r == nullptr || r->sequence_count() == 0) return nullptr;
  return std::make_unique<rules::SequenceState>(*r, &stats);
}
}  // namespace

Pipeline::Pipeline(Deps deps, std::shared_ptr<const rules::Ruleset> rules)
    : deps_(std::move(deps)), rules_(std::move(rules)), seq_stats_(std::make_unique<rules::SequenceStats>()) {
  scratch_.reserve(16);
  seq_ = sequence_state(rules_.get(), *seq_stats_);
}

std::size_t Pipeline::sequence_partials() const { return seq_ ? seq_->size() : 0; }

Pipeline::~Pipeline() = default;

void Pipeline::add_tap(EventTap* tap) {
  if (tap != nullptr) taps_.push_back(tap);
}

void Pipeline::set_selector(Selector* selector) { selector_ = selector; }

void Pipeline::set_ruleset(std::shared_ptr<const rules::Ruleset> r) {
  std::lock_guard<std::mutex> lock(pending_mu_);
  pending_ = std::move(r);
  has_pending_.store(true, std::memory_order_release);
}

std::map<std::pair<std::string, std::string>, std::uint64_t> Pipeline::prevention_counts() const {
  std::lock_guard<std::mutex> lock(prevention_mu_);
  return prevention_counts_;
}

std::shared_ptr<const rules::Ruleset> Pipeline::ruleset() const {
  std::lock_guard<std::mutex> lock(pending_mu_);
  return has_pending_.load() ? pending_ : rules_;
}

void Pipeline::process(event::Event& ev) {
  if (has_pending_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(pending_mu_);
    rules_ = std::move(pending_);
    pending_.reset();
    // The partial matches belong to the old set's sequences: they go with it.
    seq_ = sequence_state(rules_.get(), *seq_stats_);
    has_pending_.store(false, std::memory_order_release);
  }
  events_.fetch_add(1, std::memory_order_relaxed);

  if (deps_.aggregator != nullptr) deps_.aggregator->advance(ev.hdr.ts_ns);
  deps_.state.apply(ev);
  {
    // ctx points into the state: valid until after() below.
    state::EvalContext ctx = deps_.state.enrich(ev);
    if (deps_.baselines != nullptr) {
      // A state update like the process table's: the workload's profile
      // learns (or locks) before the rules read it.
      deps_.baselines->observe(ctx);
      ctx.baseline = deps_.baselines;
    }
    for (EventTap* t : taps_) t->on_event(ev, ctx);
    const bool selected = selector_ == nullptr || selector_->select(ev, ctx);
    if (rules_ && selected) {
      scratch_.clear();
      rules_->evaluate(ctx, scratch_, seq_.get());
      if (rules_->has_prevention()) {
        decisions_.clear();
        rules_->judge_prevention(ctx, scratch_, decisions_);
        // The handler has the last word on an outcome (vigil run knows
        // whether the kernel had the container's entry), then the alerts
        // are tagged and the decisions counted.
        for (auto& d : decisions_) {
          if (on_prevention_) on_prevention_(d, ctx);
          if (d.alert < scratch_.size()) rules::tag_prevention_alert(d, scratch_[d.alert]);
        }
        if (!decisions_.empty()) {
          std::lock_guard<std::mutex> lock(prevention_mu_);
          for (const auto& d : decisions_) ++prevention_counts_[{d.rule, d.outcome}];
        }
      }
      for (event::Alert& a : scratch_) {
        a.hostname = deps_.hostname;
        for (EventTap* t : taps_) t->on_alert(ev, ctx, a);
        alerts_.fetch_add(1, std::memory_order_relaxed);
        if (deps_.aggregator != nullptr &&
            deps_.aggregator->offer(a, rules_->aggregate_of(a.rule)) == Aggregator::Verdict::kCounted) {
          continue;
        }
        if (deps_.metadata_wait != nullptr) deps_.metadata_wait->offer(std::move(a), ctx, rules_);
        else if (deps_.publish) deps_.publish(std::make_shared<const event::Alert>(std::move(a)));
      }
      scratch_.clear();
    }
  }
  deps_.state.after(ev);
}

}  // namespace vigil::pipeline
