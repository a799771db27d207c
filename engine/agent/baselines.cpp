#include "engine/agent/baselines.h"

#include <cmath>

#include "engine/config/config.h"
#include "engine/runtime/file_watch.h"
#include "engine/runtime/runner.h"
#include "engine/util/safe_file.h"

namespace vigil::agent {
using config::get_or;

Result<BaselineSettings> baseline_settings(const YAML::Node& cfg, const std::string& state_dir) {
  BaselineSettings s;
  baseline::Config& c = s.store;
  auto enabled = get_or<bool>(cfg, "baseline.enabled", false);
  if (!enabled) return enabled.error();
  s.enabled = *enabled;
  auto dir = get_or<std::string>(cfg, "baseline.dir", state_dir + "/baseline");
  if (!dir) return dir.error();
  c.dir = *dir;
  auto key = get_or<std::string>(cfg, "baseline.key", "image");
  if (!key) return key.error();
  auto mode = baseline::key_mode_from_name(*key);
  if (!mode) return Error::bad_input("config key 'baseline.key': expected image, image_digest or owner");
  c.key = *mode;
  auto learn = get_or<double>(cfg, "baseline.learn_for_s", 86400.0);
  if (!learn) return learn.error();
  c.learn_for_ns = static_cast<std::uint64_t>(std::llround(*learn * 1e9));
  auto save = get_or<double>(cfg, "baseline.save_interval_s", 60.0);
  if (!save) return save.error();
  s.save_every = std::chrono::milliseconds(static_cast<std::int64_t>(*save * 1000));
  auto v4 = get_or<std::uint32_t>(cfg, "baseline.v4_prefix", 24);
  if (!v4) return v4.error();
  c.v4_prefix = static_cast<int>(*v4);
  auto v6 = get_or<std::uint32_t>(cfg, "baseline.v6_prefix", 64);
  if (!v6) return v6.error();
  c.v6_prefix = static_cast<int>(*v6);
  auto eph = get_or<std::uint32_t>(cfg, "baseline.ephemeral_from", c.ephemeral_from);
  if (!eph) return eph.error();
  c.ephemeral_from = *eph;
  const YAML::Node wp = cfg["baseline"] ? cfg["baseline"]["watch_paths"] : YAML::Node();
  if (wp && !wp.IsNull()) {
    c.watch_paths.clear();
    if (wp.IsScalar()) c.watch_paths.push_back(wp.Scalar());
    else
      for (const auto& n : wp) c.watch_paths.push_back(n.Scalar());
  }
  struct Cap {
    const char* key;
    std::size_t* dst;
  };
  for (Cap cap : {Cap{"baseline.max_workloads", &c.max_workloads}, Cap{"baseline.max_exes", &c.caps.exes},
                  Cap{"baseline.max_destinations", &c.caps.destinations}, Cap{"baseline.max_files", &c.caps.files},
                  Cap{"baseline.max_gpu_classes", &c.caps.gpu_classes}}) {
    auto v = get_or<std::uint32_t>(cfg, cap.key, static_cast<std::uint32_t>(*cap.dst));
    if (!v) return v.error();
    *cap.dst = *v;
  }
  return s;
}

void log_baseline_errors(const std::vector<Error>& errors, spdlog::logger& log) {
  for (const Error& e : errors) log.warn("baseline: {}", e.message);
}

Result<std::unique_ptr<baseline::Store>> start_baselines(const BaselineSettings& s, runtime::Runner& runner,
                                                         std::unique_ptr<runtime::FileWatch>& watch,
                                                         const std::shared_ptr<spdlog::logger>& log) {
  if (Status made = util::make_dirs(s.store.dir, util::kDirMode); !made) {
    Error e = made.error();
    e.message = "baseline.dir: " + e.message;
    return e;
  }
  auto store = std::make_unique<baseline::Store>(s.store);
  log_baseline_errors(store->load(), *log);
  const baseline::Stats st = store->stats();
  log->info("baselines on: {} workload profile(s) loaded from {} ({} locked, {} learning); key {}, learn for {} s",
            st.workloads, s.store.dir, st.locked, st.learning, baseline::key_mode_name(s.store.key),
            s.store.learn_for_ns / 1000000000);
  baseline::Store* raw = store.get();
  runner.add_tick("baseline save", s.save_every, [raw, log, last_full = baseline::Stats{}](std::uint64_t) mutable {
    log_baseline_errors(raw->save(), *log);
    const baseline::Stats now = raw->stats();
    for (std::size_t i = 0; i < baseline::kSets; ++i) {
      if (now.full[i] != last_full.full[i]) {
        log->warn("baseline: {} {} not learnt since start because a profile's set was full (baseline.max_{})",
                  now.full[i], baseline::set_name(static_cast<baseline::Set>(i)),
                  baseline::set_name(static_cast<baseline::Set>(i)));
      }
    }
    if (now.workloads_refused != last_full.workloads_refused) {
      log->warn("baseline: {} container(s) without a profile since start: baseline.max_workloads reached",
                now.workloads_refused);
    }
    last_full = now;
  });
  // `vigil baseline lock` writes a profile file: the watch sees it and the
  // store takes the lock (SIGHUP does the same through the reload's commit).
  auto w = runtime::FileWatch::create({.quiet = std::chrono::milliseconds(200), .dir_suffixes = {".json"}, .log = log});
  if (!w) {
    log->warn("baseline: no watch on {} ({}): a `vigil baseline lock` takes effect at the next SIGHUP", s.store.dir,
              w.error().message);
    return store;
  }
  (*w)->set_paths({s.store.dir});
  runtime::FileWatch* fw = w->get();
  if (Status added =
          runner.add_fd("baseline watch", fw->fd(), [fw] { fw->on_readable(runtime::FileWatch::Clock::now()); });
      !added) {
    log->warn("baseline: no watch on {}: {}", s.store.dir, added.error().message);
    return store;
  }
  runner.add_tick("baseline watch", std::chrono::milliseconds(100), [fw, raw, log](std::uint64_t) {
    if (!fw->changed(runtime::FileWatch::Clock::now())) return;
    std::vector<std::string> done;
    log_baseline_errors(raw->pick_up(done), *log);
    for (const std::string& d : done) log->info("baseline: {}", d);
  });
  watch = std::move(*w);
  return store;
}

}  // namespace vigil::agent
