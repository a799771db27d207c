// End-to-end tests of the `vigil run` lifecycle: `ready`, clean stops on
// SIGTERM/SIGINT with every alert flushed, exit 2 for bad rules, SIGHUP
// reloads (a broken file keeps the old rules, a fixed one takes effect; a heavy
// one compiles while detection goes on), the
// text format, and the modes of what vigil creates under umask 000.
//
// Needs root and a kernel with BTF (label integration); skipped with a message otherwise.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"
#include "tests/outputs/http_server.h"
#include "tests/support/net.h"

namespace vigil::e2e {
namespace {

std::string regex_escape(const std::string& s) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(s, special, R"(\$&)");
}

std::string exec_rule(const std::string& rule, const std::string& prog_name, const std::string& priority) {
  return "- rule: " + rule + "\n  desc: the test program ran\n  condition: evt.type = execve and proc.name = \"" +
         prog_name +
         "\"\n  output: ran (proc.pid=%proc.pid proc.name=%proc.name proc.cmdline=%proc.cmdline)\n"
         "  priority: " +
         priority + "\n";
}

// Runs prog (no steps: exec, exit) and returns its pid.
pid_t run_once(const std::string& prog) {
  Child c = Child::spawn({prog});
  c.wait();
  return c.pid();
}

// SIGTERM and SIGINT: exit 0, and alerts of activity before the signal are on stdout.
void stop_flushes(int sig) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string name = unique_name("stop");
  const std::string prog = dir.install(VIGIL_E2E_ACTOR, name);
  const std::string rules = dir.write("rules.yaml", exec_rule("e2e stop", name, "WARNING"));
  // The flight recorder on, writing to the test's directory.
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules, "-o", "flight_recorder.dir=" + dir.path() + "/flight"}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  std::set<long> pids;
  pids.insert(run_once(prog));
  // The pipeline is live once the first alert is out; then a burst right before the signal.
  ASSERT_FALSE(v.alerts([](const json& a) { return a.value("rule", "") == "e2e stop"; }, 20s).empty()) << v.diag();
  for (int i = 0; i < 20; ++i) pids.insert(run_once(prog));
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(v.stop(sig), 0) << "exit status after " << strsignal(sig) << v.diag();
  std::set<long> alerted;
  for (const auto& a : v.alerts([](const json& a) { return a.value("rule", "") == "e2e stop"; }))
    alerted.insert(a["output_fields"].value("proc.pid", 0L));
  EXPECT_EQ(alerted, pids) << "every exec before the signal has its alert on stdout" << v.diag();
  EXPECT_NE(v.stderr_text().find("stopped"), std::string::npos) << v.diag();
}

TEST(e2eLifecycle, SigtermStopsWithExitZeroAndFlushesAlerts) {
  VIGIL_E2E_REQUIRE_ROOT();
  stop_flushes(SIGTERM);
}

TEST(e2eLifecycle, SigintStopsWithExitZeroAndFlushesAlerts) {
  VIGIL_E2E_REQUIRE_ROOT();
  stop_flushes(SIGINT);
}

// --capture records the run; `vigil replay` of the file with the same rules
// gives the same alert (same process, same command line).
TEST(e2eLifecycle, CaptureOfTheRunReplaysToTheSameAlert) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string name = unique_name("cap");
  const std::string prog = dir.install(VIGIL_E2E_ACTOR, name);
  const std::string rules = dir.write("rules.yaml", exec_rule("e2e capture", name, "WARNING"));
  const std::string capture = dir.path() + "/run.vcap";
  pid_t pid = 0;
  json live;
  {
    Vigil v;
    ASSERT_TRUE(v.start({"-r", rules, "-o", "flight_recorder.enabled=false", "--capture", capture}));
    ASSERT_TRUE(v.wait_ready()) << v.diag();
    Child c = Child::spawn({prog, "note", "captured"});
    c.wait();
    pid = c.pid();
    auto got = v.alerts_where("e2e capture", "proc.pid", pid, 20s);
    ASSERT_FALSE(got.empty()) << v.diag();
    live = got.front();
    ASSERT_EQ(v.stop(), 0) << v.diag();
  }
  Vigil r;
  ASSERT_TRUE(r.start_command("replay", {capture, "-r", rules}));
  const int st = r.wait_exit(60s);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << Child::what(st) << r.diag();
  auto replayed = r.alerts_where("e2e capture", "proc.pid", pid);
  ASSERT_EQ(replayed.size(), 1u) << r.diag();
  EXPECT_EQ(replayed[0]["output_fields"], live["output_fields"]) << "live: " << live.dump() << r.diag();
  EXPECT_EQ(replayed[0].value("time", ""), live.value("time", "")) << r.diag();
}

// The bundled rules (no -r: the default rules directory) load and get ready.
// Issue 16: alerts a webhook lost (its server down, a 50-alert queue, no
// spool) are in the stopped line's drops=, by output and reason, and add up
// to every alert raised; drops= is the sum of the parts it names.
TEST(e2eLifecycle, StoppedLineCountsOutputDropsByReason) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string name = unique_name("drop");
  const std::string prog = dir.install(VIGIL_E2E_ACTOR, name);
  const std::string rules = dir.write("rules.yaml", exec_rule("e2e drops", name, "WARNING"));
  std::uint16_t port = 0;
  {
    support::TcpListener closed("127.0.0.1", 0);  // a port nobody listens on once closed
    ASSERT_TRUE(closed.ok()) << closed.error();
    port = closed.port();
  }
  const std::string config = dir.write(
      "vigil.yaml", "outputs:\n  - type: stdout\n  - type: webhook\n    url: http://127.0.0.1:" + std::to_string(port) +
                        "/alerts\n    queue: {max_events: 50}\n"
                        "    retry: {max_attempts: 3, initial_backoff_ms: 50, max_backoff_ms: 200}\n");
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules, "-c", config, "-o", "flight_recorder.enabled=false"}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  constexpr int kRuns = 201;
  for (int i = 0; i < kRuns; ++i) run_once(prog);
  auto mine = [](const json& a) { return a.value("rule", "") == "e2e drops"; };
  for (int i = 0; i < 300 && v.alerts(mine).size() < kRuns; ++i) std::this_thread::sleep_for(100ms);
  ASSERT_EQ(v.alerts(mine).size(), static_cast<std::size_t>(kRuns)) << v.diag();
  EXPECT_EQ(v.stop(SIGTERM), 0) << v.diag();
  const std::string err = v.stderr_text();
  std::smatch m;
  const std::regex line(R"(stopped: \d+ events, (\d+) alerts, drops=(\d+) \(sources: ([^;]*); outputs: ([^)]*)\))");
  ASSERT_TRUE(std::regex_search(err, m, line)) << v.diag();
  RecordProperty("stopped_line", m[0].str());
  EXPECT_EQ(std::stoul(m[1]), static_cast<unsigned long>(kRuns));
  auto sum = [](const std::string& parts, const std::string& prefix) {
    std::uint64_t n = 0;
    const std::regex tok(R"((\S+)=(\d+))");
    for (auto it = std::sregex_iterator(parts.begin(), parts.end(), tok); it != std::sregex_iterator(); ++it) {
      if ((*it)[1].str().rfind(prefix, 0) == 0) n += std::stoull((*it)[2]);
    }
    return n;
  };
  const std::string sources = m[3], outputs = m[4];
  EXPECT_EQ(sum(outputs, "webhook-1/"), static_cast<std::uint64_t>(kRuns)) << outputs;  // none delivered
  EXPECT_EQ(sum(outputs, "stdout-0/"), 0u) << outputs;
  EXPECT_NE(outputs.find("webhook-1/queue_full="), std::string::npos) << outputs;
  EXPECT_EQ(std::stoull(m[2]), sum(sources, "") + sum(outputs, "")) << m[0];
  EXPECT_TRUE(std::regex_search(err, std::regex(R"(output webhook-1: \d+ alerts dropped \()"))) << v.diag();
}

// Issue 16 item 2 end to end: a webhook with a spool answering 200 after
// 0.5 s, a storm of 200 execs that each alert, then vigil killed with
// SIGKILL while most alerts wait. A new vigil on the same state_dir delivers
// every one of them (at-least-once: at most the request in flight twice).
TEST(e2eLifecycle, KillNineWithASlowWebhookLosesNoAlert) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string name = unique_name("wal");
  const std::string prog = dir.install(VIGIL_E2E_ACTOR, name);
  const std::string rules = dir.write("rules.yaml", exec_rule("e2e wal", name, "WARNING"));
  outputs::testing::HttpServer server;
  server.set_delay(500ms);
  const std::string config = dir.write("vigil.yaml", "state_dir: " + dir.path() +
                                                         "/state\noutputs:\n  - type: stdout\n"
                                                         "  - type: webhook\n    url: " +
                                                         server.url() + "\n    spool: true\n");
  auto webhook_uuids = [&] {
    std::vector<std::string> out;
    for (const auto& r : server.requests()) out.push_back(json::parse(r.body).value("uuid", ""));
    return out;
  };
  auto mine = [](const json& a) { return a.value("rule", "") == "e2e wal"; };
  const std::vector<std::string> args = {"-r", rules, "-c", config, "-o", "flight_recorder.enabled=false"};
  std::set<std::string> raised;
  std::vector<std::string> order;  // as raised (stdout)
  {
    Vigil v;
    ASSERT_TRUE(v.start(args));
    ASSERT_TRUE(v.wait_ready()) << v.diag();
    constexpr int kRuns = 200;
    for (int i = 0; i < kRuns; ++i) run_once(prog);
    for (int i = 0; i < 300 && v.alerts(mine).size() < kRuns; ++i) std::this_thread::sleep_for(100ms);
    for (const auto& a : v.alerts(mine)) {
      raised.insert(a.value("uuid", ""));
      order.push_back(a.value("uuid", ""));
    }
    ASSERT_EQ(raised.size(), static_cast<std::size_t>(kRuns)) << v.diag();
    // Killed two slow deliveries (~1 s) after the last alert was on stdout,
    // as in the issue (seconds later), not within the journal's last write
    // (docs/outputs.md: what a kill -9 can lose is the queue not yet appended).
    ASSERT_TRUE(server.wait_requests(server.requests().size() + 2, 10s)) << v.diag();
    v.signal(SIGKILL);
    const int st = v.wait_exit();
    ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << v.diag();
  }
  const std::size_t before = webhook_uuids().size();
  EXPECT_LT(before, raised.size() / 2) << "most alerts were still waiting when vigil died";
  server.set_delay(0ms);
  Vigil v;
  ASSERT_TRUE(v.start(args));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  auto delivered = [&] {
    const auto got = webhook_uuids();
    return std::set<std::string>(got.begin(), got.end());
  };
  for (int i = 0; i < 300 && delivered().size() < raised.size(); ++i) std::this_thread::sleep_for(100ms);
  EXPECT_EQ(v.stop(SIGTERM), 0) << v.diag();
  EXPECT_NE(v.stderr_text().find("spooled alerts from an earlier run will be delivered first"), std::string::npos)
      << v.diag();
  std::vector<std::string> missing;
  const auto got = delivered();
  for (const auto& u : raised) {
    if (!got.count(u)) missing.push_back(u);
  }
  std::string where;
  for (const auto& u : missing) {
    where += " " + std::to_string(std::find(order.begin(), order.end(), u) - order.begin());
  }
  EXPECT_TRUE(missing.empty()) << missing.size() << " of " << raised.size()
                               << " alerts never reached the webhook, raised as number" << where
                               << "; before the kill: " << before << v.diag();
  EXPECT_EQ(got.size(), raised.size());
  const std::size_t duplicates = webhook_uuids().size() - delivered().size();
  RecordProperty("delivered_before_kill", static_cast<int>(before));
  RecordProperty("duplicates", static_cast<int>(duplicates));
  EXPECT_LE(duplicates, 1u);
}

TEST(e2eLifecycle, BundledRulesGetReady) {
  VIGIL_E2E_REQUIRE_ROOT();
  Vigil v;
  ASSERT_TRUE(v.start({"-o", "flight_recorder.enabled=false"}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  std::smatch m;
  std::string err = v.stderr_text();
  ASSERT_TRUE(std::regex_search(err, m, std::regex("ready: ([0-9]+) rules loaded"))) << v.diag();
  EXPECT_GT(std::stoi(m[1].str()), 10) << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// The bundled rules with Falco's stable rules: their literal open paths
// (34 after the bundled sequences came) once overflowed the kernel filter's
// 32 slots and vigil refused to start ("more than 32 open paths"); its tables
// now take any number (all three stock files: tests/falco,
// falco_e2e_all_files).
TEST(e2eLifecycle, BundledAndFalcoRulesTogetherGetReady) {
  VIGIL_E2E_REQUIRE_ROOT();
  const std::string falco = "../shared/falco-rules/falco_rules.yaml";
  if (::access(falco.c_str(), R_OK) != 0) GTEST_SKIP() << falco << " is not beside the repository";
  Vigil v;
  ASSERT_TRUE(v.start({"-o", "flight_recorder.enabled=false", "-r", "rules", "-r", falco}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

TEST(e2eLifecycle, RuleSyntaxErrorExitsTwoNamingFileLineColumn) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  // Line 4 holds the condition with an unbalanced parenthesis.
  const std::string rules = dir.write("broken.yaml",
                                      "- rule: e2e broken\n"
                                      "  desc: a condition that does not parse\n"
                                      "  priority: WARNING\n"
                                      "  condition: evt.type = execve and (proc.name = bash\n"
                                      "  output: never (proc.name=%proc.name)\n");
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules, "-o", "flight_recorder.enabled=false"}));
  const int st = v.wait_exit();
  ASSERT_TRUE(WIFEXITED(st)) << v.diag();
  EXPECT_EQ(WEXITSTATUS(st), 2) << v.diag();
  EXPECT_EQ(v.stderr_count("ready"), 0) << v.diag();
  std::string err = v.stderr_text();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, std::regex(regex_escape(rules) + ":([0-9]+):([0-9]+)")))
      << "no file:line:col in the message" << v.diag();
  EXPECT_EQ(m[1].str(), "4") << v.diag();
  EXPECT_GT(std::stoi(m[2].str()), 0) << v.diag();
}

TEST(e2eLifecycle, YamlErrorExitsTwoNamingFileLineColumn) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string rules = dir.write("bad-yaml.yaml",
                                      "- rule: e2e bad yaml\n"
                                      "  desc: [unterminated\n"
                                      "  condition: evt.type = execve\n");
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules, "-o", "flight_recorder.enabled=false"}));
  const int st = v.wait_exit();
  ASSERT_TRUE(WIFEXITED(st)) << v.diag();
  EXPECT_EQ(WEXITSTATUS(st), 2) << v.diag();
  std::string err = v.stderr_text();
  EXPECT_TRUE(std::regex_search(err, std::regex(regex_escape(rules) + ":[0-9]+:[0-9]+"))) << v.diag();
}

TEST(e2eLifecycle, MissingRulesPathExitsTwo) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string missing = dir.path() + "/no-such-rules.yaml";
  Vigil v;
  ASSERT_TRUE(v.start({"-r", missing, "-o", "flight_recorder.enabled=false"}));
  const int st = v.wait_exit();
  ASSERT_TRUE(WIFEXITED(st)) << v.diag();
  EXPECT_EQ(WEXITSTATUS(st), 2) << v.diag();
  EXPECT_NE(v.stderr_text().find(missing), std::string::npos) << "the message names the path" << v.diag();
}

TEST(e2eLifecycle, BadConfigOverrideExitsTwo) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string rules = dir.write("rules.yaml", exec_rule("e2e cfg", unique_name("cfg"), "WARNING"));
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules, "-o", "sensor.ringbuf_mib=3", "-o", "flight_recorder.enabled=false"}));
  const int st = v.wait_exit();
  ASSERT_TRUE(WIFEXITED(st)) << v.diag();
  EXPECT_EQ(WEXITSTATUS(st), 2) << v.diag();
  EXPECT_NE(v.stderr_text().find("sensor.ringbuf_mib"), std::string::npos) << v.diag();
}

// A Kubernetes API that accepts connections and never answers does not hold
// up the stop: SIGTERM still exits 0, promptly.
TEST(e2eLifecycle, StopsPromptlyWhileTheApiHangs) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  // A listening socket nobody accepts on: the kernel completes the handshake, no reply ever comes.
  support::TcpListener silent("127.0.0.1", 0);
  ASSERT_TRUE(silent.ok()) << silent.error();
  const std::string url = "http://127.0.0.1:" + std::to_string(silent.port());
  const std::string rules = dir.write("rules.yaml", exec_rule("e2e hang", unique_name("hang"), "WARNING"));
  Vigil v;
  ASSERT_TRUE(
      v.start({"-r", rules, "-o", "flight_recorder.enabled=false", "--k8s-api", url, "-o", "k8s.node_name=e2e-node"}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  std::this_thread::sleep_for(1s);  // the watcher is now waiting on the silent server
  const auto t0 = std::chrono::steady_clock::now();
  v.signal(SIGTERM);
  const int st = v.wait_exit(30s);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(WIFEXITED(st)) << "vigil did not exit on SIGTERM" << v.diag();
  EXPECT_EQ(WEXITSTATUS(st), 0) << v.diag();
  EXPECT_LT(took, 10s) << v.diag();
}

// Without root (or CAP_BPF) the probes cannot load: exit 1 and one line saying why.
TEST(e2eLifecycle, WithoutPrivilegesExitsOneSayingWhy) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string rules = dir.write("rules.yaml", exec_rule("e2e unprivileged", unique_name("np"), "WARNING"));
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules, "-o", "flight_recorder.enabled=false"}, {}, uid_t{65534}));
  const int st = v.wait_exit();
  ASSERT_TRUE(WIFEXITED(st)) << v.diag();
  EXPECT_EQ(WEXITSTATUS(st), 1) << v.diag();
  EXPECT_EQ(v.stderr_count("ready"), 0) << v.diag();
  std::string err = v.stderr_text();
  EXPECT_TRUE(std::regex_search(err, std::regex("error .*(root|CAP_BPF)"))) << v.diag();
}

// SIGHUP with a broken file keeps the old rules; with a fixed file the new ones apply.
TEST(e2eLifecycle, SighupReloadKeepsOldRulesOnErrorAndAppliesFixedOnes) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string name = unique_name("hup");
  const std::string prog = dir.install(VIGIL_E2E_ACTOR, name);
  const std::string rules = dir.write("rules.yaml", exec_rule("e2e before reload", name, "WARNING"));
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules, "-o", "flight_recorder.enabled=false"}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();

  pid_t p1 = run_once(prog);
  ASSERT_FALSE(v.alerts_where("e2e before reload", "proc.pid", p1, 20s).empty()) << v.diag();

  // Broken: the reload fails and the old rule keeps firing.
  std::string broken = exec_rule("e2e before reload", name, "WARNING");
  broken.replace(broken.find("proc.name ="), 0, "(");  // an unbalanced parenthesis
  dir.write("rules.yaml", broken);
  v.signal(SIGHUP);
  ASSERT_TRUE(v.wait_stderr("reload failed, the previous rules and outputs stay in force")) << v.diag();
  pid_t p2 = run_once(prog);
  EXPECT_FALSE(v.alerts_where("e2e before reload", "proc.pid", p2, 20s).empty())
      << "the old rules stopped after a failed reload" << v.diag();

  // Fixed, with a new rule: it takes effect, the old one is gone.
  dir.write("rules.yaml", exec_rule("e2e after reload", name, "CRITICAL"));
  v.signal(SIGHUP);
  ASSERT_TRUE(v.wait_stderr("rules reloaded")) << v.diag();
  pid_t p3 = run_once(prog);
  auto after = v.alerts_where("e2e after reload", "proc.pid", p3, 20s);
  ASSERT_FALSE(after.empty()) << "the reloaded rule did not fire" << v.diag();
  EXPECT_EQ(after[0].value("priority", ""), "Critical");
  EXPECT_TRUE(v.alerts_where("e2e before reload", "proc.pid", p3).empty()) << "the old rule still fired" << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
  EXPECT_TRUE(v.alerts_where("e2e before reload", "proc.pid", p3).empty()) << v.diag();
}

// Issue 16, item 3: a reload compiled on the loop thread stopped detection
// for the whole compile (15 s, 646k events lost, 0 of 50 miner runs alerted).
// A heavy rule file (seconds to parse and compile) is loaded by SIGHUP while
// the test program runs 50 times: every run alerts through the rules in
// force before the reload has even finished, then the new rules apply.
TEST(e2eLifecycle, AHeavyReloadDoesNotStopDetectionWhileItCompiles) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string name = unique_name("heavy");
  const std::string prog = dir.install(VIGIL_E2E_ACTOR, name);
  const std::string rules = dir.write("rules.yaml", exec_rule("e2e storm", name, "WARNING"));
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules, "-o", "flight_recorder.enabled=false"}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  pid_t first = run_once(prog);
  ASSERT_FALSE(v.alerts_where("e2e storm", "proc.pid", first, 20s).empty()) << v.diag();

  // 150 rules of 4,000 terms each (under the per-rule limit): about 15 MB
  // and several seconds of parsing and compiling on a 2-core machine.
  std::string heavy = exec_rule("e2e storm", name, "WARNING") + exec_rule("e2e after heavy reload", name, "CRITICAL");
  for (int r = 0; r < 150; ++r) {
    heavy += "- rule: heavy " + std::to_string(r) + "\n  desc: a large condition\n  condition: evt.type = execve";
    for (int i = 0; i < 4000; ++i) heavy += " and proc.name != n" + std::to_string(r) + "_" + std::to_string(i);
    heavy += "\n  output: heavy\n  priority: DEBUG\n";
  }
  dir.write("rules.yaml", heavy);
  v.signal(SIGHUP);
  std::set<long> pids;
  for (int i = 0; i < 50; ++i) pids.insert(run_once(prog));
  auto storm = [&] {
    std::set<long> got;
    for (const auto& a : v.alerts([](const json& a) { return a.value("rule", "") == "e2e storm"; })) {
      long pid = a["output_fields"].value("proc.pid", 0L);
      if (pids.count(pid)) got.insert(pid);
    }
    return got;
  };
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (storm().size() < pids.size() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  const bool reloaded_before_alerts = v.stderr_count("rules reloaded") > 0;
  EXPECT_EQ(storm(), pids) << "every run alerts" << v.diag();
  EXPECT_FALSE(reloaded_before_alerts)
      << "the storm's alerts came only after the reload finished: detection waited for the compile" << v.diag();

  ASSERT_TRUE(v.wait_stderr("rules reloaded", 1, 120s)) << v.diag();
  pid_t after = run_once(prog);
  EXPECT_FALSE(v.alerts_where("e2e after heavy reload", "proc.pid", after, 20s).empty())
      << "the reloaded rules did not take effect" << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// Issue 16: zero enabled rules was accepted silently (`ready: 0 rules
// loaded`, nothing detected). It is an error (exit 2, before any probe)
// unless --allow-no-rules asks for it.
TEST(e2eLifecycle, NoEnabledRuleIsAnErrorUnlessAllowed) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string empty = dir.path() + "/empty";
  ASSERT_EQ(mkdir(empty.c_str(), 0700), 0);
  {
    Vigil v;
    ASSERT_TRUE(v.start({"-r", empty, "-o", "flight_recorder.enabled=false"}));
    const int st = v.wait_exit();
    ASSERT_TRUE(WIFEXITED(st)) << v.diag();
    EXPECT_EQ(WEXITSTATUS(st), 2) << v.diag();
    EXPECT_EQ(v.stderr_count("ready"), 0) << v.diag();
    EXPECT_TRUE(
        std::regex_search(v.stderr_text(), std::regex("error rules from " + regex_escape(empty) + ": no enabled rule")))
        << v.diag();
  }
  {
    // Its only rule is skipped (a field vigil does not have): no enabled rule either.
    std::string typo = exec_rule("e2e typo", "x", "WARNING");
    typo.replace(typo.find("proc.name ="), 9, "proc.nmae");
    const std::string rules = dir.write("typo.yaml", typo);
    Vigil v;
    ASSERT_TRUE(v.start({"-r", rules, "-o", "flight_recorder.enabled=false"}));
    const int st = v.wait_exit();
    ASSERT_TRUE(WIFEXITED(st)) << v.diag();
    EXPECT_EQ(WEXITSTATUS(st), 2) << v.diag();
    EXPECT_EQ(v.stderr_count("warning W003: rule 'e2e typo': unknown field proc.nmae"), 1) << v.diag();
    EXPECT_EQ(v.stderr_count("no enabled rule (1 skipped)"), 1) << v.diag();
  }
  {
    Vigil v;
    ASSERT_TRUE(v.start({"-r", empty, "--allow-no-rules", "-o", "flight_recorder.enabled=false"}));
    ASSERT_TRUE(v.wait_ready()) << v.diag();
    EXPECT_EQ(v.stderr_count("warning no enabled rule"), 1) << v.diag();
    EXPECT_EQ(v.stop(), 0) << v.diag();
  }
}

// Issue 16: a reload in which the only rule was skipped for a typo'd field
// logged `rules reloaded: 0 rules` at info level and detection stopped. Such
// a reload, or one whose skips lose more than --max-skipped-rules percent of
// the enabled rules, keeps the rules in force and says why at error level.
TEST(e2eLifecycle, AReloadThatSkipsTooManyRulesKeepsTheOldOnes) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string name = unique_name("skip");
  const std::string prog = dir.install(VIGIL_E2E_ACTOR, name);
  auto typo = [](std::string r) { return r.replace(r.find("proc.name ="), 9, "proc.nmae"); };
  const std::string rules = dir.write("rules.yaml", exec_rule("e2e kept", name, "WARNING"));
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules, "-o", "flight_recorder.enabled=false"}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();

  // The only rule now has a typo: skipped, which would leave none.
  dir.write("rules.yaml", typo(exec_rule("e2e kept", name, "WARNING")));
  v.signal(SIGHUP);
  ASSERT_TRUE(v.wait_stderr("reload failed, the previous rules and outputs stay in force")) << v.diag();
  EXPECT_TRUE(std::regex_search(v.stderr_text(), std::regex("warning W003: rule 'e2e kept': unknown field proc.nmae")))
      << v.diag();
  EXPECT_TRUE(std::regex_search(
      v.stderr_text(), std::regex("error reload failed, the previous rules and outputs stay in force: no enabled "
                                  "rule \\(1 skipped\\)")))
      << v.diag();
  EXPECT_EQ(v.stderr_count("rules reloaded"), 0) << v.diag();
  pid_t p1 = run_once(prog);
  EXPECT_FALSE(v.alerts_where("e2e kept", "proc.pid", p1, 20s).empty())
      << "detection stopped after a reload that skipped every rule" << v.diag();

  // Four rules in force, then a file where three of them are skipped: 75%
  // of the enabled rules lost to skips, over the default 50%.
  std::string four;
  for (int i = 0; i < 4; ++i) four += exec_rule("e2e four " + std::to_string(i), name, "WARNING");
  dir.write("rules.yaml", four);
  v.signal(SIGHUP);
  ASSERT_TRUE(v.wait_stderr("rules reloaded: 4 rules")) << v.diag();
  std::string one = exec_rule("e2e four 0", name, "WARNING");
  for (int i = 1; i < 4; ++i) one += typo(exec_rule("e2e four " + std::to_string(i), name, "WARNING"));
  dir.write("rules.yaml", one);
  v.signal(SIGHUP);
  ASSERT_TRUE(v.wait_stderr("% fewer")) << v.diag();
  EXPECT_EQ(v.stderr_count("3 rules skipped: 1 enabled rules instead of 4, more than 50% fewer"), 1) << v.diag();
  pid_t p2 = run_once(prog);
  EXPECT_FALSE(v.alerts_where("e2e four 3", "proc.pid", p2, 20s).empty()) << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

TEST(e2eLifecycle, TextFormatPrintsTextAlerts) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string name = unique_name("txt");
  const std::string prog = dir.install(VIGIL_E2E_ACTOR, name);
  const std::string rules = dir.write("rules.yaml", exec_rule("e2e text", name, "ERROR"));
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules, "-o", "flight_recorder.enabled=false", "--format", "text"}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  pid_t pid = run_once(prog);
  const std::string want =
      "Error ran (proc.pid=" + std::to_string(pid) + " proc.name=" + name + " proc.cmdline=" + name + ")";
  auto deadline = std::chrono::steady_clock::now() + 20s;
  std::string hit;
  while (hit.empty() && std::chrono::steady_clock::now() < deadline) {
    for (const auto& l : v.stdout_lines())
      if (l.find(want) != std::string::npos) hit = l;
    if (hit.empty()) std::this_thread::sleep_for(50ms);
  }
  ASSERT_FALSE(hit.empty()) << "no text alert containing '" << want << "'" << v.diag();
  // "<RFC 3339 time>: <Priority> <output>", not JSON.
  EXPECT_TRUE(std::regex_match(hit, std::regex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z: Error ran .*"))) << hit;
  EXPECT_TRUE(json::parse(hit, nullptr, false).is_discarded()) << hit;
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// Issue 16, item 9: under umask 000, state_dir, state/spool and state/flight
// were created 0777. Whatever the umask, vigil makes its directories 0700,
// alert and spool files 0600, and captures 0640.
TEST(e2eLifecycle, UnderUmaskZeroWhatVigilCreatesIsOwnerOnly) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string name = unique_name("umask");
  const std::string prog = dir.install(VIGIL_E2E_ACTOR, name);
  const std::string rules = dir.write("rules.yaml", exec_rule("e2e umask", name, "CRITICAL"));
  const std::string state = dir.path() + "/state";
  const std::string cfg =
      dir.write("vigil.yaml", "state_dir: " + state + "\n" +
                                  "outputs:\n"
                                  "  - {type: stdout}\n"
                                  "  - {type: file, path: " +
                                  dir.path() +
                                  "/alerts.json}\n"
                                  "  - {type: webhook, name: hook, url: 'http://127.0.0.1:9/', spool: true}\n");
  Vigil v;
  const mode_t old = ::umask(0);
  const bool started = v.start({"-c", cfg, "-r", rules, "--capture", dir.path() + "/run.vcap"});
  ::umask(old);
  ASSERT_TRUE(started);
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  run_once(prog);
  ASSERT_FALSE(v.alerts([](const json& a) { return a.value("rule", "") == "e2e umask"; }, 20s).empty()) << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();  // the flight recorder writes its capture at the latest now
  auto mode = [](const std::string& p) -> unsigned {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
  };
  for (const std::string& d : {state, state + "/spool", state + "/spool/hook", state + "/flight"}) {
    EXPECT_EQ(mode(d), 0700u) << d << v.diag();
  }
  EXPECT_EQ(mode(dir.path() + "/alerts.json"), 0600u);
  EXPECT_EQ(mode(dir.path() + "/run.vcap"), 0640u);
  int segments = 0, captures = 0;
  for (const auto& e : std::filesystem::directory_iterator(state + "/spool/hook")) {
    EXPECT_EQ(mode(e.path()), 0600u) << e.path();
    segments += e.path().extension() == ".seg";
  }
  for (const auto& e : std::filesystem::directory_iterator(state + "/flight")) {
    EXPECT_EQ(mode(e.path()), 0640u) << e.path();
    captures += e.path().extension() == ".vcap";
  }
  EXPECT_GE(segments, 1);
  EXPECT_EQ(captures, 1) << "the Critical alert's flight-recorder capture" << v.diag();
}

}  // namespace
}  // namespace vigil::e2e
