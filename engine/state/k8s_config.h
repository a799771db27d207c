// Where the pod source is: the Kubernetes API server and how to talk to it.
// Explicit settings (--k8s-api and friends) win over a kubeconfig file, which
// wins over in-cluster discovery (KUBERNETES_SERVICE_HOST/PORT and the
// service-account token and CA).
//
// Pure functions except for reading the environment, the hostname and the
// kubeconfig file; thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include "engine/net/http_client.h"
#include "engine/util/result.h"

namespace vigil::state {

struct K8sConfig {
  std::string api_url;     // "https://10.96.0.1:443" (no trailing slash)
  std::string token;       // bearer token (kubeconfig "token")
  std::string token_file;  // re-read at every connection (rotated service-account tokens)
  std::string ca_file;     // PEM CA bundle; "" = system CAs
  std::string ca_pem;      // PEM CA given inline (kubeconfig certificate-authority-data)
  std::string client_cert_file;
  std::string client_key_file;
  std::string client_cert_pem;  // inline (client-certificate-data)
  std::string client_key_pem;   // inline (client-key-data)
  // TLS verification of the API server is off: the kubeconfig's cluster has
  // insecure-skip-tls-verify: true, or a test set K8sOptions::insecure_for_test.
  // The API server then receives the bearer token unauthenticated;
  // discover_k8s logs tls_warning() at start.
  bool insecure = false;
  std::string insecure_because;            // which setting turned it off, for the warning
  std::string node_name;                   // pods of this node only
  std::size_t max_list_bytes = 16u << 20;  // one LIST page (pages of at most 100 pods)
  std::size_t max_event_bytes = 2u << 20;  // one WATCH event line (etcd keeps objects < 1.5 MiB)
  std::size_t max_pods = 4096;             // pods kept from one LIST
  std::size_t queue_capacity = 4096;       // updates waiting for drain()
  std::chrono::milliseconds backoff_initial{500};
  std::chrono::milliseconds backoff_max{30000};
  std::chrono::seconds connect_timeout{10};
  int watch_timeout_s = 300;  // server-side timeoutSeconds of one WATCH
  // The kubelet pod-resources socket, asked which GPU ids each GPU container
  // got ("" = never ask). Absent socket: silently skipped.
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  std::chrono::milliseconds pod_resources_refresh{2000};  // at most one List per interval

  // For metrics (issue 14): true when the API server's certificate is not verified.
  bool api_tls_verification_off() const { return insecure; }
};

// Where the pod source comes from. Explicit settings win over the kubeconfig,
// which wins over in-cluster discovery.
struct K8sOptions {
  std::string api_url;  // --k8s-api URL
  std::string token_file;
  std::string ca_file;
  std::string kubeconfig;  // path of a kubeconfig file
  std::string node_name;   // "" = NODE_NAME, else the hostname
  // For tests: environment and service-account directory to use, and TLS
  // verification off (a stand-in API server with a throwaway certificate).
  // No configuration key or flag reaches these.
  std::map<std::string, std::string> env_for_test;
  bool use_env_for_test = false;
  bool insecure_for_test = false;
  std::string sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
};

// The API server to talk to, or an error saying why there is none (not in a
// cluster and nothing configured: Error::runtime; a broken kubeconfig:
// Error::bad_input).
Result<K8sConfig> k8s_config_discover(const K8sOptions& opt);
// The current context of a kubeconfig file's text (base_dir resolves relative paths).
Result<K8sConfig> k8s_config_from_kubeconfig(std::string_view yaml, const std::string& base_dir);

// A request to the API server for `path_and_query` ("/api/v1/pods?..."),
// GET with `Accept: application/json`, carrying the configuration's
// credentials (the token file re-read each time: service-account tokens
// rotate; at most 64 KiB of it) and TLS settings. Callers set the rest.
net::HttpRequest api_request(const K8sConfig& cfg, const std::string& path_and_query);

// The warning to log at start when TLS verification of the API server is off
// (it names the setting and the server); "" when verification is on.
std::string tls_warning(const K8sConfig& cfg);

}  // namespace vigil::state
