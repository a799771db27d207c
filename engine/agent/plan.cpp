#include "engine/agent/plan.h"

#include "engine/agent/log.h"
#include "engine/agent/steps/steps.h"

namespace vigil::agent {

int run(Agent& a, const Plan& plan) {
  for (const Step& step : plan.steps) {
    if (Status s = step.fn(a); !s) {
      const int rc = fail(*a.log, s.error());
      if (plan.on_failure) plan.on_failure(a);
      return rc;
    }
  }
  return a.exit_code;
}

Plan run_plan() {
  return {"run",
          {{"start loop", steps::start_loop},
           {"load configuration", steps::load_config},
           {"read agent settings", steps::read_agent_settings},
           {"load plugins", steps::load_plugins},
           {"load rules", steps::load_rules},
           {"start outputs", steps::start_outputs},
           {"seed state", steps::seed_state},
           {"discover kubernetes", steps::discover_k8s},
           {"watch pods", steps::watch_pods},
           {"ask the container runtime", steps::watch_runtime},
           {"start recording", steps::start_recording},
           {"open sources", steps::open_sources},
           {"check posture", steps::check_posture},
           {"start baselines", steps::start_baselines},
           {"build pipeline", steps::build_pipeline},
           {"watch files", steps::watch_files},
           {"say ready", steps::say_ready},
           {"start web server", steps::start_webserver},
           {"start heartbeat", steps::start_heartbeat},
           {"run", steps::run},
           {"stop", steps::stop}},
          steps::stop_outputs_on_failure};
}

Plan capture_plan() {
  return {"capture",
          {{"start loop", steps::start_loop},
           {"load configuration", steps::load_config},
           {"discover kubernetes", steps::discover_k8s},
           {"load plugins", steps::load_plugins},
           {"compile filter", steps::compile_filter},
           {"seed state", steps::seed_state},
           {"watch pods", steps::watch_pods},
           {"ask the container runtime", steps::watch_runtime},
           {"start capture file", steps::start_capture_file},
           {"open sources", steps::open_capture_sources},
           {"check posture", steps::check_posture},
           {"build pipeline", steps::build_capture_pipeline},
           {"say ready", steps::say_capture_ready},
           {"run", steps::run},
           {"stop", steps::stop_capture}}};
}

Plan replay_plan() {
  return {"replay",
          {{"start loop", steps::start_loop},
           {"load configuration", steps::load_config},
           {"load plugins", steps::load_plugins},
           {"compile filter", steps::compile_filter},
           {"open capture", steps::open_capture},
           {"load rules", steps::load_replay_rules},
           {"start outputs", steps::start_replay_outputs},
           {"select events", steps::select_events},
           {"load baselines", steps::load_replay_baselines},
           {"build pipeline", steps::build_replay_pipeline},
           {"run", steps::run},
           {"stop", steps::stop_replay}}};
}

}  // namespace vigil::agent
