// Pods of this node from the Kubernetes API, in three parts:
//   k8s_config.h   where the API server is (explicit flags, kubeconfig, in-cluster)
//   pod_json.h     a v1.Pod's JSON → the State's Pod model
//   pod_watcher.h  LIST + WATCH on a thread, queued for the pipeline thread
// With no API server at all, no watcher is created and the k8s fields stay
// empty. This header includes all three for the callers that use them together.
#pragma once

#include "engine/state/k8s_config.h"
#include "engine/state/pod_json.h"
#include "engine/state/pod_watcher.h"
