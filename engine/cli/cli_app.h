// What every vigil subcommand shares about its command line (CLI11): how a
// parse error is reported and which exit code it gets.
//
//   CLI::App app{"...", "vigil"};
//   cli::set_error_style(app);
//   try {
//     app.parse(argc, argv);
//   } catch (const CLI::ParseError& e) {
//     return cli::exit_code(app, e);
//   }
//
// Exit codes follow DESIGN.md: --help (and --version) print to stdout and
// give 0; every other parse error (unknown option, missing argument, bad
// value) prints one message naming the command to stderr and gives 2.
#pragma once

#include <string>

namespace CLI {
class App;
class ParseError;
}  // namespace CLI

namespace vigil::cli {

// Parse errors read "vigil rules list: <what>" followed by a hint at --help.
// Subcommands added afterwards inherit it.
void set_error_style(CLI::App& app);
// Prints what the parse error calls for (help, or the error) and returns the
// exit code: 0 for help, 2 otherwise.
int exit_code(CLI::App& app, const CLI::ParseError& e);
// "vigil rules test": the names from the top-level app down to the deepest
// subcommand that was given on the command line.
std::string command_path(const CLI::App& app);

}  // namespace vigil::cli
