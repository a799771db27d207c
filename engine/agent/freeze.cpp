#include "engine/agent/freeze.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "engine/state/cgroup.h"
#include "engine/state/procfs.h"

namespace vigil::agent {
namespace {

constexpr std::size_t kMaxProcCgroup = 64 * 1024;
constexpr std::size_t kMaxMountinfo = 4u << 20;

// An fd closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    const std::size_t i = s.find(sep);
    out.push_back(s.substr(0, i));
    if (i == std::string_view::npos) return out;
    s.remove_prefix(i + 1);
  }
}

// The path's components; nullopt for the root, an empty component other
// than the leading one, `.` or `..`.
std::optional<std::vector<std::string>> components(std::string_view path) {
  if (path.starts_with('/')) path.remove_prefix(1);
  if (path.ends_with('/')) path.remove_suffix(1);
  if (path.empty()) return std::nullopt;
  std::vector<std::string> out;
  for (std::string_view c : split(path, '/')) {
    if (c.empty() || c == "." || c == "..") return std::nullopt;
    out.emplace_back(c);
  }
  return out;
}

std::string normal(std::string_view path) {
  if (path.ends_with('/') && path.size() > 1) path.remove_suffix(1);
  return path.starts_with('/') ? std::string(path) : "/" + std::string(path);
}

// `a` is `b` or an ancestor of it.
bool holds(const std::string& a, const std::string& b) {
  if (a == "/" || a == b) return true;
  return b.size() > a.size() && b.compare(0, a.size(), a) == 0 && b[a.size()] == '/';
}

// The path of the process's cgroup in the v1 freezer hierarchy ("N:...freezer...:/path").
std::optional<std::string> freezer_path(std::string_view proc_cgroup) {
  for (std::string_view line : split(proc_cgroup, '\n')) {
    const auto f = split(line, ':');
    if (f.size() < 3 || f[1].empty()) continue;
    for (std::string_view c : split(f[1], ','))
      if (c == "freezer") return std::string(line.substr(f[0].size() + f[1].size() + 2));
  }
  return std::nullopt;
}

std::optional<std::string> read_proc(const FreezeRoots& r, const std::string& who) {
  return state::read_file_bounded(r.proc + "/" + who + "/cgroup", kMaxProcCgroup);
}

FreezeOutcome refused(std::string why) { return {FreezeOutcome::Result::kRefused, std::move(why)}; }
FreezeOutcome failed(const std::string& what, int err) {
  return {FreezeOutcome::Result::kFailed, what + ": " + std::strerror(err)};
}

// Whether the cgroup's own cgroup.procs (its first kMaxProcs bytes) lists
// pid 1 or `self`: the check that holds where vigil's cgroup path cannot be
// known (vigil in a cgroup namespace of its own sees itself at "/").
// nullopt when the file cannot be read.
constexpr std::size_t kMaxProcs = 64 * 1024;
std::optional<bool> lists_init_or_self(int dir, std::uint32_t self) {
  Fd f(::openat(dir, "cgroup.procs", O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (f.get() < 0) return std::nullopt;
  std::string text(kMaxProcs, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(f.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  const std::string me = std::to_string(self);
  for (std::string_view line : split(text, '\n'))
    if (line == "1" || line == me) return true;
  return false;
}

// Writes `value` into `file` of the cgroup `path` under `root`, walking
// the path without following links; the directory's inode must be
// `want_ino` where that is not 0, and its cgroup.procs must list neither
// pid 1 nor `self`.
FreezeOutcome write_cgroup_file(const std::string& root, const std::string& path, const char* file,
                                std::string_view value, std::uint64_t want_ino, std::uint32_t self,
                                const std::string& what) {
  const auto parts = components(path);
  if (!parts) return refused("the cgroup path '" + path + "' is the root or not a plain path");
  Fd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return failed(root, errno);
  for (const std::string& c : *parts) {
    Fd next(::openat(dir.get(), c.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0) return failed(root + path, errno);
    dir = std::move(next);
  }
  struct stat st {};
  if (::fstat(dir.get(), &st) != 0) return failed(root + path, errno);
  if (want_ino != 0 && st.st_ino != want_ino) return refused(root + path + " is not the container's cgroup any more");
  const auto listed = lists_init_or_self(dir.get(), self);
  if (!listed) return refused("cannot read " + root + path + "/cgroup.procs");
  if (*listed) return refused(root + path + " holds pid 1 or vigil");
  Fd f(::openat(dir.get(), file, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC));  // as `echo 1 >` opens it
  if (f.get() < 0) return failed(root + path + "/" + file, errno);
  if (::fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode)) return refused(root + path + "/" + file + " is not a file");
  const ssize_t n = ::write(f.get(), value.data(), value.size());
  if (n != static_cast<ssize_t>(value.size())) return failed(root + path + "/" + file, n < 0 ? errno : EIO);
  return {FreezeOutcome::Result::kFrozen, what + " " + path};
}

// A cgroup path that may be frozen for `container_id`: it names the
// container and holds neither pid 1 nor vigil. "" when it may, else why not.
std::string unsafe(const std::string& path, const std::string& container_id, const std::optional<std::string>& init,
                   const std::optional<std::string>& self) {
  auto m = state::parse_cgroup_path(path);
  if (!m || m->id != container_id) return "the cgroup '" + path + "' is not the container's";
  if (init && holds(path, normal(*init))) return "the cgroup '" + path + "' holds pid 1";
  if (self && holds(path, normal(*self))) return "the cgroup '" + path + "' holds vigil";
  return "";
}

}  // namespace

std::string find_freezer_mount(std::string_view mountinfo) {
  for (std::string_view line : split(mountinfo, '\n')) {
    const std::size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    const auto pre = split(line.substr(0, dash), ' ');
    const auto post = split(line.substr(dash + 3), ' ');
    if (pre.size() < 5 || post.size() < 3 || post[0] != "cgroup") continue;
    bool freezer = false;
    for (std::string_view o : split(post[2], ',')) freezer = freezer || o == "freezer";
    // Only the hierarchy's root, and no escaped characters to decode.
    if (freezer && pre[3] == "/" && pre[4].find('\\') == std::string_view::npos) return std::string(pre[4]);
  }
  return "";
}

FreezeRoots discover_freeze_roots() {
  FreezeRoots r;
  r.self_pid = static_cast<std::uint32_t>(::getpid());
  if (auto mi = state::read_file_bounded("/proc/self/mountinfo", kMaxMountinfo)) {
    if (auto v2 = state::find_cgroup2_mount(*mi)) r.cgroup2 = *v2;
    r.freezer = find_freezer_mount(*mi);
  }
  return r;
}

CgroupFreezer::CgroupFreezer(FreezeRoots roots) : roots_(std::move(roots)) {}

FreezeOutcome CgroupFreezer::freeze(const std::string& container_id, const std::string& cgroup_path,
                                    std::uint64_t cgroup_id, std::uint32_t pid) const {
  if (container_id.empty()) return refused("not a container");
  const auto init = read_proc(roots_, "1");
  const auto self = read_proc(roots_, "self");
  if (!init || !self) return refused("cannot read the cgroups of pid 1 and vigil");
  // A hybrid host whose runtime put the container in a v1 freezer cgroup.
  if (!roots_.freezer.empty() && pid > 0) {
    if (auto mine = read_proc(roots_, std::to_string(pid))) {
      if (auto fp = freezer_path(*mine); fp && normal(*fp) != "/") {
        const std::string path = normal(*fp);
        if (auto why = unsafe(path, container_id, freezer_path(*init), freezer_path(*self)); !why.empty())
          return refused(why);
        return write_cgroup_file(roots_.freezer, path, "freezer.state", "FROZEN", 0, roots_.self_pid,
                                 "cgroup v1 freezer");
      }
    }
  }
  if (roots_.cgroup2.empty()) return refused("no cgroup v2 hierarchy and no v1 freezer cgroup of the container");
  if (cgroup_path.empty()) return refused("the container's cgroup is not known");
  const std::string path = normal(cgroup_path);
  if (auto why = unsafe(path, container_id, state::cgroup_v2_path(*init), state::cgroup_v2_path(*self)); !why.empty())
    return refused(why);
  return write_cgroup_file(roots_.cgroup2, path, "cgroup.freeze", "1", cgroup_id, roots_.self_pid, "cgroup v2");
}

}  // namespace vigil::agent
