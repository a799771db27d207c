// The vigil binary as a child process of a test: its stdout lines (and the
// JSON alerts among them), its stderr log and its exit status.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace vigil::support {

// `vigil COMMAND ARGS...` started by a test. Two reader threads collect
// stdout (lines, and the JSON objects with a "rule" among them: the alerts)
// and stderr (the log). SIGKILLed and reaped on destruction if the test did
// not stop it. What is kept is bounded: 100,000 stdout lines, as many alerts,
// 4 MiB of log.
class VigilProcess {
 public:
  using json = nlohmann::json;

  // `binary`: the vigil executable to run.
  explicit VigilProcess(std::string binary);
  ~VigilProcess();
  VigilProcess(const VigilProcess&) = delete;
  VigilProcess& operator=(const VigilProcess&) = delete;

  // Runs vigil through a launcher: the next start() executes
  // `launcher... BINARY COMMAND ARGS...` (e.g. setpriv with a reduced
  // capability set, `--` last). launcher[0] is an absolute path.
  void run_under(std::vector<std::string> launcher) { launcher_ = std::move(launcher); }

  // Starts `vigil run args...` with extra environment variables, as user
  // `run_as_uid` (no capabilities, no supplementary groups) when it is set.
  bool start(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
             std::optional<uid_t> run_as_uid = std::nullopt);
  // Starts `vigil COMMAND args...` (run, replay, capture, ...).
  bool start_command(const std::string& command, const std::vector<std::string>& args,
                     const std::map<std::string, std::string>& env = {},
                     std::optional<uid_t> run_as_uid = std::nullopt);

  // The child's pid (a launcher that execs vigil keeps it); -1 before start().
  pid_t pid() const { return pid_; }

  // Waits for the `ready` log line; false when vigil exited first or the time ran out.
  bool wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Waits until stderr holds `text` at least `times` times.
  bool wait_stderr(const std::string& text, int times = 1,
                   std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // How many times stderr holds `text`.
  int stderr_count(const std::string& text);

  // Sends `sig` while vigil runs.
  void signal(int sig);
  // Waits for vigil to exit (SIGKILL after `timeout`) and for the readers to
  // drain its output; returns its wait status (-1 when it was never started).
  int wait_exit(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Sends `sig` (SIGTERM; 0 just waits), then returns the exit code: -1 when
  // it did not exit normally in time.
  int stop(int sig = SIGTERM);
  // True once vigil closed its stderr (it exited, or is exiting).
  bool exited();

  // The alerts on stdout so far accepted by pred; waits up to `wait` for at least one.
  std::vector<json> alerts(const std::function<bool(const json&)>& pred,
                           std::chrono::milliseconds wait = std::chrono::milliseconds(0));
  // The alerts of rule `rule` whose output field `field` equals `value`.
  std::vector<json> alerts_where(const std::string& rule, const std::string& field, const json& value,
                                 std::chrono::milliseconds wait = std::chrono::milliseconds(0));
  std::vector<std::string> stdout_lines();
  // Every alert so far with when the test read it (wall clock, ns since the
  // epoch): what an alert's delay is measured against.
  std::vector<std::pair<json, std::int64_t>> timed_alerts();
  std::string stdout_text();
  std::string stderr_text();
  // What to print when an assertion about this run fails: the log and stdout.
  std::string diag();

 private:
  bool stderr_has_locked(const std::string& text) const;
  int stderr_count_locked(const std::string& text) const;
  // Polls pred (called with mu_ held) until it holds, the time runs out, or
  // (stop_on_exit) vigil closed its stderr.
  bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout, bool stop_on_exit = true);
  void read_lines(int fd, bool is_stdout);
  void join_readers();

  std::string binary_;
  std::vector<std::string> launcher_;
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::thread out_th_, err_th_;
  std::mutex mu_;
  std::vector<std::string> lines_;
  std::vector<json> alerts_;
  std::vector<std::int64_t> alert_received_ns_;  // when each of alerts_ was read (wall clock, ns)
  std::string err_;
  bool err_closed_ = false;
};

}  // namespace vigil::support
