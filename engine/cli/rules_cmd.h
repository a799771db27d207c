// `vigil rules validate|list|test` and `vigil fields`: argument handling for
// the rule authoring tools. The work is done in engine/rules.
#pragma once

namespace vigil::cli {

// argv[0] is "rules". Exit codes: 0 ok, 1 a rule test failed, 2 bad usage or
// rules that do not compile.
int cmd_rules(int argc, char** argv);
// argv[0] is "fields". Prints the field catalogue (text or --json).
int cmd_fields(int argc, char** argv);

}  // namespace vigil::cli
