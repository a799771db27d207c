// Step "run": the loop, until SIGINT/SIGTERM, a failed source, --duration or
// --size, or the end of a capture. Its report goes to the stop step.
#include "engine/agent/steps/steps.h"

#include <chrono>

namespace vigil::agent::steps {

Status run(Agent& a) {
  const auto start = std::chrono::steady_clock::now();
  a.report = a.runner->run(*a.pipe);
  a.run_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {};
}

}  // namespace vigil::agent::steps
