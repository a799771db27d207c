// The baselines scenario (docs/baselines.md, "False positives on the test
// rigs"): the real `vigil run` with baseline.enabled, the bundled rules and
// rules/baseline/inference_baseline.yaml (scope widened to every container),
// against the benign workloads of the scenario rig in pods of their own: an
// inference server (DNS, a cluster cache, the model hub, GPU nodes, its state
// file), a two-GPU training job, a batch job running shell scripts.
//
//   learn: each workload runs once; `vigil baseline lock --all` locks them;
//   judge: each runs kRepeats more times: the baseline alerts counted are the
//          false positives (target 0), printed as a FIGURES line;
//   attack: a new program, destination and file written in the inference pod
//           each raise their baseline alert.
//
// Needs root and a kernel with BTF (label integration); skipped otherwise.
#include "tests/scenarios/rig.h"

namespace {

constexpr int kRepeats = 10;

const char* const kBaselineRules[] = {
    "Program outside the workload baseline", "Connection outside the workload baseline",
    "File written outside the workload baseline", "GPU class outside the workload baseline",
    "New GPU compute context then connection outside the workload baseline"};

bool is_baseline_rule(const json& a) {
  for (const char* r : kBaselineRules)
    if (a.value("rule", "") == r) return true;
  return false;
}

class BaselineScenario : public Scenario {
 protected:
  static void SetUpTestSuite() {
    g_extra_agent_args = [](const std::string& tmp) {
      fs::create_directories(tmp + "/app");
      std::ofstream(tmp + "/app/state") << "0";
      std::ofstream(tmp + "/app/evil.so") << "0";
      std::ofstream(tmp + "/baseline.yaml")
          << "flight_recorder: {enabled: false}\nbaseline:\n  enabled: true\n  dir: " << tmp
          << "/baseline\n  learn_for_s: 0\n  save_interval_s: 1\n  watch_paths: [" << tmp << "/app/]\n";
      std::ofstream(tmp + "/tuning.yaml") << "- macro: vigil_baseline_scope\n  condition: (vigil_container)\n"
                                             "  override: {condition: replace}\n"
                                             "- list: vigil_baseline_watched_paths\n  items: ["
                                          << tmp << "/app/]\n  override: {items: replace}\n";
      return std::vector<std::string>{"-c", tmp + "/baseline.yaml", "-r", "rules/baseline/inference_baseline.yaml",
                                      "-r", tmp + "/tuning.yaml"};
    };
    Scenario::SetUpTestSuite();
  }

  // The benign workloads of BenignWorkloadsRaiseNothing, in the base-* pods.
  void benign_day() {
    PodRun inf;
    inf.dns = {{"redis.cache.svc.cluster.local", "10.100.4.7"}, {"huggingface.co", "198.51.100.70"}};
    inf.tcp_sinks = {"10.100.4.7:6379", "198.51.100.70:443"};
    inf.argv = {s().tool("vllm"), "serve", "/models/llama-3-8b", "--port", "8000"};
    inf.steps =
        "open:/dev/nvidiactl:rw;open:/dev/nvidia1:rw;open:/dev/nvidia-uvm:rw;alloc:c56f;alloc:c6c0;"
        "control:20800110;dns:redis.cache.svc.cluster.local@10.96.0.10;tcp:10.100.4.7:6379;"
        "send:*1\\r\\n$4\\r\\nPING\\r\\n;dns:huggingface.co@10.96.0.10;tcp:198.51.100.70:443;"
        "send:GET /api/models HTTP/1.1\\r\\nHost: huggingface.co\\r\\n\\r\\n;open:" +
        s().tmp + "/app/state:w";
    EXPECT_EQ(run_in_pod(pod("base-llm-0"), inf).second, 0);

    PodRun tr;
    tr.tcp_sinks = {"10.244.3.18:4444"};
    tr.argv = {s().tool("pt_main_thread"),
               "-m",
               "torch.distributed.run",
               "--nproc_per_node=2",
               "train.py",
               "--optimizer",
               "adamw"};
    tr.steps = "open:/dev/nvidiactl:rw;open:/dev/nvidia0:rw;open:/dev/nvidia1:rw;alloc:c6c0;tcp:10.244.3.18:4444";
    EXPECT_EQ(run_in_pod(pod("base-train-0"), tr).second, 0);

    std::string script = s().tmp + "/etl.sh";
    std::ofstream(script) << "#!/bin/sh\nfor i in 1 2 3; do echo $i; done | /bin/sh -c 'wc -l' > /dev/null\n";
    chmod(script.c_str(), 0755);
    PodRun etl;
    etl.argv = {s().tool("etl")};
    etl.steps = "exec:/bin/sh|" + script;
    EXPECT_EQ(run_in_pod(pod("base-etl-0"), etl).second, 0);
  }

  std::vector<json> baseline_alerts() {
    return s().agent.alerts([](const json& a) {
      if (!is_baseline_rule(a) || !a.contains("output_fields")) return false;
      const json pn = a["output_fields"].value("k8s.pod.name", json());
      return pn.is_string() && pn.get<std::string>().rfind("base-", 0) == 0;
    });
  }

  // `vigil baseline ARGS...`: exit code and output.
  std::pair<int, std::string> baseline_cmd(const std::vector<std::string>& args) {
    VigilProcess cli(VIGIL_BINARY);
    if (!cli.start_command("baseline", args)) return {-1, ""};
    const int st = cli.wait_exit(30s);
    return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, cli.stdout_text() + cli.stderr_text()};
  }
};

TEST_F(BaselineScenario, BenignWorkloadsStayInTheirBaselinesAndAttacksDoNot) {
  const std::string dir = s().tmp + "/baseline";
  benign_day();
  // Saved within a second or two (save_interval_s: 1): the three workloads.
  std::string listed;
  for (int i = 0; i < 50; ++i) {
    listed = baseline_cmd({"list", "--dir", dir}).second;
    if (listed.find("docker.io/vllm/vllm-openai:v0.6.4\tlearning") != std::string::npos &&
        listed.find("nvcr.io/nvidia/pytorch:24.09-py3\tlearning") != std::string::npos &&
        listed.find("registry.example.com/data/etl:8\tlearning") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(200ms);
  }
  auto [rc, out] = baseline_cmd({"lock", "--dir", dir, "--all"});
  ASSERT_EQ(rc, 0) << out;
  ASSERT_TRUE(s().agent.wait_stderr("baseline: locked docker.io/vllm/vllm-openai:v0.6.4 (command)", 1, 10s))
      << listed << out << s().agent.stderr_text();
  ASSERT_TRUE(s().agent.wait_stderr("baseline: locked nvcr.io/nvidia/pytorch:24.09-py3 (command)", 1, 10s));
  ASSERT_TRUE(s().agent.wait_stderr("baseline: locked registry.example.com/data/etl:8 (command)", 1, 10s));

  for (int i = 0; i < kRepeats; ++i) benign_day();

  // The attacks, after the benign runs: their alerts mark that the pipeline
  // has judged everything before them.
  PodRun atk;
  atk.tcp_sinks = {"203.0.113.50:443"};
  atk.argv = {s().tool("vllm"), "serve", "/models/llama-3-8b", "--port", "8000"};
  atk.steps = "tcp:203.0.113.50:443;open:" + s().tmp + "/app/evil.so:w;exec:/bin/sh|-c|true";
  ASSERT_EQ(run_in_pod(pod("base-llm-0"), atk).second, 0);
  for (const char* rule : {"Connection outside the workload baseline", "File written outside the workload baseline",
                           "Program outside the workload baseline"}) {
    EXPECT_FALSE(alerts_for(rule, "base-llm-0", 20s).empty()) << rule << "\n" << s().agent.stderr_text();
  }
  std::this_thread::sleep_for(2s);
  std::vector<json> benign, attacks;
  for (const json& a : baseline_alerts()) {
    const json& f = a["output_fields"];
    const std::string fd = f.value("fd.name", "");
    const bool attack = f.value("k8s.pod.name", "") == "base-llm-0" &&
                        (fd.find("->203.0.113.50:443") != std::string::npos || fd == s().tmp + "/app/evil.so" ||
                         f.value("proc.name", "") == "sh");
    (attack ? attacks : benign).push_back(a);
  }
  std::printf(
      "FIGURES baselines: %d benign runs of 3 workloads after learning: %zu baseline alerts; "
      "attack variants: %zu alerts\n",
      kRepeats, benign.size(), attacks.size());
  EXPECT_TRUE(benign.empty()) << "benign workloads left their baselines:\n" << dump(benign);
  EXPECT_GE(attacks.size(), 3u) << dump(attacks);
}

}  // namespace
