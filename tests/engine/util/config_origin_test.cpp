#include "engine/util/config_origin.h"

#include <gtest/gtest.h>

namespace vigil {
namespace {

TEST(ConfigOrigin, NamesTheFileLineAndColumnOfAValueFromTheFile) {
  YAML::Node root = YAML::Load("sensor:\n  ringbuf_mib: 8\n");
  ConfigOrigin o("vigil.yaml");
  EXPECT_EQ(o.where({"sensor", "ringbuf_mib"}, root["sensor"]["ringbuf_mib"]), "vigil.yaml:2:16");
  EXPECT_EQ(o.error({"sensor", "ringbuf_mib"}, root["sensor"]["ringbuf_mib"], "too big").message,
            "vigil.yaml:2:16: sensor.ringbuf_mib: too big");
}

TEST(ConfigOrigin, NamesTheOverrideThatSetOrMadeAValue) {
  YAML::Node root = YAML::Load("sensor:\n  ringbuf_mib: 8\n");
  ConfigOrigin o("vigil.yaml");
  o.add_override("sensor.ringbuf_mib", "sensor.ringbuf_mib=abc");
  o.add_override("outputs.0.format", "outputs.0.format=text");
  o.add_override("sensor", "sensor={payload_bytes: 1}");
  o.add_override("sensor.ringbuf_mib", "sensor.ringbuf_mib=4");
  // At or below the path: the latest override there.
  EXPECT_EQ(o.where({"sensor", "ringbuf_mib"}, root["sensor"]["ringbuf_mib"]), "-o sensor.ringbuf_mib=4");
  EXPECT_EQ(o.where({"sensor", "payload_bytes"}, YAML::Node()), "-o sensor={payload_bytes: 1}");
  // A node an override made, with no position of its own: the first override below it.
  YAML::Node made(YAML::NodeType::Map);
  EXPECT_EQ(o.where({"outputs", "0"}, made), "-o outputs.0.format=text");
  // Nothing known: the file.
  EXPECT_EQ(o.where({"k8s"}, made), "vigil.yaml");
  EXPECT_EQ(ConfigOrigin().where({"k8s"}, made), "configuration");
}

TEST(ConfigOrigin, DisplaysKeyPathsAsPeopleReadThem) {
  EXPECT_EQ(ConfigOrigin::display({"outputs", "2", "queue", "max_events"}), "outputs[2].queue.max_events");
  EXPECT_EQ(ConfigOrigin::display({"sensor"}), "sensor");
  EXPECT_EQ(ConfigOrigin::split("a.0.b"), (std::vector<std::string>{"a", "0", "b"}));
  // A hostile key is not echoed whole.
  EXPECT_EQ(ConfigOrigin::display({"sensor", std::string(100000, 'k')}), "sensor." + std::string(64, 'k') + "...");
}

}  // namespace
}  // namespace vigil
