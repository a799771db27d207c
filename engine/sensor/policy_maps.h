// Prevention's maps as the sensor keeps them (internal to engine/sensor):
// the enforced rules' slots, comm sets and destination sets
// (engine/policy/tables.h) written into bpf/progs/policy.bpf.h's maps, the
// containers' entries, and the refusal counts read back.
#pragma once

#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "bpf/shared/events.h"
#include "engine/policy/tables.h"
#include "engine/util/result.h"

namespace vigil::sensor {

struct PolicyMaps {
  bpf_map* rules = nullptr;
  bpf_map* comm = nullptr;
  bpf_map* ports = nullptr;
  bpf_map* net4 = nullptr;
  bpf_map* net6 = nullptr;
  bpf_map* cgroup = nullptr;
  bpf_map* refusals = nullptr;
  bpf_map* exe = nullptr;
  bpf_map* buildid = nullptr;
};

// The knobs for `t` (slots per hook, the comm slots, the NVIDIA majors).
vg_pol_knobs policy_knobs(const policy::Tables& t);

// The denied build-ids the kernel reads at exec (pol_buildid): the
// "buildid:<hex>" identities of `t` in the kernel's form (the note's bytes,
// zero-padded to BPF_BUILD_ID_SIZE), with their slots. A build-id longer than
// the kernel keeps is left to the files identified in user space (pol_exe).
using KernelBuildId = std::array<std::uint8_t, BPF_BUILD_ID_SIZE>;
std::map<KernelBuildId, std::uint64_t> kernel_build_ids(const policy::Tables& t);
// The slots that have one: the exec program reads a program's build-id only
// for them (vg_pol_buildid_slots).
std::uint64_t build_id_slots(const policy::Tables& t);

// Moves the maps from `old` to `next`: the caller has turned the knobs off
// (every hook then refuses nothing); when they differ the containers' entries
// (which name `old`'s slots) and the files denied by identity are removed,
// for the caller to make again;
// slots, comms, destinations and build-ids of `next` are written and those
// only `old` had removed. `live_nets` (destinations
// learnt since, e.g. from DNS answers) are kept. Bad input (too many slots,
// comms or destinations) is an error before anything is written.
Status write_policy(const PolicyMaps& m, const policy::Tables& old, const policy::Tables& next);

// A container cgroup's entry (null: removed). A full map is an error: the
// container is then never refused (fail open), and the caller counts it.
Status set_policy_cgroup(const PolicyMaps& m, std::uint64_t cgroup_id, const policy::CgroupEntry* e);

// A destination learnt while running (an address a DNS answer gave a name a
// rule denies): its slots are or'ed into the entry already there.
Status add_policy_net(const PolicyMaps& m, const policy::NetEntry& e);

// A program file denied by identity: its slots are or'ed into the entry
// already there for the same change time (a file changed since is replaced).
// A full map is an error: the file's later execs are not killed at exec.
Status add_policy_exe(const PolicyMaps& m, const policy::ExeEntry& e);

// Refusals per slot (kMaxSlots entries), summed over the CPUs.
std::vector<std::uint64_t> policy_refusals(const PolicyMaps& m);

}  // namespace vigil::sensor
