// Alert rendering: the uuid of an alert, the output fields of a rule or a
// sequence rendered for an event (text and typed value), and the alerts
// themselves. Runs only when a rule matches (or a sequence step captures).
#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "engine/rules/ruleset_parts.h"

namespace vigil::rules {

std::string alert_uuid(const event::Event& ev, std::string_view rule) {
  auto fnv = [](std::uint64_t h, const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) {
      h ^= p[i];
      h *= 0x100000001b3ull;
    }
    return h;
  };
  auto mix = [](std::uint64_t z) {  // splitmix64 finaliser
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  std::uint64_t h[2] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
  for (auto& x : h) {
    x = fnv(x, &ev.hdr.ts_ns, sizeof ev.hdr.ts_ns);
    x = fnv(x, &ev.hdr.pid, sizeof ev.hdr.pid);
    x = fnv(x, &ev.hdr.tid, sizeof ev.hdr.tid);
    auto t = static_cast<std::uint8_t>(ev.hdr.type);
    x = fnv(x, &t, 1);
    x = fnv(x, rule.data(), rule.size());
  }
  h[0] = mix(h[0]);
  h[1] = mix(h[1] ^ h[0]);
  unsigned char b[16];
  for (int i = 0; i < 8; ++i) {
    b[i] = static_cast<unsigned char>(h[0] >> (56 - 8 * i));
    b[8 + i] = static_cast<unsigned char>(h[1] >> (56 - 8 * i));
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x80);  // version 8 (custom)
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += kHex[b[i] >> 4];
    s += kHex[b[i] & 15];
  }
  return s;
}

namespace {

event::FieldValue typed_value(FieldType t, const Extracted& e, Arena& a) {
  if (e.n == 0) return std::monostate{};
  switch (t) {
    case FieldType::kInt: return e.v[0].i;
    case FieldType::kUint: return static_cast<std::uint64_t>(e.v[0].i);
    case FieldType::kBool: return e.v[0].b;
    case FieldType::kList: {
      std::vector<std::string> v;
      for (std::size_t i = 0; i < e.n; ++i) v.emplace_back(e.v[i].s);
      return v;
    }
    default: return std::string(render_value(t, e, a));
  }
}

}  // namespace

// Renders one output field for the event in `x`: its text and typed value.
void render_token(const ExtractCtx& x, const OutputFormat::Token& tok, std::string& text, event::FieldValue& value) {
  x.arena->reset();
  x.cache->clear();
  Extracted e;
  FieldType ft = tok.type;
  if (tok.field.def) ft = extract_field(x, tok.field, tok.transformers, e);
  text += render_value(ft, e, *x.arena);
  value = typed_value(ft, e, *x.arena);
}

// Renders one output field of a step into `f`, reusing its buffer: a string
// field's value is its text (no second copy, no allocation once the buffer
// has grown).
void capture_token(const ExtractCtx& x, const OutputFormat::Token& tok, StepField& f) {
  x.arena->reset();
  x.cache->clear();
  Extracted e;
  FieldType ft = tok.type;
  if (tok.field.def) ft = extract_field(x, tok.field, tok.transformers, e);
  f.text.clear();
  f.text += render_value(ft, e, *x.arena);
  bound_step_field(f.text);
  f.value_is_text = e.n > 0 && (ft == FieldType::kString || ft == FieldType::kIp);
  if (f.value_is_text) {
    f.value = std::monostate{};
  } else {
    f.value = typed_value(ft, e, *x.arena);
    if (auto* list = std::get_if<std::vector<std::string>>(&f.value)) {
      for (auto& item : *list) bound_step_field(item);
    }
  }
}

bool is_metadata_token(const OutputFormat::Token& tok) {
  if (!tok.is_field || tok.step >= 0 || tok.field.def == nullptr) return false;
  const std::string_view name = tok.field.def->name;
  if (!name.starts_with("container.") && !name.starts_with("k8s.")) return false;
  // vigil's own extractor (a plugin may add fields under these prefixes; they
  // read the event, which is gone when an alert is rendered again).
  const FieldDef* own = FieldCatalog::builtin().find(name);
  return own != nullptr && own->fn == tok.field.def->fn;
}

namespace {

// Renders token `k` of `toks` into a.output, noting where when it is a
// container.* or k8s.* field.
void render_output_token(const ExtractCtx& x, const std::vector<OutputFormat::Token>& toks, std::size_t k,
                         event::FieldValue& value, event::Alert& a) {
  const std::size_t begin = a.output.size();
  render_token(x, toks[k], a.output, value);
  if (is_metadata_token(toks[k])) {
    a.metadata_spans.push_back({static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(begin),
                                static_cast<std::uint32_t>(a.output.size() - begin)});
  }
}

// One extra field rendered for the event in `x`: a bare field's typed value,
// a format's text.
event::FieldValue extra_value(const ExtraField& f, const ExtractCtx& x) {
  event::FieldValue value;
  std::string text;
  if (f.raw) {
    render_token(x, f.format.tokens().front(), text, value);
  } else {
    for (const auto& tok : f.format.tokens()) {
      event::FieldValue unused;
      if (tok.is_field) render_token(x, tok, text, unused);
      else text += tok.literal;
    }
    value = std::move(text);
  }
  return value;
}

void set_output_field(event::Alert& a, const std::string& key, event::FieldValue value) {
  auto it =
      std::find_if(a.output_fields.begin(), a.output_fields.end(), [&](const auto& kv) { return kv.first == key; });
  if (it != a.output_fields.end()) it->second = std::move(value);
  else a.output_fields.emplace_back(key, std::move(value));
}

// Adds append_output's extra fields to `a`'s output_fields, rendered for the
// event in `x`: a bare field's typed value, a format's text. A key the
// output already has gets the extra field's value (as in Falco).
void add_extra_fields(const std::vector<ExtraField>& extra, const ExtractCtx& x, event::Alert& a) {
  for (const ExtraField& f : extra) set_output_field(a, f.key, extra_value(f, x));
}

// An extra field made only of text and container.* / k8s.* fields.
bool metadata_only(const ExtraField& f) {
  bool any = false;
  for (const auto& tok : f.format.tokens()) {
    if (!tok.is_field) continue;
    if (!is_metadata_token(tok)) return false;
    any = true;
  }
  return any;
}

}  // namespace

event::Alert rule_alert(const Ruleset::Rule& r, const ExtractCtx& x, const std::string& hostname) {
  event::Alert a;
  a.time_ns = x.ctx->ev->hdr.ts_ns;
  a.rule = r.name;
  a.priority = r.priority;
  a.hostname = hostname;
  a.source = r.source;
  a.tags = r.tags;
  a.uuid = alert_uuid(*x.ctx->ev, r.name);
  const auto& toks = r.output.tokens();
  std::vector<event::FieldValue> values(toks.size());
  for (std::size_t k = 0; k < toks.size(); ++k) {
    const auto& tok = toks[k];
    if (!tok.is_field) {
      a.output += tok.literal;
      continue;
    }
    render_output_token(x, toks, k, values[k], a);
  }
  for (auto k : r.output_fields) a.output_fields.emplace_back(toks[k].name, std::move(values[k]));
  add_extra_fields(r.extra_fields, x, a);
  return a;
}

event::Alert sequence_alert(const Ruleset::Sequence& s, const Partial& m, const ExtractCtx& x,
                            const std::string& hostname) {
  const event::Event& ev = *x.ctx->ev;
  event::Alert a;
  a.time_ns = ev.hdr.ts_ns;
  a.rule = s.name;
  a.priority = s.priority;
  a.hostname = hostname;
  a.tags = s.tags;
  a.uuid = alert_uuid(ev, s.name);
  const auto& toks = s.output.tokens();
  std::vector<event::FieldValue> values(toks.size());
  for (std::size_t k = 0; k < toks.size(); ++k) {
    const auto& tok = toks[k];
    if (!tok.is_field) {
      a.output += tok.literal;
    } else if (s.slot[k] >= 0) {
      const StepField& f = m.fields[static_cast<std::size_t>(s.slot[k])];
      a.output += f.text;
      if (f.value_is_text) values[k] = f.text;
      else values[k] = f.value;
    } else {
      render_output_token(x, toks, k, values[k], a);
    }
  }
  for (auto k : s.output_fields) a.output_fields.emplace_back(toks[k].name, std::move(values[k]));
  add_extra_fields(s.extra_fields, x, a);
  return a;
}

void rerender_metadata(const OutputFormat& output, const std::vector<ExtraField>& extra, const ExtractCtx& x,
                       event::Alert& a) {
  const auto& toks = output.tokens();
  std::int64_t shift = 0;
  for (event::MetadataSpan& span : a.metadata_spans) {
    if (span.token >= toks.size()) continue;
    const OutputFormat::Token& tok = toks[span.token];
    const std::size_t begin = static_cast<std::size_t>(static_cast<std::int64_t>(span.begin) + shift);
    if (begin + span.size > a.output.size()) break;  // not this rule's alert: leave the rest
    std::string text;
    event::FieldValue value;
    render_token(x, tok, text, value);
    a.output.replace(begin, span.size, text);
    shift += static_cast<std::int64_t>(text.size()) - static_cast<std::int64_t>(span.size);
    span.begin = static_cast<std::uint32_t>(begin);
    span.size = static_cast<std::uint32_t>(text.size());
    for (auto& kv : a.output_fields) {
      if (kv.first == tok.name) {
        kv.second = std::move(value);
        break;
      }
    }
  }
  for (const ExtraField& f : extra) {
    if (metadata_only(f)) set_output_field(a, f.key, extra_value(f, x));
  }
}

}  // namespace vigil::rules
