// The start-up check of what the kill and freeze responses need
// (engine/agent/response_caps.h): CAP_KILL from a status file's CapEff, the
// cgroup mount's writability, and the words the prevention line says.
#include "engine/agent/response_caps.h"

#include <sys/statvfs.h>

#include <gtest/gtest.h>

#include <iostream>

#include "tests/support/temp_dir.h"

namespace vigil::agent {
namespace {

// /proc/<pid>/status around CapEff, as the kernel writes it.
std::string status_with(const std::string& cap_eff) {
  return "Name:\tvigil\nUmask:\t0022\nState:\tS (sleeping)\nCapInh:\t0000000000000000\nCapPrm:\t" + cap_eff +
         "\nCapEff:\t" + cap_eff + "\nCapBnd:\t000001ffffffffff\nCapAmb:\t0000000000000000\nNoNewPrivs:\t0\n";
}

TEST(ResponseCaps, EffectiveCapabilitiesFromStatus) {
  EXPECT_EQ(effective_capabilities(status_with("0000000000000020")), 0x20u);  // CAP_KILL (5) alone
  EXPECT_EQ(effective_capabilities(status_with("000001ffffffffff")), 0x1ffffffffffu);
  EXPECT_EQ(effective_capabilities("CapEff:   00000000a80425fb\r\n"), 0xa80425fbu);
  EXPECT_EQ(effective_capabilities("Name:\tx\nCapPrm:\t0000000000000020\n"), std::nullopt);  // no CapEff
  EXPECT_EQ(effective_capabilities("CapEff:\t00000000zz000020\n"), std::nullopt);
  EXPECT_EQ(effective_capabilities("CapEff:\t\n"), std::nullopt);
  EXPECT_EQ(effective_capabilities("CapEff:\t00000000000000000020\n"), std::nullopt);  // wider than 64 bits
  EXPECT_EQ(effective_capabilities("XCapEff:\t0000000000000020\n"), std::nullopt);
}

TEST(ResponseCaps, KillNeedsCapKillInTheEffectiveSet) {
  support::TempDir dir("vigil-response-caps");
  ResponseCapsProbe probe;
  probe.discover = false;
  probe.cgroup_mounts = {dir.path()};

  // The default DaemonSet's six: BPF, PERFMON, NET_ADMIN, SYSLOG, SYS_PTRACE, DAC_READ_SEARCH.
  probe.proc_status = dir.write("default", status_with("000000c400081004"));
  ResponseCaps c = check_response_caps(probe);
  EXPECT_FALSE(c.kill);
  EXPECT_EQ(c.kill_why, "CAP_KILL not held: only root's processes");
  // The overlay's: the same and KILL.
  probe.proc_status = dir.write("overlay", status_with("000000c400081024"));
  c = check_response_caps(probe);
  EXPECT_TRUE(c.kill);
  EXPECT_TRUE(c.kill_why.empty());
  // Nothing to read: not known, so not capable, and saying why.
  probe.proc_status = dir.path() + "/missing";
  c = check_response_caps(probe);
  EXPECT_FALSE(c.kill);
  EXPECT_NE(c.kill_why.find("cannot read CapEff"), std::string::npos) << c.kill_why;
}

TEST(ResponseCaps, FreezeNeedsEveryCgroupMountReadWrite) {
  support::TempDir dir("vigil-response-caps");
  ResponseCapsProbe probe;
  probe.discover = false;
  probe.proc_status = dir.write("status", status_with("0000000000000020"));

  probe.cgroup_mounts = {dir.path()};  // a read-write file system
  ResponseCaps c = check_response_caps(probe);
  EXPECT_TRUE(c.freeze) << c.freeze_why;

  // A hierarchy that is not there (on a hybrid host: v2 and the v1 freezer).
  probe.cgroup_mounts = {dir.path(), dir.path() + "/no-such-mount"};
  c = check_response_caps(probe);
  EXPECT_FALSE(c.freeze);
  EXPECT_EQ(c.freeze_why, dir.path() + "/no-such-mount: No such file or directory");

  // A read-only one: /proc/sys is mounted read-only in containers, /sys too;
  // on a host where neither is, this case is left to the image test.
  for (const char* ro : {"/sys", "/proc/sys"}) {
    struct statvfs vfs {};
    if (::statvfs(ro, &vfs) != 0 || (vfs.f_flag & ST_RDONLY) == 0) continue;
    probe.cgroup_mounts = {dir.path(), ro};
    c = check_response_caps(probe);
    EXPECT_FALSE(c.freeze);
    EXPECT_EQ(c.freeze_why, std::string(ro) + " is read-only");
    break;
  }

  probe.cgroup_mounts.clear();  // no cgroup v2 mount and no v1 freezer found
  c = check_response_caps(probe);
  EXPECT_FALSE(c.freeze);
  EXPECT_EQ(c.freeze_why, "no cgroup v2 mount and no cgroup v1 freezer");
}

TEST(ResponseCaps, DescribeSaysWhatCanBeCarriedOut) {
  EXPECT_EQ(describe(ResponseCaps{true, true, "", ""}), "responses kill: yes, freeze: yes");
  EXPECT_EQ(
      describe(ResponseCaps{false, false, "CAP_KILL not held: only root's processes", "/sys/fs/cgroup is read-only"}),
      "responses kill: no (CAP_KILL not held: only root's processes), freeze: no (/sys/fs/cgroup is read-only)");
}

// This process, on this machine: whatever it holds, the answer is whole.
TEST(ResponseCaps, ThisProcess) {
  const ResponseCaps c = check_response_caps(ResponseCapsProbe{});
  EXPECT_EQ(c.kill, c.kill_why.empty()) << describe(c);
  EXPECT_EQ(c.freeze, c.freeze_why.empty()) << describe(c);
  std::cout << describe(c) << "\n";
}

}  // namespace
}  // namespace vigil::agent
