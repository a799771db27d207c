#include "engine/sensor/sysfs.h"

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace vigil::sensor {
namespace {

std::string read_small(const std::string& path, std::size_t cap = 1u << 20) {
  std::ifstream in(path);
  if (!in) return {};
  std::string out;
  char buf[4096];
  while (out.size() < cap && in.read(buf, sizeof(buf)).gcount() > 0)
    out.append(buf, static_cast<std::size_t>(in.gcount()));
  if (out.size() > cap) out.resize(cap);
  return out;
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    auto b = s.find_first_not_of(' ', pos);
    if (b == std::string_view::npos) break;
    auto e = s.find(' ', b);
    out.push_back(s.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
    if (e == std::string_view::npos) break;
    pos = e;
  }
  return out;
}

// mountinfo escapes spaces etc. as \ooo.
std::string unescape_octal(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\') {
      bool ok = true;
      int v = 0;
      for (std::size_t k = 1; ok && k <= 3; ++k) {
        if (i + k >= s.size() || s[i + k] < '0' || s[i + k] > '7') {
          ok = false;
        } else {
          v = v * 8 + (s[i + k] - '0');
        }
      }
      if (ok) {
        out.push_back(static_cast<char>(v));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

std::string cgroup2_mount(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    // id parent maj:min root mountpoint opts [optional...] - fstype source superopts
    auto sep = line.find(" - ");
    if (sep == std::string_view::npos) continue;
    auto left = split_ws(line.substr(0, sep));
    auto right = split_ws(line.substr(sep + 3));
    if (left.size() < 5 || right.empty()) continue;
    if (right[0] == "cgroup2" && left[3] == "/") return unescape_octal(left[4]);
  }
  return {};
}

Result<std::string> cgroup2_root() {
  std::string mi = read_small("/proc/self/mountinfo");
  std::string root = cgroup2_mount(mi);
  if (root.empty())
    return Error::runtime(
        "sensor: no cgroup v2 filesystem mounted (see /proc/self/mountinfo; mount the host's /sys/fs/cgroup); connect/DNS hooks need one");
  return root;
}

Result<std::string> ensure_tracefs() {
  for (const char* p : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    if (access((std::string(p) + "/events").c_str(), F_OK) == 0) return std::string(p);
  }
  if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) != 0)
    return Error::runtime(
        std::string("sensor: tracefs is not mounted and mounting it at /sys/kernel/tracing failed: ") +
        std::strerror(errno) + " (mount the host's /sys/kernel/tracing; mounting it takes CAP_SYS_ADMIN)");
  return std::string("/sys/kernel/tracing");
}

std::optional<XidTracepointOffsets> parse_xid_format(std::string_view text) {
  XidTracepointOffsets o;
  bool dev = false, code = false, msg = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    auto f = line.find("field:");
    auto o_at = line.find("offset:");
    if (f == std::string_view::npos || o_at == std::string_view::npos) continue;
    std::string_view decl = line.substr(f + 6, line.find(';', f) - (f + 6));
    std::string_view num = line.substr(o_at + 7);
    num = num.substr(0, num.find(';'));
    std::uint32_t off = 0;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), off);
    if (ec != std::errc()) continue;
    auto name_at = decl.find_last_of(' ');
    std::string_view name = name_at == std::string_view::npos ? decl : decl.substr(name_at + 1);
    if (name == "dev" && decl.find("__data_loc") != std::string_view::npos) {
      o.dev = off;
      dev = true;
    }
    if (name == "error_code") {
      o.code = off;
      code = true;
    }
    if (name == "msg" && decl.find("__data_loc") != std::string_view::npos) {
      o.msg = off;
      msg = true;
    }
  }
  if (!dev || !code || !msg) return std::nullopt;
  return o;
}

std::optional<XidTracepointOffsets> xid_tracepoint_offsets(const std::string& path) {
  return parse_xid_format(read_small(path, 64 * 1024));
}

}  // namespace vigil::sensor
