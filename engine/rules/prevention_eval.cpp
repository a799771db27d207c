// Prevention's user-space judgement (prevention.h): what the kernel decided,
// or would decide, about an event, told by the same terms it judges. Live and
// replay alike run it on the pipeline thread after the rules, so a capture
// replayed with the policy gives the decisions the node made.
#include <cerrno>
#include <climits>
#include <cstdint>
#include <exception>

#include "bpf/shared/events.h"
#include "engine/rules/prevention.h"
#include "engine/rules/ruleset.h"
#include "engine/rules/ruleset_parts.h"

namespace vigil::rules {

std::optional<std::int64_t> event_result(const event::Event& ev) {
  return std::visit(
      [](const auto& d) -> std::optional<std::int64_t> {
        if constexpr (requires { d.result; }) {
          const std::int64_t r = static_cast<std::int64_t>(d.result);
          if (r == INT64_MIN) return std::nullopt;  // kResultUnknown: the hook fired before the outcome
          return r;
        } else {
          return std::nullopt;
        }
      },
      ev.data);
}

std::vector<const PreventionRule*> enforced_slots(const std::vector<PreventionRule>& rules, std::size_t* overflow) {
  std::vector<const PreventionRule*> out;
  std::size_t over = 0;
  for (const PreventionRule& p : rules) {
    if (p.action != "deny" || !p.enforceable || !p.enabled || p.effective != PreventionMode::kEnforce) continue;
    if (out.size() < policy::kMaxSlots) out.push_back(&p);
    else ++over;
  }
  if (overflow) *overflow = over;
  return out;
}

policy::Tables kernel_tables(const std::vector<PreventionRule>& rules) {
  policy::Tables t;
  const auto slots = enforced_slots(rules);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const PreventionRule& p = *slots[i];
    const std::uint64_t bit = 1ull << i;
    t.slots.push_back(p.slot);
    for (const std::string& c : p.comms) t.comms[c] |= bit;
    for (const std::string& id : p.exe_ids) t.exe_ids[id] |= bit;
    for (std::uint16_t port : p.ports) t.ports[port] |= bit;
    for (policy::NetEntry e : p.nets) {
      e.slots = bit;
      t.nets.push_back(e);
    }
  }
  return t;
}

namespace {

const char* tag_of(std::string_view outcome) {
  if (outcome == "prevented") return "prevented";
  if (outcome == "respond") return "responded";
  return outcome == "would_prevent" || outcome == "would_respond" ? "would_prevent" : "not_prevented";
}

}  // namespace

void tag_prevention_alert(const PreventionDecision& d, event::Alert& a) {
  a.tags.emplace_back(tag_of(d.outcome));
  a.extra.emplace_back("prevention", d.outcome);
}

void Ruleset::judge_prevention(const state::EvalContext& ctx, std::vector<event::Alert>& alerts,
                               std::vector<PreventionDecision>& decisions) const noexcept {
  // Prevention never applies to the host: a refusal needs a container.
  if (prevention_.empty() || !ctx.ev || !ctx.container || ctx.container->id.empty()) return;
  try {
    Arena arena;
    FieldCache cache;  // rendering an alert reads the rule set's cached fields
    cache.clear();
    ExtractCtx x{&ctx, &arena, &cache, nullptr};
    for (const PreventionRule& p : prevention_) {
      if (!p.enabled || p.effective == PreventionMode::kOff || !p.judge) continue;
      arena.reset();
      cache.clear();
      if (!p.judge->eval(x)) continue;
      const bool enforce = p.effective == PreventionMode::kEnforce;
      std::string outcome;
      std::uint8_t responses = p.responses;
      if (p.responses != 0) {
        outcome = enforce ? "respond" : "would_respond";
      } else if (!enforce) {
        outcome = "would_prevent";
      } else if (!ctx.pod || !p.enforceable) {
        // The kernel has no entry for a container whose pod is not known
        // yet: nothing was refused.
        outcome = "not_prevented";
      } else if (p.hook == policy::Hook::kExec) {
        // The exec record says whether the kernel killed it. A program
        // denied by identity that was not is the first exec of a file not
        // identified before: it is killed now, a response.
        const auto* ed = ctx.ev->as<event::ExecData>();
        if (ed && ed->killed_at_exec) {
          outcome = "prevented";
        } else if (p.slot.flags & VG_POLR_EXE) {
          outcome = "respond";
          responses = kResponseKill;
        } else {
          outcome = "not_prevented";
        }
      } else {
        const auto res = event_result(*ctx.ev);
        outcome = res && *res == -EPERM ? "prevented" : "not_prevented";
      }
      std::size_t at = alerts.size();
      for (std::size_t i = 0; i < alerts.size(); ++i)
        if (alerts[i].rule == p.name) at = i;
      if (at == alerts.size()) {
        // The rule's own condition did not hold: the call failed (refused,
        // or it would have been), and the rule asks for a successful one.
        // Only a refusal, done or that would be done, is told.
        if (outcome != "prevented" && outcome != "would_prevent") continue;
        bool found = false;
        for (const auto& r : rules_) {
          if (r->sequence < 0 && r->name == p.name) {
            alerts.push_back(rule_alert(*r, x, hostname_));
            found = true;
            break;
          }
        }
        if (!found) continue;
      }
      decisions.push_back({p.name, outcome, ctx.ev->hdr.pid, at, responses});
    }
  } catch (const std::exception&) {
    // Out of memory: the alerts as they are.
  }
}

}  // namespace vigil::rules
