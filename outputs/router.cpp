#include "outputs/router.h"

#include <spdlog/logger.h>

#include <algorithm>
#include <functional>
#include <set>

#include "engine/util/yaml_canonical.h"

namespace vigil::outputs {
namespace {

// Names past this many in the retired counters are added up under one.
constexpr std::size_t kMaxRetiredNames = 1024;
constexpr const char* kRetiredOverflowName = "removed";

// What makes a sink the same sink across a reload: its name, its entry, and
// the secret read from a file at parse time (a rotated token is a change).
std::string reload_key(const OutputConfig& c, const YAML::Node* entry) {
  std::string key = c.sink.name + '\n';
  key += entry ? canonical_yaml(*entry) : std::string("default");
  if (const auto* w = std::get_if<WebhookOptions>(&c.transport)) {
    key += "\ntoken#" + std::to_string(std::hash<std::string>{}(w->bearer_token));
  }
  return key;
}

std::vector<std::string> resources_of(const OutputConfig& c) {
  std::vector<std::string> r = {"name:" + c.sink.name};
  if (!c.sink.spool.dir.empty()) r.push_back("spool:" + c.sink.spool.dir);
  if (const auto* f = std::get_if<FileOptions>(&c.transport)) r.push_back("file:" + f->path);
  return r;
}

bool share(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return std::any_of(a.begin(), a.end(),
                     [&](const std::string& x) { return std::find(b.begin(), b.end(), x) != b.end(); });
}

// Adds the monotonic counters of `from` to `to` (not the depths).
void add_counters(SinkStats& to, const SinkStats& from) {
  to.sent += from.sent;
  to.failed += from.failed;
  to.retried += from.retried;
  to.dropped += from.dropped;
  to.spooled += from.spooled;
  to.filtered += from.filtered;
  to.rate_limited += from.rate_limited;
  to.latency_count += from.latency_count;
  to.latency_max_us = std::max(to.latency_max_us, from.latency_max_us);
  for (std::size_t i = 0; i < to.errors.size(); ++i) to.errors[i] += from.errors[i];
  for (std::size_t i = 0; i < to.drops.size(); ++i) to.drops[i] += from.drops[i];
}

Result<std::unique_ptr<Spool>> open_spool(const std::string& name, const std::string& dir, std::uint64_t max_bytes,
                                          const std::shared_ptr<spdlog::logger>& log) {
  auto s = Spool::open(dir, max_bytes);
  if (!s) return Error{s.error().kind, "output " + name + ": " + s.error().message};
  if (log && !(*s)->empty()) {
    log->info("output {}: {} spooled alerts from an earlier run will be delivered first", name, (*s)->count());
  }
  return std::move(*s);
}

std::shared_future<void> ready_future() {
  std::promise<void> p;
  p.set_value();
  return p.get_future().share();
}

}  // namespace

std::string Router::Plan::describe() const {
  std::string out;
  auto part = [&](const char* what, const std::vector<std::string>& names) {
    if (names.empty()) return;
    out += (out.empty() ? "" : "; ") + std::string(what);
    for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : " ") + names[i];
  };
  part("kept", kept);
  part("added", added);
  part("replaced", replaced);
  part("removed", removed);
  return out.empty() ? "none" : out;
}

Result<std::unique_ptr<Router>> Router::from_config(const YAML::Node& outputs, const RouterOptions& opts) {
  // The first set is a reload of an empty router.
  std::unique_ptr<Router> r(new Router(std::make_shared<const std::vector<Entry>>(), opts));
  auto plan = r->prepare(outputs);
  if (!plan) {
    r->stopped_ = true;
    return plan.error();
  }
  r->commit(std::move(*plan));
  return r;
}

Router::Router(Snapshot sinks, RouterOptions opts) : opts_(std::move(opts)), sinks_(std::move(sinks)) {}

Router::Router(std::vector<std::unique_ptr<Sink>> sinks, RouterOptions opts) : opts_(std::move(opts)) {
  auto entries = std::make_shared<std::vector<Entry>>();
  for (auto& s : sinks) {
    s->start();
    entries->push_back({"", {"name:" + s->options().name}, std::shared_ptr<Sink>(std::move(s)), ready_future()});
  }
  sinks_ = std::move(entries);
}

Router::~Router() {
  if (!stopped_) shutdown(std::chrono::milliseconds(0));
}

Router::Snapshot Router::snapshot() const {
  std::shared_lock lk(mu_);
  return sinks_;
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
  std::shared_lock lk(mu_);
  for (const Entry& e : *sinks_) e.sink->offer(a, bytes);
}

Result<std::unique_ptr<Router::Plan>> Router::prepare(const YAML::Node& outputs) const {
  auto cfg = parse_outputs(outputs, opts_.state_dir);
  if (!cfg) return cfg.error();
  Snapshot in_force;
  std::vector<std::vector<std::string>> retiring;
  auto plan = std::make_unique<Plan>();
  {
    std::shared_lock lk(mu_);
    in_force = sinks_;
    for (const Retiring& r : retiring_) retiring.push_back(r.resources);
    plan->generation = generation_;
  }
  const bool listed = outputs.IsDefined() && outputs.IsSequence();
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < cfg->size(); ++i) {
    const YAML::Node entry = listed ? outputs[i] : YAML::Node();
    keys.push_back(reload_key((*cfg)[i], listed ? &entry : nullptr));
  }
  // Sinks in force that the plan does not carry over retire at the commit:
  // a new sink sharing a resource with one of them (or with a sink still
  // retiring from an earlier reload) waits for it.
  std::set<std::string> carried_keys;
  for (const Entry& e : *in_force) {
    if (!e.key.empty() && std::find(keys.begin(), keys.end(), e.key) != keys.end()) carried_keys.insert(e.key);
  }
  for (const Entry& e : *in_force) {
    if (!carried_keys.count(e.key)) retiring.push_back(e.resources);
  }
  std::set<std::string> new_names;
  for (std::size_t i = 0; i < cfg->size(); ++i) {
    const OutputConfig& c = (*cfg)[i];
    new_names.insert(c.sink.name);
    Plan::Item item;
    item.entry.key = keys[i];
    item.entry.resources = resources_of(c);
    if (carried_keys.count(keys[i])) {
      for (const Entry& e : *in_force) {
        if (e.key == keys[i]) item.entry = e;
      }
      item.carried = true;
      plan->kept.push_back(c.sink.name);
      plan->items.push_back(std::move(item));
      continue;
    }
    auto t = make_transport(c, opts_.log);
    if (!t) return t.error();
    std::unique_ptr<Spool> spool;
    const bool waits = std::any_of(retiring.begin(), retiring.end(),
                                   [&](const std::vector<std::string>& r) { return share(r, item.entry.resources); });
    if (!c.sink.spool.dir.empty()) {
      if (waits) {
        // The retiring sink holds the spool: it is opened when that one stopped.
        item.deferred_spool = c.sink.spool.dir;
        item.spool_max_bytes = c.sink.spool.max_bytes;
      } else {
        auto s = open_spool(c.sink.name, c.sink.spool.dir, c.sink.spool.max_bytes, opts_.log);
        if (!s) return s.error();
        spool = std::move(*s);
      }
    }
    const bool was_there = std::any_of(in_force->begin(), in_force->end(),
                                       [&](const Entry& e) { return e.sink->options().name == c.sink.name; });
    (was_there ? plan->replaced : plan->added).push_back(c.sink.name);
    item.entry.sink = std::make_shared<Sink>(c.sink, std::move(*t), opts_.log, std::move(spool));
    plan->items.push_back(std::move(item));
  }
  for (const Entry& e : *in_force) {
    if (!new_names.count(e.sink->options().name)) plan->removed.push_back(e.sink->options().name);
  }
  return plan;
}

bool Router::commit(std::unique_ptr<Plan> plan) {
  if (!plan) return false;
  join_finished();
  auto next = std::make_shared<std::vector<Entry>>();
  // Each new sink that waits, with the retirements it waits for.
  struct Waiting {
    Plan::Item* item;
    std::vector<std::shared_future<void>> before;
    std::shared_ptr<std::promise<void>> started;
  };
  std::vector<Waiting> waiting;
  {
    std::lock_guard lk(mu_);
    if (plan->generation != generation_) {
      if (opts_.log) opts_.log->error("outputs: a reload plan made before the last commit was refused");
      return false;
    }
    ++generation_;
    for (const Entry& e : *sinks_) {
      const bool carried = std::any_of(plan->items.begin(), plan->items.end(),
                                       [&](const Plan::Item& it) { return it.carried && it.entry.sink == e.sink; });
      if (carried) continue;
      auto done = std::make_shared<std::promise<void>>();
      retiring_.push_back({e.resources, e.sink, done->get_future().share()});
      run_in_background([this, sink = e.sink, started = e.started, done] {
        started.wait();
        sink->shutdown(std::chrono::steady_clock::now() + opts_.retire_deadline);
        {
          std::lock_guard l(mu_);
          const SinkStats s = sink->stats();
          const bool room = retired_.size() < kMaxRetiredNames || retired_.count(s.name);
          SinkStats& to = retired_[room ? s.name : kRetiredOverflowName];
          if (to.name.empty()) {
            to.name = room ? s.name : kRetiredOverflowName;
            to.type = s.type;
          }
          add_counters(to, s);
          retiring_.erase(
              std::remove_if(retiring_.begin(), retiring_.end(), [&](const Retiring& r) { return r.sink == sink; }),
              retiring_.end());
        }
        done->set_value();
      });
    }
    for (Plan::Item& it : plan->items) {
      if (!it.carried) {
        std::vector<std::shared_future<void>> before;
        for (const Retiring& r : retiring_) {
          if (share(r.resources, it.entry.resources)) before.push_back(r.done);
        }
        if (!before.empty() || !it.deferred_spool.empty()) {
          auto started = std::make_shared<std::promise<void>>();
          it.entry.started = started->get_future().share();
          waiting.push_back({&it, std::move(before), std::move(started)});
        } else {
          it.entry.started = ready_future();
        }
      }
      next->push_back(it.entry);
    }
    sinks_ = std::move(next);
  }
  for (Plan::Item& it : plan->items) {
    if (it.carried) continue;
    const bool waits = std::any_of(waiting.begin(), waiting.end(), [&](const Waiting& w) { return w.item == &it; });
    if (!waits) it.entry.sink->start();
  }
  for (Waiting& w : waiting) {
    run_in_background([this, sink = w.item->entry.sink, before = std::move(w.before), dir = w.item->deferred_spool,
                       max_bytes = w.item->spool_max_bytes, started = std::move(w.started)] {
      for (const auto& f : before) f.wait();
      if (!dir.empty()) {
        auto s = open_spool(sink->options().name, dir, max_bytes, opts_.log);
        if (s) {
          sink->attach_spool(std::move(*s));
        } else if (opts_.log) {
          opts_.log->error("{}; its alerts are sent without a spool", s.error().message);
        }
      }
      sink->start();
      started->set_value();
    });
  }
  if (opts_.log) {
    for (const Plan::Item& it : plan->items) {
      if (it.carried) continue;
      const SinkOptions& o = it.entry.sink->options();
      opts_.log->info("output {}: type {}, format {}", o.name, o.type, format_name(o.format));
    }
  }
  return true;
}

void Router::run_in_background(std::function<void()> fn) {
  auto finished = std::make_shared<std::atomic<bool>>(false);
  background_.push_back({std::thread([fn = std::move(fn), finished] {
                           fn();
                           finished->store(true);
                         }),
                         finished});
}

void Router::join_finished() {
  for (auto it = background_.begin(); it != background_.end();) {
    if (it->finished->load()) {
      it->thread.join();
      it = background_.erase(it);
    } else {
      ++it;
    }
  }
}

void Router::shutdown(std::chrono::milliseconds deadline) {
  stopped_ = true;
  // Retirements end by their deadline; a sink waiting on one starts after it.
  for (Background& b : background_) b.thread.join();
  background_.clear();
  const auto until = std::chrono::steady_clock::now() + deadline;
  const Snapshot sinks = snapshot();
  // Stop all sinks in parallel so one slow sink does not eat the others' time.
  std::vector<std::thread> stoppers;
  for (const Entry& e : *sinks) {
    stoppers.emplace_back([s = e.sink, until] { s->shutdown(until); });
  }
  for (auto& t : stoppers) t.join();
}

std::vector<SinkStats> Router::collect(bool orphans) const {
  Snapshot sinks;
  std::vector<std::shared_ptr<Sink>> retiring;
  std::map<std::string, SinkStats> retired;
  {
    // One consistent view: a retirement moves a sink from retiring_ to
    // retired_ under mu_, so it is counted once.
    std::shared_lock lk(mu_);
    sinks = sinks_;
    for (const Retiring& r : retiring_) retiring.push_back(r.sink);
    retired = retired_;
  }
  std::vector<SinkStats> out;
  out.reserve(sinks->size());
  std::set<std::string> names;
  for (const Entry& e : *sinks) {
    SinkStats s = e.sink->stats();
    if (auto it = retired.find(s.name); it != retired.end()) add_counters(s, it->second);
    for (const auto& r : retiring) {
      if (r->options().name == s.name) add_counters(s, r->stats());
    }
    names.insert(s.name);
    out.push_back(std::move(s));
  }
  if (!orphans) return out;
  for (const auto& r : retiring) {
    if (names.count(r->options().name)) continue;
    SinkStats s = r->stats();
    if (auto it = retired.find(s.name); it != retired.end()) {
      add_counters(s, it->second);
      retired.erase(it);
    }
    out.push_back(std::move(s));
  }
  for (auto& [name, s] : retired) {
    if (!names.count(name)) out.push_back(s);
  }
  return out;
}

std::vector<SinkStats> Router::stats() const { return collect(false); }

bool Router::repeats_wanted() const {
  const Snapshot sinks = snapshot();
  if (!sinks) return false;
  return std::any_of(sinks->begin(), sinks->end(),
                     [](const Entry& e) { return e.sink && !e.sink->options().filter.aggregate; });
}

std::uint64_t Router::drops_total() const {
  std::uint64_t t = 0;
  for (const SinkStats& s : collect(true)) t += s.drops_total();
  return t;
}

std::string Router::describe_drops() const {
  std::string out;
  for (const SinkStats& s : collect(true)) {
    for (std::size_t i = 0; i < kDropReasonCount; ++i) {
      if (s.drops[i] == 0) continue;
      if (!out.empty()) out += ' ';
      out +=
          s.name + '/' + std::string(drop_reason_name(static_cast<DropReason>(i))) + '=' + std::to_string(s.drops[i]);
    }
  }
  return out.empty() ? "none" : out;
}

}  // namespace vigil::outputs
