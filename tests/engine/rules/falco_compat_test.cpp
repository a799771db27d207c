// Falco's stock rule files load with zero errors, and the number of rules
// that load does not go down (docs/falco-compatibility.md has the lists).
// The files live outside the repository (../shared/falco-rules, or
// $VIGIL_FALCO_RULES_DIR); the tests skip with a message when they are absent.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "engine/rules/ruleset.h"
#include "tests/engine/rules/test_util.h"

namespace vigil::rules {
namespace {

std::string falco_dir() {
  const char* env = std::getenv("VIGIL_FALCO_RULES_DIR");
  return env ? env : "../shared/falco-rules";
}

struct Counts {
  LoadResult r;
  std::set<std::string> skipped;  // rule names with a W003/W004 warning
};

Counts load(const std::string& file) {
  Counts c;
  c.r = load_rules({falco_dir() + "/" + file}, LoadOptions{});
  for (const auto& d : c.r.diagnostics) {
    if (d.code == "W003" || d.code == "W004") c.skipped.insert(d.item);
  }
  return c;
}

#define REQUIRE_FALCO_FILE(f)                                                                             \
  if (!std::filesystem::exists(falco_dir() + "/" + (f))) {                                                \
    GTEST_SKIP() << "Falco's stock rules not found in " << falco_dir() << " (set VIGIL_FALCO_RULES_DIR)"; \
  }

TEST(FalcoCompat, StableRules) {
  REQUIRE_FALCO_FILE("falco_rules.yaml");
  auto c = load("falco_rules.yaml");
  EXPECT_EQ(c.r.errors, 0u);
  EXPECT_TRUE(c.r.ruleset);
  // Every stable rule loads, and none is told it can never fire.
  EXPECT_EQ(c.r.loaded, 25u);
  EXPECT_EQ(c.r.skipped, 0u);
  EXPECT_EQ(c.skipped, std::set<std::string>{});
  for (const auto& d : c.r.diagnostics) {
    EXPECT_NE(d.code, "W015") << d.to_string();
    EXPECT_NE(d.code, "W012") << d.to_string();  // every output field has a value
  }
}

TEST(FalcoCompat, IncubatingRules) {
  REQUIRE_FALCO_FILE("falco-incubating_rules.yaml");
  auto c = load("falco-incubating_rules.yaml");
  EXPECT_EQ(c.r.errors, 0u);
  EXPECT_GE(c.r.loaded, 29u);
  EXPECT_EQ(c.r.loaded + c.r.skipped, 31u);
  for (const auto& d : c.r.diagnostics) {
    EXPECT_NE(d.code, "W015") << d.to_string();
    EXPECT_NE(d.code, "W012") << d.to_string();
  }
}

TEST(FalcoCompat, SandboxRules) {
  REQUIRE_FALCO_FILE("falco-sandbox_rules.yaml");
  auto c = load("falco-sandbox_rules.yaml");
  EXPECT_EQ(c.r.errors, 0u);
  EXPECT_GE(c.r.loaded, 35u);
  EXPECT_EQ(c.r.loaded + c.r.skipped, 37u);
  for (const auto& d : c.r.diagnostics) {
    EXPECT_NE(d.code, "W015") << d.to_string();
    EXPECT_NE(d.code, "W012") << d.to_string();
  }
}

TEST(FalcoCompat, StableRulesFireOnVigilEvents) {
  REQUIRE_FALCO_FILE("falco_rules.yaml");
  auto c = load("falco_rules.yaml");
  ASSERT_TRUE(c.r.ruleset);
  // The compiled stock rules watch what vigil collects.
  auto types = c.r.ruleset->event_types();
  EXPECT_TRUE(types.count(event::Type::kExec));
  EXPECT_TRUE(types.count(event::Type::kOpen));
  EXPECT_TRUE(types.count(event::Type::kConnect));
  for (auto t : {event::Type::kSymlink, event::Type::kLink, event::Type::kPtrace, event::Type::kSocket,
                 event::Type::kDup, event::Type::kModule}) {
    EXPECT_TRUE(types.count(t)) << event::type_name(t);
  }
}

TEST(FalcoCompat, TerminalShellInContainerFires) {
  REQUIRE_FALCO_FILE("falco_rules.yaml");
  auto c = load("falco_rules.yaml");
  ASSERT_TRUE(c.r.ruleset);
  testing::World w;
  w.proc.comm = "bash";
  w.proc.exe = "bash";
  w.proc.exepath = "/bin/bash";
  w.proc.args = {};
  w.proc.tty = 34816;
  w.proc.ppid = 1;  // started by the runtime's shim: a container entrypoint
  w.ev.hdr.ppid = 1;
  w.exec();
  std::vector<event::Alert> out;
  c.r.ruleset->evaluate(w.ctx(), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].rule, "Terminal shell in container");
  EXPECT_EQ(out[0].priority, event::Priority::kNotice);
  EXPECT_NE(out[0].output.find("process=bash"), std::string::npos) << out[0].output;
  // Without a terminal it does not fire.
  w.proc.tty = 0;
  out.clear();
  c.r.ruleset->evaluate(w.ctx(), out);
  EXPECT_TRUE(out.empty());
}

// The stock rules that need the events and fields added with the event
// schema fire on what they describe, and print Falco's argument names.
class FalcoRules : public ::testing::Test {
 protected:
  explicit FalcoRules(const char* file) : file_(file) {}
  void SetUp() override {
    if (!std::filesystem::exists(falco_dir() + "/" + file_)) GTEST_SKIP() << "no " << file_ << " in " << falco_dir();
    c_ = load(file_);
    ASSERT_TRUE(c_.r.ruleset);
  }
  std::vector<std::string> fired() {
    std::vector<event::Alert> out;
    c_.r.ruleset->evaluate(w.ctx(), out);
    std::vector<std::string> names;
    for (const auto& a : out) {
      names.push_back(a.rule);
      outputs.push_back(a.output);
    }
    return names;
  }
  std::string output() const { return outputs.empty() ? "" : outputs.back(); }
  testing::World w;
  std::vector<std::string> outputs;

 private:
  std::string file_;
  Counts c_;
};
class FalcoStable : public FalcoRules {
 protected:
  FalcoStable() : FalcoRules("falco_rules.yaml") {}
};
class FalcoIncubating : public FalcoRules {
 protected:
  FalcoIncubating() : FalcoRules("falco-incubating_rules.yaml") {}
};
using Names = std::vector<std::string>;

TEST_F(FalcoStable, SymlinkAndHardlinkOverSensitiveFiles) {
  w.ev.hdr.type = event::Type::kSymlink;
  event::FileOpData d;
  d.syscall = event::Syscall::kSymlink;
  d.path = "/etc/shadow";
  d.path2 = "/tmp/s";
  w.ev.data = d;
  EXPECT_EQ(fired(), Names{"Create Symlink Over Sensitive Files"});
  EXPECT_NE(output().find("target=/etc/shadow linkpath=/tmp/s evt_type=symlink"), std::string::npos) << output();
  d.path = "/tmp/harmless";
  w.ev.data = d;
  EXPECT_EQ(fired(), Names{});
  w.ev.hdr.type = event::Type::kLink;
  d.syscall = event::Syscall::kLinkat;
  d.path = "/etc/shadow";
  w.ev.data = d;
  EXPECT_EQ(fired(), Names{"Create Hardlink Over Sensitive Files"});
  EXPECT_NE(output().find("target=/etc/shadow linkpath=/tmp/s evt_type=linkat"), std::string::npos) << output();
}

TEST_F(FalcoStable, PtraceAttachAndAntiDebug) {
  w.ev.hdr.type = event::Type::kPtrace;
  w.ev.data = event::PtraceData{16 /* PTRACE_ATTACH */, 4242, 0, 0};
  EXPECT_EQ(fired(), Names{"PTRACE attached to process"});
  w.ev.data = event::PtraceData{0 /* PTRACE_TRACEME */, 0, 0, 0};
  EXPECT_EQ(fired(), Names{"PTRACE anti-debug attempt"});
  w.ev.data = event::PtraceData{3 /* PTRACE_PEEKUSR */, 4242, 0, 0};
  EXPECT_EQ(fired(), Names{});
}

TEST_F(FalcoStable, PacketSocketInContainer) {
  w.ev.hdr.type = event::Type::kSocket;
  w.ev.data = event::SocketData{17 /* AF_PACKET */, 3 /* SOCK_RAW */, 768, 5};
  EXPECT_EQ(fired(), Names{"Packet socket created in container"});
  w.ev.data = event::SocketData{2 /* AF_INET */, 1, 0, 5};
  EXPECT_EQ(fired(), Names{});
  w.in_container = false;
  w.proc.container_id.clear();
  w.ev.data = event::SocketData{17, 3, 768, 5};
  EXPECT_EQ(fired(), Names{});
}

TEST_F(FalcoStable, StdoutRedirectedToANetworkConnection) {
  w.ev.hdr.type = event::Type::kDup;
  event::DupData d;
  d.syscall = event::Syscall::kDup2;
  d.oldfd = 3;
  d.result = 1;
  d.family = AF_INET;
  d.proto = event::L4::kTcp;
  d.saddr = testing::ip("10.1.2.3");
  d.sport = 40000;
  d.daddr = testing::ip("203.0.113.9");
  d.dport = 4444;
  w.ev.data = d;
  EXPECT_EQ(fired(), Names{"Redirect STDOUT/STDIN to Network Connection in Container"});
  d.result = 7;  // not a standard stream
  w.ev.data = d;
  EXPECT_EQ(fired(), Names{});
  d.result = 0;
  d.family = AF_UNIX;  // a unix socket is no network connection
  w.ev.data = d;
  EXPECT_EQ(fired(), Names{});
}

TEST_F(FalcoStable, KernelModuleWithSysModuleInAContainer) {
  w.ev.hdr.type = event::Type::kModule;
  event::ModuleData d;
  d.syscall = event::Syscall::kFinitModule;
  d.fd = 3;
  w.ev.data = d;
  w.proc.cap_effective = std::uint64_t{1} << 16;  // CAP_SYS_MODULE
  EXPECT_EQ(fired(), Names{"Linux Kernel Module Injection Detected"});
  w.proc.cap_effective = std::uint64_t{1} << 21;  // CAP_SYS_ADMIN only
  EXPECT_EQ(fired(), Names{});
}

TEST_F(FalcoStable, ReleaseAgentWriteWithCapabilities) {
  w.open("/sys/fs/cgroup/release_agent", 1 /* O_WRONLY */);
  // A non-root user needs CAP_DAC_OVERRIDE besides CAP_SYS_ADMIN.
  w.proc.cap_effective = std::uint64_t{1} << 21;  // CAP_SYS_ADMIN
  EXPECT_EQ(fired(), Names{});
  w.proc.cap_effective |= std::uint64_t{1} << 1;  // CAP_DAC_OVERRIDE
  EXPECT_EQ(fired(), Names{"Detect release_agent File Container Escapes"});
  EXPECT_NE(output().find("cap_effective=CAP_DAC_OVERRIDE CAP_SYS_ADMIN"), std::string::npos) << output();
  w.proc.cap_effective = 0;
  EXPECT_EQ(fired(), Names{});
}

TEST_F(FalcoStable, FilelessAndUpperLayerExecution) {
  w.proc.start_ts_ns = 1'795'687'260'000'000'000;
  w.st.procs[50].sid = 50;  // the parent bash leads the session
  w.pod.containers[0].started_at_ns = 1'795'687'200'000'000'000;
  w.st.users[1000] = "trainer";
  w.exec();
  auto& d = std::get<event::ExecData>(w.ev.data);
  d.sid = 50;
  d.exe_from_memfd = true;
  EXPECT_EQ(fired(), Names{"Fileless execution via memfd_create"});
  // The output fields Falco fills print values, not <NA>.
  EXPECT_NE(output().find("container_start_ts=1795687200000000000 "), std::string::npos) << output();
  EXPECT_NE(output().find("proc_sname=bash "), std::string::npos) << output();
  d.exe_from_memfd = false;
  d.exe_upper_layer = true;
  d.exe_ino = 393224;
  d.exe_ctime_ns = 1'795'687'259'000'000'000;  // written a second before the fork
  d.exe_mtime_ns = 1'795'687'258'500'000'000;
  EXPECT_EQ(fired(), Names{"Drop and execute new binary in container"});
  EXPECT_NE(output().find("proc_sname=bash gparent=containerd-shim proc_exe_ino_ctime=1795687259000000000 "
                          "proc_exe_ino_mtime=1795687258500000000 "
                          "proc_exe_ino_ctime_duration_proc_start=1000000000 proc_cwd=/workspace "
                          "container_start_ts=1795687200000000000 "),
            std::string::npos)
      << output();
  EXPECT_EQ(output().find("<NA>"), std::string::npos) << output();
  d.exe_upper_layer = false;
  EXPECT_EQ(fired(), Names{});
}

TEST_F(FalcoIncubating, NamespaceChangesAndSetuid) {
  w.ev.hdr.type = event::Type::kSetns;
  w.ev.data = event::NsData{4, 0x40000000, 0};
  EXPECT_EQ(fired(), Names{"Change thread namespace"});
  // unshare in a container without CAP_SYS_ADMIN permitted
  w.ev.hdr.type = event::Type::kUnshare;
  w.ev.data = event::NsData{-1, 0x10000000, 0};
  w.proc.cap_permitted = 0;
  EXPECT_EQ(fired(), Names{"Change namespace privileges via unshare"});
  w.proc.cap_permitted = std::uint64_t{1} << 21;
  EXPECT_EQ(fired(), Names{});
  // setuid by a non-root user on the host
  w.in_container = false;
  w.proc.container_id.clear();
  w.ev.hdr.type = event::Type::kSetuid;
  w.ev.data = event::CredData{event::Syscall::kSetuid, -1, 0, -1, -1};
  EXPECT_EQ(fired(), Names{"Non sudo setuid"});
}

}  // namespace
}  // namespace vigil::rules
