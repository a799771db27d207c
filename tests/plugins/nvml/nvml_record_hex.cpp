// nvml_record_hex: prints the hex of one nvml event record (plugins/nvml/
// record.h), for writing rule tests by hand (a pluginevent's data_hex).
//
//   nvml_record_hex kind=process pid=4242 minor=1 uuid=GPU-... pci=00000000:3B:00.0
//       sm=95 mem_util=40 memory=2147483648 dev_total=85899345920 dev_used=4294967296
//       dev_sm=95 dev_mem_util=40 count=1 ecc=on ecc_pending=on devices=2
//
// (one command line).
//
// Keys not given are unknown (<NA>) where the record allows it: memory, sm
// and mem_util (process), minor, dev_total/dev_used, dev_sm/dev_mem_util,
// ecc/ecc_pending (on, off, unsupported) and devices.
#include "plugins/nvml/record.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "nvml_record_hex: %s\nkeys: kind=process|device pid minor uuid pci index "
               "sm mem_util memory dev_total dev_used dev_sm dev_mem_util count dropped ecc ecc_pending devices\n",
               why);
  return 2;
}

bool ecc_mode(const std::map<std::string, std::string>& a, const char* key, vigil::nvml::EccMode& m) {
  auto it = a.find(key);
  if (it == a.end()) return true;
  if (it->second == "on") m = vigil::nvml::EccMode::kOn;
  else if (it->second == "off") m = vigil::nvml::EccMode::kOff;
  else if (it->second == "unsupported") m = vigil::nvml::EccMode::kUnsupported;
  else return false;
  return true;
}

bool number(const std::map<std::string, std::string>& a, const char* key, unsigned long long& v) {
  auto it = a.find(key);
  if (it == a.end()) return false;
  char* end = nullptr;
  v = std::strtoull(it->second.c_str(), &end, 10);
  return end != nullptr && *end == '\0' && !it->second.empty();
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto eq = arg.find('=');
    if (eq == std::string::npos) return usage(("not key=value: " + arg).c_str());
    a[arg.substr(0, eq)] = arg.substr(eq + 1);
  }
  using namespace vigil::nvml;
  DeviceSample d;
  ProcessSample p;
  unsigned long long v = 0, w = 0;
  if (number(a, "index", v)) d.index = static_cast<std::uint32_t>(v);
  if (number(a, "minor", v)) {
    d.has_minor = true;
    d.minor = static_cast<std::uint32_t>(v);
  }
  d.uuid = a.count("uuid") ? a["uuid"] : "";
  d.pci_bus_id = a.count("pci") ? a["pci"] : "";
  if (number(a, "dev_total", v) && number(a, "dev_used", w)) {
    d.has_memory = true;
    d.memory_total = v;
    d.memory_used = w;
  }
  if (number(a, "dev_sm", v) && number(a, "dev_mem_util", w)) {
    d.has_util = true;
    d.sm_util = static_cast<std::uint32_t>(v);
    d.mem_util = static_cast<std::uint32_t>(w);
  }
  if (number(a, "count", v)) d.process_count = static_cast<std::uint32_t>(v);
  if (number(a, "dropped", v)) d.processes_dropped = static_cast<std::uint32_t>(v);
  if (!ecc_mode(a, "ecc", d.ecc_current) || !ecc_mode(a, "ecc_pending", d.ecc_pending))
    return usage("ecc and ecc_pending are on, off or unsupported");
  if (number(a, "devices", v)) d.sample_devices = static_cast<std::uint32_t>(v);
  bool process = a["kind"] == "process";
  if (!process && a["kind"] != "device") return usage("kind must be process or device");
  if (process) {
    if (!number(a, "pid", v) || v == 0) return usage("a process record needs pid");
    p.pid = static_cast<std::uint32_t>(v);
    if (number(a, "memory", v)) {
      p.has_memory = true;
      p.memory_used = v;
    }
    if (number(a, "sm", v) && number(a, "mem_util", w)) {
      p.has_util = true;
      p.sm_util = static_cast<std::uint32_t>(v);
      p.mem_util = static_cast<std::uint32_t>(w);
    }
  }
  RecordBytes b = encode(d, process ? &p : nullptr);
  std::string why;
  if (!decode(b.data(), b.size(), why)) return usage(why.c_str());
  for (auto byte : b) std::printf("%02x", byte);
  std::printf("\n");
  return 0;
}
