// The image, built and run (issue 14): deploy/build-image.sh builds it from
// Debian packages alone; podman runs it the way deploy/daemonset.yaml runs the
// agent (its capabilities, host PID namespace, read-only root, volume mounts,
// args and ConfigMap, all read from the manifest); an exec on the host alerts
// on the container's stdout, and /healthz answers 200.
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
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

// The status code of GET http://127.0.0.1:port/path; -1 when nothing answers.
int http_status(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int status = -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[64] = {};
      const ssize_t n = ::recv(fd, buf, sizeof buf - 1, 0);
      int code = 0;
      if (n > 12 && std::sscanf(buf, "HTTP/1.%*d %d", &code) == 1) status = code;
    }
  }
  ::close(fd);
  return status;
}

// Removes the container and the image when the test ends, passed or not.
struct Cleanup {
  std::string container, image;
  ~Cleanup() {
    if (!container.empty()) run(podman({"rm", "--force", "--time", "5", container}), 60s);
    if (!image.empty()) run(podman({"rmi", "--force", image}), 60s);
  }
};

TEST(Image, BuiltOfflineAndRunLikeTheDaemonSetAlertsAndAnswersHealthz) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (mmdebstrap and podman run as root here)";
  for (const char* tool : {"podman", "runc", "mmdebstrap"}) {
    if (!on_path(tool)) GTEST_SKIP() << tool << " is not installed (scripts/install-deps.sh installs it)";
  }
  const Agent agent = load_agent();
  ASSERT_TRUE(agent.container && agent.config) << "deploy/daemonset.yaml: no vigil container or ConfigMap";

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

  // The container, as the DaemonSet makes it.
  support::TempDir dir("vigil-image");
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
  for (const YAML::Node& m : agent.container["volumeMounts"]) {
    const std::string vname = m["name"].as<std::string>();
    const std::string target = m["mountPath"].as<std::string>();
    YAML::Node vol;
    for (const YAML::Node& v : agent.pod["volumes"]) {
      if (v["name"].as<std::string>() == vname) vol.reset(v);
    }
    ASSERT_TRUE(vol) << "volumeMount " << vname << " has no volume";
    std::string source;
    if (vol["configMap"]) {
      source = dir.mkdirs("config-" + vname);
      dir.write("config-" + vname + "/vigil.yaml", agent.config_text);
    } else if (vol["hostPath"]) {
      // A DirectoryOrCreate path would be made on the host by the kubelet:
      // the test gives a directory of its own instead, and leaves the host be.
      const std::string path = dig(vol, {"hostPath", "path"}).as<std::string>();
      if (dig(vol, {"hostPath", "type"}).as<std::string>("") == "DirectoryOrCreate") {
        source = dir.mkdirs("host-" + vname);
        ::chmod(source.c_str(), 0700);
      } else {
        ASSERT_TRUE(std::filesystem::exists(path)) << "hostPath " << path << " is not on this machine";
        source = path;
      }
    } else {
      source = dir.mkdirs("volume-" + vname);
    }
    cmd.push_back("--volume=" + source + ":" + target + (m["readOnly"].as<bool>(false) ? ":ro" : ""));
  }
  cmd.push_back(tag);
  const int port = support::free_port(SOCK_STREAM);
  ASSERT_GT(port, 0);
  for (const auto& a : agent.container["args"].as<std::vector<std::string>>()) cmd.push_back(a);
  cmd.push_back("-o");
  cmd.push_back("webserver.listen=127.0.0.1:" + std::to_string(port));

  cleanup.container = name;
  const Ran started = run(cmd, 120s);
  ASSERT_TRUE(started.ok()) << "podman run: " << support::describe_wait_status(started.status) << "\n"
                            << started.out << started.err;

  const auto logs = [&] { return run(podman({"logs", name}), 30s); };
  const auto running = [&] {
    return run(podman({"inspect", "--format", "{{.State.Running}}", name}), 30s).out.rfind("true", 0) == 0;
  };
  bool ready = false;
  for (auto until = std::chrono::steady_clock::now() + 90s; std::chrono::steady_clock::now() < until;) {
    if (logs().err.find("ready:") != std::string::npos) {
      ready = true;
      break;
    }
    if (!running()) break;
    std::this_thread::sleep_for(500ms);
  }
  {
    const Ran l = logs();
    ASSERT_TRUE(ready) << "vigil in the container did not get ready; its log:\n" << l.err << l.out;
    std::cout << "vigil's log in the container:\n" << l.err;
  }
  const auto t_ready = std::chrono::steady_clock::now();
  {
    // The DaemonSet mounts /dev/kmsg, yet the container's device cgroup refuses
    // to open it (EPERM): the Xid lines come through syslog(2) instead, with
    // CAP_SYSLOG alone, and the kmsg part is on.
    const std::string err = logs().err;
    const auto at = err.find(" ready: ");
    ASSERT_NE(at, std::string::npos);
    const std::string ready_line = err.substr(at, err.find('\n', at) - at);
    EXPECT_NE(ready_line.find("kmsg:"), std::string::npos) << ready_line;
    const auto off = ready_line.find("parts off:");
    ASSERT_NE(off, std::string::npos) << ready_line;
    EXPECT_EQ(ready_line.find("kmsg", off), std::string::npos) << ready_line << "\n" << err;
    std::cout << ready_line.substr(off) << "; "
              << (err.find("through syslog(2)") != std::string::npos ? "kmsg through syslog(2)"
                                                                     : "kmsg through /dev/kmsg")
              << "\n";
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

  // The liveness probe's endpoint, then the readiness probe's.
  int healthz = -1;
  for (auto until = std::chrono::steady_clock::now() + 20s; healthz != 200 && std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(500ms)) {
    healthz = http_status(port, "/healthz");
  }
  EXPECT_EQ(healthz, 200) << "GET /healthz on 127.0.0.1:" << port;
  EXPECT_EQ(http_status(port, "/readyz"), 200) << "GET /readyz on 127.0.0.1:" << port;

  const auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  std::cout << "image built in " << secs(t0, t_built) << " s, vigil ready in the container " << secs(t_built, t_ready)
            << " s later\n";
}

}  // namespace
}  // namespace vigil::deploy_test
