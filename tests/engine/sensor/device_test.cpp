#include "engine/sensor/device.h"

#include <gtest/gtest.h>

#include "engine/sensor/sysfs.h"

namespace vigil::sensor {
namespace {

constexpr const char* kProcDevices =
    "Character devices:\n"
    "  1 mem\n"
    "195 nvidia\n"
    "195 nvidiactl\n"
    "234 nvidia-uvm-tools-not\n"
    "235 nvidia-uvm\n"
    "\n"
    "Block devices:\n"
    "236 nvidia-uvm\n"
    "  8 sd\n";

TEST(Device, CharMajorFromProcDevices) {
  EXPECT_EQ(char_major(kProcDevices, "nvidia-uvm"), 235u);  // the block entry is ignored
  EXPECT_EQ(char_major(kProcDevices, "mem"), 1u);
  EXPECT_EQ(char_major(kProcDevices, "sd"), 0u);
  EXPECT_EQ(char_major(kProcDevices, "nvidia-caps"), 0u);
  EXPECT_EQ(char_major("garbage\n1x y\n", "y"), 0u);
  EXPECT_EQ(char_major("", "mem"), 0u);
}

TEST(Device, ClassifiesByMajorThenName) {
  EXPECT_EQ(classify_device(195, "whatever", 0), NvidiaDevice::kNvidia);
  EXPECT_EQ(classify_device(235, "uvm-renamed", 235), NvidiaDevice::kUvm);
  EXPECT_EQ(classify_device(1, "nvidia0", 235), NvidiaDevice::kNvidia);  // stand-in node
  EXPECT_EQ(classify_device(1, "nvidia-uvm", 0), NvidiaDevice::kUvm);
  EXPECT_EQ(classify_device(1, "null", 235), NvidiaDevice::kNone);
  EXPECT_EQ(classify_device(0, "tty", 0), NvidiaDevice::kNone);  // no uvm major known: 0 never matches
  EXPECT_EQ(classify_device(136, "nvidi", 0), NvidiaDevice::kNone);
}

TEST(Sysfs, Cgroup2MountFromMountinfo) {
  const char* hybrid =
      "25 30 0:23 / /sys rw,nosuid - sysfs sysfs rw\n"
      "31 25 0:26 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n"
      "32 31 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
      "33 31 0:28 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n";
  EXPECT_EQ(cgroup2_mount(hybrid), "/sys/fs/cgroup/unified");
  const char* unified = "29 23 0:26 / /sys/fs/cgroup rw shared:4 - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(cgroup2_mount(unified), "/sys/fs/cgroup");
  // A cgroup2 bind-mount of a sub-tree is not the root; escaped spaces decode.
  const char* odd =
      "40 23 0:26 /kubepods /mnt/sub rw - cgroup2 cgroup2 rw\n"
      "41 23 0:26 / /mnt/with\\040space rw - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(cgroup2_mount(odd), "/mnt/with space");
  EXPECT_EQ(cgroup2_mount("garbage line\n"), "");
}

TEST(Sysfs, XidTracepointFormat) {
  const char* fmt =
      "name: nvidia_dev_xid\nID: 1234\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:__data_loc char[] dev;\toffset:8;\tsize:4;\tsigned:0;\n"
      "\tfield:u32 error_code;\toffset:12;\tsize:4;\tsigned:0;\n"
      "\tfield:__data_loc char[] msg;\toffset:16;\tsize:4;\tsigned:0;\n";
  auto o = parse_xid_format(fmt);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->dev, 8u);
  EXPECT_EQ(o->code, 12u);
  EXPECT_EQ(o->msg, 16u);
  EXPECT_FALSE(parse_xid_format("name: x\n\tfield:u32 error_code;\toffset:12;\tsize:4;\n"));
}

}  // namespace
}  // namespace vigil::sensor
