// What the end-to-end tests of `vigil run` add to the shared rigs of
// tests/support/: `Vigil` (the vigil binary of this build as a child),
// unique program names, and the skip when not root. The rigs themselves
// (temporary directories, kubelet-style cgroups, child processes, the
// Kubernetes API stand-in) are tests/support's; every one is undone by a
// destructor, so a failed assertion leaves no cgroup, process or file behind.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/cgroup.h"
#include "tests/support/k8s_stub.h"
#include "tests/support/process.h"
#include "tests/support/skip.h"
#include "tests/support/temp_dir.h"
#include "tests/support/vigil_process.h"

namespace vigil::e2e {

using json = nlohmann::json;
using namespace std::chrono_literals;

using support::Child;
using support::K8sStub;
using support::PodCgroup;
using support::read_file;
using support::SpawnOptions;

#define VIGIL_E2E_REQUIRE_ROOT()                                            \
  VIGIL_SKIP_UNLESS_ROOT(                                                   \
      "end-to-end test of `vigil run` needs root (it loads eBPF programs, " \
      "makes cgroups and device nodes)")

// A unique short name (<= 15 bytes, the kernel's comm limit) for a program copy.
inline std::string unique_name(const std::string& role) {
  static std::atomic<int> counter{0};
  std::string n = "e2" + role + std::to_string(::getpid() % 100000) + "x" + std::to_string(counter++);
  return n.substr(0, 15);
}

// An alert's output field as text ("<missing>" where the alert has none).
inline std::string field(const json& alert, const std::string& name) {
  const json& f = alert.at("output_fields");
  if (!f.contains(name)) return "<missing>";
  return f[name].is_string() ? f[name].get<std::string>() : f[name].dump();
}

// Does the alert come from one of `rules` and name `proc_name` as proc.name?
template <class Rules>
bool alert_of(const json& a, const Rules& rules, const std::string& proc_name) {
  bool ours = false;
  for (const auto& r : rules) ours = ours || a.value("rule", "") == r;
  const json& f = a.at("output_fields");
  return ours && f.contains("proc.name") && f["proc.name"] == proc_name;
}

// A temporary directory named vigil-e2e-XXXXXX.
class TempDir : public support::TempDir {
 public:
  TempDir() : support::TempDir("vigil-e2e") {}
};

// The vigil binary of this build (VIGIL_BINARY) as a child process.
class Vigil : public support::VigilProcess {
 public:
  Vigil() : VigilProcess(VIGIL_BINARY) {}
};

}  // namespace vigil::e2e
