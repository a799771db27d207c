// vigil.*: the agent itself as the target (its files, its process).
#include <string_view>
#include <vector>

#include "engine/rules/field_extractors.h"

namespace vigil::rules {

using namespace fx;

namespace {

// Is `path` one of vigil's own files, or inside one of its directories?
bool is_vigil_path(const X& x, std::string_view path) noexcept {
  if (path.empty() || !x.ctx->state) return false;
  for (const std::string& own : x.ctx->state->vigil_paths()) {
    if (own.empty() || path.size() < own.size() || path.compare(0, own.size(), own) != 0) continue;
    if (path.size() == own.size() || own.back() == '/' || path[own.size()] == '/') return true;
  }
  return false;
}
void x_vigil_file(const X& x, const F&, E& o) noexcept {
  const event::Event& e = ev(x);
  if (auto* p = e.as<event::OpenData>()) {
    boolean(o, is_vigil_path(x, p->path) || is_vigil_path(x, p->raw));
    return;
  }
  if (auto* p = e.as<event::FileOpData>()) boolean(o, is_vigil_path(x, p->path) || is_vigil_path(x, p->path2));
}
void x_vigil_targeted(const X& x, const F&, E& o) noexcept {
  const event::Event& e = ev(x);
  if (e.hdr.type == event::Type::kVigilSignal) {
    boolean(o, true);
    return;
  }
  if (auto* p = e.as<event::PtraceData>()) boolean(o, p->to_vigil);
}

}  // namespace

void append_vigil_fields(std::vector<FieldDef>& fields) {
  using T = FieldType;
  using A = ArgMode;
  fields.insert(fields.end(),
                {
                    {"vigil.file", T::kBool, A::kNone, false,
                     "open, openat, openat2, creat, symlink, link, unlink, "
                     "rename, mkdir, rmdir, chmod",
                     "The path (an open's fd.name or the path as given; either path of a rename, link or symlink, as "
                     "given) is one of vigil's own files or inside one of its directories: its configuration file, "
                     "rule files and directories, state directory (output spools), flight recorder directory and "
                     "capture file. Relative paths and paths seen from another mount namespace do not match.",
                     x_vigil_file},
                    {"vigil.targeted", T::kBool, A::kNone, false, "vigil_signal, ptrace",
                     "The call aims at vigil's own process: every vigil_signal event (a signal another process sent "
                     "to vigil), a ptrace whose tracee is vigil (after a successful attach, whichever thread was "
                     "named; otherwise the pid given, for callers in the host's pid namespace).",
                     x_vigil_targeted},
                });
}

}  // namespace vigil::rules
