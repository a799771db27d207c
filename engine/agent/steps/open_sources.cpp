// Step "open sources": the probes, the kernel log reader and the plugins'
// sources. Each that cannot run is left out, its part recorded off; with
// none at all, runtime failure → 1. vigil run sets the sensor up for its
// rules (and vigil's own files); vigil capture for its --filter, or every
// event type.
#include "engine/agent/steps/steps.h"

#include "engine/agent/live_sources.h"
#include "engine/agent/own_paths.h"
#include "engine/agent/parts.h"
#include "engine/rules/prevention.h"
#include "engine/plugin/host.h"
#include "engine/rules/filter.h"
#include "engine/state/state.h"

namespace vigil::agent::steps {
namespace {

// The live sources, then the plugins' (not essential: if one fails,
// detection goes on without it); at least one must run.
Status open_live(Agent& a, const LiveSourcesConfig& sources) {
  if (Status s = add_live_sources(*a.runner, sources, a.parts, *a.log, &a.sensor); !s) return s;
  auto plugin_sources = a.plugins->start_sources(plugin::SourceOptions{});
  if (!plugin_sources) return plugin_sources.error();
  for (const auto& s : *plugin_sources) {
    if (auto* p = dynamic_cast<plugin::PluginSource*>(s.get())) a.plugin_sources.push_back(p);
  }
  add_plugin_sources(*a.runner, std::move(*plugin_sources), a.parts, *a.log);
  return require_an_event_source(a.parts.snapshot());
}

// vigil's own files (vigil.file) join the open filter's whole paths.
void add_own_files(Agent& a, LiveSourcesConfig& sources) {
  std::string left_out;
  for (const std::string& f : own_files(a.opts.config, a.rule_paths, a.opts.capture)) {
    if (f.size() < sensor::kOpenPathMaxLen) {
      sources.sensor.own_files.push_back(f);
    } else {
      left_out += (left_out.empty() ? "" : ", ") + f;
    }
  }
  if (!left_out.empty()) {
    a.log->warn(
        "open filter: write opens of {} are not seen (vigil.file; the filter takes paths of fewer than {} bytes)",
        left_out, sensor::kOpenPathMaxLen);
  }
}

}  // namespace

Result<LiveSourcesConfig> run_sources_config(Agent& a, const rules::Ruleset& rs) {
  auto sources = live_sources_config(a.cfg, rs.event_types(), rs.open_paths());
  if (!sources) return sources.error();
  add_own_files(a, *sources);
  // Prevention: the enforced rules' share the kernel judges, with the
  // dynamic NVIDIA majors of this node.
  policy::Tables& t = sources->sensor.policy;
  t = rules::kernel_tables(rs.prevention());
  if (const state::NvidiaInfo* nv = a.state->nvidia_info()) {
    t.uvm_major = nv->uvm_major;
    t.caps_major = nv->caps_major;
    t.nvlink_major = nv->nvlink_major;
    t.nvswitch_major = nv->nvswitch_major;
  }
  return sources;
}

Status open_sources(Agent& a) {
  const rules::Ruleset& rs = *a.ruleset;
  // vigil's own files and directories (vigil.file): the rules judge them;
  // the sensor sends the write opens of its files (not of what is inside its
  // directories: docs/events.md, "open").
  a.state->set_vigil_paths(own_paths(a.opts.config, a.rule_paths, a.cfg, a.opts.capture));
  auto sources = run_sources_config(a, rs);
  if (!sources) return sources.error();
  a.collected_in_force = rs.event_types();
  a.filtered_in_force = rs.open_paths();
  if (rs.open_any_path()) {
    std::string names;
    for (const auto& n : rs.open_unfiltered_rules()) names += (names.empty() ? "'" : ", '") + n + "'";
    a.log->warn(
        "open rules the sensor cannot pre-filter by path see device nodes, the other rules' paths and "
        "every open of the watched programs (sensor.watch_comm_prefix) only (docs/events.md, \"open\"): {}",
        names);
  }
  return open_live(a, *sources);
}

Status open_capture_sources(Agent& a) {
  std::set<event::Type> types;
  for (int t = 1; t < static_cast<int>(event::Type::kCount); ++t) types.insert(static_cast<event::Type>(t));
  rules::OpenPaths paths;
  if (a.filter) {
    types = a.filter->event_types();
    paths = a.filter->open_paths();
  }
  auto sources = live_sources_config(a.cfg, std::move(types), paths);
  if (!sources) return sources.error();
  return open_live(a, *sources);
}

}  // namespace vigil::agent::steps
