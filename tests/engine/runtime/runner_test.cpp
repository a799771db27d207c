// runtime::Runner with scripted sources: ordering across sources, done and
// failed sources, drop accounting, ticks on the sources' clock, stop
// conditions, signals and SIGHUP reloads.
#include "engine/runtime/runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "engine/pipeline/pipeline.h"
#include "engine/rules/ruleset.h"
#include "engine/state/state.h"
#include "tests/support/handed_source.h"

namespace vigil::runtime {
namespace {

using namespace std::chrono_literals;

event::Event exec_event(std::uint64_t ts, std::uint32_t pid, const std::string& comm) {
  event::Event ev;
  ev.hdr.ts_ns = ts;
  ev.hdr.type = event::Type::kExec;
  ev.hdr.pid = ev.hdr.tid = pid;
  ev.hdr.ppid = 1;
  ev.hdr.comm = comm;
  event::ExecData x;
  x.filename = "/usr/bin/" + comm;
  x.exe = x.filename;
  x.args = {comm};
  ev.data = std::move(x);
  return ev;
}

// Hands over its events in order, `budget` at a time; its clock is the time
// of the last event handed over. Done when empty (unless `forever`).
class ScriptedSource final : public source::EventSource {
 public:
  ScriptedSource(std::string name, std::vector<event::Event> evs) : name_(std::move(name)) {
    for (auto& e : evs) evs_.push_back(std::move(e));
  }
  std::string_view name() const override { return name_; }
  Result<std::size_t> poll(std::size_t budget, const Emit& emit) override {
    ++polls;
    if (fail_at_poll && polls == fail_at_poll) {
      health_ = Health::kFailed;
      return fail_error;
    }
    std::size_t n = 0;
    while (n < budget && !evs_.empty()) {
      clock_ = evs_.front().hdr.ts_ns;
      emit(std::move(evs_.front()));
      evs_.pop_front();
      ++n;
    }
    if (evs_.empty() && !forever) health_ = Health::kDone;
    return n;
  }
  std::uint64_t now_ns() const override { return clock_; }
  Health health() const override { return health_; }
  std::string failure() const override { return "scripted failure"; }
  source::Drops drops() const override { return drops_; }

  source::Drops drops_;
  bool forever = false;
  int polls = 0;
  int fail_at_poll = 0;
  Error fail_error = Error::runtime("boom");

 private:
  std::string name_;
  std::deque<event::Event> evs_;
  std::uint64_t clock_ = 0;
  Health health_ = Health::kRunning;
};

// Records the pid of every event the pipeline saw, in order.
struct PidTap final : pipeline::EventTap {
  std::vector<std::uint32_t> pids;
  void on_event(const event::Event& ev, const state::EvalContext&) override { pids.push_back(ev.hdr.pid); }
};

std::vector<event::Event> events(std::uint32_t first_pid, int n, std::uint64_t t0 = 1000, std::uint64_t step = 1000) {
  std::vector<event::Event> out;
  for (int i = 0; i < n; ++i) out.push_back(exec_event(t0 + step * i, first_pid + i, "true"));
  return out;
}

std::shared_ptr<const rules::Ruleset> compile(const std::string& yaml) {
  rules::LoadResult r = rules::load_rules_text({{"runner_test.yaml", yaml}}, rules::LoadOptions{});
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.to_string();
  return r.ruleset;
}

std::string exec_rule(const std::string& name, const std::string& comm) {
  return "- rule: " + name + "\n  desc: d\n  condition: evt.type = execve and proc.name = " + comm + "\n  output: \"" +
         name + " %proc.pid\"\n  priority: WARNING\n";
}

class RunnerTest : public ::testing::Test {
 protected:
  RunnerTest() : st_(state::Config{.live = false}) {}
  std::unique_ptr<Runner> make(RunnerOptions o = {}) {
    o.signals = false;
    auto r = Runner::create(std::move(o));
    EXPECT_TRUE(r) << r.error().message;
    return std::move(*r);
  }
  pipeline::Pipeline pipeline(std::shared_ptr<const rules::Ruleset> rules = nullptr) {
    return pipeline::Pipeline({st_, [this](std::shared_ptr<const event::Alert> a) { alerts_.push_back(a->rule); }, "n"},
                              std::move(rules));
  }
  state::State st_;
  std::vector<std::string> alerts_;
};

TEST_F(RunnerTest, SourcesTakeTurnsAndKeepTheirOwnOrder) {
  auto r = make({.budget = 2});
  r->add_source(std::make_unique<ScriptedSource>("a", events(100, 5)));
  r->add_source(std::make_unique<ScriptedSource>("b", events(200, 3)));
  auto pipe = pipeline();
  PidTap tap;
  pipe.add_tap(&tap);
  RunReport rep = r->run(pipe);
  EXPECT_EQ(rep.exit_code, 0);
  EXPECT_EQ(rep.reason, "done");
  EXPECT_EQ(rep.events, 8u);
  EXPECT_EQ(tap.pids, (std::vector<std::uint32_t>{100, 101, 200, 201, 102, 103, 202, 104}));
  EXPECT_EQ(pipe.stats().events, 8u);
}

TEST_F(RunnerTest, AFailedSourceStopsTheRunWithItsReason) {
  auto r = make({.budget = 1});
  auto a = std::make_unique<ScriptedSource>("a", events(100, 10));
  a->fail_at_poll = 3;
  r->add_source(std::move(a));
  auto pipe = pipeline();
  RunReport rep = r->run(pipe);
  EXPECT_EQ(rep.exit_code, 1);
  ASSERT_TRUE(rep.error);
  EXPECT_EQ(rep.error->message, "a: boom");
  EXPECT_EQ(rep.reason, "a: boom");
  EXPECT_EQ(rep.events, 2u);

  // Bad input (a corrupt capture) exits 2.
  auto r2 = make();
  auto b = std::make_unique<ScriptedSource>("capture", events(100, 1));
  b->fail_at_poll = 1;
  b->fail_error = Error::bad_input("run.vcap: checksum mismatch at byte offset 12");
  r2->add_source(std::move(b));
  EXPECT_EQ(r2->run(pipe).exit_code, 2);
}

TEST_F(RunnerTest, WhenASourceThatIsNotEssentialFailsTheOthersGoOn) {
  auto r = make({.budget = 1});
  auto a = std::make_unique<ScriptedSource>("plugin:x", events(100, 10));
  a->fail_at_poll = 2;
  r->add_source(std::move(a), /*essential=*/false);
  r->add_source(std::make_unique<ScriptedSource>("b", events(200, 4)));
  auto pipe = pipeline();
  RunReport rep = r->run(pipe);
  EXPECT_EQ(rep.exit_code, 0);
  EXPECT_EQ(rep.reason, "done");
  EXPECT_EQ(rep.events, 5u);  // a's first event, then all of b's
}

TEST_F(RunnerTest, DropsAreCountedPerSourceAndReason) {
  auto r = make();
  auto a = std::make_unique<ScriptedSource>("bpf", events(100, 2));
  a->drops_.add("ringbuf_full", 3);
  a->drops_.add("map_full", 0);
  auto b = std::make_unique<ScriptedSource>("plugin:nvml", events(200, 2));
  b->drops_.add("queue_full", 2);
  r->add_source(std::move(a));
  r->add_source(std::move(b));
  r->add_source(std::make_unique<ScriptedSource>("kmsg", events(300, 1)));
  auto pipe = pipeline();
  RunReport rep = r->run(pipe);
  EXPECT_EQ(rep.drops_total(), 5u);
  EXPECT_EQ(rep.describe_drops(), "bpf/ringbuf_full=3 plugin:nvml/queue_full=2");
  ASSERT_EQ(rep.drops.size(), 3u);
  EXPECT_EQ(rep.drops[2].source, "kmsg");
  EXPECT_EQ(RunReport{}.describe_drops(), "none");
}

TEST_F(RunnerTest, TicksAndDurationFollowTheSourcesClock) {
  // One event per turn, one second of source time apart.
  RunnerOptions o;
  o.budget = 1;
  o.duration_ns = 10'000'000'000ull;
  auto r = make(std::move(o));
  auto a = std::make_unique<ScriptedSource>("capture", events(100, 100, 1'000'000'000ull, 1'000'000'000ull));
  r->add_source(std::move(a));
  std::vector<std::uint64_t> every_3s;
  int every_turn = 0;
  r->add_tick("3s", 3s, [&](std::uint64_t now) { every_3s.push_back(now); });
  r->add_tick("turn", 0ns, [&](std::uint64_t) { ++every_turn; });
  auto pipe = pipeline();
  RunReport rep = r->run(pipe);
  EXPECT_EQ(rep.reason, "duration");
  EXPECT_EQ(rep.exit_code, 0);
  EXPECT_EQ(rep.events, 11u);  // the clock starts at the first event: 10 s later is the 11th
  EXPECT_EQ(every_3s, (std::vector<std::uint64_t>{3'000'000'000ull, 6'000'000'000ull, 9'000'000'000ull}));
  EXPECT_EQ(every_turn, 11);
}

TEST_F(RunnerTest, AClockSetBackDoesNotStallTheTicks) {
  constexpr std::uint64_t kT = 1'700'000'000'000'000'000ull;
  std::vector<event::Event> evs = events(100, 2, kT, 1'000'000'000ull);
  // The wall clock jumps back an hour, then goes on.
  for (auto& e : events(102, 4, kT - 3'600'000'000'000ull, 1'000'000'000ull)) evs.push_back(std::move(e));
  auto r = make({.budget = 1});
  r->add_source(std::make_unique<ScriptedSource>("bpf", std::move(evs)));
  int ticks = 0;
  r->add_tick("1s", 1s, [&](std::uint64_t) { ++ticks; });
  auto pipe = pipeline();
  r->run(pipe);
  EXPECT_EQ(ticks, 4);  // 1 s, then 3 more seconds after the jump
}

TEST_F(RunnerTest, StopWhenAndStopEndTheRun) {
  int seen = 0;
  RunnerOptions o;
  o.budget = 1;
  o.stop_when = [&] { return seen >= 3; };
  auto r = make(std::move(o));
  auto a = std::make_unique<ScriptedSource>("a", events(100, 10));
  r->add_source(std::move(a));
  r->add_tick("count", 0ns, [&](std::uint64_t) { ++seen; });
  auto pipe = pipeline();
  RunReport rep = r->run(pipe);
  EXPECT_EQ(rep.reason, "stop_when");
  EXPECT_EQ(rep.events, 3u);

  auto r2 = make({.budget = 1});
  auto forever = std::make_unique<ScriptedSource>("a", events(100, 2));
  forever->forever = true;
  r2->add_source(std::move(forever));
  Runner* raw = r2.get();
  int turns = 0;
  r2->add_tick("stop", 0ns, [&](std::uint64_t) {
    if (++turns == 5) raw->stop(1, "capture write failed");
  });
  rep = r2->run(pipe);
  EXPECT_EQ(rep.exit_code, 1);
  EXPECT_EQ(rep.reason, "capture write failed");
  EXPECT_EQ(rep.events, 2u);
}

TEST_F(RunnerTest, SighupReloadsAndAFailedReloadKeepsTheOldRules) {
  auto old_rules = compile(exec_rule("Old", "bash"));
  auto new_rules = compile(exec_rule("New", "bash"));
  int reloads = 0;
  RunnerOptions o;
  o.budget = 1;
  o.reload = [&](const std::atomic<bool>&) -> Result<Reloaded> {
    if (++reloads == 1) return Error::bad_input("rules.yaml:3:5: bad condition");
    return Reloaded{new_rules};
  };
  auto r = make(std::move(o));
  std::vector<event::Event> evs;
  for (std::uint32_t i = 0; i < 3; ++i) evs.push_back(exec_event(1000 + i, 100 + i, "bash"));
  r->add_source(std::make_unique<ScriptedSource>("a", std::move(evs)));
  auto pipe = pipeline(old_rules);
  Runner* raw = r.get();
  int turn = 0;
  std::vector<const rules::Ruleset*> in_force;
  r->add_tick("hup", 0ns, [&](std::uint64_t) {
    ++turn;
    if (turn <= 2) {
      raw->on_signal(SIGHUP);  // after event 1: fails; after event 2: works
      raw->wait_reload_ForTest();
    }
    in_force.push_back(pipe.ruleset().get());
  });
  r->run(pipe);
  EXPECT_EQ(reloads, 2);
  // A compile's result is swapped in at the start of the next turn.
  EXPECT_EQ(alerts_, (std::vector<std::string>{"Old", "Old", "New"}));
  ASSERT_EQ(in_force.size(), 3u);
  EXPECT_EQ(in_force[0], old_rules.get());
  EXPECT_EQ(in_force[1], old_rules.get());
  EXPECT_EQ(in_force[2], new_rules.get());
  // The metrics endpoint's view of the two reloads.
  ReloadStats st = r->reload_stats();
  EXPECT_EQ(st.succeeded, 1u);
  EXPECT_EQ(st.failed, 1u);
  EXPECT_TRUE(st.last_ok);
  EXPECT_EQ(st.last_error, "");
  EXPECT_GT(st.last_unix_s, 0);
}

// Issue 16: a reload compiled on the loop thread stopped detection for the
// whole compile. The compile now runs beside the loop: events go on through
// the old rules until the new ones are ready, and SIGHUPs during a compile
// are coalesced into one more reload.
TEST_F(RunnerTest, EventsFlowThroughTheOldRulesWhileAReloadCompiles) {
  auto old_rules = compile(exec_rule("Old", "bash"));
  auto new_rules = compile(exec_rule("New", "bash"));
  auto newer_rules = compile(exec_rule("Newer", "bash"));
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> reloads{0};
  RunnerOptions o;
  o.budget = 1;
  o.reload = [&](const std::atomic<bool>&) -> Result<Reloaded> {
    if (++reloads == 1) {
      gate.wait();  // a compile that lasts until the test lets it end
      return Reloaded{new_rules};
    }
    return Reloaded{newer_rules};
  };
  auto r = make(std::move(o));
  std::vector<event::Event> evs;
  for (std::uint32_t i = 0; i < 400; ++i) evs.push_back(exec_event(1000 + i, 100 + i, "bash"));
  r->add_source(std::make_unique<ScriptedSource>("a", std::move(evs)));
  auto pipe = pipeline(old_rules);
  Runner* raw = r.get();
  int turn = 0;
  bool reloading_meanwhile = true;
  r->add_tick("hup", 0ns, [&](std::uint64_t) {
    ++turn;
    if (turn == 1) raw->on_signal(SIGHUP);
    if (turn > 1 && turn < 200) reloading_meanwhile = reloading_meanwhile && raw->reloading();
    if (turn == 100) {
      for (int i = 0; i < 3; ++i) raw->on_signal(SIGHUP);  // coalesced: one more reload
    }
    if (turn == 200) {
      release.set_value();
      raw->wait_reload_ForTest();
    }
    if (turn == 300) raw->wait_reload_ForTest();  // the coalesced one
  });
  RunReport rep = r->run(pipe);
  EXPECT_EQ(rep.events, 400u);
  EXPECT_TRUE(reloading_meanwhile);
  EXPECT_EQ(reloads.load(), 2);
  ASSERT_EQ(alerts_.size(), 400u);
  // Events 1-200 came while the first compile ran: all alerted, by the old rules.
  EXPECT_EQ(std::count(alerts_.begin(), alerts_.begin() + 200, "Old"), 200);
  // The swap happened after it, between two events; then the coalesced reload's rules.
  EXPECT_EQ(alerts_[200], "New");
  EXPECT_EQ(alerts_.back(), "Newer");
  auto first_newer = std::find(alerts_.begin(), alerts_.end(), "Newer");
  EXPECT_LE(first_newer - alerts_.begin(), 301);
  EXPECT_EQ(std::count(alerts_.begin() + 200, first_newer, "New"), first_newer - alerts_.begin() - 200);
  EXPECT_EQ(std::count(first_newer, alerts_.end(), "Newer"), alerts_.end() - first_newer);
  EXPECT_EQ(pipe.ruleset().get(), newer_rules.get());
}

// Hands over `budget` bash execs per poll, without end.
class ExecStormSource final : public source::EventSource {
 public:
  std::string_view name() const override { return "storm"; }
  Result<std::size_t> poll(std::size_t budget, const Emit& emit) override {
    for (std::size_t i = 0; i < budget; ++i) {
      ++n_;
      emit(exec_event(1000 + n_, static_cast<std::uint32_t>(100 + n_ % 30000), "bash"));
    }
    return budget;
  }
  std::uint64_t now_ns() const override { return 1000 + n_; }
  Health health() const override { return Health::kRunning; }
  std::string failure() const override { return ""; }
  source::Drops drops() const override { return {}; }

 private:
  std::uint64_t n_ = 0;
};

// The same with a real compile of a huge rule file (a 60,000-term condition,
// hundreds of milliseconds): alerts from the old rules keep coming while it
// compiles, and the new rules are in force after it.
TEST_F(RunnerTest, AHugeRuleFileCompilesWhileTheOldRulesAlert) {
  auto old_rules = compile(exec_rule("Old", "bash"));
  std::string cond = "evt.type = execve and proc.name = bash";
  for (int i = 0; i < 60000; ++i) cond += " and proc.pid != " + std::to_string(1000000 + i);
  const std::string huge = "- rule: Huge\n  desc: d\n  priority: WARNING\n  condition: " + cond + "\n  output: o\n";
  std::shared_ptr<const rules::Ruleset> compiled;
  RunnerOptions o;
  o.budget = 1;
  o.reload = [&](const std::atomic<bool>& cancel) -> Result<Reloaded> {
    rules::LoadOptions lo;
    lo.max_condition_nodes = 0;
    lo.cancel = &cancel;
    auto lr = rules::load_rules_text({{"huge.yaml", huge}}, lo);
    if (!lr.ruleset) return Error::bad_input("huge.yaml did not compile");
    compiled = lr.ruleset;
    return Reloaded{lr.ruleset};
  };
  auto r = make(std::move(o));
  r->add_source(std::make_unique<ExecStormSource>());
  auto pipe = pipeline(old_rules);
  Runner* raw = r.get();
  int turn = 0;
  std::size_t during = 0;  // alerts raised while the compile ran
  std::size_t before = 0;
  r->add_tick("hup", 0ns, [&](std::uint64_t) {
    ++turn;
    if (turn == 1) {
      raw->on_signal(SIGHUP);
      before = alerts_.size();
    } else if (raw->reloading()) {
      during = alerts_.size() - before;
    } else if (compiled && pipe.ruleset() == compiled && !alerts_.empty() && alerts_.back() == "Huge") {
      raw->stop(0, "swapped");
    }
  });
  RunReport rep = r->run(pipe);
  EXPECT_EQ(rep.reason, "swapped");
  EXPECT_GT(during, 0u) << "no alert while the rules compiled";
  EXPECT_EQ(std::count(alerts_.begin(), alerts_.begin() + static_cast<std::ptrdiff_t>(before + during), "Old"),
            static_cast<std::ptrdiff_t>(before + during));
  EXPECT_EQ(alerts_.back(), "Huge");
}

// A run that ends during a compile cancels it and waits for it.
TEST_F(RunnerTest, StoppingDuringAReloadCancelsTheCompile) {
  auto old_rules = compile(exec_rule("Old", "bash"));
  std::atomic<bool> saw_cancel{false};
  RunnerOptions o;
  o.budget = 1;
  o.reload = [&](const std::atomic<bool>& cancel) -> Result<Reloaded> {
    while (!cancel.load()) std::this_thread::sleep_for(1ms);
    saw_cancel = true;
    return Error::runtime("cancelled");
  };
  auto r = make(std::move(o));
  r->add_source(std::make_unique<ExecStormSource>());
  auto pipe = pipeline(old_rules);
  Runner* raw = r.get();
  int turn = 0;
  r->add_tick("hup", 0ns, [&](std::uint64_t) {
    ++turn;
    if (turn == 1) raw->on_signal(SIGHUP);
    if (turn == 50) raw->stop(0, "test");
  });
  RunReport rep = r->run(pipe);
  EXPECT_EQ(rep.reason, "test");
  EXPECT_TRUE(saw_cancel.load());
  EXPECT_FALSE(raw->reloading());
  EXPECT_EQ(pipe.ruleset().get(), old_rules.get());
  EXPECT_EQ(alerts_.size(), 50u);
}

// Issue 14: a reload's commit (the outputs of vigil run) runs on the loop
// thread right after the rules are swapped in, before the next event; a
// failed reload runs nothing and is counted once.
TEST_F(RunnerTest, AReloadsCommitRunsWithTheRulesBetweenTwoEvents) {
  auto old_rules = compile(exec_rule("Old", "bash"));
  auto new_rules = compile(exec_rule("New", "bash"));
  int reloads = 0, commits = 0;
  std::size_t alerts_at_commit = 0;
  const rules::Ruleset* rules_at_commit = nullptr;
  pipeline::Pipeline* pipe_ptr = nullptr;
  RunnerOptions o;
  o.budget = 1;
  o.reload = [&](const std::atomic<bool>&) -> Result<Reloaded> {
    ++reloads;
    if (reloads == 1) return Error::bad_input("vigil.yaml:7:3: outputs[0].type: unknown output type 'x'");
    if (reloads == 2) return Reloaded{nullptr, [&] { ++commits; }, ""};
    return Reloaded{new_rules,
                    [&] {
                      ++commits;
                      alerts_at_commit = alerts_.size();
                      rules_at_commit = pipe_ptr->ruleset().get();
                    },
                    "outputs: kept stdout-0"};
  };
  auto r = make(std::move(o));
  std::vector<event::Event> evs;
  for (std::uint32_t i = 0; i < 5; ++i) evs.push_back(exec_event(1000 + i, 100 + i, "bash"));
  r->add_source(std::make_unique<ScriptedSource>("a", std::move(evs)));
  auto pipe = pipeline(old_rules);
  pipe_ptr = &pipe;
  Runner* raw = r.get();
  int turn = 0;
  r->add_tick("reload", 0ns, [&](std::uint64_t) {
    if (++turn <= 3) {
      raw->request_reload("test");
      raw->wait_reload_ForTest();
    }
  });
  r->run(pipe);
  EXPECT_EQ(reloads, 3);
  EXPECT_EQ(commits, 1);
  EXPECT_EQ(rules_at_commit, new_rules.get());
  EXPECT_EQ(alerts_at_commit, 3u);  // events 1-3 before the swap (one per turn), none in between
  EXPECT_EQ(alerts_, (std::vector<std::string>{"Old", "Old", "Old", "New", "New"}));
  ReloadStats st = r->reload_stats();
  EXPECT_EQ(st.succeeded, 1u);
  EXPECT_EQ(st.failed, 2u);
  EXPECT_TRUE(st.last_ok);
}

TEST_F(RunnerTest, AFailedReloadKeepsItsErrorInTheStats) {
  RunnerOptions o;
  o.budget = 1;
  o.reload = [&](const std::atomic<bool>&) -> Result<Reloaded> {
    return Error::bad_input("vigil.yaml:7:3: outputs[0].type: unknown output type 'x'");
  };
  auto r = make(std::move(o));
  r->add_source(std::make_unique<ScriptedSource>("a", events(100, 2)));
  auto pipe = pipeline(compile(exec_rule("Old", "bash")));
  Runner* raw = r.get();
  int turn = 0;
  r->add_tick("reload", 0ns, [&](std::uint64_t) {
    if (++turn == 1) {
      raw->request_reload("vigil.yaml changed");
      raw->wait_reload_ForTest();
    }
  });
  r->run(pipe);
  ReloadStats st = r->reload_stats();
  EXPECT_EQ(st.failed, 1u);
  EXPECT_FALSE(st.last_ok);
  EXPECT_EQ(st.last_error, "vigil.yaml:7:3: outputs[0].type: unknown output type 'x'");
}

// add_fd: the loop calls back when the fd is readable (a file watch), and
// the callback may ask for a reload.
TEST_F(RunnerTest, AReadableFdCallsBackOnTheLoop) {
  auto rules = compile(exec_rule("Old", "bash"));
  std::atomic<int> reloads{0};
  RunnerOptions o;
  o.reload = [&](const std::atomic<bool>&) -> Result<Reloaded> {
    ++reloads;
    return Reloaded{rules};
  };
  auto r = make(std::move(o));
  auto a = std::make_unique<ScriptedSource>("a", events(100, 1));
  a->forever = true;
  r->add_source(std::move(a));
  const int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  int calls = 0;
  Runner* raw = r.get();
  ASSERT_TRUE(r->add_fd("test fd", efd, [&] {
    std::uint64_t n = 0;
    (void)!read(efd, &n, sizeof(n));
    ++calls;
    raw->request_reload("test fd");
  }));
  int turn = 0;
  r->add_tick("poke", 0ns, [&](std::uint64_t) {
    ++turn;
    if (turn == 2) {
      std::uint64_t one = 1;
      (void)!write(efd, &one, sizeof(one));
    }
    if (raw->reloading()) raw->wait_reload_ForTest();
    if (turn == 20) raw->stop(0, "test");
  });
  auto pipe = pipeline(rules);
  r->run(pipe);
  close(efd);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(reloads.load(), 1);
  EXPECT_EQ(r->reload_stats().succeeded, 1u);
}

TEST_F(RunnerTest, SigtermFromTheSignalfdStopsCleanly) {
  auto created = Runner::create(RunnerOptions{.budget = 1});  // signals on: blocked in this thread
  ASSERT_TRUE(created);
  auto& r = **created;
  auto a = std::make_unique<ScriptedSource>("a", events(100, 2));
  a->forever = true;
  r.add_source(std::move(a));
  int turns = 0;
  r.add_tick("kill", 0ns, [&](std::uint64_t) {
    if (++turns == 3) pthread_kill(pthread_self(), SIGTERM);
  });
  auto pipe = pipeline();
  RunReport rep = r.run(pipe);
  EXPECT_EQ(rep.reason, "SIGTERM");
  EXPECT_EQ(rep.exit_code, 0);
  EXPECT_GE(turns, 3);
}

// A source with an fd (as a plugin's eventfd): the runner sleeps until it is
// readable, and wakes for it.
using EventFdSource = support::HandedSource;

TEST_F(RunnerTest, ASourceWithAnFdWakesTheLoop) {
  std::atomic<int> seen{0};
  RunnerOptions o;
  o.max_wait = 10s;  // only the fd can wake it in time
  o.stop_when = [&] { return seen.load() >= 3; };
  auto r = make(std::move(o));
  auto src = std::make_unique<EventFdSource>();
  EventFdSource* s = src.get();
  r->add_source(std::move(src));
  auto pipe = pipeline();
  struct Count final : pipeline::EventTap {
    std::atomic<int>* n;
    void on_event(const event::Event&, const state::EvalContext&) override { ++*n; }
  } count;
  count.n = &seen;
  pipe.add_tap(&count);
  std::thread producer([s] {
    for (std::uint32_t i = 0; i < 3; ++i) {
      std::this_thread::sleep_for(20ms);
      s->push(exec_event(1000 + i, 100 + i, "true"));
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  RunReport rep = r->run(pipe);
  producer.join();
  EXPECT_EQ(rep.reason, "stop_when");
  EXPECT_EQ(rep.events, 3u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_LE(s->polls.load(), 10);  // woken by the fd, not spinning
}

// --- feeds: state another thread hands over (the pod watcher's pods) ---------

// A pod watcher's hand-over as the runner sees it: pods queued by another
// thread, an eventfd written for each, applied to the state on the loop.
class PodFeed {
 public:
  PodFeed() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~PodFeed() { close(fd_); }
  int fd() const { return fd_; }
  void queue(state::Pod p) {
    {
      std::lock_guard<std::mutex> l(mu_);
      q_.push_back(std::move(p));
    }
    std::uint64_t one = 1;
    (void)!write(fd_, &one, sizeof(one));
  }
  // Loop thread: true when a pod was applied.
  bool apply(state::State& st) {
    std::deque<state::Pod> got;
    {
      std::lock_guard<std::mutex> l(mu_);
      got.swap(q_);
    }
    for (auto& p : got) st.upsert_pod(std::move(p));
    return !got.empty();
  }

 private:
  int fd_;
  std::mutex mu_;
  std::deque<state::Pod> q_;
};

constexpr std::uint64_t kPodCgroup = 77;

state::Pod infer_pod() {
  state::Pod p;
  p.uid = "u-infer-0";
  p.name = "infer-0";
  p.ns = "ml";
  return p;
}

// An exec in the container of infer_pod() (its cgroup).
event::Event exec_in_pod(std::uint32_t pid) {
  event::Event ev = exec_event(1000 + pid, pid, "bash");
  ev.hdr.cgroup_id = kPodCgroup;
  return ev;
}

// Records, per event, the pod its evaluation saw ("" when none).
struct PodNameTap final : pipeline::EventTap {
  std::vector<std::string> names;
  void on_event(const event::Event&, const state::EvalContext& ctx) override {
    names.push_back(ctx.pod ? ctx.pod->name : "");
  }
};

// Runs `fn` each time it is polled and hands over nothing (a source whose
// poll takes long enough for another thread to queue something meanwhile).
class CallbackSource final : public source::EventSource {
 public:
  explicit CallbackSource(std::function<void()> fn) : fn_(std::move(fn)) {}
  std::string_view name() const override { return "callback"; }
  Result<std::size_t> poll(std::size_t, const Emit&) override {
    fn_();
    return std::size_t{0};
  }

 private:
  std::function<void()> fn_;
};

class RunnerFeedTest : public RunnerTest {
 protected:
  void SetUp() override {
    state::Container c;
    c.id = std::string(64, 'c');
    c.pod_uid = infer_pod().uid;
    c.cgroup_id = kPodCgroup;
    st_.upsert_container(std::move(c));
  }
};

// Issue: an alert for a container whose pod was announced tens of ms before
// the action went out with a null k8s.pod.name, because the pods were
// drained by a tick after the turn's events.
TEST_F(RunnerFeedTest, APodQueuedBeforeAnEventIsInForceWhenTheEventIsEvaluated) {
  RunnerOptions o;
  o.max_wait = 10s;
  PodNameTap tap;
  o.stop_when = [&] { return !tap.names.empty(); };
  auto r = make(std::move(o));
  auto src = std::make_unique<EventFdSource>();
  EventFdSource* s = src.get();
  r->add_source(std::move(src));
  PodFeed feed;
  ASSERT_TRUE(r->add_feed("pods", feed.fd(), [&] { feed.apply(st_); }));
  auto pipe = pipeline();
  pipe.add_tap(&tap);
  feed.queue(infer_pod());     // the watcher heard of the pod ...
  s->push(exec_in_pod(4242));  // ... then the kernel saw its first exec
  RunReport rep = r->run(pipe);
  EXPECT_EQ(rep.reason, "stop_when");
  EXPECT_EQ(tap.names, (std::vector<std::string>{"infer-0"}));
}

// The pod is queued while an earlier source is being polled (and the exec
// reaches a later source, ready in the same turn): it is applied before the
// later source hands over its events.
TEST_F(RunnerFeedTest, APodQueuedDuringOneSourcesPollIsInForceForTheNextSource) {
  PodNameTap tap;
  RunnerOptions o;
  o.max_wait = 10s;
  o.stop_when = [&] { return tap.names.size() >= 2; };
  auto r = make(std::move(o));
  PodFeed feed;
  auto later = std::make_unique<EventFdSource>();
  EventFdSource* b = later.get();
  b->push(exec_event(1000, 1, "init"));  // so that b is ready in the first turn
  bool queued = false;
  r->add_source(std::make_unique<CallbackSource>([&] {
    if (queued) return;
    queued = true;
    feed.queue(infer_pod());
    b->push(exec_in_pod(4243));
  }));
  r->add_source(std::move(later));
  ASSERT_TRUE(r->add_feed("pods", feed.fd(), [&] { feed.apply(st_); }));
  auto pipe = pipeline();
  pipe.add_tap(&tap);
  RunReport rep = r->run(pipe);
  EXPECT_EQ(rep.reason, "stop_when");
  EXPECT_EQ(tap.names, (std::vector<std::string>{"", "infer-0"}));
}

TEST_F(RunnerFeedTest, AQueuedPodWakesAnIdleLoop) {
  RunnerOptions o;
  o.max_wait = 30s;  // only the feed's fd can wake it in time
  auto r = make(std::move(o));
  r->add_source(std::make_unique<EventFdSource>());  // never has anything
  PodFeed feed;
  std::atomic<std::int64_t> queued_at{0};
  std::chrono::steady_clock::duration took{};
  int applies = 0;
  ASSERT_TRUE(r->add_feed("pods", feed.fd(), [&] {
    ++applies;
    if (!feed.apply(st_)) return;
    took = std::chrono::steady_clock::now().time_since_epoch() - std::chrono::nanoseconds(queued_at.load());
    r->stop(0, "applied");
  }));
  auto pipe = pipeline();
  std::thread watcher([&] {
    std::this_thread::sleep_for(50ms);
    queued_at =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    feed.queue(infer_pod());
  });
  RunReport rep = r->run(pipe);
  watcher.join();
  EXPECT_EQ(rep.reason, "applied");
  ASSERT_NE(st_.pod(infer_pod().uid), nullptr);
  EXPECT_LT(took, 2s) << "applied after " << std::chrono::duration<double>(took).count() << " s";
  EXPECT_LE(applies, 4);  // woken once, not spinning
}

}  // namespace
}  // namespace vigil::runtime
