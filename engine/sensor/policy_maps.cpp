#include "engine/sensor/policy_maps.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace vigil::sensor {

namespace {

Status map_error(const char* what, int err) {
  return Error::runtime(std::string("sensor: cannot update the prevention map ") + what + ": " + std::strerror(err));
}

vg_pol_comm comm_key(const std::string& comm) {
  vg_pol_comm k{};
  std::memcpy(k.comm, comm.data(), std::min(comm.size(), sizeof(k.comm) - 1));
  return k;
}

Status put_net(const PolicyMaps& m, const policy::NetEntry& e, std::uint64_t slots, int flags) {
  if (e.v6) {
    vg_pol_net6 k{};
    k.prefixlen = e.prefix;
    std::memcpy(k.addr, e.addr.data(), 16);
    if (bpf_map__update_elem(m.net6, &k, sizeof(k), &slots, sizeof(slots), flags) != 0)
      return map_error("pol_net6", errno);
  } else {
    vg_pol_net4 k{};
    k.prefixlen = e.prefix;
    std::memcpy(k.addr, e.addr.data(), 4);
    if (bpf_map__update_elem(m.net4, &k, sizeof(k), &slots, sizeof(slots), flags) != 0)
      return map_error("pol_net4", errno);
  }
  return {};
}

void delete_net(const PolicyMaps& m, const policy::NetEntry& e) {
  if (e.v6) {
    vg_pol_net6 k{};
    k.prefixlen = e.prefix;
    std::memcpy(k.addr, e.addr.data(), 16);
    bpf_map__delete_elem(m.net6, &k, sizeof(k), 0);
  } else {
    vg_pol_net4 k{};
    k.prefixlen = e.prefix;
    std::memcpy(k.addr, e.addr.data(), 4);
    bpf_map__delete_elem(m.net4, &k, sizeof(k), 0);
  }
}

// The entry's key alone (slots cleared), for set comparisons.
policy::NetEntry net_key(policy::NetEntry e) {
  e.slots = 0;
  return e;
}

}  // namespace

vg_pol_knobs policy_knobs(const policy::Tables& t) {
  vg_pol_knobs k{};
  k.device = t.hook_slots(policy::Hook::kDevice);
  k.net = t.hook_slots(policy::Hook::kNet);
  k.sock = t.hook_slots(policy::Hook::kSocket);
  k.exec = t.hook_slots(policy::Hook::kExec);
  for (std::size_t i = 0; i < t.slots.size(); ++i)
    if (t.slots[i].flags & VG_POLR_COMM) k.comm_slots |= 1ull << i;
  for (std::size_t i = 0; i < t.slots.size(); ++i)
    if (t.slots[i].flags & VG_POLR_EXE) k.exe_slots |= 1ull << i;
  k.uvm_major = t.uvm_major;
  k.caps_major = t.caps_major;
  k.nvlink_major = t.nvlink_major;
  k.nvswitch_major = t.nvswitch_major;
  return k;
}

std::map<KernelBuildId, std::uint64_t> kernel_build_ids(const policy::Tables& t) {
  constexpr std::string_view kPrefix = "buildid:";
  std::map<KernelBuildId, std::uint64_t> out;
  for (const auto& [id, slots] : t.exe_ids) {
    if (!id.starts_with(kPrefix)) continue;
    const std::string_view hex = std::string_view(id).substr(kPrefix.size());
    if (hex.empty() || hex.size() % 2 != 0 || hex.size() > 2 * BPF_BUILD_ID_SIZE) continue;
    KernelBuildId k{};
    bool ok = true;
    for (std::size_t i = 0; ok && i < hex.size() / 2; ++i) {
      auto r = std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, k[i], 16);
      ok = r.ec == std::errc{} && r.ptr == hex.data() + 2 * i + 2;
    }
    if (ok) out[k] |= slots;
  }
  return out;
}

std::uint64_t build_id_slots(const policy::Tables& t) {
  std::uint64_t slots = 0;
  for (const auto& [k, s] : kernel_build_ids(t)) slots |= s;
  return slots;
}

Status write_policy(const PolicyMaps& m, const policy::Tables& old, const policy::Tables& next) {
  if (next.slots.size() > policy::kMaxSlots)
    return Error::bad_input("prevention: " + std::to_string(next.slots.size()) + " enforced rules, at most " +
                            std::to_string(policy::kMaxSlots));
  if (next.comms.size() > policy::kMaxComms)
    return Error::bad_input("prevention: " + std::to_string(next.comms.size()) + " program names, at most " +
                            std::to_string(policy::kMaxComms));
  if (next.ports.size() > policy::kMaxPorts)
    return Error::bad_input("prevention: " + std::to_string(next.ports.size()) + " ports, at most " +
                            std::to_string(policy::kMaxPorts));
  if (next.nets.size() > policy::kMaxNets)
    return Error::bad_input("prevention: " + std::to_string(next.nets.size()) + " destinations, at most " +
                            std::to_string(policy::kMaxNets));
  if (next.exe_ids.size() > policy::kMaxExeIds)
    return Error::bad_input("prevention: " + std::to_string(next.exe_ids.size()) + " program identities, at most " +
                            std::to_string(policy::kMaxExeIds));
  // The containers' entries name slots of `old`: out, until the caller
  // makes them again for `next` (meanwhile nothing is refused).
  if (!(old == next)) {
    std::uint64_t key = 0;
    std::vector<std::uint64_t> ids;
    for (int err = bpf_map__get_next_key(m.cgroup, nullptr, &key, sizeof(key)); err == 0 && ids.size() < 65536;
         err = bpf_map__get_next_key(m.cgroup, &key, &key, sizeof(key)))
      ids.push_back(key);
    for (std::uint64_t id : ids) bpf_map__delete_elem(m.cgroup, &id, sizeof(id), 0);
    vg_pol_exe_key ek{};
    std::vector<vg_pol_exe_key> files;
    for (int err = bpf_map__get_next_key(m.exe, nullptr, &ek, sizeof(ek));
         err == 0 && files.size() < 2 * policy::kMaxExes; err = bpf_map__get_next_key(m.exe, &ek, &ek, sizeof(ek)))
      files.push_back(ek);
    for (const vg_pol_exe_key& k : files) bpf_map__delete_elem(m.exe, &k, sizeof(k), 0);
  }
  for (std::uint32_t i = 0; i < policy::kMaxSlots; ++i) {
    vg_pol_rule r{};
    if (i < next.slots.size()) {
      const policy::Slot& s = next.slots[i];
      r.hook = static_cast<std::uint32_t>(s.hook);
      r.flags = s.flags;
      r.kinds = s.kinds;
      r.families = s.families;
      r.types = s.types;
    }
    if (bpf_map__update_elem(m.rules, &i, sizeof(i), &r, sizeof(r), BPF_ANY) != 0) return map_error("pol_rules", errno);
  }
  for (const auto& [comm, slots] : next.comms) {
    const vg_pol_comm k = comm_key(comm);
    if (bpf_map__update_elem(m.comm, &k, sizeof(k), &slots, sizeof(slots), BPF_ANY) != 0)
      return map_error("pol_comm", errno);
  }
  for (const auto& [port, slots] : next.ports) {
    const std::uint32_t k = port;
    if (bpf_map__update_elem(m.ports, &k, sizeof(k), &slots, sizeof(slots), BPF_ANY) != 0)
      return map_error("pol_ports", errno);
  }
  for (const auto& [port, slots] : old.ports) {
    if (next.ports.count(port)) continue;
    const std::uint32_t k = port;
    bpf_map__delete_elem(m.ports, &k, sizeof(k), 0);
  }
  // The build-ids the kernel reads at exec: `next`'s written, `old`'s others
  // removed (their count is bounded by kMaxExeIds, the map's size).
  const auto next_ids = kernel_build_ids(next);
  for (const auto& [id, slots] : next_ids)
    if (bpf_map__update_elem(m.buildid, id.data(), id.size(), &slots, sizeof(slots), BPF_ANY) != 0)
      return map_error("pol_buildid", errno);
  for (const auto& [id, slots] : kernel_build_ids(old))
    if (!next_ids.count(id)) bpf_map__delete_elem(m.buildid, id.data(), id.size(), 0);
  for (const auto& [comm, slots] : old.comms) {
    if (next.comms.count(comm)) continue;
    const vg_pol_comm k = comm_key(comm);
    bpf_map__delete_elem(m.comm, &k, sizeof(k), 0);
  }
  // Destinations: the whole trie is rebuilt from `next` (the learnt ones
  // are re-added by the caller, whose slots may have moved).
  std::set<policy::NetEntry> keep;
  std::map<policy::NetEntry, std::uint64_t> by_key;
  for (const policy::NetEntry& e : next.nets) by_key[net_key(e)] |= e.slots;
  for (const auto& [key, own] : by_key) {
    // A longer prefix hides the shorter ones covering it in an LPM trie: it
    // carries their slots too.
    std::uint64_t slots = own;
    for (int p = 0; p < key.prefix; ++p) {
      policy::NetEntry cover = key;
      cover.prefix = static_cast<std::uint8_t>(p);
      for (std::size_t b = 0; b < cover.addr.size(); ++b) {
        const int keep_bits = std::clamp(p - static_cast<int>(b) * 8, 0, 8);
        cover.addr[b] &= static_cast<std::uint8_t>(0xff00 >> keep_bits);
      }
      if (auto it = by_key.find(cover); it != by_key.end()) slots |= it->second;
    }
    if (Status st = put_net(m, key, slots, BPF_ANY); !st) return st;
    keep.insert(key);
  }
  for (const policy::NetEntry& e : old.nets)
    if (!keep.count(net_key(e))) delete_net(m, e);
  // Destinations learnt from DNS answers name `old`'s slots: when the slots
  // moved they could stand for another rule now, so they go (the next
  // answers give them again; meanwhile they are not refused).
  if (!(old == next)) {
    for (const bool v6 : {false, true}) {
      std::vector<policy::NetEntry> learnt;
      vg_pol_net6 k6{};
      vg_pol_net4 k4{};
      void* key = v6 ? static_cast<void*>(&k6) : static_cast<void*>(&k4);
      const std::size_t size = v6 ? sizeof(k6) : sizeof(k4);
      bpf_map* map = v6 ? m.net6 : m.net4;
      for (int err = bpf_map__get_next_key(map, nullptr, key, size); err == 0 && learnt.size() < 2 * policy::kMaxNets;
           err = bpf_map__get_next_key(map, key, key, size)) {
        policy::NetEntry e;
        e.v6 = v6;
        e.prefix = static_cast<std::uint8_t>(v6 ? k6.prefixlen : k4.prefixlen);
        std::memcpy(e.addr.data(), v6 ? k6.addr : k4.addr, v6 ? 16 : 4);
        if (!keep.count(e)) learnt.push_back(e);
      }
      for (const policy::NetEntry& e : learnt) delete_net(m, e);
    }
  }
  return {};
}

Status set_policy_cgroup(const PolicyMaps& m, std::uint64_t cgroup_id, const policy::CgroupEntry* e) {
  if (!e) {
    bpf_map__delete_elem(m.cgroup, &cgroup_id, sizeof(cgroup_id), 0);
    return {};
  }
  vg_pol_cg v{};
  v.rules = e->slots;
  for (std::size_t i = 0; i < 4; ++i) v.gpu_minors[i] = e->gpu_minors[i];
  v.gpu_flags = e->gpu_any ? VG_POL_GPU_ANY : 0;
  if (bpf_map__update_elem(m.cgroup, &cgroup_id, sizeof(cgroup_id), &v, sizeof(v), BPF_ANY) != 0)
    return map_error("pol_cgroup", errno);
  return {};
}

Status add_policy_net(const PolicyMaps& m, const policy::NetEntry& e) {
  std::uint64_t slots = e.slots;
  std::uint64_t have = 0;
  bool found = false;
  if (e.v6) {
    vg_pol_net6 k{};
    k.prefixlen = e.prefix;
    std::memcpy(k.addr, e.addr.data(), 16);
    found = bpf_map__lookup_elem(m.net6, &k, sizeof(k), &have, sizeof(have), 0) == 0;
  } else {
    vg_pol_net4 k{};
    k.prefixlen = e.prefix;
    std::memcpy(k.addr, e.addr.data(), 4);
    found = bpf_map__lookup_elem(m.net4, &k, sizeof(k), &have, sizeof(have), 0) == 0;
  }
  // An LPM lookup returns the longest entry covering the address, whose
  // slots already hold those of the entries covering it (write_policy): a
  // longer entry hides the shorter ones, so it must carry their slots.
  if (found) slots |= have;
  return put_net(m, e, slots, BPF_ANY);
}

Status add_policy_exe(const PolicyMaps& m, const policy::ExeEntry& e) {
  vg_pol_exe_key k{};
  k.ino = e.ino;
  k.dev = e.dev;
  vg_pol_exe_val v{};
  v.slots = e.slots;
  v.ctime_ns = e.ctime_ns;
  vg_pol_exe_val have{};
  if (bpf_map__lookup_elem(m.exe, &k, sizeof(k), &have, sizeof(have), 0) == 0 && have.ctime_ns == e.ctime_ns)
    v.slots |= have.slots;
  if (bpf_map__update_elem(m.exe, &k, sizeof(k), &v, sizeof(v), BPF_ANY) != 0) return map_error("pol_exe", errno);
  return {};
}

std::vector<std::uint64_t> policy_refusals(const PolicyMaps& m) {
  std::vector<std::uint64_t> out(policy::kMaxSlots, 0);
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return out;
  std::vector<std::uint64_t> per(static_cast<std::size_t>(ncpu));
  for (std::uint32_t i = 0; i < policy::kMaxSlots; ++i) {
    if (bpf_map__lookup_elem(m.refusals, &i, sizeof(i), per.data(), per.size() * sizeof(std::uint64_t), 0) != 0)
      continue;
    for (std::uint64_t v : per) out[i] += v;
  }
  return out;
}

}  // namespace vigil::sensor
