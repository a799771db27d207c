// `vigil capture` and `vigil replay`: record live events to a capture file,
// and run rules over one (docs/forensics.md, docs/capture-format.md).
//
//   vigil capture -w FILE [--duration D] [--size S] [--filter CONDITION]
//                 [--rotate-size S] [--rotate-every D] [--keep N]
//   vigil replay FILE [-r RULES]... [-c CONFIG] [--since T] [--until T]
//                [--container ID] [--pod NAME|NS/NAME] [--filter CONDITION]
//                [--events [--format json|text]] [--timeline OUT.json]
//
// Exit codes: 0 success; 1 runtime failure (no privileges for the sensor, a
// write error); 2 bad usage or bad input (an unreadable or corrupt capture, a
// rule file or --filter that does not compile), with a message naming the
// file and byte offset.
//
// Both turn their flags into agent::Options and run the agent's plan
// (engine/agent/plan.h: capture_plan, replay_plan).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace vigil::cli {

int cmd_capture(int argc, char** argv);
int cmd_replay(int argc, char** argv);

// "90", "1.5s", "500ms", "5m", "2h" -> ns. nullopt when malformed.
std::optional<std::uint64_t> parse_duration_ns(std::string_view s);
// "1048576", "512K", "64M", "2G" (powers of 1024) -> bytes.
std::optional<std::uint64_t> parse_size(std::string_view s);
// "2026-11-22T03:00:00Z", "2026-11-22T03:00:00.5+02:00", or Unix seconds
// "1763780400.25" -> ns since the epoch.
std::optional<std::uint64_t> parse_time_ns(std::string_view s);

}  // namespace vigil::cli
