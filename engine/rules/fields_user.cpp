// user.* and group.*: who the process runs as, with names from the state's
// passwd and group tables.
#include <string_view>
#include <vector>

#include "engine/rules/field_extractors.h"

namespace vigil::rules {

using namespace fx;

namespace {

// ----- user.* / group.*

std::uint32_t uid_of(const X& x) noexcept {
  auto* p = proc_of(x);
  return p ? p->uid : ev(x).hdr.uid;
}
std::uint32_t gid_of(const X& x) noexcept {
  auto* p = proc_of(x);
  return p ? p->gid : ev(x).hdr.gid;
}
void x_uid(const X& x, const F&, E& o) noexcept { num(o, uid_of(x)); }
void x_gid(const X& x, const F&, E& o) noexcept { num(o, gid_of(x)); }
// Names come from the state's passwd/group tables; without them only id 0
// has a name vigil can know.
void x_user_name(const X& x, const F&, E& o) noexcept {
  std::uint32_t uid = uid_of(x);
  if (x.ctx->state) {
    auto n = x.ctx->state->user_name(uid);
    if (!n.empty()) {
      str(o, n);
      return;
    }
  }
  if (uid == 0) str(o, "root");
}
void x_group_name(const X& x, const F&, E& o) noexcept {
  std::uint32_t gid = gid_of(x);
  if (x.ctx->state) {
    auto n = x.ctx->state->group_name(gid);
    if (!n.empty()) {
      str(o, n);
      return;
    }
  }
  if (gid == 0) str(o, "root");
}
void x_loginname(const X& x, const F&, E& o) noexcept {
  auto* p = proc_of(x);
  if (!p || p->loginuid == 0xffffffffu) return;
  if (x.ctx->state) {
    auto n = x.ctx->state->user_name(p->loginuid);
    if (!n.empty()) {
      str(o, n);
      return;
    }
  }
  if (p->loginuid == 0) str(o, "root");
}

}  // namespace

void append_user_fields(std::vector<FieldDef>& fields) {
  using T = FieldType;
  using A = ArgMode;
  fields.insert(
      fields.end(),
      {
          {"user.uid", T::kInt, A::kNone, false, "*", "User id.", x_uid},
          {"user.name", T::kString, A::kNone, false, "*", "User name, from the host passwd table (uid 0 is root).",
           x_user_name},
          {"user.loginuid", T::kInt, A::kNone, false, "*", "Audit login uid (-1 = unset).", x_loginuid},
          {"user.loginname", T::kString, A::kNone, false, "*", "Login user name (known for loginuid 0 only).",
           x_loginname},
          {"group.gid", T::kInt, A::kNone, false, "*", "Group id.", x_gid},
          {"group.name", T::kString, A::kNone, false, "*", "Group name (known for gid 0 only).", x_group_name},
      });
}

}  // namespace vigil::rules
