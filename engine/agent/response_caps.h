// Whether vigil can carry out its kill and freeze responses on this node
// (docs/prevention.md, "Responses"): checked once at start and said on the
// "prevention:" log line and by vigil_prevention_response_capable, so that an
// operator sees before an alert that the DaemonSet lacks what the rules ask
// for (the default lacks both; deploy/responses/ adds them).
//
//   ResponseCaps c = check_response_caps(ResponseCapsProbe{});
//   log.info("prevention: ...; {}", describe(c));
//
// kill: CAP_KILL in the effective set (/proc/self/status CapEff); without it
// only processes of vigil's own user (root) can be signalled.
// freeze: every cgroup hierarchy freeze may write (the cgroup v2 mount and,
// on a hybrid host, the v1 freezer's: FreezeRoots) is mounted read-write.
// (Their root directories are mode 0555: what freeze writes are the
// cgroups' own files, root's, so the mount's flag is what decides.)
//
// Pure but for the files it is pointed at; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::agent {

struct ResponseCaps {
  bool kill = false;
  bool freeze = false;
  std::string kill_why;    // when !kill: what is missing
  std::string freeze_why;  // when !freeze: what is missing
};

// Where the check looks: this process's status file and the cgroup mounts
// freeze writes. Tests point them at their own files.
struct ResponseCapsProbe {
  std::string proc_status = "/proc/self/status";
  std::vector<std::string> cgroup_mounts;  // with discover: the FreezeRoots of this host
  bool discover = true;
};

// The effective capability mask of a /proc/<pid>/status text (its CapEff
// line, hex); nullopt when there is none or it does not parse.
std::optional<std::uint64_t> effective_capabilities(std::string_view status);

ResponseCaps check_response_caps(const ResponseCapsProbe& probe);

// "responses kill: yes, freeze: no (/sys/fs/cgroup is read-only)".
std::string describe(const ResponseCaps& c);

}  // namespace vigil::agent
