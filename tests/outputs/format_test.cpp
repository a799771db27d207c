// Golden and hostile-content tests of the four alert formats.
// VIGIL_UPDATE_GOLDENS=1 rewrites tests/outputs/golden/* (review the diff).
#include "outputs/format.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/outputs/parsers.h"
#include "tests/outputs/test_alert.h"

namespace vigil::outputs {
namespace {

using testing::golden_alert;

std::string read_golden(const std::string& name, const std::string& actual) {
  const std::string path = "tests/outputs/golden/" + name;
  if (const char* u = std::getenv("VIGIL_UPDATE_GOLDENS"); u && std::string(u) == "1") {
    std::ofstream(path) << actual << "\n";
  }
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

TEST(Format, JsonMatchesGolden) {
  EXPECT_EQ(format_json(golden_alert()), read_golden("alert.json", format_json(golden_alert())));
}
TEST(Format, OcsfMatchesGolden) {
  EXPECT_EQ(format_ocsf(golden_alert()), read_golden("alert.ocsf.json", format_ocsf(golden_alert())));
}
TEST(Format, CefMatchesGolden) {
  EXPECT_EQ(format_cef(golden_alert()), read_golden("alert.cef", format_cef(golden_alert())));
}
TEST(Format, TextMatchesGolden) {
  EXPECT_EQ(format_text(golden_alert()), read_golden("alert.txt", format_text(golden_alert())));
}

TEST(Format, JsonHasFalcoShapes) {
  const auto j = nlohmann::json::parse(format_json(golden_alert()));
  EXPECT_EQ(j["time"], "2023-11-14T22:13:20.123456789Z");
  EXPECT_EQ(j["rule"], "Shell in inference pod");
  EXPECT_EQ(j["priority"], "Critical");
  EXPECT_EQ(j["source"], "syscall");
  EXPECT_EQ(j["hostname"], "gpu-node-1");
  EXPECT_EQ(j["uuid"], "7d3f5e1a-9c2b-4e8f-a1d6-0b4c8e2f9a37");
  EXPECT_TRUE(j["output"].is_string());
  EXPECT_TRUE(j["tags"].is_array());
  const auto& f = j["output_fields"];
  EXPECT_TRUE(f["proc.pid"].is_number_integer());
  EXPECT_EQ(f["proc.pid"], 4242);
  EXPECT_TRUE(f["gpu.minor"].is_number_unsigned());
  EXPECT_TRUE(f["proc.tty"].is_boolean());
  EXPECT_TRUE(f["user.name"].is_null());
  EXPECT_EQ(f["gpu.devices"][1], "/dev/nvidiactl");
  EXPECT_EQ(j["capture"], "/var/lib/vigil/flight/1700000000.vcap");
}

TEST(Format, ExtraNeverShadowsFalcoKeys) {
  auto a = golden_alert();
  a.extra.push_back({"rule", "forged"});
  const auto j = nlohmann::json::parse(format_json(a));
  EXPECT_EQ(j["rule"], "Shell in inference pod");
}

// docs/outputs.md, "Aggregation": a summary is machine-readable in every
// format; an alert that is not one has none of it.
TEST(Format, SummariesCarryTheirCountAndWindowInEveryFormat) {
  event::Alert a = golden_alert();
  EXPECT_FALSE(nlohmann::json::parse(format_json(a)).contains("aggregate"));
  EXPECT_EQ(format_cef(a).find(" cnt="), std::string::npos);
  event::AlertAggregate g;
  g.count = 599;
  g.total = 3600;
  g.first_ns = 1700000000000000000ULL;
  g.last_ns = 1700000599500000000ULL;
  g.window_start_ns = 1700000000000000000ULL;
  g.window_end_ns = 1700000600000000000ULL;
  g.by = {"container.id", "proc.exepath"};
  g.first_uuid = "0b4c8e2f-9a37-4e8f-a1d6-7d3f5e1a9c2b";
  g.reason = "window";
  a.aggregate = g;
  a.extra.emplace_back("aggregate", "must not shadow the summary");
  const auto j = nlohmann::json::parse(format_json(a));
  ASSERT_TRUE(j.contains("aggregate"));
  const auto& x = j["aggregate"];
  EXPECT_EQ(x["count"], 599);
  EXPECT_EQ(x["total"], 3600);
  EXPECT_EQ(x["first_time"], "2023-11-14T22:13:20.000000000Z");
  EXPECT_EQ(x["last_time"], "2023-11-14T22:23:19.500000000Z");
  EXPECT_EQ(x["window_start"], "2023-11-14T22:13:20.000000000Z");
  EXPECT_EQ(x["window_end"], "2023-11-14T22:23:20.000000000Z");
  EXPECT_EQ(x["window_s"], 600);
  EXPECT_EQ(x["by"], nlohmann::json::array({"container.id", "proc.exepath"}));
  EXPECT_EQ(x["first_uuid"], "0b4c8e2f-9a37-4e8f-a1d6-7d3f5e1a9c2b");
  EXPECT_EQ(x["reason"], "window");
  EXPECT_EQ(j["rule"], "Shell in inference pod") << "Falco's keys are unchanged";
  const auto o = nlohmann::json::parse(format_ocsf(a));
  EXPECT_EQ(o["count"], 599);
  EXPECT_EQ(o["start_time"], 1700000000000LL);
  EXPECT_EQ(o["end_time"], 1700000599500LL);
  EXPECT_EQ(o["unmapped"]["aggregate"]["count"], 599);
  const std::string cef = format_cef(a);
  EXPECT_NE(cef.find(" cnt=599 start=1700000000000 end=1700000599500"), std::string::npos) << cef;
  // A window that is not whole seconds keeps its fraction.
  a.aggregate->window_end_ns = a.aggregate->window_start_ns + 1500000000ULL;
  EXPECT_EQ(nlohmann::json::parse(format_json(a))["aggregate"]["window_s"], 1.5);
}

TEST(Format, OcsfIsDetectionFinding) {
  const auto j = nlohmann::json::parse(format_ocsf(golden_alert()));
  EXPECT_EQ(j["class_uid"], 2004);
  EXPECT_EQ(j["category_uid"], 2);
  EXPECT_EQ(j["type_uid"], 200401);
  EXPECT_EQ(j["severity_id"], 5);
  EXPECT_EQ(j["time"], 1700000000123LL);
  EXPECT_EQ(j["finding_info"]["uid"], "7d3f5e1a-9c2b-4e8f-a1d6-0b4c8e2f9a37");
  EXPECT_EQ(j["finding_info"]["title"], "Shell in inference pod");
  EXPECT_EQ(j["metadata"]["product"]["name"], "vigil");
  EXPECT_EQ(j["unmapped"]["output_fields"]["proc.pid"], 4242);
}

TEST(Format, TimeIsRfc3339UtcWithNanoseconds) {
  EXPECT_EQ(rfc3339_ns(0), "1970-01-01T00:00:00.000000000Z");
  EXPECT_EQ(rfc3339_ns(1700000000000000001ULL), "2023-11-14T22:13:20.000000001Z");
}

TEST(Format, PriorityMappings) {
  EXPECT_EQ(ocsf_severity_id(event::Priority::kEmergency), 6);
  EXPECT_EQ(ocsf_severity_id(event::Priority::kWarning), 3);
  EXPECT_EQ(ocsf_severity_id(event::Priority::kDebug), 1);
  EXPECT_EQ(cef_severity(event::Priority::kEmergency), 10);
  EXPECT_EQ(cef_severity(event::Priority::kDebug), 0);
}

TEST(Format, NamesRoundTrip) {
  for (Format f : {Format::kJson, Format::kOcsf, Format::kCef, Format::kText}) {
    EXPECT_EQ(format_from_name(format_name(f)), f);
  }
  EXPECT_FALSE(format_from_name("xml"));
}

TEST(Utf8, InvalidSequencesBecomeReplacementCharacters) {
  EXPECT_EQ(sanitize_utf8("ok"), "ok");
  EXPECT_EQ(sanitize_utf8("\xC3\xA9"), "\xC3\xA9");                                  // é
  EXPECT_EQ(sanitize_utf8("\xFF"), "\xEF\xBF\xBD");                                  // bad lead byte
  EXPECT_EQ(sanitize_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(sanitize_utf8("a\xE2\x82"), "a\xEF\xBF\xBD\xEF\xBF\xBD");                // truncated
  EXPECT_EQ(sanitize_utf8("\xF4\x90\x80\x80").substr(0, 3), "\xEF\xBF\xBD");         // > U+10FFFF
}

// The attacker's toolbox: every value below tries to end a record, add a
// field, or drive a terminal.
const std::vector<std::string> kHostile = {
    "bash\n{\"rule\":\"forged\"}",
    "x\r\nCEF:0|evil|evil|1|2|3|10|",
    "nul\0byte",
    "quote\" and \\ backslash",
    "pipe | equals = backslash \\",
    "sd ] \" \\ closing",
    "\x1b[31mred\x1b[0m \x1b]0;title\x07",
    "\xC2\x9B"
    "31m C1 CSI",
    "bad utf8 \xFF\xFE \xC0\xAF",
    "line sep \xE2\x80\xA8 para sep \xE2\x80\xA9",
    "tab\tand del\x7f",
    " msg=forged cs1=forged",
};

event::Alert hostile_alert(const std::string& v) {
  auto a = golden_alert();
  a.rule = v;
  a.output = v;
  a.hostname = v;
  a.uuid = v;
  a.tags = {v, "T1059"};
  a.output_fields = {{"proc.name", v}, {"proc.cmdline", v}, {"proc.pid", std::int64_t{1}}};
  return a;
}

// C1 controls (U+009B is an 8-bit CSI) and the line and paragraph separators
// U+2028/U+2029, next to invalid UTF-8, in each format's escaping.
const std::string kC1AndSeparators =
    "a\xC2\x9B"
    "31m\xC2\x80\xC2\x9F\xFF\xC2"
    "b\xE2\x80\xA8\xE2\x80\xA9\xE2\x80";
constexpr std::string_view kFffd = "\xEF\xBF\xBD";

bool has_raw_c1_or_separator(std::string_view s) {
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const auto d = static_cast<unsigned char>(s[i + 1]);
    if (c == 0xC2 && d >= 0x80 && d <= 0x9F) return true;
  }
  return s.find("\xE2\x80\xA8") != std::string_view::npos || s.find("\xE2\x80\xA9") != std::string_view::npos;
}

TEST(Hostile, JsonParsesBackIntoExactlyTheFields) {
  for (std::string v : kHostile) {
    if (v.find("nul") == 0) v = std::string("nul\0byte", 8);
    const std::string out = format_json(hostile_alert(v));
    ASSERT_EQ(out.find('\n'), std::string::npos) << out;
    ASSERT_EQ(out.find('\r'), std::string::npos);
    ASSERT_EQ(out.find('\0'), std::string::npos);
    ASSERT_EQ(out.find('\x1b'), std::string::npos);
    const auto j = nlohmann::json::parse(out);
    const std::string want = sanitize_utf8(v);
    EXPECT_EQ(j.size(), 10u);  // the nine Falco keys + capture
    EXPECT_EQ(j["rule"], want);
    EXPECT_EQ(j["output"], want);
    EXPECT_EQ(j["hostname"], want);
    EXPECT_EQ(j["uuid"], want);
    EXPECT_EQ(j["tags"][0], want);
    EXPECT_EQ(j["output_fields"].size(), 3u);
    EXPECT_EQ(j["output_fields"]["proc.cmdline"], want);
  }
}

TEST(Hostile, OcsfParsesBackIntoExactlyTheFields) {
  for (const std::string& v : kHostile) {
    const auto j = nlohmann::json::parse(format_ocsf(hostile_alert(v)));
    EXPECT_EQ(j["message"], sanitize_utf8(v));
    EXPECT_EQ(j["finding_info"]["title"], sanitize_utf8(v));
    EXPECT_EQ(j["class_uid"], 2004);
  }
}

TEST(Hostile, CefParsesBackIntoExactlyTheFields) {
  for (const std::string& v : kHostile) {
    const std::string out = format_cef(hostile_alert(v));
    ASSERT_EQ(out.find('\n'), std::string::npos) << out;
    ASSERT_EQ(out.find('\r'), std::string::npos);
    const auto c = testing::parse_cef(out);
    ASSERT_TRUE(c) << out;
    const std::string want = testing::cef_expected(v);
    EXPECT_EQ(c->header[3], want);  // signature id (rule)
    EXPECT_EQ(c->header[5], "8");
    EXPECT_EQ(c->ext.at("msg"), want);
    EXPECT_EQ(c->ext.at("dvchost"), want);
    EXPECT_EQ(c->ext.at("proc.cmdline"), want);
    EXPECT_EQ(c->ext.at("cs1"), "syscall");
    EXPECT_EQ(c->ext.size(), 13u) << out;  // nothing added, nothing lost
  }
}

TEST(Hostile, TextHasNoControlCharactersAndReadsBack) {
  for (const std::string& v : kHostile) {
    const std::string out = format_text(hostile_alert(v));
    const auto t = testing::parse_text(out);
    ASSERT_TRUE(t) << out;
    EXPECT_EQ(t->priority, "Critical");
    EXPECT_EQ(t->output, sanitize_utf8(v));
    EXPECT_EQ(out.find("\xC2\x9B"), std::string::npos);  // no 8-bit CSI either
    EXPECT_FALSE(has_raw_c1_or_separator(out)) << out;
  }
}

TEST(Hostile, JsonAndOcsfEscapeC1AndSeparatorsAsUnicodeEscapes) {
  auto a = golden_alert();
  a.output = kC1AndSeparators;
  const std::string want = "\"a\\u009b31m\\u0080\\u009f" + std::string(kFffd) + std::string(kFffd) + "b\\u2028\\u2029" +
                           std::string(kFffd) + std::string(kFffd) + "\"";
  for (const std::string& out : {format_json(a), format_ocsf(a)}) {
    EXPECT_FALSE(has_raw_c1_or_separator(out)) << out;
    EXPECT_NE(out.find(want), std::string::npos) << out;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j.contains("output") ? j["output"] : j["message"], sanitize_utf8(kC1AndSeparators));
  }
  // Every C1 code point, not just the CSI.
  for (int cp = 0x80; cp <= 0x9F; ++cp) {
    a.output = std::string("\xC2") + static_cast<char>(cp);
    char esc[8];
    std::snprintf(esc, sizeof(esc), "\\u%04x", cp);
    EXPECT_NE(format_json(a).find(std::string("\"output\":\"") + esc + "\""), std::string::npos) << cp;
  }
}

TEST(Hostile, CefReplacesC1AndSeparators) {
  auto a = golden_alert();
  a.output = kC1AndSeparators;
  const std::string out = format_cef(a);
  EXPECT_FALSE(has_raw_c1_or_separator(out)) << out;
  const std::string f(kFffd);
  const std::string want = "a" + f + "31m" + f + f + f + f + "b" + f + f + f + f;
  const auto c = testing::parse_cef(out);
  ASSERT_TRUE(c) << out;
  EXPECT_EQ(c->ext.at("msg"), want);
  EXPECT_EQ(testing::cef_expected(kC1AndSeparators), want);
}

TEST(Hostile, TextShowsC1AndSeparatorsVisibly) {
  auto a = golden_alert();
  a.output = kC1AndSeparators;
  const std::string out = format_text(a);
  EXPECT_FALSE(has_raw_c1_or_separator(out)) << out;
  const std::string f(kFffd);
  EXPECT_EQ(out,
            "2023-11-14T22:13:20.123456789Z: Critical a\\u009b31m\\u0080\\u009f" + f + f + "b\\u2028\\u2029" + f + f);
  const auto t = testing::parse_text(out);
  ASSERT_TRUE(t) << out;
  EXPECT_EQ(t->output, sanitize_utf8(kC1AndSeparators));
}

TEST(Hostile, TextShowsEscapesVisibly) {
  auto a = golden_alert();
  a.output = "a\x1b[2Jb\nc\\";
  EXPECT_EQ(format_text(a), "2023-11-14T22:13:20.123456789Z: Critical a\\x1b[2Jb\\x0ac\\\\");
}

}  // namespace
}  // namespace vigil::outputs
