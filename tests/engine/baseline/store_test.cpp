#include "engine/baseline/store.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/baseline/profile_file.h"
#include "engine/event/nvidia.h"

namespace vigil::baseline {
namespace {

namespace fs = std::filesystem;
using state::BaselineAnswer;
using state::BaselineFact;
using state::BaselinePhase;

constexpr std::uint64_t kT0 = 1700000000000000000ull;
constexpr std::uint64_t kSec = 1000000000ull;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/vigil-baseline-XXXXXX";
    path = mkdtemp(tmpl);
    chmod(path.c_str(), 0700);
  }
  ~TempDir() { fs::remove_all(path); }
};

// One container of one image, and events of it.
struct Rig {
  state::Container container;
  state::Process proc;
  Rig(std::string image = "docker.io/vllm/vllm-openai:v0.6.3", char id = 'c') {
    container.id = std::string(64, id);
    container.image = std::move(image);
    proc.pid = 100;
    proc.exepath = "/usr/bin/python3.12";
    proc.container_id = container.id;
  }
  event::Event exec(std::uint64_t ts, std::string path, std::string sha = "") {
    event::Event e;
    e.hdr.ts_ns = ts;
    e.hdr.type = event::Type::kExec;
    event::ExecData d;
    d.exe = path;
    d.exe_sha256 = std::move(sha);
    e.data = d;
    proc.exepath = std::move(path);
    return e;
  }
  event::Event connect(std::uint64_t ts, const char* ip, std::uint16_t port) {
    event::Event e;
    e.hdr.ts_ns = ts;
    e.hdr.type = event::Type::kConnect;
    event::ConnectData d;
    d.family = AF_INET;
    d.proto = event::L4::kTcp;
    d.daddr.family = AF_INET;
    inet_pton(AF_INET, ip, d.daddr.bytes.data());
    d.dport = port;
    e.data = d;
    return e;
  }
  event::Event open_write(std::uint64_t ts, std::string path) {
    event::Event e;
    e.hdr.ts_ns = ts;
    e.hdr.type = event::Type::kOpen;
    event::OpenData d;
    d.path = std::move(path);
    d.flags = 01 | 0100;  // O_WRONLY|O_CREAT
    d.result = 3;
    d.file_type = event::OpenData::kFileRegular;
    e.data = d;
    return e;
  }
  event::Event alloc(std::uint64_t ts, std::uint32_t cls) {
    event::Event e;
    e.hdr.ts_ns = ts;
    e.hdr.type = event::Type::kIoctl;
    event::IoctlData d;
    d.nr = event::nvidia::kEscRmAlloc;
    d.rm_class = cls;
    e.data = d;
    return e;
  }
  state::EvalContext ctx(const event::Event& e, bool host = false) {
    state::EvalContext c;
    c.ev = &e;
    c.proc = &proc;
    c.container = host ? nullptr : &container;
    return c;
  }
};

struct Seen {
  BaselinePhase phase;
  BaselineAnswer answer;
};
Seen observe(Store& s, Rig& r, const event::Event& e, BaselineFact f) {
  const state::EvalContext c = r.ctx(e);
  s.observe(c);
  return {s.phase(c), s.has(c, f)};
}

TEST(BaselineStore, LearnsUntilLearnForThenLocksAtTheFirstLaterEventAndReportsDeviations) {
  Config cfg;
  cfg.learn_for_ns = 60 * kSec;
  Store s(cfg);
  Rig r;
  auto e1 = r.exec(kT0, "/usr/bin/python3.12", std::string(64, 'a'));
  Seen a = observe(s, r, e1, BaselineFact::kExe);
  EXPECT_EQ(a.phase, BaselinePhase::kLearning);
  EXPECT_EQ(a.answer, BaselineAnswer::kNoValue);  // no answer while learning
  auto c1 = r.connect(kT0 + 10 * kSec, "10.96.0.10", 53);
  observe(s, r, c1, BaselineFact::kDestination);
  auto w1 = r.open_write(kT0 + 20 * kSec, "/etc/cron.d/app");
  observe(s, r, w1, BaselineFact::kFile);
  auto g1 = r.alloc(kT0 + 30 * kSec, 0xc7c0);
  observe(s, r, g1, BaselineFact::kGpuClass);
  // Still learning at 59 s: a new destination is learnt, not reported.
  auto c2 = r.connect(kT0 + 59 * kSec, "10.97.0.1", 443);
  EXPECT_EQ(observe(s, r, c2, BaselineFact::kDestination).answer, BaselineAnswer::kNoValue);

  // 60 s after the first event: locked, and this event is judged, not learnt.
  auto c3 = r.connect(kT0 + 60 * kSec, "203.0.113.9", 443);
  Seen b = observe(s, r, c3, BaselineFact::kDestination);
  EXPECT_EQ(b.phase, BaselinePhase::kLocked);
  EXPECT_EQ(b.answer, BaselineAnswer::kOut);
  EXPECT_EQ(s.find("docker.io/vllm/vllm-openai:v0.6.3")->lock_cause(), "time");
  EXPECT_EQ(s.find("docker.io/vllm/vllm-openai:v0.6.3")->locked_at_ns(), kT0 + 60 * kSec);
  auto c4 = r.connect(kT0 + 61 * kSec, "10.97.0.200", 443);  // same /24 as learnt at 59 s
  EXPECT_EQ(observe(s, r, c4, BaselineFact::kDestination).answer, BaselineAnswer::kIn);
  auto e2 = r.exec(kT0 + 62 * kSec, "/usr/bin/python3.12", std::string(64, 'b'));
  EXPECT_EQ(observe(s, r, e2, BaselineFact::kExe).answer, BaselineAnswer::kOut);  // swapped binary
  auto e3 = r.exec(kT0 + 63 * kSec, "/bin/sh");
  EXPECT_EQ(observe(s, r, e3, BaselineFact::kExe).answer, BaselineAnswer::kOut);
  auto w2 = r.open_write(kT0 + 64 * kSec, "/etc/cron.d/app");
  EXPECT_EQ(observe(s, r, w2, BaselineFact::kFile).answer, BaselineAnswer::kIn);
  auto w3 = r.open_write(kT0 + 65 * kSec, "/etc/ld.so.preload");
  EXPECT_EQ(observe(s, r, w3, BaselineFact::kFile).answer, BaselineAnswer::kOut);
  auto w4 = r.open_write(kT0 + 66 * kSec, "/tmp/scratch");  // not watched: no value
  EXPECT_EQ(observe(s, r, w4, BaselineFact::kFile).answer, BaselineAnswer::kNoValue);
  auto g2 = r.alloc(kT0 + 67 * kSec, 0xc6c0);
  EXPECT_EQ(observe(s, r, g2, BaselineFact::kGpuClass).answer, BaselineAnswer::kOut);
  auto g3 = r.alloc(kT0 + 68 * kSec, 0xc7c0);
  EXPECT_EQ(observe(s, r, g3, BaselineFact::kGpuClass).answer, BaselineAnswer::kIn);
  // The answer is about the event's own fact only.
  EXPECT_EQ(observe(s, r, g3, BaselineFact::kExe).answer, BaselineAnswer::kNoValue);
}

// A UDP server in the pod answers each client at its random port: those
// ports count as one, so the answers stay in the baseline; a low port does not.
TEST(BaselineStore, EphemeralDestinationPortsCountAsOne) {
  for (std::uint32_t from : {32768u, 0u}) {
    Config cfg;
    cfg.learn_for_ns = 60 * kSec;
    cfg.ephemeral_from = from;
    Store s(cfg);
    Rig r;
    auto learn = r.connect(kT0, "10.96.0.10", 40001);
    observe(s, r, learn, BaselineFact::kDestination);
    auto other = r.connect(kT0 + 61 * kSec, "10.96.0.10", 51234);
    EXPECT_EQ(observe(s, r, other, BaselineFact::kDestination).answer,
              from ? BaselineAnswer::kIn : BaselineAnswer::kOut)
        << from;
    auto low = r.connect(kT0 + 62 * kSec, "10.96.0.10", 4444);
    EXPECT_EQ(observe(s, r, low, BaselineFact::kDestination).answer, BaselineAnswer::kOut) << from;
  }
}

TEST(BaselineStore, HostEventsAndContainersWithoutImageHaveNoProfile) {
  Store s(Config{});
  Rig r;
  auto e = r.exec(kT0, "/bin/sh");
  state::EvalContext host = r.ctx(e, /*host=*/true);
  s.observe(host);
  EXPECT_EQ(s.phase(host), BaselinePhase::kNone);
  EXPECT_EQ(s.workload(host), "");
  Rig unknown("");
  state::EvalContext c = unknown.ctx(e);
  s.observe(c);
  EXPECT_EQ(s.phase(c), BaselinePhase::kNone);
  EXPECT_EQ(s.stats().workloads, 0u);
}

TEST(BaselineStore, LearnForZeroLocksOnlyByCommand) {
  Config cfg;
  cfg.learn_for_ns = 0;
  Store s(cfg);
  Rig r;
  auto e1 = r.exec(kT0, "/usr/bin/python3.12");
  observe(s, r, e1, BaselineFact::kExe);
  auto e2 = r.exec(kT0 + 1000 * 3600 * kSec, "/bin/sh");
  EXPECT_EQ(observe(s, r, e2, BaselineFact::kExe).phase, BaselinePhase::kLearning);
  ASSERT_TRUE(s.lock("docker.io/vllm/vllm-openai:v0.6.3", kT0, "command"));
  auto e3 = r.exec(kT0 + 1000 * 3600 * kSec + 1, "/bin/bash");
  EXPECT_EQ(observe(s, r, e3, BaselineFact::kExe).answer, BaselineAnswer::kOut);
  auto e4 = r.exec(kT0 + 1000 * 3600 * kSec + 2, "/bin/sh");
  EXPECT_EQ(observe(s, r, e4, BaselineFact::kExe).answer, BaselineAnswer::kIn);
}

TEST(BaselineStore, PastMaxWorkloadsANewWorkloadHasNoProfileAndIsCounted) {
  Config cfg;
  cfg.max_workloads = 1;
  Store s(cfg);
  Rig a("a:1", 'a'), b("b:1", 'b');
  auto ea = a.exec(kT0, "/a");
  observe(s, a, ea, BaselineFact::kExe);
  auto eb = b.exec(kT0, "/b");
  EXPECT_EQ(observe(s, b, eb, BaselineFact::kExe).phase, BaselinePhase::kNone);
  observe(s, b, eb, BaselineFact::kExe);
  EXPECT_EQ(s.stats().workloads, 1u);
  EXPECT_EQ(s.stats().workloads_refused, 1u);  // once per container
}

TEST(BaselineStore, FullSetsAreCountedInTheStats) {
  Config cfg;
  cfg.caps.destinations = 1;
  Store s(cfg);
  Rig r;
  auto c1 = r.connect(kT0, "10.0.0.1", 80);
  auto c2 = r.connect(kT0 + 1, "10.0.1.1", 80);
  observe(s, r, c1, BaselineFact::kDestination);
  observe(s, r, c2, BaselineFact::kDestination);
  EXPECT_EQ(s.stats().full[static_cast<std::size_t>(Set::kDestinations)], 1u);
}

TEST(BaselineStore, SavedProfilesLoadBackAndReadOnlyStoresNeverWrite) {
  TempDir dir;
  Config cfg;
  cfg.dir = dir.path;
  cfg.learn_for_ns = 60 * kSec;
  {
    Store s(cfg);
    Rig r;
    auto e1 = r.exec(kT0, "/usr/bin/python3.12");
    observe(s, r, e1, BaselineFact::kExe);
    EXPECT_TRUE(s.save().empty());
  }
  EXPECT_TRUE(fs::exists(dir.path / file_name_for("docker.io/vllm/vllm-openai:v0.6.3")));
  Config ro = cfg;
  ro.read_only = true;
  Store s2(ro);
  EXPECT_TRUE(s2.load().empty());
  ASSERT_NE(s2.find("docker.io/vllm/vllm-openai:v0.6.3"), nullptr);
  EXPECT_EQ(s2.find("docker.io/vllm/vllm-openai:v0.6.3")->first_seen_ns(), kT0);
  // Locks at learn_for from the saved first_seen, in event time.
  Rig r;
  auto e2 = r.exec(kT0 + 61 * kSec, "/bin/sh");
  EXPECT_EQ(observe(s2, r, e2, BaselineFact::kExe).answer, BaselineAnswer::kOut);
  const auto before = fs::last_write_time(dir.path / file_name_for("docker.io/vllm/vllm-openai:v0.6.3"));
  EXPECT_TRUE(s2.save().empty());
  EXPECT_EQ(fs::last_write_time(dir.path / file_name_for("docker.io/vllm/vllm-openai:v0.6.3")), before);
  auto text = std::ifstream(dir.path / file_name_for("docker.io/vllm/vllm-openai:v0.6.3"));
  std::string body((std::istreambuf_iterator<char>(text)), std::istreambuf_iterator<char>());
  EXPECT_NE(body.find("\"learning\""), std::string::npos);
}

TEST(BaselineStore, ACorruptFileIsRefusedByNameAndTheOthersLoad) {
  TempDir dir;
  { std::ofstream(dir.path / "bad.json") << "{not json"; }
  Profile good("good:1");
  ASSERT_TRUE(static_cast<bool>(write_profile(dir.path, good)));
  Config cfg;
  cfg.dir = dir.path;
  Store s(cfg);
  auto errors = s.load();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find((dir.path / "bad.json").string()), std::string::npos);
  EXPECT_NE(s.find("good:1"), nullptr);
  EXPECT_EQ(s.stats().files_refused, 1u);
}

TEST(BaselineStore, ALockWrittenToTheFileIsPickedUpAndNeverOverwritten) {
  TempDir dir;
  Config cfg;
  cfg.dir = dir.path;
  cfg.learn_for_ns = 0;
  Store agent(cfg);
  Rig r;
  auto e1 = r.exec(kT0, "/usr/bin/python3.12");
  observe(agent, r, e1, BaselineFact::kExe);
  ASSERT_TRUE(agent.save().empty());
  // What `vigil baseline lock` does: read, lock, write back.
  {
    Store cli(cfg);
    ASSERT_TRUE(cli.load().empty());
    cli.lock("docker.io/vllm/vllm-openai:v0.6.3", kT0 + 5, "command");
    ASSERT_TRUE(cli.save().empty());
  }
  // The agent learnt more meanwhile, and saves before it picks the lock up:
  // it takes the lock first instead of writing "learning" over it.
  auto e2 = r.exec(kT0 + 1, "/usr/bin/nvidia-smi");
  observe(agent, r, e2, BaselineFact::kExe);
  ASSERT_TRUE(agent.save().empty());
  EXPECT_EQ(agent.find("docker.io/vllm/vllm-openai:v0.6.3")->phase(), Phase::kLocked);
  auto back = read_profile(dir.path / file_name_for("docker.io/vllm/vllm-openai:v0.6.3"), Caps{});
  ASSERT_TRUE(static_cast<bool>(back));
  EXPECT_EQ(back->phase(), Phase::kLocked);
  EXPECT_EQ(back->lock_cause(), "command");
  EXPECT_TRUE(back->has_exe("/usr/bin/nvidia-smi", ""));  // what the agent learnt is kept
}

TEST(BaselineStore, PickUpLocksAProfileLockedOnDisk) {
  TempDir dir;
  Config cfg;
  cfg.dir = dir.path;
  cfg.learn_for_ns = 0;
  Store agent(cfg);
  Rig r;
  auto e1 = r.exec(kT0, "/usr/bin/python3.12");
  observe(agent, r, e1, BaselineFact::kExe);
  ASSERT_TRUE(agent.save().empty());
  std::vector<std::string> done;
  EXPECT_TRUE(agent.pick_up(done).empty());
  EXPECT_TRUE(done.empty());  // its own write is no change
  {
    Store cli(cfg);
    ASSERT_TRUE(cli.load().empty());
    cli.lock("docker.io/vllm/vllm-openai:v0.6.3", kT0 + 5, "command");
    ASSERT_TRUE(cli.save().empty());
  }
  EXPECT_TRUE(agent.pick_up(done).empty());
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0], "locked docker.io/vllm/vllm-openai:v0.6.3 (command)");
  auto e2 = r.exec(kT0 + 6, "/bin/sh");
  EXPECT_EQ(observe(agent, r, e2, BaselineFact::kExe).answer, BaselineAnswer::kOut);
}

}  // namespace
}  // namespace vigil::baseline
