#include "engine/util/yaml_gate.h"

#include <yaml.h>

namespace vigil {

bool yaml_syntax_ok(std::string_view text, YamlSyntaxError* err, std::size_t max_events, std::size_t max_depth) {
  yaml_parser_t parser;
  if (yaml_parser_initialize(&parser) == 0) {
    if (err) *err = {0, 0, "out of memory initialising the YAML parser"};
    return false;
  }
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  bool ok = true;
  std::size_t events = 0;
  std::size_t depth = 0;
  for (;;) {
    yaml_event_t ev;
    if (yaml_parser_parse(&parser, &ev) == 0) {
      if (err) {
        err->line = static_cast<int>(parser.problem_mark.line) + 1;
        err->column = static_cast<int>(parser.problem_mark.column) + 1;
        err->message = parser.problem ? parser.problem : "malformed YAML";
        if (parser.context) err->message = std::string(parser.context) + ": " + err->message;
      }
      ok = false;
      break;
    }
    const bool end = ev.type == YAML_STREAM_END_EVENT;
    const bool opens = ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT;
    const bool closes = ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT;
    const yaml_mark_t at = ev.start_mark;
    yaml_event_delete(&ev);
    if (end) break;
    if (closes && depth > 0) --depth;
    if (opens && ++depth > max_depth) {
      if (err) {
        *err = {static_cast<int>(at.line) + 1, static_cast<int>(at.column) + 1,
                "nested deeper than " + std::to_string(max_depth) + " levels (the limit)"};
      }
      ok = false;
      break;
    }
    if (++events > max_events) {
      if (err) *err = {0, 0, "too many YAML nodes (more than " + std::to_string(max_events) + ")"};
      ok = false;
      break;
    }
  }
  if (!ok && err) err->scanned = parser.mark.index;
  yaml_parser_delete(&parser);
  return ok;
}

}  // namespace vigil
