// The plugins of one vigil process, from the configuration:
//
//   plugins:
//     - name: nvml
//       library_path: libvigil_nvml.so        # a bare name: vigil's plugin directory
//       init_config: {nvml_library: libnvidia-ml.so.1, interval: 1s}
//   load_plugins: [nvml]
//
// As in Falco, `plugins:` declares and `load_plugins:` chooses (in its order);
// a declared plugin that is not chosen is not loaded.
//
//   auto specs = plugin::parse_config(cfg, "vigil.yaml");   // bad input: exit 2
//   auto host = plugin::Host::load(*specs, log);             // ABI/symbol errors: exit 2
//   host->init_all();                                        // init failures: exit 1
//   host->configure(load_opts);            // plugin fields and sources for the rules
//   for (auto& s : host->start_sources(opts)) runner.add_source(std::move(s));
//
// Thread-safety: load/init/configure/start on one thread. Field extraction
// (through the catalogue) runs on the pipeline thread.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "engine/plugin/plugin.h"
#include "engine/plugin/source.h"
#include "engine/rules/append_output.h"
#include "engine/rules/fields.h"
#include "engine/rules/ruleset.h"
#include "engine/util/result.h"

namespace spdlog {
class logger;
}

namespace vigil::plugin {

struct PluginSpec {
  std::string name;
  std::string library_path;  // as resolved (absolute, or a name dlopen searches)
  std::string init_config;   // JSON ("{}" when none)
};

// The plugins `load_plugins` chooses, in its order. Errors name the file
// (`config_file`), the line and the key.
Result<std::vector<PluginSpec>> parse_config(const YAML::Node& cfg, const std::string& config_file);

// A YAML value as JSON: maps, sequences, plain scalars that are numbers,
// booleans or null keep their type, every other scalar is a string.
std::string yaml_to_json(const YAML::Node& n);

// Where a bare library name is looked for: $VIGIL_PLUGIN_DIR, then the
// plugins/ directory of a build tree next to the binary, then
// <prefix>/lib/vigil/plugins.
std::string resolve_library(const std::string& library_path);

class Host {
 public:
  static Result<std::unique_ptr<Host>> load(const std::vector<PluginSpec>& specs, std::shared_ptr<spdlog::logger> log);
  ~Host();  // stops nothing (sources are the runner's); leaks plugins a stuck thread still uses
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  // Runs each plugin's init (with its init_config). The first failure is
  // returned naming the plugin.
  Status init_all();

  // Rule loading with the plugins: their fields and event sources.
  void configure(rules::LoadOptions& opts) const;
  const rules::FieldCatalog& fields() const { return *catalog_; }
  std::set<std::string> event_sources() const;
  // The fields the plugins suggest for every alert (append_output's
  // suggested_output), each with the sources whose rules get it.
  std::vector<rules::SuggestedField> suggested_fields() const;

  // A runtime source for each initialised source plugin.
  Result<std::vector<std::unique_ptr<source::EventSource>>> start_sources(const SourceOptions& opts);

  const std::vector<std::unique_ptr<Plugin>>& plugins() const { return plugins_; }
  bool empty() const { return plugins_.empty(); }

  struct Binding;  // one plugin field, as the catalogue's FieldDef::user

 private:
  Host() = default;
  Status build_catalog();

  std::shared_ptr<spdlog::logger> log_;
  std::vector<PluginSpec> specs_;
  std::vector<std::unique_ptr<Plugin>> plugins_;
  std::vector<std::unique_ptr<Binding>> bindings_;
  std::unique_ptr<rules::FieldCatalog> catalog_;
};

// The extractor behind every plugin field (FieldDef::fn).
void extract_plugin_field(const rules::ExtractCtx& x, const rules::FieldInst& f, rules::Extracted& out) noexcept;

}  // namespace vigil::plugin
