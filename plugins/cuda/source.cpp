#include "plugins/cuda/source.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "plugins/cuda/calls.h"
#include "plugins/cuda/wire.h"

namespace vigil::cuda {

namespace {

constexpr std::size_t kMaxMapsBytes = 16u << 20;  // one process's maps
constexpr std::size_t kMaxLibsPerProcess = 8;     // candidate files in one maps
constexpr std::size_t kMaxRejected = 1024;        // unusable files remembered
constexpr std::uint32_t kMaxNewFilesPerScan = 8;  // files opened and parsed per scan
constexpr std::size_t kMaxPidsListed = 1u << 22;  // /proc entries one scan lists (pid_max)
constexpr std::size_t kMaxUrgent = 1024;          // pids from the mmap watch waiting to be read
constexpr std::size_t kUrgentPerRound = 64;       // of those, read per round of next()

std::uint64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t mono_ms() { return clock_ns(CLOCK_MONOTONIC) / 1'000'000; }

// The format of the first bytes of a module image.
std::string image_kind(const std::uint8_t* p, std::size_t n) {
  if (n >= 4 && p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') return "cubin";
  if (n >= 4) {
    std::uint32_t magic = static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
                          static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
    if (magic == 0xBA55ED50u || magic == 0x466243B1u) return "fatbin";
  }
  // PTX is text: the first bytes are printable and it declares `.version`
  // (usually after comment lines).
  std::size_t printable = 0;
  while (printable < n && (p[printable] == '\n' || p[printable] == '\t' || p[printable] == '\r' ||
                           (p[printable] >= 0x20 && p[printable] < 0x7f)))
    ++printable;
  std::string_view text(reinterpret_cast<const char*>(p), printable);
  if (printable > 0 && (text.find(".version") != std::string_view::npos || text.starts_with("//"))) return "ptx";
  return "unknown";
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (const std::string& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

}  // namespace

CudaSource::CudaSource(const Config& cfg, LogFn log) : cfg_(cfg), log_(std::move(log)) {}

CudaSource::~CudaSource() {
  probes_.reset();  // links first: they refer to the files below
  for (Library& l : libs_)
    if (l.fd >= 0) close(l.fd);
}

std::unique_ptr<CudaSource> CudaSource::create(const Config& cfg, LogFn log, std::string& err) {
  std::unique_ptr<CudaSource> s(new CudaSource(cfg, std::move(log)));
  for (const CallInfo& c : all_calls())
    if (cfg.wants(c.category)) s->calls_.push_back(c.id);
  if (s->calls_.empty()) {
    err = "probes: no entry-point group selected";
    return nullptr;
  }
  ProbeOptions po;
  po.ringbuf_bytes = cfg.ringbuf_bytes;
  po.max_processes = cfg.max_processes;
  po.multi_uprobe = cfg.multi_uprobe;
  po.batch_wakeups = cfg.flush_interval_ms > 0;
  if (cfg.watch_mmap) po.watch_names = cfg.library_names;
  s->probes_ = Probes::load(po, err);
  if (!s->probes_) return nullptr;
  CudaSource* self = s.get();
  s->probes_->on_mmap([self](std::uint32_t pid) {
    if (self->urgent_.size() < kMaxUrgent) self->urgent_.insert(pid);
  });
  if (cfg.watch_mmap && !s->probes_->watching_mmaps())
    s->log_(LogLevel::kWarn,
            "no mmap watch (" + s->probes_->watch_error() + "): a new libcuda file is probed at the next scan");
  s->log_(LogLevel::kInfo,
          std::string("CUDA probes loaded: ") + (s->probes_->multi() ? "one multi-uprobe link per library and program"
                                                                     : "one uprobe link per entry point"));
  s->mono_to_wall_ns_ =
      static_cast<std::int64_t>(clock_ns(CLOCK_REALTIME)) - static_cast<std::int64_t>(clock_ns(CLOCK_MONOTONIC));
  for (const std::string& p : cfg.library_paths) {
    int fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      s->log_(LogLevel::kWarn,
              "library_paths: cannot use " + p + ": " + (fd < 0 ? std::strerror(errno) : "not a regular file"));
      if (fd >= 0) close(fd);
      continue;
    }
    FileKey key{major(st.st_dev), minor(st.st_dev), st.st_ino};
    if (s->files_.count(key)) {
      close(fd);
      continue;
    }
    if (s->libs_.size() >= cfg.max_libraries) {
      s->log_(LogLevel::kWarn, "library_paths: max_libraries (" + std::to_string(cfg.max_libraries) +
                                   ") reached: not probing " + printable(p));
      close(fd);
      continue;
    }
    s->add_library(fd, key, printable(p), 0);
  }
  std::uint64_t now = mono_ms();
  s->scan();
  s->next_scan_ms_ = now + cfg.scan_interval_ms;
  s->next_flush_ms_ = now + cfg.flush_interval_ms;
  s->last_summary_ms_ = now;
  s->next_summary_ms_ = now + cfg.interval_ms;
  return s;
}

std::uint64_t CudaSource::wall_now() const { return clock_ns(CLOCK_REALTIME); }

bool CudaSource::alive(std::uint32_t pid) const {
  struct stat st;
  std::string path = cfg_.proc_root + "/" + std::to_string(pid);
  return stat(path.c_str(), &st) == 0;
}

void CudaSource::push(OutEvent ev) {
  if (pending_.size() >= cfg_.max_pending) {
    ++queue_drops_;
    return;
  }
  pending_.push_back(std::move(ev));
}

CudaSource::ScanStats CudaSource::scan() {
  ScanStats stats;
  std::vector<std::uint32_t> pids;
  if (DIR* d = opendir(cfg_.proc_root.c_str())) {
    while (dirent* e = readdir(d)) {
      if (pids.size() >= kMaxPidsListed) break;
      std::string_view name(e->d_name);
      std::uint32_t pid = 0;
      auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
      if (ec != std::errc() || p != name.data() + name.size() || pid == 0) continue;
      pids.push_back(pid);
    }
    closedir(d);
  } else {
    log_(LogLevel::kWarn, "cannot list " + cfg_.proc_root + ": " + std::strerror(errno));
    return stats;
  }
  std::sort(pids.begin(), pids.end());
  stats.pids_listed = static_cast<std::uint32_t>(pids.size());
  // Forget covered pids that are gone.
  for (auto it = covered_.begin(); it != covered_.end();)
    it = std::binary_search(pids.begin(), pids.end(), *it) ? std::next(it) : covered_.erase(it);
  if (pids.empty()) return stats;

  const auto self = static_cast<std::uint32_t>(getpid());
  std::size_t start = static_cast<std::size_t>(std::upper_bound(pids.begin(), pids.end(), cursor_) - pids.begin());
  std::uint32_t new_files = 0;
  for (std::size_t k = 0; k < pids.size() && stats.maps_read < cfg_.scan_max_pids; ++k) {
    std::uint32_t pid = pids[(start + k) % pids.size()];
    cursor_ = pid;
    if (pid == self || covered_.count(pid)) continue;
    ++stats.maps_read;
    scan_pid(pid, new_files, stats);
  }
  return stats;
}

bool CudaSource::scan_pid(std::uint32_t pid, std::uint32_t& new_files, ScanStats& stats) {
  std::string maps;
  if (!read_proc_file(cfg_.proc_root + "/" + std::to_string(pid) + "/maps", kMaxMapsBytes, maps)) return false;
  for (const MapsEntry& m : find_libraries(maps, cfg_.library_names, kMaxLibsPerProcess)) {
    FileKey key{m.dev_major, m.dev_minor, m.inode};
    auto it = files_.find(key);
    if (it != files_.end()) {
      if (it->second >= 0) covered_.insert(pid);
      continue;
    }
    if (new_files >= kMaxNewFilesPerScan) continue;  // the next scan gets it
    ++new_files;
    std::size_t before = libs_.size();
    try_library(pid, m);
    if (libs_.size() > before) {
      ++stats.libraries_attached;
      covered_.insert(pid);
    }
  }
  return true;
}

void CudaSource::try_library(std::uint32_t pid, const MapsEntry& m) {
  FileKey key{m.dev_major, m.dev_minor, m.inode};
  std::string shown = printable(m.path);
  if (libs_.size() >= cfg_.max_libraries || libs_.size() >= 0xffff) {
    if (!limit_logged_)
      log_(LogLevel::kWarn, "max_libraries (" + std::to_string(cfg_.max_libraries) + ") reached: not probing " + shown +
                                " (pid " + std::to_string(pid) + ") nor any further libcuda file");
    limit_logged_ = true;
    if (files_.size() < kMaxRejected) files_.emplace(key, -1);
    return;
  }
  // The mapped file itself (map_files names the mapping, wherever the process's
  // root is), else the path inside the process's root. Either is used only if
  // it is the very file the maps line names (same device and inode): a
  // container cannot point the plugin at another file by renaming or linking.
  char range[64];
  std::snprintf(range, sizeof(range), "%llx-%llx", static_cast<unsigned long long>(m.start),
                static_cast<unsigned long long>(m.end));
  std::string base = cfg_.proc_root + "/" + std::to_string(pid);
  std::vector<std::string> candidates{base + "/map_files/" + range};
  if (!m.deleted && !m.path.empty() && m.path.front() == '/') candidates.push_back(base + "/root" + m.path);
  for (const std::string& c : candidates) {
    int fd = open(c.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && major(st.st_dev) == m.dev_major &&
        minor(st.st_dev) == m.dev_minor && st.st_ino == m.inode) {
      add_library(fd, key, shown, pid);
      return;
    }
    close(fd);
  }
  log_(LogLevel::kDebug, "pid " + std::to_string(pid) + " maps " + shown +
                             " but the file could not be opened as the same inode; retrying later");
}

void CudaSource::add_library(int fd, const FileKey& key, const std::string& shown, std::uint32_t pid) {
  auto slot = static_cast<std::uint32_t>(libs_.size());
  AttachResult r = probes_->attach(fd, slot, calls_);
  std::string where = shown + " (dev " + std::to_string(std::get<0>(key)) + ":" + std::to_string(std::get<1>(key)) +
                      ", inode " + std::to_string(std::get<2>(key)) +
                      (pid ? ", found in pid " + std::to_string(pid) : std::string()) + ")";
  if (!r.error.empty() || r.attached.empty()) {
    log_(LogLevel::kWarn,
         "not probing " + where + ": " +
             (r.error.empty() ? "none of the entry points attached: " + join(r.missing, ", ") : r.error));
    close(fd);
    if (files_.size() < kMaxRejected) files_.emplace(key, -1);
    return;
  }
  libs_.push_back(Library{shown, fd, static_cast<std::uint32_t>(r.attached.size())});
  files_.emplace(key, static_cast<int>(slot));
  log_(LogLevel::kInfo, "probing " + where + ": " + std::to_string(r.attached.size()) + " of " +
                            std::to_string(calls_.size()) + " entry points" +
                            (r.missing.empty() ? std::string() : "; not attached: " + join(r.missing, ", ")));
  Record w;
  w.kind = Kind::kLibrary;
  w.present = Record::kHasProbes;
  w.probes = r.attached.size();
  w.library = shown;
  w.detail = printable(join(r.missing, ", "));
  push(OutEvent{wall_now(), pid, 0, "cuda_library", encode(w)});
}

void CudaSource::on_record(const cuda_call_rec& r) {
  auto info = call_by_id(r.call);
  if (!info || info->category == Category::kLaunch) return;
  Record w;
  w.kind = Kind::kCall;
  w.call = static_cast<std::uint16_t>(r.call);
  if (r.lib < libs_.size()) w.library = libs_[r.lib].path;
  if (info->device_arg) {
    w.present |= Record::kHasDevice;
    w.device = static_cast<std::int32_t>(static_cast<std::uint32_t>(r.args[info->device_arg - 1]));
  }
  if (info->size_arg) {
    w.present |= Record::kHasSize;
    w.size = r.args[info->size_arg - 1];
  }
  if (info->ptr_arg) {
    w.present |= Record::kHasPtr;
    w.ptr = r.args[info->ptr_arg - 1];
  }
  std::size_t n = std::min<std::size_t>(r.str_len, sizeof(r.str));
  if (r.str_kind == CUDA_STR_PATH) {
    w.detail = printable(
        std::string_view(reinterpret_cast<const char*>(r.str), strnlen(reinterpret_cast<const char*>(r.str), n)));
  } else if (r.str_kind == CUDA_STR_IMAGE) {
    w.module_kind = image_kind(r.str, n);
  } else if (info->category == Category::kModule) {
    w.module_kind = "unknown";
  }
  auto ts = static_cast<std::uint64_t>(static_cast<std::int64_t>(r.ts_ns) + mono_to_wall_ns_);
  push(OutEvent{ts, r.pid, r.tid, "cuda_call", encode(w)});
}

void CudaSource::summarize() {
  std::uint64_t now = mono_ms();
  std::uint64_t interval = now - last_summary_ms_;
  last_summary_ms_ = now;
  std::uint64_t drops_calls = probes_->drops(CUDA_DROP_RING) + queue_drops_;
  std::uint64_t drops_launches = probes_->drops(CUDA_DROP_LAUNCH_MAP);
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<std::uint64_t, std::uint64_t>> seen;
  std::vector<LaunchCount> counts = probes_->launch_counts(cfg_.max_processes);
  for (const LaunchCount& c : counts) {
    auto key = std::make_pair(c.pid, c.lib);
    // Liveness first, then the count: a process dead before the read cannot
    // add launches after it, so its last launches are in this summary.
    bool live = alive(c.pid);
    LaunchCount now = c;
    if (!live) {
      LaunchCount again = probes_->launch_total(c.pid, c.lib);
      now.total = std::max(c.total, again.total);
      now.graphs = std::max(c.graphs, again.graphs);
    }
    std::pair<std::uint64_t, std::uint64_t> before{0, 0};
    if (auto it = launch_seen_.find(key); it != launch_seen_.end()) before = it->second;
    // A counter below its last value was recreated: count it from zero.
    if (now.total < before.first) before.first = 0;
    if (now.graphs < before.second) before.second = 0;
    if (now.total > before.first || now.graphs > before.second) {
      Record w;
      w.kind = Kind::kLaunches;
      w.present = Record::kHasLaunches | Record::kHasDrops;
      w.launches = now.total - before.first;
      w.graph_launches = now.graphs - before.second;
      w.interval_ms = interval;
      w.drops_calls = drops_calls;
      w.drops_launches = drops_launches;
      if (c.lib < libs_.size()) w.library = libs_[c.lib].path;
      push(OutEvent{wall_now(), c.pid, 0, "cuda_launches", encode(w)});
    }
    if (live) seen[key] = {now.total, now.graphs};
    else probes_->forget(c.pid, c.lib);
  }
  launch_seen_ = std::move(seen);
  report_drops();
}

void CudaSource::report_drops() {
  std::uint64_t now[4] = {probes_->drops(CUDA_DROP_RING), probes_->drops(CUDA_DROP_LAUNCH_MAP), queue_drops_,
                          probes_->drops(CUDA_DROP_MMAP)};
  static constexpr const char* kWhat[4] = {"call records lost: the ring buffer was full (raise ringbuf_bytes)",
                                           "kernel launches not counted: the launch map was full (raise max_processes)",
                                           "events dropped: vigil did not take them fast enough (max_pending)",
                                           "mmap watch reports lost: their processes wait for the next scan"};
  for (int i = 0; i < 4; ++i) {
    if (now[i] > reported_drops_[i])
      log_(LogLevel::kWarn, std::to_string(now[i] - reported_drops_[i]) + " " + kWhat[i] + "; " +
                                std::to_string(now[i]) + " since start");
    reported_drops_[i] = now[i];
  }
}

void CudaSource::next(std::uint32_t max, std::uint32_t timeout_ms, std::vector<OutEvent>& out) {
  std::uint64_t deadline = mono_ms() + timeout_ms;
  std::function<void(const cuda_call_rec&)> cb = [this](const cuda_call_rec& r) { on_record(r); };
  for (;;) {
    std::uint64_t now = mono_ms();
    if (now >= next_scan_ms_) {
      scan();
      next_scan_ms_ = mono_ms() + cfg_.scan_interval_ms;
    }
    if (cfg_.flush_interval_ms > 0 && now >= next_flush_ms_) {
      probes_->consume(cb);
      next_flush_ms_ = now + cfg_.flush_interval_ms;
    }
    if (!urgent_.empty()) {
      // Processes that just mapped a library-named file: before their first calls if possible.
      std::uint32_t new_files = 0;
      ScanStats stats;
      const auto self = static_cast<std::uint32_t>(getpid());
      for (std::size_t k = 0; k < kUrgentPerRound && !urgent_.empty(); ++k) {
        std::uint32_t pid = *urgent_.begin();
        urgent_.erase(urgent_.begin());
        if (pid != self && !covered_.count(pid)) scan_pid(pid, new_files, stats);
      }
    }
    if (now >= next_summary_ms_) {
      probes_->consume(cb);  // records before the summary, in order
      summarize();
      next_summary_ms_ = now + cfg_.interval_ms;
    }
    if (!pending_.empty()) break;
    now = mono_ms();
    if (now >= deadline) {
      probes_->consume(cb);
      break;
    }
    std::uint64_t until = std::min({deadline, next_scan_ms_, next_summary_ms_});
    if (cfg_.flush_interval_ms > 0) until = std::min(until, next_flush_ms_);
    int wait = until > now ? static_cast<int>(std::min<std::uint64_t>(until - now, 1000)) : 0;
    if (!urgent_.empty()) wait = 0;  // more mmap-watch pids to read
    int n = probes_->poll(wait, cb);
    if (n < 0) {
      log_(LogLevel::kError, std::string("ring buffer poll failed: ") + std::strerror(-n));
      break;
    }
  }
  while (!pending_.empty() && max > 0) {
    out.push_back(std::move(pending_.front()));
    pending_.pop_front();
    --max;
  }
}

}  // namespace vigil::cuda
