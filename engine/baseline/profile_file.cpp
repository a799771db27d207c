#include "engine/baseline/profile_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/baseline/key.h"
#include "engine/util/safe_file.h"

namespace vigil::baseline {

using json = nlohmann::json;

namespace {

constexpr std::string_view kFormat = "vigil-baseline";
constexpr std::size_t kMaxPath = 4096;
constexpr std::size_t kMaxHashesPerExe = 64;

std::string exes_json_error(const std::string& name, const std::string& why) { return name + ": " + why; }

}  // namespace

std::string encode_profile(const Profile& p) {
  json j;
  j["format"] = kFormat;
  j["version"] = kFormatVersion;
  j["workload"] = p.key();
  j["state"] = phase_name(p.phase());
  j["first_seen_ns"] = p.first_seen_ns();
  j["updated_ns"] = p.updated_ns();
  j["locked_at_ns"] = p.locked_at_ns();
  j["lock_cause"] = p.lock_cause();
  json exes = json::array();
  for (const auto& [path, hashes] : p.exes_sorted()) {
    json e;
    e["path"] = path;
    e["sha256"] = json(std::vector<std::string>(hashes.begin(), hashes.end()));
    exes.push_back(std::move(e));
  }
  j["exes"] = std::move(exes);
  j["destinations"] = p.destinations_sorted();
  j["files"] = p.files_sorted();
  j["gpu_classes"] = std::vector<std::uint32_t>(p.gpu_classes().begin(), p.gpu_classes().end());
  json full = json::object();
  for (std::size_t i = 0; i < kSets; ++i) full[std::string(set_name(static_cast<Set>(i)))] = p.full()[i];
  j["full"] = std::move(full);
  return j.dump(1) + "\n";
}

namespace {

// Learning with a cap of "everything": the caps are checked while decoding,
// once.
constexpr Caps kUnbounded{SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX};

// Reads the members of a profile's JSON object, one part of the profile at a
// time; every error names the file.
class ProfileDecoder {
 public:
  ProfileDecoder(const json& j, const std::string& name) : j_(j), name_(name) {}

  Error bad(const std::string& why) const { return Error::bad_input(exes_json_error(name_, why)); }

  const json* member(const char* k) const {
    auto it = j_.find(k);
    return it == j_.end() ? nullptr : &*it;
  }

  // The format, its version and the workload the profile is of.
  Result<std::string> workload() const {
    const json* fmt = member("format");
    if (!fmt || !fmt->is_string() || fmt->get<std::string>() != kFormat) {
      return bad("\"format\" is not \"vigil-baseline\"");
    }
    const json* ver = member("version");
    if (!ver || !ver->is_number_unsigned() || ver->get<std::uint64_t>() != kFormatVersion) {
      return bad("\"version\" is not " + std::to_string(kFormatVersion) + " (this vigil reads version 1)");
    }
    const json* wl = member("workload");
    if (!wl || !wl->is_string() || wl->get_ref<const std::string&>().empty() ||
        wl->get_ref<const std::string&>().size() > kMaxKeyBytes) {
      return bad("\"workload\" must be a non-empty string of at most " + std::to_string(kMaxKeyBytes) + " bytes");
    }
    return wl->get<std::string>();
  }

  // A whole number member, left as it is when absent.
  Status u64(const char* k, std::uint64_t& out) const {
    const json* v = member(k);
    if (!v) return {};
    if (!v->is_number_unsigned()) return bad(std::string("\"") + k + "\" must be a whole number");
    out = v->get<std::uint64_t>();
    return {};
  }

  Result<Phase> phase() const {
    const json* state = member("state");
    if (state && state->is_string() && state->get_ref<const std::string&>() == "learning") return Phase::kLearning;
    if (state && state->is_string() && state->get_ref<const std::string&>() == "locked") return Phase::kLocked;
    return bad("\"state\" must be \"learning\" or \"locked\"");
  }

  Result<std::string> lock_cause() const {
    std::string cause;
    if (const json* c = member("lock_cause"); c) {
      if (!c->is_string() || c->get_ref<const std::string&>().size() > 32)
        return bad("\"lock_cause\" must be a short string");
      cause = c->get<std::string>();
    }
    return cause;
  }

  // A list member of at most `cap` entries; null when absent.
  Result<const json*> array(const char* k, std::size_t cap) const {
    const json* v = member(k);
    if (!v) return static_cast<const json*>(nullptr);
    if (!v->is_array()) return bad(std::string("\"") + k + "\" must be a list");
    if (v->size() > cap) {
      return bad(std::string("\"") + k + "\" has " + std::to_string(v->size()) + " entries, more than the cap of " +
                 std::to_string(cap) + " (baseline.max_" + k + ")");
    }
    return v;
  }

  // "exes": each a path and its SHA-256 hashes; at most caps.exes
  // path/hash entries in all.
  Status exes(Profile& p, const Caps& caps, std::uint64_t updated) const {
    auto exes = array("exes", caps.exes);
    if (!exes) return exes.error();
    if (!*exes) return {};
    std::size_t i = 0;
    for (const json& e : **exes) {
      if (Status st = exe(p, e, "\"exes\"[" + std::to_string(i++) + "]", updated); !st) return st;
    }
    if (p.exe_count() > caps.exes) {
      return bad("\"exes\" holds " + std::to_string(p.exe_count()) + " path/hash entries, more than the cap of " +
                 std::to_string(caps.exes) + " (baseline.max_exes)");
    }
    return {};
  }

  // One entry of "exes", at `at`.
  Status exe(Profile& p, const json& e, const std::string& at, std::uint64_t updated) const {
    if (!e.is_object()) return bad(at + " must be an object with \"path\" and \"sha256\"");
    auto pit = e.find("path");
    if (pit == e.end() || !pit->is_string() || pit->get_ref<const std::string&>().empty() ||
        pit->get_ref<const std::string&>().size() > kMaxPath) {
      return bad(at + ".path must be a non-empty path of at most 4096 bytes");
    }
    const std::string& path = pit->get_ref<const std::string&>();
    if (!p.add_exe(path, "", kUnbounded, updated)) return bad(at + ": path " + path + " is listed twice");
    auto hit = e.find("sha256");
    if (hit == e.end()) return {};
    if (!hit->is_array() || hit->size() > kMaxHashesPerExe) {
      return bad(at + ".sha256 must be a list of at most " + std::to_string(kMaxHashesPerExe) + " hashes");
    }
    for (const json& h : *hit) {
      if (!h.is_string() || h.get_ref<const std::string&>().size() != 64 ||
          h.get_ref<const std::string&>().find_first_not_of("0123456789abcdef") != std::string::npos) {
        return bad(at + ".sha256 holds something that is not a SHA-256 in lower-case hex");
      }
      p.add_exe(path, h.get_ref<const std::string&>(), kUnbounded, updated);
    }
    return {};
  }

  Status destinations(Profile& p, const Caps& caps, std::uint64_t updated) const {
    auto dests = array("destinations", caps.destinations);
    if (!dests) return dests.error();
    if (!*dests) return {};
    std::size_t i = 0;
    for (const json& d : **dests) {
      Destination dd;
      if (!d.is_string() || !parse_destination(d.get_ref<const std::string&>(), dd)) {
        return bad("\"destinations\"[" + std::to_string(i) + "] is not NET/PREFIX:PORT/PROTO (10.0.0.0/24:443/tcp)");
      }
      ++i;
      p.add_destination(dd, kUnbounded, updated);
    }
    return {};
  }

  Status files(Profile& p, const Caps& caps, std::uint64_t updated) const {
    auto files = array("files", caps.files);
    if (!files) return files.error();
    if (!*files) return {};
    std::size_t i = 0;
    for (const json& f : **files) {
      if (!f.is_string() || f.get_ref<const std::string&>().empty() ||
          f.get_ref<const std::string&>().size() > kMaxPath) {
        return bad("\"files\"[" + std::to_string(i) + "] must be a non-empty path of at most 4096 bytes");
      }
      ++i;
      p.add_file(f.get_ref<const std::string&>(), kUnbounded, updated);
    }
    return {};
  }

  Status gpu_classes(Profile& p, const Caps& caps, std::uint64_t updated) const {
    auto classes = array("gpu_classes", caps.gpu_classes);
    if (!classes) return classes.error();
    if (!*classes) return {};
    std::size_t i = 0;
    for (const json& c : **classes) {
      if (!c.is_number_unsigned() || c.get<std::uint64_t>() > 0xffffffffull) {
        return bad("\"gpu_classes\"[" + std::to_string(i) + "] must be a 32-bit whole number");
      }
      ++i;
      p.add_gpu_class(static_cast<std::uint32_t>(c.get<std::uint64_t>()), kUnbounded, updated);
    }
    return {};
  }

  // "full": how often each set was full, by the set's name.
  Status full(Profile& p) const {
    const json* full = member("full");
    if (!full) return {};
    if (!full->is_object()) return bad("\"full\" must be an object of counts");
    for (std::size_t s = 0; s < kSets; ++s) {
      auto it = full->find(std::string(set_name(static_cast<Set>(s))));
      if (it == full->end()) continue;
      if (!it->is_number_unsigned()) return bad("\"full\" counts must be whole numbers");
      p.add_full(static_cast<Set>(s), it->get<std::uint64_t>());
    }
    return {};
  }

 private:
  const json& j_;
  const std::string& name_;
};

}  // namespace

Result<Profile> decode_profile(std::string_view text, const std::string& name, const Caps& caps) {
  auto bad = [&](const std::string& why) { return Error::bad_input(exes_json_error(name, why)); };
  if (text.size() > kMaxFileBytes) {
    return bad("larger than " + std::to_string(kMaxFileBytes) + " bytes, refused");
  }
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad("not valid JSON");
  if (!j.is_object()) return bad("not a JSON object");
  const ProfileDecoder d(j, name);
  auto workload = d.workload();
  if (!workload) return workload.error();
  Profile p(std::move(*workload));
  std::uint64_t first = 0, updated = 0, locked_at = 0;
  for (auto [k, dst] :
       {std::pair{"first_seen_ns", &first}, std::pair{"updated_ns", &updated}, std::pair{"locked_at_ns", &locked_at}}) {
    if (Status s = d.u64(k, *dst); !s) return s.error();
  }
  auto phase = d.phase();
  if (!phase) return phase.error();
  auto cause = d.lock_cause();
  if (!cause) return cause.error();
  if (Status s = d.exes(p, caps, updated); !s) return s.error();
  if (Status s = d.destinations(p, caps, updated); !s) return s.error();
  if (Status s = d.files(p, caps, updated); !s) return s.error();
  if (Status s = d.gpu_classes(p, caps, updated); !s) return s.error();
  if (Status s = d.full(p); !s) return s.error();
  p.set_first_seen(first);
  p.restore_state(*phase, updated, locked_at, std::move(*cause));
  return p;
}

Result<Profile> read_profile(const std::string& path, const Caps& caps) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return Error::runtime(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Error::bad_input(path + ": not a regular file");
  }
  if (static_cast<std::uint64_t>(st.st_size) > kMaxFileBytes) {
    close(fd);
    return Error::bad_input(path + ": " + std::to_string(st.st_size) + " bytes, larger than " +
                            std::to_string(kMaxFileBytes) + ": refused");
  }
  std::string text;
  text.resize(static_cast<std::size_t>(st.st_size) + 1);
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  close(fd);
  if (got > kMaxFileBytes)
    return Error::bad_input(path + ": grew past " + std::to_string(kMaxFileBytes) + " bytes while read: refused");
  text.resize(got);
  auto p = decode_profile(text, path, caps);
  if (!p) return p;
  const std::string base = path.substr(path.rfind('/') + 1);
  if (base != file_name_for(p->key())) {
    return Error::bad_input(path + ": holds workload '" + p->key() + "', whose file is " + file_name_for(p->key()));
  }
  return p;
}

Status write_profile(const std::string& dir, const Profile& p) {
  const std::string final_path = dir + "/" + file_name_for(p.key());
  const std::string tmp = final_path + ".tmp";
  const std::string text = encode_profile(p);
  auto fd = util::open_for_write(tmp, util::OpenMode::kTruncate, util::kFileMode);
  if (!fd) return fd.error();
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = write(*fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      close(*fd);
      unlink(tmp.c_str());
      return Error::runtime(tmp + ": write: " + why);
    }
    off += static_cast<std::size_t>(n);
  }
  if (fsync(*fd) != 0) {
    const std::string why = std::strerror(errno);
    close(*fd);
    unlink(tmp.c_str());
    return Error::runtime(tmp + ": fsync: " + why);
  }
  close(*fd);
  if (rename(tmp.c_str(), final_path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    unlink(tmp.c_str());
    return Error::runtime(final_path + ": rename: " + why);
  }
  return {};
}

}  // namespace vigil::baseline
