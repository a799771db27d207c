// Reading the Kubernetes manifests of deploy/ and the capability table of
// docs/install.md, for the manifest test (label unit) and the image test
// (labels integration, image), which runs the image the way the DaemonSet does.
#pragma once

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::deploy_test {

// Every document of a multi-document YAML file (empty documents left out).
std::vector<YAML::Node> load_documents(const std::string& path);

// node[keys[0]][keys[1]]...; a null node as soon as a key is missing (yaml-cpp
// throws on a key looked up below a missing one).
YAML::Node dig(const YAML::Node& node, std::initializer_list<const char*> keys);

// The first document of `kind` (and metadata.name `name`, when given); a null
// node when there is none.
YAML::Node find_kind(const std::vector<YAML::Node>& docs, std::string_view kind, std::string_view name = {});

// The DaemonSet of deploy/daemonset.yaml and what the tests read from it.
struct Agent {
  YAML::Node daemonset;
  YAML::Node pod;        // spec.template.spec
  YAML::Node container;  // the container named vigil
  YAML::Node config;     // the ConfigMap's vigil.yaml, parsed
  std::string config_text;
  std::string config_mount;  // where the ConfigMap volume is mounted
};
// Reads deploy/daemonset.yaml (relative to the working directory, the
// repository root); the empty Agent (null nodes) when a part is missing.
Agent load_agent(const std::string& path = "deploy/daemonset.yaml");

// A capability name as the DaemonSet spells it: "CAP_BPF" and "bpf" give "BPF".
std::string capability_name(std::string_view name);

// The capabilities a cell of the table's "Needs (capabilities)" column
// requires. Text in parentheses is an alternative or a note, and so is what
// follows " or ", so neither counts: "CAP_BPF + CAP_PERFMON (or CAP_SYS_ADMIN
// before 5.8)" requires BPF and PERFMON; "CAP_SYS_PTRACE or CAP_SYS_ADMIN"
// requires SYS_PTRACE; "none" requires nothing.
std::set<std::string> required_capabilities(std::string_view needs);

// The absolute paths named in a cell of the "Mounts/files" column (words that
// start with '/', backticks and trailing punctuation taken off).
std::vector<std::string> paths_in(std::string_view cell);

struct CapabilityRow {
  std::string part;
  std::string needs;
  std::string mounts;
  bool opt_in = false;  // the Part cell says "opt-in" or "off by default"
};
// The table between `<!-- capability-table:begin -->` and
// `<!-- capability-table:end -->` of a markdown text: its body rows, by the
// header's column names ("Part", "Needs (capabilities)", "Mounts/files").
// Empty, with `error` set, when the markers, the header or a column is missing.
std::vector<CapabilityRow> capability_table(const std::string& markdown, std::string* error);

}  // namespace vigil::deploy_test
