#include "engine/pipeline/metadata_wait.h"

#include <algorithm>
#include <utility>

#include "engine/rules/ruleset.h"
#include "engine/state/state.h"

namespace vigil::pipeline {

void MetadataWaitStats::published(state::Metadata m) {
  switch (m) {
    case state::Metadata::kHost: host_.fetch_add(1, std::memory_order_relaxed); break;
    case state::Metadata::kContainer: container_.fetch_add(1, std::memory_order_relaxed); break;
    case state::Metadata::kIncomplete: incomplete_.fetch_add(1, std::memory_order_relaxed); break;
    case state::Metadata::kComplete: complete_.fetch_add(1, std::memory_order_relaxed); break;
  }
}

void MetadataWaitStats::waited(std::uint64_t delay_ns) {
  const double s = static_cast<double>(delay_ns) / 1e9;
  std::size_t b = 0;
  while (b < kBuckets.size() && s > kBuckets[b]) ++b;
  buckets_[b].fetch_add(1, std::memory_order_relaxed);
  delay_sum_ns_.fetch_add(delay_ns, std::memory_order_relaxed);
  delay_count_.fetch_add(1, std::memory_order_relaxed);
}

MetadataWaitStats::Snapshot MetadataWaitStats::snapshot() const {
  Snapshot s;
  s.host = host_.load(std::memory_order_relaxed);
  s.container = container_.load(std::memory_order_relaxed);
  s.complete = complete_.load(std::memory_order_relaxed);
  s.incomplete = incomplete_.load(std::memory_order_relaxed);
  s.resolved = resolved_.load(std::memory_order_relaxed);
  s.timed_out = timed_out_.load(std::memory_order_relaxed);
  s.evicted = evicted_.load(std::memory_order_relaxed);
  s.flushed = flushed_.load(std::memory_order_relaxed);
  s.parked = parked_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < buckets_.size(); ++i) s.delay_buckets[i] = buckets_[i].load(std::memory_order_relaxed);
  s.delay_sum_s = static_cast<double>(delay_sum_ns_.load(std::memory_order_relaxed)) / 1e9;
  s.delay_count = delay_count_.load(std::memory_order_relaxed);
  return s;
}

MetadataWait::MetadataWait(MetadataWaitOptions opts, const state::State& state, Publisher publish, Clock clock)
    : opts_(opts), state_(state), publish_(std::move(publish)), clock_(std::move(clock)) {
  opts_.max_parked = std::max<std::size_t>(opts_.max_parked, 1);
}

MetadataWait::~MetadataWait() = default;

void MetadataWait::offer(event::Alert&& alert, const state::EvalContext& ctx,
                         std::shared_ptr<const rules::Ruleset> rules) {
  const state::Metadata m = state::metadata_of(ctx);
  if (m != state::Metadata::kIncomplete || !enabled() || !rules) {
    stats_.published(m);
    if (publish_) publish_(std::make_shared<const event::Alert>(std::move(alert)));
    return;
  }
  const std::uint64_t now = clock_();
  if (live_ >= opts_.max_parked) {
    pop_gone();
    if (!parked_.empty()) {
      release(parked_.front(), Why::kEvicted, now);
      pop_gone();
    }
  }
  Parked p;
  p.alert = std::move(alert);
  p.container_id = ctx.container->id;
  p.pod_uid = ctx.container->pod_uid;
  p.rules = std::move(rules);
  p.parked_ns = now;
  ++pods_[p.pod_uid];
  parked_.push_back(std::move(p));
  ++live_;
  stats_.parked_.store(live_, std::memory_order_relaxed);
}

bool MetadataWait::resolve(Parked& p) const {
  const state::Pod* pod = state_.pod(p.pod_uid);
  if (pod == nullptr || pod->name.empty()) return false;
  state::EvalContext ctx;
  ctx.state = &state_;
  ctx.container = state_.container(p.container_id);
  ctx.pod = pod;
  for (const auto& pc : pod->containers) {
    if (!pc.id.empty() && pc.id == p.container_id) {
      ctx.pod_container = &pc;
      break;
    }
  }
  state::Container stand_in;  // the container record was forgotten meanwhile: the pod still names the alert
  if (ctx.container == nullptr) {
    stand_in.id = p.container_id;
    stand_in.pod_uid = p.pod_uid;
    ctx.container = &stand_in;
  }
  p.rules->rerender_metadata(ctx, p.alert);
  return true;
}

void MetadataWait::release(Parked& p, Why why, std::uint64_t now) {
  if (p.gone) return;
  const bool known = why == Why::kResolved || (why == Why::kFlushed && resolve(p));
  switch (why) {
    case Why::kResolved: stats_.resolved_.fetch_add(1, std::memory_order_relaxed); break;
    case Why::kTimedOut: stats_.timed_out_.fetch_add(1, std::memory_order_relaxed); break;
    case Why::kEvicted: stats_.evicted_.fetch_add(1, std::memory_order_relaxed); break;
    case Why::kFlushed: stats_.flushed_.fetch_add(1, std::memory_order_relaxed); break;
  }
  stats_.waited(now > p.parked_ns ? now - p.parked_ns : 0);
  stats_.published(known ? state::Metadata::kComplete : state::Metadata::kIncomplete);
  p.gone = true;
  --live_;
  stats_.parked_.store(live_, std::memory_order_relaxed);
  if (auto it = pods_.find(p.pod_uid); it != pods_.end() && --it->second == 0) pods_.erase(it);
  if (publish_) publish_(std::make_shared<const event::Alert>(std::move(p.alert)));
  p.alert = {};
  p.rules.reset();
}

void MetadataWait::pop_gone() {
  while (!parked_.empty() && parked_.front().gone) parked_.pop_front();
}

void MetadataWait::pods_changed() {
  if (live_ == 0) return;
  bool any = false;
  for (const auto& [uid, n] : pods_) {
    const state::Pod* pod = state_.pod(uid);
    if (pod != nullptr && !pod->name.empty()) {
      any = true;
      break;
    }
  }
  if (!any) return;
  const std::uint64_t now = clock_();
  for (Parked& p : parked_) {
    if (!p.gone && resolve(p)) release(p, Why::kResolved, now);
  }
  // What went out leaves the queue now, not when it reaches the front: the
  // queue holds no more than max_parked entries.
  std::erase_if(parked_, [](const Parked& p) { return p.gone; });
}

void MetadataWait::tick() {
  pods_changed();
  if (live_ == 0) return;
  const std::uint64_t now = clock_();
  const auto wait_ns = static_cast<std::uint64_t>(std::chrono::nanoseconds(opts_.wait).count());
  pop_gone();
  while (!parked_.empty() && parked_.front().parked_ns + wait_ns <= now) {
    release(parked_.front(), Why::kTimedOut, now);
    pop_gone();
  }
}

void MetadataWait::flush() {
  const std::uint64_t now = clock_();
  for (Parked& p : parked_) release(p, Why::kFlushed, now);
  parked_.clear();
  pods_.clear();
}

}  // namespace vigil::pipeline
