// target.*: the process a kill event's signal was sent to, from the process
// table, and how it stands to the sender (same container, descendant).
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/rules/field_extractors.h"

namespace vigil::rules {

using namespace fx;

namespace {

// The target's pid: kill's (host numbering, as the kernel resolved it).
std::uint32_t target_pid(const X& x) noexcept {
  const event::Event& e = ev(x);
  if (e.hdr.type != event::Type::kKill) return 0;
  const auto* d = e.as<event::SysCallData>();
  return d ? static_cast<std::uint32_t>(d->a1) : 0;
}
const state::Process* target(const X& x) noexcept { return lookup(x, target_pid(x)); }

// The sender's container id ("" on the host), as container.id reads it.
std::string_view sender_container(const X& x) noexcept {
  if (x.ctx->container) return x.ctx->container->id;
  if (const state::Process* p = proc_of(x)) return p->container_id;
  return {};
}

void x_target_pid(const X& x, const F&, E& o) noexcept {
  if (std::uint32_t pid = target_pid(x)) num(o, pid);
}
void x_target_vpid(const X& x, const F&, E& o) noexcept {
  if (const state::Process* p = target(x); p && p->vpid != 0) num(o, p->vpid);
}
void x_target_name(const X& x, const F&, E& o) noexcept {
  if (const state::Process* p = target(x); p && !p->comm.empty()) str(o, p->comm);
}
void x_target_exepath(const X& x, const F&, E& o) noexcept {
  if (const state::Process* p = target(x); p && !p->exepath.empty()) str(o, p->exepath);
}
void x_target_cmdline(const X& x, const F&, E& o) noexcept {
  const state::Process* p = target(x);
  if (!p || p->comm.empty()) return;
  Arena& a = *x.arena;
  a.begin();
  a.append(p->comm);
  for (const std::string& arg : p->args) {
    a.append(' ');
    a.append(arg);
  }
  str(o, a.finish());
}
void x_target_container_id(const X& x, const F&, E& o) noexcept {
  const state::Process* p = target(x);
  if (!p) return;
  str(o, p->container_id.empty() ? std::string_view("host") : std::string_view(p->container_id).substr(0, 12));
}
void x_target_same_container(const X& x, const F&, E& o) noexcept {
  if (const state::Process* p = target(x)) boolean(o, p->container_id == sender_container(x));
}
// The sender is one of the target's ancestors (the table's parent links, 64
// at most): the target is a process the sender started, or one of theirs.
void x_target_is_descendant(const X& x, const F&, E& o) noexcept {
  constexpr int kMaxDepth = 64;
  const state::Process* p = target(x);
  if (!p) return;
  const std::uint32_t sender = ev(x).hdr.pid;
  bool found = false;
  for (int depth = 0; depth < kMaxDepth && p && !found; ++depth) {
    if (p->ppid == 0 || p->ppid == p->pid) break;
    found = p->ppid == sender;
    p = lookup(x, p->ppid);
  }
  boolean(o, found);
}

}  // namespace

void append_target_fields(std::vector<FieldDef>& fields) {
  using T = FieldType;
  using A = ArgMode;
  fields.insert(
      fields.end(),
      {
          {"target.pid", T::kInt, A::kNone, false, "kill",
           "The process the signal was sent to (its thread group id, host numbering, whatever pid namespace "
           "the sender named it in).",
           x_target_pid},
          {"target.vpid", T::kInt, A::kNone, false, "kill",
           "The target's pid in its own pid namespace (1: its container's first process).", x_target_vpid},
          {"target.name", T::kString, A::kNone, false, "kill", "The target's name (comm, as of its last exec).",
           x_target_name},
          {"target.exepath", T::kString, A::kNone, false, "kill", "The target's executable path.", x_target_exepath},
          {"target.cmdline", T::kString, A::kNone, false, "kill", "The target's name followed by its arguments.",
           x_target_cmdline},
          {"target.container.id", T::kString, A::kNone, false, "kill",
           "The target's container id (12 characters; 'host' for host processes).", x_target_container_id},
          {"target.same_container", T::kBool, A::kNone, false, "kill",
           "The target is in the sender's container (or both are host processes).", x_target_same_container},
          {"target.is_descendant", T::kBool, A::kNone, false, "kill",
           "The sender is an ancestor of the target (its parent, or the parent of one of its ancestors, up to "
           "64 generations): the sender started it, directly or not.",
           x_target_is_descendant},
      });
}

}  // namespace vigil::rules
