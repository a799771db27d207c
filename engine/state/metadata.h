// How complete an event's metadata is: what the field k8s.meta says on every
// alert (docs/fields.md), and what decides whether an alert waits for its pod
// (engine/pipeline/metadata_wait.h).
//
//   complete    the container's pod is known, with its name
//   incomplete  the cgroup names a Kubernetes pod (the kubelet's pod uid) that
//               is not known yet, or not with its name
//   container   a container outside Kubernetes (its cgroup names no pod)
//   host        not in a container
//
// Thread-safety: pure functions over an EvalContext.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/state/model.h"

namespace vigil::state {

enum class Metadata : std::uint8_t { kHost, kContainer, kIncomplete, kComplete };

inline Metadata metadata_of(const EvalContext& ctx) noexcept {
  if (ctx.container == nullptr) {
    // A container id without its record (not resolved): a container, whose
    // pod nobody can name.
    return ctx.proc != nullptr && !ctx.proc->container_id.empty() ? Metadata::kContainer : Metadata::kHost;
  }
  if (ctx.container->pod_uid.empty()) return Metadata::kContainer;
  return ctx.pod != nullptr && !ctx.pod->name.empty() ? Metadata::kComplete : Metadata::kIncomplete;
}

inline std::string_view metadata_name(Metadata m) noexcept {
  switch (m) {
    case Metadata::kHost: return "host";
    case Metadata::kContainer: return "container";
    case Metadata::kIncomplete: return "incomplete";
    case Metadata::kComplete: return "complete";
  }
  return "host";
}

}  // namespace vigil::state
