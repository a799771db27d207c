#include "engine/capture/codec.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>

#include "engine/event/schema.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace vigil::capture {
namespace {

// ---- CRC-32C ---------------------------------------------------------------

constexpr std::uint32_t kCrcPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

using CrcTables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr CrcTables make_crc_tables() {
  CrcTables t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kCrcPoly : c >> 1;
    t[0][i] = c;
  }
  for (std::uint32_t i = 0; i < 256; ++i) {
    for (std::size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
  return t;
}

constexpr CrcTables kCrcTables = make_crc_tables();

std::uint32_t crc32c_soft(std::uint32_t crc, const unsigned char* p, std::size_t n) {
  while (n >= 8) {
    std::uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;
    crc = kCrcTables[7][lo & 0xff] ^ kCrcTables[6][(lo >> 8) & 0xff] ^ kCrcTables[5][(lo >> 16) & 0xff] ^
          kCrcTables[4][lo >> 24] ^ kCrcTables[3][hi & 0xff] ^ kCrcTables[2][(hi >> 8) & 0xff] ^
          kCrcTables[1][(hi >> 16) & 0xff] ^ kCrcTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ kCrcTables[0][(crc ^ *p++) & 0xff];
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t crc32c_hw(std::uint32_t crc, const unsigned char* p, std::size_t n) {
  std::uint64_t c = crc;
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

bool have_sse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

// ---- encoding ---------------------------------------------------------------

void put_u8(std::string& out, std::uint8_t v) { out.push_back(static_cast<char>(v)); }
void put_i64(std::string& out, std::int64_t v) { put_u64(out, static_cast<std::uint64_t>(v)); }
void put_bool(std::string& out, bool v) { put_u8(out, v ? 1 : 0); }
void put_str(std::string& out, std::string_view s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out.append(s.data(), s.size());
}
void put_strs(std::string& out, const std::vector<std::string>& v) {
  put_u32(out, static_cast<std::uint32_t>(v.size()));
  for (const auto& s : v) put_str(out, s);
}
void put_ip(std::string& out, const event::IpAddr& a) {
  put_u8(out, a.family);
  out.append(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size());
}
void put_map(std::string& out, const std::map<std::string, std::string>& m) {
  put_u32(out, static_cast<std::uint32_t>(m.size()));
  for (const auto& [k, v] : m) {
    put_str(out, k);
    put_str(out, v);
  }
}

// Reserves the record header, lets `body` append the body, then fills the length.
template <typename F>
void with_record(std::string& out, RecordType type, F&& body) {
  put_u8(out, static_cast<std::uint8_t>(type));
  std::size_t len_at = out.size();
  put_u32(out, 0);
  body();
  auto len = static_cast<std::uint32_t>(out.size() - len_at - 4);
  unsigned char b[4] = {static_cast<unsigned char>(len), static_cast<unsigned char>(len >> 8),
                        static_cast<unsigned char>(len >> 16), static_cast<unsigned char>(len >> 24)};
  std::memcpy(out.data() + len_at, b, 4);
}

// Payload fields are written in the order of their fields() list: integers
// little-endian at their own width, bool and enums as their byte, strings and
// vectors as a u32 count then the items, addresses as family + 16 bytes,
// nested structs field by field.
template <class T>
void put_value(std::string& out, const T& x);

struct PutField {
  std::string& out;
  void appended() {}
  void revision(int) {}
  template <class V>
  void operator()(std::string_view, const V& v, unsigned = 0) {
    put_value(out, v);
  }
};

template <class T>
void put_value(std::string& out, const T& x) {
  if constexpr (std::is_same_v<T, bool>) {
    put_bool(out, x);
  } else if constexpr (std::is_enum_v<T>) {
    put_value(out, static_cast<std::underlying_type_t<T>>(x));
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (sizeof(T) == 1) put_u8(out, static_cast<std::uint8_t>(x));
    else if constexpr (sizeof(T) == 2) put_u16(out, static_cast<std::uint16_t>(x));
    else if constexpr (sizeof(T) == 4) put_u32(out, static_cast<std::uint32_t>(x));
    else put_u64(out, static_cast<std::uint64_t>(x));
  } else if constexpr (std::is_same_v<T, std::string>) {
    put_str(out, x);
  } else if constexpr (std::is_same_v<T, event::IpAddr>) {
    put_ip(out, x);
  } else if constexpr (event::kIsVector<T>) {
    put_u32(out, static_cast<std::uint32_t>(x.size()));
    for (const auto& item : x) put_value(out, item);
  } else {
    PutField put{out};
    T::fields(put, x);
  }
}

void put_payload(std::string& out, const event::Payload& data) {
  put_u8(out, static_cast<std::uint8_t>(data.index()));
  event::visit_payload(data, [&](const auto& d) { put_value(out, d); });
}

// ---- decoding ---------------------------------------------------------------

// Reads fields from a bounded span. The first failure sets `bad` with the field
// name; later reads return zero values, so callers check once at the end.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : p_(reinterpret_cast<const unsigned char*>(s.data())), end_(p_ + s.size()) {}

  bool failed() const { return bad_ != nullptr; }
  // The field that failed: "exec.filename", "event.pid"...
  std::string failure() const {
    if (!bad_) return "?";
    return bad_ctx_.empty() ? std::string(bad_) : std::string(bad_ctx_) + "." + bad_;
  }
  // The payload whose fields are read now (names the failing field).
  void set_context(std::string_view ctx) { ctx_ = ctx; }
  std::size_t left() const { return static_cast<std::size_t>(end_ - p_); }

  bool need(std::size_t n, const char* what) {
    if (bad_) return false;
    if (left() < n) {
      fail(what);
      return false;
    }
    return true;
  }
  std::uint8_t u8(const char* what) { return need(1, what) ? *p_++ : 0; }
  bool boolean(const char* what) { return u8(what) != 0; }
  std::uint16_t u16(const char* what) {
    if (!need(2, what)) return 0;
    auto v = get_u16(p_);
    p_ += 2;
    return v;
  }
  std::uint32_t u32(const char* what) {
    if (!need(4, what)) return 0;
    auto v = get_u32(p_);
    p_ += 4;
    return v;
  }
  std::uint64_t u64(const char* what) {
    if (!need(8, what)) return 0;
    auto v = get_u64(p_);
    p_ += 8;
    return v;
  }
  std::int32_t i32(const char* what) { return static_cast<std::int32_t>(u32(what)); }
  std::int64_t i64(const char* what) { return static_cast<std::int64_t>(u64(what)); }
  void str(std::string& s, const char* what) {
    std::uint32_t n = u32(what);
    if (!need(n, what)) return;
    s.assign(reinterpret_cast<const char*>(p_), n);
    p_ += n;
  }
  // A string of at most `max` bytes; a longer one is malformed.
  void bounded_str(std::string& s, std::size_t max, const char* what) {
    std::uint32_t n = u32(what);
    if (!bad_ && n > max) {
      fail(what);
      return;
    }
    if (!need(n, what)) return;
    s.assign(reinterpret_cast<const char*>(p_), n);
    p_ += n;
  }
  // A count of items each at least `min_size` bytes long: bounded by what remains.
  std::uint32_t count(std::size_t min_size, const char* what) {
    std::uint32_t n = u32(what);
    if (!bad_ && static_cast<std::uint64_t>(n) * min_size > left()) {
      fail(what);
      return 0;
    }
    return n;
  }
  void strs(std::vector<std::string>& v, const char* what) {
    std::uint32_t n = count(4, what);
    v.clear();
    v.reserve(n);
    for (std::uint32_t i = 0; i < n && !bad_; ++i) str(v.emplace_back(), what);
  }
  void ip(event::IpAddr& a, const char* what) {
    if (!need(17, what)) return;
    a.family = *p_++;
    std::memcpy(a.bytes.data(), p_, 16);
    p_ += 16;
  }
  void map(std::map<std::string, std::string>& m, const char* what) {
    std::uint32_t n = count(8, what);
    m.clear();
    for (std::uint32_t i = 0; i < n && !bad_; ++i) {
      std::string k, v;
      str(k, what);
      str(v, what);
      m.emplace(std::move(k), std::move(v));
    }
  }

 private:
  void fail(const char* what) {
    bad_ = what;
    bad_ctx_ = ctx_;
  }

  const unsigned char* p_;
  const unsigned char* end_;
  const char* bad_ = nullptr;
  std::string_view ctx_;
  std::string_view bad_ctx_;
};

// The fewest bytes a T takes when encoded (an empty string or vector: its count).
template <class T>
std::size_t min_size();

struct SizeField {
  std::size_t& sum;
  void appended() {}
  template <class V>
  void operator()(std::string_view, const V&, unsigned = 0) {
    sum += min_size<V>();
  }
};

template <class T>
std::size_t min_size() {
  if constexpr (std::is_same_v<T, bool> || std::is_enum_v<T> || std::is_integral_v<T>) {
    return std::is_same_v<T, bool> ? 1 : sizeof(T);
  } else if constexpr (std::is_same_v<T, std::string> || event::kIsVector<T>) {
    return 4;
  } else if constexpr (std::is_same_v<T, event::IpAddr>) {
    return 17;
  } else {
    static const std::size_t n = [] {
      std::size_t sum = 0;
      SizeField size{sum};
      const T empty{};
      T::fields(size, empty);
      return sum;
    }();
    return n;
  }
}

template <class T>
void get_value(Cursor& c, T& x, const char* what);

// Reads fields in order. Fields after appended() may be absent (a record
// written before they existed): when the body ends there, they take their
// defaults.
struct GetField {
  Cursor& c;
  bool optional = false;
  void appended() { optional = true; }
  template <class V>
  void operator()(const char* name, V& v, unsigned = 0) {
    if (optional && !c.failed() && c.left() == 0) {
      v = V{};
      return;
    }
    get_value(c, v, name);
  }
};

template <class T>
void get_value(Cursor& c, T& x, const char* what) {
  if constexpr (std::is_same_v<T, bool>) {
    x = c.boolean(what);
  } else if constexpr (std::is_enum_v<T>) {
    std::underlying_type_t<T> v{};
    get_value(c, v, what);
    x = static_cast<T>(v);
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (sizeof(T) == 1) x = static_cast<T>(c.u8(what));
    else if constexpr (sizeof(T) == 2) x = static_cast<T>(c.u16(what));
    else if constexpr (sizeof(T) == 4) x = static_cast<T>(c.u32(what));
    else x = static_cast<T>(c.u64(what));
  } else if constexpr (std::is_same_v<T, std::string>) {
    c.str(x, what);
  } else if constexpr (std::is_same_v<T, event::IpAddr>) {
    c.ip(x, what);
  } else if constexpr (event::kIsVector<T>) {
    // Bounded by what remains: each item takes at least min_size bytes.
    std::uint32_t n = c.count(min_size<typename T::value_type>(), what);
    x.resize(n);
    for (std::uint32_t i = 0; i < n && !c.failed(); ++i) get_value(c, x[i], what);
  } else {
    GetField get{c};
    T::fields(get, x);
  }
}

// Decodes a payload of `kind`, reusing the struct `data` already holds (and
// its string and vector capacity) when it is the same kind. Returns false
// when the kind is not one this version knows (skip the record).
bool get_payload(Cursor& c, std::uint8_t kind, event::Payload& data) {
  if (kind != data.index() && !event::make_payload_kind(kind, data)) return false;
  std::visit(
      [&](auto& d) {
        using T = std::decay_t<decltype(d)>;
        if constexpr (!std::is_same_v<T, std::monostate>) {
          c.set_context(T::kKey);
          GetField get{c};
          T::fields(get, d);
          c.set_context({});
        }
      },
      data);
  return true;
}

// Reads the process record's facts in order. A revision appended after the
// first format is all there or all absent: when the body ends where one
// begins (a record written before it), its facts keep their defaults.
struct GetRecordField {
  Cursor& c;
  int rev = 0;
  bool absent = false;
  void revision(int r) {
    if (r == rev) return;
    rev = r;
    absent = !c.failed() && c.left() == 0;
  }
  template <class V>
  void operator()(const char* name, V& v, unsigned = 0) {
    if (!absent) get_value(c, v, name);
  }
};

}  // namespace

void put_u16(std::string& out, std::uint16_t v) {
  char b[2] = {static_cast<char>(v), static_cast<char>(v >> 8)};
  out.append(b, 2);
}
void put_u32(std::string& out, std::uint32_t v) {
  char b[4] = {static_cast<char>(v), static_cast<char>(v >> 8), static_cast<char>(v >> 16), static_cast<char>(v >> 24)};
  out.append(b, 4);
}
void put_u64(std::string& out, std::uint64_t v) {
  put_u32(out, static_cast<std::uint32_t>(v));
  put_u32(out, static_cast<std::uint32_t>(v >> 32));
}
std::uint16_t get_u16(const unsigned char* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }
std::uint32_t get_u32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
std::uint64_t get_u64(const unsigned char* p) {
  return static_cast<std::uint64_t>(get_u32(p)) | (static_cast<std::uint64_t>(get_u32(p + 4)) << 32);
}

std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t len) {
  auto p = static_cast<const unsigned char*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  crc = have_sse42() ? crc32c_hw(crc, p, len) : crc32c_soft(crc, p, len);
#else
  crc = crc32c_soft(crc, p, len);
#endif
  return ~crc;
}

void append_event(const event::Event& ev, std::string& out) {
  with_record(out, RecordType::kEvent, [&] {
    const auto& h = ev.hdr;
    put_u64(out, h.ts_ns);
    put_u8(out, static_cast<std::uint8_t>(h.type));
    put_u32(out, h.pid);
    put_u32(out, h.tid);
    put_u32(out, h.ppid);
    put_u32(out, h.uid);
    put_u32(out, h.gid);
    put_u64(out, h.cgroup_id);
    put_u32(out, h.pid_ns);
    put_u32(out, h.mnt_ns);
    put_u32(out, h.net_ns);
    put_str(out, h.comm);
    put_payload(out, ev.data);
  });
}

void append_process(const state::Process& p, std::string& out) {
  with_record(out, RecordType::kProcess, [&] {
    PutField put{out};
    state::Process::fields(put, p);
  });
}

void append_container(const state::Container& c, std::string& out) {
  with_record(out, RecordType::kContainer, [&] {
    put_str(out, c.id);
    put_str(out, c.runtime);
    put_str(out, c.pod_uid);
    put_str(out, c.cgroup_path);
    put_u64(out, c.cgroup_id);
    put_str(out, c.name);
    put_str(out, c.image);
    put_str(out, c.image_id);
    put_bool(out, c.privileged);
  });
}

void append_pod(const state::Pod& p, std::string& out) {
  with_record(out, RecordType::kPod, [&] {
    put_str(out, p.uid);
    put_str(out, p.name);
    put_str(out, p.ns);
    put_str(out, p.node);
    put_map(out, p.labels);
    put_map(out, p.annotations);
    put_u32(out, static_cast<std::uint32_t>(p.containers.size()));
    for (const auto& pc : p.containers) {
      put_str(out, pc.name);
      put_str(out, pc.image);
      put_str(out, pc.id);
      put_i64(out, pc.gpu_limit);
      put_str(out, pc.nvidia_visible_devices);
      put_strs(out, pc.gpu_devices);
      put_bool(out, pc.privileged);
    }
    put_str(out, p.resource_version);
    put_str(out, p.owner_kind);  // appended: absent in older files
    put_str(out, p.owner_name);
    // Appended later, after everything older readers read: the containers'
    // start times, in the order of the containers above.
    put_u32(out, static_cast<std::uint32_t>(p.containers.size()));
    for (const auto& pc : p.containers) put_i64(out, pc.started_at_ns);
    put_bool(out, p.from_runtime);  // appended later again
  });
}

void append_pod_removed(std::string_view uid, std::string& out) {
  with_record(out, RecordType::kPodRemoved, [&] { put_str(out, uid); });
}

void append_nvidia(const state::NvidiaInfo& n, std::string& out) {
  auto bounded = [](std::string_view v) { return v.substr(0, kMaxNvidiaString); };
  with_record(out, RecordType::kNvidia, [&] {
    put_u32(out, n.uvm_major);
    put_u32(out, n.caps_major);
    auto count = static_cast<std::uint32_t>(std::min<std::size_t>(n.gpus.size(), kMaxNvidiaGpus));
    put_u32(out, count);
    for (std::uint32_t i = 0; i < count; ++i) {
      const state::GpuInfo& g = n.gpus[i];
      put_str(out, bounded(g.uuid));
      put_str(out, bounded(g.pci));
      put_u32(out, g.minor);
      put_str(out, bounded(g.model));
    }
    put_u32(out, n.nvlink_major);  // appended later
    put_u32(out, n.nvswitch_major);
  });
}

void append_record(const RecordData& rec, std::string& out) {
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, event::Event>) append_event(r, out);
        else if constexpr (std::is_same_v<T, state::Process>) append_process(r, out);
        else if constexpr (std::is_same_v<T, state::Container>) append_container(r, out);
        else if constexpr (std::is_same_v<T, state::Pod>) append_pod(r, out);
        else if constexpr (std::is_same_v<T, PodRemoved>) append_pod_removed(r.uid, out);
        else if constexpr (std::is_same_v<T, state::NvidiaInfo>) append_nvidia(r, out);
      },
      rec);
}

namespace {

// Each decode_* reads one record's body. The first field that does not fit
// fails the cursor; malformed() then says which.
DecodeOutcome malformed(const Cursor& c, std::string& why) {
  why = std::string("record body too short or malformed at field ") + c.failure();
  return DecodeOutcome::kBad;
}

// Decoded in place when `out` already holds an event: replay reuses one
// Record, so strings and vectors keep their capacity across events.
DecodeOutcome decode_event(Cursor& c, RecordData& out, std::string& why) {
  auto* evp = std::get_if<event::Event>(&out);
  event::Event& ev = evp ? *evp : out.emplace<event::Event>();
  auto& h = ev.hdr;
  h.ts_ns = c.u64("event.ts");
  std::uint8_t t = c.u8("event.type");
  h.pid = c.u32("event.pid");
  h.tid = c.u32("event.tid");
  h.ppid = c.u32("event.ppid");
  h.uid = c.u32("event.uid");
  h.gid = c.u32("event.gid");
  h.cgroup_id = c.u64("event.cgroup_id");
  h.pid_ns = c.u32("event.pid_ns");
  h.mnt_ns = c.u32("event.mnt_ns");
  h.net_ns = c.u32("event.net_ns");
  c.str(h.comm, "event.comm");
  std::uint8_t kind = c.u8("event.payload_kind");
  if (c.failed()) return malformed(c, why);
  // An event type or payload kind from a later version: skip the record.
  if (t >= static_cast<std::uint8_t>(event::Type::kCount)) return DecodeOutcome::kSkipped;
  h.type = static_cast<event::Type>(t);
  if (kind < event::kPayloadKinds && kind != event::info(h.type).payload_kind) {
    why = "event.payload_kind: kind " + std::to_string(kind) + " does not belong to event type " +
          std::string(event::type_name(h.type));
    return DecodeOutcome::kBad;
  }
  if (!get_payload(c, kind, ev.data)) return DecodeOutcome::kSkipped;
  if (c.failed()) return malformed(c, why);
  return DecodeOutcome::kOk;
}

// The facts in the order of the process facts table (process_facts.h).
DecodeOutcome decode_process(Cursor& c, RecordData& out, std::string& why) {
  state::Process p;
  c.set_context("process");
  GetRecordField get{c};
  state::Process::fields(get, p);
  c.set_context({});
  if (c.failed()) return malformed(c, why);
  out = std::move(p);
  return DecodeOutcome::kOk;
}

DecodeOutcome decode_container(Cursor& c, RecordData& out, std::string& why) {
  state::Container k;
  c.str(k.id, "container.id");
  c.str(k.runtime, "container.runtime");
  c.str(k.pod_uid, "container.pod_uid");
  c.str(k.cgroup_path, "container.cgroup_path");
  k.cgroup_id = c.u64("container.cgroup_id");
  c.str(k.name, "container.name");
  c.str(k.image, "container.image");
  c.str(k.image_id, "container.image_id");
  k.privileged = c.boolean("container.privileged");
  if (c.failed()) return malformed(c, why);
  out = std::move(k);
  return DecodeOutcome::kOk;
}

void get_pod_container(Cursor& c, state::PodContainer& pc) {
  c.str(pc.name, "pod.container.name");
  c.str(pc.image, "pod.container.image");
  c.str(pc.id, "pod.container.id");
  pc.gpu_limit = c.i64("pod.container.gpu_limit");
  c.str(pc.nvidia_visible_devices, "pod.container.nvidia_visible_devices");
  c.strs(pc.gpu_devices, "pod.container.gpu_devices");
  pc.privileged = c.boolean("pod.container.privileged");
}

DecodeOutcome decode_pod(Cursor& c, RecordData& out, std::string& why) {
  state::Pod p;
  c.str(p.uid, "pod.uid");
  c.str(p.name, "pod.name");
  c.str(p.ns, "pod.ns");
  c.str(p.node, "pod.node");
  c.map(p.labels, "pod.labels");
  c.map(p.annotations, "pod.annotations");
  std::uint32_t n = c.count(29, "pod.containers");
  p.containers.reserve(n);
  for (std::uint32_t i = 0; i < n && !c.failed(); ++i) get_pod_container(c, p.containers.emplace_back());
  c.str(p.resource_version, "pod.resource_version");
  if (c.left() > 0) {  // appended later: absent in older files
    c.str(p.owner_kind, "pod.owner_kind");
    c.str(p.owner_name, "pod.owner_name");
  }
  if (c.left() > 0) {  // appended later: absent in older files
    std::uint32_t m = c.count(8, "pod.container_started_at");
    for (std::uint32_t i = 0; i < m && !c.failed(); ++i) {
      std::int64_t t = c.i64("pod.container_started_at");
      if (i < p.containers.size()) p.containers[i].started_at_ns = t;
    }
  }
  if (c.left() > 0) p.from_runtime = c.boolean("pod.from_runtime");  // absent in older files
  if (c.failed()) return malformed(c, why);
  out = std::move(p);
  return DecodeOutcome::kOk;
}

DecodeOutcome decode_pod_removed(Cursor& c, RecordData& out, std::string& why) {
  PodRemoved r;
  c.str(r.uid, "pod_removed.uid");
  if (c.failed()) return malformed(c, why);
  out = std::move(r);
  return DecodeOutcome::kOk;
}

DecodeOutcome decode_nvidia(Cursor& c, RecordData& out, std::string& why) {
  state::NvidiaInfo n;
  n.uvm_major = c.u32("nvidia.uvm_major");
  n.caps_major = c.u32("nvidia.caps_major");
  // Each GPU is at least 16 bytes (three empty strings and the minor).
  std::uint32_t count = c.count(16, "nvidia.gpus");
  if (count > kMaxNvidiaGpus) {
    why = "nvidia.gpus: " + std::to_string(count) + " GPUs (at most " + std::to_string(kMaxNvidiaGpus) + ")";
    return DecodeOutcome::kBad;
  }
  n.gpus.reserve(count);
  for (std::uint32_t i = 0; i < count && !c.failed(); ++i) {
    state::GpuInfo& g = n.gpus.emplace_back();
    c.bounded_str(g.uuid, kMaxNvidiaString, "nvidia.gpu.uuid");
    c.bounded_str(g.pci, kMaxNvidiaString, "nvidia.gpu.pci");
    g.minor = c.u32("nvidia.gpu.minor");
    c.bounded_str(g.model, kMaxNvidiaString, "nvidia.gpu.model");
  }
  if (!c.failed() && c.left() > 0) {  // absent in older files
    n.nvlink_major = c.u32("nvidia.nvlink_major");
    n.nvswitch_major = c.u32("nvidia.nvswitch_major");
  }
  if (c.failed()) return malformed(c, why);
  out = std::move(n);
  return DecodeOutcome::kOk;
}

}  // namespace

DecodeOutcome decode_record(std::uint8_t type, std::string_view body, RecordData& out, std::string& why) {
  Cursor c(body);
  switch (static_cast<RecordType>(type)) {
    case RecordType::kEvent: return decode_event(c, out, why);
    case RecordType::kProcess: return decode_process(c, out, why);
    case RecordType::kContainer: return decode_container(c, out, why);
    case RecordType::kPod: return decode_pod(c, out, why);
    case RecordType::kPodRemoved: return decode_pod_removed(c, out, why);
    case RecordType::kNvidia: return decode_nvidia(c, out, why);
    default: return DecodeOutcome::kSkipped;
  }
}

}  // namespace vigil::capture
