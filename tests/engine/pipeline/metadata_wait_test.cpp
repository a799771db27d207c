// MetadataWait: an alert from a container whose pod is not known yet waits
// (on a fake clock) for the pod, and goes out naming it; without the pod it
// goes out at the deadline marked incomplete; other alerts are not delayed.
#include "engine/pipeline/metadata_wait.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/pipeline/pipeline.h"
#include "engine/rules/append_output.h"
#include "engine/rules/ruleset.h"
#include "engine/state/state.h"

namespace vigil::pipeline {
namespace {

using namespace std::chrono_literals;

constexpr const char* kCid = "3f1c0d2e9a7b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d";
constexpr std::uint64_t kMs = 1'000'000;

// A rule whose output prints the pod, with append_output's default (the
// container and pod fields and k8s.meta on every alert) and an extra field
// made of a pod field.
std::shared_ptr<const rules::Ruleset> compile() {
  const YAML::Node root = YAML::Load(
      "append_output:\n  - suggested_output: true\n"
      "    extra_fields: [{team: 'gpu-%k8s.ns.name'}, proc.name]\n");
  auto cfg = rules::parse_append_output(root["append_output"], ConfigOrigin("vigil.yaml"));
  EXPECT_TRUE(cfg);
  auto ao = rules::compile_append_output(*cfg, rules::FieldCatalog::builtin(), rules::builtin_suggested_fields());
  EXPECT_TRUE(ao);
  rules::LoadOptions opts;
  opts.append_output = *ao;
  auto r = rules::load_rules_text({{"rules.yaml", R"(
- rule: Shell spawned
  desc: a shell ran
  condition: evt.type = execve and proc.name = bash
  output: "shell %proc.cmdline in pod=%k8s.pod.name uid=%k8s.pod.uid"
  priority: WARNING
)"}},
                                  opts);
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.to_string();
  return r.ruleset;
}

event::Event exec_event(std::uint64_t ts, std::uint32_t pid) {
  event::Event ev;
  ev.hdr.ts_ns = ts;
  ev.hdr.type = event::Type::kExec;
  ev.hdr.pid = ev.hdr.tid = pid;
  ev.hdr.ppid = 1;
  ev.hdr.comm = "bash";
  event::ExecData x;
  x.filename = "/bin/bash";
  x.exe = x.filename;
  x.args = {"bash", "-i"};
  ev.data = std::move(x);
  return ev;
}

std::string field(const event::Alert& a, const std::string& key) {
  for (const auto& [k, v] : a.output_fields) {
    if (k != key) continue;
    if (const auto* s = std::get_if<std::string>(&v)) return *s;
    return std::holds_alternative<std::monostate>(v) ? "<null>" : "<typed>";
  }
  return "<absent>";
}

class MetadataWaitTest : public ::testing::Test {
 protected:
  MetadataWaitTest() : st_(state::Config{.live = false}) {
    state::Process host;  // pid 100: a host process
    host.pid = 100;
    host.comm = "bash";
    st_.upsert_process(host);
    for (std::uint32_t pid : {200u, 201u, 202u}) {  // in container kCid of pod uid-7
      state::Process p;
      p.pid = pid;
      p.comm = "bash";
      p.container_id = kCid;
      st_.upsert_process(p);
    }
    state::Container c;
    c.id = kCid;
    c.runtime = "containerd";
    c.pod_uid = "uid-7";  // from the cgroup path: the pod itself is not known yet
    st_.upsert_container(c);
  }

  void start(MetadataWaitOptions opts) {
    wait_ = std::make_unique<MetadataWait>(
        opts, st_, [this](std::shared_ptr<const event::Alert> a) { out_.push_back(std::move(a)); },
        [this] { return now_; });
    pipe_ = std::make_unique<Pipeline>(Deps{st_, nullptr, "node-1", nullptr, wait_.get()}, compile());
  }
  void exec(std::uint32_t pid) {
    auto ev = exec_event(1'000 + now_, pid);
    pipe_->process(ev);
  }
  void pod_lands() {
    state::Pod pod;
    pod.uid = "uid-7";
    pod.name = "train-0";
    pod.ns = "ml";
    state::PodContainer pc;
    pc.name = "trainer";
    pc.id = kCid;
    pc.image = "ghcr.io/acme/train:1.4";
    pod.containers.push_back(pc);
    st_.upsert_pod(pod);
    wait_->pods_changed();  // what the pod feed does after it drained
  }

  state::State st_;
  std::uint64_t now_ = 5'000 * kMs;
  std::vector<std::shared_ptr<const event::Alert>> out_;
  std::unique_ptr<MetadataWait> wait_;
  std::unique_ptr<Pipeline> pipe_;
};

TEST_F(MetadataWaitTest, APodThatLands200msLaterIsNamedByTheAlertAfter200ms) {
  start({.wait = 500ms});
  exec(200);
  EXPECT_TRUE(out_.empty());  // parked: the pod is not known
  EXPECT_EQ(wait_->parked(), 1u);
  now_ += 100 * kMs;
  wait_->tick();
  EXPECT_TRUE(out_.empty());
  now_ += 100 * kMs;
  pod_lands();
  ASSERT_EQ(out_.size(), 1u);
  const event::Alert& a = *out_[0];
  EXPECT_EQ(a.output,
            "shell bash -i in pod=train-0 uid=uid-7 container_id=3f1c0d2e9a7b container_name=trainer "
            "container_image_repository=ghcr.io/acme/train container_image_tag=1.4 k8s_ns_name=ml k8s_meta=complete");
  EXPECT_EQ(field(a, "k8s.pod.name"), "train-0");
  EXPECT_EQ(field(a, "k8s.ns.name"), "ml");
  EXPECT_EQ(field(a, "container.name"), "trainer");
  EXPECT_EQ(field(a, "k8s.meta"), "complete");
  EXPECT_EQ(field(a, "team"), "gpu-ml");     // an extra field made of pod fields: rendered again
  EXPECT_EQ(field(a, "proc.name"), "bash");  // the event's own fields: as rendered at the event
  EXPECT_EQ(a.hostname, "node-1");
  EXPECT_EQ(wait_->parked(), 0u);
  const auto s = wait_->stats().snapshot();
  EXPECT_EQ(s.resolved, 1u);
  EXPECT_EQ(s.complete, 1u);
  EXPECT_EQ(s.delay_count, 1u);
  EXPECT_DOUBLE_EQ(s.delay_sum_s, 0.2);
  EXPECT_EQ(s.delay_buckets[5], 1u);  // (0.1, 0.25]
}

TEST_F(MetadataWaitTest, APodThatNeverLandsGoesOutAtTheDeadlineMarkedIncomplete) {
  start({.wait = 500ms});
  exec(200);
  now_ += 499 * kMs;
  wait_->tick();
  EXPECT_TRUE(out_.empty());
  now_ += 1 * kMs;
  wait_->tick();
  ASSERT_EQ(out_.size(), 1u);
  const event::Alert& a = *out_[0];
  EXPECT_EQ(a.output,
            "shell bash -i in pod=<NA> uid=uid-7 container_id=3f1c0d2e9a7b container_name=<NA> "
            "container_image_repository=<NA> container_image_tag=<NA> k8s_ns_name=<NA> k8s_meta=incomplete");
  EXPECT_EQ(field(a, "k8s.meta"), "incomplete");
  EXPECT_EQ(field(a, "k8s.pod.uid"), "uid-7");  // the cgroup's, at once
  EXPECT_EQ(field(a, "k8s.pod.name"), "<null>");
  const auto s = wait_->stats().snapshot();
  EXPECT_EQ(s.timed_out, 1u);
  EXPECT_EQ(s.incomplete, 1u);
  // The pod landing later changes nothing that went out.
  pod_lands();
  EXPECT_EQ(out_.size(), 1u);
}

TEST_F(MetadataWaitTest, AHostProcessAlertIsNotDelayedAndSaysHost) {
  start({.wait = 500ms});
  exec(100);
  ASSERT_EQ(out_.size(), 1u);
  EXPECT_EQ(field(*out_[0], "k8s.meta"), "host");
  EXPECT_NE(out_[0]->output.find(" k8s_meta=host"), std::string::npos);
  EXPECT_EQ(wait_->parked(), 0u);
  EXPECT_EQ(wait_->stats().snapshot().host, 1u);
}

TEST_F(MetadataWaitTest, AnAlertWhosePodIsKnownIsNotDelayed) {
  start({.wait = 500ms});
  pod_lands();
  exec(200);
  ASSERT_EQ(out_.size(), 1u);
  EXPECT_EQ(field(*out_[0], "k8s.meta"), "complete");
  EXPECT_EQ(field(*out_[0], "k8s.pod.name"), "train-0");
}

TEST_F(MetadataWaitTest, AWaitOfZeroPublishesAtOnceIncomplete) {
  start({.wait = 0ms});
  exec(200);
  ASSERT_EQ(out_.size(), 1u);
  EXPECT_EQ(field(*out_[0], "k8s.meta"), "incomplete");
  EXPECT_EQ(wait_->stats().snapshot().incomplete, 1u);
}

TEST_F(MetadataWaitTest, OverTheCapTheOldestGoesOutAtOnceAndIsCounted) {
  start({.wait = 500ms, .max_parked = 2});
  exec(200);
  now_ += 1 * kMs;
  exec(201);
  now_ += 1 * kMs;
  exec(202);  // the third: the first goes out
  ASSERT_EQ(out_.size(), 1u);
  EXPECT_EQ(out_[0]->time_ns, 1'000 + 5'000 * kMs);
  EXPECT_EQ(field(*out_[0], "k8s.meta"), "incomplete");
  EXPECT_EQ(wait_->parked(), 2u);
  EXPECT_EQ(wait_->stats().snapshot().evicted, 1u);
  pod_lands();  // the other two name the pod
  ASSERT_EQ(out_.size(), 3u);
  EXPECT_EQ(field(*out_[1], "k8s.pod.name"), "train-0");
  EXPECT_EQ(field(*out_[2], "k8s.pod.name"), "train-0");
}

TEST_F(MetadataWaitTest, ATickFindsAPodThatLandedWithoutTheFeed) {
  start({.wait = 500ms});
  exec(200);
  now_ += 50 * kMs;
  state::Pod pod;
  pod.uid = "uid-7";
  pod.name = "train-0";
  pod.ns = "ml";
  st_.upsert_pod(pod);  // from some other source than the pod watcher's feed
  wait_->tick();
  ASSERT_EQ(out_.size(), 1u);
  EXPECT_EQ(field(*out_[0], "k8s.pod.name"), "train-0");
  EXPECT_EQ(field(*out_[0], "k8s.meta"), "complete");
}

TEST_F(MetadataWaitTest, ShutdownFlushesEverythingParked) {
  start({.wait = 500ms});
  exec(200);
  exec(201);
  wait_->flush();
  ASSERT_EQ(out_.size(), 2u);
  EXPECT_EQ(wait_->parked(), 0u);
  EXPECT_EQ(wait_->stats().snapshot().flushed, 2u);
  EXPECT_EQ(field(*out_[0], "k8s.meta"), "incomplete");
}

}  // namespace
}  // namespace vigil::pipeline
