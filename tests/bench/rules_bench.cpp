// The rule engine's evaluator alone: Ruleset::evaluate over a synthetic mix of
// exec, open, connect, ioctl and dns events, with a small share (5%) of the
// other calls a node makes (dup, socket, accept, unlink, rename, chmod, mkdir,
// ...), from 500 processes in 50 containers (50 pods), with
//   (a) the bundled rules (rules/*.yaml),
//   (b) the bundled rules plus Falco's falco_rules.yaml, and
//   (c) the bundled rules plus all three of Falco's stock files (falco_rules,
//       falco-incubating_rules, falco-sandbox_rules)
//       ($VIGIL_FALCO_RULES_DIR, default ../shared/falco-rules), and
//   (a') the bundled rules with their sequences disabled (what they cost).
// Sequences run with their partial matches kept, as in the pipeline.
// All sets run in one process over the same events, so their ratios hold
// while the machine's speed drifts. A counting operator new shows how many
// heap allocations one event costs on the match-nothing path (the target is
// zero).
//
//   taskset -c 1 build/bench/rules_bench   (run from the repository root)
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "engine/rules/ruleset.h"
#include "engine/rules/sequence.h"
#include "tests/bench/rules_mix.h"

// ---------------------------------------------------------------- counting allocator

namespace {
std::atomic<std::uint64_t> g_allocs{0};
}

void* operator new(std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

using namespace vigil;
using namespace vigil::bench;

std::shared_ptr<const rules::Ruleset> load(Set set, benchmark::State& st) {
  std::size_t disabled = 0;
  auto r = load_set(set, &disabled);
  if (!r.ruleset) {
    st.SkipWithError(("rules did not load (run from the repository root): " + rules::summary_line(r)).c_str());
    return nullptr;
  }
  st.counters["rules"] = static_cast<double>(r.loaded);
  st.counters["sequences"] = static_cast<double>(r.ruleset->sequences().size() - disabled);
  return r.ruleset;
}

// only_type: evaluate only the mix's events of that type (kUnknown: all).
void run(benchmark::State& st, Set set, bool match_nothing_only, event::Type only_type = event::Type::kUnknown) {
  auto rs = load(set, st);
  if (!rs) return;
  auto mix = make_mix(20000);
  // The sequences' partial matches, as the pipeline keeps them.
  rules::SequenceStats seq_stats;
  rules::SequenceState seq(*rs, &seq_stats);
  std::vector<const state::EvalContext*> ctxs;
  std::vector<event::Alert> out;
  out.reserve(1024);
  std::size_t matching = 0;
  std::map<std::string, std::size_t> fired;  // rule -> alerts over the mix
  for (const auto& c : mix->ctxs) {
    out.clear();
    rs->evaluate(c, out, &seq);
    if (!out.empty()) ++matching;
    for (const auto& a : out) ++fired[a.rule + " (" + std::string(event::type_name(c.ev->hdr.type)) + ")"];
    if (only_type != event::Type::kUnknown && c.ev->hdr.type != only_type) continue;
    if (!match_nothing_only || out.empty()) ctxs.push_back(&c);
  }
  out.clear();
  // VIGIL_BENCH_ALERTS=1: which rules fire on the mix, once per benchmark.
  if (std::getenv("VIGIL_BENCH_ALERTS")) {
    for (const auto& [rule, n] : fired) std::fprintf(stderr, "  fires %6zu x %s\n", n, rule.c_str());
    const auto infos = rs->sequences();
    for (std::size_t k = 0; k < infos.size(); ++k)
      std::fprintf(stderr, "  sequence %s: %zu partial matches held\n", infos[k].name.c_str(), seq.table(k).size());
  }
  std::uint64_t allocs_before = g_allocs.load();
  std::size_t alerts = 0;
  std::size_t i = 0;
  for (auto _ : st) {
    rs->evaluate(*ctxs[i], out, &seq);
    alerts += out.size();
    out.clear();
    if (++i == ctxs.size()) i = 0;
  }
  std::uint64_t allocs = g_allocs.load() - allocs_before;
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()));
  st.counters["events/s"] = benchmark::Counter(static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
  st.counters["allocs/event"] = static_cast<double>(allocs) / static_cast<double>(st.iterations());
  st.counters["alerts/event"] = static_cast<double>(alerts) / static_cast<double>(st.iterations());
  st.counters["matching_share"] = static_cast<double>(matching) / static_cast<double>(mix->ctxs.size());
}

void BM_Bundled_Mix(benchmark::State& st) { run(st, Set::kBundled, false); }
void BM_Bundled_MatchNothing(benchmark::State& st) { run(st, Set::kBundled, true); }
void BM_BundledNoSequences_Mix(benchmark::State& st) { run(st, Set::kBundledNoSequences, false); }
void BM_BundledNoSequences_MatchNothing(benchmark::State& st) { run(st, Set::kBundledNoSequences, true); }
void BM_BundledFalco_Mix(benchmark::State& st) { run(st, Set::kFalco, false); }
void BM_BundledFalco_MatchNothing(benchmark::State& st) { run(st, Set::kFalco, true); }
void BM_BundledAllStock_Mix(benchmark::State& st) { run(st, Set::kAllStock, false); }
void BM_BundledAllStock_MatchNothing(benchmark::State& st) { run(st, Set::kAllStock, true); }

// The (b) and (c) mixes split by event type: what one event of each type costs.
void by_type(benchmark::State& st, Set set) {
  auto t = static_cast<event::Type>(st.range(0));
  st.SetLabel(std::string(event::type_name(t)));
  run(st, set, false, t);
}
void BM_BundledFalco_ByType(benchmark::State& st) { by_type(st, Set::kFalco); }
void BM_BundledAllStock_ByType(benchmark::State& st) { by_type(st, Set::kAllStock); }

void mix_types(benchmark::internal::Benchmark* b) {
  for (auto t :
       {event::Type::kExec, event::Type::kOpen, event::Type::kConnect, event::Type::kIoctl, event::Type::kDns,
        event::Type::kDup, event::Type::kSocket, event::Type::kAccept, event::Type::kUnlink, event::Type::kRename})
    b->Arg(static_cast<int>(t));
}

BENCHMARK(BM_Bundled_Mix);
BENCHMARK(BM_Bundled_MatchNothing);
BENCHMARK(BM_BundledNoSequences_Mix);
BENCHMARK(BM_BundledNoSequences_MatchNothing);
BENCHMARK(BM_BundledFalco_Mix);
BENCHMARK(BM_BundledFalco_MatchNothing);
BENCHMARK(BM_BundledAllStock_Mix);
BENCHMARK(BM_BundledAllStock_MatchNothing);
BENCHMARK(BM_BundledFalco_ByType)->Apply(mix_types);
BENCHMARK(BM_BundledAllStock_ByType)->Apply(mix_types);

}  // namespace

BENCHMARK_MAIN();
