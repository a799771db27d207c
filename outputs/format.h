// Alert formats: pure functions from an alert to the bytes a sink delivers.
//
//   std::string line = vigil::outputs::format_json(alert);   // Falco json_output
//
// Every formatter is deterministic (same alert, same bytes), never throws, and
// never emits a raw newline, CR or NUL, so one alert is always exactly one
// record and one line whatever the alert's values contain (they are
// attacker-controlled: process names, command lines, file and DNS names).
//   - JSON / OCSF: RFC 8259 escaping; control characters (C0, DEL, C1
//     U+0080-U+009F) and U+2028/U+2029 as \uXXXX; invalid UTF-8 replaced by
//     U+FFFD.
//   - CEF: header fields escape `\` and `|`, extension values `\` and `=`,
//     CR/LF as \r and \n; other control characters (C0, DEL, C1),
//     U+2028/U+2029 and invalid UTF-8 become U+FFFD.
//   - text: control characters (C0, DEL, C1 incl. ESC/CSI) as \xNN or \u00NN,
//     U+2028/U+2029 as \u2028/\u2029, backslash doubled, invalid UTF-8
//     replaced by U+FFFD: no ANSI sequence or line break reaches a terminal.
//
// Thread-safety: all functions are pure and reentrant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/event/alert.h"

namespace vigil::outputs {

enum class Format : std::uint8_t { kJson, kOcsf, kCef, kText };

// "json", "ocsf", "cef", "text".
std::string_view format_name(Format f);
std::optional<Format> format_from_name(std::string_view name);

// Falco-compatible json_output: {"time","rule","priority","output",
// "output_fields","hostname","source","tags","uuid"} then `extra` keys.
std::string format_json(const event::Alert& a);
// OCSF 1.1 Detection Finding (class_uid 2004, category_uid 2).
std::string format_ocsf(const event::Alert& a);
// ArcSight CEF:0 (no syslog header; the syslog sink adds that).
std::string format_cef(const event::Alert& a);
// One human line: "<RFC 3339 time>: <Priority> <output>".
std::string format_text(const event::Alert& a);

std::string format_alert(Format f, const event::Alert& a);

// RFC 3339 in UTC with nanoseconds: "2026-01-02T03:04:05.123456789Z".
std::string rfc3339_ns(std::uint64_t time_ns);

// `s` with each invalid UTF-8 sequence (bad lead/continuation byte, overlong
// form, surrogate, > U+10FFFF, truncated) replaced by U+FFFD. What every
// format delivers for a string value once its escaping is undone.
std::string sanitize_utf8(std::string_view s);

// Appends `s` as a JSON string literal (quotes included) to `out`.
void append_json_string(std::string& out, std::string_view s);

// The priority as an OCSF severity_id (1 Informational .. 6 Fatal) and as a
// CEF severity (0..10).
int ocsf_severity_id(event::Priority p);
int cef_severity(event::Priority p);

}  // namespace vigil::outputs
