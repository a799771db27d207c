// vigil run's share of prevention (docs/prevention.md): the containers'
// entries in the kernel's policy maps, written as their pods become known;
// the addresses DNS answers give the names enforced rules deny; and the
// responses (kill) the pipeline's decisions ask for.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "engine/pipeline/pipeline.h"
#include "engine/policy/tables.h"

namespace vigil::sensor {
class Sensor;
}
namespace vigil::rules {
class Ruleset;
struct PreventionDecision;
}  // namespace vigil::rules

namespace vigil::agent {

class PreventionTap final : public pipeline::EventTap {
 public:
  // `sensor` may be null (no kernel: nothing to write). `pipe` gives the
  // ruleset in force. Both must outlive the tap.
  PreventionTap(sensor::Sensor* sensor, const pipeline::Pipeline& pipe);
  void on_event(const event::Event& ev, const state::EvalContext& ctx) override;
  // A decision of the pipeline: a kill response is carried out here (never
  // on pid 1 or vigil; only in a container), and a kill at exec is only
  // "prevented" where the container's entry reached the kernel before the
  // exec (else not_prevented: the program ran).
  void on_decision(rules::PreventionDecision& d, const state::EvalContext& ctx);

  // Counted on the pipeline thread, read by the web server's.
  struct Stats {
    std::uint64_t entries = 0;       // container entries written
    std::uint64_t unknown = 0;       // events of containers whose pod is not known (nothing refused for them)
    std::uint64_t map_errors = 0;    // an entry or address the kernel's map refused (full): never refused
    std::uint64_t learnt_dests = 0;  // addresses learnt from DNS answers
    std::uint64_t kills = 0;         // kill responses carried out
  };
  Stats stats() const {
    return {entries_.load(), unknown_.load(), map_errors_.load(), learnt_dests_.load(), kills_.load()};
  }

 private:
  struct Cached {
    const void* pod = nullptr;
    std::string resource_version;
    std::uint64_t recheck_ns = 0;
    std::uint64_t written_ns = 0;  // event time of the event the entry was first written at
  };
  void entry_for(const event::Event& ev, const state::EvalContext& ctx);
  sensor::Sensor* sensor_;
  const pipeline::Pipeline& pipe_;
  const rules::Ruleset* rules_ = nullptr;  // the set the entries were made for
  std::unordered_map<std::uint64_t, Cached> cache_;
  std::atomic<std::uint64_t> entries_{0}, unknown_{0}, map_errors_{0}, learnt_dests_{0}, kills_{0};
};

}  // namespace vigil::agent
