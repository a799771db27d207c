#include "engine/runtime/file_watch.h"

#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "engine/rules/rule_files.h"

namespace vigil::runtime {
namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kMask = IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_MODIFY | IN_DELETE |
                                IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
constexpr std::size_t kMaxHashBytes = 64u << 20;

// "<resolved path> <size> <hash of the first 64 MiB>", or "missing".
std::string file_print(const fs::path& p, std::set<std::string>& dirs) {
  std::error_code ec;
  const fs::path real = fs::canonical(p, ec);
  if (ec) return "missing";
  dirs.insert(real.parent_path().string());
  std::ifstream in(real, std::ios::binary);
  if (!in) return real.string() + " unreadable";
  std::string text;
  char buf[65536];
  std::uint64_t size = 0;
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    const auto n = static_cast<std::size_t>(in.gcount());
    size += n;
    if (text.size() < kMaxHashBytes) text.append(buf, std::min(n, kMaxHashBytes - text.size()));
  }
  return real.string() + " " + std::to_string(size) + " " + std::to_string(std::hash<std::string>{}(text));
}

}  // namespace

Result<std::unique_ptr<FileWatch>> FileWatch::create(Options o) {
  std::unique_ptr<FileWatch> w(new FileWatch(std::move(o)));
  w->fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (w->fd_ < 0) return Error::runtime(std::string("file watch: inotify: ") + std::strerror(errno));
  return w;
}

FileWatch::~FileWatch() {
  if (fd_ >= 0) close(fd_);
}

std::string FileWatch::fingerprint(const std::string& path, std::set<std::string>& dirs) const {
  std::error_code ec;
  const fs::path p = fs::absolute(path, ec);
  if (ec) return "missing";
  dirs.insert(p.parent_path().string());
  if (!fs::is_directory(p, ec)) return file_print(p, dirs);
  dirs.insert(p.string());
  if (!o_.dir_suffixes.empty()) {
    std::set<std::string> names;
    std::size_t seen = 0;
    for (fs::directory_iterator it(p, ec), end; !ec && it != end && ++seen <= 65536; it.increment(ec)) {
      const std::string n = it->path().filename().string();
      if (n.empty() || n[0] == '.') continue;
      for (const std::string& suffix : o_.dir_suffixes) {
        if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) {
          names.insert(n);
          break;
        }
      }
      if (names.size() >= 4096) break;
    }
    // By inode, size and modification time, not content: a directory of
    // many files rewritten often (the baseline profiles) is not read whole.
    std::string out = "dir";
    for (const std::string& n : names) {
      struct stat st {};
      if (lstat((p / n).c_str(), &st) != 0) continue;
      out += "\n" + n + " " + std::to_string(st.st_ino) + " " + std::to_string(st.st_size) + " " +
             std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    }
    return out;
  }
  // The files a rule load reads from a directory, each resolved and hashed.
  rules::Diagnostics diags;
  const rules::YamlFiles files = rules::expand_yaml_paths({p.string()}, diags);
  std::string out = "dir";
  for (const std::string& f : files.files) out += "\n" + f + " " + file_print(f, dirs);
  return out;
}

void FileWatch::scan(std::map<std::string, std::string>& out) {
  std::set<std::string> dirs;
  for (const std::string& p : paths_) out[p] = fingerprint(p, dirs);
  if (dirs.size() > o_.max_dirs) {
    if (!warned_cap_ && o_.log) {
      o_.log->warn(
          "file watch: {} directories to watch, more than the cap of {}; changes in the others "
          "need a SIGHUP",
          dirs.size(), o_.max_dirs);
    }
    warned_cap_ = true;
    dirs.erase(std::next(dirs.begin(), static_cast<std::ptrdiff_t>(o_.max_dirs)), dirs.end());
  }
  for (auto it = wds_.begin(); it != wds_.end();) {
    if (dirs.erase(it->second)) {
      ++it;
      continue;
    }
    inotify_rm_watch(fd_, it->first);
    it = wds_.erase(it);
  }
  for (const std::string& d : dirs) {
    const int wd = inotify_add_watch(fd_, d.c_str(), kMask);
    if (wd >= 0) {
      wds_[wd] = d;
    } else if (o_.log) {
      o_.log->debug("file watch: cannot watch {}: {}", d, std::strerror(errno));
    }
  }
}

void FileWatch::set_paths(std::vector<std::string> paths) {
  paths_ = std::move(paths);
  prints_.clear();
  scan(prints_);
}

void FileWatch::on_readable(Clock::time_point now) {
  alignas(inotify_event) char buf[8192];
  for (;;) {
    const ssize_t n = read(fd_, buf, sizeof(buf));
    if (n <= 0) break;
    for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      // The kernel dropped the watch (its directory went away): the next
      // scan watches what is there then.
      if (ev->mask & IN_IGNORED) wds_.erase(ev->wd);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
    if (!pending_) first_event_ = now;
    pending_ = true;
    last_event_ = now;
  }
}

std::optional<std::string> FileWatch::changed(Clock::time_point now) {
  if (!pending_) return std::nullopt;
  if (now - last_event_ < o_.quiet && now - first_event_ < o_.max_delay) return std::nullopt;
  pending_ = false;
  std::map<std::string, std::string> now_prints;
  scan(now_prints);
  std::string what;
  for (const auto& [path, print] : now_prints) {
    if (prints_[path] != print) what += (what.empty() ? "" : ", ") + path;
  }
  prints_ = std::move(now_prints);
  if (what.empty()) return std::nullopt;
  return what;
}

}  // namespace vigil::runtime
