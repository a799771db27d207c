// What vigil says about a part that cannot run (engine/agent/parts.h): the
// reason a file cannot be opened, the one log line per part, and the refusal
// to start only when no event source runs.
#include "engine/agent/parts.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

namespace vigil::agent {
namespace {

using util::Cap;
using util::CapSet;

struct Logged {
  std::ostringstream text;
  std::shared_ptr<spdlog::logger> log;
  Logged() {
    log = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_st>(text));
    log->set_pattern("%l %v");
  }
  std::string str() {
    log->flush();
    return text.str();
  }
};

TEST(Parts, AMissingFileNamesTheMount) {
  EXPECT_EQ(open_failure("/dev/kmsg", ENOENT, "mount the host's /dev/kmsg", CapSet(), {Cap::kSyslog}),
            "cannot open /dev/kmsg (ENOENT): mount the host's /dev/kmsg");
  EXPECT_EQ(open_failure("/x/gpus", ENOTDIR, "mount it", CapSet(), {}), "cannot open /x/gpus (ENOTDIR): mount it");
}

TEST(Parts, ARefusedOpenNamesTheMissingCapability) {
  EXPECT_EQ(open_failure("/dev/kmsg", EPERM, "mount", CapSet(), {Cap::kSyslog}),
            "cannot open /dev/kmsg (EPERM): needs CAP_SYSLOG");
  // With the capability there, the kernel's reason is all there is to say.
  EXPECT_EQ(open_failure("/dev/kmsg", EACCES, "mount", CapSet::of({Cap::kSyslog}), {Cap::kSyslog}),
            "cannot open /dev/kmsg (EACCES): Permission denied");
  EXPECT_EQ(open_failure("/s.sock", ECONNREFUSED, "mount", CapSet(), {}),
            "cannot open /s.sock (ECONNREFUSED): Connection refused");
}

TEST(Parts, ProcfsNeedsPtraceAndDacReadSearch) {
  EXPECT_EQ(procfs_off(CapSet::of({Cap::kSysPtrace, Cap::kDacReadSearch})), "");
  EXPECT_EQ(procfs_off(CapSet::of({Cap::kDacReadSearch})),
            "cannot read /proc/<pid>/exe, cwd and fd links of other processes without CAP_SYS_PTRACE");
  EXPECT_EQ(procfs_off(CapSet::of({Cap::kSysPtrace})),
            "cannot read /proc/<pid>/fd lists and environ of other users' processes without CAP_DAC_READ_SEARCH");
  EXPECT_NE(procfs_off(CapSet()).find("CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH"), std::string::npos);
}

TEST(Parts, APartOffIsOneWarningWithWhatIsLost) {
  Logged l;
  runtime::Parts parts;
  record_part(parts, *l.log, "kmsg", false, "cannot open /dev/kmsg (ENOENT): mount the host's /dev/kmsg");
  record_part(parts, *l.log, "bpf", true);
  EXPECT_EQ(l.str(),
            "warning part kmsg off: cannot open /dev/kmsg (ENOENT): mount the host's /dev/kmsg; GPU Xid errors "
            "from the kernel log are not seen\n");
  auto snap = parts.snapshot();
  ASSERT_EQ(snap.size(), 2u);
  EXPECT_EQ(snap[0].name, "kmsg");
  EXPECT_FALSE(snap[0].on);
  EXPECT_EQ(snap[0].needs, "CAP_SYSLOG (kernel.dmesg_restrict=1); /dev/kmsg");
  EXPECT_EQ(snap[0].why_off, "cannot open /dev/kmsg (ENOENT): mount the host's /dev/kmsg");
  EXPECT_TRUE(snap[1].on);
  EXPECT_EQ(snap[1].why_off, "");
  EXPECT_EQ(parts_off(snap), "kmsg");
}

TEST(Parts, APartAPlainHostHasNoUseForIsSaidAtInfo) {
  Logged l;
  runtime::Parts parts;
  record_part(parts, *l.log, "k8s", false, "no Kubernetes API", /*warn=*/false);
  EXPECT_EQ(l.str(), "info part k8s off: no Kubernetes API; k8s.* fields stay empty\n");
}

TEST(Parts, EveryPartHasWhatItNeedsAndWhatIsLost) {
  for (const char* name : {"bpf", "bpf_cgroup", "kmsg", "procfs", "gpu_inventory", "k8s", "pod_resources", "cri"}) {
    const PartInfo* info = part_info(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_FALSE(info->needs.empty()) << name;
    EXPECT_FALSE(info->without.empty()) << name;
  }
  EXPECT_EQ(part_info("plugin:nvml"), nullptr);
}

// docs/install.md's "Privileges" table has a row for every part vigil reports
// (the tests run from the repository root).
TEST(Parts, TheInstallDocHasARowPerPart) {
  std::ifstream in("docs/install.md");
  ASSERT_TRUE(in) << "docs/install.md not found from " << std::filesystem::current_path();
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const auto begin = doc.find("<!-- capability-table:begin -->");
  const auto end = doc.find("<!-- capability-table:end -->");
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  const std::string table = doc.substr(begin, end - begin);
  for (const char* name : {"bpf", "bpf_cgroup", "kmsg", "procfs", "gpu_inventory", "k8s", "pod_resources"}) {
    ASSERT_NE(part_info(name), nullptr) << name;
    EXPECT_NE(table.find(std::string("\n| `") + name + "`"), std::string::npos) << "no row for " << name;
  }
}

TEST(Parts, OneEventSourceIsEnoughToRun) {
  using runtime::PartState;
  EXPECT_TRUE(require_an_event_source({{"bpf", false, "", "no CAP_BPF"}, {"kmsg", true, "", ""}}));
  EXPECT_TRUE(require_an_event_source({{"bpf", false, "", "x"}, {"plugin:nvml", true, "", ""}}));
  // Parts that are no event source do not count.
  Status none = require_an_event_source({{"bpf", false, "", "missing CAP_PERFMON"},
                                         {"procfs", true, "", ""},
                                         {"kmsg", false, "", "cannot open /dev/kmsg (ENOENT)"}});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, Error::Kind::kRuntime);
  EXPECT_EQ(none.error().message,
            "no event source can run, so vigil would see nothing: part bpf off: missing CAP_PERFMON; part kmsg "
            "off: cannot open /dev/kmsg (ENOENT)");
  EXPECT_FALSE(require_an_event_source({}));
}

}  // namespace
}  // namespace vigil::agent
