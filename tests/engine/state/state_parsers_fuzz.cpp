// Fuzz target: every parser of the state component over hostile bytes — cgroup
// paths, mountinfo, /proc files, pod JSON, kubeconfig YAML, pod-resources
// protobuf and gRPC frames, NVIDIA driver files, passwd lines, and the
// allocation resolver. Besides not crashing, results must keep their
// invariants (a container id is 64 hex, a pod uid a dashed UUID, bounded sizes).
//
// Input layout: byte 0 selects nothing (all parsers see every input); the
// rest is the text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/state/cgroup.h"
#include "engine/state/gpu.h"
#include "engine/state/podresources.h"
#include "engine/state/pods.h"
#include "engine/state/procfs.h"
#include "engine/state/users.h"

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "state fuzz: %s\n", what);
  std::abort();
}

bool is_hex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vigil::state;
  std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto m = parse_cgroup_path(text)) {
    if (!is_hex64(m->id)) fail("container id is not 64 hex");
    if (!m->pod_uid.empty() && (m->pod_uid.size() != 36 || m->pod_uid[8] != '-')) {
      fail("pod uid is not a dashed UUID");
    }
    if (m->runtime.empty()) fail("container without a runtime");
  }
  if (auto mnt = find_cgroup2_mount(text); mnt && (mnt->empty() || (*mnt)[0] != '/')) {
    fail("cgroup2 mount point is not absolute");
  }
  if (auto p = cgroup_v2_path(text); p && (p->empty() || (*p)[0] != '/')) {
    fail("cgroup path is not absolute");
  }
  if (auto st = parse_proc_stat(text); st && st->comm.size() > 15) fail("comm longer than 15");
  (void)parse_proc_status(text);
  if (parse_cmdline(text).size() > kMaxArgs) fail("too many args");
  (void)parse_ns_link(text);
  (void)parse_boot_time_ns(text);

  if (auto pod = parse_pod_json(text)) {
    if (pod->uid.empty()) fail("pod without uid");
    if (pod->containers.size() > 3 * 64) fail("unbounded containers");
  }
  (void)k8s_config_from_kubeconfig(text, "/base");

  if (auto r = decode_list_pod_resources(text, 100); r && r->size() > 100) fail("unbounded entries");

  NvidiaInfo info;
  parse_proc_devices(text, &info);
  if (auto g = parse_gpu_information(text, "0000:00:00.0"); g && g->minor > kNvidiaMaxGpuMinor) {
    fail("GPU minor out of range");
  }
  info.gpus.push_back({"GPU-aaaa", "0000:01:00.0", 3, ""});
  PodContainer pc;
  pc.nvidia_visible_devices = std::string(text.substr(0, 4096));
  pc.gpu_devices.emplace_back(text.substr(0, 128));
  GpuAllocation a = resolve_allocation(pc, info);
  for (auto m : a.minors) {
    if (m > kNvidiaMaxGpuMinor) fail("allocated minor out of range");
  }
  (void)nvidia_node(1, 3, text, info);

  NameDb db;
  db.parse(text);
  return 0;
}
