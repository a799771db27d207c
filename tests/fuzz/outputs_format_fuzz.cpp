// Fuzz target: random field values through every alert format (JSON, OCSF,
// CEF, text) and the syslog RFC 5424 framing. Each output must parse back,
// with an independent reader (tests/outputs/parsers.h), into exactly the
// fields that went in (after the documented replacement of invalid UTF-8 and
// control characters) — no value may forge a field, record or line.
//
// Input layout: byte 0 = priority; then up to 8 strings, each a 2-byte
// little-endian length followed by that many bytes (short input = empty).
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "outputs/format.h"
#include "outputs/syslog_transport.h"
#include "tests/outputs/parsers.h"

namespace {

using vigil::outputs::sanitize_utf8;
namespace t = vigil::outputs::testing;

[[noreturn]] void fail(const char* what, const std::string& out) {
  std::fprintf(stderr, "outputs fuzz: %s\noutput: %s\n", what, out.c_str());
  std::abort();
}

void check(bool ok, const char* what, const std::string& out) {
  if (!ok) fail(what, out);
}

bool has_raw_break(const std::string& s) {
  return s.find('\n') != std::string::npos || s.find('\r') != std::string::npos || s.find('\0') != std::string::npos;
}

// A raw C1 control (UTF-8 C2 80..C2 9F) or U+2028/U+2029: JSON, OCSF, CEF and
// text escape or replace them all.
bool has_raw_c1_or_separator(const std::string& s) {
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    if (static_cast<unsigned char>(s[i]) == 0xC2 && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9F)
      return true;
  }
  return s.find("\xE2\x80\xA8") != std::string::npos || s.find("\xE2\x80\xA9") != std::string::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  std::size_t pos = 1;
  auto next = [&]() {
    if (pos + 2 > size) {
      pos = size;
      return std::string();
    }
    std::size_t len = data[pos] | (static_cast<std::size_t>(data[pos + 1]) << 8);
    pos += 2;
    len = std::min(len, size - pos);
    std::string s(reinterpret_cast<const char*>(data + pos), len);
    pos += len;
    return s;
  };
  vigil::event::Alert a;
  a.priority = static_cast<vigil::event::Priority>(data[0] % 8);
  a.time_ns = 1700000000123456789ULL;
  a.rule = next();
  a.output = next();
  a.hostname = next();
  a.uuid = next();
  a.source = next();
  a.tags = {next()};
  const std::string cmdline = next();
  const std::string extra = next();
  a.output_fields = {{"proc.cmdline", cmdline}, {"proc.pid", std::int64_t{42}}, {"user.name", std::monostate{}}};
  a.extra = {{"capture", extra}};

  // JSON (Falco json_output).
  const std::string json = vigil::outputs::format_json(a);
  check(!has_raw_break(json), "json: raw line break or NUL", json);
  check(!has_raw_c1_or_separator(json), "json: raw C1 or U+2028/U+2029", json);
  {
    const auto j = nlohmann::json::parse(json, nullptr, false);
    check(!j.is_discarded() && j.is_object(), "json: does not parse", json);
    check(j.size() == 10, "json: wrong number of top-level keys", json);
    check(j["rule"] == sanitize_utf8(a.rule), "json: rule", json);
    check(j["output"] == sanitize_utf8(a.output), "json: output", json);
    check(j["hostname"] == sanitize_utf8(a.hostname), "json: hostname", json);
    check(j["uuid"] == sanitize_utf8(a.uuid), "json: uuid", json);
    check(j["source"] == sanitize_utf8(a.source), "json: source", json);
    check(j["tags"].size() == 1 && j["tags"][0] == sanitize_utf8(a.tags[0]), "json: tags", json);
    check(j["output_fields"].size() == 3, "json: output_fields count", json);
    check(j["output_fields"]["proc.cmdline"] == sanitize_utf8(cmdline), "json: field", json);
    check(j["output_fields"]["proc.pid"] == 42, "json: number", json);
    check(j["output_fields"]["user.name"].is_null(), "json: null", json);
    check(j["capture"] == sanitize_utf8(extra), "json: extra", json);
  }
  // OCSF.
  const std::string ocsf = vigil::outputs::format_ocsf(a);
  check(!has_raw_break(ocsf), "ocsf: raw line break or NUL", ocsf);
  check(!has_raw_c1_or_separator(ocsf), "ocsf: raw C1 or U+2028/U+2029", ocsf);
  {
    const auto j = nlohmann::json::parse(ocsf, nullptr, false);
    check(!j.is_discarded(), "ocsf: does not parse", ocsf);
    check(j["class_uid"] == 2004, "ocsf: class", ocsf);
    check(j["message"] == sanitize_utf8(a.output), "ocsf: message", ocsf);
    check(j["finding_info"]["title"] == sanitize_utf8(a.rule), "ocsf: title", ocsf);
    check(j["finding_info"]["uid"] == sanitize_utf8(a.uuid), "ocsf: uid", ocsf);
    check(j["device"]["hostname"] == sanitize_utf8(a.hostname), "ocsf: hostname", ocsf);
    check(j["unmapped"]["output_fields"]["proc.cmdline"] == sanitize_utf8(cmdline), "ocsf: field", ocsf);
  }
  // CEF.
  const std::string cef = vigil::outputs::format_cef(a);
  check(!has_raw_break(cef), "cef: raw line break or NUL", cef);
  check(!has_raw_c1_or_separator(cef), "cef: raw C1 or U+2028/U+2029", cef);
  {
    auto c = t::parse_cef(cef);
    check(c.has_value(), "cef: does not parse", cef);
    check(c->header.size() == 6, "cef: header fields", cef);
    check(c->header[3] == t::cef_expected(a.rule), "cef: signature", cef);
    check(c->header[4] == t::cef_expected(a.rule), "cef: name", cef);
    check(c->ext.size() == 12, "cef: extension keys added or lost", cef);
    check(c->ext["msg"] == t::cef_expected(a.output), "cef: msg", cef);
    check(c->ext["dvchost"] == t::cef_expected(a.hostname), "cef: dvchost", cef);
    check(c->ext["externalId"] == t::cef_expected(a.uuid), "cef: externalId", cef);
    check(c->ext["cs1"] == t::cef_expected(a.source), "cef: cs1", cef);
    check(c->ext["cat"] == t::cef_expected(a.tags[0]), "cef: cat", cef);
    check(c->ext["proc.cmdline"] == t::cef_expected(cmdline), "cef: field", cef);
    check(c->ext["capture"] == t::cef_expected(extra), "cef: extra", cef);
  }
  // Text.
  const std::string text = vigil::outputs::format_text(a);
  {
    const auto x = t::parse_text(text);
    check(x.has_value(), "text: control character or bad escape", text);
    check(x->priority == vigil::event::priority_name(a.priority), "text: priority", text);
    check(x->output == sanitize_utf8(a.output), "text: output", text);
  }
  // Syslog RFC 5424 around the JSON body.
  vigil::outputs::Message m;
  m.body = json;
  m.rule = a.rule;
  m.uuid = a.uuid;
  m.hostname = a.hostname;
  m.priority = std::string(vigil::event::priority_name(a.priority));
  m.time_ns = a.time_ns;
  vigil::outputs::SyslogOptions so;
  so.app_name = a.source.empty() ? "vigil" : a.source;
  const std::string rec = vigil::outputs::syslog_record(so, m, 1);
  check(!has_raw_break(rec), "syslog: raw line break or NUL", rec);
  {
    auto s = t::parse_syslog5424(rec);
    check(s.has_value(), "syslog: does not parse", rec);
    check(s->sd.size() == 3, "syslog: SD params added or lost", rec);
    check(s->sd["rule"] == t::sd_expected(a.rule), "syslog: rule", rec);
    check(s->sd["uuid"] == t::sd_expected(a.uuid), "syslog: uuid", rec);
    check(s->msg == json, "syslog: msg", rec);
    check(s->pri == 8 + static_cast<int>(a.priority), "syslog: pri", rec);
  }
  return 0;
}
