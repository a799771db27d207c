// What the field classes share (fields_evt.cpp, fields_proc.cpp, ...: one
// file per class of fields, each with its extractors and its catalogue rows):
// short names for the extractor signature, the helpers that read the event
// and the state, and the function through which each class appends its rows
// to the built-in catalogue (fields.cpp calls them in catalogue order).
//
// Internal to engine/rules: nothing outside the field classes includes it.
// The helpers are inline: every extractor calls them, on the event path.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "engine/rules/fields.h"

namespace vigil::rules {

// The rows of each class, appended in this order (the order `vigil fields`
// and docs/fields.md list them).
void append_evt_fields(std::vector<FieldDef>& fields);        // fields_evt.cpp
void append_proc_fields(std::vector<FieldDef>& fields);       // fields_proc.cpp: proc.*, thread.*
void append_user_fields(std::vector<FieldDef>& fields);       // fields_user.cpp: user.*, group.*
void append_fd_fields(std::vector<FieldDef>& fields);         // fields_fd.cpp
void append_container_fields(std::vector<FieldDef>& fields);  // fields_container.cpp: container.*, k8s.*
void append_gpu_fields(std::vector<FieldDef>& fields);        // fields_gpu.cpp
void append_net_fields(std::vector<FieldDef>& fields);        // fields_net.cpp: dns.*, conn.*
void append_vigil_fields(std::vector<FieldDef>& fields);      // fields_vigil.cpp
void append_baseline_fields(std::vector<FieldDef>& fields);   // fields_baseline.cpp
void append_posture_fields(std::vector<FieldDef>& fields);    // fields_posture.cpp
void append_target_fields(std::vector<FieldDef>& fields);     // fields_target.cpp: target.* (kill)

namespace fx {

using X = ExtractCtx;
using F = FieldInst;
using E = Extracted;

// The event types of the open calls (the rows of fields that only opens fill).
inline constexpr std::string_view kOpenEv = "open, openat, openat2, creat";

inline const event::Event& ev(const X& x) { return *x.ctx->ev; }

inline void str(E& o, std::string_view s) noexcept { o.add().s = s; }
inline void num(E& o, std::int64_t i) noexcept { o.add().i = i; }
inline void boolean(E& o, bool b) noexcept { o.add().b = b; }
inline void ip(E& o, const event::IpAddr& a) noexcept {
  if (a.family == 0) return;
  o.add().ip = &a;
}

inline const state::Process* proc_of(const X& x) noexcept { return x.ctx->proc; }
inline const state::Process* lookup(const X& x, std::uint32_t pid) noexcept {
  if (!x.ctx->state || pid == 0) return nullptr;
  return x.ctx->state->process(pid);
}

// The last '/' of a path: memrchr (vectorised) instead of string_view's
// byte loop; fd.directory, fd.filename and the GPU device test run per open.
inline std::size_t last_slash(std::string_view p) noexcept {
  if (p.empty()) return std::string_view::npos;
  const void* s = ::memrchr(p.data(), '/', p.size());
  return s ? static_cast<std::size_t>(static_cast<const char*>(s) - p.data()) : std::string_view::npos;
}
inline std::string_view basename_of(std::string_view p) noexcept {
  auto s = last_slash(p);
  return s == std::string_view::npos ? p : p.substr(s + 1);
}
inline std::string_view dirname_of(std::string_view p) noexcept {
  auto s = last_slash(p);
  if (s == std::string_view::npos) return {};
  if (s == 0) return "/";
  return p.substr(0, s);
}

// The path argument as the process gave it (Falco's evt.arg.path/name): for
// an open, fd.nameraw; fd.name is the resolved path.
inline std::string_view given_path(const event::OpenData& p) noexcept { return p.raw.empty() ? p.path : p.raw; }

// Appends an address in its usual text form (nothing for family 0).
void append_ip(Arena& a, const event::IpAddr& ip) noexcept;  // fields.cpp

// The syscall result of the event, when it has one.
bool result_of(const event::Event& e, std::int64_t& r) noexcept;  // fields_evt.cpp

// Capability sets as Falco prints them: the names, space-separated.
void caps_string(const X& x, std::uint64_t caps, E& o) noexcept;  // fields_proc.cpp

// Extractors whose rows are in another class's file.
void x_loginuid(const X& x, const F& f, E& o) noexcept;  // fields_proc.cpp (user.loginuid)
// evt.arg.NAME, evt.arg[NAME], evt.args and the evt.arg.* rows (fields_evt_arg.cpp).
void x_arg_generic(const X& x, const F& f, E& o) noexcept;
void x_arg_flags(const X& x, const F& f, E& o) noexcept;
void x_arg_path(const X& x, const F& f, E& o) noexcept;
void x_evt_args(const X& x, const F& f, E& o) noexcept;

}  // namespace fx
}  // namespace vigil::rules
