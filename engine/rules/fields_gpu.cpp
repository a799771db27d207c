// gpu.*: the NVIDIA device an event is about, the driver call (escape, RM
// class and control), Xid errors, and the GPUs the container was given.
#include <sys/stat.h>

#include <charconv>
#include <string_view>
#include <vector>

#include "engine/event/nvidia.h"
#include "engine/state/gpu.h"
#include "engine/rules/field_extractors.h"

namespace vigil::rules {

using namespace fx;

namespace {

constexpr std::string_view kGpuEv = "open, openat, openat2, ioctl, pluginevent, mknodat";

// The NVIDIA device the event is about: path, major, minor.
struct GpuDev {
  std::string_view path;
  std::uint32_t major = 0;
  std::uint32_t minor = 0;
  bool has_numbers = false;
};
bool gpu_dev(const X& x, GpuDev& d) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) {
    // The same test as the sensor and the state: /dev/nvidia*, major 195, or a
    // device node whose file name starts with "nvidia" (stand-in nodes).
    const std::string_view path = p->path;
    bool nvidia_name = path.starts_with("/dev/nvidia") || (p->is_device && basename_of(path).starts_with("nvidia"));
    if (!nvidia_name && !(p->is_device && p->dev_major == event::nvidia::kMajor)) return false;
    d.path = p->path;
    d.major = p->dev_major;
    d.minor = p->dev_minor;
    d.has_numbers = p->is_device;
    return true;
  }
  if (auto* p = ev(x).as<event::IoctlData>()) {
    d.major = p->dev_major;
    d.minor = p->dev_minor;
    d.has_numbers = true;
    if (p->uvm) d.path = p->dev_minor == 1 ? "/dev/nvidia-uvm-tools" : "/dev/nvidia-uvm";
    else if (p->dev_major == event::nvidia::kMajor && p->dev_minor == event::nvidia::kCtlMinor)
      d.path = "/dev/nvidiactl";
    else if (p->dev_major == event::nvidia::kMajor && p->dev_minor == event::nvidia::kModesetMinor)
      d.path = "/dev/nvidia-modeset";
    return true;
  }
  // A character device node created by mknod: judged by its numbers alone
  // (a name is not a device), the dynamic majors as /proc/devices gives them.
  if (auto* p = ev(x).as<event::FileOpData>();
      p && (p->syscall == event::Syscall::kMknod || p->syscall == event::Syscall::kMknodat)) {
    if ((p->mode & S_IFMT) != S_IFCHR) return false;
    const std::uint32_t major = (p->dev & 0xfff00u) >> 8, minor = (p->dev & 0xffu) | ((p->dev >> 12) & 0xfff00u);
    static const state::NvidiaInfo kNoDriver;
    const state::NvidiaInfo* known = x.ctx->state ? x.ctx->state->nvidia_info() : nullptr;
    const state::NvidiaInfo& info = known ? *known : kNoDriver;
    if (state::nvidia_node(major, minor, {}, info).kind == state::NvidiaNodeKind::kNone) return false;
    d.major = major;
    d.minor = minor;
    d.has_numbers = true;
    return true;
  }
  // A plugin event about a GPU (NVML's per-process samples): /dev/nvidiaN.
  if (auto* p = ev(x).as<event::PluginData>();
      p && p->gpu_minor >= 0 && static_cast<std::uint32_t>(p->gpu_minor) <= event::nvidia::kMaxGpuMinor) {
    d.major = event::nvidia::kMajor;
    d.minor = static_cast<std::uint32_t>(p->gpu_minor);
    d.has_numbers = true;
    return true;
  }
  return false;
}
void x_gpu_device(const X& x, const F&, E& o) noexcept {
  GpuDev d;
  if (!gpu_dev(x, d)) return;
  if (!d.path.empty()) {
    str(o, d.path);
    return;
  }
  if (d.major == event::nvidia::kMajor && d.minor <= event::nvidia::kMaxGpuMinor) {
    Arena& a = *x.arena;
    a.begin();
    a.append("/dev/nvidia");
    a.append_uint(d.minor);
    str(o, a.finish());
  }
}
void x_gpu_node(const X& x, const F&, E& o) noexcept {
  GpuDev d;
  if (!gpu_dev(x, d)) return;
  static const state::NvidiaInfo kNoDriver;
  const state::NvidiaInfo* known = x.ctx->state ? x.ctx->state->nvidia_info() : nullptr;
  const state::NvidiaInfo& info = known ? *known : kNoDriver;
  const auto kind = state::nvidia_node_kind_name(
      state::nvidia_node(d.has_numbers ? d.major : 0, d.has_numbers ? d.minor : 0, d.path, info).kind);
  if (!kind.empty()) str(o, kind);
}
void x_gpu_major(const X& x, const F&, E& o) noexcept {
  if (GpuDev d; gpu_dev(x, d) && d.has_numbers) num(o, d.major);
}
void x_gpu_minor(const X& x, const F&, E& o) noexcept {
  if (GpuDev d; gpu_dev(x, d) && d.has_numbers) num(o, d.minor);
}
int gpu_index(const GpuDev& d) noexcept {
  if (!d.path.empty()) {
    int i = event::nvidia::gpu_index_from_path(d.path);
    if (i >= 0 || !d.has_numbers) return i;
  }
  if (d.has_numbers && d.major == event::nvidia::kMajor && d.minor <= event::nvidia::kMaxGpuMinor &&
      (d.path.empty() || d.path.rfind("/dev/nvidia", 0) == 0)) {
    // A path that names a control node (nvidiactl, uvm) is not an index.
    if (!d.path.empty() && event::nvidia::gpu_index_from_path(d.path) < 0) return -1;
    return static_cast<int>(d.minor);
  }
  return -1;
}
void x_gpu_index(const X& x, const F&, E& o) noexcept {
  GpuDev d;
  if (!gpu_dev(x, d)) return;
  int i = gpu_index(d);
  if (i >= 0) num(o, i);
}
void x_gpu_ioctl(const X& x, const F&, E& o) noexcept {
  auto* p = ev(x).as<event::IoctlData>();
  if (!p) return;
  auto n = p->uvm ? event::nvidia::uvm_ioctl_name(p->cmd) : event::nvidia::escape_name(p->nr);
  if (!n.empty()) str(o, n);
}
void x_gpu_ioctl_nr(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>()) num(o, p->nr);
}
void x_gpu_uvm(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>()) boolean(o, p->uvm);
}
void x_gpu_class(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>(); p && p->rm_class) num(o, p->rm_class);
}
void x_gpu_class_name(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>(); p && p->rm_class) {
    auto n = event::nvidia::class_name(p->rm_class);
    if (!n.empty()) str(o, n);
  }
}
void x_gpu_class_kind(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>(); p && p->rm_class) {
    auto n = event::nvidia::class_kind(p->rm_class);
    if (!n.empty()) str(o, n);
  }
}
void x_gpu_control(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>(); p && p->rm_control) num(o, p->rm_control);
}
void x_gpu_control_name(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>(); p && p->rm_control) {
    auto n = event::nvidia::control_name(p->rm_control);
    if (!n.empty()) str(o, n);
  }
}
void x_gpu_control_kind(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>(); p && p->rm_control) {
    auto n = event::nvidia::control_kind(p->rm_control);
    if (!n.empty()) str(o, n);
  }
}
// The driver surface table's row for an ioctl: the control's row for an RM
// control whose command the sensor read, the class's for an RM allocation
// whose class it read, else the escape's (the UVM command's on nvidia-uvm).
// known: the escape (UVM command) and, where read, the class or control are
// all rows of the table. Judged from what the sensor already decoded.
struct Judged {
  const event::nvidia::SurfaceRow* row = nullptr;
  bool known = false;
};
Judged judge_ioctl(const event::IoctlData& p) noexcept {
  using event::nvidia::Part;
  using event::nvidia::surface_row;
  Judged j;
  if (p.uvm) {
    j.row = surface_row(Part::kUvm, p.cmd);
    j.known = j.row != nullptr;
    return j;
  }
  const auto* esc = surface_row(Part::kEscape, p.nr);
  if (!esc) return j;
  j.row = esc;
  if (p.nr == event::nvidia::kEscRmAlloc && p.rm_class) j.row = surface_row(Part::kClass, p.rm_class);
  else if (p.nr == event::nvidia::kEscRmControl && p.rm_control) j.row = surface_row(Part::kControl, p.rm_control);
  j.known = j.row != nullptr;
  return j;
}
void x_gpu_ioctl_known(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>()) boolean(o, judge_ioctl(*p).known);
}
void x_gpu_ioctl_allowed(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>()) {
    const Judged j = judge_ioctl(*p);
    boolean(o, j.known && event::nvidia::surface_allowed_for_workload(j.row->surface));
  }
}
void x_gpu_ioctl_surface(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::IoctlData>()) {
    if (const Judged j = judge_ioctl(*p); j.known) str(o, j.row->surface);
  }
}
// Calls in a usage report whose number the table does not know: an escape on
// an NVIDIA major device; on another major (nvidia-uvm's dynamic one, or a
// stand-in node) a number that is neither an escape nor a UVM command.
void x_gpu_usage_unknown(const X& x, const F&, E& o) noexcept {
  auto* p = ev(x).as<event::GpuUsageData>();
  if (!p) return;
  using event::nvidia::Part;
  using event::nvidia::surface_row;
  std::uint64_t n = 0;
  for (const auto& e : p->entries) {
    bool known = surface_row(Part::kEscape, e.nr) != nullptr;
    if (!known && e.dev_major != event::nvidia::kMajor) known = surface_row(Part::kUvm, e.nr) != nullptr;
    if (!known) n += e.count;
  }
  num(o, static_cast<std::int64_t>(n));
}
void x_gpu_usage_count(const X& x, const F&, E& o) noexcept {
  auto* p = ev(x).as<event::GpuUsageData>();
  if (!p) return;
  std::uint64_t total = 0;
  for (const auto& e : p->entries) total += e.count;
  num(o, static_cast<std::int64_t>(total));
}
void x_xid(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::XidData>()) num(o, p->code);
}
void x_xid_text(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::XidData>()) str(o, p->text);
}
void x_gpu_pci(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::XidData>(); p && !p->pci.empty()) str(o, p->pci);
}
void x_xid_source(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::XidData>(); p && !p->source.empty()) str(o, p->source);
}
void x_xid_facility(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::XidData>(); p && p->facility >= 0) num(o, p->facility);
}
void x_xid_pid(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::XidData>(); p && p->xid_pid) num(o, p->xid_pid);
}
void x_xid_comm(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::XidData>(); p && !p->xid_comm.empty()) str(o, p->xid_comm);
}
// The Xid's process is an MPS server: its executable is
// nvidia-cuda-mps-server, or, when the executable is not known, its comm is
// that name cut to 15 bytes. With MPS the driver's client is the server, so
// an Xid names the server's pid whichever client's work faulted.
bool xid_of_mps_server(const X& x) noexcept {
  const auto* xd = ev(x).as<event::XidData>();
  if (!xd) return false;
  constexpr std::string_view kExe = "nvidia-cuda-mps-server";
  constexpr std::string_view kComm = kExe.substr(0, 15);
  if (const auto* p = proc_of(x)) {
    if (!p->exepath.empty()) return basename_of(p->exepath) == kExe;
    return p->comm == kComm;
  }
  return xd->xid_comm == kComm;
}
void x_xid_mps_server(const X& x, const F&, E& o) noexcept {
  if (ev(x).as<event::XidData>()) boolean(o, xid_of_mps_server(x));
}
// The pods sharing the Xid's GPU, the faulting process's own pod left out:
// with MPS, the clients one of whose work faulted. Copied into the arena (the
// state's list is a temporary).
void x_xid_client_pods(const X& x, const F&, E& o) noexcept {
  const auto* xd = ev(x).as<event::XidData>();
  const state::StateView* st = x.ctx->state;
  if (!xd || !st) return;
  const state::NvidiaInfo* nv = st->nvidia_info();
  if (!nv) return;
  const auto minor = state::minor_of_pci(xd->pci, *nv);
  if (!minor) return;
  const std::string_view own = x.ctx->pod ? std::string_view(x.ctx->pod->uid) : std::string_view();
  try {
    for (const std::string& p : st->gpu_client_pods(*minor, own)) {
      if (o.n >= Extracted::kMax) break;
      str(o, x.arena->put(p));
    }
  } catch (...) {  // out of memory: no value
    o.n = 0;
  }
}
const state::GpuAllocation* allocation(const X& x) noexcept {
  return x.ctx->state ? x.ctx->state->gpu_allocation(*x.ctx) : nullptr;
}
void x_gpu_limit(const X& x, const F&, E& o) noexcept {
  if (auto* a = allocation(x)) {
    num(o, a->limit);
    return;
  }
  if (auto* pc = x.ctx->pod_container) num(o, pc->gpu_limit);
}
void x_visible(const X& x, const F&, E& o) noexcept {
  if (auto* pc = x.ctx->pod_container; pc && !pc->nvidia_visible_devices.empty()) {
    str(o, pc->nvidia_visible_devices);
  }
}
// The GPUs given to the container: the kubelet's device ids, else the
// comma-separated NVIDIA_VISIBLE_DEVICES ("none"/"void" give nothing).
template <typename Fn>
void for_each_allocated(const state::PodContainer& pc, Fn fn) noexcept {
  if (!pc.gpu_devices.empty()) {
    for (const auto& d : pc.gpu_devices) fn(std::string_view(d));
    return;
  }
  std::string_view v = pc.nvidia_visible_devices;
  if (v.empty() || v == "none" || v == "void") return;
  while (!v.empty()) {
    auto c = v.find(',');
    auto item = v.substr(0, c);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) fn(item);
    if (c == std::string_view::npos) break;
    v.remove_prefix(c + 1);
  }
}
void x_allocated(const X& x, const F&, E& o) noexcept {
  if (auto* a = allocation(x)) {
    for (const auto& d : a->devices) {
      if (o.n < Extracted::kMax) str(o, d);
    }
    return;
  }
  auto* pc = x.ctx->pod_container;
  if (!pc) return;
  for_each_allocated(*pc, [&](std::string_view s) {
    if (o.n < Extracted::kMax) str(o, s);
  });
}
void x_allowed(const X& x, const F&, E& o) noexcept {
  GpuDev d;
  if (!gpu_dev(x, d)) return;
  bool in_container = x.ctx->container != nullptr || (proc_of(x) && !proc_of(x)->container_id.empty());
  if (!in_container) {
    boolean(o, true);
    return;
  }
  // The state knows the node's GPUs (UUID -> minor): ask it when the device
  // numbers are known.
  if (x.ctx->state && d.has_numbers && allocation(x)) {
    boolean(o, x.ctx->state->gpu_allowed(*x.ctx, d.major, d.minor));
    return;
  }
  auto* pc = x.ctx->pod_container;
  if (!pc) return;  // a container vigil has no pod spec for: unknown
  if (pc->nvidia_visible_devices == "all" && pc->gpu_devices.empty()) {
    boolean(o, true);
    return;
  }
  bool any = pc->gpu_limit > 0;
  bool numeric_match = false, has_numeric = false, has_uuid = false;
  int idx = gpu_index(d);
  for_each_allocated(*pc, [&](std::string_view s) {
    any = true;
    if (s == "all") {
      numeric_match = true;
      has_numeric = true;
      return;
    }
    int v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec == std::errc() && r.ptr == s.data() + s.size()) {
      has_numeric = true;
      if (v == idx) numeric_match = true;
    } else {
      has_uuid = true;
    }
  });
  if (idx < 0) {
    boolean(o, any);
    return;
  }  // nvidiactl, uvm, modeset
  if (numeric_match) {
    boolean(o, true);
    return;
  }
  if (has_uuid && !has_numeric) return;  // UUIDs cannot be mapped to a minor here
  boolean(o, false);
}

}  // namespace

void append_gpu_fields(std::vector<FieldDef>& fields) {
  using T = FieldType;
  using A = ArgMode;
  fields.insert(
      fields.end(),
      {
          {"gpu.device", T::kString, A::kNone, false, kGpuEv,
           "NVIDIA device path: opened, or from the ioctl's device numbers.", x_gpu_device},
          {"gpu.node", T::kString, A::kNone, false, kGpuEv,
           "Which NVIDIA node the device is: gpu, ctl, modeset, uvm, uvm-tools, caps, nvlink, nvswitch, other "
           "(by its numbers, the dynamic majors read from /proc/devices; by name for stand-in nodes). For mknod: "
           "the node created, judged by its numbers.",
           x_gpu_node},
          {"gpu.major", T::kInt, A::kNone, false, kGpuEv, "Device major number.", x_gpu_major},
          {"gpu.minor", T::kInt, A::kNone, false, kGpuEv, "Device minor number.", x_gpu_minor},
          {"gpu.index", T::kInt, A::kNone, false, kGpuEv, "GPU index N of /dev/nvidiaN.", x_gpu_index},
          {"gpu.ioctl", T::kString, A::kNone, false, "ioctl",
           "Ioctl name: NV_ESC_* escape, or the UVM ioctl on nvidia-uvm.", x_gpu_ioctl},
          {"gpu.ioctl.nr", T::kInt, A::kNone, false, "ioctl", "Ioctl escape number.", x_gpu_ioctl_nr},
          {"gpu.uvm", T::kBool, A::kNone, false, "ioctl", "The ioctl was on nvidia-uvm.", x_gpu_uvm},
          {"gpu.class", T::kInt, A::kNone, false, "ioctl", "RM class allocated (NV_ESC_RM_ALLOC).", x_gpu_class},
          {"gpu.class.name", T::kString, A::kNone, false, "ioctl", "RM class name (AMPERE_COMPUTE_A...).",
           x_gpu_class_name},
          {"gpu.class.kind", T::kString, A::kNone, false, "ioctl",
           "What the class is: compute, channel, memory, mig, debugger, profiler, ...", x_gpu_class_kind},
          {"gpu.control", T::kInt, A::kNone, false, "ioctl", "RM control command (NV_ESC_RM_CONTROL).", x_gpu_control},
          {"gpu.control.name", T::kString, A::kNone, false, "ioctl", "RM control command name.", x_gpu_control_name},
          {"gpu.control.kind", T::kString, A::kNone, false, "ioctl",
           "What the control changes: clock, power, ecc, reset, mig, other.", x_gpu_control_kind},
          {"gpu.ioctl.known", T::kBool, A::kNone, false, "ioctl",
           "The driver surface table (engine/event/nvidia_surface.tsv) knows the call: its escape (UVM command) "
           "and, where the sensor read it, its RM class or RM control.",
           x_gpu_ioctl_known},
          {"gpu.ioctl.surface", T::kString, A::kNone, false, "ioctl",
           "Who needs the call, by the driver surface table (the control's row for an RM control, the class's "
           "for an RM allocation, else the escape's): workload, graphics, video, rdma, fabric, profiler, "
           "debugger, mig, management, internal, other. Absent when the table does not know it.",
           x_gpu_ioctl_surface},
          {"gpu.ioctl.allowed", T::kBool, A::kNone, false, "ioctl",
           "The call is known and of a surface a workload container is given (workload, graphics, video, rdma).",
           x_gpu_ioctl_allowed},
          {"gpu.usage.count", T::kInt, A::kNone, false, "gpu_usage", "Total NVIDIA ioctls in a usage report.",
           x_gpu_usage_count},
          {"gpu.usage.unknown", T::kInt, A::kNone, false, "gpu_usage",
           "NVIDIA ioctls in a usage report whose escape number (UVM command) the driver surface table does "
           "not know.",
           x_gpu_usage_unknown},
          {"gpu.xid", T::kInt, A::kNone, false, "xid", "Xid error code.", x_xid},
          {"gpu.xid.text", T::kString, A::kNone, false, "xid", "Xid message text.", x_xid_text},
          {"gpu.pci", T::kString, A::kNone, false, "xid", "PCI address of the GPU (0000:3b:00.0).", x_gpu_pci},
          {"gpu.xid.source", T::kString, A::kNone, false, "xid", "kmsg or tracepoint.", x_xid_source},
          {"gpu.xid.facility", T::kInt, A::kNone, false, "xid", "Syslog facility of the kmsg line (0 = kernel).",
           x_xid_facility},
          {"gpu.xid.pid", T::kInt, A::kNone, false, "xid", "Pid named by the Xid line.", x_xid_pid},
          {"gpu.xid.comm", T::kString, A::kNone, false, "xid", "Process name named by the Xid line.", x_xid_comm},
          {"gpu.xid.mps_server", T::kBool, A::kNone, false, "xid",
           "The Xid's process is an MPS server (executable nvidia-cuda-mps-server; its comm nvidia-cuda-mps when "
           "the executable is not known): the fault is one of its clients'.",
           x_xid_mps_server},
          {"gpu.xid.client_pods", T::kList, A::kNone, false, "xid",
           "The pods (namespace/name) that share the Xid's GPU: those with a process holding its device node "
           "open and those it was allocated to, the faulting process's own pod left out. With MPS the Xid names "
           "the server, and these are the clients whose work may have faulted. No value when the GPU or its "
           "pods are not known.",
           x_xid_client_pods},
          {"gpu.limit", T::kInt, A::kNone, false, "*", "The container's nvidia.com/gpu limit.", x_gpu_limit},
          {"gpu.visible_devices", T::kString, A::kNone, false, "*", "The container's NVIDIA_VISIBLE_DEVICES.",
           x_visible},
          {"gpu.allocated", T::kList, A::kNone, false, "*", "GPU indexes/UUIDs given to the container.", x_allocated},
          {"gpu.allowed", T::kBool, A::kNone, false, kGpuEv,
           "The device used is one the container was given (control nodes: any GPU given; 'all': every "
           "device).",
           x_allowed},
      });
}

}  // namespace vigil::rules
