// Where pods come from: the Kubernetes settings of run and capture (flags win
// over the k8s: section; with neither, in-cluster discovery), the pod watcher
// that drains into the state before the events of each turn of the loop, and
// how long a deleted pod stays known.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "engine/util/result.h"

namespace vigil::state {
struct K8sOptions;
struct K8sConfig;
class PodWatcher;
class CriResolver;
class State;
struct Config;
}  // namespace vigil::state
namespace vigil::pipeline {
struct MetadataWaitOptions;
}
namespace vigil::runtime {
class Runner;
class Parts;
}  // namespace vigil::runtime

namespace vigil::agent {

// The Kubernetes flags of run and capture (they win over the `k8s:` section).
struct K8sFlags {
  std::string api;
  std::string token_file;
  std::string ca;
  std::string kubeconfig;
};

// Where pods come from: command-line flags win over the `k8s:` section; with
// neither, in-cluster discovery (KUBERNETES_SERVICE_HOST, service account).
Result<state::K8sOptions> k8s_options(const YAML::Node& cfg, const K8sFlags& flags);

// The API server to watch: nullopt when there is none (the parts "k8s" and
// "pod_resources" are recorded off, logged at info); Error::bad_input for bad
// settings (a kubeconfig without a server, a missing token file), before
// anything starts.
Result<std::optional<state::K8sConfig>> discover_k8s(const YAML::Node& cfg, const K8sFlags& flags, spdlog::logger& log,
                                                     runtime::Parts& parts);

// How long a deleted pod stays known (k8s.pod_grace_s, state::Config::pod_grace_ns).
Result<std::uint64_t> pod_grace_ns(const YAML::Node& cfg);

// How long the state keeps what ended, for the events that arrive about it
// late: a deleted pod (k8s.pod_grace_s), an exited process
// (state.process_grace_s) and how many exited processes at most
// (state.max_exited_processes). Live and replay alike.
Status retention(const YAML::Node& cfg, state::Config& sc);

// How long an alert waits for its pod, and how many wait at most
// (k8s.metadata_wait_ms, k8s.metadata_wait_max_alerts; pipeline::MetadataWait).
Result<pipeline::MetadataWaitOptions> metadata_wait_options(const YAML::Node& cfg);

// Starts the pod watcher and drains it into `st` before the events of every
// runner turn, and at once when the watcher queues a pod; `changed` (may be
// empty) runs after a drain that changed the state. Records
// the part "k8s" on, and "pod_resources" on when the kubelet's socket accepts
// a connection (off, with the reason, otherwise).
Result<std::unique_ptr<state::PodWatcher>> watch_pods(const state::K8sConfig& k8s, state::State& st,
                                                      runtime::Runner& runner, spdlog::logger& log,
                                                      runtime::Parts& parts, std::function<void()> changed = {});

// Starts asking the container runtime (CRI) about the Kubernetes containers
// the state meets before their pod is known, and drains its answers into
// `st` like the pod watcher's. The socket: `cri.socket`, else the first of
// state::kCriSockets that answers a Version call; `cri.socket: off` turns
// it off. Records the part "cri" on (with the runtime's version) or off
// with why; a configured socket that does not answer is a warning, not an
// error, so vigil still starts while the runtime restarts. nullptr when off.
Result<std::unique_ptr<state::CriResolver>> watch_runtime(const YAML::Node& cfg, state::State& st,
                                                          runtime::Runner& runner, spdlog::logger& log,
                                                          runtime::Parts& parts);

}  // namespace vigil::agent
