// Step "watch files": the files a reload reads (the configuration and the
// rule paths), watched: a change (an edit, a ConfigMap update) reloads as
// SIGHUP does, once the writes have settled (runtime/file_watch.h). Without
// the watch, SIGHUP still reloads.
#include "engine/agent/steps/steps.h"

#include "engine/agent/config.h"
#include "engine/runtime/file_watch.h"

namespace vigil::agent::steps {
namespace {

Status watch(runtime::Runner& runner, const std::vector<std::string>& files, std::unique_ptr<runtime::FileWatch>& out,
             const std::shared_ptr<spdlog::logger>& log) {
  auto w = runtime::FileWatch::create({.log = log});
  if (!w) return w.error();
  (*w)->set_paths(files);
  runtime::FileWatch* raw = w->get();
  if (Status s = runner.add_fd("file watch", raw->fd(), [raw] { raw->on_readable(runtime::FileWatch::Clock::now()); });
      !s) {
    return s;
  }
  runner.add_tick("file watch", std::chrono::milliseconds(100), [raw, &runner](std::uint64_t) {
    if (auto what = raw->changed(runtime::FileWatch::Clock::now())) runner.request_reload(*what + " changed");
  });
  out = std::move(*w);
  return {};
}

}  // namespace

Status watch_files(Agent& a) {
  a.watched = watched_files(a.opts, a.rule_paths);
  if (Status s = watch(*a.runner, a.watched, a.watch, a.log); !s) {
    a.log->warn("file watch off (SIGHUP still reloads): {}", s.error().message);
  }
  return {};
}

}  // namespace vigil::agent::steps
