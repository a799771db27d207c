// The NVIDIA inventory record (type 6): codec round trip (empty, typical and
// largest lists), hostile bodies, the writer's snapshot and listener paths,
// rotation, and old files without it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/capture/codec.h"
#include "engine/capture/reader.h"
#include "engine/capture/writer.h"
#include "tests/engine/capture/sample_records.h"

namespace vigil::capture {
namespace {

namespace fs = std::filesystem;
using testing::encoded;
using testing::fixed_info;
using testing::fixed_options;
using TempDir = testing::ScratchDir;
using testing::sample_nvidia;

constexpr auto kNvidiaType = static_cast<std::uint8_t>(RecordType::kNvidia);
const char* const kSeedPath = "tests/fuzz/capture_reader_corpus/nvidia_inventory.vcap";
// Bare records: the fuzz target also frames its input as one block's records.
const char* const kRecordsSeedPath = "tests/fuzz/capture_reader_corpus/nvidia_inventory.records";

std::vector<RecordData> read_file(const std::string& path, std::string* error = nullptr) {
  std::vector<RecordData> out;
  auto r = CaptureReader::open(path);
  if (!r) {
    if (error) *error = r.error().message;
    return out;
  }
  Record rec;
  for (;;) {
    auto more = (*r)->next(rec);
    if (!more) {
      if (error) *error = more.error().message;
      break;
    }
    if (!*more) break;
    out.push_back(rec.data);
  }
  return out;
}

// The body of an encoded record (after its 5-byte header).
std::string_view body_of(const std::string& rec) { return std::string_view(rec).substr(kRecordHeaderSize); }

DecodeOutcome decode(std::string_view body, RecordData& out, std::string& why) {
  return decode_record(kNvidiaType, body, out, why);
}

state::NvidiaInfo largest() {
  state::NvidiaInfo n;
  n.uvm_major = 0xffffffffu;
  n.caps_major = 1;
  for (std::uint32_t i = 0; i < kMaxNvidiaGpus; ++i) {
    state::GpuInfo g;
    g.uuid = std::string(kMaxNvidiaString, static_cast<char>('a' + i % 26));
    g.pci = std::string(kMaxNvidiaString, static_cast<char>('0' + i % 10));
    g.minor = 0xffffffffu - i;
    g.model = std::string(kMaxNvidiaString, '\xff');
    n.gpus.push_back(std::move(g));
  }
  return n;
}

TEST(NvidiaRecord, RoundTripsEmptyTypicalAndLargestInventories) {
  for (const state::NvidiaInfo& n : {state::NvidiaInfo{}, sample_nvidia(), largest()}) {
    SCOPED_TRACE(n.gpus.size());
    std::string rec;
    append_nvidia(n, rec);
    EXPECT_EQ(static_cast<std::uint8_t>(rec[0]), kNvidiaType);
    EXPECT_EQ(get_u32(reinterpret_cast<const unsigned char*>(rec.data()) + 1), rec.size() - kRecordHeaderSize);
    EXPECT_EQ(encoded(RecordData{n}), rec);  // append_record takes the same path
    RecordData out;
    std::string why;
    ASSERT_EQ(decode(body_of(rec), out, why), DecodeOutcome::kOk) << why;
    ASSERT_TRUE(std::holds_alternative<state::NvidiaInfo>(out));
    EXPECT_EQ(std::get<state::NvidiaInfo>(out), n);
  }
}

TEST(NvidiaRecord, LayoutIsTheDocumentedOne) {
  state::NvidiaInfo n;
  n.uvm_major = 508;
  n.caps_major = 509;
  n.nvlink_major = 510;
  n.nvswitch_major = 511;
  n.gpus.push_back({"GPU-1", "0000:3b:00.0", 7, "H100"});
  std::string rec;
  append_nvidia(n, rec);
  std::string want;
  want.push_back(6);
  put_u32(want, 4 + 4 + 4 + (4 + 5) + (4 + 12) + 4 + (4 + 4) + 4 + 4);
  put_u32(want, 508);
  put_u32(want, 509);
  put_u32(want, 1);
  put_u32(want, 5);
  want += "GPU-1";
  put_u32(want, 12);
  want += "0000:3b:00.0";
  put_u32(want, 7);
  put_u32(want, 4);
  want += "H100";
  put_u32(want, 510);  // nvlink_major, appended later
  put_u32(want, 511);  // nvswitch_major
  EXPECT_EQ(rec, want);
  RecordData out;
  std::string why;
  ASSERT_EQ(decode(body_of(rec), out, why), DecodeOutcome::kOk) << why;
  EXPECT_EQ(std::get<state::NvidiaInfo>(out), n);
}

TEST(NvidiaRecord, WriterCutsAnInventoryBeyondTheFormatsBounds) {
  state::NvidiaInfo n = largest();
  n.gpus.push_back(n.gpus.front());
  n.gpus[0].model = std::string(kMaxNvidiaString + 100, 'm');
  std::string rec;
  append_nvidia(n, rec);
  RecordData out;
  std::string why;
  ASSERT_EQ(decode(body_of(rec), out, why), DecodeOutcome::kOk) << why;
  const auto& got = std::get<state::NvidiaInfo>(out);
  EXPECT_EQ(got.gpus.size(), kMaxNvidiaGpus);
  EXPECT_EQ(got.gpus[0].model, std::string(kMaxNvidiaString, 'm'));
}

TEST(NvidiaRecord, HostileBodiesAreMalformedWithoutAllocating) {
  RecordData out;
  std::string why;
  // 2^32 - 1 GPUs in a 12-byte body: refused by the bytes that remain.
  std::string body;
  put_u32(body, 508);
  put_u32(body, 509);
  put_u32(body, 0xffffffffu);
  EXPECT_EQ(decode(body, out, why), DecodeOutcome::kBad);
  EXPECT_NE(why.find("nvidia.gpus"), std::string::npos) << why;
  EXPECT_TRUE(std::holds_alternative<std::monostate>(out));

  // More GPUs than the format allows, each of them well formed.
  body.clear();
  put_u32(body, 0);
  put_u32(body, 0);
  put_u32(body, kMaxNvidiaGpus + 1);
  for (std::uint32_t i = 0; i <= kMaxNvidiaGpus; ++i) {
    put_u32(body, 0);
    put_u32(body, 0);
    put_u32(body, i);
    put_u32(body, 0);
  }
  why.clear();
  EXPECT_EQ(decode(body, out, why), DecodeOutcome::kBad);
  EXPECT_NE(why.find("nvidia.gpus"), std::string::npos) << why;

  // A string length past the bound (and past the body).
  body.clear();
  put_u32(body, 0);
  put_u32(body, 0);
  put_u32(body, 1);
  put_u32(body, 0x7fffffffu);
  body.append(16, 'x');
  why.clear();
  EXPECT_EQ(decode(body, out, why), DecodeOutcome::kBad);
  EXPECT_NE(why.find("nvidia.gpu.uuid"), std::string::npos) << why;
  // Within the body but longer than kMaxNvidiaString.
  body.clear();
  put_u32(body, 0);
  put_u32(body, 0);
  put_u32(body, 1);
  put_u32(body, 0);
  put_u32(body, kMaxNvidiaString + 1);
  body.append(kMaxNvidiaString + 1, 'p');
  put_u32(body, 0);
  put_u32(body, 0);
  why.clear();
  EXPECT_EQ(decode(body, out, why), DecodeOutcome::kBad);
  EXPECT_NE(why.find("nvidia.gpu.pci"), std::string::npos) << why;

  // Every cut of a real body short of its end is malformed, never a crash;
  // except the cut before the two majors appended later, which is what an
  // older writer wrote.
  std::string rec;
  append_nvidia(sample_nvidia(), rec);
  std::string_view full = body_of(rec);
  for (std::size_t n = 0; n < full.size(); ++n) {
    if (n == full.size() - 8) {
      EXPECT_EQ(decode(full.substr(0, n), out, why), DecodeOutcome::kOk) << why;
      EXPECT_EQ(std::get<state::NvidiaInfo>(out).nvlink_major, 0u);
      continue;
    }
    why.clear();
    EXPECT_EQ(decode(full.substr(0, n), out, why), DecodeOutcome::kBad) << "cut at " << n;
  }
}

// A later version may append fields: bytes after the last GPU are ignored.
TEST(NvidiaRecord, TrailingFieldsFromALaterVersionAreIgnored) {
  std::string rec;
  append_nvidia(sample_nvidia(), rec);
  std::string body(body_of(rec));
  body += "later";
  RecordData out;
  std::string why;
  ASSERT_EQ(decode(body, out, why), DecodeOutcome::kOk) << why;
  EXPECT_EQ(std::get<state::NvidiaInfo>(out), sample_nvidia());
}

TEST(NvidiaRecord, SnapshotStartsEveryFileRotatedOnesIncluded) {
  TempDir dir;
  auto opts = fixed_options();
  opts.block_size = 512;
  opts.rotate_bytes = 4096;
  opts.keep = 3;
  opts.snapshot = [] {
    Snapshot s;
    s.nvidia = sample_nvidia();
    state::Container c;
    c.id = std::string(64, 'c');
    c.cgroup_id = 77;
    s.containers.push_back(c);
    return s;
  };
  const std::string path = dir.file("rot.vcap");
  auto w = CaptureWriter::open(path, opts);
  ASSERT_TRUE(w);
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE((*w)->write_event(testing::sample_exec(10 + i, 100 + i, 1, 0, "/bin/true")));
  }
  ASSERT_TRUE((*w)->close());
  ASSERT_GE((*w)->stats().files, 3u);
  for (const std::string& p : {path, path + ".1", path + ".2"}) {
    SCOPED_TRACE(p);
    std::string error;
    auto recs = read_file(p, &error);
    ASSERT_EQ(error, "");
    ASSERT_GE(recs.size(), 3u);
    ASSERT_TRUE(std::holds_alternative<state::NvidiaInfo>(recs[0]));
    EXPECT_EQ(std::get<state::NvidiaInfo>(recs[0]), sample_nvidia());
    EXPECT_TRUE(std::holds_alternative<state::Container>(recs[1]));
  }
}

TEST(NvidiaRecord, ASnapshotWithoutInventoryWritesNone) {
  TempDir dir;
  auto opts = fixed_options();
  opts.snapshot = [] {
    Snapshot s;
    s.containers.emplace_back().id = "x";
    return s;
  };
  auto w = CaptureWriter::open(dir.file("n.vcap"), opts);
  ASSERT_TRUE(w);
  ASSERT_TRUE((*w)->close());
  auto recs = read_file(dir.file("n.vcap"));
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<state::Container>(recs[0]));
}

TEST(NvidiaRecord, ListenerAnnouncementIsRecordedInOrderWithEvents) {
  TempDir dir;
  auto w = CaptureWriter::open(dir.file("l.vcap"), fixed_options());
  ASSERT_TRUE(w);
  state::StateListener& listener = **w;
  ASSERT_TRUE((*w)->write_event(testing::sample_exec(5, 1, 0, 0, "/a")));
  listener.on_nvidia(sample_nvidia());
  ASSERT_TRUE((*w)->write_event(testing::sample_exec(6, 1, 0, 0, "/b")));
  ASSERT_TRUE((*w)->close());
  EXPECT_EQ((*w)->stats().records, 3u);
  EXPECT_EQ((*w)->stats().events, 2u);
  auto recs = read_file(dir.file("l.vcap"));
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<event::Event>(recs[0]));
  ASSERT_TRUE(std::holds_alternative<state::NvidiaInfo>(recs[1]));
  EXPECT_EQ(std::get<state::NvidiaInfo>(recs[1]), sample_nvidia());
  EXPECT_TRUE(std::holds_alternative<event::Event>(recs[2]));
}

// A reader that predates the record skips it by its length (the format's
// promise for new record types), and the events after it still read: shown by
// hiding the record behind a type number no reader knows.
TEST(NvidiaRecord, UnknownRecordTypesAroundItAreSkippedByLength) {
  TempDir dir;
  auto w = CaptureWriter::open(dir.file("u.vcap"), fixed_options());
  ASSERT_TRUE(w);
  std::string rec;
  append_nvidia(sample_nvidia(), rec);
  std::string unknown = rec;
  unknown[0] = static_cast<char>(200);
  ASSERT_TRUE((*w)->write_encoded(unknown, 1, 0, 0, 0));
  ASSERT_TRUE((*w)->write_encoded(rec, 1, 0, 0, 0));
  ASSERT_TRUE((*w)->write_event(testing::sample_exec(9, 1, 0, 0, "/a")));
  ASSERT_TRUE((*w)->close());
  auto r = CaptureReader::open(dir.file("u.vcap"));
  ASSERT_TRUE(r);
  Record got;
  ASSERT_TRUE(*(*r)->next(got));
  EXPECT_EQ(std::get<state::NvidiaInfo>(got.data), sample_nvidia());
  ASSERT_TRUE(*(*r)->next(got));
  EXPECT_TRUE(std::holds_alternative<event::Event>(got.data));
  EXPECT_EQ((*r)->stats().skipped_records, 1u);
}

// The fuzz target's seed with the record (tests/fuzz/capture_reader_corpus).
// VIGIL_UPDATE_FIXTURES=1 rewrites it; otherwise the committed one must read.
TEST(NvidiaRecord, FuzzSeedHoldsTheInventory) {
  if (std::getenv("VIGIL_UPDATE_FIXTURES")) {
    auto opts = fixed_options();
    opts.snapshot = [] {
      Snapshot s;
      s.nvidia = sample_nvidia();
      s.nvidia->gpus.push_back({"MIG-0", "", 3, ""});
      return s;
    };
    auto w = CaptureWriter::open(kSeedPath, opts);
    ASSERT_TRUE(w);
    ASSERT_TRUE((*w)->write_nvidia(state::NvidiaInfo{}));
    ASSERT_TRUE((*w)->write_event(testing::sample_exec(9, 1, 0, 0, "/a")));
    ASSERT_TRUE((*w)->close());
    std::string records;
    append_nvidia(sample_nvidia(), records);
    append_nvidia(state::NvidiaInfo{}, records);
    std::ofstream(kRecordsSeedPath, std::ios::binary) << records;
  }
  std::string error;
  auto recs = read_file(kSeedPath, &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(recs.size(), 3u);
  ASSERT_TRUE(std::holds_alternative<state::NvidiaInfo>(recs[0]));
  EXPECT_EQ(std::get<state::NvidiaInfo>(recs[0]).gpus.size(), 4u);
  EXPECT_EQ(std::get<state::NvidiaInfo>(recs[1]), state::NvidiaInfo{});

  std::ifstream in(kRecordsSeedPath, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string want;
  append_nvidia(sample_nvidia(), want);
  append_nvidia(state::NvidiaInfo{}, want);
  EXPECT_EQ(ss.str(), want);
}

}  // namespace
}  // namespace vigil::capture
