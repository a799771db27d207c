#include "tests/support/temp_dir.h"

#include <stdlib.h>
#include <sys/stat.h>

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
  {
    std::ofstream(p + ".tmp", std::ios::binary) << content;
  }
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

}  // namespace vigil::support
