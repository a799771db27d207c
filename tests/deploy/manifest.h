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

// A scalar's text, else `fallback` (yaml-cpp's as<std::string>(fallback)
// gives "null" for a null node, which dig returns for a missing key).
std::string scalar_or(const YAML::Node& node, const std::string& fallback);

// The first document of `kind` (and metadata.name `name`, when given); a null
// node when there is none.
YAML::Node find_kind(const std::vector<YAML::Node>& docs, std::string_view kind, std::string_view name = {});

// The DaemonSet of deploy/daemonset.yaml and what the tests read from it.
struct Agent {
  std::vector<YAML::Node> docs;  // every document it came from
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
// The same, from documents already read.
Agent agent_from(std::vector<YAML::Node> docs);

// Applies an RFC 6902 JSON patch (a sequence of {op, path, value}) to `doc`
// in place, as kustomize applies a JSON6902 patch: `add` (to a map's key, or
// to a sequence at an index or at its end, "-"), `replace`, `remove` and
// `test` (the value at the path must equal, else nothing more is applied).
// Returns "" when every operation applied, else which failed and why.
std::string apply_json_patch(YAML::Node doc, const YAML::Node& ops);

// The documents a kustomization directory builds (deploy/, or the overlay
// deploy/responses/), the way kustomize reads them: its `resources:` (files
// of the directory, or directories read as kustomizations themselves), then
// its `patches:` applied to the documents their `target` names (kind, name).
// Only JSON6902 patches (a sequence of operations, from `path:` or inline
// `patch:`) are read; anything else, a file outside the directory (kustomize
// refuses those), or a patch that fails, sets `error` and returns what was
// read so far. `images:` is not applied.
std::vector<YAML::Node> build_kustomization(const std::string& dir, std::string* error);

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
