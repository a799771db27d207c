// The profile file: one JSON document per workload (docs/baselines.md,
// "File format"), written atomically (a temporary file in the same
// directory, fsync, rename), read back with every field checked.
//
//   {"format": "vigil-baseline", "version": 1, "workload": "docker.io/vllm/vllm-openai:v0.6.3",
//    "state": "locked", "first_seen_ns": ..., "updated_ns": ..., "locked_at_ns": ...,
//    "lock_cause": "time", "exes": [{"path": "/usr/bin/python3.12", "sha256": ["9f86..."]}],
//    "destinations": ["10.96.0.0/24:53/udp"], "files": ["/etc/hosts"], "gpu_classes": [49600],
//    "full": {"exes": 0, "destinations": 0, "files": 0, "gpu_classes": 0}}
//
// Hostile input: a file over kMaxFileBytes, not JSON, of another format or
// version, with a wrong type, a set over its cap, or a workload whose file
// name is not this one is refused, and the error names the file.
//
// Thread-safety: pure functions, apart from the files they touch.
#pragma once

#include <cstddef>
#include <string>

#include "engine/baseline/profile.h"
#include "engine/util/result.h"

namespace vigil::baseline {

inline constexpr int kFormatVersion = 1;
inline constexpr std::size_t kMaxFileBytes = 8u << 20;

// The profile as the file's JSON text.
std::string encode_profile(const Profile& p);
// A profile from JSON text; `name` (the file's path) starts every error.
// Sets over `caps` are refused.
Result<Profile> decode_profile(std::string_view text, const std::string& name, const Caps& caps);

// Reads and decodes a profile file (regular file, at most kMaxFileBytes).
Result<Profile> read_profile(const std::string& path, const Caps& caps);
// Writes the profile to dir/file_name_for(key) through a temporary file and
// rename (mode 0600). REQUIRES: dir exists.
Status write_profile(const std::string& dir, const Profile& p);

}  // namespace vigil::baseline
