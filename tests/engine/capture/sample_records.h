// Sample records for the capture tests: one of every event payload and state
// record type, every field set to a value that differs from its default, so a
// field the codec forgets shows up as a difference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/capture/format.h"
#include "engine/capture/writer.h"

namespace vigil::capture::testing {

std::vector<RecordData> sample_records();  // state records first, then one event per type
// How many of sample_records() the committed version 1 fixture holds: the
// records of event types added later come after them.
inline constexpr std::size_t kSampleRecordsInV1Fixture = 17;
// An NVIDIA inventory (record type 6): both majors and three GPUs whose PCI
// order differs from their minor order. Not part of sample_records(), which the
// committed version-1 fixture holds as it was written.
state::NvidiaInfo sample_nvidia();
event::Event sample_exec(std::uint64_t ts, std::uint32_t pid, std::uint32_t ppid, std::uint64_t cgroup_id,
                         std::string exe);
// The bytes of a record as the codec writes it: two records are equal field for
// field exactly when their encodings are equal.
std::string encoded(const RecordData& r);
// A fixed header so files written by tests are byte-for-byte reproducible.
FileInfo fixed_info();
// Writer options with fixed_info(), a clock stuck at 0 and no timed flush.
WriterOptions fixed_options();

// A scratch directory, removed with its contents.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string file(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace vigil::capture::testing
