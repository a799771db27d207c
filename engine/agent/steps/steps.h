// The agent's steps, one file each (the file is named after the step). Each
// makes or starts what its name says, stores it in the Agent, and returns an
// error (bad input or runtime) that stops the plan. plan.cpp lists them in
// order per command.
#pragma once

#include <atomic>
#include <memory>

#include "engine/agent/agent.h"
#include "engine/agent/live_sources.h"
#include "engine/runtime/runner.h"
#include "engine/util/result.h"

namespace vigil::agent::steps {

// start_loop.cpp: the runner (its signals blocked before any thread starts);
// vigil run's reload, capture's --duration and --size.
Status start_loop(Agent& a);
// load_config.cpp: the configuration file with the -o overrides and, when it
// has no outputs:, run's --format stdout output.
Status load_config(Agent& a);
// load_config.cpp: run's webserver: and heartbeat: sections.
Status read_agent_settings(Agent& a);
// load_plugins.cpp: the configuration's plugins, initialised; their fields
// and sources are known before the rules compile.
Status load_plugins(Agent& a);
// compile_filter.cpp: capture's and replay's --filter.
Status compile_filter(Agent& a);
// load_rules.cpp: run's rules, with the rule-count policy; replay's.
Status load_rules(Agent& a);
Status load_replay_rules(Agent& a);
// start_outputs.cpp: the output router (run; replay unless --events).
Status start_outputs(Agent& a);
Status start_replay_outputs(Agent& a);
// seed_state.cpp: the live state, seeded from /proc.
Status seed_state(Agent& a);
// watch_pods.cpp: where pods come from, then the pod watcher.
Status discover_k8s(Agent& a);
Status watch_pods(Agent& a);
// The container runtime's CRI socket, asked about new containers' pods.
Status watch_runtime(Agent& a);
// start_recording.cpp: run's --capture and flight recorder; capture's file.
Status start_recording(Agent& a);
Status start_capture_file(Agent& a);
// open_sources.cpp: the sensor, kmsg and plugin sources, for run's rules or
// capture's filter.
Status open_sources(Agent& a);
Status open_capture_sources(Agent& a);
// The node's GPU security posture: read once, then its source (check_posture.cpp).
Status check_posture(Agent& a);
// What run's live sources collect for rule set `rs` (its event types and open
// paths, vigil's own files); a reload's too.
Result<LiveSourcesConfig> run_sources_config(Agent& a, const rules::Ruleset& rs);
// open_capture.cpp: replay's capture file.
Status open_capture(Agent& a);
// select_events.cpp: what replay prints or writes beside alerts.
Status select_events(Agent& a);
// start_baselines.cpp: run's baselines; replay's, read only.
Status start_baselines(Agent& a);
Status load_replay_baselines(Agent& a);
// build_pipeline.cpp: the pipeline of each command, and its taps.
Status build_pipeline(Agent& a);
Status build_capture_pipeline(Agent& a);
Status build_replay_pipeline(Agent& a);
// watch_files.cpp: run's watch on the files a reload reads.
Status watch_files(Agent& a);
// ready.cpp: the "ready" line of run and of capture.
Status say_ready(Agent& a);
Status say_capture_ready(Agent& a);
// start_webserver.cpp: run's pod count for /metrics, then the metrics and
// health endpoint.
Status start_webserver(Agent& a);
// start_heartbeat.cpp: run's heartbeat records, from the loop.
Status start_heartbeat(Agent& a);
// run.cpp: the loop, until a signal, a failed source or the end of a capture.
Status run(Agent& a);
// stop.cpp: each command's orderly stop, and its exit code.
Status stop(Agent& a);
Status stop_capture(Agent& a);
Status stop_replay(Agent& a);
// stop.cpp: after a failed step of vigil run, the outputs started so far.
void stop_outputs_on_failure(Agent& a);

// reload.cpp: SIGHUP or a watched file changed. Runs on the runner's reload
// thread: reads the configuration (same file, same -o) and the rules it
// names, checks the rule counts, prepares the outputs; nothing changes
// unless all of it succeeds, and then only in the commit, on the loop
// thread, between two events.
Result<runtime::Reloaded> reload(Agent& a, const std::atomic<bool>& cancel);

}  // namespace vigil::agent::steps
