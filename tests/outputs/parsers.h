// Independent readers for the output formats, used by the tests and the fuzz
// target to check that what a formatter wrote parses back into exactly the
// fields it was given (nothing forged, nothing lost). They follow the format
// specifications, not the formatter's code.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/event/alert.h"
#include "outputs/format.h"

namespace vigil::outputs::testing {

// What a CEF value must read back as: sanitize_utf8, then control characters
// other than CR/LF (C0, DEL, C1) and U+2028/U+2029 as U+FFFD.
inline std::string cef_expected(std::string_view s) {
  const std::string clean = sanitize_utf8(s);
  std::string out;
  for (std::size_t i = 0; i < clean.size(); ++i) {
    const auto c = static_cast<unsigned char>(clean[i]);
    if ((c < 0x20 && c != '\n' && c != '\r') || c == 0x7F) {
      out += "\xEF\xBF\xBD";
    } else if (c == 0xC2 && i + 1 < clean.size() && static_cast<unsigned char>(clean[i + 1]) <= 0x9F) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else if (clean.compare(i, 3, "\xE2\x80\xA8") == 0 || clean.compare(i, 3, "\xE2\x80\xA9") == 0) {
      out += "\xEF\xBF\xBD";
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// SD-PARAM values read back as: sanitize_utf8, then all control characters
// (C0 incl. CR/LF, DEL, C1) as U+FFFD; U+2028/U+2029 stay (RFC 5424 values
// are UTF-8 and break no record).
inline std::string sd_expected(std::string_view s) {
  const std::string clean = sanitize_utf8(s);
  std::string out;
  for (std::size_t i = 0; i < clean.size(); ++i) {
    const auto c = static_cast<unsigned char>(clean[i]);
    if (c < 0x20 || c == 0x7F) {
      out += "\xEF\xBF\xBD";
    } else if (c == 0xC2 && i + 1 < clean.size() && static_cast<unsigned char>(clean[i + 1]) <= 0x9F) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

struct Cef {
  std::vector<std::string> header;  // 7 fields after "CEF:0"
  std::map<std::string, std::string> ext;
};

inline std::optional<Cef> parse_cef(std::string_view line) {
  if (line.substr(0, 4) != "CEF:") return std::nullopt;
  Cef out;
  std::string cur;
  std::size_t i = 4;
  bool version_done = false;
  for (; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\\' && i + 1 < line.size()) {
      const char n = line[++i];
      cur += n == 'n' ? '\n' : n == 'r' ? '\r' : n;
      continue;
    }
    if (c == '|') {
      if (!version_done) {
        version_done = true;  // "0"
      } else {
        out.header.push_back(cur);
      }
      cur.clear();
      if (out.header.size() == 6) {
        ++i;
        break;
      }
      continue;
    }
    if (c == '\n' || c == '\r') return std::nullopt;
    cur += c;
  }
  if (out.header.size() != 6) return std::nullopt;
  // Extension: key=value pairs, values escape '\' '=' and CR/LF.
  const std::string_view ext = line.substr(i);
  std::vector<std::size_t> eqs;
  for (std::size_t k = 0; k < ext.size(); ++k) {
    if (ext[k] == '\\') {
      ++k;
      continue;
    }
    if (ext[k] == '=') eqs.push_back(k);
    if (ext[k] == '\n' || ext[k] == '\r') return std::nullopt;
  }
  std::size_t prev_value_start = 0;
  std::string prev_key;
  auto unescape = [](std::string_view v) {
    std::string s;
    for (std::size_t k = 0; k < v.size(); ++k) {
      if (v[k] == '\\' && k + 1 < v.size()) {
        const char n = v[++k];
        s += n == 'n' ? '\n' : n == 'r' ? '\r' : n;
      } else {
        s += v[k];
      }
    }
    return s;
  };
  for (std::size_t e = 0; e < eqs.size(); ++e) {
    const std::size_t eq = eqs[e];
    std::size_t key_start = ext.rfind(' ', eq);
    key_start = key_start == std::string_view::npos || key_start < prev_value_start ? prev_value_start : key_start + 1;
    if (e > 0) {
      if (key_start == 0 || key_start - 1 < prev_value_start) return std::nullopt;
      out.ext[prev_key] = unescape(ext.substr(prev_value_start, key_start - 1 - prev_value_start));
    }
    prev_key = std::string(ext.substr(key_start, eq - key_start));
    if (out.ext.count(prev_key)) return std::nullopt;  // a forged duplicate key
    prev_value_start = eq + 1;
  }
  if (!eqs.empty()) out.ext[prev_key] = unescape(ext.substr(prev_value_start));
  return out;
}

struct Text {
  std::string time;
  std::string priority;
  std::string output;
};

inline std::optional<Text> parse_text(std::string_view line) {
  if (line.find('\n') != std::string_view::npos || line.find('\r') != std::string_view::npos) return std::nullopt;
  for (unsigned char c : line) {
    if (c < 0x20 || c == 0x7F) return std::nullopt;  // no raw control character, ESC included
  }
  // No raw C1 (UTF-8 C2 80..C2 9F) and no raw line or paragraph separator.
  for (std::size_t k = 0; k + 1 < line.size(); ++k) {
    if (static_cast<unsigned char>(line[k]) == 0xC2 && static_cast<unsigned char>(line[k + 1]) >= 0x80 &&
        static_cast<unsigned char>(line[k + 1]) <= 0x9F)
      return std::nullopt;
  }
  if (line.find("\xE2\x80\xA8") != std::string_view::npos || line.find("\xE2\x80\xA9") != std::string_view::npos)
    return std::nullopt;
  const auto colon = line.find(": ");
  if (colon == std::string_view::npos) return std::nullopt;
  Text t;
  t.time = std::string(line.substr(0, colon));
  const auto sp = line.find(' ', colon + 2);
  if (sp == std::string_view::npos) return std::nullopt;
  t.priority = std::string(line.substr(colon + 2, sp - colon - 2));
  const std::string_view body = line.substr(sp + 1);
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t k = 0; k < body.size(); ++k) {
    if (body[k] != '\\') {
      t.output += body[k];
      continue;
    }
    if (k + 1 >= body.size()) return std::nullopt;
    const char n = body[++k];
    if (n == '\\') {
      t.output += '\\';
    } else if (n == 'x' && k + 2 < body.size()) {
      const int v = hex(body[k + 1]) * 16 + hex(body[k + 2]);
      if (hex(body[k + 1]) < 0 || hex(body[k + 2]) < 0) return std::nullopt;
      t.output += static_cast<char>(v);
      k += 2;
    } else if (n == 'u' && k + 4 < body.size() &&
               (body.substr(k + 1, 4) == "2028" || body.substr(k + 1, 4) == "2029")) {
      t.output += body[k + 4] == '8' ? "\xE2\x80\xA8" : "\xE2\x80\xA9";
      k += 4;
    } else if (n == 'u' && k + 4 < body.size() && body.substr(k + 1, 2) == "00") {
      const int v = hex(body[k + 3]) * 16 + hex(body[k + 4]);
      // U+0080..U+009F as UTF-8
      t.output += static_cast<char>(0xC2);
      t.output += static_cast<char>(v);
      k += 4;
    } else {
      return std::nullopt;
    }
  }
  return t;
}

// RFC 5424: "<PRI>1 TS HOST APP PROCID MSGID [SD] MSG".
struct Syslog5424 {
  int pri = -1;
  std::string timestamp, hostname, app_name, procid, msgid;
  std::string sd_id;
  std::map<std::string, std::string> sd;
  std::string msg;
};

inline std::optional<Syslog5424> parse_syslog5424(std::string_view r) {
  Syslog5424 s;
  if (r.empty() || r[0] != '<') return std::nullopt;
  const auto gt = r.find('>');
  if (gt == std::string_view::npos || gt > 4) return std::nullopt;
  s.pri = std::stoi(std::string(r.substr(1, gt - 1)));
  r.remove_prefix(gt + 1);
  auto token = [&r](std::string& out) {
    const auto sp = r.find(' ');
    if (sp == std::string_view::npos) return false;
    out = std::string(r.substr(0, sp));
    r.remove_prefix(sp + 1);
    return true;
  };
  std::string version;
  if (!token(version) || version != "1") return std::nullopt;
  if (!token(s.timestamp) || !token(s.hostname) || !token(s.app_name) || !token(s.procid) || !token(s.msgid)) {
    return std::nullopt;
  }
  if (r.empty() || r[0] != '[') return std::nullopt;
  r.remove_prefix(1);
  const auto sp = r.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  s.sd_id = std::string(r.substr(0, sp));
  r.remove_prefix(sp);
  while (!r.empty() && r[0] == ' ') {
    r.remove_prefix(1);
    const auto eq = r.find("=\"");
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string name(r.substr(0, eq));
    r.remove_prefix(eq + 2);
    std::string value;
    std::size_t k = 0;
    for (; k < r.size(); ++k) {
      if (r[k] == '\\' && k + 1 < r.size() && (r[k + 1] == '"' || r[k + 1] == '\\' || r[k + 1] == ']')) {
        value += r[++k];
      } else if (r[k] == '"') {
        break;
      } else if (r[k] == ']') {
        return std::nullopt;  // an unescaped ] inside a value
      } else {
        value += r[k];
      }
    }
    if (k >= r.size()) return std::nullopt;
    r.remove_prefix(k + 1);
    if (s.sd.count(name)) return std::nullopt;
    s.sd[name] = value;
  }
  if (r.empty() || r[0] != ']') return std::nullopt;
  r.remove_prefix(1);
  if (!r.empty()) {
    if (r[0] != ' ') return std::nullopt;
    r.remove_prefix(1);
  }
  s.msg = std::string(r);
  return s;
}

}  // namespace vigil::outputs::testing
