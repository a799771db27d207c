#include "engine/util/safe_file.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <system_error>
#include <utility>
#include <vector>

namespace vigil::util {
namespace {

// A descriptor closed when it goes out of scope.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

Error sys_error(const std::string& what, int e) { return Error::runtime(what + ": " + errno_text(e)); }

std::string octal(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

// The components of `p`, without empty ones and ".".
std::vector<std::string> components(const std::string& p) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < p.size()) {
    const std::size_t j = p.find('/', i);
    const std::size_t end = j == std::string::npos ? p.size() : j;
    if (end > i) {
      std::string c = p.substr(i, end - i);
      if (c != ".") out.push_back(std::move(c));
    }
    i = end + 1;
  }
  return out;
}

// A directory vigil may write in: owned by root or vigil's user, and not
// writable by group or others unless sticky.
Status check_trusted_dir(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sys_error("directory " + path, errno);
  if (!S_ISDIR(st.st_mode)) return Error::bad_input(path + " is not a directory");
  const uid_t me = ::geteuid();
  if (st.st_uid != 0 && st.st_uid != me) {
    return Error::bad_input("refused: directory " + path + " is owned by uid " + std::to_string(st.st_uid) +
                            ", neither root nor vigil's user (uid " + std::to_string(me) +
                            "), and its owner could redirect what vigil writes there");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return Error::bad_input("refused: directory " + path + " is writable by group or others (mode " +
                            octal(st.st_mode) +
                            ") without the sticky bit, so anyone who can write there could redirect "
                            "what vigil writes (chmod go-w it, or choose another directory)");
  }
  return {};
}

// Opens directory `dir` (O_PATH) one component at a time from /, never
// through an untrusted directory: each directory must pass
// check_trusted_dir, and a symbolic link is followed only when it is owned by
// root or vigil's user (it then lives in a trusted directory, so nobody else
// can change it). With `create`, missing directories are made with exactly
// `mode`.
Result<Fd> open_dir(const std::string& dir, bool create, mode_t mode) {
  std::string abs = dir;
  if (abs.empty() || abs[0] != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof(cwd)) == nullptr) return sys_error("current directory", errno);
    abs = std::string(cwd) + "/" + abs;
  }
  struct Level {
    Fd fd;
    std::string path;  // "" for /
  };
  std::vector<Level> stack;
  stack.push_back({Fd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)), ""});
  if (stack.back().fd.get() < 0) return sys_error("directory /", errno);
  if (Status s = check_trusted_dir(stack.back().fd.get(), "/"); !s) return s.error();
  const uid_t me = ::geteuid();
  std::deque<std::string> todo;
  for (auto& c : components(abs)) todo.push_back(std::move(c));
  int links = 0;
  while (!todo.empty()) {
    const std::string name = std::move(todo.front());
    todo.pop_front();
    if (name == "..") {
      if (stack.size() > 1) stack.pop_back();
      continue;
    }
    const int parent = stack.back().fd.get();
    const std::string at = stack.back().path + "/" + name;
    Fd next(::openat(parent, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0 && errno == ENOENT && create) {
      if (::mkdirat(parent, name.c_str(), mode) == 0) {
        // The umask may have taken bits away. The entry is ours, in a trusted
        // directory: nobody else can have replaced it.
        if (::fchmodat(parent, name.c_str(), mode, 0) != 0) return sys_error("directory " + at, errno);
      } else if (errno != EEXIST) {
        return sys_error("cannot create directory " + at, errno);
      }
      next = Fd(::openat(parent, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    }
    if (next.get() < 0) return sys_error("directory " + at, errno);
    struct stat st {};
    if (::fstat(next.get(), &st) != 0) return sys_error("directory " + at, errno);
    if (S_ISLNK(st.st_mode)) {
      if (st.st_uid != 0 && st.st_uid != me) {
        return Error::bad_input("refused: " + at + " is a symbolic link owned by uid " + std::to_string(st.st_uid) +
                                ", neither root nor vigil's user (uid " + std::to_string(me) + ")");
      }
      if (++links > 40) return Error::bad_input("directory " + dir + ": too many symbolic links");
      char buf[PATH_MAX];
      const ssize_t n = ::readlinkat(next.get(), "", buf, sizeof(buf));
      if (n <= 0 || n >= static_cast<ssize_t>(sizeof(buf))) {
        return sys_error("directory " + at, n < 0 ? errno : n == 0 ? ENOENT : ENAMETOOLONG);
      }
      const std::string target(buf, static_cast<std::size_t>(n));
      auto parts = components(target);
      todo.insert(todo.begin(), parts.begin(), parts.end());
      if (target[0] == '/') stack.resize(1);
      continue;
    }
    if (Status s = check_trusted_dir(next.get(), at); !s) return s.error();
    stack.push_back({std::move(next), at});
  }
  return std::move(stack.back().fd);
}

struct Split {
  std::string dir, name;
};

Result<Split> split(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  Split s;
  s.name = slash == std::string::npos ? path : path.substr(slash + 1);
  s.dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  if (s.name.empty() || s.name == "." || s.name == "..") {
    return Error::bad_input(path + " names a directory, not a file");
  }
  return s;
}

Error with_path(const std::string& path, const Error& e) { return {e.kind, path + ": " + e.message}; }

}  // namespace

Result<int> open_for_write(const std::string& path, OpenMode how, mode_t mode) {
  auto parts = split(path);
  if (!parts) return parts.error();
  auto dir = open_dir(parts->dir, /*create=*/false, 0);
  if (!dir) return with_path(path, dir.error());
  // O_NONBLOCK: a FIFO planted at the path must not block the open.
  const int flags =
      O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (how == OpenMode::kAppend ? O_APPEND : 0);
  Fd fd;
  bool created = false;
  int err = 0;
  for (int tries = 0; tries < 3; ++tries) {
    fd = Fd(::openat(dir->get(), parts->name.c_str(), flags | O_CREAT | O_EXCL, mode));
    if (fd.get() >= 0) {
      created = true;
      break;
    }
    if (errno != EEXIST) {
      err = errno;
      break;
    }
    fd = Fd(::openat(dir->get(), parts->name.c_str(), flags));
    if (fd.get() >= 0) break;
    err = errno;
    if (err != ENOENT) break;  // removed in between: try to create it again
  }
  if (fd.get() < 0) {
    if (err == ELOOP) {
      return Error::bad_input("refused: " + path +
                              " is a symbolic link, and vigil does not write through links "
                              "(remove it, or name the file it points to)");
    }
    if (err == ENXIO) return Error::bad_input("refused: " + path + " is not a regular file");
    return sys_error("cannot open " + path + " for writing", err);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error(path, errno);
  if (!S_ISREG(st.st_mode)) return Error::bad_input("refused: " + path + " is not a regular file");
  const uid_t me = ::geteuid();
  if (st.st_uid != 0 && st.st_uid != me) {
    return Error::bad_input("refused: " + path + " is owned by uid " + std::to_string(st.st_uid) +
                            ", neither root nor vigil's user (uid " + std::to_string(me) + ")");
  }
  if (st.st_nlink != 1) {
    return Error::bad_input("refused: " + path + " has " + std::to_string(st.st_nlink) +
                            " hard links, so writing it would change another file");
  }
  if (created && ::fchmod(fd.get(), mode) != 0) return sys_error(path, errno);
  if (how == OpenMode::kTruncate && !created && ::ftruncate(fd.get(), 0) != 0) return sys_error(path, errno);
  const int fl = ::fcntl(fd.get(), F_GETFL);
  if (fl < 0 || ::fcntl(fd.get(), F_SETFL, fl & ~O_NONBLOCK) != 0) return sys_error(path, errno);
  return fd.release();
}

Status make_dirs(const std::string& path, mode_t mode) {
  auto fd = open_dir(path, /*create=*/true, mode);
  if (!fd) return fd.error();
  return {};
}

Status rotate(const std::string& path, std::size_t keep) {
  auto parts = split(path);
  if (!parts) return parts.error();
  auto dir = open_dir(parts->dir, /*create=*/false, 0);
  if (!dir) return with_path(path, dir.error());
  const int d = dir->get();
  const std::string& name = parts->name;
  if (keep == 0) {
    if (::unlinkat(d, name.c_str(), 0) != 0 && errno != ENOENT) {
      return sys_error("cannot remove " + path, errno);
    }
    return {};
  }
  (void)::unlinkat(d, (name + "." + std::to_string(keep)).c_str(), 0);
  for (std::size_t i = keep; i > 1; --i) {
    (void)::renameat(d, (name + "." + std::to_string(i - 1)).c_str(), d, (name + "." + std::to_string(i)).c_str());
  }
  if (::renameat(d, name.c_str(), d, (name + ".1").c_str()) != 0) {
    return sys_error("cannot rotate " + path, errno);
  }
  return {};
}

}  // namespace vigil::util
