// What the subcommands share about their command lines: parsing with CLI11
// and the flags more than one command takes. The agent's life cycle (run,
// capture, replay) is engine/agent; a command here turns flags into its
// agent::Options and runs the agent's steps.
#pragma once

#include <string>
#include <vector>

#include "engine/agent/k8s.h"

namespace CLI {
class App;
}

namespace vigil::cli {

// Parses the arguments with CLI11 (argv[0] is the subcommand): -1 to go on,
// else the exit code: 0 after --help (the generated help on stdout), 2 for a
// usage error (the message on stderr).
int parse_cli(CLI::App& app, int argc, char** argv);
// A repeatable option that takes one value each time (-r A -r B), so that a
// positional argument after it is not taken as a second value.
void one_value_each(CLI::App& app, const std::string& name, std::vector<std::string>& out, const std::string& help);

// Adds --k8s-api, --k8s-token-file, --k8s-ca and --kubeconfig.
void add_k8s_flags(CLI::App& app, agent::K8sFlags& k8s);

}  // namespace vigil::cli
