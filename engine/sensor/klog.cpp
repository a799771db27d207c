#include "engine/sensor/klog.h"

#include <sys/klog.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "engine/sensor/kmsg.h"
#include "engine/util/parse_number.h"

namespace vigil::sensor {
namespace {

// syslog(2) actions (linux/syslog.h is not exported to user space).
constexpr int kReadAll = 3;
constexpr int kSizeBuffer = 10;
// The kernel's log buffer is 2^CONFIG_LOG_BUF_SHIFT bytes (up to 32 MiB);
// a larger answer is not believed.
constexpr int kMaxBuffer = 32 << 20;

}  // namespace

std::optional<KlogLine> parse_klog_line(std::string_view line) {
  // "<6>[ 1234.567890] text": priority, then the timestamp padded to 5 digits.
  if (line.size() < 3 || line[0] != '<') return std::nullopt;
  auto gt = line.find('>');
  if (gt == std::string_view::npos || gt > 5) return std::nullopt;
  std::uint32_t pri = 0;
  if (!util::parse_whole(line.substr(1, gt - 1), &pri)) return std::nullopt;
  std::string_view rest = line.substr(gt + 1);
  if (rest.empty() || rest[0] != '[') return std::nullopt;
  auto close = rest.find(']');
  if (close == std::string_view::npos || close > 32) return std::nullopt;
  std::string_view ts = rest.substr(1, close - 1);
  while (!ts.empty() && ts.front() == ' ') ts.remove_prefix(1);
  auto dot = ts.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::uint64_t sec = 0, frac = 0;
  std::string_view frac_s = ts.substr(dot + 1);
  if (!util::parse_whole(ts.substr(0, dot), &sec) || frac_s.size() != 6 || !util::parse_whole(frac_s, &frac))
    return std::nullopt;
  if (sec > (UINT64_MAX / 1000000) - 1) return std::nullopt;
  KlogLine l;
  l.facility = pri >> 3;
  l.level = pri & 7;
  l.ts_us = sec * 1000000 + frac;
  std::string_view msg = rest.substr(close + 1);
  if (!msg.empty() && msg.front() == ' ') msg.remove_prefix(1);
  l.message = msg;
  return l;
}

KlogNews klog_news(std::string_view text, KlogCursor& c) {
  KlogNews out;
  std::vector<KlogLine> all;
  for (std::size_t pos = 0; pos < text.size();) {
    auto nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (auto l = parse_klog_line(line)) all.push_back(*l);
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  if (all.empty()) return out;
  if (!c.primed) {
    // The first read sets the position: only lines written after it count.
    c.primed = true;
    c.last_ts_us = all.back().ts_us;
    c.at_last = static_cast<std::uint32_t>(
        std::count_if(all.begin(), all.end(), [&](const KlogLine& l) { return l.ts_us == c.last_ts_us; }));
    return out;
  }
  out.gap = c.last_ts_us > 0 && all.front().ts_us > c.last_ts_us;
  std::uint32_t same = 0;
  for (const KlogLine& l : all) {
    if (l.ts_us < c.last_ts_us) continue;
    if (l.ts_us == c.last_ts_us && same++ < c.at_last) continue;
    out.lines.push_back(l);
  }
  if (!out.lines.empty()) {
    const std::uint64_t last = out.lines.back().ts_us;
    const auto at = static_cast<std::uint32_t>(
        std::count_if(all.begin(), all.end(), [&](const KlogLine& l) { return l.ts_us == last; }));
    c.last_ts_us = last;
    c.at_last = at;
  }
  return out;
}

Result<std::unique_ptr<KlogSource>> KlogSource::open(std::chrono::milliseconds interval, int* open_errno) {
  std::unique_ptr<KlogSource> s(new KlogSource());
  if (int err = s->read_buffer(); err < 0) {
    if (open_errno) *open_errno = -err;
    return Error::runtime(std::string("sensor: syslog(2) READ_ALL: ") + std::strerror(-err));
  }
  klog_news(std::string_view(s->buf_.data(), s->buf_.size()), s->cursor_);
  if (s->buf_.empty()) s->cursor_.primed = true;  // an empty log: every line to come is new
  if (!s->cursor_.primed && !s->buf_.empty()) {
    return Error::runtime("sensor: the kernel log has no timestamps (printk.time=0): its lines cannot be ordered");
  }
  s->timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (s->timer_fd_ < 0) {
    if (open_errno) *open_errno = errno;
    return Error::runtime(std::string("sensor: timerfd: ") + std::strerror(errno));
  }
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::max(interval, std::chrono::milliseconds(10)));
  itimerspec its{};
  its.it_interval.tv_sec = static_cast<time_t>(ns.count() / 1000000000);
  its.it_interval.tv_nsec = static_cast<long>(ns.count() % 1000000000);
  its.it_value = its.it_interval;
  timerfd_settime(s->timer_fd_, 0, &its, nullptr);
  return s;
}

KlogSource::~KlogSource() {
  if (timer_fd_ >= 0) ::close(timer_fd_);
}

int KlogSource::read_buffer() {
  int size = klogctl(kSizeBuffer, nullptr, 0);
  if (size < 0) return -errno;
  size = std::clamp(size, 4096, kMaxBuffer);
  buf_.resize(static_cast<std::size_t>(size));
  const int n = klogctl(kReadAll, buf_.data(), size);
  if (n < 0) return -errno;
  buf_.resize(static_cast<std::size_t>(n));
  return n;
}

Result<std::size_t> KlogSource::poll(std::size_t budget, const Emit& emit) {
  (void)budget;  // Xid lines are few: a read hands over what is new
  if (!failure_.empty()) return Error::runtime(failure_);
  std::uint64_t ticks = 0;
  if (::read(timer_fd_, &ticks, sizeof(ticks)) != static_cast<ssize_t>(sizeof(ticks))) return std::size_t{0};
  if (int err = read_buffer(); err < 0) {
    failure_ = std::string("syslog(2) READ_ALL: ") + std::strerror(-err);
    return Error::runtime(failure_);
  }
  const bool was_primed = cursor_.primed;
  KlogNews news = klog_news(std::string_view(buf_.data(), buf_.size()), cursor_);
  if (was_primed && news.gap) ++lost_;
  std::size_t n = 0;
  for (const KlogLine& l : news.lines) {
    if (auto ev = xid_event(l.facility, l.level, l.ts_us, l.message, tb_)) {
      emit(std::move(*ev));
      ++n;
    }
  }
  return n;
}

source::Drops KlogSource::drops() const {
  source::Drops d;
  d.add("overwritten", lost_);
  return d;
}

}  // namespace vigil::sensor
