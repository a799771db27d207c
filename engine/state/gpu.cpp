#include "engine/state/gpu.h"

#include <dirent.h>

#include <algorithm>
#include <charconv>

#include "engine/state/procfs.h"
#include "engine/util/parse_number.h"

namespace vigil::state {
namespace {

constexpr std::size_t kMaxGpus = 256;
constexpr std::size_t kMaxInfoBytes = 64 * 1024;
constexpr std::size_t kMaxDeviceIds = 256;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

template <typename T>
bool parse_uint(std::string_view s, T* out) {
  return util::parse_whole(trim(s), out);
}

template <typename F>
void for_each_line(std::string_view text, F&& f) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    f(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::optional<std::uint32_t> minor_of_uuid(std::string_view uuid, const NvidiaInfo& info) {
  std::string want = lower(uuid);
  for (const auto& g : info.gpus) {
    if (lower(g.uuid) == want) return g.minor;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::uint32_t> minor_of_pci(std::string_view pci, const NvidiaInfo& info) {
  if (pci.empty() || pci.size() > 32) return std::nullopt;
  const std::string want = lower(pci);
  for (const auto& g : info.gpus) {
    const std::string have = lower(g.pci);
    if (have == want) return g.minor;
    // The Xid line leaves out the function: "0000:3b:00" names "0000:3b:00.0".
    if (have.size() > want.size() && have.compare(0, want.size(), want) == 0 && have[want.size()] == '.')
      return g.minor;
  }
  return std::nullopt;
}

void parse_proc_devices(std::string_view text, NvidiaInfo* info) {
  bool chr = false;
  for_each_line(text, [&](std::string_view line) {
    if (line.substr(0, 18) == "Character devices:") {
      chr = true;
      return;
    }
    if (line.substr(0, 14) == "Block devices:") {
      chr = false;
      return;
    }
    if (!chr) return;
    line = trim(line);
    std::size_t sp = line.find(' ');
    if (sp == std::string_view::npos) return;
    std::uint32_t major = 0;
    if (!parse_uint(line.substr(0, sp), &major) || major == 0 || major > 4095) return;
    std::string_view name = trim(line.substr(sp + 1));
    if (name == "nvidia-uvm") info->uvm_major = major;
    if (name == "nvidia-caps") info->caps_major = major;
    if (name == "nvidia-nvlink") info->nvlink_major = major;
    if (name == "nvidia-nvswitch") info->nvswitch_major = major;
  });
}

std::optional<GpuInfo> parse_gpu_information(std::string_view text, std::string pci) {
  GpuInfo g;
  g.pci = std::move(pci);
  bool have_minor = false;
  for_each_line(text, [&](std::string_view line) {
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::string_view key = trim(line.substr(0, colon));
    std::string_view val = trim(line.substr(colon + 1));
    if (key == "GPU UUID") {
      if (val.size() <= 128) g.uuid = std::string(val);
    } else if (key == "Device Minor") {
      std::uint32_t m = 0;
      if (parse_uint(val, &m) && m <= kNvidiaMaxGpuMinor) {
        g.minor = m;
        have_minor = true;
      }
    } else if (key == "Model") {
      g.model = std::string(val.substr(0, 128));
    }
  });
  if (g.uuid.empty() || !have_minor) return std::nullopt;
  return g;
}

NvidiaInfo read_nvidia_info(const std::string& proc_devices_path, const std::string& nvidia_root) {
  NvidiaInfo info;
  if (auto t = read_file_bounded(proc_devices_path, kMaxInfoBytes)) parse_proc_devices(*t, &info);
  std::string dir = nvidia_root + "/gpus";
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == ".." || name.size() > 64) continue;
      if (info.gpus.size() >= kMaxGpus) break;
      auto t = read_file_bounded(dir + "/" + name + "/information", kMaxInfoBytes);
      if (!t) continue;
      if (auto g = parse_gpu_information(*t, name)) info.gpus.push_back(std::move(*g));
    }
    ::closedir(d);
  }
  std::sort(info.gpus.begin(), info.gpus.end(), [](const GpuInfo& a, const GpuInfo& b) { return a.pci < b.pci; });
  return info;
}

std::string_view nvidia_node_kind_name(NvidiaNodeKind k) {
  switch (k) {
    case NvidiaNodeKind::kNone: return "";
    case NvidiaNodeKind::kGpu: return "gpu";
    case NvidiaNodeKind::kCtl: return "ctl";
    case NvidiaNodeKind::kModeset: return "modeset";
    case NvidiaNodeKind::kUvm: return "uvm";
    case NvidiaNodeKind::kUvmTools: return "uvm-tools";
    case NvidiaNodeKind::kCaps: return "caps";
    case NvidiaNodeKind::kNvlink: return "nvlink";
    case NvidiaNodeKind::kNvswitch: return "nvswitch";
    case NvidiaNodeKind::kOther: return "other";
  }
  return "";
}

NvidiaNode nvidia_node(std::uint32_t major, std::uint32_t minor, std::string_view path, const NvidiaInfo& info) {
  NvidiaNode n{NvidiaNodeKind::kNone, major, minor};
  if (major == kNvidiaMajor) {
    if (minor <= kNvidiaMaxGpuMinor) {
      n.kind = NvidiaNodeKind::kGpu;
    } else if (minor == kNvidiaCtlMinor) {
      n.kind = NvidiaNodeKind::kCtl;
    } else if (minor == 254) {
      n.kind = NvidiaNodeKind::kModeset;
    } else {
      n.kind = NvidiaNodeKind::kOther;
    }
    return n;
  }
  if (info.uvm_major != 0 && major == info.uvm_major) {
    n.kind = minor == 1 ? NvidiaNodeKind::kUvmTools : NvidiaNodeKind::kUvm;
    return n;
  }
  if (info.caps_major != 0 && major == info.caps_major) {
    n.kind = NvidiaNodeKind::kCaps;
    return n;
  }
  if (info.nvlink_major != 0 && major == info.nvlink_major) {
    n.kind = NvidiaNodeKind::kNvlink;
    return n;
  }
  if (info.nvswitch_major != 0 && major == info.nvswitch_major) {
    n.kind = NvidiaNodeKind::kNvswitch;
    return n;
  }
  // Name fallback.
  std::size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (base.substr(0, 6) != "nvidia") return n;
  std::string_view rest = base.substr(6);
  std::uint32_t uvm = info.uvm_major != 0 ? info.uvm_major : kNameOnlyUvmMajor;
  if (rest == "ctl") return {NvidiaNodeKind::kCtl, kNvidiaMajor, kNvidiaCtlMinor};
  if (rest == "-modeset") return {NvidiaNodeKind::kModeset, kNvidiaMajor, 254};
  if (rest == "-uvm") return {NvidiaNodeKind::kUvm, uvm, 0};
  if (rest == "-uvm-tools") return {NvidiaNodeKind::kUvmTools, uvm, 1};
  if (rest.substr(0, 4) == "-cap") return {NvidiaNodeKind::kCaps, major, minor};
  std::uint32_t idx = 0;
  if (!rest.empty() && rest.size() <= 3 && parse_uint(rest, &idx) && idx <= kNvidiaMaxGpuMinor) {
    return {NvidiaNodeKind::kGpu, kNvidiaMajor, idx};
  }
  return {NvidiaNodeKind::kOther, major, minor};
}

GpuAllocation resolve_allocation(const PodContainer& pc, const NvidiaInfo& info) {
  GpuAllocation a;
  a.limit = pc.gpu_limit > 0 ? pc.gpu_limit : 0;
  std::vector<std::string> ids;

  std::string_view env = trim(pc.nvidia_visible_devices);
  bool env_lists_devices = false;
  if (env == "all") {
    a.all = true;
    a.any = true;
  } else if (env == "none") {
    a.any = true;  // driver nodes, no GPU
  } else if (env.empty() || env == "void") {
    // Behaves like runc: nothing from the env var.
  } else if (env.substr(0, 1) == "/") {
    // Device plugin volume-mount strategy: the ids are mount names, not in the env.
    a.any = true;
    a.unresolved = pc.gpu_devices.empty();
  } else {
    env_lists_devices = true;
    std::size_t pos = 0;
    while (pos <= env.size() && ids.size() < kMaxDeviceIds) {
      std::size_t comma = env.find(',', pos);
      if (comma == std::string_view::npos) comma = env.size();
      std::string_view id = trim(env.substr(pos, comma - pos));
      if (!id.empty()) ids.emplace_back(id);
      pos = comma + 1;
    }
  }
  for (const auto& d : pc.gpu_devices) {
    if (ids.size() >= kMaxDeviceIds) break;
    if (std::find(ids.begin(), ids.end(), d) == ids.end()) ids.push_back(d);
  }
  if (env_lists_devices || !pc.gpu_devices.empty() || a.limit > 0) a.any = true;
  if (a.limit > 0 && ids.empty() && !a.all) a.unresolved = true;

  for (const auto& raw : ids) {
    a.devices.push_back(raw);
    std::string_view id = raw;
    if (std::size_t rep = id.find("::"); rep != std::string_view::npos) id = id.substr(0, rep);
    std::optional<std::uint32_t> minor;
    std::uint32_t idx = 0;
    std::string_view gpu_part = id;
    if (std::size_t colon = id.find(':'); colon != std::string_view::npos) {
      gpu_part = id.substr(0, colon);  // "<gpu>:<mig>" index pair
    }
    if (parse_uint(gpu_part, &idx)) {
      if (!info.gpus.empty()) {
        if (idx < info.gpus.size()) minor = info.gpus[idx].minor;
      } else if (idx <= kNvidiaMaxGpuMinor) {
        minor = idx;
      }
    } else if (lower(id.substr(0, 8)) == "mig-gpu-") {
      // Legacy MIG id: MIG-GPU-<uuid>/<gi>/<ci>.
      std::string_view uuid = id.substr(4);
      uuid = uuid.substr(0, uuid.find('/'));
      minor = minor_of_uuid(uuid, info);
    } else if (lower(id.substr(0, 4)) == "gpu-") {
      minor = minor_of_uuid(id, info);
    }
    if (minor) {
      a.minors.push_back(*minor);
    } else {
      a.unresolved = true;
    }
  }
  std::sort(a.minors.begin(), a.minors.end());
  a.minors.erase(std::unique(a.minors.begin(), a.minors.end()), a.minors.end());
  return a;
}

bool allocation_allows(const GpuAllocation& a, const NvidiaNode& n) {
  switch (n.kind) {
    case NvidiaNodeKind::kNone: return true;
    case NvidiaNodeKind::kCtl:
    case NvidiaNodeKind::kUvm:
    case NvidiaNodeKind::kModeset: return a.any;
    case NvidiaNodeKind::kGpu:
      if (a.all || a.unresolved) return a.any;
      return std::binary_search(a.minors.begin(), a.minors.end(), n.minor);
    case NvidiaNodeKind::kUvmTools:
    case NvidiaNodeKind::kCaps:
    case NvidiaNodeKind::kNvlink:  // fabric management: the node's, never a workload's
    case NvidiaNodeKind::kNvswitch:
    case NvidiaNodeKind::kOther: return false;
  }
  return false;
}

}  // namespace vigil::state
