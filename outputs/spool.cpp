#include "outputs/spool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/util/safe_file.h"

namespace vigil::outputs {
namespace {

constexpr std::uint32_t kMagic = 0x31505356;  // "VSP1" little-endian
constexpr std::uint64_t kSegmentBytes = 4ULL << 20;
constexpr std::uint32_t kMaxRecord = 64U << 20;
constexpr std::size_t kHeader = 12;
constexpr std::size_t kCursorBytes = 64;       // "seg off crc", space-padded
constexpr std::size_t kReadChunk = 256 << 10;  // peek reads segments this much at a time

std::uint32_t crc32(std::string_view data) {
  static constexpr auto kTable = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320U ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFU;
  for (unsigned char b : data) c = kTable[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFU;
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

std::uint32_t get_u32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void put_str(std::string& out, const std::string& s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out += s;
}

bool get_str(std::string_view& in, std::string& s) {
  if (in.size() < 4) return false;
  const std::uint32_t n = get_u32(in.data());
  in.remove_prefix(4);
  if (n > in.size()) return false;
  s.assign(in.substr(0, n));
  in.remove_prefix(n);
  return true;
}

std::string encode(const Message& m) {
  std::string payload;
  put_str(payload, m.body);
  put_str(payload, m.uuid);
  put_str(payload, m.rule);
  put_str(payload, m.priority);
  put_str(payload, m.hostname);
  put_str(payload, m.pod);
  put_str(payload, std::to_string(m.time_ns));
  put_str(payload, std::to_string(m.enqueued_ns));  // since v2; absent in older records
  std::string rec;
  rec.reserve(kHeader + payload.size());
  put_u32(rec, kMagic);
  put_u32(rec, static_cast<std::uint32_t>(payload.size()));
  put_u32(rec, crc32(payload));
  rec += payload;
  return rec;
}

bool parse_u64(const std::string& t, std::uint64_t& v) {
  if (t.empty() || t.size() > 20) return false;
  v = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return true;
}

bool decode(std::string_view payload, Message& m) {
  std::string t, q;
  if (!(get_str(payload, m.body) && get_str(payload, m.uuid) && get_str(payload, m.rule) &&
        get_str(payload, m.priority) && get_str(payload, m.hostname) && get_str(payload, m.pod) &&
        get_str(payload, t) && parse_u64(t, m.time_ns))) {
    return false;
  }
  m.enqueued_ns = 0;
  if (payload.empty()) return true;  // a record from before enqueued_ns was kept
  return get_str(payload, q) && parse_u64(q, m.enqueued_ns) && payload.empty();
}

// Reads the records of one segment file through a buffer: one pread per
// kReadChunk rather than two per record.
class RecordReader {
 public:
  explicit RecordReader(int fd, std::size_t chunk = kReadChunk) : fd_(fd), chunk_(chunk) {}
  // The record at `off`. 1: ok, 0: clean end, -1: torn or corrupt.
  int read(std::uint64_t off, std::string& payload) {
    const std::size_t n = fill(off, kHeader);
    if (n == 0) return 0;
    if (n != kHeader) return -1;
    const char* hdr = at(off);
    if (get_u32(hdr) != kMagic) return -1;
    const std::uint32_t len = get_u32(hdr + 4);
    const std::uint32_t crc = get_u32(hdr + 8);
    if (len > kMaxRecord) return -1;
    if (fill(off + kHeader, len) != len) return -1;
    payload.assign(at(off + kHeader), len);
    return crc32(payload) == crc ? 1 : -1;
  }

 private:
  // Makes [off, off + n) readable at at(off); returns how much of it is
  // (less than n at the end of the file).
  std::size_t fill(std::uint64_t off, std::size_t n) {
    if (off >= start_ && off - start_ + n <= buf_.size()) return n;
    buf_.resize(std::max(n, chunk_));
    std::size_t got = 0;
    while (got < buf_.size()) {
      const ssize_t r = pread(fd_, buf_.data() + got, buf_.size() - got, static_cast<off_t>(off + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    buf_.resize(got);
    start_ = off;
    return std::min(n, got);
  }
  const char* at(std::uint64_t off) const { return buf_.data() + (off - start_); }

  int fd_;
  std::size_t chunk_;
  std::string buf_;
  std::uint64_t start_ = 0;
};

Status errno_error(const std::string& what) {
  if (errno == ELOOP) {
    return Error::bad_input(what + ": refused: a symbolic link (a spool is never read or cut through links)");
  }
  return Error::runtime(what + ": " + std::strerror(errno));
}

}  // namespace

std::string Spool::seg_path(std::uint64_t seg) const {
  char name[32];
  std::snprintf(name, sizeof(name), "%020llu.seg", static_cast<unsigned long long>(seg));
  return dir_ + "/" + name;
}

Result<std::unique_ptr<Spool>> Spool::open(const std::string& dir, std::uint64_t max_bytes) {
  if (Status st = util::make_dirs(dir, util::kDirMode); !st) {
    return Error{st.error().kind, "spool " + dir + ": " + st.error().message};
  }
  std::error_code ec;
  // Alerts are sensitive: the spool is the owner's alone.
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace, ec);
  std::unique_ptr<Spool> s(new Spool(dir, max_bytes));
  if (Status st = s->load(); !st) return st.error();
  return s;
}

Spool::~Spool() {
  if (tail_fd_ >= 0) ::close(tail_fd_);
  if (cursor_fd_ >= 0) ::close(cursor_fd_);
}

Status Spool::load() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() != 24 || name.substr(20) != ".seg") continue;
    if (!std::all_of(name.begin(), name.begin() + 20, [](char c) { return c >= '0' && c <= '9'; })) continue;
    segs_.push_back(std::stoull(name.substr(0, 20)));
  }
  if (ec) return Error::runtime("spool " + dir_ + ": " + ec.message());
  std::sort(segs_.begin(), segs_.end());
  {
    // "seg off crc" (crc: CRC-32 of "seg off"); "seg off" from older versions.
    // A cursor that does not check out starts from the oldest segment:
    // delivered alerts are sent again, none is skipped.
    std::ifstream in(dir_ + "/cursor");
    std::string line;
    std::getline(in, line);
    unsigned long long seg = 0, off = 0, crc = 0;
    char tail = 0;
    const int n = std::sscanf(line.c_str(), "%llu %llu %llu %c", &seg, &off, &crc, &tail);
    const std::string pos = std::to_string(seg) + " " + std::to_string(off);
    if (n == 2 || (n == 3 && crc == crc32(pos))) head_ = {seg, off};
  }
  // Drop segments before the cursor; start at the first segment otherwise.
  while (!segs_.empty() && segs_.front() < head_.seg) {
    std::filesystem::remove(seg_path(segs_.front()), ec);
    segs_.erase(segs_.begin());
  }
  if (segs_.empty() || segs_.front() != head_.seg) {
    head_ = {segs_.empty() ? 1 : segs_.front(), 0};
  }
  // Count what is left and cut off a torn tail.
  std::string payload;
  for (std::size_t i = 0; i < segs_.size(); ++i) {
    const int fd = ::open(seg_path(segs_[i]).c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errno_error("spool " + seg_path(segs_[i]));
    std::uint64_t off = segs_[i] == head_.seg ? head_.off : 0;
    RecordReader reader(fd);
    int r;
    while ((r = reader.read(off, payload)) == 1) {
      ++count_;
      bytes_ += kHeader + payload.size();
      off += kHeader + payload.size();
    }
    if (r < 0) {
      ++corrupt_;
      if (ftruncate(fd, static_cast<off_t>(off)) != 0) {
        ::close(fd);
        return errno_error("spool truncate");
      }
    }
    ::close(fd);
    if (i + 1 == segs_.size()) tail_off_ = off;
  }
  return open_tail(segs_.empty() ? head_.seg : segs_.back());
}

Status Spool::open_tail(std::uint64_t seg) {
  if (tail_fd_ >= 0) ::close(tail_fd_);
  tail_fd_ = -1;
  auto fd = util::open_for_write(seg_path(seg), util::OpenMode::kAppend, util::kFileMode);
  if (!fd) return Error{fd.error().kind, "spool: " + fd.error().message};
  tail_fd_ = *fd;
  if (segs_.empty() || segs_.back() != seg) {
    segs_.push_back(seg);
    tail_off_ = 0;
  }
  tail_seg_ = seg;
  return {};
}

Status Spool::append(const Message& m) {
  refusal_ = Refusal::kTooLarge;
  const std::string rec = encode(m);
  if (rec.size() - kHeader > kMaxRecord) return Error::runtime("spool: alert too large");
  refusal_ = Refusal::kFull;
  if (bytes_ + rec.size() > max_bytes_) return Error::runtime("spool full");
  refusal_ = Refusal::kIo;
  if (tail_off_ >= kSegmentBytes) {
    if (Status st = open_tail(tail_seg_ + 1); !st) return st;
  }
  std::size_t done = 0;
  while (done < rec.size()) {
    const ssize_t n = ::write(tail_fd_, rec.data() + done, rec.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const Status err = errno_error("spool write");
      // Undo a partial record so the file stays readable.
      if (done > 0 && ftruncate(tail_fd_, static_cast<off_t>(tail_off_)) != 0) {
        return err;
      }
      return err;
    }
    done += static_cast<std::size_t>(n);
  }
  tail_off_ += rec.size();
  refusal_ = Refusal::kNone;
  ++count_;
  bytes_ += rec.size();
  return {};
}

void Spool::sync() {
  if (tail_fd_ >= 0) fdatasync(tail_fd_);
}

std::vector<Message> Spool::peek(std::size_t max_events, std::size_t max_bytes) {
  std::vector<Message> out;
  peeked_ends_.clear();
  peeked_sizes_.clear();
  peeked_counts_.clear();
  const std::size_t want = std::max<std::size_t>(1, max_events);
  Pos pos = head_;
  std::size_t total = 0;
  std::uint64_t skip_count = 0;  // unreadable records before the next message
  std::uint64_t skip_bytes = 0;
  std::string payload;
  std::size_t seg_index = 0;
  while (seg_index < segs_.size() && segs_[seg_index] < pos.seg) ++seg_index;
  while (seg_index < segs_.size() && out.size() < want) {
    const int fd = ::open(seg_path(segs_[seg_index]).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) break;
    pos.seg = segs_[seg_index];
    // About 2 KiB per alert wanted: a batch of one reads no 256 KiB.
    RecordReader reader(fd, std::clamp<std::size_t>(want * 2048, 4096, kReadChunk));
    bool seg_done = false;
    while (out.size() < want) {
      const int r = reader.read(pos.off, payload);
      if (r != 1) {
        seg_done = true;
        break;
      }
      const std::uint64_t sz = kHeader + payload.size();
      if (!out.empty() && total + sz > max_bytes) break;
      pos.off += sz;
      Message m;
      if (!decode(payload, m)) {
        ++corrupt_;
        ++skip_count;
        skip_bytes += sz;
        continue;
      }
      total += sz;
      out.push_back(std::move(m));
      peeked_ends_.push_back(pos);
      peeked_sizes_.push_back(sz + skip_bytes);
      peeked_counts_.push_back(1 + skip_count);
      skip_count = skip_bytes = 0;
    }
    ::close(fd);
    if (!seg_done || seg_index + 1 >= segs_.size()) break;
    ++seg_index;
    pos = {segs_[seg_index], 0};
    // A pop of everything so far lands at the next segment's start.
    if (!peeked_ends_.empty()) peeked_ends_.back() = pos;
  }
  if (out.empty() && count_ > 0) {
    // Nothing readable is left: what the counters still hold is corrupt.
    corrupt_ += count_;
    count_ = 0;
    bytes_ = 0;
    head_ = {tail_seg_, tail_off_};
    (void)write_cursor();
  }
  return out;
}

Status Spool::pop(std::size_t n) {
  n = std::min(n, peeked_ends_.size());
  if (n == 0) return {};
  for (std::size_t i = 0; i < n; ++i) {
    bytes_ -= std::min<std::uint64_t>(bytes_, peeked_sizes_[i]);
    count_ -= std::min<std::uint64_t>(count_, peeked_counts_[i]);
  }
  head_ = peeked_ends_[n - 1];
  peeked_ends_.erase(peeked_ends_.begin(), peeked_ends_.begin() + static_cast<long>(n));
  peeked_sizes_.erase(peeked_sizes_.begin(), peeked_sizes_.begin() + static_cast<long>(n));
  peeked_counts_.erase(peeked_counts_.begin(), peeked_counts_.begin() + static_cast<long>(n));
  // Delete fully consumed segments (never the one being written).
  std::error_code ec;
  while (segs_.size() > 1 && segs_.front() < head_.seg) {
    std::filesystem::remove(seg_path(segs_.front()), ec);
    segs_.erase(segs_.begin());
  }
  if (count_ == 0 && head_.seg == tail_seg_ && head_.off == tail_off_ && tail_off_ > 0) {
    // Empty: start the segment over so the spool does not grow forever. The
    // cursor moves first: a crash in between re-sends, never skips.
    const Pos end = head_;
    head_ = {tail_seg_, 0};
    if (Status st = write_cursor(); !st) {
      head_ = end;
      return st;
    }
    if (ftruncate(tail_fd_, 0) == 0) {
      tail_off_ = 0;
      return {};
    }
    head_ = end;
  }
  return write_cursor();
}

// The commit of delivered records: one fixed-size pwrite over the cursor
// (a rename per commit cost ~2 ms on ext4). Not synced: a process crash
// keeps it, and after a power loss an older or torn cursor (its CRC fails)
// only sends delivered alerts again (at-least-once).
Status Spool::write_cursor() {
  if (cursor_fd_ < 0) {
    // O_NOFOLLOW: a link planted at the cursor's name is refused, not
    // written through; the directory was checked when it was made.
    cursor_fd_ = ::open((dir_ + "/cursor").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, util::kFileMode);
    if (cursor_fd_ < 0) return errno_error("spool cursor");
  }
  const std::string pos = std::to_string(head_.seg) + " " + std::to_string(head_.off);
  std::string line = pos + " " + std::to_string(crc32(pos));
  line.resize(kCursorBytes - 1, ' ');  // fixed width: no stale tail, no truncate
  line += '\n';
  if (::pwrite(cursor_fd_, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    return errno_error("spool cursor");
  }
  return {};
}

}  // namespace vigil::outputs
