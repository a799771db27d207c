#include "engine/state/cgroup.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/state/model.h"

namespace vigil::state {
namespace {

const std::string kId = "3b7a1c0f9e4d2a6b8c5e7f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c";
const std::string kUid = "5d0c2a9e-1f3b-4c6d-8e7f-9a0b1c2d3e4f";
const std::string kUidUnderscore = "5d0c2a9e_1f3b_4c6d_8e7f_9a0b1c2d3e4f";

CgroupMatch m(const std::string& runtime, const std::string& uid = "") { return CgroupMatch{kId, runtime, uid}; }

TEST(ParseCgroupPath, ContainerdSystemdDriverEveryQos) {
  for (std::string qos : {"burstable", "besteffort"}) {
    std::string p = "/kubepods.slice/kubepods-" + qos + ".slice/kubepods-" + qos + "-pod" + kUidUnderscore +
                    ".slice/cri-containerd-" + kId + ".scope";
    EXPECT_EQ(parse_cgroup_path(p), m(ContainerRuntime::kContainerd, kUid)) << p;
  }
  // Guaranteed pods sit directly below kubepods.slice.
  std::string g = "/kubepods.slice/kubepods-pod" + kUidUnderscore + ".slice/cri-containerd-" + kId + ".scope";
  EXPECT_EQ(parse_cgroup_path(g), m(ContainerRuntime::kContainerd, kUid));
}

TEST(ParseCgroupPath, CrioSystemdDriver) {
  std::string p = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUidUnderscore + ".slice/crio-" +
                  kId + ".scope";
  EXPECT_EQ(parse_cgroup_path(p), m(ContainerRuntime::kCrio, kUid));
}

TEST(ParseCgroupPath, CgroupfsDriverEveryQos) {
  for (std::string qos : {"/burstable", "/besteffort", ""}) {
    std::string p = "/kubepods" + qos + "/pod" + kUid + "/" + kId;
    EXPECT_EQ(parse_cgroup_path(p), m(ContainerRuntime::kContainerd, kUid)) << p;
    std::string c = "/kubepods" + qos + "/pod" + kUid + "/crio-" + kId;
    EXPECT_EQ(parse_cgroup_path(c), m(ContainerRuntime::kCrio, kUid)) << c;
  }
}

TEST(ParseCgroupPath, DockerBothDrivers) {
  EXPECT_EQ(parse_cgroup_path("/system.slice/docker-" + kId + ".scope"), m(ContainerRuntime::kDocker));
  EXPECT_EQ(parse_cgroup_path("/docker/" + kId), m(ContainerRuntime::kDocker));
}

TEST(ParseCgroupPath, Podman) {
  EXPECT_EQ(parse_cgroup_path("/machine.slice/libpod-" + kId + ".scope"), m(ContainerRuntime::kPodman));
  EXPECT_EQ(parse_cgroup_path("/machine.slice/libpod-" + kId + ".scope/container"), m(ContainerRuntime::kPodman));
  EXPECT_EQ(parse_cgroup_path("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kId + ".scope"),
            m(ContainerRuntime::kPodman));
  EXPECT_EQ(parse_cgroup_path("/libpod_parent/libpod-" + kId), m(ContainerRuntime::kPodman));
}

TEST(ParseCgroupPath, NestedKubeletInsideDockerTakesInnermost) {
  std::string outer(64, 'a');
  std::string p = "/docker/" + outer + "/kubepods/besteffort/pod" + kUid + "/" + kId;
  EXPECT_EQ(parse_cgroup_path(p), m(ContainerRuntime::kContainerd, kUid));
}

TEST(ParseCgroupPath, SubCgroupOfAContainerBelongsToIt) {
  std::string p =
      "/kubepods.slice/kubepods-pod" + kUidUnderscore + ".slice/cri-containerd-" + kId + ".scope/init.scope";
  EXPECT_EQ(parse_cgroup_path(p), m(ContainerRuntime::kContainerd, kUid));
}

TEST(ParseCgroupPath, HostCgroupsAreNotContainers) {
  for (std::string p :
       {std::string("/"), std::string("/init.scope"), std::string("/system.slice/sshd.service"),
        std::string("/user.slice/user-0.slice/session-1.scope"), std::string("/kubepods.slice"),
        std::string("/kubepods/burstable"), "/kubepods.slice/kubepods-pod" + kUidUnderscore + ".slice"}) {
    EXPECT_FALSE(parse_cgroup_path(p).has_value()) << p;
  }
}

TEST(ParseCgroupPath, ConmonScopesAreNotContainers) {
  EXPECT_FALSE(parse_cgroup_path("/machine.slice/libpod-conmon-" + kId + ".scope"));
  EXPECT_FALSE(parse_cgroup_path("/kubepods.slice/crio-conmon-" + kId + ".scope"));
}

TEST(ParseCgroupPath, HostileInputs) {
  std::string upper = kId;
  upper[0] = 'A';
  std::string short_id = kId.substr(0, 63);
  std::string long_id = kId + "0";
  for (std::string p : {std::string(""), "docker-" + upper + ".scope", "/docker/" + upper,
                        "/docker-" + short_id + ".scope", "/docker-" + long_id + ".scope",
                        "/system.slice/" + kId,  // bare id outside docker/kubepods
                        "/docker-" + kId + ".scope.extra", "/docker-" + kId + "\n.scope",
                        "/cri-containerd-" + kId.substr(0, 32) + "/" + kId.substr(32)}) {
    EXPECT_FALSE(parse_cgroup_path(p).has_value()) << p;
  }
  // NUL bytes and absurd sizes.
  std::string nul = "/docker/" + kId;
  nul[3] = '\0';
  EXPECT_FALSE(parse_cgroup_path(nul));
  EXPECT_FALSE(parse_cgroup_path("/docker/" + kId + std::string(5000, '/')));
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "/a";
  EXPECT_FALSE(parse_cgroup_path(deep + "/docker/" + kId));
  // A malformed pod uid gives a container without a pod, never a wrong pod.
  auto r = parse_cgroup_path("/kubepods/burstable/podnot-a-uid/crio-" + kId);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->pod_uid, "");
  // pod<uid> outside kubepods is not a pod.
  r = parse_cgroup_path("/other/pod" + kUid + "/crio-" + kId);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->pod_uid, "");
  // Dashes in the systemd form are not accepted (the driver escapes them).
  r = parse_cgroup_path("/kubepods.slice/kubepods-pod" + kUid + ".slice/crio-" + kId + ".scope");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->pod_uid, "");
}

TEST(FindCgroup2Mount, UnifiedAndHybridLayouts) {
  std::string unified =
      "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
      "30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
      "rw,nsdelegate\n";
  EXPECT_EQ(find_cgroup2_mount(unified), "/sys/fs/cgroup");
  std::string hybrid =
      "30 22 0:26 / /sys/fs/cgroup ro,nosuid shared:4 - tmpfs tmpfs ro,mode=755\n"
      "31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:5 - cgroup2 cgroup2 rw,nsdelegate\n"
      "32 30 0:28 / /sys/fs/cgroup/systemd rw shared:6 - cgroup cgroup rw,xattr,name=systemd\n";
  EXPECT_EQ(find_cgroup2_mount(hybrid), "/sys/fs/cgroup/unified");
  // Optional fields before the separator, an escaped space, and a non-root mount first.
  std::string odd =
      "40 22 0:26 /kubepods /mnt/sub rw shared:4 master:1 - cgroup2 cgroup2 rw\n"
      "41 22 0:26 / /mnt/my\\040cg rw shared:4 master:1 - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(find_cgroup2_mount(odd), "/mnt/my cg");
  EXPECT_FALSE(find_cgroup2_mount("32 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw\n"));
  EXPECT_FALSE(find_cgroup2_mount("garbage\n - cgroup2\n\n"));
}

TEST(CgroupV2Path, FromProcCgroup) {
  EXPECT_EQ(cgroup_v2_path("0::/system.slice/sshd.service\n"), "/system.slice/sshd.service");
  EXPECT_EQ(cgroup_v2_path("12:memory:/x\n1:name=systemd:/y\n0::/z\n"), "/z");
  EXPECT_EQ(cgroup_v2_path("0::/gone (deleted)\n"), "/gone");
  EXPECT_FALSE(cgroup_v2_path("12:memory:/x\n"));
  EXPECT_FALSE(cgroup_v2_path("0::relative\n"));
}

}  // namespace
}  // namespace vigil::state
