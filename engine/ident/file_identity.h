// What a program file is, by content: its ELF build-id and the SHA-256 of its
// bytes, computed once per distinct file and remembered in a bounded cache
// keyed by (device, inode, ctime). Any write to a file moves its ctime (and
// nobody can set it back), so a file rewritten in place is hashed again; a
// hot binary is read once, not at every exec.
//
// Cost: a cache hit is a hash-map lookup (the key comes with the exec
// record); a miss reads the ELF headers and notes (a few KiB) and hashes the
// file, at most max_hash_bytes of it (docs/performance.md has the numbers).
//
// Thread-safety: a FileIdentityCache is owned by one thread.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/util/lru.h"

namespace vigil::ident {

struct FileKey {
  std::uint64_t dev = 0;  // st_dev numbering
  std::uint64_t ino = 0;
  std::int64_t ctime_ns = 0;
  bool operator==(const FileKey&) const = default;
  bool known() const { return ino != 0; }
  static FileKey of(const struct stat& st);
};

struct FileKeyHash {
  std::size_t operator()(const FileKey& k) const noexcept;
};

struct FileIdentity {
  std::string sha256;    // lower-case hex; of the first max_hash_bytes when larger ("" if unreadable)
  bool partial = false;  // the file was longer than max_hash_bytes
  std::string build_id;  // lower-case hex, "" when none
  // The identity used to recognise the program: "buildid:<hex>" when it has
  // one (cheap to compute, the same in every copy), else "sha256:<hex>".
  std::string key() const;
};

// SHA-256 of the first max bytes of fd (pread from 0); "" on a read error.
std::string sha256_fd(int fd, std::uint64_t max, bool* partial = nullptr);

// Build-id and hash of an open file.
FileIdentity identify_fd(int fd, const struct stat& st, std::uint64_t max_hash_bytes);

class FileIdentityCache {
 public:
  struct Stats {
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;  // files read and hashed
  };
  FileIdentityCache(std::size_t capacity, std::uint64_t max_hash_bytes)
      : map_(capacity), max_hash_bytes_(max_hash_bytes) {}
  // The identity of the open file fd whose fstat is st (read on a miss).
  const FileIdentity& get(int fd, const struct stat& st);
  // The identity remembered for k, or null (no I/O).
  const FileIdentity* find(const FileKey& k);
  // Remembers id under k too (the kernel's view of a file whose fstat key
  // differs, as on overlayfs).
  void alias(const FileKey& k, const FileIdentity& id);
  const Stats& stats() const { return stats_; }
  std::size_t size() const { return map_.size(); }

 private:
  util::LruMap<FileKey, FileIdentity, FileKeyHash> map_;
  std::uint64_t max_hash_bytes_;
  Stats stats_;
};

}  // namespace vigil::ident
