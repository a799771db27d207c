// `vigil run`: live monitoring. Loads the rules, attaches the probes, seeds the
// state from /proc, starts the pod watcher and the outputs, logs "ready", and
// processes events until SIGTERM/SIGINT (exit 0). SIGHUP reloads the rules
// (a reload that fails keeps the running rules). The life cycle is the
// agent's (engine/agent/plan.h, run_plan); this file only turns flags into
// its options.
// Exit codes: 0 clean stop, 1 runtime failure (no privileges, no BTF, a probe
// that cannot attach), 2 bad usage or bad input (a rule file or config error).
#pragma once

namespace vigil::cli {

int cmd_run(int argc, char** argv);

}  // namespace vigil::cli
