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

// The kernel's tables take any number of paths: Falco's three stock files
// with the bundled rules name 84, past the 48 slots the filter once had. Each still decides as its
// literal says.
TEST(OpenFilterTables, AnyNumberOfPathsEachJudged) {
  OpenLists l;
  for (int i = 0; i < 300; ++i) l.prefixes.push_back("/p" + std::to_string(i) + "/");
  for (int i = 0; i < 300; ++i) l.whole.push_back("/etc/w" + std::to_string(i));
  for (int i = 0; i < 100; ++i) l.dirs.push_back("/d/x" + std::to_string(i));
  auto t = build_open_tables(l);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->knobs.n_literals, 700u);
  EXPECT_EQ(tables_judge(*t, "/p299/a", false), 1);
  EXPECT_EQ(tables_judge(*t, "/p0/deep/er/still", false), 1);
  EXPECT_EQ(tables_judge(*t, "/p300/a", false), 0);
  EXPECT_EQ(tables_judge(*t, "/x/etc/w17", false), 1);  // by its name: user space compares the path
  EXPECT_EQ(tables_judge(*t, "/etc/w300", false), 0);
  EXPECT_EQ(tables_judge(*t, "/d/x99/file", false), 1);  // by its parent's name
  EXPECT_EQ(tables_judge(*t, "/d/x100/file", false), 0);
}

// The trie judges as the components do: a name the prefix ends inside, a
// whole name, "/" for every path, and write-only prefixes for writes only.
TEST(OpenFilterTables, TrieMatchesPrefixesAsComponentsDo) {
  OpenLists l;
  l.prefixes = {"/dev/sd", "/dev/nvme", "/etc/", "/root/.ssh", "/a/b/c/d/e/", "/home/averyveryverylongname"};
  l.write_prefixes = {"/var/"};
  auto t = build_open_tables(l);
  ASSERT_TRUE(t.ok()) << t.error().message;
  const std::string paths[] = {"/dev/sda1",
                               "/dev/sd",
                               "/dev/s",
                               "/dev/nvme0n1",
                               "/dev/nvm",
                               "/etc/passwd",
                               "/etcd/x",
                               "/root/.ssh/id_rsa",
                               "/root/.sshd",
                               "/root/.sh",
                               "/a/b/c/d/e/f",
                               "/a/b/c/x",
                               "/home/averyveryverylongname2/x",
                               "/home/averyveryverylongnam",
                               "/usr/lib/x",
                               "/"};
  for (const std::string& p : paths) {
    bool any = false;
    for (const std::string& pre : l.prefixes) {
      auto c = prefix_components(pre, VG_RP_COMPS);
      ASSERT_TRUE(c.ok());
      any = any || components_match(*c, p);
    }
    EXPECT_EQ(tables_judge(*t, p, false) == 1, any) << p;
  }
  EXPECT_EQ(tables_judge(*t, "/var/log/x", false), 0);
  EXPECT_EQ(tables_judge(*t, "/var/log/x", true), 1);
  l.prefixes.push_back("/");
  t = build_open_tables(l);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(tables_judge(*t, "/usr/lib/x", false), 1);
}

// Traversal literals send an open only where its given path holds "../":
// the kernel marks it so (2) instead of sending it (1).
TEST(OpenFilterTables, TraversalLiteralsWaitForTheGivenPath) {
  OpenLists l;
  l.prefixes = {"/proc/"};
  l.traversal_prefixes = {"/etc/", "/root/.ssh"};
  l.traversal_fragments = {"id_rsa"};
  auto t = build_open_tables(l);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_TRUE(t->knobs.have_traversal);
  EXPECT_EQ(tables_judge(*t, "/etc/passwd", false), 2);
  EXPECT_EQ(tables_judge(*t, "/root/.ssh/config", false), 2);
  EXPECT_EQ(tables_judge(*t, "/home/u/.ssh/id_rsa.pub", false), 2);
  EXPECT_EQ(tables_judge(*t, "/home/u/a_file_name_past_16_bytes", false), 2);  // not searched: taken
  EXPECT_EQ(tables_judge(*t, "/proc/1/environ", false), 1);
  EXPECT_EQ(tables_judge(*t, "/usr/lib/libc.so.6", false), 0);
}

TEST(OpenFilterTables, BadPathsAreNamed) {
  OpenLists l;
  l.prefixes = {"relative/"};
  auto t = build_open_tables(l);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("relative/"), std::string::npos);
  l = OpenLists{};
  l.whole = {"/" + std::string(70, 'x')};
  t = build_open_tables(l);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("longer than 63 bytes"), std::string::npos);
  l = OpenLists{};
  l.traversal_fragments = {"a/b"};
  EXPECT_FALSE(build_open_tables(l).ok());
}

// The given-path table holds the given prefixes for every open and the
// other literals for failed opens, with the lengths and 8-byte heads the
// kernel looks up.
TEST(OpenFilterTables, GivenTableHoldsEveryLiteralForFailedOpens) {
  OpenLists l;
  l.given = {"../"};
  l.prefixes = {"/etc/"};
  l.whole = {"/dev/mem"};
  auto t = build_open_tables(l);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->knobs.given_lens, std::uint64_t{1} << 3);
  EXPECT_EQ(t->knobs.lit_lens, (std::uint64_t{1} << 3) | (std::uint64_t{1} << 5) | (std::uint64_t{1} << 8));
  EXPECT_EQ(t->knobs.given_heads, 1u << 3);
  EXPECT_EQ(t->given.size(), 3u);
  for (const auto& [k, v] : t->given) {
    const std::string p(reinterpret_cast<const char*>(k.bytes), k.len);
    EXPECT_EQ(v, p == "../" ? VG_OF_GIVEN : VG_OF_OTHER) << p;
  }
}

}  // namespace
}  // namespace vigil::sensor
