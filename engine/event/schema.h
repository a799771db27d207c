// What the event schema table (bpf/shared/event_types.h) says about each type,
// in the forms the engine needs: per-type facts (names, payload kind, source),
// type masks, payloads made by type, and the generic walk over a payload's
// fields (event.h: each payload's fields(v, d)).
//
// Thread-safety: constants and pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "engine/event/event.h"

namespace vigil::event {

inline constexpr std::size_t kTypeCount = static_cast<std::size_t>(Type::kCount);

namespace detail {
template <class T, class V>
struct VariantIndex;
template <class T, class... Ts>
struct VariantIndex<T, std::variant<Ts...>> {
  static constexpr std::size_t value = [] {
    constexpr bool match[] = {std::is_same_v<T, Ts>...};
    for (std::size_t i = 0; i < sizeof...(Ts); ++i) {
      if (match[i]) return i;
    }
    return sizeof...(Ts);
  }();
};
}  // namespace detail

// The payload kind of T: its index in Payload, written into capture files.
template <class T>
inline constexpr std::size_t kPayloadKind = detail::VariantIndex<T, Payload>::value;
inline constexpr std::size_t kPayloadKinds = std::variant_size_v<Payload>;

struct TypeInfo {
  Type type = Type::kUnknown;
  std::string_view name;     // Falco's evt.type
  std::string_view aliases;  // other evt.type names for it, space-separated
  std::size_t payload_kind = 0;
  std::string_view payload_key;  // the payload's key in JSON and rule tests ("exec")
  std::string_view syscalls;     // where it comes from
  std::string_view category;     // the timeline's category
};

#define VIGIL_TYPE_INFO_ROW(Cxx, C, id, name, aliases, P, syscalls, category) \
  TypeInfo{Type::k##Cxx, name, aliases, kPayloadKind<P>, P::kKey, syscalls, category},
inline constexpr std::array<TypeInfo, kTypeCount> kTypes = {TypeInfo{Type::kUnknown, "unknown", "", 0, "", "", "other"},
                                                            VG_EVENT_TYPES(VIGIL_TYPE_INFO_ROW)};
#undef VIGIL_TYPE_INFO_ROW

namespace detail {
constexpr bool schema_is_dense() {
  for (std::size_t i = 0; i < kTypes.size(); ++i) {
    if (static_cast<std::size_t>(kTypes[i].type) != i) return false;
    if (i > 0 && (kTypes[i].payload_kind == 0 || kTypes[i].payload_kind >= kPayloadKinds)) return false;
  }
  return true;
}
}  // namespace detail
static_assert(detail::schema_is_dense(),
              "event_types.h: ids must run 1, 2, 3... and every payload must be in event::Payload");
static_assert(kTypeCount <= 256, "Type is one byte in records and capture files");

constexpr const TypeInfo& info(Type t) noexcept {
  auto i = static_cast<std::size_t>(t);
  return i < kTypes.size() ? kTypes[i] : kTypes[0];
}

// A default payload of the kind that type `t` carries (monostate for kUnknown).
Payload make_payload(Type t);
// A default payload of kind `kind`; false when no such kind.
bool make_payload_kind(std::size_t kind, Payload& out);

// Names of syscalls Falco knows that vigil does not report: a rule may name
// them (accepted, they match nothing).
bool is_unreported_syscall(std::string_view name) noexcept;
// Every such name (for tests and docs).
std::span<const std::string_view> unreported_syscalls() noexcept;

// A set of event types: room for every one-byte type id.
class TypeMask {
 public:
  static constexpr std::size_t kWords = 4;
  constexpr TypeMask() = default;
  constexpr explicit TypeMask(Type t) { set(t); }
  // Every known type (kUnknown excluded).
  static constexpr TypeMask all() {
    TypeMask m;
    for (std::size_t i = 1; i < kTypeCount; ++i) m.set(static_cast<Type>(i));
    return m;
  }
  constexpr TypeMask& set(Type t) {
    auto i = static_cast<std::size_t>(t);
    w_[i / 64] |= std::uint64_t{1} << (i % 64);
    return *this;
  }
  constexpr TypeMask& reset(Type t) {
    auto i = static_cast<std::size_t>(t);
    w_[i / 64] &= ~(std::uint64_t{1} << (i % 64));
    return *this;
  }
  constexpr bool test(Type t) const {
    auto i = static_cast<std::size_t>(t);
    return (w_[i / 64] >> (i % 64)) & 1u;
  }
  constexpr bool any() const { return (w_[0] | w_[1] | w_[2] | w_[3]) != 0; }
  constexpr bool none() const { return !any(); }
  constexpr std::size_t count() const {
    std::size_t n = 0;
    for (auto w : w_) n += static_cast<std::size_t>(__builtin_popcountll(w));
    return n;
  }
  constexpr TypeMask& operator|=(const TypeMask& o) {
    for (std::size_t i = 0; i < kWords; ++i) w_[i] |= o.w_[i];
    return *this;
  }
  constexpr TypeMask& operator&=(const TypeMask& o) {
    for (std::size_t i = 0; i < kWords; ++i) w_[i] &= o.w_[i];
    return *this;
  }
  friend constexpr TypeMask operator|(TypeMask a, const TypeMask& b) { return a |= b; }
  friend constexpr TypeMask operator&(TypeMask a, const TypeMask& b) { return a &= b; }
  // The known types not in this mask.
  constexpr TypeMask operator~() const {
    TypeMask m = all();
    for (std::size_t i = 0; i < kWords; ++i) m.w_[i] &= ~w_[i];
    return m;
  }
  constexpr bool operator==(const TypeMask&) const = default;
  // Calls f(Type) for each type in the mask, in id order.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 1; i < kTypeCount; ++i) {
      if (test(static_cast<Type>(i))) f(static_cast<Type>(i));
    }
  }

 private:
  std::array<std::uint64_t, kWords> w_{};
};

// The type named `name` (evt.type name or alias), kUnknown when none.
constexpr Type type_named(std::string_view name) {
  if (name.empty()) return Type::kUnknown;
  for (std::size_t i = 1; i < kTypes.size(); ++i) {
    if (kTypes[i].name == name) return kTypes[i].type;
    std::string_view rest = kTypes[i].aliases;
    while (!rest.empty()) {
      auto sp = rest.find(' ');
      if (rest.substr(0, sp) == name) return kTypes[i].type;
      if (sp == std::string_view::npos) break;
      rest.remove_prefix(sp + 1);
    }
  }
  return Type::kUnknown;
}

// A mask written as names at compile time: "execve, openat" ("*": every
// type). A name the schema does not know fails the build.
consteval TypeMask types(std::string_view names) {
  if (names == "*") return TypeMask::all();
  TypeMask m;
  while (!names.empty()) {
    auto end = names.find_first_of(", ");
    std::string_view n = names.substr(0, end);
    if (!n.empty()) {
      Type t = type_named(n);
      if (t == Type::kUnknown) throw "event::types(): not an event type name";
      m.set(t);
    }
    if (end == std::string_view::npos) break;
    names.remove_prefix(end + 1);
  }
  return m;
}

// The canonical names of the types in `m`, in id order, joined by ", "
// ("*" when it holds every type, "" when none).
std::string type_names(const TypeMask& m);

// Calls f(d) with the payload struct `data` holds (nothing for monostate).
// f must accept every payload struct: a new payload without a case in a
// caller's overload set fails the build there.
template <class F>
void visit_payload(const Payload& data, F&& f) {
  std::visit(
      [&](const auto& d) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(d)>, std::monostate>) f(d);
      },
      data);
}

namespace detail {
template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};
}  // namespace detail
template <class T>
inline constexpr bool kIsVector = detail::IsVector<T>::value;

}  // namespace vigil::event

// ---------------------------------------------------------------- Falco's argument names
//
// The arguments of the calls vigil collects, by Falco's names (evt.arg.NAME,
// evt.arg[NAME], evt.args): for each, the event types it belongs to, the
// payload field it reads (`get`) and how Falco prints it (`form`). The rule
// engine derives evt.arg and evt.args from this table
// (engine/rules/fields_evt_arg.cpp). A name found in no row that applies has
// no value.

namespace vigil::event {

// How Falco prints an argument (the rule engine renders each form).
enum class ArgForm : std::uint8_t {
  kInt,            // a number, in decimal
  kText,           // a string, as it is
  kOctal,          // a mode: 0755
  kOpenFlags,      // O_RDWR|O_CREAT...
  kExecFlags,      // EXE_WRITABLE|EXE_UPPER_LAYER|EXE_FROM_MEMFD (bits 1, 2, 4 of num)
  kBpfCmd,         // BPF_PROG_LOAD...
  kPtraceRequest,  // PTRACE_ATTACH...
  kSocketDomain,   // AF_PACKET...
  kSocketType,     // SOCK_RAW|SOCK_CLOEXEC...
  kNsFlags,        // CLONE_NEWNS|CLONE_NEWPID...
  kCaps,           // CAP_SYS_ADMIN CAP_NET_RAW...
  kSignal,         // SIGKILL...
  kPerfType,       // what perf_event_open watches (aux) or else attr.type (num)
};

// An argument's value as read from the payload: `text` for kText, else `num`
// (and `aux` where the form says).
struct ArgValue {
  std::int64_t num = 0;
  std::uint64_t aux = 0;
  std::string_view text;
};

using ArgGetter = bool (*)(const Event&, ArgValue&) noexcept;  // false: no value
using ArgWhen = bool (*)(const Event&) noexcept;               // null: always

struct FalcoArg {
  TypeMask types;          // the event types it is an argument of
  std::string_view names;  // Falco's names for it, space-separated; evt.args prints the first
  ArgForm form;
  ArgGetter get;
  ArgWhen when = nullptr;  // only for the events it holds for (the calls of a family that have it)
  TypeMask listed = {};    // the types whose evt.args prints it (in table order)
  ArgWhen listed_when = nullptr;
};

namespace args {

template <class M>
struct MemberOf;
template <class C, class T>
struct MemberOf<T C::*> {
  using Class = C;
  using Type = T;
};

// Reads payload member M: a string as text, a number as num.
template <auto M>
bool member(const Event& e, ArgValue& v) noexcept {
  using P = typename MemberOf<decltype(M)>::Class;
  const P* p = e.as<P>();
  if (!p) return false;
  if constexpr (std::is_same_v<typename MemberOf<decltype(M)>::Type, std::string>) v.text = p->*M;
  else v.num = static_cast<std::int64_t>(p->*M);
  return true;
}

// The path an open was given (fd.nameraw; the resolved path when the same).
inline bool open_given_path(const Event& e, ArgValue& v) noexcept {
  const auto* p = e.as<OpenData>();
  if (!p) return false;
  v.text = p->raw.empty() ? p->path : p->raw;
  return true;
}
inline bool exec_flags(const Event& e, ArgValue& v) noexcept {
  const auto* p = e.as<ExecData>();
  if (!p) return false;
  v.num = (p->exe_writable ? 1 : 0) | (p->exe_upper_layer ? 2 : 0) | (p->exe_from_memfd ? 4 : 0);
  return true;
}
inline bool file_op_path(const Event& e, ArgValue& v) noexcept {
  const auto* p = e.as<FileOpData>();
  if (!p || p->path.empty()) return false;
  v.text = p->path;
  return true;
}
inline bool signal_tid(const Event& e, ArgValue& v) noexcept {
  const auto* p = e.as<SysCallData>();
  if (!p) return false;
  v.num = static_cast<std::int64_t>(p->a3 & 0xffffffffu);
  return true;
}
inline bool perf_type(const Event& e, ArgValue& v) noexcept {
  const auto* p = e.as<SysCallData>();
  if (!p) return false;
  v.num = static_cast<std::int64_t>(p->a0);
  v.aux = p->a3;
  return true;
}

// Which calls of a family an argument belongs to.
inline Syscall file_op_call(const Event& e) noexcept {
  const auto* p = e.as<FileOpData>();
  return p ? p->syscall : Syscall::kNone;
}
inline bool symlink_call(Syscall s) noexcept { return s == Syscall::kSymlink || s == Syscall::kSymlinkat; }
// A call on two paths: symlink, link, rename (or any with a second path).
inline bool two_paths(const Event& e) noexcept {
  const auto* p = e.as<FileOpData>();
  if (!p) return false;
  const Syscall s = p->syscall;
  return !p->path2.empty() || symlink_call(s) || s == Syscall::kLink || s == Syscall::kLinkat ||
         s == Syscall::kRename || s == Syscall::kRenameat || s == Syscall::kRenameat2;
}
inline bool symlink_paths(const Event& e) noexcept { return two_paths(e) && symlink_call(file_op_call(e)); }
inline bool other_two_paths(const Event& e) noexcept { return two_paths(e) && !symlink_call(file_op_call(e)); }
inline bool one_path(const Event& e) noexcept { return e.as<FileOpData>() && !two_paths(e); }
inline bool fchmod_call(const Event& e) noexcept { return file_op_call(e) == Syscall::kFchmod; }
inline bool not_fchmod_call(const Event& e) noexcept { return !fchmod_call(e); }
inline Syscall cred_call(const Event& e) noexcept {
  const auto* p = e.as<CredData>();
  return p ? p->syscall : Syscall::kNone;
}
inline bool gid_call(const Event& e) noexcept {
  const Syscall s = cred_call(e);
  return s == Syscall::kSetgid || s == Syscall::kSetregid || s == Syscall::kSetresgid;
}
// setuid(uid) and setgid(gid): one id; the re/res forms: real, effective, saved.
inline bool single_id(const Event& e) noexcept {
  const Syscall s = cred_call(e);
  return s == Syscall::kSetuid || s == Syscall::kSetgid;
}
inline bool id_triple(const Event& e) noexcept { return !single_id(e); }
inline bool setuid_call(const Event& e) noexcept { return cred_call(e) == Syscall::kSetuid; }
inline bool setgid_call(const Event& e) noexcept { return cred_call(e) == Syscall::kSetgid; }
inline bool uid_triple(const Event& e) noexcept { return !single_id(e) && !gid_call(e); }
inline bool gid_triple(const Event& e) noexcept { return !single_id(e) && gid_call(e); }
inline bool delete_module_call(const Event& e) noexcept {
  const auto* p = e.as<ModuleData>();
  return p && p->syscall == Syscall::kDeleteModule;
}
inline bool load_module_call(const Event& e) noexcept {
  const auto* p = e.as<ModuleData>();
  return p && p->syscall != Syscall::kDeleteModule;
}

}  // namespace args

// The rows, by event type. Within a type, evt.args prints its rows in this order.
inline constexpr FalcoArg kFalcoArgs[] = {
    // open, openat, openat2, creat
    {types("openat"), "fd", ArgForm::kInt, args::member<&OpenData::result>, nullptr, types("openat")},
    {types("openat"), "name path pathname filename", ArgForm::kText, args::open_given_path, nullptr, types("openat")},
    {types("openat"), "flags", ArgForm::kOpenFlags, args::member<&OpenData::flags>, nullptr, types("openat")},
    {types("openat"), "mode", ArgForm::kOctal, args::member<&OpenData::mode>, nullptr, types("openat")},
    // execve
    {types("execve"), "filename path name", ArgForm::kText, args::member<&ExecData::filename>, nullptr,
     types("execve")},
    {types("execve"), "flags", ArgForm::kExecFlags, args::exec_flags, nullptr, types("execve")},
    {types("execve"), "exe", ArgForm::kText, args::member<&ExecData::exe>},
    {types("execve"), "cwd", ArgForm::kText, args::member<&ExecData::cwd>},
    // bpf
    {types("bpf"), "cmd", ArgForm::kBpfCmd, args::member<&BpfData::cmd>, nullptr, types("bpf")},
    {types("bpf"), "res", ArgForm::kInt, args::member<&BpfData::result>},
    // ioctl
    {types("ioctl"), "fd", ArgForm::kInt, args::member<&IoctlData::fd>, nullptr, types("ioctl")},
    {types("ioctl"), "request", ArgForm::kInt, args::member<&IoctlData::cmd>, nullptr, types("ioctl")},
    // symlink, link, unlink, rename, mkdir, rmdir, chmod: by the call's paths
    {types("symlinkat linkat unlinkat renameat2 mkdirat rmdir fchmodat"), "target", ArgForm::kText,
     args::member<&FileOpData::path>, args::symlink_paths, types("symlinkat")},
    {types("symlinkat linkat unlinkat renameat2 mkdirat rmdir fchmodat"), "linkpath", ArgForm::kText,
     args::member<&FileOpData::path2>, args::symlink_paths, types("symlinkat")},
    {types("symlinkat linkat unlinkat renameat2 mkdirat rmdir fchmodat"), "linkdirfd newdir", ArgForm::kInt,
     args::member<&FileOpData::fd2>, args::symlink_paths},
    {types("symlinkat linkat unlinkat renameat2 mkdirat rmdir fchmodat"), "oldpath", ArgForm::kText,
     args::member<&FileOpData::path>, args::other_two_paths, types("linkat renameat2")},
    {types("symlinkat linkat unlinkat renameat2 mkdirat rmdir fchmodat"), "newpath", ArgForm::kText,
     args::member<&FileOpData::path2>, args::other_two_paths, types("linkat renameat2")},
    {types("symlinkat linkat unlinkat renameat2 mkdirat rmdir fchmodat"), "newdirfd newdir", ArgForm::kInt,
     args::member<&FileOpData::fd2>, args::other_two_paths},
    {types("symlinkat linkat unlinkat renameat2 mkdirat rmdir fchmodat"), "olddirfd olddir", ArgForm::kInt,
     args::member<&FileOpData::fd>, args::other_two_paths},
    {types("symlinkat linkat unlinkat renameat2 mkdirat rmdir"), "path name pathname filename", ArgForm::kText,
     args::file_op_path, args::one_path, types("unlinkat mkdirat rmdir")},
    {types("fchmodat"), "filename name path pathname", ArgForm::kText, args::file_op_path, args::one_path,
     types("fchmodat"), args::not_fchmod_call},
    {types("symlinkat linkat unlinkat renameat2 mkdirat rmdir fchmodat"), "fd dirfd", ArgForm::kInt,
     args::member<&FileOpData::fd>, nullptr, types("fchmodat"), args::fchmod_call},
    {types("symlinkat linkat unlinkat renameat2 mkdirat rmdir fchmodat"), "flags", ArgForm::kInt,
     args::member<&FileOpData::flags>, nullptr, types("linkat renameat2 unlinkat mkdirat rmdir")},
    {types("symlinkat linkat unlinkat renameat2 mkdirat rmdir fchmodat"), "mode", ArgForm::kOctal,
     args::member<&FileOpData::mode>, nullptr, types("unlinkat mkdirat rmdir fchmodat")},
    {types("symlinkat linkat unlinkat renameat2 mkdirat rmdir fchmodat"), "res", ArgForm::kInt,
     args::member<&FileOpData::result>},
    // mknod, mknodat (Falco's mknodat: dirfd, path, mode, dev)
    {types("mknodat"), "dirfd fd", ArgForm::kInt, args::member<&FileOpData::fd>, nullptr, types("mknodat")},
    {types("mknodat"), "path name pathname filename", ArgForm::kText, args::file_op_path, nullptr, types("mknodat")},
    {types("mknodat"), "mode", ArgForm::kOctal, args::member<&FileOpData::mode>, nullptr, types("mknodat")},
    {types("mknodat"), "dev", ArgForm::kInt, args::member<&FileOpData::dev>, nullptr, types("mknodat")},
    {types("mknodat"), "res", ArgForm::kInt, args::member<&FileOpData::result>},
    // ptrace
    {types("ptrace"), "request", ArgForm::kPtraceRequest, args::member<&PtraceData::request>, nullptr, types("ptrace")},
    {types("ptrace"), "pid", ArgForm::kInt, args::member<&PtraceData::target>, nullptr, types("ptrace")},
    {types("ptrace"), "addr", ArgForm::kInt, args::member<&PtraceData::addr>},
    {types("ptrace"), "res", ArgForm::kInt, args::member<&PtraceData::result>},
    // socket
    {types("socket"), "domain", ArgForm::kSocketDomain, args::member<&SocketData::domain>, nullptr, types("socket")},
    {types("socket"), "type", ArgForm::kSocketType, args::member<&SocketData::type>, nullptr, types("socket")},
    {types("socket"), "proto", ArgForm::kInt, args::member<&SocketData::protocol>, nullptr, types("socket")},
    {types("socket"), "fd res", ArgForm::kInt, args::member<&SocketData::result>},
    // dup, dup2, dup3
    {types("dup"), "fd oldfd", ArgForm::kInt, args::member<&DupData::oldfd>, nullptr, types("dup")},
    {types("dup"), "res newfd", ArgForm::kInt, args::member<&DupData::result>},
    {types("dup"), "flags", ArgForm::kInt, args::member<&DupData::flags>, nullptr, types("dup")},
    // setuid, setgid and their re/res forms
    {types("setuid setgid"), "uid", ArgForm::kInt, args::member<&CredData::effective>, args::setuid_call,
     types("setuid"), args::single_id},
    {types("setuid setgid"), "gid", ArgForm::kInt, args::member<&CredData::effective>, args::setgid_call,
     types("setgid"), args::single_id},
    {types("setuid setgid"), "ruid", ArgForm::kInt, args::member<&CredData::real>, args::uid_triple, types("setuid"),
     args::id_triple},
    {types("setuid setgid"), "euid", ArgForm::kInt, args::member<&CredData::effective>, args::uid_triple,
     types("setuid"), args::id_triple},
    {types("setuid setgid"), "suid", ArgForm::kInt, args::member<&CredData::saved>, args::uid_triple, types("setuid"),
     args::id_triple},
    {types("setuid setgid"), "rgid", ArgForm::kInt, args::member<&CredData::real>, args::gid_triple, types("setgid"),
     args::id_triple},
    {types("setuid setgid"), "egid", ArgForm::kInt, args::member<&CredData::effective>, args::gid_triple,
     types("setgid"), args::id_triple},
    {types("setuid setgid"), "sgid", ArgForm::kInt, args::member<&CredData::saved>, args::gid_triple, types("setgid"),
     args::id_triple},
    {types("setuid setgid"), "res", ArgForm::kInt, args::member<&CredData::result>},
    // setns, unshare
    {types("setns unshare"), "fd", ArgForm::kInt, args::member<&NsData::fd>, nullptr, types("setns")},
    {types("setns"), "nstype flags", ArgForm::kNsFlags, args::member<&NsData::flags>, nullptr, types("setns")},
    {types("unshare"), "flags nstype", ArgForm::kNsFlags, args::member<&NsData::flags>, nullptr, types("unshare")},
    {types("setns unshare"), "res", ArgForm::kInt, args::member<&NsData::result>},
    // accept, listen, bind
    {types("accept listen bind"), "fd", ArgForm::kInt, args::member<&InboundData::fd>, nullptr,
     types("accept listen bind")},
    {types("accept listen bind"), "flags backlog", ArgForm::kInt, args::member<&InboundData::flags>, nullptr,
     types("accept listen bind")},
    {types("accept listen bind"), "res", ArgForm::kInt, args::member<&InboundData::result>},
    // the calls known by their numbers
    {types("userfaultfd memfd_create prctl io_uring_setup vigil_signal kill perf_event_open"), "res", ArgForm::kInt,
     args::member<&SysCallData::result>},
    {types("memfd_create"), "name", ArgForm::kText, args::member<&SysCallData::name>, nullptr, types("memfd_create")},
    {types("memfd_create"), "flags", ArgForm::kInt, args::member<&SysCallData::a1>, nullptr, types("memfd_create")},
    {types("userfaultfd"), "flags", ArgForm::kInt, args::member<&SysCallData::a0>, nullptr, types("userfaultfd")},
    {types("prctl"), "option", ArgForm::kInt, args::member<&SysCallData::a0>, nullptr, types("prctl")},
    {types("prctl"), "arg2_int", ArgForm::kInt, args::member<&SysCallData::a1>},
    {types("io_uring_setup"), "entries", ArgForm::kInt, args::member<&SysCallData::a0>, nullptr,
     types("io_uring_setup")},
    // vigil_signal and kill: the target as the kernel resolved it (host numbering)
    {types("vigil_signal kill"), "pid", ArgForm::kInt, args::member<&SysCallData::a1>, nullptr,
     types("vigil_signal kill")},
    {types("vigil_signal kill"), "sig", ArgForm::kSignal, args::member<&SysCallData::a0>, nullptr,
     types("vigil_signal kill")},
    {types("vigil_signal kill"), "code", ArgForm::kInt, args::member<&SysCallData::a2>},
    {types("vigil_signal kill"), "tid", ArgForm::kInt, args::signal_tid},
    {types("perf_event_open"), "type", ArgForm::kPerfType, args::perf_type, nullptr, types("perf_event_open")},
    {types("perf_event_open"), "config", ArgForm::kInt, args::member<&SysCallData::a1>, nullptr,
     types("perf_event_open")},
    {types("perf_event_open"), "pid", ArgForm::kInt, args::member<&SysCallData::a2>, nullptr, types("perf_event_open")},
    {types("perf_event_open"), "fd", ArgForm::kInt, args::member<&SysCallData::result>},
    // capset: the sets after the call
    {types("capset"), "cap_effective", ArgForm::kCaps, args::member<&CapsData::effective>, nullptr, types("capset")},
    {types("capset"), "cap_permitted", ArgForm::kCaps, args::member<&CapsData::permitted>, nullptr, types("capset")},
    {types("capset"), "cap_inheritable", ArgForm::kCaps, args::member<&CapsData::inheritable>, nullptr,
     types("capset")},
    {types("capset"), "res", ArgForm::kInt, args::member<&CapsData::result>},
    // init_module, finit_module; delete_module
    {types("init_module delete_module"), "fd", ArgForm::kInt, args::member<&ModuleData::fd>, args::load_module_call,
     types("init_module")},
    {types("init_module delete_module"), "uargs", ArgForm::kText, args::member<&ModuleData::args>,
     args::load_module_call, types("init_module")},
    {types("init_module delete_module"), "name", ArgForm::kText, args::member<&ModuleData::args>,
     args::delete_module_call, types("delete_module")},
    {types("init_module delete_module"), "flags", ArgForm::kInt, args::member<&ModuleData::flags>, nullptr,
     types("init_module delete_module")},
    {types("init_module delete_module"), "res", ArgForm::kInt, args::member<&ModuleData::result>},
};

namespace detail {
constexpr bool falco_args_are_whole() {
  for (const FalcoArg& a : kFalcoArgs) {
    if (a.types.none() || a.names.empty() || !a.get) return false;
    if ((a.listed & ~a.types).any()) return false;  // evt.args prints only a type's own rows
  }
  return true;
}
}  // namespace detail
static_assert(detail::falco_args_are_whole(),
              "kFalcoArgs: every row needs types, names and a getter, and is listed only for its types");

}  // namespace vigil::event
