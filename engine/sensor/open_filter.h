// How the kernel's open filter judges a prefix of the resolved path
// (bpf/progs/fd/open.bpf.c, resolved_prefix_match): by the first components of
// the opened file's path, walked from its dentry up to the root, compared by
// length and first 16 bytes. This unit turns a rule's literal prefix into
// those components; the sensor writes them into the program's configuration.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/util/result.h"

namespace vigil::sensor {

struct PrefixComponent {
  std::uint32_t len = 0;           // the name's length: exactly (whole) or at least (partial)
  bool partial = false;            // the prefix ends inside this name ("/etc/ld.so": "ld.so...")
  std::uint64_t head[2] = {0, 0};  // its first 16 bytes, zero-padded
  std::uint64_t mask[2] = {0, 0};  // which of them to compare (a longer name: the first 16)
};

// The components the kernel compares for absolute prefix `prefix`: "/etc/" is
// the whole name "etc"; "/etc" the partial name "etc" (so "/etcd/" too, as
// startswith means); "/var/log/" the names "var" and "log"; "/" none (every
// path). Repeated slashes count as one. A prefix of more than `max_comps`
// names is judged by its first `max_comps`, each whole: the kernel sends a
// superset and user space compares the exact path. A prefix that is not
// absolute is bad input.
Result<std::vector<PrefixComponent>> prefix_components(std::string_view prefix, std::size_t max_comps);

// Does resolved path `path` pass the kernel's test for `comps`? The same
// decision resolved_prefix_match makes from dentries, for tests and for
// documentation: a superset of path.starts_with(prefix).
bool components_match(const std::vector<PrefixComponent>& comps, std::string_view path);

}  // namespace vigil::sensor
