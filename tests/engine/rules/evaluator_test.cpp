// Compiled conditions evaluated over synthetic EvalContexts: every operator,
// field arguments, transformers, lists, macros, CIDR matching, exceptions.
#include <fcntl.h>
#include <gtest/gtest.h>

#include "engine/rules/ruleset.h"
#include "tests/engine/rules/test_util.h"

namespace vigil::rules {
namespace {

using testing::fires;
using testing::World;

TEST(Evaluator, EqualityAndInequality) {
  World w;
  w.exec();
  EXPECT_TRUE(fires(w, "proc.name = python3"));
  EXPECT_TRUE(fires(w, "proc.name == python3"));
  EXPECT_FALSE(fires(w, "proc.name = python"));
  EXPECT_TRUE(fires(w, "proc.name != python"));
  EXPECT_FALSE(fires(w, "proc.name != python3"));
}

TEST(Evaluator, NumericComparisons) {
  World w;
  w.exec();
  EXPECT_TRUE(fires(w, "proc.pid = 100"));
  EXPECT_TRUE(fires(w, "proc.pid < 101"));
  EXPECT_FALSE(fires(w, "proc.pid < 100"));
  EXPECT_TRUE(fires(w, "proc.pid <= 100"));
  EXPECT_TRUE(fires(w, "proc.pid > 99"));
  EXPECT_FALSE(fires(w, "proc.pid > 100"));
  EXPECT_TRUE(fires(w, "proc.pid >= 100"));
  EXPECT_TRUE(fires(w, "proc.pid = 0x64"));
  EXPECT_TRUE(fires(w, "proc.pid in (1, 2, 100)"));
  EXPECT_FALSE(fires(w, "proc.pid in (1, 2)"));
  EXPECT_TRUE(fires(w, "user.uid > -1"));
}

TEST(Evaluator, StringOperators) {
  World w;
  w.exec();
  EXPECT_TRUE(fires(w, "proc.cmdline contains \"train.py --epochs\""));
  EXPECT_FALSE(fires(w, "proc.cmdline contains TRAIN"));
  EXPECT_TRUE(fires(w, "proc.cmdline icontains TRAIN.PY"));
  EXPECT_TRUE(fires(w, "proc.exepath startswith /usr/bin/"));
  EXPECT_FALSE(fires(w, "proc.exepath startswith /bin/"));
  EXPECT_TRUE(fires(w, "proc.exepath endswith python3.11"));
  EXPECT_TRUE(fires(w, "proc.exepath glob /usr/*/python3.*"));
  EXPECT_FALSE(fires(w, "proc.exepath glob /usr/*/python2*"));
  EXPECT_TRUE(fires(w, "proc.exepath glob \"/usr/bin/python3.1?\""));
  EXPECT_TRUE(fires(w, "proc.exepath glob \"/usr/bin/python[0-9].11\""));
  EXPECT_TRUE(fires(w, "proc.exepath iglob /USR/BIN/PYTHON*"));
  EXPECT_FALSE(fires(w, "proc.exepath glob /USR/BIN/PYTHON*"));
  EXPECT_TRUE(fires(w, "proc.name regex \"py(thon)?[0-9]\""));
  EXPECT_FALSE(fires(w, "proc.name regex \"py\""));       // must match the whole value
  EXPECT_TRUE(fires(w, "proc.name bcontains 74686f6e"));  // "thon"
  EXPECT_TRUE(fires(w, "proc.name bstartswith 707974"));  // "pyt"
  EXPECT_FALSE(fires(w, "proc.name bstartswith 74686f6e"));
}

TEST(Evaluator, InIntersectsPmatch) {
  World w;
  w.open("/etc/shadow", O_RDONLY);
  EXPECT_TRUE(fires(w, "fd.name in (/etc/passwd, /etc/shadow)"));
  EXPECT_FALSE(fires(w, "fd.name in (/etc/passwd)"));
  EXPECT_TRUE(fires(w, "fd.name intersects (/etc/shadow, x)"));
  EXPECT_TRUE(fires(w, "fd.name pmatch (/usr, /etc)"));
  EXPECT_TRUE(fires(w, "fd.name pmatch (/etc/shadow)"));
  EXPECT_FALSE(fires(w, "fd.name pmatch (/et, /etc/sha)"));  // whole components only
  EXPECT_TRUE(fires(w, "fd.name pmatch (/e*)"));             // glob components
  EXPECT_TRUE(fires(w, "fd.directory = /etc"));
  EXPECT_TRUE(fires(w, "fd.filename = shadow"));
}

TEST(Evaluator, ExistsAndMissingValues) {
  World w;
  w.exec();
  EXPECT_TRUE(fires(w, "proc.name exists"));
  EXPECT_FALSE(fires(w, "fd.name exists"));  // an exec has no fd
  // A comparison with a missing value is false, even !=.
  EXPECT_FALSE(fires(w, "fd.name != /x"));
  EXPECT_TRUE(fires(w, "not fd.name = /x"));
}

TEST(Evaluator, Modifiers) {
  World w;
  w.exec();
  EXPECT_TRUE(fires(w, "proc.exepath startswith anyof (/opt, /usr)"));
  EXPECT_FALSE(fires(w, "proc.exepath startswith anyof (/opt, /bin)"));
  EXPECT_TRUE(fires(w, "proc.cmdline contains allof (train, epochs)"));
  EXPECT_FALSE(fires(w, "proc.cmdline contains allof (train, lr)"));
  EXPECT_TRUE(fires(w, "proc.cmdline contains oneof (train, lr)"));
  EXPECT_FALSE(fires(w, "proc.cmdline contains oneof (train, epochs)"));
}

TEST(Evaluator, BooleanLogic) {
  World w;
  w.exec();
  EXPECT_TRUE(fires(w, "proc.name = x or proc.pid = 100"));
  EXPECT_FALSE(fires(w, "proc.name = x and proc.pid = 100"));
  EXPECT_TRUE(fires(w, "not proc.name = x and proc.pid = 100"));
  EXPECT_FALSE(fires(w, "not (proc.name = python3 and proc.pid = 100)"));
  EXPECT_TRUE(fires(w, "proc.name = x and proc.pid = 1 or proc.pid = 100"));  // (a and b) or c
}

TEST(Evaluator, AncestorsByIndexAndAny) {
  World w;
  w.exec();
  EXPECT_TRUE(fires(w, "proc.pname = bash"));
  EXPECT_TRUE(fires(w, "proc.aname[1] = bash"));
  EXPECT_TRUE(fires(w, "proc.aname[2] = containerd-shim"));
  EXPECT_FALSE(fires(w, "proc.aname[2] = bash"));
  EXPECT_TRUE(fires(w, "proc.aname[0] = python3"));
  EXPECT_TRUE(fires(w, "proc.aname = containerd-shim"));  // any ancestor
  EXPECT_TRUE(fires(w, "proc.aname in (nginx, bash)"));
  EXPECT_FALSE(fires(w, "proc.aname in (nginx, sshd)"));
  EXPECT_TRUE(fires(w, "proc.aname != nginx"));
  EXPECT_FALSE(fires(w, "proc.aname != bash"));  // not (any ancestor is bash)
  EXPECT_TRUE(fires(w, "proc.apid[2] = 1"));
  EXPECT_TRUE(fires(w, "proc.aexepath[1] = /bin/bash"));
  EXPECT_TRUE(fires(w, "proc.pexepath = /bin/bash"));
  EXPECT_FALSE(fires(w, "proc.aname[5] exists"));
}

TEST(Evaluator, AncestryLoopsEnd) {
  World w;
  w.st.procs[1].ppid = 50;  // 50 -> 1 -> 50 -> ...
  w.exec();
  EXPECT_FALSE(fires(w, "proc.aname = nothing"));
  EXPECT_TRUE(fires(w, "proc.aname = bash"));
}

TEST(Evaluator, PodLabelsBothForms) {
  World w;
  w.exec();
  EXPECT_TRUE(fires(w, "k8s.pod.label[app] = train"));
  EXPECT_TRUE(fires(w, "k8s.pod.label.app = train"));
  EXPECT_FALSE(fires(w, "k8s.pod.label.missing exists"));
  EXPECT_TRUE(fires(w, "k8s.pod.labels intersects (\"tier:gpu\")"));
  EXPECT_TRUE(fires(w, "k8s.ns.name = ml and k8s.pod.name = train-0"));
}

TEST(Evaluator, Transformers) {
  World w;
  w.exec();
  EXPECT_TRUE(fires(w, "toupper(proc.name) = PYTHON3"));
  EXPECT_TRUE(fires(w, "tolower(toupper(proc.name)) = python3"));
  EXPECT_TRUE(fires(w, "basename(proc.exepath) = python3.11"));
  EXPECT_TRUE(fires(w, "len(proc.name) = 7"));
  EXPECT_TRUE(fires(w, "len(k8s.pod.labels) = 2"));
  w.proc.args = {"dHJhaW4="};  // "train"
  EXPECT_TRUE(fires(w, "b64(proc.args) = train"));
  w.proc.args = {"not base64 !"};
  EXPECT_FALSE(fires(w, "b64(proc.args) exists"));
  // basename: what follows the last '/', all of a value without one.
  w.proc.cwd = "/srv/a/";
  EXPECT_TRUE(fires(w, "len(basename(proc.cwd)) = 0"));
  w.proc.cwd = "relative";
  EXPECT_TRUE(fires(w, "basename(proc.cwd) = relative"));
  w.proc.cwd = "/";
  EXPECT_TRUE(fires(w, "len(basename(proc.cwd)) = 0"));
  w.proc.cwd = "a/b/c";
  EXPECT_TRUE(fires(w, "basename(proc.cwd) = c"));
}

// tolower(F) in (...) and tolower(basename(F)) in (...) look the value up
// lower-casing as they go, without a lower-cased copy: the same answers as
// comparing tolower's result with each member. A member with an upper-case
// letter never equals a lower-cased value.
TEST(Evaluator, LowerCasedInLists) {
  World w;
  w.proc.comm = "PyThOn3";
  w.exec();
  EXPECT_TRUE(fires(w, "tolower(proc.name) in (xmrig, python3)"));
  EXPECT_FALSE(fires(w, "tolower(proc.name) in (xmrig, python)"));
  EXPECT_FALSE(fires(w, "tolower(proc.name) in (xmrig, python3x)"));
  EXPECT_FALSE(fires(w, "tolower(proc.name) in (Python3, PYTHON3)"));
  EXPECT_TRUE(fires(w, "not tolower(proc.name) in (Python3, PYTHON3)"));
  w.proc.comm = "a-Longer_Name.With.Dots";  // more than eight bytes: whole words hashed
  EXPECT_TRUE(fires(w, "tolower(proc.name) in (a-longer_name.with.dots, b)"));
  EXPECT_FALSE(fires(w, "tolower(proc.name) in (a-longer_name.with.dotz, b)"));
  w.proc.exepath = "/USR/Bin/XMRig";
  EXPECT_TRUE(fires(w, "tolower(basename(proc.exepath)) in (xmrig, t-rex)"));
  EXPECT_FALSE(fires(w, "tolower(basename(proc.exepath)) in (bin/xmrig, usr)"));
  w.proc.exepath = "XMRIG";
  EXPECT_TRUE(fires(w, "tolower(basename(proc.exepath)) in (xmrig, t-rex)"));
  w.proc.exepath = "/opt/xmrig/";
  EXPECT_FALSE(fires(w, "tolower(basename(proc.exepath)) in (xmrig, t-rex)"));
  // Several values (the ancestors' names): any one will do.
  w.st.procs[50].comm = "BaSh";
  EXPECT_TRUE(fires(w, "tolower(proc.aname) in (bash, zsh)"));
  EXPECT_FALSE(fires(w, "tolower(proc.aname) in (fish, zsh)"));
}

// tolower/toupper change ASCII letters only, eight bytes at a time and then
// byte by byte: every printable byte (the letters' neighbours @ [ ` { among
// them) and UTF-8 bytes, at each offset of the 8-byte steps.
TEST(Evaluator, CaseTransformersChangeAsciiLettersOnly) {
  std::string all;
  for (int c = 0x20; c < 0x7f; ++c) {
    if (c != '"' && c != '\\') all += static_cast<char>(c);
  }
  all += "\xc3\x89t\xc3\xa9";  // "Été": UTF-8 bytes stay as they are
  auto fold = [](std::string s, bool lower) {
    for (char& c : s) {
      if (lower && c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
      if (!lower && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    }
    return s;
  };
  for (std::size_t cut = 0; cut < 9; ++cut) {
    std::string v = all.substr(cut);
    World w;
    w.proc.comm = "x";
    w.exec();
    w.proc.exe = v;
    EXPECT_TRUE(fires(w, "tolower(proc.exe) = \"" + fold(v, true) + "\"")) << cut;
    EXPECT_TRUE(fires(w, "toupper(proc.exe) = \"" + fold(v, false) + "\"")) << cut;
    EXPECT_FALSE(fires(w, "tolower(proc.exe) = \"" + v + "\"")) << cut;
  }
}

TEST(Evaluator, FieldToField) {
  World w;
  w.exec();
  w.proc.comm = "bash";
  EXPECT_TRUE(fires(w, "proc.name = val(proc.pname)"));
  EXPECT_TRUE(fires(w, "toupper(proc.name) = toupper(proc.pname)"));
  w.proc.comm = "sh";
  EXPECT_FALSE(fires(w, "proc.name = val(proc.pname)"));
}

TEST(Evaluator, CidrMatching) {
  World w;
  w.connect("10.20.30.40", 443);
  EXPECT_TRUE(fires(w, "fd.sip in (10.0.0.0/8)"));
  EXPECT_TRUE(fires(w, "fd.snet in (192.168.0.0/16, 10.0.0.0/8)"));
  EXPECT_FALSE(fires(w, "fd.sip in (192.168.0.0/16, 172.16.0.0/12)"));
  EXPECT_TRUE(fires(w, "fd.sip = 10.20.30.40"));
  EXPECT_TRUE(fires(w, "fd.sip = \"10.20.0.0/16\""));
  EXPECT_FALSE(fires(w, "fd.sip = 10.20.30.41"));
  EXPECT_TRUE(fires(w, "fd.net = 10.1.0.0/16"));  // either endpoint: the client 10.1.2.3
  EXPECT_TRUE(fires(w, "fd.cip = 10.1.2.3 and fd.cport = 40000 and fd.sport = 443"));
  EXPECT_TRUE(fires(w, "fd.name = \"10.1.2.3:40000->10.20.30.40:443\""));
  EXPECT_TRUE(fires(w, "fd.type = ipv4 and fd.typechar = 4 and fd.l4proto = tcp"));
  w.connect("2001:db8::1", 53, event::L4::kUdp);
  EXPECT_TRUE(fires(w, "fd.sip in (2001:db8::/32)"));
  EXPECT_FALSE(fires(w, "fd.sip in (10.0.0.0/8)"));
  EXPECT_TRUE(fires(w, "fd.type = ipv6 and fd.l4proto = udp"));
}

TEST(Evaluator, DnsNameOfServer) {
  World w;
  w.st.dns["203.0.113.7"] = "pool.example.net";
  w.connect("203.0.113.7", 3333);
  EXPECT_TRUE(fires(w, "fd.sip.name = pool.example.net"));
  EXPECT_TRUE(fires(w, "fd.sip.name endswith .example.net"));
  w.connect("203.0.113.8", 3333);
  EXPECT_FALSE(fires(w, "fd.sip.name exists"));
}

TEST(Evaluator, EventTypeNamesMapToVigilEvents) {
  World w;
  w.exec();
  EXPECT_TRUE(fires(w, "evt.type = execve"));
  EXPECT_TRUE(fires(w, "evt.type = execveat"));
  EXPECT_TRUE(fires(w, "evt.type in (execve, execveat)"));
  EXPECT_FALSE(fires(w, "evt.type = open or (evt.type = connect)"));
  EXPECT_TRUE(fires(w, "evt.type != open and proc.name = python3"));
  w.open("/etc/hosts");
  EXPECT_TRUE(fires(w, "evt.type in (open, openat, openat2)"));
  EXPECT_TRUE(fires(w, "evt.type startswith open"));  // other operators compare the name
}

TEST(Evaluator, ContainerFields) {
  World w;
  w.exec();
  EXPECT_TRUE(fires(w, "container.id = 3f1c0d2e9a7b"));  // 12 characters, as Falco
  EXPECT_TRUE(fires(w, "container.full_id startswith 3f1c0d2e9a7b4c5d"));
  EXPECT_TRUE(fires(w, "container.image.repository = ghcr.io/acme/train"));
  EXPECT_TRUE(fires(w, "container.image.tag = \"1.4\""));
  EXPECT_TRUE(fires(w, "container.name = trainer and container.type = containerd"));
  EXPECT_TRUE(fires(w, "container.privileged = false"));
  w.in_container = false;
  w.proc.container_id.clear();
  EXPECT_TRUE(fires(w, "container.id = host"));
  EXPECT_FALSE(fires(w, "k8s.ns.name exists"));
}

TEST(Evaluator, OpenFlags) {
  World w;
  w.open("/etc/x", O_WRONLY | O_CREAT | O_TRUNC);
  EXPECT_TRUE(fires(w, "evt.is_open_write = true and evt.is_open_read = false"));
  EXPECT_TRUE(fires(w, "evt.arg.flags contains O_TRUNC"));
  EXPECT_TRUE(fires(w, "evt.arg.flags startswith O_WRONLY"));
  EXPECT_TRUE(fires(w, "evt.arg[name] = /etc/x and evt.arg.path = /etc/x"));
  EXPECT_TRUE(fires(w, "fd.num = 3 and evt.res = SUCCESS and evt.rawres >= 0 and evt.failed = false"));
  w.open("/etc/y", O_RDONLY, -2);
  EXPECT_TRUE(fires(w, "evt.res = ENOENT and evt.rawres = -2 and evt.failed = true"));
}

// fd.name is the resolved path; fd.nameraw the path as given, which the
// sensor keeps only where it differs.
TEST(Evaluator, FdNameIsResolvedAndNamerawAsGiven) {
  World w;
  w.open("/etc/shadow");
  std::get<event::OpenData>(w.ev.data).raw = "../etc/shadow";
  EXPECT_TRUE(fires(w, "fd.name = /etc/shadow and fd.nameraw = ../etc/shadow"));
  EXPECT_TRUE(fires(w, "fd.directory = /etc and fd.filename = shadow"));
  // The path arguments are the path as given, as in Falco.
  EXPECT_TRUE(fires(w, "evt.arg.path = ../etc/shadow and evt.arg.name = ../etc/shadow"));
  EXPECT_TRUE(fires(w, "evt.arg[path] = ../etc/shadow"));
  EXPECT_FALSE(fires(w, "evt.arg.path = /etc/shadow"));
  std::get<event::OpenData>(w.ev.data).file_type = event::OpenData::kFileDirectory;
  EXPECT_TRUE(fires(w, "fd.typechar = d and fd.type = directory"));
  w.open("/etc/hosts");
  EXPECT_TRUE(fires(w, "fd.nameraw = /etc/hosts"));
}

TEST(Evaluator, EvtArgsListsTheCallsArguments) {
  World w;
  w.ev.hdr.type = event::Type::kSocket;
  w.ev.data = event::SocketData{17, 3, 768, 4};
  EXPECT_TRUE(fires(w, "evt.args = \"res=4 domain=AF_PACKET type=SOCK_RAW proto=768\""));
  w.open("/etc/x", O_WRONLY | O_TRUNC);
  EXPECT_TRUE(fires(w, "evt.args = \"res=3 fd=3 name=/etc/x flags=O_WRONLY|O_TRUNC mode=00\""));
  w.ev.hdr.type = event::Type::kFork;
  w.ev.data = event::ForkData{};
  EXPECT_FALSE(fires(w, "evt.args exists"));
}

TEST(Evaluator, ExecFlagsByFalcosNames) {
  World w;
  w.exec();
  auto& d = std::get<event::ExecData>(w.ev.data);
  d.exe_writable = true;
  d.exe_from_memfd = true;
  EXPECT_TRUE(fires(w, "evt.arg.flags = \"EXE_WRITABLE|EXE_FROM_MEMFD\" and evt.arg[flags] contains EXE_FROM_MEMFD"));
}

TEST(Evaluator, SessionAndProcessGroup) {
  World w;
  w.exec();
  auto& d = std::get<event::ExecData>(w.ev.data);
  d.sid = 100;
  d.vpgid = 100;
  w.proc.vpid = 100;
  EXPECT_TRUE(
      fires(w, "proc.sid = 100 and proc.vpgid = 100 and proc.is_sid_leader = true and proc.is_vpgid_leader = true"));
  d.sid = 50;
  d.vpgid = 50;
  EXPECT_TRUE(fires(w, "proc.is_sid_leader = false and proc.is_vpgid_leader = false"));
  // Other events read the process table's copy.
  w.proc.sid = 50;
  w.proc.vpgid = 100;
  w.open("/tmp/x");
  EXPECT_TRUE(fires(w, "proc.sid = 50 and proc.is_vpgid_leader = true"));
}

TEST(Evaluator, GpuFields) {
  World w;
  w.open_dev("/dev/nvidia0", 195, 0);
  EXPECT_TRUE(fires(w, "gpu.device = /dev/nvidia0 and gpu.index = 0 and gpu.minor = 0"));
  EXPECT_TRUE(fires(w, "gpu.allowed = true"));
  w.open_dev("/dev/nvidia1", 195, 1);
  EXPECT_TRUE(fires(w, "gpu.allowed = false"));
  // A stand-in node outside /dev with another driver's numbers, named like one
  // (how test rigs without a GPU stand in device nodes): still a GPU device.
  w.open_dev("/tmp/rig/nvidia0", 1, 3);
  EXPECT_TRUE(fires(w, "gpu.device = /tmp/rig/nvidia0 and gpu.major = 1 and gpu.minor = 3"));
  w.open_dev("/dev/nvidiactl", 195, 255);
  EXPECT_TRUE(fires(w, "gpu.allowed = true and not gpu.index exists"));
  w.pod.containers[0].gpu_limit = 0;
  w.pod.containers[0].gpu_devices.clear();
  w.pod.containers[0].nvidia_visible_devices.clear();
  EXPECT_TRUE(fires(w, "gpu.allowed = false"));  // no GPU given: even nvidiactl is not allowed
  w.pod.containers[0].nvidia_visible_devices = "all";
  w.open_dev("/dev/nvidia7", 195, 7);
  EXPECT_TRUE(fires(w, "gpu.allowed = true"));
  w.ioctl(0x2B, 0xC6C0);  // NV_ESC_RM_ALLOC of AMPERE_COMPUTE_A
  EXPECT_TRUE(fires(w, "gpu.ioctl = NV_ESC_RM_ALLOC and gpu.class = 0xc6c0 and gpu.ioctl.nr = 43"));
  EXPECT_TRUE(fires(w, "gpu.class.name = AMPERE_COMPUTE_A and gpu.class.kind = compute"));
  EXPECT_TRUE(fires(w, "gpu.device = /dev/nvidiactl and gpu.uvm = false"));
  EXPECT_TRUE(fires(w, "gpu.limit = 0 and gpu.visible_devices = all"));
}

TEST(Evaluator, GpuAllocatedList) {
  World w;
  w.exec();
  w.pod.containers[0].gpu_devices = {"0", "3"};
  EXPECT_TRUE(fires(w, "gpu.allocated in (0, 1, 2, 3)"));  // every element in the set
  EXPECT_FALSE(fires(w, "gpu.allocated in (0, 1)"));
  EXPECT_TRUE(fires(w, "gpu.allocated intersects (3, 4)"));  // at least one in common
  EXPECT_TRUE(fires(w, "gpu.allocated = 3"));                // any element
  EXPECT_TRUE(fires(w, "len(gpu.allocated) = 2"));
}

TEST(Evaluator, DnsAndPayloadFields) {
  World w;
  w.dns("pool.minexmr.com", {"203.0.113.9"});
  EXPECT_TRUE(fires(w, "dns.name endswith minexmr.com and dns.type = A and dns.is_response = true"));
  EXPECT_TRUE(fires(w, "dns.answers intersects (203.0.113.9) and dns.server = 10.96.0.10"));
  w.payload("203.0.113.9", 3333, "{\"id\":1,\"method\":\"mining.subscribe\",\"params\":[]}\n");
  EXPECT_TRUE(fires(w, "conn.protocol = stratum and conn.payload contains mining.subscribe"));
  w.payload("203.0.113.9", 80, "GET / HTTP/1.1\r\n");
  EXPECT_TRUE(fires(w, "conn.protocol = http"));
  w.payload("203.0.113.9", 443, std::string("\x16\x03\x01\x02\x00", 5));
  EXPECT_TRUE(fires(w, "conn.protocol = tls"));
  w.payload("203.0.113.9", 22, "SSH-2.0-OpenSSH_9.2\r\n");
  EXPECT_TRUE(fires(w, "conn.protocol = ssh"));
  w.payload("203.0.113.9", 9, "hello");
  EXPECT_TRUE(fires(w, "conn.protocol = unknown"));
}

TEST(Evaluator, UserNamesFromState) {
  World w;
  w.exec();
  w.st.users[1000] = "alice";
  EXPECT_TRUE(fires(w, "user.name = alice and user.uid = 1000"));
  w.proc.uid = 0;
  w.st.users.clear();
  EXPECT_TRUE(fires(w, "user.name = root"));
}

TEST(Evaluator, ListsAndMacros) {
  World w;
  w.exec();
  const std::string extra =
      "- list: shells\n  items: [bash, sh]\n"
      "- list: interpreters\n  items: [shells, python3, '\"my tool\"']\n"
      "- macro: interp\n  condition: proc.name in (interpreters)\n"
      "- macro: nested\n  condition: interp and proc.pid > 1\n";
  EXPECT_TRUE(fires(w, "interp", extra));
  EXPECT_TRUE(fires(w, "nested", extra));
  EXPECT_TRUE(fires(w, "proc.pname in (shells)", extra));
  EXPECT_FALSE(fires(w, "proc.name in (shells)", extra));
  EXPECT_TRUE(fires(w, "proc.name in (shells, python3)", extra));
  w.proc.comm = "my tool";
  EXPECT_TRUE(fires(w, "proc.name in (interpreters)", extra));  // quoted item keeps its space
  // A name that is not a list is a plain value.
  w.proc.comm = "shellz";
  EXPECT_TRUE(fires(w, "proc.name in (shellz)", extra));
}

TEST(Evaluator, NoAllocationFreeMatchNothing) {
  // The evaluator must report nothing and stay inside its arena for events no rule matches.
  World w;
  w.open("/tmp/x");
  auto r =
      testing::load_one(testing::rule_yaml("evt.type = open and fd.name startswith /etc and proc.cmdline contains x"));
  ASSERT_TRUE(r.ruleset);
  std::vector<event::Alert> out;
  r.ruleset->evaluate(w.ctx(), out);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace vigil::rules
