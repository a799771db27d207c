// Runs the state parsers fuzz target (state_parsers_fuzz.cpp) without
// libFuzzer: seed inputs for every parser, then seeded random mutations of
// them. A violated invariant aborts with its name.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::vector<std::string> seeds() {
  const std::string id(64, 'a');
  return {
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5d0c2a9e_1f3b_4c6d_8e7f_"
      "9a0b1c2d3e4f.slice/cri-containerd-" +
          id + ".scope",
      "/kubepods/besteffort/pod5d0c2a9e-1f3b-4c6d-8e7f-9a0b1c2d3e4f/" + id,
      "/docker/" + id,
      "/machine.slice/libpod-" + id + ".scope/container",
      "30 22 0:26 / /sys/fs/cgroup rw shared:4 - cgroup2 cgroup2 rw\n",
      "0::/system.slice/x.service\n",
      "42 (a b) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0\n",
      "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nNSpid:\t5\t1\n",
      R"({"metadata":{"uid":"u","labels":{"a":"b"}},"spec":{"containers":[{"name":"c",)"
      R"("resources":{"limits":{"nvidia.com/gpu":"1"}},"env":[{"name":"NVIDIA_VISIBLE_DEVICES",)"
      R"("value":"0,GPU-aaaa"}]}]},"status":{"containerStatuses":[{"name":"c","containerID":"x://y"}]}})",
      "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\nclusters:\n"
      "- name: k\n  cluster: {server: 'https://h'}\nusers:\n- name: u\n  user: {token: t}\n",
      // ListPodResourcesResponse{pod_resources: [{name: p, namespace: n,
      // containers: [{name: c, devices: [{resource_name: r}]}]}]}
      std::string{'\x0a', '\x10', '\x0a', '\x01', 'p', '\x12', '\x01', 'n', '\x1a', '\x08', '\x0a', '\x01', 'c', '\x12',
                  '\x03', '\x0a', '\x01', 'r'},
      std::string("\x00\x00\x00\x00\x02hi", 7),
      "Character devices:\n195 nvidia\n234 nvidia-uvm\n",
      "GPU UUID: GPU-aaaa\nDevice Minor: 3\n",
      "MIG-GPU-aaaa/1/0,1:0,all,none,GPU-aaaa::2",
      "root:x:0:0::/root:/bin/sh\n",
  };
}

void run(const std::string& s) { LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()); }

TEST(StateParsersFuzz, Seeds) {
  for (const auto& s : seeds()) run(s);
}

TEST(StateParsersFuzz, SeededMutations) {
  std::mt19937 rng(20261122);
  const std::string special =
      std::string{'\0', '\n', '/', '-', '_', '.', ':', '[', ']', '{', '}', '"', '\\', '(', ')', '\xff', '\x80'};
  auto all = seeds();
  for (int iter = 0; iter < 20000; ++iter) {
    std::string s = all[rng() % all.size()];
    int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      std::size_t pos = rng() % s.size();
      switch (rng() % 4) {
        case 0: s[pos] = special[rng() % special.size()]; break;
        case 1: s.erase(pos, 1 + rng() % 8); break;
        case 2: s.insert(pos, 1, static_cast<char>(rng())); break;
        default: s = s.substr(0, pos); break;
      }
    }
    run(s);
  }
}

}  // namespace
