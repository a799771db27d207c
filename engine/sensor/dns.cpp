#include "engine/sensor/dns.h"

#include <sys/socket.h>

#include <algorithm>

namespace vigil::sensor {
namespace {

constexpr std::size_t kHeaderLen = 12;
constexpr int kMaxPointerJumps = 16;
constexpr std::size_t kMaxName = 255;

std::uint16_t be16(std::span<const std::uint8_t> m, std::size_t off) {
  return static_cast<std::uint16_t>((m[off] << 8) | m[off + 1]);
}

// Reads a (possibly compressed) name at *off; on success advances *off past
// the name as it appears at that position.
bool read_name(std::span<const std::uint8_t> m, std::size_t* off, std::string* out) {
  std::size_t pos = *off;
  std::size_t end_of_first = 0;  // where the name ends in place (before any jump)
  int jumps = 0;
  out->clear();
  while (true) {
    if (pos >= m.size()) return false;
    std::uint8_t len = m[pos];
    if ((len & 0xC0) == 0xC0) {
      if (pos + 1 >= m.size()) return false;
      std::size_t target = static_cast<std::size_t>(((len & 0x3F) << 8) | m[pos + 1]);
      if (jumps == 0) end_of_first = pos + 2;
      // Pointers may only go backwards: that alone rules out loops, and the
      // jump count bounds the work.
      if (target >= pos || ++jumps > kMaxPointerJumps) return false;
      pos = target;
      continue;
    }
    if ((len & 0xC0) != 0) return false;  // reserved label types
    if (len == 0) {
      if (jumps == 0) end_of_first = pos + 1;
      break;
    }
    if (pos + 1 + len > m.size()) return false;
    if (!out->empty()) out->push_back('.');
    for (std::size_t i = 0; i < len; ++i) {
      char c = static_cast<char>(m[pos + 1 + i]);
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      out->push_back(c);
    }
    if (out->size() > kMaxName) return false;
    pos += 1 + len;
  }
  *off = end_of_first;
  return true;
}

Error dns_error(const std::string& what) { return Error::bad_input("dns message: " + what); }

}  // namespace

Result<event::DnsData> parse_dns(std::span<const std::uint8_t> m) {
  if (m.size() < kHeaderLen) return dns_error("shorter than the header");
  event::DnsData d;
  d.id = be16(m, 0);
  std::uint16_t flags = be16(m, 2);
  d.is_response = (flags & 0x8000) != 0;
  d.rcode = flags & 0x000F;
  std::uint16_t qd = be16(m, 4);
  std::uint16_t an = be16(m, 6);
  if (qd == 0) return dns_error("no question");
  std::size_t off = kHeaderLen;
  // The first question is the one reported; others (never sent by real
  // resolvers) are skipped.
  for (std::uint16_t q = 0; q < qd; ++q) {
    std::string name;
    if (!read_name(m, &off, &name)) return dns_error("bad question name");
    if (off + 4 > m.size()) return dns_error("question cut short");
    if (q == 0) {
      d.name = std::move(name);
      d.qtype = be16(m, off);
    }
    off += 4;
    if (q >= 4) return dns_error("too many questions");
  }
  if (!d.is_response) return d;
  for (std::uint16_t a = 0; a < an && d.answers.size() < kDnsMaxAnswers; ++a) {
    std::string owner;
    if (!read_name(m, &off, &owner)) break;  // keep what was parsed so far
    if (off + 10 > m.size()) break;
    std::uint16_t type = be16(m, off);
    std::uint16_t cls = be16(m, off + 2);
    std::uint16_t rdlen = be16(m, off + 8);
    off += 10;
    if (off + rdlen > m.size()) break;
    if (cls == 1 && type == 1 && rdlen == 4) {
      event::IpAddr ip;
      ip.family = AF_INET;
      std::copy_n(m.begin() + static_cast<std::ptrdiff_t>(off), 4, ip.bytes.begin());
      d.answers.push_back(ip);
    } else if (cls == 1 && type == 28 && rdlen == 16) {
      event::IpAddr ip;
      ip.family = AF_INET6;
      std::copy_n(m.begin() + static_cast<std::ptrdiff_t>(off), 16, ip.bytes.begin());
      d.answers.push_back(ip);
    }
    off += rdlen;
  }
  return d;
}

}  // namespace vigil::sensor
