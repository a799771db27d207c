// own_paths and own_files (engine/agent/own_paths.h): which paths are vigil's own
// (vigil.file) and which of them the sensor's open filter takes as whole
// paths. A ConfigMap mounts files through symlinks (rules.yaml ->
// ..data/rules.yaml): a write through the link opens the real file, so both
// names must count.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/agent/own_paths.h"
#include "tests/support/temp_dir.h"

namespace vigil::agent {
namespace {

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(OwnPaths, ConfigRulesStateFlightRecorderAndCaptureWithTheirRealPaths) {
  support::TempDir d("vigil-own");
  ASSERT_TRUE(d.ok());
  const std::string real_cfg = d.write("..data/vigil.yaml", "state_dir: x\n");
  const std::string cfg_link = d.path() + "/vigil.yaml";
  d.symlink("vigil.yaml", "..data/vigil.yaml");
  const std::string rules_dir = d.path() + "/rules.d";
  d.write("rules.d/a.yaml", "[]\n");
  d.write("rules.d/notes.txt", "not rules\n");
  const YAML::Node cfg = YAML::Load("state_dir: " + d.path() + "/state/\nflight_recorder: {dir: /srv/flight}\n");
  const auto own = own_paths(cfg_link, {rules_dir + "/"}, cfg, "/tmp/../tmp/run.vcap");
  EXPECT_TRUE(has(own, cfg_link));
  EXPECT_TRUE(has(own, real_cfg)) << "the real path behind the symlink";
  EXPECT_TRUE(has(own, rules_dir)) << "no trailing '/'";
  EXPECT_TRUE(has(own, d.path() + "/state"));
  EXPECT_TRUE(has(own, "/srv/flight"));
  EXPECT_TRUE(has(own, "/tmp/run.vcap")) << "normalised";

  const auto files = own_files(cfg_link, {rules_dir}, "/tmp/run.vcap");
  EXPECT_TRUE(has(files, cfg_link));
  EXPECT_TRUE(has(files, real_cfg));
  EXPECT_TRUE(has(files, rules_dir + "/a.yaml")) << "a rule directory gives its rule files";
  EXPECT_FALSE(has(files, rules_dir + "/notes.txt"));
  EXPECT_FALSE(has(files, rules_dir)) << "a directory is no whole path";
  EXPECT_FALSE(has(files, d.path() + "/state"));
  EXPECT_TRUE(has(files, "/tmp/run.vcap"));
}

TEST(OwnPaths, TheFlightRecorderOffAddsNoDirectory) {
  const YAML::Node cfg = YAML::Load("state_dir: /var/lib/v\nflight_recorder: {enabled: false}\n");
  const auto own = own_paths("", {}, cfg, "");
  EXPECT_EQ(own, std::vector<std::string>{"/var/lib/v"});
}

}  // namespace
}  // namespace vigil::agent
