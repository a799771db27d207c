#include "engine/cli/cli_app.h"

#include <CLI/CLI.hpp>

#include <iostream>

namespace vigil::cli {
namespace {

const CLI::App* deepest_selected(const CLI::App& app) {
  const CLI::App* at = &app;
  for (;;) {
    auto subs = at->get_subcommands();
    if (subs.empty()) return at;
    at = subs.front();
  }
}

}  // namespace

std::string command_path(const CLI::App& app) {
  std::string path;
  for (const CLI::App* a = deepest_selected(app); a; a = a->get_parent()) {
    path = path.empty() ? a->get_name() : a->get_name() + " " + path;
  }
  return path;
}

void set_error_style(CLI::App& app) {
  app.failure_message([](const CLI::App* failed, const CLI::Error& e) {
    // `failed` is the app exit() was called on; name the command the user ran.
    const CLI::App* top = failed;
    while (top->get_parent()) top = top->get_parent();
    std::string cmd = command_path(*top);
    return cmd + ": " + e.what() + "\nRun '" + cmd + " --help' for usage.\n";
  });
}

int exit_code(CLI::App& app, const CLI::ParseError& e) {
  const int code = app.exit(e, std::cout, std::cerr);
  return code == 0 ? 0 : 2;
}

}  // namespace vigil::cli
