// The Store: every workload's profile, kept current by the events of its
// containers, answering the rules' baseline fields (state::BaselineView), and
// saved to and read back from a directory (docs/baselines.md).
//
//   baseline::Store store(cfg);                 // cfg.enabled: the caller made one
//   for (const Error& e : store.load()) log->warn("{}", e.message);   // refused files
//   pipeline deps: .baselines = &store          // observe() before the rules
//   every save_every: for (auto& e : store.save()) log->warn(...)
//   on a change in the directory: store.pick_up(...) (a `vigil baseline lock`)
//
// Per event (observe, before rules): the event's container gives its workload
// key (key.h); the first event of a workload starts its profile (learning,
// first_seen = that event's time); a learning profile whose learn_for has
// passed in event time locks at that event, before it is learnt, so replay
// locks where live did; a learning profile learns the event's fact. A
// workload past max_workloads has no profile (counted once per container).
//
// The facts of an event (one at most):
//   exec (execve/execveat) of a program file: proc.exepath + proc.exe_sha256
//   connect/sendto/sendmsg to an IPv4/IPv6 server: network (v4_prefix,
//     v6_prefix), port (one "ephemeral" port from ephemeral_from up), tcp/udp
//   successful open for writing of a file that is not a device, under one of
//     watch_paths
//   NVIDIA ioctl RM_ALLOC the driver accepted (result 0, RM status 0): the class
//
// Cost: nothing unless baselines are enabled (the pipeline has no store); with
// them, one hash lookup of the container id per container event, and one of
// the fact in its profile. Host events are not looked at.
//
// Thread-safety: one thread (the pipeline's) calls everything but stats(),
// which any thread may call.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/baseline/key.h"
#include "engine/baseline/profile.h"
#include "engine/state/model.h"
#include "engine/util/result.h"

namespace vigil::baseline {

// The watched paths by default: where a workload's writes change what the
// container runs or trusts (docs/baselines.md). Keep in sync with the list
// vigil_baseline_watched_paths in rules/baseline/inference_baseline.yaml
// (a rule test checks they agree).
std::vector<std::string> default_watch_paths();

struct Config {
  std::string dir;         // "" : nothing is read or written (rule tests)
  bool read_only = false;  // replay: read dir, never write it
  KeyMode key = KeyMode::kImage;
  std::uint64_t learn_for_ns = 24ull * 3600 * 1000000000;  // 0: locked only by command
  int v4_prefix = 24;                                      // 32: exact addresses
  int v6_prefix = 64;                                      // 128: exact addresses
  // Destination ports from this one up count as one ("ephemeral"): a UDP
  // server answering clients sends to their random ports. 0: every port is
  // its own. Linux picks client ports from 32768 by default.
  std::uint32_t ephemeral_from = 32768;
  std::vector<std::string> watch_paths = default_watch_paths();
  std::size_t max_workloads = 256;
  Caps caps;
};

struct Stats {
  std::uint64_t workloads = 0;
  std::uint64_t learning = 0;
  std::uint64_t locked = 0;
  std::uint64_t workloads_refused = 0;      // containers left without a profile: max_workloads reached
  std::array<std::uint64_t, kSets> full{};  // facts not learnt because their set was full, since start
  std::uint64_t files_refused = 0;          // profile files refused at load or pick-up
  std::uint64_t save_failures = 0;
};

class Store final : public state::BaselineView {
 public:
  explicit Store(Config cfg);
  ~Store() override;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const Config& config() const { return cfg_; }

  // Reads every *.json profile in cfg.dir (none when it is "" or missing).
  // Each file refused is one error naming it; the others load.
  std::vector<Error> load();
  // Writes the profiles changed since they were last written or read (none
  // when read_only or dir is ""). One error per file that failed.
  std::vector<Error> save();
  // Reads the profile files that changed on disk since this store last read
  // or wrote them: a profile locked there (`vigil baseline lock`) locks here;
  // a file for a workload this store does not have yet is loaded. `done`
  // gets a line per change taken ("locked docker.io/x:1 (command)").
  std::vector<Error> pick_up(std::vector<std::string>& done);

  // Locks a workload's profile now (tests, and the CLI through the files).
  bool lock(std::string_view key, std::uint64_t at_ns, std::string cause);

  const Profile* find(std::string_view key) const;
  std::vector<const Profile*> profiles() const;  // sorted by key
  Stats stats() const;

  // state::BaselineView
  void observe(const state::EvalContext& ctx) noexcept override;
  state::BaselinePhase phase(const state::EvalContext& ctx) const noexcept override;
  std::string_view workload(const state::EvalContext& ctx) const noexcept override;
  state::BaselineAnswer has(const state::EvalContext& ctx, state::BaselineFact fact) const noexcept override;

 private:
  struct Slot {
    std::unique_ptr<Profile> profile;
    bool dirty = false;
    // The file as this store last read or wrote it (0: never).
    ino_t ino = 0;
    off_t size = 0;
    std::int64_t mtime_ns = 0;
  };
  Slot* slot_for(const state::EvalContext& ctx);
  Slot* add_slot(std::unique_ptr<Profile> p);
  std::vector<Error> scan_dir(std::vector<std::string>* done);
  static bool unchanged(const Slot& s, const struct stat& st);
  static void remember(Slot& s, const struct stat& st);
  void absorb(const std::string& path, const struct stat& st, Slot* s, std::vector<std::string>* done,
              std::vector<Error>& errors);
  void learn_or_match(Slot& s, const state::EvalContext& ctx);
  void note_full(const std::array<std::uint64_t, kSets>& before, const Profile& p);
  bool watched(std::string_view path) const;

  Config cfg_;
  std::unordered_map<std::string, std::unique_ptr<Slot>> slots_;  // by workload key
  std::unordered_map<std::string, Slot*> by_file_;                // by file name (key.h)
  // container id -> its slot (null: refused, max_workloads reached); bounded
  // by kMaxContainers (cleared when it would pass).
  std::unordered_map<std::string, Slot*> by_container_;
  // The event last observed: its profile's slot and the answer for its fact.
  const event::Event* current_ev_ = nullptr;
  Slot* current_ = nullptr;
  state::BaselineFact current_fact_ = state::BaselineFact::kExe;
  state::BaselineAnswer current_answer_ = state::BaselineAnswer::kNoValue;

  std::atomic<std::uint64_t> workloads_{0}, learning_{0}, locked_{0}, refused_{0};
  std::array<std::atomic<std::uint64_t>, kSets> full_{};
  std::atomic<std::uint64_t> files_refused_{0}, save_failures_{0};
};

}  // namespace vigil::baseline
