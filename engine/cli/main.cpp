// The vigil command line: one binary, one subcommand per job.
#include <cstdio>
#include <cstring>
#include <string_view>

#include "engine/cli/capture_cmd.h"
#include "engine/cli/rules_cmd.h"
#include "engine/cli/run_cmd.h"
#include "engine/util/version.h"

namespace {

void usage(std::FILE* out) {
  std::fputs(
      "usage: vigil <command> [options]\n"
      "\n"
      "commands:\n"
      "  run              live monitoring (alerts on stdout by default)\n"
      "  replay FILE      run the rules over a capture file, exactly as live\n"
      "  capture -w FILE  record events to a capture file\n"
      "  rules validate|list|test   rule authoring\n"
      "  fields           the field catalogue\n"
      "  version          print the version\n"
      "\n"
      "`vigil <command> --help` describes each command. Documentation: docs/ in the source tree.\n",
      out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string_view cmd = argv[1];
  // Each command sees argv starting at its own name.
  int sub_argc = argc - 1;
  char** sub_argv = argv + 1;
  if (cmd == "run") return vigil::cli::cmd_run(sub_argc, sub_argv);
  if (cmd == "rules") return vigil::cli::cmd_rules(sub_argc, sub_argv);
  if (cmd == "fields") return vigil::cli::cmd_fields(sub_argc, sub_argv);
  if (cmd == "capture") return vigil::cli::cmd_capture(sub_argc, sub_argv);
  if (cmd == "replay") return vigil::cli::cmd_replay(sub_argc, sub_argv);
  if (cmd == "version" || cmd == "--version") {
    std::printf("vigil %s\n", vigil::kVersion);
    return 0;
  }
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    usage(stdout);
    return 0;
  }
  std::fprintf(stderr, "vigil: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
