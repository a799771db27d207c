#include "engine/agent/rules_load.h"

#include <limits.h>
#include <unistd.h>

#include <filesystem>

#include "engine/config/config.h"
#include "engine/plugin/host.h"
#include "engine/rules/append_output.h"
#include "engine/rules/fields.h"
#include "engine/rules/prevention.h"

namespace vigil::agent {
namespace fs = std::filesystem;

std::string find_bundled_rules() {
  std::vector<fs::path> candidates;
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) {
    buf[n] = '\0';
    fs::path exe_dir = fs::path(buf).parent_path();
    candidates.push_back(exe_dir.parent_path() / "rules");
    candidates.push_back(exe_dir.parent_path() / "share" / "vigil" / "rules");
  }
  candidates.emplace_back("/usr/share/vigil/rules");
  candidates.emplace_back("/usr/local/share/vigil/rules");
  candidates.emplace_back("rules");
  std::error_code ec;
  for (const fs::path& p : candidates) {
    if (fs::is_directory(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return "";
}

Result<std::vector<std::string>> config_rule_paths(const YAML::Node& cfg) {
  std::vector<std::string> out;
  YAML::Node r = cfg["rules"];
  if (!r || r.IsNull()) return out;
  if (r.IsScalar()) {
    out.push_back(r.as<std::string>());
    return out;
  }
  if (!r.IsSequence()) return Error::bad_input("config key 'rules' must be a path or a list of paths");
  for (const YAML::Node& n : r) {
    if (!n.IsScalar()) return Error::bad_input("config key 'rules' must be a path or a list of paths");
    out.push_back(n.as<std::string>());
  }
  return out;
}

Status check_rule_counts(const RuleCounts& c, const RuleCountPolicy& policy) {
  if (c.enabled == 0 && !policy.allow_empty) {
    return Error::bad_input("no enabled rule" +
                            (c.skipped ? " (" + std::to_string(c.skipped) + " skipped)" : std::string()) +
                            ": vigil would detect nothing (--allow-no-rules runs anyway)");
  }
  if (c.enabled_in_force > 0 && c.skipped > 0 && c.enabled < c.enabled_in_force) {
    const std::size_t lost = c.enabled_in_force - c.enabled;
    if (static_cast<double>(lost) > policy.max_skipped_share * static_cast<double>(c.enabled_in_force)) {
      return Error::bad_input(std::to_string(c.skipped) + " rules skipped: " + std::to_string(c.enabled) +
                              " enabled rules instead of " + std::to_string(c.enabled_in_force) + ", more than " +
                              std::to_string(static_cast<int>(policy.max_skipped_share * 100 + 0.5)) +
                              "% fewer (--max-skipped-rules)");
    }
  }
  return {};
}

Status set_append_output(const YAML::Node& cfg, const ConfigOrigin& origin, const plugin::Host* plugins,
                         rules::LoadOptions& opts) {
  auto spec = rules::parse_append_output(cfg.IsMap() ? cfg["append_output"] : YAML::Node(), origin);
  if (!spec) return spec.error();
  std::vector<rules::SuggestedField> suggested = rules::builtin_suggested_fields();
  if (plugins) {
    for (rules::SuggestedField& s : plugins->suggested_fields()) suggested.push_back(std::move(s));
  }
  const rules::FieldCatalog& catalog = opts.fields ? *opts.fields : rules::FieldCatalog::builtin();
  auto compiled = rules::compile_append_output(*spec, catalog, suggested);
  if (!compiled) return compiled.error();
  opts.append_output = *compiled;
  return set_aggregation(cfg, opts);
}

Status set_aggregation(const YAML::Node& cfg, rules::LoadOptions& opts) {
  opts.aggregate_default.reset();
  if (!cfg.IsMap()) return {};
  auto window = config::get_or<double>(cfg, "aggregation.window_s", 0.0);
  if (!window) return window.error();
  auto by = config::get_or<std::vector<std::string>>(cfg, "aggregation.by", {});
  if (!by) return by.error();
  if (by->size() > rules::kMaxAggregateKeyFields) {
    return Error::bad_input("config key 'aggregation.by': more than " + std::to_string(rules::kMaxAggregateKeyFields) +
                            " fields");
  }
  if (*window <= 0) return {};
  rules::AggregateSpec spec;
  spec.window_ns = static_cast<std::uint64_t>(*window * 1e9);
  spec.by = std::move(*by);
  opts.aggregate_default = std::move(spec);
  return {};
}

Status set_prevention_mode(const YAML::Node& cfg, rules::LoadOptions& opts) {
  auto mode = config::get_or<std::string>(cfg, "prevention.mode", "off");
  if (!mode) return mode.error();
  auto m = rules::prevention_mode_from(*mode);
  if (!m) return Error::bad_input("config key 'prevention.mode': '" + *mode + "' is not off, monitor or enforce");
  opts.prevention_mode = static_cast<std::uint8_t>(*m);
  return {};
}

Result<std::shared_ptr<const rules::Ruleset>> load_rules_logged(const std::vector<std::string>& paths,
                                                                spdlog::logger& log, const rules::LoadOptions& opts,
                                                                RuleCounts* counts) {
  rules::LoadResult res = rules::load_rules(paths, opts);
  for (const rules::Diagnostic& d : res.diagnostics) {
    if (d.severity == rules::Severity::kError) {
      log.error("{}", d.to_string());
    } else {
      log.warn("{}", d.to_string());
    }
  }
  if (res.errors > 0 || !res.ruleset) {
    return Error::bad_input("rules: " + std::to_string(res.loaded) + " loaded, " + std::to_string(res.skipped) +
                            " skipped, " + std::to_string(res.errors) + " errors");
  }
  log.info("rules: {} loaded, {} skipped, {} errors", res.loaded, res.skipped, res.errors);
  if (counts) {
    counts->enabled = res.ruleset->enabled_count();
    counts->skipped = res.skipped;
    counts->skipped_rules = res.skipped_rules;
  }
  return std::shared_ptr<const rules::Ruleset>(res.ruleset);
}

}  // namespace vigil::agent
