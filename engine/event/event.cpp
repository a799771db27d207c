#include "engine/event/event.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <array>
#include <utility>

#include "engine/event/alert.h"
#include "engine/event/schema.h"

namespace vigil::event {
namespace {

constexpr std::array<std::string_view, 8> kPriorityNames = {
    "Emergency", "Alert", "Critical", "Error", "Warning", "Notice", "Informational", "Debug",
};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

}  // namespace

std::string_view type_name(Type t) { return info(t).name; }

Type type_from_name(std::string_view name) { return type_named(name); }

namespace {

template <std::size_t... I>
constexpr auto payload_factories(std::index_sequence<I...>) {
  return std::array<Payload (*)(), sizeof...(I)>{+[]() -> Payload { return Payload(std::in_place_index<I>); }...};
}
constexpr auto kPayloadFactories = payload_factories(std::make_index_sequence<kPayloadKinds>());

// Syscalls Falco knows that vigil does not report. A name that becomes an event
// type must leave this list (event_test checks that none is both).
constexpr std::string_view kUnreported[] = {"socketpair",
                                            "recvfrom",
                                            "recvmsg",
                                            "recvmmsg",
                                            "sendmmsg",
                                            "shutdown",
                                            "getsockopt",
                                            "setsockopt",
                                            "read",
                                            "write",
                                            "pread",
                                            "pwrite",
                                            "readv",
                                            "writev",
                                            "preadv",
                                            "pwritev",
                                            "close",
                                            "pipe",
                                            "pipe2",
                                            "eventfd",
                                            "eventfd2",
                                            "signalfd",
                                            "timerfd_create",
                                            "inotify_init",
                                            "inotify_init1",
                                            "fcntl",
                                            "chown",
                                            "fchown",
                                            "fchownat",
                                            "lchown",
                                            "mount",
                                            "umount",
                                            "umount2",
                                            "mmap",
                                            "mmap2",
                                            "munmap",
                                            "mprotect",
                                            "brk",
                                            "chroot",
                                            "chdir",
                                            "fchdir",
                                            "seccomp",
                                            "pivot_root",
                                            "quotactl",
                                            "splice",
                                            "sendfile",
                                            "truncate",
                                            "ftruncate",
                                            "io_uring_enter",
                                            "io_uring_register",
                                            "copy_file_range",
                                            "process_vm_readv",
                                            "process_vm_writev",
                                            "switch",
                                            "container",
                                            "asyncevent",
                                            "signaldeliver",
                                            "nanosleep",
                                            "poll",
                                            "select",
                                            "epoll_wait",
                                            "futex",
                                            "getdents",
                                            "getdents64",
                                            "stat",
                                            "lstat",
                                            "fstat",
                                            "access",
                                            "faccessat",
                                            "faccessat2",
                                            "utimensat",
                                            "open_by_handle_at",
                                            "name_to_handle_at",
                                            "fsconfig",
                                            "fsopen",
                                            "fsmount",
                                            "move_mount",
                                            "open_tree",
                                            "setrlimit",
                                            "prlimit",
                                            "getrlimit",
                                            "lseek",
                                            "llseek",
                                            "flock",
                                            "semop",
                                            "semget",
                                            "semctl",
                                            "newfstatat",
                                            "setpgid",
                                            "setsid",
                                            "procinfo"};

constexpr std::array<std::string_view, static_cast<std::size_t>(Syscall::kCount)> kSyscallNames = {
    "",         "symlink",   "symlinkat", "link",        "linkat",       "unlink",        "unlinkat", "rename",
    "renameat", "renameat2", "mkdir",     "mkdirat",     "rmdir",        "chmod",         "fchmod",   "fchmodat",
    "dup",      "dup2",      "dup3",      "init_module", "finit_module", "setuid",        "setreuid", "setresuid",
    "setgid",   "setregid",  "setresgid", "accept",      "accept4",      "delete_module", "mknod",    "mknodat"};

}  // namespace

std::string_view syscall_name(Syscall s) {
  auto i = static_cast<std::size_t>(s);
  return i < kSyscallNames.size() ? kSyscallNames[i] : std::string_view();
}

Payload make_payload(Type t) { return kPayloadFactories[info(t).payload_kind](); }

bool make_payload_kind(std::size_t kind, Payload& out) {
  if (kind >= kPayloadFactories.size()) return false;
  out = kPayloadFactories[kind]();
  return true;
}

bool is_unreported_syscall(std::string_view name) noexcept {
  for (auto s : kUnreported) {
    if (s == name) return true;
  }
  return false;
}

std::span<const std::string_view> unreported_syscalls() noexcept { return kUnreported; }

std::string type_names(const TypeMask& m) {
  if (m == TypeMask::all()) return "*";
  std::string out;
  m.for_each([&](Type t) {
    if (!out.empty()) out += ", ";
    out += info(t).name;
  });
  return out;
}

std::string to_string(const IpAddr& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.family == AF_INET) {
    inet_ntop(AF_INET, a.bytes.data(), buf, sizeof(buf));
  } else if (a.family == AF_INET6) {
    inet_ntop(AF_INET6, a.bytes.data(), buf, sizeof(buf));
  }
  return buf;
}

std::string_view priority_name(Priority p) {
  auto i = static_cast<std::size_t>(p);
  return i < kPriorityNames.size() ? kPriorityNames[i] : "Warning";
}

std::optional<Priority> priority_from_name(std::string_view name) {
  for (std::size_t i = 0; i < kPriorityNames.size(); ++i) {
    if (iequals(name, kPriorityNames[i])) return static_cast<Priority>(i);
  }
  if (iequals(name, "info")) return Priority::kInformational;
  if (iequals(name, "warn")) return Priority::kWarning;
  if (iequals(name, "emerg")) return Priority::kEmergency;
  if (iequals(name, "crit")) return Priority::kCritical;
  if (iequals(name, "err")) return Priority::kError;
  return std::nullopt;
}

}  // namespace vigil::event
