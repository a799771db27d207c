#include "engine/state/procfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "engine/state/cgroup.h"
#include "engine/state/gpu.h"
#include "engine/util/parse_number.h"

namespace vigil::state {
namespace {

constexpr std::size_t kMaxSmallFile = 16 * 1024;
constexpr std::size_t kMaxCommLen = 15;
constexpr std::size_t kMaxProcPathLen = 4096;

template <typename T>
bool parse_num(std::string_view s, T* out) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
  return util::parse_whole(s, out);
}

bool parse_pid(std::string_view s, std::uint32_t* pid) {
  if (s.empty() || s.size() > 10) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return parse_num(s, pid) && *pid != 0;
}

std::string bounded(std::string s, std::size_t max) {
  if (s.size() > max) s.resize(max);
  return s;
}

}  // namespace

std::optional<std::string> read_file_bounded(const std::string& path, std::size_t max, bool* truncated) {
  // Never open anything but a regular file (a FIFO would block, a device
  // could act on open); checked again on the opened fd.
  struct stat pre {};
  if (::stat(path.c_str(), &pre) != 0 || !S_ISREG(pre.st_mode)) return std::nullopt;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return std::nullopt;
  }
  std::string out;
  out.resize(max + 1);
  std::size_t got = 0;
  while (got < max + 1) {
    ssize_t n = ::read(fd, out.data() + got, max + 1 - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (truncated) *truncated = got > max;
  out.resize(std::min(got, max));
  return out;
}

std::optional<std::string> read_link(const std::string& path) {
  char buf[kMaxProcPathLen];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf));
  if (n < 0 || static_cast<std::size_t>(n) >= sizeof(buf)) return std::nullopt;
  return std::string(buf, static_cast<std::size_t>(n));
}

std::uint32_t parse_ns_link(std::string_view link) {
  std::size_t open = link.find(":[");
  if (open == std::string_view::npos || link.empty() || link.back() != ']') return 0;
  std::uint32_t ino = 0;
  if (!parse_num(link.substr(open + 2, link.size() - open - 3), &ino)) return 0;
  return ino;
}

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  // "pid (comm) S ppid pgrp session tty_nr tpgid flags ... starttime(22) ..."
  std::size_t open = text.find('(');
  std::size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  ProcStat st;
  st.comm = bounded(std::string(text.substr(open + 1, close - open - 1)), kMaxCommLen);
  std::string_view rest = text.substr(close + 1);
  // Fields after the comm, starting at field 3 (state).
  std::vector<std::string_view> f;
  std::size_t pos = 0;
  while (pos < rest.size() && f.size() < 22) {
    while (pos < rest.size() && rest[pos] == ' ') ++pos;
    std::size_t end = rest.find(' ', pos);
    if (end == std::string_view::npos) end = rest.size();
    if (end > pos) f.push_back(rest.substr(pos, end - pos));
    pos = end;
  }
  // f[0] = state (field 3), f[1] = ppid (4), f[3] = session (6), f[4] = tty_nr (7),
  // f[19] = starttime (22).
  if (f.size() < 20) return std::nullopt;
  std::int64_t tty = 0;
  if (!parse_num(f[1], &st.ppid) || !parse_num(f[3], &st.session) || !parse_num(f[4], &tty) ||
      !parse_num(f[19], &st.start_ticks)) {
    return std::nullopt;
  }
  st.tty = static_cast<std::uint32_t>(tty);
  return st;
}

std::optional<ProcStatus> parse_proc_status(std::string_view text) {
  ProcStatus s;
  bool have_uid = false, have_gid = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = line.substr(0, colon);
    std::string_view val = line.substr(colon + 1);
    auto first_field = [](std::string_view v) {
      while (!v.empty() && (v.front() == '\t' || v.front() == ' ')) v.remove_prefix(1);
      std::size_t end = v.find_first_of("\t ");
      return end == std::string_view::npos ? v : v.substr(0, end);
    };
    if (key == "Uid") {
      have_uid = parse_num(first_field(val), &s.uid);
    } else if (key == "Gid") {
      have_gid = parse_num(first_field(val), &s.gid);
    } else if (key == "PPid") {
      (void)parse_num(first_field(val), &s.ppid);
    } else if (key == "Tgid") {
      (void)parse_num(first_field(val), &s.tgid);
    } else if (key == "CapInh" || key == "CapPrm" || key == "CapEff") {
      std::string_view v = first_field(val);
      std::uint64_t caps = 0;
      auto r = std::from_chars(v.data(), v.data() + v.size(), caps, 16);
      if (r.ec == std::errc() && r.ptr == v.data() + v.size() && !v.empty()) {
        (key == "CapInh" ? s.cap_inheritable : key == "CapPrm" ? s.cap_permitted : s.cap_effective) = caps;
      }
    } else if (key == "NSpgid") {
      std::size_t last = val.find_last_of("\t ");
      (void)parse_num(last == std::string_view::npos ? val : val.substr(last + 1), &s.vpgid);
    } else if (key == "NSpid") {
      std::size_t last = val.find_last_of("\t ");
      std::string_view v = last == std::string_view::npos ? val : val.substr(last + 1);
      (void)parse_num(v, &s.vpid);
    }
  }
  if (!have_uid || !have_gid) return std::nullopt;
  return s;
}

std::vector<std::string> parse_cmdline(std::string_view text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size() && out.size() < kMaxArgs) {
    std::size_t end = text.find('\0', pos);
    if (end == std::string_view::npos) end = text.size();
    out.emplace_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

namespace {

// What /proc/PID/stat and /proc/PID/status say: ids, capabilities, session,
// terminal, the kernel's comm, and the start time.
void copy_stat_and_status(const ProcStat& st, const ProcStatus& status, std::uint32_t pid, Process& p) {
  p.pid = pid;
  p.ppid = status.ppid != 0 ? status.ppid : st.ppid;
  p.uid = status.uid;
  p.gid = status.gid;
  p.vpid = status.vpid != 0 ? status.vpid : pid;
  p.cap_inheritable = status.cap_inheritable;
  p.cap_permitted = status.cap_permitted;
  p.cap_effective = status.cap_effective;
  p.sid = st.session;
  p.vpgid = status.vpgid;
  p.tty = st.tty;
  p.comm = st.comm;
}

// /proc/PID/comm, when it can be read, over the comm of stat.
void read_comm(const std::string& dir, Process& p) {
  if (auto c = read_file_bounded(dir + "/comm", 64)) {
    std::string comm = *c;
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    if (!comm.empty()) p.comm = bounded(std::move(comm), kMaxCommLen);
  }
}

// The program and its arguments, from /proc/PID/cmdline.
void read_cmdline(const std::string& dir, Process& p) {
  bool truncated = false;
  if (auto cmd = read_file_bounded(dir + "/cmdline", kMaxCmdlineBytes, &truncated)) {
    std::string_view text = *cmd;
    if (!text.empty() && text.back() == '\0') text.remove_suffix(1);
    std::vector<std::string> argv = parse_cmdline(text);
    p.args_truncated = truncated || argv.size() >= kMaxArgs;
    if (!argv.empty()) {
      p.exe = std::move(argv.front());
      p.args.assign(std::make_move_iterator(argv.begin() + 1), std::make_move_iterator(argv.end()));
    }
  }
}

// The program file: its path (/proc/PID/exe), whether it was run from a
// memfd, and its ELF class; the exe falls back to it, then to the comm.
void read_exe(const std::string& dir, Process& p) {
  if (auto exe = read_link(dir + "/exe")) {
    std::string e = std::move(*exe);
    static constexpr std::string_view kDeleted = " (deleted)";
    if (e.size() > kDeleted.size() && e.compare(e.size() - kDeleted.size(), kDeleted.size(), kDeleted.data()) == 0) {
      e.resize(e.size() - kDeleted.size());
    }
    // A program run from a memfd links to "/memfd:NAME (deleted)"; its exe
    // path is "memfd:NAME", as the sensor reports it at exec.
    p.exe_from_memfd = e.starts_with("/memfd:");
    if (p.exe_from_memfd) e.erase(0, 1);
    p.exepath = std::move(e);
  }
  if (p.exe.empty()) p.exe = p.exepath.empty() ? p.comm : p.exepath;
  // The ELF class of the running program (the sensor reads it at exec).
  if (auto head = read_file_bounded(dir + "/exe", 5)) {
    p.elf32 = head->size() == 5 &&
              head->compare(0, 4,
                            "\x7f"
                            "ELF") == 0 &&
              (*head)[4] == 1;
  }
}

// The working directory, the login uid and the namespaces.
void read_cwd_loginuid_namespaces(const std::string& dir, Process& p) {
  if (auto cwd = read_link(dir + "/cwd")) p.cwd = std::move(*cwd);
  if (auto lu = read_file_bounded(dir + "/loginuid", 32)) {
    std::uint32_t v = 0;
    if (parse_num(*lu, &v)) p.loginuid = v;
  }
  if (auto l = read_link(dir + "/ns/pid")) p.pid_ns = parse_ns_link(*l);
  if (auto l = read_link(dir + "/ns/mnt")) p.mnt_ns = parse_ns_link(*l);
  if (auto l = read_link(dir + "/ns/net")) p.net_ns = parse_ns_link(*l);
}

// The cgroup v2 path, its id and the container it names.
void read_cgroup(const std::string& dir, const ProcReadOptions& opt, ProcRecord& rec) {
  Process& p = rec.proc;
  if (auto cg = read_file_bounded(dir + "/cgroup", kMaxSmallFile)) {
    if (auto path = cgroup_v2_path(*cg)) {
      rec.cgroup_path = std::move(*path);
      if (!opt.cgroup_root.empty()) {
        p.cgroup_id = cgroup_id_of(opt.cgroup_root + rec.cgroup_path);
      }
      if (auto m = parse_cgroup_path(rec.cgroup_path)) p.container_id = m->id;
    }
  }
}

// One open fd (`fd_path`, linking to `target`): a socket on 0 or 1, or an
// NVIDIA device node.
void note_fd(std::uint32_t fdnum, const std::string& fd_path, const std::string& target, const ProcReadOptions& opt,
             Process& p) {
  if (fdnum <= 1 && target.rfind("socket:[", 0) == 0) {
    (fdnum == 0 ? p.stdin_is_socket : p.stdout_is_socket) = true;
    return;
  }
  // Device nodes live under /dev; stand-in nodes (test rigs) anywhere,
  // named nvidia*. Everything else (files, sockets, pipes) is skipped
  // without a stat.
  std::string_view base = target;
  base = base.substr(base.rfind('/') == std::string_view::npos ? 0 : base.rfind('/') + 1);
  bool under_dev = target.rfind("/dev/", 0) == 0;
  if (!under_dev && base.rfind("nvidia", 0) != 0) return;
  std::uint32_t major = 0, minor = 0;
  struct stat fst {};
  if (::stat(fd_path.c_str(), &fst) == 0) {
    if (!S_ISCHR(fst.st_mode)) return;  // a regular file named nvidia*
    major = ::major(fst.st_rdev);
    minor = ::minor(fst.st_rdev);
  } else if (!under_dev) {
    return;
  }
  NvidiaNode n = nvidia_node(major, minor, target, opt.nvidia);
  if (n.kind == NvidiaNodeKind::kNone) return;
  if (p.gpu_fds.size() >= kMaxGpuFds) return;
  p.gpu_fds.push_back({static_cast<std::int32_t>(fdnum), n.major, n.minor, false});
}

// Fds: sockets on 0/1 (reverse shells) and NVIDIA device nodes, and how many
// GPUs those nodes open.
void scan_fds(const std::string& dir, const ProcReadOptions& opt, Process& p) {
  const std::string fd_dir = dir + "/fd";
  DIR* d = ::opendir(fd_dir.c_str());
  if (!d) return;
  std::size_t scanned = 0;
  while (dirent* e = ::readdir(d)) {
    std::uint32_t fdnum = 0;
    if (!parse_pid(e->d_name, &fdnum) && std::strcmp(e->d_name, "0") != 0) continue;
    if (++scanned > kMaxFdsScanned) break;
    if (fdnum > INT32_MAX) continue;
    std::string fd_path = fd_dir + "/" + e->d_name;
    auto target = read_link(fd_path);
    if (!target) continue;
    note_fd(fdnum, fd_path, *target, opt, p);
  }
  ::closedir(d);
  std::sort(p.gpu_fds.begin(), p.gpu_fds.end(), [](const GpuFd& a, const GpuFd& b) { return a.fd < b.fd; });
  std::vector<std::uint32_t> minors;
  for (const auto& g : p.gpu_fds) {
    if (g.major == kNvidiaMajor && g.minor <= kNvidiaMaxGpuMinor) minors.push_back(g.minor);
  }
  std::sort(minors.begin(), minors.end());
  p.gpu_devices_opened = static_cast<std::uint32_t>(std::unique(minors.begin(), minors.end()) - minors.begin());
}

}  // namespace

std::optional<ProcRecord> read_process(const std::string& proc_root, std::uint32_t pid, const ProcReadOptions& opt) {
  const std::string dir = proc_root + "/" + std::to_string(pid);
  auto stat_text = read_file_bounded(dir + "/stat", kMaxSmallFile);
  auto status_text = read_file_bounded(dir + "/status", kMaxSmallFile);
  if (!stat_text || !status_text) return std::nullopt;
  auto st = parse_proc_stat(*stat_text);
  auto status = parse_proc_status(*status_text);
  if (!st || !status) return std::nullopt;

  ProcRecord rec;
  Process& p = rec.proc;
  copy_stat_and_status(*st, *status, pid, p);
  read_comm(dir, p);
  p.from_proc = true;
  if (opt.boot_time_ns != 0 && opt.clock_ticks > 0) {
    p.start_ts_ns = opt.boot_time_ns + st->start_ticks * (1000000000ULL / static_cast<std::uint64_t>(opt.clock_ticks));
  }
  read_cmdline(dir, p);
  read_exe(dir, p);
  read_cwd_loginuid_namespaces(dir, p);
  read_cgroup(dir, opt, rec);
  scan_fds(dir, opt, p);

  // The process may have exited while we read it: its stat must still be there.
  if (::access((dir + "/stat").c_str(), F_OK) != 0) return std::nullopt;
  return rec;
}

std::vector<std::uint32_t> list_pids(const std::string& proc_root, std::size_t max) {
  std::vector<std::uint32_t> pids;
  if (DIR* d = ::opendir(proc_root.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::uint32_t pid = 0;
      if (!parse_pid(e->d_name, &pid)) continue;
      pids.push_back(pid);
      if (pids.size() >= max) break;
    }
    ::closedir(d);
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

std::uint64_t parse_boot_time_ns(std::string_view proc_stat) {
  std::size_t pos = proc_stat.find("\nbtime ");
  if (pos == std::string_view::npos) {
    if (proc_stat.substr(0, 6) != "btime ") return 0;
    pos = 0;
  } else {
    pos += 1;
  }
  std::string_view line = proc_stat.substr(pos + 6);
  line = line.substr(0, line.find('\n'));
  std::uint64_t secs = 0;
  if (!parse_num(line, &secs) || secs > 100000000000ULL) return 0;
  return secs * 1000000000ULL;
}

}  // namespace vigil::state
