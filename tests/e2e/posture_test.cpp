// End-to-end test of the GPU security posture (issue 24): the real `vigil run`
// over a stand-in host root (posture.host_root) that holds a driver's
// /proc/driver/nvidia/version and params, a dpkg status naming the NVIDIA
// Container Toolkit and the toolkit's config.toml. The ready line carries the
// posture, the bundled posture rules alert, /metrics has the
// vigil_gpu_posture_* families, and a change of a file gives a new report.
// With the nvml plugin loaded over the stand-in NVML of
// tests/plugins/nvml/fake_nvml.cpp, the GPUs' ECC joins the posture: in the
// ready line, the metrics and the reports, and a change of a GPU's mode (the
// table the stand-in re-reads every sample) is a new report.
//
// Needs root and a kernel with BTF (label integration); skipped with a message otherwise.
#include <sys/socket.h>
#include <sys/stat.h>

#include <string>

#include <gtest/gtest.h>
#include <httplib.h>

#include "tests/e2e/e2e_util.h"
#include "tests/support/net.h"

namespace vigil::e2e {
namespace {

constexpr const char* kVulnerableRule = "Vulnerable NVIDIA driver or container toolkit";
constexpr const char* kProfilingRule = "GPU profiling counters open to all users";
constexpr const char* kEccRule = "GPU memory ECC off";

std::string dpkg_status(const std::string& version) {
  return "Package: nvidia-container-toolkit\nStatus: install ok installed\nVersion: " + version +
         "-1\nDepends: nvidia-container-toolkit-base\n\n"
         "Package: libc6\nStatus: install ok installed\nVersion: 2.36-9+deb12u10\n";
}

std::string scrape(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(2);
  c.set_read_timeout(5);
  auto r = c.Get("/metrics");
  return r && r->status == 200 ? r->body : std::string();
}

// Scrapes until `line` is in the text (or the time is up); the last scrape.
std::string await_metric(int port, const std::string& line, std::chrono::seconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  std::string body;
  do {
    body = scrape(port);
    if (body.find(line) != std::string::npos) break;
    std::this_thread::sleep_for(200ms);
  } while (std::chrono::steady_clock::now() < until);
  return body;
}

TEST(e2ePosture, ReadyLineAlertsMetricsAndAChangedFile) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string root = dir.path() + "/host";
  dir.write("host/proc/driver/nvidia/version",
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
            "(dvs-builder@U22-I3-AF03-09-1)  Tue Sep 23 09:25:54 UTC 2025\nGCC version:  gcc version 12.2.0\n");
  dir.write("host/proc/driver/nvidia/params", "ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 0\n");
  dir.write("host/var/lib/dpkg/status", dpkg_status("1.17.7"));
  dir.write("host/etc/nvidia-container-runtime/config.toml",
            "accept-nvidia-visible-devices-envvar-when-unprivileged = false\n"
            "[nvidia-container-runtime]\nruntimes = [\"docker-runc\", \"runc\", \"crun\"]\n");
  const std::string runc = dir.write("host/usr/bin/runc", "#!/bin/false\n");
  ASSERT_EQ(::chmod(runc.c_str(), 0755), 0);
  const int port = support::free_port(SOCK_STREAM);
  const std::string config = dir.write(
      "vigil.yaml", "posture: {host_root: " + root +
                        ", interval_s: 1}\nwebserver: {enabled: true, listen: \"127.0.0.1:" + std::to_string(port) +
                        "\"}\nstate_dir: " + dir.path() + "/state\n");

  Vigil v;
  ASSERT_TRUE(v.start({"-r", std::string(VIGIL_SOURCE_ROOT) + "/rules/vigil_rules.yaml", "-r",
                       std::string(VIGIL_SOURCE_ROOT) + "/rules/vigil_rules_gpu_posture.yaml", "-c", config}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  EXPECT_TRUE(v.wait_stderr(
      "posture: driver 580.95.05, toolkit 1.17.7 (CVE-2025-23266, CVE-2025-23267, CVE-2026-24260), profiling open "
      "to all users, envvar refused from unprivileged, cuda-compat hook on, runtime runc, ECC unknown",
      1, 1s))
      << v.diag();

  // One alert per rule for the report at start.
  auto vulnerable = v.alerts([](const json& a) { return a["rule"] == kVulnerableRule; }, 20s);
  ASSERT_EQ(vulnerable.size(), 1u) << v.diag();
  EXPECT_EQ(field(vulnerable[0], "posture.vulnerable"), "CVE-2025-23266,CVE-2025-23267,CVE-2026-24260");
  EXPECT_EQ(field(vulnerable[0], "posture.toolkit_version"), "1.17.7");
  EXPECT_EQ(vulnerable[0]["tags"][0], "gpu_posture");
  ASSERT_EQ(v.alerts([](const json& a) { return a["rule"] == kProfilingRule; }, 5s).size(), 1u) << v.diag();
  EXPECT_TRUE(v.alerts([](const json& a) {
                 return a["rule"] == "NVIDIA_VISIBLE_DEVICES accepted from unprivileged containers";
               }).empty());

  std::string m = await_metric(port, "vigil_gpu_posture_info{", 10s);
  EXPECT_NE(m.find("vigil_gpu_posture_info{driver=\"580.95.05\",toolkit=\"1.17.7\",runtime=\"runc\"} 1"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("vigil_gpu_posture_vulnerable{cve=\"CVE-2025-23266\",component=\"toolkit\"} 1"), std::string::npos)
      << m;
  EXPECT_NE(m.find("vigil_gpu_posture_vulnerabilities 3"), std::string::npos) << m;
  EXPECT_NE(m.find("vigil_gpu_posture_setting{setting=\"profiling_admin_only\"} 0"), std::string::npos) << m;
  EXPECT_NE(m.find("vigil_gpu_posture_setting{setting=\"accept_envvar\"} 0"), std::string::npos) << m;

  // An upgrade of the toolkit: a new report, a new alert with the shorter list,
  // and no second profiling alert (that setting did not change).
  dir.write("host/var/lib/dpkg/status", dpkg_status("1.17.8"));
  auto after = v.alerts(
      [](const json& a) { return a["rule"] == kVulnerableRule && field(a, "posture.vulnerable") == "CVE-2026-24260"; },
      20s);
  ASSERT_EQ(after.size(), 1u) << v.diag();
  EXPECT_EQ(field(after[0], "posture.toolkit_version"), "1.17.8");
  m = await_metric(port, "vigil_gpu_posture_vulnerabilities 1", 10s);
  EXPECT_NE(m.find("vigil_gpu_posture_info{driver=\"580.95.05\",toolkit=\"1.17.8\",runtime=\"runc\"} 1"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.find("CVE-2025-23266"), std::string::npos) << m;
  EXPECT_EQ(v.alerts([](const json& a) { return a["rule"] == kProfilingRule; }).size(), 1u);
  EXPECT_EQ(v.alerts([](const json& a) { return a["rule"] == kVulnerableRule; }).size(), 2u);
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

TEST(e2ePosture, EccFromTheNvmlPlugin) {
  VIGIL_E2E_REQUIRE_ROOT();
#ifndef VIGIL_FAKE_NVML
  GTEST_SKIP() << "the nvml plugin is not built (VIGIL_BUILD_PLUGINS off)";
#else
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  dir.mkdirs("empty");
  // GPU 0 has ECC on; GPU 1 has it off, and on after its next reboot.
  const std::string gpu0 = "device 0 uuid=GPU-e2e0ecc0-0000-4000-8000-000000000000 minor=0 pci=00000000:3B:00.0 ";
  const std::string gpu1 = "device 1 uuid=GPU-e2e1ecc1-1111-4111-8111-111111111111 minor=1 pci=00000000:86:00.0 ";
  const std::string table = dir.write("nvml_table", gpu0 + "ecc=on\n" + gpu1 + "ecc=off ecc_pending=on\n");
  const int port = support::free_port(SOCK_STREAM);
  const std::string config =
      dir.write("vigil.yaml", "posture: {host_root: " + dir.path() + "/empty, interval_s: 1}\n" +
                                  "webserver: {enabled: true, listen: \"127.0.0.1:" + std::to_string(port) + "\"}\n" +
                                  "state_dir: " + dir.path() + "/state\n" +
                                  "plugins:\n  - name: nvml\n    library_path: libvigil_nvml.so\n"
                                  "    init_config: {nvml_library: " VIGIL_FAKE_NVML
                                  ", interval: 200ms}\n"
                                  "load_plugins: [nvml]\n");
  Vigil v;
  ASSERT_TRUE(v.start({"-r", std::string(VIGIL_SOURCE_ROOT) + "/rules/vigil_rules.yaml", "-r",
                       std::string(VIGIL_SOURCE_ROOT) + "/rules/vigil_rules_gpu_posture.yaml", "-c", config},
                      {{"VIGIL_FAKE_NVML_TABLE", table}}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  // The ready line waited for the plugin's first sample.
  EXPECT_TRUE(v.wait_stderr("runtime unknown, ECC mixed (on: GPU 0; off: GPU 1), GPU 1 on after reboot", 1, 1s))
      << v.diag();

  auto at_start = v.alerts([](const json& a) { return a["rule"] == kEccRule; }, 20s);
  ASSERT_EQ(at_start.size(), 1u) << v.diag();
  EXPECT_EQ(field(at_start[0], "posture.ecc"), "mixed");
  EXPECT_EQ(field(at_start[0], "posture.ecc_pending"), "true");
  EXPECT_EQ(at_start[0]["output_fields"]["posture.ecc_gpus"],
            json::array({"0:GPU-e2e0ecc0-0000-4000-8000-000000000000:on",
                         "1:GPU-e2e1ecc1-1111-4111-8111-111111111111:off->on"}))
      << at_start[0].dump();

  std::string m = await_metric(port, "vigil_gpu_posture_ecc{", 10s);
  EXPECT_NE(m.find("vigil_gpu_posture_ecc{gpu=\"0\",uuid=\"GPU-e2e0ecc0-0000-4000-8000-000000000000\",current=\"on\","
                   "pending=\"on\"} 1"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("vigil_gpu_posture_ecc{gpu=\"1\",uuid=\"GPU-e2e1ecc1-1111-4111-8111-111111111111\",current=\"off\","
                   "pending=\"on\"} 1"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("vigil_gpu_posture_setting{setting=\"ecc\"} 0"), std::string::npos) << m;

  // GPU 1 rebooted with ECC on: a report, no alert (every GPU is on).
  dir.write("nvml_table", gpu0 + "ecc=on\n" + gpu1 + "ecc=on\n");
  m = await_metric(port, "vigil_gpu_posture_setting{setting=\"ecc\"} 1", 10s);
  EXPECT_NE(m.find("vigil_gpu_posture_setting{setting=\"ecc\"} 1"), std::string::npos) << m;
  EXPECT_NE(m.find("current=\"on\",pending=\"on\"} 1"), std::string::npos) << m;
  EXPECT_EQ(m.find("current=\"off\""), std::string::npos) << m;

  // Then ECC off on GPU 0 (as a root user's nvidia-smi -e 0 and a reboot
  // would leave it): a report, and the rule fires again.
  dir.write("nvml_table", gpu0 + "ecc=off\n" + gpu1 + "ecc=on\n");
  auto off = v.alerts(
      [](const json& a) {
        return a["rule"] == kEccRule && field(a, "posture.ecc") == "mixed" &&
               field(a, "posture.ecc_pending") == "false";
      },
      20s);
  ASSERT_EQ(off.size(), 1u) << v.diag();
  EXPECT_EQ(v.alerts([](const json& a) { return a["rule"] == kEccRule; }).size(), 2u) << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
#endif
}

TEST(e2ePosture, AnEmptyHostRootIsUnknownNotAnError) {
  VIGIL_E2E_REQUIRE_ROOT();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  dir.mkdirs("empty");
  const std::string config =
      dir.write("vigil.yaml", "posture: {host_root: " + dir.path() + "/empty}\nstate_dir: " + dir.path() + "/state\n");
  Vigil v;
  ASSERT_TRUE(v.start({"-r", std::string(VIGIL_SOURCE_ROOT) + "/rules/vigil_rules.yaml", "-r",
                       std::string(VIGIL_SOURCE_ROOT) + "/rules/vigil_rules_gpu_posture.yaml", "-c", config}));
  ASSERT_TRUE(v.wait_ready()) << v.diag();
  EXPECT_TRUE(v.wait_stderr("posture: driver unknown, toolkit unknown, profiling unknown", 1, 1s)) << v.diag();
  std::this_thread::sleep_for(1s);
  EXPECT_TRUE(v.alerts([](const json& a) { return a["tags"][0] == "gpu_posture"; }).empty()) << v.diag();
  EXPECT_EQ(v.stop(), 0) << v.diag();
}

}  // namespace
}  // namespace vigil::e2e
