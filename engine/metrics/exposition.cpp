#include "engine/metrics/exposition.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace vigil::metrics {
namespace {

bool name_char(char c, bool first) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':') return true;
  return !first && c >= '0' && c <= '9';
}

// HELP text escapes backslash and line feed (not quotes).
std::string escape_help(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void append_value(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else if (v == std::floor(v) && std::fabs(v) < 9.007199254740992e15) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.0f", v);
    out += buf;
  } else {
    char buf[32];  // the shortest text that reads back as v
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
    if (ec == std::errc()) out.append(buf, end);
  }
}

}  // namespace

bool Exposition::valid_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!name_char(name[i], i == 0)) return false;
  }
  return true;
}

std::string Exposition::escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

Exposition::Family* Exposition::find(std::string_view name) {
  for (Family& f : families_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

void Exposition::family(std::string_view name, std::string_view type, std::string_view help) {
  if (!valid_name(name) || find(name) != nullptr) return;
  Family f;
  f.name = std::string(name);
  f.histogram = type == "histogram";
  f.head = "# HELP " + f.name + " " + escape_help(help) + "\n# TYPE " + f.name + " " + std::string(type) + "\n";
  families_.push_back(std::move(f));
}

void Exposition::append_sample(Family& f, std::string_view name, const Label* labels, std::size_t n, double value) {
  std::string& out = f.body;
  out += name;
  if (n > 0) {
    out += '{';
    for (std::size_t i = 0; i < n; ++i) {
      if (i > 0) out += ',';
      out += labels[i].first;
      out += "=\"";
      out += escape_label_value(labels[i].second);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  append_value(out, value);
  out += '\n';
}

void Exposition::checked_sample(std::string_view name, const Label* labels, std::size_t n, double value) {
  Family* f = find(name);
  for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
    if (f != nullptr || !name.ends_with(suffix)) continue;
    f = find(name.substr(0, name.size() - suffix.size()));
    if (f != nullptr && !f->histogram) f = nullptr;
  }
  bool ok = f != nullptr;
  for (std::size_t i = 0; i < n; ++i) ok = ok && valid_name(labels[i].first) && labels[i].first.substr(0, 2) != "__";
  if (!ok) {
    ++errors_;
    return;
  }
  append_sample(*f, name, labels, n, value);
}

void Exposition::sample(std::string_view name, std::initializer_list<Label> labels, double value) {
  checked_sample(name, labels.begin(), labels.size(), value);
}

void Exposition::sample(std::string_view name, const std::vector<Label>& labels, double value) {
  checked_sample(name, labels.data(), labels.size(), value);
}

std::string Exposition::text() const {
  std::string out;
  for (const Family& f : families_) {
    if (f.body.empty()) continue;
    out += f.head;
    out += f.body;
  }
  return out;
}

}  // namespace vigil::metrics
