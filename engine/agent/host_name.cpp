#include "engine/agent/host_name.h"

#include <unistd.h>

#include <cstdlib>

namespace vigil::agent {

std::string host_name(const YAML::Node& cfg) {
  if (cfg["hostname"] && cfg["hostname"].IsScalar()) return cfg["hostname"].as<std::string>();
  if (const char* node = std::getenv("NODE_NAME"); node != nullptr && *node != '\0') return node;
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) == 0) return buf;
  return "localhost";
}

}  // namespace vigil::agent
