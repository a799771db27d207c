// End-to-end tests of reload (issue 14, "Reload and configuration"): SIGHUP
// and a changed watched file reload the rules and the outputs together; a
// broken configuration keeps both and names the file, line and column; a
// Kubernetes ConfigMap update (a `..data` symlink swap) reloads without a
// signal; alerts raised across a reload are delivered exactly once.
//
// Needs root and a kernel with BTF (label integration); skipped with a message otherwise.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace vigil::e2e {
namespace {

std::string exec_rule(const std::string& rule, const std::string& prog_name) {
  return "- rule: " + rule + "\n  desc: the test program ran\n  condition: evt.type = execve and proc.name = \"" +
         prog_name + "\"\n  output: ran (proc.pid=%proc.pid)\n  priority: WARNING\n";
}

pid_t run_once_args(const std::vector<std::string>& argv) {
  Child c = Child::spawn(argv);
  c.wait();
  return c.pid();
}

pid_t run_once(const std::string& prog) { return run_once_args({prog}); }

// The pids of the JSON alerts of `rule` in a file output, each with its count.
std::map<long, int> pids_in_file(const std::string& path, const std::string& rule) {
  std::map<long, int> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const json a = json::parse(line, nullptr, false);
    if (a.is_discarded() || a.value("rule", "") != rule) continue;
    ++out[a["output_fields"].value("proc.pid", 0L)];
  }
  return out;
}

// Waits until the file output at `path` has an alert of `rule` for `pid`.
bool file_has(const std::string& path, const std::string& rule, long pid,
              std::chrono::milliseconds wait = std::chrono::seconds(20)) {
  const auto end = std::chrono::steady_clock::now() + wait;
  do {
    if (pids_in_file(path, rule).count(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < end);
  return false;
}

class e2eReload : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    name_ = unique_name("rld");
    prog_ = dir_.install(VIGIL_E2E_ACTOR, name_);
  }
  // A configuration: the test's rules, state under the test's directory, no
  // flight recorder, and `outputs` (YAML list items, one per line).
  std::string config(const std::string& rules, const std::string& outputs) const {
    return "rules: [" + rules + "]\nstate_dir: " + dir_.path() +
           "/state\nflight_recorder:\n  enabled: false\n"
           "outputs:\n" +
           outputs;
  }
  // A Kubernetes-style ConfigMap volume under cm/: version `version`'s
  // rules.yaml and vigil.yaml (with `outputs`), `..data` linking to it and
  // the files linking through `..data`, as the kubelet lays them out.
  // Returns the configuration's path.
  std::string configmap(const std::string& version, const std::string& rules_text, const std::string& outputs) {
    const std::string cm = dir_.mkdirs("cm");
    dir_.write("cm/" + version + "/rules.yaml", rules_text);
    dir_.write("cm/" + version + "/vigil.yaml", config(cm + "/rules.yaml", outputs));
    dir_.symlink("cm/..data", version);
    dir_.symlink("cm/rules.yaml", "..data/rules.yaml");
    return dir_.symlink("cm/vigil.yaml", "..data/vigil.yaml");
  }
  // The kubelet's update: version `next` written, `..data` swapped to it, the
  // old version removed.
  void swap_configmap(const std::string& old, const std::string& next, const std::string& rules_text,
                      const std::string& outputs) {
    const std::string cm = dir_.path() + "/cm";
    dir_.write("cm/" + next + "/rules.yaml", rules_text);
    dir_.write("cm/" + next + "/vigil.yaml", config(cm + "/rules.yaml", outputs));
    dir_.symlink("cm/..data", next);
    std::filesystem::remove_all(cm + "/" + old);
  }
  TempDir dir_;
  std::string name_, prog_;
};

// (a) SIGHUP with a file output added: the stdout output is kept, the next
// alerts land in the file too.
TEST_F(e2eReload, SighupAddsAFileOutputAndTheNextAlertsLandThere) {
  VIGIL_E2E_REQUIRE_ROOT();
  const std::string rules = dir_.write("rules.yaml", exec_rule("e2e reload", name_));
  const std::string cfg = dir_.write("vigil.yaml", config(rules, "  - type: stdout\n"));
  const std::string alerts = dir_.path() + "/alerts.json";
  Vigil v;
  ASSERT_TRUE(v.start({"-c", cfg}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  pid_t p1 = run_once(prog_);
  ASSERT_FALSE(v.alerts_where("e2e reload", "proc.pid", p1, 20s).empty()) << v.diag();

  dir_.write("vigil.yaml", config(rules, "  - type: stdout\n  - type: file\n    path: " + alerts + "\n"));
  v.signal(SIGHUP);
  ASSERT_TRUE(v.wait_stderr("outputs: kept stdout-0; added file-1")) << v.diag();
  pid_t p2 = run_once(prog_);
  EXPECT_FALSE(v.alerts_where("e2e reload", "proc.pid", p2, 20s).empty()) << v.diag();
  EXPECT_TRUE(file_has(alerts, "e2e reload", p2)) << v.diag();
  EXPECT_FALSE(pids_in_file(alerts, "e2e reload").count(p1)) << "an alert before the reload in the new output";
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

std::string open_rule(const std::string& rule, const std::string& prefix, const std::string& prog_name) {
  return "- rule: " + rule + "\n  desc: the test program opened a file\n  condition: evt.type = openat and fd.name " +
         "startswith " + prefix + " and proc.name = \"" + prog_name +
         "\"\n  output: opened %fd.name (proc.pid=%proc.pid)\n  priority: WARNING\n";
}

std::string ptrace_rule(const std::string& rule, const std::string& prog_name) {
  return "- rule: " + rule +
         "\n  desc: the test program traced one\n  condition: evt.type = ptrace and proc.name = \"" + prog_name +
         "\"\n  output: traced (proc.pid=%proc.pid)\n  priority: WARNING\n";
}

// The actor seizes a sleeping process with ptrace; returns the actor's pid.
pid_t seize_one(const std::string& prog) {
  Child target = Child::spawn({"/bin/sleep", "30"});
  const pid_t p = run_once_args({prog, "ptseize", std::to_string(target.pid())});
  ::kill(target.pid(), SIGKILL);
  target.wait();
  return p;
}

// (f) A SIGHUP that adds a rule on a syscall no rule hooked at start: the
// sensor attaches its hook in the reload (every program it can run was
// loaded at start), and the rule fires on the next action, no restart.
TEST_F(e2eReload, SighupAddsAPtraceRuleThatFiresOnTheNextAction) {
  VIGIL_E2E_REQUIRE_ROOT();
  const std::string rules = dir_.write("rules.yaml", exec_rule("e2e reload", name_));
  const std::string cfg = dir_.write("vigil.yaml", config(rules, "  - type: stdout\n"));
  Vigil v;
  ASSERT_TRUE(v.start({"-c", cfg}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  EXPECT_EQ(v.stderr_text().find("syscalls:sys_exit_ptrace"), std::string::npos) << "hooked before any rule asked";
  const pid_t before = seize_one(prog_);
  dir_.write("rules.yaml", exec_rule("e2e reload", name_) + ptrace_rule("e2e reload ptrace", name_));
  v.signal(SIGHUP);
  ASSERT_TRUE(v.wait_stderr("rules reloaded")) << v.diag();
  EXPECT_EQ(v.stderr_text().find("restart vigil"), std::string::npos) << v.diag();
  const pid_t after = seize_one(prog_);
  EXPECT_FALSE(v.alerts_where("e2e reload ptrace", "proc.pid", after, 20s).empty()) << v.diag();
  EXPECT_TRUE(v.alerts_where("e2e reload ptrace", "proc.pid", before).empty()) << "an action before the reload";
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// (b) A broken configuration on reload (an unknown key, a bad output, bad
// YAML, a bad rule): the failure names the file, line and column, and the
// old rules and outputs go on.
TEST_F(e2eReload, ABrokenConfigurationKeepsTheRulesAndOutputsInForce) {
  VIGIL_E2E_REQUIRE_ROOT();
  const std::string rules = dir_.write("rules.yaml", exec_rule("e2e kept", name_));
  const std::string alerts = dir_.path() + "/alerts.json";
  const std::string good = config(rules, "  - type: file\n    path: " + alerts + "\n");
  const std::string cfg = dir_.write("vigil.yaml", good);
  Vigil v;
  ASSERT_TRUE(v.start({"-c", cfg, "-o", "outputs.1.type=stdout"}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  const std::string other = dir_.path() + "/other.json";
  const std::string new_rules = dir_.write("new_rules.yaml", exec_rule("e2e new", name_));
  struct Broken {
    std::string text, where;
  };
  const std::vector<Broken> broken = {
      // An unknown key in a section (line 4, column 3: "colour").
      {"rules: [" + new_rules +
           "]\nflight_recorder:\n  enabled: false\n  colour: red\noutputs:\n  - type: file\n"
           "    path: " +
           other + "\n",
       "vigil.yaml:4:3: flight_recorder.colour: unknown key"},
      // An output of an unknown type (line 3, column 11).
      {"rules: [" + new_rules + "]\noutputs:\n  - type: carrier_pigeon\n",
       "vigil.yaml:3:11: outputs[0].type: unknown output type"},
      // Not YAML (line 2: an unclosed flow sequence).
      {"rules: [" + new_rules + "]\noutputs: [\n", "vigil.yaml:"},
      // A file output whose directory does not exist.
      {"rules: [" + new_rules + "]\noutputs:\n  - type: file\n    path: " + dir_.path() + "/no/such/dir/a.json\n",
       "output file-0: "},
  };
  int failures = 0;
  for (const Broken& b : broken) {
    dir_.write("vigil.yaml", b.text);
    v.signal(SIGHUP);
    ++failures;
    ASSERT_TRUE(v.wait_stderr("reload failed, the previous rules and outputs stay in force", failures)) << v.diag();
    EXPECT_NE(v.stderr_text().find(b.where), std::string::npos) << b.where << v.diag();
    pid_t p = run_once(prog_);
    EXPECT_FALSE(v.alerts_where("e2e kept", "proc.pid", p, 20s).empty()) << "the -o stdout output is gone" << v.diag();
    EXPECT_TRUE(file_has(alerts, "e2e kept", p)) << "the file output is gone after: " << b.where << v.diag();
  }
  EXPECT_EQ(v.stderr_count("rules reloaded"), 0) << v.diag();
  EXPECT_FALSE(std::filesystem::exists(other));
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// (c) A ConfigMap update: new files in a new timestamped directory, then the
// `..data` link renamed over: vigil reloads with no signal, rules and outputs.
TEST_F(e2eReload, AConfigMapSymlinkSwapReloadsWithoutASignal) {
  VIGIL_E2E_REQUIRE_ROOT();
  const std::string alerts = dir_.path() + "/alerts.json";
  const std::string cfg =
      configmap("..2026_11_26_05_00_00.1", exec_rule("e2e before swap", name_), "  - type: stdout\n");
  Vigil v;
  ASSERT_TRUE(v.start({"-c", cfg}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  pid_t p1 = run_once(prog_);
  ASSERT_FALSE(v.alerts_where("e2e before swap", "proc.pid", p1, 20s).empty()) << v.diag();

  swap_configmap("..2026_11_26_05_00_00.1", "..2026_11_26_05_01_00.2", exec_rule("e2e after swap", name_),
                 "  - type: stdout\n  - type: file\n    path: " + alerts + "\n");
  ASSERT_TRUE(v.wait_stderr("rules reloaded", 1, 20s)) << v.diag();
  EXPECT_NE(v.stderr_text().find(cfg + " changed: reloading"), std::string::npos) << v.diag();
  pid_t p2 = run_once(prog_);
  EXPECT_FALSE(v.alerts_where("e2e after swap", "proc.pid", p2, 20s).empty()) << v.diag();
  EXPECT_TRUE(file_has(alerts, "e2e after swap", p2)) << v.diag();
  EXPECT_TRUE(v.alerts_where("e2e before swap", "proc.pid", p2).empty()) << v.diag();
  EXPECT_EQ(v.stderr_count("rules reloaded"), 1) << "one swap, one reload" << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// (g) A ConfigMap swap whose rules name a path the open filter was not given
// at start: the filter's tables take it in the reload, and the next open
// under it fires.
TEST_F(e2eReload, AConfigMapSwapAddingAnOpenPathFiresOnTheNextOpen) {
  VIGIL_E2E_REQUIRE_ROOT();
  const std::string watched = dir_.mkdirs("newly-watched");
  dir_.write("newly-watched/f", "x\n");
  const std::string cfg =
      configmap("..2026_11_28_05_00_00.1", exec_rule("e2e before swap", name_), "  - type: stdout\n");
  Vigil v;
  ASSERT_TRUE(v.start({"-c", cfg}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  swap_configmap("..2026_11_28_05_00_00.1", "..2026_11_28_05_01_00.2", open_rule("e2e new path", watched + "/", name_),
                 "  - type: stdout\n");
  ASSERT_TRUE(v.wait_stderr("rules reloaded", 1, 20s)) << v.diag();
  EXPECT_EQ(v.stderr_text().find("restart vigil"), std::string::npos) << v.diag();
  const pid_t p = run_once_args({prog_, "open", watched + "/f"});
  EXPECT_FALSE(v.alerts_where("e2e new path", "proc.pid", p, 20s).empty()) << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// (h) Opens before, during and after a reload that attaches a hook (ptrace)
// and gives the open filter another path: each open alerts exactly once.
TEST_F(e2eReload, AlertsAcrossAReloadThatAddsHooksAreNeitherLostNorDuplicated) {
  VIGIL_E2E_REQUIRE_ROOT();
  const std::string watched = dir_.mkdirs("watched");
  const std::string other = dir_.mkdirs("other");
  dir_.write("watched/f", "x\n");
  const std::string rules = dir_.write("rules.yaml", open_rule("e2e across open", watched + "/", name_));
  const std::string out = dir_.path() + "/a.json";
  const std::string cfg = dir_.write("vigil.yaml", config(rules, "  - type: file\n    path: " + out + "\n"));
  Vigil v;
  ASSERT_TRUE(v.start({"-c", cfg}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  dir_.write("rules.yaml", open_rule("e2e across open", watched + "/", name_) +
                               open_rule("e2e other open", other + "/", name_) +
                               ptrace_rule("e2e across ptrace", name_));
  std::set<long> pids;
  for (int i = 0; i < 100; ++i) {
    if (i == 30) v.signal(SIGHUP);
    pids.insert(run_once_args({prog_, "open", watched + "/f"}));
  }
  ASSERT_TRUE(v.wait_stderr("rules reloaded")) << v.diag();
  const long last = run_once_args({prog_, "open", watched + "/f"});
  pids.insert(last);
  ASSERT_TRUE(file_has(out, "e2e across open", last)) << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
  std::set<long> got;
  for (const auto& [pid, n] : pids_in_file(out, "e2e across open")) {
    EXPECT_EQ(n, 1) << "pid " << pid << " alerted " << n << " times";
    got.insert(pid);
  }
  EXPECT_EQ(got, pids) << v.diag();
}

// (e) Execs before, during and after a reload that moves the output from one
// file to another: every exec is in exactly one of the two files.
TEST_F(e2eReload, AlertsAcrossAReloadAreNeitherLostNorDuplicated) {
  VIGIL_E2E_REQUIRE_ROOT();
  const std::string rules = dir_.write("rules.yaml", exec_rule("e2e across", name_));
  const std::string a = dir_.path() + "/a.json", b = dir_.path() + "/b.json";
  const std::string cfg = dir_.write("vigil.yaml", config(rules, "  - type: file\n    path: " + a + "\n"));
  Vigil v;
  ASSERT_TRUE(v.start({"-c", cfg}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  std::set<long> pids;
  pids.insert(run_once(prog_));
  ASSERT_TRUE(file_has(a, "e2e across", *pids.begin())) << v.diag();
  dir_.write("vigil.yaml", config(rules, "  - type: file\n    path: " + b + "\n"));
  for (int i = 0; i < 100; ++i) {
    if (i == 30) v.signal(SIGHUP);
    pids.insert(run_once(prog_));
  }
  ASSERT_TRUE(v.wait_stderr("rules reloaded")) << v.diag();
  const long last = run_once(prog_);
  pids.insert(last);
  ASSERT_TRUE(file_has(b, "e2e across", last)) << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
  std::map<long, int> seen = pids_in_file(a, "e2e across");
  for (const auto& [pid, n] : pids_in_file(b, "e2e across")) seen[pid] += n;
  std::set<long> got;
  for (const auto& [pid, n] : seen) {
    EXPECT_EQ(n, 1) << "pid " << pid << " alerted " << n << " times";
    got.insert(pid);
  }
  EXPECT_EQ(got, pids) << v.diag();
  EXPECT_FALSE(pids_in_file(b, "e2e across").empty());
}

}  // namespace
}  // namespace vigil::e2e
