#include "engine/pipeline/pipeline.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/rules/ruleset.h"
#include "engine/rules/sequence.h"
#include "engine/state/state.h"

namespace vigil::pipeline {
namespace {

std::shared_ptr<const rules::Ruleset> compile(const std::string& yaml) {
  rules::LoadResult r = rules::load_rules_text({{"test_rules.yaml", yaml}}, rules::LoadOptions{});
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.to_string();
  EXPECT_TRUE(r.ruleset);
  return r.ruleset;
}

constexpr const char* kShellRule = R"(
- rule: Shell spawned
  desc: a shell ran
  condition: evt.type = execve and proc.name = bash
  output: "shell %proc.cmdline parent=%proc.pname"
  priority: WARNING
  tags: [test]
)";

constexpr const char* kCurlRule = R"(
- rule: Curl spawned
  desc: curl ran
  condition: evt.type = execve and proc.name = curl
  output: "curl %proc.cmdline"
  priority: NOTICE
)";

event::Event fork_event(std::uint64_t ts, std::uint32_t parent, std::uint32_t child) {
  event::Event ev;
  ev.hdr.ts_ns = ts;
  ev.hdr.type = event::Type::kFork;
  ev.hdr.pid = ev.hdr.tid = parent;
  ev.hdr.comm = "sshd";
  event::ForkData f;
  f.child_pid = f.child_tid = child;
  ev.data = f;
  return ev;
}

event::Event exec_event(std::uint64_t ts, std::uint32_t pid, std::uint32_t ppid, const std::string& comm,
                        std::vector<std::string> args) {
  event::Event ev;
  ev.hdr.ts_ns = ts;
  ev.hdr.type = event::Type::kExec;
  ev.hdr.pid = ev.hdr.tid = pid;
  ev.hdr.ppid = ppid;
  ev.hdr.comm = comm;
  event::ExecData x;
  x.filename = "/usr/bin/" + comm;
  x.exe = x.filename;
  x.args = std::move(args);
  ev.data = std::move(x);
  return ev;
}

event::Event exit_event(std::uint64_t ts, std::uint32_t pid) {
  event::Event ev;
  ev.hdr.ts_ns = ts;
  ev.hdr.type = event::Type::kExit;
  ev.hdr.pid = ev.hdr.tid = pid;
  ev.data = event::ExitData{};
  return ev;
}

struct Recorder : EventTap {
  std::vector<std::string> log;
  void on_event(const event::Event& ev, const state::EvalContext&) override {
    log.push_back("event:" + std::string(event::type_name(ev.hdr.type)));
  }
  void on_alert(const event::Event&, const state::EvalContext&, event::Alert& a) override {
    log.push_back("alert:" + a.rule);
    a.extra.emplace_back("capture", "/tmp/x.vcap");
  }
};

class PipelineTest : public ::testing::Test {
 protected:
  PipelineTest() : st_(state::Config{.live = false}) {
    state::Process sshd;
    sshd.pid = 100;
    sshd.ppid = 1;
    sshd.comm = "sshd";
    sshd.exepath = "/usr/sbin/sshd";
    st_.upsert_process(sshd);
  }
  Publisher collect() {
    return [this](std::shared_ptr<const event::Alert> a) { alerts_.push_back(std::move(a)); };
  }
  state::State st_;
  std::vector<std::shared_ptr<const event::Alert>> alerts_;
};

TEST_F(PipelineTest, AlertCarriesRuleEventFieldsAndHostname) {
  Pipeline p({st_, collect(), "node-7"}, compile(kShellRule));
  auto f = fork_event(1000, 100, 200);
  p.process(f);
  auto e = exec_event(2000, 200, 100, "bash", {"bash", "-i"});
  p.process(e);
  ASSERT_EQ(alerts_.size(), 1u);
  const event::Alert& a = *alerts_[0];
  EXPECT_EQ(a.rule, "Shell spawned");
  EXPECT_EQ(a.hostname, "node-7");
  EXPECT_EQ(a.time_ns, 2000u);
  EXPECT_EQ(a.priority, event::Priority::kWarning);
  EXPECT_EQ(a.output, "shell bash -i parent=sshd");
  EXPECT_EQ(a.uuid, rules::alert_uuid(e, "Shell spawned"));
  EXPECT_EQ(p.stats().events, 2u);
  EXPECT_EQ(p.stats().alerts, 1u);
}

TEST_F(PipelineTest, TapsSeeEventsBeforeAlertsAndMayAnnotateThem) {
  Pipeline p({st_, collect(), "n"}, compile(kShellRule));
  Recorder rec;
  p.add_tap(&rec);
  auto f = fork_event(1000, 100, 200);
  p.process(f);
  auto e = exec_event(2000, 200, 100, "bash", {"bash"});
  p.process(e);
  EXPECT_EQ(rec.log, (std::vector<std::string>{"event:clone", "event:execve", "alert:Shell spawned"}));
  ASSERT_EQ(alerts_.size(), 1u);
  ASSERT_EQ(alerts_[0]->extra.size(), 1u);
  EXPECT_EQ(alerts_[0]->extra[0].second, "/tmp/x.vcap");
}

TEST_F(PipelineTest, StateFollowsEventsAndReapsAfterTheExitsGracePeriod) {
  Pipeline p({st_, collect(), "n"}, nullptr);  // no rules: state still kept
  auto f = fork_event(1000, 100, 200);
  p.process(f);
  auto e = exec_event(2000, 200, 100, "python3", {"python3", "serve.py"});
  p.process(e);
  ASSERT_NE(st_.process(200), nullptr);
  EXPECT_EQ(st_.process(200)->comm, "python3");
  auto x = exit_event(3000, 200);
  p.process(x);
  // Reaped once its grace period (state::Config::process_grace_ns) of event
  // time has passed after the exit, not before.
  ASSERT_NE(st_.process(200), nullptr);
  const std::uint64_t grace = state::Config{}.process_grace_ns;
  auto later = exec_event(3000 + grace - 1, 201, 100, "sleep", {"sleep", "1"});
  p.process(later);
  EXPECT_NE(st_.process(200), nullptr);
  auto after_grace = exec_event(3000 + grace, 202, 100, "sleep", {"sleep", "1"});
  p.process(after_grace);
  EXPECT_EQ(st_.process(200), nullptr);
  EXPECT_TRUE(alerts_.empty());
}

TEST_F(PipelineTest, NewRulesetTakesEffectAtTheNextEvent) {
  Pipeline p({st_, collect(), "n"}, compile(kShellRule));
  auto e1 = exec_event(1000, 300, 100, "curl", {"curl", "x"});
  p.process(e1);
  EXPECT_TRUE(alerts_.empty());
  p.set_ruleset(compile(kCurlRule));
  auto e2 = exec_event(2000, 301, 100, "curl", {"curl", "y"});
  p.process(e2);
  ASSERT_EQ(alerts_.size(), 1u);
  EXPECT_EQ(alerts_[0]->rule, "Curl spawned");
  auto e3 = exec_event(3000, 302, 100, "bash", {"bash"});
  p.process(e3);
  EXPECT_EQ(alerts_.size(), 1u);  // the old rule is gone
}

// Sequences: the pipeline keeps their partial matches between events, drops
// them with the rule set a reload replaces, and keeps the eviction counts.
constexpr const char* kBashThenCurl = R"(
- sequence: Bash then curl
  desc: d
  by: [proc.ppid]
  within: 10s
  steps:
    - condition: evt.type = execve and proc.name = bash
    - condition: evt.type = execve and proc.name = curl
  output: "%step1.proc.cmdline then %proc.cmdline"
  priority: ERROR
)";

TEST_F(PipelineTest, SequencesCompleteAcrossEventsAndAReloadDropsTheirState) {
  constexpr std::uint64_t kSec = 1000000000ull;
  Pipeline p({st_, collect(), "n"}, compile(kBashThenCurl));
  auto b = exec_event(1 * kSec, 200, 100, "bash", {"bash", "-i"});
  p.process(b);
  EXPECT_EQ(p.sequence_partials(), 1u);
  auto c = exec_event(3 * kSec, 201, 100, "curl", {"curl", "x"});
  p.process(c);
  ASSERT_EQ(alerts_.size(), 1u);
  EXPECT_EQ(alerts_[0]->rule, "Bash then curl");
  EXPECT_EQ(alerts_[0]->output, "bash -i then curl x");
  EXPECT_EQ(alerts_[0]->hostname, "n");

  // Past the window: expired, counted.
  auto b2 = exec_event(4 * kSec, 202, 100, "bash", {"bash"});
  p.process(b2);
  auto c2 = exec_event(20 * kSec, 203, 100, "curl", {"curl", "y"});
  p.process(c2);
  EXPECT_EQ(alerts_.size(), 1u);
  auto rows = p.sequence_stats().snapshot();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].expired, 1u);

  // A reload drops the partial match; the counts stay.
  auto b3 = exec_event(21 * kSec, 204, 100, "bash", {"bash"});
  p.process(b3);
  EXPECT_EQ(p.sequence_partials(), 1u);
  p.set_ruleset(compile(kBashThenCurl));
  auto c3 = exec_event(22 * kSec, 205, 100, "curl", {"curl", "z"});
  p.process(c3);
  EXPECT_EQ(alerts_.size(), 1u);
  EXPECT_EQ(p.sequence_partials(), 0u);
  EXPECT_EQ(p.sequence_stats().snapshot()[0].expired, 1u);
}

// Replay's window and filters: the state follows every event, the rules run
// only on the selected ones.
TEST_F(PipelineTest, TheSelectorChoosesWhereTheRulesRunNotWhatTheStateSees) {
  Pipeline p({st_, collect(), "n"}, compile(kShellRule));
  struct OnlyPid201 final : Selector {
    int asked = 0;
    bool select(const event::Event& ev, const state::EvalContext& ctx) override {
      ++asked;
      EXPECT_EQ(ctx.ev, &ev);
      return ev.hdr.pid == 201;
    }
  } sel;
  p.set_selector(&sel);
  Recorder rec;
  p.add_tap(&rec);
  auto f1 = fork_event(1000, 100, 200);
  p.process(f1);
  auto e1 = exec_event(2000, 200, 100, "bash", {"bash"});
  p.process(e1);  // not selected: no alert, but the state knows bash
  ASSERT_NE(st_.process(200), nullptr);
  EXPECT_EQ(st_.process(200)->comm, "bash");
  auto f2 = fork_event(3000, 100, 201);
  p.process(f2);
  auto e2 = exec_event(4000, 201, 100, "bash", {"bash", "-l"});
  p.process(e2);
  ASSERT_EQ(alerts_.size(), 1u);
  EXPECT_EQ(alerts_[0]->output, "shell bash -l parent=sshd");
  EXPECT_EQ(sel.asked, 4);
  // Taps see every event, selected or not.
  EXPECT_EQ(rec.log, (std::vector<std::string>{"event:clone", "event:execve", "event:clone", "event:execve",
                                               "alert:Shell spawned"}));
}

}  // namespace
}  // namespace vigil::pipeline
