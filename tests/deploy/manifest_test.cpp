// The Kubernetes manifests of deploy/ against what they must agree with: the
// capability table of docs/install.md, vigil's configuration schema, the
// webserver the probes and the scrape use, and the files kustomize reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "engine/config/config.h"
#include "engine/posture/posture.h"
#include "engine/util/version.h"
#include "tests/deploy/manifest.h"
#include "tests/support/temp_dir.h"

namespace vigil::deploy_test {
namespace {

std::string join(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
}

bool same_yaml(const YAML::Node& a, const YAML::Node& b) {
  YAML::Emitter ea, eb;
  ea << a;
  eb << b;
  return std::string(ea.c_str()) == std::string(eb.c_str());
}

// The port of a "host:port" listen address ("0.0.0.0:8765", "[::]:8765").
int listen_port(const std::string& listen) {
  const auto colon = listen.rfind(':');
  return colon == std::string::npos ? -1 : std::stoi(listen.substr(colon + 1));
}

class Manifest : public ::testing::Test {
 protected:
  void SetUp() override {
    agent_ = load_agent();
    ASSERT_TRUE(agent_.daemonset) << "deploy/daemonset.yaml has no DaemonSet";
    ASSERT_TRUE(agent_.container) << "the DaemonSet has no container named vigil";
    ASSERT_TRUE(agent_.config) << "no ConfigMap with vigil.yaml is mounted into the container";
  }
  // The container port named `metrics`; -1 when there is none.
  int metrics_port() const {
    for (const YAML::Node& p : agent_.container["ports"]) {
      if (p["name"] && p["name"].as<std::string>() == "metrics") return p["containerPort"].as<int>();
    }
    return -1;
  }
  Agent agent_;
};

TEST(CapabilityTable, NeedsCellRule) {
  EXPECT_EQ(required_capabilities("CAP_BPF + CAP_PERFMON (or CAP_SYS_ADMIN before 5.8)"),
            (std::set<std::string>{"BPF", "PERFMON"}));
  EXPECT_EQ(required_capabilities("`CAP_SYS_PTRACE` or `CAP_SYS_ADMIN`"), (std::set<std::string>{"SYS_PTRACE"}));
  EXPECT_EQ(required_capabilities("CAP_NET_ADMIN (cgroup programs (connect, DNS))"),
            (std::set<std::string>{"NET_ADMIN"}));
  EXPECT_TRUE(required_capabilities("none").empty());
  EXPECT_TRUE(required_capabilities("—").empty());
  EXPECT_EQ(paths_in("`/sys/fs/cgroup` (read-only), /dev/kmsg; host PID namespace"),
            (std::vector<std::string>{"/sys/fs/cgroup", "/dev/kmsg"}));
}

TEST(CapabilityTable, ParsesRowsByHeaderAndMarkers) {
  std::string err;
  const auto rows = capability_table(
      "x\n<!-- capability-table:begin -->\n| Part | Needs (capabilities) | Mounts/files | Without it |\n"
      "|---|---|---|---|\n| Probes | CAP_BPF | `/sys/kernel/btf` | nothing |\n"
      "| cuda plugin (opt-in) | CAP_SYS_ADMIN | | no CUDA |\n<!-- capability-table:end -->\n",
      &err);
  ASSERT_EQ(rows.size(), 2u) << err;
  EXPECT_EQ(rows[0].part, "Probes");
  EXPECT_EQ(rows[0].mounts, "`/sys/kernel/btf`");
  EXPECT_FALSE(rows[0].opt_in);
  EXPECT_TRUE(rows[1].opt_in);
  EXPECT_TRUE(capability_table("| Part | Needs | Mounts/files |\n", &err).empty());
  EXPECT_NE(err.find("markers"), std::string::npos);
}

// The DaemonSet adds exactly the capabilities of the parts that are on by
// default (rows not marked opt-in), by the rule of required_capabilities.
TEST_F(Manifest, CapabilitiesAreTheDocumentedSet) {
  std::string err;
  const auto rows = capability_table(support::read_file("docs/install.md"), &err);
  ASSERT_FALSE(rows.empty()) << "docs/install.md: " << err;
  std::set<std::string> documented;
  for (const auto& r : rows) {
    if (r.opt_in) continue;
    for (const auto& c : required_capabilities(r.needs)) documented.insert(c);
  }
  std::set<std::string> added;
  for (const YAML::Node& c : dig(agent_.container, {"securityContext", "capabilities", "add"})) {
    added.insert(capability_name(c.as<std::string>()));
  }
  EXPECT_EQ(added, documented) << "securityContext.capabilities.add: " << join(added)
                               << "\ndocs/install.md capability table: " << join(documented);
  EXPECT_FALSE(dig(agent_.container, {"securityContext", "privileged"}).as<bool>(false));
  EXPECT_TRUE(agent_.pod["hostPID"].as<bool>(false)) << "the agent must see every process";
}

// Every host path the pod mounts is documented: in the table's Mounts/files
// column (the path itself, a file under it such as /sys/kernel/btf/vmlinux,
// or a directory above it), else by name elsewhere in docs/install.md (the
// state directory is a configuration key); and it is mounted at the same
// path in the container (vigil reads them where the host has them), or, for
// the posture's files, at that path under posture.host_root.
bool names_path(const std::string& text, const std::string& path) {
  for (auto at = text.find(path); at != std::string::npos; at = text.find(path, at + 1)) {
    const std::size_t end = at + path.size();
    const bool starts = at == 0 || std::string_view(" `(").find(text[at - 1]) != std::string_view::npos;
    const bool ends = end == text.size() || std::string_view(" `),;:").find(text[end]) != std::string_view::npos;
    if (starts && ends) return true;
  }
  return false;
}

TEST_F(Manifest, HostPathsAreDocumentedAndMountedInPlace) {
  const std::string doc = support::read_file("docs/install.md");
  std::string err;
  const auto rows = capability_table(doc, &err);
  ASSERT_FALSE(rows.empty()) << "docs/install.md: " << err;
  std::set<std::string> documented;
  for (const auto& r : rows) {
    for (const auto& p : paths_in(r.mounts)) documented.insert(p);
  }
  const auto in_table = [&](const std::string& path) {
    for (const auto& d : documented) {
      if (d == path || d.rfind(path + "/", 0) == 0 || path.rfind(d + "/", 0) == 0) return true;
    }
    return false;
  };
  int host_paths = 0;
  for (const YAML::Node& v : agent_.pod["volumes"]) {
    if (!v["hostPath"]) continue;
    ++host_paths;
    const std::string path = dig(v, {"hostPath", "path"}).as<std::string>();
    EXPECT_TRUE(in_table(path) || names_path(doc, path))
        << "hostPath " << path << " is neither in the capability table (" << join(documented)
        << ") nor named in docs/install.md";
    bool mounted = false;
    const std::string host_root = scalar_or(dig(agent_.config, {"posture", "host_root"}), "/");
    for (const YAML::Node& m : agent_.container["volumeMounts"]) {
      if (m["name"].as<std::string>() != v["name"].as<std::string>()) continue;
      mounted = true;
      const std::string at = m["mountPath"].as<std::string>();
      EXPECT_TRUE(at == path || (host_root != "/" && at == host_root + path))
          << "volume " << v["name"].as<std::string>() << ": hostPath " << path << " mounted at " << at;
    }
    EXPECT_TRUE(mounted) << "hostPath volume " << v["name"].as<std::string>() << " is not mounted";
  }
  EXPECT_GT(host_paths, 0);
}

// The mount of the container that holds `path` (the mount itself or a
// directory above it), the deepest; a null node when none does.
YAML::Node mount_holding(const Agent& a, const std::string& path) {
  YAML::Node best(YAML::NodeType::Null);
  std::size_t best_len = 0;
  for (const YAML::Node& m : a.container["volumeMounts"]) {
    const std::string at = m["mountPath"].as<std::string>();
    if ((path == at || path.rfind(at + "/", 0) == 0) && at.size() > best_len) {
      best.reset(m);
      best_len = at.size();
    }
  }
  return best;
}

YAML::Node volume_named(const Agent& a, const std::string& name) {
  for (const YAML::Node& v : a.pod["volumes"]) {
    if (v["name"].as<std::string>() == name) return v;
  }
  return YAML::Node(YAML::NodeType::Null);
}

// The posture reads the host's files under posture.host_root (engine/posture:
// the package database, the toolkit's config.toml, the bin directories): each
// is under a read-only mount there of the same host directory, so that the
// facts are the host's and not the image's (issue 24). The driver's proc/ and
// sys/ files are read under posture.kernel_root: the container's own "/"
// (the kernel's, with hostPID), or mounts as well. A hostPath mount never
// makes a directory on the host for a file that may be absent (the toolkit's
// two config directories): each is of type Directory (checked, never made)
// and holds a directory every host has; the one exception is the package
// database's /var/lib/dpkg (DirectoryOrCreate: docs/install.md says why).
TEST_F(Manifest, PostureReadsTheHostWhereItIsMounted) {
  const std::string host_root = scalar_or(dig(agent_.config, {"posture", "host_root"}), "");
  ASSERT_FALSE(host_root.empty()) << "the ConfigMap sets no posture.host_root: the posture would read the image";
  ASSERT_NE(host_root, "/") << "the container's / is the image's";
  ASSERT_EQ(host_root.front(), '/');
  ASSERT_NE(host_root.back(), '/');
  const std::string kernel_root = scalar_or(dig(agent_.config, {"posture", "kernel_root"}), host_root);

  const auto check = [&](const std::string& root, std::string_view rel) {
    const std::string path = root + "/" + std::string(rel);
    const YAML::Node m = mount_holding(agent_, path);
    ASSERT_TRUE(m) << "posture reads " << path << " (posture." << (root == host_root ? "host_root" : "kernel_root")
                   << "), which no volumeMount holds";
    const std::string at = m["mountPath"].as<std::string>();
    ASSERT_EQ(at.rfind(root + "/", 0), 0u) << path << " is held by " << at << ", not a mount under " << root;
    EXPECT_TRUE(m["readOnly"].as<bool>(false)) << at << " must be read-only";
    const YAML::Node v = volume_named(agent_, m["name"].as<std::string>());
    ASSERT_TRUE(v && v["hostPath"]) << at << " is not a hostPath";
    const std::string host = dig(v, {"hostPath", "path"}).as<std::string>();
    EXPECT_EQ(root + host, at) << "the host's " << host << " must be mounted at " << root << host;
    const std::string type = scalar_or(dig(v, {"hostPath", "type"}), "");
    if (host == "/var/lib/dpkg") {
      EXPECT_TRUE(type == "Directory" || type == "DirectoryOrCreate") << host << ": type " << type;
    } else {
      EXPECT_EQ(type, "Directory") << host << " (holding " << rel << "): a hostPath of another type is made on a "
                                   << "host that lacks it; mount a directory every host has";
    }
    if (rel.rfind("etc/nvidia-container-", 0) == 0) {
      // Either, both or neither of the toolkit's directories is on a host.
      const std::string own = "/" + std::string(rel.substr(0, rel.rfind('/')));
      EXPECT_FALSE(host == own || host.rfind(own + "/", 0) == 0)
          << host << " is mounted itself: a node without it would not start the pod";
    }
  };
  for (std::string_view rel : posture::host_paths()) check(host_root, rel);
  if (kernel_root != "/") {
    for (std::string_view rel : posture::kernel_paths()) check(kernel_root, rel);
  } else {
    EXPECT_TRUE(agent_.pod["hostPID"].as<bool>(false)) << "kernel_root / reads the container's /proc";
  }
  // Every mount under the host root is one of those: read-only, the host's
  // same directory.
  for (const YAML::Node& m : agent_.container["volumeMounts"]) {
    const std::string at = m["mountPath"].as<std::string>();
    if (at.rfind(host_root + "/", 0) != 0) continue;
    EXPECT_TRUE(m["readOnly"].as<bool>(false)) << at;
    const YAML::Node v = volume_named(agent_, m["name"].as<std::string>());
    ASSERT_TRUE(v && v["hostPath"]) << at;
    EXPECT_EQ(host_root + dig(v, {"hostPath", "path"}).as<std::string>(), at);
  }
}

// A read-only hostPath is read-only below its top too: on a hybrid host
// /sys/fs/cgroup holds a mount per hierarchy, /run/containerd the containers'
// root filesystems, and a plain readOnly leaves those writable (Kubernetes
// < 1.30 and runtimes without recursive read-only mounts do just that).
TEST_F(Manifest, ReadOnlyHostPathsAreReadOnlyAllTheWayDown) {
  int read_only = 0;
  for (const YAML::Node& m : agent_.container["volumeMounts"]) {
    const YAML::Node v = volume_named(agent_, m["name"].as<std::string>());
    if (!v || !v["hostPath"] || !m["readOnly"].as<bool>(false)) continue;
    ++read_only;
    const std::string r = scalar_or(m["recursiveReadOnly"], "");
    EXPECT_TRUE(r == "IfPossible" || r == "Enabled") << m["mountPath"].as<std::string>() << ": recursiveReadOnly " << r;
    EXPECT_FALSE(m["mountPropagation"]) << "recursiveReadOnly needs the default propagation";
  }
  EXPECT_GT(read_only, 0);
}

// The ConfigMap's vigil.yaml passes vigil's own schema (the check `vigil run
// -c` makes before anything starts), and the container reads that file.
TEST_F(Manifest, ConfigMapPassesTheSchemaAndIsTheFileVigilReads) {
  support::TempDir dir("vigil-manifest");
  const std::string path = dir.write("vigil.yaml", agent_.config_text);
  const auto loaded = config::load_config(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;

  const auto args = agent_.container["args"].as<std::vector<std::string>>();
  ASSERT_GE(args.size(), 3u);
  EXPECT_EQ(args[0], "run");
  const auto c = std::find(args.begin(), args.end(), "-c");
  ASSERT_NE(c, args.end());
  ASSERT_NE(c + 1, args.end());
  EXPECT_EQ(*(c + 1), agent_.config_mount + "/vigil.yaml");
}

// The probes and the scrape reach the webserver the ConfigMap turns on.
TEST_F(Manifest, ProbesAndScrapeUseTheWebserver) {
  const YAML::Node web = agent_.config["webserver"];
  ASSERT_TRUE(web) << "the ConfigMap has no webserver section";
  EXPECT_TRUE(web["enabled"].as<bool>(false)) << "webserver.enabled must be true: the probes need it";
  const int port = listen_port(web["listen"].as<std::string>(""));
  EXPECT_EQ(metrics_port(), port) << "containerPort `metrics` vs webserver.listen";
  EXPECT_EQ(web["listen"].as<std::string>("").rfind("127.", 0), std::string::npos)
      << "the kubelet probes the pod's address, not loopback";

  const auto probe_port = [&](const YAML::Node& probe) {
    const YAML::Node p = dig(probe, {"httpGet", "port"});
    if (!p) return -1;
    const std::string s = p.as<std::string>();
    return s == "metrics" ? metrics_port() : p.as<int>();
  };
  const YAML::Node& ct = agent_.container;
  ASSERT_TRUE(ct["livenessProbe"]) << "no livenessProbe";
  ASSERT_TRUE(ct["readinessProbe"]) << "no readinessProbe";
  EXPECT_EQ(dig(ct, {"livenessProbe", "httpGet", "path"}).as<std::string>(""), "/healthz");
  EXPECT_EQ(probe_port(ct["livenessProbe"]), port);
  EXPECT_EQ(dig(ct, {"readinessProbe", "httpGet", "path"}).as<std::string>(""), "/readyz");
  EXPECT_EQ(probe_port(ct["readinessProbe"]), port);
  if (ct["startupProbe"]) {
    EXPECT_EQ(probe_port(ct["startupProbe"]), port);
  }

  const YAML::Node ann = dig(agent_.daemonset, {"spec", "template", "metadata", "annotations"});
  EXPECT_EQ(ann["prometheus.io/scrape"].as<std::string>(""), "true");
  EXPECT_EQ(ann["prometheus.io/port"].as<std::string>(""), std::to_string(port));
  EXPECT_EQ(ann["prometheus.io/path"].as<std::string>(""), "/metrics");
}

// Requests and limits are set for CPU and memory (docs/performance.md has the
// measurement behind them), and the memory request fits in the limit.
TEST_F(Manifest, ResourcesAreSet) {
  const YAML::Node r = agent_.container["resources"];
  for (const char* what : {"requests", "limits"}) {
    for (const char* res : {"cpu", "memory"}) {
      EXPECT_TRUE(r[what] && r[what][res]) << "resources." << what << "." << res << " is not set";
    }
  }
  const auto mib = [](const std::string& q) {
    if (q.size() > 2 && q.substr(q.size() - 2) == "Mi") return std::stod(q.substr(0, q.size() - 2));
    if (q.size() > 2 && q.substr(q.size() - 2) == "Gi") return 1024 * std::stod(q.substr(0, q.size() - 2));
    return -1.0;
  };
  const double req = mib(dig(r, {"requests", "memory"}).as<std::string>(""));
  const double lim = mib(dig(r, {"limits", "memory"}).as<std::string>(""));
  ASSERT_GT(req, 0) << "memory request in Mi or Gi";
  ASSERT_GT(lim, 0) << "memory limit in Mi or Gi";
  EXPECT_LE(req, lim);
}

// An update keeps detection on most nodes: a few pods at a time, the old one
// gone before the new one starts, a new one counted only once it has stayed
// ready a while.
TEST_F(Manifest, RollingUpdateKeepsMostNodesWatched) {
  const YAML::Node s = agent_.daemonset["spec"];
  EXPECT_EQ(dig(s, {"updateStrategy", "type"}).as<std::string>(""), "RollingUpdate");
  const std::string max_unavailable = dig(s, {"updateStrategy", "rollingUpdate", "maxUnavailable"}).as<std::string>("");
  ASSERT_FALSE(max_unavailable.empty()) << "set maxUnavailable (the default, 1, is slow on big clusters)";
  if (max_unavailable.back() == '%') {
    EXPECT_LE(std::stoi(max_unavailable), 25) << "maxUnavailable " << max_unavailable;
  }
  EXPECT_EQ(dig(s, {"updateStrategy", "rollingUpdate", "maxSurge"}).as<std::string>("0"), "0");
  EXPECT_GT(s["minReadySeconds"].as<int>(0), 0);
}

TEST_F(Manifest, ImageIsThisVersion) {
  const std::string image = agent_.container["image"].as<std::string>("");
  EXPECT_EQ(image, std::string("vigil:") + kVersion);
  const YAML::Node k = YAML::LoadFile("deploy/kustomization.yaml");
  ASSERT_TRUE(k["images"]);
  EXPECT_EQ(k["images"][0]["name"].as<std::string>(""), "vigil");
  EXPECT_EQ(k["images"][0]["newTag"].as<std::string>(""), kVersion);
}

// deploy/Dockerfile and deploy/build-image.sh make the same image: the
// Dockerfile installs the package list the script uses (not a list of its
// own), on the Debian release the script bootstraps, and has the ENTRYPOINT
// and CMD lines the script copies.
TEST(Dockerfile, InStepWithTheOfflineBuild) {
  const std::string docker = support::read_file("deploy/Dockerfile");
  const std::string script = support::read_file("deploy/build-image.sh");
  ASSERT_FALSE(docker.empty());
  ASSERT_FALSE(script.empty());
  EXPECT_NE(docker.find("COPY deploy/image-packages.txt "), std::string::npos);
  EXPECT_NE(docker.find("image-packages.txt | xargs apt-get install"), std::string::npos);
  std::size_t installs = 0;
  for (auto at = docker.find("apt-get install"); at != std::string::npos; at = docker.find("apt-get install", at + 1)) {
    ++installs;
  }
  EXPECT_EQ(installs, 1u) << "one apt-get install, from deploy/image-packages.txt (no hand-kept list)";
  EXPECT_NE(docker.find("\nFROM debian:12-slim\n"), std::string::npos);
  EXPECT_NE(script.find(" bookworm "), std::string::npos) << "Debian 12 is bookworm";
  EXPECT_NE(docker.find("\nENTRYPOINT [\"/usr/sbin/vigil\"]\n"), std::string::npos);
  EXPECT_NE(docker.find("\nCMD ["), std::string::npos);
  EXPECT_NE(script.find("grep -m1 '^ENTRYPOINT ' deploy/Dockerfile"), std::string::npos);
  EXPECT_NE(script.find("grep -m1 '^CMD ' deploy/Dockerfile"), std::string::npos);
}

// kustomize reads these files: each exists and parses, the DaemonSet is among
// them, and the PodMonitor example selects the DaemonSet's pods and port.
TEST(Kustomization, ListsFilesThatExistAndParse) {
  const YAML::Node k = YAML::LoadFile("deploy/kustomization.yaml");
  EXPECT_EQ(k["kind"].as<std::string>(""), "Kustomization");
  bool daemonset = false;
  for (const YAML::Node& r : k["resources"]) {
    const std::string f = "deploy/" + r.as<std::string>();
    ASSERT_TRUE(std::filesystem::exists(f)) << f;
    const auto docs = load_documents(f);
    EXPECT_FALSE(docs.empty()) << f;
    if (find_kind(docs, "DaemonSet")) daemonset = true;
  }
  EXPECT_TRUE(daemonset) << "no resource of deploy/kustomization.yaml holds the DaemonSet";
}

TEST(Kustomization, PodMonitorSelectsTheAgent) {
  const auto pm = find_kind(load_documents("deploy/podmonitor.yaml"), "PodMonitor");
  ASSERT_TRUE(pm);
  const Agent a = load_agent();
  ASSERT_TRUE(a.daemonset);
  EXPECT_EQ(dig(pm, {"metadata", "namespace"}).as<std::string>(""),
            dig(a.daemonset, {"metadata", "namespace"}).as<std::string>(""));
  const YAML::Node labels = dig(a.daemonset, {"spec", "template", "metadata", "labels"});
  for (const auto& kv : dig(pm, {"spec", "selector", "matchLabels"})) {
    EXPECT_EQ(labels[kv.first.as<std::string>()].as<std::string>(""), kv.second.as<std::string>())
        << "matchLabels " << kv.first.as<std::string>();
  }
  const YAML::Node eps = dig(pm, {"spec", "podMetricsEndpoints"});
  ASSERT_TRUE(eps.IsSequence() && eps.size() > 0) << "no podMetricsEndpoints";
  const YAML::Node ep = eps[0];
  EXPECT_EQ(ep["port"].as<std::string>(""), "metrics");
  EXPECT_EQ(ep["path"].as<std::string>(""), "/metrics");
}

// The default DaemonSet only reads pods; the pod responses' rights (patch,
// delete) are a separate, opt-in file bound to the same service account.
TEST(Rbac, TheDefaultOnlyReadsPodsAndResponsesAreOptIn) {
  const auto role = find_kind(load_documents("deploy/daemonset.yaml"), "ClusterRole");
  ASSERT_TRUE(role);
  for (const YAML::Node& r : role["rules"])
    for (const YAML::Node& v : r["verbs"]) {
      const std::string verb = v.as<std::string>("");
      EXPECT_TRUE(verb == "get" || verb == "list" || verb == "watch") << "the default grants " << verb;
    }
  const auto docs = load_documents("deploy/responses/rbac.yaml");
  const auto responses = find_kind(docs, "ClusterRole", "vigil-responses");
  ASSERT_TRUE(responses);
  ASSERT_EQ(responses["rules"].size(), 1u);
  EXPECT_EQ(responses["rules"][0]["resources"][0].as<std::string>(""), "pods");
  std::set<std::string> verbs;
  for (const YAML::Node& v : responses["rules"][0]["verbs"]) verbs.insert(v.as<std::string>(""));
  EXPECT_EQ(verbs, (std::set<std::string>{"patch", "delete"}));
  const auto binding = find_kind(docs, "ClusterRoleBinding", "vigil-responses");
  ASSERT_TRUE(binding);
  EXPECT_EQ(binding["subjects"][0]["name"].as<std::string>(""), "vigil");
  EXPECT_EQ(binding["subjects"][0]["namespace"].as<std::string>(""), "vigil");
  const YAML::Node k = YAML::LoadFile("deploy/kustomization.yaml");
  for (const YAML::Node& r : k["resources"])
    EXPECT_EQ(r.as<std::string>("").find("responses"), std::string::npos) << "opt-in only";
}

std::set<std::string> added_capabilities(const Agent& a) {
  std::set<std::string> added;
  for (const YAML::Node& c : dig(a.container, {"securityContext", "capabilities", "add"})) {
    added.insert(capability_name(c.as<std::string>()));
  }
  return added;
}

// The rows of the capability table the responses overlay grants: their Part
// cell names deploy/responses/ (and says opt-in).
std::vector<CapabilityRow> overlay_rows() {
  std::string err;
  std::vector<CapabilityRow> out;
  for (auto& r : capability_table(support::read_file("docs/install.md"), &err)) {
    if (r.part.find("deploy/responses/") != std::string::npos) out.push_back(r);
  }
  return out;
}

// The JSON 6902 applier the overlay tests use, on what kustomize does with
// one: add at the end, at an index and by key, replace, remove and test.
TEST(JsonPatch, AppliesAsKustomizeDoes) {
  YAML::Node doc = YAML::Load("spec: {args: [run, -c], caps: {add: [BPF]}, mounts: [{name: a, ro: true}]}");
  const YAML::Node ops = YAML::Load(
      "- {op: test, path: /spec/mounts/0/name, value: a}\n"
      "- {op: add, path: /spec/caps/add/-, value: KILL}\n"
      "- {op: add, path: /spec/args/1, value: x}\n"
      "- {op: replace, path: /spec/mounts/0/ro, value: false}\n"
      "- {op: add, path: /spec/new~1key, value: 1}\n"
      "- {op: remove, path: /spec/args/0}\n");
  ASSERT_EQ(apply_json_patch(doc, ops), "");
  EXPECT_EQ(doc["spec"]["caps"]["add"].as<std::vector<std::string>>(), (std::vector<std::string>{"BPF", "KILL"}));
  EXPECT_EQ(doc["spec"]["args"].as<std::vector<std::string>>(), (std::vector<std::string>{"x", "-c"}));
  EXPECT_FALSE(doc["spec"]["mounts"][0]["ro"].as<bool>(true));
  EXPECT_EQ(doc["spec"]["new/key"].as<int>(0), 1);
  EXPECT_NE(apply_json_patch(doc, YAML::Load("- {op: test, path: /spec/mounts/0/name, value: b}")), "");
  EXPECT_NE(apply_json_patch(doc, YAML::Load("- {op: replace, path: /spec/nothing/here, value: 1}")), "");
  EXPECT_NE(apply_json_patch(doc, YAML::Load("- {op: move, from: /spec/args, path: /spec/x}")), "");
}

// deploy/responses/ builds, the way kustomize does, into the default's
// documents with the responses' RBAC and its patch applied to the DaemonSet.
TEST(ResponsesOverlay, ParsesAndAppliesToTheDaemonSet) {
  const YAML::Node k = YAML::LoadFile("deploy/responses/kustomization.yaml");
  EXPECT_EQ(k["kind"].as<std::string>(""), "Kustomization");
  std::string err;
  const auto docs = build_kustomization("deploy/responses", &err);
  ASSERT_EQ(err, "");
  const Agent overlay = agent_from(docs);
  ASSERT_TRUE(overlay.daemonset && overlay.container && overlay.config) << "the overlay lost the DaemonSet";
  // The base is the default, whole: every document of deploy/ is there.
  std::string base_err;
  const auto base = build_kustomization("deploy", &base_err);
  ASSERT_EQ(base_err, "");
  for (const YAML::Node& d : base) {
    EXPECT_TRUE(find_kind(docs, d["kind"].as<std::string>(), dig(d, {"metadata", "name"}).as<std::string>()))
        << d["kind"].as<std::string>();
  }
  EXPECT_TRUE(find_kind(docs, "ClusterRole", "vigil-responses"));
  EXPECT_TRUE(find_kind(docs, "ClusterRoleBinding", "vigil-responses"));
  // The mode the operator picks is on the command line, after the
  // ConfigMap's -c: monitor as shipped, or enforce.
  const auto args = overlay.container["args"].as<std::vector<std::string>>();
  const auto o = std::find(args.begin(), args.end(), "-o");
  ASSERT_NE(o, args.end());
  ASSERT_NE(o + 1, args.end());
  EXPECT_TRUE(*(o + 1) == "prevention.mode=monitor" || *(o + 1) == "prevention.mode=enforce") << *(o + 1);
  support::TempDir dir("vigil-manifest");
  const auto loaded = config::load_config(dir.write("vigil.yaml", overlay.config_text), {*(o + 1)});
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
}

// The overlay adds what the table's responses rows require, and nothing
// else; the default adds none of it and keeps the mode off.
TEST(ResponsesOverlay, GrantsExactlyTheResponsesRows) {
  const auto rows = overlay_rows();
  ASSERT_GE(rows.size(), 2u) << "docs/install.md: no capability table rows for deploy/responses/";
  std::set<std::string> caps, paths;
  for (const auto& r : rows) {
    EXPECT_TRUE(r.opt_in) << r.part << ": the responses are opt-in";
    for (const auto& c : required_capabilities(r.needs)) caps.insert(c);
    for (const auto& p : paths_in(r.mounts)) paths.insert(p);
  }
  EXPECT_TRUE(caps.count("KILL")) << "the kill response needs CAP_KILL";
  EXPECT_TRUE(paths.count("/sys/fs/cgroup")) << "the freeze response writes the cgroup filesystem";

  const Agent base = load_agent();
  std::string err;
  const Agent overlay = agent_from(build_kustomization("deploy/responses", &err));
  ASSERT_EQ(err, "");
  ASSERT_TRUE(base.container && overlay.container);
  std::set<std::string> expected = added_capabilities(base);
  for (const auto& c : caps) {
    EXPECT_FALSE(expected.count(c)) << "the default DaemonSet adds " << c << ", which only the responses need";
    expected.insert(c);
  }
  EXPECT_EQ(added_capabilities(overlay), expected) << "overlay: " << join(added_capabilities(overlay))
                                                   << "\nthe default's and the responses rows': " << join(expected);
  EXPECT_EQ(dig(overlay.container, {"securityContext", "capabilities", "drop"}).as<std::vector<std::string>>(),
            dig(base.container, {"securityContext", "capabilities", "drop"}).as<std::vector<std::string>>());
  EXPECT_FALSE(dig(overlay.container, {"securityContext", "privileged"}).as<bool>(false));

  // The same volumes and mounts; only the rows' paths turn writable, and
  // they are read-only in the default.
  ASSERT_EQ(overlay.pod["volumes"].size(), base.pod["volumes"].size());
  for (std::size_t i = 0; i < base.pod["volumes"].size(); ++i) {
    EXPECT_TRUE(same_yaml(overlay.pod["volumes"][i], base.pod["volumes"][i])) << "volume " << i;
  }
  ASSERT_EQ(overlay.container["volumeMounts"].size(), base.container["volumeMounts"].size());
  std::set<std::string> made_writable;
  for (std::size_t i = 0; i < base.container["volumeMounts"].size(); ++i) {
    const YAML::Node b = base.container["volumeMounts"][i], o = overlay.container["volumeMounts"][i];
    EXPECT_EQ(o["name"].as<std::string>(), b["name"].as<std::string>());
    EXPECT_EQ(o["mountPath"].as<std::string>(), b["mountPath"].as<std::string>());
    const bool b_ro = b["readOnly"].as<bool>(false), o_ro = o["readOnly"].as<bool>(false);
    EXPECT_FALSE(o_ro && !b_ro) << b["mountPath"].as<std::string>();
    if (b_ro && !o_ro) {
      made_writable.insert(o["mountPath"].as<std::string>());
      EXPECT_FALSE(o["recursiveReadOnly"]) << "the API server refuses recursiveReadOnly on a writable mount";
    }
  }
  EXPECT_EQ(made_writable, paths) << "mounts the overlay makes writable: " << join(made_writable)
                                  << "; the responses rows' paths: " << join(paths);
  // The default's mode is off, said in its ConfigMap, and nothing overrides it.
  EXPECT_EQ(scalar_or(dig(base.config, {"prevention", "mode"}), ""), "off");
  const auto base_args = base.container["args"].as<std::vector<std::string>>();
  EXPECT_EQ(std::find(base_args.begin(), base_args.end(), "-o"), base_args.end());
}

}  // namespace
}  // namespace vigil::deploy_test
