// vigil run's share of prevention (docs/prevention.md): the containers'
// entries in the kernel's policy maps, written as their pods become known;
// the addresses DNS answers give the names enforced rules deny; and the
// responses the pipeline's decisions ask for (kill, freeze on the pipeline
// thread; label and delete_pod through the API server, on the pod
// responder's thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>

#include "engine/agent/freeze.h"
#include "engine/pipeline/pipeline.h"
#include "engine/policy/tables.h"
#include "engine/rules/prevention.h"

namespace vigil::sensor {
class Sensor;
}
namespace vigil::rules {
class Ruleset;
struct PreventionDecision;
}  // namespace vigil::rules
namespace vigil::state {
struct K8sConfig;
}
namespace spdlog {
class logger;
}

namespace vigil::agent {

class PodResponder;

class PreventionTap final : public pipeline::EventTap {
 public:
  // `sensor` may be null (no kernel: nothing to write). `pipe` gives the
  // ruleset in force. Both must outlive the tap.
  // `log` (may be null) is told of responses that failed (the 1st, 2nd,
  // 4th... time for each rule, response and reason).
  PreventionTap(sensor::Sensor* sensor, const pipeline::Pipeline& pipe, spdlog::logger* log = nullptr,
                FreezeRoots roots = discover_freeze_roots());
  ~PreventionTap() override;
  // The API server the label and delete_pod responses go to (without one
  // they fail, counted with reason no_api). Before the loop runs.
  void set_k8s(const state::K8sConfig& cfg);
  void on_event(const event::Event& ev, const state::EvalContext& ctx) override;
  // A decision of the pipeline: the responses of a `respond` decision are
  // carried out here, in the order freeze, kill, label, delete_pod (kill:
  // never pid 1 or vigil; all: only in a container; label and delete_pod:
  // only a pod vigil knows, at most once a minute per pod and response), and
  // a kill at exec was decided by the kernel (the exec record says so).
  void on_decision(rules::PreventionDecision& d, const state::EvalContext& ctx);

  // Counted on the pipeline thread, read by the web server's.
  struct Stats {
    std::uint64_t entries = 0;             // container entries written
    std::uint64_t unknown = 0;             // events of containers whose pod is not known (nothing refused for them)
    std::uint64_t map_errors = 0;          // an entry or address the kernel's map refused (full): never refused
    std::uint64_t learnt_dests = 0;        // addresses learnt from DNS answers
    std::uint64_t kills = 0;               // kill responses carried out
    std::uint64_t denied_files = 0;        // program files added to the kernel's map as denied by identity
    std::uint64_t denied_file_errors = 0;  // ... that the map refused (full)
  };
  Stats stats() const {
    return {entries_.load(), unknown_.load(),      map_errors_.load(),        learnt_dests_.load(),
            kills_.load(),   denied_files_.load(), denied_file_errors_.load()};
  }
  // Responses by (rule, response, result): result "done", or why not:
  // "refused" (a safety rule: pid 1, vigil, the host, an unknown pod or
  // cgroup), "error" (the signal, the cgroup write or the API call failed),
  // "dropped" (the API queue was full), "no_api" (no API server).
  std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t> responses() const;

 private:
  struct Cached {
    const void* pod = nullptr;
    std::string resource_version;
    std::uint64_t recheck_ns = 0;
    std::uint64_t written_ns = 0;  // event time of the event the entry was first written at
  };
  void entry_for(const event::Event& ev, const state::EvalContext& ctx);
  // An identified program file that enforced rules deny by identity: into
  // the kernel's map, so its later execs are killed at exec.
  void deny_file(const event::ExecData& ed);
  void count(const std::string& rule, rules::Response r, const char* result, const std::string& detail = "");
  void pod_response(const rules::PreventionDecision& d, rules::Response r, const state::EvalContext& ctx);
  sensor::Sensor* sensor_;
  const pipeline::Pipeline& pipe_;
  const rules::Ruleset* rules_ = nullptr;  // the set the entries were made for
  std::unordered_map<std::uint64_t, Cached> cache_;
  std::atomic<std::uint64_t> entries_{0}, unknown_{0}, map_errors_{0}, learnt_dests_{0}, kills_{0}, denied_files_{0},
      denied_file_errors_{0};
  // The enforced rules' identities (kernel_tables().exe_ids) for exe_ids_for_.
  std::map<std::string, std::uint64_t> exe_ids_;
  const rules::Ruleset* exe_ids_for_ = nullptr;
  spdlog::logger* log_;
  CgroupFreezer freezer_;
  mutable std::mutex responses_mu_;
  std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t> responses_;  // guarded by responses_mu_
  // (pod uid, response) -> event time it was last asked for: once a minute at most.
  std::unordered_map<std::string, std::uint64_t> asked_;
  std::unique_ptr<PodResponder> pods_;  // null: no API server (its worker counts into responses_)
};

}  // namespace vigil::agent
