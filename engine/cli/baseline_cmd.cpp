#include "engine/cli/baseline_cmd.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include "engine/baseline/profile_file.h"
#include "engine/capture/event_json.h"
#include "engine/agent/baselines.h"
#include "engine/agent/log.h"
#include "engine/cli/common.h"
#include "engine/config/config.h"

namespace vigil::cli {

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
  CLI::App app(
      "Per-workload baselines: list, show and lock the profiles in a directory (docs/baselines.md). "
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
  auto log = agent::make_logger("baseline", "warn");

  auto cfg = config::load_config(config_path);
  if (!cfg) return agent::fail(*log, cfg.error());
  auto state_dir = config::get_or<std::string>(*cfg, "state_dir", "/var/lib/vigil");
  if (!state_dir) return agent::fail(*log, state_dir.error());
  auto settings = agent::baseline_settings(*cfg, *state_dir);
  if (!settings) return agent::fail(*log, settings.error());
  baseline::Config sc = settings->store;
  if (!dir.empty()) sc.dir = dir;
  struct stat st {};
  if (stat(sc.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return agent::fail(*log, Error::bad_input(sc.dir + ": no such directory"));
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
    if (!p) return agent::fail(*log, Error::bad_input("no profile for workload '" + workload + "' in " + sc.dir));
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
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  std::vector<std::string> keys;
  if (all) {
    for (const baseline::Profile* p : store.profiles()) {
      if (p->phase() == baseline::Phase::kLearning) keys.push_back(p->key());
    }
  } else {
    if (!store.find(workload))
      return agent::fail(*log, Error::bad_input("no profile for workload '" + workload + "' in " + sc.dir));
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
