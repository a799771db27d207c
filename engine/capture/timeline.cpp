#include "engine/capture/timeline.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <streambuf>
#include <type_traits>

#include "engine/capture/event_json.h"
#include "engine/event/nvidia.h"
#include "engine/event/schema.h"
#include "engine/util/safe_file.h"

namespace vigil::capture {
namespace {

// An output stream buffer over a descriptor it owns (the timeline file, opened
// by util::open_for_write).
class FdBuf final : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd) { setp(buf_.data(), buf_.data() + buf_.size()); }
  ~FdBuf() override { (void)close(); }
  // Writes what is buffered and closes; false if anything failed.
  bool close() {
    if (fd_ < 0) return ok_;
    ok_ = drain() && ok_;
    if (::close(fd_) != 0) ok_ = false;
    fd_ = -1;
    return ok_;
  }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const char* p = pbase();
    while (p < pptr()) {
      const ssize_t n = ::write(fd_, p, static_cast<std::size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ok_ = false;
        return false;
      }
      p += n;
    }
    setp(buf_.data(), buf_.data() + buf_.size());
    return true;
  }

  int fd_;
  bool ok_ = true;
  std::array<char, 1 << 16> buf_{};
};

std::string hex(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof(b), "0x%x", v);
  return b;
}

// Length of the valid UTF-8 sequence at s[i], or 0 when invalid.
std::size_t utf8_len(std::string_view s, std::size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  }
  return n;
}

}  // namespace

std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof(b), "\\u%04x", c);
      out.append(b);
      ++i;
    } else if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
    } else if (std::size_t n = utf8_len(s, i); n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out.append("\\ufffd");  // not UTF-8: the replacement character
      ++i;
    }
  }
  out.push_back('"');
  return out;
}

TimelineBuilder::TimelineBuilder(TimelineOptions opts) : opts_(opts) {}

void TimelineBuilder::push(std::string json) {
  if (events_.size() >= opts_.max_events) {
    ++dropped_;
    return;
  }
  events_.push_back(std::move(json));
}

double TimelineBuilder::rel_us(std::uint64_t ts) {
  if (ts < start_ns_) return 0;
  return static_cast<double>(ts - start_ns_) / 1000.0;
}

void TimelineBuilder::add(const RecordData& rec) {
  if (const auto* ev = std::get_if<event::Event>(&rec)) {
    add_event(*ev);
  } else if (const auto* p = std::get_if<state::Process>(&rec)) {
    if (!p->container_id.empty()) container_of_pid_[p->pid] = p->container_id;
  } else if (const auto* c = std::get_if<state::Container>(&rec)) {
    cgroup_container_[c->cgroup_id] = c->id;
    if (!c->pod_uid.empty()) container_pod_[c->id] = c->pod_uid;
  } else if (const auto* pod = std::get_if<state::Pod>(&rec)) {
    pod_names_[pod->uid] = pod->ns + "/" + pod->name;
  }
}

int TimelineBuilder::track_for(const event::Event& ev) {
  std::string container;
  if (auto it = cgroup_container_.find(ev.hdr.cgroup_id); it != cgroup_container_.end()) {
    container = it->second;
  } else if (auto p = container_of_pid_.find(ev.hdr.pid); p != container_of_pid_.end()) {
    container = p->second;
  }
  std::string key, label;
  if (container.empty()) {
    key = "host";
    label = "host";
  } else if (auto pod = container_pod_.find(container); pod != container_pod_.end()) {
    key = "pod " + pod->second;
    auto name = pod_names_.find(pod->second);
    label = "pod " + (name != pod_names_.end() ? name->second : pod->second);
  } else {
    key = "container " + container;
    label = "container " + container.substr(0, 12);
  }
  auto [it, fresh] = tracks_.emplace(key, static_cast<int>(tracks_.size()) + 1);
  if (fresh) {
    push(R"({"ph":"M","name":"process_name","pid":)" + std::to_string(it->second) + R"(,"args":{"name":)" +
         json_quote(label) + "}}");
  }
  return it->second;
}

void TimelineBuilder::name_thread(int track, std::uint32_t pid, const std::string& comm) {
  std::uint64_t key = (static_cast<std::uint64_t>(track) << 32) | pid;
  auto [it, fresh] = named_threads_.emplace(key, true);
  if (!fresh) return;
  push(R"({"ph":"M","name":"thread_name","pid":)" + std::to_string(track) + ",\"tid\":" + std::to_string(pid) +
       R"(,"args":{"name":)" + json_quote(comm + " (" + std::to_string(pid) + ")") + "}}");
}

void TimelineBuilder::instant(const event::Event& ev, int track, const std::string& name, const char* cat,
                              const std::string& args, char scope) {
  char ts[48];
  std::snprintf(ts, sizeof(ts), "%.3f", rel_us(ev.hdr.ts_ns));
  std::string j = R"({"ph":"i","s":")" + std::string(1, scope) + R"(","name":)" + json_quote(name) + R"(,"cat":")" +
                  cat + R"(","ts":)" + ts + ",\"pid\":" + std::to_string(track) +
                  ",\"tid\":" + std::to_string(ev.hdr.pid);
  if (!args.empty()) j += ",\"args\":" + args;
  j += "}";
  push(std::move(j));
}

void TimelineBuilder::close_span(std::uint32_t pid, std::uint64_t end) {
  auto it = open_.find(pid);
  if (it == open_.end()) return;
  const Span& s = it->second;
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%.3f,\"dur\":%.3f", rel_us(s.start),
                end > s.start ? static_cast<double>(end - s.start) / 1000.0 : 0.0);
  push(R"({"ph":"X","name":)" + json_quote(s.name) + R"(,"cat":"exec","ts":)" + buf +
       ",\"pid\":" + std::to_string(s.track) + ",\"tid\":" + std::to_string(pid) + ",\"args\":" + s.args + "}");
  open_.erase(it);
}

void TimelineBuilder::add_event(const event::Event& ev) {
  using namespace event;
  std::uint64_t ts = ev.hdr.ts_ns;
  if (start_ns_ == 0 || (ts != 0 && ts < start_ns_)) start_ns_ = ts;
  if (ts > last_ns_) last_ns_ = ts;
  if (ev.hdr.type == Type::kXid) {
    const auto* x = ev.as<XidData>();
    if (!x) return;
    int track = track_for(ev);
    instant(ev, track, "Xid " + std::to_string(x->code) + " on " + x->pci, "gpu_xid",
            "{\"code\":" + std::to_string(x->code) + ",\"pci\":" + json_quote(x->pci) +
                ",\"pid\":" + std::to_string(x->xid_pid) + ",\"text\":" + json_quote(x->text) + "}",
            'g');
    return;
  }
  int track = track_for(ev);
  name_thread(track, ev.hdr.pid, ev.hdr.comm);
  const std::string category(event::info(ev.hdr.type).category);
  event::visit_payload(ev.data, [&](const auto& d) {
    using T = std::decay_t<decltype(d)>;
    if constexpr (std::is_same_v<T, ExecData>) {
      close_span(ev.hdr.pid, ts);
      std::string cmdline;
      for (const auto& a : d.args) {
        if (!cmdline.empty()) cmdline += ' ';
        if (cmdline.size() > 512) break;
        cmdline += a;
      }
      Span s;
      s.start = ts;
      s.name = d.exe.empty() ? d.filename : d.exe;
      s.track = track;
      s.args = "{\"cmdline\":" + json_quote(cmdline) + ",\"cwd\":" + json_quote(d.cwd) +
               ",\"uid\":" + std::to_string(ev.hdr.uid) + "}";
      open_[ev.hdr.pid] = std::move(s);
    } else if constexpr (std::is_same_v<T, ExitData>) {
      close_span(ev.hdr.pid, ts);
      instant(ev, track,
              "exit " + std::to_string(d.exit_code) + (d.signal ? " (signal " + std::to_string(d.signal) + ")" : ""),
              "exit", "");
    } else if constexpr (std::is_same_v<T, ForkData>) {
      if (!d.is_thread) instant(ev, track, "fork " + std::to_string(d.child_pid), "fork", "");
    } else if constexpr (std::is_same_v<T, ConnectData>) {
      std::string to = d.unix_path.empty() ? ip_port(d.daddr, d.dport) : d.unix_path;
      instant(ev, track, "connect " + to, "net",
              "{\"result\":" +
                  (d.result == ConnectData::kResultUnknown ? std::string("null") : std::to_string(d.result)) + "}");
    } else if constexpr (std::is_same_v<T, OpenData>) {
      bool gpu = d.dev_major == nvidia::kMajor || d.path.find("nvidia") != std::string::npos;
      instant(ev, track, "open " + d.path, gpu ? "gpu" : "file", "{\"result\":" + std::to_string(d.result) + "}");
    } else if constexpr (std::is_same_v<T, IoctlData>) {
      std::string name(d.uvm ? nvidia::uvm_ioctl_name(d.cmd) : nvidia::escape_name(d.nr));
      if (name.empty()) name = hex(d.uvm ? d.cmd : d.nr);
      std::string args = "{\"fd\":" + std::to_string(d.fd) + ",\"result\":" + std::to_string(d.result);
      if (d.rm_class) {
        std::string cls(nvidia::class_name(d.rm_class));
        args += ",\"class\":" + json_quote(cls.empty() ? hex(d.rm_class) : cls);
      }
      if (d.rm_control) {
        std::string ctl(nvidia::control_name(d.rm_control));
        args += ",\"control\":" + json_quote(ctl.empty() ? hex(d.rm_control) : ctl);
      }
      instant(ev, track, "ioctl " + name, "gpu", args + "}");
    } else if constexpr (std::is_same_v<T, GpuUsageData>) {
      std::uint64_t total = 0;
      for (const auto& e : d.entries) total += e.count;
      instant(ev, track, "gpu ioctls x" + std::to_string(total), "gpu",
              "{\"interval_ns\":" + std::to_string(d.interval_ns) + "}");
    } else if constexpr (std::is_same_v<T, DnsData>) {
      instant(ev, track, std::string(d.is_response ? "dns answer " : "dns query ") + d.name, "dns", "");
    } else if constexpr (std::is_same_v<T, PayloadData>) {
      instant(ev, track, "first bytes to " + ip_port(d.daddr, d.dport), "net", "");
    } else {
      // Every other event: its evt.type and summary, in the schema's category.
      instant(ev, track, std::string(event::type_name(ev.hdr.type)) + " " + event_summary(ev), category.c_str(), "");
    }
  });
}

void TimelineBuilder::add_alert(const event::Event& ev, const event::Alert& alert) {
  int track = track_for(ev);
  name_thread(track, ev.hdr.pid, ev.hdr.comm);
  char ts[48];
  std::snprintf(ts, sizeof(ts), "%.3f", rel_us(alert.time_ns ? alert.time_ns : ev.hdr.ts_ns));
  std::string tags = "[";
  for (std::size_t i = 0; i < alert.tags.size(); ++i) {
    if (i) tags += ',';
    tags += json_quote(alert.tags[i]);
  }
  tags += "]";
  push(R"({"ph":"i","s":"p","cname":"terrible","cat":"alert","name":)" + json_quote("ALERT " + alert.rule) +
       ",\"ts\":" + ts + ",\"pid\":" + std::to_string(track) + ",\"tid\":" + std::to_string(ev.hdr.pid) +
       ",\"args\":{\"rule\":" + json_quote(alert.rule) +
       ",\"priority\":" + json_quote(event::priority_name(alert.priority)) + ",\"output\":" + json_quote(alert.output) +
       ",\"tags\":" + tags + ",\"uuid\":" + json_quote(alert.uuid) + "}}");
}

Status TimelineBuilder::write(std::ostream& out) {
  std::vector<std::uint32_t> pids;
  for (const auto& [pid, span] : open_) pids.push_back(pid);
  for (std::uint32_t pid : pids) close_span(pid, last_ns_);
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"start_ns\":" << start_ns_ << ",\"dropped_events\":" << dropped_
      << "},\"traceEvents\":[\n";
  for (std::size_t i = 0; i < events_.size(); ++i) {
    out << events_[i] << (i + 1 < events_.size() ? ",\n" : "\n");
  }
  out << "]}\n";
  if (!out) return Error::runtime("timeline: write failed");
  return {};
}

Status TimelineBuilder::write_file(const std::string& path) {
  auto fd = util::open_for_write(path, util::OpenMode::kTruncate, util::kCaptureMode);
  if (!fd) return Error{fd.error().kind, "timeline: " + fd.error().message};
  FdBuf buf(*fd);
  std::ostream out(&buf);
  Status s = write(out);
  out.flush();
  const bool closed = buf.close();
  if (!s || !out || !closed) return Error::runtime("timeline: writing " + path + " failed");
  return {};
}

}  // namespace vigil::capture
