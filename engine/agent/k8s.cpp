#include "engine/agent/k8s.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "engine/agent/parts.h"
#include "engine/config/config.h"
#include "engine/pipeline/metadata_wait.h"
#include "engine/runtime/runner.h"
#include "engine/state/cri_resolver.h"
#include "engine/state/pods.h"
#include "engine/state/state.h"

namespace vigil::agent {
using config::get_or;

Result<state::K8sOptions> k8s_options(const YAML::Node& cfg, const K8sFlags& flags) {
  state::K8sOptions o;
  struct Key {
    const char* key;
    std::string* dst;
  } keys[] = {{"k8s.api", &o.api_url},
              {"k8s.token_file", &o.token_file},
              {"k8s.ca_file", &o.ca_file},
              {"k8s.kubeconfig", &o.kubeconfig},
              {"k8s.node_name", &o.node_name}};
  for (const Key& k : keys) {
    auto v = get_or<std::string>(cfg, k.key, "");
    if (!v) return v.error();
    *k.dst = *v;
  }
  if (!flags.api.empty()) o.api_url = flags.api;
  if (!flags.token_file.empty()) o.token_file = flags.token_file;
  if (!flags.ca.empty()) o.ca_file = flags.ca;
  if (!flags.kubeconfig.empty()) o.kubeconfig = flags.kubeconfig;
  return o;
}

Result<std::optional<state::K8sConfig>> discover_k8s(const YAML::Node& cfg, const K8sFlags& flags, spdlog::logger& log,
                                                     runtime::Parts& parts) {
  auto opts = k8s_options(cfg, flags);
  if (!opts) return opts.error();
  auto k8s = state::k8s_config_discover(*opts);
  if (k8s) {
    if (std::string w = state::tls_warning(*k8s); !w.empty()) log.warn("{}", w);
    return std::optional<state::K8sConfig>(std::move(*k8s));
  }
  if (k8s.error().kind == Error::Kind::kBadInput) return k8s.error();
  // Outside Kubernetes these parts have nothing to do: said at info.
  record_part(parts, log, "k8s", false, k8s.error().message, /*warn=*/false);
  record_part(parts, log, "pod_resources", false, "no Kubernetes API", /*warn=*/false);
  return std::optional<state::K8sConfig>();
}

Result<std::uint64_t> pod_grace_ns(const YAML::Node& cfg) {
  const double def = static_cast<double>(state::Config{}.pod_grace_ns) / 1e9;
  auto s = get_or<double>(cfg, "k8s.pod_grace_s", def);
  if (!s) return s.error();
  return static_cast<std::uint64_t>(*s * 1e9);
}

Status retention(const YAML::Node& cfg, state::Config& sc) {
  auto pods = pod_grace_ns(cfg);
  if (!pods) return pods.error();
  const state::Config def;
  auto procs = get_or<double>(cfg, "state.process_grace_s", static_cast<double>(def.process_grace_ns) / 1e9);
  if (!procs) return procs.error();
  auto max = get_or<std::uint64_t>(cfg, "state.max_exited_processes", def.max_exited_processes);
  if (!max) return max.error();
  sc.pod_grace_ns = *pods;
  sc.process_grace_ns = static_cast<std::uint64_t>(*procs * 1e9);
  sc.max_exited_processes = static_cast<std::size_t>(*max);
  return {};
}

Result<pipeline::MetadataWaitOptions> metadata_wait_options(const YAML::Node& cfg) {
  pipeline::MetadataWaitOptions o;
  auto ms = get_or<std::uint64_t>(cfg, "k8s.metadata_wait_ms", static_cast<std::uint64_t>(o.wait.count()));
  if (!ms) return ms.error();
  auto max = get_or<std::uint64_t>(cfg, "k8s.metadata_wait_max_alerts", static_cast<std::uint64_t>(o.max_parked));
  if (!max) return max.error();
  o.wait = std::chrono::milliseconds(*ms);
  o.max_parked = static_cast<std::size_t>(*max);
  return o;
}

namespace {

// Whether the kubelet's pod-resources socket takes a connection: "" when it
// does, else why not.
std::string pod_resources_off(const std::string& path, util::CapSet caps) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) return "socket path too long: " + path;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::string("socket: ") + std::strerror(errno);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  const int err = errno;
  ::close(fd);
  if (rc == 0) return "";
  // Write access to the socket file is what connect needs: the owner's bits
  // as root, else CAP_DAC_OVERRIDE.
  return open_failure(path, err, "mount the host's /var/lib/kubelet/pod-resources", caps, {});
}

}  // namespace

Result<std::unique_ptr<state::CriResolver>> watch_runtime(const YAML::Node& cfg, state::State& st,
                                                          runtime::Runner& runner, spdlog::logger& log,
                                                          runtime::Parts& parts) {
  auto socket = get_or<std::string>(cfg, "cri.socket", "");
  if (!socket) return socket.error();
  auto timeout_ms = get_or<double>(cfg, "cri.timeout_ms", 2000);
  if (!timeout_ms) return timeout_ms.error();
  if (*socket == "off") {
    record_part(parts, log, "cri", false, "cri.socket: off", /*warn=*/false);
    return std::unique_ptr<state::CriResolver>();
  }
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(*timeout_ms));
  std::vector<std::string> candidates;
  if (!socket->empty()) {
    candidates.push_back(*socket);
  } else {
    for (const char* s : state::kCriSockets)
      if (::access(s, F_OK) == 0) candidates.emplace_back(s);
  }
  if (candidates.empty()) {
    record_part(parts, log, "cri", false, "no container runtime socket (looked for containerd's and CRI-O's)",
                /*warn=*/false);
    return std::unique_ptr<state::CriResolver>();
  }
  std::string why;
  for (const std::string& path : candidates) {
    state::CriClient probe(path, timeout);
    auto v = probe.version();
    if (!v) {
      why += (why.empty() ? "" : "; ") + v.error().message;
      continue;
    }
    auto r = std::make_unique<state::CriResolver>(state::CriResolver::Options{.socket = path, .timeout = timeout});
    if (Status s = r->start(); !s) return s.error();
    state::CriResolver* rp = r.get();
    st.set_unnamed_container_hook([rp](const state::Container& c) { rp->request(c.id); });
    if (Status s = runner.add_feed("cri", rp->wake_fd(), [rp, &st] { rp->drain(st); }); !s) return s.error();
    record_part(parts, log, "cri", true);
    log.info("asking the container runtime at {} ({}) for pods of new containers", path, *v);
    return r;
  }
  record_part(parts, log, "cri", false, why, /*warn=*/!socket->empty());
  return std::unique_ptr<state::CriResolver>();
}

Result<std::unique_ptr<state::PodWatcher>> watch_pods(const state::K8sConfig& k8s, state::State& st,
                                                      runtime::Runner& runner, spdlog::logger& log,
                                                      runtime::Parts& parts, std::function<void()> changed) {
  auto pods = std::make_unique<state::PodWatcher>(k8s);
  if (Status s = pods->start(); !s) return s.error();
  log.info("watching pods of node {} at {}", k8s.node_name, k8s.api_url);
  record_part(parts, log, "k8s", true);
  const std::string pr_off =
      pod_resources_off(k8s.pod_resources_socket, util::effective_caps().value_or(util::CapSet::all()));
  record_part(parts, log, "pod_resources", pr_off.empty(), pr_off);
  state::PodWatcher* w = pods.get();
  // Before the events of each turn (and each source's poll), and at once when
  // a pod is queued: an event never loses to a pod announced before it, and
  // the pod reaches the state (and a capture) before the events that need it.
  // After a drain that changed the state, `changed` (alerts waiting for
  // their pod go out).
  auto apply = [w, &st, changed = std::move(changed)] {
    if (w->drain(st) && changed) changed();
  };
  if (Status s = runner.add_feed("pods", w->wake_fd(), std::move(apply)); !s) return s.error();
  return pods;
}

}  // namespace vigil::agent
