#include "engine/agent/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace vigil::agent {

Progress::Progress() : on_(isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}

void Progress::update(std::uint64_t done, std::uint64_t total, std::uint64_t events) {
  if (!on_) return;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double pct = total ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 0;
  int bars = static_cast<int>(pct / 100.0 * 30);
  std::string bar(static_cast<std::size_t>(std::clamp(bars, 0, 30)), '#');
  bar.resize(30, ' ');
  std::fprintf(stderr, "\r[%s] %5.1f%%  %llu events  %.0f events/s ", bar.c_str(), pct,
               static_cast<unsigned long long>(events), secs > 0 ? static_cast<double>(events) / secs : 0.0);
  shown_ = true;
}

void Progress::done() {
  if (shown_) std::fputc('\n', stderr);
}

}  // namespace vigil::agent
