#include "engine/sensor/kmsg.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

#include "engine/util/parse_number.h"

namespace vigil::sensor {
namespace {

constexpr std::size_t kReadBuf = 8192;
constexpr std::size_t kMaxPending = 64 * 1024;

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x' && hex(s[i + 2]) >= 0 && hex(s[i + 3]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 2]) * 16 + hex(s[i + 3])));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool is_hex(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (hex(c) < 0) return false;
  return true;
}

bool is_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

std::optional<KmsgRecord> parse_kmsg_record(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  auto semi = line.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  std::string_view head = line.substr(0, semi);
  std::string_view fields[4];
  std::size_t n = 0, pos = 0;
  while (n < 4) {
    auto comma = head.find(',', pos);
    fields[n++] = head.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (n < 4) return std::nullopt;  // pri, seq, ts, flags are required; more are ignored
  std::uint32_t pri = 0;
  KmsgRecord r;
  if (!util::parse_whole(fields[0], &pri) || !util::parse_whole(fields[1], &r.seq) ||
      !util::parse_whole(fields[2], &r.ts_us))
    return std::nullopt;
  r.facility = pri >> 3;
  r.level = pri & 7;
  r.continuation = fields[3].find('c') != std::string_view::npos || fields[3].find('+') != std::string_view::npos;
  r.message = unescape(line.substr(semi + 1));
  return r;
}

std::optional<event::XidData> parse_xid(std::string_view msg) {
  constexpr std::string_view kTag = "NVRM: Xid (";
  auto at = msg.find(kTag);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view s = msg.substr(at + kTag.size());
  auto close = s.find("): ");
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view loc = s.substr(0, close);
  s.remove_prefix(close + 3);

  event::XidData x;
  // Location: "PCI:dddd:bb:dd[ GPU-I:n][ GPU-CI:n]" or the old "dddd:bb:dd".
  if (loc.starts_with("PCI:")) loc.remove_prefix(4);
  auto sp = loc.find(' ');
  std::string_view bus = loc.substr(0, sp);
  // dddd:bb:dd (optionally .f): hex groups separated by ':'
  {
    std::string_view b = bus;
    auto dot = b.find('.');
    if (dot != std::string_view::npos) {
      if (!is_digits(b.substr(dot + 1))) return std::nullopt;
      b = b.substr(0, dot);
    }
    int groups = 0;
    std::size_t p = 0;
    while (true) {
      auto c = b.find(':', p);
      if (!is_hex(b.substr(p, c == std::string_view::npos ? std::string_view::npos : c - p))) return std::nullopt;
      ++groups;
      if (c == std::string_view::npos) break;
      p = c + 1;
    }
    if (groups < 2 || groups > 3) return std::nullopt;
  }
  x.pci = std::string(bus);

  // Code: decimal up to ','
  auto comma = s.find(',');
  std::string_view code = s.substr(0, comma);
  if (!util::parse_whole(code, &x.code)) return std::nullopt;
  if (comma == std::string_view::npos) return x;
  s.remove_prefix(comma + 1);
  if (s.starts_with(" ")) s.remove_prefix(1);

  if (s.starts_with("pid=")) {
    auto c = s.find(',');
    std::string_view pid = s.substr(4, c == std::string_view::npos ? std::string_view::npos : c - 4);
    std::uint32_t v = 0;
    if (util::parse_whole(pid, &v)) x.xid_pid = v;  // "'<unknown>'" leaves 0
    s = c == std::string_view::npos ? std::string_view() : s.substr(c + 1);
    if (s.starts_with(" ")) s.remove_prefix(1);
  }
  if (s.starts_with("name=")) {
    // A comm may itself contain ", "; take the shortest, as the reference advises.
    auto c = s.find(", ");
    std::string_view name = s.substr(5, c == std::string_view::npos ? std::string_view::npos : c - 5);
    if (name != "<unknown>") x.xid_comm = std::string(name.substr(0, 15));
    s = c == std::string_view::npos ? std::string_view() : s.substr(c + 2);
  }
  x.text = std::string(s);
  return x;
}

Result<KmsgReader> KmsgReader::open(const std::string& path, int* open_errno) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (open_errno) *open_errno = err;
    return Error::runtime("sensor: cannot open " + path + ": " + std::strerror(err));
  }
  // Only new records: /dev/kmsg supports SEEK_END; a FIFO does not (ESPIPE, fine).
  ::lseek(fd, 0, SEEK_END);
  return KmsgReader(fd);
}

KmsgReader::KmsgReader(KmsgReader&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), pending_(std::move(o.pending_)), lost_(o.lost_) {}

KmsgReader& KmsgReader::operator=(KmsgReader&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    pending_ = std::move(o.pending_);
    lost_ = o.lost_;
  }
  return *this;
}

KmsgReader::~KmsgReader() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<event::Event> xid_event(std::uint32_t facility, std::uint32_t level, std::uint64_t ts_us,
                                      std::string_view message, const TimeBase& tb) {
  auto xid = parse_xid(message);
  if (!xid) return std::nullopt;
  xid->source = "kmsg";
  xid->facility = static_cast<std::int32_t>(facility);
  xid->level = static_cast<std::int32_t>(level);
  event::Event ev;
  ev.hdr.type = event::Type::kXid;
  ev.hdr.ts_ns = tb.from_monotonic(ts_us * 1000);
  // Attribute to the process the line names (host pid namespace).
  ev.hdr.pid = xid->xid_pid;
  ev.hdr.tid = xid->xid_pid;
  ev.hdr.comm = xid->xid_comm;
  ev.data = std::move(*xid);
  return ev;
}

int KmsgReader::handle_line(std::string_view line, const TimeBase& tb, const std::function<void(event::Event&&)>& cb) {
  auto rec = parse_kmsg_record(line);
  if (!rec) return 0;
  auto ev = xid_event(rec->facility, rec->level, rec->ts_us, rec->message, tb);
  if (!ev) return 0;
  cb(std::move(*ev));
  return 1;
}

int KmsgReader::read_available(const TimeBase& tb, const std::function<void(event::Event&&)>& cb) {
  int n = 0;
  char buf[kReadBuf];
  for (int rounds = 0; rounds < 1024; ++rounds) {
    ssize_t r = ::read(fd_, buf, sizeof(buf));
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      if (errno == EPIPE) {  // records were overwritten; the position moved on
        ++lost_;
        continue;
      }
      return -errno;
    }
    if (r == 0) break;
    pending_.append(buf, static_cast<std::size_t>(r));
    std::size_t start = 0;
    while (true) {
      auto nl = pending_.find('\n', start);
      if (nl == std::string::npos) break;
      n += handle_line(std::string_view(pending_).substr(start, nl - start), tb, cb);
      start = nl + 1;
    }
    pending_.erase(0, start);
    if (pending_.size() > kMaxPending) pending_.clear();  // a line without end: drop it
  }
  return n;
}

KmsgSource::KmsgSource(KmsgReader reader, std::string path)
    : reader_(std::move(reader)), path_(std::move(path)), tb_(TimeBase::now()) {}

Result<std::unique_ptr<KmsgSource>> KmsgSource::open(const std::string& path, int* open_errno) {
  auto r = KmsgReader::open(path, open_errno);
  if (!r) return r.error();
  return std::unique_ptr<KmsgSource>(new KmsgSource(std::move(*r), path));
}

Result<std::size_t> KmsgSource::poll(std::size_t budget, const Emit& emit) {
  (void)budget;
  if (!failure_.empty()) return Error::runtime(failure_);
  const int n = reader_.read_available(tb_, emit);
  if (n < 0) {
    failure_ = "reading " + path_ + ": " + std::strerror(-n);
    return Error::runtime(failure_);
  }
  return static_cast<std::size_t>(n);
}

source::Drops KmsgSource::drops() const {
  source::Drops d;
  d.add("overwritten", reader_.lost());
  return d;
}

}  // namespace vigil::sensor
