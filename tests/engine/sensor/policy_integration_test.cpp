// The exec program's kill of a program file denied by identity (pol_exe),
// against the real kernel, below the agent: which file, which change time,
// which cgroup, and what a reload and a full map do to it. The prevention
// scenario runs the same path end to end through `vigil run`.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "bpf/shared/events.h"
#include "engine/ident/build_id.h"
#include "tests/engine/sensor/sensor_test_util.h"
#include "tests/support/cgroup.h"

namespace vigil::sensor {
namespace {

namespace fs = std::filesystem;
using support::PodCgroup;

constexpr const char* kPodUid = "5e1f0000-aaaa-4bbb-8ccc-0000000000e5";
std::string container_id() { return std::string(64, 'e').replace(0, 8, "0e5e0e5e"); }

// One enforced exec rule that denies the files pol_exe holds for slot 0,
// under `ids` (the identities the rule lists; a reload that changes them
// changes the tables).
policy::Tables exe_rule(const std::string& id) {
  policy::Tables t;
  t.slots.push_back({.hook = policy::Hook::kExec, .flags = VG_POLR_EXE});
  t.exe_ids[id] = 1;
  return t;
}

// The program file as the exec record reports it, denied for slot 0.
policy::ExeEntry entry_for(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return {};
  return {.ino = st.st_ino,
          .dev = VG_MKDEV(major(st.st_dev), minor(st.st_dev)),
          .ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec,
          .slots = 1};
}

class ExeDenial : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_ROOT();
    ASSERT_TRUE(dir_.ok());
    prog_ = dir_.path() + "/denied-prog";
    fs::copy_file("/bin/true", prog_);
    fs::permissions(prog_, fs::perms::owner_all);
    cg_ = std::make_unique<PodCgroup>(kPodUid, container_id(), support::QosClass::kBestEffort);
    ASSERT_TRUE(cg_->ok()) << "could not create a kubelet-style cgroup under the cgroup v2 root: " << cg_->error();
    cfg_.event_types = {Type::kExec};
    cfg_.policy = exe_rule("sha256:" + std::string(64, 'a'));
    sensor_ = open_sensor(cfg_);
    ASSERT_TRUE(sensor_);
    rec_ = std::make_unique<Recorder>(*sensor_);
    ASSERT_TRUE(sensor_->set_policy_cgroup(cg_->id(), &in_pod_));
  }

  // Runs the program (in the pod's cgroup or on the host) and says how it
  // ended, and whether its exec record says the kernel killed it.
  struct Run {
    std::string how;
    bool killed_at_exec = false;
  };
  Run run(bool in_pod) { return run(in_pod, prog_); }
  Run run(bool in_pod, const std::string& path) {
    Child c = Child::spawn({path}, {.cgroup = in_pod ? cg_->scope() : std::string{}});
    Run r{Child::what(c.wait(std::chrono::seconds(10))), false};
    auto ev = rec_->wait_for(
        [&](const Event& e) { return e.hdr.type == Type::kExec && e.hdr.pid == static_cast<std::uint32_t>(c.pid()); });
    if (!ev) {
      r.how += " (no exec record)";
      return r;
    }
    r.killed_at_exec = ev->as<event::ExecData>()->killed_at_exec;
    return r;
  }

  // Reloads with one rule denying `id`, and makes the container's entry again
  // (a reload that changes the tables removes it).
  void deny(const std::string& id) {
    Config next = cfg_;
    next.policy = exe_rule(id);
    ASSERT_TRUE(sensor_->update(next));
    ASSERT_TRUE(sensor_->set_policy_cgroup(cg_->id(), &in_pod_));
  }

  // A copy of `from` in the test's directory, executable.
  std::string copy_of(const std::string& from, const std::string& name) {
    const std::string to = dir_.path() + "/" + name;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    fs::permissions(to, fs::perms::owner_all);
    return to;
  }

  support::TempDir dir_{"vigil-pol-exe"};
  std::string prog_;
  std::unique_ptr<PodCgroup> cg_;
  Config cfg_;
  std::unique_ptr<Sensor> sensor_;
  std::unique_ptr<Recorder> rec_;
  policy::CgroupEntry in_pod_{.slots = 1};
};

const std::string kKilled = Child::what(SIGKILL);  // how a SIGKILLed child reads

TEST_F(ExeDenial, ADeniedFileIsKilledAtExecInThePodAndNeverOnTheHost) {
  if (HasFatalFailure() || IsSkipped()) return;
  // Not identified yet: it runs.
  Run before = run(true);
  EXPECT_EQ(before.how, Child::what(0));
  EXPECT_FALSE(before.killed_at_exec);

  ASSERT_TRUE(sensor_->add_policy_exe(entry_for(prog_)));
  Run in_pod = run(true);
  EXPECT_EQ(in_pod.how, kKilled);
  EXPECT_TRUE(in_pod.killed_at_exec) << "the exec record must say the kernel killed it";
  // The host is never refused, whatever the file.
  Run host = run(false);
  EXPECT_EQ(host.how, Child::what(0));
  EXPECT_FALSE(host.killed_at_exec);
  // A copy is another inode: another program until it is identified.
  const std::string copy = dir_.path() + "/copy";
  fs::copy_file(prog_, copy);
  fs::permissions(copy, fs::perms::owner_all);
  Child c = Child::spawn({copy}, {.cgroup = cg_->scope()});
  EXPECT_EQ(Child::what(c.wait(std::chrono::seconds(10))), Child::what(0));
}

TEST_F(ExeDenial, AFileChangedSinceItWasIdentifiedRunsUntilIdentifiedAgain) {
  if (HasFatalFailure() || IsSkipped()) return;
  ASSERT_TRUE(sensor_->add_policy_exe(entry_for(prog_)));
  ASSERT_EQ(run(true).how, kKilled);
  // Written since (here its mode, which moves the change time as a write
  // does): the entry is for what the file was.
  const policy::ExeEntry old = entry_for(prog_);
  for (int i = 0; i < 50 && entry_for(prog_).ctime_ns == old.ctime_ns; ++i) {
    fs::permissions(prog_, i % 2 ? fs::perms::owner_all : fs::perms::owner_read | fs::perms::owner_exec);
    usleep(1000);
  }
  fs::permissions(prog_, fs::perms::owner_all);
  ASSERT_NE(entry_for(prog_).ctime_ns, old.ctime_ns);
  Run changed = run(true);
  EXPECT_EQ(changed.how, Child::what(0));
  EXPECT_FALSE(changed.killed_at_exec);
  // Identified again, as it is now.
  ASSERT_TRUE(sensor_->add_policy_exe(entry_for(prog_)));
  EXPECT_EQ(run(true).how, kKilled);
  // An entry whose change time is not the file's (a forged or stale one)
  // replaces it and kills nothing.
  policy::ExeEntry forged = entry_for(prog_);
  forged.ctime_ns += 1;
  ASSERT_TRUE(sensor_->add_policy_exe(forged));
  EXPECT_EQ(run(true).how, Child::what(0));
}

TEST_F(ExeDenial, AReloadThatMovesTheSlotsForgetsTheDeniedFiles) {
  if (HasFatalFailure() || IsSkipped()) return;
  ASSERT_TRUE(sensor_->add_policy_exe(entry_for(prog_)));
  ASSERT_EQ(run(true).how, kKilled);
  // The same tables again: nothing moved, the file stays denied.
  ASSERT_TRUE(sensor_->update(cfg_));
  ASSERT_EQ(run(true).how, kKilled);
  // Other identities: the entries named slots of the old tables and go, the
  // containers' entries with them. With the container's entry made again
  // for the new tables, the file runs until it is identified again.
  Config next = cfg_;
  next.policy = exe_rule("buildid:" + std::string(40, 'b'));
  ASSERT_TRUE(sensor_->update(next));
  ASSERT_TRUE(sensor_->set_policy_cgroup(cg_->id(), &in_pod_));
  Run after = run(true);
  EXPECT_EQ(after.how, Child::what(0));
  EXPECT_FALSE(after.killed_at_exec);
  ASSERT_TRUE(sensor_->add_policy_exe(entry_for(prog_)));
  EXPECT_EQ(run(true).how, kKilled);
}

TEST_F(ExeDenial, AFullMapSaysSoAndRefusesNothingMore) {
  if (HasFatalFailure() || IsSkipped()) return;
  policy::ExeEntry filler = entry_for(prog_);
  filler.dev = VG_MKDEV(0, 0xfffff);  // a device no file here is on
  std::size_t added = 0;
  for (; added < policy::kMaxExes; ++added) {
    filler.ino = 1'000'000 + added;
    ASSERT_TRUE(sensor_->add_policy_exe(filler)) << "entry " << added << " of " << policy::kMaxExes;
  }
  Status full = sensor_->add_policy_exe(entry_for(prog_));
  ASSERT_FALSE(full) << "entry " << policy::kMaxExes + 1 << " must be an error";
  EXPECT_NE(full.error().message.find("pol_exe"), std::string::npos) << full.error().message;
  // The file it could not add runs (a full map refuses nothing).
  EXPECT_EQ(run(true).how, Child::what(0));
  // An entry already there is still updated in place.
  filler.ino = 1'000'000;
  EXPECT_TRUE(sensor_->add_policy_exe(filler));
}

std::string build_id_of(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  std::string id = ::fstat(fd, &st) == 0 ? ident::read_build_id_fd(fd, st.st_size) : "";
  ::close(fd);
  return id;
}

TEST_F(ExeDenial, AStaticProgramDeniedByBuildIdIsKilledAtTheFirstExecOfAnyCopy) {
  if (HasFatalFailure() || IsSkipped()) return;
  const std::string miner = copy_of(VIGIL_TEST_STATIC_PROG, "miner");
  const std::string id = build_id_of(miner);
  ASSERT_EQ(id.size(), 40u) << "the static test program has no SHA-1 build-id: '" << id << "'";
  ASSERT_EQ(run(true, miner).how, Child::what(0)) << "before any rule names it";
  deny("buildid:" + id);
  // Never identified by user space, never in pol_exe: the kernel reads its
  // build-id at exec.
  Run first = run(true, miner);
  EXPECT_EQ(first.how, kKilled);
  EXPECT_TRUE(first.killed_at_exec);
  // A renamed copy is another inode with the same build-id.
  Run renamed = run(true, copy_of(miner, "kworker"));
  EXPECT_EQ(renamed.how, kKilled);
  EXPECT_TRUE(renamed.killed_at_exec);
  // Never on the host; never a program with another build-id.
  EXPECT_EQ(run(false, miner).how, Child::what(0));
  EXPECT_EQ(run(true).how, Child::what(0));
  // A reload that drops the build-id lets it run.
  deny("buildid:" + std::string(40, 'c'));
  EXPECT_EQ(run(true, miner).how, Child::what(0));
}

TEST_F(ExeDenial, AProgramThatStartsInItsInterpreterIsNotJudgedByTheInterpretersBuildId) {
  if (HasFatalFailure() || IsSkipped()) return;
  // The dynamic program (a copy of /bin/true) starts in ld.so: the build-id
  // at its first instruction is ld.so's, which must not stand for its own.
  std::error_code ec;
  const fs::path ldso = fs::canonical("/lib64/ld-linux-x86-64.so.2", ec);
  if (ec) GTEST_SKIP() << "no x86-64 dynamic loader here";
  const std::string ldso_id = build_id_of(ldso);
  ASSERT_FALSE(ldso_id.empty());
  deny("buildid:" + ldso_id);
  Run r = run(true);
  EXPECT_EQ(r.how, Child::what(0));
  EXPECT_FALSE(r.killed_at_exec);
}

}  // namespace
}  // namespace vigil::sensor
