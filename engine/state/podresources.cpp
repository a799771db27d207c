#include "engine/state/podresources.h"

#include <sys/stat.h>

#include <cstdint>

namespace vigil::state {
namespace {

constexpr std::size_t kMaxPodResourcesString = 1024;
constexpr std::size_t kMaxIdsPerDevice = 1024;

// A bounded reader of protobuf wire format.
class Reader {
 public:
  explicit Reader(std::string_view buf) : buf_(buf) {}
  bool done() const { return pos_ >= buf_.size(); }

  bool varint(std::uint64_t* out) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= buf_.size()) return false;
      auto b = static_cast<std::uint8_t>(buf_[pos_++]);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        *out = v;
        return true;
      }
    }
    return false;  // more than 10 bytes
  }

  // Next field: its number and wire type; for length-delimited fields the
  // bytes, other types are skipped.
  bool field(std::uint32_t* number, std::uint32_t* wire, std::string_view* bytes) {
    std::uint64_t key = 0;
    if (!varint(&key)) return false;
    *number = static_cast<std::uint32_t>(key >> 3);
    *wire = static_cast<std::uint32_t>(key & 7);
    if (*number == 0) return false;
    switch (*wire) {
      case 0: {
        std::uint64_t ignored = 0;
        return varint(&ignored);
      }
      case 1: return skip(8);
      case 5: return skip(4);
      case 2: {
        std::uint64_t len = 0;
        if (!varint(&len) || len > buf_.size() - pos_) return false;
        *bytes = buf_.substr(pos_, static_cast<std::size_t>(len));
        pos_ += static_cast<std::size_t>(len);
        return true;
      }
      default: return false;  // groups (3, 4) and invalid types
    }
  }

 private:
  bool skip(std::size_t n) {
    if (n > buf_.size() - pos_) return false;
    pos_ += n;
    return true;
  }
  std::string_view buf_;
  std::size_t pos_ = 0;
};

std::string bounded(std::string_view s) { return std::string(s.substr(0, kMaxPodResourcesString)); }

struct Device {
  std::string resource;
  std::vector<std::string> ids;
};

bool decode_devices(std::string_view msg, Device* d) {
  Reader r(msg);
  while (!r.done()) {
    std::uint32_t num = 0, wire = 0;
    std::string_view bytes;
    if (!r.field(&num, &wire, &bytes)) return false;
    if (wire != 2) continue;
    if (num == 1) d->resource = bounded(bytes);
    if (num == 2 && d->ids.size() < kMaxIdsPerDevice) d->ids.push_back(bounded(bytes));
  }
  return true;
}

bool decode_container(std::string_view msg, std::string* name, std::vector<Device>* devices) {
  Reader r(msg);
  while (!r.done()) {
    std::uint32_t num = 0, wire = 0;
    std::string_view bytes;
    if (!r.field(&num, &wire, &bytes)) return false;
    if (wire != 2) continue;
    if (num == 1) *name = bounded(bytes);
    if (num == 2) {
      Device d;
      if (!decode_devices(bytes, &d)) return false;
      devices->push_back(std::move(d));
    }
  }
  return true;
}

bool decode_pod(std::string_view msg, std::vector<ContainerDeviceIds>* out, std::size_t max) {
  std::string name, ns;
  struct C {
    std::string name;
    std::vector<Device> devices;
  };
  std::vector<C> containers;
  Reader r(msg);
  while (!r.done()) {
    std::uint32_t num = 0, wire = 0;
    std::string_view bytes;
    if (!r.field(&num, &wire, &bytes)) return false;
    if (wire != 2) continue;
    if (num == 1) name = bounded(bytes);
    if (num == 2) ns = bounded(bytes);
    if (num == 3) {
      C c;
      if (!decode_container(bytes, &c.name, &c.devices)) return false;
      containers.push_back(std::move(c));
    }
  }
  for (auto& c : containers) {
    for (auto& d : c.devices) {
      if (out->size() >= max) return true;
      out->push_back({ns, name, c.name, std::move(d.resource), std::move(d.ids)});
    }
  }
  return true;
}

}  // namespace

Result<std::vector<ContainerDeviceIds>> decode_list_pod_resources(std::string_view msg, std::size_t max_entries) {
  std::vector<ContainerDeviceIds> out;
  Reader r(msg);
  while (!r.done()) {
    std::uint32_t num = 0, wire = 0;
    std::string_view bytes;
    if (!r.field(&num, &wire, &bytes)) {
      return Error::bad_input("pod-resources: malformed ListPodResourcesResponse");
    }
    if (num != 1 || wire != 2) continue;
    if (!decode_pod(bytes, &out, max_entries)) {
      return Error::bad_input("pod-resources: malformed PodResources");
    }
  }
  return out;
}

std::string grpc_frame(std::string_view msg) {
  std::string f;
  f.reserve(5 + msg.size());
  f.push_back('\0');  // not compressed
  auto n = static_cast<std::uint32_t>(msg.size());
  f.push_back(static_cast<char>((n >> 24) & 0xff));
  f.push_back(static_cast<char>((n >> 16) & 0xff));
  f.push_back(static_cast<char>((n >> 8) & 0xff));
  f.push_back(static_cast<char>(n & 0xff));
  f.append(msg);
  return f;
}

Result<std::string> grpc_first_message(std::string_view body) {
  if (body.size() < 5) return Error::runtime("gRPC: empty or short response");
  if (body[0] != '\0') return Error::runtime("gRPC: compressed responses are not supported");
  std::uint32_t n = (static_cast<std::uint32_t>(static_cast<std::uint8_t>(body[1])) << 24) |
                    (static_cast<std::uint32_t>(static_cast<std::uint8_t>(body[2])) << 16) |
                    (static_cast<std::uint32_t>(static_cast<std::uint8_t>(body[3])) << 8) |
                    static_cast<std::uint32_t>(static_cast<std::uint8_t>(body[4]));
  if (n > body.size() - 5) return Error::runtime("gRPC: truncated message");
  return std::string(body.substr(5, n));
}

Result<std::vector<ContainerDeviceIds>> list_pod_resources(const std::string& socket_path,
                                                           std::chrono::milliseconds timeout, std::size_t max_bytes) {
  net::HttpClient client;
  return list_pod_resources(client, socket_path, timeout, max_bytes);
}

Result<std::vector<ContainerDeviceIds>> list_pod_resources(net::HttpClient& client, const std::string& socket_path,
                                                           std::chrono::milliseconds timeout, std::size_t max_bytes) {
  struct stat st {};
  if (::stat(socket_path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    return Error::runtime("pod-resources: no socket at " + socket_path);
  }
  net::HttpRequest req;
  req.method = net::HttpMethod::kPost;
  req.url = "http://localhost/v1.PodResourcesLister/List";
  req.unix_socket = socket_path;
  req.http2_prior_knowledge = true;
  req.headers = {{"Content-Type", "application/grpc"}, {"TE", "trailers"}};
  const std::string request = grpc_frame("");  // ListPodResourcesRequest{}
  req.body = request;
  req.timeout = timeout;
  req.connect_timeout = timeout;
  req.max_body = max_bytes;
  req.url_for_errors = "unix:" + socket_path + " " + req.url;
  net::HttpResult res = client.perform(req);
  if (!res.success()) return Error::runtime("pod-resources: " + res.describe());
  // A failed call has no message (its status is in the trailers).
  auto msg = grpc_first_message(res.body);
  if (!msg) return Error::runtime("pod-resources: " + msg.error().message);
  return decode_list_pod_resources(*msg);
}

bool apply_pod_resources(Pod& pod, const std::vector<ContainerDeviceIds>& assignments) {
  bool changed = false;
  for (auto& pc : pod.containers) {
    std::vector<std::string> ids;
    for (const auto& a : assignments) {
      if (a.pod_namespace != pod.ns || a.pod_name != pod.name || a.container != pc.name) continue;
      if (a.resource.rfind("nvidia.com/", 0) != 0) continue;
      for (const auto& id : a.device_ids) {
        if (ids.size() < kMaxIdsPerDevice) ids.push_back(id);
      }
    }
    if (ids != pc.gpu_devices) {
      pc.gpu_devices = std::move(ids);
      changed = true;
    }
  }
  return changed;
}

}  // namespace vigil::state
