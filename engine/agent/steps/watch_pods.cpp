// Steps "discover kubernetes" and "watch pods": where pods come from (bad
// settings are bad input and stop here, before anything is recorded; no API
// at all, not in a cluster and nothing configured, runs without pods), then
// the pod watcher, drained into the state on every turn. Pods go into the
// state (and so into a capture as state records) as the watcher reports
// them; the first LIST usually lands before any event.
#include "engine/agent/steps/steps.h"

#include "engine/agent/k8s.h"
#include "engine/pipeline/metadata_wait.h"
#include "engine/state/cri_resolver.h"
#include "engine/state/pods.h"

namespace vigil::agent::steps {

Status discover_k8s(Agent& a) {
  auto k8s = agent::discover_k8s(a.cfg, a.opts.k8s, *a.log, a.parts);
  if (!k8s) return k8s.error();
  if (*k8s) a.k8s = std::make_unique<state::K8sConfig>(std::move(**k8s));
  return {};
}

Status watch_pods(Agent& a) {
  if (!a.k8s) return {};
  // The pipeline (and its metadata wait) is built later: looked up per drain.
  auto w = agent::watch_pods(*a.k8s, *a.state, *a.runner, *a.log, a.parts, [&a] {
    if (a.metadata_wait) a.metadata_wait->pods_changed();
  });
  if (!w) return w.error();
  a.pods = std::move(*w);
  return {};
}

Status watch_runtime(Agent& a) {
  auto r = agent::watch_runtime(a.cfg, *a.state, *a.runner, *a.log, a.parts);
  if (!r) return r.error();
  a.cri = std::move(*r);
  return {};
}

}  // namespace vigil::agent::steps
