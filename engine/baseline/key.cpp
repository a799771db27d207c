#include "engine/baseline/key.h"

#include <cstdint>

namespace vigil::baseline {

std::optional<KeyMode> key_mode_from_name(std::string_view name) {
  if (name == "image") return KeyMode::kImage;
  if (name == "image_digest") return KeyMode::kImageDigest;
  if (name == "owner") return KeyMode::kOwner;
  return std::nullopt;
}

std::string_view key_mode_name(KeyMode m) {
  switch (m) {
    case KeyMode::kImage: return "image";
    case KeyMode::kImageDigest: return "image_digest";
    case KeyMode::kOwner: return "owner";
  }
  return "image";
}

void split_image(std::string_view image, std::string_view& repository, std::string_view& tag) {
  if (auto at = image.find('@'); at != std::string_view::npos) image = image.substr(0, at);
  const auto slash = image.rfind('/');
  const auto colon = image.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    repository = image.substr(0, colon);
    tag = image.substr(colon + 1);
  } else {
    repository = image;
    tag = {};
  }
}

namespace {

std::string image_key(const state::Container& c, bool digest) {
  if (c.image.empty()) return {};
  std::string_view repo, tag;
  split_image(c.image, repo, tag);
  if (repo.empty()) return {};
  if (digest) {
    // image_id: "docker.io/library/x@sha256:..." or "sha256:..."
    std::string_view id = c.image_id;
    if (auto at = id.find("sha256:"); at != std::string_view::npos) {
      std::string_view d = id.substr(at);
      if (d.size() == 7 + 64) return std::string(repo) + "@" + std::string(d);
    }
  }
  return std::string(repo) + ":" + std::string(tag.empty() ? "latest" : tag);
}

// A ReplicaSet "web-7d4b9c8f6" made by the Deployment "web" for template hash
// 7d4b9c8f6 (the pod's pod-template-hash label).
std::string owner_name(const state::Pod& pod, std::string& kind) {
  kind = pod.owner_kind;
  std::string name = pod.owner_name;
  if (kind == "ReplicaSet") {
    auto it = pod.labels.find("pod-template-hash");
    if (it != pod.labels.end() && !it->second.empty() && name.size() > it->second.size() + 1 &&
        name.compare(name.size() - it->second.size(), it->second.size(), it->second) == 0 &&
        name[name.size() - it->second.size() - 1] == '-') {
      name.resize(name.size() - it->second.size() - 1);
      kind = "Deployment";
    }
  }
  return name;
}

}  // namespace

std::string workload_key(KeyMode mode, const state::Container& c, const state::Pod* pod) {
  std::string key;
  if (mode == KeyMode::kOwner && pod && !pod->owner_kind.empty() && !pod->owner_name.empty()) {
    std::string kind;
    std::string name = owner_name(*pod, kind);
    key = pod->ns + "/" + kind + "/" + name + "/" + (c.name.empty() ? std::string("-") : c.name);
  } else {
    key = image_key(c, mode == KeyMode::kImageDigest);
  }
  if (key.size() > kMaxKeyBytes) return {};
  return key;
}

std::string file_name_for(std::string_view key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(key.size() + 8);
  for (unsigned char ch : key) {
    const bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                       ch == '_' || ch == '-';
    if (plain) {
      out.push_back(static_cast<char>(ch));
    } else {
      out.push_back('%');
      out.push_back(kHex[ch >> 4]);
      out.push_back(kHex[ch & 15]);
    }
  }
  // "." and ".." are not file names a key may take.
  if (out.empty() || out == "." || out == "..") out.insert(0, "%");
  if (out.size() > 200) {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the whole key
    for (unsigned char ch : key) {
      h ^= ch;
      h *= 1099511628211ull;
    }
    out.resize(180);
    while (!out.empty() && (out.back() == '%' || (out.size() >= 2 && out[out.size() - 2] == '%'))) out.pop_back();
    out += "~";
    for (int i = 15; i >= 0; --i) out.push_back(kHex[(h >> (i * 4)) & 15]);
  }
  return out + ".json";
}

}  // namespace vigil::baseline
