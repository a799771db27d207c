#include "engine/event/event.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <array>

#include "engine/event/alert.h"

namespace vigil::event {
namespace {

constexpr std::array<std::string_view, static_cast<std::size_t>(Type::kCount)> kTypeNames = {
    "unknown", "execve",  "clone", "procexit", "connect", "openat",
    "ioctl",   "gpu_usage", "xid", "dns",      "payload", "bpf",
};

constexpr std::array<std::string_view, 8> kPriorityNames = {
    "Emergency", "Alert", "Critical", "Error", "Warning", "Notice", "Informational", "Debug",
};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

}  // namespace

std::string_view type_name(Type t) {
  auto i = static_cast<std::size_t>(t);
  return i < kTypeNames.size() ? kTypeNames[i] : kTypeNames[0];
}

Type type_from_name(std::string_view name) {
  for (std::size_t i = 1; i < kTypeNames.size(); ++i) {
    if (kTypeNames[i] == name) return static_cast<Type>(i);
  }
  return Type::kUnknown;
}

std::string to_string(const IpAddr& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.family == AF_INET) {
    inet_ntop(AF_INET, a.bytes.data(), buf, sizeof(buf));
  } else if (a.family == AF_INET6) {
    inet_ntop(AF_INET6, a.bytes.data(), buf, sizeof(buf));
  }
  return buf;
}

std::string_view priority_name(Priority p) {
  auto i = static_cast<std::size_t>(p);
  return i < kPriorityNames.size() ? kPriorityNames[i] : "Warning";
}

std::optional<Priority> priority_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kPriorityNames.size(); ++i) {
    if (iequals(name, kPriorityNames[i])) return static_cast<Priority>(i);
  }
  if (iequals(name, "info")) return Priority::kInformational;
  if (iequals(name, "warn")) return Priority::kWarning;
  if (iequals(name, "emerg")) return Priority::kEmergency;
  if (iequals(name, "crit")) return Priority::kCritical;
  if (iequals(name, "err")) return Priority::kError;
  return std::nullopt;
}

}  // namespace vigil::event
