#include "engine/capture/writer.h"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "engine/capture/codec.h"
#include "engine/util/safe_file.h"
#include "engine/util/version.h"

namespace vigil::capture {
namespace {

std::int64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void put_short_str(std::string& out, std::string_view s) {
  if (s.size() > 1024) s = s.substr(0, 1024);
  put_u16(out, static_cast<std::uint16_t>(s.size()));
  out.append(s);
}

std::string errno_text(int e) { return std::strerror(e); }

}  // namespace

FileInfo describe_host() {
  FileInfo info;
  info.vigil_version = kVersion;
  utsname u{};
  if (uname(&u) == 0) {
    info.hostname = u.nodename;
    info.kernel = u.release;
  }
  std::int64_t real = clock_ns(CLOCK_REALTIME);
  info.created_ns = static_cast<std::uint64_t>(real);
  info.realtime_minus_monotonic_ns = real - clock_ns(CLOCK_MONOTONIC);
  info.realtime_minus_boottime_ns = real - clock_ns(CLOCK_BOOTTIME);
  info.boot_time_ns = static_cast<std::uint64_t>(info.realtime_minus_boottime_ns);
  return info;
}

std::string encode_file_header(const FileInfo& info) {
  std::string h;
  h.append(kFileMagic);
  put_u16(h, kFormatVersion);
  put_u16(h, 0);  // flags
  put_u32(h, 0);  // header_len, filled below
  put_u64(h, info.created_ns);
  put_u64(h, info.boot_time_ns);
  put_u64(h, static_cast<std::uint64_t>(info.realtime_minus_monotonic_ns));
  put_u64(h, static_cast<std::uint64_t>(info.realtime_minus_boottime_ns));
  put_short_str(h, info.vigil_version);
  put_short_str(h, info.hostname);
  put_short_str(h, info.kernel);
  std::string_view ext = info.extension;
  if (ext.size() > 32 * 1024) ext = ext.substr(0, 32 * 1024);
  put_u32(h, static_cast<std::uint32_t>(ext.size()));
  h.append(ext);
  auto len = static_cast<std::uint32_t>(h.size() + 4);
  std::string len_bytes;
  put_u32(len_bytes, len);
  std::memcpy(h.data() + 12, len_bytes.data(), 4);
  put_u32(h, crc32c(0, h.data(), h.size()));
  return h;
}

CaptureWriter::CaptureWriter(std::string path, WriterOptions opts) : path_(std::move(path)), opts_(std::move(opts)) {
  if (opts_.block_size == 0) opts_.block_size = 1;
  if (opts_.block_size > kMaxBlockRaw / 2) opts_.block_size = kMaxBlockRaw / 2;
  if (!opts_.clock) {
    opts_.clock = [] {
      return static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
              .count());
    };
  }
  if (opts_.info.vigil_version.empty() && opts_.info.hostname.empty() && opts_.info.created_ns == 0) {
    opts_.info = describe_host();
  }
}

Result<std::unique_ptr<CaptureWriter>> CaptureWriter::open(std::string path, WriterOptions opts) {
  std::unique_ptr<CaptureWriter> w(new CaptureWriter(std::move(path), std::move(opts)));
  w->cctx_ = ZSTD_createCCtx();
  if (!w->cctx_) return Error::runtime("capture: cannot create a zstd context");
  if (Status s = w->open_file(); !s) return s.error();
  return w;
}

CaptureWriter::~CaptureWriter() {
  (void)close();
  if (cctx_) ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(cctx_));
}

std::uint64_t CaptureWriter::now() const { return opts_.clock(); }

Status CaptureWriter::open_file() {
  auto fd = util::open_for_write(path_, util::OpenMode::kTruncate, util::kCaptureMode);
  if (!fd) return Error{fd.error().kind, "capture: " + fd.error().message};
  fd_ = *fd;
  file_bytes_ = 0;
  file_opened_at_ = now();
  last_flush_at_ = file_opened_at_;
  ++stats_.files;
  if (Status s = write_header(); !s) return s;
  return write_snapshot();
}

Status CaptureWriter::write_header() {
  FileInfo info = opts_.info;
  if (stats_.files > 1) info.created_ns = describe_host().created_ns;
  std::string h = encode_file_header(info);
  return write_all(h.data(), h.size());
}

Status CaptureWriter::write_snapshot() {
  if (!opts_.snapshot) return {};
  Snapshot snap = opts_.snapshot();
  in_snapshot_ = true;  // snapshot records never trigger a rotation
  Status st;
  if (snap.nvidia) st = write_nvidia(*snap.nvidia);
  for (const auto& c : snap.containers) {
    if (!st) break;
    if (st = write_container(c); !st) break;
  }
  for (const auto& p : snap.pods) {
    if (!st) break;
    if (st = write_pod(p); !st) break;
  }
  for (const auto& p : snap.removed_pods) {
    if (!st) break;
    if (st = write_pod(p); !st) break;
    if (st = write_pod_removed(p.uid); !st) break;
  }
  for (const auto& p : snap.processes) {
    if (!st) break;
    if (st = write_process(p); !st) break;
  }
  in_snapshot_ = false;
  return st;
}

Status CaptureWriter::write_all(const void* data, std::size_t n) {
  auto p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Error::runtime("capture: write to " + path_ + " failed at byte " + std::to_string(file_bytes_) + ": " +
                            errno_text(errno));
    }
    p += w;
    n -= static_cast<std::size_t>(w);
    file_bytes_ += static_cast<std::uint64_t>(w);
    stats_.bytes += static_cast<std::uint64_t>(w);
  }
  return {};
}

Status CaptureWriter::after_append(std::uint64_t ts, bool is_event) {
  ++buf_records_;
  ++stats_.records;
  if (!is_event) buf_has_state_ = true;
  if (is_event) {
    ++stats_.events;
    if (buf_first_ts_ == 0) buf_first_ts_ = ts;
    buf_last_ts_ = ts;
  }
  if (buf_.size() >= opts_.block_size) {
    if (Status s = flush(); !s) return s;
  } else if (opts_.flush_interval_ns && now() - last_flush_at_ >= opts_.flush_interval_ns) {
    if (Status s = flush(); !s) return s;
  }
  if (in_snapshot_) return {};
  bool too_big = opts_.rotate_bytes && file_bytes_ + buf_.size() >= opts_.rotate_bytes;
  bool too_old = opts_.rotate_interval_ns && now() - file_opened_at_ >= opts_.rotate_interval_ns;
  if (too_big || too_old) return rotate();
  return {};
}

#define VIGIL_CAPTURE_CHECK_OPEN()                                          \
  do {                                                                      \
    if (!sticky_) return sticky_;                                           \
    if (closed_) return Error::runtime("capture: " + path_ + " is closed"); \
  } while (0)

Status CaptureWriter::write_event(const event::Event& ev) {
  VIGIL_CAPTURE_CHECK_OPEN();
  append_event(ev, buf_);
  return after_append(ev.hdr.ts_ns, true);
}

Status CaptureWriter::write_process(const state::Process& p) {
  VIGIL_CAPTURE_CHECK_OPEN();
  append_process(p, buf_);
  return after_append(0, false);
}

Status CaptureWriter::write_container(const state::Container& c) {
  VIGIL_CAPTURE_CHECK_OPEN();
  append_container(c, buf_);
  return after_append(0, false);
}

Status CaptureWriter::write_pod(const state::Pod& p) {
  VIGIL_CAPTURE_CHECK_OPEN();
  append_pod(p, buf_);
  return after_append(0, false);
}

Status CaptureWriter::write_pod_removed(const std::string& uid) {
  VIGIL_CAPTURE_CHECK_OPEN();
  append_pod_removed(uid, buf_);
  return after_append(0, false);
}

Status CaptureWriter::write_nvidia(const state::NvidiaInfo& n) {
  VIGIL_CAPTURE_CHECK_OPEN();
  append_nvidia(n, buf_);
  return after_append(0, false);
}

Status CaptureWriter::write_record(const RecordData& r) {
  VIGIL_CAPTURE_CHECK_OPEN();
  if (std::holds_alternative<std::monostate>(r)) return {};
  append_record(r, buf_);
  const auto* ev = std::get_if<event::Event>(&r);
  return after_append(ev ? ev->hdr.ts_ns : 0, ev != nullptr);
}

Status CaptureWriter::write_encoded(std::string_view records, std::uint32_t count, std::uint32_t events,
                                    std::uint64_t first_ts, std::uint64_t last_ts) {
  VIGIL_CAPTURE_CHECK_OPEN();
  buf_.append(records);
  if (count > events) buf_has_state_ = true;
  if (count > 1) {
    buf_records_ += count - 1;
    stats_.records += count - 1;
  }
  if (events > 1) stats_.events += events - 1;
  if (events > 0 && buf_first_ts_ == 0) buf_first_ts_ = first_ts;
  if (events > 0) buf_last_ts_ = last_ts;
  if (count == 0) return {};
  return after_append(last_ts, events > 0);
}

Status CaptureWriter::flush() {
  if (!sticky_) return sticky_;
  if (fd_ < 0 || buf_.empty()) return {};
  out_.clear();
  out_.resize(kBlockHeaderSize);
  Codec codec = Codec::kNone;
  if (opts_.zstd_level > 0) {
    std::size_t bound = ZSTD_compressBound(buf_.size());
    out_.resize(kBlockHeaderSize + bound);
    std::size_t n = ZSTD_compressCCtx(static_cast<ZSTD_CCtx*>(cctx_), out_.data() + kBlockHeaderSize, bound,
                                      buf_.data(), buf_.size(), opts_.zstd_level);
    if (ZSTD_isError(n)) {
      return Error::runtime(std::string("capture: zstd compression failed: ") + ZSTD_getErrorName(n));
    }
    out_.resize(kBlockHeaderSize + n);
    codec = Codec::kZstd;
  } else {
    out_.append(buf_);
  }
  std::string h;
  put_u32(h, kBlockMagic);
  h.push_back(static_cast<char>(BlockType::kRecords));
  h.push_back(static_cast<char>(codec));
  put_u16(h, buf_has_state_ ? kBlockFlagHasState : 0);
  put_u32(h, static_cast<std::uint32_t>(out_.size() - kBlockHeaderSize));
  put_u32(h, static_cast<std::uint32_t>(buf_.size()));
  put_u32(h, buf_records_);
  put_u32(h, 0);  // crc, below
  put_u64(h, buf_first_ts_);
  put_u64(h, buf_last_ts_);
  std::memcpy(out_.data(), h.data(), kBlockHeaderSize);
  std::uint32_t crc = crc32c(0, out_.data(), 20);
  crc = crc32c(crc, out_.data() + 24, out_.size() - 24);
  std::string crc_bytes;
  put_u32(crc_bytes, crc);
  std::memcpy(out_.data() + 20, crc_bytes.data(), 4);

  buf_.clear();
  buf_records_ = 0;
  buf_has_state_ = false;
  buf_first_ts_ = buf_last_ts_ = 0;
  last_flush_at_ = now();
  ++stats_.blocks;
  return write_all(out_.data(), out_.size());
}

Status CaptureWriter::tick() {
  if (!sticky_) return sticky_;
  if (closed_ || buf_.empty() || opts_.flush_interval_ns == 0) return {};
  if (now() - last_flush_at_ < opts_.flush_interval_ns) return {};
  return flush();
}

Status CaptureWriter::rotate() {
  if (Status s = flush(); !s) return s;
  ::close(fd_);
  fd_ = -1;
  if (Status s = util::rotate(path_, opts_.keep); !s) {
    return Error{s.error().kind, "capture: " + s.error().message};
  }
  return open_file();
}

Status CaptureWriter::close() {
  if (closed_) return {};
  Status s = flush();
  closed_ = true;
  if (fd_ >= 0) {
    if (::close(fd_) != 0 && s) {
      s = Error::runtime("capture: closing " + path_ + " failed: " + errno_text(errno));
    }
    fd_ = -1;
  }
  return s;
}

void CaptureWriter::on_process(const state::Process& p) {
  if (Status s = write_process(p); !s && sticky_) sticky_ = s;
}
void CaptureWriter::on_container(const state::Container& c) {
  if (Status s = write_container(c); !s && sticky_) sticky_ = s;
}
void CaptureWriter::on_pod(const state::Pod& p) {
  if (Status s = write_pod(p); !s && sticky_) sticky_ = s;
}
void CaptureWriter::on_pod_removed(const std::string& uid) {
  if (Status s = write_pod_removed(uid); !s && sticky_) sticky_ = s;
}
void CaptureWriter::on_nvidia(const state::NvidiaInfo& n) {
  if (Status s = write_nvidia(n); !s && sticky_) sticky_ = s;
}

}  // namespace vigil::capture
