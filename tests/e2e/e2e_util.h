// Helpers for the end-to-end tests of `vigil run`: the agent as a child
// process (stdout alerts, stderr log, exit status), temporary directories,
// kubelet-style cgroups, processes started inside them (optionally in their
// own network namespace), and the Kubernetes API stand-in of the state tests
// (tests/engine/state/k8s_stub.py) behind a TLS certificate made here.
//
// Everything a test creates is undone by a destructor, so a failed assertion
// leaves no cgroup, process or file behind.
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

extern char** environ;

namespace vigil::e2e {

using json = nlohmann::json;
using namespace std::chrono_literals;

#define VIGIL_E2E_REQUIRE_ROOT()                                                              \
  do {                                                                                       \
    if (::geteuid() != 0)                                                                    \
      GTEST_SKIP() << "end-to-end test of `vigil run` needs root (it loads eBPF programs, "  \
                      "makes cgroups and device nodes)";                                     \
  } while (0)

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A unique short name (<= 15 bytes, the kernel's comm limit) for a program copy.
inline std::string unique_name(const std::string& role) {
  static std::atomic<int> counter{0};
  std::string n = "e2" + role + std::to_string(::getpid() % 100000) + "x" + std::to_string(counter++);
  return n.substr(0, 15);
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "vigil-e2e-XXXXXX").string();
    if (char* p = ::mkdtemp(tmpl.data()); p != nullptr) {
      path_ = p;
      ::chmod(p, 0755);
    }
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  bool ok() const { return !path_.empty(); }

  // Writes rel (replacing it atomically, so a reload never sees half a file); returns the full path.
  std::string write(const std::string& rel, const std::string& content) const {
    std::string p = path_ + "/" + rel;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    {
      std::ofstream(p + ".tmp", std::ios::binary) << content;
    }
    std::filesystem::rename(p + ".tmp", p);
    return p;
  }

  // A copy of `program` named `name` (its comm when run), executable.
  std::string install(const std::string& program, const std::string& name) const {
    std::string p = path_ + "/" + name;
    std::error_code ec;
    std::filesystem::copy_file(program, p, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) return "";
    ::chmod(p.c_str(), 0755);
    return p;
  }

 private:
  std::string path_;
};

inline std::string cgroup2_root() {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    auto sep = line.find(" - cgroup2 ");
    if (sep == std::string::npos) continue;
    std::istringstream ls(line.substr(0, sep));
    std::string f[5];
    for (auto& x : f) ls >> x;
    if (f[3] == "/") return f[4];
  }
  return {};
}

// kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid_>.slice/
// cri-containerd-<id>.scope under the cgroup v2 root (systemd driver,
// containerd), created for the test; the levels it created are removed in
// reverse order (a level another test still uses is not empty and stays).
class PodCgroup {
 public:
  PodCgroup(const std::string& pod_uid, const std::string& container_id, const std::string& qos = "besteffort") {
    std::string root = cgroup2_root();
    if (root.empty()) {
      error_ = "no cgroup v2 mount in /proc/self/mountinfo";
      return;
    }
    std::string uid_part = pod_uid;  // the systemd driver writes the uid's dashes as '_'
    for (char& c : uid_part)
      if (c == '-') c = '_';
    std::vector<std::string> levels = {root + "/kubepods.slice",
                                       root + "/kubepods.slice/kubepods-" + qos + ".slice"};
    levels.push_back(levels.back() + "/kubepods-" + qos + "-pod" + uid_part + ".slice");
    levels.push_back(levels.back() + "/cri-containerd-" + container_id + ".scope");
    for (const std::string& l : levels) {
      if (::mkdir(l.c_str(), 0755) == 0) {
        created_.push_back(l);
      } else if (errno != EEXIST) {
        error_ = "cannot create " + l + ": " + std::strerror(errno);
        return;
      }
    }
    scope_ = levels.back();
    struct stat st{};
    if (::stat(scope_.c_str(), &st) == 0) id_ = st.st_ino;
  }
  ~PodCgroup() {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
      // A process that just exited may still be on its way out: retry briefly.
      for (int i = 0; i < 50 && ::rmdir(it->c_str()) != 0 && errno == EBUSY; ++i)
        std::this_thread::sleep_for(20ms);
    }
  }
  PodCgroup(const PodCgroup&) = delete;
  PodCgroup& operator=(const PodCgroup&) = delete;

  bool ok() const { return error_.empty() && id_ != 0; }
  const std::string& error() const { return error_; }
  const std::string& scope() const { return scope_; }

 private:
  std::vector<std::string> created_;
  std::string scope_;
  std::string error_;
  std::uint64_t id_ = 0;
};

struct SpawnOptions {
  std::string cgroup;         // join this cgroup (its directory) before exec
  bool new_netns = false;     // a private network namespace with loopback up
  bool stdin_pipe = false;    // stdin is a pipe the test writes to (Child::poke)
  // Stand-in device nodes (e.g. "nvidia0") made, with /dev/null's numbers, in
  // a private /dev (a tmpfs in a private mount namespace) before exec.
  std::vector<std::string> private_dev_nodes;
};

// A child process; killed (SIGKILL) and reaped on destruction if still running.
class Child {
 public:
  Child() = default;
  // Forks, sets the child up as `o` says and execs argv. Setup failures exit
  // the child with 90..95 before exec (see what()).
  static Child spawn(const std::vector<std::string>& argv, const SpawnOptions& o = {}) {
    Child c;
    int in[2] = {-1, -1};
    if (o.stdin_pipe && ::pipe2(in, O_CLOEXEC) != 0) return c;
    pid_t pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives a crashed test
      if (o.stdin_pipe) ::dup2(in[0], 0);
      int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 1);
      if (!o.cgroup.empty()) {
        std::string procs = o.cgroup + "/cgroup.procs";
        int fd = ::open(procs.c_str(), O_WRONLY);
        std::string me = std::to_string(::getpid());
        if (fd < 0 || ::write(fd, me.data(), me.size()) != static_cast<ssize_t>(me.size())) ::_exit(90);
        ::close(fd);
      }
      if (o.new_netns) {
        if (::unshare(CLONE_NEWNET) != 0) ::_exit(91);
        int sk = ::socket(AF_INET, SOCK_DGRAM, 0);
        struct ifreq ifr{};
        std::strcpy(ifr.ifr_name, "lo");
        ::ioctl(sk, SIOCGIFFLAGS, &ifr);
        ifr.ifr_flags |= IFF_UP;
        if (::ioctl(sk, SIOCSIFFLAGS, &ifr) != 0) ::_exit(92);
        ::close(sk);
      }
      if (!o.private_dev_nodes.empty()) {
        struct stat null_st{};
        if (::stat("/dev/null", &null_st) != 0) ::_exit(93);
        if (::unshare(CLONE_NEWNS) != 0) ::_exit(93);
        if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(93);
        if (::mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "mode=0755,size=1m") != 0) ::_exit(93);
        if (::mknod("/dev/null", S_IFCHR | 0666, null_st.st_rdev) != 0) ::_exit(94);
        for (const std::string& n : o.private_dev_nodes) {
          if (::mknod(("/dev/" + n).c_str(), S_IFCHR | 0666, null_st.st_rdev) != 0) ::_exit(94);
        }
      }
      std::vector<char*> a;
      for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      ::execv(a[0], a.data());
      ::_exit(95);
    }
    if (o.stdin_pipe) {
      ::close(in[0]);
      c.stdin_ = in[1];
    }
    c.pid_ = pid;
    return c;
  }
  Child(Child&& o) noexcept { *this = std::move(o); }
  Child& operator=(Child&& o) noexcept {
    std::swap(pid_, o.pid_);
    std::swap(stdin_, o.stdin_);
    std::swap(status_, o.status_);
    return *this;
  }
  ~Child() {
    if (stdin_ >= 0) ::close(stdin_);
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  pid_t pid() const { return pid_; }
  // Lets a child blocked in the actor's `wait` step go on.
  void poke() {
    if (stdin_ >= 0) {
      (void)::write(stdin_, "x", 1);
      ::close(stdin_);
      stdin_ = -1;
    }
  }
  // Waits for the exit (up to `timeout`, then kills it); returns the wait status.
  int wait(std::chrono::milliseconds timeout = 30s) {
    if (status_) return *status_;
    if (pid_ <= 0) return -1;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    int st = 0;
    while (true) {
      pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    status_ = st;
    return st;
  }
  // The exit code, or a description of how it ended when it did not exit normally.
  static std::string what(int st) {
    if (WIFSIGNALED(st)) return "killed by signal " + std::to_string(WTERMSIG(st));
    int c = WEXITSTATUS(st);
    switch (c) {
      case 90: return "exit 90 (could not join the cgroup)";
      case 91: return "exit 91 (unshare(CLONE_NEWNET) failed)";
      case 92: return "exit 92 (could not bring loopback up)";
      case 93: return "exit 93 (could not mount a private /dev)";
      case 94: return "exit 94 (mknod in the private /dev failed)";
      case 95: return "exit 95 (exec failed)";
      default: return "exit " + std::to_string(c);
    }
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  std::optional<int> status_;
};

// `vigil run ARGS...` as a child: stdout lines (alerts), stderr (log) and the
// exit status. Stopped with SIGKILL on destruction if a test did not stop it.
class Vigil {
 public:
  Vigil() = default;
  Vigil(const Vigil&) = delete;
  Vigil& operator=(const Vigil&) = delete;
  ~Vigil() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_th_.joinable()) out_th_.join();
    if (err_th_.joinable()) err_th_.join();
  }

  // Starts `vigil run args...` with extra environment variables; as user
  // `run_as_uid` (no capabilities, no supplementary groups) when it is set.
  bool start(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
             std::optional<uid_t> run_as_uid = std::nullopt) {
    return start_command("run", args, env, run_as_uid);
  }
  // Starts `vigil COMMAND args...` (run, replay, ...).
  bool start_command(const std::string& command, const std::vector<std::string>& args,
                     const std::map<std::string, std::string>& env = {},
                     std::optional<uid_t> run_as_uid = std::nullopt) {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return false;
    if (::pipe2(err, O_CLOEXEC) != 0) {
      ::close(out[0]);
      ::close(out[1]);
      return false;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives a crashed test
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      if (run_as_uid) {
        if (::setgroups(0, nullptr) != 0 || ::setgid(*run_as_uid) != 0 || ::setuid(*run_as_uid) != 0)
          ::_exit(126);
      }
      std::vector<std::string> all = {VIGIL_BINARY, command};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> a;
      for (auto& s : all) a.push_back(s.data());
      a.push_back(nullptr);
      ::execv(a[0], a.data());
      ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    if (pid_ < 0) {
      ::close(out[0]);
      ::close(err[0]);
      return false;
    }
    out_th_ = std::thread([this, fd = out[0]] { read_lines(fd, true); });
    err_th_ = std::thread([this, fd = err[0]] { read_lines(fd, false); });
    return true;
  }

  // Waits for the `ready` log line; false when vigil exited first or the time ran out.
  bool wait_ready(std::chrono::milliseconds timeout = 30s) {
    return wait_until([this] { return stderr_has_locked("ready"); }, timeout);
  }
  // Waits until stderr holds `text` at least `times` times.
  bool wait_stderr(const std::string& text, int times = 1, std::chrono::milliseconds timeout = 30s) {
    return wait_until([&] { return stderr_count_locked(text) >= times; }, timeout);
  }
  int stderr_count(const std::string& text) {
    std::lock_guard<std::mutex> g(mu_);
    return stderr_count_locked(text);
  }

  void signal(int sig) {
    if (pid_ > 0 && !status_) ::kill(pid_, sig);
  }
  // Waits for vigil to exit (SIGKILL after `timeout`); returns its wait status.
  int wait_exit(std::chrono::milliseconds timeout = 30s) {
    if (status_) return *status_;
    if (pid_ <= 0) return -1;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    int st = 0;
    while (true) {
      pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
    status_ = st;
    // Every line written before the exit is read once the pipes reach EOF.
    if (out_th_.joinable()) out_th_.join();
    if (err_th_.joinable()) err_th_.join();
    return st;
  }
  // SIGTERM, then the exit code (-1 when it did not exit normally in time).
  int stop(int sig = SIGTERM) {
    signal(sig);
    int st = wait_exit();
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  bool exited() {
    std::lock_guard<std::mutex> g(mu_);
    return err_closed_;
  }

  // JSON alerts on stdout so far accepted by pred; waits up to `wait` for at least one.
  std::vector<json> alerts(const std::function<bool(const json&)>& pred, std::chrono::milliseconds wait = 0ms) {
    std::vector<json> out;
    wait_until(
        [&] {
          out.clear();
          for (const auto& a : alerts_)
            if (pred(a)) out.push_back(a);
          return !out.empty();
        },
        wait, /*stop_on_exit=*/false);
    return out;
  }
  // Alerts of rule `rule` whose output field `field` equals `value`.
  std::vector<json> alerts_where(const std::string& rule, const std::string& field, const json& value,
                                 std::chrono::milliseconds wait = 0ms) {
    return alerts(
        [&](const json& a) {
          return a.value("rule", "") == rule && a.contains("output_fields") &&
                 a["output_fields"].value(field, json()) == value;
        },
        wait);
  }
  std::vector<std::string> stdout_lines() {
    std::lock_guard<std::mutex> g(mu_);
    return lines_;
  }
  std::string stderr_text() {
    std::lock_guard<std::mutex> g(mu_);
    return err_;
  }
  std::string stdout_text() {
    std::lock_guard<std::mutex> g(mu_);
    std::string s;
    for (const auto& l : lines_) s += l + "\n";
    return s;
  }
  // What to print when an assertion about this run fails.
  std::string diag() { return "\n--- vigil stderr ---\n" + stderr_text() + "--- vigil stdout ---\n" + stdout_text(); }

 private:
  bool stderr_has_locked(const std::string& t) const { return err_.find(t) != std::string::npos; }
  int stderr_count_locked(const std::string& t) const {
    int n = 0;
    for (std::size_t p = err_.find(t); p != std::string::npos; p = err_.find(t, p + t.size())) ++n;
    return n;
  }
  // Polls pred (called with mu_ held) until it holds, the time runs out, or
  // (stop_on_exit) vigil closed its stderr.
  bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout, bool stop_on_exit = true) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      {
        std::lock_guard<std::mutex> g(mu_);
        if (pred()) return true;
        if (stop_on_exit && err_closed_) return false;
      }
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(25ms);
    }
  }
  void read_lines(int fd, bool is_stdout) {
    std::string pending;
    char buf[8192];
    while (true) {
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      pending.append(buf, static_cast<std::size_t>(n));
      std::size_t nl;
      while ((nl = pending.find('\n')) != std::string::npos) {
        std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        std::lock_guard<std::mutex> g(mu_);
        if (is_stdout) {
          if (lines_.size() < 100000) lines_.push_back(line);
          auto j = json::parse(line, nullptr, false);
          if (!j.is_discarded() && j.is_object() && j.contains("rule")) alerts_.push_back(std::move(j));
        } else if (err_.size() < (4u << 20)) {
          err_ += line + "\n";
        }
      }
    }
    ::close(fd);
    std::lock_guard<std::mutex> g(mu_);
    if (!is_stdout) err_closed_ = true;
  }

  pid_t pid_ = -1;
  std::optional<int> status_;
  std::thread out_th_, err_th_;
  std::mutex mu_;
  std::vector<std::string> lines_;
  std::vector<json> alerts_;
  std::string err_;
  bool err_closed_ = false;
};

// The Kubernetes API stand-in of the state tests (tests/engine/state/k8s_stub.py),
// serving HTTPS with a server certificate for 127.0.0.1 signed by a CA made
// here. Its fixed script: LIST (pod a), WATCH (ADDED b, MODIFIED a, drop),
// WATCH (410 Gone), LIST (a, then c on a second page), WATCH (DELETED a,
// BOOKMARK, then open). After that script pod "c" (namespace "ml", uid
// kStablePodUid, container "main" with id kStableContainerId) is the one
// pod that stays; tests attribute to it.
class K8sStub {
 public:
  static constexpr const char* kNode = "gpu-node-1";
  static constexpr const char* kStablePodUid = "cccccccc-0000-4000-8000-000000000003";
  static constexpr const char* kStablePodName = "c";
  static constexpr const char* kStablePodNamespace = "ml";
  static std::string stable_container_id() { return std::string(64, 'c'); }

  ~K8sStub() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  // Returns "" on success, else why the stand-in could not start.
  std::string start(const TempDir& dir) {
    dir_ = dir.path();
    if (std::system("command -v python3 >/dev/null 2>&1 && command -v openssl >/dev/null 2>&1") != 0)
      return "python3 and openssl are needed for the Kubernetes API stand-in";
    std::string cmd = "(cd " + dir_ +
                      " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
                      " -keyout ca.key -out ca.crt -days 2 -subj '/CN=vigil e2e CA'"
                      " -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign,cRLSign'"
                      " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout srv.key"
                      " -out srv.csr -subj '/CN=127.0.0.1'"
                      " && printf 'subjectAltName=IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\n' > ext.cnf"
                      " && openssl x509 -req -in srv.csr -CA ca.crt -CAkey ca.key -CAcreateserial"
                      " -out srv.crt -days 2 -extfile ext.cnf) >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) return "openssl could not make the test certificates";
    dir.write("token", "e2e-token\n");
    std::vector<std::string> args = {"python3", "tests/engine/state/k8s_stub.py", "--cert", dir_ + "/srv.crt",
                                     "--key", dir_ + "/srv.key", "--port-file", dir_ + "/port",
                                     "--log", dir_ + "/requests.log"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (::posix_spawnp(&pid_, "python3", nullptr, nullptr, argv.data(), environ) != 0) {
      pid_ = -1;
      return "cannot start python3";
    }
    for (int i = 0; i < 300 && port_.empty(); ++i) {
      std::this_thread::sleep_for(50ms);
      port_ = slurp(dir_ + "/port");
    }
    if (port_.empty()) return "the Kubernetes API stand-in did not start";
    return "";
  }

  std::string url() const { return "https://127.0.0.1:" + port_; }
  std::string ca() const { return dir_ + "/ca.crt"; }
  std::string token_file() const { return dir_ + "/token"; }

  // The `vigil run` options that point it at this stand-in.
  std::vector<std::string> vigil_args() const {
    return {"--k8s-api", url(), "--k8s-ca", ca(), "--k8s-token-file", token_file(), "-o",
            std::string("k8s.node_name=") + kNode};
  }

  // A vigil configuration file's k8s section for this stand-in that skips
  // certificate verification (k8s.insecure) instead of naming the CA.
  std::string insecure_config_yaml() const {
    return "k8s:\n  api: " + url() + "\n  insecure: true\n  token_file: " + token_file() +
           "\n  node_name: " + kNode + "\n";
  }

  // Waits until the watcher has gone through the script up to its third
  // WATCH (so it has listed pod "c"); false on timeout.
  bool wait_script_done(std::chrono::milliseconds timeout = 60s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::istringstream log(slurp(dir_ + "/requests.log"));
      std::string line;
      while (std::getline(log, line)) {
        auto j = json::parse(line, nullptr, false);
        if (!j.is_discarded() && j.value("kind", "") == "watch" && j.value("n", 0) >= 3) return true;
      }
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }
  std::string requests() const { return slurp(dir_ + "/requests.log"); }

 private:
  std::string dir_;
  std::string port_;
  pid_t pid_ = -1;
};

}  // namespace vigil::e2e
