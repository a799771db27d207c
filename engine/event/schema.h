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
  std::string_view name;       // Falco's evt.type
  std::string_view aliases;    // other evt.type names for it, space-separated
  std::size_t payload_kind = 0;
  std::string_view payload_key;  // the payload's key in JSON and rule tests ("exec")
  std::string_view syscalls;   // where it comes from
  std::string_view category;   // the timeline's category
};

#define VIGIL_TYPE_INFO_ROW(Cxx, C, id, name, aliases, P, syscalls, category) \
  TypeInfo{Type::k##Cxx, name, aliases, kPayloadKind<P>, P::kKey, syscalls, category},
inline constexpr std::array<TypeInfo, kTypeCount> kTypes = {
    TypeInfo{Type::kUnknown, "unknown", "", 0, "", "", "other"},
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
