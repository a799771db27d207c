// Capture file format: round trip, truncation, corruption, versioning, rotation.
#include <gtest/gtest.h>

#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "engine/capture/codec.h"
#include "engine/capture/reader.h"
#include "engine/capture/writer.h"
#include "engine/event/schema.h"
#include "tests/engine/capture/sample_records.h"

namespace vigil::capture {
namespace {

namespace fs = std::filesystem;
using testing::encoded;
using testing::fixed_info;
using testing::fixed_options;
using TempDir = testing::ScratchDir;
using testing::sample_records;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Reads every record; returns the error message if reading failed.
struct ReadAll {
  std::vector<Record> records;
  std::string error;
  bool truncated = false;
};

ReadAll read_all_from(std::unique_ptr<CaptureReader> r) {
  ReadAll out;
  Record rec;  // one Record for all, as replay does: decoding reuses it
  for (;;) {
    auto more = r->next(rec);
    if (!more) {
      out.error = more.error().message;
      break;
    }
    if (!*more) break;
    out.records.push_back(rec);
  }
  out.truncated = r->truncated();
  return out;
}

ReadAll read_bytes(std::string bytes) {
  auto r = CaptureReader::from_memory(std::move(bytes));
  if (!r) return ReadAll{{}, r.error().message, false};
  return read_all_from(std::move(*r));
}

// Writes `recs` with one block per `per_block` records; returns the file bytes
// and the end offset of every block.
std::string write_blocks(const std::vector<RecordData>& recs, std::size_t per_block,
                         std::vector<std::size_t>* block_ends, const std::string& path, int zstd_level = 3) {
  auto opts = fixed_options();
  opts.zstd_level = zstd_level;
  auto w = CaptureWriter::open(path, opts);
  EXPECT_TRUE(w) << (w ? "" : w.error().message);
  std::size_t header = encode_file_header(fixed_info()).size();
  if (block_ends) block_ends->push_back(header);
  for (std::size_t i = 0; i < recs.size(); ++i) {
    EXPECT_TRUE((*w)->write_record(recs[i]));
    if ((i + 1) % per_block == 0) {
      EXPECT_TRUE((*w)->flush());
      if (block_ends) block_ends->push_back((*w)->stats().bytes);
    }
  }
  EXPECT_TRUE((*w)->close());
  if (block_ends && block_ends->back() != (*w)->stats().bytes) {
    block_ends->push_back((*w)->stats().bytes);
  }
  return slurp(path);
}

TEST(CaptureFormat, RoundTripsEveryEventAndStateRecordField) {
  TempDir dir;
  auto recs = sample_records();
  for (int level : {0, 3}) {
    std::string bytes = write_blocks(recs, 4, nullptr, dir.file("rt.vcap"), level);
    auto got = read_bytes(bytes);
    ASSERT_EQ(got.error, "");
    ASSERT_EQ(got.records.size(), recs.size());
    for (std::size_t i = 0; i < recs.size(); ++i) {
      EXPECT_EQ(got.records[i].data.index(), recs[i].index()) << i;
      EXPECT_EQ(encoded(got.records[i].data), encoded(recs[i])) << "record " << i;
    }
    EXPECT_FALSE(got.truncated);
  }
  // Spot-check decoded values (the encoding comparison above covers every field).
  auto got = read_bytes(slurp(dir.file("rt.vcap")));
  const auto& pod = std::get<state::Pod>(got.records[1].data);
  EXPECT_EQ(pod.labels.at("team"), "research");
  EXPECT_EQ(pod.containers.at(0).gpu_devices.at(1), "GPU-2");
  const auto* payload = std::get<event::Event>(got.records[13].data).as<event::PayloadData>();
  ASSERT_NE(payload, nullptr);
  EXPECT_EQ(payload->bytes.size(), 32u);
  EXPECT_EQ(payload->bytes.back(), '\x01');
  const auto& ioctl = std::get<event::Event>(got.records[9].data);
  EXPECT_EQ(ioctl.hdr.type, event::Type::kIoctl);
  EXPECT_EQ(ioctl.as<event::IoctlData>()->rm_control, 0x20800a4cu);
}

// The round trip above proves the codec only for the payloads the samples
// hold: a payload added to the schema must get a sample too.
TEST(CaptureFormat, SamplesHoldEveryPayloadKind) {
  std::set<std::size_t> kinds;
  for (const RecordData& rd : sample_records()) {
    if (const auto* ev = std::get_if<event::Event>(&rd)) kinds.insert(ev->data.index());
  }
  for (std::size_t k = 1; k < event::kPayloadKinds; ++k) {
    EXPECT_TRUE(kinds.count(k)) << "no sample event with payload kind " << k;
  }
}

TEST(CaptureFormat, AnEventWhosePayloadIsNotItsTypesIsMalformed) {
  event::Event ev;
  ev.hdr.type = event::Type::kExec;
  ev.data = event::OpenData{};  // the wrong payload for an exec
  std::string rec;
  append_event(ev, rec);
  RecordData out;
  std::string why;
  auto type = static_cast<std::uint8_t>(rec[0]);
  EXPECT_EQ(decode_record(type, std::string_view(rec).substr(kRecordHeaderSize), out, why), DecodeOutcome::kBad);
  EXPECT_NE(why.find("payload_kind"), std::string::npos) << why;
}

TEST(CaptureFormat, HeaderCarriesHostAndClockInformation) {
  TempDir dir;
  auto opts = fixed_options();
  auto w = CaptureWriter::open(dir.file("h.vcap"), opts);
  ASSERT_TRUE(w);
  ASSERT_TRUE((*w)->close());
  auto r = CaptureReader::open(dir.file("h.vcap"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ((*r)->info().format_version, 1);
  EXPECT_EQ((*r)->info().hostname, "gpu-node-1");
  EXPECT_EQ((*r)->info().kernel, "6.1.0-test");
  EXPECT_EQ((*r)->info().boot_time_ns, fixed_info().boot_time_ns);
  Record rec;
  auto more = (*r)->next(rec);
  ASSERT_TRUE(more);
  EXPECT_FALSE(*more);

  auto host = describe_host();
  EXPECT_FALSE(host.kernel.empty());
  EXPECT_GT(host.boot_time_ns, 0u);
  EXPECT_LE(host.boot_time_ns, host.created_ns);
}

TEST(CaptureFormat, TruncationAtEveryBlockBoundaryReadsTheWholeBlocksBefore) {
  TempDir dir;
  auto recs = sample_records();
  std::vector<std::size_t> ends;
  std::string bytes = write_blocks(recs, 3, &ends, dir.file("t.vcap"));
  ASSERT_GE(ends.size(), 5u);
  for (std::size_t b = 0; b < ends.size(); ++b) {
    std::size_t whole = std::min(b * 3, recs.size());
    // Exactly at the boundary: a clean end.
    auto at = read_bytes(bytes.substr(0, ends[b]));
    EXPECT_EQ(at.error, "") << "cut at " << ends[b];
    EXPECT_EQ(at.records.size(), whole) << "cut at " << ends[b];
    EXPECT_FALSE(at.truncated);
    // One byte into the next block, and one byte short of its end: truncated.
    if (b + 1 < ends.size()) {
      for (std::size_t cut : {ends[b] + 1, ends[b] + 39, ends[b] + 40, ends[b + 1] - 1}) {
        auto in = read_bytes(bytes.substr(0, cut));
        EXPECT_EQ(in.error, "") << "cut at " << cut;
        EXPECT_EQ(in.records.size(), whole) << "cut at " << cut;
        EXPECT_TRUE(in.truncated) << "cut at " << cut;
      }
    }
  }
}

TEST(CaptureFormat, TruncationAtRandomOffsetsNeverLosesAWholeBlock) {
  TempDir dir;
  std::vector<RecordData> recs;
  for (int i = 0; i < 400; ++i) {
    recs.emplace_back(testing::sample_exec(1000 + i, 100 + i, 1, 0, "/bin/x" + std::to_string(i)));
  }
  std::vector<std::size_t> ends;
  std::string bytes = write_blocks(recs, 25, &ends, dir.file("r.vcap"));
  std::mt19937 rng(42);
  std::uniform_int_distribution<std::size_t> pick(ends[0], bytes.size());
  for (int i = 0; i < 300; ++i) {
    std::size_t cut = pick(rng);
    std::size_t whole_blocks = 0;
    while (whole_blocks + 1 < ends.size() && ends[whole_blocks + 1] <= cut) ++whole_blocks;
    auto got = read_bytes(bytes.substr(0, cut));
    ASSERT_EQ(got.error, "") << "cut at " << cut;
    ASSERT_EQ(got.records.size(), whole_blocks * 25) << "cut at " << cut;
    for (std::size_t k = 0; k < got.records.size(); ++k) {
      ASSERT_EQ(encoded(got.records[k].data), encoded(recs[k]));
    }
  }
}

TEST(CaptureFormat, TruncatedFileHeaderIsAnErrorNamingTheOffset) {
  std::string header = encode_file_header(fixed_info());
  auto got = read_bytes(header.substr(0, 30));
  EXPECT_NE(got.error.find("file header cut short"), std::string::npos) << got.error;
  EXPECT_NE(got.error.find("offset 30"), std::string::npos) << got.error;
  got = read_bytes("");
  EXPECT_NE(got.error.find("not a vigil capture"), std::string::npos) << got.error;
  EXPECT_NE(got.error.find("offset 0"), std::string::npos) << got.error;
}

TEST(CaptureFormat, CorruptedBlockChecksumIsAnErrorWithTheBlockOffset) {
  TempDir dir;
  auto recs = sample_records();
  std::vector<std::size_t> ends;
  std::string bytes = write_blocks(recs, 5, &ends, dir.file("c.vcap"));
  // Flip one payload byte in the second block.
  std::string bad = bytes;
  bad[ends[1] + kBlockHeaderSize + 3] ^= 0x40;
  auto got = read_bytes(bad);
  EXPECT_EQ(got.records.size(), 5u);  // the first block is still read
  EXPECT_NE(got.error.find("block checksum mismatch"), std::string::npos) << got.error;
  EXPECT_NE(got.error.find("offset " + std::to_string(ends[1] + 20)), std::string::npos) << got.error;
  // A damaged header checksum.
  bad = bytes;
  bad[20] ^= 1;
  got = read_bytes(bad);
  EXPECT_NE(got.error.find("file header checksum mismatch"), std::string::npos) << got.error;
  // Garbage where a block should start.
  bad = bytes;
  bad[ends[2]] = 'X';
  got = read_bytes(bad);
  EXPECT_EQ(got.records.size(), 10u);
  EXPECT_NE(got.error.find("bad block magic"), std::string::npos) << got.error;
  EXPECT_NE(got.error.find("offset " + std::to_string(ends[2])), std::string::npos) << got.error;
}

TEST(CaptureFormat, NewerFormatVersionIsRefusedWithAClearMessage) {
  std::string header = encode_file_header(fixed_info());
  header[8] = 2;
  auto got = read_bytes(header);
  EXPECT_NE(got.error.find("unsupported capture format version 2"), std::string::npos) << got.error;
  EXPECT_NE(got.error.find("offset 8"), std::string::npos) << got.error;
}

TEST(CaptureFormat, OversizedLengthsAreRejectedBeforeAllocating) {
  TempDir dir;
  std::vector<std::size_t> ends;
  std::string bytes = write_blocks(sample_records(), 100, &ends, dir.file("o.vcap"));
  std::string bad = bytes;
  std::string huge;
  put_u32(huge, 0xfffffff0u);
  bad.replace(ends[0] + 8, 4, huge);
  auto got = read_bytes(bad);
  EXPECT_NE(got.error.find("exceeds the limit"), std::string::npos) << got.error;
}

// A record type and an event type from a later version are skipped by length;
// the records around them still read.
TEST(CaptureFormat, FutureRecordAndEventTypesAreSkipped) {
  TempDir dir;
  auto opts = fixed_options();
  auto w = CaptureWriter::open(dir.file("f.vcap"), opts);
  ASSERT_TRUE(w);
  auto recs = sample_records();
  ASSERT_TRUE((*w)->write_record(recs[3]));
  std::string future;
  future.push_back(static_cast<char>(200));  // record type 200
  put_u32(future, 6);
  future.append("future");
  ASSERT_TRUE((*w)->write_encoded(future, 1, 0, 0, 0));
  // An event whose type number is beyond this version's kCount.
  std::string ev = encoded(recs[4]);
  ev[kRecordHeaderSize + 8] = static_cast<char>(event::Type::kCount) + 3;
  ASSERT_TRUE((*w)->write_encoded(ev, 1, 1, 5, 5));
  ASSERT_TRUE((*w)->write_record(recs[5]));
  ASSERT_TRUE((*w)->close());
  auto r = CaptureReader::open(dir.file("f.vcap"));
  ASSERT_TRUE(r);
  auto got = read_all_from(std::move(*r));
  ASSERT_EQ(got.error, "");
  ASSERT_EQ(got.records.size(), 2u);
  EXPECT_EQ(encoded(got.records[0].data), encoded(recs[3]));
  EXPECT_EQ(encoded(got.records[1].data), encoded(recs[5]));
}

// A later version may append fields to a record: the extra bytes are ignored.
TEST(CaptureFormat, ExtraTrailingFieldsInARecordAreIgnored) {
  auto recs = sample_records();
  std::string rec = encoded(recs[4]);
  std::uint32_t len = get_u32(reinterpret_cast<const unsigned char*>(rec.data()) + 1);
  std::string grown = rec.substr(0, 1);
  put_u32(grown, len + 3);
  grown.append(rec.substr(kRecordHeaderSize));
  grown.append("new");
  RecordData out;
  std::string why;
  ASSERT_EQ(decode_record(static_cast<std::uint8_t>(RecordType::kEvent),
                          std::string_view(grown).substr(kRecordHeaderSize), out, why),
            DecodeOutcome::kOk);
  EXPECT_EQ(encoded(out), rec);
  // A short body is an error naming the field.
  ASSERT_EQ(decode_record(static_cast<std::uint8_t>(RecordType::kEvent),
                          std::string_view(rec).substr(kRecordHeaderSize, 20), out, why),
            DecodeOutcome::kBad);
  EXPECT_NE(why.find("event."), std::string::npos) << why;
}

// The body of encoded record `rec` (after its header) without its last
// `tail` bytes: with a tail, what a writer before those fields wrote.
std::string_view body_of(const std::string& rec, std::size_t tail = 0) {
  return std::string_view(rec).substr(kRecordHeaderSize, rec.size() - kRecordHeaderSize - tail);
}

// Decodes `body` as a record of rec's type into `out`; the reader's reason
// when it refuses it.
::testing::AssertionResult decodes(const std::string& rec, std::string_view body, RecordData& out) {
  std::string why;
  if (decode_record(static_cast<std::uint8_t>(rec[0]), body, out, why) == DecodeOutcome::kOk)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << why;
}

// The bytes of the program identity appended to a process record or an exec
// payload when its strings (and prior command lines) are empty: three strings,
// the class, two flags, the inode (ino, dev, ctime, and its mtime appended
// after the rest); the process adds its prior command lines (a count) and
// image_unknown, the exec its interpreted flag.
// The environment appended to the exec payload after the mtime, empty: its
// count and its flag, then the killed-at-exec flag (the process record keeps
// neither).
constexpr std::size_t kEmptyEnvBytes = 4 + 1 + 1;
std::size_t env_bytes(const RecordData& rd) { return std::holds_alternative<state::Process>(rd) ? 0 : kEmptyEnvBytes; }

std::size_t identity_bytes(const RecordData& rd) {
  const std::size_t common = 3 * 4 + 1 + 2 + 4 * 8 + env_bytes(rd);
  return std::holds_alternative<state::Process>(rd) ? common + 4 + 1 : common + 1;
}

// The program identity was appended to the exec payload and the process
// record: it round trips, and a body written before it reads as empty.
TEST(CaptureFormat, ProgramIdentityRoundTripsAndIsEmptyInOlderRecords) {
  auto recs = sample_records();
  auto proc = std::get<state::Process>(recs[2]);
  event::Event exec = std::get<event::Event>(recs[3]);
  auto* ed = exec.as<event::ExecData>();
  ASSERT_NE(ed, nullptr);
  const RecordData plain_proc(proc), plain_exec(exec);
  const std::size_t plain_sizes[] = {encoded(plain_proc).size(), encoded(plain_exec).size()};
  proc.exe_sha256 = ed->exe_sha256 = std::string(64, 'a');
  proc.exe_build_id = ed->exe_build_id = "0123456789abcdef";
  proc.exe_known_as = ed->exe_known_as = "dash";
  proc.exe_class = ed->exe_class = 1;
  proc.exe_deleted = ed->exe_deleted = true;
  proc.exe_name_mismatch = ed->exe_name_mismatch = true;
  proc.exe_ino = ed->exe_ino = 393224;
  proc.exe_dev = ed->exe_dev = 2050;
  proc.exe_ctime_ns = ed->exe_ctime_ns = 1'700'000'000'123'456'789LL;
  proc.prior_cmdlines = {"python3 -m vllm.entrypoints.openai.api_server"};
  proc.image_unknown = true;
  ed->interpreted = true;
  int i = 0;
  for (const RecordData& rd : {RecordData(proc), RecordData(exec)}) {
    const std::string rec = encoded(rd);
    RecordData out;
    ASSERT_TRUE(decodes(rec, body_of(rec), out));
    EXPECT_EQ(encoded(out), rec);
    // Cut where the identity begins: what a writer before it wrote.
    const std::size_t cut = plain_sizes[i++] - identity_bytes(rd);
    const std::string_view older = body_of(rec, rec.size() - cut);
    ASSERT_TRUE(decodes(rec, older, out));
    if (auto* p = std::get_if<state::Process>(&out)) {
      EXPECT_EQ(p->exe_known_as, "");
      EXPECT_EQ(p->exe_ino, 0u);
      EXPECT_TRUE(p->prior_cmdlines.empty());
      EXPECT_EQ(p->vpgid, proc.vpgid);  // what came before is intact
    }
    if (auto* e = std::get_if<event::Event>(&out)) {
      EXPECT_EQ(e->as<event::ExecData>()->exe_known_as, "");
      EXPECT_FALSE(e->as<event::ExecData>()->interpreted);
      EXPECT_EQ(e->as<event::ExecData>()->vpgid, ed->vpgid);
    }
  }
}

// The program file's mtime was appended to the exec payload and the process
// record after the identity: it round trips, and a body written before it
// reads as 0 (proc.exe_ino.mtime has no value then) with the rest intact.
TEST(CaptureFormat, ExeMtimeRoundTripsAndIsZeroInOlderRecords) {
  auto recs = sample_records();
  auto proc = std::get<state::Process>(recs[2]);
  event::Event exec = std::get<event::Event>(recs[3]);
  auto* ed = exec.as<event::ExecData>();
  ASSERT_NE(ed, nullptr);
  proc.exe_ino = ed->exe_ino = 393224;
  proc.exe_ctime_ns = ed->exe_ctime_ns = 1'700'000'000'123'456'789LL;
  proc.exe_mtime_ns = ed->exe_mtime_ns = 1'699'000'000'000'000'007LL;
  for (const RecordData& rd : {RecordData(proc), RecordData(exec)}) {
    const std::string rec = encoded(rd);
    RecordData out;
    ASSERT_TRUE(decodes(rec, body_of(rec), out));
    EXPECT_EQ(encoded(out), rec);
    if (auto* p = std::get_if<state::Process>(&out)) {
      EXPECT_EQ(p->exe_mtime_ns, 1'699'000'000'000'000'007LL);
    }
    if (auto* e = std::get_if<event::Event>(&out)) {
      EXPECT_EQ(e->as<event::ExecData>()->exe_mtime_ns, 1'699'000'000'000'000'007LL);
    }
    // Without the mtime and what follows it: what a writer before the mtime wrote.
    const std::string_view older = body_of(rec, 8 + env_bytes(rd));
    ASSERT_TRUE(decodes(rec, older, out));
    if (auto* p = std::get_if<state::Process>(&out)) {
      EXPECT_EQ(p->exe_mtime_ns, 0);
      EXPECT_EQ(p->exe_ctime_ns, 1'700'000'000'123'456'789LL);  // what came before is intact
    }
    if (auto* e = std::get_if<event::Event>(&out)) {
      EXPECT_EQ(e->as<event::ExecData>()->exe_mtime_ns, 0);
      EXPECT_EQ(e->as<event::ExecData>()->exe_ctime_ns, 1'700'000'000'123'456'789LL);
    }
  }
}

// The environment was appended to the exec payload after the mtime: it
// round trips, and a body written before it reads as empty with the rest
// intact.
TEST(CaptureFormat, EnvironmentRoundTripsAndIsEmptyInOlderExecs) {
  auto recs = sample_records();
  event::Event exec = std::get<event::Event>(recs[3]);
  auto* ed = exec.as<event::ExecData>();
  ASSERT_NE(ed, nullptr);
  ed->exe_mtime_ns = 7;
  const std::size_t plain_size = encoded(RecordData(exec)).size();
  ed->env = {"PATH=/usr/bin", "LD_PRELOAD=/proc/self/cwd/poc.so"};
  ed->env_truncated = true;
  const std::string rec = encoded(RecordData(exec));
  RecordData out;
  ASSERT_TRUE(decodes(rec, body_of(rec), out));
  EXPECT_EQ(encoded(out), rec);
  EXPECT_EQ(std::get<event::Event>(out).as<event::ExecData>()->env, ed->env);
  // Cut where the environment begins: what a writer before it wrote.
  const std::size_t cut = plain_size - kEmptyEnvBytes;
  ASSERT_TRUE(decodes(rec, body_of(rec, rec.size() - cut), out));
  const auto* got = std::get<event::Event>(out).as<event::ExecData>();
  EXPECT_TRUE(got->env.empty());
  EXPECT_FALSE(got->env_truncated);
  EXPECT_EQ(got->exe_mtime_ns, 7);  // what came before is intact
}

// killed_at_exec was appended to the exec payload after the environment:
// it round trips, and a body written before it reads as false (a kill at
// exec in an older capture replays as not prevented).
TEST(CaptureFormat, KilledAtExecRoundTripsAndIsFalseInOlderExecs) {
  auto recs = sample_records();
  event::Event exec = std::get<event::Event>(recs[3]);
  auto* ed = exec.as<event::ExecData>();
  ASSERT_NE(ed, nullptr);
  ed->env = {"PATH=/usr/bin"};
  ed->killed_at_exec = true;
  const std::string rec = encoded(RecordData(exec));
  RecordData out;
  ASSERT_TRUE(decodes(rec, body_of(rec), out));
  EXPECT_EQ(encoded(out), rec);
  EXPECT_TRUE(std::get<event::Event>(out).as<event::ExecData>()->killed_at_exec);
  ASSERT_TRUE(decodes(rec, body_of(rec, 1), out));
  const auto* got = std::get<event::Event>(out).as<event::ExecData>();
  EXPECT_FALSE(got->killed_at_exec);
  EXPECT_EQ(got->env, ed->env);  // what came before is intact
}

// elf32 was appended to the exec payload and the process record: it round
// trips, and a body written before it reads as false.
TEST(CaptureFormat, Elf32FlagRoundTripsAndIsFalseInOlderRecords) {
  auto recs = sample_records();
  auto proc = std::get<state::Process>(recs[2]);
  event::Event exec = std::get<event::Event>(recs[3]);
  ASSERT_NE(exec.as<event::ExecData>(), nullptr);
  proc.elf32 = true;
  exec.as<event::ExecData>()->elf32 = true;
  for (const RecordData& rd : {RecordData(proc), RecordData(exec)}) {
    const std::string rec = encoded(rd);
    RecordData out;
    ASSERT_TRUE(decodes(rec, body_of(rec), out));
    EXPECT_EQ(encoded(out), rec);
    // The same body without elf32 and what follows it (three flags, three
    // 64-bit capability sets, the session and process group, and the program
    // identity, empty here: identity_bytes): what a writer before elf32 wrote.
    const std::size_t after = 1 + 3 + 3 * 8 + 2 * 4 + identity_bytes(rd);
    const std::string_view older = body_of(rec, after);
    ASSERT_TRUE(decodes(rec, older, out));
    if (auto* p = std::get_if<state::Process>(&out)) {
      EXPECT_FALSE(p->elf32);
    }
    if (auto* e = std::get_if<event::Event>(&out)) {
      EXPECT_FALSE(e->as<event::ExecData>()->elf32);
    }
  }
}

// An open's raw path (fd.nameraw) was appended to its payload: it round
// trips, and a body written before it (without its 4-byte length) reads as
// empty, which fd.nameraw reads as the path.
TEST(CaptureFormat, OpenRawPathRoundTripsAndIsEmptyInOlderRecords) {
  event::Event open;
  for (const RecordData& rd : sample_records()) {
    const auto* e = std::get_if<event::Event>(&rd);
    if (e && e->as<event::OpenData>()) open = *e;
  }
  ASSERT_NE(open.as<event::OpenData>(), nullptr);
  open.as<event::OpenData>()->raw = "../dev/nvidia0";
  open.as<event::OpenData>()->file_type = event::OpenData::kFileDevice;
  const std::string rec = encoded(RecordData(open));
  RecordData out;
  ASSERT_TRUE(decodes(rec, body_of(rec), out));
  EXPECT_EQ(std::get<event::Event>(out).as<event::OpenData>()->raw, "../dev/nvidia0");
  EXPECT_EQ(encoded(out), rec);
  EXPECT_EQ(std::get<event::Event>(out).as<event::OpenData>()->file_type, event::OpenData::kFileDevice);
  // Without the file type (appended after raw): its type is unknown.
  std::string_view older = body_of(rec, 1);
  ASSERT_TRUE(decodes(rec, older, out));
  EXPECT_EQ(std::get<event::Event>(out).as<event::OpenData>()->raw, "../dev/nvidia0");
  EXPECT_EQ(std::get<event::Event>(out).as<event::OpenData>()->file_type, event::OpenData::kFileUnknown);
  // Without raw either: what a writer before both wrote.
  const std::size_t tail = 1 + 4 + std::string("../dev/nvidia0").size();
  older = body_of(rec, tail);
  ASSERT_TRUE(decodes(rec, older, out));
  EXPECT_EQ(std::get<event::Event>(out).as<event::OpenData>()->raw, "");
  EXPECT_EQ(std::get<event::Event>(out).as<event::OpenData>()->path, "/dev/nvidia0");
}

// The pod's controller (baselines keyed by owner) is appended to the pod
// record: it round-trips, and a record written before it reads as none.
TEST(CaptureFormat, PodOwnerRoundTripsAndOlderPodRecordsHaveNone) {
  state::Pod pod = std::get<state::Pod>(sample_records()[1]);
  pod.owner_kind = "StatefulSet";
  pod.owner_name = "trainer";
  const std::string rec = encoded(RecordData(pod));
  RecordData out;
  ASSERT_TRUE(decodes(rec, body_of(rec), out));
  EXPECT_EQ(std::get<state::Pod>(out).owner_kind, "StatefulSet");
  EXPECT_EQ(std::get<state::Pod>(out).owner_name, "trainer");
  EXPECT_EQ(encoded(out), rec);
  // Cut before the owner (and the container start times and the runtime
  // mark appended after it).
  const std::size_t tail =
      2 * 4 + std::string("StatefulSet").size() + std::string("trainer").size() + 4 + 8 * pod.containers.size() + 1;
  const std::string_view older = body_of(rec, tail);
  ASSERT_TRUE(decodes(rec, older, out));
  EXPECT_EQ(std::get<state::Pod>(out).owner_kind, "");
  EXPECT_EQ(std::get<state::Pod>(out).resource_version, "12345");
}

// The containers' start times (container.start_ts) are appended to the pod
// record after the owner: they round-trip, and a record written before them
// reads as 0 (no value) with everything else intact.
TEST(CaptureFormat, PodContainerStartTimesRoundTripAndOlderPodRecordsHaveNone) {
  state::Pod pod = std::get<state::Pod>(sample_records()[1]);
  pod.owner_kind = "StatefulSet";
  pod.owner_name = "trainer";
  pod.containers.push_back(pod.containers[0]);
  pod.containers[1].name = "sidecar";
  pod.containers[0].started_at_ns = 1'764'150'000'000'000'000;
  pod.containers[1].started_at_ns = 0;  // not running
  const std::string rec = encoded(RecordData(pod));
  RecordData out;
  ASSERT_TRUE(decodes(rec, body_of(rec), out));
  EXPECT_EQ(std::get<state::Pod>(out).containers.at(0).started_at_ns, 1'764'150'000'000'000'000);
  EXPECT_EQ(std::get<state::Pod>(out).containers.at(1).started_at_ns, 0);
  EXPECT_EQ(encoded(out), rec);
  const std::size_t tail = 4 + 8 * 2 + 1;  // the start times and the runtime mark after them
  const std::string_view older = body_of(rec, tail);
  ASSERT_TRUE(decodes(rec, older, out));
  const auto& p = std::get<state::Pod>(out);
  ASSERT_EQ(p.containers.size(), 2u);
  EXPECT_EQ(p.containers[0].started_at_ns, 0);
  EXPECT_EQ(p.containers[0].gpu_devices, pod.containers[0].gpu_devices);
  EXPECT_EQ(p.owner_name, "trainer");
  // A count that claims more than the body holds is malformed, not a crash.
  ASSERT_FALSE(decodes(rec, body_of(rec, 9), out));
}

// A pod known only from the container runtime is marked so in the record
// appended last: the mark round-trips (a replay judges no GPU allocation
// from such a pod, as the live run did), and a record written before it
// reads as the API's.
TEST(CaptureFormat, PodFromTheRuntimeRoundTripsAndOlderPodRecordsAreTheApis) {
  state::Pod pod = std::get<state::Pod>(sample_records()[1]);
  pod.from_runtime = true;
  const std::string rec = encoded(RecordData(pod));
  RecordData out;
  ASSERT_TRUE(decodes(rec, body_of(rec), out));
  EXPECT_TRUE(std::get<state::Pod>(out).from_runtime);
  EXPECT_EQ(encoded(out), rec);
  ASSERT_TRUE(decodes(rec, body_of(rec, 1), out));
  EXPECT_FALSE(std::get<state::Pod>(out).from_runtime);
  EXPECT_EQ(std::get<state::Pod>(out).name, pod.name);
}

// The committed fixture was written by format version 1 (see
// tests/engine/capture/fixtures/README.md); every later reader must read it.
TEST(CaptureFormat, CommittedVersion1FixtureStillReads) {
  const std::string path = "tests/engine/capture/fixtures/v1_sample.vcap";
  if (std::getenv("VIGIL_UPDATE_FIXTURES")) {
    auto recs = sample_records();
    recs.resize(vigil::capture::testing::kSampleRecordsInV1Fixture);
    write_blocks(recs, 6, nullptr, path);
  }
  auto r = CaptureReader::open(path);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ((*r)->info().format_version, 1);
  EXPECT_EQ((*r)->info().hostname, "gpu-node-1");
  auto got = read_all_from(std::move(*r));
  ASSERT_EQ(got.error, "");
  auto recs = sample_records();
  // sample_records() held these when the fixture was written; later event
  // types are appended after them.
  ASSERT_EQ(got.records.size(), vigil::capture::testing::kSampleRecordsInV1Fixture);
  for (std::size_t i = 0; i < got.records.size(); ++i) {
    EXPECT_EQ(encoded(got.records[i].data), encoded(recs[i])) << "record " << i;
  }
}

TEST(CaptureWriter, StartsEachFileWithTheSnapshotAndRotatesBySizeKeepingN) {
  TempDir dir;
  auto opts = fixed_options();
  opts.block_size = 512;
  opts.rotate_bytes = 4096;
  opts.keep = 2;
  int snapshots = 0;
  auto recs = sample_records();
  opts.snapshot = [&] {
    ++snapshots;
    Snapshot s;
    s.containers.push_back(std::get<state::Container>(recs[0]));
    s.pods.push_back(std::get<state::Pod>(recs[1]));
    s.processes.push_back(std::get<state::Process>(recs[2]));
    return s;
  };
  const std::string path = dir.file("rot.vcap");
  auto w = CaptureWriter::open(path, opts);
  ASSERT_TRUE(w);
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE((*w)->write_event(testing::sample_exec(10 + i, 100 + i, 1, 0, "/bin/true")));
  }
  ASSERT_TRUE((*w)->close());
  EXPECT_GT((*w)->stats().files, 3u);
  EXPECT_EQ(snapshots, static_cast<int>((*w)->stats().files));
  EXPECT_TRUE(fs::exists(path));
  EXPECT_TRUE(fs::exists(path + ".1"));
  EXPECT_TRUE(fs::exists(path + ".2"));
  EXPECT_FALSE(fs::exists(path + ".3"));
  // Every kept file replays on its own: state first, then events in order.
  std::uint64_t last_ts = 0;
  for (const std::string& f : {path + ".2", path + ".1", path}) {
    EXPECT_LE(fs::file_size(f), 4096u + 1024u) << f;
    auto r = CaptureReader::open(f);
    ASSERT_TRUE(r) << r.error().message;
    auto got = read_all_from(std::move(*r));
    ASSERT_EQ(got.error, "");
    ASSERT_GE(got.records.size(), 4u);
    EXPECT_TRUE(std::holds_alternative<state::Container>(got.records[0].data));
    EXPECT_TRUE(std::holds_alternative<state::Pod>(got.records[1].data));
    EXPECT_TRUE(std::holds_alternative<state::Process>(got.records[2].data));
    for (std::size_t i = 3; i < got.records.size(); ++i) {
      const auto& ev = std::get<event::Event>(got.records[i].data);
      EXPECT_GT(ev.hdr.ts_ns, last_ts);
      last_ts = ev.hdr.ts_ns;
    }
  }
  EXPECT_EQ(last_ts, 10u + 299u);
}

TEST(CaptureWriter, RotatesByAgeAndFlushesOnTheInterval) {
  TempDir dir;
  std::uint64_t now = 0;
  auto opts = fixed_options();
  opts.clock = [&] { return now; };
  opts.flush_interval_ns = 100;
  opts.rotate_interval_ns = 1000;
  opts.keep = 1;
  const std::string path = dir.file("age.vcap");
  auto w = CaptureWriter::open(path, opts);
  ASSERT_TRUE(w);
  ASSERT_TRUE((*w)->write_event(testing::sample_exec(1, 1, 0, 0, "/a")));
  EXPECT_EQ((*w)->stats().blocks, 0u);
  now = 150;
  ASSERT_TRUE((*w)->write_event(testing::sample_exec(2, 1, 0, 0, "/b")));
  EXPECT_EQ((*w)->stats().blocks, 1u);  // the interval cut a block: on disk already
  auto r = CaptureReader::open(path);
  ASSERT_TRUE(r);
  EXPECT_EQ(read_all_from(std::move(*r)).records.size(), 2u);
  // A record then a quiet period: tick() puts it on disk once the interval passed.
  ASSERT_TRUE((*w)->write_event(testing::sample_exec(3, 1, 0, 0, "/q")));
  now = 200;
  ASSERT_TRUE((*w)->tick());
  EXPECT_EQ((*w)->stats().blocks, 1u);  // not yet: 50 ns since the last block
  now = 260;
  ASSERT_TRUE((*w)->tick());
  EXPECT_EQ((*w)->stats().blocks, 2u);
  r = CaptureReader::open(path);
  ASSERT_TRUE(r);
  EXPECT_EQ(read_all_from(std::move(*r)).records.size(), 3u);
  now = 1200;
  ASSERT_TRUE((*w)->write_event(testing::sample_exec(4, 1, 0, 0, "/c")));
  EXPECT_EQ((*w)->stats().files, 2u);
  ASSERT_TRUE((*w)->close());
  EXPECT_TRUE(fs::exists(path + ".1"));
}

TEST(CaptureWriter, RecordsStateListenerChangesInOrderWithEvents) {
  TempDir dir;
  auto w = CaptureWriter::open(dir.file("l.vcap"), fixed_options());
  ASSERT_TRUE(w);
  auto recs = sample_records();
  state::StateListener& listener = **w;
  ASSERT_TRUE((*w)->write_event(std::get<event::Event>(recs[3])));
  listener.on_container(std::get<state::Container>(recs[0]));
  listener.on_pod(std::get<state::Pod>(recs[1]));
  listener.on_process(std::get<state::Process>(recs[2]));
  listener.on_pod_removed("0b6f1a2c-uid");
  ASSERT_TRUE((*w)->close());
  auto r = CaptureReader::open(dir.file("l.vcap"));
  ASSERT_TRUE(r);
  auto got = read_all_from(std::move(*r));
  ASSERT_EQ(got.records.size(), 5u);
  EXPECT_TRUE(std::holds_alternative<event::Event>(got.records[0].data));
  EXPECT_EQ(encoded(got.records[1].data), encoded(recs[0]));
  EXPECT_EQ(encoded(got.records[2].data), encoded(recs[1]));
  EXPECT_EQ(encoded(got.records[3].data), encoded(recs[2]));
  EXPECT_EQ(std::get<PodRemoved>(got.records[4].data).uid, "0b6f1a2c-uid");
}

// Issue 16, item 8: `ln -s victim.txt link.vcap; vigil run --capture
// link.vcap` overwrote victim.txt. A link at the path is refused (bad input:
// exit 2), and its target is left as it was.
TEST(CaptureWriter, SymlinkAtThePathIsRefusedAndItsTargetUntouched) {
  TempDir dir;
  const std::string victim = dir.file("victim.txt"), link = dir.file("link.vcap");
  std::ofstream(victim) << "precious\n";
  ASSERT_EQ(::symlink("victim.txt", link.c_str()), 0);
  auto w = CaptureWriter::open(link, fixed_options());
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().kind, Error::Kind::kBadInput);
  EXPECT_NE(w.error().message.find(link), std::string::npos) << w.error().message;
  EXPECT_NE(w.error().message.find("symbolic link"), std::string::npos) << w.error().message;
  std::ifstream in(victim);
  std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, "precious\n");
}

TEST(CaptureWriter, DirectoryWritableByOthersIsRefused) {
  TempDir dir;
  const std::string ww = dir.file("ww");
  ASSERT_EQ(::mkdir(ww.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(ww.c_str(), 0777), 0);
  auto w = CaptureWriter::open(ww + "/run.vcap", fixed_options());
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().kind, Error::Kind::kBadInput);
  EXPECT_NE(w.error().message.find("writable by group or others"), std::string::npos) << w.error().message;
  EXPECT_FALSE(fs::exists(ww + "/run.vcap"));
}

// Issue 16, item 9: captures are 0640 whatever the umask, rotated ones too.
TEST(CaptureWriter, CapturesAre0640WhateverTheUmask) {
  for (mode_t mask : {mode_t{0}, mode_t{0277}}) {
    TempDir dir;
    const mode_t old = ::umask(mask);
    auto opts = fixed_options();
    opts.block_size = 512;
    opts.rotate_bytes = 2048;
    opts.keep = 1;
    const std::string path = dir.file("m.vcap");
    auto w = CaptureWriter::open(path, opts);
    ::umask(old);
    ASSERT_TRUE(w) << w.error().message;
    ::umask(mask);
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE((*w)->write_event(testing::sample_exec(10 + i, 100 + i, 1, 0, "/bin/true")));
    }
    ASSERT_TRUE((*w)->close());
    ::umask(old);
    EXPECT_GT((*w)->stats().files, 1u);
    for (const std::string& f : {path, path + ".1"}) {
      struct stat st {};
      ASSERT_EQ(::stat(f.c_str(), &st), 0) << f;
      EXPECT_EQ(st.st_mode & 07777, 0640u) << f << " under umask " << mask;
    }
  }
}

TEST(CaptureWriter, UnwritablePathIsARuntimeError) {
  auto w = CaptureWriter::open("/nonexistent-dir/x.vcap", fixed_options());
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find("/nonexistent-dir/x.vcap"), std::string::npos);
}

TEST(CaptureReader, SkipsEventBlocksBeforeTheWindowButKeepsState) {
  TempDir dir;
  auto opts = fixed_options();
  auto w = CaptureWriter::open(dir.file("s.vcap"), opts);
  ASSERT_TRUE(w);
  auto recs = sample_records();
  ASSERT_TRUE((*w)->write_record(recs[2]));  // a process, in the first block
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*w)->write_event(testing::sample_exec(100 + i, 1, 0, 0, "/a")));
  ASSERT_TRUE((*w)->flush());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*w)->write_event(testing::sample_exec(200 + i, 1, 0, 0, "/b")));
  ASSERT_TRUE((*w)->flush());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*w)->write_event(testing::sample_exec(300 + i, 1, 0, 0, "/c")));
  ASSERT_TRUE((*w)->close());
  ReaderOptions ro;
  ro.skip_events_before_ns = 300;
  auto r = CaptureReader::open(dir.file("s.vcap"), ro);
  ASSERT_TRUE(r);
  auto got = read_all_from(std::move(*r));
  ASSERT_EQ(got.records.size(), 11u);
  EXPECT_TRUE(std::holds_alternative<state::Process>(got.records[0].data));
  EXPECT_EQ(std::get<event::Event>(got.records[1].data).hdr.ts_ns, 300u);
}

}  // namespace
}  // namespace vigil::capture
