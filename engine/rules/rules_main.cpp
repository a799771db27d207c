// vigil-rules: the rule authoring commands without the agent. The same code
// runs as `vigil rules ...` and `vigil fields`.
#include <cstring>
#include <iostream>

#include "engine/cli/rules_cmd.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "rules") == 0) return vigil::cli::cmd_rules(argc - 1, argv + 1);
  if (argc >= 2 && std::strcmp(argv[1], "fields") == 0) return vigil::cli::cmd_fields(argc - 1, argv + 1);
  std::cerr << "usage: vigil-rules rules validate|list|test ... | vigil-rules fields [--json]\n";
  return 2;
}
