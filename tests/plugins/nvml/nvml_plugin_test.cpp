// The nvml plugin through its C ABI (dlopen, as vigil loads it), over the
// stand-in NVML of fake_nvml.cpp.
#include "tests/plugins/nvml/plugin_harness.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace vigil::nvml::test {
namespace {

constexpr const char* kUuid0 = "GPU-11111111-2222-3333-4444-555555555555";
constexpr const char* kUuid1 = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";

// Two GPUs; GPU 0 runs 4242 (3 GiB, three utilisation samples) and 4343
// (memory not available); GPU 1 (minor 3) runs 5151 (idle) and 7777, which
// has utilisation samples but is not a compute process. GPU 0 has ECC on;
// GPU 1 has it off, and on once it reboots.
const std::string kTable = std::string() + "device 0 uuid=" + kUuid0 +
                           " minor=0 pci=00000000:3B:00.0 total=85899345920 used=4294967296 ecc=on\n"
                           "device 1 uuid=" +
                           kUuid1 +
                           " minor=3 pci=00000000:86:00.0 total=85899345920 used=1073741824 ecc=off ecc_pending=on\n"
                           "process 0 pid=4242 mem=3221225472\n"
                           "process 0 pid=4343 mem=na\n"
                           "process 1 pid=5151 mem=1073741824\n"
                           "util 0 pid=4242 ts=1000 sm=40 mem=10\n"
                           "util 0 pid=4242 ts=2000 sm=61 mem=21\n"
                           "util 0 pid=4343 ts=1500 sm=30 mem=5\n"
                           "util 1 pid=7777 ts=1200 sm=12 mem=3\n";

using Fields = std::map<std::string, std::string>;  // field -> value, "<NA>" when none

class NvmlPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(lib_.ok()) << lib_.error();
    ASSERT_TRUE(dir_.ok());
    table_ = dir_.path() + "/table";
    setenv("VIGIL_FAKE_NVML_TABLE", table_.c_str(), 1);
    fake_ = dlopen(VIGIL_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(fake_, nullptr) << dlerror();
  }
  void TearDown() override {
    if (state_ != nullptr) lib_.destroy(state_);
    if (fake_ != nullptr) dlclose(fake_);
  }

  void write_table(const std::string& text) { dir_.write("table", text); }

  std::string config(const std::string& extra = "", const char* library = VIGIL_FAKE_NVML) {
    return std::string("{\"nvml_library\": \"") + library + "\", \"interval\": \"1s\"" +
           (extra.empty() ? "" : ", " + extra) + "}";
  }

  vigil_plugin_state* start(const std::string& cfg) {
    char err[256] = {};
    state_ = lib_.init(host_.host(), cfg.c_str(), err, sizeof err);
    EXPECT_NE(state_, nullptr) << err;
    return state_;
  }

  template <class T>
  T fake_fn(const char* name) {
    void* p = dlsym(fake_, name);
    EXPECT_NE(p, nullptr) << name;
    return reinterpret_cast<T>(p);
  }

  // Every event of the next sample, taken in batches of at most `max`.
  std::vector<OwnedEvent> next_sample(uint32_t max = 1024) {
    std::vector<OwnedEvent> out;
    const vigil_event* evs = nullptr;
    uint32_t n = 0;
    vigil_rc rc = VIGIL_RC_TIMEOUT;
    for (int i = 0; i < 50 && out.empty(); ++i) {
      rc = lib_.next_batch(state_, max, 200, &evs, &n);
      if (rc != VIGIL_RC_OK && rc != VIGIL_RC_TIMEOUT) break;
      for (uint32_t k = 0; k < n; ++k) out.push_back(copy_event(evs[k]));
      EXPECT_LE(n, max);
    }
    if (out.empty()) return out;
    while ((rc = lib_.next_batch(state_, max, 0, &evs, &n)) == VIGIL_RC_OK) {
      EXPECT_LE(n, max);
      for (uint32_t k = 0; k < n; ++k) out.push_back(copy_event(evs[k]));
    }
    EXPECT_EQ(rc, VIGIL_RC_TIMEOUT);
    return out;
  }

  // All fields of one event; fails the test when extraction fails.
  Fields extract_all(const OwnedEvent& e) {
    uint32_t n = 0;
    const vigil_field_info* info = lib_.get_fields(&n);
    std::vector<vigil_extract_request> reqs(n);
    for (uint32_t i = 0; i < n; ++i) reqs[i].field = i;
    vigil_event ev = e.view();
    vigil_rc rc = lib_.extract(state_, &ev, reqs.data(), n);
    EXPECT_EQ(rc, VIGIL_RC_OK) << lib_.get_last_error(state_);
    Fields out;
    for (uint32_t i = 0; i < n; ++i) {
      std::string v = "<NA>";
      if (reqs[i].has_value != 0) {
        v = info[i].type == VIGIL_FIELD_STRING ? std::string(reqs[i].value.str) : std::to_string(reqs[i].value.u64);
      }
      out[info[i].name] = v;
    }
    return out;
  }

  PluginLib lib_{VIGIL_NVML_PLUGIN};
  RecordingHost host_;
  support::TempDir dir_{"nvml-test"};
  std::string table_;
  void* fake_ = nullptr;
  vigil_plugin_state* state_ = nullptr;
};

TEST_F(NvmlPluginTest, ExportsNameVersionSourceAndFields) {
  EXPECT_STREQ(lib_.get_required_api_version(), VIGIL_PLUGIN_API_VERSION_STRING);
  EXPECT_STREQ(lib_.get_name(), "nvml");
  EXPECT_STREQ(lib_.get_event_source(), "nvml");
  EXPECT_STRNE(lib_.get_version(), "");
  EXPECT_STRNE(lib_.get_description(), "");
  uint32_t n = 0;
  const vigil_field_info* f = lib_.get_fields(&n);
  ASSERT_NE(f, nullptr);
  std::vector<std::string> names;
  for (uint32_t i = 0; i < n; ++i) {
    std::string name = f[i].name;
    EXPECT_EQ(name.rfind("nvml.", 0), 0u) << name;
    EXPECT_EQ(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._"), std::string::npos) << name;
    EXPECT_GT(std::string(f[i].description).size(), 20u) << name;
    EXPECT_EQ(f[i].arg, VIGIL_ARG_NONE) << name;
    names.push_back(name);
  }
  std::vector<std::string> expected = {"nvml.event",
                                       "nvml.pid",
                                       "nvml.sm_util",
                                       "nvml.mem_util",
                                       "nvml.memory_used",
                                       "nvml.device.uuid",
                                       "nvml.device.index",
                                       "nvml.device.minor",
                                       "nvml.device.pci_bus_id",
                                       "nvml.device.memory_used",
                                       "nvml.device.memory_total",
                                       "nvml.device.sm_util",
                                       "nvml.device.mem_util",
                                       "nvml.device.process_count",
                                       "nvml.device.processes_dropped",
                                       "nvml.device.ecc",
                                       "nvml.device.ecc_pending",
                                       "nvml.devices"};
  EXPECT_EQ(names, expected);
}

TEST_F(NvmlPluginTest, RejectsBadConfigWithAClearError) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not valid JSON"},
      {"[1, 2]", "must be a JSON object"},
      {"\"1s\"", "must be a JSON object"},
      {"{\"intervall\": \"1s\"}", "unknown key 'intervall'"},
      {"{\"interval\": 1}", "interval must be a string"},
      {"{\"interval\": \"1.5s\"}", "is not a duration"},
      {"{\"interval\": \"s\"}", "is not a duration"},
      {"{\"interval\": \"10\"}", "is not a duration"},
      {"{\"interval\": \"-1s\"}", "is not a duration"},
      {"{\"interval\": \"99ms\"}", "between 100ms and 1h"},
      {"{\"interval\": \"61m\"}", "between 100ms and 1h"},
      {"{\"interval\": \"99999999999999999999h\"}", "is not a duration"},
      {"{\"nvml_library\": 3}", "nvml_library must be a string"},
      {"{\"nvml_library\": \"\"}", "nvml_library must be a non-empty path"},
      {"{\"max_processes\": 0}", "max_processes must be an integer from 1 to 4096"},
      {"{\"max_processes\": -5}", "max_processes must be an integer from 1 to 4096"},
      {"{\"max_processes\": 4097}", "max_processes must be an integer from 1 to 4096"},
      {"{\"max_processes\": 2.5}", "max_processes must be an integer from 1 to 4096"},
      {"{\"max_processes\": \"10\"}", "max_processes must be an integer from 1 to 4096"},
  };
  for (const auto& [cfg, want] : cases) {
    char err[256] = {};
    vigil_plugin_state* s = lib_.init(host_.host(), cfg.c_str(), err, sizeof err);
    EXPECT_EQ(s, nullptr) << cfg;
    if (s != nullptr) lib_.destroy(s);
    EXPECT_NE(std::string(err).find(want), std::string::npos) << cfg << " -> " << err;
    EXPECT_EQ(std::string(err).rfind("nvml init_config: ", 0), 0u) << err;
  }
  // A small error buffer is cut, still terminated.
  char small[8];
  std::memset(small, 'x', sizeof small);
  EXPECT_EQ(lib_.init(host_.host(), "{", small, sizeof small), nullptr);
  EXPECT_EQ(small[7], '\0');
}

TEST_F(NvmlPluginTest, AcceptsDefaultsAndEveryKey) {
  write_table(kTable);
  for (const char* cfg : {"", "{}", "  ", "null"}) {
    char err[256] = {};
    // Defaults name libnvidia-ml.so.1, absent here or not: init succeeds either way.
    vigil_plugin_state* s = lib_.init(host_.host(), cfg, err, sizeof err);
    ASSERT_NE(s, nullptr) << cfg << ": " << err;
    lib_.destroy(s);
  }
  char err[256] = {};
  vigil_plugin_state* s = lib_.init(host_.host(), nullptr, err, sizeof err);
  ASSERT_NE(s, nullptr) << err;
  lib_.destroy(s);
  for (const char* interval : {"100ms", "500ms", "1s", "2m", "1h"}) {
    start(config(std::string("\"max_processes\": 4096, \"interval\": \"") + interval + "\""));
    lib_.destroy(state_);
    state_ = nullptr;
  }
}

TEST_F(NvmlPluginTest, WithoutNvmlWarnsOnceAndEnds) {
  write_table(kTable);
  start(config("", "/nonexistent/libnvidia-ml.so.1"));
  auto warnings = host_.warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("cannot load"), std::string::npos) << warnings[0];
  const vigil_event* evs = nullptr;
  uint32_t n = 7;
  EXPECT_EQ(lib_.next_batch(state_, 16, 100, &evs, &n), VIGIL_RC_EOF);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(lib_.next_batch(state_, 16, 0, &evs, &n), VIGIL_RC_EOF);
  EXPECT_EQ(host_.warnings().size(), 1u);
}

TEST_F(NvmlPluginTest, FailingNvmlInitWarnsAndEnds) {
  write_table(kTable + "fail init 9\n");
  auto shutdowns = fake_fn<int (*)()>("fake_nvml_shutdown_calls");
  int before = shutdowns();
  start(config());
  auto warnings = host_.warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("nvmlInit_v2"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("Driver Not Loaded (9)"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find(VIGIL_FAKE_NVML), std::string::npos) << warnings[0];
  const vigil_event* evs = nullptr;
  uint32_t n = 0;
  EXPECT_EQ(lib_.next_batch(state_, 16, 0, &evs, &n), VIGIL_RC_EOF);
  lib_.destroy(state_);
  state_ = nullptr;
  EXPECT_EQ(shutdowns(), before);  // NVML never came up: nothing to shut down
}

TEST_F(NvmlPluginTest, NoTableMeansNoDriver) {
  unsetenv("VIGIL_FAKE_NVML_TABLE");
  start(config());
  ASSERT_EQ(host_.warnings().size(), 1u);
  const vigil_event* evs = nullptr;
  uint32_t n = 0;
  EXPECT_EQ(lib_.next_batch(state_, 16, 0, &evs, &n), VIGIL_RC_EOF);
}

TEST_F(NvmlPluginTest, MissingEntryPointWarnsNamingItAndEnds) {
  write_table(kTable);
  start(config("", VIGIL_FAKE_NVML_NOSYM));
  auto warnings = host_.warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("nvmlDeviceGetProcessUtilization"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find(VIGIL_FAKE_NVML_NOSYM), std::string::npos) << warnings[0];
  const vigil_event* evs = nullptr;
  uint32_t n = 0;
  EXPECT_EQ(lib_.next_batch(state_, 16, 0, &evs, &n), VIGIL_RC_EOF);
}

TEST_F(NvmlPluginTest, SamplesTheScriptedTable) {
  write_table(kTable);
  start(config());
  auto events = next_sample();
  ASSERT_EQ(events.size(), 6u);
  struct Want {
    const char* name;
    uint32_t pid;
    int32_t minor;
  };
  const Want want[] = {{"device_sample", 0, 0}, {"process_sample", 4242, 0}, {"process_sample", 4343, 0},
                       {"device_sample", 0, 3}, {"process_sample", 5151, 3}, {"process_sample", 7777, 3}};
  for (std::size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].name, want[i].name) << i;
    EXPECT_EQ(events[i].pid, want[i].pid) << i;
    EXPECT_EQ(events[i].tid, 0u) << i;
    EXPECT_EQ(events[i].gpu_minor, want[i].minor) << i;
    EXPECT_EQ(events[i].data.size(), 208u) << i;
    EXPECT_EQ(events[i].ts_ns, events[0].ts_ns) << i;  // one sample, one time
  }
  EXPECT_GT(events[0].ts_ns, 1'600'000'000'000'000'000ull);  // wall clock, ns
  EXPECT_TRUE(host_.warnings().empty());
}

TEST_F(NvmlPluginTest, ExtractsEveryField) {
  write_table(kTable);
  start(config());
  auto events = next_sample();
  ASSERT_EQ(events.size(), 6u);
  Fields device0 = {{"nvml.event", "device_sample"},
                    {"nvml.pid", "<NA>"},
                    {"nvml.sm_util", "<NA>"},
                    {"nvml.mem_util", "<NA>"},
                    {"nvml.memory_used", "<NA>"},
                    {"nvml.device.uuid", kUuid0},
                    {"nvml.device.index", "0"},
                    {"nvml.device.minor", "0"},
                    {"nvml.device.pci_bus_id", "00000000:3B:00.0"},
                    {"nvml.device.memory_used", "4294967296"},
                    {"nvml.device.memory_total", "85899345920"},
                    {"nvml.device.sm_util", "81"},   // 51 + 30
                    {"nvml.device.mem_util", "21"},  // 16 + 5
                    {"nvml.device.process_count", "2"},
                    {"nvml.device.processes_dropped", "0"},
                    {"nvml.device.ecc", "on"},
                    {"nvml.device.ecc_pending", "on"},
                    {"nvml.devices", "2"}};
  EXPECT_EQ(extract_all(events[0]), device0);

  Fields p4242 = device0;
  p4242["nvml.event"] = "process_sample";
  p4242["nvml.pid"] = "4242";
  p4242["nvml.sm_util"] = "51";   // mean of 40 and 61, rounded
  p4242["nvml.mem_util"] = "16";  // mean of 10 and 21, rounded
  p4242["nvml.memory_used"] = "3221225472";
  EXPECT_EQ(extract_all(events[1]), p4242);

  Fields p4343 = p4242;
  p4343["nvml.pid"] = "4343";
  p4343["nvml.sm_util"] = "30";
  p4343["nvml.mem_util"] = "5";
  p4343["nvml.memory_used"] = "<NA>";  // NVML_VALUE_NOT_AVAILABLE
  EXPECT_EQ(extract_all(events[2]), p4343);

  Fields device1 = device0;
  device1["nvml.device.uuid"] = kUuid1;
  device1["nvml.device.index"] = "1";
  device1["nvml.device.minor"] = "3";
  device1["nvml.device.pci_bus_id"] = "00000000:86:00.0";
  device1["nvml.device.memory_used"] = "1073741824";
  device1["nvml.device.sm_util"] = "12";
  device1["nvml.device.mem_util"] = "3";
  device1["nvml.device.ecc"] = "off";
  device1["nvml.device.ecc_pending"] = "on";
  EXPECT_EQ(extract_all(events[3]), device1);

  Fields p5151 = device1;
  p5151["nvml.event"] = "process_sample";
  p5151["nvml.pid"] = "5151";
  p5151["nvml.sm_util"] = "0";  // a compute process without samples: idle
  p5151["nvml.mem_util"] = "0";
  p5151["nvml.memory_used"] = "1073741824";
  EXPECT_EQ(extract_all(events[4]), p5151);

  Fields p7777 = p5151;
  p7777["nvml.pid"] = "7777";  // only in the utilisation samples
  p7777["nvml.sm_util"] = "12";
  p7777["nvml.mem_util"] = "3";
  p7777["nvml.memory_used"] = "<NA>";
  EXPECT_EQ(extract_all(events[5]), p7777);

  // A subset of fields in any order, one of them twice.
  int sm = lib_.field_index("nvml.sm_util");
  int uuid = lib_.field_index("nvml.device.uuid");
  vigil_extract_request reqs[3] = {};
  reqs[0].field = static_cast<uint32_t>(uuid);
  reqs[1].field = static_cast<uint32_t>(sm);
  reqs[2].field = static_cast<uint32_t>(uuid);
  vigil_event ev = events[1].view();
  ASSERT_EQ(lib_.extract(state_, &ev, reqs, 3), VIGIL_RC_OK);
  EXPECT_STREQ(reqs[0].value.str, kUuid0);
  EXPECT_EQ(reqs[1].value.u64, 51u);
  EXPECT_STREQ(reqs[2].value.str, kUuid0);
}

TEST_F(NvmlPluginTest, UnknownValuesAreNotAvailable) {
  write_table(kTable + "fail minor 3\nfail uuid 3\nfail pci 3\nfail memory 15\nfail util 3\n");
  start(config());
  auto events = next_sample();
  ASSERT_EQ(events.size(), 6u - 1u);  // 7777 was known only from its utilisation samples
  for (const auto& e : events) EXPECT_EQ(e.gpu_minor, -1) << e.name;
  Fields d = extract_all(events[0]);
  for (const char* f : {"nvml.device.uuid", "nvml.device.minor", "nvml.device.pci_bus_id", "nvml.device.memory_used",
                        "nvml.device.memory_total", "nvml.device.sm_util", "nvml.device.mem_util"}) {
    EXPECT_EQ(d[f], "<NA>") << f;
  }
  EXPECT_EQ(d["nvml.device.index"], "0");
  EXPECT_EQ(d["nvml.device.process_count"], "2");
  Fields p = extract_all(events[1]);
  EXPECT_EQ(p["nvml.pid"], "4242");
  EXPECT_EQ(p["nvml.memory_used"], "3221225472");
  EXPECT_EQ(p["nvml.sm_util"], "<NA>");
  EXPECT_EQ(p["nvml.mem_util"], "<NA>");
  // Not Supported utilisation is normal on older GPUs: no warning for it.
  // Every other failure is warned once per device, not once per sample.
  auto warnings = host_.warnings();
  EXPECT_EQ(warnings.size(), 8u);  // uuid, minor, pci, memory on each of 2 devices
  for (const auto& w : warnings) EXPECT_EQ(w.find("Utilization"), std::string::npos) << w;
}

TEST_F(NvmlPluginTest, WarnsOncePerDistinctFailure) {
  write_table(kTable + "fail memory 15\n");
  start(config("\"interval\": \"100ms\""));
  EXPECT_EQ(next_sample().size(), 6u);
  EXPECT_EQ(next_sample().size(), 5u);  // 7777 had no new utilisation sample
  auto warnings = host_.warnings();
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], "device 0: nvmlDeviceGetMemoryInfo failed: GPU is lost (15)");
  EXPECT_EQ(warnings[1], "device 1: nvmlDeviceGetMemoryInfo failed: GPU is lost (15)");
}

TEST_F(NvmlPluginTest, RejectsGarbledData) {
  write_table(kTable);
  start(config());
  auto events = next_sample();
  ASSERT_EQ(events.size(), 6u);
  uint32_t nfields = 0;
  lib_.get_fields(&nfields);
  auto try_extract = [&](const OwnedEvent& e, std::string* error) {
    std::vector<vigil_extract_request> reqs(nfields);
    for (uint32_t i = 0; i < nfields; ++i) {
      reqs[i].field = i;
      reqs[i].has_value = 1;  // the plugin must clear it
    }
    vigil_event ev = e.view();
    vigil_rc rc = lib_.extract(state_, &ev, reqs.data(), nfields);
    if (rc != VIGIL_RC_OK) {
      for (const auto& r : reqs) EXPECT_EQ(r.has_value, 0u);
      if (error != nullptr) *error = lib_.get_last_error(state_);
    }
    return rc;
  };
  const OwnedEvent good = events[1];
  std::string error;
  ASSERT_EQ(try_extract(good, nullptr), VIGIL_RC_OK);

  auto garbled = [&](auto&& change, const char* want) {
    OwnedEvent e = good;
    change(e);
    std::string err;
    EXPECT_EQ(try_extract(e, &err), VIGIL_RC_FAILURE) << want;
    EXPECT_NE(err.find(want), std::string::npos) << err;
  };
  garbled([](OwnedEvent& e) { e.data.clear(); }, "0 bytes is shorter");
  garbled([](OwnedEvent& e) { e.data.resize(199); }, "199 bytes is shorter");
  garbled([](OwnedEvent& e) { e.data.push_back(0); }, "version 2 of 209 bytes");
  garbled([](OwnedEvent& e) { e.data[4] = 1; }, "version 1 of 208 bytes");
  garbled([](OwnedEvent& e) { e.data[200] = 4; }, "ECC mode out of range");
  garbled([](OwnedEvent& e) { e.data[201] = 0xff; }, "ECC mode out of range");
  garbled([](OwnedEvent& e) { e.data[203] = 1; }, "ECC mode out of range");  // reserved bytes
  garbled([](OwnedEvent& e) { e.data[0] ^= 1; }, "magic");
  garbled([](OwnedEvent& e) { e.data[4] = 0; }, "version 0");
  garbled([](OwnedEvent& e) { e.data[6] = 9; }, "unknown kind 9");
  garbled([](OwnedEvent& e) { e.data[11] = 0x80; }, "unknown flags");
  garbled([](OwnedEvent& e) { e.data[64] = 101; }, "out of range");  // process SM util
  garbled([](OwnedEvent& e) { e.data[28] = 200; }, "out of range");  // device SM util
  garbled([](OwnedEvent& e) { e.data[24] = 9; }, "out of range");    // dropped > count
  garbled([](OwnedEvent& e) { e.data[16] = 248; }, "out of range");  // not a GPU minor
  garbled([](OwnedEvent& e) { std::fill(e.data.begin() + 36, e.data.begin() + 40, 0); }, "without a pid");
  garbled([](OwnedEvent& e) { e.data[72] = 0x07; }, "unprintable");
  garbled([](OwnedEvent& e) { std::fill(e.data.begin() + 72, e.data.begin() + 168, 'A'); }, "unterminated");
  garbled([](OwnedEvent& e) { e.data[199] = 'x'; }, "unterminated");  // past the bus id's NUL
  garbled([](OwnedEvent& e) { e.name = "device_sample"; }, "holds a process_sample record");
  OwnedEvent device = events[0];
  device.data[36] = 1;
  EXPECT_EQ(try_extract(device, &error), VIGIL_RC_FAILURE);
  EXPECT_NE(error.find("device record with a pid"), std::string::npos) << error;

  // A later version may append: its version-2 prefix is read.
  OwnedEvent later = good;
  later.data[4] = 3;
  later.data.resize(260, 0xee);
  EXPECT_EQ(try_extract(later, nullptr), VIGIL_RC_OK);
  EXPECT_EQ(extract_all(later)["nvml.device.ecc"], "on");

  // A version-1 record (before ECC) still reads, its ECC and device count unknown.
  OwnedEvent v1 = good;
  v1.data[4] = 1;
  v1.data.resize(200);
  ASSERT_EQ(try_extract(v1, nullptr), VIGIL_RC_OK);
  Fields old = extract_all(v1);
  EXPECT_EQ(old["nvml.pid"], "4242");
  EXPECT_EQ(old["nvml.device.ecc"], "<NA>");
  EXPECT_EQ(old["nvml.device.ecc_pending"], "<NA>");
  EXPECT_EQ(old["nvml.devices"], "<NA>");

  // No data at all, and a field index past the table.
  OwnedEvent none = good;
  none.data.clear();
  vigil_event ev = none.view();
  ev.data = nullptr;
  vigil_extract_request req{};
  EXPECT_EQ(lib_.extract(state_, &ev, &req, 1), VIGIL_RC_FAILURE);
  ev = good.view();
  req.field = nfields;
  EXPECT_EQ(lib_.extract(state_, &ev, &req, 1), VIGIL_RC_FAILURE);
  EXPECT_NE(std::string(lib_.get_last_error(state_)).find("no nvml field"), std::string::npos);
  EXPECT_EQ(lib_.extract(state_, &ev, nullptr, 0), VIGIL_RC_OK);

  // Random damage never crashes, and whatever is accepted still reads sanely.
  std::mt19937 rng(1234);
  for (int round = 0; round < 20000; ++round) {
    OwnedEvent e = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) e.data[rng() % e.data.size()] = static_cast<uint8_t>(rng());
    if (rng() % 8 == 0) e.data.resize(rng() % 260, static_cast<uint8_t>(rng()));
    std::vector<vigil_extract_request> reqs(nfields);
    for (uint32_t i = 0; i < nfields; ++i) reqs[i].field = i;
    vigil_event view = e.view();
    if (lib_.extract(state_, &view, reqs.data(), nfields) == VIGIL_RC_OK) {
      int util = lib_.field_index("nvml.sm_util");
      if (reqs[util].has_value) {
        EXPECT_LE(reqs[util].value.u64, 100u);
      }
    }
  }
}

TEST_F(NvmlPluginTest, UtilisationIsSinceTheLastSample) {
  write_table(kTable);
  start(config("\"interval\": \"100ms\""));
  auto last_seen = fake_fn<unsigned long long (*)(unsigned)>("fake_nvml_last_seen");
  auto first = next_sample();
  ASSERT_EQ(first.size(), 6u);
  EXPECT_EQ(last_seen(0), 0u);  // the first sample takes what NVML holds
  EXPECT_EQ(extract_all(first[1])["nvml.sm_util"], "51");

  // New samples arrive on GPU 0; GPU 1 has none.
  write_table(kTable + "util 0 pid=4242 ts=2500 sm=90 mem=70\n");
  auto second = next_sample();
  ASSERT_EQ(second.size(), 5u);    // 7777 had nothing new on GPU 1, and is gone
  EXPECT_EQ(last_seen(0), 2000u);  // the newest time stamp already used
  EXPECT_EQ(last_seen(1), 1200u);
  EXPECT_GT(second[0].ts_ns, first[0].ts_ns);
  Fields p4242 = extract_all(second[1]);
  EXPECT_EQ(p4242["nvml.sm_util"], "90");
  EXPECT_EQ(p4242["nvml.mem_util"], "70");
  Fields p4343 = extract_all(second[2]);
  EXPECT_EQ(p4343["nvml.sm_util"], "0");  // nothing new for it
  EXPECT_EQ(extract_all(second[0])["nvml.device.sm_util"], "90");
  EXPECT_EQ(second[3].pid, 0u);
  EXPECT_EQ(second[4].pid, 5151u);
  EXPECT_EQ(extract_all(second[3])["nvml.device.process_count"], "1");

  // Nothing new anywhere: NVML answers Not Found, which is 0%, not unknown.
  auto third = next_sample();
  EXPECT_EQ(last_seen(0), 2500u);
  EXPECT_EQ(extract_all(third[1])["nvml.sm_util"], "0");
  EXPECT_EQ(extract_all(third[0])["nvml.device.sm_util"], "0");
  EXPECT_TRUE(host_.warnings().empty());
}

TEST_F(NvmlPluginTest, BatchesHoldAtMostMax) {
  write_table(kTable);
  start(config());
  const vigil_event* evs = nullptr;
  uint32_t n = 0;
  ASSERT_EQ(lib_.next_batch(state_, 4, 1000, &evs, &n), VIGIL_RC_OK);
  EXPECT_EQ(n, 4u);
  std::vector<OwnedEvent> first;
  for (uint32_t i = 0; i < n; ++i) first.push_back(copy_event(evs[i]));
  ASSERT_EQ(lib_.next_batch(state_, 4, 0, &evs, &n), VIGIL_RC_OK);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(evs[0].pid, 5151u);
  // The earlier batch's copies still read (the plugin reused its buffers).
  EXPECT_EQ(extract_all(first[1])["nvml.pid"], "4242");
  EXPECT_EQ(lib_.next_batch(state_, 4, 0, &evs, &n), VIGIL_RC_TIMEOUT);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(lib_.next_batch(state_, 0, 0, &evs, &n), VIGIL_RC_FAILURE);
  EXPECT_EQ(lib_.next_batch(state_, 4, 0, nullptr, &n), VIGIL_RC_FAILURE);
}

TEST_F(NvmlPluginTest, WaitsForTheIntervalWithinTheTimeout) {
  write_table(kTable);
  start(config());  // 1s
  ASSERT_EQ(next_sample().size(), 6u);
  const vigil_event* evs = nullptr;
  uint32_t n = 0;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(lib_.next_batch(state_, 16, 50, &evs, &n), VIGIL_RC_TIMEOUT);
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, std::chrono::milliseconds(45));
  EXPECT_LT(waited, std::chrono::milliseconds(900));
  EXPECT_EQ(lib_.next_batch(state_, 16, 2000, &evs, &n), VIGIL_RC_OK);
  EXPECT_EQ(n, 5u);  // 7777 had no new utilisation sample
}

TEST_F(NvmlPluginTest, MaxProcessesBoundsEventsAndCountsTheRest) {
  // 100 processes: more than the plugin's first buffer, so it also retries
  // after NVML_ERROR_INSUFFICIENT_SIZE.
  std::string table = kTable;
  for (int pid = 10000; pid < 10100; ++pid) {
    table += "process 1 pid=" + std::to_string(pid) + " mem=1048576\n";
  }
  write_table(table);
  start(config("\"max_processes\": 10"));
  auto events = next_sample();
  ASSERT_EQ(events.size(), 3u + 1u + 10u);
  Fields d1 = extract_all(events[3]);
  EXPECT_EQ(d1["nvml.device.process_count"], "102");
  EXPECT_EQ(d1["nvml.device.processes_dropped"], "92");
  EXPECT_EQ(events[4].pid, 5151u);  // the lowest pids are kept
  EXPECT_EQ(events[5].pid, 7777u);
  EXPECT_EQ(events[6].pid, 10000u);
  EXPECT_EQ(events[13].pid, 10007u);
}

TEST_F(NvmlPluginTest, RetriesInsufficientSizeOnTheFirstCall) {
  write_table(kTable + "option insufficient_first 1\n");
  auto calls = fake_fn<int (*)()>("fake_nvml_procs_calls");
  start(config());
  int before = calls();
  auto events = next_sample();
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(calls() - before, 4);  // two calls per GPU
  EXPECT_TRUE(host_.warnings().empty());
}

TEST_F(NvmlPluginTest, HugeProcessCountsAreBounded) {
  write_table(kTable + "option procs_need 4000000000\n");
  start(config());
  auto events = next_sample();
  // Only the processes known from utilisation samples remain.
  ASSERT_EQ(events.size(), 5u);
  Fields d0 = extract_all(events[0]);
  EXPECT_EQ(d0["nvml.device.process_count"], "4000000000");
  EXPECT_EQ(d0["nvml.device.processes_dropped"], "3999999998");
  auto warnings = host_.warnings();
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("4000000000 compute processes"), std::string::npos) << warnings[0];
}

TEST_F(NvmlPluginTest, GarbageCountsAreNotTrusted) {
  // The process list claims 1000 entries in a 32-entry buffer; the
  // utilisation query claims 100000 samples; NVML claims 1000 GPUs.
  write_table(kTable + "option procs_count 1000\noption util_count 100000\noption device_count 1000\n");
  start(config());
  auto events = next_sample();
  ASSERT_EQ(events.size(), 2u + 3u);  // 2 GPUs; 4242, 4343, 7777 from utilisation samples
  EXPECT_EQ(events[1].pid, 4242u);
  Fields p = extract_all(events[1]);
  EXPECT_EQ(p["nvml.memory_used"], "<NA>");  // the process list was refused
  EXPECT_EQ(p["nvml.sm_util"], "51");
  auto warnings = host_.warnings();
  bool devices = false, garbled = false;
  for (const auto& w : warnings) {
    devices |= w.find("1000 devices; sampling the first 64") != std::string::npos;
    garbled |= w.find("count that does not match") != std::string::npos;
  }
  EXPECT_TRUE(devices);
  EXPECT_TRUE(garbled);
}

TEST_F(NvmlPluginTest, UnterminatedUuidIsNotUsed) {
  write_table(kTable + "option uuid_unterminated 1\n");
  start(config());
  auto events = next_sample();
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(extract_all(events[0])["nvml.device.uuid"], "<NA>");
  ASSERT_FALSE(host_.warnings().empty());
  EXPECT_NE(host_.warnings()[0].find("unterminated"), std::string::npos);
}

class NvmlStrideTest : public NvmlPluginTest, public ::testing::WithParamInterface<int> {};

TEST_P(NvmlStrideTest, ReadsProcessEntriesOfEverySize) {
  std::string table = kTable + "option stride " + std::to_string(GetParam()) + "\n";
  for (int pid = 20000; pid < 20040; ++pid) {
    table += "process 1 pid=" + std::to_string(pid) + " mem=" + std::to_string(pid * 4096) + "\n";
  }
  write_table(table);
  start(config());
  auto events = next_sample();
  ASSERT_EQ(events.size(), 6u + 40u);
  EXPECT_EQ(extract_all(events[1])["nvml.memory_used"], "3221225472");
  for (std::size_t i = 6; i < 46; ++i) {
    Fields p = extract_all(events[i]);
    EXPECT_EQ(p["nvml.memory_used"], std::to_string(events[i].pid * 4096ull)) << events[i].pid;
  }
  EXPECT_TRUE(host_.warnings().empty());
}

INSTANTIATE_TEST_SUITE_P(Strides, NvmlStrideTest, ::testing::Values(16, 24, 32));

TEST_F(NvmlPluginTest, DeviceCountFailureSkipsTheSampleAndRecovers) {
  write_table(kTable + "fail count 15\n");
  start(config("\"interval\": \"100ms\""));
  const vigil_event* evs = nullptr;
  uint32_t n = 0;
  EXPECT_EQ(lib_.next_batch(state_, 16, 0, &evs, &n), VIGIL_RC_TIMEOUT);
  ASSERT_EQ(host_.warnings().size(), 1u);
  EXPECT_NE(host_.warnings()[0].find("nvmlDeviceGetCount_v2 failed: GPU is lost (15)"), std::string::npos);
  write_table(kTable);
  EXPECT_EQ(next_sample().size(), 6u);
}

// nvmlDeviceGetEccMode per GPU: on, off, a change waiting for a reboot, no
// ECC (NVML_ERROR_NOT_SUPPORTED, not a warning: consumer GPUs have none), an
// error (unknown, warned once) and a mode NVML does not define (unknown).
TEST_F(NvmlPluginTest, ReadsEachGpusEccMode) {
  write_table(std::string() + "device 0 uuid=" + kUuid0 + " minor=0 pci=00000000:00:00.0 ecc=on\n" +  //
              "device 1 uuid=" + kUuid1 + " minor=1 pci=00000000:01:00.0 ecc=off\n" +                 //
              "device 2 uuid=GPU-2 minor=2 pci=00000000:02:00.0 ecc=on ecc_pending=off\n" +           //
              "device 3 uuid=GPU-3 minor=3 pci=00000000:03:00.0 ecc=unsupported\n" +                  //
              "device 4 uuid=GPU-4 minor=4 pci=00000000:04:00.0 ecc=on ecc_rc=15\n" +                 //
              "device 5 uuid=GPU-5 minor=5 pci=00000000:05:00.0 ecc=7\n" +                            //
              "device 6 uuid=GPU-6 minor=6 pci=00000000:06:00.0\n");  // the stand-in's default: no ECC
  start(config("\"interval\": \"100ms\""));
  auto events = next_sample();
  ASSERT_EQ(events.size(), 7u);
  const std::pair<const char*, const char*> want[] = {{"on", "on"},
                                                      {"off", "off"},
                                                      {"on", "off"},
                                                      {"unsupported", "unsupported"},
                                                      {"<NA>", "<NA>"},
                                                      {"<NA>", "<NA>"},
                                                      {"unsupported", "unsupported"}};
  for (std::size_t i = 0; i < events.size(); ++i) {
    Fields f = extract_all(events[i]);
    EXPECT_EQ(f["nvml.device.ecc"], want[i].first) << i;
    EXPECT_EQ(f["nvml.device.ecc_pending"], want[i].second) << i;
    EXPECT_EQ(f["nvml.devices"], "7") << i;
  }
  auto warnings = host_.warnings();
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], "device 4: nvmlDeviceGetEccMode failed: GPU is lost (15)");
  EXPECT_EQ(warnings[1], "device 5: nvmlDeviceGetEccMode returned a mode that is neither enabled nor disabled");

  // The table is re-read every sample: a change of mode shows in the next one.
  write_table(std::string() + "device 0 uuid=" + kUuid0 + " minor=0 pci=00000000:00:00.0 ecc=off\n");
  events = next_sample();
  ASSERT_EQ(events.size(), 1u);
  Fields f = extract_all(events[0]);
  EXPECT_EQ(f["nvml.device.ecc"], "off");
  EXPECT_EQ(f["nvml.devices"], "1");
  EXPECT_EQ(host_.warnings().size(), 2u);  // no new warning

  // A failure of every ECC query leaves every mode unknown, the rest known.
  write_table(std::string() + "device 0 uuid=" + kUuid0 + " minor=0 pci=00000000:00:00.0 ecc=on\nfail ecc 999\n");
  events = next_sample();
  ASSERT_EQ(events.size(), 1u);
  f = extract_all(events[0]);
  EXPECT_EQ(f["nvml.device.ecc"], "<NA>");
  EXPECT_EQ(f["nvml.device.uuid"], kUuid0);
}

TEST_F(NvmlPluginTest, DestroyShutsNvmlDown) {
  write_table(kTable);
  auto inits = fake_fn<int (*)()>("fake_nvml_init_calls");
  auto shutdowns = fake_fn<int (*)()>("fake_nvml_shutdown_calls");
  int i0 = inits(), s0 = shutdowns();
  start(config());
  EXPECT_EQ(inits(), i0 + 1);
  ASSERT_EQ(next_sample().size(), 6u);
  lib_.destroy(state_);
  state_ = nullptr;
  EXPECT_EQ(shutdowns(), s0 + 1);
}

}  // namespace
}  // namespace vigil::nvml::test
