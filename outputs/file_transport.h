// Line-oriented local transports: stdout (any fd) and a rotating file.
// Each message is written as body + '\n' (JSON lines for the json format).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/util/result.h"
#include "outputs/transport.h"

namespace vigil::outputs {

// Writes to a file descriptor it does not own (1 for stdout). A batch is one
// write(2) call where possible, so concurrent writers do not interleave lines
// shorter than PIPE_BUF.
class FdTransport final : public Transport {
 public:
  explicit FdTransport(int fd) : fd_(fd) {}
  SendResult send(std::span<const Message> batch) noexcept override;

 private:
  int fd_;
};

enum class FsyncPolicy : std::uint8_t { kNever, kBatch, kAlways };

struct FileOptions {
  std::string path;
  std::uint64_t rotate_bytes = 0;      // 0: no size rotation
  std::chrono::seconds rotate_age{0};  // 0: no age rotation
  int keep = 5;                        // rotated files kept: path.1 .. path.N
  FsyncPolicy fsync = FsyncPolicy::kNever;
};

// Appends to `path`, created 0600 whatever the umask; a symbolic link at the
// path, or a directory writable by others, is refused (engine/util/safe_file.h;
// Error::bad_input from open()). Rotation renames path -> path.1 ->
// path.2 ... keeping `keep` old files; it happens before a write that would
// pass rotate_bytes, or once the file is older than rotate_age (age counts
// from when this process opened or created it).
class FileTransport final : public Transport {
 public:
  static Result<std::unique_ptr<FileTransport>> open(FileOptions o);
  ~FileTransport() override;
  SendResult send(std::span<const Message> batch) noexcept override;
  void close() noexcept override;

 private:
  explicit FileTransport(FileOptions o) : o_(std::move(o)) {}
  Status reopen();
  Status rotate();

  FileOptions o_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::chrono::steady_clock::time_point opened_{};
};

}  // namespace vigil::outputs
