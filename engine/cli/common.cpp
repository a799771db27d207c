#include "engine/cli/common.h"

#include <CLI/CLI.hpp>

namespace vigil::cli {

int parse_cli(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return -1;
}

void one_value_each(CLI::App& app, const std::string& name, std::vector<std::string>& out, const std::string& help) {
  app.add_option(name, out, help)->allow_extra_args(false)->type_name("PATH");
}

void add_k8s_flags(CLI::App& app, agent::K8sFlags& k8s) {
  app.add_option("--k8s-api", k8s.api, "Kubernetes API server to watch pods from (outside a cluster)")
      ->type_name("URL");
  app.add_option("--k8s-token-file", k8s.token_file, "bearer token for --k8s-api")->type_name("FILE");
  app.add_option("--k8s-ca", k8s.ca, "CA bundle for --k8s-api")->type_name("FILE");
  app.add_option("--kubeconfig", k8s.kubeconfig, "take the API server and credentials from a kubeconfig")
      ->type_name("FILE");
}

}  // namespace vigil::cli
