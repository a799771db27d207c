#include "engine/runtime/rule_test.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "engine/baseline/store.h"
#include "engine/pipeline/pipeline.h"
#include "engine/plugin/host.h"
#include "engine/rules/document.h"
#include "engine/rules/rule_files.h"
#include "engine/rules/ruleset.h"
#include "engine/runtime/rule_test_reader.h"
#include "engine/state/state.h"
#include "engine/util/yaml_gate.h"

namespace vigil::runtime {

using namespace vigil::rules;
using namespace vigil::runtime::test_file;

std::string RuleTestFailure::to_string() const {
  return file + ":" + std::to_string(line) + ": test '" + test + "': " + message;
}

bool RuleTestReport::invalid() const {
  return std::any_of(problems.begin(), problems.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::kError; });
}

int RuleTestReport::exit_code() const {
  if (invalid()) return 2;
  return failed > 0 ? 1 : 0;
}

namespace {

// 2026-01-01T00:00:00Z
constexpr std::uint64_t kFirstEventNs = 1767225600ull * 1000000000ull;

void check(const Expectation& e, const std::vector<event::Alert>& alerts, const std::string& file, int line,
           const std::string& test, const char* where, RuleTestReport& rep, bool& ok) {
  auto fired = [&](const std::string& r) {
    return std::any_of(alerts.begin(), alerts.end(), [&](const event::Alert& a) { return a.rule == r; });
  };
  std::string got;
  for (const auto& a : alerts) {
    if (got.find("'" + a.rule + "'") == std::string::npos) got += (got.empty() ? "'" : ", '") + a.rule + "'";
  }
  if (got.empty()) got = "none";
  for (const auto& r : e.fire) {
    if (!fired(r)) {
      rep.failures.push_back({file, line, test, std::string(where) + "expected '" + r + "' to fire; fired: " + got});
      ok = false;
    }
  }
  for (const auto& r : e.not_fire) {
    if (fired(r)) {
      rep.failures.push_back({file, line, test, std::string(where) + "expected '" + r + "' not to fire"});
      ok = false;
    }
  }
  for (const auto& kv : e.output) {
    const std::string& r = kv.first;
    const std::string& text = kv.second;
    auto it = std::find_if(alerts.begin(), alerts.end(), [&](const event::Alert& a) { return a.rule == r; });
    if (it == alerts.end()) {
      rep.failures.push_back(
          {file, line, test, std::string(where) + "expected output of '" + r + "' but it did not fire"});
      ok = false;
      continue;
    }
    bool any = std::any_of(alerts.begin(), alerts.end(),
                           [&](const event::Alert& a) { return a.rule == r && a.output == text; });
    if (!any) {
      rep.failures.push_back(
          {file, line, test,
           std::string(where) + "output of '" + r + "' differs:\n  expected: " + text + "\n  got:      " + it->output});
      ok = false;
    }
  }
}

// What every test of one file shares: its rules (and the plugins they
// need), and the names of its rules and sequences.
struct FileRules {
  std::unique_ptr<plugin::Host> plugins;
  LoadResult lr;
  std::set<std::string> known;
};

// `plugins:` as in the configuration: each listed plugin is loaded (and
// initialised) for its fields and sources; it lives for this file's tests.
std::unique_ptr<plugin::Host> load_plugins(const YAML::Node& pl, const std::string& path, LoadOptions& opts) {
  YAML::Node cfg;
  cfg["plugins"] = pl;
  if (pl.IsSequence()) {
    for (const auto& p : pl) {
      if (p.IsMap() && p["name"]) cfg["load_plugins"].push_back(p["name"]);
    }
  }
  auto specs = plugin::parse_config(cfg, path);
  if (!specs) bad(pl, specs.error().message);
  auto host = plugin::Host::load(*specs, nullptr);
  if (!host) bad(pl, host.error().message);
  if (Status st = (*host)->init_all(); !st) bad(pl, st.error().message);
  std::unique_ptr<plugin::Host> plugins = std::move(*host);
  plugins->configure(opts);
  return plugins;
}

// The rules files `rules:` names (relative to the test file), loaded.
FileRules load_file_rules(const YAML::Node& root, const std::string& path) {
  namespace fs = std::filesystem;
  FileRules fr;
  std::vector<std::string> rule_files;
  fs::path base = fs::path(path).parent_path();
  for (const auto& r : strings(root["rules"], "rules")) {
    fs::path p(r);
    rule_files.push_back((p.is_absolute() ? p : base / p).lexically_normal().string());
  }
  if (rule_files.empty()) bad(root, "'rules' must name at least one rules file");
  LoadOptions load_opts;
  if (const YAML::Node pl = root["plugins"]; pl) fr.plugins = load_plugins(pl, path, load_opts);
  fr.lr = load_rules(rule_files, load_opts);
  if (fr.lr.ruleset) {
    // A rule named in an expectation that does not exist is a test error.
    for (const auto& ri : fr.lr.ruleset->rules()) fr.known.insert(ri.name);
    for (const auto& si : fr.lr.ruleset->sequences()) fr.known.insert(si.name);
  }
  return fr;
}

// vigil: {files: [...]}: the agent's own files and directories (vigil.file).
void set_vigil_files(const YAML::Node& v, state::State& st) {
  if (!v) return;
  if (!v.IsMap()) bad(v, "'vigil' must be a map (files: [...])");
  std::vector<std::string> files;
  if (const YAML::Node f = v["files"]) {
    if (!f.IsSequence()) bad(f, "'vigil.files' must be a list of paths");
    for (const auto& p : f) files.push_back(scalar(p, "vigil.files"));
  }
  st.set_vigil_paths(std::move(files));
}

// gpus: [{pci, minor, uuid, model}, ...]: the node's GPUs as the driver lists
// them (at most 64), so Xids map to their GPU (gpu.xid.client_pods) and
// NVIDIA_VISIBLE_DEVICES indexes to minors.
void set_gpus(const YAML::Node& g, state::State& st) {
  if (!g) return;
  if (!g.IsSequence() || g.size() > 64) bad(g, "'gpus' must be a list of at most 64 GPUs ({pci, minor, uuid, model})");
  state::NvidiaInfo info;
  for (const auto& e : g) {
    if (!e.IsMap() || !e["pci"] || !e["minor"]) bad(e, "a GPU needs 'pci' and 'minor'");
    state::GpuInfo& gi = info.gpus.emplace_back();
    gi.pci = scalar(e["pci"], "pci");
    const std::uint64_t minor = number(e["minor"], "minor");
    if (minor > 254) bad(e["minor"], "a GPU's minor is 0 to 254");
    gi.minor = static_cast<std::uint32_t>(minor);
    if (e["uuid"]) gi.uuid = scalar(e["uuid"], "uuid");
    if (e["model"]) gi.model = scalar(e["model"], "model");
  }
  st.upsert_nvidia(std::move(info));
}

// A state that never reads /proc or cgroupfs: a test's world is its file.
state::Config offline() {
  state::Config cfg;
  cfg.live = false;
  return cfg;
}

// One test: its events through a fresh state and the pipeline, each
// event's expectations checked after it, the test's after the last.
class TestRun {
 public:
  TestRun(const YAML::Node& root, const YAML::Node& t, const FileRules& fr, const std::string& path,
          RuleTestReport& rep)
      : t_(t), path_(path), rep_(rep), st_(offline()) {
    name_ = t["name"] ? scalar(t["name"], "name") : "";
    if (name_.empty()) bad(t, "a test needs a 'name'");
    whole_ = expectation(t["expect"]);
    for (const auto* list : {&whole_.fire, &whole_.not_fire}) {
      for (const auto& r : *list) {
        if (!fr.known.count(r))
          bad(t["expect"], "test '" + name_ + "' names rule '" + r + "', which the rules files do not define");
      }
    }
    if (!t["events"] || !t["events"].IsSequence() || t["events"].size() == 0)
      bad(t, "test '" + name_ + "' has no events");
    set_vigil_files(t["vigil"], st_);
    set_gpus(t["gpus"], st_);
    if (auto bc = baseline_config(root["baseline"], t["baseline"])) baselines_ = std::make_unique<baseline::Store>(*bc);
    pipe_ = std::make_unique<pipeline::Pipeline>(
        pipeline::Deps{st_, [this](std::shared_ptr<const event::Alert> a) { alerts_.push_back(*a); }, "",
                       baselines_.get()},
        fr.lr.ruleset);
  }

  void run() {
    for (const auto& e : t_["events"]) event(e);
    check(whole_, all_, path_, t_.Mark().line + 1, name_, "", rep_, ok_);
    ++rep_.tests;
    if (ok_) ++rep_.passed;
    else ++rep_.failed;
  }

 private:
  // Processes are injected when first seen or when the test changes them, so
  // facts the state learns from events (proc.gpu.compute) carry over.
  void inject(state::Process p) {
    if (!p.start_ts_ns) p.start_ts_ns = kFirstEventNs;
    auto it = injected_.find(p.pid);
    if (it != injected_.end() && same(it->second, p)) return;
    injected_[p.pid] = p;
    st_.upsert_process(std::move(p));
  }

  // The event's time: time_ns, after the previous one, or 1 ms after it.
  void advance(const YAML::Node& e) {
    if (e["time_ns"] && e["after"]) bad(e["after"], "an event has 'time_ns' or 'after', not both");
    if (e["time_ns"]) ts_ = number(e["time_ns"], "time_ns");
    else if (e["after"]) ts_ += after_ns(e["after"]);
    else if (!first_) ts_ += 1000000;
    first_ = false;
  }

  void event(const YAML::Node& e) {
    if (!e.IsMap() || !e["type"]) bad(e, "an event must be a map with a 'type'");
    Context c{merged(t_["process"], e["process"]), e["parents"] ? e["parents"] : t_["parents"],
              e["container"] ? e["container"] : t_["container"], e["pod"] ? e["pod"] : t_["pod"]};
    Built b = build_context(c);
    advance(e);
    if (b.container) st_.upsert_container(*b.container);
    if (b.pod) st_.upsert_pod(*b.pod);
    for (auto it = b.parents.rbegin(); it != b.parents.rend(); ++it) inject(*it);
    inject(b.proc);
    event::Event ev = make_event(e, b, ts_);
    // `baseline_lock: true`: `vigil baseline lock --all` just before this event.
    if (e["baseline_lock"] && e["baseline_lock"].as<bool>(false)) {
      if (!baselines_) bad(e["baseline_lock"], "'baseline_lock' needs a 'baseline' section");
      for (const baseline::Profile* p : baselines_->profiles()) baselines_->lock(p->key(), ts_, "command");
    }
    alerts_.clear();
    pipe_->process(ev);
    check(expectation(e["expect"]), alerts_, path_, e.Mark().line + 1, name_, "event: ", rep_, ok_);
    all_.insert(all_.end(), alerts_.begin(), alerts_.end());
  }

  const YAML::Node& t_;
  const std::string& path_;
  RuleTestReport& rep_;
  std::string name_;
  Expectation whole_;
  state::State st_;
  std::unique_ptr<baseline::Store> baselines_;
  std::unique_ptr<pipeline::Pipeline> pipe_;
  std::vector<event::Alert> alerts_;  // of the event being processed
  std::vector<event::Alert> all_;
  std::map<std::uint32_t, state::Process> injected_;
  std::uint64_t ts_ = kFirstEventNs;
  bool first_ = true;
  bool ok_ = true;
};

// The file's text as YAML; nullopt (and a problem) when it cannot be read.
std::optional<YAML::Node> load_yaml(const std::string& path, Diagnostic& problem) {
  try {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      problem.message = "cannot read the test file";
      return std::nullopt;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    // libyaml first: yaml-cpp 0.7 can loop without bound on some malformed input.
    if (YamlSyntaxError se; !yaml_syntax_ok(text, &se)) {
      problem.line = se.line;
      problem.col = se.column;
      problem.message = "invalid YAML: " + se.message;
      return std::nullopt;
    }
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    problem.line = e.mark.line + 1;
    problem.col = e.mark.column + 1;
    problem.message = "invalid YAML: " + e.msg;
    return std::nullopt;
  }
}

void run_file(const std::string& path, RuleTestReport& rep) {
  Diagnostic problem;
  problem.severity = Severity::kError;
  problem.code = code::kYamlValidate;
  problem.file = path;
  auto fail = [&](int line, int col, std::string msg) {
    problem.line = line;
    problem.col = col;
    problem.message = std::move(msg);
    rep.problems.push_back(problem);
  };
  std::optional<YAML::Node> root = load_yaml(path, problem);
  if (!root) {
    rep.problems.push_back(problem);
    return;
  }
  try {
    if (!root->IsMap()) bad(*root, "a rule test file must be a map with 'rules' and 'tests'");
    FileRules fr = load_file_rules(*root, path);
    for (auto& d : fr.lr.diagnostics) {
      if (d.severity == Severity::kError) rep.problems.push_back(d);
    }
    if (!fr.lr.ruleset) return;
    const YAML::Node tests = (*root)["tests"];
    if (!tests || !tests.IsSequence()) bad(*root, "'tests' must be a list");
    for (const auto& t : tests) {
      if (!t.IsMap()) bad(t, "a test must be a map");
      TestRun(*root, t, fr, path, rep).run();
    }
  } catch (const BadTest& b) {
    fail(b.mark.line >= 0 ? b.mark.line + 1 : 0, b.mark.column >= 0 ? b.mark.column + 1 : 0, b.message);
  } catch (const YAML::Exception& e) {
    fail(e.mark.line + 1, e.mark.column + 1, "invalid test file: " + e.msg);
  }
}

}  // namespace

RuleTestReport run_rule_tests(const std::vector<std::string>& paths) {
  RuleTestReport rep;
  Diagnostics d;
  YamlFiles found = expand_yaml_paths(paths, d, rules::YamlKind::kRuleTests);
  for (const auto& dir : found.empty_dirs) {
    d.error(code::kFileRead, Pos{dir, 0, 0}, "", "no rule test files (*_test.yaml, *_test.yml) in this directory");
  }
  for (auto& p : d.take()) rep.problems.push_back(std::move(p));
  for (const auto& f : found.files) run_file(f, rep);
  return rep;
}

}  // namespace vigil::runtime
