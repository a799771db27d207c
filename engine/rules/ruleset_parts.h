// The parts of a Ruleset that its files share: what a compiled rule and a
// compiled sequence hold (ruleset_build.cpp makes them, ruleset.cpp runs
// them for each event, alert_render.cpp renders their alerts).
// Internal to engine/rules.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/event/alert.h"
#include "engine/rules/append_output.h"
#include "engine/rules/compiler.h"
#include "engine/rules/fields.h"
#include "engine/rules/ruleset.h"
#include "engine/rules/sequence.h"

namespace vigil::rules {

struct Ruleset::Rule {
  std::string name;
  std::string desc;
  event::Priority priority = event::Priority::kWarning;
  std::vector<std::string> tags;
  std::string source;
  bool enabled = true;
  std::unique_ptr<Expr> expr;
  OutputFormat output;                     // with append_output's text
  std::vector<std::size_t> output_fields;  // token indexes, first occurrence of each name
  std::vector<ExtraField> extra_fields;    // append_output's, in output_fields only
  event::TypeMask mask;
  std::string file;
  int line = 0;
  std::int32_t sequence = -1;  // >= 0: this is step `step` of sequences_[sequence]
  std::uint32_t step = 0;
};

struct Ruleset::Sequence {
  std::string name;
  std::string desc;
  event::Priority priority = event::Priority::kWarning;
  std::vector<std::string> tags;
  bool enabled = true;
  std::vector<std::string> by;
  std::vector<std::string> distinct_fields;
  // The correlation fields, resolved: the sequence's (keys[0]) and those of
  // steps with their own `by`; step_key[i] is step i's index into keys.
  std::vector<std::vector<OutputFormat::Token>> keys;
  std::vector<std::uint8_t> step_key;
  // The `distinct` fields, resolved (empty: none): an event advances a match
  // only when their values differ from every earlier step's.
  std::vector<OutputFormat::Token> distinct;
  std::uint64_t within_ns = 0;
  std::uint32_t steps = 0;
  std::vector<std::uint32_t> step_count;   // matches each step needs (its `count`, 1 by default)
  std::vector<std::uint32_t> step_rules;   // rules_ index of each step
  OutputFormat output;                     // with append_output's text
  std::vector<std::size_t> output_fields;  // token indexes, first occurrence of each name
  std::vector<ExtraField> extra_fields;    // append_output's, from the last step's event
  // Per output token: its slot in Partial::fields when an earlier step (not
  // the last) gives it, else -1 (literal, or rendered from the last event).
  std::vector<std::int32_t> slot;
  std::size_t slots = 0;
  std::string file;
  int line = 0;
};

// ---------------------------------------------------------------- alert_render.cpp

// Renders one output field for the event in `x`: its text (appended to
// `text`) and its typed value.
void render_token(const ExtractCtx& x, const OutputFormat::Token& tok, std::string& text, event::FieldValue& value);
// Renders one output field of a sequence's step into `f`, reusing its buffer.
void capture_token(const ExtractCtx& x, const OutputFormat::Token& tok, StepField& f);
// The alert of rule `r`, which the event in `x` matched.
event::Alert rule_alert(const Ruleset::Rule& r, const ExtractCtx& x, const std::string& hostname);
// The alert of sequence `s`, whose last step the event in `x` matched: the
// fields earlier steps gave come from `m`, the others from the event.
event::Alert sequence_alert(const Ruleset::Sequence& s, const Partial& m, const ExtractCtx& x,
                            const std::string& hostname);
// A container.* or k8s.* field of the event at hand, read by vigil's own
// extractor (from the container and pod records only).
bool is_metadata_token(const OutputFormat::Token& tok);
// Renders again the container.* and k8s.* fields of alert `a` (made from
// `output` and `extra`) for the records in `x`: their text in a.output
// (Alert::metadata_spans), their values in a.output_fields, and the extra
// fields made only of such fields.
void rerender_metadata(const OutputFormat& output, const std::vector<ExtraField>& extra, const ExtractCtx& x,
                       event::Alert& a);

}  // namespace vigil::rules
