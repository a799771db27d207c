// Helpers of the sensor integration tests: open a sensor, record what it
// reports, run code in a child process.
#pragma once

#include <poll.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/sensor/sensor.h"
#include "tests/support/process.h"
#include "tests/support/skip.h"
#include "tests/support/temp_dir.h"

namespace vigil::sensor {

using event::Event;
using event::Type;
using support::Child;

#define REQUIRE_ROOT() VIGIL_SKIP_UNLESS_ROOT("integration test needs root (loads eBPF programs)")

inline std::unique_ptr<Sensor> open_sensor(Config cfg) {
  auto s = Sensor::open(cfg);
  if (!s) {
    ADD_FAILURE() << s.error().message;
    return nullptr;
  }
  return std::move(*s);
}

// The syscall tests run twice: with the arguments read at sys_exit from the
// saved registers (the default where the kernel has bpf_task_pt_regs), and
// with the sys_enter/sys_exit pairs older kernels use.
class SyscallArgs : public ::testing::TestWithParam<bool> {};

// What the runner does for one source, for tests that drive it alone: waits
// up to timeout_ms for its wait_fd(), then polls it. Returns the number of
// events, or -1 after an error (reported to gtest).
inline int wait_and_poll(source::EventSource& s, int timeout_ms, const source::EventSource::Emit& emit) {
  pollfd p{s.wait_fd(), POLLIN, 0};
  if (p.fd >= 0 && ::poll(&p, 1, timeout_ms) < 0 && errno != EINTR) {
    ADD_FAILURE() << "poll: " << std::strerror(errno);
    return -1;
  }
  auto n = s.poll(4096, emit);
  if (!n) {
    ADD_FAILURE() << s.name() << ": " << n.error().message;
    return -1;
  }
  return static_cast<int>(*n);
}

// Keeps every event polled, so tests can look for several events in any
// order (the ring buffer orders events per CPU only).
class Recorder {
 public:
  explicit Recorder(source::EventSource& s) : s_(s) {}
  // Polls until an event accepted by `pred` has been seen or the deadline passes.
  std::optional<Event> wait_for(const std::function<bool(const Event&)>& pred, int ms = 5000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (true) {
      for (const auto& e : seen_)
        if (pred(e)) return e;
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      if (wait_and_poll(s_, 100, [&](Event&& ev) { seen_.push_back(std::move(ev)); }) < 0) return std::nullopt;
    }
  }

  // Every connect event of process `pid`, as `describe` writes it, in order:
  // after `settle_ms` more for anything late (or repeated).
  std::vector<std::string> connects_of(std::uint32_t pid,
                                       const std::function<std::string(const event::ConnectData&)>& describe,
                                       int settle_ms = 300) {
    wait_for([](const Event&) { return false; }, settle_ms);
    std::vector<std::string> out;
    for (const auto& e : seen_) {
      auto* c = e.as<event::ConnectData>();
      if (c && e.hdr.pid == pid) out.push_back(describe(*c));
    }
    return out;
  }

  // Every event of process `pid` seen so far, after `settle_ms` more.
  std::vector<Event> events_of(std::uint32_t pid, int settle_ms = 300) {
    wait_for([](const Event&) { return false; }, settle_ms);
    std::vector<Event> out;
    for (const auto& e : seen_)
      if (e.hdr.pid == pid) out.push_back(e);
    return out;
  }

 private:
  source::EventSource& s_;
  std::vector<Event> seen_;
};

// A stand-in NVIDIA node in `dir`: a character device named `name` with the
// device numbers of `like` (/dev/null's driver refuses every ioctl with
// ENOTTY, and so does /dev/zero's). Returns its path, "" (with a test
// failure) when it cannot be made.
inline std::string make_standin_node(const support::TempDir& dir, const std::string& name = "nvidia0",
                                     const char* like = "/dev/null") {
  struct stat st {};
  std::string path = dir.path() + "/" + name;
  if (stat(like, &st) != 0 || mknod(path.c_str(), S_IFCHR | 0666, st.st_rdev) != 0) {
    ADD_FAILURE() << "cannot make the stand-in node " << path << ": " << std::strerror(errno);
    return "";
  }
  return path;
}

// Runs fn in a forked child; returns its pid after it exited.
inline pid_t in_child(const std::function<int()>& fn) {
  Child c = Child::run(fn);
  c.wait();
  return c.pid();
}

}  // namespace vigil::sensor
