// The field catalogue and its helpers: every field documented, names unique,
// argument forms, CIDR and glob helpers, bounded arena.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "engine/event/schema.h"
#include "engine/rules/ast.h"
#include "engine/rules/compiler.h"
#include "engine/rules/fields.h"
#include "engine/rules/ruleset.h"
#include "tests/engine/rules/test_util.h"

namespace vigil::rules {
namespace {

TEST(FieldCatalog, NamesUniqueAndDescribed) {
  std::set<std::string_view> names;
  for (const auto& f : FieldCatalog::builtin().fields()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_FALSE(f.description.empty()) << f.name;
    EXPECT_TRUE(f.events.mask.any()) << f.name;
    EXPECT_NE(f.fn, nullptr) << f.name;
  }
  EXPECT_GT(names.size(), 100u);
}

TEST(FieldCatalog, DocsListEveryField) {
  std::ifstream in("docs/fields.md");
  ASSERT_TRUE(in) << "docs/fields.md (tests run from the repository root)";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  for (const auto& f : FieldCatalog::builtin().fields()) {
    std::string name(f.name);
    if (f.arg == ArgMode::kRequiredKey || f.arg == ArgMode::kOptionalKey) name += "[KEY]";
    else if (f.arg != ArgMode::kNone) name += "[N]";
    EXPECT_NE(doc.find("| `" + name + "` | " + std::string(field_type_name(f.type)) + " |"), std::string::npos)
        << name << " is missing from docs/fields.md (regenerate it from `vigil fields --json`)";
  }
}

TEST(FieldCatalog, ResolveForms) {
  const auto& c = FieldCatalog::builtin();
  FieldInst fi;
  std::string err;
  bool unknown = false;
  ASSERT_TRUE(c.resolve("k8s.pod.label.app", false, "", fi, err, unknown));
  EXPECT_EQ(fi.arg, "app");
  ASSERT_TRUE(c.resolve("k8s.pod.label", true, "app.kubernetes.io/name", fi, err, unknown));
  EXPECT_EQ(fi.arg, "app.kubernetes.io/name");
  EXPECT_FALSE(c.resolve("k8s.pod.label", false, "", fi, err, unknown));
  EXPECT_FALSE(unknown);
  ASSERT_TRUE(c.resolve("evt.arg.request", false, "", fi, err, unknown));
  EXPECT_EQ(fi.def->name, "evt.arg");
  ASSERT_TRUE(c.resolve("proc.aname", true, "3", fi, err, unknown));
  EXPECT_EQ(fi.index, 3);
  EXPECT_FALSE(c.resolve("proc.aname", true, "99", fi, err, unknown));
  EXPECT_FALSE(c.resolve("ka.verb", false, "", fi, err, unknown));
  EXPECT_TRUE(unknown);
  EXPECT_EQ(err, "unknown field 'ka.verb'");
}

TEST(FieldHelpers, Cidr) {
  Cidr c;
  event::IpAddr a;
  ASSERT_TRUE(parse_cidr("10.0.0.0/8", c));
  ASSERT_TRUE(parse_ip("10.255.1.1", a));
  EXPECT_TRUE(c.contains(a));
  ASSERT_TRUE(parse_ip("11.0.0.1", a));
  EXPECT_FALSE(c.contains(a));
  ASSERT_TRUE(parse_cidr("172.16.0.0/12", c));
  ASSERT_TRUE(parse_ip("172.31.255.255", a));
  EXPECT_TRUE(c.contains(a));
  ASSERT_TRUE(parse_ip("172.32.0.0", a));
  EXPECT_FALSE(c.contains(a));
  ASSERT_TRUE(parse_cidr("fd00::/8", c));
  ASSERT_TRUE(parse_ip("fd12::1", a));
  EXPECT_TRUE(c.contains(a));
  ASSERT_TRUE(parse_ip("10.0.0.1", a));
  EXPECT_FALSE(c.contains(a));  // families differ
  ASSERT_TRUE(parse_cidr("0.0.0.0/0", c));
  EXPECT_TRUE(c.contains(a));
  EXPECT_FALSE(parse_cidr("10.0.0.0/", c));
  EXPECT_FALSE(parse_cidr("10.0.0.0/40", c));
  EXPECT_FALSE(parse_cidr("nonsense", c));
  EXPECT_FALSE(parse_cidr(std::string(200, '1'), c));
}

TEST(FieldHelpers, Glob) {
  EXPECT_TRUE(glob_match("*", "", false));
  EXPECT_TRUE(glob_match("/proc/*/environ", "/proc/1/environ", false));
  EXPECT_TRUE(glob_match("/proc/*/environ", "/proc/1/task/2/environ", false));  // * spans '/'
  EXPECT_FALSE(glob_match("/proc/*/environ", "/proc/1/environx", false));
  EXPECT_TRUE(glob_match("a?c", "abc", false));
  EXPECT_FALSE(glob_match("a?c", "ac", false));
  EXPECT_TRUE(glob_match("[a-c]x", "bx", false));
  EXPECT_FALSE(glob_match("[!a-c]x", "bx", false));
  EXPECT_TRUE(glob_match("\\*", "*", false));
  EXPECT_TRUE(glob_match("A*", "abc", true));
  EXPECT_TRUE(glob_match("*a*a*a*a*a*b", std::string(200, 'a') + "b", false));
  EXPECT_FALSE(glob_match("*a*a*a*a*a*b", std::string(200, 'a'), false));
}

TEST(FieldHelpers, ArenaTruncatesWhenFull) {
  auto a = std::make_unique<Arena>();
  std::string big(Arena::kSize + 100, 'x');
  auto v = a->put(big);
  EXPECT_EQ(v.size(), Arena::kSize);
  auto w = a->put("more");
  EXPECT_EQ(w.size(), 0u);
  a->reset();
  EXPECT_EQ(a->put("ok"), "ok");
}

TEST(FieldHelpers, EvtTypeNames) {
  bool known = false;
  EXPECT_EQ(evt_type_mask("execveat", known), event::TypeMask(event::Type::kExec));
  EXPECT_TRUE(known);
  EXPECT_TRUE(evt_type_mask("mmap", known).none());
  EXPECT_TRUE(known);
  EXPECT_TRUE(evt_type_mask("teleport", known).none());
  EXPECT_FALSE(known);
}

// A row's events string is a type mask: aliases fold into their type, "*" is
// every type, and `vigil fields` prints the canonical names in id order.
TEST(FieldCatalog, EventsAreTypeMasks) {
  using event::Type;
  const auto& c = FieldCatalog::builtin();
  const FieldDef* name = c.find("proc.name");
  ASSERT_NE(name, nullptr);
  EXPECT_TRUE(name->events.all());
  EXPECT_EQ(event::type_names(name->events.mask), "*");

  const FieldDef* raw = c.find("fd.nameraw");  // "open, openat, openat2, creat"
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(raw->events.mask, event::TypeMask(Type::kOpen));
  EXPECT_FALSE(raw->events.all());
  EXPECT_EQ(event::type_names(raw->events.mask), "openat");

  const FieldDef* dev = c.find("gpu.device");  // "open, openat, openat2, ioctl, pluginevent, mknodat"
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ(dev->events.mask.count(), 4u);
  EXPECT_TRUE(dev->events.mask.test(Type::kOpen));
  EXPECT_TRUE(dev->events.mask.test(Type::kIoctl));
  EXPECT_FALSE(dev->events.mask.test(Type::kExec));
  EXPECT_TRUE(dev->events.mask.test(Type::kPlugin));  // NVML samples name a GPU
  EXPECT_TRUE(dev->events.mask.test(Type::kMknod));   // a node created by mknod
  EXPECT_EQ(event::type_names(dev->events.mask), "openat, ioctl, pluginevent, mknodat");

  const FieldDef* xid = c.find("gpu.xid");
  ASSERT_NE(xid, nullptr);
  EXPECT_EQ(xid->events.mask, event::types("xid"));
  EXPECT_EQ(event::type_names(event::TypeMask()), "");
}

// Masks have room for every one-byte type id: bits past 31 and 63 neither
// wrap nor spill into other words (1u << 40 was undefined with uint32_t).
TEST(FieldHelpers, TypeMaskHoldsHighTypeIds) {
  using event::Type;
  event::TypeMask m;
  const auto hi = static_cast<Type>(40);
  const auto top = static_cast<Type>(255);
  m.set(hi).set(top);
  EXPECT_TRUE(m.test(hi));
  EXPECT_TRUE(m.test(top));
  EXPECT_EQ(m.count(), 2u);
  for (unsigned i = 0; i < 256; ++i) {
    if (i != 40 && i != 255) {
      EXPECT_FALSE(m.test(static_cast<Type>(i))) << i;
    }
  }
  // 40 = 8 + 32 and 255 = 63 + 192: neither aliases a low type.
  EXPECT_FALSE(m.test(static_cast<Type>(8)));
  EXPECT_FALSE(m.test(static_cast<Type>(63)));
  event::TypeMask both = m | event::TypeMask(Type::kExec);
  EXPECT_EQ(both.count(), 3u);
  EXPECT_EQ((both & m), m);
  EXPECT_EQ((both & event::TypeMask(Type::kExec)), event::TypeMask(Type::kExec));
  // The complement is taken within the known types.
  EXPECT_EQ(~event::TypeMask(), event::TypeMask::all());
  EXPECT_EQ((~event::TypeMask(Type::kExec)).count(), event::kTypeCount - 2);
}

// The compiler turns evt.type tests into TypeMask nodes and the condition's
// type mask follows them through and/or/not.
TEST(FieldHelpers, ConditionTypeMasks) {
  auto mask = [](const std::string& cond) {
    auto p = parse_condition(cond);
    EXPECT_TRUE(p.ok()) << cond;
    if (!p.ok()) return event::TypeMask();
    auto r = compile_condition(std::move(p.root), {}, {}, FieldCatalog::builtin());
    EXPECT_TRUE(r.expr) << cond;
    return r.expr ? r.expr->type_mask() : event::TypeMask();
  };
  EXPECT_EQ(mask("evt.type in (execve, open, creat) and proc.name = bash"), event::types("execve, openat"));
  EXPECT_EQ(mask("evt.type = xid or evt.type = bpf"), event::types("xid, bpf"));
  EXPECT_EQ(mask("evt.type != execve"), ~event::types("execve"));
  EXPECT_EQ(mask("proc.name = bash"), event::TypeMask::all());
  EXPECT_TRUE(mask("evt.type = mmap").none());
}

// What an alert's output prints for these fields on the world's event: the
// rule fires on every event of its process.
std::string printed(const testing::World& w, const std::string& fields) {
  auto r = testing::load_one(testing::rule_yaml("proc.pid > 0", fields));
  EXPECT_TRUE(r.ruleset) << testing::diags(r);
  if (!r.ruleset) return "";
  std::vector<event::Alert> out;
  r.ruleset->evaluate(w.ctx(), out);
  return out.size() == 1 ? out[0].output : "(" + std::to_string(out.size()) + " alerts)";
}

// proc.sname: the comm of the process whose pid is the session id.
TEST(FieldValues, SessionLeaderName) {
  testing::World w;
  w.st.procs[50].sid = 50;  // bash leads the session
  w.proc.sid = 50;
  w.open("/etc/hosts");
  EXPECT_EQ(printed(w, "sname=%proc.sname"), "sname=bash");
  // At an exec the event's own session id counts.
  w.exec();
  std::get<event::ExecData>(w.ev.data).sid = 100;
  EXPECT_EQ(printed(w, "sname=%proc.sname"), "sname=python3");  // its own leader
  std::get<event::ExecData>(w.ev.data).sid = 1;
  EXPECT_EQ(printed(w, "sname=%proc.sname"), "sname=containerd-shim");  // sid unknown on the leader's record
  // A leader vigil does not know, a pid reused by another session's process,
  // or no session id at all: no value.
  std::get<event::ExecData>(w.ev.data).sid = 77;
  EXPECT_EQ(printed(w, "sname=%proc.sname"), "sname=<NA>");
  w.st.procs[77].pid = 77;
  w.st.procs[77].comm = "sleep";
  w.st.procs[77].sid = 50;
  EXPECT_EQ(printed(w, "sname=%proc.sname"), "sname=<NA>");
  std::get<event::ExecData>(w.ev.data).sid = 0;
  w.proc.sid = 0;
  EXPECT_EQ(printed(w, "sname=%proc.sname"), "sname=<NA>");
}

// proc.exe_ino.mtime and proc.exe_ino.ctime_duration_proc_start, from the
// exec event and, for later events, the process table.
TEST(FieldValues, ExeInodeTimes) {
  testing::World w;
  w.proc.start_ts_ns = 1'700'000'010'000'000'000;
  w.exec();
  auto& d = std::get<event::ExecData>(w.ev.data);
  d.exe_ino = 393224;
  d.exe_ctime_ns = 1'700'000'009'750'000'000;  // written 250 ms before the fork
  d.exe_mtime_ns = 1'700'000'009'500'000'000;
  const std::string out =
      "ctime=%proc.exe_ino.ctime mtime=%proc.exe_ino.mtime to_start=%proc.exe_ino.ctime_duration_proc_start";
  EXPECT_EQ(printed(w, out), "ctime=1700000009750000000 mtime=1700000009500000000 to_start=250000000");
  // Changed after the fork (between fork and exec): negative.
  d.exe_ctime_ns = 1'700'000'010'000'000'100;
  EXPECT_EQ(printed(w, "to_start=%proc.exe_ino.ctime_duration_proc_start"), "to_start=-100");
  // Other events read the process's last exec.
  w.proc.exe_ino = 393224;
  w.proc.exe_ctime_ns = 1'600'000'000'000'000'000;
  w.proc.exe_mtime_ns = 1'500'000'000'000'000'000;
  w.open("/etc/hosts");
  EXPECT_EQ(printed(w, out), "ctime=1600000000000000000 mtime=1500000000000000000 to_start=100000010000000000");
  // No inode (a process found at start), no mtime recorded (an older
  // capture), no start time: no value.
  w.proc.exe_mtime_ns = 0;
  EXPECT_EQ(printed(w, "mtime=%proc.exe_ino.mtime"), "mtime=<NA>");
  w.proc.start_ts_ns = 0;
  EXPECT_EQ(printed(w, "to_start=%proc.exe_ino.ctime_duration_proc_start"), "to_start=<NA>");
  w.proc.start_ts_ns = 1'700'000'010'000'000'000;
  w.proc.exe_ino = 0;
  EXPECT_EQ(printed(w, out), "ctime=<NA> mtime=<NA> to_start=<NA>");
}

// container.start_ts: the pod's containerStatuses startedAt.
TEST(FieldValues, ContainerStartTime) {
  testing::World w;
  w.exec();
  w.pod.containers[0].started_at_ns = 1'795'687'200'000'000'000;
  EXPECT_EQ(printed(w, "start=%container.start_ts"), "start=1795687200000000000");
  w.pod.containers[0].started_at_ns = 0;  // not running, or an older capture
  EXPECT_EQ(printed(w, "start=%container.start_ts"), "start=<NA>");
  w.in_container = false;  // a host process, or a pod the API has not reported
  EXPECT_EQ(printed(w, "start=%container.start_ts"), "start=<NA>");
}

// k8s.pod.uid and k8s.pod.id name the pod from the container's first event
// on: the cgroup path gives the kubelet's pod uid before the pod is known.
TEST(FieldValues, PodUidComesFromTheCgroupBeforeThePodIsKnown) {
  testing::World w;
  w.exec();
  const std::string out = "uid=%k8s.pod.uid id=%k8s.pod.id name=%k8s.pod.name meta=%k8s.meta";
  EXPECT_EQ(printed(w, out), "uid=uid-1 id=uid-1 name=train-0 meta=complete");
  w.pod_known = false;
  EXPECT_EQ(printed(w, out), "uid=uid-1 id=uid-1 name=<NA> meta=incomplete");
  w.container.pod_uid.clear();  // a container outside Kubernetes
  EXPECT_EQ(printed(w, out), "uid=<NA> id=<NA> name=<NA> meta=container");
  w.in_container = false;
  w.proc.container_id.clear();
  EXPECT_EQ(printed(w, out), "uid=<NA> id=<NA> name=<NA> meta=host");
}

// proc.is_exe_fileless is proc.exe_kind in (memfd, deleted, devshm), at an
// exec (from the event) and at later events (from the process), for every
// combination of the facts exe_kind weighs (it is worked out without the
// kind's string, as a guard lookup on every exec).
TEST(FieldValues, ExeFilelessIsExeKindMemfdDeletedOrDevshm) {
  const char* paths[] = {"/dev/shm/x", "/run/shm/x", "/dev/shmx", "/tmp/x", "/usr/bin/x", "/run/shm", ""};
  for (int bits = 0; bits < 8; ++bits) {
    for (const char* path : paths) {
      for (bool at_exec : {true, false}) {
        testing::World w;
        w.proc.exe_from_memfd = bits & 1;
        w.proc.exe_deleted = bits & 2;
        w.proc.exe_upper_layer = bits & 4;
        w.proc.exepath = path;
        if (at_exec) {
          w.exec();
          auto& d = std::get<event::ExecData>(w.ev.data);
          d.exe_from_memfd = bits & 1;
          d.exe_deleted = bits & 2;
          d.exe_upper_layer = bits & 4;
          d.exe = path;
        } else {
          w.open("/etc/hosts");
        }
        const std::string kind = printed(w, "%proc.exe_kind");
        const std::string want = kind == "<NA>"                                             ? "<NA>"
                                 : kind == "memfd" || kind == "deleted" || kind == "devshm" ? "true"
                                                                                            : "false";
        EXPECT_EQ(printed(w, "%proc.is_exe_fileless"), want)
            << "facts " << bits << " path '" << path << "' kind " << kind << (at_exec ? " at exec" : " later");
      }
    }
  }
}

// posture.*: a node report's facts, tri-states as words, the CVE list as a
// list; a pod report names its container. Other events have no posture.
TEST(FieldValues, PostureFacts) {
  testing::World w;
  w.in_container = false;
  w.ev.hdr.type = event::Type::kGpuPosture;
  event::PostureData d;
  d.kind = "node";
  d.changed = "toolkit vulnerable";
  d.driver_version = "580.95.05";
  d.toolkit_version = "1.17.7";
  d.vulnerable = "CVE-2025-23266,CVE-2025-23267";
  d.profiling_admin_only = 0;
  d.accept_envvar = 1;
  w.ev.data = d;
  EXPECT_EQ(printed(w,
                    "%posture.kind %posture.driver_branch %posture.toolkit_version %posture.cves "
                    "%posture.profiling_admin_only %posture.accept_envvar %posture.cuda_compat_hook "
                    "%posture.runtime %posture.ecc"),
            "node 580 1.17.7 CVE-2025-23266,CVE-2025-23267 false true unknown <NA> unknown");
  EXPECT_EQ(printed(w, "%posture.ecc_pending %posture.ecc_gpus"), "unknown <NA>");
  // The GPUs' ECC from the nvml plugin: the summary, each GPU, a pending change.
  d.ecc = "mixed";
  d.ecc_gpus = "0:GPU-a:on,1:GPU-b:off->on";
  w.ev.data = d;
  EXPECT_EQ(printed(w, "%posture.ecc %posture.ecc_pending %posture.ecc_gpus"), "mixed true 0:GPU-a:on,1:GPU-b:off->on");
  auto ecc = testing::load_one(testing::rule_yaml(
      "evt.type = gpu_posture and posture.ecc in (off, mixed) and posture.ecc_gpus intersects (\"1:GPU-b:off->on\")",
      "x"));
  ASSERT_TRUE(ecc.ruleset) << testing::diags(ecc);
  std::vector<event::Alert> fired;
  ecc.ruleset->evaluate(w.ctx(), fired);
  EXPECT_EQ(fired.size(), 1u);
  d.ecc = "on";
  d.ecc_gpus = "0:GPU-a:on,1:GPU-b:on";
  w.ev.data = d;
  EXPECT_EQ(printed(w, "%posture.ecc %posture.ecc_pending"), "on false");
  d.ecc.clear();
  d.ecc_gpus.clear();
  w.ev.data = d;
  auto r = testing::load_one(testing::rule_yaml(
      "evt.type = gpu_posture and posture.cves intersects (CVE-2025-23266) and posture.changed contains vulnerable",
      "x"));
  ASSERT_TRUE(r.ruleset) << testing::diags(r);
  std::vector<event::Alert> out;
  r.ruleset->evaluate(w.ctx(), out);
  EXPECT_EQ(out.size(), 1u);
  d.kind = "pod";
  d.container = "bench";
  d.visible_devices = "all";
  w.ev.data = d;
  EXPECT_EQ(printed(w, "%posture.kind %posture.container %posture.visible_devices"), "pod bench all");
  w.open("/etc/hosts");
  EXPECT_EQ(printed(w, "%posture.kind %posture.vulnerable"), "<NA> <NA>");
}

}  // namespace
}  // namespace vigil::rules
