#include "engine/util/yaml_gate.h"

#include <yaml.h>

namespace vigil {

bool yaml_syntax_ok(std::string_view text, YamlSyntaxError* err, std::size_t max_events) {
  yaml_parser_t parser;
  if (yaml_parser_initialize(&parser) == 0) {
    if (err) *err = {0, 0, "out of memory initialising the YAML parser"};
    return false;
  }
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()),
                               text.size());
  bool ok = true;
  std::size_t events = 0;
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
    yaml_event_delete(&ev);
    if (end) break;
    if (++events > max_events) {
      if (err) *err = {0, 0, "too many YAML nodes (more than " + std::to_string(max_events) + ")"};
      ok = false;
      break;
    }
  }
  yaml_parser_delete(&parser);
  return ok;
}

}  // namespace vigil
