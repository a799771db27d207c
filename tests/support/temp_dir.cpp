#include "tests/support/temp_dir.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace vigil::support {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TempDir::TempDir(std::string_view prefix) {
  std::error_code ec;
  std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string tmpl = (base / (std::string(prefix) + "-XXXXXX")).string();
  if (char* p = ::mkdtemp(tmpl.data()); p != nullptr) {
    path_ = p;
    ::chmod(p, 0755);
  }
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& rel, const std::string& content) const {
  const std::string p = path_ + "/" + rel;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(p).parent_path(), ec);
  { std::ofstream(p + ".tmp", std::ios::binary) << content; }
  std::filesystem::rename(p + ".tmp", p, ec);
  return p;
}

std::string TempDir::install(const std::string& program, const std::string& name) const {
  const std::string p = path_ + "/" + name;
  std::error_code ec;
  std::filesystem::copy_file(program, p, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) return "";
  ::chmod(p.c_str(), 0755);
  return p;
}

std::string TempDir::symlink(const std::string& rel, const std::string& target) const {
  const std::string p = path_ + "/" + rel;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(p).parent_path(), ec);
  const std::string tmp = p + ".tmp";
  ::unlink(tmp.c_str());
  if (::symlink(target.c_str(), tmp.c_str()) != 0) return "";
  if (::rename(tmp.c_str(), p.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return "";
  }
  return p;
}

std::string TempDir::mkdirs(const std::string& rel) const {
  const std::string p = path_ + "/" + rel;
  std::error_code ec;
  std::filesystem::create_directories(p, ec);
  return std::filesystem::is_directory(p, ec) ? p : "";
}

std::uint64_t TempDir::inode(const std::string& rel) const {
  struct stat st {};
  if (::stat((path_ + "/" + rel).c_str(), &st) != 0) return 0;
  return st.st_ino;
}

}  // namespace vigil::support
