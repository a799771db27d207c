#include "engine/cli/rules_cmd.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config.h"
#include "engine/agent/plugins.h"
#include "engine/agent/rules_load.h"
#include "bpf/shared/events.h"
#include "engine/event/schema.h"
#include "engine/rules/fields.h"
#include "engine/rules/prevention.h"
#include "engine/rules/ruleset.h"
#include "engine/sensor/open_filter.h"
#include "engine/runtime/rule_test.h"

namespace vigil::cli {

namespace {

// The rule-loading options of `-c CONFIG`: its plugins' fields and sources,
// and its append_output (so that validate reports a field it names that no
// one has). The host must outlive the rules loaded with the options.
struct WithPlugins {
  std::unique_ptr<plugin::Host> host;
  rules::LoadOptions opts;
};
Result<WithPlugins> with_plugins(const std::string& config, bool init) {
  WithPlugins w;
  if (config.empty()) return w;
  auto cfg = vigil::config::load_config(config);
  if (!cfg) return cfg.error();
  auto h = agent::load_plugins(*cfg, config, nullptr, init);
  if (!h) return h.error();
  w.host = std::move(*h);
  w.host->configure(w.opts);
  if (Status s = agent::set_append_output(*cfg, vigil::config::config_origin(config), w.host.get(), w.opts); !s) {
    return s.error();
  }
  if (Status s = agent::set_prevention_mode(*cfg, w.opts); !s) return s.error();
  return w;
}
int config_error(const Error& e) {
  std::cerr << "vigil: " << e.message << "\n";
  return e.kind == Error::Kind::kBadInput ? 2 : 1;
}

void print_diagnostics(const rules::LoadResult& r) {
  for (const auto& d : r.diagnostics) std::cerr << d.to_string() << "\n";
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string s;
  for (const auto& x : v) {
    if (!s.empty()) s += sep;
    s += x;
  }
  return s;
}

int validate(const std::vector<std::string>& files, const std::string& config) {
  auto w = with_plugins(config, false);
  if (!w) return config_error(w.error());
  auto r = rules::load_rules(files, w->opts);
  print_diagnostics(r);
  std::cout << rules::summary_line(r) << std::endl;
  if (r.ruleset) {
    // Prevention (docs/prevention.md): per rule with an action, whether the
    // kernel can enforce it and, if not, why.
    for (const rules::PreventionRule& p : r.ruleset->prevention()) {
      std::cout << "prevention: rule '" << p.name << "' (" << p.file << ":" << p.line << "): action " << p.action
                << ", mode " << rules::prevention_mode_name(p.effective) << ": ";
      if (p.responses != 0) std::cout << "responses after the alert (" << p.action << "), not prevention";
      else if (p.enforceable && (p.slot.flags & VG_POLR_EXE))
        std::cout << "enforceable in the kernel at " << rules::hook_name(p.hook) << " by file, once identified ("
                  << p.exe_ids.size()
                  << " identities): a denied build-id of a statically linked program is read by the kernel and "
                     "killed at every exec; otherwise a file's first exec is killed right after vigil identifies "
                     "it, a response, and its later execs are killed at exec";
      else if (p.enforceable) std::cout << "enforceable in the kernel at " << rules::hook_name(p.hook);
      else std::cout << "cannot be enforced in the kernel: " << p.why_not << " (alert only; an error in enforce mode)";
      std::cout << std::endl;
    }
    // What the kernel's open filter will be given (docs/events.md, "open"):
    // its tables hold any number of paths; each costs a map entry.
    const rules::OpenPaths& p = r.ruleset->open_paths();
    if (p.size() > 0) {
      std::cout << "open filter: " << p.size() << " paths; " << p.describe() << std::endl;
      if (auto t =
              sensor::build_open_tables(sensor::OpenLists{p.given, p.prefixes, p.write_prefixes, p.whole, p.directories,
                                                          p.traversal_prefixes, p.traversal_fragments});
          t) {
        std::cout << "open filter tables: " << t->names.size() << " names, " << t->trie.size() << " prefix-trie edges, "
                  << t->given.size() << " given-path literals, " << t->heads.size() << " 8-byte heads";
        if (!p.traversal_prefixes.empty() || !p.traversal_fragments.empty())
          std::cout << "; opens these pass are sent only where the path as given holds \"../\"";
        std::cout << std::endl;
      } else {
        std::cerr << "vigil: " << t.error().message << "\n";
        return 2;
      }
    }
  }
  return r.errors == 0 ? 0 : 2;
}

int list(std::vector<std::string> files, bool json, const std::string& config) {
  if (files.empty()) files.push_back("rules");
  auto w = with_plugins(config, false);
  if (!w) return config_error(w.error());
  auto r = rules::load_rules(files, w->opts);
  if (!r.ruleset) {
    print_diagnostics(r);
    std::cerr << rules::summary_line(r) << "\n";
    return 2;
  }
  auto infos = r.ruleset->rules();
  auto seqs = r.ruleset->sequences();
  // A sequence's event types: those of its steps, each once.
  auto seq_types = [](const rules::SequenceInfo& s) {
    std::vector<std::string> all;
    for (const auto& step : s.step_event_types) {
      for (const auto& t : step) {
        if (std::find(all.begin(), all.end(), t) == all.end()) all.push_back(t);
      }
    }
    return all;
  };
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& i : infos) {
      out.push_back({{"kind", "rule"},
                     {"name", i.name},
                     {"desc", i.desc},
                     {"priority", std::string(event::priority_name(i.priority))},
                     {"tags", i.tags},
                     {"source", i.source},
                     {"enabled", i.enabled},
                     {"event_types", i.event_types},
                     {"file", i.file},
                     {"line", i.line}});
    }
    for (const auto& s : seqs) {
      out.push_back({{"kind", "sequence"},
                     {"name", s.name},
                     {"desc", s.desc},
                     {"priority", std::string(event::priority_name(s.priority))},
                     {"tags", s.tags},
                     {"source", "syscall"},
                     {"enabled", s.enabled},
                     {"event_types", seq_types(s)},
                     {"by", s.by},
                     {"distinct", s.distinct},
                     {"within_ms", s.within_ns / 1000000},
                     {"step_event_types", s.step_event_types},
                     {"file", s.file},
                     {"line", s.line}});
    }
    std::cout << out.dump(2) << std::endl;
    return 0;
  }
  for (const auto& i : infos) {
    std::cout << i.name << "\n"
              << "  priority: " << event::priority_name(i.priority) << "\n"
              << "  tags: " << join(i.tags, ", ") << "\n"
              << "  source: " << i.source << "\n"
              << "  enabled: " << (i.enabled ? "true" : "false") << "\n"
              << "  event types: " << join(i.event_types, ", ") << "\n";
  }
  for (const auto& s : seqs) {
    std::cout << s.name << " (sequence)\n"
              << "  priority: " << event::priority_name(s.priority) << "\n"
              << "  tags: " << join(s.tags, ", ") << "\n"
              << "  enabled: " << (s.enabled ? "true" : "false") << "\n"
              << "  by: " << join(s.by, ", ") << "\n"
              << (s.distinct.empty() ? std::string() : "  distinct: " + join(s.distinct, ", ") + "\n")
              << "  within: " << s.within_ns / 1000000 << " ms\n";
    for (std::size_t k = 0; k < s.step_event_types.size(); ++k) {
      std::cout << "  step " << k + 1 << " event types: " << join(s.step_event_types[k], ", ") << "\n";
    }
  }
  return 0;
}

int test(const std::vector<std::string>& paths) {
  auto rep = runtime::run_rule_tests(paths);
  for (const auto& d : rep.problems) std::cerr << d.to_string() << "\n";
  for (const auto& f : rep.failures) std::cout << "FAIL " << f.to_string() << "\n";
  std::cout << "rule tests: " << rep.passed << " passed, " << rep.failed << " failed";
  if (rep.invalid()) std::cout << ", " << rep.problems.size() << " invalid";
  std::cout << std::endl;
  return rep.exit_code();
}

int fields(bool json, const std::string& config) {
  auto w = with_plugins(config, false);
  if (!w) return config_error(w.error());
  const auto& cat = w->host ? w->host->fields() : rules::FieldCatalog::builtin();
  auto arg_text = [](rules::ArgMode m) -> std::string {
    switch (m) {
      case rules::ArgMode::kNone: return "";
      case rules::ArgMode::kOptionalIndex: return "[N] optional";
      case rules::ArgMode::kRequiredIndex: return "[N]";
      case rules::ArgMode::kRequiredKey: return "[KEY]";
      case rules::ArgMode::kOptionalKey: return "[KEY] optional";
    }
    return "";
  };
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& f : cat.fields()) {
      out.push_back({{"name", std::string(f.name)},
                     {"type", std::string(rules::field_type_name(f.type))},
                     {"arg", arg_text(f.arg)},
                     {"events", event::type_names(f.events.mask)},
                     {"description", std::string(f.description)}});
    }
    std::cout << out.dump(2) << std::endl;
    return 0;
  }
  for (const auto& f : cat.fields()) {
    std::string name(f.name);
    if (f.arg == rules::ArgMode::kRequiredKey || f.arg == rules::ArgMode::kOptionalKey) name += "[KEY]";
    else if (f.arg != rules::ArgMode::kNone) name += "[N]";
    std::printf("%-28s %-7s %s\n", name.c_str(), std::string(rules::field_type_name(f.type)).c_str(),
                std::string(f.description).c_str());
    std::printf("%-28s %-7s events: %s\n", "", "", event::type_names(f.events.mask).c_str());
  }
  return 0;
}

}  // namespace

void add_rules_commands(CLI::App& app, int* exit_code) {
  CLI::App* rules = app.add_subcommand("rules", "rule authoring: validate, list and test rules");
  // Not require_subcommand(): CLI11 checks requirements before unexpected
  // arguments, and `vigil rules teleport` should say that teleport is unexpected.
  rules->callback([rules] {
    if (rules->get_subcommands().empty()) {
      throw CLI::RequiredError("a command (validate, list or test)");
    }
  });

  struct Args {
    std::vector<std::string> paths;
    std::vector<std::string> rules;
    bool json = false;
    std::string config;
  };
  auto args = std::make_shared<Args>();
  auto config_option = [&args](CLI::App* cmd, const char* what) {
    cmd->add_option("-c,--config", args->config, what)->type_name("FILE");
  };
  const char* kPluginsConfig = "a configuration whose load_plugins add fields and sources";

  CLI::App* v = rules->add_subcommand("validate",
                                      "compile the rules, print every diagnostic and a summary line;\n"
                                      "exit 0 when they compile, 2 otherwise");
  v->add_option("paths", args->paths, "rule files, or directories of *.yaml/*.yml rule files")
      ->required()
      ->type_name("FILE|DIR");
  config_option(v, kPluginsConfig);
  v->callback([args, exit_code] { *exit_code = validate(args->paths, args->config); });

  CLI::App* l = rules->add_subcommand("list", "the rules: name, priority, tags, source, enabled, event types");
  l->add_option("-r,--rules", args->rules,
                "a rule file or directory (repeatable; default: the bundled rules in ./rules)")
      ->allow_extra_args(false)
      ->type_name("FILE|DIR");
  l->add_flag("--json", args->json, "one JSON array of the rules");
  config_option(l, kPluginsConfig);
  l->callback([args, exit_code] { *exit_code = list(args->rules, args->json, args->config); });

  CLI::App* t = rules->add_subcommand("test",
                                      "run rule tests (docs/rules-testing.md); a directory runs its *.yaml/*.yml\n"
                                      "test files in name order; exit 0 pass, 1 fail, 2 invalid");
  t->add_option("paths", args->paths, "rule test files, or directories of them")->required()->type_name("FILE|DIR");
  t->callback([args, exit_code] { *exit_code = test(args->paths); });

  CLI::App* f = app.add_subcommand("fields", "the field catalogue: name, type, events, description");
  f->add_flag("--json", args->json, "one JSON array of the fields");
  config_option(f, "also list the fields of the plugins this configuration loads");
  f->callback([args, exit_code] { *exit_code = fields(args->json, args->config); });
}

}  // namespace vigil::cli
