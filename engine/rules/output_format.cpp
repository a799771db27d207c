// Output formats: %field tokens and literal text, parsed once per rule.
#include <algorithm>
#include <cctype>
#include <climits>
#include <string>
#include <vector>

#include "engine/rules/compiler.h"

namespace vigil::rules {

namespace {

bool ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

enum class Span { kNone, kField, kError };

// The field after the '%' at text[i]: %(expr), %name, %name[arg],
// %transformer(expr), with an optional width (%20proc.name). Gives its text
// (`expr`) and the offset after it (`end`); kNone when no field follows (a
// lone '%'), kError with `error` when it is not terminated.
Span field_at(std::string_view text, std::size_t i, std::string_view& expr, std::size_t& end, std::string& error) {
  const std::size_t start = i + 1;
  if (start < text.size() && text[start] == '(') {
    auto close = text.find(')', start);
    if (close == std::string_view::npos) {
      error = "unterminated %( at offset " + std::to_string(i);
      return Span::kError;
    }
    expr = text.substr(start + 1, close - start - 1);
    end = close + 1;
    return Span::kField;
  }
  std::size_t j = start;
  while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;  // %20proc.name
  std::size_t name_start = j;
  while (j < text.size() && ident(text[j])) ++j;
  std::string_view name = text.substr(name_start, j - name_start);
  // A transformer: %toupper(proc.name)
  if (j < text.size() && text[j] == '(' && name.find('.') == std::string_view::npos && !name.empty()) {
    int depth = 0;
    std::size_t k = j;
    for (; k < text.size(); ++k) {
      if (text[k] == '(') ++depth;
      if (text[k] == ')' && --depth == 0) break;
    }
    if (k >= text.size()) {
      error = "unterminated transformer at offset " + std::to_string(i);
      return Span::kError;
    }
    expr = text.substr(name_start, k + 1 - name_start);
    end = k + 1;
    return Span::kField;
  }
  while (!name.empty() && name.back() == '.') {
    name.remove_suffix(1);
    --j;
  }
  if (j < text.size() && text[j] == '[') {
    auto close = text.find(']', j);
    if (close == std::string_view::npos) {
      error = "unterminated field argument at offset " + std::to_string(j);
      return Span::kError;
    }
    j = close + 1;
  }
  expr = text.substr(name_start, j - name_start);
  end = j;
  return name.empty() ? Span::kNone : Span::kField;
}

// A sequence's %stepN.field: the step that gives the field (t.step) and the
// field's own name (fe.name); false with `error` when there is no step N.
bool step_prefix(FieldExpr& fe, std::size_t steps, std::string_view expr, OutputFormat::Token& t, std::string& error) {
  if (steps == 0 || fe.name.rfind("step", 0) != 0) return true;
  std::size_t d = 4;
  while (d < fe.name.size() && std::isdigit(static_cast<unsigned char>(fe.name[d]))) ++d;
  if (d > 4 && d < fe.name.size() && fe.name[d] == '.') {
    const std::string num = fe.name.substr(4, d - 4);
    const std::size_t n = num.size() > 2 ? 0 : std::stoul(num);
    if (n < 1 || n > steps) {
      error = "'" + std::string(expr) + "' in output: the sequence has steps 1 to " + std::to_string(steps);
      return false;
    }
    t.step = static_cast<int>(n) - 1;
    fe.name = fe.name.substr(d + 1);
  }
  return true;
}

}  // namespace

OutputFormat OutputFormat::parse(std::string_view text, const FieldCatalog& catalog, std::vector<std::string>& unknown,
                                 std::string& error, std::size_t steps) {
  OutputFormat f;
  std::string lit;
  auto flush = [&]() {
    if (!lit.empty()) {
      Token t;
      t.literal = std::move(lit);
      f.tokens_.push_back(std::move(t));
      lit.clear();
    }
  };
  std::size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c != '%') {
      lit += c;
      ++i;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '%') {
      lit += '%';
      i += 2;
      continue;
    }
    std::string_view expr;
    std::size_t end = 0;
    const Span span = field_at(text, i, expr, end, error);
    if (span == Span::kError) return f;
    if (span == Span::kNone) {
      lit += '%';
      ++i;
      continue;
    }
    FieldExpr fe;
    std::string perr;
    if (!parse_field_expr(expr, fe, perr)) {
      error = "bad field '" + std::string(expr) + "' in output: " + perr;
      return f;
    }
    Token t;
    if (!step_prefix(fe, steps, expr, t, error)) return f;
    flush();
    t.is_field = true;
    t.name = std::string(expr);
    t.transformers = fe.transformers;
    std::string rerr;
    bool unk = false;
    if (!catalog.resolve(fe.name, fe.has_arg, fe.arg, t.field, rerr, unk)) {
      if (!unk) {
        error = rerr;
        return f;
      }
      unknown.push_back(fe.name);
      t.field = FieldInst{};
    } else {
      t.type = t.field.def->type;
      for (auto it = t.transformers.begin(); it != t.transformers.end(); ++it) {
        if (*it == Transformer::kLen) t.type = FieldType::kInt;
      }
    }
    f.tokens_.push_back(std::move(t));
    i = end;
  }
  flush();
  return f;
}

void OutputFormat::append(std::string_view separator, const OutputFormat& more) {
  if (!separator.empty()) {
    if (!tokens_.empty() && !tokens_.back().is_field) {
      tokens_.back().literal += separator;
    } else {
      Token t;
      t.literal = std::string(separator);
      tokens_.push_back(std::move(t));
    }
  }
  for (const Token& t : more.tokens_) {
    if (!t.is_field && !tokens_.empty() && !tokens_.back().is_field) {
      tokens_.back().literal += t.literal;
    } else {
      tokens_.push_back(t);
    }
  }
}

bool OutputFormat::prints(std::string_view name) const {
  return std::any_of(tokens_.begin(), tokens_.end(),
                     [&](const Token& t) { return t.is_field && t.step < 0 && t.name == name; });
}

}  // namespace vigil::rules
