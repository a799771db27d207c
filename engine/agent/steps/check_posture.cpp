// Step "check posture": reads the node's GPU security posture once (the
// ready line's), then adds the source that reports it as gpu_posture events
// at start and whenever a re-check finds it changed, with the pods that ask
// for GPUs through their environment (engine/posture, docs/posture.md).
// `posture.enabled: false` leaves it out. Not essential: nothing it reads can
// stop vigil, and a missing file is "unknown".
// The GPUs' ECC comes from the nvml plugin where it is loaded
// (posture_ecc.h): before the ready line the step waits, at most
// kFirstEccWait, for the plugin's first sample (it samples as soon as its
// source starts), and the pipeline's tap keeps it current afterwards.
#include <chrono>

#include "engine/agent/posture_ecc.h"
#include "engine/agent/steps/steps.h"
#include "engine/config/config.h"
#include "engine/posture/source.h"
#include "engine/state/state.h"

namespace vigil::agent::steps {
namespace {

// How long the ready line waits for the nvml plugin's first sample of the
// GPUs' ECC (it usually takes milliseconds; a slow NVML leaves ECC unknown
// in the ready line, and the first sample reports it as a change).
constexpr std::chrono::milliseconds kFirstEccWait{3000};

// Containers whose NVIDIA_VISIBLE_DEVICES asks for GPUs their spec does not
// request: the toolkit hands them GPUs when it accepts the variable from
// unprivileged containers. Pods known only from the container runtime have
// no spec yet and are left for the API server's record.
std::vector<posture::PodFinding> env_gpu_pods(const state::State& st) {
  std::vector<posture::PodFinding> out;
  for (const state::Pod& pod : st.pods()) {
    if (pod.from_runtime) continue;
    for (const state::PodContainer& c : pod.containers) {
      const std::string& v = c.nvidia_visible_devices;
      if (v.empty() || v == "none" || v == "void" || c.gpu_limit > 0 || !c.gpu_devices.empty() || c.privileged) {
        continue;
      }
      out.push_back({pod.uid, c.name, v.substr(0, 256)});
    }
  }
  return out;
}

}  // namespace

Status check_posture(Agent& a) {
  using config::get_or;
  auto enabled = get_or<bool>(a.cfg, "posture.enabled", true);
  if (!enabled) return enabled.error();
  if (!*enabled) {
    a.log->info("posture: off (posture.enabled: false)");
    return {};
  }
  auto root = get_or<std::string>(a.cfg, "posture.host_root", "/");
  if (!root) return root.error();
  // The driver's proc/ and sys/ files: under host_root unless kernel_root
  // says where (a container reads the kernel's at its own "/").
  auto kernel = get_or<std::string>(a.cfg, "posture.kernel_root", "");
  if (!kernel) return kernel.error();
  auto every = get_or<std::uint64_t>(a.cfg, "posture.interval_s", 60);
  if (!every) return every.error();
  posture::ReadOptions opt;
  opt.host_root = root->empty() ? "/" : *root;
  opt.kernel_root = *kernel;
  posture::Posture first = posture::read_posture(opt);
  if (a.plugins && !a.plugins->empty()) a.ecc_fields = EccFields::make(a.plugins->fields());
  if (a.ecc_fields) posture::set_ecc(first, first_ecc(*a.ecc_fields, a.plugin_sources, kFirstEccWait));
  a.posture = std::make_shared<posture::View>();
  a.posture_summary = posture::summary(first);
  posture::PostureSource::PodScan scan;
  if (a.state) {
    scan = [&st = *a.state] { return env_gpu_pods(st); };
  }
  auto source = std::make_unique<posture::PostureSource>(opt, std::chrono::seconds(*every), std::move(first), a.posture,
                                                         std::move(scan));
  if (a.ecc_fields) a.posture_ecc = std::make_unique<PostureEccTap>(*a.ecc_fields, *source);
  a.runner->add_source(std::move(source), /*essential=*/false);
  return {};
}

}  // namespace vigil::agent::steps
