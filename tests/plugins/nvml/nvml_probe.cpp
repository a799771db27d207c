// nvml_probe: the nvml plugin against a real NVML, for a GPU machine. It
// loads libvigil_nvml.so the way vigil does (dlopen, the C ABI), takes a few
// samples and prints every event, with every field, as one JSON line each on
// stdout; the plugin's log lines go to stderr. Exits 77 (skip) with a message
// when the node has no NVML, 1 on any other failure.
//
//   nvml_probe [--plugin PATH] [--library libnvidia-ml.so.1] [--interval 1s] [--samples N]
#include "tests/plugins/nvml/plugin_harness.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using vigil::nvml::test::PluginLib;
using vigil::nvml::test::RecordingHost;

int usage() {
  std::fprintf(stderr, "usage: nvml_probe [--plugin PATH] [--library NVML] [--interval 1s] [--samples N]\n");
  return 1;
}

nlohmann::json event_json(PluginLib& lib, vigil_plugin_state* s, const vigil_event& e) {
  nlohmann::json j;
  j["ts_ns"] = e.ts_ns;
  j["pid"] = e.pid;
  j["gpu_minor"] = e.gpu_minor;
  j["name"] = e.name;
  j["data_len"] = e.data_len;
  uint32_t n = 0;
  const vigil_field_info* info = lib.get_fields(&n);
  std::vector<vigil_extract_request> reqs(n);
  for (uint32_t i = 0; i < n; ++i) reqs[i].field = i;
  nlohmann::json fields = nlohmann::json::object();
  if (lib.extract(s, &e, reqs.data(), n) != VIGIL_RC_OK) {
    j["extract_error"] = lib.get_last_error(s);
  } else {
    for (uint32_t i = 0; i < n; ++i) {
      if (reqs[i].has_value == 0) {
        fields[info[i].name] = nullptr;
      } else if (info[i].type == VIGIL_FIELD_STRING) {
        fields[info[i].name] = reqs[i].value.str;
      } else {
        fields[info[i].name] = reqs[i].value.u64;
      }
    }
  }
  j["fields"] = fields;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  std::string plugin = VIGIL_NVML_PLUGIN;
  std::string library = "libnvidia-ml.so.1";
  std::string interval = "1s";
  int samples = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    std::string v = argv[++i];
    if (a == "--plugin") plugin = v;
    else if (a == "--library") library = v;
    else if (a == "--interval") interval = v;
    else if (a == "--samples") samples = std::atoi(v.c_str());
    else return usage();
  }
  if (samples < 1 || samples > 1000) return usage();

  PluginLib lib(plugin);
  if (!lib.ok()) {
    std::fprintf(stderr, "nvml_probe: %s: %s\n", plugin.c_str(), lib.error().c_str());
    return 1;
  }
  RecordingHost host;
  nlohmann::json cfg = {{"nvml_library", library}, {"interval", interval}};
  char err[512] = {};
  vigil_plugin_state* s = lib.init(host.host(), cfg.dump().c_str(), err, sizeof err);
  if (s == nullptr) {
    std::fprintf(stderr, "nvml_probe: init failed: %s\n", err);
    return 1;
  }
  int status = 0;
  int taken = 0;
  uint64_t last_ts = 0;
  std::size_t logged = 0;
  auto flush_log = [&] {
    auto lines = host.lines();
    for (; logged < lines.size(); ++logged) {
      std::fprintf(stderr, "plugin log [%d]: %s\n", static_cast<int>(lines[logged].level), lines[logged].msg.c_str());
    }
  };
  for (int round = 0; round < samples * 100 && taken <= samples; ++round) {
    const vigil_event* evs = nullptr;
    uint32_t n = 0;
    vigil_rc rc = lib.next_batch(s, 256, 500, &evs, &n);
    flush_log();
    if (rc == VIGIL_RC_EOF) {
      if (taken == 0) {
        std::fprintf(stderr, "nvml_probe: no NVML on this node (%s); skipped\n", library.c_str());
        status = 77;
      }
      break;
    }
    if (rc == VIGIL_RC_FAILURE) {
      std::fprintf(stderr, "nvml_probe: next_batch failed: %s\n", lib.get_last_error(s));
      status = 1;
      break;
    }
    for (uint32_t i = 0; i < n; ++i) {
      if (evs[i].ts_ns != last_ts) {
        last_ts = evs[i].ts_ns;
        if (++taken > samples) break;
      }
      std::printf("%s\n", event_json(lib, s, evs[i]).dump().c_str());
    }
    std::fflush(stdout);
  }
  lib.destroy(s);
  flush_log();
  return status;
}
