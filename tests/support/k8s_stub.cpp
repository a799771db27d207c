#include "tests/support/k8s_stub.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

extern char** environ;

namespace vigil::support {

K8sStub::~K8sStub() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::string K8sStub::start(const TempDir& dir, const std::string& stable_pod_gpus) {
  if (pid_ > 0) return "the Kubernetes API stand-in is already running";
  dir_ = dir.path();
  if (std::system("command -v python3 >/dev/null 2>&1 && command -v openssl >/dev/null 2>&1") != 0)
    return "python3 and openssl are needed for the Kubernetes API stand-in";
  const std::string cmd = "(cd '" + dir_ +
                          "' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
                          " -keyout ca.key -out ca.crt -days 2 -subj '/CN=vigil e2e CA'"
                          " -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign,cRLSign'"
                          " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout srv.key"
                          " -out srv.csr -subj '/CN=127.0.0.1'"
                          " && printf 'subjectAltName=IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\n' > ext.cnf"
                          " && openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial"
                          " -out srv.crt -days 2 -extfile ext.cnf) >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return "openssl could not make the test certificates";
  dir.write("token", "e2e-token\n");
  std::vector<std::string> args = {"python3",     "tests/engine/state/k8s_stub.py",
                                   "--cert",      dir_ + "/srv.crt",
                                   "--key",       dir_ + "/srv.key",
                                   "--port-file", dir_ + "/port",
                                   "--log",       dir_ + "/requests.log"};
  if (!stable_pod_gpus.empty()) {
    args.push_back("--stable-pod-gpus");
    args.push_back(stable_pod_gpus);
  }
  if (stable_pod_delay_.count() > 0) {
    args.push_back("--stable-pod-delay-s");
    args.push_back(std::to_string(static_cast<double>(stable_pod_delay_.count()) / 1000.0));
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (::posix_spawnp(&pid_, "python3", nullptr, nullptr, argv.data(), environ) != 0) {
    pid_ = -1;
    return "cannot start python3";
  }
  for (int i = 0; i < 300 && port_.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    port_ = read_file(dir_ + "/port");
  }
  if (port_.empty()) return "the Kubernetes API stand-in did not start";
  return "";
}

std::vector<std::string> K8sStub::vigil_args() const {
  return {"--k8s-api",        url(),        "--k8s-ca", ca(),
          "--k8s-token-file", token_file(), "-o",       std::string("k8s.node_name=") + kNode};
}

std::string K8sStub::config_yaml() const {
  return "k8s:\n  api: " + url() + "\n  ca_file: " + ca() + "\n  token_file: " + token_file() +
         "\n  node_name: " + kNode + "\n";
}

bool K8sStub::wait_script_done(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::istringstream log(requests());
    std::string line;
    while (std::getline(log, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.is_object() && j.value("kind", "") == "watch" && j.value("n", 0) >= 3) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::string K8sStub::requests() const { return read_file(dir_ + "/requests.log"); }

}  // namespace vigil::support
