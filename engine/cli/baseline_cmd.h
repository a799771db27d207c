// `vigil baseline list|show|lock`: works on the profile files of the
// per-workload baselines (also while an agent runs: it picks up a lock through
// its watch on the directory). The `baseline:` section and the baselines'
// wiring into run and replay are engine/agent/baselines.h.
#pragma once

namespace vigil::cli {

// `vigil baseline ...` (argv[0] is "baseline").
int cmd_baseline(int argc, char** argv);

}  // namespace vigil::cli
