// The k8s: section and the Kubernetes flags as run and capture read them
// (engine/agent/k8s.h, discover_k8s): what is logged at start.
#include <unistd.h>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>

#include "engine/agent/k8s.h"
#include "engine/agent/parts.h"
#include "engine/config/config.h"
#include "engine/runtime/parts.h"
#include "engine/state/k8s_config.h"
#include "tests/support/temp_dir.h"

namespace vigil::agent {
namespace {

struct Logged {
  std::ostringstream text;
  std::shared_ptr<spdlog::logger> log;
  Logged() {
    log = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_st>(text));
    log->set_pattern("%l %v");
  }
};

const char* kKubeconfig = R"(current-context: c
clusters:
- name: lab
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: %s}
users:
- name: u
  user: {token: abc}
contexts:
- name: c
  context: {cluster: lab, user: u}
)";

std::string kubeconfig(bool insecure) {
  char buf[1024];
  std::snprintf(buf, sizeof(buf), kKubeconfig, insecure ? "true" : "false");
  return buf;
}

// Issue 16, item 10: TLS verification of the API server turned off by the
// kubeconfig was silent. vigil run and capture now warn at start, naming the
// kubeconfig and the server.
TEST(K8sSection, AKubeconfigThatSkipsVerificationIsWarnedAboutAtStart) {
  support::TempDir dir("vigil-k8s-section");
  K8sFlags flags;
  flags.kubeconfig = dir.write("kubeconfig", kubeconfig(true));
  YAML::Node cfg = YAML::Load("k8s: {node_name: n}\n");
  Logged l;
  runtime::Parts parts;
  auto k8s = discover_k8s(cfg, flags, *l.log, parts);
  ASSERT_TRUE(k8s) << k8s.error().message;
  ASSERT_TRUE(*k8s);
  EXPECT_TRUE((*k8s)->api_tls_verification_off());
  l.log->flush();
  const std::string out = l.text.str();
  EXPECT_NE(out.find("warning TLS verification of the Kubernetes API server https://127.0.0.1:6443 is OFF "
                     "(kubeconfig " +
                     flags.kubeconfig + ": insecure-skip-tls-verify: true in cluster 'lab')"),
            std::string::npos)
      << out;
}

TEST(K8sSection, AVerifiedServerIsNotWarnedAbout) {
  support::TempDir dir("vigil-k8s-section");
  YAML::Node cfg = YAML::Load("k8s: {node_name: n, kubeconfig: " + dir.write("kubeconfig", kubeconfig(false)) + "}\n");
  Logged l;
  runtime::Parts parts;
  auto k8s = discover_k8s(cfg, K8sFlags{}, *l.log, parts);
  ASSERT_TRUE(k8s) << k8s.error().message;
  ASSERT_TRUE(*k8s);
  EXPECT_FALSE((*k8s)->api_tls_verification_off());
  l.log->flush();
  EXPECT_EQ(l.text.str().find("warning"), std::string::npos) << l.text.str();
}

}  // namespace
}  // namespace vigil::agent
