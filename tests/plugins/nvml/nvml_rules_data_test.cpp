// Checks the nvml plugin's bundled rules and rule tests against the plugin
// itself (through its C ABI), since their plugin parts cannot be read by eye:
// every nvml.* field the rules name is one the plugin has, each rule is an
// nvml rule with its category tag, and every pluginevent's data_hex in the
// rule tests is a record the extractor accepts and that agrees with its
// event (pid, gpu_minor, name).
#include "tests/plugins/nvml/plugin_harness.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <set>
#include <string>
#include <vector>

namespace vigil::nvml::test {
namespace {

const std::string kRulesDir = std::string(VIGIL_SOURCE_ROOT) + "/plugins/nvml/rules/";

// The nvml.* field names in a condition or output.
std::vector<std::string> nvml_fields(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t at = text.find("nvml."); at != std::string::npos; at = text.find("nvml.", at)) {
    std::size_t end = at;
    while (end < text.size() &&
           (std::islower(static_cast<unsigned char>(text[end])) ||
            std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '_' || text[end] == '.')) {
      ++end;
    }
    std::string name = text.substr(at, end - at);
    while (!name.empty() && name.back() == '.') name.pop_back();
    // nvml_* macro names are not fields; a field starts right after a non-name byte.
    bool starts = at == 0 || !(std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_' ||
                               text[at - 1] == '.');
    if (starts) out.push_back(name);
    at = end;
  }
  return out;
}

std::vector<std::uint8_t> from_hex(const std::string& hex) {
  std::vector<std::uint8_t> out;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) return {};
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return {};
    out.push_back(static_cast<std::uint8_t>(hi << 4 | lo));
  }
  return out;
}

class NvmlRulesData : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(lib_.ok()) << lib_.error();
    char err[256] = {};
    state_ = lib_.init(host_.host(), R"({"nvml_library": "/nonexistent/libnvidia-ml.so.1"})", err, sizeof err);
    ASSERT_NE(state_, nullptr) << err;
  }
  void TearDown() override {
    if (state_ != nullptr) lib_.destroy(state_);
  }

  PluginLib lib_{VIGIL_NVML_PLUGIN};
  RecordingHost host_;
  vigil_plugin_state* state_ = nullptr;
};

TEST_F(NvmlRulesData, RulesNameOnlyTheFieldsThePluginHas) {
  YAML::Node doc = YAML::LoadFile(kRulesDir + "nvml_rules.yaml");
  ASSERT_TRUE(doc.IsSequence());
  std::set<std::string> tags;
  int rules = 0;
  int fields = 0;
  for (const auto& item : doc) {
    std::string text;
    if (item["condition"]) text += item["condition"].as<std::string>();
    if (item["output"]) text += " " + item["output"].as<std::string>();
    for (const std::string& f : nvml_fields(text)) {
      EXPECT_GE(lib_.field_index(f), 0) << "no field " << f;
      ++fields;
    }
    if (!item["rule"]) continue;
    ++rules;
    EXPECT_EQ(item["source"].as<std::string>(""), "nvml") << item["rule"].as<std::string>();
    ASSERT_TRUE(item["tags"].IsSequence()) << item["rule"].as<std::string>();
    tags.insert(item["tags"][0].as<std::string>());
  }
  EXPECT_EQ(rules, 5);
  EXPECT_GT(fields, 10);
  EXPECT_EQ(tags, (std::set<std::string>{"gpu_device_access", "crypto_mining"}));
}

TEST_F(NvmlRulesData, EveryTestEventIsARecordThatAgreesWithItsEvent) {
  YAML::Node doc = YAML::LoadFile(kRulesDir + "nvml_rules_test.yaml");
  ASSERT_TRUE(doc["tests"].IsSequence());
  uint32_t nfields = 0;
  const vigil_field_info* info = lib_.get_fields(&nfields);
  int events = 0;
  for (const auto& t : doc["tests"]) {
    std::string name = t["name"].as<std::string>();
    const uint32_t test_pid = t["process"]["pid"].as<uint32_t>();
    for (const auto& e : t["events"]) {
      if (e["type"].as<std::string>() != "pluginevent") continue;
      // An event's own process (merged over the test's) names the sample's pid.
      const uint32_t pid = e["process"] && e["process"]["pid"] ? e["process"]["pid"].as<uint32_t>() : test_pid;
      ++events;
      const YAML::Node& p = e["plugin"];
      EXPECT_EQ(p["plugin"].as<std::string>(), "nvml") << name;
      EXPECT_EQ(p["source"].as<std::string>(), "nvml") << name;
      std::string ev_name = p["name"].as<std::string>();
      std::vector<std::uint8_t> data = from_hex(p["data_hex"].as<std::string>());
      ASSERT_FALSE(data.empty()) << name << ": data_hex is not hex";
      vigil_event ev{};
      ev.pid = pid;
      ev.gpu_minor = p["gpu_minor"].as<int32_t>();
      ev.name = ev_name.c_str();
      ev.data = data.data();
      ev.data_len = static_cast<uint32_t>(data.size());
      std::vector<vigil_extract_request> reqs(nfields);
      for (uint32_t i = 0; i < nfields; ++i) reqs[i].field = i;
      ASSERT_EQ(lib_.extract(state_, &ev, reqs.data(), nfields), VIGIL_RC_OK)
          << name << ": " << lib_.get_last_error(state_);
      for (uint32_t i = 0; i < nfields; ++i) {
        std::string f = info[i].name;
        if (f == "nvml.event") {
          EXPECT_STREQ(reqs[i].value.str, ev_name.c_str()) << name;
        } else if (f == "nvml.pid") {
          EXPECT_EQ(reqs[i].value.u64, pid) << name;
        } else if (f == "nvml.device.minor") {
          EXPECT_EQ(reqs[i].has_value, 1u) << name;
          EXPECT_EQ(static_cast<int64_t>(reqs[i].value.u64), ev.gpu_minor) << name;
        }
      }
    }
  }
  EXPECT_GE(events, 10);
}

}  // namespace
}  // namespace vigil::nvml::test
