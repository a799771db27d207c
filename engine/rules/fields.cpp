// The field catalogue: field types, the Arena, IP parsing, and the catalogue
// itself (built from each field class's rows, resolved by name). The fields
// are in one file per class, each with its extractors and its rows:
// fields_evt.cpp (and fields_evt_arg.cpp), fields_proc.cpp, fields_user.cpp,
// fields_fd.cpp, fields_container.cpp, fields_gpu.cpp, fields_net.cpp,
// fields_vigil.cpp, fields_baseline.cpp.
#include "engine/rules/fields.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "engine/event/schema.h"
#include "engine/rules/field_extractors.h"

namespace vigil::rules {

std::string_view field_type_name(FieldType t) {
  switch (t) {
    case FieldType::kString: return "string";
    case FieldType::kInt: return "int";
    case FieldType::kUint: return "uint";
    case FieldType::kBool: return "bool";
    case FieldType::kIp: return "ip";
    case FieldType::kList: return "list";
  }
  return "?";
}

// ---------------------------------------------------------------- Arena

std::string_view Arena::put(std::string_view s) noexcept {
  begin();
  append(s);
  return finish();
}

void Arena::append(std::string_view s) noexcept {
  std::size_t n = std::min(s.size(), kSize - used_);
  std::memcpy(buf_ + used_, s.data(), n);
  used_ += n;
}

void Arena::append_uint(std::uint64_t v) noexcept {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  append(std::string_view(tmp, static_cast<std::size_t>(r.ptr - tmp)));
}

void Arena::append_int(std::int64_t v) noexcept {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  append(std::string_view(tmp, static_cast<std::size_t>(r.ptr - tmp)));
}

// ---------------------------------------------------------------- IPs

bool parse_ip(std::string_view s, event::IpAddr& out) {
  if (s.empty() || s.size() > 45) return false;
  char buf[64];
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = 0;
  event::IpAddr a;
  if (inet_pton(AF_INET, buf, a.bytes.data()) == 1) {
    a.family = AF_INET;
    out = a;
    return true;
  }
  if (inet_pton(AF_INET6, buf, a.bytes.data()) == 1) {
    a.family = AF_INET6;
    out = a;
    return true;
  }
  return false;
}

bool parse_cidr(std::string_view s, Cidr& out) {
  auto slash = s.find('/');
  Cidr c;
  if (!parse_ip(s.substr(0, slash), c.net)) return false;
  int max_bits = c.net.family == AF_INET ? 32 : 128;
  if (slash == std::string_view::npos) {
    c.prefix = max_bits;
  } else {
    auto p = s.substr(slash + 1);
    int bits = -1;
    auto r = std::from_chars(p.data(), p.data() + p.size(), bits);
    if (r.ec != std::errc() || r.ptr != p.data() + p.size() || bits < 0 || bits > max_bits) {
      return false;
    }
    c.prefix = bits;
  }
  out = c;
  return true;
}

bool Cidr::contains(const event::IpAddr& a) const noexcept {
  if (a.family != net.family) return false;
  int full = prefix / 8;
  if (std::memcmp(a.bytes.data(), net.bytes.data(), static_cast<std::size_t>(full)) != 0) return false;
  int rest = prefix % 8;
  if (rest == 0) return true;
  auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
  return (a.bytes[static_cast<std::size_t>(full)] & mask) == (net.bytes[static_cast<std::size_t>(full)] & mask);
}

void fx::append_ip(Arena& a, const event::IpAddr& ip) noexcept {
  char buf[INET6_ADDRSTRLEN];
  if (ip.family == AF_INET || ip.family == AF_INET6) {
    if (inet_ntop(ip.family, ip.bytes.data(), buf, sizeof buf)) a.append(std::string_view(buf));
  }
}

// ---------------------------------------------------------------- evt.type

event::TypeMask evt_type_mask(std::string_view n, bool& known) {
  known = true;
  if (event::Type t = event::type_from_name(n); t != event::Type::kUnknown) return event::TypeMask(t);
  // Syscalls Falco knows that vigil does not report: accepted, never match.
  known = event::is_unreported_syscall(n);
  return {};
}

// ---------------------------------------------------------------- catalogue

FieldCatalog::FieldCatalog() {
  append_evt_fields(fields_);
  append_proc_fields(fields_);
  append_user_fields(fields_);
  append_fd_fields(fields_);
  append_container_fields(fields_);
  append_gpu_fields(fields_);
  append_net_fields(fields_);
  append_vigil_fields(fields_);
  append_baseline_fields(fields_);
  append_posture_fields(fields_);
  append_target_fields(fields_);
}

const FieldCatalog& FieldCatalog::builtin() {
  static const FieldCatalog kCatalog;
  return kCatalog;
}

Result<std::unique_ptr<FieldCatalog>> FieldCatalog::extend(const FieldCatalog& base, std::vector<FieldDef> extra) {
  std::unique_ptr<FieldCatalog> c(new FieldCatalog(base));
  c->fields_.reserve(base.fields_.size() + extra.size());
  for (FieldDef& f : extra) {
    if (c->find(f.name)) {
      return Error::bad_input("field '" + std::string(f.name) + "' is already defined");
    }
    c->fields_.push_back(f);
  }
  return c;
}

const FieldDef* FieldCatalog::find(std::string_view name) const {
  for (const auto& f : fields_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool FieldCatalog::resolve(std::string_view name, bool has_arg, std::string_view arg, FieldInst& out,
                           std::string& error, bool& unknown) const {
  unknown = false;
  const FieldDef* def = find(name);
  if (!def && !has_arg) {
    // Dotted key form: k8s.pod.label.app
    for (std::string_view prefix : {std::string_view("k8s.pod.label."), std::string_view("evt.arg.")}) {
      if (name.rfind(prefix, 0) == 0 && name.size() > prefix.size()) {
        def = find(prefix.substr(0, prefix.size() - 1));
        arg = name.substr(prefix.size());
        has_arg = true;
        break;
      }
    }
  }
  if (!def) {
    unknown = true;
    error = "unknown field '" + std::string(name) + "'";
    return false;
  }
  out = FieldInst{};
  out.def = def;
  switch (def->arg) {
    case ArgMode::kNone:
      if (has_arg) {
        error = "field '" + std::string(def->name) + "' takes no argument";
        return false;
      }
      break;
    case ArgMode::kOptionalKey:
      if (has_arg) {
        out.arg = std::string(arg);
        out.has_arg = true;
      }
      break;
    case ArgMode::kRequiredKey:
      if (!has_arg || arg.empty()) {
        error = "field '" + std::string(def->name) + "' needs an argument, e.g. " + std::string(def->name) + "[key]";
        return false;
      }
      out.arg = std::string(arg);
      out.has_arg = true;
      break;
    case ArgMode::kOptionalIndex:
    case ArgMode::kRequiredIndex: {
      if (!has_arg) {
        if (def->arg == ArgMode::kRequiredIndex) {
          error = "field '" + std::string(def->name) + "' needs an index argument";
          return false;
        }
        break;
      }
      std::int64_t idx = -1;
      auto r = std::from_chars(arg.data(), arg.data() + arg.size(), idx);
      if (r.ec != std::errc() || r.ptr != arg.data() + arg.size() || idx < 0 || idx > 32) {
        error = "field '" + std::string(def->name) + "' needs a numeric index 0..32, got '" + std::string(arg) + "'";
        return false;
      }
      out.arg = std::string(arg);
      out.has_arg = true;
      out.index = idx;
      break;
    }
  }
  return true;
}

std::string_view render_value(FieldType t, const Extracted& e, Arena& a) noexcept {
  if (e.n == 0) return "<NA>";
  a.begin();
  for (std::size_t i = 0; i < e.n; ++i) {
    if (i) a.append(',');
    const Val& v = e.v[i];
    switch (t) {
      case FieldType::kString:
      case FieldType::kList: a.append(v.s); break;
      case FieldType::kInt:
      case FieldType::kUint: a.append_int(v.i); break;
      case FieldType::kBool: a.append(v.b ? "true" : "false"); break;
      case FieldType::kIp: fx::append_ip(a, *v.ip); break;
    }
  }
  return a.finish();
}

}  // namespace vigil::rules
