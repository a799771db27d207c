// Events as text for `vigil replay --events`: one JSON object per line (for
// jq/grep) or one human-readable line. Enrichment (container, pod) comes from
// the state's context when given.
//
// JSON keys: "ts_ns", "time" (RFC 3339, UTC, ns), "type" (Falco's evt.type),
// "pid", "tid", "ppid", "uid", "gid", "cgroup_id", "pid_ns", "mnt_ns",
// "net_ns", "comm", then the payload's fields under a key named like the
// payload (its kKey in event.h: "exec", "connect", "open"...; every field of
// its fields() list), then "container.id", "k8s.ns.name",
// "k8s.pod.name" when known. Strings are always valid JSON (bytes that are not
// UTF-8 become U+FFFD; PayloadData bytes are hex).
#pragma once

#include <string>

#include "engine/event/event.h"
#include "engine/state/model.h"

namespace vigil::capture {

std::string event_json(const event::Event& ev, const state::EvalContext* ctx = nullptr);
std::string event_text(const event::Event& ev, const state::EvalContext* ctx = nullptr);
std::string rfc3339(std::uint64_t ts_ns);
// The payload in a few words ("exe=/bin/sh args=sh -c id", "to=10.0.0.1:80").
std::string event_summary(const event::Event& ev);
// "10.0.0.1:80", "[fd00::1]:53".
std::string ip_port(const event::IpAddr& a, std::uint16_t port);

}  // namespace vigil::capture
