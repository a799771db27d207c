// The agent's life cycle as data: an ordered list of named steps per command.
// Each step is one function over the Agent (steps/steps.h, one file each);
// run() calls them in order and stops at the first that fails, with that
// error's exit code (2 bad input, 1 runtime). The last steps of a plan run
// the loop and stop: their result is the command's exit code.
//
//   vigil run:     start loop, load configuration, read agent settings, load
//                  plugins, load rules, start outputs, seed state, discover
//                  Kubernetes, watch pods, start recording, open sources,
//                  start baselines, build pipeline, watch files, say ready,
//                  start web server, start heartbeat, run, stop
//   vigil capture: start loop, load configuration, discover Kubernetes, load
//                  plugins, compile filter, seed state, watch pods, start
//                  capture file, open sources, build pipeline, say ready,
//                  run, stop
//   vigil replay:  start loop, load configuration, load plugins, compile
//                  filter, open capture, load rules, start outputs, select
//                  events, load baselines, build pipeline, run, stop
//
// Reload (SIGHUP, a watched file) is a step too (steps/reload.cpp), run by
// the runner off the loop; it prepares everything, then swaps it in between
// two events, or changes nothing.
#pragma once

#include <string_view>
#include <vector>

#include "engine/agent/agent.h"
#include "engine/util/result.h"

namespace vigil::agent {

struct Step {
  std::string_view name;
  Status (*fn)(Agent&);
};

struct Plan {
  std::string_view command;
  std::vector<Step> steps;
  // Called after a step failed (its error logged): what the steps before it
  // started that must stop in an orderly way. Null: the destructors do it.
  void (*on_failure)(Agent&) = nullptr;
};

// Runs the steps in order: the exit code (the last step's, a.exit_code; or
// that of the first step that failed).
int run(Agent& a, const Plan& plan);

Plan run_plan();
Plan capture_plan();
Plan replay_plan();

}  // namespace vigil::agent
