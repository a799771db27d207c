#include "outputs/format.h"

#include "engine/util/version.h"

#include <ctime>

#include <array>
#include <cstdio>
#include <type_traits>

namespace vigil::outputs {
namespace {

#ifndef VIGIL_VERSION
#define VIGIL_VERSION "0.0.0"
#endif
constexpr std::string_view kProductVersion = vigil::kVersion;
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr char kHex[] = "0123456789abcdef";

// Decodes one UTF-8 code point at s[i]; advances i. Returns -1 (consuming one
// byte) for anything invalid.
std::int32_t next_code_point(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  std::size_t len = 0;
  std::int32_t cp = 0;
  std::int32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    ++i;
    return -1;
  }
  if (i + len > s.size()) {
    ++i;
    return -1;
  }
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return -1;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++i;
    return -1;
  }
  i += len;
  return cp;
}

void append_u00(std::string& out, std::int32_t cp) {
  out += "\\u00";
  out += kHex[(cp >> 4) & 0xF];
  out += kHex[cp & 0xF];
}

void append_json_number(std::string& out, std::int64_t v) { out += std::to_string(v); }
void append_json_number(std::string& out, std::uint64_t v) { out += std::to_string(v); }

void append_json_value(std::string& out, const event::FieldValue& v) {
  std::visit(
      [&out](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          out += "null";
        } else if constexpr (std::is_same_v<T, bool>) {
          out += x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          append_json_string(out, x);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          out += '[';
          for (std::size_t i = 0; i < x.size(); ++i) {
            if (i) out += ',';
            append_json_string(out, x[i]);
          }
          out += ']';
        } else {
          append_json_number(out, x);
        }
      },
      v);
}

void append_string_array(std::string& out, const std::vector<std::string>& v) {
  out += '[';
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    append_json_string(out, v[i]);
  }
  out += ']';
}

void append_output_fields(std::string& out, const event::Alert& a) {
  out += '{';
  for (std::size_t i = 0; i < a.output_fields.size(); ++i) {
    if (i) out += ',';
    append_json_string(out, a.output_fields[i].first);
    out += ':';
    append_json_value(out, a.output_fields[i].second);
  }
  out += '}';
}

bool is_falco_key(std::string_view k) {
  for (std::string_view f :
       {"time", "rule", "priority", "output", "output_fields", "hostname", "source", "tags", "uuid"}) {
    if (k == f) return true;
  }
  return false;
}

// A field value as plain text (CEF extension values).
std::string field_text(const event::FieldValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "<NA>";
        } else if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return x;
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          std::string s;
          for (std::size_t i = 0; i < x.size(); ++i) {
            if (i) s += ',';
            s += x[i];
          }
          return s;
        } else {
          return std::to_string(x);
        }
      },
      v);
}

// CEF escaping. header: `\` and `|`; extension: `\` and `=`. CR/LF as \r \n in
// both; other control characters, the line and paragraph separators U+2028
// and U+2029 (CEF has no escape for them), and invalid UTF-8 as U+FFFD.
void append_cef(std::string& out, std::string_view s, bool header) {
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t start = i;
    const std::int32_t cp = next_code_point(s, i);
    if (cp < 0 || (cp < 0x20 && cp != '\n' && cp != '\r') || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 ||
        cp == 0x2029) {
      out += kReplacement;
    } else if (cp == '\\') {
      out += "\\\\";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (header && cp == '|') {
      out += "\\|";
    } else if (!header && cp == '=') {
      out += "\\=";
    } else {
      out.append(s.substr(start, i - start));
    }
  }
}

// CEF extension keys: letters, digits, '_' and '.'; anything else becomes '_'.
void append_cef_key(std::string& out, std::string_view k) {
  if (k.empty()) {
    out += '_';
    return;
  }
  for (char c : k) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    out += ok ? c : '_';
  }
}

void append_text(std::string& out, std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t start = i;
    const std::int32_t cp = next_code_point(s, i);
    if (cp < 0) {
      out += kReplacement;
    } else if (cp < 0x20 || cp == 0x7F) {
      out += "\\x";
      out += kHex[(cp >> 4) & 0xF];
      out += kHex[cp & 0xF];
    } else if (cp >= 0x80 && cp <= 0x9F) {
      append_u00(out, cp);
    } else if (cp == 0x2028 || cp == 0x2029) {  // line breaks to some viewers
      out += cp == 0x2028 ? "\\u2028" : "\\u2029";
    } else if (cp == '\\') {
      out += "\\\\";
    } else {
      out.append(s.substr(start, i - start));
    }
  }
}

std::string_view ocsf_severity_name(int id) {
  switch (id) {
    case 1: return "Informational";
    case 2: return "Low";
    case 3: return "Medium";
    case 4: return "High";
    case 5: return "Critical";
    case 6: return "Fatal";
    default: return "Unknown";
  }
}

}  // namespace

std::string_view format_name(Format f) {
  switch (f) {
    case Format::kJson: return "json";
    case Format::kOcsf: return "ocsf";
    case Format::kCef: return "cef";
    case Format::kText: return "text";
  }
  return "json";
}

std::optional<Format> format_from_name(std::string_view name) {
  for (Format f : {Format::kJson, Format::kOcsf, Format::kCef, Format::kText}) {
    if (format_name(f) == name) return f;
  }
  return std::nullopt;
}

std::string rfc3339_ns(std::uint64_t time_ns) {
  const auto secs = static_cast<std::time_t>(time_ns / 1000000000ULL);
  const auto nanos = static_cast<unsigned>(time_ns % 1000000000ULL);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%09uZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, nanos);
  return buf;
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t start = i;
    if (next_code_point(s, i) < 0) {
      out += kReplacement;
    } else {
      out.append(s.substr(start, i - start));
    }
  }
  return out;
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t start = i;
    const std::int32_t cp = next_code_point(s, i);
    switch (cp) {
      case -1: out += kReplacement; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case 0x2028: out += "\\u2028"; break;
      case 0x2029: out += "\\u2029"; break;
      default:
        if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {  // C0, DEL, C1 (U+009B is a CSI)
          append_u00(out, cp);
        } else {
          out.append(s.substr(start, i - start));
        }
    }
  }
  out += '"';
}

int ocsf_severity_id(event::Priority p) {
  switch (p) {
    case event::Priority::kEmergency: return 6;
    case event::Priority::kAlert:
    case event::Priority::kCritical: return 5;
    case event::Priority::kError: return 4;
    case event::Priority::kWarning: return 3;
    case event::Priority::kNotice: return 2;
    case event::Priority::kInformational:
    case event::Priority::kDebug: return 1;
  }
  return 0;
}

int cef_severity(event::Priority p) {
  switch (p) {
    case event::Priority::kEmergency: return 10;
    case event::Priority::kAlert: return 9;
    case event::Priority::kCritical: return 8;
    case event::Priority::kError: return 7;
    case event::Priority::kWarning: return 5;
    case event::Priority::kNotice: return 3;
    case event::Priority::kInformational: return 1;
    case event::Priority::kDebug: return 0;
  }
  return 0;
}

namespace {

// A summary's "aggregate" object (engine/pipeline/aggregate.h): numbers as
// numbers, times as RFC 3339, for a SIEM to read without parsing the text.
void append_aggregate(std::string& out, const event::AlertAggregate& g) {
  out += "{\"count\":" + std::to_string(g.count) + ",\"total\":" + std::to_string(g.total);
  out += ",\"first_time\":";
  append_json_string(out, rfc3339_ns(g.first_ns));
  out += ",\"last_time\":";
  append_json_string(out, rfc3339_ns(g.last_ns));
  out += ",\"window_start\":";
  append_json_string(out, rfc3339_ns(g.window_start_ns));
  out += ",\"window_end\":";
  append_json_string(out, rfc3339_ns(g.window_end_ns));
  out += ",\"window_s\":";
  const std::uint64_t w = g.window_end_ns - g.window_start_ns;
  out += std::to_string(w / 1000000000ull);
  if (w % 1000000000ull != 0) {
    std::string frac = std::to_string(w % 1000000000ull);
    frac.insert(0, 9 - frac.size(), '0');
    while (!frac.empty() && frac.back() == '0') frac.pop_back();
    out += '.' + frac;
  }
  out += ",\"by\":";
  append_string_array(out, g.by);
  out += ",\"first_uuid\":";
  append_json_string(out, g.first_uuid);
  out += ",\"reason\":";
  append_json_string(out, g.reason);
  out += '}';
}

}  // namespace

std::string format_json(const event::Alert& a) {
  std::string out;
  out.reserve(256 + a.output.size() * 2);
  out += "{\"time\":";
  append_json_string(out, rfc3339_ns(a.time_ns));
  out += ",\"rule\":";
  append_json_string(out, a.rule);
  out += ",\"priority\":";
  append_json_string(out, event::priority_name(a.priority));
  out += ",\"output\":";
  append_json_string(out, a.output);
  out += ",\"output_fields\":";
  append_output_fields(out, a);
  out += ",\"hostname\":";
  append_json_string(out, a.hostname);
  out += ",\"source\":";
  append_json_string(out, a.source);
  out += ",\"tags\":";
  append_string_array(out, a.tags);
  out += ",\"uuid\":";
  append_json_string(out, a.uuid);
  if (a.aggregate) {
    out += ",\"aggregate\":";
    append_aggregate(out, *a.aggregate);
  }
  for (const auto& [k, v] : a.extra) {
    if (is_falco_key(k)) continue;  // additional keys never shadow Falco's
    if (a.aggregate && k == "aggregate") continue;
    out += ',';
    append_json_string(out, k);
    out += ':';
    append_json_string(out, v);
  }
  out += '}';
  return out;
}

std::string format_ocsf(const event::Alert& a) {
  const int sev = ocsf_severity_id(a.priority);
  std::string out;
  out.reserve(512 + a.output.size() * 2);
  out +=
      "{\"activity_id\":1,\"activity_name\":\"Create\",\"category_uid\":2,"
      "\"category_name\":\"Findings\",\"class_uid\":2004,\"class_name\":\"Detection "
      "Finding\",\"type_uid\":200401,\"type_name\":\"Detection Finding: Create\",";
  out += "\"severity_id\":" + std::to_string(sev) + ",\"severity\":";
  append_json_string(out, ocsf_severity_name(sev));
  out += ",\"status_id\":1,\"status\":\"New\",\"time\":" + std::to_string(a.time_ns / 1000000);
  if (a.aggregate) {
    // OCSF's own attributes for events that stand for several.
    out += ",\"count\":" + std::to_string(a.aggregate->count);
    out += ",\"start_time\":" + std::to_string(a.aggregate->first_ns / 1000000);
    out += ",\"end_time\":" + std::to_string(a.aggregate->last_ns / 1000000);
  }
  out += ",\"time_dt\":";
  append_json_string(out, rfc3339_ns(a.time_ns));
  out += ",\"message\":";
  append_json_string(out, a.output);
  out += ",\"finding_info\":{\"uid\":";
  append_json_string(out, a.uuid);
  out += ",\"title\":";
  append_json_string(out, a.rule);
  out += ",\"desc\":";
  append_json_string(out, a.output);
  out += ",\"types\":";
  append_string_array(out, a.tags);
  out += ",\"analytic\":{\"name\":";
  append_json_string(out, a.rule);
  out += ",\"type_id\":1,\"type\":\"Rule\"}}";
  out +=
      ",\"metadata\":{\"version\":\"1.1.0\",\"product\":{\"name\":\"vigil\",\"vendor_name\":"
      "\"vigil\",\"version\":";
  append_json_string(out, kProductVersion);
  out += "},\"log_name\":";
  append_json_string(out, a.source);
  out += "},\"device\":{\"hostname\":";
  append_json_string(out, a.hostname);
  out += ",\"type_id\":0},\"unmapped\":{\"priority\":";
  append_json_string(out, event::priority_name(a.priority));
  out += ",\"source\":";
  append_json_string(out, a.source);
  out += ",\"output_fields\":";
  append_output_fields(out, a);
  if (a.aggregate) {
    out += ",\"aggregate\":";
    append_aggregate(out, *a.aggregate);
  }
  for (const auto& [k, v] : a.extra) {
    if (k == "priority" || k == "source" || k == "output_fields") continue;
    if (a.aggregate && k == "aggregate") continue;
    out += ',';
    append_json_string(out, k);
    out += ':';
    append_json_string(out, v);
  }
  out += "}}";
  return out;
}

std::string format_cef(const event::Alert& a) {
  std::string out;
  out.reserve(256 + a.output.size() * 2);
  out += "CEF:0|vigil|vigil|";
  append_cef(out, kProductVersion, true);
  out += '|';
  append_cef(out, a.rule, true);
  out += '|';
  append_cef(out, a.rule, true);
  out += '|';
  out += std::to_string(cef_severity(a.priority));
  out += "|rt=" + std::to_string(a.time_ns / 1000000);
  out += " dvchost=";
  append_cef(out, a.hostname, false);
  out += " externalId=";
  append_cef(out, a.uuid, false);
  out += " cat=";
  std::string tags;
  for (std::size_t i = 0; i < a.tags.size(); ++i) {
    if (i) tags += ',';
    tags += a.tags[i];
  }
  append_cef(out, tags, false);
  out += " cs1Label=source cs1=";
  append_cef(out, a.source, false);
  out += " cs2Label=priority cs2=";
  append_cef(out, event::priority_name(a.priority), false);
  if (a.aggregate) {
    // CEF's baseEventCount and the first and last repeat's times.
    out += " cnt=" + std::to_string(a.aggregate->count);
    out += " start=" + std::to_string(a.aggregate->first_ns / 1000000);
    out += " end=" + std::to_string(a.aggregate->last_ns / 1000000);
  }
  for (const auto& [k, v] : a.output_fields) {
    if (std::holds_alternative<std::monostate>(v)) continue;  // missing: no key
    out += ' ';
    append_cef_key(out, k);
    out += '=';
    append_cef(out, field_text(v), false);
  }
  for (const auto& [k, v] : a.extra) {
    out += ' ';
    append_cef_key(out, k);
    out += '=';
    append_cef(out, v, false);
  }
  // msg last: free text is easiest for parsers at the end.
  out += " msg=";
  append_cef(out, a.output, false);
  return out;
}

std::string format_text(const event::Alert& a) {
  std::string out = rfc3339_ns(a.time_ns);
  out += ": ";
  out += event::priority_name(a.priority);
  out += ' ';
  append_text(out, a.output);
  return out;
}

std::string format_alert(Format f, const event::Alert& a) {
  switch (f) {
    case Format::kJson: return format_json(a);
    case Format::kOcsf: return format_ocsf(a);
    case Format::kCef: return format_cef(a);
    case Format::kText: return format_text(a);
  }
  return format_json(a);
}

}  // namespace vigil::outputs
