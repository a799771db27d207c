// The one event type every source produces: the live BPF sensor, the /dev/kmsg
// reader, a plugin, or a capture file being replayed. Nothing after the sources
// can tell them apart, which is what makes replay exact and the engine testable
// without root.
//
// An Event is plain data: a common header (who did it, when, where) and one
// payload per kind. Strings are owned (std::string) so an event outlives the
// ring-buffer record it was decoded from. Every string that came from the kernel
// or another untrusted source is bounded by the source that made it.
//
// Thread-safety: none needed; an Event is a value.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "bpf/shared/event_types.h"
#include "engine/event/process_facts.h"

namespace vigil::event {

// Every event type, from the one schema table (bpf/shared/event_types.h): the
// numbers are written into ring-buffer records and capture files.
#define VIGIL_TYPE_ENUMERATOR(Cxx, C, id, ...) k##Cxx = id,
enum class Type : std::uint8_t { kUnknown = 0, VG_EVENT_TYPES(VIGIL_TYPE_ENUMERATOR) kCount };
#undef VIGIL_TYPE_ENUMERATOR

std::string_view type_name(Type t);          // "execve", "connect", ... (Falco's evt.type)
Type type_from_name(std::string_view name);  // by name or alias; kUnknown when not known

// Who and where: filled for every event. Namespace ids are the inode numbers
// of /proc/<pid>/ns/{pid,mnt,net}. cgroup_id is the cgroup v2 id (the inode
// number of the cgroup directory).
struct Header {
  std::uint64_t ts_ns = 0;  // wall-clock time, ns since the Unix epoch
  Type type = Type::kUnknown;
  std::uint32_t pid = 0;  // thread group id (userspace "pid")
  std::uint32_t tid = 0;
  std::uint32_t ppid = 0;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::uint64_t cgroup_id = 0;
  std::uint32_t pid_ns = 0;
  std::uint32_t mnt_ns = 0;
  std::uint32_t net_ns = 0;
  std::string comm;  // at most 15 bytes (TASK_COMM_LEN - 1)
};

// Payload fields are listed once, by each payload's fields(v, d): the capture
// codec, the JSON form and the rule-test reader walk that list. `v(name,
// member[, opts])` visits one field; `v.appended()` marks where fields added
// after the first capture format begin (older captures end before them).
// Options change only the JSON form.
enum FieldOpt : unsigned {
  kOmitEmpty = 1,  // an empty string is left out
  kHex = 2,        // binary bytes: written as hex under "<name>_hex"
  kNullIfMin = 4,  // INT64_MIN (not known) is written as null
};

// What an exec reports: its rows of the process facts table
// (engine/event/process_facts.h), which says what each member is.
struct ExecData {
  VG_PROCESS_FACTS(VG_FACT_MEMBER_EXEC)

  static constexpr std::string_view kKey = "exec";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
#define VIGIL_EXEC_HEAD_FIELD(name) v(#name, d.name);
#define VIGIL_EXEC_APPENDED_FIELD(T, name, init, exec, rec, opts) VG_FACT_APPENDED_##exec(v(#name, d.name, opts);)
    VG_EXEC_HEAD(VIGIL_EXEC_HEAD_FIELD)
    v.appended();
    VG_PROCESS_FACTS(VIGIL_EXEC_APPENDED_FIELD)
#undef VIGIL_EXEC_HEAD_FIELD
#undef VIGIL_EXEC_APPENDED_FIELD
  }
};

struct ForkData {
  std::uint32_t child_pid = 0;
  std::uint32_t child_tid = 0;
  bool is_thread = false;  // CLONE_THREAD: a thread, not a new process

  static constexpr std::string_view kKey = "fork";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("child_pid", d.child_pid);
    v("child_tid", d.child_tid);
    v("is_thread", d.is_thread);
  }
};

struct ExitData {
  std::int32_t exit_code = 0;  // the code passed to exit(), when not killed
  std::int32_t signal = 0;     // the signal that killed it, 0 if none

  static constexpr std::string_view kKey = "exit";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("exit_code", d.exit_code);
    v("signal", d.signal);
  }
};

// An IPv4 or IPv6 address in network byte order; IPv4 uses the first 4 bytes.
struct IpAddr {
  std::uint8_t family = 0;  // AF_INET, AF_INET6, or 0 when unset
  std::array<std::uint8_t, 16> bytes{};
  bool operator==(const IpAddr&) const = default;
};
std::string to_string(const IpAddr& a);  // "10.0.0.1", "fd00::1", "" when unset

enum class L4 : std::uint8_t { kUnknown = 0, kTcp = 1, kUdp = 2, kUnix = 3 };

// What a container's sockets sent to one destination (address, port,
// protocol) over one interval, counted per packet in the kernel
// (cgroup_skb/egress: IP packet lengths, headers included; loopback left
// out) and reported by the sensor every sensor.egress_interval_ms. The
// header names the container's cgroup; no process (packets leave from
// interrupt context too). window_bytes is what it sent to that destination
// within window_ns up to and including this interval, summed by the sensor.
struct EgressData {
  std::uint8_t family = 0;  // AF_INET, AF_INET6
  L4 proto = L4::kUnknown;
  IpAddr daddr;
  std::uint16_t dport = 0;
  std::uint64_t bytes = 0;
  std::uint64_t packets = 0;
  std::uint64_t interval_ns = 0;
  std::uint64_t window_bytes = 0;
  std::uint64_t window_ns = 0;

  static constexpr std::string_view kKey = "egress";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("family", d.family);
    v("proto", d.proto);
    v("daddr", d.daddr);
    v("dport", d.dport);
    v("bytes", d.bytes);
    v("packets", d.packets);
    v("interval_ns", d.interval_ns);
    v("window_bytes", d.window_bytes);
    v("window_ns", d.window_ns);
  }
};

struct ConnectData {
  std::uint8_t family = 0;  // AF_INET, AF_INET6, AF_UNIX
  L4 proto = L4::kUnknown;
  IpAddr saddr;
  std::uint16_t sport = 0;
  IpAddr daddr;
  std::uint16_t dport = 0;
  std::string unix_path;  // for AF_UNIX
  // The outcome where the hook can know it: 0 success, a negative errno on
  // failure, kResultUnknown when the hook fires before the outcome exists.
  static constexpr std::int64_t kResultUnknown = INT64_MIN;
  std::int64_t result = kResultUnknown;

  static constexpr std::string_view kKey = "connect";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("family", d.family);
    v("proto", d.proto);
    v("saddr", d.saddr);
    v("sport", d.sport);
    v("daddr", d.daddr);
    v("dport", d.dport);
    v("unix_path", d.unix_path, kOmitEmpty);
    v("result", d.result, kNullIfMin);
  }
};

struct OpenData {
  std::string path;         // the opened file's resolved path; the path as given when the open failed
  std::uint32_t flags = 0;  // O_* flags
  std::uint32_t mode = 0;
  std::int64_t result = 0;      // the fd, or a negative errno
  std::uint32_t dev_major = 0;  // for device nodes (0 otherwise)
  std::uint32_t dev_minor = 0;
  bool is_device = false;  // the opened file is a character/block device
  std::string raw;         // the path as given (fd.nameraw) where it differs from `path`, else empty
  // What the opened file is: kFileRegular, kFileDirectory, kFileFifo,
  // kFileDevice; kFileUnknown for a failed open (and in older captures).
  std::uint8_t file_type = 0;
  static constexpr std::uint8_t kFileUnknown = 0, kFileRegular = 1, kFileDirectory = 2, kFileFifo = 3, kFileDevice = 4;

  static constexpr std::string_view kKey = "open";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("path", d.path);
    v("flags", d.flags);
    v("mode", d.mode);
    v("result", d.result);
    v("dev_major", d.dev_major);
    v("dev_minor", d.dev_minor);
    v("is_device", d.is_device);
    v.appended();
    v("raw", d.raw, kOmitEmpty);
    v("file_type", d.file_type);
  }
};

// An NVIDIA driver call. `nr` is the escape number (cmd & 0xff); when the call
// was NV_ESC_IOCTL_XFER_CMD the sensor unwraps it and `nr` is the inner one
// (`xfer` is then true). UVM ioctls (on the nvidia-uvm major) carry the raw cmd.
struct IoctlData {
  std::int32_t fd = -1;
  std::uint32_t cmd = 0;  // the raw request number
  std::uint32_t nr = 0;   // escape number after unwrapping
  bool xfer = false;
  bool uvm = false;  // issued on the nvidia-uvm major
  std::uint32_t dev_major = 0;
  std::uint32_t dev_minor = 0;
  std::uint32_t rm_class = 0;    // NV_ESC_RM_ALLOC: the class allocated (0 otherwise)
  std::uint32_t rm_control = 0;  // NV_ESC_RM_CONTROL: the control command (0 otherwise)
  std::int64_t result = 0;       // syscall return value
  std::uint32_t rm_status = 0;   // the driver's status word, where read

  static constexpr std::string_view kKey = "ioctl";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("fd", d.fd);
    v("cmd", d.cmd);
    v("nr", d.nr);
    v("xfer", d.xfer);
    v("uvm", d.uvm);
    v("dev_major", d.dev_major);
    v("dev_minor", d.dev_minor);
    v("rm_class", d.rm_class);
    v("rm_control", d.rm_control);
    v("result", d.result);
    v("rm_status", d.rm_status);
  }
};

// Counts of NVIDIA ioctls by one process over one reporting interval.
struct GpuUsageData {
  struct Entry {
    std::uint32_t dev_major = 0;
    std::uint32_t dev_minor = 0;
    std::uint32_t nr = 0;
    std::uint64_t count = 0;
    template <class V, class Self>
    static void fields(V& v, Self& d) {
      v("dev_major", d.dev_major);
      v("dev_minor", d.dev_minor);
      v("nr", d.nr);
      v("count", d.count);
    }
  };
  std::uint64_t interval_ns = 0;
  std::vector<Entry> entries;  // bounded by the sensor

  static constexpr std::string_view kKey = "gpu_usage";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("interval_ns", d.interval_ns);
    v("entries", d.entries);
  }
};

struct XidData {
  std::string source;          // "tracepoint" or "kmsg"
  std::int32_t facility = -1;  // syslog facility of the kmsg line (0 = kernel), -1 for tracepoint
  std::int32_t level = -1;     // syslog level of the kmsg line
  std::string pci;             // "0000:3b:00.0" (the "PCI:" part of the line)
  std::uint32_t code = 0;      // the Xid number
  std::uint32_t xid_pid = 0;   // the pid the line names (0 when it names none)
  std::string xid_comm;        // the process name the line names
  std::string text;            // the message after "Xid (PCI:...): "

  static constexpr std::string_view kKey = "xid";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("source", d.source);
    v("facility", d.facility);
    v("level", d.level);
    v("pci", d.pci);
    v("code", d.code);
    v("pid", d.xid_pid);
    v("comm", d.xid_comm);
    v("text", d.text);
  }
};

struct DnsData {
  bool is_response = false;
  std::uint16_t id = 0;
  std::string name;         // the question name, lower-case, without trailing dot
  std::uint16_t qtype = 0;  // 1 A, 28 AAAA, ...
  std::uint16_t rcode = 0;
  std::vector<IpAddr> answers;  // A/AAAA answers (responses only); bounded
  IpAddr server;
  std::uint16_t server_port = 0;

  static constexpr std::string_view kKey = "dns";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("is_response", d.is_response);
    v("id", d.id);
    v("name", d.name);
    v("qtype", d.qtype);
    v("rcode", d.rcode);
    v("answers", d.answers);
    v("server", d.server);
    v("server_port", d.server_port);
  }
};

struct PayloadData {
  std::uint8_t family = 0;
  IpAddr saddr;
  std::uint16_t sport = 0;
  IpAddr daddr;
  std::uint16_t dport = 0;
  std::string bytes;  // the first bytes sent (binary-safe), bounded (default 256)
  bool truncated = false;

  static constexpr std::string_view kKey = "payload";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("family", d.family);
    v("saddr", d.saddr);
    v("sport", d.sport);
    v("daddr", d.daddr);
    v("dport", d.dport);
    v("bytes", d.bytes, kHex);
    v("truncated", d.truncated);
  }
};

struct BpfData {
  std::uint32_t cmd = 0;        // BPF_PROG_LOAD, BPF_LINK_CREATE, BPF_PROG_DETACH, ...
  std::uint32_t prog_type = 0;  // for BPF_PROG_LOAD
  std::string prog_name;
  std::int64_t result = 0;

  static constexpr std::string_view kKey = "bpf";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("cmd", d.cmd);
    v("prog_type", d.prog_type);
    v("prog_name", d.prog_name);
    v("result", d.result);
  }
};

// Which syscall of a family made an event whose type stands for several
// (symlink/symlinkat...): evt.type shows it. kNone: the type's own name.
enum class Syscall : std::uint8_t {
  kNone = 0,
  kSymlink,
  kSymlinkat,
  kLink,
  kLinkat,
  kUnlink,
  kUnlinkat,
  kRename,
  kRenameat,
  kRenameat2,
  kMkdir,
  kMkdirat,
  kRmdir,
  kChmod,
  kFchmod,
  kFchmodat,
  kDup,
  kDup2,
  kDup3,
  kInitModule,
  kFinitModule,
  kSetuid,
  kSetreuid,
  kSetresuid,
  kSetgid,
  kSetregid,
  kSetresgid,
  kAccept,
  kAccept4,
  kDeleteModule,
  kMknod,
  kMknodat,
  kCount
};
std::string_view syscall_name(Syscall s);  // "symlinkat"...; "" for kNone or out of range

inline constexpr std::int64_t kAtFdcwd = -100;  // AT_FDCWD: a path relative to the cwd

// A call on paths: symlink, link, unlink, rename, mkdir, rmdir, chmod. Paths
// are as given: relative ones are relative to `fd` (kAtFdcwd: the cwd).
struct FileOpData {
  Syscall syscall = Syscall::kNone;
  std::string path;             // symlink's target, link's and rename's oldpath, the path of the others
  std::string path2;            // symlink's linkpath, link's and rename's newpath; empty for the others
  std::int64_t fd = kAtFdcwd;   // the first path's dirfd; fchmod's fd
  std::int64_t fd2 = kAtFdcwd;  // the second path's dirfd
  std::uint32_t flags = 0;      // linkat, unlinkat, renameat2 flags
  std::uint32_t mode = 0;       // mkdir, chmod, mknod (S_IFCHR | 0666...)
  std::uint32_t dev = 0;        // mknod: the device number, Linux's encoding (makedev())
  std::int64_t result = 0;

  static constexpr std::string_view kKey = "file_op";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("syscall", d.syscall);
    v("path", d.path);
    v("path2", d.path2, kOmitEmpty);
    v("fd", d.fd);
    v("fd2", d.fd2);
    v("flags", d.flags);
    v("mode", d.mode);
    v("result", d.result);
    v.appended();
    v("dev", d.dev);
  }
};

struct PtraceData {
  std::uint32_t request = 0;  // PTRACE_* number
  std::uint32_t target = 0;   // the pid argument
  std::uint64_t addr = 0;
  std::int64_t result = 0;
  bool to_vigil = false;  // the tracee is vigil's own process (vigil.targeted)

  static constexpr std::string_view kKey = "ptrace";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("request", d.request);
    v("target", d.target);
    v("addr", d.addr);
    v("result", d.result);
    v.appended();
    v("to_vigil", d.to_vigil);
  }
};

struct SocketData {
  std::uint32_t domain = 0;  // AF_*
  std::uint32_t type = 0;    // SOCK_* with SOCK_NONBLOCK/SOCK_CLOEXEC as given
  std::uint32_t protocol = 0;
  std::int64_t result = 0;  // the new fd, or -errno

  static constexpr std::string_view kKey = "socket";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("domain", d.domain);
    v("type", d.type);
    v("protocol", d.protocol);
    v("result", d.result);
  }
};

// dup, dup2, dup3: the old fd and, for an inet socket, its endpoints (family
// 0 when the old fd is not an inet or unix socket).
struct DupData {
  Syscall syscall = Syscall::kDup;
  std::int64_t oldfd = -1;
  std::uint32_t flags = 0;  // dup3
  std::int64_t result = 0;  // the new fd, or -errno
  std::uint8_t family = 0;
  L4 proto = L4::kUnknown;
  IpAddr saddr;
  std::uint16_t sport = 0;
  IpAddr daddr;
  std::uint16_t dport = 0;

  static constexpr std::string_view kKey = "dup";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("syscall", d.syscall);
    v("oldfd", d.oldfd);
    v("flags", d.flags);
    v("result", d.result);
    v("family", d.family);
    v("proto", d.proto);
    v("saddr", d.saddr);
    v("sport", d.sport);
    v("daddr", d.daddr);
    v("dport", d.dport);
  }
};

// init_module, finit_module: a kernel module load; delete_module: an unload
// (args: the module's name).
struct ModuleData {
  Syscall syscall = Syscall::kInitModule;
  std::int64_t fd = -1;  // finit_module's fd
  std::uint32_t flags = 0;
  std::string args;  // the module's parameters
  std::int64_t result = 0;

  static constexpr std::string_view kKey = "module";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("syscall", d.syscall);
    v("fd", d.fd);
    v("flags", d.flags);
    v("args", d.args);
    v("result", d.result);
  }
};

// setuid/setgid and their re/res forms: the ids asked for (-1: unchanged;
// setuid(uid) and setgid(gid) set `effective`).
struct CredData {
  Syscall syscall = Syscall::kNone;
  std::int64_t real = -1;
  std::int64_t effective = -1;
  std::int64_t saved = -1;
  std::int64_t result = 0;

  static constexpr std::string_view kKey = "cred";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("syscall", d.syscall);
    v("real", d.real);
    v("effective", d.effective);
    v("saved", d.saved);
    v("result", d.result);
  }
};

// setns (fd, nstype) and unshare (flags): CLONE_NEW* bits.
struct NsData {
  std::int64_t fd = -1;     // setns's namespace fd
  std::uint64_t flags = 0;  // setns's nstype, unshare's flags
  std::int64_t result = 0;

  static constexpr std::string_view kKey = "ns";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("fd", d.fd);
    v("flags", d.flags);
    v("result", d.result);
  }
};

// accept, listen, bind: a socket taking connections, with its local end and
// (accept) the remote one, as the kernel holds them.
struct InboundData {
  Syscall syscall = Syscall::kNone;
  std::int64_t fd = -1;     // the listening (or bound) socket
  std::uint32_t flags = 0;  // accept4's flags, listen's backlog
  std::int64_t result = 0;  // accept: the new fd
  std::uint8_t family = 0;  // 0: not an inet or unix socket
  L4 proto = L4::kUnknown;
  IpAddr laddr;
  std::uint16_t lport = 0;
  IpAddr raddr;  // accept: the client
  std::uint16_t rport = 0;

  static constexpr std::string_view kKey = "inbound";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("syscall", d.syscall);
    v("fd", d.fd);
    v("flags", d.flags);
    v("result", d.result);
    v("family", d.family);
    v("proto", d.proto);
    v("laddr", d.laddr);
    v("lport", d.lport);
    v("raddr", d.raddr);
    v("rport", d.rport);
  }
};

// Calls known by their numbers: userfaultfd (flags), memfd_create (name,
// flags), prctl (option, arg2..arg4), io_uring_setup (entries); vigil_signal, a
// signal sent to vigil, and kill, a signal one process sends another (signal,
// target pid, si_code, target tid | group << 32, host numbering; result: 0
// delivered, 1 ignored, 2 already pending); perf_event_open
// (attr.type, attr.config, the pid argument, what it watches: 1 tracepoint,
// 2 kprobe, 3 uprobe, 4 breakpoint; result: the fd).
struct SysCallData {
  std::uint64_t a0 = 0;
  std::uint64_t a1 = 0;
  std::uint64_t a2 = 0;
  std::uint64_t a3 = 0;
  std::string name;  // memfd_create's name
  std::int64_t result = 0;

  static constexpr std::string_view kKey = "call";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("a0", d.a0);
    v("a1", d.a1);
    v("a2", d.a2);
    v("a3", d.a3);
    v("name", d.name, kOmitEmpty);
    v("result", d.result);
  }
};

// capset: the capability sets the task holds after the call (read from its
// credentials, not from the caller's buffer).
struct CapsData {
  std::uint64_t effective = 0;
  std::uint64_t permitted = 0;
  std::uint64_t inheritable = 0;
  std::int64_t result = 0;

  static constexpr std::string_view kKey = "caps";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("effective", d.effective);
    v("permitted", d.permitted);
    v("inheritable", d.inheritable);
    v("result", d.result);
  }
};

// An event from a plugin's source (plugins/include/vigil/plugin_api.h). vigil
// knows only its envelope; the data is the plugin's own encoding, which the
// plugin's extractor reads back (live and in a replay alike).
struct PluginData {
  std::string plugin;           // the plugin that made it ("nvml")
  std::string source;           // evt.source, and the `source:` of the rules that see it
  std::string name;             // the kind of event within the source ("process_sample")
  std::int32_t gpu_minor = -1;  // the NVIDIA device minor it is about; -1: none
  std::string data;             // bounded by VIGIL_PLUGIN_MAX_EVENT_DATA

  static constexpr std::string_view kKey = "plugin";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("plugin", d.plugin);
    v("source", d.source);
    v("name", d.name);
    v("gpu_minor", d.gpu_minor);
    v("data", d.data, kHex);
  }
};

// The node's GPU security posture (engine/posture), or one pod that asks for
// GPUs through its environment. Not a syscall: vigil reads the driver's,
// the toolkit's and the package database's files at start and again every
// interval, and reports when a fact changed. Tri-state facts: 1 yes, 0 no,
// -1 not known (the file is missing or does not say).
struct PostureData {
  std::string kind;                        // "node", or "pod" (a pod's env asks for GPUs it did not request)
  std::string changed;                     // node: the facts that changed, space-separated (all at start)
  std::string driver_version;              // "580.95.05"; "" not known
  std::string toolkit_version;             // "1.17.8"; "" not known
  std::string vulnerable;                  // CVEs of the bulletin table that apply, comma-separated
  std::int32_t profiling_admin_only = -1;  // RmProfilingAdminOnly
  std::int32_t accept_envvar = -1;         // accept-nvidia-visible-devices-envvar-when-unprivileged
  std::int32_t cuda_compat_hook = -1;      // the enable-cuda-compat hook runs (features.disable-... not true)
  std::string runtime;                     // the low-level runtime the toolkit runs: "runc", "crun"; "" not known
  std::string ecc;                         // "on", "off", "mixed", "unsupported"; "" not known
  std::string pod_uid;                     // pod: the pod
  std::string container;                   // pod: the container whose env asks
  std::string visible_devices;             // pod: its NVIDIA_VISIBLE_DEVICES
  // node: each GPU's ECC as the nvml plugin read it, "<index>:<uuid>:<mode>[-><pending>]",
  // comma-separated (engine/posture/ecc.h); "" not known
  std::string ecc_gpus;

  static constexpr std::string_view kKey = "posture";
  template <class V, class Self>
  static void fields(V& v, Self& d) {
    v("kind", d.kind);
    v("changed", d.changed, kOmitEmpty);
    v("driver_version", d.driver_version);
    v("toolkit_version", d.toolkit_version);
    v("vulnerable", d.vulnerable);
    v("profiling_admin_only", d.profiling_admin_only);
    v("accept_envvar", d.accept_envvar);
    v("cuda_compat_hook", d.cuda_compat_hook);
    v("runtime", d.runtime);
    v("ecc", d.ecc);
    v("pod_uid", d.pod_uid, kOmitEmpty);
    v("container", d.container, kOmitEmpty);
    v("visible_devices", d.visible_devices, kOmitEmpty);
    v.appended();
    v("ecc_gpus", d.ecc_gpus, kOmitEmpty);
  }
};

using Payload =
    std::variant<std::monostate, ExecData, ForkData, ExitData, ConnectData, OpenData, IoctlData, GpuUsageData, XidData,
                 DnsData, PayloadData, BpfData, FileOpData, PtraceData, SocketData, DupData, ModuleData, CredData,
                 NsData, InboundData, SysCallData, CapsData, PluginData, PostureData, EgressData>;

struct Event {
  Header hdr;
  Payload data;

  template <typename T>
  const T* as() const noexcept {
    return std::get_if<T>(&data);
  }
  template <typename T>
  T* as() noexcept {
    return std::get_if<T>(&data);
  }
};

}  // namespace vigil::event
