// The field catalogue: every field a condition or output may use, with its
// type, description, the events that fill it, and its extractor.
//
// Extraction never allocates: strings are views into the event, the state, or a
// per-evaluation Arena (a fixed stack buffer) for composed values such as
// proc.cmdline. A field with no value for an event extracts zero values
// (Falco's <NA>).
//
// Thread-safety: the catalogue is immutable after construction; extractors are
// pure functions of their inputs.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/event/event.h"
#include "engine/event/schema.h"
#include "engine/state/model.h"
#include "engine/util/result.h"

namespace vigil::rules {

enum class FieldType : std::uint8_t { kString, kInt, kUint, kBool, kIp, kList };
std::string_view field_type_name(FieldType t);  // "string", "int", "uint", "bool", "ip", "list"

// A fixed-size bump allocator for composed strings of one evaluation. When it
// is full, further strings are truncated (bounded memory on hostile input).
class Arena {
 public:
  static constexpr std::size_t kSize = 16384;
  void reset() noexcept { used_ = 0; }
  std::size_t used() const noexcept { return used_; }
  // Copies s into the arena (truncated when full) and returns the copy.
  std::string_view put(std::string_view s) noexcept;
  // Starts a composed string; append() to it; finish() returns it.
  void begin() noexcept { start_ = used_; }
  void append(std::string_view s) noexcept;
  void append(char c) noexcept {
    if (used_ < kSize) buf_[used_++] = c;
  }
  // Reserves up to n bytes at the end of the current string; returns where to
  // write them and how many fit (`got`).
  char* extend(std::size_t n, std::size_t& got) noexcept {
    got = n < kSize - used_ ? n : kSize - used_;
    char* p = buf_ + used_;
    used_ += got;
    return p;
  }
  void append_uint(std::uint64_t v) noexcept;
  void append_int(std::int64_t v) noexcept;
  std::string_view finish() noexcept { return {buf_ + start_, used_ - start_}; }

 private:
  char buf_[kSize];
  std::size_t used_ = 0;
  std::size_t start_ = 0;
};

// One extracted value. Which member is meaningful follows the field's type
// (kList elements are strings). Arrays of it are not initialised on the event
// path (see Extracted and FieldCache).
struct Val {
  std::string_view s;
  std::int64_t i;
  bool b;
  const event::IpAddr* ip;  // points into the event
};

// The values of one field for one event: n == 0 means no value (<NA>).
struct Extracted {
  static constexpr std::size_t kMax = 32;
  Extracted() noexcept {}  // leaves v uninitialised: only v[0..n) is ever read
  std::size_t n = 0;
  union {
    Val v[kMax];
  };
  Val& add() noexcept { return v[n < kMax ? n++ : kMax - 1]; }
};

struct FieldDef;

// A field as used in a condition or output: its definition plus the argument.
struct FieldInst {
  const FieldDef* def = nullptr;
  std::string arg;  // "" when none
  bool has_arg = false;
  std::int64_t index = -1;  // numeric argument (proc.aname[2]), -1 when none
  int slot = -1;            // per-event value cache slot (FieldCache), -1: not cached
};

// Values of single-valued fields already extracted for the current event, so
// rules that test the same field (proc.name, proc.cmdline, fd.name...) extract
// it once. Slots are assigned when rules compile. Lives on the evaluator's
// stack; `clear()` before each event, and whenever the Arena is reset (cached
// strings may point into it).
struct FieldCache {
  static constexpr int kSlots = 256;
  FieldCache() noexcept {}          // leaves the slots uninitialised: `done` says which are valid
  std::uint64_t done[kSlots / 64];  // bit set: slot computed
  std::uint8_t count[kSlots];       // 0 or 1 value
  union {
    Val val[kSlots];
  };
  void clear() noexcept {
    for (auto& d : done) d = 0;
  }
};

// Results of the checks already evaluated for the current event: rules built
// from the same macros share identical checks (evt.is_open_read = true,
// proc.name in (shell_binaries), ...), each evaluated once per event.
struct CheckCache {
  static constexpr int kChecks = 4096;
  CheckCache() noexcept {}
  std::uint64_t done[kChecks / 64];
  std::uint64_t value[kChecks / 64];
  void clear() noexcept {
    for (auto& d : done) d = 0;
  }
  // Clears the first `words` words only: enough when every check id in use
  // is below 64 * words (a rule set's programs for one event type).
  void clear(std::size_t words) noexcept {
    for (std::size_t w = 0; w < words && w < kChecks / 64; ++w) done[w] = 0;
  }
};

struct ExtractCtx {
  const state::EvalContext* ctx;
  Arena* arena;
  FieldCache* cache = nullptr;   // optional
  CheckCache* checks = nullptr;  // optional
};

using ExtractFn = void (*)(const ExtractCtx& x, const FieldInst& f, Extracted& out) noexcept;

enum class ArgMode : std::uint8_t { kNone, kOptionalIndex, kRequiredIndex, kRequiredKey, kOptionalKey };

// The event types that fill a field. The catalogue writes them as evt.type
// names ("open, openat, openat2, creat"; "*": every type); they become a type
// mask when vigil builds, and a name the schema does not know fails the build.
struct EventSet {
  consteval EventSet(const char* names) : mask(event::types(names)) {}
  consteval EventSet(std::string_view names) : mask(event::types(names)) {}
  event::TypeMask mask;
  // Every type fills it (the row says "*", or names them all).
  bool all() const { return mask == event::TypeMask::all(); }
};

struct FieldDef {
  std::string_view name;
  FieldType type;
  ArgMode arg = ArgMode::kNone;
  bool any_of = false;  // several values, a comparison holds when any holds
  EventSet events;      // the event types that fill it
  std::string_view description;
  ExtractFn fn = nullptr;
  const void* user = nullptr;  // the extractor's own data (a plugin's field binding)
};

class FieldCatalog {
 public:
  // The catalogue of every field vigil implements.
  static const FieldCatalog& builtin();
  // `base` plus `extra` (a plugin's fields). The names and descriptions of
  // `extra` must outlive the catalogue. Fails naming the first field whose
  // name `base` (or an earlier extra field) already has.
  static Result<std::unique_ptr<FieldCatalog>> extend(const FieldCatalog& base, std::vector<FieldDef> extra);

  // Resolves "name" with an optional "[arg]" (and the dotted key forms such as
  // k8s.pod.label.app) to an instance. Returns false with a reason when the
  // field is unknown or its argument is wrong.
  bool resolve(std::string_view name, bool has_arg, std::string_view arg, FieldInst& out, std::string& error,
               bool& unknown) const;

  const std::vector<FieldDef>& fields() const { return fields_; }
  const FieldDef* find(std::string_view name) const;

 private:
  FieldCatalog();
  std::vector<FieldDef> fields_;
};

// The value of an extracted field as a display string: lists joined with ",".
// Appends to the arena. Empty optional (n == 0) gives "<NA>".
std::string_view render_value(FieldType t, const Extracted& e, Arena& arena) noexcept;

// Helpers shared with the compiler.
bool parse_ip(std::string_view s, event::IpAddr& out);
struct Cidr {
  event::IpAddr net;
  int prefix = 0;  // bits
  bool contains(const event::IpAddr& a) const noexcept;
};
bool parse_cidr(std::string_view s, Cidr& out);  // "10.0.0.0/8", or a single address

// Falco's evt.type names that map to each vigil event type, and names of
// syscalls Falco knows but vigil never reports (accepted; they match nothing).
// Returns the types it names; empty with known=false for names nobody knows.
event::TypeMask evt_type_mask(std::string_view falco_name, bool& known);

}  // namespace vigil::rules
