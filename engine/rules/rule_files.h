// Which YAML files a list of paths names, the one rule shared by `-r`,
// `rules:` in the configuration, `vigil rules validate|list` and
// `vigil rules test`: a file is taken as given (whatever its name); a
// directory gives its regular *.yaml and *.yml files of the kind asked, not
// recursively, sorted by name. A rule test file is named *_test.yaml or
// *_test.yml, so one directory can hold a rule file and its tests (as
// plugins/nvml/rules/ does): rule loads leave the tests out, `rules test`
// takes only them. A path that does not exist, or a directory that cannot be
// listed, is an E001 diagnostic naming it.
//
// Reentrant; reads only the directories named.
#pragma once

#include <string>
#include <vector>

#include "engine/rules/diagnostic.h"

namespace vigil::rules {

enum class YamlKind { kRules, kRuleTests };

// Whether a file name is a rule test file's: *_test.yaml or *_test.yml.
bool is_rule_test_name(const std::string& path);

struct YamlFiles {
  std::vector<std::string> files;
  // Directories among the paths that held no *.yaml/*.yml file of the kind.
  std::vector<std::string> empty_dirs;
};

YamlFiles expand_yaml_paths(const std::vector<std::string>& paths, Diagnostics& d, YamlKind kind = YamlKind::kRules);

}  // namespace vigil::rules
