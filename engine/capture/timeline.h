// Timelines: a capture (or any stream of records) and its alerts as a Chrome
// trace / Perfetto JSON file, openable in ui.perfetto.dev or chrome://tracing.
//
//   capture::TimelineBuilder tl;
//   for each record: tl.add(rec);        // state records and events, in order
//   for each alert:  tl.add_alert(ev, alert);
//   tl.write_file("incident.json");
//
// Layout: one trace "process" per pod (the host, and containers outside pods,
// get their own), one "thread" per process (tid = its pid). Each exec opens a
// span named after the program that lasts until the next exec or the exit;
// connects, opens of devices, NVIDIA ioctls, GPU usage reports, DNS and BPF
// events are instants on the process's track; Xids are global instants; alerts
// are instants marked in red with the rule, priority and output.
// Times are microseconds since the first record (its absolute time in ns is
// in "otherData.start_ns").
//
// Bounds: at most opts.max_events trace events are kept (later ones are
// counted in dropped()). Thread-safety: not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/capture/format.h"
#include "engine/event/alert.h"
#include "engine/util/result.h"

namespace vigil::capture {

struct TimelineOptions {
  std::size_t max_events = 1'000'000;
};

class TimelineBuilder {
 public:
  explicit TimelineBuilder(TimelineOptions opts = {});

  void add(const RecordData& rec);
  void add_event(const event::Event& ev);
  void add_alert(const event::Event& ev, const event::Alert& alert);

  // Closes the spans still open at the last time seen and writes the JSON.
  Status write(std::ostream& out);
  Status write_file(const std::string& path);

  std::uint64_t dropped() const { return dropped_; }

 private:
  struct Span {
    std::uint64_t start = 0;
    std::string name;
    std::string args;  // JSON object text
    int track = 0;
  };
  int track_for(const event::Event& ev);
  void name_thread(int track, std::uint32_t pid, const std::string& comm);
  void push(std::string json);
  void close_span(std::uint32_t pid, std::uint64_t end);
  double rel_us(std::uint64_t ts);
  void instant(const event::Event& ev, int track, const std::string& name, const char* cat, const std::string& args,
               char scope = 't');

  TimelineOptions opts_;
  std::vector<std::string> events_;  // trace events, JSON text each
  std::uint64_t dropped_ = 0;
  std::uint64_t start_ns_ = 0;
  std::uint64_t last_ns_ = 0;
  std::unordered_map<std::uint64_t, std::string> cgroup_container_;  // cgroup id -> container id
  std::unordered_map<std::string, std::string> container_pod_;       // container id -> pod uid
  std::unordered_map<std::string, std::string> pod_names_;           // pod uid -> "ns/name"
  std::map<std::string, int> tracks_;                                // group key -> trace pid
  std::unordered_map<std::uint64_t, bool> named_threads_;            // (track << 32 | pid)
  std::unordered_map<std::uint32_t, Span> open_;                     // pid -> open exec span
  std::unordered_map<std::uint32_t, std::string> container_of_pid_;  // from process records
};

// JSON string literal for `s` (quotes included); invalid UTF-8 and control
// bytes are escaped so the output is always valid JSON.
std::string json_quote(std::string_view s);

}  // namespace vigil::capture
