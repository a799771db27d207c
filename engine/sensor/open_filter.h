// The kernel's open filter (bpf/progs/fd/open.bpf.c) judges an open by
// tables in hash maps, which this unit builds from the rules' literal paths
// (build_open_tables) and the sensor loads: no fixed count of paths, each
// table sized to what the rules ask.
//
// A prefix of the resolved path is judged by the first components of the
// opened file's path, walked from its dentry up to the root, each compared by
// length and first 16 bytes: the prefixes form a trie of such components
// (open_trie). Whole paths and directories are judged by their last
// component (open_names); prefixes of the path as given by the given string,
// one hash lookup per literal length (open_given, with an 8-byte pre-check in
// open_heads).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bpf/shared/events.h"
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
// decision vg_of_resolved makes from dentries, for tests and for
// documentation: a superset of path.starts_with(prefix).
bool components_match(const std::vector<PrefixComponent>& comps, std::string_view path);

// The literal paths the open filter is given (sensor::Config's open_* lists).
struct OpenLists {
  std::vector<std::string> given;           // prefixes of the path as given
  std::vector<std::string> prefixes;        // of the resolved path, any open
  std::vector<std::string> write_prefixes;  // of the resolved path, opens for writing
  std::vector<std::string> whole;           // whole resolved paths
  std::vector<std::string> dirs;            // whole directories
  // Only where the path as given holds "../": prefixes of the resolved path,
  // and fragments of the opened file's name.
  std::vector<std::string> traversal_prefixes;
  std::vector<std::string> traversal_fragments;
};

// The open filter's configuration: its knobs (vg_of) and the entries of its
// four maps.
struct OpenTables {
  vg_of_knobs knobs{};
  std::vector<std::pair<vg_of_name, std::uint8_t>> names;
  std::vector<std::pair<vg_of_edge, vg_of_node>> trie;
  std::vector<std::pair<vg_of_given, std::uint8_t>> given;
  std::vector<std::pair<vg_of_head, std::uint8_t>> heads;
};

// Knobs that let through what either `a` or `b` lets through: in force
// while a reload moves the tables from one rule set's to the other's.
vg_of_knobs knobs_union(const vg_of_knobs& a, const vg_of_knobs& b);

// The tables for `lists`. A path of VG_PREFIX_LEN bytes or more, a resolved
// prefix that is not absolute, a whole path without a file name or a name
// fragment longer than 16 bytes is bad input, named.
Result<OpenTables> build_open_tables(const OpenLists& lists);

// The decision the kernel makes from `t` for a successful open of resolved
// path `path` given as `given` (for writing: `write`): 1 sent as it is, 2
// sent where the given path holds "../" or starts with a given prefix, 0 not
// sent by its path (the given prefixes may still send it). For tests and
// documentation: it walks the same tables the same way.
int tables_judge(const OpenTables& t, std::string_view path, bool write);

}  // namespace vigil::sensor
