#include "engine/state/pods.h"

#include "engine/util/yaml_gate.h"

#include <curl/curl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <unordered_set>
#include <utility>

#include "engine/state/procfs.h"
#include "engine/state/state.h"

namespace vigil::state {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxString = 4096;
constexpr std::size_t kMaxMapEntries = 256;
constexpr std::size_t kMaxContainers = 64;
constexpr std::size_t kMaxEnv = 512;
constexpr std::size_t kMaxPodJson = 4u << 20;
constexpr std::size_t kMaxSecretFile = 1u << 20;

const json* field(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string str(const json& obj, const char* key) {
  const json* v = field(obj, key);
  if (!v || !v->is_string()) return {};
  const auto& s = v->get_ref<const std::string&>();
  return s.size() > kMaxString ? s.substr(0, kMaxString) : s;
}

std::map<std::string, std::string> string_map(const json& obj, const char* key) {
  std::map<std::string, std::string> out;
  const json* m = field(obj, key);
  if (!m || !m->is_object()) return out;
  for (auto it = m->begin(); it != m->end() && out.size() < kMaxMapEntries; ++it) {
    if (!it.value().is_string() || it.key().size() > 317) continue;  // 253 prefix + / + 63
    const auto& v = it.value().get_ref<const std::string&>();
    if (v.size() > kMaxString) continue;  // e.g. kubectl last-applied-configuration
    out.emplace(it.key(), v);
  }
  return out;
}

std::int64_t quantity(const json& q) {
  if (q.is_number_integer()) {
    auto v = q.get<std::int64_t>();
    return v > 0 && v < 1000000 ? v : 0;
  }
  if (!q.is_string()) return 0;
  const auto& s = q.get_ref<const std::string&>();
  if (s.empty() || s.size() > 6) return 0;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + (c - '0');
  }
  return v;
}

// NVIDIA GPUs asked for: nvidia.com/gpu, its shared variant (nvidia.com/gpu.shared)
// and MIG slices of the mixed strategy (nvidia.com/mig-<profile>).
std::int64_t gpu_quantity(const json& limits) {
  if (!limits.is_object()) return 0;
  std::int64_t total = 0;
  std::size_t n = 0;
  for (auto it = limits.begin(); it != limits.end() && ++n <= kMaxMapEntries; ++it) {
    const std::string& k = it.key();
    if (k == "nvidia.com/gpu" || k.rfind("nvidia.com/gpu.", 0) == 0 ||
        k.rfind("nvidia.com/mig-", 0) == 0) {
      total += quantity(it.value());
    }
  }
  return total;
}

// "containerd://<id>" → "<id>"
std::string strip_runtime_prefix(std::string id) {
  std::size_t p = id.find("://");
  if (p != std::string::npos) id.erase(0, p + 3);
  return id;
}

void add_containers(const json& spec, const json& status, const char* spec_key,
                    const char* status_key, Pod* pod) {
  const json* list = field(spec, spec_key);
  if (!list || !list->is_array()) return;
  const json* statuses = field(status, status_key);
  for (const auto& c : *list) {
    if (pod->containers.size() >= kMaxContainers) return;
    if (!c.is_object()) continue;
    PodContainer pc;
    pc.name = str(c, "name");
    pc.image = str(c, "image");
    if (const json* res = field(c, "resources")) {
      if (const json* lim = field(*res, "limits")) pc.gpu_limit = gpu_quantity(*lim);
    }
    if (const json* env = field(c, "env"); env && env->is_array()) {
      std::size_t n = 0;
      for (const auto& e : *env) {
        if (++n > kMaxEnv) break;
        if (str(e, "name") == "NVIDIA_VISIBLE_DEVICES") pc.nvidia_visible_devices = str(e, "value");
      }
    }
    if (const json* sc = field(c, "securityContext")) {
      if (const json* p = field(*sc, "privileged"); p && p->is_boolean()) pc.privileged = p->get<bool>();
    }
    if (statuses && statuses->is_array()) {
      for (const auto& st : *statuses) {
        if (str(st, "name") != pc.name) continue;
        pc.id = strip_runtime_prefix(str(st, "containerID"));
        break;
      }
    }
    pod->containers.push_back(std::move(pc));
  }
}

Result<Pod> pod_from(const json& j) {
  if (!j.is_object()) return Error::bad_input("pod: not an object");
  const json* meta = field(j, "metadata");
  if (!meta || !meta->is_object()) return Error::bad_input("pod: no metadata");
  Pod p;
  p.uid = str(*meta, "uid");
  if (p.uid.empty() || p.uid.size() > 64) return Error::bad_input("pod: no uid");
  p.name = str(*meta, "name");
  p.ns = str(*meta, "namespace");
  p.resource_version = str(*meta, "resourceVersion");
  p.labels = string_map(*meta, "labels");
  p.annotations = string_map(*meta, "annotations");
  static const json kEmpty = json::object();
  const json* spec = field(j, "spec");
  const json* status = field(j, "status");
  if (!spec) spec = &kEmpty;
  if (!status) status = &kEmpty;
  p.node = str(*spec, "nodeName");
  add_containers(*spec, *status, "containers", "containerStatuses", &p);
  add_containers(*spec, *status, "initContainers", "initContainerStatuses", &p);
  add_containers(*spec, *status, "ephemeralContainers", "ephemeralContainerStatuses", &p);
  return p;
}

std::string trim_right(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string base64_decode(std::string_view in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  int bits = 0;
  std::uint32_t acc = 0;
  for (char c : in) {
    int v = val(c);
    if (v < 0) continue;  // '=', whitespace
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

std::string resolve_path(const std::string& p, const std::string& base) {
  if (p.empty() || p[0] == '/' || base.empty()) return p;
  return base + "/" + p;
}

std::string getenv_from(const K8sOptions& opt, const char* name) {
  if (opt.use_env_for_test) {
    auto it = opt.env_for_test.find(name);
    return it == opt.env_for_test.end() ? std::string() : it->second;
  }
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string node_name_from(const K8sOptions& opt) {
  if (!opt.node_name.empty()) return opt.node_name;
  std::string n = getenv_from(opt, "NODE_NAME");
  if (!n.empty()) return n;
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) == 0) return host;
  return {};
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using CurlPtr = std::unique_ptr<CURL, CurlDeleter>;
using SlistPtr = std::unique_ptr<curl_slist, SlistDeleter>;

void curl_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

Result<Pod> parse_pod_json(std::string_view text) {
  if (text.size() > kMaxPodJson) return Error::bad_input("pod: JSON too large");
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) return Error::bad_input("pod: malformed JSON");
  return pod_from(j);
}

Result<K8sConfig> k8s_config_from_kubeconfig(std::string_view text, const std::string& base_dir) {
  YAML::Node root;
  if (YamlSyntaxError se; !yaml_syntax_ok(text, &se)) {
    return Error::bad_input("kubeconfig:" + std::to_string(se.line) + ":" + std::to_string(se.column) +
                            ": " + se.message);
  }
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Error::bad_input(std::string("kubeconfig: ") + e.what());
  }
  try {
    if (!root.IsMap()) return Error::bad_input("kubeconfig: not a mapping");
    std::string current = root["current-context"] ? root["current-context"].as<std::string>() : "";
    auto find_named = [&](const char* list, const std::string& name, const char* inner) {
      YAML::Node out;
      YAML::Node l = root[list];
      if (!l || !l.IsSequence()) return out;
      for (const auto& item : l) {
        if (item["name"] && item["name"].as<std::string>() == name && item[inner]) {
          out = item[inner];
          break;
        }
      }
      return out;
    };
    YAML::Node ctx = find_named("contexts", current, "context");
    if (!ctx) return Error::bad_input("kubeconfig: current context '" + current + "' not found");
    std::string cluster_name = ctx["cluster"] ? ctx["cluster"].as<std::string>() : "";
    std::string user_name = ctx["user"] ? ctx["user"].as<std::string>() : "";
    YAML::Node cluster = find_named("clusters", cluster_name, "cluster");
    if (!cluster || !cluster["server"]) {
      return Error::bad_input("kubeconfig: cluster '" + cluster_name + "' has no server");
    }
    K8sConfig cfg;
    cfg.api_url = cluster["server"].as<std::string>();
    while (!cfg.api_url.empty() && cfg.api_url.back() == '/') cfg.api_url.pop_back();
    if (cluster["certificate-authority"]) {
      cfg.ca_file = resolve_path(cluster["certificate-authority"].as<std::string>(), base_dir);
    }
    if (cluster["certificate-authority-data"]) {
      cfg.ca_pem = base64_decode(cluster["certificate-authority-data"].as<std::string>());
    }
    if (cluster["insecure-skip-tls-verify"]) {
      cfg.insecure = cluster["insecure-skip-tls-verify"].as<bool>();
    }
    YAML::Node user = find_named("users", user_name, "user");
    if (user) {
      if (user["token"]) cfg.token = user["token"].as<std::string>();
      if (user["tokenFile"]) cfg.token_file = resolve_path(user["tokenFile"].as<std::string>(), base_dir);
      if (user["client-certificate"]) {
        cfg.client_cert_file = resolve_path(user["client-certificate"].as<std::string>(), base_dir);
      }
      if (user["client-key"]) {
        cfg.client_key_file = resolve_path(user["client-key"].as<std::string>(), base_dir);
      }
      if (user["client-certificate-data"]) {
        cfg.client_cert_pem = base64_decode(user["client-certificate-data"].as<std::string>());
      }
      if (user["client-key-data"]) {
        cfg.client_key_pem = base64_decode(user["client-key-data"].as<std::string>());
      }
    }
    return cfg;
  } catch (const YAML::Exception& e) {
    return Error::bad_input(std::string("kubeconfig: ") + e.what());
  }
}

Result<K8sConfig> k8s_config_discover(const K8sOptions& opt) {
  K8sConfig cfg;
  if (!opt.api_url.empty()) {
    cfg.api_url = opt.api_url;
    while (!cfg.api_url.empty() && cfg.api_url.back() == '/') cfg.api_url.pop_back();
  } else if (!opt.kubeconfig.empty()) {
    bool truncated = false;
    auto text = read_file_bounded(opt.kubeconfig, kMaxSecretFile, &truncated);
    if (!text || truncated) return Error::bad_input("cannot read kubeconfig " + opt.kubeconfig);
    std::string base = opt.kubeconfig.substr(0, opt.kubeconfig.rfind('/'));
    if (opt.kubeconfig.find('/') == std::string::npos) base.clear();
    auto r = k8s_config_from_kubeconfig(*text, base);
    if (!r) return Error::bad_input(opt.kubeconfig + ": " + r.error().message);
    cfg = std::move(*r);
  } else {
    std::string host = getenv_from(opt, "KUBERNETES_SERVICE_HOST");
    std::string port = getenv_from(opt, "KUBERNETES_SERVICE_PORT");
    if (host.empty() || port.empty()) {
      return Error::runtime(
          "no Kubernetes API: not in a cluster (KUBERNETES_SERVICE_HOST unset) and no "
          "--k8s-api or kubeconfig given; k8s fields stay empty");
    }
    if (host.find(':') != std::string::npos) host = "[" + host + "]";  // IPv6
    cfg.api_url = "https://" + host + ":" + port;
    cfg.token_file = opt.sa_dir + "/token";
    cfg.ca_file = opt.sa_dir + "/ca.crt";
  }
  if (!opt.token_file.empty()) cfg.token_file = opt.token_file;
  if (!opt.ca_file.empty()) cfg.ca_file = opt.ca_file;
  if (opt.insecure) cfg.insecure = true;
  cfg.node_name = node_name_from(opt);
  if (cfg.node_name.empty()) return Error::runtime("cannot tell this node's name (set NODE_NAME)");
  return cfg;
}

// --- PodWatcher ----------------------------------------------------------------

PodWatcher::PodWatcher(K8sConfig cfg) : cfg_(std::move(cfg)), rng_(std::random_device{}()) {}

PodWatcher::~PodWatcher() { stop(); }

Status PodWatcher::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return Error::runtime("pod watcher already started");
  if (cfg_.api_url.rfind("https://", 0) != 0 && cfg_.api_url.rfind("http://", 0) != 0) {
    return Error::bad_input("Kubernetes API URL must be http(s)://...: '" + cfg_.api_url + "'");
  }
  curl_init_once();
  started_ = true;
  stop_ = false;
  thread_ = std::thread([this] { run(); });
  return Status::ok_status();
}

void PodWatcher::stop() {
  stop_ = true;
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

PodWatcher::Stats PodWatcher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void PodWatcher::note_error(std::string msg) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.errors;
  stats_.last_error = std::move(msg);
}

bool PodWatcher::push(PodUpdate u) {
  std::lock_guard<std::mutex> lock(mu_);
  if (queue_.size() >= cfg_.queue_capacity && u.kind != PodUpdate::Kind::kSync) {
    // Dropping one update could lose a deletion: drop them all and relist.
    queue_.clear();
    ++stats_.overflows;
    overflow_ = true;
    return false;
  }
  if (u.kind == PodUpdate::Kind::kSync) queue_.clear();  // a full set supersedes the rest
  queue_.push_back(std::move(u));
  return true;
}

bool PodWatcher::drain(State& state) {
  std::deque<PodUpdate> work;
  {
    std::lock_guard<std::mutex> lock(mu_);
    work.swap(queue_);
  }
  for (auto& u : work) {
    switch (u.kind) {
      case PodUpdate::Kind::kUpsert:
        state.upsert_pod(std::move(u.pod));
        break;
      case PodUpdate::Kind::kDelete:
        state.remove_pod(u.uid);
        break;
      case PodUpdate::Kind::kSync: {
        std::unordered_set<std::string> keep;
        for (const auto& p : u.pods) keep.insert(p.uid);
        for (const auto& p : state.pods()) {
          if (!keep.count(p.uid)) state.remove_pod(p.uid);
        }
        for (auto& p : u.pods) state.upsert_pod(std::move(p));
        break;
      }
    }
  }
  return !work.empty();
}

std::string PodWatcher::bearer_token() const {
  if (!cfg_.token_file.empty()) {
    if (auto t = read_file_bounded(cfg_.token_file, 64 * 1024)) return trim_right(*t);
  }
  return cfg_.token;
}

namespace {

struct Transfer {
  std::string body;             // LIST: the whole body; WATCH: the partial line
  std::size_t max = 0;
  bool too_large = false;
  std::atomic<bool>* stop = nullptr;
  // WATCH: called for each complete line; returns false to end the transfer.
  std::function<bool(std::string_view)> on_line;
};

size_t on_write(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::size_t len = size * n;
  if (!t->on_line) {
    if (t->body.size() + len > t->max) {
      t->too_large = true;
      return 0;
    }
    t->body.append(data, len);
    return len;
  }
  std::string_view chunk(data, len);
  while (!chunk.empty()) {
    std::size_t nl = chunk.find('\n');
    std::string_view part = chunk.substr(0, nl == std::string_view::npos ? chunk.size() : nl);
    if (t->body.size() + part.size() > t->max) {
      t->too_large = true;
      return 0;
    }
    t->body.append(part);
    if (nl == std::string_view::npos) break;
    chunk.remove_prefix(nl + 1);
    std::string line;
    line.swap(t->body);
    if (!line.empty() && !t->on_line(line)) return 0;
  }
  return len;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->stop->load() ? 1 : 0;
}

std::string url_escape(CURL* c, const std::string& s) {
  char* e = curl_easy_escape(c, s.c_str(), static_cast<int>(s.size()));
  std::string out = e ? e : "";
  curl_free(e);
  return out;
}

}  // namespace

// Sets up a GET of `url` with TLS, auth and the bounded callbacks.
static CurlPtr make_request(const K8sConfig& cfg, const std::string& url, const std::string& token,
                            Transfer* t, SlistPtr* headers, bool streaming) {
  CurlPtr c(curl_easy_init());
  if (!c) return c;
  CURL* h = c.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https,http");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::chrono::milliseconds(cfg.connect_timeout).count()));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, t);
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  if (streaming) {
    // A silent watch (no event, no bookmark) for this long is a dead connection.
    curl_easy_setopt(h, CURLOPT_TIMEOUT, static_cast<long>(cfg.watch_timeout_s + 60));
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, static_cast<long>(cfg.watch_timeout_s + 30));
  } else {
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
  }
  if (cfg.insecure) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!cfg.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, cfg.ca_file.c_str());
  if (!cfg.ca_pem.empty()) {
    curl_blob b{const_cast<char*>(cfg.ca_pem.data()), cfg.ca_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
  }
  if (!cfg.client_cert_file.empty()) curl_easy_setopt(h, CURLOPT_SSLCERT, cfg.client_cert_file.c_str());
  if (!cfg.client_key_file.empty()) curl_easy_setopt(h, CURLOPT_SSLKEY, cfg.client_key_file.c_str());
  if (!cfg.client_cert_pem.empty()) {
    curl_blob b{const_cast<char*>(cfg.client_cert_pem.data()), cfg.client_cert_pem.size(),
                CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &b);
  }
  if (!cfg.client_key_pem.empty()) {
    curl_blob b{const_cast<char*>(cfg.client_key_pem.data()), cfg.client_key_pem.size(),
                CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &b);
  }
  curl_slist* l = curl_slist_append(nullptr, "Accept: application/json");
  if (!token.empty()) {
    std::string auth = "Authorization: Bearer " + token;
    l = curl_slist_append(l, auth.c_str());
  }
  headers->reset(l);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
  return c;
}

bool PodWatcher::list(std::string* rv) {
  std::vector<Pod> pods;
  std::string cont;
  std::string token = bearer_token();
  for (int page = 0; page < 1000; ++page) {
    Transfer t;
    t.max = cfg_.max_list_bytes;
    t.stop = &stop_;
    SlistPtr headers;
    CurlPtr probe(curl_easy_init());
    if (!probe) return false;
    std::string url = cfg_.api_url + "/api/v1/pods?limit=100&fieldSelector=" +
                      url_escape(probe.get(), "spec.nodeName=" + cfg_.node_name);
    if (!cont.empty()) url += "&continue=" + url_escape(probe.get(), cont);
    CurlPtr c = make_request(cfg_, url, token, &t, &headers, false);
    if (!c) return false;
    CURLcode rc = curl_easy_perform(c.get());
    long code = 0;
    curl_easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &code);
    if (stop_) return false;
    if (t.too_large) {
      note_error("LIST pods: response larger than " + std::to_string(cfg_.max_list_bytes) + " bytes");
      return false;
    }
    if (rc != CURLE_OK) {
      note_error(std::string("LIST pods: ") + curl_easy_strerror(rc));
      return false;
    }
    if (code != 200) {
      note_error("LIST pods: HTTP " + std::to_string(code));
      return false;
    }
    json j = json::parse(t.body, nullptr, false);
    const json* items = field(j, "items");
    if (j.is_discarded() || !items || !items->is_array()) {
      note_error("LIST pods: malformed response");
      return false;
    }
    for (const auto& item : *items) {
      if (pods.size() >= cfg_.max_pods) break;
      auto p = pod_from(item);
      if (!p) continue;
      annotate(*p);
      pods.push_back(std::move(*p));
    }
    const json* meta = field(j, "metadata");
    std::string next = meta ? str(*meta, "continue") : "";
    if (meta) *rv = str(*meta, "resourceVersion");
    if (next.empty()) break;
    cont = next;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.lists;
    stats_.synced = true;
  }
  PodUpdate u;
  u.kind = PodUpdate::Kind::kSync;
  u.pods = std::move(pods);
  overflow_ = false;
  push(std::move(u));
  return true;
}

PodWatcher::WatchEnd PodWatcher::watch(std::string* rv) {
  bool gone = false;
  bool failed = false;
  Transfer t;
  t.max = cfg_.max_event_bytes;
  t.stop = &stop_;
  t.on_line = [&](std::string_view line) {
    json j = json::parse(line.begin(), line.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      note_error("WATCH pods: malformed event");
      failed = true;
      return false;
    }
    std::string type = str(j, "type");
    const json* obj = field(j, "object");
    if (!obj) {
      failed = true;
      return false;
    }
    if (type == "ERROR") {
      const json* code = field(*obj, "code");
      if (code && code->is_number_integer() && code->get<std::int64_t>() == 410) {
        gone = true;
      } else {
        note_error("WATCH pods: error event: " + str(*obj, "message"));
        failed = true;
      }
      return false;
    }
    const json* meta = field(*obj, "metadata");
    std::string new_rv = meta ? str(*meta, "resourceVersion") : "";
    if (type == "BOOKMARK") {
      if (!new_rv.empty()) *rv = new_rv;
      return true;
    }
    auto pod = pod_from(*obj);
    if (!pod) return true;  // an object we cannot use; keep watching
    PodUpdate u;
    if (type == "ADDED" || type == "MODIFIED") {
      u.kind = PodUpdate::Kind::kUpsert;
      annotate(*pod);
      u.pod = std::move(*pod);
    } else if (type == "DELETED") {
      u.kind = PodUpdate::Kind::kDelete;
      u.uid = pod->uid;
    } else {
      return true;
    }
    if (!new_rv.empty()) *rv = new_rv;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.events;
    }
    return push(std::move(u));  // false on overflow: end the watch and relist
  };

  SlistPtr headers;
  CurlPtr probe(curl_easy_init());
  if (!probe) return WatchEnd::kError;
  std::string url = cfg_.api_url + "/api/v1/pods?watch=1&allowWatchBookmarks=true&fieldSelector=" +
                    url_escape(probe.get(), "spec.nodeName=" + cfg_.node_name) +
                    "&resourceVersion=" + url_escape(probe.get(), *rv) +
                    "&timeoutSeconds=" + std::to_string(cfg_.watch_timeout_s);
  CurlPtr c = make_request(cfg_, url, bearer_token(), &t, &headers, true);
  if (!c) return WatchEnd::kError;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.watches;
  }
  CURLcode rc = curl_easy_perform(c.get());
  long code = 0;
  curl_easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &code);
  if (stop_) return WatchEnd::kStopped;
  if (overflow_) return WatchEnd::kResync;
  if (gone || code == 410) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.relists_gone;
    return WatchEnd::kGone;
  }
  if (failed) return WatchEnd::kError;
  if (t.too_large) {
    note_error("WATCH pods: event larger than " + std::to_string(cfg_.max_event_bytes) + " bytes");
    return WatchEnd::kResync;
  }
  if (rc != CURLE_OK) {
    note_error(std::string("WATCH pods: ") + curl_easy_strerror(rc));
    return WatchEnd::kError;
  }
  if (code != 200) {
    note_error("WATCH pods: HTTP " + std::to_string(code));
    return WatchEnd::kError;
  }
  return WatchEnd::kClosed;
}

void PodWatcher::annotate(Pod& pod) {
  if (cfg_.pod_resources_socket.empty()) return;
  bool wants = false;
  for (const auto& c : pod.containers) {
    if (c.gpu_limit > 0 || c.nvidia_visible_devices.rfind("/", 0) == 0) wants = true;
  }
  if (!wants) return;
  auto now = std::chrono::steady_clock::now();
  if (!assignments_valid_ || now - assignments_at_ >= cfg_.pod_resources_refresh) {
    struct stat st{};
    if (::stat(cfg_.pod_resources_socket.c_str(), &st) != 0) return;  // no kubelet API here
    assignments_at_ = now;
    auto r = list_pod_resources(cfg_.pod_resources_socket);
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.pod_resources_calls;
    if (r) {
      assignments_ = std::move(*r);
      assignments_valid_ = true;
    } else {
      ++stats_.pod_resources_errors;
      stats_.last_error = r.error().message;
    }
  }
  if (assignments_valid_) apply_pod_resources(pod, assignments_);
}

void PodWatcher::sleep_backoff(int failures) {
  using std::chrono::milliseconds;
  std::int64_t cap = cfg_.backoff_max.count();
  std::int64_t base = cfg_.backoff_initial.count();
  std::int64_t ceiling = base;
  for (int i = 1; i < failures && ceiling < cap; ++i) ceiling *= 2;
  ceiling = std::min(ceiling, cap);
  // Jitter in [ceiling/2, ceiling], so a fleet of agents does not reconnect in step.
  std::uniform_int_distribution<std::int64_t> dist(ceiling / 2, std::max<std::int64_t>(ceiling, 1));
  std::int64_t wait_ms = dist(rng_);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, milliseconds(wait_ms), [this] { return stop_.load(); });
}

void PodWatcher::run() {
  std::string rv;
  bool need_list = true;
  int failures = 0;
  while (!stop_) {
    if (need_list) {
      if (!list(&rv)) {
        if (stop_) break;
        sleep_backoff(++failures);
        continue;
      }
      need_list = false;
      failures = 0;
    }
    auto began = std::chrono::steady_clock::now();
    switch (watch(&rv)) {
      case WatchEnd::kStopped:
        return;
      case WatchEnd::kClosed:
        // The server ended the watch; continue from rv. A server that ends
        // every watch at once must not be hammered in a tight loop.
        if (std::chrono::steady_clock::now() - began < std::chrono::seconds(1)) {
          sleep_backoff(++failures);
        } else {
          failures = 0;
        }
        break;
      case WatchEnd::kGone:
      case WatchEnd::kResync:
        need_list = true;
        break;
      case WatchEnd::kError:
        sleep_backoff(++failures);
        // Repeated failures from one resourceVersion: start again from a LIST.
        if (failures >= 3) need_list = true;
        break;
    }
  }
}

}  // namespace vigil::state
