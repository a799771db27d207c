#include "engine/ident/file_identity.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <array>
#include <memory>

#include "engine/ident/build_id.h"

namespace vigil::ident {

FileKey FileKey::of(const struct stat& st) {
  FileKey k;
  k.dev = st.st_dev;
  k.ino = st.st_ino;
  k.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  return k;
}

std::size_t FileKeyHash::operator()(const FileKey& k) const noexcept {
  std::uint64_t h = k.ino * 0x9e3779b97f4a7c15ull;
  h ^= k.dev + 0x7f4a7c159e3779b9ull + (h << 6) + (h >> 2);
  h ^= static_cast<std::uint64_t>(k.ctime_ns) + (h << 6) + (h >> 2);
  return static_cast<std::size_t>(h);
}

std::string FileIdentity::key() const {
  if (!build_id.empty()) return "buildid:" + build_id;
  if (!sha256.empty()) return "sha256:" + sha256;
  return {};
}

std::string sha256_fd(int fd, std::uint64_t max, bool* partial) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return {};
  std::array<unsigned char, 64 * 1024> buf;
  std::uint64_t off = 0;
  if (partial) *partial = false;
  while (off < max) {
    std::size_t want = buf.size();
    if (max - off < want) want = static_cast<std::size_t>(max - off);
    ssize_t r = ::pread(fd, buf.data(), want, static_cast<off_t>(off));
    if (r < 0) return {};
    if (r == 0) break;
    if (EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(r)) != 1) return {};
    off += static_cast<std::uint64_t>(r);
  }
  if (off >= max && partial) {
    unsigned char one;
    *partial = ::pread(fd, &one, 1, static_cast<off_t>(off)) == 1;
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    s.push_back(kHex[md[i] >> 4]);
    s.push_back(kHex[md[i] & 15]);
  }
  return s;
}

FileIdentity identify_fd(int fd, const struct stat& st, std::uint64_t max_hash_bytes) {
  FileIdentity id;
  if (!S_ISREG(st.st_mode)) return id;
  auto size = static_cast<std::uint64_t>(st.st_size);
  id.build_id = read_build_id_fd(fd, size);
  id.sha256 = sha256_fd(fd, max_hash_bytes, &id.partial);
  return id;
}

const FileIdentity* FileIdentityCache::find(const FileKey& k) {
  if (!k.known()) return nullptr;
  const FileIdentity* hit = map_.get(k);
  if (hit) ++stats_.hits;
  return hit;
}

void FileIdentityCache::alias(const FileKey& k, const FileIdentity& id) {
  if (k.known() && !map_.peek(k)) map_.put(k, id);
}

const FileIdentity& FileIdentityCache::get(int fd, const struct stat& st) {
  FileKey k = FileKey::of(st);
  if (const FileIdentity* hit = map_.get(k)) {
    ++stats_.hits;
    return *hit;
  }
  ++stats_.misses;
  FileIdentity* where = nullptr;
  map_.put(k, identify_fd(fd, st, max_hash_bytes_), &where);
  return *where;
}

}  // namespace vigil::ident
