#include "engine/sensor/open_filter.h"

#include <gtest/gtest.h>

#include <string>

namespace vigil::sensor {
namespace {

bool passes(std::string_view prefix, std::string_view path, std::size_t max = 4) {
  auto c = prefix_components(prefix, max);
  EXPECT_TRUE(c.ok()) << prefix;
  return c.ok() && components_match(*c, path);
}

TEST(OpenFilterPrefix, DirectoryPrefixSendsItsTreeOnly) {
  EXPECT_TRUE(passes("/etc/", "/etc/shadow"));
  EXPECT_TRUE(passes("/etc/", "/etc/ssh/sshd_config"));
  EXPECT_FALSE(passes("/etc/", "/etcd/x"));
  EXPECT_FALSE(passes("/etc/", "/usr/etc/x"));
  EXPECT_FALSE(passes("/etc/", "/"));
  EXPECT_TRUE(passes("/var/log/", "/var/log/syslog"));
  EXPECT_FALSE(passes("/var/log/", "/var/lib/x"));
  EXPECT_FALSE(passes("/var/log/", "/var"));
}

TEST(OpenFilterPrefix, PrefixEndingInsideANameIsANamePrefix) {
  EXPECT_TRUE(passes("/etc", "/etc/passwd"));
  EXPECT_TRUE(passes("/etc", "/etcd/x"));  // what startswith means
  EXPECT_FALSE(passes("/etc", "/et/x"));
  EXPECT_TRUE(passes("/etc/ld.so", "/etc/ld.so.preload"));
  EXPECT_FALSE(passes("/etc/ld.so", "/etc/ld.s"));
  EXPECT_TRUE(passes("/dev/nvidia", "/dev/nvidia-uvm"));
}

TEST(OpenFilterPrefix, IsASupersetOfStartsWith) {
  // Every path that starts with the prefix passes, for prefixes longer than
  // what the kernel compares (5 names, names over 16 bytes).
  const std::string prefixes[] = {"/",
                                  "/tmp/",
                                  "/a/b/c/d/e/",
                                  "/a/b/c/d/ep",
                                  "/var/lib/kubelet-plugins-registry/",
                                  "/home/averyveryverylongname",
                                  "//etc//"};
  const std::string paths[] = {"/tmp/x",
                               "/a/b/c/d/e/f",
                               "/a/b/c/d/epsilon",
                               "/a/b/c/d/x",
                               "/var/lib/kubelet-plugins-registry/sock",
                               "/var/lib/kubelet-plugins-registrX/s",
                               "/home/averyveryverylongname2/x",
                               "/home/averyveryverylongnamf",
                               "/etc/x",
                               "/"};
  for (const auto& pre : prefixes) {
    for (const auto& p : paths) {
      std::string canon = pre;  // the resolved path never holds "//"
      for (std::size_t i; (i = canon.find("//")) != std::string::npos;) canon.erase(i, 1);
      if (p.starts_with(canon)) {
        EXPECT_TRUE(passes(pre, p)) << pre << " " << p;
      }
    }
  }
  // Past what it compares, the kernel sends more: user space judges those.
  EXPECT_TRUE(passes("/a/b/c/d/e/", "/a/b/c/d/x"));
  EXPECT_TRUE(passes("/home/averyveryverylongname", "/home/averyveryverylongnamf"));
  // Within what it compares, it does not.
  EXPECT_FALSE(passes("/var/lib/kubelet-plugins-registry/", "/var/lib/kubelet-plugins-registr/x"));
}

TEST(OpenFilterPrefix, RootPrefixSendsEverything) {
  auto c = prefix_components("/", 4);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->empty());
  EXPECT_TRUE(components_match(*c, "/usr/lib/libc.so.6"));
}

TEST(OpenFilterPrefix, RelativePrefixIsRefused) {
  auto c = prefix_components("../", 4);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("'../'"), std::string::npos);
}

}  // namespace
}  // namespace vigil::sensor
