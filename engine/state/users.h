// uid → user name and gid → group name from files in /etc/passwd and
// /etc/group format ("name:x:id:..."). Loaded once; bounded in size.
//
// Thread-safety: const methods may be called from any thread after load().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace vigil::state {

class NameDb {
 public:
  static constexpr std::size_t kMaxFileBytes = 4 * 1024 * 1024;
  static constexpr std::size_t kMaxEntries = 65536;

  // Replaces the table with the entries of path; false when it cannot be read.
  bool load(const std::string& path);
  // Parses the text of such a file (for tests and load()).
  void parse(std::string_view text);
  std::string_view name(std::uint32_t id) const;
  std::size_t size() const { return names_.size(); }

 private:
  std::unordered_map<std::uint32_t, std::string> names_;
};

}  // namespace vigil::state
