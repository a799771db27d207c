#include "engine/cli/run_cmd.h"

#include <CLI/CLI.hpp>

#include "engine/agent/agent.h"
#include "engine/agent/plan.h"
#include "engine/cli/common.h"

namespace vigil::cli {

int cmd_run(int argc, char** argv) {
  agent::Options o;
  o.command = agent::Command::kRun;
  CLI::App app(
      "Live monitoring: loads the rules, attaches the probes, and sends alerts to the outputs "
      "(stdout by default) until SIGINT/SIGTERM. SIGHUP, or a change of the configuration or rule "
      "files, reloads the rules and outputs.",
      "vigil run");
  one_value_each(app, "-r,--rules", o.rules, "rule file or directory (repeatable; default: the bundled rules)");
  app.add_option("-c,--config", o.config, "configuration file (outputs, k8s, sensor, flight recorder, plugins)")
      ->type_name("FILE");
  app.add_option("-o", o.overrides, "override a configuration key (e.g. -o outputs.0.format=text)")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  app.add_option("--format", o.format, "format of the default stdout output (default json)")
      ->check(CLI::IsMember({"json", "text"}));
  app.add_option("--capture", o.capture, "also record every event to a capture file (see vigil replay)")
      ->type_name("FILE");
  add_k8s_flags(app, o.k8s);
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn, error (default info)")->type_name("LEVEL");
  app.add_flag("--allow-no-rules", o.allow_no_rules,
               "run even when no rule is enabled (otherwise that is an error, exit 2, and a reload "
               "that would leave none keeps the rules in force)");
  app.add_option("--max-skipped-rules", o.max_skipped_percent,
                 "a reload whose skipped rules (unknown fields or sources) would leave more than this "
                 "percentage of the enabled rules out keeps the rules in force (default 50)")
      ->check(CLI::Range(0.0, 100.0))
      ->type_name("PERCENT");
  if (int rc = parse_cli(app, argc, argv); rc >= 0) return rc;

  agent::Agent a(std::move(o));
  return agent::run(a, agent::run_plan());
}

}  // namespace vigil::cli
