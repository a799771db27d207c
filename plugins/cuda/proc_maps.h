// Reading /proc/PID/maps for libcuda files. The text comes from the kernel,
// but the paths in it are chosen by whoever named the files (a container's
// image): lines are parsed strictly, lengths are bounded, and a path is only
// ever used to compare names, never opened as given (see library_scan.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vigil::cuda {

struct MapsEntry {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  bool exec = false;
  std::uint32_t dev_major = 0;
  std::uint32_t dev_minor = 0;
  std::uint64_t inode = 0;
  std::string path;      // as the kernel printed it, " (deleted)" removed
  bool deleted = false;  // the file was unlinked after it was mapped
};

// One line of a maps file (without its newline); nullopt when malformed.
std::optional<MapsEntry> parse_maps_line(std::string_view line);

// Whether the last component of `path` is one of `names`, or one of them
// followed by '.' and more ("libcuda.so.1").
bool library_name_matches(std::string_view path, std::span<const std::string> names);

// The distinct files (device + inode) that the maps text maps with execute
// permission and whose names match, first mapping of each, at most `max`.
std::vector<MapsEntry> find_libraries(std::string_view maps_text, std::span<const std::string> names, std::size_t max);

// Reads a whole /proc file of at most `max_bytes` (a longer one is cut at its
// last complete line). False when it cannot be opened or read.
bool read_proc_file(const std::string& path, std::size_t max_bytes, std::string& out);

}  // namespace vigil::cuda
