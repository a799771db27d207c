#include "engine/pipeline/pipeline.h"

#include <utility>

#include "engine/rules/ruleset.h"
#include "engine/state/state.h"

namespace vigil::pipeline {

Pipeline::Pipeline(Deps deps, std::shared_ptr<const rules::Ruleset> rules)
    : deps_(std::move(deps)), rules_(std::move(rules)) {
  scratch_.reserve(16);
}

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

std::shared_ptr<const rules::Ruleset> Pipeline::ruleset() const {
  std::lock_guard<std::mutex> lock(pending_mu_);
  return has_pending_.load() ? pending_ : rules_;
}

void Pipeline::process(event::Event& ev) {
  if (has_pending_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(pending_mu_);
    rules_ = std::move(pending_);
    pending_.reset();
    has_pending_.store(false, std::memory_order_release);
  }
  events_.fetch_add(1, std::memory_order_relaxed);

  deps_.state.apply(ev);
  {
    // ctx points into the state: valid until after() below.
    const state::EvalContext ctx = deps_.state.enrich(ev);
    for (EventTap* t : taps_) t->on_event(ev, ctx);
    const bool selected = selector_ == nullptr || selector_->select(ev, ctx);
    if (rules_ && selected) {
      scratch_.clear();
      rules_->evaluate(ctx, scratch_);
      for (event::Alert& a : scratch_) {
        a.hostname = deps_.hostname;
        for (EventTap* t : taps_) t->on_alert(ev, ctx, a);
        alerts_.fetch_add(1, std::memory_order_relaxed);
        if (deps_.publish) deps_.publish(std::make_shared<const event::Alert>(std::move(a)));
      }
      scratch_.clear();
    }
  }
  deps_.state.after(ev);
}

}  // namespace vigil::pipeline
