#include "engine/config/config.h"
#include "engine/config/config_schema.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

namespace vigil::config {
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
  for (const std::string& text :
       {std::string(100000, '['), std::string(100000, '{'), "sensor:\n  x: " + std::string(100000, '[')}) {
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

// Bounded memory: an endless file is refused after 16 MiB, not read whole.
TEST(Config, OversizedFileIsRefused) {
  auto c = load_config("/dev/zero");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, "/dev/zero: the configuration file is larger than 16 MiB");
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
  // The position is load_config's to give (the file's line or the -o);
  // get_or names the key and the schema's reason.
  EXPECT_EQ(bad.error().message,
            "config key 'sensor.payload_bytes': expected a whole number from 0 to 4096, got 'lots'");
}

// A section reader cannot accept what the schema refuses: get_or checks the
// key's entry (type and range), not only the conversion to T.
TEST(GetOr, GoesThroughTheSchema) {
  YAML::Node root = YAML::Load("sensor: {ringbuf_mib: 3}\nflight_recorder: {window_s: 4000, min_priority: loud}\n");
  auto rb = get_or<std::uint32_t>(root, "sensor.ringbuf_mib", 8);
  ASSERT_FALSE(rb);
  EXPECT_EQ(rb.error().message, "config key 'sensor.ringbuf_mib': must be a power of two from 1 to 1024, got 3");
  auto w = get_or<double>(root, "flight_recorder.window_s", 30);
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().message, "config key 'flight_recorder.window_s': must be from 0 to 3600, got 4000");
  auto p = get_or<std::string>(root, "flight_recorder.min_priority", "Critical");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("unknown priority 'loud'"), std::string::npos) << p.error().message;
}

// ---------------------------------------------------------------- issue 16, item 7
// One schema for the file and every -o; each error names where the value
// came from (FILE:LINE:COL or the -o) and the key's path.

struct Checked {
  std::string message;  // "" when the configuration loaded
};
Checked load(const std::string& text, const std::vector<std::string>& overrides, std::string* path_out) {
  std::string p = write_temp(text);
  auto c = load_config(p, overrides);
  std::remove(p.c_str());
  *path_out = p;
  return {c ? "" : c.error().message};
}

TEST(ConfigSchema, TyposInEverySectionAreErrorsWithFileLineAndKey) {
  struct Case {
    std::string text, expected;  // expected after "FILE:"
  } cases[] = {
      {"sensor:\n  ringbuff_mib: 8\n",
       "2:3: sensor.ringbuff_mib: unknown key (known: payload_bytes, ringbuf_mib, usage_interval_ms, "
       "egress_interval_ms, egress_window_s, wakeup_kib, kmsg_path, identify_exe, ioctl_cache, watch_comm_prefix)"},
      {"flight_recorder:\n  enabled: true\n  windw_s: 3\n",
       "3:3: flight_recorder.windw_s: unknown key (known: enabled, dir, window_s, after_s, max_mib, "
       "min_priority, keep, max_disk_mib)"},
      {"k8s:\n  node: n\n",
       "2:3: k8s.node: unknown key (known: api, token_file, ca_file, kubeconfig, "
       "node_name, pod_grace_s, metadata_wait_ms, metadata_wait_max_alerts)"},
      {"state_dir: /var/lib/vigil\nstatedir: /x\n",
       "2:1: statedir: unknown key (known: rules, hostname, state_dir, outputs, append_output, sensor, k8s, "
       "state, cri, plugins, load_plugins, prevention, posture, aggregation, heartbeat, webserver, "
       "flight_recorder, baseline)"},
      {"baseline:\n  enabled: true\n  learn_for: 3600\n",
       "3:3: baseline.learn_for: unknown key (known: enabled, dir, key, learn_for_s, save_interval_s, v4_prefix, "
       "v6_prefix, ephemeral_from, watch_paths, max_workloads, max_exes, max_destinations, max_files, "
       "max_gpu_classes)"},
      {"baseline:\n  key: pod\n", "2:8: baseline.key: expected image, image_digest or owner, got 'pod'"},
      {"baseline:\n  v4_prefix: 33\n", "2:14: baseline.v4_prefix: must be from 0 to 32, got 33"},
      {"plugins:\n  - {name: nvml, libary_path: x.so}\n",
       "2:18: plugins[0].libary_path: unknown key (known: name, library_path, init_config)"},
      {"outputs:\n  - type: stdout\n    formt: json\n", "3:5: outputs[0].formt: unknown key"},
      {"append_output:\n  - match: {rule: x, tag: [a]}\n",
       "2:22: append_output[0].match.tag: unknown key (known: source, tags, rule)"},
      {"outputs:\n  - type: file\n    path: /x\n    rotate: {max_byte: 5}\n",
       "4:14: outputs[0].rotate.max_byte: unknown key"},
  };
  for (const Case& c : cases) {
    std::string p;
    Checked r = load(c.text, {}, &p);
    EXPECT_EQ(r.message, p + ":" + c.expected) << c.text;
  }
}

TEST(ConfigSchema, WrongTypesAndRangesAreErrorsWithFileLineAndKey) {
  struct Case {
    std::string text, expected;
  } cases[] = {
      {"hostname: [a, b]\n", "1:11: hostname: expected a string, got a list"},
      {"k8s: 5\n",
       "1:6: k8s: expected a mapping of api, token_file, ca_file, kubeconfig, node_name, pod_grace_s, "
       "metadata_wait_ms, metadata_wait_max_alerts; "
       "got '5'"},
      {"sensor: [1]\n",
       "1:9: sensor: expected a mapping of payload_bytes, ringbuf_mib, usage_interval_ms, "
       "egress_interval_ms, egress_window_s, wakeup_kib, kmsg_path, identify_exe, ioctl_cache, watch_comm_prefix; got a list"},
      {"sensor:\n  ringbuf_mib: abc\n", "2:16: sensor.ringbuf_mib: expected a whole number from 1 to 1024, got 'abc'"},
      {"sensor:\n  ringbuf_mib: 12\n", "2:16: sensor.ringbuf_mib: must be a power of two from 1 to 1024, got 12"},
      {"sensor:\n  payload_bytes: -1\n",
       "2:18: sensor.payload_bytes: expected a whole number from 0 to 4096, got '-1'"},
      {"sensor:\n  ringbuf_mib: 1\n  wakeup_kib: 600\n",
       "3:15: sensor.wakeup_kib: must be at most half of sensor.ringbuf_mib (512)"},
      {"flight_recorder: {after_s: 1e99}\n", "1:28: flight_recorder.after_s: must be from 0 to 3600, got 1e99"},
      {"k8s: {pod_grace_s: 7200}\n", "1:20: k8s.pod_grace_s: must be from 0 to 3600, got 7200"},
      {"k8s: {metadata_wait_ms: 120000}\n", "1:25: k8s.metadata_wait_ms: must be from 0 to 60000, got 120000"},
      {"flight_recorder: {enabled: maybe}\n", "1:28: flight_recorder.enabled: expected true or false, got 'maybe'"},
      {"rules: {a: 1}\n", "1:8: rules: expected a path or a list of paths"},
      {"load_plugins: nvml\n", "1:15: load_plugins: expected a list of names"},
      {"outputs: stdout\n", "1:10: outputs: expected a list of outputs"},
      {"append_output: true\n",
       "1:16: append_output: expected a list of {match, extra_output, extra_fields, suggested_output}"},
      {"append_output:\n  - suggested_output: 1.5\n",
       "2:23: append_output[0].suggested_output: expected true or false"},
      {"outputs:\n  - type: syslog\n    address: tcpx://x\n", "3:14: outputs[0].address: "},
      {"outputs:\n  - type: webhook\n", "2:5: outputs[0].url: required, http:// or https://"},
      {"outputs:\n  - type: stdout\n    queue: {max_events: 0}\n",
       "3:25: outputs[0].queue.max_events: must be between 1 and 10000000"},
  };
  for (const Case& c : cases) {
    std::string p;
    Checked r = load(c.text, {}, &p);
    EXPECT_EQ(r.message.substr(0, p.size() + 1 + c.expected.size()), p + ":" + c.expected) << c.text;
  }
}

TEST(ConfigSchema, OverridesAreCheckedAndNamedInErrors) {
  struct Case {
    std::vector<std::string> overrides;
    std::string expected;
  } cases[] = {
      {{"nonexistent.key=1"},
       "-o nonexistent.key=1: nonexistent: unknown key (known: rules, hostname, state_dir, outputs, "
       "append_output, sensor, k8s, state, cri, plugins, load_plugins, prevention, posture, aggregation, "
       "heartbeat, webserver, flight_recorder, baseline)"},
      {{"sensor.ringbuf_mib=abc"},
       "-o sensor.ringbuf_mib=abc: sensor.ringbuf_mib: expected a whole number from 1 to 1024, got 'abc'"},
      {{"sensor.ringbuff_mib=8"},
       "-o sensor.ringbuff_mib=8: sensor.ringbuff_mib: unknown key (known: "
       "payload_bytes, ringbuf_mib, usage_interval_ms, egress_interval_ms, egress_window_s, wakeup_kib, kmsg_path, identify_exe, "
       "ioctl_cache, watch_comm_prefix)"},
      {{"sensor={ringbuff_mib: 8}"}, "-o sensor={ringbuff_mib: 8}: sensor.ringbuff_mib: unknown key"},
      {{"k8s=5"}, "-o k8s=5: k8s: expected a mapping of"},
      {{"hostname=[a, b]"}, "-o hostname=[a, b]: hostname: expected a string, got a list"},
      {{"outputs.0.format=xml"}, "-o outputs.0.format=xml: outputs[0].format: unknown format 'xml'"},
      {{"outputs.1.type=file"}, "-o outputs.1.type=file: outputs[1].path: required"},
      // A Falco user's `-o append_output...` (one past the end appends an entry).
      {{"append_output.0.suggested_output=perhaps"},
       "-o append_output.0.suggested_output=perhaps: append_output[0].suggested_output: expected true or false"},
      // The later override wins, and is the one named.
      {{"sensor.ringbuf_mib=8", "sensor.ringbuf_mib=7"},
       "-o sensor.ringbuf_mib=7: sensor.ringbuf_mib: must be a power of two"},
  };
  for (const Case& c : cases) {
    std::string p;
    Checked r = load("sensor:\n  ringbuf_mib: 16\noutputs:\n  - type: stdout\n", c.overrides, &p);
    EXPECT_EQ(r.message.substr(0, c.expected.size()), c.expected) << c.overrides.back();
    EXPECT_EQ(r.message.find("line 1"), std::string::npos) << r.message;
  }
  // A value of the file an override did not touch is still named by its line.
  std::string p;
  Checked r = load("sensor:\n  ringbuf_mib: 12\n", {"sensor.payload_bytes=128"}, &p);
  EXPECT_EQ(r.message, p + ":2:16: sensor.ringbuf_mib: must be a power of two from 1 to 1024, got 12");
}

// Issue 16, item 10: k8s.insecure, an undocumented "tests only" key, turned
// TLS verification of the API server off. No configuration turns it off now.
TEST(ConfigSchema, K8sInsecureIsNotAConfigurationKey) {
  std::string p;
  Checked r = load("k8s:\n  api: https://10.0.0.1:6443\n  insecure: true\n", {}, &p);
  EXPECT_EQ(r.message, p + ":3:3: k8s.insecure: unknown key (known: api, token_file, ca_file, kubeconfig, "
                           "node_name, pod_grace_s, metadata_wait_ms, metadata_wait_max_alerts)");
  r = load("", {"k8s.insecure=true"}, &p);
  EXPECT_EQ(r.message,
            "-o k8s.insecure=true: k8s.insecure: unknown key (known: api, token_file, ca_file, "
            "kubeconfig, node_name, pod_grace_s, metadata_wait_ms, metadata_wait_max_alerts)");
}

TEST(ConfigSchema, AValidConfigurationLoads) {
  std::string p;
  Checked r = load(R"(rules: [/etc/vigil/rules]
hostname: gpu-node-7
state_dir: /var/lib/vigil
outputs:
  - type: stdout
    format: text
sensor: {payload_bytes: 256, ringbuf_mib: 8, usage_interval_ms: 10000, wakeup_kib: 64, kmsg_path: /dev/kmsg,
         identify_exe: false, ioctl_cache: false}
k8s: {api: "https://10.0.0.1:6443", token_file: /t, ca_file: /c, kubeconfig: /k, node_name: n}
plugins:
  - {name: nvml, library_path: libvigil_nvml.so, init_config: {interval: 1s}}
load_plugins: [nvml]
flight_recorder: {enabled: true, dir: /f, window_s: 30, after_s: 5.5, max_mib: 16,
                  min_priority: Critical, keep: 20, max_disk_mib: 256}
)",
                   {"sensor.ringbuf_mib=16", "outputs.1.type=stdout", "outputs.1.name=second"}, &p);
  EXPECT_EQ(r.message, "");
}

// docs/install.md is the configuration's reference: its example loads, and
// it names every key of the schema.
TEST(ConfigSchema, InstallDocumentsEveryKeyAndItsExampleLoads) {
  std::ifstream in("docs/install.md");
  ASSERT_TRUE(in) << "run from the repository root";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const std::string start = "## Configuration";
  const std::size_t sec = doc.find(start);
  ASSERT_NE(sec, std::string::npos);
  const std::size_t a = doc.find("```yaml\n", sec);
  const std::size_t b = doc.find("```\n", a + 8);
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  std::string p;
  Checked r = load(doc.substr(a + 8, b - a - 8), {}, &p);
  EXPECT_EQ(r.message, "");
  for (const KeySpec& k : config_schema()) {
    const std::string_view last = k.path.substr(k.path.rfind('.') + 1);
    EXPECT_NE(doc.find(std::string(last) + ":", sec), std::string::npos) << k.path << " is not in docs/install.md";
  }
}

// What a reload names as needing a restart: the changed keys outside the
// live sections, section keys one by one, layout and key order ignored.
TEST(ChangedKeys, NamesTheKeysThatDifferOutsideTheSkippedOnes) {
  const YAML::Node before = YAML::Load(
      "rules: [a.yaml]\noutputs: [{type: stdout}]\nstate_dir: /var/lib/vigil\n"
      "sensor: {ringbuf_mib: 64, payload_bytes: 256}\nk8s: {api: 'https://k'}\n");
  const YAML::Node same = YAML::Load(
      "k8s:\n  api: https://k\nsensor: {payload_bytes: 256, ringbuf_mib: '64'}\n"
      "state_dir: /var/lib/vigil\nrules: [b.yaml]\noutputs: []\n");
  EXPECT_TRUE(changed_keys(before, same, {"rules", "outputs"}).empty());
  const YAML::Node after = YAML::Load(
      "rules: [a.yaml]\nstate_dir: /tmp/v\nsensor: {ringbuf_mib: 128, payload_bytes: 256}\n"
      "flight_recorder: {enabled: false}\nplugins: []\n");
  EXPECT_EQ(
      changed_keys(before, after, {"rules", "outputs"}),
      (std::vector<std::string>{"flight_recorder.enabled", "k8s.api", "plugins", "sensor.ringbuf_mib", "state_dir"}));
  EXPECT_EQ(changed_keys(YAML::Node(YAML::NodeType::Map), before, {}),
            (std::vector<std::string>{"k8s.api", "outputs", "rules", "sensor.payload_bytes", "sensor.ringbuf_mib",
                                      "state_dir"}));
}

}  // namespace
}  // namespace vigil::config
