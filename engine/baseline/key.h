// The workload a container belongs to, as a baseline key: what "the same
// workload" means when a pod is replaced, rescheduled or scaled out.
//
//   image         registry/repository:tag (":latest" when the image names no tag)
//   image_digest  registry/repository@sha256:... when the runtime reported the
//                 digest (Container::image_id), else as `image`
//   owner         namespace/Kind/name/container: the pod's controller
//                 (metadata.ownerReferences); a ReplicaSet made by a
//                 Deployment (the pod has a pod-template-hash label) counts
//                 as the Deployment, so a rollout keeps its profile. A pod
//                 without an owner is keyed by its image (as `image`).
//
// A container vigil knows no image for (its pod not yet reported, or a
// container outside Kubernetes without one) has no key: no profile, and the
// baseline fields say so (baseline.state = none).
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/state/model.h"

namespace vigil::baseline {

enum class KeyMode : std::uint8_t { kImage, kImageDigest, kOwner };

// "image", "image_digest", "owner"; nullopt for any other name.
std::optional<KeyMode> key_mode_from_name(std::string_view name);
std::string_view key_mode_name(KeyMode m);

// Keys longer than this are refused (no profile): they would not fit a file name.
inline constexpr std::size_t kMaxKeyBytes = 512;

// The key of a container (pod may be null), "" when it has none.
std::string workload_key(KeyMode mode, const state::Container& c, const state::Pod* pod);

// "registry/repo" and "tag" of "registry:5000/repo:tag@sha256:..." (tag ""
// when none is named).
void split_image(std::string_view image, std::string_view& repository, std::string_view& tag);

// The profile file of a key in its directory: the key with every byte but
// [A-Za-z0-9._-] written %XX, then ".json"; a name that would pass 200
// bytes is cut and ends with a hash of the whole key. Never contains '/'.
std::string file_name_for(std::string_view key);

}  // namespace vigil::baseline
