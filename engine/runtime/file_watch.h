// FileWatch: tells the loop when the files a reload reads (the configuration
// file, rule files and rule directories) have changed, so that `vigil run`
// reloads without a SIGHUP.
//
//   auto w = runtime::FileWatch::create({.log = log});
//   (*w)->set_paths({"/etc/vigil/vigil.yaml", "/etc/vigil/rules"});
//   runner.add_fd("file watch", (*w)->fd(), [&] { (*w)->on_readable(steady_clock::now()); });
//   runner.add_tick("file watch", 100ms, [&](std::uint64_t) {
//     if (auto what = (*w)->changed(steady_clock::now())) runner.request_reload(*what + " changed");
//   });
//
// It watches, with inotify, the directory holding each file (not the file:
// an editor replaces the file, and a Kubernetes ConfigMap volume swaps the
// `..data` symlink that the file's own symlink goes through), each watched
// directory, and the directory of each file's resolved target. Any event
// there only marks the watch pending; once no event came for `quiet` (editors
// write in several steps), or `max_delay` after the first one, it resolves
// every path again and compares what it reads with the last time: a file's
// resolved path and a hash of its content; for a directory, the same for
// each *.yaml/*.yml file in it (the files rule loading reads). Only a
// difference is a change: a touch, or a rewrite with the same bytes, is not.
//
// Bounded: at most `max_dirs` directories are watched (a warning names the
// cap past it), and a file is hashed over its first 64 MiB and its size.
//
// Thread-safety: one thread (the runner's loop).
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/util/result.h"

namespace vigil::runtime {

class FileWatch {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    std::chrono::milliseconds quiet{500};
    std::chrono::milliseconds max_delay{5000};
    std::size_t max_dirs = 1024;
    // The files of a watched directory that count: empty, the rule files
    // (*.yaml, *.yml, as a rule load reads them); else the regular files whose
    // names end with one of these (".json": the baseline profiles), at most
    // 4096 of them, in name order, compared by inode, size and modification
    // time (not read).
    std::vector<std::string> dir_suffixes;
    std::shared_ptr<spdlog::logger> log;  // null: nothing is logged
  };
  // An error when inotify is not available (the caller goes on without).
  static Result<std::unique_ptr<FileWatch>> create(Options o);
  ~FileWatch();
  FileWatch(const FileWatch&) = delete;
  FileWatch& operator=(const FileWatch&) = delete;

  // Watches these files and directories (replacing the earlier set); what
  // they hold now is the baseline a change is measured against.
  void set_paths(std::vector<std::string> paths);
  // The inotify fd: readable when events wait.
  int fd() const { return fd_; }
  // Reads the waiting events (never blocks).
  void on_readable(Clock::time_point now);
  // When the watch is pending and quiet: the watched paths whose content
  // differs from the last check ("/etc/vigil/vigil.yaml, /etc/vigil/rules"),
  // which becomes the new baseline; nullopt otherwise.
  std::optional<std::string> changed(Clock::time_point now);
  // How many directories are watched now (tests).
  std::size_t watched_dirs() const { return wds_.size(); }

 private:
  explicit FileWatch(Options o) : o_(std::move(o)) {}
  std::string fingerprint(const std::string& path, std::set<std::string>& dirs) const;
  // Fingerprints every path into `out` and watches the directories they need.
  void scan(std::map<std::string, std::string>& out);

  Options o_;
  int fd_ = -1;
  std::vector<std::string> paths_;
  std::map<std::string, std::string> prints_;  // path -> fingerprint at the last check
  std::map<int, std::string> wds_;             // watch descriptor -> directory
  bool pending_ = false;
  Clock::time_point first_event_{}, last_event_{};
  bool warned_cap_ = false;
};

}  // namespace vigil::runtime
