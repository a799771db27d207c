#include "engine/state/k8s_config.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <cstdlib>
#include <utility>

#include "engine/state/procfs.h"
#include "engine/util/yaml_gate.h"

namespace vigil::state {
namespace {

constexpr std::size_t kMaxSecretFile = 1u << 20;

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
}  // namespace

Result<K8sConfig> k8s_config_from_kubeconfig(std::string_view text, const std::string& base_dir) {
  YAML::Node root;
  if (YamlSyntaxError se; !yaml_syntax_ok(text, &se)) {
    return Error::bad_input("kubeconfig:" + std::to_string(se.line) + ":" + std::to_string(se.column) + ": " +
                            se.message);
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
      if (cfg.insecure) {
        cfg.insecure_because = "insecure-skip-tls-verify: true in cluster '" + cluster_name + "'";
      }
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
    if (cfg.insecure) cfg.insecure_because = "kubeconfig " + opt.kubeconfig + ": " + cfg.insecure_because;
  } else {
    std::string host = getenv_from(opt, "KUBERNETES_SERVICE_HOST");
    std::string port = getenv_from(opt, "KUBERNETES_SERVICE_PORT");
    if (host.empty() || port.empty()) {
      return Error::runtime(
          "no Kubernetes API: not in a cluster (KUBERNETES_SERVICE_HOST unset) and no "
          "--k8s-api or kubeconfig given");
    }
    if (host.find(':') != std::string::npos) host = "[" + host + "]";  // IPv6
    cfg.api_url = "https://" + host + ":" + port;
    cfg.token_file = opt.sa_dir + "/token";
    cfg.ca_file = opt.sa_dir + "/ca.crt";
  }
  if (!opt.token_file.empty()) cfg.token_file = opt.token_file;
  if (!opt.ca_file.empty()) cfg.ca_file = opt.ca_file;
  if (opt.insecure_for_test) {
    cfg.insecure = true;
    cfg.insecure_because = "K8sOptions::insecure_for_test";
  }
  cfg.node_name = node_name_from(opt);
  if (cfg.node_name.empty()) return Error::runtime("cannot tell this node's name (set NODE_NAME)");
  return cfg;
}

std::string tls_warning(const K8sConfig& cfg) {
  if (!cfg.insecure) return {};
  return "TLS verification of the Kubernetes API server " + cfg.api_url + " is OFF (" + cfg.insecure_because +
         "): its certificate is not checked, so whoever answers at that address receives the "
         "bearer token and can feed vigil false pod metadata";
}

net::HttpRequest api_request(const K8sConfig& cfg, const std::string& path_and_query) {
  net::HttpRequest r;
  r.url = cfg.api_url + path_and_query;
  r.headers = {{"Accept", "application/json"}};
  r.bearer_token = cfg.token;
  if (!cfg.token_file.empty()) {
    if (auto t = read_file_bounded(cfg.token_file, 64 * 1024)) {
      std::string s = std::move(*t);
      while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
      r.bearer_token = std::move(s);
    }
  }
  r.tls.ca_file = cfg.ca_file;
  r.tls.ca_pem = cfg.ca_pem;
  r.tls.cert_file = cfg.client_cert_file;
  r.tls.key_file = cfg.client_key_file;
  r.tls.cert_pem = cfg.client_cert_pem;
  r.tls.key_pem = cfg.client_key_pem;
  r.tls.verify = !cfg.insecure;
  r.connect_timeout = cfg.connect_timeout;
  return r;
}

}  // namespace vigil::state
