// Scratch files for tests: a temporary directory removed with everything in
// it when the test ends, and whole-file reads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vigil::support {

// The whole content of the file at `path`; "" when it cannot be read.
std::string read_file(const std::string& path);

// A fresh directory under the system temporary directory (TMPDIR, else
// /tmp), mode 0755 so that a process running as another user can read what a
// test writes there; removed with its content on destruction.
class TempDir {
 public:
  // The directory is named `<prefix>-XXXXXX`.
  explicit TempDir(std::string_view prefix = "vigil-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // False when the directory could not be made.
  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

  // Writes `rel` (its parent directories made as needed), replacing it
  // atomically so a reader never sees half a file; returns the full path.
  std::string write(const std::string& rel, const std::string& content) const;

  // An executable copy of `program` named `name` (its comm when run); ""
  // when it cannot be copied.
  std::string install(const std::string& program, const std::string& name) const;

  // Makes `rel` (its parent directories made as needed) a symbolic link to
  // `target`, which is stored as given (relative targets resolve from the
  // link's directory; it need not exist, e.g. "net:[4026531840]" as in
  // /proc/PID/ns). Replaces a file or link at `rel` atomically, like write();
  // returns the full path, "" when the link cannot be made.
  std::string symlink(const std::string& rel, const std::string& target) const;

  // Makes the directory `rel` and its missing parents; returns the full path,
  // "" when it cannot be made.
  std::string mkdirs(const std::string& rel) const;

  // The inode number of `rel` (links followed; a cgroup v2 directory's inode is
  // its cgroup id); 0 when it does not exist.
  std::uint64_t inode(const std::string& rel) const;

 private:
  std::string path_;
};

}  // namespace vigil::support
