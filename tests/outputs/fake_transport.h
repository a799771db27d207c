// Test transports: a recording one whose answers the test scripts.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "outputs/transport.h"

namespace vigil::outputs::testing {

// Shared state so the test keeps access after the sink took ownership.
struct FakePeer {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Message> received;  // delivered, in order
  std::deque<SendResult> script;  // answers to give before answering ok
  bool down = false;              // answer kRetry while set
  bool stall = false;             // block in send() while set
  int calls = 0;

  std::size_t count() {
    std::lock_guard lk(mu);
    return received.size();
  }
  bool wait_for(std::size_t n, std::chrono::milliseconds t) {
    std::unique_lock lk(mu);
    return cv.wait_for(lk, t, [&] { return received.size() >= n; });
  }
  void set_down(bool d) {
    std::lock_guard lk(mu);
    down = d;
  }
  void set_stall(bool s) {
    {
      std::lock_guard lk(mu);
      stall = s;
    }
    cv.notify_all();
  }
};

class FakeTransport final : public Transport {
 public:
  explicit FakeTransport(std::shared_ptr<FakePeer> p) : p_(std::move(p)) {}
  SendResult send(std::span<const Message> batch) noexcept override {
    std::unique_lock lk(p_->mu);
    ++p_->calls;
    p_->cv.wait(lk, [&] { return !p_->stall; });
    if (p_->down) return SendResult::retry("peer down");
    if (!p_->script.empty()) {
      SendResult r = p_->script.front();
      p_->script.pop_front();
      for (std::size_t i = 0; i < std::min(r.delivered, batch.size()); ++i) p_->received.push_back(batch[i]);
      if (r.code != SendCode::kOk) {
        p_->cv.notify_all();
        return r;
      }
    }
    for (const auto& m : batch) p_->received.push_back(m);
    p_->cv.notify_all();
    return SendResult::ok(batch.size());
  }

 private:
  std::shared_ptr<FakePeer> p_;
};

}  // namespace vigil::outputs::testing
