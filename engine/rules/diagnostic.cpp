#include "engine/rules/diagnostic.h"

namespace vigil::rules {

std::string Diagnostic::to_string() const {
  std::string s = file.empty() ? std::string("<input>") : file;
  if (line > 0) {
    s += ':' + std::to_string(line);
    if (col > 0) s += ':' + std::to_string(col);
  }
  s += severity == Severity::kError ? ": error " : ": warning ";
  s += code;
  s += ": ";
  if (!item.empty()) {
    s += item;
    s += ": ";
  }
  s += message;
  return s;
}

void Diagnostics::add(Severity s, const char* code, const Pos& pos, std::string item, std::string message) {
  Diagnostic d;
  d.severity = s;
  d.code = code;
  d.file = pos.file;
  d.line = pos.line;
  d.col = pos.col;
  d.item = std::move(item);
  d.message = std::move(message);
  if (s == Severity::kError) ++errors_;
  all_.push_back(std::move(d));
}

}  // namespace vigil::rules
