// Where each value of a configuration came from, so that an error about it
// can name the place a person has to edit: the file with the value's line and
// column, or the `-o KEY=VALUE` override that set it.
//
//   ConfigOrigin o("/etc/vigil/vigil.yaml");
//   o.add_override("sensor.ringbuf_mib", "sensor.ringbuf_mib=abc");
//   o.error({"sensor", "ringbuf_mib"}, node, "expected an integer")
//     -> "-o sensor.ringbuf_mib=abc: sensor.ringbuf_mib: expected an integer"
//
// A key path is a list of parts from the root: mapping keys, and list
// indexes as decimal strings ({"outputs", "2", "url"}). Cheap to copy;
// immutable after set-up, so safe to share between threads.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "engine/util/result.h"

namespace vigil {

class ConfigOrigin {
 public:
  // `file`: the configuration file ("" when there is none).
  explicit ConfigOrigin(std::string file = "");

  // Records that `-o text` set the value at `dotted_key` ("outputs.0.format").
  // Later overrides win over earlier ones, as when they were applied.
  void add_override(std::string_view dotted_key, std::string text);

  // "FILE:LINE:COL" for a value read from the file; "-o KEY=VALUE" for one
  // an override set or created; the file name alone (or "configuration")
  // when neither is known. `node` is the value, or the key for an unknown
  // key, or the nearest enclosing value for a missing one.
  std::string where(const std::vector<std::string>& path, const YAML::Node& node) const;

  // Error::bad_input("<where>: <key path>: <why>").
  Error error(const std::vector<std::string>& path, const YAML::Node& node, const std::string& why) const;

  // The key path as people read it: "outputs[2].queue.max_events" (each
  // part cut at 64 characters).
  static std::string display(const std::vector<std::string>& path);
  // "a.0.b" -> {"a", "0", "b"}.
  static std::vector<std::string> split(std::string_view dotted);

  const std::string& file() const { return file_; }

 private:
  struct Override {
    std::vector<std::string> path;
    std::string text;
  };
  std::string file_;
  std::vector<Override> overrides_;
};

}  // namespace vigil
