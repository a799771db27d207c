#include "outputs/file_transport.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "engine/util/safe_file.h"

namespace vigil::outputs {
namespace {

// Writes all of `data`; false with errno set on failure.
bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string lines(std::span<const Message> batch) {
  std::size_t total = 0;
  for (const auto& m : batch) total += m.body.size() + 1;
  std::string buf;
  buf.reserve(total);
  for (const auto& m : batch) {
    buf += m.body;
    buf += '\n';
  }
  return buf;
}

}  // namespace

SendResult FdTransport::send(std::span<const Message> batch) noexcept {
  try {
    if (!write_all(fd_, lines(batch))) return SendResult::retry(std::strerror(errno));
    return SendResult::ok(batch.size());
  } catch (...) {
    return SendResult::retry("out of memory");
  }
}

Result<std::unique_ptr<FileTransport>> FileTransport::open(FileOptions o) {
  std::unique_ptr<FileTransport> t(new FileTransport(std::move(o)));
  if (Status st = t->reopen(); !st) return st.error();
  return t;
}

FileTransport::~FileTransport() { close(); }

Status FileTransport::reopen() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  auto fd = util::open_for_write(o_.path, util::OpenMode::kAppend, util::kFileMode);
  if (!fd) return Error{fd.error().kind, "file output: " + fd.error().message};
  fd_ = *fd;
  struct stat st {};
  size_ = fstat(fd_, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
  opened_ = std::chrono::steady_clock::now();
  return {};
}

Status FileTransport::rotate() {
  if (fd_ >= 0) {
    if (o_.fsync != FsyncPolicy::kNever) fsync(fd_);
    ::close(fd_);
    fd_ = -1;
  }
  // A failed rotation leaves the file in place; it is appended to again.
  (void)util::rotate(o_.path, static_cast<std::size_t>(std::max(0, o_.keep)));
  return reopen();
}

SendResult FileTransport::send(std::span<const Message> batch) noexcept {
  try {
    if (fd_ < 0) {
      if (Status st = reopen(); !st) return SendResult::retry(st.error().message);
    }
    std::size_t done = 0;
    while (done < batch.size()) {
      // Take as many messages as fit before the size limit (at least one).
      std::size_t n = 0;
      std::uint64_t bytes = 0;
      while (done + n < batch.size()) {
        const std::uint64_t b = batch[done + n].body.size() + 1;
        if (o_.rotate_bytes > 0 && size_ + bytes + b > o_.rotate_bytes && (n > 0 || size_ > 0)) break;
        bytes += b;
        ++n;
        if (o_.fsync == FsyncPolicy::kAlways) break;
      }
      const bool too_old =
          o_.rotate_age.count() > 0 && std::chrono::steady_clock::now() - opened_ >= o_.rotate_age && size_ > 0;
      if (n == 0 || too_old) {
        if (Status st = rotate(); !st) return SendResult::retry(st.error().message, done);
        continue;
      }
      const std::string buf = lines(batch.subspan(done, n));
      if (!write_all(fd_, buf)) {
        const std::string err = std::strerror(errno);
        (void)reopen();  // the file may have been removed or the disk was full
        return SendResult::retry("file output " + o_.path + ": " + err, done);
      }
      size_ += buf.size();
      if (o_.fsync == FsyncPolicy::kAlways) fdatasync(fd_);
      done += n;
    }
    if (o_.fsync == FsyncPolicy::kBatch) fdatasync(fd_);
    return SendResult::ok(batch.size());
  } catch (...) {
    return SendResult::retry("out of memory");
  }
}

void FileTransport::close() noexcept {
  if (fd_ >= 0) {
    if (o_.fsync != FsyncPolicy::kNever) fsync(fd_);
    ::close(fd_);
    fd_ = -1;
  }
}

}  // namespace vigil::outputs
