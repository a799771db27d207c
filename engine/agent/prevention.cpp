#include "engine/agent/prevention.h"

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "engine/rules/compiler.h"
#include "engine/rules/fields.h"
#include "engine/rules/prevention.h"
#include "engine/rules/ruleset.h"
#include "engine/sensor/sensor.h"
#include "engine/state/gpu.h"

namespace vigil::agent {

namespace {

// Entries are made again this often (event time), so that a pod whose
// labels or allocation changed in place is judged anew.
constexpr std::uint64_t kRecheckNs = 30'000'000'000ull;
// The most containers remembered (the kernel's map holds 8192).
constexpr std::size_t kMaxCached = 8192;

}  // namespace

PreventionTap::PreventionTap(sensor::Sensor* sensor, const pipeline::Pipeline& pipe) : sensor_(sensor), pipe_(pipe) {}

void PreventionTap::on_event(const event::Event& ev, const state::EvalContext& ctx) {
  if (!sensor_) return;
  const rules::Ruleset* rs = pipe_.rules_in_use();
  if (rs != rules_) {
    // The slots moved with the rules: every entry is made again (meanwhile
    // the containers have none, so nothing is refused).
    for (const auto& [id, c] : cache_) (void)sensor_->set_policy_cgroup(id, nullptr);
    cache_.clear();
    rules_ = rs;
  }
  if (!rules_ || !rules_->has_prevention()) return;
  entry_for(ev, ctx);
  // The addresses of names enforced rules deny, as DNS answers give them.
  const auto* dns = ev.as<event::DnsData>();
  if (!dns || !dns->is_response || dns->answers.empty()) return;
  const auto slots = rules::enforced_slots(rules_->prevention());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const auto& names = slots[i]->dns_names;
    if (std::find(names.begin(), names.end(), dns->name) == names.end()) continue;
    for (const event::IpAddr& a : dns->answers) {
      policy::NetEntry e;
      if (a.family != AF_INET && a.family != AF_INET6) continue;
      e.v6 = a.family == AF_INET6;
      std::copy(a.bytes.begin(), a.bytes.begin() + (e.v6 ? 16 : 4), e.addr.begin());
      e.prefix = e.v6 ? 128 : 32;
      e.slots = 1ull << i;
      if (sensor_->add_policy_net(e)) ++learnt_dests_;
      else ++map_errors_;
    }
  }
}

void PreventionTap::entry_for(const event::Event& ev, const state::EvalContext& ctx) {
  const std::uint64_t cg = ev.hdr.cgroup_id;
  if (cg == 0 || !ctx.container || ctx.container->id.empty()) return;  // the host: never an entry
  if (!ctx.pod) {
    ++unknown_;
    return;
  }
  auto it = cache_.find(cg);
  if (it != cache_.end() && it->second.pod == ctx.pod && it->second.resource_version == ctx.pod->resource_version &&
      ev.hdr.ts_ns < it->second.recheck_ns)
    return;
  if (it == cache_.end() && cache_.size() >= kMaxCached) {
    ++map_errors_;  // no room: this container is never refused
    return;
  }
  policy::CgroupEntry e;
  const auto slots = rules::enforced_slots(rules_->prevention());
  rules::Arena arena;
  rules::ExtractCtx x{&ctx, &arena, nullptr, nullptr};
  for (std::size_t i = 0; i < slots.size(); ++i) {
    arena.reset();
    if (!slots[i]->container_part || slots[i]->container_part->eval(x)) e.slots |= 1ull << i;
  }
  if (ctx.state) {
    for (std::uint32_t m = 0; m <= state::kNvidiaMaxGpuMinor; ++m)
      if (ctx.state->gpu_allowed(ctx, state::kNvidiaMajor, m)) e.gpu_minors[m >> 6] |= 1ull << (m & 63);
    e.gpu_any = ctx.state->gpu_allowed(ctx, state::kNvidiaMajor, state::kNvidiaCtlMinor);
  }
  if (sensor_->set_policy_cgroup(cg, &e)) {
    ++entries_;
    const std::uint64_t first = it != cache_.end() ? it->second.written_ns : ev.hdr.ts_ns;
    cache_[cg] = {ctx.pod, ctx.pod->resource_version, ev.hdr.ts_ns + kRecheckNs, first};
  } else {
    ++map_errors_;
  }
}

void PreventionTap::on_decision(rules::PreventionDecision& d, const state::EvalContext& ctx) {
  if (d.exec_kill && ctx.ev) {
    auto it = cache_.find(ctx.ev->hdr.cgroup_id);
    if (!sensor_ || it == cache_.end() || it->second.written_ns >= ctx.ev->hdr.ts_ns) d.outcome = "not_prevented";
    return;
  }
  if (d.outcome != "respond") return;
  // A response, after the fact: never pid 1, never vigil, only in a container.
  if (d.pid <= 1 || d.pid == static_cast<std::uint32_t>(getpid())) return;
  if (!ctx.container || ctx.container->id.empty()) return;
  if (::kill(static_cast<pid_t>(d.pid), SIGKILL) == 0) ++kills_;
}

}  // namespace vigil::agent
