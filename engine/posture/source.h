// The posture source: the node's GPU security posture as gpu_posture events,
// one at start and one whenever a re-check finds a fact changed, plus one
// per pod container that asks for GPUs through its environment without a
// GPU request.
//
//   auto view = std::make_shared<posture::View>();
//   auto src = std::make_unique<posture::PostureSource>(opts, 60s, first, view, scan);
//   runner.add_source(std::move(src), /*essential=*/false);
//
// The files are read on the source's own thread (never on the event loop);
// the loop thread only takes what that thread found (poll). The GPUs' ECC
// comes from the nvml plugin's samples, through set_ecc (the agent's tap,
// engine/agent/posture_ecc.h): a change is reported like a file's. The pod scan is
// given by the caller and runs in poll, on the loop thread, after each
// re-check (it reads the state the loop owns).
//
// Thread-safety: poll() on the loop thread; View from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/posture/posture.h"
#include "engine/source/source.h"

namespace vigil::posture {

// The posture in force, for /metrics and the ready line. Thread-safe.
class View {
 public:
  void set(Posture p);
  std::optional<Posture> get() const;  // nullopt before the first read

 private:
  mutable std::mutex mu_;
  std::optional<Posture> p_;
};

// A pod container whose environment asks for GPUs (NVIDIA_VISIBLE_DEVICES)
// while its spec requests none.
struct PodFinding {
  std::string pod_uid;
  std::string container;
  std::string visible_devices;
};

class PostureSource final : public source::EventSource {
 public:
  using PodScan = std::function<std::vector<PodFinding>()>;
  // Reads every `interval` from the thread it starts; `first` is the posture
  // read before the loop started (the ready line's), reported by the first
  // poll. `scan` may be empty (no pods).
  PostureSource(ReadOptions opt, std::chrono::milliseconds interval, Posture first, std::shared_ptr<View> view,
                PodScan scan);
  ~PostureSource() override;
  PostureSource(const PostureSource&) = delete;
  PostureSource& operator=(const PostureSource&) = delete;

  std::string_view name() const override { return "posture"; }
  int wait_fd() const override { return efd_; }
  Result<std::size_t> poll(std::size_t budget, const Emit& emit) override;
  std::vector<std::string> attached() const override { return {"posture:" + opt_.host_root}; }
  source::Drops drops() const override;

  // A whole sample of the GPUs' ECC (ecc.h). When it differs from the
  // posture in force, a report naming `ecc` follows. Any thread.
  void set_ecc(std::vector<GpuEcc> gpus);

  // At most this many pod containers are remembered as reported (a pod
  // reported again after it was forgotten is reported once more).
  static constexpr std::size_t kMaxPodsRemembered = 4096;

 private:
  void loop();
  void wake();
  // Makes `now` the posture in force, with a report, when it differs from
  // it; true when it did (mu_ held).
  bool report_locked(Posture now);

  ReadOptions opt_;
  std::chrono::milliseconds interval_;
  std::shared_ptr<View> view_;
  PodScan scan_;
  int efd_ = -1;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<event::PostureData> pending_;  // guarded by mu_; at most a few
  std::uint64_t dropped_ = 0;                // guarded by mu_
  Posture last_;                             // guarded by mu_: the posture in force
  std::vector<GpuEcc> ecc_;                  // guarded by mu_: the latest ECC sample

  std::set<std::string> pods_reported_;  // loop thread: "uid/container"
  std::thread thread_;
};

}  // namespace vigil::posture
