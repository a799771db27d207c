#include "engine/sensor/open_maps.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <vector>

namespace vigil::sensor {
namespace {

using event::Type;

// vigil's own files join the whole paths (those a rule's resolved prefix
// covers are sent already; the rule on them wants writes).
void add_own_files(Config& cfg) {
  for (const std::string& own : cfg.own_files) {
    if (own.empty() || own[0] != '/' || own.size() >= VG_PREFIX_LEN || own.back() == '/') continue;
    auto starts = [&](const std::string& q) { return !q.empty() && own.compare(0, q.size(), q) == 0; };
    const bool covered = std::any_of(cfg.open_path_prefixes.begin(), cfg.open_path_prefixes.end(), starts) ||
                         std::any_of(cfg.open_write_prefixes.begin(), cfg.open_write_prefixes.end(), starts);
    if (!covered && std::find(cfg.open_path_whole.begin(), cfg.open_path_whole.end(), own) == cfg.open_path_whole.end())
      cfg.open_path_whole.push_back(own);
  }
}

std::size_t open_map_room(std::size_t n) { return std::max<std::size_t>(4096, 4 * n); }

// Each map with the entries `t` puts in it, and what they are.
struct MapNeed {
  bpf_map* map;
  std::size_t entries;
  const char* what;
};
std::array<MapNeed, 4> needs(const OpenMaps& m, const OpenTables& t) {
  return {{{m.names, t.names.size(), "whole paths and directories"},
           {m.trie, t.trie.size(), "resolved-prefix components"},
           {m.given, t.given.size(), "given-path literals"},
           {m.heads, t.heads.size(), "given-path heads"}}};
}

template <typename K, typename V>
Status fill_map(bpf_map* m, const std::vector<std::pair<K, V>>& entries) {
  for (const auto& [k, v] : entries) {
    if (int err = bpf_map__update_elem(m, &k, sizeof(k), &v, sizeof(v), BPF_ANY); err != 0)
      return Error::runtime(std::string("sensor: cannot fill the open filter's map ") + bpf_map__name(m) + ": " +
                            std::strerror(-err));
  }
  return {};
}

template <typename K, typename V>
void remove_stale(bpf_map* m, const std::vector<std::pair<K, V>>& old, const std::vector<std::pair<K, V>>& next) {
  auto bytes = [](const K& k) { return std::string(reinterpret_cast<const char*>(&k), sizeof(k)); };
  std::set<std::string> keep;
  for (const auto& e : next) keep.insert(bytes(e.first));
  for (const auto& e : old)
    if (!keep.count(bytes(e.first))) bpf_map__delete_elem(m, &e.first, sizeof(e.first), 0);
}

}  // namespace

Result<OpenTables> tables_for(Config& cfg) {
  add_own_files(cfg);
  auto t = build_open_tables(OpenLists{cfg.open_given_prefixes, cfg.open_path_prefixes, cfg.open_write_prefixes,
                                       cfg.open_path_whole, cfg.open_dirs, cfg.open_traversal_prefixes,
                                       cfg.open_traversal_fragments});
  if (!t) return Error::bad_input("sensor: " + t.error().message);
  t->knobs.want_payload = cfg.event_types.count(Type::kPayload) ? 1 : 0;
  t->knobs.want_egress = cfg.event_types.count(Type::kEgress) ? 1 : 0;
  return t;
}

Status size_open_maps(const OpenMaps& m, const OpenTables& t) {
  for (const MapNeed& n : needs(m, t)) {
    if (int err = bpf_map__set_max_entries(n.map, static_cast<std::uint32_t>(open_map_room(n.entries))); err != 0)
      return Error::runtime(std::string("sensor: cannot size the open filter's map ") + bpf_map__name(n.map) + ": " +
                            std::strerror(-err));
  }
  return {};
}

std::string open_maps_too_small(const OpenMaps& m, const OpenTables& next) {
  for (const MapNeed& n : needs(m, next)) {
    if (n.entries > bpf_map__max_entries(n.map))
      return std::string("the open filter's table of ") + n.what + " has room for " +
             std::to_string(bpf_map__max_entries(n.map)) + " entries and the new rules need " +
             std::to_string(n.entries);
  }
  return {};
}

Status fill_open_maps(const OpenMaps& m, const OpenTables& t) {
  if (Status st = fill_map(m.names, t.names); !st) return st;
  if (Status st = fill_map(m.trie, t.trie); !st) return st;
  if (Status st = fill_map(m.given, t.given); !st) return st;
  return fill_map(m.heads, t.heads);
}

void remove_stale_entries(const OpenMaps& m, const OpenTables& old, const OpenTables& next) {
  remove_stale(m.names, old.names, next.names);
  remove_stale(m.trie, old.trie, next.trie);
  remove_stale(m.given, old.given, next.given);
  remove_stale(m.heads, old.heads, next.heads);
}

}  // namespace vigil::sensor
