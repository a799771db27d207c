// End-to-end test of vigil's webserver (issue 14, "Metrics and health"): the
// real `vigil run` with `webserver.enabled`, scraped over HTTP, the scrape
// checked by the Prometheus project's own text parser
// (python3-prometheus-client, tests/e2e/prom_parse.py).
//
// 1. Counters move when events and alerts happen; /readyz and /healthz answer.
// 2. /healthz turns bad when the pipeline is stalled on purpose, and good
//    again when the stall ends. The stall is a test hook, not a production
//    flag: the test-only stall plugin (stall_plugin.cpp) blocks inside rule
//    evaluation while a file exists.
//
// Needs root and a kernel with BTF (label integration); skipped with a message otherwise.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

#include "tests/e2e/e2e_util.h"
#include "tests/support/net.h"

namespace vigil::e2e {
namespace {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// GET path: {status, body}; status -1 when the connection failed.
std::pair<int, std::string> get(int port, const std::string& path) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2);
  c.set_read_timeout(5);
  auto r = c.Get(path.c_str());
  if (!r) return {-1, ""};
  return {r->status, r->body};
}

// Parses a scrape with prom_parse.py. Sets `skip` when the parser is not
// installed; `error` when the text is not valid.
std::vector<Sample> parse(const TempDir& dir, const std::string& text, std::string& error, bool& skip) {
  const std::string in = dir.path() + "/scrape.txt";
  const std::string out = dir.path() + "/scrape.jsonl";
  const std::string err = dir.path() + "/scrape.err";
  std::ofstream(in) << text;
  const std::string cmd = "/usr/bin/python3 " + std::string(VIGIL_SOURCE_ROOT) + "/tests/e2e/prom_parse.py < '" + in +
                          "' > '" + out + "' 2> '" + err + "'";
  const int st = std::system(cmd.c_str());
  skip = WIFEXITED(st) && WEXITSTATUS(st) == 3;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    error = read_file(err);
    return {};
  }
  std::vector<Sample> samples;
  std::ifstream f(out);
  for (std::string line; std::getline(f, line);) {
    json j = json::parse(line);
    Sample s;
    s.name = j["name"];
    for (auto& [k, v] : j["labels"].items()) s.labels[k] = v.get<std::string>();
    s.value = j["value"];
    samples.push_back(std::move(s));
  }
  return samples;
}

// The value of the sample `name` whose labels include `labels`; -1 if none.
double value(const std::vector<Sample>& ss, const std::string& name,
             const std::map<std::string, std::string>& labels = {}) {
  for (const Sample& s : ss) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) match = match && s.labels.count(k) && s.labels.at(k) == v;
    if (match) return s.value;
  }
  return -1;
}

class e2eMetrics : public ::testing::Test {
 protected:
  void SetUp() override {
    VIGIL_E2E_REQUIRE_ROOT();
    ASSERT_TRUE(dir_.ok());
    port_ = support::free_port(SOCK_STREAM);
  }

  std::vector<Sample> scrape() {
    auto [status, body] = get(port_, "/metrics");
    EXPECT_EQ(status, 200);
    std::string error;
    bool skip = false;
    auto ss = parse(dir_, body, error, skip);
    if (skip) skipped_ = true;
    EXPECT_TRUE(error.empty() || skip) << error << "\n" << body;
    return ss;
  }

  // Polls path until it answers `want` (or the time is up); the last answer.
  std::pair<int, std::string> await(const std::string& path, int want, std::chrono::seconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    std::pair<int, std::string> r;
    do {
      r = get(port_, path);
      if (r.first == want) break;
      std::this_thread::sleep_for(200ms);
    } while (std::chrono::steady_clock::now() < until);
    return r;
  }

  std::string webserver_yaml(int stall_s) const {
    return "webserver: {enabled: true, listen: \"127.0.0.1:" + std::to_string(port_) +
           "\", stall_after_s: " + std::to_string(stall_s) + "}\nstate_dir: " + dir_.path() + "/state\n";
  }

  TempDir dir_;
  int port_ = 0;
  bool skipped_ = false;
};

// 1. Events and alerts move their counters; the scrape is valid exposition
//    text; readiness and health answer.
TEST_F(e2eMetrics, CountersMoveWithEventsAndAlerts) {
  const std::string prog_name = unique_name("met");
  const std::string prog = dir_.install(VIGIL_E2E_ACTOR, prog_name);
  ASSERT_FALSE(prog.empty());
  const std::string rules = dir_.write("rules.yaml", R"(
- rule: e2e metrics exec
  desc: an exec of the test's program
  condition: evt.type = execve and proc.name = )" + prog_name +
                                                         R"(
  output: exec of %proc.name (pid=%proc.pid)
  priority: WARNING
)");
  const std::string config = dir_.write("vigil.yaml", webserver_yaml(10));
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules, "-c", config}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  auto ready = await("/readyz", 200, 10s);
  EXPECT_EQ(ready.first, 200) << ready.second << v.diag();
  EXPECT_EQ(ready.second, "ready\n");
  auto before = scrape();
  if (skipped_) GTEST_SKIP() << "python3-prometheus-client is not installed (scripts/install-deps.sh installs it)";
  const double execs_before = value(before, "vigil_events_total", {{"type", "execve"}});

  for (int i = 0; i < 3; ++i) {
    Child c = Child::spawn({prog});
    ASSERT_EQ(c.wait(), 0);
  }
  ASSERT_EQ(v.alerts([](const json& a) { return a["rule"] == "e2e metrics exec"; }, 20s).size() >= 1, true) << v.diag();
  // The alerts land, then the counters catch up within a scrape or two.
  std::vector<Sample> after;
  for (int i = 0; i < 25; ++i) {
    after = scrape();
    if (value(after, "vigil_alerts_total", {{"rule", "e2e metrics exec"}}) >= 3 &&
        value(after, "vigil_sink_sent_total", {{"sink", "stdout"}}) >= 3 &&
        value(after, "vigil_source_events_total", {{"source", "bpf"}}) >= 3)  // published every 200 ms
      break;
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_GE(value(after, "vigil_events_total", {{"type", "execve"}}), std::max(0.0, execs_before) + 3);
  EXPECT_EQ(value(after, "vigil_alerts_total", {{"rule", "e2e metrics exec"}, {"priority", "Warning"}}), 3);
  EXPECT_GE(value(after, "vigil_sink_sent_total", {{"sink", "stdout"}, {"type", "stdout"}}), 3);
  EXPECT_GT(value(after, "vigil_sink_last_success_timestamp_seconds", {{"sink", "stdout"}}), 1.6e9);
  EXPECT_GT(value(after, "vigil_source_events_total", {{"source", "bpf"}}), 0);
  EXPECT_EQ(value(after, "vigil_drops_total", {{"source", "bpf"}, {"reason", "ringbuf_full"}}), 0);
  EXPECT_GE(value(after, "vigil_ringbuf_fill_ratio"), 0);
  EXPECT_LE(value(after, "vigil_ringbuf_fill_ratio"), 1);
  EXPECT_EQ(value(after, "vigil_rules_loaded"), 1);
  EXPECT_EQ(value(after, "vigil_healthy"), 1);
  EXPECT_EQ(value(after, "vigil_ready"), 1);
  EXPECT_GT(value(after, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GE(value(after, "process_cpu_seconds_total"), 0);
  EXPECT_GT(value(after, "vigil_loop_turns_total"), value(before, "vigil_loop_turns_total"));
  auto health = get(port_, "/healthz");
  EXPECT_EQ(health.first, 200) << health.second;
  EXPECT_EQ(health.second, "ok\n");
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// 2. A stalled pipeline turns /healthz bad within the window, with reasons,
//    and good again when it moves; the endpoint answers throughout.
TEST_F(e2eMetrics, HealthFailsWhileThePipelineIsStalledAndRecovers) {
  const std::string hold = dir_.path() + "/hold";
  const std::string rules = dir_.write("stall.yaml", R"(
- rule: e2e stall hook
  desc: holds the rule engine while the test's hold file exists
  condition: stall.hold = 0
  output: never
  priority: DEBUG
  source: stall
- rule: e2e stall exec
  desc: keeps the kernel probes attached
  condition: evt.type = execve and proc.name = e2e-never-runs
  output: never
  priority: DEBUG
)");
  const std::string config = dir_.write("vigil.yaml", webserver_yaml(2) +
                                                          "plugins:\n"
                                                          "  - name: stall\n"
                                                          "    library_path: " VIGIL_STALL_PLUGIN
                                                          "\n"
                                                          "    init_config: {hold_file: \"" +
                                                          hold +
                                                          "\", interval_ms: 20, max_hold_s: 60}\n"
                                                          "load_plugins: [stall]\n");
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules, "-c", config}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  auto ok = await("/healthz", 200, 10s);
  ASSERT_EQ(ok.first, 200) << ok.second << v.diag();

  std::ofstream(hold) << "hold\n";
  auto bad = await("/healthz", 503, 15s);
  ASSERT_EQ(bad.first, 503) << bad.second << v.diag();
  // Each reason crosses the window at its own sample (once a second): the
  // loop stops turning first, the queue's reader and the rules a moment later.
  std::this_thread::sleep_for(3s);
  bad = get(port_, "/healthz");
  ASSERT_EQ(bad.first, 503) << bad.second;
  EXPECT_NE(bad.second.find("the event loop has not turned for"), std::string::npos) << bad.second;
  EXPECT_NE(bad.second.find("source plugin:stall: "), std::string::npos) << bad.second;
  EXPECT_NE(bad.second.find("events arrive and the rule engine has evaluated none"), std::string::npos) << bad.second;
  // The endpoint itself is not stuck: the scrape says unhealthy too.
  auto stuck = scrape();
  if (!skipped_) {
    EXPECT_EQ(value(stuck, "vigil_healthy"), 0);
    EXPECT_GT(value(stuck, "vigil_source_backlog", {{"source", "plugin:stall"}, {"unit", "events"}}), 0);
  }

  ASSERT_EQ(std::remove(hold.c_str()), 0);
  auto good = await("/healthz", 200, 15s);
  EXPECT_EQ(good.first, 200) << good.second << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// 3. Reloads (their failures above all) and the parts that run are in the
//    metrics: a broken configuration on SIGHUP counts a failure and keeps
//    the rules; a fixed one counts a success.
TEST_F(e2eMetrics, ReloadResultsAndPartsAreCounted) {
  const std::string rules = dir_.write("rules.yaml", R"(
- rule: e2e metrics reload
  desc: never fires
  condition: evt.type = execve and proc.name = e2e-never-runs
  output: never
  priority: DEBUG
)");
  const std::string good = webserver_yaml(10);
  const std::string config = dir_.write("vigil.yaml", good);
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules, "-c", config}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  ASSERT_EQ(await("/readyz", 200, 10s).first, 200) << v.diag();
  auto start = scrape();
  if (skipped_) GTEST_SKIP() << "python3-prometheus-client is not installed (scripts/install-deps.sh installs it)";
  EXPECT_EQ(value(start, "vigil_part_enabled", {{"part", "bpf"}}), 1);
  EXPECT_EQ(value(start, "vigil_reloads_total", {{"result", "failure"}}), 0);
  EXPECT_EQ(value(start, "vigil_last_reload_success"), 1);

  dir_.write("vigil.yaml", good + "sensr: {}\n");  // a typo: the reload must fail
  v.signal(SIGHUP);
  ASSERT_TRUE(v.wait_stderr("reload failed")) << v.diag();
  std::vector<Sample> failed;
  for (int i = 0; i < 25; ++i) {
    failed = scrape();
    if (value(failed, "vigil_reloads_total", {{"result", "failure"}}) >= 1) break;
    std::this_thread::sleep_for(200ms);
  }
  // The file watch may reload too (the signal and the change are coalesced or not).
  EXPECT_GE(value(failed, "vigil_reloads_total", {{"result", "failure"}}), 1);
  EXPECT_EQ(value(failed, "vigil_last_reload_success"), 0);
  EXPECT_EQ(value(failed, "vigil_rules_loaded"), 1);
  EXPECT_NE(v.stderr_text().find("vigil.yaml:"), std::string::npos) << v.diag();

  dir_.write("vigil.yaml", good);
  v.signal(SIGHUP);
  ASSERT_TRUE(v.wait_stderr("rules reloaded")) << v.diag();
  std::vector<Sample> fixed;
  for (int i = 0; i < 25; ++i) {
    fixed = scrape();
    if (value(fixed, "vigil_reloads_total", {{"result", "success"}}) >= 1) break;
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_GE(value(fixed, "vigil_reloads_total", {{"result", "success"}}), 1);
  EXPECT_EQ(value(fixed, "vigil_last_reload_success"), 1);
  EXPECT_GT(value(fixed, "vigil_last_reload_timestamp_seconds"), 1.6e9);
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

// 4. The heartbeat (heartbeat.interval_s) reaches an output whose filters
//    take nothing else, from the loop, numbered, with the agent's counts.
TEST_F(e2eMetrics, HeartbeatsReachAnOutputThatFiltersEverythingElse) {
  const std::string rules = dir_.write("rules.yaml", R"(
- rule: e2e heartbeat exec
  desc: never fires
  condition: evt.type = execve and proc.name = e2e-never-runs
  output: never
  priority: DEBUG
)");
  const std::string config = dir_.write("vigil.yaml",
                                        "heartbeat: {interval_s: 1}\n"
                                        "outputs:\n"
                                        "  - type: stdout\n"
                                        "    min_priority: critical\n"
                                        "    rules: {include: [\"Crypto miner command line\"]}\n");
  Vigil v;
  ASSERT_TRUE(v.start({"-r", rules, "-c", config}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  // An exec for the counts to show (a quiet machine may have none).
  Child c = Child::spawn({"/bin/true"});
  ASSERT_EQ(c.wait(), 0);
  auto beats = v.alerts([](const json& a) { return a["rule"] == "vigil heartbeat"; }, 10s);
  for (int i = 0; i < 50 && beats.size() < 3; ++i) {
    std::this_thread::sleep_for(100ms);
    beats = v.alerts([](const json& a) { return a["rule"] == "vigil heartbeat"; });
  }
  ASSERT_GE(beats.size(), 3u) << v.diag();
  const json& b = beats[2];
  EXPECT_EQ(b["priority"], "Informational");
  EXPECT_EQ(b["source"], "vigil");
  EXPECT_EQ(b["tags"], json::array({"heartbeat"}));
  EXPECT_EQ(b["output_fields"]["vigil.heartbeat_seq"], 3);
  EXPECT_EQ(b["output_fields"]["vigil.rules"], 1);
  EXPECT_GT(b["output_fields"]["vigil.events"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

}  // namespace
}  // namespace vigil::e2e
