// The image, built and run (issue 14): deploy/build-image.sh builds it from
// Debian packages alone; podman runs it the way deploy/daemonset.yaml runs the
// agent (its capabilities, host PID namespace, read-only root, volume mounts,
// args and ConfigMap, all read from the manifest); an exec on the host alerts
// on the container's stdout, and /healthz answers 200. The GPU posture is read
// from a stand-in host through the DaemonSet's posture mounts (issue 24).
// Then the same image runs as the opt-in deploy/responses/ overlay makes the
// container, and says that it can kill and freeze where the default says it
// cannot (issue 25).
//
// Labels integration and image: root, podman, runc and mmdebstrap are needed;
// without them the test is skipped, saying which is missing.
//
// podman on the development and CI machines runs containers only with
// `--runtime runc --cgroup-manager=cgroupfs` and explicit
// `--ulimit nofile=1024:1024 --ulimit nproc=1024:1024`: crun and the default
// rlimits are refused there. Those flags are this test's, not the product's.
// The container shares the host's network (--network=host) so that the test
// reaches the webserver; the pod network is the cluster's business, not the
// image's. The webserver listens on a free port instead of the ConfigMap's.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/deploy/manifest.h"
#include "tests/support/net.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace vigil::deploy_test {
namespace {

using namespace std::chrono_literals;

struct Ran {
  int status = -1;
  std::string out;
  std::string err;
  bool ok() const { return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// Runs argv (argv[0] looked up on PATH, no shell) to its end, killed after
// `timeout`; stdout and stderr are kept. `env` entries ("K=V") are added to
// this process's environment.
Ran run(const std::vector<std::string>& argv, std::chrono::seconds timeout, const std::vector<std::string>& env = {}) {
  Ran r;
  support::TempDir dir("vigil-image-run");
  const std::string out = dir.path() + "/out", err = dir.path() + "/err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    r.err = argv[0] + ": cannot start: " + std::strerror(rc);
    return r;
  }
  r.status = support::wait_or_kill(pid, timeout);
  r.out = support::read_file(out);
  r.err = support::read_file(err);
  return r;
}

bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
  std::string d;
  while (std::getline(dirs, d, ':')) {
    if (!d.empty() && ::access((d + "/" + name).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// podman with the flags these machines need (see the top of the file).
std::vector<std::string> podman(std::initializer_list<std::string> args) {
  std::vector<std::string> v = {"podman", "--runtime", "runc", "--cgroup-manager=cgroupfs"};
  v.insert(v.end(), args);
  return v;
}

// GET http://127.0.0.1:port/path: the status code (-1 when nothing answers)
// and the body.
struct Got {
  int status = -1;
  std::string body;
};
Got http_get(int port, const std::string& path) {
  Got g;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return g;
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      std::string all;
      char buf[4096];
      for (ssize_t n; all.size() < (8u << 20) && (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) all.append(buf, n);
      int code = 0;
      if (all.size() > 12 && std::sscanf(all.c_str(), "HTTP/1.%*d %d", &code) == 1) g.status = code;
      const auto body = all.find("\r\n\r\n");
      if (body != std::string::npos) g.body = all.substr(body + 4);
    }
  }
  ::close(fd);
  return g;
}

// The value of a metric's sample in a scrape body (`name{labels} value`);
// -1 when it is not there.
double sample_value(const std::string& body, const std::string& series) {
  std::istringstream lines(body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

// The first line of `log` that holds `what`, from there on; "" when none.
std::string line_with(const std::string& log, const std::string& what) {
  const auto at = log.find(what);
  if (at == std::string::npos) return "";
  return log.substr(at, log.find('\n', at) - at);
}

// Removes the containers and the image when the test ends, passed or not.
struct Cleanup {
  std::vector<std::string> containers;
  std::string image;
  ~Cleanup() {
    for (const auto& c : containers) run(podman({"rm", "--force", "--time", "5", c}), 60s);
    if (!image.empty()) run(podman({"rmi", "--force", image}), 60s);
  }
};

// A stand-in for the node's files that the DaemonSet mounts for the GPU
// posture (posture.host_root): the host's hostPaths mounted under the host
// root are directories of this one, so that no file of the real host is read
// and the facts are known: the NVIDIA Container Toolkit 1.17.7 installed
// (dpkg), its config.toml refusing NVIDIA_VISIBLE_DEVICES from unprivileged
// containers, runc in /usr/bin.
void write_standin_host(support::TempDir& dir) {
  dir.write("host/var/lib/dpkg/status",
            "Package: libc6\nStatus: install ok installed\nVersion: 2.36-9+deb12u10\n\n"
            "Package: nvidia-container-toolkit\nStatus: install ok installed\nPriority: optional\n"
            "Section: utils\nArchitecture: amd64\nVersion: 1.17.7-1\nDescription: NVIDIA Container toolkit\n\n");
  dir.write("host/etc/nvidia-container-runtime/config.toml",
            "accept-nvidia-visible-devices-envvar-when-unprivileged = false\n"
            "[nvidia-container-runtime]\nruntimes = [\"docker-runc\", \"runc\", \"crun\"]\n");
  const std::string runc = dir.write("host/usr/bin/runc", "#!/bin/false\n");
  ::chmod(runc.c_str(), 0755);
}

// The mount points strictly below `dir` in this process's mount table.
std::vector<std::string> mounts_below(const std::string& dir) {
  std::vector<std::string> out;
  std::istringstream lines(support::read_file("/proc/self/mountinfo"));
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point;
    if (!(f >> id >> parent >> dev >> root >> point)) continue;
    if (point.rfind(dir + "/", 0) == 0 && point.find('\\') == std::string::npos &&
        std::find(out.begin(), out.end(), point) == out.end()) {
      out.push_back(point);
    }
  }
  return out;
}

// The podman command that runs the image as `agent` (a DaemonSet) makes its
// container: capabilities, host PID namespace, read-only root, the volumes
// (a configMap's vigil.yaml written to a directory; hostPaths of type
// DirectoryOrCreate given a directory of the test's, and those under
// posture.host_root the stand-in host's: the host is left alone), args and
// NODE_NAME; the webserver on `port`. "" in *error, or what is missing.
std::vector<std::string> podman_run(const Agent& agent, const std::string& name, const std::string& tag, int port,
                                    support::TempDir& dir, std::string* error) {
  const YAML::Node sc = agent.container["securityContext"];
  std::vector<std::string> cmd = podman({"run", "--detach", "--name", name, "--ulimit", "nofile=1024:1024", "--ulimit",
                                         "nproc=1024:1024", "--network=host"});
  if (agent.pod["hostPID"].as<bool>(false)) cmd.push_back("--pid=host");
  if (sc["readOnlyRootFilesystem"].as<bool>(false)) cmd.push_back("--read-only");
  if (sc["privileged"].as<bool>(false)) cmd.push_back("--privileged");
  for (const YAML::Node& c : dig(sc, {"capabilities", "drop"}))
    cmd.push_back("--cap-drop=" + capability_name(c.as<std::string>()));
  for (const YAML::Node& c : dig(sc, {"capabilities", "add"}))
    cmd.push_back("--cap-add=CAP_" + capability_name(c.as<std::string>()));
  // Kubernetes runs a pod without a seccompProfile unconfined; podman would
  // apply its default profile.
  std::string seccomp = dig(sc, {"seccompProfile", "type"}).as<std::string>("");
  if (seccomp.empty()) seccomp = dig(agent.pod, {"securityContext", "seccompProfile", "type"}).as<std::string>("");
  if (seccomp != "RuntimeDefault") cmd.push_back("--security-opt=seccomp=unconfined");
  cmd.push_back("--env=NODE_NAME=image-test");
  const std::string host_root = scalar_or(dig(agent.config, {"posture", "host_root"}), "/");
  for (const YAML::Node& m : agent.container["volumeMounts"]) {
    const std::string vname = m["name"].as<std::string>();
    const std::string target = m["mountPath"].as<std::string>();
    YAML::Node vol;
    for (const YAML::Node& v : agent.pod["volumes"]) {
      if (v["name"].as<std::string>() == vname) vol.reset(v);
    }
    if (!vol) {
      *error = "volumeMount " + vname + " has no volume";
      return {};
    }
    std::string source;
    if (vol["configMap"]) {
      source = dir.mkdirs("config-" + vname);
      dir.write("config-" + vname + "/vigil.yaml", agent.config_text);
    } else if (vol["hostPath"]) {
      const std::string path = dig(vol, {"hostPath", "path"}).as<std::string>();
      if (host_root != "/" && target.rfind(host_root + "/", 0) == 0) {
        // The posture's host files: the stand-in host's.
        source = dir.mkdirs("host" + path);
      } else if (dig(vol, {"hostPath", "type"}).as<std::string>("") == "DirectoryOrCreate") {
        // A DirectoryOrCreate path would be made on the host by the kubelet:
        // the test gives a directory of its own instead, and leaves the host be.
        source = dir.mkdirs("host-" + vname);
        ::chmod(source.c_str(), 0700);
      } else {
        if (!std::filesystem::exists(path)) {
          *error = "hostPath " + path + " is not on this machine";
          return {};
        }
        source = path;
      }
    } else {
      source = dir.mkdirs("volume-" + vname);
    }
    const bool ro = m["readOnly"].as<bool>(false);
    cmd.push_back("--volume=" + source + ":" + target + (ro ? ":ro" : ""));
    // recursiveReadOnly, which podman 4's -v lacks: each mount below a host
    // directory mounted again read-only at its place.
    const std::string rro = scalar_or(m["recursiveReadOnly"], "");
    if (ro && (rro == "IfPossible" || rro == "Enabled") &&
        source == dig(vol, {"hostPath", "path"}).as<std::string>("")) {
      for (const std::string& below : mounts_below(source)) {
        cmd.push_back("--volume=" + below + ":" + target + below.substr(source.size()) + ":ro");
      }
    }
  }
  cmd.push_back(tag);
  for (const auto& a : agent.container["args"].as<std::vector<std::string>>()) cmd.push_back(a);
  cmd.push_back("-o");
  cmd.push_back("webserver.listen=127.0.0.1:" + std::to_string(port));
  return cmd;
}

// Starts the container and waits for vigil's ready line; its log (stderr),
// or "" with *error set.
std::string start_and_wait_ready(const std::vector<std::string>& cmd, const std::string& name, std::string* error) {
  const Ran started = run(cmd, 120s);
  if (!started.ok()) {
    *error = "podman run: " + support::describe_wait_status(started.status) + "\n" + started.out + started.err;
    return "";
  }
  const auto running = [&] {
    return run(podman({"inspect", "--format", "{{.State.Running}}", name}), 30s).out.rfind("true", 0) == 0;
  };
  for (auto until = std::chrono::steady_clock::now() + 90s; std::chrono::steady_clock::now() < until;) {
    const Ran l = run(podman({"logs", name}), 30s);
    if (l.err.find(" ready: ") != std::string::npos) return l.err;
    if (!running()) break;
    std::this_thread::sleep_for(500ms);
  }
  const Ran l = run(podman({"logs", name}), 30s);
  *error = "vigil in the container did not get ready; its log:\n" + l.err + l.out;
  return "";
}

TEST(Image, BuiltOfflineAndRunLikeTheDaemonSetAlertsAndAnswersHealthz) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (mmdebstrap and podman run as root here)";
  for (const char* tool : {"podman", "runc", "mmdebstrap"}) {
    if (!on_path(tool)) GTEST_SKIP() << tool << " is not installed (scripts/install-deps.sh installs it)";
  }
  const Agent agent = load_agent();
  ASSERT_TRUE(agent.container && agent.config) << "deploy/daemonset.yaml: no vigil container or ConfigMap";
  std::string overlay_error;
  const Agent overlay = agent_from(build_kustomization("deploy/responses", &overlay_error));
  ASSERT_EQ(overlay_error, "") << "deploy/responses/";
  ASSERT_TRUE(overlay.container && overlay.config) << "deploy/responses/: no vigil container or ConfigMap";

  const std::string tag = "localhost/vigil-image-test:" + std::to_string(::getpid());
  const std::string name = "vigil-image-test-" + std::to_string(::getpid());
  Cleanup cleanup;
  cleanup.image = tag;

  // The image, as an SRE builds it (the root filesystem is cached in the build
  // directory, so only the first run downloads packages).
  const auto t0 = std::chrono::steady_clock::now();
  const Ran built = run({"deploy/build-image.sh", "--tag", tag}, 900s, {"VIGIL_BUILD_DIR=" VIGIL_BUILD_DIR});
  ASSERT_TRUE(built.ok()) << "deploy/build-image.sh: " << support::describe_wait_status(built.status) << "\n"
                          << built.out << built.err;
  std::cout << built.out;
  const auto t_built = std::chrono::steady_clock::now();

  // The DaemonSet mounts the host's /sys/kernel/tracing. On a node, the
  // first vigil to start mounts tracefs there when nothing has
  // (engine/sensor/sysfs.cpp, ensure_tracefs); on a machine where no vigil
  // ran yet, the test does what it would, else the container's sensor finds
  // no tracepoints.
  if (::access("/sys/kernel/tracing/events", F_OK) != 0 &&
      ::mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) != 0)
    std::cout << "note: tracefs is not mounted at /sys/kernel/tracing and mounting it failed: " << std::strerror(errno)
              << "\n";

  // The container, as the DaemonSet makes it, over the stand-in host.
  support::TempDir dir("vigil-image");
  write_standin_host(dir);
  const int port = support::free_port(SOCK_STREAM);
  ASSERT_GT(port, 0);
  std::string error;
  const auto cmd = podman_run(agent, name, tag, port, dir, &error);
  ASSERT_EQ(error, "");
  cleanup.containers.push_back(name);
  const std::string first_log = start_and_wait_ready(cmd, name, &error);
  ASSERT_EQ(error, "");
  std::cout << "vigil's log in the container:\n" << first_log;
  const auto t_ready = std::chrono::steady_clock::now();
  const auto logs = [&] { return run(podman({"logs", name}), 30s); };
  {
    // The DaemonSet mounts /dev/kmsg, yet the container's device cgroup refuses
    // to open it (EPERM): the Xid lines come through syslog(2) instead, with
    // CAP_SYSLOG alone, and the kmsg part is on.
    const std::string ready_line = line_with(first_log, " ready: ");
    ASSERT_FALSE(ready_line.empty());
    EXPECT_NE(ready_line.find("kmsg:"), std::string::npos) << ready_line;
    const auto off = ready_line.find("parts off:");
    ASSERT_NE(off, std::string::npos) << ready_line;
    EXPECT_EQ(ready_line.find("kmsg", off), std::string::npos) << ready_line << "\n" << first_log;
    std::cout << ready_line.substr(off) << "; "
              << (first_log.find("through syslog(2)") != std::string::npos ? "kmsg through syslog(2)"
                                                                           : "kmsg through /dev/kmsg")
              << "\n";
    // The posture is the (stand-in) host's, through the DaemonSet's mounts
    // under posture.host_root, not the image's: the toolkit's version from
    // its package database, its settings from its config.toml, its runtime.
    const auto posture = ready_line.find("posture: ");
    ASSERT_NE(posture, std::string::npos) << ready_line;
    EXPECT_NE(ready_line.find("toolkit 1.17.7", posture), std::string::npos) << ready_line;
    EXPECT_NE(ready_line.find("envvar refused from unprivileged", posture), std::string::npos) << ready_line;
    EXPECT_NE(ready_line.find("runtime runc", posture), std::string::npos) << ready_line;
    // The bundled rules hold a kill response: the default DaemonSet can
    // carry out neither kill nor freeze, and says so.
    const std::string prevention = line_with(first_log, "prevention: mode ");
    EXPECT_NE(prevention.find("responses kill: no (CAP_KILL not held"), std::string::npos) << prevention;
    EXPECT_NE(prevention.find("freeze: no (/sys/fs/cgroup"), std::string::npos) << prevention;
    EXPECT_NE(prevention.find(" is read-only"), std::string::npos) << prevention;
    std::cout << prevention.substr(prevention.find("responses kill")) << "\n";
  }

  // An exec on the host that a bundled rule alerts on (the README's example).
  support::Child miner = support::Child::spawn({"/bin/sh", "-c", "xmrig --url stratum+tcp://pool.example:3333; true"});
  ASSERT_GT(miner.pid(), 0);
  miner.wait(30s);
  nlohmann::json alert;
  for (auto until = std::chrono::steady_clock::now() + 30s;
       alert.is_null() && std::chrono::steady_clock::now() < until;) {
    std::istringstream lines(logs().out);
    std::string line;
    while (std::getline(lines, line)) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_object() || j.value("rule", "") != "Crypto miner command line") continue;
      if (j["output_fields"].value("proc.pid", -1) == miner.pid()) alert = j;
    }
    if (alert.is_null()) std::this_thread::sleep_for(500ms);
  }
  ASSERT_FALSE(alert.is_null()) << "no 'Crypto miner command line' alert for pid " << miner.pid()
                                << " on the container's stdout:\n"
                                << logs().out;
  EXPECT_EQ(alert["output_fields"].value("proc.cmdline", ""),
            "sh -c xmrig --url stratum+tcp://pool.example:3333; true");
  EXPECT_EQ(alert.value("hostname", ""), "image-test") << "the hostname comes from $NODE_NAME";

  // The liveness probe's endpoint, then the readiness probe's, then the scrape.
  int healthz = -1;
  for (auto until = std::chrono::steady_clock::now() + 20s; healthz != 200 && std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(500ms)) {
    healthz = http_get(port, "/healthz").status;
  }
  EXPECT_EQ(healthz, 200) << "GET /healthz on 127.0.0.1:" << port;
  EXPECT_EQ(http_get(port, "/readyz").status, 200) << "GET /readyz on 127.0.0.1:" << port;
  {
    const Got m = http_get(port, "/metrics");
    EXPECT_EQ(m.status, 200);
    EXPECT_EQ(sample_value(m.body, "vigil_prevention_response_capable{response=\"kill\"}"), 0) << m.body;
    EXPECT_EQ(sample_value(m.body, "vigil_prevention_response_capable{response=\"freeze\"}"), 0);
    const std::string info = line_with(m.body, "vigil_gpu_posture_info{");
    EXPECT_NE(info.find("toolkit=\"1.17.7\""), std::string::npos) << info;
    EXPECT_NE(info.find("runtime=\"runc\""), std::string::npos) << info;
  }
  run(podman({"rm", "--force", "--time", "5", name}), 60s);

  // The same image and stand-in host, run as deploy/responses/ (the opt-in
  // overlay, applied to the DaemonSet as kustomize does) makes the
  // container: kill and freeze can be carried out.
  const std::string name2 = name + "-responses";
  const int port2 = support::free_port(SOCK_STREAM);
  ASSERT_GT(port2, 0);
  const auto cmd2 = podman_run(overlay, name2, tag, port2, dir, &error);
  ASSERT_EQ(error, "");
  cleanup.containers.push_back(name2);
  const auto t_second = std::chrono::steady_clock::now();
  const std::string second_log = start_and_wait_ready(cmd2, name2, &error);
  ASSERT_EQ(error, "");
  const auto t_second_ready = std::chrono::steady_clock::now();
  {
    const std::string prevention = line_with(second_log, "prevention: mode ");
    EXPECT_NE(prevention.find("mode monitor"), std::string::npos) << prevention;
    EXPECT_NE(prevention.find("responses kill: yes, freeze: yes"), std::string::npos) << prevention << "\n"
                                                                                      << second_log;
    std::cout << "with deploy/responses/: " << prevention.substr(prevention.find("responses kill")) << "\n";
    const Got m = http_get(port2, "/metrics");
    EXPECT_EQ(m.status, 200);
    EXPECT_EQ(sample_value(m.body, "vigil_prevention_response_capable{response=\"kill\"}"), 1) << m.body;
    EXPECT_EQ(sample_value(m.body, "vigil_prevention_response_capable{response=\"freeze\"}"), 1);
    EXPECT_EQ(http_get(port2, "/readyz").status, 200);
  }

  const auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  std::cout << "image built in " << secs(t0, t_built) << " s, vigil ready in the container " << secs(t_built, t_ready)
            << " s later; with deploy/responses/ ready in " << secs(t_second, t_second_ready) << " s\n";
}

}  // namespace
}  // namespace vigil::deploy_test
