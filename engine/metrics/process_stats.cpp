#include "engine/metrics/process_stats.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace vigil::metrics {
namespace {

std::string read_small(const char* path) {
  std::ifstream f(path);
  std::string s;
  if (!f) return s;
  char buf[4096];
  f.read(buf, sizeof(buf));
  s.assign(buf, static_cast<std::size_t>(f.gcount()));
  return s;
}

double boot_time() {
  std::ifstream f("/proc/stat");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("btime ", 0) == 0) return std::strtod(line.c_str() + 6, nullptr);
  }
  return 0;
}

double count_fds() {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return 0;
  double n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n > 0 ? n - 1 : 0;  // not the one opendir holds
}

}  // namespace

std::optional<ProcessStats> parse_proc_stat(std::string_view stat, double ticks_per_second, double page_size,
                                            double boot_time_seconds) {
  const auto close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0) return std::nullopt;
  // Fields after the name, numbered as in proc(5): 3 is the state.
  std::vector<std::string_view> f;
  std::string_view rest = stat.substr(close + 1);
  std::size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && rest[i] == ' ') ++i;
    std::size_t j = i;
    while (j < rest.size() && rest[j] != ' ' && rest[j] != '\n') ++j;
    if (j > i) f.push_back(rest.substr(i, j - i));
    if (j < rest.size() && rest[j] == '\n') break;
    i = j;
  }
  auto num = [&](std::size_t field) -> std::optional<double> {
    const std::size_t k = field - 3;  // f[0] is field 3
    if (k >= f.size()) return std::nullopt;
    unsigned long long v = 0;
    auto [p, ec] = std::from_chars(f[k].data(), f[k].data() + f[k].size(), v);
    if (ec != std::errc() || p != f[k].data() + f[k].size()) return std::nullopt;
    return static_cast<double>(v);
  };
  auto utime = num(14), stime = num(15), start = num(22), vsize = num(23), rss = num(24);
  if (!utime || !stime || !start || !vsize || !rss) return std::nullopt;
  ProcessStats s;
  s.cpu_seconds = (*utime + *stime) / ticks_per_second;
  s.start_time_seconds = boot_time_seconds + *start / ticks_per_second;
  s.virtual_bytes = *vsize;
  s.resident_bytes = *rss * page_size;
  return s;
}

std::optional<ProcessStats> read_process_stats() {
  const std::string stat = read_small("/proc/self/stat");
  if (stat.empty()) return std::nullopt;
  auto s = parse_proc_stat(stat, static_cast<double>(sysconf(_SC_CLK_TCK)), static_cast<double>(sysconf(_SC_PAGESIZE)),
                           boot_time());
  if (!s) return s;
  s->open_fds = count_fds();
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) s->max_fds = static_cast<double>(rl.rlim_cur);
  return s;
}

void collect_process(Exposition& out) {
  auto s = read_process_stats();
  if (!s) return;
  out.family("process_cpu_seconds_total", "counter", "User and system CPU time of the vigil process, in seconds.");
  out.sample("process_cpu_seconds_total", s->cpu_seconds);
  out.family("process_resident_memory_bytes", "gauge", "Resident memory of the vigil process, in bytes.");
  out.sample("process_resident_memory_bytes", s->resident_bytes);
  out.family("process_virtual_memory_bytes", "gauge", "Virtual memory of the vigil process, in bytes.");
  out.sample("process_virtual_memory_bytes", s->virtual_bytes);
  out.family("process_start_time_seconds", "gauge", "When the vigil process started, in seconds since the Unix epoch.");
  out.sample("process_start_time_seconds", s->start_time_seconds);
  out.family("process_open_fds", "gauge", "File descriptors the vigil process holds open.");
  out.sample("process_open_fds", s->open_fds);
  out.family("process_max_fds", "gauge", "The vigil process's limit of open file descriptors.");
  out.sample("process_max_fds", s->max_fds);
}

}  // namespace vigil::metrics
