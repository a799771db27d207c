#include "plugins/cuda/proc_maps.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

namespace vigil::cuda {

namespace {

constexpr std::size_t kMaxPath = 4096;

bool hex_field(std::string_view s, std::uint64_t& v) {
  if (s.empty() || s.size() > 16) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  return ec == std::errc() && p == s.data() + s.size();
}

// Splits off the next space-separated field of `rest`.
std::string_view next_field(std::string_view& rest) {
  std::size_t b = rest.find_first_not_of(' ');
  if (b == std::string_view::npos) {
    rest = {};
    return {};
  }
  rest.remove_prefix(b);
  std::size_t e = rest.find(' ');
  std::string_view f = rest.substr(0, e);
  rest = e == std::string_view::npos ? std::string_view{} : rest.substr(e);
  return f;
}

}  // namespace

std::optional<MapsEntry> parse_maps_line(std::string_view line) {
  MapsEntry m;
  std::string_view rest = line;
  std::string_view range = next_field(rest);
  std::string_view perms = next_field(rest);
  std::string_view offset = next_field(rest);
  std::string_view dev = next_field(rest);
  std::string_view inode = next_field(rest);
  std::size_t dash = range.find('-');
  if (dash == std::string_view::npos || !hex_field(range.substr(0, dash), m.start) ||
      !hex_field(range.substr(dash + 1), m.end) || m.end < m.start)
    return std::nullopt;
  if (perms.size() != 4) return std::nullopt;
  m.exec = perms[2] == 'x';
  std::uint64_t off = 0;
  if (!hex_field(offset, off)) return std::nullopt;
  std::size_t colon = dev.find(':');
  std::uint64_t maj = 0, min = 0;
  if (colon == std::string_view::npos || !hex_field(dev.substr(0, colon), maj) ||
      !hex_field(dev.substr(colon + 1), min) || maj > 0xfff || min > 0xfffff)
    return std::nullopt;
  m.dev_major = static_cast<std::uint32_t>(maj);
  m.dev_minor = static_cast<std::uint32_t>(min);
  if (inode.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(inode.data(), inode.data() + inode.size(), m.inode);
  if (ec != std::errc() || p != inode.data() + inode.size()) return std::nullopt;
  std::size_t b = rest.find_first_not_of(' ');
  if (b != std::string_view::npos) {
    std::string_view path = rest.substr(b);
    constexpr std::string_view kDeleted = " (deleted)";
    if (path.ends_with(kDeleted)) {
      m.deleted = true;
      path.remove_suffix(kDeleted.size());
    }
    if (path.size() > kMaxPath || path.find('\0') != std::string_view::npos) return std::nullopt;
    m.path.assign(path);
  }
  return m;
}

bool library_name_matches(std::string_view path, std::span<const std::string> names) {
  if (path.empty() || path.front() != '/') return false;  // anonymous and [special] mappings
  std::string_view base = path.substr(path.rfind('/') + 1);
  for (const std::string& n : names) {
    if (base == n) return true;
    if (base.size() > n.size() && base.starts_with(n) && base[n.size()] == '.') return true;
  }
  return false;
}

std::vector<MapsEntry> find_libraries(std::string_view text, std::span<const std::string> names, std::size_t max) {
  std::vector<MapsEntry> out;
  while (!text.empty() && out.size() < max) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    // Cheap test first: most lines are other libraries.
    if (line.find("/") == std::string_view::npos) continue;
    auto m = parse_maps_line(line);
    if (!m || !m->exec || m->inode == 0 || !library_name_matches(m->path, names)) continue;
    bool seen = false;
    for (const MapsEntry& o : out)
      seen = seen || (o.inode == m->inode && o.dev_major == m->dev_major && o.dev_minor == m->dev_minor);
    if (!seen) out.push_back(std::move(*m));
  }
  return out;
}

bool read_proc_file(const std::string& path, std::size_t max_bytes, std::string& out) {
  out.clear();
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  constexpr std::size_t kChunk = 64 * 1024;
  bool ok = true;
  while (out.size() < max_bytes) {
    std::size_t want = std::min(kChunk, max_bytes - out.size());
    std::size_t at = out.size();
    out.resize(at + want);
    ssize_t n = read(fd, out.data() + at, want);
    if (n < 0 && errno == EINTR) {
      out.resize(at);
      continue;
    }
    if (n <= 0) {
      out.resize(at);
      ok = n == 0;
      break;
    }
    out.resize(at + static_cast<std::size_t>(n));
  }
  close(fd);
  if (out.size() >= max_bytes) {
    std::size_t last = out.rfind('\n');
    out.resize(last == std::string::npos ? 0 : last + 1);
  }
  return ok;
}

}  // namespace vigil::cuda
