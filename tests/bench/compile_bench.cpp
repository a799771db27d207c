// Rule compilation time against condition size: one exec rule (plus a small
// second one, so the guard index is built) whose condition is a chain of n
// terms, loaded from text by load_rules_text (YAML, parse, compile,
// specialise per event type, guard index). Chains:
//   AndEq     evt.type = execve and proc.name = p0 and proc.name = p1 ...
//             (every term a guard candidate on one field: the case that was
//             quadratic, issue 16)
//   AndNotEq  ... and proc.name != p0 and proc.name != p1 ...
//   OrMixed   evt.type = execve and (proc.name = p0 or fd.name startswith /x1
//             or proc.pid = 2 or proc.cmdline contains q3 or ...)
// Google Benchmark fits the growth (BigO, RMS) over the sizes of each chain.
//
//   cmake --build build -j2 --target compile_bench
//   build/bench/compile_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "engine/rules/ruleset.h"

namespace {

using vigil::rules::load_rules_text;
using vigil::rules::LoadOptions;

std::string term(const std::string& kind, std::size_t i) {
  std::string s = std::to_string(i);
  if (kind == "and_eq") return "proc.name = p" + s;
  if (kind == "and_ne") return "proc.name != p" + s;
  switch (i % 4) {
    case 0: return "proc.name = p" + s;
    case 1: return "fd.name startswith /x" + s;
    case 2: return "proc.pid = " + s;
    default: return "proc.cmdline contains q" + s;
  }
}

std::string rule_file(const std::string& kind, std::size_t n) {
  const char* op = kind == "or_mixed" ? " or " : " and ";
  std::string cond;
  for (std::size_t i = 0; i < n; ++i) {
    if (i) cond += op;
    cond += term(kind, i);
  }
  return "- rule: chain\n  desc: d\n  priority: WARNING\n  condition: evt.type = execve and (" + cond +
         ")\n  output: o\n"
         "- rule: other\n  desc: d\n  priority: WARNING\n"
         "  condition: evt.type = execve and proc.name in (xmrig, t-rex)\n  output: o\n";
}

void compile(benchmark::State& state, const std::string& kind) {
  auto n = static_cast<std::size_t>(state.range(0));
  std::string yaml = rule_file(kind, n);
  LoadOptions opts;
  opts.max_condition_nodes = 0;  // no limit: the sizes go past the default
  for (auto _ : state) {
    auto r = load_rules_text({{"chain.yaml", yaml}}, opts);
    if (!r.ruleset) {
      state.SkipWithError("the chain did not compile");
      break;
    }
    benchmark::DoNotOptimize(r.ruleset.get());
  }
  state.SetComplexityN(static_cast<benchmark::IterationCount>(n));
  state.counters["terms/s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Compile_AndEq(benchmark::State& s) { compile(s, "and_eq"); }
void BM_Compile_AndNotEq(benchmark::State& s) { compile(s, "and_ne"); }
void BM_Compile_OrMixed(benchmark::State& s) { compile(s, "or_mixed"); }

void sizes(benchmark::internal::Benchmark* b) {
  for (int n : {10000, 20000, 40000, 100000, 200000}) b->Arg(n);
  b->Unit(benchmark::kMillisecond)->Complexity();
}

}  // namespace

BENCHMARK(BM_Compile_AndEq)->Apply(sizes);
BENCHMARK(BM_Compile_AndNotEq)->Apply(sizes);
BENCHMARK(BM_Compile_OrMixed)->Apply(sizes);

BENCHMARK_MAIN();
