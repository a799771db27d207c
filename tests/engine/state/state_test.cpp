#include "engine/state/state.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <string>

#include "engine/event/nvidia.h"
#include "tests/engine/event/fact_values.h"
#include "tests/engine/state/test_util.h"
#include "tests/support/temp_dir.h"

namespace vigil::state {
namespace {

using support::TempDir;
using testing::exec_event;
using testing::exit_event;
using testing::fork_event;
using testing::make_event;
using testing::RecordingListener;
using testing::replay_config;

const std::string kId = "3b7a1c0f9e4d2a6b8c5e7f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c";
const std::string kId2 = "a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8";
const std::string kUid = "5d0c2a9e-1f3b-4c6d-8e7f-9a0b1c2d3e4f";
const std::string kUidUnderscore = "5d0c2a9e_1f3b_4c6d_8e7f_9a0b1c2d3e4f";

void apply_all(State& s, const event::Event& ev) {
  s.apply(ev);
  (void)s.enrich(ev);
  s.after(ev);
}

Pod make_pod(const std::string& uid, const std::string& container_id, const std::string& env, std::int64_t limit) {
  Pod p;
  p.uid = uid;
  p.name = "infer-0";
  p.ns = "ml";
  PodContainer pc;
  pc.name = "server";
  pc.image = "vllm/vllm-openai:v0.6";
  pc.id = container_id;
  pc.nvidia_visible_devices = env;
  pc.gpu_limit = limit;
  p.containers.push_back(pc);
  return p;
}

TEST(ProcessTable, ForkCopiesParentUntilExec) {
  State s(replay_config());
  Process parent;
  parent.pid = 100;
  parent.ppid = 1;
  parent.comm = "bash";
  parent.exe = "/bin/bash";
  parent.exepath = "/usr/bin/bash";
  parent.args = {"-l"};
  parent.cwd = "/root";
  s.upsert_process(parent);

  apply_all(s, fork_event(100, 101));
  const Process* child = s.process(101);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(child->ppid, 100u);
  EXPECT_EQ(child->comm, "bash");
  EXPECT_EQ(child->exepath, "/usr/bin/bash");
  EXPECT_EQ(child->args, std::vector<std::string>{"-l"});
  EXPECT_EQ(child->start_ts_ns, 1000u);

  apply_all(s, exec_event(101, {"curl", "-s", "http://x"}, "/usr/bin/curl"));
  child = s.process(101);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(child->comm, "curl");
  EXPECT_EQ(child->exe, "curl");
  EXPECT_EQ(child->exepath, "/usr/bin/curl");
  EXPECT_EQ((std::vector<std::string>{"-s", "http://x"}), child->args);
  EXPECT_EQ(child->cwd, "/work");
  EXPECT_EQ(child->exec_ts_ns, 2000u);
  // The parent is untouched.
  EXPECT_EQ(s.process(100)->exepath, "/usr/bin/bash");
}

TEST(ProcessTable, ThreadCreationAddsNoProcess) {
  State s(replay_config());
  event::Event ev = fork_event(100, 150);
  std::get<event::ForkData>(ev.data).is_thread = true;
  apply_all(s, ev);
  EXPECT_EQ(s.process(150), nullptr);
  EXPECT_NE(s.process(100), nullptr);
}

TEST(ProcessTable, ExitedProcessIsReapedOnlyAfterRules) {
  Config cfg = replay_config();
  cfg.process_grace_ns = 0;
  State s(cfg);
  apply_all(s, fork_event(100, 101));
  event::Event ex = exit_event(101);
  s.apply(ex);
  EvalContext ctx = s.enrich(ex);
  ASSERT_NE(ctx.proc, nullptr) << "the rules must see the exiting process";
  EXPECT_EQ(ctx.proc->pid, 101u);
  s.after(ex);
  EXPECT_EQ(s.process(101), nullptr);
  EXPECT_NE(s.process(100), nullptr);
}

// An exited process still names what arrives about it late (an Xid line, a
// plugin sample) for its grace period of event time; a fork that reuses its
// pid replaces it at once.
TEST(ProcessTable, ExitedProcessStaysKnownForItsGracePeriod) {
  Config cfg = replay_config();
  cfg.process_grace_ns = 5'000'000'000ull;
  State s(cfg);
  event::Event f = fork_event(100, 101);
  f.hdr.ts_ns = 1'000'000'000ull;
  apply_all(s, f);
  event::Event ex = exit_event(101);
  ex.hdr.ts_ns = 2'000'000'000ull;
  apply_all(s, ex);
  ASSERT_NE(s.process(101), nullptr) << "kept after its exit";
  event::Event later = exec_event(100, {"sleep", "1"}, "/bin/sleep");
  later.hdr.ts_ns = 6'900'000'000ull;
  apply_all(s, later);
  EXPECT_NE(s.process(101), nullptr) << "4.9 s after its exit";
  later.hdr.ts_ns = 7'000'000'000ull;
  apply_all(s, later);
  EXPECT_EQ(s.process(101), nullptr) << "5 s after its exit";

  // Reused: the later process is the one known, and its own exit is timed
  // from its own end, not from the first one's.
  event::Event f2 = fork_event(100, 102);
  f2.hdr.ts_ns = 8'000'000'000ull;
  apply_all(s, f2);
  event::Event ex2 = exit_event(102);
  ex2.hdr.ts_ns = 8'100'000'000ull;
  apply_all(s, ex2);
  event::Event f3 = fork_event(100, 102);
  f3.hdr.ts_ns = 8'200'000'000ull;
  apply_all(s, f3);
  later.hdr.ts_ns = 13'500'000'000ull;
  apply_all(s, later);
  ASSERT_NE(s.process(102), nullptr) << "the pid's later process is not forgotten with the earlier one";
}

TEST(ProcessTable, UnknownPidIsBuiltFromTheEventHeader) {
  State s(replay_config());
  event::Event ev = exec_event(777, {"xmrig", "-o", "pool:3333"}, "/tmp/xmrig");
  ev.hdr.ppid = 776;
  ev.hdr.uid = 1000;
  s.apply(ev);
  EvalContext ctx = s.enrich(ev);
  ASSERT_NE(ctx.proc, nullptr);
  EXPECT_EQ(ctx.proc->ppid, 776u);
  EXPECT_EQ(ctx.proc->uid, 1000u);
  EXPECT_EQ(ctx.proc->exe, "xmrig");
}

// thread.cap_* follow the process: set at exec, changed by a successful
// capset, kept by a failed one.
TEST(ProcessTable, CapabilitiesFollowExecAndCapset) {
  State s(replay_config());
  event::Event ex = exec_event(800, {"app"}, "/usr/bin/app");
  ex.as<event::ExecData>()->cap_effective = (1ull << 21) | (1ull << 12);
  apply_all(s, ex);
  event::Event cs = ex;
  cs.hdr.type = event::Type::kCapset;
  cs.data = event::CapsData{1ull << 12, 1ull << 12, 0, 0};
  apply_all(s, cs);
  EvalContext ctx = s.enrich(cs);
  ASSERT_NE(ctx.proc, nullptr);
  EXPECT_EQ(ctx.proc->cap_effective, 1ull << 12);
  cs.data = event::CapsData{~0ull, ~0ull, 0, -1};  // refused: nothing changes
  apply_all(s, cs);
  EXPECT_EQ(s.enrich(cs).proc->cap_effective, 1ull << 12);
}

// Exec chains: each exec keeps the command line of the image it replaced
// (bounded in count and length); the identity of the new image is taken
// from the exec event.
TEST(ProcessTable, ExecKeepsPriorImagesAndTakesTheNewIdentity) {
  State s(replay_config());
  apply_all(s, exec_event(810, {"python3", "-m", "vllm.entrypoints.openai.api_server"}, "/usr/bin/python3"));
  event::Event sh = exec_event(810, {"x", "-c", "id"}, "/tmp/x");
  sh.as<event::ExecData>()->exe_known_as = "dash";
  sh.as<event::ExecData>()->exe_class = 1;
  sh.as<event::ExecData>()->exe_ino = 42;
  apply_all(s, sh);
  const Process* p = s.process(810);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->prior_cmdlines.size(), 1u);
  EXPECT_EQ(p->prior_cmdlines[0], "python3 -m vllm.entrypoints.openai.api_server");
  EXPECT_EQ(p->exe_known_as, "dash");
  EXPECT_EQ(p->exe_class, 1);
  EXPECT_EQ(p->exe_ino, 42u);
  for (int i = 0; i < 10; ++i)
    apply_all(s, exec_event(810, {"a" + std::to_string(i), std::string(2000, 'z')}, "/bin/a"));
  p = s.process(810);
  ASSERT_EQ(p->prior_cmdlines.size(), Process::kMaxPriorImages);
  EXPECT_EQ(p->prior_cmdlines[0].substr(0, 3), "a8 ");
  for (const auto& c : p->prior_cmdlines) EXPECT_LE(c.size(), Process::kMaxPriorImageBytes);
  EXPECT_EQ(p->exe_known_as, "");  // the last image is nothing known

  // fork then exec: the child ran only its parent's image, which is no exec
  // chain of its own.
  apply_all(s, fork_event(810, 811));
  apply_all(s, exec_event(811, {"sh", "-c", "id"}, "/bin/sh"));
  ASSERT_NE(s.process(811), nullptr);
  EXPECT_TRUE(s.process(811)->prior_cmdlines.empty());
}

// Every fact an exec reports and the process keeps (the process facts
// table) is the process's after its exec, each set to a value of its own.
TEST(ProcessTable, ExecCopiesEveryFactTheProcessKeeps) {
  State s(replay_config());
  event::Event ev = exec_event(820, {"app", "--serve"}, "/usr/bin/app");
  vigil::testing::fill_facts(*ev.as<event::ExecData>());
  apply_all(s, ev);
  const Process* p = s.process(820);
  ASSERT_NE(p, nullptr);
  int copied = 0;
  event::for_each_exec_fact(*p, *ev.as<event::ExecData>(), [&](const auto& kept, const auto& reported) {
    EXPECT_EQ(kept, reported) << "fact #" << copied;
    ++copied;
  });
  int shared = 0;
  for (const auto& row : event::facts::kRows) shared += row.exec >= 0 && row.rec >= 0 ? 1 : 0;
  EXPECT_EQ(copied, shared);
  // The facts the state derives from the exec rather than copies.
  EXPECT_EQ(p->exepath, "v_exe");
  EXPECT_EQ(p->exe, "a_args");
  EXPECT_EQ(p->args, std::vector<std::string>{"b_args"});
}

TEST(ProcessTable, LruCapEvictsLeastRecentlyUsed) {
  Config c = replay_config();
  c.max_processes = 3;
  State s(c);
  for (std::uint32_t pid = 1; pid <= 3; ++pid) {
    Process p;
    p.pid = pid;
    s.upsert_process(p);
  }
  // An event of pid 1 makes it recent; pid 2 is now the oldest.
  apply_all(s, make_event(event::Type::kConnect, 1));
  Process p4;
  p4.pid = 4;
  s.upsert_process(p4);
  EXPECT_EQ(s.process_count(), 3u);
  EXPECT_NE(s.process(1), nullptr);
  EXPECT_EQ(s.process(2), nullptr);
  EXPECT_NE(s.process(3), nullptr);
  EXPECT_NE(s.process(4), nullptr);
  for (std::uint32_t pid = 10; pid < 1000; ++pid) apply_all(s, fork_event(4, pid));
  EXPECT_EQ(s.process_count(), 3u);
}

TEST(ProcessTable, AncestryAndCycles) {
  State s(replay_config());
  for (std::uint32_t pid : {1u, 10u, 20u, 30u}) {
    Process p;
    p.pid = pid;
    p.ppid = pid == 1 ? 0 : pid - 10 == 0 ? 1 : pid - 10;
    p.comm = "p" + std::to_string(pid);
    s.upsert_process(p);
  }
  const Process* p30 = s.process(30);
  ASSERT_NE(p30, nullptr);
  EXPECT_EQ(s.ancestor(*p30, 1)->comm, "p20");
  EXPECT_EQ(s.ancestor(*p30, 2)->comm, "p10");
  EXPECT_EQ(s.ancestor(*p30, 3)->comm, "p1");
  EXPECT_EQ(s.ancestor(*p30, 4), nullptr);
  // A cycle (pid reuse, hostile input) never loops forever.
  Process a, b;
  a.pid = 500;
  a.ppid = 501;
  b.pid = 501;
  b.ppid = 500;
  s.upsert_process(a);
  s.upsert_process(b);
  EXPECT_NE(s.ancestor(*s.process(500), 64), nullptr);
  EXPECT_EQ(s.ancestor(*s.process(500), 65), nullptr);
  Process self;
  self.pid = 600;
  self.ppid = 600;
  s.upsert_process(self);
  EXPECT_EQ(s.ancestor(*s.process(600), 1), nullptr);
}

// --- containers and pods ----------------------------------------------------

TEST(Attribution, ShortLivedProcessGetsContainerAndPodFromCgroupId) {
  State s(replay_config());
  Container c;
  c.id = kId;
  c.runtime = ContainerRuntime::kContainerd;
  c.pod_uid = kUid;
  c.cgroup_id = 4242;
  s.upsert_container(c);
  s.upsert_pod(make_pod(kUid, kId, "", 0));

  // Exec then exit of a pid never seen: nothing but the events.
  event::Event ex = exec_event(9000, {"sh", "-c", "id"}, "/bin/sh");
  ex.hdr.cgroup_id = 4242;
  s.apply(ex);
  EvalContext ctx = s.enrich(ex);
  ASSERT_NE(ctx.container, nullptr);
  EXPECT_EQ(ctx.container->id, kId);
  ASSERT_NE(ctx.pod, nullptr);
  EXPECT_EQ(ctx.pod->name, "infer-0");
  ASSERT_NE(ctx.pod_container, nullptr);
  EXPECT_EQ(ctx.pod_container->name, "server");
  EXPECT_EQ(ctx.proc->container_id, kId);
  s.after(ex);

  event::Event end = exit_event(9000, 2001);
  end.hdr.cgroup_id = 4242;
  s.apply(end);
  ctx = s.enrich(end);
  ASSERT_NE(ctx.container, nullptr);
  EXPECT_EQ(ctx.pod->ns, "ml");
  s.after(end);
  ASSERT_NE(s.process(9000), nullptr) << "an exited process stays known for its grace period";
}

TEST(Attribution, ContainerTakesNameImageAndPrivilegeFromItsPod) {
  State s(replay_config());
  Container c;
  c.id = kId;
  c.runtime = ContainerRuntime::kCrio;
  c.pod_uid = kUid;
  c.cgroup_id = 7;
  s.upsert_container(c);
  EXPECT_EQ(s.container(kId)->image, "");
  Pod p = make_pod(kUid, kId, "", 0);
  p.containers[0].privileged = true;
  s.upsert_pod(p);
  ASSERT_NE(s.container(kId), nullptr);
  EXPECT_EQ(s.container(kId)->name, "server");
  EXPECT_EQ(s.container(kId)->image, "vllm/vllm-openai:v0.6");
  EXPECT_TRUE(s.container(kId)->privileged);
  // A container reported after its pod is filled in too.
  Container c2;
  c2.id = kId2;
  c2.pod_uid = kUid;
  PodContainer side;
  side.name = "sidecar";
  side.image = "envoy:1";
  side.id = kId2;
  p.containers.push_back(side);
  s.upsert_pod(p);
  s.upsert_container(c2);
  EXPECT_EQ(s.container(kId2)->name, "sidecar");
}

// --- a deleted pod's grace period (Config::pod_grace_ns) -------------------------

constexpr std::uint64_t kSecond = 1'000'000'000ull;

// A state that knows container kId (cgroup 7) of pod kUid ("infer-0"), with
// its event clock at 100 s.
class PodGrace : public ::testing::Test {
 protected:
  void start(std::uint64_t grace_ns, std::size_t max_pods = 4096) {
    Config cfg = replay_config();
    cfg.pod_grace_ns = grace_ns;
    cfg.max_pods = max_pods;
    s_ = std::make_unique<State>(cfg);
    s_->set_listener(&l_);
    Container c;
    c.id = kId;
    c.pod_uid = kUid;
    c.cgroup_id = 7;
    s_->upsert_container(c);
    s_->upsert_pod(make_pod(kUid, kId, "", 0));
    EXPECT_EQ(pod_seen_at(100 * kSecond), "infer-0");
  }
  // The pod an event of the container at `ts` is attributed to ("" when none).
  std::string pod_seen_at(std::uint64_t ts) {
    event::Event ev = make_event(event::Type::kConnect, 5, ts);
    ev.hdr.cgroup_id = 7;
    s_->apply(ev);
    EvalContext ctx = s_->enrich(ev);
    EXPECT_NE(ctx.container, nullptr);
    std::string name = ctx.pod ? ctx.pod->name : "";
    s_->after(ev);
    return name;
  }
  std::unique_ptr<State> s_;
  RecordingListener l_;
};

// Xid lines, plugin samples and late kernel lines about a pod keep arriving
// after the API server deleted it: they still name it for the grace period.
TEST_F(PodGrace, ADeletedPodStillNamesItsEventsForTheGracePeriod) {
  start(10 * kSecond);
  s_->remove_pod(kUid);
  EXPECT_EQ(l_.removed, std::vector<std::string>{kUid});  // a capture records it now
  EXPECT_TRUE(s_->pods().empty());                        // no longer in force
  EXPECT_EQ(s_->pod_count(), 0u);
  EXPECT_EQ(pod_seen_at(105 * kSecond), "infer-0");
  EXPECT_EQ(pod_seen_at(109 * kSecond), "infer-0");
  s_->remove_pod(kUid);  // a relist that lacks it again: no new grace, no second record
  EXPECT_EQ(l_.removed.size(), 1u);
  EXPECT_EQ(pod_seen_at(110 * kSecond), "");
  EXPECT_EQ(s_->pod(kUid), nullptr);
}

TEST_F(PodGrace, AGraceOfZeroForgetsAtOnce) {
  start(0);
  s_->remove_pod(kUid);
  EXPECT_EQ(s_->pod(kUid), nullptr);
  EXPECT_EQ(pod_seen_at(100 * kSecond), "");
}

TEST_F(PodGrace, APodAnnouncedAgainDuringItsGraceStays) {
  start(10 * kSecond);
  s_->remove_pod(kUid);
  s_->upsert_pod(make_pod(kUid, kId, "", 0));
  EXPECT_EQ(s_->pods().size(), 1u);
  EXPECT_EQ(pod_seen_at(500 * kSecond), "infer-0");
}

// The grace runs on event time: a pod removed before any event starts its
// grace at the first event, not at time 0.
TEST_F(PodGrace, APodRemovedBeforeAnyEventStartsItsGraceAtTheFirst) {
  Config cfg = replay_config();
  cfg.pod_grace_ns = 10 * kSecond;
  s_ = std::make_unique<State>(cfg);
  Container c;
  c.id = kId;
  c.pod_uid = kUid;
  c.cgroup_id = 7;
  s_->upsert_container(c);
  s_->upsert_pod(make_pod(kUid, kId, "", 0));
  s_->remove_pod(kUid);
  EXPECT_EQ(pod_seen_at(100 * kSecond), "infer-0");
  EXPECT_EQ(pod_seen_at(109 * kSecond), "infer-0");
  EXPECT_EQ(pod_seen_at(110 * kSecond), "");
}

// Memory stays bounded however many pods are deleted within one grace period.
TEST_F(PodGrace, DeletedPodsKeptAreBoundedByMaxPods) {
  start(3600 * kSecond, /*max_pods=*/4);
  s_->remove_pod(kUid);
  for (int i = 0; i < 10; ++i) {
    const std::string uid = "uid-" + std::to_string(i);
    Pod p = make_pod(uid, "", "", 0);
    s_->upsert_pod(p);
    s_->remove_pod(uid);
  }
  int known = 0;
  for (int i = 0; i < 10; ++i) known += s_->pod("uid-" + std::to_string(i)) != nullptr;
  EXPECT_LE(known, 4);
  EXPECT_NE(s_->pod("uid-9"), nullptr);  // the latest deleted is kept
  EXPECT_EQ(s_->pod(kUid), nullptr);     // the longest deleted went first
  EXPECT_EQ(s_->pod_count(), 0u);
}

TEST(Attribution, XidIsAttributedToThePidTheLineNames) {
  State s(replay_config());
  Container c;
  c.id = kId;
  c.pod_uid = kUid;
  c.cgroup_id = 55;
  s.upsert_container(c);
  s.upsert_pod(make_pod(kUid, kId, "0", 1));
  Process p;
  p.pid = 3131;
  p.comm = "python3";
  p.cgroup_id = 55;
  p.container_id = kId;
  s.upsert_process(p);
  event::Event ev = make_event(event::Type::kXid, 0);
  event::XidData xd;
  xd.source = "kmsg";
  xd.code = 79;
  xd.xid_pid = 3131;
  ev.data = xd;
  s.apply(ev);
  EvalContext ctx = s.enrich(ev);
  ASSERT_NE(ctx.proc, nullptr);
  EXPECT_EQ(ctx.proc->comm, "python3");
  ASSERT_NE(ctx.pod, nullptr);
  EXPECT_EQ(ctx.pod->name, "infer-0");
  // A line that names no pid has no process.
  std::get<event::XidData>(ev.data).xid_pid = 0;
  EXPECT_EQ(s.enrich(ev).proc, nullptr);
}

TEST(Attribution, EvictedContainerIsRebuiltFromItsCgroupPath) {
  Config cfg = replay_config();
  cfg.max_containers = 1;
  State s(cfg);
  Container a;
  a.id = kId;
  a.runtime = ContainerRuntime::kContainerd;
  a.pod_uid = kUid;
  a.cgroup_id = 1;
  a.cgroup_path = "/kubepods/besteffort/pod" + kUid + "/" + kId;
  Container b;
  b.id = kId2;
  b.cgroup_id = 2;
  b.cgroup_path = "/system.slice/docker-" + kId2 + ".scope";
  s.upsert_container(a);
  s.upsert_container(b);  // evicts a
  EXPECT_EQ(s.container(kId), nullptr);
  event::Event ev = make_event(event::Type::kConnect, 5);
  ev.hdr.cgroup_id = 1;
  s.apply(ev);
  EvalContext ctx = s.enrich(ev);
  ASSERT_NE(ctx.container, nullptr);
  EXPECT_EQ(ctx.container->id, kId);
  EXPECT_EQ(ctx.container->pod_uid, kUid);
}

TEST(Attribution, HostProcessHasNoContainer) {
  State s(replay_config());
  event::Event ev = exec_event(50, {"ls"}, "/bin/ls");
  ev.hdr.cgroup_id = 99;  // unknown and not live: host
  s.apply(ev);
  EvalContext ctx = s.enrich(ev);
  EXPECT_NE(ctx.proc, nullptr);
  EXPECT_EQ(ctx.container, nullptr);
  EXPECT_EQ(ctx.pod, nullptr);
}

TEST(Attribution, LiveMissWalksCgroupTreeAndReportsContainer) {
  TempDir root;
  std::string pod_dir = "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUidUnderscore + ".slice";
  root.mkdirs("cg/" + pod_dir + "/cri-containerd-" + kId + ".scope");
  root.mkdirs("cg/system.slice/sshd.service");
  root.mkdirs("proc");  // an empty fake /proc: the process is not there (short-lived)
  Config c;
  c.proc_root = root.path() + "/proc";
  c.cgroup_root = root.path() + "/cg";
  c.passwd_path = "";
  c.group_path = "";
  State s(c);
  RecordingListener l;
  s.set_listener(&l);

  event::Event ev = exec_event(4321, {"python3", "serve.py"}, "/usr/bin/python3");
  ev.hdr.cgroup_id = root.inode("cg/" + pod_dir + "/cri-containerd-" + kId + ".scope");
  ASSERT_NE(ev.hdr.cgroup_id, 0u);
  s.apply(ev);
  EvalContext ctx = s.enrich(ev);
  ASSERT_NE(ctx.container, nullptr);
  EXPECT_EQ(ctx.container->id, kId);
  EXPECT_EQ(ctx.container->pod_uid, kUid);
  EXPECT_EQ(ctx.container->runtime, "containerd");
  EXPECT_EQ(ctx.container->cgroup_path, "/" + pod_dir + "/cri-containerd-" + kId + ".scope");
  ASSERT_EQ(l.containers.size(), 1u);
  EXPECT_EQ(l.containers[0].id, kId);

  // A host cgroup resolves to no container, and the walk is not repeated.
  event::Event host = exec_event(4322, {"sshd"}, "/usr/sbin/sshd");
  host.hdr.cgroup_id = root.inode("cg/system.slice/sshd.service");
  s.apply(host);
  EXPECT_EQ(s.enrich(host).container, nullptr);

  // Replay: a state fed only the reported records attributes the same way.
  State replay(replay_config());
  for (const auto& rc : l.containers) replay.upsert_container(rc);
  replay.apply(ev);
  EvalContext rctx = replay.enrich(ev);
  ASSERT_NE(rctx.container, nullptr);
  EXPECT_EQ(rctx.container->id, kId);
}

// --- seeding from a fake /proc ----------------------------------------------

std::string stat_line(std::uint32_t pid, const std::string& comm, std::uint32_t ppid, std::uint32_t tty,
                      std::uint64_t start) {
  return std::to_string(pid) + " (" + comm + ") S " + std::to_string(ppid) + " 1 1 " + std::to_string(tty) +
         " -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 " + std::to_string(start) + " 1000 200\n";
}

void fake_process(const TempDir& d, std::uint32_t pid, std::uint32_t ppid, const std::string& comm,
                  const std::string& cmdline, const std::string& cgroup) {
  std::string base = "proc/" + std::to_string(pid);
  d.write(base + "/stat", stat_line(pid, comm, ppid, 34816, 500));
  d.write(base + "/status", "Name:\t" + comm + "\nTgid:\t" + std::to_string(pid) + "\nPPid:\t" + std::to_string(ppid) +
                                "\nUid:\t1000\t1000\t1000\t1000\nGid:\t2000\t2000\t2000\t2000\n"
                                "NSpid:\t" +
                                std::to_string(pid) + "\t7\n");
  d.write(base + "/comm", comm + "\n");
  d.write(base + "/cmdline", cmdline);
  d.write(base + "/cgroup", "0::" + cgroup + "\n");
  d.write(base + "/loginuid", "1000");
  d.symlink(base + "/exe", "/usr/bin/" + comm);
  d.symlink(base + "/cwd", "/home/u");
  d.symlink(base + "/ns/pid", "pid:[4026531836]");
  d.symlink(base + "/ns/mnt", "mnt:[4026531841]");
  d.symlink(base + "/ns/net", "net:[4026531840]");
}

TEST(Seed, A32BitProgramIsFlaggedFromItsElfHeader) {
  TempDir d;
  d.mkdirs("cg");
  d.write("proc/stat", "cpu 1 2 3\nbtime 1700000000\n");
  fake_process(d, 50, 1, "sh", std::string("sh\0", 3), "/");
  fake_process(d, 51, 1, "tiny32", std::string("tiny32\0", 7), "/");
  d.write("files/tiny32", std::string("\x7f"
                                      "ELF\x01\x01\x01",
                                      7) +
                              std::string(60, '\0'));
  d.write("files/tiny64", std::string("\x7f"
                                      "ELF\x02\x01\x01",
                                      7) +
                              std::string(60, '\0'));
  d.write("files/script", "#!/bin/sh\n");
  d.symlink("proc/50/exe", d.path() + "/files/tiny64");
  d.symlink("proc/51/exe", d.path() + "/files/tiny32");
  Config c;
  c.proc_root = d.path() + "/proc";
  c.cgroup_root = d.path() + "/cg";
  c.passwd_path = "";
  c.group_path = "";
  State s(c);
  ASSERT_TRUE(s.seed_from_proc().ok());
  ASSERT_NE(s.process(50), nullptr);
  ASSERT_NE(s.process(51), nullptr);
  EXPECT_FALSE(s.process(50)->elf32);
  EXPECT_TRUE(s.process(51)->elf32);

  // An exec replaces the flag with what the sensor saw.
  event::Event ev;
  ev.hdr.type = event::Type::kExec;
  ev.hdr.pid = ev.hdr.tid = 51;
  ev.hdr.ppid = 1;
  ev.hdr.comm = "sh";
  event::ExecData x;
  x.filename = "/bin/sh";
  x.exe = "/bin/sh";
  x.elf32 = false;
  ev.data = x;
  s.apply(ev);
  EXPECT_FALSE(s.process(51)->elf32);
}

TEST(Seed, ReadsEveryProcessFieldFromFakeProc) {
  TempDir d;
  std::string cg = "/kubepods/besteffort/pod" + kUid + "/" + kId;
  d.mkdirs("cg" + cg);
  d.write("proc/stat", "cpu 1 2 3\nbtime 1700000000\n");
  fake_process(d, 1, 0, "systemd", std::string("/sbin/init\0splash\0", 18), "/init.scope");
  fake_process(d, 42, 1, "python3", std::string("python3\0-m\0vllm.entrypoints\0", 29), cg);
  d.symlink("proc/42/fd/0", "socket:[12345]");
  d.symlink("proc/42/fd/1", "/dev/pts/0");
  d.symlink("proc/42/fd/3", "/dev/nvidia0");
  d.symlink("proc/42/fd/4", "/dev/nvidiactl");
  d.symlink("proc/42/fd/5", "/var/log/x.log");
  d.write("files/nvidia-installer.log", "not a device");
  d.symlink("proc/42/fd/6", d.path() + "/files/nvidia-installer.log");  // named nvidia*, a file
  // Hostile entries: garbage stat, missing status, non-numeric names.
  d.write("proc/77/stat", "77 (broken");
  d.write("proc/77/status", "Uid:\t1\nGid:\t1\n");
  d.write("proc/78/stat", stat_line(78, "x", 1, 0, 1));
  d.write("proc/abc/stat", "junk");

  Config c;
  c.proc_root = d.path() + "/proc";
  c.cgroup_root = d.path() + "/cg";
  c.passwd_path = "";
  c.group_path = "";
  State s(c);
  RecordingListener l;
  s.set_listener(&l);
  ASSERT_TRUE(s.seed_from_proc().ok());
  EXPECT_EQ(s.process_count(), 2u);
  EXPECT_EQ(l.processes.size(), 2u);

  const Process* p = s.process(42);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->ppid, 1u);
  EXPECT_EQ(p->uid, 1000u);
  EXPECT_EQ(p->gid, 2000u);
  EXPECT_EQ(p->comm, "python3");
  EXPECT_EQ(p->exe, "python3");
  EXPECT_EQ(p->exepath, "/usr/bin/python3");
  EXPECT_EQ((std::vector<std::string>{"-m", "vllm.entrypoints"}), p->args);
  EXPECT_EQ(p->cwd, "/home/u");
  EXPECT_EQ(p->tty, 34816u);
  EXPECT_EQ(p->loginuid, 1000u);
  EXPECT_EQ(p->pid_ns, 4026531836u);
  EXPECT_EQ(p->mnt_ns, 4026531841u);
  EXPECT_EQ(p->net_ns, 4026531840u);
  EXPECT_EQ(p->vpid, 7u);
  EXPECT_TRUE(p->from_proc);
  EXPECT_TRUE(p->stdin_is_socket);
  EXPECT_FALSE(p->stdout_is_socket);
  EXPECT_GT(p->start_ts_ns, 1700000000ULL * 1000000000ULL);
  EXPECT_EQ(p->container_id, kId);
  EXPECT_EQ(p->cgroup_id, d.inode("cg" + cg));
  ASSERT_EQ(p->gpu_fds.size(), 2u);
  EXPECT_EQ(p->gpu_fds[0], (GpuFd{3, 195, 0, false}));
  EXPECT_EQ(p->gpu_fds[1], (GpuFd{4, 195, 255, false}));
  EXPECT_EQ(p->gpu_devices_opened, 1u);
  ASSERT_NE(s.gpu_fd(42, 3), nullptr);
  EXPECT_EQ(s.gpu_fd(42, 5), nullptr);

  const Container* ct = s.container(kId);
  ASSERT_NE(ct, nullptr);
  EXPECT_EQ(ct->pod_uid, kUid);
  EXPECT_EQ(ct->cgroup_id, p->cgroup_id);
  ASSERT_EQ(l.containers.size(), 1u);

  // Events of the seeded process are attributed through its cgroup id.
  event::Event ev = make_event(event::Type::kConnect, 42);
  ev.hdr.cgroup_id = p->cgroup_id;
  s.apply(ev);
  EXPECT_EQ(s.enrich(ev).container, ct);
  const Process* init = s.process(1);
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->container_id, "");
  EXPECT_EQ(init->args, std::vector<std::string>{"splash"});
}

TEST(Seed, UnknownLivePidIsReadFromProcOnceAndReported) {
  TempDir d;
  d.mkdirs("cg");
  fake_process(d, 300, 1, "nginx", std::string("nginx\0-g\0daemon off;\0", 22), "/");
  Config c;
  c.proc_root = d.path() + "/proc";
  c.cgroup_root = d.path() + "/cg";
  c.passwd_path = "";
  c.group_path = "";
  State s(c);
  RecordingListener l;
  s.set_listener(&l);
  event::Event ev = make_event(event::Type::kConnect, 300);
  s.apply(ev);
  EvalContext ctx = s.enrich(ev);
  ASSERT_NE(ctx.proc, nullptr);
  EXPECT_EQ(ctx.proc->exepath, "/usr/bin/nginx");
  EXPECT_EQ((std::vector<std::string>{"-g", "daemon off;"}), ctx.proc->args);
  ASSERT_EQ(l.processes.size(), 1u);
  s.apply(ev);
  EXPECT_EQ(l.processes.size(), 1u) << "a known pid is not read again";
}

TEST(Seed, FailsClearlyWithoutProc) {
  Config c;
  c.proc_root = "/nonexistent/vigil-proc";
  c.passwd_path = "";
  c.group_path = "";
  State s(c);
  Status st = s.seed_from_proc();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("/nonexistent/vigil-proc"), std::string::npos);
}

// --- GPU fds, compute, allocations ------------------------------------------

event::Event open_event(std::uint32_t pid, const std::string& path, std::uint32_t major, std::uint32_t minor,
                        std::int64_t fd, std::uint32_t flags = O_RDWR) {
  event::Event ev = make_event(event::Type::kOpen, pid);
  event::OpenData od;
  od.path = path;
  od.dev_major = major;
  od.dev_minor = minor;
  od.is_device = true;
  od.result = fd;
  od.flags = flags;
  ev.data = od;
  return ev;
}

TEST(GpuFds, OpensTrackNvidiaFdsAndExecDropsCloexecOnes) {
  State s(replay_config());
  apply_all(s, open_event(10, "/dev/nvidia1", 195, 1, 5));
  apply_all(s, open_event(10, "/dev/nvidiactl", 195, 255, 6, O_RDWR | O_CLOEXEC));
  apply_all(s, open_event(10, "/dev/null", 1, 3, 7));
  apply_all(s, open_event(10, "/dev/nvidia2", 195, 2, -13));  // EACCES: no fd
  // A stand-in node: /dev/null's numbers, recognised by its name.
  apply_all(s, open_event(10, "/tmp/rig/nvidia3", 1, 3, 8));
  ASSERT_NE(s.gpu_fd(10, 5), nullptr);
  EXPECT_EQ(s.gpu_fd(10, 5)->minor, 1u);
  ASSERT_NE(s.gpu_fd(10, 6), nullptr);
  EXPECT_EQ(s.gpu_fd(10, 6)->minor, 255u);
  EXPECT_EQ(s.gpu_fd(10, 7), nullptr);
  ASSERT_NE(s.gpu_fd(10, 8), nullptr);
  EXPECT_EQ(s.gpu_fd(10, 8)->major, 195u);
  EXPECT_EQ(s.gpu_fd(10, 8)->minor, 3u);
  EXPECT_EQ(s.process(10)->gpu_devices_opened, 2u);

  // A regular file whose name starts with nvidia is not a device.
  event::Event shm = open_event(10, "/dev/shm/nvidia-cache", 0, 0, 9);
  std::get<event::OpenData>(shm.data).is_device = false;
  apply_all(s, shm);
  EXPECT_EQ(s.gpu_fd(10, 9), nullptr);

  // fd 5 reused for a regular file: no longer a GPU fd.
  event::Event reuse = open_event(10, "/etc/hosts", 0, 0, 5);
  std::get<event::OpenData>(reuse.data).is_device = false;
  apply_all(s, reuse);
  EXPECT_EQ(s.gpu_fd(10, 5), nullptr);

  apply_all(s, exec_event(10, {"python3"}, "/usr/bin/python3"));
  EXPECT_EQ(s.gpu_fd(10, 6), nullptr) << "close-on-exec fd survives exec";
  EXPECT_NE(s.gpu_fd(10, 8), nullptr);

  // The child of a fork inherits the fds.
  apply_all(s, fork_event(10, 11));
  EXPECT_NE(s.gpu_fd(11, 8), nullptr);
}

TEST(GpuFds, ComputeAllocationMarksTheProcess) {
  State s(replay_config());
  auto cls = event::nvidia::class_from_name("AMPERE_COMPUTE_A");
  ASSERT_TRUE(cls.has_value());
  auto ioctl = [&](std::uint32_t nr, std::uint32_t rm_class, std::uint32_t status) {
    event::Event ev = make_event(event::Type::kIoctl, 20);
    event::IoctlData d;
    d.nr = nr;
    d.rm_class = rm_class;
    d.rm_status = status;
    d.dev_major = 195;
    d.dev_minor = 255;
    ev.data = d;
    return ev;
  };
  apply_all(s, ioctl(event::nvidia::kEscRmAlloc, *cls, 0x1F));  // failed allocation
  EXPECT_FALSE(s.process(20)->gpu_compute);
  apply_all(s, ioctl(event::nvidia::kEscRmControl, *cls, 0));  // not an allocation
  EXPECT_FALSE(s.process(20)->gpu_compute);
  apply_all(s, ioctl(event::nvidia::kEscRmAlloc, 0x0080, 0));  // NV01_DEVICE_0
  EXPECT_FALSE(s.process(20)->gpu_compute);
  apply_all(s, ioctl(event::nvidia::kEscRmAlloc, *cls, 0));
  EXPECT_TRUE(s.process(20)->gpu_compute);
  // A forked child and a new image have not allocated anything themselves.
  apply_all(s, fork_event(20, 21));
  EXPECT_FALSE(s.process(21)->gpu_compute);
  apply_all(s, exec_event(20, {"sh"}, "/bin/sh"));
  EXPECT_FALSE(s.process(20)->gpu_compute);
}

void fake_gpu(const TempDir& d, const std::string& pci, const std::string& uuid, int minor) {
  d.write("proc/driver/nvidia/gpus/" + pci + "/information",
          "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 150\nGPU UUID: \t " + uuid +
              "\nVideo BIOS: \t 96.00.99.00.01\nBus Type: \t PCIe\nDevice Minor: \t " + std::to_string(minor) +
              "\nGPU Excluded:\t No\n");
}

class GpuAllocationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    d_.write("proc/devices",
             "Character devices:\n  1 mem\n195 nvidia-frontend\n508 nvidia-uvm\n"
             "509 nvidia-caps\n\nBlock devices:\n  8 sd\n510 nvidia-uvm\n");
    // PCI order differs from minor order: index 0 is the GPU with minor 2.
    fake_gpu(d_, "0000:1b:00.0", "GPU-aaaaaaaa-1111-2222-3333-444444444444", 2);
    fake_gpu(d_, "0000:3b:00.0", "GPU-bbbbbbbb-1111-2222-3333-444444444444", 0);
    fake_gpu(d_, "0000:5b:00.0", "GPU-cccccccc-1111-2222-3333-444444444444", 1);
    d_.mkdirs("cg");
    Config c;
    c.proc_root = d_.path() + "/proc";
    c.cgroup_root = d_.path() + "/cg";
    c.passwd_path = "";
    c.group_path = "";
    state_ = std::make_unique<State>(c);
    state_->set_listener(&listener_);
    state_->load_nvidia();
    Container ct;
    ct.id = kId;
    ct.pod_uid = kUid;
    ct.cgroup_id = 31337;
    state_->upsert_container(ct);
  }

  bool allowed(std::uint32_t major, std::uint32_t minor, const std::string& path = "") {
    event::Event ev = open_event(900, path.empty() ? "/dev/x" : path, major, minor, 3);
    ev.hdr.cgroup_id = 31337;
    state_->apply(ev);
    EvalContext ctx = state_->enrich(ev);
    return state_->gpu_allowed(ctx, major, minor);
  }

  TempDir d_;
  RecordingListener listener_;
  std::unique_ptr<State> state_;
};

TEST_F(GpuAllocationTest, ReadsDriverInfoAndReportsIt) {
  const NvidiaInfo& n = state_->nvidia();
  EXPECT_EQ(n.uvm_major, 508u);
  EXPECT_EQ(n.caps_major, 509u);
  ASSERT_EQ(n.gpus.size(), 3u);
  EXPECT_EQ(n.gpus[0].pci, "0000:1b:00.0");
  EXPECT_EQ(n.gpus[0].minor, 2u);
  EXPECT_EQ(n.gpus[0].model, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(listener_.nvidia.size(), 1u);
  EXPECT_EQ(listener_.nvidia[0], n);
}

TEST_F(GpuAllocationTest, UuidAllocationAllowsOnlyThatGpu) {
  state_->upsert_pod(make_pod(kUid, kId, "GPU-cccccccc-1111-2222-3333-444444444444", 1));
  EXPECT_TRUE(allowed(195, 1));
  EXPECT_FALSE(allowed(195, 0));
  EXPECT_FALSE(allowed(195, 2));
  EXPECT_TRUE(allowed(195, 255));  // nvidiactl comes with any GPU
  EXPECT_TRUE(allowed(508, 0));    // nvidia-uvm
  EXPECT_FALSE(allowed(508, 1));   // nvidia-uvm-tools is never allocated
  EXPECT_FALSE(allowed(509, 1));   // MIG config capability
  event::Event ev = make_event(event::Type::kOpen, 900);
  ev.hdr.cgroup_id = 31337;
  EvalContext ctx = state_->enrich(ev);
  const GpuAllocation* a = state_->gpu_allocation(ctx);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->minors, std::vector<std::uint32_t>{1});
  EXPECT_EQ(a->devices, std::vector<std::string>{"GPU-cccccccc-1111-2222-3333-444444444444"});
}

TEST_F(GpuAllocationTest, IndexesFollowPciOrder) {
  state_->upsert_pod(make_pod(kUid, kId, "0,2", 2));
  EXPECT_TRUE(allowed(195, 2));  // index 0 → 0000:1b:00.0 → minor 2
  EXPECT_TRUE(allowed(195, 1));  // index 2 → 0000:5b:00.0 → minor 1
  EXPECT_FALSE(allowed(195, 0));
}

TEST_F(GpuAllocationTest, NoAllocationForbidsEveryNvidiaNode) {
  state_->upsert_pod(make_pod(kUid, kId, "", 0));
  EXPECT_FALSE(allowed(195, 0));
  EXPECT_FALSE(allowed(195, 255));
  EXPECT_FALSE(allowed(508, 0));
  EXPECT_FALSE(allowed(1, 3, "/dev/nvidia0"));  // a stand-in node, by name
  EXPECT_TRUE(allowed(1, 3, "/dev/null"));      // not an NVIDIA node at all
}

TEST_F(GpuAllocationTest, AllNoneVoidAndLimitOnly) {
  state_->upsert_pod(make_pod(kUid, kId, "all", 0));
  EXPECT_TRUE(allowed(195, 0));
  EXPECT_TRUE(allowed(195, 2));
  state_->upsert_pod(make_pod(kUid, kId, "none", 0));
  EXPECT_FALSE(allowed(195, 0));
  EXPECT_TRUE(allowed(195, 255));
  state_->upsert_pod(make_pod(kUid, kId, "void", 0));
  EXPECT_FALSE(allowed(195, 255));
  // A limit without device ids: some GPU, unknown which.
  state_->upsert_pod(make_pod(kUid, kId, "", 1));
  EXPECT_TRUE(allowed(195, 0));
  // pod-resources device ids, with a time-slicing replica suffix.
  Pod p = make_pod(kUid, kId, "/var/run/nvidia-container-devices", 1);
  p.containers[0].gpu_devices = {"GPU-aaaaaaaa-1111-2222-3333-444444444444::3"};
  state_->upsert_pod(p);
  EXPECT_TRUE(allowed(195, 2));
  EXPECT_FALSE(allowed(195, 0));
}

TEST_F(GpuAllocationTest, IoctlOnAStandInNodeUsesWhatItsNameStoodFor) {
  state_->upsert_pod(make_pod(kUid, kId, "GPU-cccccccc-1111-2222-3333-444444444444", 1));  // minor 1
  auto ioctl_on = [&](const std::string& path, std::int32_t fd) {
    event::Event open = open_event(902, path, 1, 3, fd);  // /dev/null's numbers
    open.hdr.cgroup_id = 31337;
    state_->apply(open);
    event::Event io = make_event(event::Type::kIoctl, 902);
    io.hdr.cgroup_id = 31337;
    event::IoctlData d;
    d.fd = fd;
    d.dev_major = 1;
    d.dev_minor = 3;
    io.data = d;
    state_->apply(io);
    return state_->gpu_allowed(state_->enrich(io), 1, 3);
  };
  EXPECT_FALSE(ioctl_on("/tmp/rig/nvidia0", 5));
  EXPECT_TRUE(ioctl_on("/tmp/rig/nvidia1", 6));
}

TEST_F(GpuAllocationTest, HostAndUnknownPodAreAllowed) {
  event::Event ev = open_event(901, "/dev/nvidia0", 195, 0, 3);
  state_->apply(ev);
  EXPECT_TRUE(state_->gpu_allowed(state_->enrich(ev), 195, 0));  // host
  EXPECT_TRUE(allowed(195, 0));                                  // container whose pod is not known yet
}

// --- DNS ---------------------------------------------------------------------

event::Event dns_answer(std::uint32_t pid, std::uint64_t cgroup, const std::string& name,
                        std::vector<event::IpAddr> answers) {
  event::Event ev = make_event(event::Type::kDns, pid);
  ev.hdr.cgroup_id = cgroup;
  event::DnsData d;
  d.is_response = true;
  d.name = name;
  d.qtype = 1;
  d.answers = std::move(answers);
  ev.data = d;
  return ev;
}

TEST(Dns, AnswersAreRememberedPerPod) {
  State s(replay_config());
  Container a, b;
  a.id = kId;
  a.pod_uid = kUid;
  a.cgroup_id = 1;
  b.id = kId2;
  b.pod_uid = "11111111-2222-3333-4444-555555555555";
  b.cgroup_id = 2;
  s.upsert_container(a);
  s.upsert_container(b);
  s.upsert_pod(make_pod(kUid, kId, "", 0));
  s.upsert_pod(make_pod(b.pod_uid, kId2, "", 0));

  apply_all(s, dns_answer(5, 1, "huggingface.co", {testing::ipv4(18, 1, 2, 3)}));
  event::Event conn = make_event(event::Type::kConnect, 6);
  conn.hdr.cgroup_id = 1;
  s.apply(conn);
  EvalContext ctx = s.enrich(conn);
  EXPECT_EQ(s.dns_name_for(ctx, testing::ipv4(18, 1, 2, 3)), "huggingface.co");
  EXPECT_EQ(s.dns_name_for(ctx, testing::ipv4(18, 1, 2, 4)), "");

  event::Event other = make_event(event::Type::kConnect, 7);
  other.hdr.cgroup_id = 2;
  s.apply(other);
  EXPECT_EQ(s.dns_name_for(s.enrich(other), testing::ipv4(18, 1, 2, 3)), "") << "another pod did not resolve that name";

  // Host processes share their network namespace's memory.
  event::Event h1 = dns_answer(8, 0, "pool.example.org", {testing::ipv4(1, 1, 1, 1)});
  h1.hdr.net_ns = 4026531840u;
  apply_all(s, h1);
  event::Event h2 = make_event(event::Type::kConnect, 9);
  h2.hdr.net_ns = 4026531840u;
  s.apply(h2);
  EXPECT_EQ(s.dns_name_for(s.enrich(h2), testing::ipv4(1, 1, 1, 1)), "pool.example.org");
}

TEST(Dns, Ipv4MappedAddressesMatchTheirIpv4Answer) {
  State s(replay_config());
  event::Event ans = dns_answer(5, 0, "pool.example.net", {testing::ipv4(45, 9, 20, 1)});
  ans.hdr.net_ns = 77;
  apply_all(s, ans);
  event::Event c = make_event(event::Type::kConnect, 5);
  c.hdr.net_ns = 77;
  s.apply(c);
  event::IpAddr mapped;
  mapped.family = 10;  // AF_INET6
  mapped.bytes[10] = 0xff;
  mapped.bytes[11] = 0xff;
  mapped.bytes[12] = 45;
  mapped.bytes[13] = 9;
  mapped.bytes[14] = 20;
  mapped.bytes[15] = 1;
  EXPECT_EQ(s.dns_name_for(s.enrich(c), mapped), "pool.example.net");
  mapped.bytes[0] = 1;  // no longer a mapped address
  EXPECT_EQ(s.dns_name_for(s.enrich(c), mapped), "");
}

TEST(Dns, FailedAnswersAndQuestionsAreNotRemembered) {
  State s(replay_config());
  event::Event q = dns_answer(5, 0, "a.example", {testing::ipv4(9, 9, 9, 9)});
  std::get<event::DnsData>(q.data).is_response = false;
  apply_all(s, q);
  event::Event nx = dns_answer(5, 0, "b.example", {testing::ipv4(9, 9, 9, 9)});
  std::get<event::DnsData>(nx.data).rcode = 3;
  apply_all(s, nx);
  event::Event c = make_event(event::Type::kConnect, 5);
  s.apply(c);
  EXPECT_EQ(s.dns_name_for(s.enrich(c), testing::ipv4(9, 9, 9, 9)), "");
}

TEST(Dns, MemoryIsBounded) {
  Config c = replay_config();
  c.max_dns_names = 2;
  State s(c);
  apply_all(s, dns_answer(5, 0, "one.example", {testing::ipv4(10, 0, 0, 1)}));
  apply_all(s, dns_answer(5, 0, "two.example", {testing::ipv4(10, 0, 0, 2)}));
  apply_all(s, dns_answer(5, 0, "three.example", {testing::ipv4(10, 0, 0, 3)}));
  event::Event e = make_event(event::Type::kConnect, 5);
  s.apply(e);
  EvalContext ctx = s.enrich(e);
  EXPECT_EQ(s.dns_name_for(ctx, testing::ipv4(10, 0, 0, 1)), "");
  EXPECT_EQ(s.dns_name_for(ctx, testing::ipv4(10, 0, 0, 2)), "two.example");
  EXPECT_EQ(s.dns_name_for(ctx, testing::ipv4(10, 0, 0, 3)), "three.example");
}

// --- users -------------------------------------------------------------------

TEST(Users, NamesFromPasswdAndGroupFiles) {
  TempDir d;
  d.write("passwd",
          "root:x:0:0:root:/root:/bin/bash\n# comment\nbroken line\n"
          "svc:x:abc:1:\nalice:x:1000:1000::/home/alice:/bin/sh\nalias:x:1000:1:::\n");
  d.write("group", "root:x:0:\nvideo:x:44:alice\n");
  Config c = replay_config();
  c.passwd_path = d.path() + "/passwd";
  c.group_path = d.path() + "/group";
  State s(c);
  EXPECT_EQ(s.user_name(0), "root");
  EXPECT_EQ(s.user_name(1000), "alice");
  EXPECT_EQ(s.user_name(4242), "");
  EXPECT_EQ(s.group_name(44), "video");
  EXPECT_EQ(s.group_name(1000), "");
}

// --- events about a process that already exited (Config::process_grace_ns) ------

constexpr std::uint64_t kSec = 1'000'000'000ull;

// A process of a pod's container: pid 4100, uid 1000, cgroup 55.
void add_pod_process(State& s, std::uint32_t pid = 4100) {
  Container c;
  c.id = kId;
  c.pod_uid = kUid;
  c.cgroup_id = 55;
  s.upsert_container(c);
  s.upsert_pod(make_pod(kUid, kId, "0", 1));
  Process p;
  p.pid = pid;
  p.ppid = 1;
  p.uid = 1000;
  p.comm = "pt_main_thread";
  p.exepath = "/usr/bin/python3";
  p.cgroup_id = 55;
  p.container_id = kId;
  s.upsert_process(p);
}

event::Event exit_of(std::uint32_t pid, std::uint64_t ts) {
  event::Event ex = exit_event(pid, ts);
  ex.hdr.uid = 1000;
  ex.hdr.cgroup_id = 55;
  return ex;
}

event::Event xid_about(std::uint32_t pid, std::uint64_t ts, std::uint32_t code = 94) {
  event::Event ev = make_event(event::Type::kXid, pid, ts);
  event::XidData xd;
  xd.source = "kmsg";
  xd.facility = 0;
  xd.code = code;
  xd.pci = "0000:3b:00";
  xd.xid_pid = pid;
  ev.data = xd;
  return ev;
}

// The bug this guards: an Xid line read 30 s after its process exited (the
// kernel log is read after the fact; a node under load reads it late) named
// no process (proc.* <NA>, container.id host), because an exited process was
// kept for only 5 s of event time.
TEST(LateEvents, AnXidLineAfterTheExitNamesTheProcessItsContainerAndPod) {
  State s(replay_config());
  add_pod_process(s);
  apply_all(s, exit_of(4100, 10 * kSec));
  // Other processes keep the event time going.
  apply_all(s, fork_event(1, 4200, 38 * kSec));
  event::Event xid = xid_about(4100, 40 * kSec);
  s.apply(xid);
  EvalContext ctx = s.enrich(xid);
  ASSERT_NE(ctx.proc, nullptr) << "30 s after its exit the process is still known";
  EXPECT_EQ(ctx.proc->comm, "pt_main_thread");
  EXPECT_EQ(ctx.proc->uid, 1000u);
  ASSERT_NE(ctx.container, nullptr);
  EXPECT_EQ(ctx.container->id, kId);
  ASSERT_NE(ctx.pod, nullptr);
  EXPECT_EQ(ctx.pod->name, "infer-0");
  s.after(xid);
  EXPECT_EQ(s.stats().late_events, 1u);
  EXPECT_EQ(s.stats().exited_kept, 1u);

  // Past its grace period (60 s by default) it is forgotten, and counted.
  apply_all(s, fork_event(1, 4201, 71 * kSec));
  EXPECT_EQ(s.process(4100), nullptr);
  EXPECT_EQ(s.stats().exited_expired, 1u);
  EXPECT_EQ(s.stats().exited_kept, 0u);
  EvalContext gone = s.enrich(xid);
  EXPECT_EQ(gone.proc, nullptr);
}

TEST(LateEvents, TheGraceIsConfigurable) {
  Config cfg = replay_config();
  cfg.process_grace_ns = 120 * kSec;
  State s(cfg);
  add_pod_process(s);
  apply_all(s, exit_of(4100, 10 * kSec));
  apply_all(s, fork_event(1, 4200, 100 * kSec));
  EXPECT_NE(s.process(4100), nullptr) << "90 s after its exit, with a grace of 120 s";
  apply_all(s, fork_event(1, 4201, 130 * kSec));
  EXPECT_EQ(s.process(4100), nullptr);
}

// A plugin event (an NVML sample) or a GPU usage report is about a pid; its
// header has no uid, cgroup or comm. It must neither overwrite what the
// process table knows nor make up a host process for a pid it does not know.
TEST(LateEvents, EventsAboutAPidNeitherOverwriteNorMakeUpItsRecord) {
  State s(replay_config());
  add_pod_process(s);
  apply_all(s, exit_of(4100, 10 * kSec));
  event::Event sample = make_event(event::Type::kPlugin, 4100, 12 * kSec);
  sample.hdr.comm.clear();
  event::PluginData pd;
  pd.plugin = "nvml";
  pd.source = "nvml";
  pd.name = "process_sample";
  sample.data = pd;
  s.apply(sample);
  EvalContext ctx = s.enrich(sample);
  ASSERT_NE(ctx.proc, nullptr);
  EXPECT_EQ(ctx.proc->uid, 1000u) << "the sample's header (uid 0) overwrote the record";
  EXPECT_EQ(ctx.proc->comm, "pt_main_thread");
  ASSERT_NE(ctx.pod, nullptr);
  EXPECT_EQ(ctx.pod->name, "infer-0");
  s.after(sample);

  event::Event usage = make_event(event::Type::kGpuUsage, 4100, 13 * kSec);
  usage.data = event::GpuUsageData{};
  s.apply(usage);
  ASSERT_NE(s.enrich(usage).pod, nullptr);
  s.after(usage);
  EXPECT_EQ(s.stats().late_events, 2u);

  // A pid nobody knows: no record is made up from the header (it would have
  // named the host as its container, for every later event about that pid).
  event::Event unknown = make_event(event::Type::kGpuUsage, 4999, 14 * kSec);
  unknown.data = event::GpuUsageData{};
  apply_all(s, unknown);
  sample.hdr.pid = 4998;
  apply_all(s, sample);
  EXPECT_EQ(s.process(4999), nullptr);
  EXPECT_EQ(s.process(4998), nullptr);
}

// Memory stays bounded however many processes exit within one grace period:
// past max_exited_processes the one that exited first is forgotten early.
TEST(LateEvents, ExitedProcessesAreBoundedAndCounted) {
  Config cfg = replay_config();
  cfg.max_exited_processes = 2;
  State s(cfg);
  for (std::uint32_t pid = 5000; pid < 5003; ++pid) {
    Process p;
    p.pid = pid;
    p.comm = "job";
    s.upsert_process(p);
  }
  apply_all(s, exit_of(5000, 1 * kSec));
  apply_all(s, exit_of(5001, 2 * kSec));
  apply_all(s, exit_of(5002, 3 * kSec));
  EXPECT_EQ(s.process(5000), nullptr) << "the first to exit went early";
  EXPECT_NE(s.process(5001), nullptr);
  EXPECT_NE(s.process(5002), nullptr);
  StateStats st = s.stats();
  EXPECT_EQ(st.exited_kept, 2u);
  EXPECT_EQ(st.exited_evicted, 1u);
  EXPECT_EQ(st.exited_expired, 0u);
}

// --- the pods that share a GPU (gpu_client_pods): an MPS server's clients --------

TEST(GpuClients, PodsHoldingTheGpuOrAllocatedItAreNamedTheServersOwnLeftOut) {
  State s(replay_config());
  NvidiaInfo nv;
  nv.gpus = {{"GPU-aaaaaaaa-0000-0000-0000-000000000000", "0000:3b:00.0", 0, "H100"},
             {"GPU-bbbbbbbb-0000-0000-0000-000000000000", "0000:86:00.0", 1, "H100"}};
  s.upsert_nvidia(nv);
  struct Tenant {
    std::string uid, name, cid;
    std::uint64_t cgroup;
  };
  const std::vector<Tenant> tenants = {
      {"uid-mps", "mps-control", std::string(64, '1'), 61},
      {"uid-a", "train-a", std::string(64, '2'), 62},
      {"uid-b", "train-b", std::string(64, '3'), 63},
      {"uid-c", "other-gpu", std::string(64, '4'), 64},
  };
  for (const Tenant& t : tenants) {
    Container c;
    c.id = t.cid;
    c.pod_uid = t.uid;
    c.cgroup_id = t.cgroup;
    s.upsert_container(c);
    Pod p = make_pod(t.uid, t.cid, "", 0);
    p.name = t.name;
    p.ns = "ml";
    s.upsert_pod(p);
  }
  auto proc = [&](std::uint32_t pid, const Tenant& t, std::uint32_t minor) {
    Process p;
    p.pid = pid;
    p.comm = "python3";
    p.cgroup_id = t.cgroup;
    p.container_id = t.cid;
    p.gpu_fds = {{3, 195, 255, false}, {4, 195, minor, false}};
    s.upsert_process(p);
  };
  proc(6000, tenants[0], 0);  // the MPS server itself
  proc(6001, tenants[1], 0);
  proc(6002, tenants[3], 1);  // another GPU
  // train-b holds no node open but was allocated GPU 0 (pod-resources).
  Pod b = make_pod("uid-b", tenants[2].cid, "GPU-aaaaaaaa-0000-0000-0000-000000000000", 1);
  b.name = "train-b";
  s.upsert_pod(b);
  EXPECT_EQ(s.gpu_client_pods(0, "uid-mps"), (std::vector<std::string>{"ml/train-a", "ml/train-b"}));
  EXPECT_EQ(s.gpu_client_pods(1, "uid-mps"), (std::vector<std::string>{"ml/other-gpu"}));
  EXPECT_EQ(s.gpu_client_pods(0, ""), (std::vector<std::string>{"ml/mps-control", "ml/train-a", "ml/train-b"}));
  EXPECT_TRUE(s.gpu_client_pods(2, "").empty());
}

}  // namespace
}  // namespace vigil::state

namespace vigil::state {
namespace {

// What the main thread calls itself after a rename (prctl, /proc/self/comm)
// is remembered for the events that carry no comm of the process: an NVML
// sample of a miner that called itself dns-filter must still see that name.
TEST(MainThreadName, ARenameIsRememberedUntilTheNextExec) {
  State s(replay_config());
  apply_all(s, exec_event(5100, {"xmrig", "-o", "pool"}, "/tmp/.x/xmrig"));
  ASSERT_NE(s.process(5100), nullptr);
  EXPECT_EQ(s.process(5100)->comm_now, "");

  // Another thread naming itself changes nothing.
  event::Event worker = make_event(event::Type::kOpen, 5100, 3000);
  worker.hdr.tid = 5107;
  worker.hdr.comm = "worker-1";
  apply_all(s, worker);
  EXPECT_EQ(s.process(5100)->comm_now, "");

  // The main thread's next call carries its new name.
  event::Event renamed = make_event(event::Type::kOpen, 5100, 4000);
  renamed.hdr.comm = "dns-filter";
  apply_all(s, renamed);
  EXPECT_EQ(s.process(5100)->comm_now, "dns-filter");
  EXPECT_EQ(s.process(5100)->comm, "xmrig") << "proc.name stays the exec's";

  // A plugin sample's header is not a call of the process: it keeps the name.
  event::Event sample = make_event(event::Type::kPlugin, 5100, 5000);
  sample.hdr.comm = "xmrig";
  event::PluginData pd;
  pd.plugin = "nvml";
  pd.source = "nvml";
  pd.name = "process_sample";
  sample.data = pd;
  apply_all(s, sample);
  EXPECT_EQ(s.process(5100)->comm_now, "dns-filter");

  // Back to its exec's name, then a new exec: nothing remembered.
  event::Event back = make_event(event::Type::kOpen, 5100, 6000);
  back.hdr.comm = "xmrig";
  apply_all(s, back);
  EXPECT_EQ(s.process(5100)->comm_now, "");
  renamed.hdr.ts_ns = 7000;
  apply_all(s, renamed);
  apply_all(s, exec_event(5100, {"sh"}, "/bin/sh", 8000));
  EXPECT_EQ(s.process(5100)->comm_now, "");
}

}  // namespace
}  // namespace vigil::state
