#include "engine/agent/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace vigil::agent {

std::shared_ptr<spdlog::logger> make_logger(const std::string& name, const std::string& level) {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>(spdlog::color_mode::automatic);
  auto log = std::make_shared<spdlog::logger>(name, sink);
  log->set_level(spdlog::level::from_str(level));
  log->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");
  return log;
}

int fail(spdlog::logger& log, const Error& err) {
  log.error("{}", err.message);
  log.flush();
  return err.kind == Error::Kind::kBadInput ? 2 : 1;
}

}  // namespace vigil::agent
