// Evaluation: the rules (and the steps of sequences) an event matches, and
// what a Ruleset says about itself (its rules, sequences, event types).
// Building is in ruleset_build.cpp, alert rendering in alert_render.cpp.
#include "engine/rules/ruleset.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "engine/rules/document.h"
#include "engine/rules/prevention.h"
#include "engine/rules/ruleset_parts.h"

namespace vigil::rules {

Ruleset::Ruleset() = default;
Ruleset::~Ruleset() = default;

// ---------------------------------------------------------------- evaluate

namespace {

// Asks for the cache lines the rules will read before they are needed;
// false when the event's type is out of range.
bool prefetch_event(const state::EvalContext& ctx) noexcept {
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
  if (t >= static_cast<std::size_t>(event::Type::kCount)) return false;
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
  return true;
}

}  // namespace

void Ruleset::evaluate(const state::EvalContext& ctx, std::vector<event::Alert>& out,
                       SequenceState* sequences) const noexcept {
  if (!ctx.ev) return;
  if (!prefetch_event(ctx)) return;
  const auto t = static_cast<std::size_t>(ctx.ev->hdr.type);
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
    try {
      out.push_back(rule_alert(*rules_[entry.rule], x, hostname_));
    } catch (...) {
      // Out of memory while building an alert: drop it rather than stop the pipeline.
    }
  }
  if (step_seq >= 0) flush_steps();
  for (auto& a : seq_alerts) {
    try {
      out.push_back(std::move(a));
    } catch (...) {}
  }
}

void Ruleset::advance(std::uint32_t seq, std::uint32_t mask, const ExtractCtx& x, SequenceState& st,
                      std::vector<event::Alert>& out) const noexcept {
  const Sequence& s = *sequences_[seq];
  const std::uint64_t now = x.ctx->ev->hdr.ts_ns;
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
    // The event's `distinct` values, rendered as a key is (once per event);
    // false when a field has no value: such an event cannot take part.
    std::string& dval = *st.distinct_buffer();
    int distinct_state = s.distinct.empty() ? 1 : -1;  // -1 not yet, 0 missing, 1 ready
    auto distinct_of = [&]() {
      if (distinct_state < 0) {
        dval.clear();
        distinct_state = 1;
        for (const auto& tok : s.distinct) {
          x.arena->reset();
          x.cache->clear();
          Extracted e;
          FieldType ft = extract_field(x, tok.field, tok.transformers, e);
          if (e.n == 0) {
            distinct_state = 0;
            break;
          }
          std::string_view v = render_value(ft, e, *x.arena);
          dval += std::to_string(v.size());
          dval += ':';
          dval += v;
        }
        bound_key(dval);
      }
      return distinct_state == 1;
    };
    // A step's event whose `distinct` values an earlier step of the match had.
    auto repeats = [&](const Partial& p) {
      return !s.distinct.empty() &&
             (!distinct_of() || std::find(p.distinct.begin(), p.distinct.end(), dval) != p.distinct.end());
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
      if (!p || p->next != i || repeats(*p)) continue;
      // A counted step is done at its count-th match.
      if (++p->step_hits < s.step_count[i]) return;
      p->step_hits = 0;
      if (i + 1 < s.steps) {
        capture(*p, i);
        if (!s.distinct.empty()) p->distinct.push_back(dval);
        ++p->next;
        return;
      }
      // The last step: one alert with every step's fields.
      event::Alert a = sequence_alert(s, *p, x, hostname_);
      table.erase(*key);
      out.push_back(std::move(a));
      return;
    }
    const std::string* key = nullptr;
    if (!(mask & 1u) || !key_of(0, key)) return;
    Partial* p = table.find(*key, now);
    if (p && p->next > 1) return;  // further on: a first step does not undo it
    const std::uint32_t need = s.step_count[0];
    if (need <= 1) {
      // A first step starts a match, or starts again one that has only its
      // first step (the window then counts from the later one).
      if (!distinct_of()) return;
      Partial& m = table.start(*key, now);
      m.fields.resize(s.slots);
      m.distinct.clear();
      if (!s.distinct.empty()) m.distinct.push_back(dval);
      capture(m, 0);
      return;
    }
    // A counted first step: its matches within the window, the newest
    // `need` of them; done while it has all of them (a further match slides
    // the window, and gives the step's fields again).
    Partial* m = p;
    if (!m) {
      m = &table.start(*key, now);
      m->fields.resize(s.slots);
    }
    auto& t = m->first_times;
    std::erase_if(t, [&](std::uint64_t at) { return now > at && now - at > s.within_ns; });
    t.push_back(now);
    if (t.size() > need) t.erase(t.begin(), t.end() - need);
    m->first_ns = t.front();
    m->step_hits = 0;
    if (t.size() < need) {
      m->next = 0;
      return;
    }
    if (s.steps == 1) {
      // A rate: `need` matches within the window, one alert; the next needs as many again.
      event::Alert a = sequence_alert(s, *m, x, hostname_);
      table.erase(*key);
      out.push_back(std::move(a));
      return;
    }
    capture(*m, 0);
    m->next = 1;
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

const AggregateSpec* Ruleset::aggregate_of(std::string_view rule) const noexcept {
  auto it = aggregates_.find(rule);
  return it == aggregates_.end() ? nullptr : &it->second;
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
    i.distinct = s->distinct_fields;
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

bool Ruleset::rerender_metadata(const state::EvalContext& ctx, event::Alert& alert) const noexcept {
  if (alert.metadata_spans.empty() && alert.output_fields.empty()) return true;
  Arena arena;
  FieldCache cache;
  cache.clear();
  ExtractCtx x{&ctx, &arena, &cache, nullptr};
  try {
    for (const auto& r : rules_) {
      if (r->sequence >= 0 || r->name != alert.rule || r->source != alert.source) continue;
      rules::rerender_metadata(r->output, r->extra_fields, x, alert);
      return true;
    }
    for (const auto& s : sequences_) {
      if (s->name != alert.rule) continue;
      rules::rerender_metadata(s->output, s->extra_fields, x, alert);
      return true;
    }
  } catch (...) {}
  return false;
}

}  // namespace vigil::rules
