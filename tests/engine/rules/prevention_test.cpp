// Prevention in the rule language: which rules' deny the kernel can enforce,
// what it is told (slots, comms, destinations), and the errors a user sees.
#include "engine/rules/prevention.h"

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

#include "bpf/shared/events.h"
#include "engine/rules/ruleset.h"
#include "tests/engine/rules/test_util.h"

namespace vigil::rules {
namespace {

const std::string kMacros = R"(
- macro: vigil_never_true
  condition: (evt.source = "vigil_never_true")
- macro: vigil_container
  condition: (container.id != host)
- list: private_nets
  items: ["10.0.0.0/8", "192.168.0.0/16"]
- list: pool_ports
  items: [3333, 4444, 14444]
)";

LoadResult load(const std::string& rules, std::uint8_t mode = 0) {
  LoadOptions opts;
  opts.prevention_mode = mode;
  return load_rules_text({{"prevention_test.yaml", kMacros + rules}}, opts);
}

std::string rule(const std::string& name, const std::string& condition, const std::string& extra = "action: deny") {
  return "- rule: " + name + "\n  desc: d\n  condition: " + condition +
         "\n  output: o %proc.name\n  priority: ERROR\n  " + extra + "\n";
}

const PreventionRule& only(const LoadResult& r) {
  EXPECT_TRUE(r.ruleset);
  EXPECT_EQ(r.ruleset->prevention().size(), 1u);
  return r.ruleset->prevention().front();
}

TEST(Prevention, UnallocatedGpuOpenIsEnforcedAtTheDeviceHook) {
  auto r = load(rule("gpu", R"(>
    evt.type in (open, openat) and vigil_container and gpu.device exists and evt.failed = false
    and gpu.allowed = false and not k8s.ns.name in (gpu-operator) and not vigil_never_true)"));
  const PreventionRule& p = only(r);
  EXPECT_TRUE(p.enforceable) << p.why_not;
  EXPECT_EQ(p.hook, policy::Hook::kDevice);
  EXPECT_TRUE(p.slot.flags & VG_POLR_NOT_ALLOWED);
  EXPECT_EQ(p.slot.kinds, 0x1ffu);
  EXPECT_TRUE(p.container_part) << "k8s.ns.name is judged per container";
}

TEST(Prevention, PoolConnectIsEnforcedWithItsDestinationAndPorts) {
  auto r = load(rule("pool", R"(>
    evt.type = connect and vigil_container and fd.sip exists and not fd.snet in (private_nets)
    and fd.sport in (pool_ports))"));
  const PreventionRule& p = only(r);
  ASSERT_TRUE(p.enforceable) << p.why_not;
  EXPECT_EQ(p.hook, policy::Hook::kNet);
  EXPECT_TRUE(p.slot.flags & VG_POLR_NET);
  EXPECT_TRUE(p.slot.flags & VG_POLR_NET_NEG);
  EXPECT_EQ(p.nets.size(), 2u);
  EXPECT_EQ(p.ports, (std::vector<std::uint16_t>{3333, 4444, 14444}));
}

TEST(Prevention, NamesOfDestinationsAreLearntFromDns) {
  auto r = load(rule("names", "evt.type = connect and fd.sip.name in (pool.example.com)"));
  const PreventionRule& p = only(r);
  ASSERT_TRUE(p.enforceable) << p.why_not;
  EXPECT_EQ(p.dns_names, std::vector<std::string>{"pool.example.com"});
}

TEST(Prevention, RawSocketsAndDeniedProgramsAreEnforced) {
  auto s = load(rule("raw",
                     "evt.type = socket and evt.arg.domain in (AF_INET, AF_INET6) and evt.arg.type "
                     "startswith SOCK_RAW and vigil_container"));
  EXPECT_TRUE(only(s).enforceable) << only(s).why_not;
  EXPECT_EQ(only(s).slot.families, (1u << 2) | (1u << 10));
  EXPECT_EQ(only(s).slot.types, 1u << 3);
  auto packet = load(rule("packet", "evt.type = socket and evt.arg.domain = AF_PACKET"));
  EXPECT_FALSE(only(packet).enforceable);
  EXPECT_NE(only(packet).why_not.find("AF_INET and AF_INET6 sockets only"), std::string::npos) << only(packet).why_not;
  auto e = load(rule("miner", "evt.type = execve and proc.name in (xmrig, t-rex) and vigil_container"));
  ASSERT_TRUE(only(e).enforceable) << only(e).why_not;
  EXPECT_EQ(only(e).hook, policy::Hook::kExec);
  EXPECT_EQ(only(e).comms, (std::vector<std::string>{"xmrig", "t-rex"}));
  auto m = load(rule("memfd", "evt.type = execve and proc.is_exe_from_memfd = true"));
  EXPECT_TRUE(only(m).enforceable);
  EXPECT_TRUE(only(m).slot.flags & VG_POLR_MEMFD);
}

const std::string kSha = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08";
const std::string kShaLower = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

// The kernel cannot hash a program: a deny by identity is enforced by file,
// once user space has identified one (pol_exe), for the slot's identities.
TEST(Prevention, ProgramsDeniedByIdentityAreEnforcedByFile) {
  auto r = load(rule("hash", "evt.type = execve and vigil_container and proc.exe_sha256 in (" + kShaLower + ")",
                     "action: deny\n  action_mode: enforce") +
                rule("bid", "evt.type = execve and proc.exe_build_id = 00112233445566778899aabbccddeeff00112233",
                     "action: deny\n  action_mode: enforce"));
  ASSERT_TRUE(r.ruleset);
  const auto& p = r.ruleset->prevention();
  ASSERT_EQ(p.size(), 2u);
  ASSERT_TRUE(p[0].enforceable) << p[0].why_not;
  EXPECT_EQ(p[0].hook, policy::Hook::kExec);
  EXPECT_TRUE(p[0].slot.flags & VG_POLR_EXE);
  EXPECT_EQ(p[0].exe_ids, std::vector<std::string>{"sha256:" + kShaLower});
  ASSERT_TRUE(p[1].enforceable) << p[1].why_not;
  EXPECT_EQ(p[1].exe_ids, std::vector<std::string>{"buildid:00112233445566778899aabbccddeeff00112233"});
  const policy::Tables t = kernel_tables(p);
  EXPECT_EQ(t.exe_ids.at("sha256:" + kShaLower), 1u);
  EXPECT_EQ(t.exe_ids.at("buildid:00112233445566778899aabbccddeeff00112233"), 2u);

  // What cannot be enforced by file says why.
  auto bad = load(rule("bad", "evt.type = execve and proc.exe_sha256 = abc"));
  EXPECT_FALSE(only(bad).enforceable);
  EXPECT_NE(only(bad).why_not.find("64 digits"), std::string::npos) << only(bad).why_not;
  auto upper = load(rule("upper", "evt.type = execve and proc.exe_sha256 = " + kSha));
  EXPECT_FALSE(only(upper).enforceable) << "the field gives lower case: the rule would never match";
  EXPECT_NE(only(upper).why_not.find("lower-case hex"), std::string::npos) << only(upper).why_not;
  auto neg = load(rule("neg", "evt.type = execve and not proc.exe_sha256 in (" + kShaLower + ")"));
  EXPECT_FALSE(only(neg).enforceable);
  EXPECT_NE(only(neg).why_not.find("only listed programs"), std::string::npos) << only(neg).why_not;
  auto two = load(rule("two", "evt.type = execve and proc.exe_sha256 = " + kShaLower +
                                  " and proc.exe_build_id = 00112233445566778899aabbccddeeff00112233"));
  EXPECT_FALSE(only(two).enforceable);
  auto prefix = load(rule("prefix", "evt.type = execve and proc.exe_sha256 startswith 9f86"));
  EXPECT_FALSE(only(prefix).enforceable);
  EXPECT_NE(only(prefix).why_not.find("startswith"), std::string::npos) << only(prefix).why_not;
}

// What the exec record says decides: killed at exec is prevented; a file a
// rule denies by identity that the kernel did not know yet (its first exec)
// is killed now, a response; a program killed by nothing was not prevented.
TEST(Prevention, AnExecIsPreventedOnlyWhereTheKernelKilledIt) {
  auto r = load(rule("hash", "evt.type = execve and vigil_container and proc.exe_sha256 in (" + kShaLower + ")",
                     "action: deny\n  action_mode: enforce") +
                rule("name", "evt.type = execve and vigil_container and proc.name = python3",
                     "action: deny\n  action_mode: enforce"));
  ASSERT_TRUE(r.ruleset);
  testing::World w;
  w.proc.exe_sha256 = kShaLower;
  auto judge = [&](bool killed) {
    w.exec();
    auto& ed = std::get<event::ExecData>(w.ev.data);
    ed.exe_sha256 = kShaLower;
    ed.killed_at_exec = killed;
    const auto ctx = w.ctx();
    std::vector<event::Alert> alerts;
    r.ruleset->evaluate(ctx, alerts);
    std::vector<PreventionDecision> d;
    r.ruleset->judge_prevention(ctx, alerts, d);
    return d;
  };
  auto first = judge(false);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].rule, "hash");
  EXPECT_EQ(first[0].outcome, "respond") << "the first exec of a file is killed once identified";
  EXPECT_EQ(first[0].responses, kResponseKill);
  EXPECT_EQ(first[1].outcome, "not_prevented") << "a name rule the kernel did not apply";
  auto later = judge(true);
  ASSERT_EQ(later.size(), 2u);
  EXPECT_EQ(later[0].outcome, "prevented");
  EXPECT_EQ(later[0].responses, 0u);
  EXPECT_EQ(later[1].outcome, "prevented");
  // A pod not known yet: nothing is done.
  w.pod_known = false;
  auto unknown = judge(false);
  ASSERT_EQ(unknown.size(), 2u);
  EXPECT_EQ(unknown[0].outcome, "not_prevented");
}

TEST(Prevention, WhatTheKernelCannotJudgeIsNamed) {
  auto a = load(rule("anc", "evt.type = execve and proc.aname in (ray) and proc.name = sh"));
  EXPECT_FALSE(only(a).enforceable);
  EXPECT_NE(only(a).why_not.find("proc.aname"), std::string::npos) << only(a).why_not;
  auto op = load(rule("op", "evt.type = execve and proc.name startswith xm"));
  EXPECT_FALSE(only(op).enforceable);
  EXPECT_NE(only(op).why_not.find("startswith"), std::string::npos) << only(op).why_not;
  auto mixed = load(rule("mixed", "evt.type in (execve, connect) and proc.name = xmrig"));
  EXPECT_FALSE(only(mixed).enforceable);
  auto all = load(rule("all", "evt.type = execve and vigil_container"));
  EXPECT_FALSE(only(all).enforceable) << "killing every program of a container is refused";
}

TEST(Prevention, AnUnenforceableDenyIsAnErrorInEnforceModeOnly) {
  const std::string text = rule("anc", "evt.type = execve and proc.aname in (ray) and proc.name = sh");
  EXPECT_EQ(load(text, 0).errors, 0u);
  EXPECT_EQ(load(text, 1).errors, 0u);
  auto r = load(text, 2);
  EXPECT_GE(r.errors, 1u);
  bool named = false;
  for (const auto& d : r.diagnostics) named = named || d.to_string().find("cannot be enforced") != std::string::npos;
  EXPECT_TRUE(named);
  // The rule's own mode counts too.
  EXPECT_GE(
      load(rule("anc", "evt.type = execve and proc.aname in (ray)", "action: deny\n  action_mode: enforce"), 0).errors,
      1u);
}

TEST(Prevention, BadActionValuesAreErrors) {
  EXPECT_GE(load(rule("x", "evt.type = execve and proc.name = a", "action: block")).errors, 1u);
  EXPECT_GE(load(rule("x", "evt.type = execve and proc.name = a", "action: deny\n  action_mode: sometimes")).errors,
            1u);
}

TEST(Prevention, ResponsesAreOneWordOrAList) {
  const std::string cond = "evt.type = execve and proc.name = a";
  const PreventionRule& f = only(load(rule("x", cond, "action: freeze")));
  EXPECT_EQ(f.action, "freeze");
  EXPECT_EQ(f.responses, kResponseFreeze);
  auto both = load(rule("x", cond, "action: [freeze, kill]"));
  EXPECT_EQ(only(both).action, "kill,freeze") << "written in one order whatever the file's";
  EXPECT_EQ(only(both).responses, kResponseKill | kResponseFreeze);
  auto pod = load(rule("x", cond, "action: [label, delete_pod, label]"));
  EXPECT_EQ(only(pod).action, "label,delete_pod");
  // A response is never judged by the kernel, and not an error in enforce mode.
  auto enforced = load(rule("x", "evt.type = execve and proc.aname in (ray)", "action: [kill, label]"), 2);
  EXPECT_EQ(enforced.errors, 0u);
  EXPECT_TRUE(kernel_tables(enforced.ruleset->prevention()).slots.empty());
  // none is no action at all.
  auto none = load(rule("x", cond, "action: none"));
  ASSERT_TRUE(none.ruleset);
  EXPECT_TRUE(none.ruleset->prevention().empty());
}

// The error names the file, the line and the column of the value, and says
// which words are known.
TEST(Prevention, BadActionListsAreErrorsNamingFileAndPosition) {
  const std::string cond = "evt.type = execve and proc.name = a";
  std::size_t macro_lines = 0;
  for (char c : kMacros) macro_lines += c == '\n';
  const std::string at = "prevention_test.yaml:" + std::to_string(macro_lines + 6) + ":";
  const struct {
    const char* action;
    const char* says;
  } cases[] = {
      {"action: [kill, quarantine]", "unknown action 'quarantine'"},
      {"action: [deny, kill]", "'deny' cannot be listed with other actions"},
      {"action: [none, freeze]", "'none' cannot be listed with other actions"},
      {"action: []", "the action list is empty"},
      {"action: {kill: true}", "'action' must be a list"},
  };
  for (const auto& c : cases) {
    auto r = load(rule("x", cond, c.action));
    EXPECT_GE(r.errors, 1u) << c.action;
    std::string all;
    for (const auto& d : r.diagnostics) all += d.to_string() + "\n";
    EXPECT_NE(all.find(c.says), std::string::npos) << c.action << ":\n" << all;
    EXPECT_NE(all.find(at), std::string::npos) << c.action << ": no " << at << "\n" << all;
  }
  auto unknown = load(rule("x", cond, "action: [kill, quarantine]"));
  std::string all;
  for (const auto& d : unknown.diagnostics) all += d.to_string();
  for (const char* w : {"deny", "kill", "freeze", "label", "delete_pod", "none"})
    EXPECT_NE(all.find(w), std::string::npos) << "the known words are listed: " << all;
}

// A local file changes a rule's action with override: replace, to a list too.
TEST(Prevention, OverrideReplacesTheActionWithResponses) {
  const std::string cond = "evt.type = execve and proc.name = a";
  auto r = load(rule("x", cond, "action: deny") +
                "- rule: x\n  action: [freeze, label]\n  override:\n    action: replace\n");
  EXPECT_EQ(r.errors, 0u);
  EXPECT_EQ(only(r).action, "freeze,label");
  EXPECT_EQ(only(r).responses, kResponseFreeze | kResponseLabel);
}

// A response is decided in user space: respond (enforce), would_respond
// (monitor, tagged would_prevent), nothing for the host.
TEST(Prevention, ResponsesAreDecidedForContainersOnly) {
  for (std::uint8_t mode : {std::uint8_t{1}, std::uint8_t{2}}) {
    auto r =
        load(rule("pool", "evt.type = connect and vigil_container and fd.sip = 203.0.113.9", "action: [freeze, label]"),
             mode);
    ASSERT_TRUE(r.ruleset);
    testing::World w;
    w.connect("203.0.113.9", 3333);
    const auto ctx = w.ctx();
    std::vector<event::Alert> alerts;
    r.ruleset->evaluate(ctx, alerts);
    ASSERT_EQ(alerts.size(), 1u);
    std::vector<PreventionDecision> d;
    r.ruleset->judge_prevention(ctx, alerts, d);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].outcome, mode == 2 ? "respond" : "would_respond");
    EXPECT_EQ(d[0].responses, kResponseFreeze | kResponseLabel);
    tag_prevention_alert(d[0], alerts[d[0].alert]);
    EXPECT_EQ(alerts[0].tags.back(), mode == 2 ? "responded" : "would_prevent");
    w.in_container = false;
    const auto host = w.ctx();
    alerts.clear();
    d.clear();
    r.ruleset->evaluate(host, alerts);
    r.ruleset->judge_prevention(host, alerts, d);
    EXPECT_TRUE(d.empty()) << "a host process is never responded to";
  }
}

TEST(Prevention, KernelTablesHoldTheEnforcedRulesOnly) {
  auto r = load(rule("a", "evt.type = execve and proc.name in (xmrig)", "action: deny\n  action_mode: enforce") +
                rule("b", "evt.type = execve and proc.name in (nbminer)", "action: deny\n  action_mode: monitor") +
                rule("c", "evt.type = connect and fd.sip = 203.0.113.9", "action: deny\n  action_mode: enforce"));
  ASSERT_TRUE(r.ruleset);
  const policy::Tables t = kernel_tables(r.ruleset->prevention());
  ASSERT_EQ(t.slots.size(), 2u);
  EXPECT_EQ(t.slots[0].hook, policy::Hook::kExec);
  EXPECT_EQ(t.slots[1].hook, policy::Hook::kNet);
  EXPECT_EQ(t.comms.count("nbminer"), 0u);
  EXPECT_EQ(t.comms.at("xmrig"), 1u);
  ASSERT_EQ(t.nets.size(), 1u);
  EXPECT_EQ(t.nets[0].slots, 2u);
  EXPECT_EQ(t.nets[0].prefix, 32);
}

// A call the kernel refused fails, and a rule that asks for a successful one
// does not match it: the decision appends the rule's alert (rendered with the
// rule set's cached fields: this crashed vigil before the fix).
TEST(Prevention, ARefusedCallIsToldWithTheRulesOwnAlert) {
  auto r = load(rule("pool", "evt.type = connect and vigil_container and fd.sip = 203.0.113.9 and evt.failed = false",
                     "action: deny\n  action_mode: enforce"));
  ASSERT_TRUE(r.ruleset);
  testing::World w;
  w.connect("203.0.113.9", 3333, event::L4::kTcp, -EPERM);
  const auto ctx = w.ctx();
  std::vector<event::Alert> alerts;
  r.ruleset->evaluate(ctx, alerts);
  EXPECT_TRUE(alerts.empty());
  std::vector<PreventionDecision> d;
  r.ruleset->judge_prevention(ctx, alerts, d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].outcome, "prevented");
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].rule, "pool");
  EXPECT_NE(alerts[0].output.find("python3"), std::string::npos) << alerts[0].output;

  // A successful connect under enforce: the kernel let it through.
  w.connect("203.0.113.9", 3333, event::L4::kTcp, 0);
  const auto ctx2 = w.ctx();
  alerts.clear();
  d.clear();
  r.ruleset->evaluate(ctx2, alerts);
  r.ruleset->judge_prevention(ctx2, alerts, d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].outcome, "not_prevented");
  // The host is never judged.
  w.in_container = false;
  const auto ctx3 = w.ctx();
  alerts.clear();
  d.clear();
  r.ruleset->judge_prevention(ctx3, alerts, d);
  EXPECT_TRUE(d.empty());
}

TEST(Prevention, MonitorModeSaysWhatWouldBePrevented) {
  auto r = load(rule("pool", "evt.type = connect and vigil_container and fd.sip = 203.0.113.9",
                     "action: deny\n  action_mode: monitor"));
  ASSERT_TRUE(r.ruleset);
  testing::World w;
  w.connect("203.0.113.9", 3333);
  const auto ctx = w.ctx();
  std::vector<event::Alert> alerts;
  r.ruleset->evaluate(ctx, alerts);
  ASSERT_EQ(alerts.size(), 1u);
  std::vector<PreventionDecision> d;
  r.ruleset->judge_prevention(ctx, alerts, d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].outcome, "would_prevent");
  tag_prevention_alert(d[0], alerts[d[0].alert]);
  EXPECT_EQ(alerts[0].tags.back(), "would_prevent");
}

}  // namespace
}  // namespace vigil::rules
