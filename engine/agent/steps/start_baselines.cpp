// Steps "start baselines" (vigil run, when baseline.enabled; an unsafe
// directory is bad input → 2, one that cannot be made turns them off) and
// "load baselines" (vigil replay --baseline: the profiles as they were
// saved, learning and locking in memory as the live agent did; nothing is
// written back).
#include "engine/agent/steps/steps.h"

#include <sys/stat.h>

#include "engine/agent/baselines.h"
#include "engine/config/config.h"
#include "engine/runtime/file_watch.h"

namespace vigil::agent::steps {

Status start_baselines(Agent& a) {
  auto bl = baseline_settings(a.cfg, a.state_dir);
  if (!bl) return bl.error();
  if (!bl->enabled) return {};
  auto started = agent::start_baselines(*bl, *a.runner, a.baseline_watch, a.log);
  if (!started && started.error().kind == Error::Kind::kBadInput) return started.error();
  if (!started) {
    a.log->error("baselines off: {}", started.error().message);
    a.parts.set({"baseline", false, "a writable baseline.dir", started.error().message});
  } else {
    a.baselines = std::move(*started);
    a.parts.set({"baseline", true, "a writable baseline.dir", ""});
  }
  return {};
}

Status load_replay_baselines(Agent& a) {
  const std::string& dir = a.opts.baseline_dir;
  if (dir.empty()) return {};
  auto state_dir = config::get_or<std::string>(a.cfg, "state_dir", "/var/lib/vigil");
  if (!state_dir) return state_dir.error();
  auto bl = baseline_settings(a.cfg, *state_dir);
  if (!bl) return bl.error();
  bl->store.dir = dir;
  bl->store.read_only = true;
  struct stat dst {};
  if (stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) {
    return Error::bad_input("--baseline " + dir + ": no such directory");
  }
  a.baselines = std::make_unique<baseline::Store>(bl->store);
  log_baseline_errors(a.baselines->load(), *a.log);
  return {};
}

}  // namespace vigil::agent::steps
