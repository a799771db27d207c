// Which YAML files a list of paths names, the one rule shared by `-r`,
// `rules:` in the configuration, `vigil rules validate|list` and
// `vigil rules test`: a file is taken as given (whatever its name); a
// directory gives its regular *.yaml and *.yml files, not recursively, sorted
// by name. A path that does not exist, or a directory that cannot be listed,
// is an E001 diagnostic naming it.
//
// Reentrant; reads only the directories named.
#pragma once

#include <string>
#include <vector>

#include "engine/rules/diagnostic.h"

namespace vigil::rules {

struct YamlFiles {
  std::vector<std::string> files;
  // Directories among the paths that held no *.yaml/*.yml file.
  std::vector<std::string> empty_dirs;
};

YamlFiles expand_yaml_paths(const std::vector<std::string>& paths, Diagnostics& d);

}  // namespace vigil::rules
