// The vigil command line: one binary, one subcommand per job, parsed with
// CLI11 so that every command has generated --help and the same error and
// exit-code conventions (engine/cli/cli_app.h).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "engine/cli/baseline_cmd.h"
#include "engine/cli/capture_cmd.h"
#include "engine/cli/cli_app.h"
#include "engine/cli/rules_cmd.h"
#include "engine/cli/run_cmd.h"
#include "engine/util/version.h"

namespace {

using CommandMain = int (*)(int argc, char** argv);

// run, capture and replay read their own options (run_cmd.cpp,
// capture_cmd.cpp): here they are only named, and everything after the name
// reaches them unparsed, --help included.
CLI::App* add_own_parser_command(CLI::App& app, const char* name, const char* description) {
  CLI::App* sub = app.add_subcommand(name, description);
  sub->prefix_command();
  sub->set_help_flag();
  return sub;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vigil: runtime security for GPU nodes", "vigil"};
  vigil::cli::set_error_style(app);
  app.set_version_flag("--version", std::string("vigil ") + vigil::kVersion, "print the version");

  struct Delegated {
    CLI::App* sub;
    CommandMain main;
  };
  const Delegated delegated[] = {
      {add_own_parser_command(app, "run", "live monitoring (alerts on stdout by default)"), vigil::cli::cmd_run},
      {add_own_parser_command(app, "replay", "run the rules over a capture file, exactly as live"),
       vigil::cli::cmd_replay},
      {add_own_parser_command(app, "capture", "record events to a capture file"), vigil::cli::cmd_capture},
      {add_own_parser_command(app, "baseline", "per-workload baselines: list, show, lock"), vigil::cli::cmd_baseline},
  };
  int exit_code = 0;
  vigil::cli::add_rules_commands(app, &exit_code);
  CLI::App* version = app.add_subcommand("version", "print the version");
  CLI::App* help = app.add_subcommand("help", "print this help");
  // After the subcommands, which would inherit it.
  app.footer(
      "`vigil <command> --help` describes each command. Documentation: docs/ in the source "
      "tree.");
  // The top level's own help, even when a subcommand (help) was selected.
  auto top_help = [&app] { return app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal); };

  // A delegated command named first gets the rest of argv as is. Parsed here
  // instead, a value that is another command's name ("vigil run -r rules -r
  // f.yaml -o k=v") would switch the parser to that command.
  if (argc >= 2) {
    for (const auto& d : delegated)
      if (d.sub->get_name() == argv[1]) return d.main(argc - 1, argv + 1);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return vigil::cli::exit_code(app, e);
  }
  for (const auto& d : delegated) {
    if (!d.sub->parsed()) continue;
    // The command sees argv from its own name on, exactly as given.
    int at = 1;
    while (at < argc && d.sub->get_name() != argv[at]) ++at;
    return d.main(argc - at, argv + at);
  }
  if (version->parsed()) {
    std::printf("vigil %s\n", vigil::kVersion);
    return 0;
  }
  if (help->parsed()) {
    std::cout << top_help();
    return 0;
  }
  if (app.get_subcommands().empty()) {
    std::cerr << top_help();
    return 2;
  }
  return exit_code;
}
