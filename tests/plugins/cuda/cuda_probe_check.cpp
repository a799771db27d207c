// cuda_probe_check: loads the CUDA plugin through its C ABI and prints every
// event, with every field it extracts, as one JSON object per line, for a
// while. For trying the probes on a machine with a real driver:
//
//   sudo ./cuda_probe_check [--plugin PATH] [--config JSON] [--seconds N]
//
// (defaults: the plugin next to this build, "{}", 30 s). Start a CUDA program
// (python -c 'import torch; ...') before or while it runs: libcuda.so.1 is
// found in the program's /proc/PID/maps. Plugin log lines go to stderr; the
// exit status is 0 when the plugin ran, 1 when it could not load or failed.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/plugins/cuda/abi_client.h"

using vigil::cuda::test::AbiClient;
using vigil::cuda::test::Extracted;

int main(int argc, char** argv) {
  std::string plugin = VIGIL_CUDA_PLUGIN;
  std::string config = "{}";
  long seconds = 30;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--plugin" && i + 1 < argc) plugin = argv[++i];
    else if (a == "--config" && i + 1 < argc) config = argv[++i];
    else if (a == "--seconds" && i + 1 < argc) seconds = std::strtol(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: %s [--plugin PATH] [--config JSON] [--seconds N]\n", argv[0]);
      return 2;
    }
  }
  AbiClient p(plugin);
  if (!p.ok() || !p.init(config)) {
    for (const std::string& l : p.logs) std::fprintf(stderr, "%s\n", l.c_str());
    std::fprintf(stderr, "cuda_probe_check: %s\n", p.error().c_str());
    return 1;
  }
  std::size_t logged = 0;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::uint64_t events = 0;
  while (std::chrono::steady_clock::now() < end) {
    std::vector<Extracted> got;
    int rc = p.next(200, got);
    for (; logged < p.logs.size(); ++logged) std::fprintf(stderr, "%s\n", p.logs[logged].c_str());
    if (rc == VIGIL_RC_FAILURE) {
      std::fprintf(stderr, "cuda_probe_check: %s\n", p.error().c_str());
      return 1;
    }
    if (rc == VIGIL_RC_EOF) break;
    for (const Extracted& e : got) {
      nlohmann::json j;
      j["evt.name"] = e.name;
      j["evt.time"] = e.ts_ns;
      j["proc.pid"] = e.pid;
      j["thread.tid"] = e.tid;
      j["gpu_minor"] = e.gpu_minor;
      for (const auto& [k, v] : e.fields) std::visit([&j, &k](const auto& x) { j[k] = x; }, v);
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      ++events;
    }
    std::fflush(stdout);
  }
  std::fprintf(stderr, "cuda_probe_check: %llu events in %ld s\n", static_cast<unsigned long long>(events), seconds);
  return 0;
}
