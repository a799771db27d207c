// Falco's `append_output`: text and output fields the configuration adds to
// the alerts of the rules it selects (by source, tags, rule name), whatever
// their outputs print. docs/outputs.md, "append_output".
//
//   append_output:                        # the default when the key is absent:
//     - suggested_output: true            #   container and pod fields on every alert
//     - match: {source: syscall, tags: [T1059], rule: Shell in pod}
//       extra_output: "on %proc.tty"      # appended to the output text
//       extra_fields:                     # added to output_fields only
//         - proc.aname[2]                 #   a field: its typed value
//         - team: "gpu-%k8s.ns.name"      #   a name and a format: its text
//
// Three stages, each once: parse_append_output() reads the configuration
// value (shape errors name FILE:LINE:COL and the key path);
// compile_append_output() resolves its fields against the catalogue of the
// rules to load (a field nobody has is an error at the same place); the
// rule loader (LoadOptions::append_output) applies the compiled entries to
// each rule's output when the rule compiles. An alert renders what its rule
// holds: nothing is parsed or matched per alert.
//
// Thread-safety: values; a compiled AppendOutput is immutable and shared.
#pragma once

#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/rules/compiler.h"
#include "engine/rules/fields.h"
#include "engine/util/config_origin.h"
#include "engine/util/result.h"

namespace vigil::rules {

// Which rules an entry applies to (Falco's `match`): every condition given
// must hold; none given, every rule.
struct AppendMatch {
  std::string source;             // the rule's source; "" any
  std::vector<std::string> tags;  // the rule has all of them
  std::string rule;               // the rule's name; "" any
  bool matches(std::string_view rule_name, std::string_view rule_source,
               const std::vector<std::string>& rule_tags) const;
};

// One item of `extra_fields`, as written.
struct ExtraFieldSpec {
  std::string key;     // the output_fields key
  std::string format;  // a bare field: "%name"; else the format string
  bool raw = false;    // a bare field name: the field's typed value; else the format's text
  std::string where;   // "FILE:LINE:COL: append_output[0].extra_fields[1]", for errors
};

struct AppendOutputEntry {
  AppendMatch match;
  std::string extra_output;  // "" none
  std::string extra_output_where;
  std::vector<ExtraFieldSpec> extra_fields;
  bool suggested_output = false;
};

struct AppendOutputConfig {
  std::vector<AppendOutputEntry> entries;
  // Falco's default (falco.yaml): one entry, `suggested_output: true`.
  static AppendOutputConfig falco_default();
};

// Reads the value of `append_output:` (the root's key; undefined or null:
// the default, an empty list: nothing). Errors are bad input naming where the
// value came from and its key path: "vigil.yaml:7:9: append_output[0].match.tags:
// expected a list of tags". Unknown keys are errors.
Result<AppendOutputConfig> parse_append_output(const YAML::Node& value, const ConfigOrigin& origin);

// A field suggested for every alert's output (Falco: a field an extractor
// flags as a suggested output format).
struct SuggestedField {
  std::string name;                  // "container.id"
  std::vector<std::string> sources;  // the sources whose rules get it; empty: every source
};

// vigil's own suggestions, in Falco's container plugin's order: container.id,
// container.name, container.image.repository, container.image.tag,
// k8s.pod.name, k8s.ns.name; then vigil's k8s.meta (how complete those are:
// a SIEM tells a host process from a pod not resolved yet).
std::vector<SuggestedField> builtin_suggested_fields();

// A field an entry adds to output_fields only.
struct ExtraField {
  std::string key;
  OutputFormat format;  // raw: one field token
  bool raw = false;
};

// The configuration with its formats parsed and fields resolved.
class AppendOutput {
 public:
  // Appends to one rule's output what the entries that match it add, in
  // their order: extra_output (after a space), then each suggested field
  // the output does not print yet (" container_id=%container.id"), and adds
  // their extra fields to `extra` (a later entry's key replaces an earlier one's).
  void apply(std::string_view rule, std::string_view source, const std::vector<std::string>& tags, OutputFormat& output,
             std::vector<ExtraField>& extra) const;
  bool empty() const { return entries_.empty(); }

 private:
  friend Result<std::shared_ptr<const AppendOutput>> compile_append_output(const AppendOutputConfig&,
                                                                           const FieldCatalog&,
                                                                           const std::vector<SuggestedField>&);
  struct Suggested {
    std::string name;
    std::vector<std::string> sources;
    OutputFormat format;  // "container_id=%container.id"
  };
  struct Entry {
    AppendMatch match;
    OutputFormat extra_output;  // no tokens: none
    std::vector<Suggested> suggested;
    std::vector<ExtraField> extra_fields;
  };
  std::vector<Entry> entries_;
};

// Parses every format of `cfg` against `catalog` (the rules' own: builtin()
// or the one with the loaded plugins' fields, which must outlive the rules)
// and, for entries with suggested_output, the `suggested` fields. A format
// that does not parse, an unknown field, or an extra field that is not one
// field is bad input naming the entry's place and the field.
Result<std::shared_ptr<const AppendOutput>> compile_append_output(const AppendOutputConfig& cfg,
                                                                  const FieldCatalog& catalog,
                                                                  const std::vector<SuggestedField>& suggested);

}  // namespace vigil::rules
