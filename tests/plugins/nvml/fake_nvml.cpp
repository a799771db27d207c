// A stand-in for libnvidia-ml.so.1: the NVML entry points the nvml plugin
// uses, over a scripted table read from the file named by
// $VIGIL_FAKE_NVML_TABLE. The file is read at nvmlInit_v2 and again at every
// nvmlDeviceGetCount_v2 (the start of each plugin sample), so a test changes
// what NVML reports by rewriting it. Lines (`#` starts a comment):
//
//   device <index> uuid=<text> minor=<n> pci=<text> total=<bytes> used=<bytes>
//          [ecc=<on|off|unsupported|n>] [ecc_pending=<on|off|n>] [ecc_rc=<rc>]
//                                     nvmlDeviceGetEccMode's answer for the device:
//                                     ecc=unsupported (the default) returns
//                                     NVML_ERROR_NOT_SUPPORTED, a number n is written
//                                     as the mode as it is, ecc_pending defaults to ecc,
//                                     ecc_rc=<rc> makes the call fail with rc
//   process <device> pid=<n> mem=<bytes|na>
//   util <device> pid=<n> ts=<us> sm=<pct> mem=<pct>
//   fail <init|count|handle|uuid|minor|pci|memory|procs|util|ecc> <rc>
//   option stride <16|24|32>          element size of the process list (default 24)
//   option insufficient_first 1       each sample's first process-list call says
//                                     NVML_ERROR_INSUFFICIENT_SIZE
//   option procs_need <n>             the process list always needs n entries
//   option procs_count <n>            the process list succeeds but claims n entries
//   option util_count <n>             utilisation succeeds but claims n samples
//   option device_count <n>           nvmlDeviceGetCount_v2 claims n devices
//   option uuid_unterminated 1        nvmlDeviceGetUUID fills its buffer without a NUL
//
// Built twice: libfake_nvml.so, and libfake_nvml_nosym.so without
// nvmlDeviceGetProcessUtilization (FAKE_NVML_WITHOUT_UTILIZATION) to play an
// NVML too old for the plugin. The fake_nvml_* functions let a test see what
// the plugin asked.
#include "plugins/nvml/nvml_api.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace api = vigil::nvml::api;

namespace {

struct FakeDevice {
  std::string uuid;
  unsigned minor = 0;
  std::string pci;
  unsigned long long total = 0;
  unsigned long long used = 0;
  bool ecc_supported = false;
  int ecc_current = 0;
  std::optional<int> ecc_pending;  // none: as ecc_current
  api::Return ecc_rc = api::kSuccess;
};

struct FakeProcess {
  unsigned device = 0;
  unsigned pid = 0;
  unsigned long long mem = 0;
};

struct FakeUtil {
  unsigned device = 0;
  unsigned pid = 0;
  unsigned long long ts = 0;
  unsigned sm = 0;
  unsigned mem = 0;
};

struct Table {
  std::map<unsigned, FakeDevice> devices;
  std::vector<FakeProcess> processes;
  std::vector<FakeUtil> utils;
  std::map<std::string, api::Return> fail;
  std::map<std::string, unsigned long long> option;
  bool loaded = false;
};

Table g_table;
int g_init_calls = 0;
int g_shutdown_calls = 0;
int g_procs_calls = 0;
std::map<unsigned, unsigned long long> g_last_seen;
std::map<unsigned, bool> g_insufficient_done;

// "on" 1, "off" 0, else the number as it is (garbage for the plugin to refuse).
int ecc_state(const std::string& v) {
  if (v == "on") return api::kFeatureEnabled;
  if (v == "off") return api::kFeatureDisabled;
  return static_cast<int>(std::stol(v));
}

std::string value_of(const std::string& word, const char* key) {
  std::string prefix = std::string(key) + "=";
  return word.rfind(prefix, 0) == 0 ? word.substr(prefix.size()) : std::string();
}

void load() {
  Table t;
  const char* path = std::getenv("VIGIL_FAKE_NVML_TABLE");
  if (path == nullptr) {
    g_table = t;
    return;
  }
  std::ifstream in(path);
  if (!in) {
    g_table = t;
    return;
  }
  t.loaded = true;
  std::string line;
  while (std::getline(in, line)) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream ls(line);
    std::string kind;
    if (!(ls >> kind)) continue;
    if (kind == "fail") {
      std::string what;
      api::Return rc = 0;
      ls >> what >> rc;
      t.fail[what] = rc;
      continue;
    }
    if (kind == "option") {
      std::string name;
      unsigned long long v = 0;
      ls >> name >> v;
      t.option[name] = v;
      continue;
    }
    unsigned index = 0;
    ls >> index;
    std::string word;
    if (kind == "device") {
      FakeDevice d;
      while (ls >> word) {
        if (auto v = value_of(word, "uuid"); !v.empty()) d.uuid = v;
        if (auto v = value_of(word, "minor"); !v.empty()) d.minor = std::stoul(v);
        if (auto v = value_of(word, "pci"); !v.empty()) d.pci = v;
        if (auto v = value_of(word, "total"); !v.empty()) d.total = std::stoull(v);
        if (auto v = value_of(word, "used"); !v.empty()) d.used = std::stoull(v);
        if (auto v = value_of(word, "ecc"); !v.empty()) {
          d.ecc_supported = v != "unsupported";
          if (d.ecc_supported) d.ecc_current = ecc_state(v);
        }
        if (auto v = value_of(word, "ecc_pending"); !v.empty()) d.ecc_pending = ecc_state(v);
        if (auto v = value_of(word, "ecc_rc"); !v.empty()) d.ecc_rc = std::stoi(v);
      }
      t.devices[index] = d;
    } else if (kind == "process") {
      FakeProcess p;
      p.device = index;
      while (ls >> word) {
        if (auto v = value_of(word, "pid"); !v.empty()) p.pid = std::stoul(v);
        if (auto v = value_of(word, "mem"); !v.empty()) p.mem = v == "na" ? api::kValueNotAvailable : std::stoull(v);
      }
      t.processes.push_back(p);
    } else if (kind == "util") {
      FakeUtil u;
      u.device = index;
      while (ls >> word) {
        if (auto v = value_of(word, "pid"); !v.empty()) u.pid = std::stoul(v);
        if (auto v = value_of(word, "ts"); !v.empty()) u.ts = std::stoull(v);
        if (auto v = value_of(word, "sm"); !v.empty()) u.sm = std::stoul(v);
        if (auto v = value_of(word, "mem"); !v.empty()) u.mem = std::stoul(v);
      }
      t.utils.push_back(u);
    }
  }
  g_table = t;
}

api::Return failure(const char* what) {
  auto it = g_table.fail.find(what);
  return it == g_table.fail.end() ? api::kSuccess : it->second;
}

bool option(const char* name, unsigned long long& v) {
  auto it = g_table.option.find(name);
  if (it == g_table.option.end()) return false;
  v = it->second;
  return true;
}

const FakeDevice* device_of(api::Device dev, unsigned* index = nullptr) {
  auto i = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(dev) - 1);
  auto it = g_table.devices.find(i);
  if (it == g_table.devices.end()) return nullptr;
  if (index != nullptr) *index = i;
  return &it->second;
}

void copy_string(char* dst, unsigned size, const std::string& s) {
  if (size == 0) return;
  std::size_t n = s.size() < size - 1 ? s.size() : size - 1;
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

}  // namespace

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_EXPORT api::Return nvmlInit_v2() {
  ++g_init_calls;
  load();
  if (!g_table.loaded) return api::kErrorDriverNotLoaded;
  return failure("init");
}

FAKE_EXPORT api::Return nvmlShutdown() {
  ++g_shutdown_calls;
  return api::kSuccess;
}

FAKE_EXPORT const char* nvmlErrorString(api::Return rc) {
  switch (rc) {
    case api::kSuccess: return "Success";
    case api::kErrorNotSupported: return "Not Supported";
    case api::kErrorNotFound: return "Not Found";
    case api::kErrorInsufficientSize: return "Insufficient Size";
    case api::kErrorDriverNotLoaded: return "Driver Not Loaded";
    case api::kErrorGpuIsLost: return "GPU is lost";
    default: return "Unknown Error";
  }
}

FAKE_EXPORT api::Return nvmlDeviceGetCount_v2(unsigned* count) {
  load();
  g_insufficient_done.clear();
  if (api::Return rc = failure("count"); rc != api::kSuccess) return rc;
  unsigned long long claimed = 0;
  *count =
      option("device_count", claimed) ? static_cast<unsigned>(claimed) : static_cast<unsigned>(g_table.devices.size());
  return api::kSuccess;
}

FAKE_EXPORT api::Return nvmlDeviceGetHandleByIndex_v2(unsigned index, api::Device* dev) {
  if (api::Return rc = failure("handle"); rc != api::kSuccess) return rc;
  if (g_table.devices.find(index) == g_table.devices.end()) return api::kErrorInvalidArgument;
  *dev = reinterpret_cast<api::Device>(static_cast<std::uintptr_t>(index) + 1);
  return api::kSuccess;
}

FAKE_EXPORT api::Return nvmlDeviceGetUUID(api::Device dev, char* uuid, unsigned length) {
  const FakeDevice* d = device_of(dev);
  if (d == nullptr) return api::kErrorInvalidArgument;
  if (api::Return rc = failure("uuid"); rc != api::kSuccess) return rc;
  unsigned long long v = 0;
  if (option("uuid_unterminated", v)) {
    std::memset(uuid, 'A', length);
    return api::kSuccess;
  }
  copy_string(uuid, length, d->uuid);
  return api::kSuccess;
}

FAKE_EXPORT api::Return nvmlDeviceGetMinorNumber(api::Device dev, unsigned* minor) {
  const FakeDevice* d = device_of(dev);
  if (d == nullptr) return api::kErrorInvalidArgument;
  if (api::Return rc = failure("minor"); rc != api::kSuccess) return rc;
  *minor = d->minor;
  return api::kSuccess;
}

FAKE_EXPORT api::Return nvmlDeviceGetPciInfo_v3(api::Device dev, api::PciInfo* pci) {
  const FakeDevice* d = device_of(dev);
  if (d == nullptr) return api::kErrorInvalidArgument;
  if (api::Return rc = failure("pci"); rc != api::kSuccess) return rc;
  std::memset(pci, 0, sizeof *pci);
  copy_string(pci->bus_id, sizeof pci->bus_id, d->pci);
  copy_string(pci->bus_id_legacy, sizeof pci->bus_id_legacy, d->pci);
  return api::kSuccess;
}

FAKE_EXPORT api::Return nvmlDeviceGetMemoryInfo(api::Device dev, api::Memory* mem) {
  const FakeDevice* d = device_of(dev);
  if (d == nullptr) return api::kErrorInvalidArgument;
  if (api::Return rc = failure("memory"); rc != api::kSuccess) return rc;
  mem->total = d->total;
  mem->used = d->used;
  mem->free = d->total >= d->used ? d->total - d->used : 0;
  return api::kSuccess;
}

FAKE_EXPORT api::Return nvmlDeviceGetEccMode(api::Device dev, api::EnableState* current, api::EnableState* pending) {
  const FakeDevice* d = device_of(dev);
  if (d == nullptr || current == nullptr || pending == nullptr) return api::kErrorInvalidArgument;
  if (api::Return rc = failure("ecc"); rc != api::kSuccess) return rc;
  if (d->ecc_rc != api::kSuccess) return d->ecc_rc;
  if (!d->ecc_supported) return api::kErrorNotSupported;
  *current = d->ecc_current;
  *pending = d->ecc_pending.value_or(d->ecc_current);
  return api::kSuccess;
}

FAKE_EXPORT api::Return nvmlDeviceGetComputeRunningProcesses_v3(api::Device dev, unsigned* count, void* infos) {
  ++g_procs_calls;
  unsigned index = 0;
  if (device_of(dev, &index) == nullptr) return api::kErrorInvalidArgument;
  if (api::Return rc = failure("procs"); rc != api::kSuccess) return rc;
  std::vector<FakeProcess> mine;
  for (const auto& p : g_table.processes) {
    if (p.device == index) mine.push_back(p);
  }
  unsigned long long v = 0;
  if (option("procs_need", v)) {
    *count = static_cast<unsigned>(v);
    return api::kErrorInsufficientSize;
  }
  auto n = static_cast<unsigned>(mine.size());
  if (option("insufficient_first", v) && !g_insufficient_done[index]) {
    g_insufficient_done[index] = true;
    *count = n;
    return api::kErrorInsufficientSize;
  }
  if (*count < n || (n > 0 && infos == nullptr)) {
    *count = n;
    return api::kErrorInsufficientSize;
  }
  unsigned long long stride = 24;
  option("stride", stride);
  auto* out = static_cast<unsigned char*>(infos);
  for (unsigned i = 0; i < n; ++i) {
    unsigned char* e = out + i * stride;
    std::memcpy(e, &mine[i].pid, 4);
    std::memset(e + 4, 0, 4);
    std::memcpy(e + 8, &mine[i].mem, 8);
    if (stride >= 24) std::memset(e + 16, 0xff, 8);  // no GPU / compute instance
    if (stride >= 32) std::memset(e + 24, 0, 8);     // no protected memory
  }
  *count = option("procs_count", v) ? static_cast<unsigned>(v) : n;
  return api::kSuccess;
}

#ifndef FAKE_NVML_WITHOUT_UTILIZATION
FAKE_EXPORT api::Return nvmlDeviceGetProcessUtilization(api::Device dev, api::ProcessUtilizationSample* samples,
                                                        unsigned* count, unsigned long long last_seen) {
  unsigned index = 0;
  if (device_of(dev, &index) == nullptr) return api::kErrorInvalidArgument;
  g_last_seen[index] = last_seen;
  if (api::Return rc = failure("util"); rc != api::kSuccess) return rc;
  std::vector<FakeUtil> mine;
  for (const auto& u : g_table.utils) {
    if (u.device == index && u.ts > last_seen) mine.push_back(u);
  }
  auto n = static_cast<unsigned>(mine.size());
  if (n == 0) return api::kErrorNotFound;
  if (samples == nullptr || *count < n) {
    *count = n;
    return api::kErrorInsufficientSize;
  }
  for (unsigned i = 0; i < n; ++i) {
    samples[i] = {};
    samples[i].pid = mine[i].pid;
    samples[i].time_stamp = mine[i].ts;
    samples[i].sm_util = mine[i].sm;
    samples[i].mem_util = mine[i].mem;
  }
  unsigned long long v = 0;
  *count = option("util_count", v) ? static_cast<unsigned>(v) : n;
  return api::kSuccess;
}
#endif

// For tests: what the plugin did.
FAKE_EXPORT int fake_nvml_init_calls() { return g_init_calls; }
FAKE_EXPORT int fake_nvml_shutdown_calls() { return g_shutdown_calls; }
FAKE_EXPORT int fake_nvml_procs_calls() { return g_procs_calls; }
FAKE_EXPORT unsigned long long fake_nvml_last_seen(unsigned device) {
  auto it = g_last_seen.find(device);
  return it == g_last_seen.end() ? ~0ULL : it->second;
}
