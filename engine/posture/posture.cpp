#include "engine/posture/posture.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <iterator>
#include <optional>

namespace vigil::posture {
namespace {

constexpr std::size_t kMaxLine = 4096;  // a longer line is skipped
constexpr std::size_t kMaxToken = 64;   // a version, a runtime's name
constexpr std::size_t kMaxRuntimes = 8;

constexpr std::string_view kDriverVersion = "proc/driver/nvidia/version";
constexpr std::string_view kModuleVersion = "sys/module/nvidia/version";
constexpr std::string_view kDriverParams = "proc/driver/nvidia/params";
constexpr std::string_view kKernelPaths[] = {kDriverVersion, kModuleVersion, kDriverParams};
// The package database, the toolkit's configuration (the first file that
// exists), then the bin directories, in the order they are searched.
constexpr std::string_view kDpkgStatus = "var/lib/dpkg/status";
constexpr std::string_view kToolkitConfigs[] = {"etc/nvidia-container-runtime/config.toml",
                                                "etc/nvidia-container-toolkit/config.toml"};
constexpr std::string_view kBinDirs[] = {"usr/local/sbin", "usr/local/bin", "usr/sbin", "usr/bin", "sbin", "bin"};
constexpr auto kHostPaths = [] {
  std::array<std::string_view, 1 + std::size(kToolkitConfigs) + std::size(kBinDirs)> all{};
  std::size_t i = 0;
  all[i++] = kDpkgStatus;
  for (std::string_view p : kToolkitConfigs) all[i++] = p;
  for (std::string_view p : kBinDirs) all[i++] = p;
  return all;
}();

std::string under(const std::string& root, std::string_view path) {
  std::string out = root;
  while (!out.empty() && out.back() == '/') out.pop_back();
  out += '/';
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  out += path;
  return out;
}

// Opens a regular file for reading without waiting on it (a FIFO planted at
// the path would block the reader forever): -1 when it is missing, not a
// regular file or not readable.
int open_regular(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// At most `max` bytes of the file; nullopt when it cannot be read.
std::optional<std::string> read_bounded(const std::string& path, std::size_t max) {
  int fd = open_regular(path);
  if (fd < 0) return std::nullopt;
  std::string out;
  std::array<char, 4096> buf{};
  while (out.size() < max) {
    const std::size_t want = std::min(buf.size(), max - out.size());
    ssize_t n = ::read(fd, buf.data(), want);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

// Calls fn for each line of the file, at most `max` bytes read; lines longer
// than kMaxLine are skipped whole. False when the file cannot be read.
template <typename Fn>
bool for_each_line(const std::string& path, std::size_t max, Fn fn) {
  int fd = open_regular(path);
  if (fd < 0) return false;
  std::string line;
  bool skipping = false;
  std::size_t total = 0;
  std::array<char, 16384> buf{};
  while (total < max) {
    const std::size_t want = std::min(buf.size(), max - total);
    ssize_t n = ::read(fd, buf.data(), want);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    total += static_cast<std::size_t>(n);
    for (ssize_t i = 0; i < n; ++i) {
      const char c = buf[static_cast<std::size_t>(i)];
      if (c == '\n') {
        if (!skipping) fn(std::string_view(line));
        line.clear();
        skipping = false;
      } else if (!skipping) {
        if (line.size() >= kMaxLine) {
          skipping = true;
          line.clear();
        } else {
          line += c;
        }
      }
    }
  }
  if (!skipping && !line.empty()) fn(std::string_view(line));
  ::close(fd);
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A dotted version of digits with at least one dot, bounded.
bool is_version(std::string_view t) {
  if (t.empty() || t.size() > kMaxToken || t.front() == '.' || t.back() == '.') return false;
  bool dot = false;
  for (char c : t) {
    if (c == '.') dot = true;
    else if (c < '0' || c > '9') return false;
  }
  return dot && compare_versions(t, t).has_value();
}

// The lines of `text`, one at a time.
template <typename Fn>
void lines_of(std::string_view text, Fn fn) {
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    fn(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

// A TOML value that vigil reads: true/false, a basic or literal string, or
// a one-line array of them.
Tri toml_bool(std::string_view v) {
  v = trim(v);
  if (v == "true") return 1;
  if (v == "false") return 0;
  return -1;
}

// Strips a trailing comment outside quotes.
std::string_view strip_comment(std::string_view v) {
  char quote = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const char c = v[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      return v.substr(0, i);
    }
  }
  return v;
}

std::vector<std::string> toml_strings(std::string_view v) {
  std::vector<std::string> out;
  v = trim(v);
  if (v.size() < 2 || v.front() != '[' || v.back() != ']') return out;
  v = v.substr(1, v.size() - 2);
  while (!v.empty() && out.size() < kMaxRuntimes) {
    v = trim(v);
    if (v.empty()) break;
    const char q = v.front();
    if (q != '"' && q != '\'') break;
    std::size_t end = v.find(q, 1);
    if (end == std::string_view::npos) break;
    std::string_view s = v.substr(1, end - 1);
    if (!s.empty() && s.size() <= kMaxToken && s.find('\\') == std::string_view::npos) out.emplace_back(s);
    v.remove_prefix(end + 1);
    v = trim(v);
    if (!v.empty() && v.front() == ',') v.remove_prefix(1);
  }
  return out;
}

// TOML keys may be quoted; vigil's keys are bare.
std::string_view toml_key(std::string_view k) {
  k = trim(k);
  if (k.size() >= 2 && (k.front() == '"' || k.front() == '\'') && k.back() == k.front()) k = k.substr(1, k.size() - 2);
  return k;
}

// Is `name` a program file the toolkit can run: a bare name found in the
// host's usual bin directories, or an absolute path under the host root?
bool installed(const std::string& root, std::string_view name) {
  if (name.empty() || name.size() > kMaxToken || name.find("..") != std::string_view::npos) return false;
  auto is_program = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0;
  };
  if (name.front() == '/') return is_program(under(root, name));
  if (name.find('/') != std::string_view::npos) return false;
  for (std::string_view d : kBinDirs) {
    if (is_program(under(root, std::string(d) + "/" + std::string(name)))) return true;
  }
  return false;
}

std::string base_name(std::string_view p) {
  std::size_t s = p.rfind('/');
  return std::string(s == std::string_view::npos ? p : p.substr(s + 1));
}

// Drops a Debian epoch ("1:") and revision ("-1", "-1ubuntu2").
std::string upstream_version(std::string_view v) {
  v = trim(v);
  if (std::size_t c = v.find(':'); c != std::string_view::npos) v.remove_prefix(c + 1);
  if (std::size_t d = v.find('-'); d != std::string_view::npos) v = v.substr(0, d);
  if (std::size_t t = v.find('~'); t != std::string_view::npos) v = v.substr(0, t);
  return is_version(v) ? std::string(v) : std::string();
}

constexpr std::array<std::string_view, 8> kFacts = {"driver",        "toolkit",     "vulnerable", "profiling",
                                                    "accept_envvar", "cuda_compat", "runtime",    "ecc"};

}  // namespace

bool Posture::operator==(const Posture& o) const {
  return driver_version == o.driver_version && toolkit_version == o.toolkit_version &&
         cve_list(vulnerable) == cve_list(o.vulnerable) && profiling_admin_only == o.profiling_admin_only &&
         accept_envvar == o.accept_envvar && cuda_compat_hook == o.cuda_compat_hook && runtime == o.runtime &&
         ecc == o.ecc && ecc_gpus == o.ecc_gpus;
}

void set_ecc(Posture& p, std::vector<GpuEcc> gpus) {
  if (gpus.size() > kMaxEccGpus) gpus.resize(kMaxEccGpus);
  p.ecc = ecc_summary(gpus);
  p.ecc_gpus = std::move(gpus);
}

std::string parse_driver_version(std::string_view text) {
  std::string out;
  lines_of(text, [&](std::string_view l) {
    if (!out.empty() || l.rfind("NVRM version:", 0) != 0) return;
    l.remove_prefix(13);
    while (!l.empty()) {
      l = trim(l);
      std::size_t e = l.find_first_of(" \t");
      std::string_view tok = l.substr(0, e);
      if (is_version(tok)) {
        out = std::string(tok);
        return;
      }
      if (e == std::string_view::npos) break;
      l.remove_prefix(e);
    }
  });
  return out;
}

std::string parse_module_version(std::string_view text) {
  std::string_view first = trim(text.substr(0, text.find('\n')));
  return is_version(first) ? std::string(first) : std::string();
}

Tri parse_profiling_admin_only(std::string_view params) {
  Tri out = -1;
  lines_of(params, [&](std::string_view l) {
    std::size_t c = l.find(':');
    if (c == std::string_view::npos || trim(l.substr(0, c)) != "RmProfilingAdminOnly") return;
    std::string_view v = trim(l.substr(c + 1));
    if (v == "1") out = 1;
    else if (v == "0") out = 0;
  });
  return out;
}

ToolkitConfig parse_toolkit_config(std::string_view toml) {
  ToolkitConfig out;
  std::string table;
  lines_of(toml, [&](std::string_view l) {
    l = trim(strip_comment(l));
    if (l.empty()) return;
    if (l.front() == '[') {
      std::size_t end = l.find(']');
      table = end == std::string_view::npos ? std::string("?") : std::string(toml_key(l.substr(1, end - 1)));
      return;
    }
    std::size_t eq = l.find('=');
    if (eq == std::string_view::npos) return;
    std::string_view key = toml_key(l.substr(0, eq));
    std::string_view value = l.substr(eq + 1);
    if (table.empty() && key == "accept-nvidia-visible-devices-envvar-when-unprivileged") {
      out.accept_envvar = toml_bool(value);
    } else if ((table == "features" && key == "disable-cuda-compat-lib-hook") ||
               (table.empty() && key == "features.disable-cuda-compat-lib-hook")) {
      out.disable_cuda_compat_hook = toml_bool(value);
    } else if (table == "nvidia-container-runtime" && key == "runtimes") {
      out.runtimes = toml_strings(value);
    }
  });
  return out;
}

DpkgStatusReader::DpkgStatusReader(std::vector<std::string> packages)
    : packages_(std::move(packages)), found_(packages_.size()) {}

void DpkgStatusReader::end_stanza() {
  if (installed_ && !version_.empty()) {
    for (std::size_t i = 0; i < packages_.size(); ++i) {
      if (packages_[i] == package_ && found_[i].empty()) found_[i] = upstream_version(version_);
    }
  }
  package_.clear();
  version_.clear();
  installed_ = false;
}

void DpkgStatusReader::line(std::string_view l) {
  if (trim(l).empty()) {
    end_stanza();
    return;
  }
  if (l.front() == ' ' || l.front() == '\t') return;  // a continuation line
  std::size_t c = l.find(':');
  if (c == std::string_view::npos) return;
  std::string_view key = l.substr(0, c);
  std::string_view value = trim(l.substr(c + 1));
  if (key == "Package") {
    package_ = std::string(value.substr(0, kMaxToken));
  } else if (key == "Version") {
    version_ = std::string(value.substr(0, kMaxToken));
  } else if (key == "Status") {
    // "install ok installed": the last word is the package's state.
    installed_ = value.size() >= 10 && value.substr(value.size() - 10) == " installed";
  }
}

std::string DpkgStatusReader::version() const {
  DpkgStatusReader last = *this;
  last.end_stanza();
  for (const std::string& v : last.found_) {
    if (!v.empty()) return v;
  }
  return {};
}

std::span<const std::string_view> host_paths() { return kHostPaths; }
std::span<const std::string_view> kernel_paths() { return kKernelPaths; }

Posture read_posture(const ReadOptions& opt) {
  Posture p;
  const std::string& root = opt.host_root;
  const std::string& kernel = opt.kernel_root.empty() ? opt.host_root : opt.kernel_root;
  if (auto t = read_bounded(under(kernel, kDriverVersion), opt.max_file_bytes)) {
    p.driver_version = parse_driver_version(*t);
  }
  if (p.driver_version.empty()) {
    if (auto t = read_bounded(under(kernel, kModuleVersion), opt.max_file_bytes)) {
      p.driver_version = parse_module_version(*t);
    }
  }
  if (auto t = read_bounded(under(kernel, kDriverParams), opt.max_file_bytes)) {
    p.profiling_admin_only = parse_profiling_admin_only(*t);
  }
  DpkgStatusReader dpkg({"nvidia-container-toolkit", "nvidia-container-toolkit-base"});
  if (for_each_line(under(root, kDpkgStatus), opt.max_package_db_bytes,
                    [&dpkg](std::string_view l) { dpkg.line(l); })) {
    p.toolkit_version = dpkg.version();
  }
  ToolkitConfig tc;
  bool have_config = false;
  for (std::string_view path : kToolkitConfigs) {
    if (auto t = read_bounded(under(root, path), opt.max_file_bytes)) {
      tc = parse_toolkit_config(*t);
      have_config = true;
      break;
    }
  }
  if (have_config) {
    // The toolkit's defaults for keys its file leaves out.
    p.accept_envvar = tc.accept_envvar < 0 ? 1 : tc.accept_envvar;
    p.cuda_compat_hook = tc.disable_cuda_compat_hook == 1 ? 0 : 1;
  }
  std::vector<std::string> runtimes = tc.runtimes;
  if (runtimes.empty()) runtimes = {"docker-runc", "runc", "crun"};
  if (have_config || !p.toolkit_version.empty()) {
    for (const std::string& r : runtimes) {
      if (installed(root, r)) {
        p.runtime = base_name(r);
        break;
      }
    }
  }
  auto drv = vulnerable_to("driver", p.driver_version);
  auto tk = vulnerable_to("toolkit", p.toolkit_version);
  p.vulnerable = std::move(drv);
  p.vulnerable.insert(p.vulnerable.end(), tk.begin(), tk.end());
  return p;
}

std::string changed_facts(const Posture& a, const Posture& b) {
  const bool diff[] = {a.driver_version != b.driver_version,
                       a.toolkit_version != b.toolkit_version,
                       cve_list(a.vulnerable) != cve_list(b.vulnerable),
                       a.profiling_admin_only != b.profiling_admin_only,
                       a.accept_envvar != b.accept_envvar,
                       a.cuda_compat_hook != b.cuda_compat_hook,
                       a.runtime != b.runtime,
                       a.ecc != b.ecc || a.ecc_gpus != b.ecc_gpus};
  std::string out;
  for (std::size_t i = 0; i < kFacts.size(); ++i) {
    if (diff[i]) out += (out.empty() ? "" : " ") + std::string(kFacts[i]);
  }
  return out;
}

std::string all_facts() {
  std::string out;
  for (std::string_view f : kFacts) out += (out.empty() ? "" : " ") + std::string(f);
  return out;
}

std::string cve_list(const std::vector<Finding>& v) {
  std::string out;
  for (const Finding& f : v) out += (out.empty() ? "" : ",") + f.cve;
  return out;
}

std::string summary(const Posture& p) {
  auto with_cves = [&p](std::string_view component, const std::string& version) {
    std::string s = std::string(component) + " " + (version.empty() ? "unknown" : version);
    std::string cves;
    for (const Finding& f : p.vulnerable) {
      if (f.component == component) cves += (cves.empty() ? "" : ", ") + f.cve;
    }
    if (!cves.empty()) s += " (" + cves + ")";
    return s;
  };
  std::string s = with_cves("driver", p.driver_version) + ", " + with_cves("toolkit", p.toolkit_version);
  s += p.profiling_admin_only == 1   ? ", profiling admin-only"
       : p.profiling_admin_only == 0 ? ", profiling open to all users"
                                     : ", profiling unknown";
  s += p.accept_envvar == 1   ? ", envvar accepted from unprivileged"
       : p.accept_envvar == 0 ? ", envvar refused from unprivileged"
                              : ", envvar unknown";
  s += p.cuda_compat_hook == 1 ? ", cuda-compat hook on" : p.cuda_compat_hook == 0 ? ", cuda-compat hook off" : "";
  s += ", runtime " + (p.runtime.empty() ? std::string("unknown") : p.runtime);
  s += ", ECC " + ecc_summary_text(p.ecc_gpus);
  return s;
}

event::PostureData to_event(const Posture& p, std::string changed) {
  event::PostureData d;
  d.kind = "node";
  d.changed = std::move(changed);
  d.driver_version = p.driver_version;
  d.toolkit_version = p.toolkit_version;
  d.vulnerable = cve_list(p.vulnerable);
  d.profiling_admin_only = p.profiling_admin_only;
  d.accept_envvar = p.accept_envvar;
  d.cuda_compat_hook = p.cuda_compat_hook;
  d.runtime = p.runtime;
  d.ecc = p.ecc;
  d.ecc_gpus = ecc_gpus_text(p.ecc_gpus);
  return d;
}

}  // namespace vigil::posture
