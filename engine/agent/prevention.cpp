#include "engine/agent/prevention.h"

#include <signal.h>
#include <sys/sysmacros.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "bpf/shared/events.h"
#include "engine/agent/pod_responses.h"
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
// A pod is labelled or deleted at most once in this long (event time), and
// at most this many (pod, response) pairs are remembered for it.
constexpr std::uint64_t kPodResponseEveryNs = 60'000'000'000ull;
constexpr std::size_t kMaxAsked = 4096;

}  // namespace

PreventionTap::PreventionTap(sensor::Sensor* sensor, const pipeline::Pipeline& pipe, spdlog::logger* log,
                             FreezeRoots roots)
    : sensor_(sensor), pipe_(pipe), log_(log), freezer_(std::move(roots)) {}

PreventionTap::~PreventionTap() {
  pods_.reset();  // its worker counts into responses_: stopped first
}

void PreventionTap::set_k8s(const state::K8sConfig& cfg) {
  pods_ = std::make_unique<PodResponder>(cfg, [this](const PodResponseJob& job, const std::string& error) {
    count(job.rule, job.response, error.empty() ? "done" : "error",
          error.empty() ? "" : "pod " + job.ns + "/" + job.name + ": " + error);
  });
}

std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t> PreventionTap::responses() const {
  std::lock_guard<std::mutex> lk(responses_mu_);
  return responses_;
}

void PreventionTap::count(const std::string& rule, rules::Response r, const char* result, const std::string& detail) {
  std::uint64_t n = 0;
  {
    std::lock_guard<std::mutex> lk(responses_mu_);
    n = ++responses_[{rule, std::string(rules::response_name(r)), result}];
  }
  // A failure that repeats (a read-only cgroup mount, a missing RBAC) is
  // logged the 1st, 2nd, 4th, 8th... time: the log stays bounded.
  if (log_ && std::string_view(result) != "done" && (n & (n - 1)) == 0)
    log_->warn("prevention: rule '{}': {} response not carried out ({}, {} times so far): {}", rule,
               rules::response_name(r), result, n, detail);
}

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
  if (const auto* ed = ev.as<event::ExecData>()) deny_file(*ed);
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

void PreventionTap::deny_file(const event::ExecData& ed) {
  if (ed.exe_ino == 0 || (ed.exe_sha256.empty() && ed.exe_build_id.empty())) return;
  if (exe_ids_for_ != rules_) {
    exe_ids_ = rules::kernel_tables(rules_->prevention()).exe_ids;
    exe_ids_for_ = rules_;
  }
  if (exe_ids_.empty()) return;
  std::uint64_t slots = 0;
  if (auto it = exe_ids_.find("sha256:" + ed.exe_sha256); !ed.exe_sha256.empty() && it != exe_ids_.end())
    slots |= it->second;
  if (auto it = exe_ids_.find("buildid:" + ed.exe_build_id); !ed.exe_build_id.empty() && it != exe_ids_.end())
    slots |= it->second;
  if (!slots) return;
  // The exec record's dev_t, as the kernel numbers it.
  const std::uint32_t dev = VG_MKDEV(major(ed.exe_dev), minor(ed.exe_dev));
  if (sensor_->add_policy_exe({ed.exe_ino, dev, ed.exe_ctime_ns, slots})) ++denied_files_;
  else ++denied_file_errors_;  // full: its later execs are killed only after identification
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
  if (d.outcome != "respond") return;
  // Responses, after the fact, only in a container.
  const bool in_container = ctx.container && !ctx.container->id.empty();
  if (d.responses & rules::kResponseFreeze) {
    if (!in_container) {
      count(d.rule, rules::kResponseFreeze, "refused", "not in a container");
    } else {
      const FreezeOutcome o =
          freezer_.freeze(ctx.container->id, ctx.container->cgroup_path, ctx.container->cgroup_id, d.pid);
      switch (o.result) {
        case FreezeOutcome::Result::kFrozen: count(d.rule, rules::kResponseFreeze, "done"); break;
        case FreezeOutcome::Result::kRefused: count(d.rule, rules::kResponseFreeze, "refused", o.detail); break;
        case FreezeOutcome::Result::kFailed: count(d.rule, rules::kResponseFreeze, "error", o.detail); break;
      }
    }
  }
  if (d.responses & rules::kResponseKill) {
    // Never pid 1, never vigil.
    if (d.pid <= 1 || d.pid == static_cast<std::uint32_t>(getpid()) || !in_container) {
      count(d.rule, rules::kResponseKill, "refused", "pid " + std::to_string(d.pid) + " may not be killed");
    } else if (::kill(static_cast<pid_t>(d.pid), SIGKILL) == 0) {
      ++kills_;
      count(d.rule, rules::kResponseKill, "done");
    } else {
      count(d.rule, rules::kResponseKill, "error", "pid " + std::to_string(d.pid) + ": " + std::strerror(errno));
    }
  }
  for (rules::Response r : {rules::kResponseLabel, rules::kResponseDeletePod})
    if (d.responses & r) pod_response(d, r, ctx);
}

void PreventionTap::pod_response(const rules::PreventionDecision& d, rules::Response r, const state::EvalContext& ctx) {
  if (!ctx.container || ctx.container->id.empty() || !ctx.pod || ctx.pod->name.empty() || ctx.pod->ns.empty()) {
    count(d.rule, r, "refused", "the container's pod is not known");
    return;
  }
  if (!pods_) {
    count(d.rule, r, "no_api", "no Kubernetes API server is configured");
    return;
  }
  const std::uint64_t now = ctx.ev ? ctx.ev->hdr.ts_ns : 0;
  const std::string key = ctx.pod->uid + "/" + std::string(rules::response_name(r));
  if (auto it = asked_.find(key); it != asked_.end() && now < it->second + kPodResponseEveryNs) return;
  if (asked_.size() >= kMaxAsked) {
    std::erase_if(asked_, [now](const auto& kv) { return now >= kv.second + kPodResponseEveryNs; });
    if (asked_.size() >= kMaxAsked) asked_.clear();
  }
  if (!pods_->offer({d.rule, r, ctx.pod->ns, ctx.pod->name, ctx.pod->uid})) {
    count(d.rule, r, "dropped", "the API request queue is full");
    return;
  }
  asked_[key] = now;
}

}  // namespace vigil::agent
