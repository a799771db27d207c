#include "engine/posture/ecc.h"

#include <algorithm>

namespace vigil::posture {
namespace {

bool known(const std::string& mode) { return !mode.empty(); }

std::string indexes(const std::vector<GpuEcc>& gpus, bool (*pick)(const GpuEcc&)) {
  std::string out;
  for (const GpuEcc& g : gpus) {
    if (pick(g)) out += (out.empty() ? "" : ", ") + std::to_string(g.index);
  }
  return out;
}

std::string safe_uuid(std::string_view u) {
  std::string out(u.substr(0, 96));
  for (char& c : out) {
    if (c == ',' || c == ':' || c < 0x20 || c > 0x7e) c = '_';
  }
  return out;
}

}  // namespace

std::string ecc_summary(const std::vector<GpuEcc>& gpus) {
  bool on = false, off = false, unsupported = false;
  for (const GpuEcc& g : gpus) {
    on |= g.current == "on";
    off |= g.current == "off";
    unsupported |= g.current == "unsupported";
  }
  if (on && off) return "mixed";
  if (on) return "on";
  if (off) return "off";
  if (unsupported) return "unsupported";
  return "";
}

std::int32_t ecc_pending(const std::vector<GpuEcc>& gpus) {
  std::int32_t out = -1;
  for (const GpuEcc& g : gpus) {
    if (!known(g.current) || !known(g.pending)) continue;
    if (g.current != g.pending) return 1;
    out = 0;
  }
  return out;
}

std::string ecc_gpus_text(const std::vector<GpuEcc>& gpus) {
  std::string out;
  for (const GpuEcc& g : gpus) {
    const std::string cur = known(g.current) ? g.current : "unknown";
    out += (out.empty() ? "" : ",") + std::to_string(g.index) + ":" + safe_uuid(g.uuid) + ":" + cur;
    if (known(g.current) && known(g.pending) && g.pending != g.current) out += "->" + g.pending;
  }
  return out;
}

std::string ecc_summary_text(const std::vector<GpuEcc>& gpus) {
  const std::string s = ecc_summary(gpus);
  if (s.empty()) return "unknown";
  std::string out = s;
  if (s == "mixed") {
    out += " (on: GPU " + indexes(gpus, [](const GpuEcc& g) { return g.current == "on"; }) + "; off: GPU " +
           indexes(gpus, [](const GpuEcc& g) { return g.current == "off"; }) + ")";
  } else {
    std::size_t n = 0;
    for (const GpuEcc& g : gpus) n += g.current == s;
    out += " (" + std::to_string(n) + (n == 1 ? " GPU)" : " GPUs)");
  }
  if (std::string u = indexes(gpus, [](const GpuEcc& g) { return !known(g.current); }); !u.empty()) {
    out += ", unknown on GPU " + u;
  }
  if (s != "mixed") {
    if (std::string o = indexes(gpus, [](const GpuEcc& g) { return g.current == "unsupported"; });
        !o.empty() && s != "unsupported") {
      out += ", no ECC on GPU " + o;
    }
  }
  for (const GpuEcc& g : gpus) {
    if (known(g.current) && known(g.pending) && g.pending != g.current) {
      out += ", GPU " + std::to_string(g.index) + " " + g.pending + " after reboot";
    }
  }
  return out;
}

std::optional<std::vector<GpuEcc>> EccSamples::add(std::uint64_t ts_ns, std::uint32_t devices, GpuEcc gpu) {
  std::optional<std::vector<GpuEcc>> done;
  if (ts_ns != ts_) {
    // A new sample: the one before it is whole if its count was not known.
    if (!gpus_.empty() && devices_ == 0 && !broken_) done = std::move(gpus_);
    gpus_.clear();
    ts_ = ts_ns;
    devices_ = devices;
    broken_ = false;
  }
  if (!broken_) {
    const bool twice = std::any_of(gpus_.begin(), gpus_.end(), [&](const GpuEcc& g) { return g.index == gpu.index; });
    if (twice || devices != devices_ || gpus_.size() >= kMaxEccGpus) {
      broken_ = true;
      gpus_.clear();
    } else {
      gpus_.push_back(std::move(gpu));
      if (devices_ != 0 && gpus_.size() == devices_) {
        done = std::move(gpus_);
        gpus_.clear();
        broken_ = true;  // anything more of this sample is not part of it
      }
    }
  }
  if (done) std::sort(done->begin(), done->end(), [](const GpuEcc& a, const GpuEcc& b) { return a.index < b.index; });
  return done;
}

}  // namespace vigil::posture
