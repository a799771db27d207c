#include "engine/posture/source.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

namespace vigil::posture {
namespace {
// Reports not yet taken by the loop; a posture that changes faster than the
// loop polls keeps the newest few.
constexpr std::size_t kMaxPending = 16;
}  // namespace

void View::set(Posture p) {
  std::lock_guard<std::mutex> l(mu_);
  p_ = std::move(p);
}

std::optional<Posture> View::get() const {
  std::lock_guard<std::mutex> l(mu_);
  return p_;
}

PostureSource::PostureSource(ReadOptions opt, std::chrono::milliseconds interval, Posture first,
                             std::shared_ptr<View> view, PodScan scan)
    : opt_(std::move(opt)),
      interval_(interval),
      view_(std::move(view)),
      scan_(std::move(scan)),
      last_(first),
      ecc_(first.ecc_gpus) {
  efd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (view_) view_->set(first);
  pending_.push_back(to_event(first, all_facts()));
  wake();
  thread_ = std::thread([this] { loop(); });
}

PostureSource::~PostureSource() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (efd_ >= 0) ::close(efd_);
}

void PostureSource::wake() {
  if (efd_ < 0) return;
  const std::uint64_t one = 1;
  ssize_t n;
  do {
    n = ::write(efd_, &one, sizeof one);
  } while (n < 0 && errno == EINTR);
}

void PostureSource::loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    if (cv_.wait_for(l, interval_, [this] { return stop_; })) break;
    l.unlock();
    Posture now = read_posture(opt_);
    l.lock();
    posture::set_ecc(now, ecc_);  // the files do not say; the latest sample does
    report_locked(std::move(now));
    // Every re-check wakes the loop: the pod scan runs there.
    wake();
  }
}

bool PostureSource::report_locked(Posture now) {
  std::string changed = changed_facts(last_, now);
  if (changed.empty()) return false;
  if (view_) view_->set(now);
  if (pending_.size() >= kMaxPending) {
    pending_.erase(pending_.begin());
    ++dropped_;
  }
  pending_.push_back(to_event(now, std::move(changed)));
  last_ = std::move(now);
  return true;
}

void PostureSource::set_ecc(std::vector<GpuEcc> gpus) {
  std::lock_guard<std::mutex> l(mu_);
  if (gpus == ecc_) return;
  ecc_ = gpus;
  Posture now = last_;
  posture::set_ecc(now, std::move(gpus));
  if (report_locked(std::move(now))) wake();
}

Result<std::size_t> PostureSource::poll(std::size_t budget, const Emit& emit) {
  std::uint64_t counter = 0;
  while (::read(efd_, &counter, sizeof counter) < 0 && errno == EINTR) {}
  std::vector<event::PostureData> ready;
  {
    std::lock_guard<std::mutex> l(mu_);
    ready.swap(pending_);
  }
  const std::uint64_t ts = now_ns();
  std::size_t n = 0;
  auto send = [&](event::PostureData d) {
    event::Event ev;
    ev.hdr.ts_ns = ts;
    ev.hdr.type = event::Type::kGpuPosture;
    ev.data = std::move(d);
    emit(std::move(ev));
    ++n;
  };
  for (auto& d : ready) send(std::move(d));
  if (scan_) {
    for (PodFinding& f : scan_()) {
      if (n >= budget && budget != 0) break;
      std::string key = f.pod_uid + "/" + f.container;
      if (pods_reported_.count(key)) continue;
      if (pods_reported_.size() >= kMaxPodsRemembered) pods_reported_.clear();
      pods_reported_.insert(std::move(key));
      event::PostureData d;
      d.kind = "pod";
      d.pod_uid = std::move(f.pod_uid);
      d.container = std::move(f.container);
      d.visible_devices = std::move(f.visible_devices);
      if (auto p = view_ ? view_->get() : std::nullopt) {
        d.driver_version = p->driver_version;
        d.toolkit_version = p->toolkit_version;
        d.accept_envvar = p->accept_envvar;
        d.runtime = p->runtime;
      }
      send(std::move(d));
    }
  }
  return n;
}

source::Drops PostureSource::drops() const {
  source::Drops d;
  std::lock_guard<std::mutex> l(mu_);
  if (dropped_ != 0) d.add("posture_pending_full", dropped_);
  return d;
}

}  // namespace vigil::posture
