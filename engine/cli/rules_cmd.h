// `vigil rules validate|list|test` and `vigil fields`: the command lines of
// the rule authoring tools (CLI11). The work is done in engine/rules.
#pragma once

namespace CLI {
class App;
}

namespace vigil::cli {

// Adds `rules` (with validate, list and test) and `fields` to the top-level
// app. When the parse selects one of them, its callback runs the command and
// stores its exit code in *exit_code: 0 ok, 1 a rule test failed, 2 rules or
// tests that do not compile or cannot be read. *exit_code must outlive the parse.
void add_rules_commands(CLI::App& app, int* exit_code);

}  // namespace vigil::cli
