#include "engine/agent/parts.h"

#include <cerrno>
#include <cstring>

namespace vigil::agent {
namespace {

// One row per part of docs/install.md, "Privileges" (measured on a 6.x kernel
// with reduced capability sets; the table says how).
constexpr PartInfo kParts[] = {
    {"bpf", "CAP_BPF+CAP_PERFMON (or CAP_SYS_ADMIN); /sys/kernel/btf, /sys/kernel/tracing",
     "no process, file, syscall or GPU ioctl events: the rules on them do not fire", true},
    {"bpf_cgroup", "CAP_BPF+CAP_NET_ADMIN (or CAP_SYS_ADMIN); cgroup v2 at /sys/fs/cgroup",
     "no DNS answers, no connection payloads and no UDP send destinations (TCP connects still come "
     "from the connect tracepoint)",
     false},
    {"kmsg", "CAP_SYSLOG (kernel.dmesg_restrict=1); /dev/kmsg", "GPU Xid errors from the kernel log are not seen",
     true},
    {"procfs", "CAP_SYS_PTRACE+CAP_DAC_READ_SEARCH; the host's /proc (hostPID)",
     "the executable path, cwd and open fds (GPU nodes, sockets) of processes older than vigil stay "
     "unknown",
     false},
    {"gpu_inventory", "/proc/driver/nvidia",
     "GPU device nodes are not matched to GPU UUIDs, and allocations by UUID stay unresolved", false},
    {"k8s", "a service-account token that may list and watch pods (no capability)", "k8s.* fields stay empty", false},
    {"pod_resources", "/var/lib/kubelet/pod-resources/kubelet.sock",
     "the kubelet's GPU assignments are not seen: a pod's GPUs come from its spec only", false},
    {"cri", "the container runtime's CRI socket (/run/containerd/containerd.sock or /run/crio/crio.sock)",
     "a new container's pod is named only once the API server announces it (and not while it is away)", false},
};

bool is_event_source(const runtime::PartState& p) {
  if (std::string_view(p.name).starts_with("plugin:")) return true;
  const PartInfo* info = part_info(p.name);
  return info && info->event_source;
}

}  // namespace

const PartInfo* part_info(std::string_view name) {
  for (const PartInfo& p : kParts) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string part_off_line(std::string_view name, std::string_view why_off) {
  std::string line = "part " + std::string(name) + " off: " + std::string(why_off);
  if (const PartInfo* info = part_info(name)) line += "; " + std::string(info->without);
  return line;
}

void record_part(runtime::Parts& parts, spdlog::logger& log, std::string_view name, bool on, std::string why_off,
                 bool warn) {
  const PartInfo* info = part_info(name);
  if (!on) log.log(warn ? spdlog::level::warn : spdlog::level::info, "{}", part_off_line(name, why_off));
  parts.set({std::string(name), on, info ? std::string(info->needs) : std::string(), on ? std::string() : why_off});
}

std::string parts_off(const std::vector<runtime::PartState>& parts) {
  std::string out;
  for (const runtime::PartState& p : parts) {
    if (!p.on) out += (out.empty() ? "" : ", ") + p.name;
  }
  return out;
}

Status require_an_event_source(const std::vector<runtime::PartState>& parts) {
  std::string why;
  for (const runtime::PartState& p : parts) {
    if (!is_event_source(p)) continue;
    if (p.on) return {};
    why += (why.empty() ? "" : "; ") + ("part " + p.name + " off: " + p.why_off);
  }
  return Error::runtime("no event source can run, so vigil would see nothing" +
                        (why.empty() ? std::string() : ": " + why));
}

std::string open_failure(std::string_view path, int err, std::string_view mount_hint, util::CapSet have,
                         std::initializer_list<util::Cap> caps) {
  std::string out = "cannot open " + std::string(path) + " (" + util::errno_name(err) + ")";
  switch (err) {
    case ENOENT:
    case ENODEV:
    case ENXIO:
    case ENOTDIR:
      if (!mount_hint.empty()) out += ": " + std::string(mount_hint);
      break;
    case EPERM:
    case EACCES:
      if (std::string m = util::missing_caps(have, caps); !m.empty()) {
        out += ": needs " + m;
      } else {
        out += ": " + std::string(std::strerror(err));
      }
      break;
    default: out += ": " + std::string(std::strerror(err));
  }
  return out;
}

std::string procfs_off(util::CapSet have) {
  using util::Cap;
  const bool ptrace = have.has(Cap::kSysPtrace);
  const bool search = have.has(Cap::kDacReadSearch);
  if (ptrace && search) return "";
  std::string m = util::missing_caps(have, {Cap::kSysPtrace, Cap::kDacReadSearch});
  std::string lost = !ptrace ? "/proc/<pid>/exe, cwd and fd links of other processes"
                             : "/proc/<pid>/fd lists and environ of other users' processes";
  return "cannot read " + lost + " without " + m;
}

}  // namespace vigil::agent
