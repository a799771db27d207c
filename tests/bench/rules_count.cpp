// Instructions per evaluated event, for callgrind: the same mix and rule sets
// as rules_bench (rules_mix.h), each row evaluated over the same events three
// times with only that evaluation instrumented, and one callgrind dump per
// row. Instruction counts are deterministic, so they compare builds on a
// loaded machine where wall-clock figures drift. Run through the script
// beside it, which prints instructions per event for each row:
//
//   tests/bench/rules_count.sh build/bench/rules_count   (from the repository root)
//
// Rows: <set>/mix (all 20,000 events) and <set>/<type> (only the mix's events
// of that type), sets bundled, bundled+falco, bundled+allstock (arguments,
// if any, pick some: rules_count.sh BIN DIR bundled+falco). Without
// valgrind the program runs the same loops and prints the event counts.
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define VIGIL_CG_START() CALLGRIND_START_INSTRUMENTATION
#define VIGIL_CG_STOP() CALLGRIND_STOP_INSTRUMENTATION
#define VIGIL_CG_ZERO() CALLGRIND_ZERO_STATS
#define VIGIL_CG_DUMP(name) CALLGRIND_DUMP_STATS_AT(name)
#else
#define VIGIL_CG_START()
#define VIGIL_CG_STOP()
#define VIGIL_CG_ZERO()
#define VIGIL_CG_DUMP(name) ((void)(name))
#endif

#include <cstdio>
#include <string>
#include <vector>

#include "engine/rules/ruleset.h"
#include "engine/rules/sequence.h"
#include "tests/bench/rules_mix.h"

namespace {

using namespace vigil;
using namespace vigil::bench;

constexpr int kPasses = 3;

// Evaluates `ctxs` kPasses times, instrumented, and dumps the counts as `row`.
std::size_t measure(const rules::Ruleset& rs, rules::SequenceState& seq,
                    const std::vector<const state::EvalContext*>& ctxs, const std::string& row) {
  std::vector<event::Alert> out;
  out.reserve(1024);
  std::size_t alerts = 0;
  VIGIL_CG_ZERO();
  VIGIL_CG_START();
  for (int p = 0; p < kPasses; ++p) {
    for (const auto* c : ctxs) {
      rs.evaluate(*c, out, &seq);
      alerts += out.size();
      out.clear();
    }
  }
  VIGIL_CG_STOP();
  VIGIL_CG_DUMP(row.c_str());
  std::printf("%s events=%zu alerts=%zu\n", row.c_str(), ctxs.size() * kPasses, alerts);
  return alerts;
}

}  // namespace

int main(int argc, char** argv) {
  auto mix = make_mix(20000);
  const struct {
    Set set;
    const char* name;
  } sets[] = {{Set::kBundled, "bundled"}, {Set::kFalco, "bundled+falco"}, {Set::kAllStock, "bundled+allstock"}};
  const event::Type types[] = {event::Type::kExec,   event::Type::kOpen,  event::Type::kConnect, event::Type::kIoctl,
                               event::Type::kDns,    event::Type::kDup,   event::Type::kSocket,  event::Type::kAccept,
                               event::Type::kUnlink, event::Type::kRename};
  for (const auto& s : sets) {
    // Arguments, if any, name the sets to run.
    bool wanted = argc < 2;
    for (int i = 1; i < argc; ++i) wanted = wanted || std::string(argv[i]) == s.name;
    if (!wanted) continue;
    auto r = load_set(s.set);
    if (!r.ruleset) {
      std::fprintf(stderr, "%s: rules did not load (run from the repository root): %s\n", s.name,
                   rules::summary_line(r).c_str());
      return 1;
    }
    // The sequences' partial matches, as the pipeline keeps them; one pass
    // first, as rules_bench does before it times anything.
    rules::SequenceState seq(*r.ruleset, nullptr);
    std::vector<const state::EvalContext*> all;
    std::vector<event::Alert> out;
    for (const auto& c : mix->ctxs) {
      r.ruleset->evaluate(c, out, &seq);
      out.clear();
      all.push_back(&c);
    }
    measure(*r.ruleset, seq, all, std::string(s.name) + "/mix");
    for (auto t : types) {
      std::vector<const state::EvalContext*> some;
      for (const auto* c : all)
        if (c->ev->hdr.type == t) some.push_back(c);
      std::string row = std::string(s.name) + "/" + std::string(event::type_name(t));
      // What picks the rules for this type (stderr: valgrind's log under the script).
      std::string guards;
      for (const auto& f : r.ruleset->guard_fields(t)) guards += " " + f;
      std::fprintf(stderr, "%s guard fields:%s\n", row.c_str(), guards.empty() ? " (none)" : guards.c_str());
      measure(*r.ruleset, seq, some, row);
    }
  }
  return 0;
}
