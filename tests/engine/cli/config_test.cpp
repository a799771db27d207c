#include "engine/cli/config.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>

namespace vigil::cli {
namespace {

std::string write_temp(const std::string& text) {
  char name[] = "/tmp/vigil_config_testXXXXXX";
  int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(name) << text;
  return name;
}

TEST(Config, EmptyPathGivesEmptyMap) {
  auto c = load_config("");
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->IsMap());
  EXPECT_EQ(c->size(), 0u);
}

TEST(Config, SyntaxErrorNamesFileLineAndColumn) {
  std::string p = write_temp("outputs:\n  - type: stdout\n    format: [json\n");
  auto c = load_config(p);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().kind, Error::Kind::kBadInput);
  EXPECT_NE(c.error().message.find(p + ":"), std::string::npos) << c.error().message;
  std::remove(p.c_str());
}

TEST(Config, MissingFileIsBadInput) {
  auto c = load_config("/nonexistent/vigil.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("/nonexistent/vigil.yaml"), std::string::npos);
}

TEST(Config, TopLevelMustBeAMapping) {
  std::string p = write_temp("- a\n- b\n");
  auto c = load_config(p);
  ASSERT_FALSE(c);
  std::remove(p.c_str());
}

// Issue 16, item 6: 100k nested `[` took 15 s before the error, which said
// only "bad file". The YAML gate refuses the 65th level at once, naming it.
TEST(Config, DeepNestingIsRefusedAtOnceWithItsPosition) {
  for (const std::string& text : {std::string(100000, '['), std::string(100000, '{'),
                                  "sensor:\n  x: " + std::string(100000, '[')}) {
    std::string p = write_temp(text);
    const auto t0 = std::chrono::steady_clock::now();
    auto c = load_config(p);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().kind, Error::Kind::kBadInput);
    const std::string at = text[0] == 's' ? ":2:68: " : ":1:65: ";
    EXPECT_EQ(c.error().message, p + at + "nested deeper than 64 levels (the limit)");
    EXPECT_LT(s, 2.0) << "a generous bound: it takes about a millisecond";
    std::remove(p.c_str());
  }
}

TEST(Override, SetsNestedKeysWithTypes) {
  YAML::Node root(YAML::NodeType::Map);
  ASSERT_TRUE(apply_override(root, "sensor.payload_bytes=128"));
  ASSERT_TRUE(apply_override(root, "flight_recorder.enabled=false"));
  EXPECT_EQ(root["sensor"]["payload_bytes"].as<int>(), 128);
  EXPECT_FALSE(root["flight_recorder"]["enabled"].as<bool>());
}

TEST(Override, IndexesAndAppendsToLists) {
  std::string p = write_temp("outputs:\n  - type: stdout\n    format: json\n");
  auto c = load_config(p);
  ASSERT_TRUE(c);
  ASSERT_TRUE(apply_override(*c, "outputs.0.format=text"));
  ASSERT_TRUE(apply_override(*c, "outputs.1.type=file"));
  ASSERT_TRUE(apply_override(*c, "outputs.1.path=/tmp/alerts.json"));
  ASSERT_EQ((*c)["outputs"].size(), 2u);
  EXPECT_EQ((*c)["outputs"][0]["format"].as<std::string>(), "text");
  EXPECT_EQ((*c)["outputs"][1]["path"].as<std::string>(), "/tmp/alerts.json");
  std::remove(p.c_str());
}

TEST(Override, RejectsMalformedOverrides) {
  YAML::Node root(YAML::NodeType::Map);
  EXPECT_FALSE(apply_override(root, "novalue"));
  EXPECT_FALSE(apply_override(root, "=x"));
  EXPECT_FALSE(apply_override(root, "a..b=1"));
  EXPECT_FALSE(apply_override(root, "list.5=1"));  // creates a list, index past its end
  ASSERT_TRUE(apply_override(root, "scalar=1"));
  EXPECT_FALSE(apply_override(root, "scalar.x=1"));
}

TEST(GetOr, DefaultsAndTypeErrors) {
  YAML::Node root = YAML::Load("sensor:\n  payload_bytes: lots\n  ringbuf_mib: 16\n");
  auto missing = get_or<int>(root, "sensor.usage_interval_ms", 10000);
  ASSERT_TRUE(missing);
  EXPECT_EQ(*missing, 10000);
  auto present = get_or<int>(root, "sensor.ringbuf_mib", 8);
  ASSERT_TRUE(present);
  EXPECT_EQ(*present, 16);
  auto bad = get_or<int>(root, "sensor.payload_bytes", 256);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("sensor.payload_bytes"), std::string::npos);
  EXPECT_NE(bad.error().message.find("line 2"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace vigil::cli
