#include "engine/ident/known.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <string>

namespace vigil::ident {

namespace {

constexpr ExeClass S = ExeClass::kShell;
constexpr ExeClass I = ExeClass::kInterpreter;

constexpr Candidate kCandidates[] = {
    {"bash", S},       {"dash", S},       {"ash", S},       {"zsh", S},        {"ksh93", S},      {"mksh", S},
    {"ksh", S},        {"pdksh", S},      {"yash", S},      {"fish", S},       {"tcsh", S},       {"csh", S},
    {"busybox", S},    {"sh", S},         {"rbash", S},     {"python3.14", I}, {"python3.13", I}, {"python3.12", I},
    {"python3.11", I}, {"python3.10", I}, {"python3.9", I}, {"python3.8", I},  {"python3", I},    {"python2.7", I},
    {"python2", I},    {"python", I},     {"perl", I},      {"ruby", I},       {"node", I},       {"nodejs", I},
    {"php", I},        {"lua5.4", I},     {"lua5.3", I},    {"lua", I},        {"luajit", I},     {"tclsh", I},
    {"Rscript", I},
};

constexpr std::string_view kDirs[] = {"/usr/bin/", "/bin/", "/usr/local/bin/"};

constexpr std::size_t kMaxShellsFile = 4096;
constexpr std::size_t kMaxShellsEntries = 32;

ExeClass class_of_name(std::string_view name) {
  for (const Candidate& c : kCandidates)
    if (c.name == name) return c.cls;
  return ExeClass::kShell;  // an /etc/shells entry under another name
}

}  // namespace

std::span<const Candidate> candidates() { return kCandidates; }
std::span<const std::string_view> candidate_dirs() { return kDirs; }

bool KnownPrograms::add(const std::string& key, std::string_view name, ExeClass cls) {
  if (key.empty()) return false;
  auto it = map_.find(key);
  if (it == map_.end()) {
    if (map_.size() >= capacity_) return false;
    KnownProgram k;
    k.name = std::string(name);
    k.cls = cls;
    k.names.push_back(k.name);
    map_.emplace(key, std::move(k));
    return true;
  }
  auto& names = it->second.names;
  if (std::find(names.begin(), names.end(), name) == names.end() && names.size() < kMaxAliases)
    names.emplace_back(name);
  return true;
}

const KnownProgram* KnownPrograms::find(const std::string& key) const {
  if (key.empty()) return nullptr;
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : &it->second;
}

int open_in_root(int rootfd, std::string_view path) {
  std::string p(path);
  struct open_how how {};
  how.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  long fd = ::syscall(SYS_openat2, rootfd, p.c_str(), &how, sizeof(how));
  return fd < 0 ? -1 : static_cast<int>(fd);
}

std::size_t KnownPrograms::learn_root(int rootfd, FileIdentityCache& cache) {
  std::size_t found = 0;
  auto learn = [&](std::string_view path, std::string_view name, ExeClass cls) {
    int fd = open_in_root(rootfd, path);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111)) {
      const FileIdentity& id = cache.get(fd, st);
      if (add(id.key(), name, cls)) ++found;
    }
    ::close(fd);
  };
  for (std::string_view dir : kDirs) {
    for (const Candidate& c : kCandidates) {
      std::string path(dir);
      path.append(c.name);
      learn(path, c.name, c.cls);
    }
  }
  // /etc/shells: the shells this root declares, under whatever names.
  int fd = open_in_root(rootfd, "/etc/shells");
  if (fd >= 0) {
    struct stat st {};
    std::string text;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
      text.resize(kMaxShellsFile);
      ssize_t n = ::pread(fd, text.data(), text.size(), 0);
      text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    }
    ::close(fd);
    std::size_t entries = 0, pos = 0;
    while (pos < text.size() && entries < kMaxShellsEntries) {
      std::size_t eol = text.find('\n', pos);
      if (eol == std::string::npos) eol = text.size();
      std::string_view line(text.data() + pos, eol - pos);
      pos = eol + 1;
      if (line.empty() || line.front() != '/' || line.size() > 256) continue;
      ++entries;
      std::string_view base = line.substr(line.rfind('/') + 1);
      if (base.empty()) continue;
      ExeClass cls = class_of_name(base);
      learn(line, base, cls == ExeClass::kInterpreter ? ExeClass::kShell : cls);
    }
  }
  return found;
}

}  // namespace vigil::ident
