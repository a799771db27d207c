// An alert: what a rule produced for one event. The rule engine creates it;
// outputs/ formats and delivers it (Falco-compatible JSON by default, see
// DESIGN.md "Alerts"). Field names here follow Falco's json_output.
//
// Thread-safety: a value; sinks receive shared_ptr<const Alert>.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace vigil::event {

// Falco's eight levels, most severe first (the numbering follows syslog).
enum class Priority : std::uint8_t {
  kEmergency = 0,
  kAlert = 1,
  kCritical = 2,
  kError = 3,
  kWarning = 4,
  kNotice = 5,
  kInformational = 6,
  kDebug = 7,
};

// "Emergency", "Alert", "Critical", "Error", "Warning", "Notice",
// "Informational", "Debug" (Falco's spellings in alerts).
std::string_view priority_name(Priority p);
// Accepts Falco's spellings, case-insensitively, including "info" and "informational".
std::optional<Priority> priority_from_name(std::string_view name);

// A value of an output field. monostate means the field had no value (Falco
// writes null in output_fields and "<NA>" in the output text).
using FieldValue =
    std::variant<std::monostate, std::int64_t, std::uint64_t, bool, std::string, std::vector<std::string>>;

// Where an alert's output text holds a container.* or k8s.* field the rule
// renders from the event at hand: so that an alert waiting for its pod's
// metadata can be rendered again when the pod is known
// (engine/pipeline/metadata_wait.h). Outputs ignore it.
struct MetadataSpan {
  std::uint32_t token = 0;  // index into the rule's output tokens
  std::uint32_t begin = 0;  // byte offset into Alert::output
  std::uint32_t size = 0;
};

// What a summary of repeated alerts stands for (engine/pipeline/aggregate.h):
// the alerts of one rule with the same values of its key fields that were
// counted, not sent, in one window of event time.
struct AlertAggregate {
  std::uint64_t count = 0;            // the repeats counted in the window (not sent)
  std::uint64_t first_ns = 0;         // event time of the first of them
  std::uint64_t last_ns = 0;          // and of the last
  std::uint64_t window_start_ns = 0;  // the window, [start, end), event time
  std::uint64_t window_end_ns = 0;
  std::uint64_t total = 0;  // matches of the key since the alert that went out, that one included
  std::string first_uuid;   // the uuid of the alert that went out for the key
  // The key: the rule's aggregate.by fields (empty: every output field).
  std::vector<std::string> by;
  // Why the window ended: "window" (it passed), "evicted" (too many open
  // keys), "end" (end of input or shutdown).
  std::string reason;
};

struct Alert {
  std::uint64_t time_ns = 0;  // the event's time, ns since the Unix epoch
  std::string rule;
  Priority priority = Priority::kWarning;
  std::string output;                                             // the rule's output string with fields substituted
  std::vector<std::pair<std::string, FieldValue>> output_fields;  // in output order
  std::string hostname;
  std::string source = "syscall";
  std::vector<std::string> tags;
  std::string uuid;  // derived from the event so replays de-duplicate
  // Additional top-level keys vigil adds (never renames Falco's), e.g.
  // {"capture", "/var/lib/vigil/flight/....vcap"}. Values are strings.
  std::vector<std::pair<std::string, std::string>> extra;
  // vigil's own liveness record (heartbeat:), not a detection: it passes every
  // output's filters and rate limit, so a SIEM can alert on its absence.
  bool heartbeat = false;
  // Set on a summary of repeats (Falco has none: extra keys in the JSON).
  std::optional<AlertAggregate> aggregate;
  // A repeat the aggregation counted instead of sending: only outputs with
  // `aggregate: false` deliver it.
  bool repeat = false;
  // The container.* and k8s.* fields in `output` (in token order); empty when
  // there are none. Not part of the alert's JSON.
  std::vector<MetadataSpan> metadata_spans;
};

}  // namespace vigil::event
