#include "engine/state/cri_resolver.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <utility>

#include "engine/state/state.h"

namespace vigil::state {

CriResolver::CriResolver(Options opts) : opts_(std::move(opts)), client_(opts_.socket, opts_.timeout) {}

CriResolver::~CriResolver() {
  stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status CriResolver::start() {
  if (thread_.joinable()) return Error::runtime("CRI resolver already started");
  if (wake_fd_ < 0) {
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return Error::runtime("eventfd for the CRI resolver failed");
  }
  stop_ = false;
  thread_ = std::thread([this] { run(); });
  return Status::ok_status();
}

void CriResolver::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CriResolver::request(const std::string& container_id) {
  if (container_id.empty() || container_id.size() > kCriMaxString) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (queued_.count(container_id) || known_.count(container_id)) return;
    if (queue_.size() >= opts_.max_queue) {
      ++stats_.dropped;
      return;
    }
    queue_.push_back({container_id, 0, {}});
    queued_.insert(container_id);
    ++stats_.requests;
  }
  cv_.notify_one();
}

void CriResolver::remember(const std::string& id) {  // mu_ held
  if (!known_.insert(id).second) return;
  known_order_.push_back(id);
  while (known_order_.size() > opts_.max_known) {
    known_.erase(known_order_.front());
    known_order_.pop_front();
  }
}

bool CriResolver::resolve(Pending& p, std::vector<Pod>& out) {
  auto c = client_.container(p.id);
  if (!c) {
    std::lock_guard<std::mutex> lk(mu_);
    ++stats_.errors;
    stats_.last_error = c.error().message;
    return false;
  }
  if (!*c) {
    std::lock_guard<std::mutex> lk(mu_);
    ++stats_.not_found;
    return true;
  }
  const CriContainer& ctr = **c;
  const CriPodSandbox* sb = nullptr;
  if (auto it = sandboxes_.find(ctr.pod_uid); it != sandboxes_.end()) {
    sb = &it->second;
  } else if (auto s = client_.pod_sandbox(ctr.pod_uid); s && *s) {
    sandbox_order_.push_back(ctr.pod_uid);
    sb = &sandboxes_.emplace(ctr.pod_uid, std::move(**s)).first->second;
    while (sandbox_order_.size() > opts_.max_pods) {
      if (sandbox_order_.front() != ctr.pod_uid) sandboxes_.erase(sandbox_order_.front());
      sandbox_order_.pop_front();
    }
  } else if (!s) {
    // The container's own labels name the pod: answer with those now.
    std::lock_guard<std::mutex> lk(mu_);
    ++stats_.errors;
    stats_.last_error = s.error().message;
  }
  out.push_back(pod_from_cri(sb, ctr));
  std::lock_guard<std::mutex> lk(mu_);
  ++stats_.found;
  return true;
}

void CriResolver::run() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    if (queue_.empty()) {
      cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (queue_.front().not_before > now) {
      cv_.wait_until(lk, queue_.front().not_before);
      continue;
    }
    Pending p = std::move(queue_.front());
    queue_.pop_front();
    lk.unlock();
    std::vector<Pod> out;
    const bool settled = resolve(p, out);
    lk.lock();
    ++p.tries;
    if (settled || p.tries >= opts_.attempts) {
      if (!settled) ++stats_.gave_up;
      queued_.erase(p.id);
      remember(p.id);
    } else {
      p.not_before = std::chrono::steady_clock::now() + opts_.retry_after;
      queue_.push_back(std::move(p));
    }
    if (!out.empty()) {
      for (auto& pod : out) answers_.push_back(std::move(pod));
      has_answers_ = true;
      const std::uint64_t one = 1;
      [[maybe_unused]] ssize_t w = ::write(wake_fd_, &one, sizeof one);
    }
  }
}

bool CriResolver::drain(State& state) {
  if (!has_answers_.load(std::memory_order_acquire)) return false;
  std::vector<Pod> work;
  {
    std::lock_guard<std::mutex> lk(mu_);
    work.swap(answers_);
    has_answers_ = false;
  }
  for (auto& p : work) state.upsert_pod(std::move(p));
  return !work.empty();
}

CriResolver::Stats CriResolver::stats() const {
  std::lock_guard<std::mutex> lk(mu_);
  Stats s = stats_;
  s.pending = queue_.size();
  return s;
}

}  // namespace vigil::state
