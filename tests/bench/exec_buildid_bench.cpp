// What the exec program's build-id read costs (docs/performance.md): the
// run time of vg_sched_exec, from the kernel's BPF statistics, over execs in
// a stand-in pod's cgroup with an enforced exec rule, in three set-ups:
//   none     no enforced exec rule (the hook's slots are clear);
//   sha256   a rule denying a SHA-256 (pol_exe is looked up: no build-id read);
//   buildid  a rule denying a build-id (pol_exe, then the build-id read for a
//            program that starts in its own code).
// Each for a statically linked program (the build-id is read) and a dynamic
// one (it starts in ld.so: the entry-point test ends the work). Nothing is
// denied: the listed identities are no program's. Set-ups alternate by round.
//
//   sudo build/bench/exec_buildid_bench [ROUNDS] [EXECS] [STATIC] [DYNAMIC]
//
// Needs root, cgroup v2 and a built tree with tests (the stand-in pod cgroup).
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bpf/shared/events.h"
#include "engine/sensor/sensor.h"
#include "tests/support/cgroup.h"
#include "tests/support/process.h"

namespace {

using vigil::policy::Tables;

struct Stats {
  unsigned long long ns = 0, runs = 0;
};

// The newest loaded program named vg_sched_exec (the sensor just loaded it).
Stats exec_prog_stats() {
  Stats best;
  __u32 id = 0, best_id = 0;
  while (bpf_prog_get_next_id(id, &id) == 0) {
    const int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) continue;
    bpf_prog_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && std::strcmp(info.name, "vg_sched_exec") == 0 && id > best_id) {
      best_id = id;
      best = {info.run_time_ns, info.run_cnt};
    }
    close(fd);
  }
  return best;
}

Tables tables_for(const std::string& mode) {
  Tables t;
  if (mode == "none") return t;
  t.slots.push_back({.hook = vigil::policy::Hook::kExec, .flags = VG_POLR_EXE});
  t.exe_ids[mode == "sha256" ? "sha256:" + std::string(64, '0') : "buildid:" + std::string(40, '0')] = 1;
  return t;
}

// ns per run of vg_sched_exec over `execs` execs of `prog` in the pod.
double measure(vigil::sensor::Sensor& s, const vigil::support::PodCgroup& cg, const std::string& prog, int execs) {
  (void)s;
  const Stats a = exec_prog_stats();
  for (int i = 0; i < execs; ++i) {
    vigil::support::Child c = vigil::support::Child::spawn({prog}, {.cgroup = cg.scope()});
    const int st = c.wait();
    if (st != 0) {
      std::fprintf(stderr, "exec_buildid_bench: %s ended %s\n", prog.c_str(), vigil::support::Child::what(st).c_str());
      std::exit(1);
    }
  }
  const Stats b = exec_prog_stats();
  return b.runs > a.runs ? static_cast<double>(b.ns - a.ns) / static_cast<double>(b.runs - a.runs) : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const int execs = argc > 2 ? std::atoi(argv[2]) : 1000;
  const std::string static_prog = argc > 3 ? argv[3] : "build/tests/engine/sensor/vigil_test_static_prog";
  const std::string dynamic_prog = argc > 4 ? argv[4] : "/bin/true";
  // BPF_ENABLE_STATS: run-time statistics on while the descriptor is open.
  union bpf_attr attr {};
  attr.enable_stats.type = BPF_STATS_RUN_TIME;
  const int stats_fd = static_cast<int>(syscall(__NR_bpf, BPF_ENABLE_STATS, &attr, sizeof(attr)));
  if (stats_fd < 0) {
    std::perror("exec_buildid_bench: BPF_ENABLE_STATS");
    return 1;
  }
  vigil::support::PodCgroup cg("be0c0000-1111-4222-8333-000000000b1d", std::string(64, 'b'));
  if (!cg.ok()) {
    std::fprintf(stderr, "exec_buildid_bench: no pod cgroup: %s\n", cg.error().c_str());
    return 1;
  }
  const std::vector<std::string> modes = {"none", "sha256", "buildid"};
  std::map<std::string, std::vector<double>> st, dy;
  for (int r = 0; r < rounds; ++r) {
    for (const std::string& mode : modes) {
      vigil::sensor::Config cfg;
      cfg.event_types = {vigil::event::Type::kExec};
      cfg.policy = tables_for(mode);
      auto s = vigil::sensor::Sensor::open(cfg);
      if (!s) {
        std::fprintf(stderr, "exec_buildid_bench: %s\n", s.error().message.c_str());
        return 1;
      }
      const vigil::policy::CgroupEntry entry{.slots = 1};
      if (!cfg.policy.slots.empty() && !(*s)->set_policy_cgroup(cg.id(), &entry)) return 1;
      // The ring buffer is not read: records beyond its room are dropped,
      // which the exec program's work before the submit does not depend on.
      st[mode].push_back(measure(**s, cg, static_prog, execs));
      dy[mode].push_back(measure(**s, cg, dynamic_prog, execs));
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("| exec rule in the pod | static program (ns/run) | ×none | dynamic program (ns/run) | ×none |\n");
  std::printf("|---|---|---|---|---|\n");
  for (const std::string& mode : modes)
    std::printf("| %s | %.0f | ×%.2f | %.0f | ×%.2f |\n", mode.c_str(), median(st[mode]),
                median(st[mode]) / median(st["none"]), median(dy[mode]), median(dy[mode]) / median(dy["none"]));
  std::printf("(vg_sched_exec run time, median of %d rounds of %d execs each)\n", rounds, execs);
  close(stats_fd);
  return 0;
}
