// Runs `vigil capture ...` or `vigil replay ...` in-process, as main() would:
// args[0] is the command name.
#pragma once

#include <string>
#include <vector>

#include "engine/cli/capture_cmd.h"

namespace vigil::cli::testing {

inline int run_cli(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return args[0] == "replay" ? cmd_replay(static_cast<int>(args.size()), argv.data())
                             : cmd_capture(static_cast<int>(args.size()), argv.data());
}

}  // namespace vigil::cli::testing
