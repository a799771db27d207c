// The progress bar of `vigil replay` on stderr, when stderr is a terminal.
#pragma once

#include <chrono>
#include <cstdint>

namespace vigil::agent {

class Progress {
 public:
  Progress();
  void update(std::uint64_t done, std::uint64_t total, std::uint64_t events);
  void done();

 private:
  bool on_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace vigil::agent
