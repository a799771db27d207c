// The nvml plugin's parts, without dlopen: configuration parsing, the event
// record codec and the sampler's merge and stride detection.
#include "plugins/nvml/config.h"
#include "plugins/nvml/record.h"
#include "plugins/nvml/sampler.h"

#include <gtest/gtest.h>

#include <limits>

namespace vigil::nvml {
namespace {

using std::chrono::milliseconds;

TEST(NvmlConfig, ParsesDurations) {
  EXPECT_EQ(parse_duration("500ms"), milliseconds(500));
  EXPECT_EQ(parse_duration("1s"), milliseconds(1000));
  EXPECT_EQ(parse_duration("2m"), milliseconds(120000));
  EXPECT_EQ(parse_duration("1h"), milliseconds(3600000));
  EXPECT_EQ(parse_duration("0s"), milliseconds(0));
  for (const char* bad : {"", "s", "1", "1 s", " 1s", "1S", "1.5s", "-1s", "1sec", "1ms ", "999999999999999s", "1us"}) {
    EXPECT_EQ(parse_duration(bad), std::nullopt) << bad;
  }
}

TEST(NvmlConfig, ReadsEveryKey) {
  std::string err;
  auto c = parse_config(R"({"nvml_library": "/opt/nvidia/libnvidia-ml.so.1", "interval": "250ms", "max_processes": 7})",
                        err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->nvml_library, "/opt/nvidia/libnvidia-ml.so.1");
  EXPECT_EQ(c->interval, milliseconds(250));
  EXPECT_EQ(c->max_processes, 7u);
  c = parse_config("{}", err);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->nvml_library, "libnvidia-ml.so.1");
  EXPECT_EQ(c->interval, milliseconds(1000));
  EXPECT_EQ(c->max_processes, 1024u);
}

TEST(NvmlConfig, RejectsALibraryPathWithNul) {
  std::string err;
  EXPECT_FALSE(parse_config(R"({"nvml_library": "lib\u0000nvml"})", err));
  EXPECT_NE(err.find("nvml_library"), std::string::npos);
  EXPECT_FALSE(parse_config(("{\"nvml_library\": \"" + std::string(5000, 'a') + "\"}").c_str(), err));
}

DeviceSample device() {
  DeviceSample d;
  d.index = 2;
  d.has_minor = true;
  d.minor = 5;
  d.uuid = "GPU-0f0f0f0f-1111-2222-3333-444444444444";
  d.pci_bus_id = "00000000:C1:00.0";
  d.has_memory = true;
  d.memory_total = 0x1400000000ull;
  d.memory_used = 0x0123456789ull;
  d.has_util = true;
  d.sm_util = 77;
  d.mem_util = 33;
  d.process_count = 9;
  d.processes_dropped = 4;
  return d;
}

TEST(NvmlRecord, RoundTripsBothKinds) {
  DeviceSample d = device();
  ProcessSample p{123456, true, 0xfedcba98ull, true, 66, 12};
  std::string why;
  RecordBytes b = encode(d, &p);
  auto r = decode(b.data(), b.size(), why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->kind, RecordKind::kProcess);
  EXPECT_EQ(r->device.index, 2u);
  EXPECT_TRUE(r->device.has_minor);
  EXPECT_EQ(r->device.minor, 5u);
  EXPECT_EQ(r->device.uuid, d.uuid);
  EXPECT_EQ(r->device.pci_bus_id, d.pci_bus_id);
  EXPECT_EQ(r->device.memory_total, d.memory_total);
  EXPECT_EQ(r->device.memory_used, d.memory_used);
  EXPECT_EQ(r->device.sm_util, 77u);
  EXPECT_EQ(r->device.mem_util, 33u);
  EXPECT_EQ(r->device.process_count, 9u);
  EXPECT_EQ(r->device.processes_dropped, 4u);
  EXPECT_EQ(r->process.pid, 123456u);
  EXPECT_EQ(r->process.memory_used, 0xfedcba98ull);
  EXPECT_EQ(r->process.sm_util, 66u);
  EXPECT_EQ(r->process.mem_util, 12u);

  d.has_minor = false;
  d.has_memory = false;
  d.has_util = false;
  d.uuid.clear();
  b = encode(d, nullptr);
  r = decode(b.data(), b.size(), why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->kind, RecordKind::kDevice);
  EXPECT_FALSE(r->device.has_minor);
  EXPECT_FALSE(r->device.has_memory);
  EXPECT_FALSE(r->device.has_util);
  EXPECT_EQ(r->device.uuid, "");
  EXPECT_EQ(r->process.pid, 0u);
}

TEST(NvmlRecord, IsLittleEndianAtFixedOffsets) {
  DeviceSample d = device();
  ProcessSample p{0x01020304, true, 0x1122334455667788ull, true, 9, 8};
  RecordBytes b = encode(d, &p);
  EXPECT_EQ(b[0], 'N');
  EXPECT_EQ(b[1], 'V');
  EXPECT_EQ(b[2], 'M');
  EXPECT_EQ(b[3], 'L');
  EXPECT_EQ(b[4], 2);
  EXPECT_EQ(b[6], 2);
  EXPECT_EQ(b[36], 0x04);
  EXPECT_EQ(b[39], 0x01);
  EXPECT_EQ(b[56], 0x88);
  EXPECT_EQ(b[63], 0x11);
  EXPECT_EQ(b[64], 9);
  EXPECT_EQ(b[72], 'G');
  EXPECT_EQ(b[168], '0');
}

TEST(NvmlRecord, CarriesEccModesAndTheSamplesDeviceCount) {
  DeviceSample d = device();
  d.ecc_current = EccMode::kOff;
  d.ecc_pending = EccMode::kOn;
  d.sample_devices = 8;
  RecordBytes b = encode(d, nullptr);
  EXPECT_EQ(b.size(), 208u);
  EXPECT_EQ(b[200], 1);  // off
  EXPECT_EQ(b[201], 2);  // on
  EXPECT_EQ(b[204], 8);
  std::string why;
  auto r = decode(b.data(), b.size(), why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->device.ecc_current, EccMode::kOff);
  EXPECT_EQ(r->device.ecc_pending, EccMode::kOn);
  EXPECT_EQ(r->device.sample_devices, 8u);
  d.ecc_current = d.ecc_pending = EccMode::kUnsupported;
  b = encode(d, nullptr);
  r = decode(b.data(), b.size(), why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->device.ecc_current, EccMode::kUnsupported);

  // A version-1 record is its first 200 bytes: ECC and the count unknown.
  b[4] = 1;
  r = decode(b.data(), 200, why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->device.ecc_current, EccMode::kUnknown);
  EXPECT_EQ(r->device.ecc_pending, EccMode::kUnknown);
  EXPECT_EQ(r->device.sample_devices, 0u);
  EXPECT_FALSE(decode(b.data(), b.size(), why));  // version 1 of 208 bytes
}

TEST(NvmlSampler, EccModesOfNvmlsEnableState) {
  EXPECT_EQ(ecc_mode_of(api::kFeatureEnabled), EccMode::kOn);
  EXPECT_EQ(ecc_mode_of(api::kFeatureDisabled), EccMode::kOff);
  EXPECT_EQ(ecc_mode_of(2), EccMode::kUnknown);
  EXPECT_EQ(ecc_mode_of(-1), EccMode::kUnknown);
}

TEST(NvmlRecord, CutsOverlongStringsKeepingATerminator) {
  DeviceSample d = device();
  d.uuid = std::string(200, 'u');
  d.pci_bus_id = std::string(40, 'p');
  RecordBytes b = encode(d, nullptr);
  std::string why;
  auto r = decode(b.data(), b.size(), why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->device.uuid, std::string(95, 'u'));
  EXPECT_EQ(r->device.pci_bus_id, std::string(31, 'p'));
}

TEST(NvmlRecord, RejectsMemoryUsedOverTotalAndNull) {
  DeviceSample d = device();
  d.memory_used = d.memory_total + 1;
  RecordBytes b = encode(d, nullptr);
  std::string why;
  EXPECT_FALSE(decode(b.data(), b.size(), why));
  EXPECT_NE(why.find("out of range"), std::string::npos);
  EXPECT_FALSE(decode(nullptr, 200, why));
}

TEST(NvmlSampler, DetectsTheProcessEntrySize) {
  for (unsigned stride : {16u, 24u, 32u}) {
    for (unsigned count : {1u, 2u, 7u}) {
      std::vector<std::uint8_t> buf(16 * 32, kProcessBufferFill);
      for (unsigned i = 0; i < count; ++i) {
        std::uint8_t* e = buf.data() + i * stride;
        std::fill(e, e + stride, 0);
        e[0] = static_cast<std::uint8_t>(i + 1);  // pid
        if (stride >= 24) std::fill(e + 16, e + 24, 0xff);
      }
      EXPECT_EQ(detect_process_stride(buf, count), stride) << stride << " x " << count;
    }
  }
  std::vector<std::uint8_t> buf(16 * 32, kProcessBufferFill);
  std::fill(buf.begin(), buf.begin() + 48, 0);  // 2 entries of 24 bytes
  EXPECT_EQ(detect_process_stride(buf, 2), 24u);
  EXPECT_EQ(detect_process_stride(buf, 1), std::nullopt);   // wrote more than it counts
  EXPECT_EQ(detect_process_stride(buf, 10), std::nullopt);  // counts more than it wrote
  EXPECT_EQ(detect_process_stride(buf, 0), std::nullopt);
  EXPECT_EQ(detect_process_stride(buf, 100), std::nullopt);  // past the buffer
}

api::ProcessUtilizationSample util(unsigned pid, unsigned long long ts, unsigned sm, unsigned mem) {
  api::ProcessUtilizationSample s{};
  s.pid = pid;
  s.time_stamp = ts;
  s.sm_util = sm;
  s.mem_util = mem;
  return s;
}

TEST(NvmlSampler, MergesProcessesAndSamples) {
  std::vector<ComputeEntry> compute = {{30, true, 100},
                                       {10, false, 0},
                                       {30, true, 50},          // 30 twice: two MIG instances
                                       {0, true, 1},            // pid 0: garbage
                                       {kMaxPid + 1, true, 1},  // past pid_max: garbage
                                       {40, true, std::numeric_limits<std::uint64_t>::max()},
                                       {40, true, 5}};  // saturates
  std::vector<api::ProcessUtilizationSample> samples = {util(10, 100, 20, 2),   util(10, 200, 41, 4),
                                                        util(10, 50, 100, 100),  // not newer than last_seen: ignored
                                                        util(20, 300, 101, 0),   // over 100%: ignored
                                                        util(20, 310, 30, 0),    // utilisation only
                                                        util(0, 400, 50, 50),    // pid 0: ignored
                                                        util(30, 999, 90, 0)};
  DeviceSample d;
  auto newest = merge_processes(compute, samples, true, 50, 16, d);
  EXPECT_EQ(newest, 999u);
  ASSERT_EQ(d.processes.size(), 4u);
  EXPECT_EQ(d.processes[0].pid, 10u);
  EXPECT_FALSE(d.processes[0].has_memory);
  EXPECT_EQ(d.processes[0].sm_util, 31u);  // (20 + 41) / 2, rounded
  EXPECT_EQ(d.processes[0].mem_util, 3u);
  EXPECT_EQ(d.processes[1].pid, 20u);
  EXPECT_EQ(d.processes[1].sm_util, 30u);
  EXPECT_EQ(d.processes[2].pid, 30u);
  EXPECT_EQ(d.processes[2].memory_used, 150u);
  EXPECT_EQ(d.processes[3].pid, 40u);
  EXPECT_EQ(d.processes[3].memory_used, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(d.sm_util, 100u);  // 31 + 30 + 90, capped
  EXPECT_EQ(d.mem_util, 3u);
  EXPECT_EQ(d.process_count, 4u);
  EXPECT_EQ(d.processes_dropped, 0u);
  EXPECT_TRUE(d.has_util);

  DeviceSample capped;
  merge_processes(compute, samples, true, 50, 1, capped);
  ASSERT_EQ(capped.processes.size(), 1u);
  EXPECT_EQ(capped.process_count, 4u);
  EXPECT_EQ(capped.processes_dropped, 3u);
  EXPECT_EQ(capped.sm_util, 100u);  // totals count every process

  DeviceSample no_util;
  EXPECT_EQ(merge_processes(compute, samples, false, 50, 16, no_util), 50u);
  EXPECT_EQ(no_util.processes.size(), 3u);  // 10, 30, 40: samples unused
  EXPECT_FALSE(no_util.has_util);
  EXPECT_FALSE(no_util.processes[0].has_util);
}

}  // namespace
}  // namespace vigil::nvml
