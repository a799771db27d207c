// Where the Kubernetes API is: flags, kubeconfig, in-cluster (engine/state/k8s_config.h).
#include "engine/state/k8s_config.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace vigil::state {
namespace {

TEST(K8sConfig, InClusterFromEnvironmentAndServiceAccount) {
  K8sOptions o;
  o.use_env_for_test = true;
  o.env_for_test = {
      {"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}, {"NODE_NAME", "gpu-7"}};
  o.sa_dir = "/sa";
  auto c = k8s_config_discover(o);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->api_url, "https://10.96.0.1:443");
  EXPECT_EQ(c->token_file, "/sa/token");
  EXPECT_EQ(c->ca_file, "/sa/ca.crt");
  EXPECT_EQ(c->node_name, "gpu-7");

  o.env_for_test["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  EXPECT_EQ(k8s_config_discover(o)->api_url, "https://[fd00::1]:443");
  // No NODE_NAME: the hostname.
  o.env_for_test.erase("NODE_NAME");
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  EXPECT_EQ(k8s_config_discover(o)->node_name, host);
}

// Every request to the API server (the pod watch, the pod responses) carries
// the credentials of the moment: a rotated service-account token is read
// again, without its trailing newline; the configured token when the file
// cannot be read.
TEST(K8sConfig, ApiRequestsCarryTheCurrentTokenAndTheTlsSettings) {
  char dir[] = "/tmp/vigil-k8s-token-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string token = std::string(dir) + "/token";
  K8sConfig c;
  c.api_url = "https://10.96.0.1:443";
  c.token = "fallback";
  c.token_file = token;
  c.ca_file = "/sa/ca.crt";
  c.client_cert_pem = "CERT";
  c.insecure = true;
  c.connect_timeout = std::chrono::seconds(7);
  auto write = [&](const char* text) {
    FILE* f = std::fopen(token.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(text, f);
    std::fclose(f);
  };
  write("first\n");
  net::HttpRequest r = api_request(c, "/api/v1/pods?limit=100");
  EXPECT_EQ(r.url, "https://10.96.0.1:443/api/v1/pods?limit=100");
  EXPECT_EQ(r.bearer_token, "first");
  EXPECT_EQ(r.tls.ca_file, "/sa/ca.crt");
  EXPECT_EQ(r.tls.cert_pem, "CERT");
  EXPECT_FALSE(r.tls.verify);
  EXPECT_EQ(r.connect_timeout, std::chrono::seconds(7));
  write("rotated \r\n");
  EXPECT_EQ(api_request(c, "/").bearer_token, "rotated");
  ::unlink(token.c_str());
  EXPECT_EQ(api_request(c, "/").bearer_token, "fallback");
  ::rmdir(dir);
}

TEST(K8sConfig, NoApiAtAllIsAClearRuntimeError) {
  K8sOptions o;
  o.use_env_for_test = true;
  auto c = k8s_config_discover(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, Error::Kind::kRuntime);
  EXPECT_NE(c.error().message.find("KUBERNETES_SERVICE_HOST"), std::string::npos);
}

TEST(K8sConfig, ExplicitUrlWins) {
  K8sOptions o;
  o.use_env_for_test = true;
  o.env_for_test = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}};
  o.api_url = "https://127.0.0.1:6443/";
  o.token_file = "/tmp/t";
  o.insecure_for_test = true;
  o.node_name = "n";
  auto c = k8s_config_discover(o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->api_url, "https://127.0.0.1:6443");
  EXPECT_EQ(c->token_file, "/tmp/t");
  EXPECT_TRUE(c->insecure);
  EXPECT_TRUE(c->api_tls_verification_off());
}

// Issue 16, item 6: a kubeconfig is YAML from outside too; deep nesting is
// refused at once with the file and position.
TEST(K8sConfig, DeeplyNestedKubeconfigIsRefusedAtOnce) {
  char path[] = "/tmp/vigil_kubeconfig_XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string text = "clusters: " + std::string(100000, '[') + "\n";
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
  K8sOptions o;
  o.use_env_for_test = true;
  o.kubeconfig = path;
  auto c = k8s_config_discover(o);
  ::unlink(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, Error::Kind::kBadInput);
  EXPECT_EQ(c.error().message, std::string(path) + ": kubeconfig:1:74: nested deeper than 64 levels (the limit)");
}

// Issue 16, item 10: insecure-skip-tls-verify in a kubeconfig turned off
// verification for the server that receives the token, without a word. It is
// still honoured (as kubectl does) but says so: the warning names the
// kubeconfig, the cluster and the server, and metrics can read it.
TEST(K8sConfig, KubeconfigThatSkipsVerificationIsNamedInTheWarning) {
  char path[] = "/tmp/vigil_kubeconfig_XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string text = R"(current-context: c
clusters:
- name: lab
  cluster: {server: "https://10.1.2.3:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: abc}
contexts:
- name: c
  context: {cluster: lab, user: u}
)";
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
  K8sOptions o;
  o.use_env_for_test = true;
  o.kubeconfig = path;
  o.node_name = "n";
  auto c = k8s_config_discover(o);
  ::unlink(path);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->api_tls_verification_off());
  EXPECT_EQ(tls_warning(*c),
            "TLS verification of the Kubernetes API server https://10.1.2.3:6443 is OFF (kubeconfig " +
                std::string(path) +
                ": insecure-skip-tls-verify: true in cluster 'lab'): its certificate is not checked, so "
                "whoever answers at that address receives the bearer token and can feed vigil false pod "
                "metadata");
}

TEST(K8sConfig, VerifiedServerHasNoWarning) {
  K8sOptions o;
  o.use_env_for_test = true;
  o.api_url = "https://127.0.0.1:6443";
  o.node_name = "n";
  auto c = k8s_config_discover(o);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->api_tls_verification_off());
  EXPECT_EQ(tls_warning(*c), "");
}

TEST(K8sConfig, Kubeconfig) {
  const char* kYaml = R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: dev
  cluster: {server: "https://dev:6443"}
- name: prod-cluster
  cluster:
    server: https://prod.example:6443/
    certificate-authority: certs/ca.pem
users:
- name: admin
  user:
    token: abc123
    client-certificate-data: aGVsbG8=
contexts:
- name: prod
  context: {cluster: prod-cluster, user: admin}
)";
  auto c = k8s_config_from_kubeconfig(kYaml, "/home/u/.kube");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->api_url, "https://prod.example:6443");
  EXPECT_EQ(c->ca_file, "/home/u/.kube/certs/ca.pem");
  EXPECT_EQ(c->token, "abc123");
  EXPECT_EQ(c->client_cert_pem, "hello");

  auto bad = k8s_config_from_kubeconfig("current-context: nope\ncontexts: []\n", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, Error::Kind::kBadInput);
  EXPECT_FALSE(k8s_config_from_kubeconfig(": : [", "").ok());
  EXPECT_FALSE(k8s_config_from_kubeconfig("- a\n- b\n", "").ok());
}

}  // namespace
}  // namespace vigil::state
