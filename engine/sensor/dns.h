// A bounded parser for DNS messages (RFC 1035) as seen on the packet path:
// the question name and type, the response code and the A/AAAA answers.
// Input is hostile: label lengths, compression pointers (loops, forward
// jumps) and counts are all bounded. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "engine/event/event.h"
#include "engine/util/result.h"

namespace vigil::sensor {

constexpr std::size_t kDnsMaxAnswers = 16;

// Fills is_response, id, name (lower-case, no trailing dot), qtype, rcode and
// answers. `server`/`server_port` are left to the caller.
Result<event::DnsData> parse_dns(std::span<const std::uint8_t> msg);

}  // namespace vigil::sensor
