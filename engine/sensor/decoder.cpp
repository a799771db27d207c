#include "engine/sensor/decoder.h"

#include "engine/event/environ.h"

#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <utility>

#include "bpf/shared/events.h"
#include "engine/sensor/dns.h"

namespace vigil::sensor {
namespace {

std::int64_t clock_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// Reads a fixed-size body out of the record (records need not be aligned).
template <typename T>
bool read_fixed(std::span<const std::uint8_t> rec, T* out) {
  if (rec.size() < sizeof(T)) return false;
  std::memcpy(out, rec.data(), sizeof(T));
  return true;
}

// Walks the variable data after a fixed body: each take() consumes `n` bytes
// or fails when the record does not have them.
class Tail {
 public:
  Tail(std::span<const std::uint8_t> rec, std::size_t start) : rec_(rec), pos_(start) {}
  bool take(std::size_t n, std::string_view* out) {
    if (pos_ > rec_.size() || n > rec_.size() - pos_) return false;
    *out = std::string_view(reinterpret_cast<const char*>(rec_.data()) + pos_, n);
    pos_ += n;
    return true;
  }

 private:
  std::span<const std::uint8_t> rec_;
  std::size_t pos_;
};

event::IpAddr ip_from(std::uint16_t family, const std::uint8_t (&b)[16]) {
  event::IpAddr a;
  if (family == AF_INET) {
    a.family = AF_INET;
    std::copy(b, b + 4, a.bytes.begin());
  } else if (family == AF_INET6) {
    a.family = AF_INET6;
    std::copy(b, b + 16, a.bytes.begin());
  }
  return a;
}

// The record ids and the engine's types come from one table; this ties them.
#define VIGIL_SAME_ID(Cxx, C, id, ...) \
  static_assert(static_cast<int>(VG_##C) == static_cast<int>(event::Type::k##Cxx), "record id of " #C);
VG_EVENT_TYPES(VIGIL_SAME_ID)
#undef VIGIL_SAME_ID

event::L4 l4_of(std::uint8_t proto) {
  return proto == VG_L4_TCP    ? event::L4::kTcp
         : proto == VG_L4_UDP  ? event::L4::kUdp
         : proto == VG_L4_UNIX ? event::L4::kUnix
                               : event::L4::kUnknown;
}

// The socket of a vg_sockfd record: family, protocol, local and remote ends.
void sock_ends(const vg_sockfd& b, std::uint8_t& family, event::L4& proto, event::IpAddr& local, std::uint16_t& lport,
               event::IpAddr& remote, std::uint16_t& rport) {
  family = static_cast<std::uint8_t>(b.family);
  proto = l4_of(b.proto);
  local = ip_from(b.family, b.saddr);
  lport = b.sport;
  remote = ip_from(b.family, b.daddr);
  rport = b.dport;
}

// The record's VG_SC_* byte; out of range reads as none (evt.type then shows
// the type's own name).
static_assert(static_cast<int>(VG_SC_SYMLINK) == static_cast<int>(event::Syscall::kSymlink) &&
                  static_cast<int>(VG_SC_FCHMODAT) == static_cast<int>(event::Syscall::kFchmodat) &&
                  static_cast<int>(VG_SC_FINIT_MODULE) == static_cast<int>(event::Syscall::kFinitModule) &&
                  static_cast<int>(VG_SC_SETUID) == static_cast<int>(event::Syscall::kSetuid) &&
                  static_cast<int>(VG_SC_MKNODAT) + 1 == static_cast<int>(event::Syscall::kCount),
              "VG_SC_* and event::Syscall list the same calls in the same order");
event::Syscall syscall_of(std::uint8_t sc) {
  return sc < static_cast<std::uint8_t>(event::Syscall::kCount) ? static_cast<event::Syscall>(sc)
                                                                : event::Syscall::kNone;
}

Error bad(std::string what) { return Error::bad_input("sensor record: " + std::move(what)); }

}  // namespace

TimeBase TimeBase::now() {
  TimeBase tb;
  std::int64_t real = clock_ns(CLOCK_REALTIME);
  tb.boot_to_wall_ns = real - clock_ns(CLOCK_BOOTTIME);
  tb.monotonic_to_wall_ns = real - clock_ns(CLOCK_MONOTONIC);
  return tb;
}

std::uint64_t TimeBase::from_boot(std::uint64_t boot_ns) const {
  return static_cast<std::uint64_t>(static_cast<std::int64_t>(boot_ns) + boot_to_wall_ns);
}

std::uint64_t TimeBase::from_monotonic(std::uint64_t mono_ns) const {
  return static_cast<std::uint64_t>(static_cast<std::int64_t>(mono_ns) + monotonic_to_wall_ns);
}

std::string c_string(std::string_view raw) {
  auto nul = raw.find('\0');
  return std::string(nul == std::string_view::npos ? raw : raw.substr(0, nul));
}

std::string decode_dpath(std::string_view leaf_first) {
  std::vector<std::string_view> comps;
  std::size_t pos = 0;
  while (pos < leaf_first.size()) {
    auto nul = leaf_first.find('\0', pos);
    std::size_t end = nul == std::string_view::npos ? leaf_first.size() : nul;
    if (end > pos) comps.push_back(leaf_first.substr(pos, end - pos));
    pos = end + 1;
  }
  if (comps.empty()) return "/";
  std::string out;
  for (auto it = comps.rbegin(); it != comps.rend(); ++it) {
    if (*it == "/") continue;  // a filesystem root's own name
    out += '/';
    out += *it;
  }
  return out.empty() ? "/" : out;
}

std::vector<std::string> split_args(std::string_view raw) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < raw.size()) {
    auto nul = raw.find('\0', pos);
    if (nul == std::string_view::npos) {
      out.emplace_back(raw.substr(pos));
      break;
    }
    out.emplace_back(raw.substr(pos, nul - pos));
    pos = nul + 1;
  }
  return out;
}

namespace {

// One function per record body: each reads its vg_* struct and the variable
// data after it into ev.data, and sets ev.hdr.type.

// exec: the program, its arguments and directory, and the exec facts.
Status decode_exec(std::span<const std::uint8_t> rec, event::Event& ev) {
  vg_exec b{};
  if (!read_fixed(rec, &b)) return bad("exec record too short");
  Tail t(rec, sizeof(b));
  std::string_view filename, exe, args, cwd, interp, env;
  if (!t.take(b.filename_len, &filename) || !t.take(b.exe_len, &exe) || !t.take(b.args_len, &args) ||
      !t.take(b.cwd_len, &cwd) || !t.take(b.interp_len, &interp) || !t.take(b.env_len, &env))
    return bad("exec field lengths exceed the record");
  event::ExecData d;
  d.filename = c_string(filename);
  d.exe = b.exe_len ? decode_dpath(exe) : c_string(interp.empty() ? filename : interp);
  // A memfd's exe is its name alone, "memfd:NAME", as Falco gives it.
  if ((b.flags & VG_EXEC_MEMFD) && d.exe.starts_with("/memfd:")) d.exe.erase(0, 1);
  d.args = split_args(args);
  d.args_truncated = (b.flags & VG_EXEC_ARGS_TRUNC) != 0;
  d.env_truncated = (b.flags2 & VG_EXEC2_ENV_TRUNC) != 0;
  d.killed_at_exec = (b.flags2 & VG_EXEC2_KILLED) != 0;
  d.env = event::parse_environ(env, d.env_truncated);
  d.cwd = b.cwd_len ? decode_dpath(cwd) : std::string();
  // The record's major << 20 | minor, renumbered as /proc/PID/stat's
  // tty_nr (the kernel's new_encode_dev), which the /proc seed and Falco
  // use: pts/0 is 34816.
  {
    const std::uint32_t major = b.tty >> 20, minor = b.tty & 0xfffff;
    d.tty = (minor & 0xff) | (major << 8) | ((minor & ~0xffu) << 12);
  }
  d.loginuid = b.loginuid;
  d.stdin_is_socket = (b.flags & VG_EXEC_STDIN_SOCK) != 0;
  d.stdout_is_socket = (b.flags & VG_EXEC_STDOUT_SOCK) != 0;
  d.elf32 = (b.flags & VG_EXEC_ELF32) != 0;
  d.exe_from_memfd = (b.flags & VG_EXEC_MEMFD) != 0;
  d.exe_upper_layer = (b.flags & VG_EXEC_UPPER) != 0;
  d.exe_writable = (b.flags & VG_EXEC_WRITABLE) != 0;
  d.cap_effective = b.cap_effective;
  d.cap_permitted = b.cap_permitted;
  d.cap_inheritable = b.cap_inheritable;
  d.sid = b.sid;
  d.vpgid = b.vpgid;
  d.interpreted = !interp.empty();
  d.exe_ino = b.exe_ino;
  // The kernel's dev_t (major << 20 | minor) as stat's st_dev numbers it.
  d.exe_dev = makedev(b.exe_dev >> 20, b.exe_dev & 0xfffff);
  d.exe_ctime_ns = b.exe_ctime_ns;
  d.exe_mtime_ns = b.exe_mtime_ns;
  ev.hdr.type = event::Type::kExec;
  ev.data = std::move(d);
  return {};
}

// fork/clone: the child, and whether it is a thread.
Status decode_fork(std::span<const std::uint8_t> rec, event::Event& ev) {
  vg_fork b{};
  if (!read_fixed(rec, &b)) return bad("fork record too short");
  event::ForkData d;
  d.child_pid = b.child_pid;
  d.child_tid = b.child_tid;
  d.is_thread = (b.flags & VG_FORK_THREAD) != 0;
  ev.hdr.type = event::Type::kFork;
  ev.data = d;
  return {};
}

// exit: the exit code, or the signal that ended the process.
Status decode_exit(std::span<const std::uint8_t> rec, event::Event& ev) {
  vg_exit b{};
  if (!read_fixed(rec, &b)) return bad("exit record too short");
  event::ExitData d;
  std::uint32_t sig = b.exit_code & 0x7f;
  if (sig != 0) {
    d.signal = static_cast<std::int32_t>(sig);
  } else {
    d.exit_code = static_cast<std::int32_t>((b.exit_code >> 8) & 0xff);
  }
  ev.hdr.type = event::Type::kExit;
  ev.data = d;
  return {};
}

// connect: the endpoints the socket holds (an AF_UNIX path from the call).
Status decode_connect(std::span<const std::uint8_t> rec, event::Event& ev) {
  vg_connect b{};
  if (!read_fixed(rec, &b)) return bad("connect record too short");
  Tail t(rec, sizeof(b));
  std::string_view upath;
  if (b.unix_path_len > VG_UNIX_PATH_MAX || !t.take(b.unix_path_len, &upath))
    return bad("connect unix path length exceeds the record");
  event::ConnectData d;
  d.family = static_cast<std::uint8_t>(b.family);
  d.proto = l4_of(b.proto);
  d.saddr = ip_from(b.family, b.saddr);
  d.daddr = ip_from(b.family, b.daddr);
  d.sport = b.sport;
  d.dport = b.dport;
  if (b.family == AF_UNIX) {
    // Abstract names start with a NUL; show them as "@name" like ss(8).
    if (!upath.empty() && upath[0] == '\0') {
      d.unix_path = "@" + c_string(upath.substr(1));
    } else {
      d.unix_path = c_string(upath);
    }
  }
  if (b.flags & VG_CONN_HAS_RESULT) d.result = b.result;
  ev.hdr.type = event::Type::kConnect;
  ev.data = std::move(d);
  return {};
}

// open: the path as given and the file opened (its resolved path, its kind).
Status decode_open(std::span<const std::uint8_t> rec, event::Event& ev) {
  vg_open b{};
  if (!read_fixed(rec, &b)) return bad("open record too short");
  Tail t(rec, sizeof(b));
  std::string_view path, fpath;
  if (!t.take(b.path_len, &path) || !t.take(b.fpath_len, &fpath)) return bad("open field lengths exceed the record");
  event::OpenData d;
  d.path = c_string(path);
  if (b.fpath_len) {
    std::string resolved = decode_dpath(fpath);
    if (resolved != d.path) d.raw = std::exchange(d.path, std::move(resolved));
  } else if (d.path.starts_with('/') && d.path.find("/.") != std::string::npos) {
    // A failed open has no file to resolve: its fd.name is the absolute
    // path as given, normalised as Falco's is ("/srv/www/../../etc/x" is
    // /etc/x), so rules on the file it aimed at still judge it.
    std::string normal = std::filesystem::path(d.path).lexically_normal().string();
    if (!normal.empty() && normal != d.path) d.raw = std::exchange(d.path, std::move(normal));
  }
  d.flags = b.flags;
  d.mode = b.mode;
  d.result = b.result;
  d.is_device = (b.oflags & (VG_OPEN_CHR | VG_OPEN_BLK)) != 0;
  d.file_type = d.is_device                 ? event::OpenData::kFileDevice
                : (b.oflags & VG_OPEN_DIR)  ? event::OpenData::kFileDirectory
                : (b.oflags & VG_OPEN_FIFO) ? event::OpenData::kFileFifo
                : (b.oflags & VG_OPEN_REG)  ? event::OpenData::kFileRegular
                                            : event::OpenData::kFileUnknown;
  if (d.is_device) {
    d.dev_major = b.dev_major;
    d.dev_minor = b.dev_minor;
  }
  ev.hdr.type = event::Type::kOpen;
  ev.data = std::move(d);
  return {};
}

// ioctl on an NVIDIA device, sent one by one (the rest are counted).
Status decode_ioctl(std::span<const std::uint8_t> rec, event::Event& ev) {
  vg_ioctl b{};
  if (!read_fixed(rec, &b)) return bad("ioctl record too short");
  event::IoctlData d;
  d.fd = b.fd;
  d.cmd = b.cmd;
  d.nr = b.nr;
  d.xfer = (b.iflags & VG_IOCTL_XFER) != 0;
  d.uvm = (b.iflags & VG_IOCTL_UVM) != 0;
  d.dev_major = b.dev_major;
  d.dev_minor = b.dev_minor;
  d.rm_class = b.rm_class;
  d.rm_control = b.rm_control;
  d.result = b.result;
  d.rm_status = b.rm_status;
  ev.hdr.type = event::Type::kIoctl;
  ev.data = d;
  return {};
}

// An Xid from the nvidia:nvidia_dev_xid tracepoint.
Status decode_xid(std::span<const std::uint8_t> rec, event::Event& ev) {
  vg_xid b{};
  if (!read_fixed(rec, &b)) return bad("xid record too short");
  Tail t(rec, sizeof(b));
  std::string_view dev, msg;
  if (!t.take(b.dev_len, &dev) || !t.take(b.msg_len, &msg)) return bad("xid field lengths exceed the record");
  event::XidData d;
  d.source = "tracepoint";
  d.pci = c_string(dev);
  d.code = b.code;
  d.text = c_string(msg);
  ev.hdr.type = event::Type::kXid;
  ev.data = std::move(d);
  return {};
}

// A DNS message seen on port 53, parsed.
Status decode_dns(std::span<const std::uint8_t> rec, event::Event& ev) {
  vg_dns b{};
  if (!read_fixed(rec, &b)) return bad("dns record too short");
  Tail t(rec, sizeof(b));
  std::string_view msg;
  if (b.dns_len > VG_DNS_MAX || !t.take(b.dns_len, &msg)) return bad("dns length exceeds the record");
  auto parsed = parse_dns(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(msg.data()), msg.size()));
  if (!parsed) return parsed.error();
  event::DnsData d = std::move(*parsed);
  if (b.ingress) {
    d.server = ip_from(b.family, b.saddr);
    d.server_port = b.sport;
  } else {
    d.server = ip_from(b.family, b.daddr);
    d.server_port = b.dport;
  }
  ev.hdr.type = event::Type::kDns;
  ev.data = std::move(d);
  return {};
}

// The first bytes of a new TCP connection.
Status decode_payload(std::span<const std::uint8_t> rec, event::Event& ev) {
  vg_payload b{};
  if (!read_fixed(rec, &b)) return bad("payload record too short");
  Tail t(rec, sizeof(b));
  std::string_view bytes;
  if (b.data_len > VG_PAYLOAD_MAX || !t.take(b.data_len, &bytes)) return bad("payload length exceeds the record");
  event::PayloadData d;
  d.family = static_cast<std::uint8_t>(b.family);
  d.saddr = ip_from(b.family, b.saddr);
  d.daddr = ip_from(b.family, b.daddr);
  d.sport = b.sport;
  d.dport = b.dport;
  d.bytes = std::string(bytes);
  d.truncated = b.wire_len > b.data_len;
  ev.hdr.type = event::Type::kPayload;
  ev.data = std::move(d);
  return {};
}

// bpf(): the command and the program it names.
Status decode_bpf(std::span<const std::uint8_t> rec, event::Event& ev) {
  vg_bpf b{};
  if (!read_fixed(rec, &b)) return bad("bpf record too short");
  event::BpfData d;
  d.cmd = b.cmd;
  d.prog_type = b.prog_type;
  d.prog_name = c_string(std::string_view(b.prog_name, sizeof(b.prog_name)));
  d.result = b.result;
  ev.hdr.type = event::Type::kBpf;
  ev.data = std::move(d);
  return {};
}

// symlink, link, unlink, rename, mkdir, rmdir, chmod, mknod: paths as given.
Status decode_fileop(std::span<const std::uint8_t> rec, std::uint16_t type, event::Event& ev) {
  vg_fileop b{};
  if (!read_fixed(rec, &b)) return bad("file call record too short");
  Tail t(rec, sizeof(b));
  std::string_view p1, p2;
  if (!t.take(b.path_len, &p1) || !t.take(b.path2_len, &p2)) return bad("file call path lengths exceed the record");
  event::FileOpData d;
  d.syscall = syscall_of(b.syscall);
  d.path = c_string(p1);
  d.path2 = c_string(p2);
  d.fd = b.fd;
  d.fd2 = b.fd2;
  d.mode = b.mode;
  d.result = b.result;
  if (type == VG_MKNOD) {
    d.dev = b.flags;  // the record carries mknod's dev where the others carry flags
  } else {
    d.flags = b.flags;
  }
  ev.hdr.type = static_cast<event::Type>(type);
  ev.data = std::move(d);
  return {};
}

// capset: the sets asked for.
Status decode_capset(std::span<const std::uint8_t> rec, event::Event& ev) {
  vg_sys b{};
  if (!read_fixed(rec, &b)) return bad("capset record too short");
  ev.data = event::CapsData{b.a[0], b.a[1], b.a[2], b.result};
  ev.hdr.type = event::Type::kCapset;
  return {};
}

// ptrace and socket: their raw arguments.
Status decode_ptrace_or_socket(std::span<const std::uint8_t> rec, std::uint16_t type, event::Event& ev) {
  vg_sys b{};
  if (!read_fixed(rec, &b)) return bad("ptrace or socket record too short");
  if (type == VG_PTRACE) {
    ev.data = event::PtraceData{static_cast<std::uint32_t>(b.a[0]), static_cast<std::uint32_t>(b.a[1]), b.a[2],
                                b.result, b.a[3] != 0};
  } else {
    ev.data = event::SocketData{static_cast<std::uint32_t>(b.a[0]), static_cast<std::uint32_t>(b.a[1]),
                                static_cast<std::uint32_t>(b.a[2]), b.result};
  }
  ev.hdr.type = static_cast<event::Type>(type);
  return {};
}

// dup, dup2, dup3: the old fd and the socket behind it.
Status decode_dup(std::span<const std::uint8_t> rec, event::Event& ev) {
  vg_sockfd b{};
  if (!read_fixed(rec, &b)) return bad("dup record too short");
  event::DupData d;
  d.syscall = syscall_of(b.syscall);
  d.oldfd = b.fd;
  d.flags = b.flags;
  d.result = b.result;
  sock_ends(b, d.family, d.proto, d.saddr, d.sport, d.daddr, d.dport);
  ev.hdr.type = event::Type::kDup;
  ev.data = d;
  return {};
}

// init_module, finit_module, delete_module.
Status decode_module(std::span<const std::uint8_t> rec, std::uint16_t type, event::Event& ev) {
  vg_module b{};
  if (!read_fixed(rec, &b)) return bad("module record too short");
  Tail t(rec, sizeof(b));
  std::string_view args;
  if (!t.take(b.args_len, &args)) return bad("module args length exceeds the record");
  event::ModuleData d;
  d.syscall = syscall_of(b.syscall);
  d.fd = b.fd;
  d.flags = b.flags;
  d.args = c_string(args);
  d.result = b.result;
  ev.hdr.type = static_cast<event::Type>(type);
  ev.data = std::move(d);
  return {};
}

// accept, listen, bind: the socket's ends.
Status decode_inbound(std::span<const std::uint8_t> rec, std::uint16_t type, event::Event& ev) {
  vg_sockfd b{};
  if (!read_fixed(rec, &b)) return bad("socket call record too short");
  event::InboundData d;
  d.syscall = syscall_of(b.syscall);
  d.fd = b.fd;
  d.flags = b.flags;
  d.result = b.result;
  sock_ends(b, d.family, d.proto, d.laddr, d.lport, d.raddr, d.rport);
  ev.hdr.type = static_cast<event::Type>(type);
  ev.data = d;
  return {};
}

// setuid, setgid and their re/res variants: the ids asked for.
Status decode_cred(std::span<const std::uint8_t> rec, std::uint16_t type, event::Event& ev) {
  vg_sys b{};
  if (!read_fixed(rec, &b)) return bad("credential record too short");
  event::CredData d;
  d.syscall = syscall_of(b.syscall);
  // The ids as the kernel reads them (uid_t); -1 leaves one unchanged.
  auto id = [](std::uint64_t v) { return static_cast<std::int64_t>(static_cast<std::int32_t>(v)); };
  if (d.syscall == event::Syscall::kSetuid || d.syscall == event::Syscall::kSetgid) {
    d.effective = id(b.a[0]);
  } else {
    d.real = id(b.a[0]);
    d.effective = id(b.a[1]);
    if (d.syscall == event::Syscall::kSetresuid || d.syscall == event::Syscall::kSetresgid) d.saved = id(b.a[2]);
  }
  d.result = b.result;
  ev.hdr.type = static_cast<event::Type>(type);
  ev.data = d;
  return {};
}

// setns and unshare.
Status decode_ns(std::span<const std::uint8_t> rec, std::uint16_t type, event::Event& ev) {
  vg_sys b{};
  if (!read_fixed(rec, &b)) return bad("namespace record too short");
  event::NsData d;
  if (type == VG_SETNS) {
    d.fd = static_cast<std::int32_t>(b.a[0]);
    d.flags = static_cast<std::uint32_t>(b.a[1]);
  } else {
    d.flags = b.a[0];
  }
  d.result = b.result;
  ev.hdr.type = static_cast<event::Type>(type);
  ev.data = d;
  return {};
}

// The calls reported by their raw arguments and one string.
Status decode_syscall(std::span<const std::uint8_t> rec, std::uint16_t type, event::Event& ev) {
  vg_sys b{};
  if (!read_fixed(rec, &b)) return bad("call record too short");
  Tail t(rec, sizeof(b));
  std::string_view name;
  if (!t.take(b.str_len, &name)) return bad("call string length exceeds the record");
  event::SysCallData d;
  d.a0 = b.a[0];
  d.a1 = b.a[1];
  d.a2 = b.a[2];
  d.a3 = b.a[3];
  d.name = c_string(name);
  d.result = b.result;
  ev.hdr.type = static_cast<event::Type>(type);
  ev.data = std::move(d);
  return {};
}

// The common header of every record (all but its type).
void fill_header(const vg_hdr& h, const TimeBase& tb, event::Event& ev) {
  ev.hdr.ts_ns = tb.from_boot(h.ts_ns);
  ev.hdr.pid = h.pid;
  ev.hdr.tid = h.tid;
  ev.hdr.ppid = h.ppid;
  ev.hdr.uid = h.uid;
  ev.hdr.gid = h.gid;
  ev.hdr.cgroup_id = h.cgroup_id;
  ev.hdr.pid_ns = h.pid_ns;
  ev.hdr.mnt_ns = h.mnt_ns;
  ev.hdr.net_ns = h.net_ns;
  ev.hdr.comm = c_string(std::string_view(h.comm, std::min<std::size_t>(sizeof(h.comm), 15)));
}

}  // namespace

// The header, then the body by its type.
Result<event::Event> decode_record(std::span<const std::uint8_t> rec, const TimeBase& tb) {
  vg_hdr h{};
  if (!read_fixed(rec, &h)) return bad("shorter than the header (" + std::to_string(rec.size()) + " bytes)");
  if (h.abi != VG_ABI_VERSION)
    return bad("ABI version " + std::to_string(h.abi) + ", expected " + std::to_string(VG_ABI_VERSION));
  if (h.len < sizeof(vg_hdr) || h.len > rec.size())
    return bad("length " + std::to_string(h.len) + " does not fit the " + std::to_string(rec.size()) +
               " bytes received");
  rec = rec.first(h.len);

  event::Event ev;
  fill_header(h, tb, ev);

  // Every record id of the schema needs a case here: a new row in
  // bpf/shared/event_types.h without one fails the build (-Wswitch-enum).
  Status st;
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch-enum"
  switch (static_cast<enum vg_type>(h.type)) {
    case VG_EXEC: st = decode_exec(rec, ev); break;
    case VG_FORK: st = decode_fork(rec, ev); break;
    case VG_EXIT: st = decode_exit(rec, ev); break;
    case VG_CONNECT: st = decode_connect(rec, ev); break;
    case VG_OPEN: st = decode_open(rec, ev); break;
    case VG_IOCTL: st = decode_ioctl(rec, ev); break;
    case VG_XID: st = decode_xid(rec, ev); break;
    case VG_DNS: st = decode_dns(rec, ev); break;
    case VG_PAYLOAD: st = decode_payload(rec, ev); break;
    case VG_BPF: st = decode_bpf(rec, ev); break;
    case VG_SYMLINK:
    case VG_LINK:
    case VG_UNLINK:
    case VG_RENAME:
    case VG_MKDIR:
    case VG_RMDIR:
    case VG_CHMOD:
    case VG_MKNOD: st = decode_fileop(rec, h.type, ev); break;
    case VG_CAPSET: st = decode_capset(rec, ev); break;
    case VG_PTRACE:
    case VG_SOCKET: st = decode_ptrace_or_socket(rec, h.type, ev); break;
    case VG_DUP: st = decode_dup(rec, ev); break;
    case VG_DELETE_MODULE:
    case VG_MODULE: st = decode_module(rec, h.type, ev); break;
    case VG_ACCEPT:
    case VG_LISTEN:
    case VG_BIND: st = decode_inbound(rec, h.type, ev); break;
    case VG_SETUID:
    case VG_SETGID: st = decode_cred(rec, h.type, ev); break;
    case VG_SETNS:
    case VG_UNSHARE: st = decode_ns(rec, h.type, ev); break;
    case VG_VIGIL_SIGNAL:
    case VG_KILL:
    case VG_PERF_EVENT_OPEN:
    case VG_USERFAULTFD:
    case VG_MEMFD_CREATE:
    case VG_PRCTL:
    case VG_IO_URING_SETUP: st = decode_syscall(rec, h.type, ev); break;
    case VG_GPU_USAGE:    // read from the usage map, never sent as a record
    case VG_PLUGIN:       // made by plugins in user space, never by the kernel
    case VG_GPU_POSTURE:  // made by vigil from the host's files (engine/posture), never by the kernel
    case VG_EGRESS:       // read from the egress map, never sent as a record
    default: return bad("unknown type " + std::to_string(h.type));
  }
#pragma GCC diagnostic pop
  if (!st) return st.error();
  return ev;
}

}  // namespace vigil::sensor
