// Fills the identity facts of an exec event (event::ExecData: exe_sha256,
// exe_build_id, exe_known_as, exe_class, exe_deleted, exe_name_mismatch).
//
// Identity is decided once per distinct file (FileIdentityCache). The exec
// record carries the program's inode (device, inode number, ctime), so an
// exec of a file identified before costs a lookup and a readlink (deleted or
// not), with no read of the file. A new file is read through
// <proc_root>/<pid>/exe, which reaches it across mount namespaces, memfds and
// deleted files included, while the process lives; the link must name the
// same base name as the exec's path, else the process has moved on. When the
// process is gone already, the exec's path is opened inside its root (its
// parent's when it is gone too, then that of the process its mount namespace
// was first learnt from, or the host's for host processes; symbolic links
// resolved inside that root) and taken only when it is the inode the kernel
// ran (same inode number and ctime). A program the kernel killed at exec is
// gone at once, and its parent may be outside the container (`kubectl exec`):
// the container's first process usually still lives.
//
// The shells and interpreters known at start are the host's (learn_host());
// a container's own are learnt the first time a process of its mount
// namespace execs (at most max_roots namespaces remembered).
//
// Not identified (stats().raced): a memfd or deleted file whose process is
// gone before vigil reads the exec, a path replaced meanwhile.
//
// Thread-safety: owned by one thread (the sensor's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/event/event.h"
#include "engine/ident/file_identity.h"
#include "engine/ident/known.h"
#include "engine/util/lru.h"

namespace vigil::ident {

struct Options {
  std::string proc_root = "/proc";
  std::string host_root = "/";
  std::size_t cache_entries = 4096;            // distinct program files remembered
  std::uint64_t max_hash_bytes = 64ull << 20;  // bytes of a file hashed (SHA-256)
  std::size_t max_roots = 1024;                // container mount namespaces remembered
};

struct Stats {
  std::uint64_t identified = 0;  // execs given an identity
  std::uint64_t raced = 0;       // the process was gone or had moved on
  std::uint64_t cache_hits = 0;
  std::uint64_t cache_misses = 0;  // files read and hashed
  std::uint64_t roots_learnt = 0;  // root directories searched for shells/interpreters
  std::size_t known = 0;           // shell/interpreter identities known
};

// Whether the base name of argv[0] (or, when it is "busybox", argv[1]) is a
// busybox applet that is a shell (sh, ash, hush, bash).
bool busybox_runs_shell(const event::ExecData& ed);

class ExeIdentifier {
 public:
  explicit ExeIdentifier(Options opt);
  ~ExeIdentifier();
  ExeIdentifier(const ExeIdentifier&) = delete;
  ExeIdentifier& operator=(const ExeIdentifier&) = delete;

  // Learns the shells and interpreters of host_root, and takes vigil's own
  // mount namespace as the host's.
  void learn_host();
  // Fills ev's ExecData identity facts (no-op for other events).
  void enrich(event::Event& ev);
  Stats stats() const;

  const KnownPrograms& known() const { return known_; }

 private:
  void learn_container_root(const event::Header& h);
  int open_exe(const event::Event& ev, const event::ExecData& ed, bool& deleted);
  Options opt_;
  FileIdentityCache cache_;
  KnownPrograms known_;
  // Mount namespace -> the process its root was learnt from.
  util::LruMap<std::uint32_t, std::uint32_t> roots_;
  std::uint32_t host_mnt_ns_ = 0;
  Stats stats_;
};

}  // namespace vigil::ident
