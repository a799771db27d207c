// append_output: the configuration read, compiled against a field catalogue,
// and applied to a rule's output when the rule compiles.
#include "engine/rules/append_output.h"

#include <algorithm>
#include <set>

namespace vigil::rules {

namespace {

using Path = std::vector<std::string>;

Path at(Path p, std::string part) {
  p.push_back(std::move(part));
  return p;
}

std::string where_of(const ConfigOrigin& origin, const Path& path, const YAML::Node& node) {
  return origin.where(path, node) + ": " + ConfigOrigin::display(path);
}

// A string value: a scalar (an unquoted number or `true` reads as its text).
Result<std::string> append_string(const ConfigOrigin& origin, const Path& path, const YAML::Node& v) {
  if (!v.IsScalar()) return origin.error(path, v, "expected a string");
  return v.Scalar();
}

Status read_match(const ConfigOrigin& origin, const Path& path, const YAML::Node& v, AppendMatch& m) {
  if (v.IsNull()) return {};
  if (!v.IsMap()) return origin.error(path, v, "expected a mapping of source, tags, rule");
  for (const auto& kv : v) {
    const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    const Path p = at(path, k);
    if (k == "source" || k == "rule") {
      auto s = append_string(origin, p, kv.second);
      if (!s) return s.error();
      (k == "source" ? m.source : m.rule) = *s;
    } else if (k == "tags") {
      const YAML::Node& tags = kv.second;
      if (!tags.IsSequence() ||
          !std::all_of(tags.begin(), tags.end(), [](const YAML::Node& t) { return t.IsScalar(); })) {
        return origin.error(p, tags, "expected a list of tags");
      }
      for (const auto& t : tags) m.tags.push_back(t.Scalar());
    } else {
      return origin.error(p, kv.first, "unknown key (known: source, tags, rule)");
    }
  }
  return {};
}

Status read_extra_fields(const ConfigOrigin& origin, const Path& path, const YAML::Node& v,
                         std::vector<ExtraFieldSpec>& out) {
  if (v.IsNull()) return {};
  if (!v.IsSequence()) return origin.error(path, v, "expected a list of field names and {name: format} mappings");
  std::set<std::string> keys;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const YAML::Node item = v[i];
    const Path p = at(path, std::to_string(i));
    ExtraFieldSpec f;
    if (item.IsScalar() && !item.Scalar().empty()) {
      f.key = item.Scalar();
      f.format = "%" + f.key;
      f.raw = true;
      f.where = where_of(origin, p, item);
    } else if (item.IsMap() && item.size() == 1 && item.begin()->first.IsScalar() &&
               !item.begin()->first.Scalar().empty() && item.begin()->second.IsScalar()) {
      f.key = item.begin()->first.Scalar();
      f.format = item.begin()->second.Scalar();
      f.where = where_of(origin, p, item.begin()->second);
    } else {
      return origin.error(p, item, "expected a field name, or one {name: format}");
    }
    if (!keys.insert(f.key).second) return origin.error(p, item, "'" + f.key + "' is given twice");
    out.push_back(std::move(f));
  }
  return {};
}

Result<AppendOutputEntry> read_entry(const ConfigOrigin& origin, const Path& path, const YAML::Node& v) {
  if (!v.IsMap())
    return origin.error(path, v, "expected a mapping of match, extra_output, extra_fields, suggested_output");
  AppendOutputEntry e;
  for (const auto& kv : v) {
    const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    const Path p = at(path, k);
    if (k == "match") {
      if (Status st = read_match(origin, p, kv.second, e.match); !st) return st.error();
    } else if (k == "extra_output") {
      if (kv.second.IsNull()) continue;
      auto s = append_string(origin, p, kv.second);
      if (!s) return s.error();
      e.extra_output = *s;
      e.extra_output_where = where_of(origin, p, kv.second);
    } else if (k == "extra_fields") {
      if (Status st = read_extra_fields(origin, p, kv.second, e.extra_fields); !st) return st.error();
    } else if (k == "suggested_output") {
      if (!kv.second.IsScalar() || !YAML::convert<bool>::decode(kv.second, e.suggested_output)) {
        return origin.error(p, kv.second, "expected true or false");
      }
    } else {
      return origin.error(p, kv.first, "unknown key (known: match, extra_output, extra_fields, suggested_output)");
    }
  }
  return e;
}

// "container.id" -> "container_id", as Falco names a suggested field in the text.
std::string suggested_label(std::string_view name) {
  std::string s(name);
  std::replace(s.begin(), s.end(), '.', '_');
  return s;
}

// `text` parsed against `catalog`; bad input at `where` when it does not parse
// or names a field nobody has.
Result<OutputFormat> parse_format(std::string_view text, const FieldCatalog& catalog, const std::string& where) {
  std::vector<std::string> unknown;
  std::string err;
  OutputFormat f = OutputFormat::parse(text, catalog, unknown, err);
  if (!err.empty()) return Error::bad_input(where + ": " + err);
  if (!unknown.empty()) {
    return Error::bad_input(where + ": unknown field '" + unknown.front() + "' (`vigil fields` lists them)");
  }
  return f;
}

Result<ExtraField> compile_extra_field(const ExtraFieldSpec& spec, const FieldCatalog& catalog) {
  ExtraField f;
  f.key = spec.key;
  f.raw = spec.raw;
  auto fmt = parse_format(spec.format, catalog, spec.where);
  if (!fmt) return fmt.error();
  if (spec.raw && (fmt->tokens().size() != 1 || !fmt->tokens()[0].is_field)) {
    return Error::bad_input(spec.where + ": '" + spec.key +
                            "' is not a field name (give {name: format} for a text of several fields)");
  }
  f.format = std::move(*fmt);
  return f;
}

}  // namespace

bool AppendMatch::matches(std::string_view rule_name, std::string_view rule_source,
                          const std::vector<std::string>& rule_tags) const {
  if (!source.empty() && source != rule_source) return false;
  if (!rule.empty() && rule != rule_name) return false;
  return std::all_of(tags.begin(), tags.end(), [&](const std::string& t) {
    return std::find(rule_tags.begin(), rule_tags.end(), t) != rule_tags.end();
  });
}

AppendOutputConfig AppendOutputConfig::falco_default() {
  AppendOutputConfig c;
  AppendOutputEntry e;
  e.suggested_output = true;
  c.entries.push_back(std::move(e));
  return c;
}

Result<AppendOutputConfig> parse_append_output(const YAML::Node& value, const ConfigOrigin& origin) {
  if (!value.IsDefined() || value.IsNull()) return AppendOutputConfig::falco_default();
  const Path path = {"append_output"};
  if (!value.IsSequence()) {
    return origin.error(path, value, "expected a list of {match, extra_output, extra_fields, suggested_output}");
  }
  AppendOutputConfig c;
  for (std::size_t i = 0; i < value.size(); ++i) {
    auto e = read_entry(origin, at(path, std::to_string(i)), value[i]);
    if (!e) return e.error();
    c.entries.push_back(std::move(*e));
  }
  return c;
}

std::vector<SuggestedField> builtin_suggested_fields() {
  return {{"container.id", {}},
          {"container.name", {}},
          {"container.image.repository", {}},
          {"container.image.tag", {}},
          {"k8s.pod.name", {}},
          {"k8s.ns.name", {}},
          {"k8s.meta", {}}};
}

Result<std::shared_ptr<const AppendOutput>> compile_append_output(const AppendOutputConfig& cfg,
                                                                  const FieldCatalog& catalog,
                                                                  const std::vector<SuggestedField>& suggested) {
  auto out = std::make_shared<AppendOutput>();
  for (const AppendOutputEntry& spec : cfg.entries) {
    AppendOutput::Entry e;
    e.match = spec.match;
    if (!spec.extra_output.empty()) {
      auto f = parse_format(spec.extra_output, catalog, spec.extra_output_where);
      if (!f) return f.error();
      e.extra_output = std::move(*f);
    }
    if (spec.suggested_output) {
      for (const SuggestedField& s : suggested) {
        const std::string text = suggested_label(s.name) + "=%" + s.name;
        auto f = parse_format(text, catalog, "suggested output field '" + s.name + "'");
        if (!f) return f.error();
        e.suggested.push_back({s.name, s.sources, std::move(*f)});
      }
    }
    for (const ExtraFieldSpec& fs : spec.extra_fields) {
      auto f = compile_extra_field(fs, catalog);
      if (!f) return f.error();
      e.extra_fields.push_back(std::move(*f));
    }
    out->entries_.push_back(std::move(e));
  }
  return std::shared_ptr<const AppendOutput>(std::move(out));
}

void AppendOutput::apply(std::string_view rule, std::string_view source, const std::vector<std::string>& tags,
                         OutputFormat& output, std::vector<ExtraField>& extra) const {
  for (const Entry& e : entries_) {
    if (!e.match.matches(rule, source, tags)) continue;
    if (!e.extra_output.tokens().empty()) output.append(" ", e.extra_output);
    for (const Suggested& s : e.suggested) {
      if (!s.sources.empty() && std::find(s.sources.begin(), s.sources.end(), source) == s.sources.end()) continue;
      if (output.prints(s.name)) continue;
      output.append(" ", s.format);
    }
    for (const ExtraField& f : e.extra_fields) {
      auto it = std::find_if(extra.begin(), extra.end(), [&](const ExtraField& x) { return x.key == f.key; });
      if (it != extra.end()) *it = f;
      else extra.push_back(f);
    }
  }
}

}  // namespace vigil::rules
