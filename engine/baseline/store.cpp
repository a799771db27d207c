#include "engine/baseline/store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/baseline/profile_file.h"
#include "engine/event/nvidia.h"

namespace vigil::baseline {

namespace {

constexpr std::size_t kMaxContainers = 16384;
// Directory entries looked at per scan: a directory stuffed with files does
// not stall the loop.
constexpr std::size_t kMaxDirEntries = 65536;

std::int64_t mtime_ns(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::vector<std::string> default_watch_paths() {
  // Program directories, the loader's preload, cron, shell start-up files,
  // systemd units and root's SSH keys. Not /etc/ nor the library directories
  // as a whole: the sensor sends every open under a rule's prefix, reads
  // included, and every program start reads /etc/ld.so.cache and its libraries.
  return {"/bin/",           "/sbin/",           "/usr/bin/",          "/usr/sbin/",
          "/usr/local/bin/", "/usr/local/sbin/", "/etc/ld.so.preload", "/etc/ld.so.conf.d/",
          "/etc/cron.d/",    "/etc/crontab",     "/var/spool/cron/",   "/etc/profile.d/",
          "/etc/systemd/",   "/root/.ssh/"};
}

Store::Store(Config cfg) : cfg_(std::move(cfg)) {
  cfg_.v4_prefix = std::clamp(cfg_.v4_prefix, 0, 32);
  cfg_.v6_prefix = std::clamp(cfg_.v6_prefix, 0, 128);
}

Store::~Store() = default;

bool Store::watched(std::string_view path) const {
  for (const std::string& w : cfg_.watch_paths) {
    if (w.empty()) continue;
    if (w.back() == '/') {
      if (path.size() > w.size() && path.substr(0, w.size()) == w) return true;
    } else if (path == w || (path.size() > w.size() && path.substr(0, w.size()) == w && path[w.size()] == '/')) {
      return true;
    }
  }
  return false;
}

Store::Slot* Store::add_slot(std::unique_ptr<Profile> p) {
  auto slot = std::make_unique<Slot>();
  slot->profile = std::move(p);
  Slot* raw = slot.get();
  const std::string key = raw->profile->key();
  (raw->profile->phase() == Phase::kLocked ? locked_ : learning_).fetch_add(1, std::memory_order_relaxed);
  workloads_.fetch_add(1, std::memory_order_relaxed);
  by_file_[file_name_for(key)] = raw;
  slots_[key] = std::move(slot);
  return raw;
}

Store::Slot* Store::slot_for(const state::EvalContext& ctx) {
  const state::Container& c = *ctx.container;
  if (auto it = by_container_.find(c.id); it != by_container_.end()) return it->second;
  std::string key = workload_key(cfg_.key, c, ctx.pod);
  if (key.empty()) return nullptr;  // not known yet (its pod not reported): asked again next time
  if (by_container_.size() >= kMaxContainers) by_container_.clear();
  Slot* s = nullptr;
  if (auto it = slots_.find(key); it != slots_.end()) {
    s = it->second.get();
  } else if (slots_.size() >= cfg_.max_workloads) {
    refused_.fetch_add(1, std::memory_order_relaxed);
  } else {
    s = add_slot(std::make_unique<Profile>(std::move(key)));
    s->dirty = true;
  }
  by_container_.emplace(c.id, s);
  return s;
}

void Store::note_full(const std::array<std::uint64_t, kSets>& before, const Profile& p) {
  for (std::size_t i = 0; i < kSets; ++i) {
    if (p.full()[i] != before[i]) full_[i].fetch_add(p.full()[i] - before[i], std::memory_order_relaxed);
  }
}

void Store::learn_or_match(Slot& s, const state::EvalContext& ctx) {
  const event::Event& ev = *ctx.ev;
  Profile& p = *s.profile;
  const bool learning = p.phase() == Phase::kLearning;
  const std::uint64_t ts = ev.hdr.ts_ns;
  const auto before = p.full();
  bool have = false;
  bool changed = false;
  if (const auto* e = ev.as<event::ExecData>()) {
    std::string_view path =
        ctx.proc && !ctx.proc->exepath.empty() ? std::string_view(ctx.proc->exepath) : std::string_view(e->exe);
    if (path.empty()) return;
    current_fact_ = state::BaselineFact::kExe;
    if (learning) changed = p.add_exe(path, e->exe_sha256, cfg_.caps, ts);
    else have = p.has_exe(path, e->exe_sha256);
  } else if (ev.as<event::PluginData>()) {
    // A plugin's event about a process (an NVML sample of what computes on
    // the GPU): its program, as the process table knows it. A program seen
    // only this way while learning (it started before vigil) is learnt too.
    if (!ctx.proc || ctx.proc->exepath.empty()) return;
    current_fact_ = state::BaselineFact::kExe;
    if (learning) changed = p.add_exe(ctx.proc->exepath, ctx.proc->exe_sha256, cfg_.caps, ts);
    else have = p.has_exe(ctx.proc->exepath, ctx.proc->exe_sha256);
  } else if (const auto* c = ev.as<event::ConnectData>()) {
    if ((c->family != AF_INET && c->family != AF_INET6) || c->daddr.family == 0) return;
    const auto proto = static_cast<std::uint8_t>(
        c->proto == event::L4::kTcp || c->proto == event::L4::kUdp ? c->proto : event::L4::kUnknown);
    current_fact_ = state::BaselineFact::kDestination;
    const std::uint16_t port = cfg_.ephemeral_from != 0 && c->dport >= cfg_.ephemeral_from ? kEphemeralPort : c->dport;
    if (learning) {
      Destination d;
      d.prefix = static_cast<std::uint8_t>(c->daddr.family == AF_INET6 ? cfg_.v6_prefix : cfg_.v4_prefix);
      d.net = mask(c->daddr, d.prefix);
      d.port = port;
      d.proto = proto;
      changed = p.add_destination(d, cfg_.caps, ts);
    } else {
      have = p.has_destination(c->daddr, port, proto);
    }
  } else if (const auto* o = ev.as<event::OpenData>()) {
    const std::uint32_t acc = o->flags & 3u;
    if ((acc != 1 && acc != 2) || o->result < 0 || o->is_device || o->file_type == event::OpenData::kFileDirectory ||
        !watched(o->path)) {
      return;
    }
    current_fact_ = state::BaselineFact::kFile;
    if (learning) changed = p.add_file(o->path, cfg_.caps, ts);
    else have = p.has_file(o->path);
  } else if (const auto* io = ev.as<event::IoctlData>()) {
    // Only what the driver accepted (as proc.gpu.compute): a refused
    // allocation used nothing.
    if (io->rm_class == 0 || io->nr != event::nvidia::kEscRmAlloc || io->result != 0 || io->rm_status != 0) return;
    current_fact_ = state::BaselineFact::kGpuClass;
    if (learning) changed = p.add_gpu_class(io->rm_class, cfg_.caps, ts);
    else have = p.has_gpu_class(io->rm_class);
  } else {
    return;
  }
  if (learning) {
    if (changed) s.dirty = true;
    note_full(before, p);
    return;  // no answer while learning
  }
  current_answer_ = have ? state::BaselineAnswer::kIn : state::BaselineAnswer::kOut;
}

void Store::observe(const state::EvalContext& ctx) noexcept {
  current_ev_ = ctx.ev;
  current_ = nullptr;
  current_answer_ = state::BaselineAnswer::kNoValue;
  if (!ctx.ev || !ctx.container || ctx.container->id.empty()) return;
  Slot* s = slot_for(ctx);
  if (!s) return;
  current_ = s;
  Profile& p = *s->profile;
  const std::uint64_t ts = ctx.ev->hdr.ts_ns;
  if (p.first_seen_ns() == 0) {
    p.set_first_seen(ts);
    s->dirty = true;
  }
  if (p.phase() == Phase::kLearning && cfg_.learn_for_ns != 0 && ts >= p.first_seen_ns() &&
      ts - p.first_seen_ns() >= cfg_.learn_for_ns) {
    p.lock(ts, "time");
    learning_.fetch_sub(1, std::memory_order_relaxed);
    locked_.fetch_add(1, std::memory_order_relaxed);
    s->dirty = true;
  }
  learn_or_match(*s, ctx);
}

state::BaselinePhase Store::phase(const state::EvalContext& ctx) const noexcept {
  if (ctx.ev != current_ev_ || !current_) return state::BaselinePhase::kNone;
  return current_->profile->phase() == Phase::kLocked ? state::BaselinePhase::kLocked : state::BaselinePhase::kLearning;
}

std::string_view Store::workload(const state::EvalContext& ctx) const noexcept {
  if (ctx.ev != current_ev_ || !current_) return {};
  return current_->profile->key();
}

state::BaselineAnswer Store::has(const state::EvalContext& ctx, state::BaselineFact fact) const noexcept {
  if (ctx.ev != current_ev_ || !current_ || fact != current_fact_) return state::BaselineAnswer::kNoValue;
  return current_answer_;
}

bool Store::lock(std::string_view key, std::uint64_t at_ns, std::string cause) {
  auto it = slots_.find(std::string(key));
  if (it == slots_.end()) return false;
  Slot& s = *it->second;
  if (s.profile->phase() == Phase::kLocked) return true;
  s.profile->lock(at_ns, std::move(cause));
  learning_.fetch_sub(1, std::memory_order_relaxed);
  locked_.fetch_add(1, std::memory_order_relaxed);
  s.dirty = true;
  return true;
}

const Profile* Store::find(std::string_view key) const {
  auto it = slots_.find(std::string(key));
  return it == slots_.end() ? nullptr : it->second->profile.get();
}

std::vector<const Profile*> Store::profiles() const {
  std::vector<const Profile*> out;
  out.reserve(slots_.size());
  for (const auto& [k, s] : slots_) out.push_back(s->profile.get());
  std::sort(out.begin(), out.end(), [](const Profile* a, const Profile* b) { return a->key() < b->key(); });
  return out;
}

Stats Store::stats() const {
  Stats s;
  s.workloads = workloads_.load(std::memory_order_relaxed);
  s.learning = learning_.load(std::memory_order_relaxed);
  s.locked = locked_.load(std::memory_order_relaxed);
  s.workloads_refused = refused_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < kSets; ++i) s.full[i] = full_[i].load(std::memory_order_relaxed);
  s.files_refused = files_refused_.load(std::memory_order_relaxed);
  s.save_failures = save_failures_.load(std::memory_order_relaxed);
  return s;
}

std::vector<Error> Store::load() { return scan_dir(nullptr); }

std::vector<Error> Store::pick_up(std::vector<std::string>& done) { return scan_dir(&done); }

bool Store::unchanged(const Slot& s, const struct stat& st) {
  return s.ino != 0 && s.ino == st.st_ino && s.size == st.st_size && s.mtime_ns == mtime_ns(st);
}

void Store::remember(Slot& s, const struct stat& st) {
  s.ino = st.st_ino;
  s.size = st.st_size;
  s.mtime_ns = mtime_ns(st);
}

// Takes what a changed file says into slot `s` (null: a workload not known
// yet, loaded when there is room).
void Store::absorb(const std::string& path, const struct stat& st, Slot* s, std::vector<std::string>* done,
                   std::vector<Error>& errors) {
  auto p = read_profile(path, cfg_.caps);
  if (!p) {
    files_refused_.fetch_add(1, std::memory_order_relaxed);
    errors.push_back(Error::bad_input("baseline profile refused: " + p.error().message));
    if (s) remember(*s, st);  // said once, not at every scan
    return;
  }
  if (!s) {
    if (auto it = slots_.find(p->key()); it != slots_.end()) s = it->second.get();
  }
  if (s) {
    if (p->phase() == Phase::kLocked && s->profile->phase() == Phase::kLearning) {
      // Locked by `vigil baseline lock` while this store learnt: lock what
      // this store learnt (a superset of the file's), as the file says.
      lock(p->key(), p->locked_at_ns(), p->lock_cause().empty() ? "command" : p->lock_cause());
      if (done) done->push_back("locked " + p->key() + " (" + s->profile->lock_cause() + ")");
    }
  } else if (slots_.size() >= cfg_.max_workloads) {
    files_refused_.fetch_add(1, std::memory_order_relaxed);
    errors.push_back(Error::bad_input("baseline profile refused: " + path + ": already " +
                                      std::to_string(cfg_.max_workloads) + " workloads (baseline.max_workloads)"));
    return;
  } else {
    s = add_slot(std::make_unique<Profile>(std::move(*p)));
    if (done)
      done->push_back("loaded " + s->profile->key() + " (" + std::string(phase_name(s->profile->phase())) + ")");
  }
  remember(*s, st);
}

std::vector<Error> Store::scan_dir(std::vector<std::string>* done) {
  std::vector<Error> errors;
  if (cfg_.dir.empty()) return errors;
  DIR* d = opendir(cfg_.dir.c_str());
  if (!d) {
    if (errno != ENOENT) errors.push_back(Error::runtime(cfg_.dir + ": cannot read: " + std::strerror(errno)));
    return errors;
  }
  std::vector<std::string> names;
  std::size_t seen = 0;
  while (const dirent* e = readdir(d)) {
    if (++seen > kMaxDirEntries) break;
    std::string_view n = e->d_name;
    if (n.empty() || n[0] == '.' || !ends_with(n, ".json")) continue;
    names.emplace_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    const std::string path = cfg_.dir + "/" + n;
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) continue;
    auto it = by_file_.find(n);
    Slot* s = it == by_file_.end() ? nullptr : it->second;
    if (s && unchanged(*s, st)) continue;
    absorb(path, st, s, done, errors);
  }
  return errors;
}

std::vector<Error> Store::save() {
  std::vector<Error> errors;
  if (cfg_.dir.empty() || cfg_.read_only) return errors;
  for (auto& [key, s] : slots_) {
    if (!s->dirty) continue;
    const std::string path = cfg_.dir + "/" + file_name_for(key);
    // Changed on disk since this store's last look (a `vigil baseline lock`
    // not picked up yet): take its lock first, never write over it.
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0 && !unchanged(*s, st)) absorb(path, st, s.get(), nullptr, errors);
    if (Status w = write_profile(cfg_.dir, *s->profile); !w) {
      save_failures_.fetch_add(1, std::memory_order_relaxed);
      errors.push_back(w.error());
      continue;
    }
    s->dirty = false;
    if (lstat(path.c_str(), &st) == 0) remember(*s, st);
  }
  return errors;
}

}  // namespace vigil::baseline
