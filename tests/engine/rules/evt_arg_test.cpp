// evt.arg.NAME and evt.args come from the event schema's table of Falco's
// argument names (kFalcoArgs, engine/event/schema.h). This test pins every
// name the engine knew before the table (when the names were written out in
// the extractor) to the value it gave then, for events of every type that has
// arguments, in each of their calls' variants, and for events whose payload
// and call disagree: fixtures/evt_arg_golden.txt holds those values.
//
// To write the golden file again (only when a value is meant to change):
//   VIGIL_WRITE_GOLDEN=tests/engine/rules/fixtures/evt_arg_golden.txt build/tests/rules_evt_arg_test
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/event/event.h"
#include "engine/rules/fields.h"
#include "engine/state/model.h"

namespace vigil::rules {
namespace {

using event::Syscall;
using event::Type;

// Every argument name the extractor knew, and one no call has.
constexpr std::string_view kNames[] = {
    "fd",        "name",   "path",    "pathname", "filename",      "flags",         "mode",
    "exe",       "cwd",    "cmd",     "res",      "request",       "target",        "linkpath",
    "linkdirfd", "newdir", "oldpath", "newpath",  "newdirfd",      "olddirfd",      "olddir",
    "dirfd",     "pid",    "addr",    "domain",   "type",          "proto",         "oldfd",
    "newfd",     "uid",    "gid",     "ruid",     "euid",          "suid",          "rgid",
    "egid",      "sgid",   "nstype",  "backlog",  "option",        "arg2_int",      "entries",
    "sig",       "code",   "tid",     "config",   "cap_effective", "cap_permitted", "cap_inheritable",
    "uargs",     "nosuch"};

struct Sample {
  std::string label;
  event::Event ev;
};

event::Event make(Type t, event::Payload p) {
  event::Event e;
  e.hdr.type = t;
  e.hdr.pid = 100;
  e.data = std::move(p);
  return e;
}

event::FileOpData file_op(Syscall s, std::string path, std::string path2 = "", std::uint32_t flags = 0,
                          std::uint32_t mode = 0) {
  event::FileOpData p;
  p.syscall = s;
  p.path = std::move(path);
  p.path2 = std::move(path2);
  p.fd = 5;
  p.fd2 = 6;
  p.flags = flags;
  p.mode = mode;
  p.result = -13;
  return p;
}

event::CredData cred(Syscall s) { return event::CredData{s, 1, 2, 3, 0}; }

event::SysCallData call(std::uint64_t a0, std::uint64_t a1, std::uint64_t a2, std::uint64_t a3, std::string name = "",
                        std::int64_t result = 8) {
  return event::SysCallData{a0, a1, a2, a3, std::move(name), result};
}

std::vector<Sample> samples() {
  std::vector<Sample> v;
  auto add = [&](std::string label, Type t, event::Payload p) {
    v.push_back({std::move(label), make(t, std::move(p))});
  };
  {
    event::OpenData o;
    o.path = "/etc/shadow";
    o.raw = "../etc/shadow";
    o.flags = 01101;  // O_WRONLY|O_CREAT|O_TRUNC
    o.mode = 0644;
    o.result = 3;
    add("openat", Type::kOpen, o);
    o.raw.clear();
    o.flags = 020200000;  // O_RDONLY|O_DIRECTORY|O_TMPFILE bits
    o.result = -2;
    add("openat-failed", Type::kOpen, o);
  }
  {
    event::ExecData e;
    e.filename = "/tmp/x.sh";
    e.exe = "/bin/sh";
    e.cwd = "/tmp";
    e.exe_writable = true;
    e.exe_from_memfd = true;
    add("execve", Type::kExec, e);
    add("execve-plain", Type::kExec, event::ExecData{});
  }
  add("bpf", Type::kBpf, event::BpfData{5, 0, "", 7});
  add("bpf-unknown-cmd", Type::kBpf, event::BpfData{99, 0, "", -1});
  {
    event::IoctlData i;
    i.fd = 9;
    i.cmd = 0xc020462a;
    i.result = 0;
    add("ioctl", Type::kIoctl, i);
  }
  add("symlinkat", Type::kSymlink, file_op(Syscall::kSymlinkat, "/etc/passwd", "/tmp/p"));
  add("symlink", Type::kSymlink, file_op(Syscall::kSymlink, "target", "link"));
  add("linkat", Type::kLink, file_op(Syscall::kLinkat, "/a", "/b", 0x400));
  add("link", Type::kLink, file_op(Syscall::kLink, "/a", "/b"));
  add("rename", Type::kRename, file_op(Syscall::kRename, "/old", "/new"));
  add("renameat2", Type::kRename, file_op(Syscall::kRenameat2, "/old", "/new", 1));
  add("unlinkat", Type::kUnlink, file_op(Syscall::kUnlinkat, "/var/log/x", "", 0x200));
  add("unlink", Type::kUnlink, file_op(Syscall::kUnlink, "x"));
  add("mkdirat", Type::kMkdir, file_op(Syscall::kMkdirat, "/d", "", 0, 0755));
  add("mkdir", Type::kMkdir, file_op(Syscall::kMkdir, "d", "", 0, 0700));
  add("rmdir", Type::kRmdir, file_op(Syscall::kRmdir, "/d"));
  add("chmod", Type::kChmod, file_op(Syscall::kChmod, "/bin/x", "", 0, 04755));
  add("fchmodat", Type::kChmod, file_op(Syscall::kFchmodat, "/bin/y", "", 0, 0777));
  add("fchmod", Type::kChmod, file_op(Syscall::kFchmod, "", "", 0, 0600));
  // Payload and call disagree (a capture or rule test that leaves the call out).
  add("symlinkat-no-call", Type::kSymlink, file_op(Syscall::kNone, "/t", ""));
  add("linkat-no-call", Type::kLink, file_op(Syscall::kNone, "/a", "/b"));
  add("unlinkat-two-paths", Type::kUnlink, file_op(Syscall::kUnlinkat, "/a", "/b"));
  add("chmod-no-path", Type::kChmod, file_op(Syscall::kChmod, "", "", 0, 0644));
  add("ptrace", Type::kPtrace, event::PtraceData{16, 42, 0x1000, 0, false});
  add("ptrace-unknown", Type::kPtrace, event::PtraceData{999, 1, 0, -1, false});
  add("socket", Type::kSocket, event::SocketData{17, 3, 768, 4});
  add("socket-stream", Type::kSocket, event::SocketData{2, 1 | 02000000 | 04000, 6, 5});
  add("socket-odd", Type::kSocket, event::SocketData{99, 12, 0, -97});
  {
    event::DupData d;
    d.syscall = Syscall::kDup3;
    d.oldfd = 3;
    d.flags = 02000000;
    d.result = 5;
    add("dup3", Type::kDup, d);
  }
  {
    event::ModuleData m;
    m.syscall = Syscall::kInitModule;
    m.args = "x=1";
    m.result = 0;
    add("init_module", Type::kModule, m);
    m.syscall = Syscall::kFinitModule;
    m.fd = 7;
    m.flags = 2;
    add("finit_module", Type::kModule, m);
    m.syscall = Syscall::kDeleteModule;
    m.args = "nvidia";
    m.flags = 0x800;
    m.result = -16;
    add("delete_module", Type::kDeleteModule, m);
    add("init_module-deleting", Type::kModule, m);
  }
  add("setuid", Type::kSetuid, cred(Syscall::kSetuid));
  add("setreuid", Type::kSetuid, cred(Syscall::kSetreuid));
  add("setresuid", Type::kSetuid, cred(Syscall::kSetresuid));
  add("setgid", Type::kSetgid, cred(Syscall::kSetgid));
  add("setregid", Type::kSetgid, cred(Syscall::kSetregid));
  add("setresgid", Type::kSetgid, cred(Syscall::kSetresgid));
  add("setuid-no-call", Type::kSetuid, cred(Syscall::kNone));
  add("setgid-no-call", Type::kSetgid, cred(Syscall::kNone));
  add("setuid-type-setgid-call", Type::kSetuid, cred(Syscall::kSetgid));
  add("setns", Type::kSetns, event::NsData{5, 0x40000000, 0});
  add("unshare", Type::kUnshare, event::NsData{-1, 0x20020000 | 0x80, 0});
  add("unshare-none", Type::kUnshare, event::NsData{-1, 0, -22});
  {
    event::InboundData in;
    in.syscall = Syscall::kAccept4;
    in.fd = 3;
    in.flags = 0x800;
    in.result = 6;
    add("accept4", Type::kAccept, in);
    in.syscall = Syscall::kNone;
    in.flags = 128;
    in.result = 0;
    add("listen", Type::kListen, in);
    add("bind", Type::kBind, in);
  }
  add("userfaultfd", Type::kUserfaultfd, call(1, 0, 0, 0));
  add("memfd_create", Type::kMemfdCreate, call(0, 1, 0, 0, "x"));
  add("prctl", Type::kPrctl, call(15, 7, 0, 0));
  add("io_uring_setup", Type::kIoUringSetup, call(64, 0, 0, 0));
  add("vigil_signal", Type::kVigilSignal, call(9, 1234, 0, (std::uint64_t{5} << 32) | 1235));
  add("vigil_signal-unknown", Type::kVigilSignal, call(99, 1, 2, 3));
  add("kill", Type::kKill, call(9, 5900, 0, 5900));
  add("kill-tgkill", Type::kKill, call(15, 5900, static_cast<std::uint64_t>(-6), 5903));
  add("perf_event_open", Type::kPerfEventOpen, call(2, 3, static_cast<std::uint64_t>(-1), 2));
  add("perf_event_open-other", Type::kPerfEventOpen, call(7, 0, 0, 0));
  add("capset", Type::kCapset, event::CapsData{(1ull << 21) | (1ull << 13), (1ull << 41) - 1 + (1ull << 45), 0, 0});
  add("connect", Type::kConnect, event::ConnectData{});
  add("fork", Type::kFork, event::ForkData{});
  add("open-without-payload", Type::kOpen, std::monostate{});
  return v;
}

std::string value(const FieldCatalog& cat, std::string_view field, bool has_arg, std::string_view arg,
                  const event::Event& ev) {
  FieldInst f;
  std::string err;
  bool unknown = false;
  if (!cat.resolve(field, has_arg, arg, f, err, unknown)) return "error: " + err;
  state::EvalContext ctx;
  ctx.ev = &ev;
  Arena arena;
  ExtractCtx x{&ctx, &arena};
  Extracted e;
  f.def->fn(x, f, e);
  return std::string(render_value(f.def->type, e, arena));
}

// One line per event and name: "label name=value", then "label args=...".
std::string dump() {
  const FieldCatalog& cat = FieldCatalog::builtin();
  std::ostringstream out;
  for (const Sample& s : samples()) {
    for (std::string_view n : kNames) {
      out << s.label << ' ' << n << '=' << value(cat, "evt.arg", true, n, s.ev) << '\n';
    }
    out << s.label << " args=" << value(cat, "evt.args", false, "", s.ev) << '\n';
  }
  return out.str();
}

TEST(EvtArg, EveryNameGivesTheValueItGaveBeforeTheTable) {
  const std::string got = dump();
  if (const char* path = std::getenv("VIGIL_WRITE_GOLDEN")) {
    std::ofstream(path) << got;
    GTEST_SKIP() << "wrote " << path;
  }
  std::ifstream in("tests/engine/rules/fixtures/evt_arg_golden.txt");
  ASSERT_TRUE(in) << "tests/engine/rules/fixtures/evt_arg_golden.txt (tests run from the repository root)";
  std::stringstream want;
  want << in.rdbuf();
  std::istringstream g(got), w(want.str());
  std::string gl, wl;
  int line = 0;
  while (true) {
    const bool more_g = static_cast<bool>(std::getline(g, gl));
    const bool more_w = static_cast<bool>(std::getline(w, wl));
    ++line;
    if (!more_g && !more_w) break;
    ASSERT_EQ(more_g ? gl : "<end>", more_w ? wl : "<end>") << "line " << line;
  }
}

// The dotted form (evt.arg.NAME) resolves to the same argument as evt.arg[NAME]
// for names the catalogue has no row of its own for.
TEST(EvtArg, DottedFormIsTheKeyForm) {
  const FieldCatalog& cat = FieldCatalog::builtin();
  for (const Sample& s : samples()) {
    for (std::string_view n : {"fd", "request", "domain", "uid", "sig", "cap_effective"}) {
      EXPECT_EQ(value(cat, "evt.arg." + std::string(n), false, "", s.ev), value(cat, "evt.arg", true, n, s.ev))
          << s.label << " " << n;
    }
  }
}

}  // namespace
}  // namespace vigil::rules
