// The node's (and its containers') shells and interpreters, by identity: the
// program files found under their canonical names (/bin/sh, /usr/bin/bash,
// /usr/bin/python3, ... and the entries of /etc/shells) in a root directory,
// hashed once, remembered by FileIdentity::key(). A copy of one of those
// files under any other name has the same identity, so it is still known as
// what it is.
//
// Bounded: at most `capacity` identities, at most kMaxAliases names each, a
// root's /etc/shells read up to 4 KiB and 32 entries.
//
// Thread-safety: owned by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/ident/file_identity.h"

namespace vigil::ident {

enum class ExeClass : std::uint8_t { kNone = 0, kShell = 1, kInterpreter = 2 };

struct KnownProgram {
  std::string name;  // the first canonical name it was found under ("dash")
  ExeClass cls = ExeClass::kNone;
  std::vector<std::string> names;  // every canonical name it was found under ("dash", "sh")
};

struct Candidate {
  std::string_view name;
  ExeClass cls;
};
// The canonical names looked for, real programs before the aliases that
// usually point at them (sh, python, nodejs), so a program is known by its
// own name.
std::span<const Candidate> candidates();
// The directories they are looked for in.
std::span<const std::string_view> candidate_dirs();

class KnownPrograms {
 public:
  static constexpr std::size_t kMaxAliases = 8;
  explicit KnownPrograms(std::size_t capacity = 4096) : capacity_(capacity) {}

  // Records that identity `key` is installed as `name`. Returns false when
  // the table is full (the entry is not added).
  bool add(const std::string& key, std::string_view name, ExeClass cls);
  const KnownProgram* find(const std::string& key) const;
  std::size_t size() const { return map_.size(); }

  // Looks for every candidate in rootfd (a directory that stands for "/":
  // symbolic links are resolved inside it, never outside) and its
  // /etc/shells, identifies what it finds through `cache` and adds it.
  // Returns how many files were identified.
  std::size_t learn_root(int rootfd, FileIdentityCache& cache);

 private:
  std::size_t capacity_;
  std::unordered_map<std::string, KnownProgram> map_;
};

// Opens path (absolute or relative) inside rootfd as if rootfd were "/"
// (openat2 RESOLVE_IN_ROOT, no magic links), read-only and non-blocking;
// -1 when it cannot.
int open_in_root(int rootfd, std::string_view path);

}  // namespace vigil::ident
