#include "engine/capture/flight_recorder.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "engine/capture/codec.h"
#include "engine/capture/writer.h"
#include "engine/util/safe_file.h"

namespace vigil::capture {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kFilePrefix = "vigil-flight-";
constexpr std::string_view kFileSuffix = ".vcap";
constexpr std::size_t kEntryOverhead = 64;  // bookkeeping per buffered event, for max_bytes
constexpr std::size_t kChunk = 1u << 20;    // raw bytes handed to the writer per block
constexpr int kMaxAncestors = 64;

std::string sanitize(std::string_view rule) {
  std::string out;
  for (char c : rule) {
    if (out.size() >= 40) break;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out.push_back(ok ? c : '_');
  }
  return out;
}

}  // namespace

struct FlightRecorder::Entry {
  std::uint64_t ts = 0;
  std::uint32_t pid = 0;
  std::uint32_t ppid = 0;
  std::uint32_t child_pid = 0;  // fork events
  std::uint32_t xid = 0;        // 1 for Xid events (node-wide GPU faults)
  std::uint64_t cgroup_id = 0;
  bool host = true;   // not in a container
  std::string bytes;  // the encoded event record
};

struct FlightRecorder::Cached {
  RecordData rec;
  std::uint64_t last_seen = 0;
};

struct FlightRecorder::Pending {
  enum class Mode { kPod, kContainer, kTree } mode = Mode::kTree;
  std::string path;
  std::string pod_uid;
  std::uint64_t deadline = 0;
  std::unordered_set<std::uint64_t> cgroups;    // kPod, kContainer
  std::unordered_set<std::uint32_t> tree;       // kTree: the process and its descendants
  std::unordered_set<std::uint32_t> ancestors;  // kTree: exact pids only
  std::unordered_set<std::uint32_t> procs_written;
  std::unordered_set<std::string> containers_written;
  bool pod_written = false;
  std::string records;
  std::uint32_t count = 0;
  std::uint32_t events = 0;
  std::uint64_t first_ts = 0;
  std::uint64_t last_ts = 0;
};

struct FlightRecorder::Job {
  std::string path;
  std::string records;
  std::uint64_t first_ts = 0;
  std::uint64_t last_ts = 0;
};

FlightRecorder::FlightRecorder(FlightRecorderOptions opts) : opts_(std::move(opts)) {
  if (opts_.info.vigil_version.empty() && opts_.info.hostname.empty()) {
    opts_.info = describe_host();
  }
  if (opts_.max_captures == 0) opts_.max_captures = 1;
  if (opts_.enabled) thread_ = std::thread([this] { writer_loop(); });
}

FlightRecorder::~FlightRecorder() {
  finish();
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

FlightRecorder::Stats FlightRecorder::stats() const {
  Stats s;
  s.events = events_.load();
  s.evicted = evicted_.load();
  s.captures = captures_.load();
  s.dropped = dropped_.load();
  s.failed = failed_.load();
  s.removed = removed_.load();
  s.window_bytes = window_bytes_pub_.load();
  return s;
}

void FlightRecorder::remember_state(const event::Event& ev, const state::EvalContext& ctx) {
  std::uint64_t ts = ev.hdr.ts_ns;
  if (ctx.proc) {
    auto& slot = processes_[ctx.proc->pid];
    if (!slot) slot = std::make_unique<Cached>();
    if (std::holds_alternative<std::monostate>(slot->rec) || ev.hdr.type == event::Type::kExec) {
      slot->rec = *ctx.proc;
    }
    slot->last_seen = ts;
  }
  if (ctx.container) {
    auto& slot = containers_[ctx.container->id];
    if (!slot) {
      slot = std::make_unique<Cached>();
      slot->rec = *ctx.container;
      cgroup_to_container_[ctx.container->cgroup_id] = ctx.container->id;
    }
    slot->last_seen = ts;
  }
  if (ctx.pod) {
    auto& slot = pods_[ctx.pod->uid];
    if (!slot) slot = std::make_unique<Cached>();
    const auto* old = std::get_if<state::Pod>(&slot->rec);
    if (!old || old->resource_version != ctx.pod->resource_version) slot->rec = *ctx.pod;
    slot->last_seen = ts;
  }
}

void FlightRecorder::on_container(const state::Container& c) {
  if (!opts_.enabled || finished_) return;
  auto& slot = containers_[c.id];
  if (!slot) slot = std::make_unique<Cached>();
  slot->rec = c;
  slot->last_seen = newest_ts_;
  cgroup_to_container_[c.cgroup_id] = c.id;
  prune_state(window_.empty() ? 0 : window_.front().ts);
}

void FlightRecorder::on_pod(const state::Pod& p) {
  if (!opts_.enabled || finished_) return;
  auto& slot = pods_[p.uid];
  if (!slot) slot = std::make_unique<Cached>();
  slot->rec = p;
  slot->last_seen = newest_ts_;
  prune_state(window_.empty() ? 0 : window_.front().ts);
}

void FlightRecorder::on_pod_removed(const std::string& uid) {
  // Kept until it ages out: a capture of the window may still need it.
  (void)uid;
}

void FlightRecorder::on_process(const state::Process& p) {
  if (!opts_.enabled || finished_) return;
  auto& slot = processes_[p.pid];
  if (!slot) slot = std::make_unique<Cached>();
  slot->rec = p;
  slot->last_seen = newest_ts_;
  prune_state(window_.empty() ? 0 : window_.front().ts);
}

void FlightRecorder::on_nvidia(const state::NvidiaInfo& n) {
  if (!opts_.enabled || finished_) return;
  if (nvidia_ && *nvidia_ == n) return;
  nvidia_ = n;
  for (auto& p : pending_) {
    append_nvidia(n, p->records);
    ++p->count;
  }
}

void FlightRecorder::prune_state(std::uint64_t oldest_ts) {
  auto prune = [&](auto& map) {
    if (map.size() <= opts_.max_state_entries) return;
    for (auto it = map.begin(); it != map.end();) {
      it = it->second->last_seen < oldest_ts ? map.erase(it) : std::next(it);
    }
    // Still over: everything is in the window; drop arbitrary entries to stay bounded.
    while (map.size() > opts_.max_state_entries) map.erase(map.begin());
  };
  prune(processes_);
  prune(containers_);
  prune(pods_);
  if (cgroup_to_container_.size() > opts_.max_state_entries) {
    for (auto it = cgroup_to_container_.begin(); it != cgroup_to_container_.end();) {
      it = containers_.count(it->second) ? std::next(it) : cgroup_to_container_.erase(it);
    }
    while (cgroup_to_container_.size() > opts_.max_state_entries) {
      cgroup_to_container_.erase(cgroup_to_container_.begin());
    }
  }
}

void FlightRecorder::evict(std::uint64_t now_ts) {
  while (!window_.empty()) {
    const Entry& e = window_.front();
    bool too_old = now_ts > opts_.window_ns && e.ts < now_ts - opts_.window_ns;
    if (!too_old && window_bytes_ <= opts_.max_bytes) break;
    window_bytes_ -= e.bytes.size() + kEntryOverhead;
    window_.pop_front();
    evicted_.fetch_add(1, std::memory_order_relaxed);
  }
  window_bytes_pub_.store(window_bytes_, std::memory_order_relaxed);
}

bool FlightRecorder::matches(const Pending& p, const Entry& e) const {
  if (e.xid) return true;  // GPU faults are node-wide: always part of the picture
  switch (p.mode) {
    case Pending::Mode::kPod:
    case Pending::Mode::kContainer: return p.cgroups.count(e.cgroup_id) != 0;
    case Pending::Mode::kTree:
      if (!e.host) return false;
      return p.tree.count(e.pid) || p.tree.count(e.ppid) || p.ancestors.count(e.pid);
  }
  return false;
}

void FlightRecorder::add_to_pending(Pending& p, const Entry& e) {
  if (p.mode == Pending::Mode::kTree && !e.xid) {
    if (p.tree.count(e.ppid) || p.tree.count(e.pid)) {
      p.tree.insert(e.pid);
      if (e.child_pid) p.tree.insert(e.child_pid);
    }
  }
  // The state records an event needs go in front of it, once per capture.
  if (!e.xid && p.procs_written.insert(e.pid).second) {
    auto it = processes_.find(e.pid);
    if (it != processes_.end()) {
      if (const auto* proc = std::get_if<state::Process>(&it->second->rec)) {
        append_process(*proc, p.records);
        ++p.count;
      }
    }
  }
  if (!e.host) {
    auto c = cgroup_to_container_.find(e.cgroup_id);
    if (c != cgroup_to_container_.end() && p.containers_written.insert(c->second).second) {
      auto it = containers_.find(c->second);
      if (it != containers_.end()) {
        append_record(it->second->rec, p.records);
        ++p.count;
      }
    }
  }
  p.records.append(e.bytes);
  ++p.count;
  ++p.events;
  if (p.first_ts == 0) p.first_ts = e.ts;
  p.last_ts = e.ts;
}

void FlightRecorder::on_event(const event::Event& ev, const state::EvalContext& ctx) {
  if (!opts_.enabled || finished_) return;
  events_.fetch_add(1, std::memory_order_relaxed);
  std::uint64_t ts = ev.hdr.ts_ns;
  if (ts > newest_ts_) newest_ts_ = ts;
  remember_state(ev, ctx);

  Entry e;
  e.ts = ts;
  e.pid = ev.hdr.pid;
  e.ppid = ctx.proc ? ctx.proc->ppid : ev.hdr.ppid;
  if (const auto* f = ev.as<event::ForkData>(); f && !f->is_thread) e.child_pid = f->child_pid;
  e.xid = ev.hdr.type == event::Type::kXid ? 1 : 0;
  e.cgroup_id = ev.hdr.cgroup_id;
  e.host = ctx.container == nullptr && (!ctx.proc || ctx.proc->container_id.empty());
  if (ctx.container) cgroup_to_container_[ctx.container->cgroup_id] = ctx.container->id;
  append_event(ev, e.bytes);

  // Captures collecting their "after" window.
  for (std::size_t i = 0; i < pending_.size();) {
    Pending& p = *pending_[i];
    if (ts > p.deadline) {
      complete(p);
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    if (p.mode == Pending::Mode::kPod && ctx.container && ctx.container->pod_uid == p.pod_uid) {
      p.cgroups.insert(ctx.container->cgroup_id);  // a container the pod started after the alert
    }
    if (matches(p, e)) add_to_pending(p, e);
    // A capture may not grow past the window's own memory bound.
    if (p.records.size() > opts_.max_bytes) {
      complete(p);
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    ++i;
  }

  window_bytes_ += e.bytes.size() + kEntryOverhead;
  window_.push_back(std::move(e));
  evict(newest_ts_);
  if (processes_.size() > opts_.max_state_entries || containers_.size() > opts_.max_state_entries ||
      pods_.size() > opts_.max_state_entries) {
    prune_state(window_.empty() ? 0 : window_.front().ts);
  }
}

void FlightRecorder::on_alert(const event::Event& ev, const state::EvalContext& ctx, event::Alert& alert) {
  if (!opts_.enabled || finished_) return;
  // A refusal or a response (docs/prevention.md) is recorded whatever the
  // alert's priority: the pipeline tags the alert before the taps see it.
  const bool acted = std::any_of(alert.tags.begin(), alert.tags.end(),
                                 [](const std::string& t) { return t == "prevented" || t == "responded"; });
  if (!acted && static_cast<int>(alert.priority) > static_cast<int>(opts_.min_priority)) return;
  std::size_t busy;
  {
    std::lock_guard<std::mutex> lk(mu_);
    busy = queue_.size() + (writing_ ? 1 : 0);
  }
  if (busy + pending_.size() >= opts_.max_captures) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }

  auto p = std::make_unique<Pending>();
  char name[64];
  std::snprintf(name, sizeof(name), "%020llu-%06llu-", static_cast<unsigned long long>(ev.hdr.ts_ns),
                static_cast<unsigned long long>(seq_++ % 1000000));
  p->path = (fs::path(opts_.dir) / (std::string(kFilePrefix) + name + sanitize(alert.rule) + std::string(kFileSuffix)))
                .string();
  p->deadline = ev.hdr.ts_ns + opts_.after_ns;
  if (nvidia_) {  // before the pod: its GPU allocation resolves through it
    append_nvidia(*nvidia_, p->records);
    ++p->count;
  }

  if (ctx.pod) {
    p->mode = Pending::Mode::kPod;
    p->pod_uid = ctx.pod->uid;
    for (const auto& [id, c] : containers_) {
      const auto* k = std::get_if<state::Container>(&c->rec);
      if (k && k->pod_uid == p->pod_uid) p->cgroups.insert(k->cgroup_id);
    }
    if (ctx.container) p->cgroups.insert(ctx.container->cgroup_id);
    p->cgroups.insert(ev.hdr.cgroup_id);
    append_pod(*ctx.pod, p->records);
    ++p->count;
    p->pod_written = true;
  } else if (ctx.container) {
    p->mode = Pending::Mode::kContainer;
    p->cgroups.insert(ctx.container->cgroup_id);
    p->cgroups.insert(ev.hdr.cgroup_id);
  } else {
    p->mode = Pending::Mode::kTree;
    p->tree.insert(ev.hdr.pid);
    // Ancestors (their own events only, not their other children), for how it started.
    std::uint32_t pid = ctx.proc ? ctx.proc->ppid : ev.hdr.ppid;
    for (int i = 0; i < kMaxAncestors && pid > 1; ++i) {
      if (!p->ancestors.insert(pid).second) break;
      auto it = processes_.find(pid);
      const state::Process* proc = it == processes_.end() ? nullptr : std::get_if<state::Process>(&it->second->rec);
      if (!proc) break;
      pid = proc->ppid;
    }
  }
  // The tree grows as the scan meets forks and children, so scan in time order.
  for (const Entry& e : window_) {
    if (matches(*p, e)) add_to_pending(*p, e);
  }
  alert.extra.emplace_back("capture", p->path);
  if (opts_.after_ns == 0) {
    complete(*p);
  } else {
    pending_.push_back(std::move(p));
  }
}

void FlightRecorder::complete(Pending& p) {
  auto job = std::make_unique<Job>();
  job->path = std::move(p.path);
  job->records = std::move(p.records);
  job->first_ts = p.first_ts;
  job->last_ts = p.last_ts;
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void FlightRecorder::finish() {
  if (!opts_.enabled) return;
  if (!finished_) {
    finished_ = true;
    for (auto& p : pending_) complete(*p);
    pending_.clear();
  }
  drain();
}

void FlightRecorder::drain() {
  if (!opts_.enabled) return;
  std::unique_lock<std::mutex> lk(mu_);
  idle_cv_.wait(lk, [&] { return queue_.empty() && !writing_; });
}

void FlightRecorder::writer_loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) {
      if (stop_) return;
      continue;
    }
    std::unique_ptr<Job> job = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    lk.unlock();
    write_job(*job);
    enforce_disk_limits();
    lk.lock();
    writing_ = false;
    idle_cv_.notify_all();
  }
}

void FlightRecorder::write_job(Job& job) {
  // Made 0700 if it went missing; a link at tmp is refused by the writer
  // (counted in failed_), and the rename replaces a link at job.path.
  (void)util::make_dirs(opts_.dir, util::kDirMode);
  const std::string tmp = job.path + ".tmp";
  WriterOptions wo;
  wo.info = opts_.info;
  wo.info.created_ns = describe_host().created_ns;
  wo.zstd_level = opts_.zstd_level;
  wo.block_size = kChunk;
  wo.flush_interval_ns = 0;
  auto w = CaptureWriter::open(tmp, wo);
  if (!w) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Hand the records over in chunks that end on record boundaries, so no block
  // exceeds the format's bounds whatever max_bytes is.
  std::string_view all = job.records;
  std::size_t pos = 0;
  Status st;
  while (pos < all.size() && st) {
    std::size_t start = pos;
    std::uint32_t count = 0, events = 0;
    while (pos < all.size() && (pos - start) < kChunk) {
      auto type = static_cast<std::uint8_t>(all[pos]);
      std::uint32_t len = get_u32(reinterpret_cast<const unsigned char*>(all.data()) + pos + 1);
      pos += kRecordHeaderSize + len;
      ++count;
      if (type == static_cast<std::uint8_t>(RecordType::kEvent)) ++events;
    }
    st = (*w)->write_encoded(all.substr(start, pos - start), count, events, job.first_ts, job.last_ts);
  }
  if (st) st = (*w)->close();
  if (!st || std::rename(tmp.c_str(), job.path.c_str()) != 0) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    std::remove(tmp.c_str());
    return;
  }
  captures_.fetch_add(1, std::memory_order_relaxed);
}

void FlightRecorder::enforce_disk_limits() {
  std::error_code ec;
  std::vector<std::pair<std::string, std::uint64_t>> files;
  for (fs::directory_iterator it(opts_.dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.rfind(kFilePrefix, 0) != 0 || name.size() < kFileSuffix.size() ||
        name.compare(name.size() - kFileSuffix.size(), kFileSuffix.size(), kFileSuffix) != 0) {
      continue;
    }
    std::error_code sec;
    auto size = it->file_size(sec);
    files.emplace_back(it->path().string(), sec ? 0 : size);
  }
  std::sort(files.begin(), files.end());  // names start with the zero-padded alert time
  std::uint64_t total = 0;
  for (const auto& f : files) total += f.second;
  std::size_t count = files.size();
  for (const auto& f : files) {
    if (count <= opts_.keep && total <= opts_.max_disk_bytes) break;
    if (fs::remove(f.first, ec)) removed_.fetch_add(1, std::memory_order_relaxed);
    --count;
    total -= f.second;
  }
}

}  // namespace vigil::capture
