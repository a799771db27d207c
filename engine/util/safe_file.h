// The files and directories vigil writes (alert files, spools, captures, the
// flight recorder's directory, timelines), made so that whoever can write near
// them cannot turn a vigil running as root against the node.
//
//   auto fd = util::open_for_write("/var/log/vigil/alerts.json", util::OpenMode::kAppend, 0600);
//   if (!fd) return fd.error();          // Error::bad_input when refused
//   Status s = util::make_dirs("/var/lib/vigil/spool/webhook-0", 0700);
//
// The rules, the same for every caller:
// - The last component of a path is never followed when it is a symbolic
//   link: opening it is refused, and the link's target is left untouched.
// - Every directory from / down to the file is trusted, or the path is
//   refused. Trusted: owned by root or by vigil's effective user, and not
//   writable by group or others, unless it has the sticky bit (like /tmp,
//   where nobody can rename or remove what vigil made). The path is walked
//   one component at a time from /, each directory checked as it is opened.
//   A symbolic link in the directory part (e.g. /var/run -> /run) is followed
//   only if it is owned by root or vigil's user; it then sits in a trusted
//   directory, so nobody else can retarget it. The directories reached
//   through it are checked like the others.
// - An existing file is written only if it is a regular file, owned by root or
//   vigil's user, with one hard link (a hard link to /etc/shadow planted in
//   /tmp is refused, not truncated).
// - What vigil creates gets exactly the mode asked for, whatever the umask.
//   An existing file or directory keeps its mode.
//
// Errors: a refusal is Error::bad_input (the configuration names an unsafe
// path: exit 2 at start-up), and names the path and the reason; a failed
// system call (no such directory, permission denied, disk full) is
// Error::runtime.
//
// Thread-safety: the functions share no state; the umask is never changed.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "engine/util/result.h"

namespace vigil::util {

// The modes vigil creates things with (docs/install.md, "Files and modes").
inline constexpr mode_t kDirMode = 0700;      // state_dir, spools, the flight recorder's directory
inline constexpr mode_t kFileMode = 0600;     // alert files, spool segments and cursor
inline constexpr mode_t kCaptureMode = 0640;  // captures and timelines

enum class OpenMode {
  kAppend,    // write at the end; created if missing
  kTruncate,  // emptied (after the checks, never before); created if missing
};

// Opens `path` write-only (close-on-exec) under the rules above; a new file
// gets `mode`. The directory must exist. Returns the descriptor, which the
// caller owns.
Result<int> open_for_write(const std::string& path, OpenMode how, mode_t mode);

// Makes directory `path` and its missing parents, each with exactly `mode`,
// and checks that every directory of the path is trusted. An existing
// directory is checked and left as it is.
Status make_dirs(const std::string& path, mode_t mode);

// Rotation of `path` in its (trusted) directory: path.keep is removed,
// path.N becomes path.N+1, path becomes path.1; with keep 0, path is removed.
// Entries are renamed or removed themselves; links are never followed. Fails
// when path could not be moved out of the way.
Status rotate(const std::string& path, std::size_t keep);

}  // namespace vigil::util
