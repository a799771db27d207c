#include "tests/support/vigil_process.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <utility>

#include "tests/support/process.h"

namespace vigil::support {
namespace {

constexpr std::size_t kMaxLines = 100000;
constexpr std::size_t kMaxStderrBytes = 4u << 20;
constexpr std::size_t kMaxLineBytes = 1u << 20;  // a longer run without a newline counts as a line

}  // namespace

VigilProcess::VigilProcess(std::string binary) : binary_(std::move(binary)) {}

VigilProcess::~VigilProcess() {
  if (pid_ > 0 && !status_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  join_readers();
}

bool VigilProcess::start(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                         std::optional<uid_t> run_as_uid) {
  return start_command("run", args, env, run_as_uid);
}

bool VigilProcess::start_command(const std::string& command, const std::vector<std::string>& args,
                                 const std::map<std::string, std::string>& env, std::optional<uid_t> run_as_uid) {
  if (pid_ > 0) return false;  // one run per object
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return false;
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return false;
  }
  // Everything the child needs is built before the fork.
  std::vector<std::string> all = launcher_;
  all.push_back(binary_);
  all.push_back(command);
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : all) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives a crashed test
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    if (run_as_uid) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(*run_as_uid) != 0 || ::setuid(*run_as_uid) != 0) ::_exit(126);
    }
    ::execv(argv[0], argv.data());
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

bool VigilProcess::wait_ready(std::chrono::milliseconds timeout) {
  return wait_until([this] { return stderr_has_locked("ready"); }, timeout);
}

bool VigilProcess::wait_stderr(const std::string& text, int times, std::chrono::milliseconds timeout) {
  return wait_until([&] { return stderr_count_locked(text) >= times; }, timeout);
}

int VigilProcess::stderr_count(const std::string& text) {
  std::lock_guard<std::mutex> g(mu_);
  return stderr_count_locked(text);
}

void VigilProcess::signal(int sig) {
  if (pid_ > 0 && !status_) ::kill(pid_, sig);
}

int VigilProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (status_) return *status_;
  if (pid_ <= 0) return -1;
  const int st = wait_or_kill(pid_, timeout);
  if (st == -1) return -1;
  status_ = st;
  // Every line written before the exit is read once the pipes reach EOF.
  join_readers();
  return st;
}

int VigilProcess::stop(int sig) {
  signal(sig);
  const int st = wait_exit();
  return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

bool VigilProcess::exited() {
  std::lock_guard<std::mutex> g(mu_);
  return err_closed_;
}

std::vector<VigilProcess::json> VigilProcess::alerts(const std::function<bool(const json&)>& pred,
                                                     std::chrono::milliseconds wait) {
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

std::vector<VigilProcess::json> VigilProcess::alerts_where(const std::string& rule, const std::string& field,
                                                           const json& value, std::chrono::milliseconds wait) {
  return alerts(
      [&](const json& a) {
        return a.value("rule", "") == rule && a.contains("output_fields") &&
               a["output_fields"].value(field, json()) == value;
      },
      wait);
}

std::vector<std::pair<VigilProcess::json, std::int64_t>> VigilProcess::timed_alerts() {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<std::pair<json, std::int64_t>> out;
  for (std::size_t i = 0; i < alerts_.size(); ++i) out.emplace_back(alerts_[i], alert_received_ns_[i]);
  return out;
}

std::vector<std::string> VigilProcess::stdout_lines() {
  std::lock_guard<std::mutex> g(mu_);
  return lines_;
}

std::string VigilProcess::stdout_text() {
  std::lock_guard<std::mutex> g(mu_);
  std::string s;
  for (const auto& l : lines_) s += l + "\n";
  return s;
}

std::string VigilProcess::stderr_text() {
  std::lock_guard<std::mutex> g(mu_);
  return err_;
}

std::string VigilProcess::diag() {
  return "\n--- vigil stderr ---\n" + stderr_text() + "--- vigil stdout ---\n" + stdout_text();
}

bool VigilProcess::stderr_has_locked(const std::string& text) const { return err_.find(text) != std::string::npos; }

int VigilProcess::stderr_count_locked(const std::string& text) const {
  int n = 0;
  for (std::size_t p = err_.find(text); p != std::string::npos; p = err_.find(text, p + text.size())) ++n;
  return n;
}

bool VigilProcess::wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout, bool stop_on_exit) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (pred()) return true;
      if (stop_on_exit && err_closed_) return false;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
}

void VigilProcess::read_lines(int fd, bool is_stdout) {
  std::string pending;
  char buf[8192];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<std::size_t>(n));
    if (pending.find('\n') == std::string::npos && pending.size() >= kMaxLineBytes) pending += '\n';
    std::size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      std::lock_guard<std::mutex> g(mu_);
      if (is_stdout) {
        if (lines_.size() < kMaxLines) lines_.push_back(line);
        auto j = json::parse(line, nullptr, false);
        if (!j.is_discarded() && j.is_object() && j.contains("rule") && alerts_.size() < kMaxLines) {
          alerts_.push_back(std::move(j));
          alert_received_ns_.push_back(
              std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
                  .count());
        }
      } else if (err_.size() < kMaxStderrBytes) {
        err_ += line + "\n";
      }
    }
  }
  ::close(fd);
  std::lock_guard<std::mutex> g(mu_);
  if (!is_stdout) err_closed_ = true;
}

void VigilProcess::join_readers() {
  if (out_th_.joinable()) out_th_.join();
  if (err_th_.joinable()) err_th_.join();
}

}  // namespace vigil::support
