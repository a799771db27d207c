// An event source a test feeds by hand from any thread, as a plugin's or the
// sensor's would be fed: push() queues an event and writes the source's
// eventfd, so the runner's loop wakes for it; poll() hands over at most the
// budget and writes the eventfd again while more is queued.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include "engine/event/event.h"
#include "engine/source/source.h"

namespace vigil::support {

class HandedSource final : public source::EventSource {
 public:
  explicit HandedSource(std::string name = "plugin:test")
      : name_(std::move(name)), fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~HandedSource() override { close(fd_); }
  HandedSource(const HandedSource&) = delete;
  HandedSource& operator=(const HandedSource&) = delete;

  std::string_view name() const override { return name_; }
  int wait_fd() const override { return fd_; }

  void push(event::Event ev) {
    {
      std::lock_guard<std::mutex> l(mu_);
      q_.push_back(std::move(ev));
    }
    wake();
  }

  Result<std::size_t> poll(std::size_t budget, const Emit& emit) override {
    ++polls;
    std::uint64_t n = 0;
    (void)!read(fd_, &n, sizeof(n));
    std::deque<event::Event> got;
    {
      std::lock_guard<std::mutex> l(mu_);
      while (!q_.empty() && got.size() < budget) {
        got.push_back(std::move(q_.front()));
        q_.pop_front();
      }
      if (!q_.empty()) wake();
    }
    for (auto& e : got) emit(std::move(e));
    return got.size();
  }

  std::atomic<int> polls{0};  // how many times the runner polled it

 private:
  void wake() {
    std::uint64_t one = 1;
    (void)!write(fd_, &one, sizeof(one));
  }

  std::string name_;
  int fd_;
  std::mutex mu_;
  std::deque<event::Event> q_;
};

}  // namespace vigil::support
