// End-to-end test of the nvml plugin in `vigil run` (issue 13, "Done when":
// `vigil run` with the plugins:/load_plugins: YAML loads nvml and alerts on
// the stand-in case).
//
// The real vigil binary loads libvigil_nvml.so by its bare name from the
// configuration; the plugin dlopens the stand-in NVML of
// tests/plugins/nvml/fake_nvml.cpp, which reports the processes of a table
// the test writes ($VIGIL_FAKE_NVML_TABLE, re-read at every sample). The
// Kubernetes API stand-in serves pod ml/c with one GPU, and a process of the
// test runs in that pod's kubelet-style container cgroup. The bundled rules
// (rules/ and plugins/nvml/rules/nvml_rules.yaml) decide.
//
// Needs root and a kernel with BTF (label integration); skipped with a message otherwise.
#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace vigil::e2e {
namespace {

const std::string kRuleOutside = "GPU used outside container allocation";
const std::string kUuidOther = "GPU-e2e00000-0000-4000-8000-000000000000";
const std::string kUuidGiven = "GPU-e2e11111-1111-4111-8111-111111111111";
const std::string kPciOther = "00000000:3B:00.0";
const std::string kPciGiven = "00000000:86:00.0";
constexpr unsigned long long kPodMem = 1073741824ULL;    // 1 GiB on the GPU it was not given
constexpr unsigned long long kGivenMem = 2147483648ULL;  // 2 GiB on its own GPU
constexpr unsigned long long kHostMem = 536870912ULL;    // 512 MiB: the host process

// The minor vigil resolves the GPU index `index` of NVIDIA_VISIBLE_DEVICES
// to. vigil run reads the node's GPUs from /proc/driver/nvidia/gpus (one
// directory per PCI address, NVML's order) and cannot be pointed elsewhere;
// on a node without the driver an index is taken as the minor itself.
// nullopt when the driver lists GPUs but not that many (vigil cannot resolve
// the index then).
std::optional<unsigned> minor_of_gpu_index(unsigned index) {
  std::vector<std::string> pcis;
  if (DIR* d = ::opendir("/proc/driver/nvidia/gpus")) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") pcis.push_back(n);
    }
    ::closedir(d);
  }
  if (pcis.empty()) return index;
  std::sort(pcis.begin(), pcis.end());
  if (index >= pcis.size()) return std::nullopt;
  std::ifstream in("/proc/driver/nvidia/gpus/" + pcis[index] + "/information");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Device Minor:", 0) == 0) return static_cast<unsigned>(std::stoul(line.substr(13)));
  }
  return std::nullopt;
}

// The `ready` log line ("" when there is none).
std::string ready_line(const std::string& log) {
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find(" ready: ") != std::string::npos) return line;
  return "";
}

// The configuration of the issue: the plugin by its bare library name (found
// in the build tree's plugins/ beside the vigil binary), sampling every 200 ms.
std::string nvml_config(const std::string& nvml_library) {
  return "plugins:\n"
         "  - name: nvml\n"
         "    library_path: libvigil_nvml.so\n"
         "    init_config: {nvml_library: " +
         nvml_library +
         ", interval: 200ms}\n"
         "load_plugins: [nvml]\n";
}

class e2eNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    VIGIL_E2E_REQUIRE_ROOT();
    ASSERT_TRUE(dir_.ok());
  }

  // vigil's own rules and the nvml plugin's, which use their macros and lists.
  static std::vector<std::string> rule_args() {
    return {"-r", std::string(VIGIL_SOURCE_ROOT) + "/rules", "-r",
            std::string(VIGIL_SOURCE_ROOT) + "/plugins/nvml/rules/nvml_rules.yaml"};
  }

  TempDir dir_;
};

// 1. A process of pod ml/c holds memory and computes on the GPU the pod was
//    not given: one alert per sample, with its container, pod and NVML
//    numbers. The same process on the pod's own GPU, and a host process on
//    the other GPU, give none. The run's capture replays to the same alerts.
TEST_F(e2eNvml, ProcessOnAGpuItsPodWasNotGivenAlertsAndReplays) {
  // Pod c is given GPU index 1; NVML's GPU 0 is the one it was not given.
  const std::optional<unsigned> given = minor_of_gpu_index(1);
  if (!given)
    GTEST_SKIP() << "this node's NVIDIA driver lists fewer than two GPUs in /proc/driver/nvidia/gpus, "
                    "so vigil cannot resolve the stand-in pod's GPU index 1";
  const unsigned given_minor = *given;
  const unsigned other_minor = given_minor == 0 ? 1 : 0;
  K8sStub api;
  if (std::string why = api.start(dir_, "1"); !why.empty()) GTEST_SKIP() << why;
  PodCgroup cgroup(K8sStub::kStablePodUid, K8sStub::stable_container_id());
  ASSERT_TRUE(cgroup.ok()) << cgroup.error();

  const std::string devices = "device 0 uuid=" + kUuidOther + " minor=" + std::to_string(other_minor) +
                              " pci=" + kPciOther +
                              " total=85899345920 used=1610612736\n"
                              "device 1 uuid=" +
                              kUuidGiven + " minor=" + std::to_string(given_minor) + " pci=" + kPciGiven +
                              " total=85899345920 used=2147483648\n";
  // Until the processes exist, NVML sees two idle GPUs.
  const std::string table = dir_.write("nvml_table", "# two idle GPUs\n" + devices);
  const std::string config = dir_.write("vigil.yaml", nvml_config(VIGIL_FAKE_NVML));
  const std::string capture = dir_.path() + "/run.vcap";

  const std::string pod_name = unique_name("gpu");
  const std::string pod_path = dir_.install(VIGIL_E2E_ACTOR, pod_name);
  const std::string host_name = unique_name("hgpu");
  const std::string host_path = dir_.install(VIGIL_E2E_ACTOR, host_name);
  ASSERT_FALSE(pod_path.empty());
  ASSERT_FALSE(host_path.empty());
  // A rule of the test's own tells when vigil has seen the two processes'
  // execs, before NVML reports them.
  const std::string exec_rules = dir_.write("exec.yaml", R"(
- rule: e2e nvml process started
  desc: one of the test's GPU processes ran
  condition: evt.type = execve and proc.name in (")" + pod_name +
                                                             R"(", ")" + host_name + R"(")
  output: started (proc.pid=%proc.pid proc.name=%proc.name container.id=%container.id)
  priority: NOTICE
)");

  std::vector<std::string> args = {
      "-c", config, "-o", "flight_recorder.enabled=false", "--format", "json", "--capture", capture, "-r", exec_rules};
  for (const auto& a : rule_args()) args.push_back(a);
  for (const auto& a : api.vigil_args()) args.push_back(a);

  std::vector<json> live;
  pid_t pod_pid = 0, host_pid = 0;
  {
    Vigil v;
    ASSERT_TRUE(v.start(args, {{"VIGIL_FAKE_NVML_TABLE", table}}));
    ASSERT_TRUE(v.wait_ready()) << "vigil did not get ready" << v.diag();
    EXPECT_NE(ready_line(v.stderr_text()).find("plugin:nvml"), std::string::npos)
        << "the ready line does not list plugin:nvml" << v.diag();
    EXPECT_EQ(v.stderr_count("NVML unavailable"), 0) << v.diag();
    ASSERT_TRUE(api.wait_script_done()) << "the pod watcher did not get through the API script; requests:\n"
                                        << api.requests() << v.diag();
    std::this_thread::sleep_for(1s);  // the watcher's last page drained into the state

    // The pod's process and a host process, both waiting on their stdin.
    SpawnOptions in_pod;
    in_pod.cgroup = cgroup.scope();
    in_pod.stdin_pipe = true;
    Child pod_proc = Child::spawn({pod_path, "wait"}, in_pod);
    SpawnOptions on_host;
    on_host.stdin_pipe = true;
    Child host_proc = Child::spawn({host_path, "wait"}, on_host);
    pod_pid = pod_proc.pid();
    host_pid = host_proc.pid();
    ASSERT_GT(pod_pid, 0);
    ASSERT_GT(host_pid, 0);
    ASSERT_FALSE(v.alerts_where("e2e nvml process started", "proc.pid", pod_pid, 20s).empty())
        << "vigil did not see the pod process's exec" << v.diag();
    ASSERT_FALSE(v.alerts_where("e2e nvml process started", "proc.pid", host_pid, 20s).empty())
        << "vigil did not see the host process's exec" << v.diag();

    // Now NVML reports: the pod's process on GPU 0 (not given) and on GPU 1
    // (its own), and the host process on GPU 0. Utilisation samples are
    // taken once (by the first plugin sample after this write); the memory
    // stays, so every sample after that holds the condition.
    const std::string p = std::to_string(pod_pid), h = std::to_string(host_pid);
    dir_.write("nvml_table", devices + "process 0 pid=" + p + " mem=" + std::to_string(kPodMem) +
                                 "\n"
                                 "util 0 pid=" +
                                 p +
                                 " ts=1000 sm=87 mem=40\n"
                                 "process 1 pid=" +
                                 p + " mem=" + std::to_string(kGivenMem) +
                                 "\n"
                                 "util 1 pid=" +
                                 p +
                                 " ts=1000 sm=60 mem=20\n"
                                 "process 0 pid=" +
                                 h + " mem=" + std::to_string(kHostMem) +
                                 "\n"
                                 "util 0 pid=" +
                                 h + " ts=1000 sm=9 mem=5\n");

    auto got = v.alerts_where(kRuleOutside, "proc.pid", pod_pid, 20s);
    ASSERT_FALSE(got.empty()) << "no '" << kRuleOutside << "' alert for the pod's process" << v.diag();
    const json& a = got.front();
    EXPECT_EQ(a.value("priority", ""), "Error") << a.dump();
    EXPECT_EQ(a.value("source", ""), "nvml") << a.dump();
    EXPECT_NE(a.value("tags", json::array()).dump().find("gpu_device_access"), std::string::npos) << a.dump();
    EXPECT_EQ(field(a, "gpu.minor"), std::to_string(other_minor)) << a.dump();
    EXPECT_EQ(field(a, "nvml.device.uuid"), kUuidOther) << a.dump();
    EXPECT_EQ(field(a, "nvml.device.pci_bus_id"), kPciOther) << a.dump();
    EXPECT_EQ(field(a, "nvml.memory_used"), std::to_string(kPodMem)) << a.dump();
    EXPECT_EQ(field(a, "gpu.visible_devices"), "1") << a.dump();
    EXPECT_EQ(field(a, "gpu.limit"), "1") << a.dump();
    EXPECT_EQ(a.at("output_fields").value("gpu.allocated", json()), json::array({"1"})) << a.dump();
    EXPECT_EQ(field(a, "proc.name"), pod_name) << a.dump();
    EXPECT_EQ(field(a, "proc.cmdline"), pod_name + " wait") << a.dump();
    EXPECT_EQ(field(a, "container.id"), K8sStub::stable_container_id().substr(0, 12)) << a.dump();
    EXPECT_EQ(field(a, "k8s.pod.name"), K8sStub::kStablePodName) << a.dump();
    EXPECT_EQ(field(a, "k8s.ns.name"), K8sStub::kStablePodNamespace) << a.dump();

    // The condition holds on every sample: wait for three, so the samples
    // that also carried the two controls have gone through the rules.
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (v.alerts_where(kRuleOutside, "proc.pid", pod_pid).size() < 3 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(100ms);
    ASSERT_GE(v.alerts_where(kRuleOutside, "proc.pid", pod_pid).size(), 3u)
        << "the condition holds on every 200 ms sample" << v.diag();

    pod_proc.poke();
    host_proc.poke();
    EXPECT_EQ(pod_proc.wait(), 0);
    EXPECT_EQ(host_proc.wait(), 0);
    EXPECT_EQ(v.stop(), 0) << v.diag();

    live = v.alerts([](const json& x) { return x.value("rule", "") == kRuleOutside; });
    bool saw_util = false;
    for (const json& x : live) {
      // Only the pod's process, only on the GPU it was not given: neither
      // its own GPU nor the host process alerts.
      EXPECT_EQ(field(x, "proc.pid"), std::to_string(pod_pid)) << x.dump();
      EXPECT_EQ(field(x, "gpu.minor"), std::to_string(other_minor)) << x.dump();
      EXPECT_EQ(field(x, "nvml.memory_used"), std::to_string(kPodMem)) << x.dump();
      if (field(x, "nvml.sm_util") == "87") saw_util = true;
    }
    // The first sample after the table was written read the utilisation.
    EXPECT_TRUE(saw_util) << "no alert carries nvml.sm_util=87" << v.diag();
  }

  // The capture of the run replays, with the same plugin configuration and
  // without NVML, to the same alerts (same uuid, time and output fields).
  ASSERT_FALSE(live.empty());
  std::vector<std::string> rargs = {capture, "-c", config};
  for (const auto& a : rule_args()) rargs.push_back(a);
  Vigil r;
  ASSERT_TRUE(r.start_command("replay", rargs));
  const int st = r.wait_exit(60s);
  ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << Child::what(st) << r.diag();
  auto replayed = r.alerts([](const json& x) { return x.value("rule", "") == kRuleOutside; });
  std::map<std::string, json> by_uuid;
  for (const json& x : replayed) by_uuid[x.value("uuid", "")] = x;
  EXPECT_EQ(replayed.size(), live.size()) << r.diag();
  EXPECT_EQ(by_uuid.size(), replayed.size()) << "alert uuids are unique" << r.diag();
  for (const json& l : live) {
    auto it = by_uuid.find(l.value("uuid", ""));
    ASSERT_NE(it, by_uuid.end()) << "live alert not replayed: " << l.dump() << r.diag();
    EXPECT_EQ(it->second["output_fields"], l["output_fields"]) << "live: " << l.dump();
    EXPECT_EQ(it->second.value("time", ""), l.value("time", "")) << "live: " << l.dump();
  }
}

// 2. A node without NVML: nvml_library names a file that does not exist.
//    vigil gets ready all the same, logs one warning naming the library, and
//    stops with exit 0.
TEST_F(e2eNvml, MissingNvmlLibraryWarnsOnceAndRuns) {
  const std::string missing = dir_.path() + "/no-such-libnvidia-ml.so.1";
  const std::string config = dir_.write("vigil.yaml", nvml_config(missing));
  std::vector<std::string> args = {"-c", config, "-o", "flight_recorder.enabled=false", "--format", "json"};
  for (const auto& a : rule_args()) args.push_back(a);
  Vigil v;
  ASSERT_TRUE(v.start(args));
  ASSERT_TRUE(v.wait_ready()) << "vigil did not get ready without NVML" << v.diag();
  EXPECT_NE(ready_line(v.stderr_text()).find("plugin:nvml"), std::string::npos)
      << "the ready line does not list plugin:nvml" << v.diag();
  ASSERT_TRUE(v.wait_stderr("NVML unavailable", 1, 10s)) << "no warning about the missing NVML" << v.diag();
  std::this_thread::sleep_for(1s);  // five intervals: no second warning
  EXPECT_EQ(v.stderr_count("NVML unavailable"), 1) << v.diag();
  std::string warning;
  std::istringstream log(v.stderr_text());
  for (std::string line; std::getline(log, line);)
    if (line.find("NVML unavailable") != std::string::npos) warning = line;
  EXPECT_NE(warning.find(missing), std::string::npos) << "the warning does not name the library: " << warning;
  EXPECT_NE(warning.find("warn"), std::string::npos) << "not logged as a warning: " << warning;
  EXPECT_FALSE(v.exited()) << "vigil stopped when the plugin's source ended" << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
  EXPECT_TRUE(v.alerts([](const json& x) { return x.value("source", "") == "nvml"; }).empty()) << v.diag();
}

}  // namespace
}  // namespace vigil::e2e
