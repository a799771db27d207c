#include "engine/posture/posture.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/support/temp_dir.h"

namespace vigil::posture {
namespace {

using support::TempDir;

constexpr const char* kProprietary =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
constexpr const char* kOpen =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
    "(dvs-builder@U22-I3-AF03-09-1)  Tue Sep 23 09:25:54 UTC 2025\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1)\n";

constexpr const char* kDpkg =
    "Package: libc6\n"
    "Status: install ok installed\n"
    "Version: 2.36-9+deb12u10\n"
    "Description: GNU C Library\n"
    " Contains the standard libraries.\n"
    "\n"
    "Package: nvidia-container-toolkit-base\n"
    "Status: install ok installed\n"
    "Version: 1.17.7-1\n"
    "\n"
    "Package: nvidia-container-toolkit\n"
    "Status: install ok installed\n"
    "Priority: optional\n"
    "Version: 1.17.7-1\n"
    "Depends: nvidia-container-toolkit-base (= 1.17.7-1)\n";

constexpr const char* kConfig =
    "#accept-nvidia-visible-devices-as-volume-mounts = false\n"
    "accept-nvidia-visible-devices-envvar-when-unprivileged = true\n"
    "disable-require = false\n"
    "supported-driver-capabilities = \"compat32,compute,display,graphics,ngx,utility,video\"\n"
    "\n"
    "[nvidia-container-cli]\n"
    "environment = []\n"
    "ldconfig = \"@/sbin/ldconfig.real\"\n"
    "\n"
    "[nvidia-container-runtime]\n"
    "log-level = \"info\"\n"
    "mode = \"auto\"\n"
    "runtimes = [\"docker-runc\", \"runc\", \"crun\"]\n"
    "\n"
    "[features]\n"
    "disable-cuda-compat-lib-hook = false  # the interim NVIDIAScape mitigation\n";

TEST(PostureParse, DriverVersionFromBothModuleFlavours) {
  EXPECT_EQ(parse_driver_version(kProprietary), "535.183.01");
  EXPECT_EQ(parse_driver_version(kOpen), "580.95.05");
  EXPECT_EQ(parse_module_version("580.95.05\n"), "580.95.05");
}

TEST(PostureParse, DriverVersionFromHostileText) {
  EXPECT_EQ(parse_driver_version(""), "");
  EXPECT_EQ(parse_driver_version("NVRM version:"), "");  // truncated
  EXPECT_EQ(parse_driver_version("NVRM version: NVIDIA UNIX x86_64 Ke"), "");
  EXPECT_EQ(parse_driver_version("GCC version: 12.2.0\n"), "");                // not the NVRM line
  EXPECT_EQ(parse_driver_version("NVRM version: x 580.95.05\x01\xff 1"), "");  // a token with junk
  EXPECT_EQ(parse_driver_version(std::string("NVRM version: ") + std::string(100000, '9') + ".1"), "");
  EXPECT_EQ(parse_driver_version(std::string("NVRM\0version: 580.1", 19)), "");
  EXPECT_EQ(parse_module_version("580.95.05; rm -rf /\n"), "");
  EXPECT_EQ(parse_module_version(""), "");
}

TEST(PostureParse, ProfilingAdminOnly) {
  EXPECT_EQ(parse_profiling_admin_only("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\nEnableMSI: 1\n"), 1);
  EXPECT_EQ(parse_profiling_admin_only("RmProfilingAdminOnly: 0\n"), 0);
  EXPECT_EQ(parse_profiling_admin_only("RmProfilingAdminOnly: 2\n"), -1);
  EXPECT_EQ(parse_profiling_admin_only("RmProfilingAdminOnly:"), -1);
  EXPECT_EQ(parse_profiling_admin_only("XRmProfilingAdminOnly: 0\n"), -1);
  EXPECT_EQ(parse_profiling_admin_only(""), -1);
}

TEST(PostureParse, ToolkitConfigKeys) {
  ToolkitConfig c = parse_toolkit_config(kConfig);
  EXPECT_EQ(c.accept_envvar, 1);
  EXPECT_EQ(c.disable_cuda_compat_hook, 0);
  EXPECT_EQ(c.runtimes, (std::vector<std::string>{"docker-runc", "runc", "crun"}));
}

TEST(PostureParse, ToolkitConfigKeysOnlyInTheirTable) {
  // The key under another table is not the top-level setting.
  ToolkitConfig c = parse_toolkit_config(
      "[nvidia-container-cli]\naccept-nvidia-visible-devices-envvar-when-unprivileged = false\n"
      "[features]\ndisable-cuda-compat-lib-hook = true\n");
  EXPECT_EQ(c.accept_envvar, -1);
  EXPECT_EQ(c.disable_cuda_compat_hook, 1);
  ToolkitConfig dotted = parse_toolkit_config("features.disable-cuda-compat-lib-hook = true\n");
  EXPECT_EQ(dotted.disable_cuda_compat_hook, 1);
}

TEST(PostureParse, ToolkitConfigHostileText) {
  ToolkitConfig c = parse_toolkit_config(
      "accept-nvidia-visible-devices-envvar-when-unprivileged = \"false\"\n"  // a string, not a boolean
      "[nvidia-container-runtime\n"                                           // an unclosed header
      "runtimes = [\"runc\"]\n"
      "[nvidia-container-runtime]\n"
      "runtimes = [\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\", \"h\", \"i\", \"j\"]\n");
  EXPECT_EQ(c.accept_envvar, -1);
  EXPECT_EQ(c.runtimes.size(), 8u);  // bounded
  ToolkitConfig u = parse_toolkit_config("[nvidia-container-runtime]\nruntimes = [\"runc\", \"unterminated\n");
  EXPECT_TRUE(u.runtimes.empty());  // an unterminated array is not read at all
  ToolkitConfig e = parse_toolkit_config(std::string(1 << 16, '['));
  EXPECT_EQ(e.accept_envvar, -1);
  EXPECT_TRUE(e.runtimes.empty());
}

TEST(PostureParse, DpkgStatusPicksTheInstalledToolkit) {
  DpkgStatusReader r({"nvidia-container-toolkit", "nvidia-container-toolkit-base"});
  std::string_view text = kDpkg;
  while (!text.empty()) {
    auto nl = text.find('\n');
    r.line(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  EXPECT_EQ(r.version(), "1.17.7");
}

TEST(PostureParse, DpkgStatusSkipsRemovedPackagesAndOddVersions) {
  auto version = [](std::string_view text) {
    DpkgStatusReader r({"nvidia-container-toolkit"});
    while (!text.empty()) {
      auto nl = text.find('\n');
      r.line(text.substr(0, nl));
      if (nl == std::string_view::npos) break;
      text.remove_prefix(nl + 1);
    }
    return r.version();
  };
  EXPECT_EQ(version("Package: nvidia-container-toolkit\nStatus: deinstall ok config-files\nVersion: 1.14.0-1\n"), "");
  EXPECT_EQ(version("Package: nvidia-container-toolkit\nStatus: install ok installed\nVersion: 1:1.18.0~rc.1-1\n"),
            "1.18.0");
  EXPECT_EQ(version("Package: nvidia-container-toolkit\nStatus: install ok installed\nVersion: $(reboot)\n"), "");
  EXPECT_EQ(version("Package: nvidia-container-toolkit\nVersion: 1.17.8-1\n"), "");  // no Status: not installed
  EXPECT_EQ(version("Package: nvidia-container-toolkit\nStatus: install ok installed\n"), "");
}

TEST(PostureRead, AMissingHostRootIsAllUnknown) {
  ReadOptions o;
  o.host_root = "/nonexistent/vigil-posture-root";
  Posture p = read_posture(o);
  EXPECT_EQ(p.driver_version, "");
  EXPECT_EQ(p.toolkit_version, "");
  EXPECT_TRUE(p.vulnerable.empty());
  EXPECT_EQ(p.profiling_admin_only, -1);
  EXPECT_EQ(p.accept_envvar, -1);
  EXPECT_EQ(p.cuda_compat_hook, -1);
  EXPECT_EQ(p.runtime, "");
  EXPECT_EQ(summary(p),
            "driver unknown, toolkit unknown, profiling unknown, envvar unknown, runtime unknown, ECC unknown");
}

TEST(PostureRead, AStandInHostRoot) {
  TempDir root("vigil-posture");
  ASSERT_TRUE(root.ok());
  root.write("proc/driver/nvidia/version", kOpen);
  root.write("proc/driver/nvidia/params", "RmProfilingAdminOnly: 1\n");
  root.write("var/lib/dpkg/status", kDpkg);
  root.write("etc/nvidia-container-runtime/config.toml", kConfig);
  std::string runc = root.write("usr/sbin/runc", "#!/bin/false\n");
  ::chmod(runc.c_str(), 0755);
  ReadOptions o;
  o.host_root = root.path() + "/";
  Posture p = read_posture(o);
  EXPECT_EQ(p.driver_version, "580.95.05");
  EXPECT_EQ(p.toolkit_version, "1.17.7");
  EXPECT_EQ(cve_list(p.vulnerable), "CVE-2025-23266,CVE-2025-23267,CVE-2026-24260");
  EXPECT_EQ(p.profiling_admin_only, 1);
  EXPECT_EQ(p.accept_envvar, 1);
  EXPECT_EQ(p.cuda_compat_hook, 1);
  EXPECT_EQ(p.runtime, "runc");
  EXPECT_EQ(summary(p),
            "driver 580.95.05, toolkit 1.17.7 (CVE-2025-23266, CVE-2025-23267, CVE-2026-24260), profiling admin-only, "
            "envvar accepted from unprivileged, cuda-compat hook on, runtime runc, ECC unknown");
}

TEST(PostureRead, SysModuleWhenProcSaysNothingAndDefaultsForAbsentKeys) {
  TempDir root("vigil-posture");
  root.write("proc/driver/nvidia/version", "NVRM version: garbage\n");
  root.write("sys/module/nvidia/version", "460.27.04\n");
  root.write("etc/nvidia-container-runtime/config.toml", "[nvidia-container-runtime]\nruntimes = [\"crun\"]\n");
  std::string crun = root.write("usr/bin/crun", "");
  ::chmod(crun.c_str(), 0755);
  std::string runc = root.write("usr/bin/runc", "");  // not executable: not a runtime
  ReadOptions o;
  o.host_root = root.path();
  Posture p = read_posture(o);
  EXPECT_EQ(p.driver_version, "460.27.04");
  EXPECT_EQ(cve_list(p.vulnerable), "CVE-2021-1056");
  EXPECT_EQ(p.accept_envvar, 1);     // the toolkit's default
  EXPECT_EQ(p.cuda_compat_hook, 1);  // not disabled
  EXPECT_EQ(p.runtime, "crun");
}

// A container reads the kernel's files (proc/, sys/) at its own root and the
// host's files where they are mounted (deploy/daemonset.yaml): kernel_root
// takes proc/ and sys/ away from host_root, and nothing else.
TEST(PostureRead, KernelRootTakesProcAndSysOnly) {
  TempDir kernel("vigil-posture-kernel");
  TempDir host("vigil-posture-host");
  kernel.write("proc/driver/nvidia/version", kOpen);
  kernel.write("proc/driver/nvidia/params", "RmProfilingAdminOnly: 0\n");
  kernel.write("var/lib/dpkg/status", kDpkg);  // not the host's: never read
  host.write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  460.27.04\n");
  host.write("sys/module/nvidia/version", "460.27.04\n");
  ReadOptions o;
  o.host_root = host.path();
  o.kernel_root = kernel.path();
  Posture p = read_posture(o);
  EXPECT_EQ(p.driver_version, "580.95.05");
  EXPECT_EQ(p.profiling_admin_only, 0);
  EXPECT_EQ(p.toolkit_version, "");
  host.write("var/lib/dpkg/status", kDpkg);
  EXPECT_EQ(read_posture(o).toolkit_version, "1.17.7");
  // sys/module under the kernel root too, when proc/ says nothing.
  kernel.write("proc/driver/nvidia/version", "garbage\n");
  kernel.write("sys/module/nvidia/version", "550.54.15\n");
  EXPECT_EQ(read_posture(o).driver_version, "550.54.15");
  // Empty: under host_root, as before.
  o.kernel_root.clear();
  EXPECT_EQ(read_posture(o).driver_version, "460.27.04");
}

// What the DaemonSet's mounts must cover (tests/deploy reads these lists):
// relative paths, the host's files apart from the kernel's.
TEST(PostureRead, TheListsOfWhatIsRead) {
  const auto host = host_paths();
  const auto kernel = kernel_paths();
  ASSERT_FALSE(host.empty());
  ASSERT_FALSE(kernel.empty());
  for (std::string_view p : host) {
    EXPECT_NE(p.front(), '/') << p;
    EXPECT_FALSE(p.starts_with("proc/") || p.starts_with("sys/")) << p;
  }
  for (std::string_view p : kernel) EXPECT_TRUE(p.starts_with("proc/") || p.starts_with("sys/")) << p;
  EXPECT_EQ(host.front(), "var/lib/dpkg/status");
  EXPECT_NE(std::find(host.begin(), host.end(), "etc/nvidia-container-toolkit/config.toml"), host.end());
  EXPECT_NE(std::find(host.begin(), host.end(), "usr/local/sbin"), host.end());
}

TEST(PostureRead, NonRegularFilesAreNotRead) {
  TempDir root("vigil-posture");
  root.mkdirs("proc/driver/nvidia/version");  // a directory where the file should be
  root.mkdirs("etc/nvidia-container-runtime");
  const std::string fifo = root.path() + "/etc/nvidia-container-runtime/config.toml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);  // would block a plain open
  ReadOptions o;
  o.host_root = root.path();
  Posture p = read_posture(o);
  EXPECT_EQ(p.driver_version, "");
  EXPECT_EQ(p.accept_envvar, -1);
}

TEST(PostureRead, ReadsAreBounded) {
  TempDir root("vigil-posture");
  // The package database's entry lies past the bound: not seen.
  std::string big(2 << 20, 'x');
  big += "\n\n";
  big += kDpkg;
  root.write("var/lib/dpkg/status", big);
  root.write("proc/driver/nvidia/params", std::string(1 << 20, 'R') + "\nRmProfilingAdminOnly: 0\n");
  ReadOptions o;
  o.host_root = root.path();
  o.max_package_db_bytes = 1 << 20;
  Posture p = read_posture(o);
  EXPECT_EQ(p.toolkit_version, "");
  EXPECT_EQ(p.profiling_admin_only, -1);
  o.max_package_db_bytes = 4 << 20;
  EXPECT_EQ(read_posture(o).toolkit_version, "1.17.7");  // a long line is skipped, the rest read
}

TEST(PostureChange, NamesTheFactsThatChanged) {
  Posture a;
  a.driver_version = "580.95.05";
  a.toolkit_version = "1.17.7";
  a.vulnerable = vulnerable_to("toolkit", "1.17.7");
  Posture b = a;
  EXPECT_EQ(changed_facts(a, b), "");
  EXPECT_TRUE(a == b);
  b.toolkit_version = "1.17.8";
  b.vulnerable = vulnerable_to("toolkit", "1.17.8");
  b.profiling_admin_only = 0;
  EXPECT_EQ(changed_facts(a, b), "toolkit vulnerable profiling");
  EXPECT_FALSE(a == b);
  EXPECT_EQ(all_facts(), "driver toolkit vulnerable profiling accept_envvar cuda_compat runtime ecc");
  event::PostureData d = to_event(b, "toolkit");
  EXPECT_EQ(d.kind, "node");
  EXPECT_EQ(d.vulnerable, "CVE-2026-24260");
  EXPECT_EQ(d.profiling_admin_only, 0);
}

}  // namespace
}  // namespace vigil::posture
