#include "engine/cli/rules_cmd.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/event/schema.h"
#include "engine/rules/fields.h"
#include "engine/rules/rule_test.h"
#include "engine/rules/ruleset.h"

namespace vigil::cli {

namespace {

constexpr const char* kRulesUsage =
    "usage: vigil rules validate FILE|DIR...\n"
    "       vigil rules list [-r FILE|DIR]... [--json]\n"
    "       vigil rules test TEST_FILE...\n"
    "\n"
    "validate  compile the rules, print every diagnostic and a summary line;\n"
    "          exit 0 when they compile, 2 otherwise\n"
    "list      the rules: name, priority, tags, source, enabled, event types\n"
    "          (default: the bundled rules in ./rules)\n"
    "test      run rule tests (docs/rules-testing.md); exit 0 pass, 1 fail, 2 invalid\n";

void print_diagnostics(const rules::LoadResult& r) {
  for (const auto& d : r.diagnostics) std::cerr << d.to_string() << "\n";
}

int validate(const std::vector<std::string>& files) {
  if (files.empty()) {
    std::cerr << kRulesUsage;
    return 2;
  }
  auto r = rules::load_rules(files, rules::LoadOptions{});
  print_diagnostics(r);
  std::cout << rules::summary_line(r) << std::endl;
  return r.errors == 0 ? 0 : 2;
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string s;
  for (const auto& x : v) {
    if (!s.empty()) s += sep;
    s += x;
  }
  return s;
}

int list(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  bool json = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") json = true;
    else if ((args[i] == "-r" || args[i] == "--rules") && i + 1 < args.size()) files.push_back(args[++i]);
    else {
      std::cerr << "vigil rules list: unexpected argument '" << args[i] << "'\n" << kRulesUsage;
      return 2;
    }
  }
  if (files.empty()) files.push_back("rules");
  auto r = rules::load_rules(files, rules::LoadOptions{});
  if (!r.ruleset) {
    print_diagnostics(r);
    std::cerr << rules::summary_line(r) << "\n";
    return 2;
  }
  auto infos = r.ruleset->rules();
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& i : infos) {
      out.push_back({{"name", i.name},
                     {"desc", i.desc},
                     {"priority", std::string(event::priority_name(i.priority))},
                     {"tags", i.tags},
                     {"source", i.source},
                     {"enabled", i.enabled},
                     {"event_types", i.event_types},
                     {"file", i.file},
                     {"line", i.line}});
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
  return 0;
}

int test(const std::vector<std::string>& files) {
  if (files.empty()) {
    std::cerr << kRulesUsage;
    return 2;
  }
  auto rep = rules::run_rule_tests(files);
  for (const auto& d : rep.problems) std::cerr << d.to_string() << "\n";
  for (const auto& f : rep.failures) std::cout << "FAIL " << f.to_string() << "\n";
  std::cout << "rule tests: " << rep.passed << " passed, " << rep.failed << " failed";
  if (rep.invalid()) std::cout << ", " << rep.problems.size() << " invalid";
  std::cout << std::endl;
  return rep.exit_code();
}

}  // namespace

int cmd_rules(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kRulesUsage;
    return 2;
  }
  std::string_view sub = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (sub == "validate") return validate(args);
  if (sub == "list") return list(args);
  if (sub == "test") return test(args);
  if (sub == "--help" || sub == "-h" || sub == "help") {
    std::cout << kRulesUsage;
    return 0;
  }
  std::cerr << "vigil rules: unknown subcommand '" << sub << "'\n" << kRulesUsage;
  return 2;
}

int cmd_fields(int argc, char** argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--json") json = true;
    else if (a == "--help" || a == "-h") {
      std::cout << "usage: vigil fields [--json]\n";
      return 0;
    } else {
      std::cerr << "vigil fields: unexpected argument '" << a << "'\nusage: vigil fields [--json]\n";
      return 2;
    }
  }
  const auto& cat = rules::FieldCatalog::builtin();
  auto arg_text = [](rules::ArgMode m) -> std::string {
    switch (m) {
      case rules::ArgMode::kNone: return "";
      case rules::ArgMode::kOptionalIndex: return "[N] optional";
      case rules::ArgMode::kRequiredIndex: return "[N]";
      case rules::ArgMode::kRequiredKey: return "[KEY]";
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
    if (f.arg != rules::ArgMode::kNone) name += f.arg == rules::ArgMode::kRequiredKey ? "[KEY]" : "[N]";
    std::printf("%-28s %-7s %s\n", name.c_str(), std::string(rules::field_type_name(f.type)).c_str(),
                std::string(f.description).c_str());
    std::printf("%-28s %-7s events: %s\n", "", "", event::type_names(f.events.mask).c_str());
  }
  return 0;
}

}  // namespace vigil::cli
