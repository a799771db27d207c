// The open filter's maps as the sensor keeps them (internal to
// engine/sensor): the tables for a configuration's paths, the maps' room, and
// the moves of a reload (fill the new entries, remove the stale ones).
#pragma once

#include <bpf/libbpf.h>

#include <string>

#include "engine/sensor/open_filter.h"
#include "engine/sensor/sensor.h"
#include "engine/util/result.h"

namespace vigil::sensor {

// The four maps of bpf/progs/fd/open.bpf.c.
struct OpenMaps {
  bpf_map* names = nullptr;
  bpf_map* trie = nullptr;
  bpf_map* given = nullptr;
  bpf_map* heads = nullptr;
};

// The open filter's tables for `cfg`'s paths, vigil's own files added to its
// whole paths (into cfg), with the payload knob. Bad paths are bad input.
Result<OpenTables> tables_for(Config& cfg);

// Before load: each map's room, four times what `t` holds and at least 4096
// entries (an entry takes memory only once added), so a reload can add paths.
Status size_open_maps(const OpenMaps& m, const OpenTables& t);

// The first of `next`'s tables that does not fit in its map, as a sentence
// ("" when all do).
std::string open_maps_too_small(const OpenMaps& m, const OpenTables& next);

// Every entry of `t` into the maps (added or overwritten).
Status fill_open_maps(const OpenMaps& m, const OpenTables& t);

// The entries of `old` that `next` does not hold, out of the maps.
void remove_stale_entries(const OpenMaps& m, const OpenTables& old, const OpenTables& next);

}  // namespace vigil::sensor
