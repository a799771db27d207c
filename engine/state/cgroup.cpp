#include "engine/state/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>
#include <vector>

#include "engine/state/model.h"

namespace vigil::state {
namespace {

constexpr std::size_t kMaxPathLen = 4096;
constexpr std::size_t kMaxComponents = 64;

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool is_hex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!is_lower_hex(c)) return false;
  }
  return true;
}

// A Kubernetes pod UID: 8-4-4-4-12 lower-case hex, with `sep` between groups.
bool is_uuid(std::string_view s, char sep) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    bool dash_pos = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash_pos ? s[i] != sep : !is_lower_hex(s[i])) return false;
  }
  return true;
}

bool consume_prefix(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

bool consume_suffix(std::string_view& s, std::string_view suffix) {
  if (s.size() < suffix.size() || s.substr(s.size() - suffix.size()) != suffix) return false;
  s.remove_suffix(suffix.size());
  return true;
}

// "<runtime-prefix>-<id>[.scope]" → runtime, or nullptr.
const char* scope_runtime(std::string_view comp, std::string* id) {
  consume_suffix(comp, ".scope");
  struct Prefix {
    std::string_view prefix;
    const char* runtime;
  };
  static constexpr Prefix kPrefixes[] = {
      {"cri-containerd-", ContainerRuntime::kContainerd},
      {"crio-", ContainerRuntime::kCrio},
      {"docker-", ContainerRuntime::kDocker},
      {"libpod-", ContainerRuntime::kPodman},
  };
  for (const auto& p : kPrefixes) {
    std::string_view rest = comp;
    if (!consume_prefix(rest, p.prefix)) continue;
    if (!is_hex64(rest)) return nullptr;  // also rejects crio-conmon-<id>, libpod-conmon-<id>
    *id = std::string(rest);
    return p.runtime;
  }
  return nullptr;
}

// The pod UID named by one path component, "" if none.
std::string pod_uid_of(std::string_view comp, bool under_kubepods) {
  std::string_view s = comp;
  if (consume_prefix(s, "kubepods-") && consume_suffix(s, ".slice")) {
    // kubepods-pod<uid_>.slice or kubepods-<qos>-pod<uid_>.slice
    if (!consume_prefix(s, "pod")) {
      if (!consume_prefix(s, "besteffort-pod") && !consume_prefix(s, "burstable-pod") &&
          !consume_prefix(s, "guaranteed-pod")) {
        return "";
      }
    }
    if (!is_uuid(s, '_')) return "";
    std::string uid(s);
    for (char& c : uid) {
      if (c == '_') c = '-';
    }
    return uid;
  }
  s = comp;
  if (under_kubepods && consume_prefix(s, "pod") && is_uuid(s, '-')) return std::string(s);
  return "";
}

bool is_kubepods(std::string_view comp) { return comp == "kubepods" || comp == "kubepods.slice"; }

int octal_digit(char c) { return c >= '0' && c <= '7' ? c - '0' : -1; }

std::string unescape_mountinfo(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int a = octal_digit(s[i + 1]);
      int b = octal_digit(s[i + 2]);
      int c = octal_digit(s[i + 3]);
      if (a >= 0 && b >= 0 && c >= 0) {
        int v = a * 64 + b * 8 + c;
        if (v > 0 && v < 256) {
          out.push_back(static_cast<char>(v));
          i += 3;
          continue;
        }
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::vector<std::string_view> split(std::string_view s, char sep, std::size_t max_parts) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= s.size() && out.size() < max_parts) {
    std::size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

std::optional<CgroupMatch> parse_cgroup_path(std::string_view path) {
  if (path.empty() || path.size() > kMaxPathLen) return std::nullopt;
  if (path.find('\0') != std::string_view::npos) return std::nullopt;
  std::vector<std::string_view> comps = split(path, '/', kMaxComponents + 1);
  if (comps.size() > kMaxComponents) return std::nullopt;

  for (std::size_t i = comps.size(); i-- > 0;) {
    std::string id;
    const char* runtime = scope_runtime(comps[i], &id);
    if (!runtime && is_hex64(comps[i]) && i > 0) {
      // cgroupfs driver: the bare id below its parent.
      std::string_view parent = comps[i - 1];
      if (parent == "docker") {
        runtime = ContainerRuntime::kDocker;
      } else if (parent.substr(0, 3) == "pod" && is_uuid(parent.substr(3), '-')) {
        runtime = ContainerRuntime::kContainerd;
      }
      if (runtime) id = std::string(comps[i]);
    }
    if (!runtime) continue;

    CgroupMatch m;
    m.id = std::move(id);
    m.runtime = runtime;
    // The pod: the nearest pod component above the container, inside kubepods.
    bool kube = false;
    for (std::size_t j = 0; j < i; ++j) {
      if (is_kubepods(comps[j])) kube = true;
    }
    if (kube) {
      for (std::size_t j = i; j-- > 0;) {
        std::string uid = pod_uid_of(comps[j], true);
        if (!uid.empty()) {
          m.pod_uid = std::move(uid);
          break;
        }
        if (is_kubepods(comps[j])) break;
      }
    }
    return m;
  }
  return std::nullopt;
}

std::optional<std::string> find_cgroup2_mount(std::string_view mountinfo) {
  std::optional<std::string> any;
  std::size_t pos = 0;
  while (pos < mountinfo.size()) {
    std::size_t nl = mountinfo.find('\n', pos);
    if (nl == std::string_view::npos) nl = mountinfo.size();
    std::string_view line = mountinfo.substr(pos, nl - pos);
    pos = nl + 1;
    std::vector<std::string_view> f = split(line, ' ', 64);
    std::size_t sep = 0;
    for (std::size_t i = 6; i < f.size(); ++i) {
      if (f[i] == "-") {
        sep = i;
        break;
      }
    }
    if (sep == 0 || sep + 1 >= f.size() || f.size() < 5) continue;
    if (f[sep + 1] != "cgroup2") continue;
    std::string mnt = unescape_mountinfo(f[4]);
    if (mnt.empty() || mnt[0] != '/') continue;
    if (f[3] == "/") return mnt;
    if (!any) any = std::move(mnt);
  }
  return any;
}

std::optional<std::string> cgroup_v2_path(std::string_view proc_cgroup) {
  std::size_t pos = 0;
  while (pos < proc_cgroup.size()) {
    std::size_t nl = proc_cgroup.find('\n', pos);
    if (nl == std::string_view::npos) nl = proc_cgroup.size();
    std::string_view line = proc_cgroup.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.substr(0, 3) == "0::") {
      std::string_view p = line.substr(3);
      if (p.empty() || p[0] != '/' || p.size() > kMaxPathLen) return std::nullopt;
      // A process in a removed cgroup shows " (deleted)".
      consume_suffix(p, " (deleted)");
      return std::string(p);
    }
  }
  return std::nullopt;
}

std::uint64_t cgroup_id_of(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
  return static_cast<std::uint64_t>(st.st_ino);
}

std::size_t walk_cgroups(const std::string& root, std::size_t max_dirs,
                         const std::function<bool(const std::string&, std::uint64_t)>& visit) {
  std::size_t seen = 0;
  std::uint64_t root_id = cgroup_id_of(root);
  if (root_id == 0 || max_dirs == 0) return 0;
  ++seen;
  if (!visit("/", root_id)) return seen;

  struct Item {
    std::string rel;  // "" for the root, else "/a/b"
    int depth;
  };
  std::vector<Item> stack;
  stack.push_back({"", 0});
  while (!stack.empty() && seen < max_dirs) {
    Item item = std::move(stack.back());
    stack.pop_back();
    std::string abs = root + item.rel;
    int fd = ::open(abs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    DIR* d = ::fdopendir(fd);
    if (!d) {
      ::close(fd);
      continue;
    }
    while (dirent* e = ::readdir(d)) {
      std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) continue;
      struct stat st {};
      if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (!S_ISDIR(st.st_mode)) continue;
      std::string rel = item.rel + "/" + std::string(name);
      ++seen;
      if (!visit(rel, static_cast<std::uint64_t>(st.st_ino))) {
        ::closedir(d);
        return seen;
      }
      if (item.depth + 1 < kMaxCgroupDepth) stack.push_back({std::move(rel), item.depth + 1});
      if (seen >= max_dirs) break;
    }
    ::closedir(d);
  }
  return seen;
}

}  // namespace vigil::state
