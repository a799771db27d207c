#include "engine/rules/ruleset.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "engine/rules/ast.h"
#include "engine/rules/compiler.h"
#include "engine/rules/document.h"
#include "engine/rules/fields.h"
#include "engine/rules/rule_files.h"
#include "engine/rules/sequence.h"

namespace vigil::rules {

struct Ruleset::Rule {
  std::string name;
  std::string desc;
  event::Priority priority = event::Priority::kWarning;
  std::vector<std::string> tags;
  std::string source;
  bool enabled = true;
  std::unique_ptr<Expr> expr;
  OutputFormat output;
  std::vector<std::size_t> output_fields;  // token indexes, first occurrence of each name
  event::TypeMask mask;
  std::string file;
  int line = 0;
  std::int32_t sequence = -1;  // >= 0: this is step `step` of sequences_[sequence]
  std::uint32_t step = 0;
};

struct Ruleset::Sequence {
  std::string name;
  std::string desc;
  event::Priority priority = event::Priority::kWarning;
  std::vector<std::string> tags;
  bool enabled = true;
  std::vector<std::string> by;
  // The correlation fields, resolved: the sequence's (keys[0]) and those of
  // steps with their own `by`; step_key[i] is step i's index into keys.
  std::vector<std::vector<OutputFormat::Token>> keys;
  std::vector<std::uint8_t> step_key;
  std::uint64_t within_ns = 0;
  std::uint32_t steps = 0;
  std::vector<std::uint32_t> step_rules;  // rules_ index of each step
  OutputFormat output;
  std::vector<std::size_t> output_fields;  // token indexes, first occurrence of each name
  // Per output token: its slot in Partial::fields when an earlier step (not
  // the last) gives it, else -1 (literal, or rendered from the last event).
  std::vector<std::int32_t> slot;
  std::size_t slots = 0;
  std::string file;
  int line = 0;
};

Ruleset::Ruleset() = default;
Ruleset::~Ruleset() = default;

// ---------------------------------------------------------------- uuid

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

// ---------------------------------------------------------------- evaluate

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

}  // namespace

void Ruleset::evaluate(const state::EvalContext& ctx, std::vector<event::Alert>& out,
                       SequenceState* sequences) const noexcept {
  if (!ctx.ev) return;
  // The event's payload, the variant's index (after the payload's storage,
  // on a cache line of its own: every as<T>() reads it) and the process's
  // first lines (comm, exe, exepath) are asked for at once, before the
  // header's type is read: each is a cache miss for an event that is not
  // fresh, and waited for one after another they were the largest share
  // of the time (perf: the first read of the index, behind the header's).
  {
    const char* d = reinterpret_cast<const char*>(&ctx.ev->data);
    __builtin_prefetch(d + sizeof(event::Payload) - alignof(event::Payload));  // the index: after the storage
    __builtin_prefetch(d);
    __builtin_prefetch(d + 64);
    if (const char* p = reinterpret_cast<const char*>(ctx.proc)) {
      __builtin_prefetch(p);
      __builtin_prefetch(p + 64);
    }
  }
  auto t = static_cast<std::size_t>(ctx.ev->hdr.type);
  if (t >= static_cast<std::size_t>(event::Type::kCount)) return;
  // An exec's rules read the whole payload (320 bytes: file, argv, cwd,
  // identity) and most of the process (argv, cwd, the program's identity
  // facts and flags, capabilities): the rest of both, at once as well.
  if (ctx.ev->hdr.type == event::Type::kExec) {
    const char* d = reinterpret_cast<const char*>(&ctx.ev->data);
    for (std::size_t k = 2; k * 64 < sizeof(event::ExecData); ++k) __builtin_prefetch(d + 64 * k);
    if (const char* p = reinterpret_cast<const char*>(ctx.proc)) {
      for (std::size_t k = 2; k * 64 < sizeof(state::Process); ++k) __builtin_prefetch(p + 64 * k);
    }
  }
  const auto& idx = index_[t];
  if (idx.empty()) return;
  Arena arena;
  FieldCache cache;
  cache.clear();
  CheckCache checks;
  checks.clear(check_words_[t]);
  ExtractCtx x{&ctx, &arena, &cache, &checks};
  const FNode* programs = programs_[t].data();
  const event::PluginData* pd = ctx.ev->as<event::PluginData>();
  const std::string* plugin_source = pd ? &pd->source : nullptr;
  // Rules whose guard fails for this event are skipped (GuardIndex).
  std::uint64_t may_match[GuardIndex::kMaxRules / 64];
  const GuardIndex* guards = guards_[t].get();
  if (guards) guards->candidates(x, may_match);
  // The steps of one sequence are adjacent in idx: their matches gather in
  // step_mask, and advance() runs once the sequence's last entry is past.
  if (sequences && sequences->ruleset() != this) sequences = nullptr;
  std::int32_t step_seq = -1;
  std::uint32_t step_mask = 0;
  std::vector<event::Alert> seq_alerts;  // after the rules' alerts; allocates only when one completes
  auto flush_steps = [&] {
    if (step_mask != 0) advance(static_cast<std::uint32_t>(step_seq), step_mask, x, *sequences, seq_alerts);
    step_mask = 0;
  };
  // The rules to run, in order: with a guard index, the set bits of
  // may_match (found a word at a time), else every rule.
  const std::size_t count = idx.size();
  std::size_t word = 0;
  std::uint64_t bits = 0;
  if (guards) bits = may_match[0];
  for (std::size_t k = 0;; ++k) {
    if (guards) {
      while (bits == 0) {
        if (++word * 64 >= count) break;
        bits = may_match[word];
      }
      if (bits == 0) break;
      k = word * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
      bits &= bits - 1;
    }
    if (k >= count) break;
    const auto& entry = idx[k];
    // Cached strings may live in the arena: drop both together when it fills up.
    if (arena.used() > Arena::kSize / 2) {
      arena.reset();
      cache.clear();
    }
    // A plugin event reaches only the rules of its own source.
    if (plugin_source && rules_[entry.rule]->source != *plugin_source) continue;
    if (entry.sequence >= 0) {
      // A later step can only advance a partial match: with none held, its
      // condition is not evaluated at all.
      if (!sequences || (entry.step > 0 && sequences->table(static_cast<std::size_t>(entry.sequence)).size() == 0))
        continue;
      if (entry.sequence != step_seq) {
        flush_steps();
        step_seq = entry.sequence;
      }
      if (eval_program(programs + entry.at, x)) step_mask |= 1u << entry.step;
      continue;
    }
    if (!eval_program(programs + entry.at, x)) continue;
    const Rule& r = *rules_[entry.rule];
    try {
      event::Alert a;
      a.time_ns = ctx.ev->hdr.ts_ns;
      a.rule = r.name;
      a.priority = r.priority;
      a.hostname = hostname_;
      a.source = r.source;
      a.tags = r.tags;
      a.uuid = alert_uuid(*ctx.ev, r.name);
      const auto& toks = r.output.tokens();
      std::vector<event::FieldValue> values(toks.size());
      for (std::size_t k = 0; k < toks.size(); ++k) {
        const auto& tok = toks[k];
        if (!tok.is_field) {
          a.output += tok.literal;
          continue;
        }
        render_token(x, tok, a.output, values[k]);
      }
      for (auto k : r.output_fields) a.output_fields.emplace_back(toks[k].name, std::move(values[k]));
      out.push_back(std::move(a));
    } catch (...) {
      // Out of memory while building an alert: drop it rather than stop the pipeline.
    }
  }
  if (step_seq >= 0) flush_steps();
  for (auto& a : seq_alerts) {
    try {
      out.push_back(std::move(a));
    } catch (...) {
    }
  }
}

void Ruleset::advance(std::uint32_t seq, std::uint32_t mask, const ExtractCtx& x, SequenceState& st,
                      std::vector<event::Alert>& out) const noexcept {
  const Sequence& s = *sequences_[seq];
  const event::Event& ev = *x.ctx->ev;
  const std::uint64_t now = ev.hdr.ts_ns;
  try {
    // The correlation key of step i's event: its `by` fields' values (each
    // key spec extracted once per event); false when a field has no value:
    // such an event cannot be correlated.
    static_assert(SequenceState::kKeyBuffers >= kMaxSequenceSteps + 1);
    std::string* keys = st.key_buffers();
    std::uint32_t have = 0, missing = 0;
    auto key_of = [&](std::uint32_t step, const std::string*& key) {
      const std::uint8_t k = s.step_key[step];
      if (!((have | missing) >> k & 1u)) {
        std::string& out = keys[k];
        out.clear();
        for (const auto& tok : s.keys[k]) {
          x.arena->reset();
          x.cache->clear();
          Extracted e;
          FieldType ft = extract_field(x, tok.field, tok.transformers, e);
          if (e.n == 0) {
            missing |= 1u << k;
            return false;
          }
          std::string_view v = render_value(ft, e, *x.arena);
          out += std::to_string(v.size());
          out += ':';
          out += v;
        }
        bound_key(out);
        have |= 1u << k;
      }
      key = &keys[k];
      return (have >> k & 1u) != 0;
    };
    PartialMatches& table = st.table(seq);
    table.expire(now);
    const auto& toks = s.output.tokens();
    auto capture = [&](Partial& m, std::uint32_t step) {
      for (std::size_t k = 0; k < toks.size(); ++k) {
        if (toks[k].is_field && toks[k].step == static_cast<int>(step) && s.slot[k] >= 0) {
          capture_token(x, toks[k], m.fields[static_cast<std::size_t>(s.slot[k])]);
        }
      }
    };
    // A later step the event matches advances the match waiting for it.
    for (std::uint32_t i = 1; i < s.steps; ++i) {
      const std::string* key = nullptr;
      if (!((mask >> i) & 1u) || !key_of(i, key)) continue;
      Partial* p = table.find(*key, now);
      if (!p || p->next != i) continue;
      if (i + 1 < s.steps) {
        capture(*p, i);
        ++p->next;
        return;
      }
      // The last step: one alert with every step's fields.
      event::Alert a;
      a.time_ns = now;
      a.rule = s.name;
      a.priority = s.priority;
      a.hostname = hostname_;
      a.tags = s.tags;
      a.uuid = alert_uuid(ev, s.name);
      std::vector<event::FieldValue> values(toks.size());
      for (std::size_t k = 0; k < toks.size(); ++k) {
        const auto& tok = toks[k];
        if (!tok.is_field) {
          a.output += tok.literal;
        } else if (s.slot[k] >= 0) {
          const StepField& f = p->fields[static_cast<std::size_t>(s.slot[k])];
          a.output += f.text;
          if (f.value_is_text) values[k] = f.text;
          else values[k] = f.value;
        } else {
          render_token(x, tok, a.output, values[k]);
        }
      }
      for (auto k : s.output_fields) a.output_fields.emplace_back(toks[k].name, std::move(values[k]));
      table.erase(*key);
      out.push_back(std::move(a));
      return;
    }
    // A first step starts a match, or starts again one that has only its
    // first step (the window then counts from the later one).
    const std::string* key = nullptr;
    if ((mask & 1u) && key_of(0, key)) {
      Partial* p = table.find(*key, now);
      if (p && p->next != 1) return;
      Partial& m = table.start(*key, now);
      m.fields.resize(s.slots);
      capture(m, 0);
    }
  } catch (...) {
    // Out of memory: the event does not advance the sequence.
  }
}

std::set<event::Type> Ruleset::event_types() const {
  std::set<event::Type> s;
  for (std::size_t t = 0; t < static_cast<std::size_t>(event::Type::kCount); ++t) {
    if (type_bits_.test(static_cast<event::Type>(t))) s.insert(static_cast<event::Type>(t));
  }
  // The names DNS answers gave addresses are known only from dns events.
  if (needs_dns_) s.insert(event::Type::kDns);
  return s;
}


namespace {
std::vector<std::string> mask_names(const event::TypeMask& mask) {
  std::vector<std::string> v;
  mask.for_each([&](event::Type t) { v.emplace_back(event::type_name(t)); });
  return v;
}
}  // namespace

std::string Ruleset::plan(std::string_view rule, event::Type t) const {
  for (const auto& r : rules_) {
    if (r->sequence < 0 && r->name == rule) return r->expr ? r->expr->plan(t) : std::string("false\n");
  }
  return {};
}

std::size_t Ruleset::enabled_count() const {
  std::size_t n = 0;
  for (const auto& r : rules_) n += r->enabled && r->sequence < 0 ? 1 : 0;
  return n;
}

std::vector<SequenceInfo> Ruleset::sequences() const {
  std::vector<SequenceInfo> v;
  for (const auto& s : sequences_) {
    SequenceInfo i;
    i.name = s->name;
    i.desc = s->desc;
    i.priority = s->priority;
    i.tags = s->tags;
    i.enabled = s->enabled;
    i.by = s->by;
    i.within_ns = s->within_ns;
    for (auto r : s->step_rules) i.step_event_types.push_back(mask_names(rules_[r]->mask));
    i.file = s->file;
    i.line = s->line;
    v.push_back(std::move(i));
  }
  return v;
}

std::vector<std::string> Ruleset::guard_fields(event::Type t) const {
  auto i = static_cast<std::size_t>(t);
  if (i >= static_cast<std::size_t>(event::Type::kCount) || !guards_[i]) return {};
  return guards_[i]->fields();
}

std::vector<RuleInfo> Ruleset::rules() const {
  std::vector<RuleInfo> v;
  for (const auto& r : rules_) {
    if (r->sequence >= 0) continue;
    RuleInfo i;
    i.name = r->name;
    i.desc = r->desc;
    i.priority = r->priority;
    i.tags = r->tags;
    i.source = r->source;
    i.enabled = r->enabled;
    i.event_types = mask_names(r->mask);
    i.file = r->file;
    i.line = r->line;
    v.push_back(std::move(i));
  }
  return v;
}

// ---------------------------------------------------------------- builder

namespace {

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// A list item as written: quotes around it are removed ('"sh -c x"' -> sh -c x).
std::string list_item(std::string s) {
  if (s.size() >= 2 && ((s.front() == '"' && s.back() == '"') || (s.front() == '\'' && s.back() == '\''))) {
    return s.substr(1, s.size() - 2);
  }
  return s;
}

std::string snippet(std::string_view cond, std::size_t off) {
  if (off == SIZE_MAX || off > cond.size()) return "";
  std::size_t from = off > 30 ? off - 30 : 0;
  std::string s(cond.substr(from, 60));
  for (char& c : s) if (c == '\n' || c == '\t') c = ' ';
  return " (at offset " + std::to_string(off) + ": '" + s + "')";
}

bool op_from_text(std::string_view s, Op& op) {
  static constexpr std::pair<std::string_view, Op> kOps[] = {
      {"=", Op::kEq}, {"==", Op::kEq}, {"!=", Op::kNe}, {"<", Op::kLt}, {"<=", Op::kLe},
      {">", Op::kGt}, {">=", Op::kGe}, {"contains", Op::kContains}, {"icontains", Op::kIContains},
      {"bcontains", Op::kBContains}, {"startswith", Op::kStartsWith},
      {"bstartswith", Op::kBStartsWith}, {"endswith", Op::kEndsWith}, {"glob", Op::kGlob},
      {"iglob", Op::kIGlob}, {"regex", Op::kRegex}, {"in", Op::kIn},
      {"intersects", Op::kIntersects}, {"pmatch", Op::kPMatch}};
  for (const auto& [n, o] : kOps) {
    if (n == s) { op = o; return true; }
  }
  return false;
}

Value exception_rhs(const ExceptionValue& ev, Op op) {
  Value v;
  if (ev.is_list) {
    v.kind = Value::Kind::kList;
    for (const auto& s : ev.items) {
      Value i;
      i.text = list_item(s);
      i.bare = true;
      v.items.push_back(std::move(i));
    }
    return v;
  }
  // A transformer or val() on the right: a field-to-field comparison.
  std::string_view t = ev.text;
  auto paren = t.find('(');
  if (paren != std::string_view::npos && !t.empty() && t.back() == ')') {
    auto head = t.substr(0, paren);
    FieldExpr f;
    std::string err;
    if (head == "val" && parse_field_expr(t.substr(paren + 1, t.size() - paren - 2), f, err)) {
      v.kind = Value::Kind::kField;
      v.field = f;
      return v;
    }
    if ((head == "tolower" || head == "toupper" || head == "b64" || head == "basename" || head == "len") &&
        parse_field_expr(t, f, err)) {
      v.kind = Value::Kind::kField;
      v.field = f;
      return v;
    }
  }
  if (op_takes_list(op)) {
    v.kind = Value::Kind::kList;
    Value i;
    i.text = ev.text;
    i.bare = true;
    v.items.push_back(std::move(i));
    return v;
  }
  v.text = ev.text;
  return v;
}

NodePtr make_node(Node::Kind k) {
  auto n = std::make_unique<Node>();
  n->kind = k;
  return n;
}

// Builds `not (tuple1 or tuple2 ...)` for the rule's exceptions; null when none apply.
NodePtr exceptions_node(const RuleDef& r, Diagnostics& d, bool& ok) {
  const std::string lbl = "rule '" + r.name + "'";
  auto any = make_node(Node::Kind::kOr);
  for (const auto& e : r.exceptions) {
    if (e.fields.empty()) {
      d.error(code::kException, e.pos, lbl, "exception '" + e.name + "' has no fields");
      ok = false;
      continue;
    }
    std::vector<FieldExpr> fields;
    for (const auto& f : e.fields) {
      FieldExpr fe;
      std::string err;
      if (!parse_field_expr(f, fe, err)) {
        d.error(code::kException, e.pos, lbl, "exception '" + e.name + "': bad field '" + f + "': " + err);
        ok = false;
        return nullptr;
      }
      fields.push_back(fe);
    }
    std::vector<Op> ops;
    if (e.fields_is_list) {
      if (e.has_comps && e.comps.size() != e.fields.size()) {
        d.error(code::kException, e.pos, lbl, "exception '" + e.name + "': fields and comps differ in length");
        ok = false;
        continue;
      }
      for (std::size_t i = 0; i < e.fields.size(); ++i) {
        Op op = Op::kEq;
        if (e.has_comps && !op_from_text(e.comps[i], op)) {
          d.error(code::kException, e.pos, lbl, "exception '" + e.name + "': unknown comparison '" + e.comps[i] + "'");
          ok = false;
          return nullptr;
        }
        ops.push_back(op);
      }
    } else {
      Op op = Op::kIn;
      if (e.has_comps && (e.comps.size() != 1 || !op_from_text(e.comps[0], op) || !op_takes_list(op))) {
        d.error(code::kException, e.pos, lbl,
                "exception '" + e.name + "': with a single field, comps must be in, pmatch or intersects");
        ok = false;
        continue;
      }
      ops.push_back(op);
    }
    if (!e.fields_is_list) {
      if (e.values.empty()) continue;
      auto chk = make_node(Node::Kind::kCheck);
      chk->field = fields[0];
      chk->op = ops[0];
      chk->value.kind = Value::Kind::kList;
      for (const auto& tuple : e.values) {
        for (const auto& v : tuple) {
          Value rhs = exception_rhs(v, ops[0]);
          for (auto& i : rhs.items) chk->value.items.push_back(std::move(i));
        }
      }
      any->children.push_back(std::move(chk));
      continue;
    }
    for (const auto& tuple : e.values) {
      if (tuple.size() != fields.size()) {
        d.error(code::kException, e.pos, lbl,
                "exception '" + e.name + "': a value tuple has " + std::to_string(tuple.size()) +
                    " elements, fields has " + std::to_string(fields.size()));
        ok = false;
        continue;
      }
      auto all = make_node(Node::Kind::kAnd);
      for (std::size_t i = 0; i < fields.size(); ++i) {
        auto chk = make_node(Node::Kind::kCheck);
        chk->field = fields[i];
        chk->op = ops[i];
        chk->value = exception_rhs(tuple[i], ops[i]);
        if (!op_takes_list(ops[i]) && chk->value.kind == Value::Kind::kList) {
          d.error(code::kException, e.pos, lbl, "exception '" + e.name + "': a list value needs in, pmatch or intersects");
          ok = false;
          return nullptr;
        }
        all->children.push_back(std::move(chk));
      }
      if (all->children.size() == 1) any->children.push_back(std::move(all->children[0]));
      else any->children.push_back(std::move(all));
    }
  }
  if (any->children.empty()) return nullptr;
  auto n = make_node(Node::Kind::kNot);
  if (any->children.size() == 1) n->children.push_back(std::move(any->children[0]));
  else n->children.push_back(std::move(any));
  return n;
}

}  // namespace

class RulesetBuilder {
 public:
  static LoadResult build(const Collector& col, Diagnostics& d, const LoadOptions& opts) {
    LoadResult res;
    auto rs = std::make_unique<Ruleset>();
    rs->hostname_ = opts.hostname;
    const FieldCatalog& cat = opts.fields ? *opts.fields : FieldCatalog::builtin();

    ListMap lists;
    for (const auto& l : col.lists()) {
      std::vector<std::string> items;
      items.reserve(l.items.size());
      for (const auto& i : l.items) items.push_back(list_item(i));
      lists[l.name] = std::move(items);
    }
    FieldSlots slots;
    MacroMap macros;
    for (const auto& m : col.macros()) {
      auto pr = parse_condition(m.condition);
      MacroDef def;
      if (!pr.ok()) {
        d.error(code::kConditionSyntax, m.condition_pos, "macro '" + m.name + "'",
                pr.error.message + snippet(m.condition, pr.error.offset));
      } else {
        def.ast = std::move(pr.root);
      }
      macros[m.name] = std::move(def);
    }
    // Unused macros and lists (syntactic references from rules, macros and lists).
    std::set<std::string> used_macros, used_lists;
    std::vector<NodePtr> rule_asts;

    // The time budget and the cancel flag, checked between rules and between
    // event types (a rule's own compile is bounded by max_condition_nodes).
    const auto deadline = std::chrono::steady_clock::now() + opts.compile_budget;
    auto stop_reason = [&]() -> std::string {
      if (opts.cancel && opts.cancel->load(std::memory_order_relaxed)) return "the compile was cancelled";
      if (opts.compile_budget.count() > 0 && std::chrono::steady_clock::now() > deadline) {
        return "the compile took longer than its budget of " + std::to_string(opts.compile_budget.count()) +
               " ms";
      }
      return "";
    };
    bool stopped = false;

    for (const auto& r : col.rules()) {
      const std::string lbl = "rule '" + r.name + "'";
      if (std::string why = stop_reason(); !why.empty()) {
        d.error(code::kCompileBudget, r.pos, lbl, why + "; stopped here, this rule and those after it are not compiled");
        stopped = true;
        break;
      }
      auto pr = parse_condition(r.condition);
      if (!pr.ok()) {
        d.error(code::kConditionSyntax, r.condition_pos, lbl, pr.error.message + snippet(r.condition, pr.error.offset));
        continue;
      }
      collect_macro_refs(*pr.root, used_macros);
      collect_list_refs(*pr.root, lists, used_lists);
      if (r.source != "syscall" && !opts.plugin_sources.count(r.source)) {
        d.warning(code::kUnknownSource, r.pos, lbl,
                  "source '" + r.source + "' is not one vigil has (no loaded plugin gives it); rule skipped");
        ++res.skipped;
        res.skipped_rules.emplace_back(r.name, "unknown_source");
        continue;
      }
      bool ok = true;
      NodePtr root = std::move(pr.root);
      NodePtr exc = exceptions_node(r, d, ok);
      if (!ok) continue;
      if (exc) {
        collect_list_refs(*exc, lists, used_lists);
        auto both = make_node(Node::Kind::kAnd);
        both->children.push_back(std::move(root));
        both->children.push_back(std::move(exc));
        root = std::move(both);
      }
      CompileResult cr = compile_condition(std::move(root), macros, lists, cat, &slots, opts.optimise,
                                           opts.max_condition_nodes);
      for (std::size_t i = 0; i < cr.errors.size(); ++i) {
        d.error(cr.error_codes[i], r.condition_pos, lbl, cr.errors[i].message);
      }
      if (!cr.errors.empty()) continue;
      if (!cr.unknown_fields.empty()) {
        std::string names;
        for (const auto& f : cr.unknown_fields) names += (names.empty() ? "" : ", ") + f;
        d.warning(code::kUnknownField, r.condition_pos, lbl,
                  "unknown field " + names + (r.skip_if_unknown_filter ? " (skip-if-unknown-filter)" : "") +
                      ": vigil does not collect it; rule skipped");
        ++res.skipped;
        res.skipped_rules.emplace_back(r.name, "unknown_field");
        continue;
      }
      for (const auto& t : cr.unknown_evttypes) {
        d.warning(code::kUnknownEvtType, r.condition_pos, lbl, "unknown event type '" + t + "' never matches");
      }
      event::TypeMask mask = cr.expr->type_mask();
      const bool every_type = mask == event::TypeMask::all();
      // The kernel's rules never see a plugin's events, and a plugin source's
      // rules see only its events.
      if (r.source == "syscall") mask.reset(event::Type::kPlugin);
      else mask &= event::TypeMask(event::Type::kPlugin);
      if (mask.none()) {
        d.warning(code::kNeverMatches, r.condition_pos, lbl,
                  "the condition only matches event types vigil does not collect: the rule loads but never fires");
      }
      if (every_type && r.warn_evttypes && r.source == "syscall") {  // a plugin source has one event type
        d.warning(code::kNoEvttype, r.condition_pos, lbl,
                  "the condition does not restrict evt.type: it runs for every event");
      }
      std::vector<std::string> unknown_out;
      std::string oerr;
      OutputFormat of = OutputFormat::parse(trim(r.output), cat, unknown_out, oerr);
      if (!oerr.empty()) {
        d.error(code::kOutputSyntax, r.output_pos, lbl, oerr);
        continue;
      }
      for (const auto& f : unknown_out) {
        d.warning(code::kOutputField, r.output_pos, lbl, "unknown field '" + f + "' in output prints <NA>");
      }
      auto rule = std::make_unique<Ruleset::Rule>();
      rule->name = r.name;
      rule->desc = trim(r.desc);
      rule->priority = r.priority;
      rule->tags = r.tags;
      rule->source = r.source;
      rule->enabled = r.enabled;
      if (opts.disabled_rules.count(r.name)) rule->enabled = false;
      for (const auto& t : r.tags) {
        if (opts.disabled_tags.count(t)) rule->enabled = false;
      }
      if (static_cast<int>(r.priority) > static_cast<int>(opts.min_priority)) rule->enabled = false;
      if (opts.enabled_rules.count(r.name)) rule->enabled = true;
      rule->expr = std::move(cr.expr);
      rule->output = std::move(of);
      std::set<std::string> seen;
      const auto& toks = rule->output.tokens();
      for (std::size_t k = 0; k < toks.size(); ++k) {
        if (toks[k].is_field && seen.insert(toks[k].name).second) rule->output_fields.push_back(k);
      }
      rule->mask = mask;
      rule->file = r.pos.file;
      rule->line = r.pos.line;
      rs->rules_.push_back(std::move(rule));
      ++res.loaded;
    }
    // Sequences: each step compiles like a rule's condition and becomes a
    // step rule, indexed with the rules (after them).
    std::set<std::string> rule_names;
    for (const auto& r : col.rules()) rule_names.insert(r.name);
    std::vector<std::unique_ptr<Ruleset::Rule>> step_rules;
    for (const auto& sd : col.sequences()) {
      if (stopped) break;
      const std::string lbl = "sequence '" + sd.name + "'";
      if (std::string why = stop_reason(); !why.empty()) {
        d.error(code::kCompileBudget, sd.pos, lbl, why + "; stopped here, this sequence and those after it are not compiled");
        stopped = true;
        break;
      }
      if (rule_names.count(sd.name)) {
        d.error(code::kSequence, sd.pos, lbl, "a rule has this name already: alerts would not say which fired");
        continue;
      }
      auto seq = std::make_unique<Ruleset::Sequence>();
      bool ok = true;
      auto resolve_key = [&](const std::vector<std::string>& fields, const Pos& pos) {
        std::vector<OutputFormat::Token> key;
        for (const auto& f : fields) {
          FieldExpr fe;
          std::string err;
          bool unknown = false;
          OutputFormat::Token tok;
          if (!parse_field_expr(f, fe, err) || !cat.resolve(fe.name, fe.has_arg, fe.arg, tok.field, err, unknown)) {
            d.error(code::kSequence, pos, lbl, "'by' field '" + f + "': " + err);
            ok = false;
            continue;
          }
          tok.is_field = true;
          tok.name = f;
          tok.transformers = fe.transformers;
          key.push_back(std::move(tok));
        }
        return key;
      };
      seq->keys.push_back(resolve_key(sd.by, sd.by_pos));
      for (const auto& st : sd.steps) {
        if (st.by.empty()) {
          seq->step_key.push_back(0);
        } else {
          seq->step_key.push_back(static_cast<std::uint8_t>(seq->keys.size()));
          seq->keys.push_back(resolve_key(st.by, st.by_pos));
        }
      }
      const auto seq_index = static_cast<std::int32_t>(rs->sequences_.size());
      std::vector<std::unique_ptr<Ruleset::Rule>> steps;
      for (std::size_t i = 0; i < sd.steps.size(); ++i) {
        const StepDoc& st = sd.steps[i];
        const std::string slbl = lbl + " step " + std::to_string(i + 1);
        auto pr = parse_condition(st.condition);
        if (!pr.ok()) {
          d.error(code::kConditionSyntax, st.pos, slbl, pr.error.message + snippet(st.condition, pr.error.offset));
          ok = false;
          continue;
        }
        collect_macro_refs(*pr.root, used_macros);
        collect_list_refs(*pr.root, lists, used_lists);
        CompileResult cr = compile_condition(std::move(pr.root), macros, lists, cat, &slots, opts.optimise,
                                             opts.max_condition_nodes);
        for (std::size_t e = 0; e < cr.errors.size(); ++e) d.error(cr.error_codes[e], st.pos, slbl, cr.errors[e].message);
        if (!cr.errors.empty()) {
          ok = false;
          continue;
        }
        // A sequence is vigil's own: no Falco rule file carries one, so a
        // field vigil does not know is an error, not a skip.
        if (!cr.unknown_fields.empty()) {
          std::string names;
          for (const auto& f : cr.unknown_fields) names += (names.empty() ? "" : ", ") + f;
          d.error(code::kSequence, st.pos, slbl, "unknown field " + names);
          ok = false;
          continue;
        }
        for (const auto& t : cr.unknown_evttypes) {
          d.warning(code::kUnknownEvtType, st.pos, slbl, "unknown event type '" + t + "' never matches");
        }
        event::TypeMask mask = cr.expr->type_mask();
        mask.reset(event::Type::kPlugin);
        if (mask.none()) {
          d.warning(code::kNeverMatches, st.pos, slbl,
                    "the condition only matches event types vigil does not collect: the sequence never completes");
        } else if (cr.expr->type_mask() == event::TypeMask::all()) {
          d.warning(code::kNoEvttype, st.pos, slbl, "the condition does not restrict evt.type: it runs for every event");
        }
        auto step = std::make_unique<Ruleset::Rule>();
        step->name = sd.name;
        step->source = "syscall";
        step->expr = std::move(cr.expr);
        step->mask = mask;
        step->file = st.pos.file;
        step->line = st.pos.line;
        step->sequence = seq_index;
        step->step = static_cast<std::uint32_t>(i);
        steps.push_back(std::move(step));
      }
      std::vector<std::string> unknown_out;
      std::string oerr;
      OutputFormat of = OutputFormat::parse(trim(sd.output), cat, unknown_out, oerr, sd.steps.size());
      if (!oerr.empty()) {
        d.error(code::kOutputSyntax, sd.output_pos, lbl, oerr);
        ok = false;
      }
      for (const auto& f : unknown_out) {
        d.warning(code::kOutputField, sd.output_pos, lbl, "unknown field '" + f + "' in output prints <NA>");
      }
      if (!ok) continue;
      seq->name = sd.name;
      seq->desc = trim(sd.desc);
      seq->priority = sd.priority;
      seq->tags = sd.tags;
      seq->by = sd.by;
      seq->within_ns = sd.within_ns;
      seq->steps = static_cast<std::uint32_t>(sd.steps.size());
      seq->enabled = sd.enabled;
      if (opts.disabled_rules.count(sd.name)) seq->enabled = false;
      for (const auto& t : sd.tags) {
        if (opts.disabled_tags.count(t)) seq->enabled = false;
      }
      if (static_cast<int>(sd.priority) > static_cast<int>(opts.min_priority)) seq->enabled = false;
      if (opts.enabled_rules.count(sd.name)) seq->enabled = true;
      seq->output = std::move(of);
      std::set<std::string> seen;
      const auto& toks = seq->output.tokens();
      seq->slot.assign(toks.size(), -1);
      for (std::size_t k = 0; k < toks.size(); ++k) {
        if (!toks[k].is_field) continue;
        if (seen.insert(toks[k].name).second) seq->output_fields.push_back(k);
        if (toks[k].step >= 0 && static_cast<std::uint32_t>(toks[k].step) + 1 < seq->steps) {
          seq->slot[k] = static_cast<std::int32_t>(seq->slots++);
        }
      }
      seq->file = sd.pos.file;
      seq->line = sd.pos.line;
      for (auto& st : steps) {
        st->enabled = seq->enabled;
        seq->step_rules.push_back(static_cast<std::uint32_t>(rs->rules_.size() + step_rules.size()));
        step_rules.push_back(std::move(st));
      }
      rs->sequences_.push_back(std::move(seq));
      ++res.sequences;
    }
    rs->steps_ = step_rules.size();
    for (auto& st : step_rules) rs->rules_.push_back(std::move(st));
    rs->sequence_capacity_ = opts.max_sequence_matches;

    for (const auto& m : col.macros()) {
      if (macros[m.name].ast) {
        collect_macro_refs(*macros[m.name].ast, used_macros);
        collect_list_refs(*macros[m.name].ast, lists, used_lists);
      }
    }
    for (const auto& l : col.lists()) {
      for (const auto& i : lists[l.name]) {
        if (i != l.name && lists.count(i)) used_lists.insert(i);
      }
    }
    for (const auto& m : col.macros()) {
      if (!used_macros.count(m.name)) d.warning(code::kUnusedMacro, m.pos, "macro '" + m.name + "'", "macro is not used");
    }
    for (const auto& l : col.lists()) {
      if (!used_lists.count(l.name)) d.warning(code::kUnusedList, l.pos, "list '" + l.name + "'", "list is not used");
    }

    // Index by event type; gather the open filter's literal paths.
    std::vector<PathLiteral> literals;
    for (std::uint32_t i = 0; i < rs->rules_.size(); ++i) {
      const auto& r = *rs->rules_[i];
      if (!r.enabled) continue;
      rs->type_bits_ |= r.mask;
      const event::TypeMask eval_mask = r.expr->eval_mask();
      for (unsigned t = 1; t < static_cast<unsigned>(event::Type::kCount); ++t) {
        if (!eval_mask.test(static_cast<event::Type>(t))) continue;
        auto& prog = rs->programs_[t];
        rs->index_[t].push_back({i, static_cast<std::uint32_t>(prog.size()), r.sequence, r.step});
        const std::size_t from = prog.size();
        r.expr->append_program(static_cast<event::Type>(t), prog);
        for (std::size_t k = from; k < prog.size(); ++k) {
          if (prog[k].id >= 0) {
            rs->check_words_[t] = std::max(rs->check_words_[t], static_cast<std::size_t>(prog[k].id) / 64 + 1);
          }
        }
      }
      // fd.sip.name & co come from the DNS answers the state remembers: a
      // rule that reads one (in its condition or its output) needs the dns
      // events even when no rule is on them.
      static constexpr std::string_view kDnsNamed[] = {"fd.sip.name", "fd.rip.name", "fd.cip.name",
                                                       "fd.lip.name"};
      if (!rs->needs_dns_) {
        rs->needs_dns_ = r.expr->reads_any(kDnsNamed);
        const OutputFormat& output = r.sequence >= 0 ? rs->sequences_[r.sequence]->output : r.output;
        for (const auto& tok : output.tokens()) {
          if (tok.field.def && std::find(std::begin(kDnsNamed), std::end(kDnsNamed), tok.field.def->name) !=
                                   std::end(kDnsNamed))
            rs->needs_dns_ = true;
        }
      }
      if (r.mask.test(event::Type::kOpen)) {
        if (!r.expr->path_prefixes(literals)) {
          rs->open_unfiltered_.push_back(r.name);
        }
      }
    }
    // The kernel has a few slots for these (VG_OPEN_PREFIXES): a path that a
    // shorter prefix already covers takes none ("/tmp/" covers "/tmp/x/" and
    // the whole path "/tmp/a"); the rules still judge the exact path.
    rs->open_paths_ = open_paths_of(std::move(literals));
    if (opts.optimise && !stopped) {
      for (unsigned t = 1; t < static_cast<unsigned>(event::Type::kCount); ++t) {
        if (std::string why = stop_reason(); !why.empty()) {
          d.error(code::kCompileBudget, Pos{}, "",
                  why + "; stopped while indexing the rules for event type " +
                      std::string(event::info(static_cast<event::Type>(t)).name));
          break;
        }
        std::vector<const Expr*> exprs;
        for (const auto& e : rs->index_[t]) exprs.push_back(rs->rules_[e.rule]->expr.get());
        auto g = std::make_unique<GuardIndex>();
        g->build(exprs, static_cast<event::Type>(t));
        if (g->active()) rs->guards_[t] = std::move(g);
      }
    }

    res.errors = d.error_count();
    if (res.errors == 0) res.ruleset = std::shared_ptr<const Ruleset>(rs.release());
    return res;
  }
};

LoadResult load_rules_text(const std::vector<std::pair<std::string, std::string>>& files,
                           const LoadOptions& opts) {
  Diagnostics d;
  Collector col;
  for (const auto& [name, text] : files) {
    for (const auto& item : read_rules_yaml(text, name, d)) col.apply(item, d);
  }
  LoadResult r = RulesetBuilder::build(col, d, opts);
  r.diagnostics = d.take();
  return r;
}

LoadResult load_rules(const std::vector<std::string>& paths, const LoadOptions& opts) {
  Diagnostics d;
  std::vector<std::pair<std::string, std::string>> files;
  namespace fs = std::filesystem;
  auto read_file = [&](const fs::path& p) {
    std::error_code ec;
    auto size = fs::file_size(p, ec);
    if (ec) {
      d.error(code::kFileRead, Pos{p.string(), 0, 0}, "", "cannot read: " + ec.message());
      return;
    }
    if (size > opts.max_file_bytes) {
      d.error(code::kFileRead, Pos{p.string(), 0, 0}, "",
              "file is larger than " + std::to_string(opts.max_file_bytes) + " bytes");
      return;
    }
    std::ifstream in(p, std::ios::binary);
    if (!in) {
      d.error(code::kFileRead, Pos{p.string(), 0, 0}, "", "cannot open file");
      return;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    files.emplace_back(p.string(), ss.str());
  };
  for (const auto& f : expand_yaml_paths(paths, d).files) read_file(f);
  Collector col;
  for (const auto& [name, text] : files) {
    for (const auto& item : read_rules_yaml(text, name, d)) col.apply(item, d);
  }
  LoadResult r = RulesetBuilder::build(col, d, opts);
  r.diagnostics = d.take();
  return r;
}

std::string summary_line(const LoadResult& r) {
  return "rules: " + std::to_string(r.loaded) + " loaded, " + std::to_string(r.skipped) +
         " skipped, " + std::to_string(r.errors) + " errors" +
         (r.sequences ? ", " + std::to_string(r.sequences) + " sequences" : "");
}

}  // namespace vigil::rules
