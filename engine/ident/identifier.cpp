#include "engine/ident/identifier.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace vigil::ident {

namespace {

constexpr std::string_view kDeleted = " (deleted)";
constexpr std::size_t kCommMax = 15;

std::string_view base_name(std::string_view p) {
  auto s = p.rfind('/');
  return s == std::string_view::npos ? p : p.substr(s + 1);
}

std::string read_link_at(const std::string& path) {
  std::array<char, 4096> buf;
  ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size());
  if (n <= 0 || static_cast<std::size_t>(n) >= buf.size()) return {};
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

std::uint32_t ns_inode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<std::uint32_t>(st.st_ino);
}

bool comm_is(std::string_view comm, std::string_view name) {
  return comm == name.substr(0, std::min(name.size(), kCommMax));
}

}  // namespace

bool busybox_runs_shell(const event::ExecData& ed) {
  if (ed.args.empty()) return false;
  std::string_view applet = base_name(ed.args[0]);
  if (applet == "busybox") {
    if (ed.args.size() < 2) return false;
    applet = ed.args[1];
  }
  return applet == "sh" || applet == "ash" || applet == "hush" || applet == "bash";
}

ExeIdentifier::ExeIdentifier(Options opt)
    : opt_(std::move(opt)),
      cache_(opt_.cache_entries, opt_.max_hash_bytes),
      known_(opt_.cache_entries),
      roots_(opt_.max_roots) {}

ExeIdentifier::~ExeIdentifier() = default;

void ExeIdentifier::learn_host() {
  host_mnt_ns_ = ns_inode(opt_.proc_root + "/self/ns/mnt");
  int fd = ::open(opt_.host_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  known_.learn_root(fd, cache_);
  ::close(fd);
  ++stats_.roots_learnt;
}

void ExeIdentifier::learn_container_root(const event::Header& h) {
  if (h.mnt_ns == 0 || h.mnt_ns == host_mnt_ns_ || roots_.get(h.mnt_ns)) return;
  // The process's root, or its parent's (the same mount namespace, mostly)
  // when it is gone already; verified by the namespace link.
  for (std::uint32_t pid : {h.pid, h.ppid}) {
    if (pid == 0) continue;
    const std::string dir = opt_.proc_root + "/" + std::to_string(pid);
    if (ns_inode(dir + "/ns/mnt") != h.mnt_ns) continue;
    int fd = ::open((dir + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) continue;
    roots_.put(h.mnt_ns, pid);
    known_.learn_root(fd, cache_);
    ::close(fd);
    ++stats_.roots_learnt;
    return;
  }
}

// The program file of the exec: through /proc/<pid>/exe while the process
// lives (checked against the exec's path); once it is gone, the exec's path
// opened in its root (its parent's, or the host's) and accepted only when it
// is the very inode the kernel ran.
int ExeIdentifier::open_exe(const event::Event& ev, const event::ExecData& ed, bool& deleted) {
  deleted = false;
  const std::string link = opt_.proc_root + "/" + std::to_string(ev.hdr.pid) + "/exe";
  int fd = ::open(link.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd >= 0) {
    std::string target = read_link_at(link);
    deleted = target.size() > kDeleted.size() && target.ends_with(kDeleted);
    if (deleted) target.resize(target.size() - kDeleted.size());
    if (!target.empty() && (ed.exe.empty() || base_name(target) == base_name(ed.exe))) return fd;
    ::close(fd);  // it exec'd again, or the pid was reused
    deleted = false;
    return -1;
  }
  if (ed.exe.empty() || ed.exe.front() != '/' || ed.exe_ino == 0) return -1;
  const std::uint32_t* first = roots_.peek(ev.hdr.mnt_ns);
  for (std::uint32_t pid : {ev.hdr.pid, ev.hdr.ppid, first ? *first : 0u}) {
    std::string root;
    if (pid != 0) {
      const std::string dir = opt_.proc_root + "/" + std::to_string(pid);
      if (ev.hdr.mnt_ns == 0 || ns_inode(dir + "/ns/mnt") != ev.hdr.mnt_ns) continue;
      root = dir + "/root";
    }
    int rootfd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) continue;
    int f = open_in_root(rootfd, ed.exe);
    ::close(rootfd);
    if (f < 0) continue;
    struct stat st {};
    if (::fstat(f, &st) == 0 && st.st_ino == ed.exe_ino && FileKey::of(st).ctime_ns == ed.exe_ctime_ns) return f;
    ::close(f);
  }
  // A host process: the host's root.
  if (ev.hdr.mnt_ns != 0 && ev.hdr.mnt_ns == host_mnt_ns_) {
    int rootfd = ::open(opt_.host_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) return -1;
    int f = open_in_root(rootfd, ed.exe);
    ::close(rootfd);
    struct stat st {};
    if (f >= 0 && ::fstat(f, &st) == 0 && st.st_ino == ed.exe_ino && FileKey::of(st).ctime_ns == ed.exe_ctime_ns)
      return f;
    if (f >= 0) ::close(f);
  }
  return -1;
}

void ExeIdentifier::enrich(event::Event& ev) {
  auto* ed = std::get_if<event::ExecData>(&ev.data);
  if (!ed || ev.hdr.pid == 0) return;
  // Learn the container's own shells before judging its program.
  learn_container_root(ev.hdr);
  const FileKey kernel_key{ed->exe_dev, ed->exe_ino, ed->exe_ctime_ns};
  FileIdentity id;
  bool deleted = false;
  if (const FileIdentity* hit = cache_.find(kernel_key)) {
    id = *hit;
    // Deleted or not is a fact of now, not of the file's content.
    const std::string link = opt_.proc_root + "/" + std::to_string(ev.hdr.pid) + "/exe";
    std::string target = read_link_at(link);
    deleted = target.size() > kDeleted.size() && target.ends_with(kDeleted);
  } else {
    int fd = open_exe(ev, *ed, deleted);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      if (fd >= 0) ::close(fd);
      ++stats_.raced;
      return;
    }
    id = cache_.get(fd, st);
    ::close(fd);
    cache_.alias(kernel_key, id);
  }
  ++stats_.identified;
  ed->exe_sha256 = id.sha256;
  ed->exe_build_id = id.build_id;
  ed->exe_deleted = deleted && !ed->exe_from_memfd;
  if (const KnownProgram* k = known_.find(id.key())) {
    ed->exe_known_as = k->name;
    ExeClass cls = k->cls;
    if (k->name == "busybox" && !busybox_runs_shell(*ed)) cls = ExeClass::kNone;
    ed->exe_class = static_cast<std::uint8_t>(cls);
    // A known program started under a name it is not installed as (a
    // renamed copy, a link of another name). #! scripts carry the script's
    // name by design and are left out.
    if (!ed->interpreted && k->name != "busybox") {
      bool listed =
          std::any_of(k->names.begin(), k->names.end(), [&](const std::string& n) { return comm_is(ev.hdr.comm, n); });
      ed->exe_name_mismatch = !listed;
    }
  }
}

Stats ExeIdentifier::stats() const {
  Stats s = stats_;
  s.cache_hits = cache_.stats().hits;
  s.cache_misses = cache_.stats().misses;
  s.known = known_.size();
  return s;
}

}  // namespace vigil::ident
