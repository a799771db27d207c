#include "engine/cli/baseline_cmd.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include "engine/baseline/profile_file.h"
#include "engine/capture/event_json.h"
#include "engine/cli/common.h"
#include "engine/cli/config.h"
#include "engine/runtime/file_watch.h"
#include "engine/runtime/runner.h"
#include "engine/util/safe_file.h"

namespace vigil::cli {

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
    else for (const auto& n : wp) c.watch_paths.push_back(n.Scalar());
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
    log->warn("baseline: no watch on {} ({}): a `vigil baseline lock` takes effect at the next SIGHUP",
              s.store.dir, w.error().message);
    return store;
  }
  (*w)->set_paths({s.store.dir});
  runtime::FileWatch* fw = w->get();
  if (Status added = runner.add_fd("baseline watch", fw->fd(),
                                   [fw] { fw->on_readable(runtime::FileWatch::Clock::now()); });
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

// ------------------------------------------------------------ vigil baseline

namespace {

std::string when(std::uint64_t ns) { return ns == 0 ? "-" : capture::rfc3339(ns); }

void print_summary(const baseline::Profile& p) {
  std::printf("%s\t%s\tfirst_seen=%s\texes=%zu destinations=%zu files=%zu gpu_classes=%zu", p.key().c_str(),
              std::string(baseline::phase_name(p.phase())).c_str(), when(p.first_seen_ns()).c_str(), p.exe_count(),
              p.destination_count(), p.file_count(), p.gpu_class_count());
  std::uint64_t full = 0;
  for (auto n : p.full()) full += n;
  if (full) std::printf(" not_learnt_full=%llu", static_cast<unsigned long long>(full));
  std::printf("\n");
}

void print_profile(const baseline::Profile& p) {
  std::printf("workload:     %s\n", p.key().c_str());
  std::printf("state:        %s", std::string(baseline::phase_name(p.phase())).c_str());
  if (p.phase() == baseline::Phase::kLocked) {
    std::printf(" (%s, %s)", p.lock_cause().c_str(), when(p.locked_at_ns()).c_str());
  }
  std::printf("\nfirst seen:   %s\nlast learnt:  %s\n", when(p.first_seen_ns()).c_str(), when(p.updated_ns()).c_str());
  std::printf("executables (%zu):\n", p.exe_count());
  for (const auto& [path, hashes] : p.exes_sorted()) {
    if (hashes.empty()) std::printf("  %s\n", path.c_str());
    for (const auto& h : hashes) std::printf("  %s sha256:%s\n", path.c_str(), h.c_str());
  }
  std::printf("destinations (%zu):\n", p.destination_count());
  for (const auto& d : p.destinations_sorted()) std::printf("  %s\n", d.c_str());
  std::printf("files written (%zu):\n", p.file_count());
  for (const auto& f : p.files_sorted()) std::printf("  %s\n", f.c_str());
  std::printf("gpu classes (%zu):\n", p.gpu_class_count());
  for (auto c : p.gpu_classes()) std::printf("  0x%x\n", c);
  for (std::size_t i = 0; i < baseline::kSets; ++i) {
    if (p.full()[i]) {
      std::printf("not learnt, %s full: %llu\n", std::string(baseline::set_name(static_cast<baseline::Set>(i))).c_str(),
                  static_cast<unsigned long long>(p.full()[i]));
    }
  }
}

}  // namespace

int cmd_baseline(int argc, char** argv) {
  std::string dir, config_path, workload;
  bool all = false, json = false;
  CLI::App app("Per-workload baselines: list, show and lock the profiles in a directory (docs/baselines.md). "
               "Works while an agent runs: it picks up a lock within a second.",
               "vigil baseline");
  app.require_subcommand(1);
  auto common = [&](CLI::App* c) {
    c->add_option("--dir", dir, "the profile directory (default: baseline.dir of -c, else /var/lib/vigil/baseline)")
        ->type_name("DIR");
    c->add_option("-c,--config", config_path, "configuration whose baseline: section names the directory and caps")
        ->type_name("FILE");
  };
  CLI::App* list = app.add_subcommand("list", "one line per workload: state, first seen, set sizes");
  common(list);
  CLI::App* show = app.add_subcommand("show", "everything a workload's profile holds");
  common(show);
  show->add_option("--workload", workload, "the workload key (as `list` prints it)")->required()->type_name("KEY");
  show->add_flag("--json", json, "print the profile file's JSON");
  CLI::App* lock = app.add_subcommand("lock", "lock a workload's profile now: from then on, deviations are alerts");
  common(lock);
  lock->add_option("--workload", workload, "the workload key (as `list` prints it)")->type_name("KEY");
  lock->add_flag("--all", all, "lock every profile still learning");
  if (int rc = parse_cli(app, argc, argv); rc >= 0) return rc;
  auto log = make_logger("baseline", "warn");

  auto cfg = load_config_with_overrides(config_path, {});
  if (!cfg) return fail(*log, cfg.error());
  auto state_dir = get_or<std::string>(*cfg, "state_dir", "/var/lib/vigil");
  if (!state_dir) return fail(*log, state_dir.error());
  auto settings = baseline_settings(*cfg, *state_dir);
  if (!settings) return fail(*log, settings.error());
  baseline::Config sc = settings->store;
  if (!dir.empty()) sc.dir = dir;
  struct stat st {};
  if (stat(sc.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return fail(*log, Error::bad_input(sc.dir + ": no such directory"));
  }
  sc.read_only = !lock->parsed();
  baseline::Store store(sc);
  std::vector<Error> refused = store.load();
  for (const Error& e : refused) std::fprintf(stderr, "vigil baseline: %s\n", e.message.c_str());

  if (list->parsed()) {
    for (const baseline::Profile* p : store.profiles()) print_summary(*p);
    return refused.empty() ? 0 : 2;
  }
  if (show->parsed()) {
    const baseline::Profile* p = store.find(workload);
    if (!p) return fail(*log, Error::bad_input("no profile for workload '" + workload + "' in " + sc.dir));
    if (json) std::fputs(baseline::encode_profile(*p).c_str(), stdout);
    else print_profile(*p);
    return 0;
  }
  // lock
  if (all == !workload.empty()) {
    std::fprintf(stderr, "vigil baseline lock: give --workload KEY or --all\n");
    return 2;
  }
  const auto now = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  std::vector<std::string> keys;
  if (all) {
    for (const baseline::Profile* p : store.profiles()) {
      if (p->phase() == baseline::Phase::kLearning) keys.push_back(p->key());
    }
  } else {
    if (!store.find(workload)) return fail(*log, Error::bad_input("no profile for workload '" + workload + "' in " + sc.dir));
    keys.push_back(workload);
  }
  for (const std::string& k : keys) {
    const bool was_locked = store.find(k)->phase() == baseline::Phase::kLocked;
    store.lock(k, now, "command");
    std::printf("%s %s\n", was_locked ? "already locked:" : "locked:", k.c_str());
  }
  std::vector<Error> failed = store.save();
  for (const Error& e : failed) std::fprintf(stderr, "vigil baseline: %s\n", e.message.c_str());
  if (!failed.empty()) return 1;
  return refused.empty() ? 0 : 2;
}

}  // namespace vigil::cli
