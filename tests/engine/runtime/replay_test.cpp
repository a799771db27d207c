// Replay: a capture of a "live" run (a stand-in pod: a miner exec, a GPU open,
// a connect to a pool port, an Xid, a shell) replayed through a fresh state and
// pipeline gives the live run's alerts field for field; a rule written after
// the capture finds the event; filters choose what is reported.
#include "engine/runtime/replay.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/capture/event_json.h"
#include "engine/capture/flight_recorder.h"
#include "engine/capture/reader.h"
#include "engine/capture/writer.h"
#include "engine/rules/filter.h"
#include "engine/rules/ruleset.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/taps.h"
#include "engine/state/state.h"

namespace vigil::runtime {
namespace {

using namespace vigil::capture;

namespace fs = std::filesystem;
using AlertList = std::vector<event::Alert>;
constexpr std::uint64_t kT0 = 1'700'000'000'000'000'000;
const std::string kContainerId(64, 'c');

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::shared_ptr<const rules::Ruleset> bundled_rules(std::string extra = "") {
  std::vector<std::pair<std::string, std::string>> files = {
      {"rules/vigil_rules.yaml", slurp("rules/vigil_rules.yaml")}};
  if (!extra.empty()) files.emplace_back("retro_hunt.yaml", extra);
  auto r = rules::load_rules_text(files, rules::LoadOptions{});
  EXPECT_TRUE(r.ruleset) << (r.diagnostics.empty() ? "" : r.diagnostics[0].to_string());
  return r.ruleset;
}

event::Event make(std::uint64_t ts, event::Type type, std::uint32_t pid, std::uint32_t ppid, std::string comm,
                  std::uint64_t cgroup, event::Payload data) {
  event::Event ev;
  ev.hdr.ts_ns = ts;
  ev.hdr.type = type;
  ev.hdr.pid = pid;
  ev.hdr.tid = pid;
  ev.hdr.ppid = ppid;
  ev.hdr.uid = 1000;
  ev.hdr.cgroup_id = cgroup;
  ev.hdr.comm = std::move(comm);
  ev.data = std::move(data);
  return ev;
}

// The stand-in pod's state, as a live run would learn it out of band.
void seed(state::State& st) {
  state::Container c;
  c.id = kContainerId;
  c.runtime = state::ContainerRuntime::kContainerd;
  c.pod_uid = "pod-uid-1";
  c.cgroup_id = 5000;
  c.cgroup_path = "kubepods.slice/kubepods-besteffort.slice/cri-containerd-" + kContainerId + ".scope";
  c.name = "server";
  c.image = "nvcr.io/nim/llama:1.0";
  st.upsert_container(c);
  state::Pod pod;
  pod.uid = "pod-uid-1";
  pod.name = "llm-0";
  pod.ns = "inference";
  pod.node = "gpu-node-1";
  state::PodContainer pc;
  pc.name = "server";
  pc.image = c.image;
  pc.id = kContainerId;
  pod.containers.push_back(pc);
  st.upsert_pod(pod);
  state::Process shim;
  shim.pid = 100;
  shim.ppid = 1;
  shim.comm = "python3";
  shim.exe = "python3";
  shim.exepath = "/usr/bin/python3";
  shim.args = {"-m", "server"};
  shim.cgroup_id = 5000;
  shim.container_id = kContainerId;
  shim.from_proc = true;
  st.upsert_process(shim);
}

std::vector<event::Event> scenario() {
  using namespace event;
  std::vector<Event> evs;
  std::uint64_t t = kT0;
  evs.push_back(make(t += 1000, Type::kFork, 100, 1, "python3", 5000, ForkData{101, 101, false}));
  ExecData miner;
  miner.filename = "/tmp/xmrig";
  miner.exe = "/tmp/xmrig";
  miner.args = {"xmrig", "-o", "stratum+tcp://pool.minexmr.com:4444", "-u", "4Axyz"};
  miner.cwd = "/tmp";
  evs.push_back(make(t += 1000, Type::kExec, 101, 100, "xmrig", 5000, miner));
  OpenData open{"/dev/nvidia0", 2, 0, 3, 195, 0, true};
  evs.push_back(make(t += 1000, Type::kOpen, 101, 100, "xmrig", 5000, open));
  ConnectData conn;
  conn.family = AF_INET;
  conn.proto = L4::kTcp;
  conn.daddr.family = AF_INET;
  conn.daddr.bytes = {203, 0, 113, 9};
  conn.dport = 3333;
  conn.result = 0;
  evs.push_back(make(t += 1000, Type::kConnect, 101, 100, "xmrig", 5000, conn));
  XidData xid{"kmsg", 0, 4, "0000:3b:00.0", 79, 101, "xmrig", "pid=101, name=xmrig, GPU has fallen off the bus."};
  evs.push_back(make(t += 1000, Type::kXid, 0, 0, "", 0, xid));
  evs.push_back(make(t += 1000, Type::kFork, 100, 1, "python3", 5000, ForkData{102, 102, false}));
  ExecData sh;
  sh.filename = "/bin/sh";
  sh.exe = "/bin/sh";
  sh.args = {"sh", "-c", "curl http://169.254.169.254/latest/meta-data/"};
  sh.cwd = "/";
  evs.push_back(make(t += 1000, Type::kExec, 102, 100, "sh", 5000, sh));
  evs.push_back(make(t += 1000, Type::kExit, 101, 100, "xmrig", 5000, ExitData{0, 9}));
  return evs;
}

// A live source stand-in: hands over `evs` (wall-clock style), then is done.
class VectorSource final : public source::EventSource {
 public:
  explicit VectorSource(std::vector<event::Event> evs) : evs_(std::move(evs)) {}
  std::string_view name() const override { return "bpf"; }
  Result<std::size_t> poll(std::size_t budget, const Emit& emit) override {
    std::size_t n = 0;
    while (n < budget && next_ < evs_.size()) {
      emit(std::move(evs_[next_++]));
      ++n;
    }
    return n;
  }
  Health health() const override { return next_ < evs_.size() ? Health::kRunning : Health::kDone; }

 private:
  std::vector<event::Event> evs_;
  std::size_t next_ = 0;
};

class ReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "vigil-replay-test-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    path_ = dir_ + "/live.vcap";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The live run: a source in a runner, state + pipeline + capture tap, as
  // `vigil run --capture` wires them (with `filter`: as `vigil capture --filter`).
  AlertList live_run(std::shared_ptr<const rules::Ruleset> rules, const rules::Filter* filter = nullptr) {
    state::State st(state::Config{.live = false});
    seed(st);
    WriterOptions wo;
    wo.block_size = 256;  // several blocks
    wo.snapshot = [&] { return snapshot_of(st); };
    auto w = CaptureWriter::open(path_, wo);
    EXPECT_TRUE(w);
    st.set_listener(w->get());
    AlertList alerts;
    pipeline::Pipeline pl({st, [&](std::shared_ptr<const event::Alert> a) { alerts.push_back(*a); }, "gpu-node-1"},
                          std::move(rules));
    CaptureTap tap(**w, filter);
    pl.add_tap(&tap);
    auto runner = Runner::create(RunnerOptions{.budget = 3, .signals = false});
    EXPECT_TRUE(runner);
    (*runner)->add_source(std::make_unique<VectorSource>(scenario()));
    RunReport rep = (*runner)->run(pl);
    EXPECT_EQ(rep.reason, "done");
    EXPECT_EQ(rep.events, scenario().size());
    EXPECT_TRUE(tap.status());
    EXPECT_TRUE((*w)->close());
    return alerts;
  }

  struct ReplayStats {
    CaptureSource::Stats source;
    std::uint64_t reported = 0;
    bool truncated = false;
  };

  // `vigil replay` as the CLI wires it: a capture source in a runner, the
  // selector on the pipeline.
  Result<ReplayStats> replay(std::shared_ptr<const rules::Ruleset> rules, AlertList& alerts, SelectOptions select = {},
                             CaptureSourceOptions copts = {}) {
    auto r = capture::CaptureReader::open(path_);
    if (!r) return r.error();
    state::State st(state::Config{.live = false});
    StateApplier sink(st);
    auto runner = Runner::create(RunnerOptions{.signals = false});
    EXPECT_TRUE(runner);
    auto src = std::make_unique<CaptureSource>(std::move(*r), sink, std::move(copts));
    const CaptureSource& source = *src;
    (*runner)->add_source(std::move(src));
    ReplaySelector sel(std::move(select));
    pipeline::Pipeline pl({st, [&](std::shared_ptr<const event::Alert> a) { alerts.push_back(*a); }, "gpu-node-1"},
                          std::move(rules));
    pl.set_selector(&sel);
    RunReport rep = (*runner)->run(pl);
    if (rep.error) return *rep.error;
    EXPECT_EQ(rep.exit_code, 0);
    EXPECT_EQ(rep.reason, "done");
    return ReplayStats{source.stats(), sel.reported(), source.truncated()};
  }

  static std::set<std::string> rules_of(const AlertList& a) {
    std::set<std::string> out;
    for (const auto& x : a) out.insert(x.rule);
    return out;
  }

  std::string dir_;
  std::string path_;
};

void expect_same_alerts(const AlertList& a, const AlertList& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].rule);
    EXPECT_EQ(a[i].time_ns, b[i].time_ns);
    EXPECT_EQ(a[i].rule, b[i].rule);
    EXPECT_EQ(a[i].priority, b[i].priority);
    EXPECT_EQ(a[i].output, b[i].output);
    EXPECT_EQ(a[i].output_fields, b[i].output_fields);
    EXPECT_EQ(a[i].hostname, b[i].hostname);
    EXPECT_EQ(a[i].source, b[i].source);
    EXPECT_EQ(a[i].tags, b[i].tags);
    EXPECT_EQ(a[i].uuid, b[i].uuid);
  }
}

TEST_F(ReplayTest, ReplayGivesTheLiveRunsAlertsFieldForField) {
  auto rules = bundled_rules();
  ASSERT_TRUE(rules);
  AlertList live = live_run(rules);
  // The scenario is an incident: several bundled rules must fire.
  EXPECT_GE(rules_of(live).size(), 3u) << ::testing::PrintToString(rules_of(live));
  EXPECT_TRUE(rules_of(live).count("Crypto miner binary executed"));

  AlertList first, second;
  auto s1 = replay(rules, first);
  ASSERT_TRUE(s1) << s1.error().message;
  EXPECT_EQ(s1->source.events, scenario().size());
  EXPECT_GE(s1->source.state_records, 3u);
  EXPECT_EQ(s1->reported, scenario().size());
  expect_same_alerts(live, first);
  auto s2 = replay(rules, second);
  ASSERT_TRUE(s2);
  expect_same_alerts(first, second);
}

// A file opened while a deleted pod is in its grace period (state::Config::
// pod_grace_ns): the live run names the pod in the events that follow, and
// so must the replay, which has only what the file starts with.
TEST_F(ReplayTest, APodDeletedBeforeTheFileOpenedStillNamesItsEventsOnReplay) {
  constexpr std::uint64_t kCgroup = 7;
  auto exec_in_pod = [&](std::uint64_t ts) {
    event::ExecData x;
    x.filename = "/usr/bin/nvidia-smi";
    x.args = {"nvidia-smi"};
    return make(ts, event::Type::kExec, 500, 1, "nvidia-smi", kCgroup, std::move(x));
  };
  {
    state::State st(state::Config{.live = false});
    state::Container c;
    c.id = kContainerId;
    c.pod_uid = "u-gone";
    c.cgroup_id = kCgroup;
    st.upsert_container(c);
    state::Pod p;
    p.uid = "u-gone";
    p.name = "train-0";
    p.ns = "ml";
    st.upsert_pod(p);
    st.apply(exec_in_pod(kT0));
    st.remove_pod("u-gone");
    ASSERT_NE(st.enrich(exec_in_pod(kT0 + 1)).pod, nullptr) << "live: in its grace period";
    WriterOptions wo;
    wo.snapshot = [&] { return snapshot_of(st); };
    auto w = CaptureWriter::open(path_, wo);
    ASSERT_TRUE(w);
    ASSERT_TRUE((*w)->write_event(exec_in_pod(kT0 + 1'000'000'000)));
    ASSERT_TRUE((*w)->close());
  }
  auto r = capture::CaptureReader::open(path_);
  ASSERT_TRUE(r) << r.error().message;
  state::State st(state::Config{.live = false});
  StateApplier sink(st);
  auto runner = Runner::create(RunnerOptions{.signals = false});
  ASSERT_TRUE(runner);
  (*runner)->add_source(std::make_unique<CaptureSource>(std::move(*r), sink, CaptureSourceOptions{}));
  pipeline::Pipeline pl({st, nullptr, "gpu-node-1"}, nullptr);
  struct PodNames final : pipeline::EventTap {
    std::vector<std::string> names;
    void on_event(const event::Event&, const state::EvalContext& ctx) override {
      names.push_back(ctx.pod ? ctx.pod->name : "");
    }
  } seen;
  pl.add_tap(&seen);
  EXPECT_EQ((*runner)->run(pl).reason, "done");
  EXPECT_EQ(seen.names, std::vector<std::string>{"train-0"});
  EXPECT_TRUE(st.pods().empty()) << "deleted in the replay too";
}

TEST_F(ReplayTest, ARuleWrittenAfterTheCaptureFindsTheEventOnReplay) {
  auto rules = bundled_rules();
  AlertList live = live_run(rules);
  const std::string hunt = R"yaml(
- rule: Retro hunt minexmr pool in command line
  desc: written after the incident
  condition: evt.type = execve and proc.cmdline contains "minexmr"
  output: "retro hunt hit (proc.pid=%proc.pid proc.cmdline=%proc.cmdline k8s.pod.name=%k8s.pod.name)"
  priority: WARNING
  tags: [crypto_mining]
)yaml";
  EXPECT_FALSE(rules_of(live).count("Retro hunt minexmr pool in command line"));
  AlertList got;
  ASSERT_TRUE(replay(bundled_rules(hunt), got));
  std::vector<event::Alert> hits;
  for (const auto& a : got) {
    if (a.rule == "Retro hunt minexmr pool in command line") hits.push_back(a);
  }
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_NE(hits[0].output.find("k8s.pod.name=llm-0"), std::string::npos) << hits[0].output;
  EXPECT_NE(hits[0].output.find("proc.pid=101"), std::string::npos) << hits[0].output;
}

TEST_F(ReplayTest, FiltersChooseWhatIsReported) {
  auto rules = bundled_rules();
  AlertList live = live_run(rules);

  // Only events of the miner process.
  SelectOptions o;
  auto f = rules::Filter::compile("proc.name = xmrig");
  ASSERT_TRUE(f) << f.error().message;
  o.filter = std::move(*f);
  std::vector<std::string> printed;
  o.on_selected = [&](const event::Event& ev, const state::EvalContext& ctx) {
    printed.push_back(capture::event_json(ev, &ctx));
  };
  AlertList got;
  ASSERT_TRUE(replay(rules, got, o));
  EXPECT_FALSE(got.empty());
  for (const auto& a : got) {
    bool mentions = a.output.find("xmrig") != std::string::npos;
    EXPECT_TRUE(mentions) << a.output;
  }
  EXPECT_LT(got.size(), live.size());  // the shell's alerts are filtered out
  ASSERT_FALSE(printed.empty());
  EXPECT_NE(printed[0].find("\"k8s.pod.name\":\"llm-0\""), std::string::npos) << printed[0];

  // By pod: this pod, or another one.
  SelectOptions by_pod;
  by_pod.pod = "inference/llm-0";
  AlertList pod_alerts;
  ASSERT_TRUE(replay(rules, pod_alerts, by_pod));
  SelectOptions other;
  other.pod = "other-pod";
  AlertList none;
  ASSERT_TRUE(replay(rules, none, other));
  EXPECT_TRUE(none.empty());
  EXPECT_FALSE(pod_alerts.empty());

  // By container id prefix.
  SelectOptions by_container;
  by_container.container = kContainerId.substr(0, 12);
  AlertList c_alerts;
  ASSERT_TRUE(replay(rules, c_alerts, by_container));
  EXPECT_FALSE(c_alerts.empty());

  // A time window that ends before the miner ran: no alerts, but state still built.
  CaptureSourceOptions early;
  early.until_ns = kT0 + 1500;
  AlertList e_alerts;
  ASSERT_TRUE(replay(rules, e_alerts, {}, early));
  EXPECT_TRUE(e_alerts.empty());
  SelectOptions late;
  late.since_ns = kT0 + 6500;  // only the shell and the exit
  AlertList l_alerts;
  ASSERT_TRUE(replay(rules, l_alerts, late));
  for (const auto& a : l_alerts) EXPECT_GE(a.time_ns, kT0 + 6500);
  EXPECT_FALSE(rules_of(l_alerts).count("Crypto miner binary executed"));

  auto bad = rules::Filter::compile("proc.name = = xmrig");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("column"), std::string::npos) << bad.error().message;
}

// vigil capture --filter: only the events the filter accepts are written,
// with all the state they need, so their replay has their context.
TEST_F(ReplayTest, ACaptureWithAFilterKeepsTheStateAndOnlyTheAcceptedEvents) {
  auto f = rules::Filter::compile("proc.name = xmrig");
  ASSERT_TRUE(f) << f.error().message;
  live_run(nullptr, f->get());
  AlertList got;
  std::vector<std::string> printed;
  SelectOptions o;
  o.on_selected = [&](const event::Event& ev, const state::EvalContext& ctx) {
    printed.push_back(capture::event_json(ev, &ctx));
  };
  auto s = replay(bundled_rules(), got, o);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->source.events, 5u);  // the miner's exec, open, connect, Xid (its pid) and exit
  EXPECT_GE(s->source.state_records, 3u);
  ASSERT_FALSE(printed.empty());
  for (const auto& p : printed) {
    EXPECT_NE(p.find("\"k8s.pod.name\":\"llm-0\""), std::string::npos) << p;
  }
  EXPECT_TRUE(rules_of(got).count("Crypto miner binary executed"));
}

TEST_F(ReplayTest, TruncatedCaptureReplaysUpToItsLastWholeBlock) {
  auto rules = bundled_rules();
  live_run(rules);
  auto size = fs::file_size(path_);
  fs::resize_file(path_, size - 10);
  AlertList got;
  auto s = replay(rules, got);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_TRUE(s->truncated);
  EXPECT_LT(s->source.events, scenario().size());
}

TEST_F(ReplayTest, FlightRecorderThroughThePipelineNamesItsCaptureInTheAlert) {
  auto rules = bundled_rules();
  state::State st(state::Config{.live = false});
  seed(st);
  FlightRecorderOptions fo;
  fo.dir = dir_ + "/flight";
  fo.after_ns = 0;
  fo.min_priority = event::Priority::kCritical;
  FlightRecorder fr(fo);
  st.set_listener(&fr);
  AlertList alerts;
  pipeline::Pipeline pl({st, [&](std::shared_ptr<const event::Alert> a) { alerts.push_back(*a); }, "gpu-node-1"},
                        rules);
  FlightRecorderTap tap(fr, st);
  pl.add_tap(&tap);
  for (auto& ev : scenario()) pl.process(ev);
  fr.finish();
  std::string capture;
  for (const auto& a : alerts) {
    for (const auto& [k, v] : a.extra) {
      if (k == "capture") {
        EXPECT_LE(static_cast<int>(a.priority), static_cast<int>(event::Priority::kCritical));
        capture = v;
      }
    }
  }
  ASSERT_FALSE(capture.empty());
  ASSERT_TRUE(fs::exists(capture));
  // The flight capture replays on its own and finds the miner again.
  path_ = capture;
  AlertList again;
  ASSERT_TRUE(replay(rules, again));
  EXPECT_TRUE(rules_of(again).count("Crypto miner binary executed")) << ::testing::PrintToString(rules_of(again));
}

// ---- the node's NVIDIA inventory -------------------------------------------
//
// A pod given one GPU by UUID opens another GPU's node. Live, the state maps
// the UUID to its minor through /proc/driver/nvidia and the wrong-GPU rule
// fires; a replay on a machine without the driver has only the capture to go
// by, so the capture must carry the inventory.

constexpr const char* kWrongGpuRule = "GPU opened outside container allocation";
const std::string kGpuUuid = "GPU-cccccccc-1111-2222-3333-444444444444";  // /dev/nvidia1

class NvidiaReplayTest : public ReplayTest {
 protected:
  void SetUp() override {
    ReplayTest::SetUp();
    root_ = dir_ + "/node";
    write(root_ + "/proc/devices",
          "Character devices:\n  1 mem\n195 nvidia-frontend\n508 nvidia-uvm\n509 nvidia-caps\n");
    // PCI order differs from minor order, as on real nodes.
    fake_gpu("0000:1b:00.0", "GPU-aaaaaaaa-1111-2222-3333-444444444444", 2);
    fake_gpu("0000:3b:00.0", "GPU-bbbbbbbb-1111-2222-3333-444444444444", 0);
    fake_gpu("0000:5b:00.0", kGpuUuid, 1);
    fs::create_directories(root_ + "/cg");
  }

  void write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
  }
  void fake_gpu(const std::string& pci, const std::string& uuid, int minor) {
    write(root_ + "/proc/driver/nvidia/gpus/" + pci + "/information",
          "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 150\nGPU UUID: \t " + uuid +
              "\nBus Type: \t PCIe\nDevice Minor: \t " + std::to_string(minor) + "\nGPU Excluded:\t No\n");
  }

  // A live state over the fake driver tree, with the NVIDIA devices read the
  // way `vigil run` reads them: before any capture writer or recorder exists.
  state::Config node_config() const {
    state::Config c;
    c.proc_root = root_ + "/proc";
    c.cgroup_root = root_ + "/cg";
    c.passwd_path = "";
    c.group_path = "";
    return c;
  }

  std::unique_ptr<state::State> live_state() {
    auto st = std::make_unique<state::State>(node_config());
    st->load_nvidia();
    EXPECT_EQ(st->nvidia().gpus.size(), 3u);
    seed(*st);
    state::Pod pod = *st->pod("pod-uid-1");
    pod.containers[0].gpu_limit = 1;
    pod.containers[0].nvidia_visible_devices = kGpuUuid;
    pod.resource_version = "2";
    st->upsert_pod(pod);
    return st;
  }

  static std::vector<event::Event> gpu_scenario() {
    using namespace event;
    std::vector<Event> evs;
    std::uint64_t t = kT0;
    evs.push_back(make(t += 1000, Type::kFork, 100, 1, "python3", 5000, ForkData{101, 101, false}));
    ExecData train;
    train.filename = "/usr/bin/python3";
    train.exe = "python3";
    train.args = {"python3", "train.py"};
    train.cwd = "/work";
    evs.push_back(make(t += 1000, Type::kExec, 101, 100, "python3", 5000, train));
    // Its own GPU (minor 1), then a neighbour's (minor 0).
    evs.push_back(
        make(t += 1000, Type::kOpen, 101, 100, "python3", 5000, OpenData{"/dev/nvidia1", 2, 0, 3, 195, 1, true}));
    evs.push_back(
        make(t += 1000, Type::kOpen, 101, 100, "python3", 5000, OpenData{"/dev/nvidia0", 2, 0, 4, 195, 0, true}));
    return evs;
  }

  AlertList live_capture(std::shared_ptr<const rules::Ruleset> rules) {
    auto st = live_state();
    WriterOptions wo;
    wo.snapshot = [&] { return snapshot_of(*st); };
    auto w = CaptureWriter::open(path_, wo);
    EXPECT_TRUE(w);
    st->set_listener(w->get());
    AlertList alerts;
    pipeline::Pipeline pl({*st, [&](std::shared_ptr<const event::Alert> a) { alerts.push_back(*a); }, "gpu-node-1"},
                          std::move(rules));
    CaptureTap tap(**w);
    pl.add_tap(&tap);
    for (auto& ev : gpu_scenario()) pl.process(ev);
    EXPECT_TRUE(tap.status());
    EXPECT_TRUE((*w)->close());
    return alerts;
  }

  // The capture at `from` rewritten without its NVIDIA inventory records, as
  // the writer made them before the record existed.
  void strip_nvidia(const std::string& from, const std::string& to) {
    auto r = CaptureReader::open(from);
    ASSERT_TRUE(r);
    auto w = CaptureWriter::open(to, WriterOptions{});
    ASSERT_TRUE(w);
    Record rec;
    for (;;) {
      auto more = (*r)->next(rec);
      ASSERT_TRUE(more);
      if (!*more) break;
      if (std::holds_alternative<state::NvidiaInfo>(rec.data)) continue;
      ASSERT_TRUE((*w)->write_record(rec.data));
    }
    ASSERT_TRUE((*w)->close());
  }

  static const event::Alert* find(const AlertList& a, const std::string& rule) {
    for (const auto& x : a) {
      if (x.rule == rule) return &x;
    }
    return nullptr;
  }

  std::string root_;  // the fake node: proc/devices, proc/driver/nvidia, cg
};

TEST_F(NvidiaReplayTest, ReplayWithoutTheDriverResolvesGpusAsLive) {
  auto rules = bundled_rules();
  ASSERT_TRUE(rules);
  AlertList live = live_capture(rules);
  const event::Alert* wrong = find(live, kWrongGpuRule);
  ASSERT_NE(wrong, nullptr) << ::testing::PrintToString(rules_of(live));
  EXPECT_NE(wrong->output.find("gpu.index=0"), std::string::npos) << wrong->output;
  EXPECT_NE(wrong->output.find("gpu.device=/dev/nvidia0"), std::string::npos) << wrong->output;
  // Its own GPU is not reported.
  for (const auto& a : live) EXPECT_EQ(a.output.find("/dev/nvidia1"), std::string::npos) << a.output;

  // The replay's state is not live and has no NVIDIA root: only the capture.
  AlertList replayed;
  auto s = replay(rules, replayed);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->source.skipped_records, 0u);
  expect_same_alerts(live, replayed);

  // Without the inventory the UUID resolves to nothing and the alert is lost:
  // what replay gave before captures recorded it.
  const std::string bare = dir_ + "/bare.vcap";
  strip_nvidia(path_, bare);
  path_ = bare;
  AlertList without;
  ASSERT_TRUE(replay(rules, without));
  EXPECT_EQ(find(without, kWrongGpuRule), nullptr) << ::testing::PrintToString(rules_of(without));
}

TEST_F(NvidiaReplayTest, FlightCaptureCarriesTheInventory) {
  auto rules = bundled_rules();
  ASSERT_TRUE(rules);
  auto st = live_state();
  FlightRecorderOptions fo;
  fo.dir = dir_ + "/flight";
  fo.after_ns = 0;
  fo.min_priority = event::Priority::kError;
  FlightRecorder fr(fo);
  ListenerFanout listeners;
  listeners.add(&fr);
  st->set_listener(&listeners);
  AlertList alerts;
  pipeline::Pipeline pl({*st, [&](std::shared_ptr<const event::Alert> a) { alerts.push_back(*a); }, "gpu-node-1"},
                        rules);
  FlightRecorderTap tap(fr, *st);  // after load_nvidia, as `vigil run` builds it
  pl.add_tap(&tap);
  for (auto& ev : gpu_scenario()) pl.process(ev);
  fr.finish();
  const event::Alert* wrong = find(alerts, kWrongGpuRule);
  ASSERT_NE(wrong, nullptr);
  std::string capture;
  for (const auto& [k, v] : wrong->extra) {
    if (k == "capture") capture = v;
  }
  ASSERT_FALSE(capture.empty());
  ASSERT_TRUE(fs::exists(capture));
  path_ = capture;
  AlertList again;
  ASSERT_TRUE(replay(rules, again));
  const event::Alert* replayed = find(again, kWrongGpuRule);
  ASSERT_NE(replayed, nullptr) << ::testing::PrintToString(rules_of(again));
  EXPECT_EQ(replayed->output, wrong->output);
  EXPECT_EQ(replayed->uuid, wrong->uuid);
}

// An inventory read after the recording taps are listening (State::load_nvidia
// later, or again) reaches each of them through the fanout, in order.
TEST_F(NvidiaReplayTest, AnInventoryReadLaterReachesEveryListener) {
  state::State st(node_config());
  auto a = CaptureWriter::open(dir_ + "/a.vcap", WriterOptions{});
  auto b = CaptureWriter::open(dir_ + "/b.vcap", WriterOptions{});
  ASSERT_TRUE(a && b);
  ListenerFanout fanout;
  fanout.add(a->get());
  fanout.add(b->get());
  st.set_listener(&fanout);
  st.load_nvidia();
  ASSERT_TRUE((*a)->close());
  ASSERT_TRUE((*b)->close());
  for (const std::string& f : {dir_ + "/a.vcap", dir_ + "/b.vcap"}) {
    auto r = CaptureReader::open(f);
    ASSERT_TRUE(r);
    Record rec;
    auto more = (*r)->next(rec);
    ASSERT_TRUE(more && *more) << f;
    ASSERT_TRUE(std::holds_alternative<state::NvidiaInfo>(rec.data)) << f;
    EXPECT_EQ(std::get<state::NvidiaInfo>(rec.data), st.nvidia());
    EXPECT_EQ(std::get<state::NvidiaInfo>(rec.data).gpus.size(), 3u);
  }
}

}  // namespace
}  // namespace vigil::runtime
