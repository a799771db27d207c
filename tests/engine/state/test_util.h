// Helpers for the state tests: the replay-mode configuration, event
// builders, a listener that records what the state reports, and the python
// the stand-in kubelet needs. Fake /proc, cgroup v2 and /proc/driver/nvidia
// trees are built with support::TempDir (tests/support/temp_dir.h).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/event/event.h"
#include "engine/state/state.h"

namespace vigil::state::testing {

// A state that reads nothing of this machine: no live /proc, no passwd or
// group file (as in replay).
inline Config replay_config() {
  Config c;
  c.live = false;
  c.passwd_path = "";
  c.group_path = "";
  return c;
}

inline event::Event make_event(event::Type t, std::uint32_t pid, std::uint64_t ts = 1000) {
  event::Event ev;
  ev.hdr.type = t;
  ev.hdr.pid = pid;
  ev.hdr.tid = pid;
  ev.hdr.ts_ns = ts;
  ev.hdr.comm = "proc" + std::to_string(pid);
  return ev;
}

inline event::Event fork_event(std::uint32_t parent, std::uint32_t child, std::uint64_t ts = 1000) {
  event::Event ev = make_event(event::Type::kFork, parent, ts);
  event::ForkData fd;
  fd.child_pid = child;
  fd.child_tid = child;
  ev.data = fd;
  return ev;
}

inline event::Event exec_event(std::uint32_t pid, std::vector<std::string> argv, std::string exe,
                               std::uint64_t ts = 2000) {
  event::Event ev = make_event(event::Type::kExec, pid, ts);
  std::string base = exe.substr(exe.rfind('/') + 1);
  ev.hdr.comm = base.substr(0, 15);
  event::ExecData ed;
  ed.filename = exe;
  ed.exe = exe;
  ed.args = std::move(argv);
  ed.cwd = "/work";
  ev.data = ed;
  return ev;
}

inline event::Event exit_event(std::uint32_t pid, std::uint64_t ts = 3000) {
  event::Event ev = make_event(event::Type::kExit, pid, ts);
  ev.data = event::ExitData{};
  return ev;
}

inline event::IpAddr ipv4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  event::IpAddr ip;
  ip.family = 2;  // AF_INET
  ip.bytes[0] = a;
  ip.bytes[1] = b;
  ip.bytes[2] = c;
  ip.bytes[3] = d;
  return ip;
}

// Records everything the state reports, for determinism checks.
class RecordingListener : public StateListener {
 public:
  void on_process(const Process& p) override { processes.push_back(p); }
  void on_container(const Container& c) override { containers.push_back(c); }
  void on_pod(const Pod& p) override { pods.push_back(p); }
  void on_pod_removed(const std::string& uid) override { removed.push_back(uid); }
  void on_nvidia(const NvidiaInfo& i) override { nvidia.push_back(i); }
  std::vector<Process> processes;
  std::vector<Container> containers;
  std::vector<Pod> pods;
  std::vector<std::string> removed;
  std::vector<NvidiaInfo> nvidia;
};

}  // namespace vigil::state::testing
