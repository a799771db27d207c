// The field catalogue and its helpers: every field documented, names unique,
// argument forms, CIDR and glob helpers, bounded arena.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "engine/rules/compiler.h"
#include "engine/rules/fields.h"

namespace vigil::rules {
namespace {

TEST(FieldCatalog, NamesUniqueAndDescribed) {
  std::set<std::string_view> names;
  for (const auto& f : FieldCatalog::builtin().fields()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_FALSE(f.description.empty()) << f.name;
    EXPECT_FALSE(f.events.empty()) << f.name;
    EXPECT_NE(f.fn, nullptr) << f.name;
  }
  EXPECT_GT(names.size(), 100u);
}

TEST(FieldCatalog, DocsListEveryField) {
  std::ifstream in("docs/fields.md");
  ASSERT_TRUE(in) << "docs/fields.md (tests run from the repository root)";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  for (const auto& f : FieldCatalog::builtin().fields()) {
    std::string name(f.name);
    if (f.arg == ArgMode::kRequiredKey) name += "[KEY]";
    else if (f.arg != ArgMode::kNone) name += "[N]";
    EXPECT_NE(doc.find("| `" + name + "` | " + std::string(field_type_name(f.type)) + " |"), std::string::npos)
        << name << " is missing from docs/fields.md (regenerate it from `vigil fields --json`)";
  }
}

TEST(FieldCatalog, ResolveForms) {
  const auto& c = FieldCatalog::builtin();
  FieldInst fi;
  std::string err;
  bool unknown = false;
  ASSERT_TRUE(c.resolve("k8s.pod.label.app", false, "", fi, err, unknown));
  EXPECT_EQ(fi.arg, "app");
  ASSERT_TRUE(c.resolve("k8s.pod.label", true, "app.kubernetes.io/name", fi, err, unknown));
  EXPECT_EQ(fi.arg, "app.kubernetes.io/name");
  EXPECT_FALSE(c.resolve("k8s.pod.label", false, "", fi, err, unknown));
  EXPECT_FALSE(unknown);
  ASSERT_TRUE(c.resolve("evt.arg.request", false, "", fi, err, unknown));
  EXPECT_EQ(fi.def->name, "evt.arg");
  ASSERT_TRUE(c.resolve("proc.aname", true, "3", fi, err, unknown));
  EXPECT_EQ(fi.index, 3);
  EXPECT_FALSE(c.resolve("proc.aname", true, "99", fi, err, unknown));
  EXPECT_FALSE(c.resolve("ka.verb", false, "", fi, err, unknown));
  EXPECT_TRUE(unknown);
  EXPECT_EQ(err, "unknown field 'ka.verb'");
}

TEST(FieldHelpers, Cidr) {
  Cidr c;
  event::IpAddr a;
  ASSERT_TRUE(parse_cidr("10.0.0.0/8", c));
  ASSERT_TRUE(parse_ip("10.255.1.1", a));
  EXPECT_TRUE(c.contains(a));
  ASSERT_TRUE(parse_ip("11.0.0.1", a));
  EXPECT_FALSE(c.contains(a));
  ASSERT_TRUE(parse_cidr("172.16.0.0/12", c));
  ASSERT_TRUE(parse_ip("172.31.255.255", a));
  EXPECT_TRUE(c.contains(a));
  ASSERT_TRUE(parse_ip("172.32.0.0", a));
  EXPECT_FALSE(c.contains(a));
  ASSERT_TRUE(parse_cidr("fd00::/8", c));
  ASSERT_TRUE(parse_ip("fd12::1", a));
  EXPECT_TRUE(c.contains(a));
  ASSERT_TRUE(parse_ip("10.0.0.1", a));
  EXPECT_FALSE(c.contains(a));  // families differ
  ASSERT_TRUE(parse_cidr("0.0.0.0/0", c));
  EXPECT_TRUE(c.contains(a));
  EXPECT_FALSE(parse_cidr("10.0.0.0/", c));
  EXPECT_FALSE(parse_cidr("10.0.0.0/40", c));
  EXPECT_FALSE(parse_cidr("nonsense", c));
  EXPECT_FALSE(parse_cidr(std::string(200, '1'), c));
}

TEST(FieldHelpers, Glob) {
  EXPECT_TRUE(glob_match("*", "", false));
  EXPECT_TRUE(glob_match("/proc/*/environ", "/proc/1/environ", false));
  EXPECT_TRUE(glob_match("/proc/*/environ", "/proc/1/task/2/environ", false));  // * spans '/'
  EXPECT_FALSE(glob_match("/proc/*/environ", "/proc/1/environx", false));
  EXPECT_TRUE(glob_match("a?c", "abc", false));
  EXPECT_FALSE(glob_match("a?c", "ac", false));
  EXPECT_TRUE(glob_match("[a-c]x", "bx", false));
  EXPECT_FALSE(glob_match("[!a-c]x", "bx", false));
  EXPECT_TRUE(glob_match("\\*", "*", false));
  EXPECT_TRUE(glob_match("A*", "abc", true));
  EXPECT_TRUE(glob_match("*a*a*a*a*a*b", std::string(200, 'a') + "b", false));
  EXPECT_FALSE(glob_match("*a*a*a*a*a*b", std::string(200, 'a'), false));
}

TEST(FieldHelpers, ArenaTruncatesWhenFull) {
  auto a = std::make_unique<Arena>();
  std::string big(Arena::kSize + 100, 'x');
  auto v = a->put(big);
  EXPECT_EQ(v.size(), Arena::kSize);
  auto w = a->put("more");
  EXPECT_EQ(w.size(), 0u);
  a->reset();
  EXPECT_EQ(a->put("ok"), "ok");
}

TEST(FieldHelpers, EvtTypeNames) {
  bool known = false;
  EXPECT_EQ(evt_type_mask("execveat", known), 1u << static_cast<unsigned>(event::Type::kExec));
  EXPECT_TRUE(known);
  EXPECT_EQ(evt_type_mask("ptrace", known), 0u);
  EXPECT_TRUE(known);
  EXPECT_EQ(evt_type_mask("teleport", known), 0u);
  EXPECT_FALSE(known);
}

}  // namespace
}  // namespace vigil::rules
