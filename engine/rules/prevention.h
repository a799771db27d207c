// Prevention in the rule language (docs/prevention.md): a rule's `action`
// (deny: refuse the call in the kernel, or kill a denied program at exec;
// the responses, carried out after the alert: kill the process, freeze the
// container, label the pod quarantined or delete it through the API server)
// and what the kernel can judge of its condition.
//
// The analysis expands the condition's macros and lists, folds what is
// constant for a container (container.id != host: the kernel only ever
// refuses in a container), and splits the top-level `and` into terms. Each
// term must be one of:
//   - about the call's outcome (evt.failed, evt.res...): dropped, the kernel
//     judges before there is one;
//   - the event type (evt.type): picks the hook;
//   - about the container or pod only (container.*, k8s.*, gpu.limit,
//     gpu.visible_devices, gpu.allocated): judged per container in user space
//     and written into the container's entry;
//   - the program's name (proc.name = / in, or not): the task's comm;
//   - a test the hook judges itself: at cgroup/dev gpu.allowed = false and
//     the node's kind (gpu.device / gpu.index exists, gpu.node); at
//     cgroup/connect and sendmsg one destination test (fd.sip, fd.snet,
//     fd.sip.name, negated or not), fd.sport, fd.l4proto; at sock_create
//     evt.arg.domain and evt.arg.type; at exec proc.is_exe_from_memfd and
//     proc.is_exe_upper_layer, and the program file's identity
//     (proc.exe_sha256, proc.exe_build_id = / in): the kernel cannot compute
//     it, so user space adds each file it identifies as denied to a map keyed
//     by its inode; later execs of that file are killed at exec, the first
//     one right after it is identified (a kill response).
// Anything else makes the rule's deny unenforceable, and the analysis says
// which field or operator.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/policy/tables.h"
#include "engine/rules/compiler.h"
#include "engine/rules/document.h"

namespace vigil::rules {

enum class PreventionMode : std::uint8_t { kOff = 0, kMonitor = 1, kEnforce = 2 };
std::optional<PreventionMode> prevention_mode_from(std::string_view s);
std::string_view prevention_mode_name(PreventionMode m);
// "cgroup/dev", "cgroup/connect4|6, sendmsg4|6", "cgroup/sock_create", "exec (kill)".
std::string_view hook_name(policy::Hook h);

// The responses an action asks for, as bits (a rule may list several).
enum Response : std::uint8_t {
  kResponseKill = 1,       // SIGKILL the process
  kResponseFreeze = 2,     // freeze the container's cgroup
  kResponseLabel = 4,      // label (and annotate) the pod through the API server
  kResponseDeletePod = 8,  // delete the pod through the API server
};
// Every response bit, in the order they are carried out and written.
inline constexpr Response kResponses[] = {kResponseKill, kResponseFreeze, kResponseLabel, kResponseDeletePod};
// "kill", "freeze", "label", "delete_pod".
std::string_view response_name(Response r);
// The responses of a rule's canonical action ("kill,freeze" -> kill|freeze;
// "", "deny": 0).
std::uint8_t responses_of(std::string_view action);
// A rule file's `action` words checked and made canonical: "" (none),
// "deny", or the responses in kResponses order joined by commas. nullopt
// with `why` set for an unknown word, an empty list, or deny or none listed
// with anything else.
std::optional<std::string> canonical_action(const std::vector<std::string>& words, std::string& why);

struct PreventionRule {
  std::string name;
  std::string action;          // "deny", or the responses: "kill", "kill,freeze", "label"...
  std::uint8_t responses = 0;  // responses_of(action): 0 for deny
  std::string action_mode;     // "" (the configuration's), "off", "monitor", "enforce"
  std::string file;
  int line = 0;
  // deny: the hook and whether the kernel can judge the whole condition
  // (why_not says which field or operator it cannot).
  policy::Hook hook = policy::Hook::kNone;
  bool enforceable = false;
  std::string why_not;
  policy::Slot slot;                   // the hook's parameters (no index yet)
  std::vector<std::string> comms;      // slot.flags has VG_POLR_COMM
  std::vector<std::uint16_t> ports;    // slot.flags has VG_POLR_PORTS
  std::vector<policy::NetEntry> nets;  // static destinations (slots 0)
  std::vector<std::string> dns_names;  // fd.sip.name values: their addresses are added as DNS answers show them
  std::vector<std::string> exe_ids;    // slot.flags has VG_POLR_EXE: "sha256:<hex>", "buildid:<hex>" (lower case)
  // The container part (null: every container), and the condition without
  // its outcome terms: what user space judges of an event to say what the
  // kernel decided or would decide (monitor, replay).
  std::shared_ptr<const Expr> container_part;
  std::shared_ptr<const Expr> judge;
  bool enabled = true;
  PreventionMode effective = PreventionMode::kOff;  // mode(the load's global mode)
  // The mode this rule runs in under the configuration's `global`.
  PreventionMode mode(PreventionMode global) const {
    if (action_mode.empty()) return global;
    return prevention_mode_from(action_mode).value_or(global);
  }
};

// The analysis of a rule with an action. `condition`: the rule's condition
// with its exceptions, parsed. Compile errors in the parts it compiles are
// reported in why_not (the rule itself compiled, so there should be none).
PreventionRule analyse_prevention(const RuleDef& r, const Node& condition, const MacroMap& macros, const ListMap& lists,
                                  const FieldCatalog& catalog);

// The rules the kernel enforces (deny, enforceable, enabled, in enforce
// mode), in slot order (at most policy::kMaxSlots; the rest are not
// enforced and `overflow` counts them), and the tables made of them. The
// NVIDIA majors are left to the caller.
std::vector<const PreventionRule*> enforced_slots(const std::vector<PreventionRule>& rules,
                                                  std::size_t* overflow = nullptr);
policy::Tables kernel_tables(const std::vector<PreventionRule>& rules);

// The result of the call an event reports (open, mknod, connect, socket...),
// where it has one.
std::optional<std::int64_t> event_result(const event::Event& ev);

}  // namespace vigil::rules
