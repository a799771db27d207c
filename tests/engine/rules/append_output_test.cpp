// append_output (Falco's): the configuration read and checked, and the text
// and output fields it adds to the alerts of the rules it selects, in every
// format.
#include "engine/rules/append_output.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "engine/rules/ruleset.h"
#include "engine/rules/sequence.h"
#include "outputs/format.h"
#include "tests/engine/rules/test_util.h"

namespace vigil::rules {
namespace {

using testing::World;

// The configuration `yaml` (the value of append_output:, "" for none) read
// as from vigil.yaml and compiled against vigil's fields and suggestions.
std::shared_ptr<const AppendOutput> compiled(const std::string& yaml) {
  const YAML::Node root = YAML::Load(yaml.empty() ? "{}" : yaml);
  auto cfg = parse_append_output(root["append_output"], ConfigOrigin("vigil.yaml"));
  EXPECT_TRUE(cfg) << (cfg ? "" : cfg.error().message);
  if (!cfg) return nullptr;
  auto c = compile_append_output(*cfg, FieldCatalog::builtin(), builtin_suggested_fields());
  EXPECT_TRUE(c) << (c ? "" : c.error().message);
  return c ? *c : nullptr;
}

// The error of reading, else of compiling, `yaml`; "" when both succeed.
std::string error_of(const std::string& yaml) {
  const YAML::Node root = YAML::Load(yaml);
  auto cfg = parse_append_output(root["append_output"], ConfigOrigin("vigil.yaml"));
  if (!cfg) return cfg.error().message;
  auto c = compile_append_output(*cfg, FieldCatalog::builtin(), builtin_suggested_fields());
  return c ? "" : c.error().message;
}

LoadResult load_with(const std::string& rules, std::shared_ptr<const AppendOutput> ao) {
  LoadOptions opts;
  opts.append_output = std::move(ao);
  return load_rules_text({{"test.yaml", rules}}, opts);
}

std::vector<event::Alert> alerts(const LoadResult& r, const World& w) {
  std::vector<event::Alert> out;
  if (r.ruleset) r.ruleset->evaluate(w.ctx(), out);
  return out;
}

const event::FieldValue* field(const event::Alert& a, const std::string& key) {
  for (const auto& [k, v] : a.output_fields) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::size_t count_key(const event::Alert& a, const std::string& key) {
  std::size_t n = 0;
  for (const auto& kv : a.output_fields) n += kv.first == key;
  return n;
}

std::size_t occurrences(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// A rule in the style of Falco's stock rules: its output prints no container
// or pod field.
const std::string kStockStyle =
    "- rule: Shell\n  desc: d\n  priority: WARNING\n  tags: [shell, T1059]\n"
    "  condition: evt.type = execve\n  output: 'Shell run (pid=%proc.pid name=%proc.name)'\n";

const std::string kContainerText =
    " container_id=3f1c0d2e9a7b container_name=trainer container_image_repository=ghcr.io/acme/train"
    " container_image_tag=1.4 k8s_pod_name=train-0 k8s_ns_name=ml k8s_meta=complete";

TEST(AppendOutput, DefaultGivesEveryAlertTheContainerAndPodFieldsInTextAndOutputFields) {
  World w;
  w.exec();
  auto r = load_with(kStockStyle, compiled(""));  // no append_output: key: Falco's default
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  auto a = alerts(r, w);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].output, "Shell run (pid=100 name=python3)" + kContainerText);
  std::vector<std::string> keys;
  for (const auto& kv : a[0].output_fields) keys.push_back(kv.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"proc.pid", "proc.name", "container.id", "container.name",
                                            "container.image.repository", "container.image.tag", "k8s.pod.name",
                                            "k8s.ns.name", "k8s.meta"}));
  EXPECT_EQ(std::get<std::string>(*field(a[0], "container.id")), "3f1c0d2e9a7b");
  EXPECT_EQ(std::get<std::string>(*field(a[0], "k8s.pod.name")), "train-0");
  EXPECT_EQ(std::get<std::string>(*field(a[0], "k8s.ns.name")), "ml");
}

TEST(AppendOutput, EveryFormatCarriesTheAppendedFields) {
  World w;
  w.exec();
  auto r = load_with(kStockStyle, compiled(""));
  auto a = alerts(r, w);
  ASSERT_EQ(a.size(), 1u);
  const auto json = nlohmann::json::parse(outputs::format_json(a[0]));
  EXPECT_EQ(json["output"], "Shell run (pid=100 name=python3)" + kContainerText);
  EXPECT_EQ(json["output_fields"]["container.id"], "3f1c0d2e9a7b");
  EXPECT_EQ(json["output_fields"]["container.name"], "trainer");
  EXPECT_EQ(json["output_fields"]["container.image.repository"], "ghcr.io/acme/train");
  EXPECT_EQ(json["output_fields"]["container.image.tag"], "1.4");
  EXPECT_EQ(json["output_fields"]["k8s.pod.name"], "train-0");
  EXPECT_EQ(json["output_fields"]["k8s.ns.name"], "ml");
  const auto ocsf = nlohmann::json::parse(outputs::format_ocsf(a[0]));
  EXPECT_EQ(ocsf["unmapped"]["output_fields"]["k8s.pod.name"], "train-0");
  EXPECT_NE(ocsf["message"].get<std::string>().find("k8s_pod_name=train-0"), std::string::npos);
  const std::string cef = outputs::format_cef(a[0]);
  EXPECT_NE(cef.find(" container.id=3f1c0d2e9a7b "), std::string::npos) << cef;
  EXPECT_NE(cef.find(" k8s.pod.name=train-0 "), std::string::npos) << cef;
  EXPECT_NE(outputs::format_text(a[0]).find(kContainerText), std::string::npos);
}

TEST(AppendOutput, HostProcessGetsHostAndNoValues) {
  World w;
  w.exec();
  w.in_container = false;
  w.proc.container_id.clear();
  auto a = alerts(load_with(kStockStyle, compiled("")), w);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].output,
            "Shell run (pid=100 name=python3) container_id=host container_name=host container_image_repository=<NA>"
            " container_image_tag=<NA> k8s_pod_name=<NA> k8s_ns_name=<NA> k8s_meta=host");
  EXPECT_EQ(std::get<std::string>(*field(a[0], "container.id")), "host");
  EXPECT_EQ(std::get<std::string>(*field(a[0], "k8s.meta")), "host");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(*field(a[0], "k8s.pod.name")));
}

TEST(AppendOutput, AFieldTheOutputPrintsIsNotAppendedAgain) {
  World w;
  w.exec();
  auto r = load_with(
      "- rule: Shell\n  desc: d\n  priority: WARNING\n  condition: evt.type = execve\n"
      "  output: 'Shell run (pid=%proc.pid container=%container.id pod=%k8s.ns.name/%k8s.pod.name)'\n",
      compiled(""));
  auto a = alerts(r, w);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].output,
            "Shell run (pid=100 container=3f1c0d2e9a7b pod=ml/train-0) container_name=trainer "
            "container_image_repository=ghcr.io/acme/train container_image_tag=1.4 k8s_meta=complete");
  EXPECT_EQ(occurrences(a[0].output, "3f1c0d2e9a7b"), 1u);
  EXPECT_EQ(count_key(a[0], "container.id"), 1u);
  EXPECT_EQ(count_key(a[0], "k8s.pod.name"), 1u);
  EXPECT_EQ(a[0].output_fields.size(), 8u);
}

TEST(AppendOutput, SuggestedOutputFalseOrAnEmptyListAppendsNothing) {
  World w;
  w.exec();
  for (const char* yaml : {"append_output: [{suggested_output: false}]", "append_output: []"}) {
    auto a = alerts(load_with(kStockStyle, compiled(yaml)), w);
    ASSERT_EQ(a.size(), 1u) << yaml;
    EXPECT_EQ(a[0].output, "Shell run (pid=100 name=python3)") << yaml;
    EXPECT_EQ(a[0].output_fields.size(), 2u) << yaml;
  }
  // Without append_output in the load options (rule tests, library users): nothing either.
  auto a = alerts(load_with(kStockStyle, nullptr), w);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].output, "Shell run (pid=100 name=python3)");
}

// Three rules, one entry per kind of match: only the rules it selects get its text.
TEST(AppendOutput, MatchSelectsBySourceTagsAndRule) {
  const std::string rules =
      "- rule: A\n  desc: d\n  priority: WARNING\n  tags: [shell, T1059]\n  condition: evt.type = execve\n"
      "  output: a\n"
      "- rule: B\n  desc: d\n  priority: WARNING\n  tags: [shell]\n  condition: evt.type = execve\n  output: b\n"
      "- rule: C\n  desc: d\n  priority: WARNING\n  condition: evt.type = execve\n  output: c\n";
  auto ao = compiled(
      "append_output:\n"
      "  - match: {tags: [shell, T1059]}\n    extra_output: '[both tags]'\n"
      "  - match: {tags: [shell]}\n    extra_output: '[shell]'\n"
      "  - match: {rule: C}\n    extra_output: '[rule C]'\n"
      "  - match: {source: syscall}\n    extra_output: 'on %proc.name'\n"
      "  - match: {source: k8s_audit}\n    extra_output: '[never]'\n"
      "  - match: {source: syscall, tags: [shell], rule: B}\n    extra_output: '[all three]'\n"
      "  - extra_output: '[every rule]'\n");
  World w;
  w.exec();
  auto a = alerts(load_with(rules, ao), w);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].output, "a [both tags] [shell] on python3 [every rule]");
  EXPECT_EQ(a[1].output, "b [shell] on python3 [all three] [every rule]");
  EXPECT_EQ(a[2].output, "c [rule C] on python3 [every rule]");
  EXPECT_EQ(std::get<std::string>(*field(a[2], "proc.name")), "python3");  // extra_output's fields are output fields
}

TEST(AppendOutput, SuggestionsFollowTheMatchOfTheirEntry) {
  const std::string rules = kStockStyle +
                            "- rule: Other\n  desc: d\n  priority: WARNING\n  condition: evt.type = execve\n"
                            "  output: other\n";
  World w;
  w.exec();
  auto a = alerts(load_with(rules, compiled("append_output: [{match: {tags: [shell]}, suggested_output: true}]")), w);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].output, "Shell run (pid=100 name=python3)" + kContainerText);
  EXPECT_EQ(a[1].output, "other");
}

TEST(AppendOutput, ExtraFieldsGoToOutputFieldsOnlyTypedOrAsText) {
  World w;
  w.exec();
  auto ao = compiled(
      "append_output:\n"
      "  - suggested_output: false\n"
      "    extra_fields:\n"
      "      - proc.ppid\n"
      "      - proc.aname[1]\n"
      "      - team: 'gpu-%k8s.ns.name'\n"
      "      - proc.name: 'renamed %proc.name'\n");
  auto a = alerts(load_with(kStockStyle, ao), w);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].output, "Shell run (pid=100 name=python3)");  // not in the text
  EXPECT_EQ(std::get<std::int64_t>(*field(a[0], "proc.ppid")), 50);
  EXPECT_EQ(std::get<std::string>(*field(a[0], "proc.aname[1]")), "bash");
  EXPECT_EQ(std::get<std::string>(*field(a[0], "team")), "gpu-ml");
  // A key the output has already: the extra field's value, once (as in Falco).
  EXPECT_EQ(count_key(a[0], "proc.name"), 1u);
  EXPECT_EQ(std::get<std::string>(*field(a[0], "proc.name")), "renamed python3");
  // A later entry's key replaces an earlier one's.
  auto later = compiled(
      "append_output:\n  - extra_fields: [{team: a}]\n    suggested_output: false\n"
      "  - extra_fields: [{team: b}]\n");
  a = alerts(load_with(kStockStyle, later), w);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(count_key(a[0], "team"), 1u);
  EXPECT_EQ(std::get<std::string>(*field(a[0], "team")), "b");
}

TEST(AppendOutput, SequencesGetThemFromTheLastStepsEvent) {
  World w;
  auto r = load_with(
      "- sequence: Shell then connect\n  desc: d\n  priority: WARNING\n  by: [proc.pid]\n  within: 60s\n"
      "  steps:\n    - condition: evt.type = execve\n    - condition: evt.type = connect\n"
      "  output: 'shell %step1.proc.name connected'\n",
      compiled(""));
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  SequenceStats stats;
  SequenceState st(*r.ruleset, &stats);
  std::vector<event::Alert> out;
  w.exec();
  r.ruleset->evaluate(w.ctx(), out, &st);
  w.connect("203.0.113.9", 4444);
  w.ev.hdr.ts_ns += 1000;
  r.ruleset->evaluate(w.ctx(), out, &st);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].output, "shell python3 connected" + kContainerText);
  EXPECT_EQ(std::get<std::string>(*field(out[0], "k8s.pod.name")), "train-0");
}

// Errors name the file, line and column and the key, as every other
// configuration error does.
TEST(AppendOutput, ShapeErrorsNameThePlace) {
  EXPECT_EQ(error_of("append_output: {suggested_output: true}"),
            "vigil.yaml:1:16: append_output: expected a list of {match, extra_output, extra_fields, "
            "suggested_output}");
  EXPECT_EQ(error_of("append_output:\n  - suggested_output: maybe\n"),
            "vigil.yaml:2:23: append_output[0].suggested_output: expected true or false");
  EXPECT_EQ(error_of("append_output:\n  - extra_ouptut: x\n"),
            "vigil.yaml:2:5: append_output[0].extra_ouptut: unknown key (known: match, extra_output, extra_fields, "
            "suggested_output)");
  EXPECT_EQ(error_of("append_output:\n  - match: {tag: [a]}\n"),
            "vigil.yaml:2:13: append_output[0].match.tag: unknown key (known: source, tags, rule)");
  EXPECT_EQ(error_of("append_output:\n  - match: {tags: shell}\n"),
            "vigil.yaml:2:19: append_output[0].match.tags: expected a list of tags");
  EXPECT_EQ(error_of("append_output:\n  - extra_fields: proc.name\n"),
            "vigil.yaml:2:19: append_output[0].extra_fields: expected a list of field names and {name: format} "
            "mappings");
  EXPECT_EQ(error_of("append_output:\n  - extra_fields: [{a: x, b: y}]\n"),
            "vigil.yaml:2:20: append_output[0].extra_fields[0]: expected a field name, or one {name: format}");
  EXPECT_EQ(error_of("append_output:\n  - extra_fields: [proc.name, {proc.name: x}]\n"),
            "vigil.yaml:2:31: append_output[0].extra_fields[1]: 'proc.name' is given twice");
}

TEST(AppendOutput, AFieldNoOneHasIsAnErrorAtItsPlace) {
  EXPECT_EQ(error_of("append_output:\n  - extra_output: 'on %container.idd'\n"),
            "vigil.yaml:2:19: append_output[0].extra_output: unknown field 'container.idd' (`vigil fields` lists "
            "them)");
  EXPECT_EQ(error_of("append_output:\n  - match: {source: syscall}\n    extra_fields:\n      - proc.nmae\n"),
            "vigil.yaml:4:9: append_output[0].extra_fields[0]: unknown field 'proc.nmae' (`vigil fields` lists them)");
  EXPECT_EQ(error_of("append_output:\n  - extra_fields: [{team: '%k8s.pod.labl[team]'}]\n"),
            "vigil.yaml:2:27: append_output[0].extra_fields[0]: unknown field 'k8s.pod.labl' (`vigil fields` lists "
            "them)");
  EXPECT_EQ(error_of("append_output:\n  - extra_fields: ['proc.name and more']\n"),
            "vigil.yaml:2:20: append_output[0].extra_fields[0]: 'proc.name and more' is not a field name (give "
            "{name: format} for a text of several fields)");
  EXPECT_EQ(error_of("append_output:\n  - extra_output: 'x %(proc.name'\n"),
            "vigil.yaml:2:19: append_output[0].extra_output: unterminated %( at offset 2");
}

TEST(AppendOutput, AnOverrideIsNamedAsTheOriginOfItsValue) {
  YAML::Node root = YAML::Load("{}");
  root["append_output"][0]["extra_output"] = "%nope.field";
  ConfigOrigin origin("vigil.yaml");
  origin.add_override("append_output.0.extra_output", "append_output.0.extra_output=%nope.field");
  auto cfg = parse_append_output(root["append_output"], origin);
  ASSERT_TRUE(cfg);
  auto c = compile_append_output(*cfg, FieldCatalog::builtin(), builtin_suggested_fields());
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message,
            "-o append_output.0.extra_output=%nope.field: append_output[0].extra_output: unknown field 'nope.field' "
            "(`vigil fields` lists them)");
}

// fd.sip.name comes from the DNS answers: an extra field that reads it makes
// the rule set ask for the dns events, as a rule's own output does.
TEST(AppendOutput, AnExtraFieldOnADnsNameAsksForTheDnsEvents) {
  const std::string connect =
      "- rule: Out\n  desc: d\n  priority: WARNING\n  condition: evt.type = connect\n  output: o\n";
  auto plain = load_with(connect, compiled(""));
  ASSERT_TRUE(plain.ruleset);
  EXPECT_FALSE(plain.ruleset->event_types().count(event::Type::kDns));
  auto named = load_with(connect, compiled("append_output: [{extra_fields: [fd.sip.name]}]"));
  ASSERT_TRUE(named.ruleset);
  EXPECT_TRUE(named.ruleset->event_types().count(event::Type::kDns));
}

// A suggestion of a plugin's fields is for its sources' rules only (Falco:
// the fields of the source's extractors).
TEST(AppendOutput, ASuggestionForOtherSourcesIsNotAppended) {
  auto cfg = parse_append_output(YAML::Node(), ConfigOrigin("vigil.yaml"));
  ASSERT_TRUE(cfg);
  auto ao = compile_append_output(*cfg, FieldCatalog::builtin(),
                                  {{"proc.exepath", {"k8s_audit"}}, {"proc.cwd", {"syscall", "k8s_audit"}}});
  ASSERT_TRUE(ao) << ao.error().message;
  World w;
  w.exec();
  auto a = alerts(load_with(kStockStyle, *ao), w);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].output, "Shell run (pid=100 name=python3) proc_cwd=/workspace");
}

TEST(AppendOutput, BuiltinSuggestionsAreFalcosContainerPluginsInItsOrder) {
  std::vector<std::string> names;
  for (const auto& s : builtin_suggested_fields()) {
    names.push_back(s.name);
    EXPECT_TRUE(s.sources.empty()) << s.name;  // vigil's container fields work on every source's events
    EXPECT_NE(FieldCatalog::builtin().find(s.name), nullptr) << s.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"container.id", "container.name", "container.image.repository",
                                             "container.image.tag", "k8s.pod.name", "k8s.ns.name", "k8s.meta"}));
}

// Every alert says how complete its metadata is, so a SIEM tells a host
// process from a pod vigil has not resolved yet.
TEST(AppendOutput, EveryAlertSaysHowCompleteItsMetadataIs) {
  auto r = load_with(kStockStyle, compiled(""));
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  auto meta = [&](const World& w) {
    auto a = alerts(r, w);
    EXPECT_EQ(a.size(), 1u);
    if (a.empty()) return std::string();
    const auto json = nlohmann::json::parse(outputs::format_json(a[0]));
    const std::string v = json["output_fields"]["k8s.meta"];
    EXPECT_NE(a[0].output.find(" k8s_meta=" + v), std::string::npos) << a[0].output;
    return v;
  };
  World known;
  known.exec();
  EXPECT_EQ(meta(known), "complete");

  World unknown_pod;  // the cgroup names pod uid-1; no pod record yet
  unknown_pod.exec();
  unknown_pod.pod_known = false;
  EXPECT_EQ(meta(unknown_pod), "incomplete");

  World docker;  // a container whose cgroup names no pod
  docker.exec();
  docker.container.pod_uid.clear();
  docker.pod = {};
  EXPECT_EQ(meta(docker), "container");

  World host;
  host.exec();
  host.in_container = false;
  host.proc.container_id.clear();
  EXPECT_EQ(meta(host), "host");
}

}  // namespace
}  // namespace vigil::rules
