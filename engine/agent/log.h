// The agent's logger and how an error becomes an exit code: one line on
// stderr (stdout belongs to alerts), then 2 for bad input, 1 for a runtime
// failure (DESIGN.md, exit codes).
#pragma once

#include <memory>
#include <string>

#include <spdlog/spdlog.h>

#include "engine/util/result.h"

namespace vigil::agent {

// A logger on stderr (stdout belongs to alerts). level: trace..error.
std::shared_ptr<spdlog::logger> make_logger(const std::string& name, const std::string& level);

// Logs the error as one line and returns its exit code (2 bad input, 1 runtime).
int fail(spdlog::logger& log, const Error& err);

}  // namespace vigil::agent
