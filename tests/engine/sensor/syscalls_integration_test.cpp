// The rarer syscalls Falco's rules ask about (bpf/progs/sys.bpf.c, dup in
// fd/socket.bpf.c) and the exec facts (memfd, overlay upper layer, capabilities),
// reported by the real BPF programs for a real child. Needs root.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "tests/engine/sensor/sensor_test_util.h"
#include "tests/support/temp_dir.h"

namespace vigil::sensor {
namespace {

using support::TempDir;

Config all_new_types(bool pairs) {
  Config cfg;
  cfg.event_types = {Type::kSymlink, Type::kLink,         Type::kUnlink,       Type::kRename,      Type::kMkdir,
                     Type::kRmdir,   Type::kChmod,        Type::kPtrace,       Type::kSocket,      Type::kDup,
                     Type::kModule,  Type::kSetuid,       Type::kSetgid,       Type::kSetns,       Type::kUnshare,
                     Type::kAccept,  Type::kListen,       Type::kBind,         Type::kUserfaultfd, Type::kMemfdCreate,
                     Type::kPrctl,   Type::kIoUringSetup, Type::kDeleteModule, Type::kCapset};
  cfg.enter_exit_pairs = pairs;
  return cfg;
}

const event::FileOpData* file_op(const std::vector<Event>& evs, Type t, event::Syscall sc) {
  for (const auto& e : evs) {
    auto* d = e.as<event::FileOpData>();
    if (d && e.hdr.type == t && d->syscall == sc) return d;
  }
  return nullptr;
}

TEST_P(SyscallArgs, PathCallsAreReportedWithTheirPathsAsGiven) {
  REQUIRE_ROOT();
  TempDir dir("vigil-sys");
  auto s = open_sensor(all_new_types(GetParam()));
  ASSERT_TRUE(s);
  Recorder rec(*s);
  const std::string d = dir.path();
  const auto cpid = static_cast<std::uint32_t>(in_child([&] {
    if (chdir(d.c_str()) != 0) return 1;
    int dfd = open(d.c_str(), O_DIRECTORY | O_RDONLY);
    int fd = open("f", O_CREAT | O_WRONLY, 0600);
    symlink("/etc/shadow", "s1");
    symlinkat("/etc/hosts", dfd, "s2");
    link("f", "h1");
    linkat(dfd, "f", dfd, "h2", 0);
    unlink("h1");
    unlinkat(dfd, "h2", 0);
    rename("f", "g");
    syscall(SYS_renameat2, dfd, "g", dfd, "f", 0);
    mkdir("sub", 0750);
    rmdir("sub");
    chmod("f", 0700);
    fchmod(fd, 0640);
    fchmodat(dfd, "f", 0604, 0);
    unlink("/nonexistent/x");  // a failed call is reported with its errno
    close(fd);
    close(dfd);
    return 0;
  }));
  ASSERT_TRUE(rec.wait_for([&](const Event& e) {
    auto* o = e.as<event::FileOpData>();
    return o && e.hdr.pid == cpid && o->path == "/nonexistent/x";
  })) << "no unlink event for the failed call";
  auto evs = rec.events_of(cpid);
  using S = event::Syscall;

  auto* sl = file_op(evs, Type::kSymlink, S::kSymlink);
  ASSERT_TRUE(sl);
  EXPECT_EQ(sl->path, "/etc/shadow");
  EXPECT_EQ(sl->path2, "s1");
  EXPECT_EQ(sl->result, 0);
  auto* sla = file_op(evs, Type::kSymlink, S::kSymlinkat);
  ASSERT_TRUE(sla);
  EXPECT_EQ(sla->path, "/etc/hosts");
  EXPECT_EQ(sla->path2, "s2");
  EXPECT_GE(sla->fd2, 0);  // the dirfd
  auto* ln = file_op(evs, Type::kLink, S::kLink);
  ASSERT_TRUE(ln);
  EXPECT_EQ(ln->path, "f");
  EXPECT_EQ(ln->path2, "h1");
  auto* lna = file_op(evs, Type::kLink, S::kLinkat);
  ASSERT_TRUE(lna);
  EXPECT_EQ(lna->path2, "h2");
  auto* ul = file_op(evs, Type::kUnlink, S::kUnlink);
  ASSERT_TRUE(ul);
  EXPECT_EQ(ul->path, "h1");
  EXPECT_EQ(ul->result, 0);
  auto* ula = file_op(evs, Type::kUnlink, S::kUnlinkat);
  ASSERT_TRUE(ula);
  EXPECT_EQ(ula->path, "h2");
  auto* rn = file_op(evs, Type::kRename, S::kRename);
  ASSERT_TRUE(rn);
  EXPECT_EQ(rn->path, "f");
  EXPECT_EQ(rn->path2, "g");
  auto* rn2 = file_op(evs, Type::kRename, S::kRenameat2);
  ASSERT_TRUE(rn2);
  EXPECT_EQ(rn2->path, "g");
  EXPECT_EQ(rn2->path2, "f");
  auto* mk = file_op(evs, Type::kMkdir, S::kMkdir);
  ASSERT_TRUE(mk);
  EXPECT_EQ(mk->path, "sub");
  EXPECT_EQ(mk->mode, 0750u);
  auto* rd = file_op(evs, Type::kRmdir, S::kRmdir);
  ASSERT_TRUE(rd);
  EXPECT_EQ(rd->path, "sub");
  auto* ch = file_op(evs, Type::kChmod, S::kChmod);
  ASSERT_TRUE(ch);
  EXPECT_EQ(ch->mode, 0700u);
  auto* fch = file_op(evs, Type::kChmod, S::kFchmod);
  ASSERT_TRUE(fch);
  EXPECT_EQ(fch->mode, 0640u);
  EXPECT_GE(fch->fd, 0);
  EXPECT_TRUE(fch->path.empty());
  auto* fcha = file_op(evs, Type::kChmod, S::kFchmodat);
  ASSERT_TRUE(fcha);
  EXPECT_EQ(fcha->path, "f");
  EXPECT_EQ(fcha->mode, 0604u);
  bool failed_seen = false;
  for (const auto& e : evs) {
    auto* o = e.as<event::FileOpData>();
    if (o && o->path == "/nonexistent/x") failed_seen = o->result == -ENOENT;
  }
  EXPECT_TRUE(failed_seen);
}

TEST_P(SyscallArgs, PtraceSocketDupAndModuleCalls) {
  REQUIRE_ROOT();
  auto s = open_sensor(all_new_types(GetParam()));
  ASSERT_TRUE(s);
  Recorder rec(*s);
  const auto cpid = static_cast<std::uint32_t>(in_child([&] {
    ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    int pk = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    if (pk >= 0) close(pk);
    // A connected TCP socket onto stdout: a reverse shell's redirect.
    int l = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (bind(l, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(l, 1) != 0 ||
        getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return 1;
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return 1;
    dup2(c, 1);
    int nullfd = open("/dev/null", O_RDONLY);
    dup3(nullfd, 9, O_CLOEXEC);
    syscall(SYS_finit_module, -1, "", 0);  // refused (EBADF), still reported
    return 0;
  }));
  ASSERT_TRUE(rec.wait_for([&](const Event& e) {
    auto* d = e.as<event::DupData>();
    return d && e.hdr.pid == cpid && d->result == 9;
  })) << "no dup3 event";
  // Kernels built without modules have no module syscall tracepoints.
  const bool has_modules = access("/sys/kernel/tracing/events/syscalls/sys_exit_finit_module", F_OK) == 0 ||
                           access("/sys/kernel/debug/tracing/events/syscalls/sys_exit_finit_module", F_OK) == 0;
  auto evs = rec.events_of(cpid);
  const event::PtraceData* pt = nullptr;
  const event::SocketData* packet = nullptr;
  const event::DupData *to_stdout = nullptr, *to_nine = nullptr;
  const event::ModuleData* mod = nullptr;
  for (const auto& e : evs) {
    if (auto* p = e.as<event::PtraceData>()) pt = p;
    if (auto* p = e.as<event::SocketData>(); p && p->domain == AF_PACKET) packet = p;
    if (auto* p = e.as<event::DupData>(); p && p->result == 1) to_stdout = p;
    if (auto* p = e.as<event::DupData>(); p && p->result == 9) to_nine = p;
    if (auto* p = e.as<event::ModuleData>()) mod = p;
  }
  ASSERT_TRUE(pt);
  EXPECT_EQ(pt->request, static_cast<std::uint32_t>(PTRACE_TRACEME));
  EXPECT_EQ(pt->result, 0);
  ASSERT_TRUE(packet);
  EXPECT_EQ(packet->type, static_cast<std::uint32_t>(SOCK_RAW));
  EXPECT_EQ(packet->protocol, htons(ETH_P_ALL));
  EXPECT_GE(packet->result, 0);
  ASSERT_TRUE(to_stdout);
  EXPECT_EQ(to_stdout->syscall, event::Syscall::kDup2);
  EXPECT_EQ(to_stdout->family, AF_INET);
  EXPECT_EQ(to_stdout->proto, event::L4::kTcp);
  EXPECT_EQ(event::to_string(to_stdout->daddr), "127.0.0.1");
  EXPECT_NE(to_stdout->dport, 0);
  ASSERT_TRUE(to_nine);
  EXPECT_EQ(to_nine->syscall, event::Syscall::kDup3);
  EXPECT_EQ(to_nine->family, 0);  // /dev/null is no socket
  EXPECT_EQ(to_nine->flags, static_cast<std::uint32_t>(O_CLOEXEC));
  if (!has_modules) {
    EXPECT_FALSE(mod);
    return;
  }
  ASSERT_TRUE(mod);
  EXPECT_EQ(mod->syscall, event::Syscall::kFinitModule);
  EXPECT_EQ(mod->fd, -1);
  EXPECT_EQ(mod->result, -EBADF);
}

TEST_P(SyscallArgs, CredentialNamespaceInboundAndNumberedCalls) {
  REQUIRE_ROOT();
  auto s = open_sensor(all_new_types(GetParam()));
  ASSERT_TRUE(s);
  Recorder rec(*s);
  std::uint16_t port = 0;
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  const auto cpid = static_cast<std::uint32_t>(in_child([&] {
    setresuid(-1, 0, -1);
    setgid(0);
    unshare(CLONE_NEWUTS);
    int ns = open("/proc/self/ns/uts", O_RDONLY);
    setns(ns, CLONE_NEWUTS);
    prctl(PR_SET_NAME, "vigil-prctl");
    int m = static_cast<int>(syscall(SYS_memfd_create, "payload", 1 /* MFD_CLOEXEC */));
    if (m >= 0) close(m);
    syscall(SYS_userfaultfd, 0);
    std::uint8_t params[120] = {};
    syscall(SYS_io_uring_setup, 4, params);  // may be refused (io_uring disabled): still reported
    // Drop CAP_SYS_MODULE (16) from the effective set: capset reports the
    // sets the task holds after it.
    struct {
      std::uint32_t version;
      int pid;
    } hdr{0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
    struct {
      std::uint32_t effective, permitted, inheritable;
    } data[2] = {};
    syscall(SYS_capget, &hdr, data);
    data[0].effective &= ~(1u << 16);
    syscall(SYS_capset, &hdr, data);
    // A listening socket that accepts one connection of its own.
    int l = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (bind(l, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(l, 7) != 0 ||
        getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return 1;
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return 1;
    int got = accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
    std::uint16_t p = ntohs(a.sin_port);
    if (write(pipefd[1], &p, sizeof(p)) != sizeof(p)) return 1;
    return got >= 0 ? 0 : 1;
  }));
  ASSERT_EQ(read(pipefd[0], &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
  close(pipefd[0]);
  close(pipefd[1]);
  ASSERT_TRUE(rec.wait_for([&](const Event& e) { return e.hdr.pid == cpid && e.hdr.type == Type::kAccept; }))
      << "no accept event";
  auto evs = rec.events_of(cpid);
  auto of = [&](Type t) -> const Event* {
    for (const auto& e : evs)
      if (e.hdr.type == t) return &e;
    return nullptr;
  };
  auto* su = of(Type::kSetuid);
  ASSERT_TRUE(su);
  EXPECT_EQ(su->as<event::CredData>()->syscall, event::Syscall::kSetresuid);
  EXPECT_EQ(su->as<event::CredData>()->real, -1);
  EXPECT_EQ(su->as<event::CredData>()->effective, 0);
  auto* sg = of(Type::kSetgid);
  ASSERT_TRUE(sg);
  EXPECT_EQ(sg->as<event::CredData>()->syscall, event::Syscall::kSetgid);
  auto* un = of(Type::kUnshare);
  ASSERT_TRUE(un);
  EXPECT_EQ(un->as<event::NsData>()->flags, static_cast<std::uint64_t>(CLONE_NEWUTS));
  EXPECT_EQ(un->as<event::NsData>()->result, 0);
  auto* sn = of(Type::kSetns);
  ASSERT_TRUE(sn);
  EXPECT_GE(sn->as<event::NsData>()->fd, 0);
  bool set_name = false;  // the child helper makes other prctl calls too
  for (const auto& e : evs) {
    if (auto* p = e.as<event::SysCallData>(); p && e.hdr.type == Type::kPrctl && p->a0 == PR_SET_NAME)
      set_name = p->result == 0;
  }
  EXPECT_TRUE(set_name);
  auto* mf = of(Type::kMemfdCreate);
  ASSERT_TRUE(mf);
  EXPECT_EQ(mf->as<event::SysCallData>()->name, "payload");
  EXPECT_EQ(mf->as<event::SysCallData>()->a1, 1u);
  EXPECT_TRUE(of(Type::kUserfaultfd));
  auto* cs = of(Type::kCapset);
  ASSERT_TRUE(cs);
  EXPECT_EQ(cs->as<event::CapsData>()->result, 0);
  EXPECT_FALSE(cs->as<event::CapsData>()->effective >> 16 & 1u);  // dropped
  EXPECT_TRUE(cs->as<event::CapsData>()->permitted >> 16 & 1u);   // still permitted
  EXPECT_TRUE(of(Type::kIoUringSetup));
  auto* bd = of(Type::kBind);
  ASSERT_TRUE(bd);
  EXPECT_EQ(bd->as<event::InboundData>()->lport, port);
  auto* ls = of(Type::kListen);
  ASSERT_TRUE(ls);
  EXPECT_EQ(ls->as<event::InboundData>()->flags, 7u);
  EXPECT_EQ(ls->as<event::InboundData>()->lport, port);
  auto* ac = of(Type::kAccept);
  ASSERT_TRUE(ac);
  const auto* in = ac->as<event::InboundData>();
  EXPECT_EQ(in->syscall, event::Syscall::kAccept4);
  EXPECT_EQ(in->family, AF_INET);
  EXPECT_EQ(in->proto, event::L4::kTcp);
  EXPECT_EQ(in->lport, port);
  EXPECT_EQ(event::to_string(in->raddr), "127.0.0.1");
  EXPECT_NE(in->rport, 0);
  EXPECT_GE(in->result, 0);
}

// Falco's log and traversal rules compare file names and a "../" in the
// given path (RulesetIndex.OpenFileNamesTraversalAndDeviceFields): a file
// with a listed name is sent wherever it is and however it was named, a
// given path starting with "../" is sent, other opens are not.
TEST_P(SyscallArgs, OpensOfListedFileNamesAndTraversalsAreSent) {
  REQUIRE_ROOT();
  TempDir dir("vigil-names");
  const std::string d = dir.path();
  ASSERT_EQ(mkdir((d + "/sub").c_str(), 0755), 0);
  Config cfg;
  cfg.event_types = {Type::kOpen};
  cfg.enter_exit_pairs = GetParam();
  cfg.open_given_prefixes = {"../"};
  cfg.open_path_whole = {"/syslog"};
  auto s = open_sensor(cfg);
  ASSERT_TRUE(s);
  Recorder rec(*s);
  const auto cpid = static_cast<std::uint32_t>(in_child([&] {
    if (chdir((d + "/sub").c_str()) != 0) return 1;
    close(open("syslog", O_CREAT | O_WRONLY | O_TRUNC, 0600));  // listed name, relative
    close(open("other", O_CREAT | O_WRONLY, 0600));             // not listed
    close(open("../up", O_CREAT | O_WRONLY, 0600));             // a traversal
    close(open((d + "/sub/other").c_str(), O_RDONLY));          // not listed
    close(open((d + "/sub/syslog").c_str(), O_RDONLY));         // listed name, absolute
    close(open("../", O_RDONLY | O_DIRECTORY));                 // a directory, by traversal
    return 0;
  }));
  std::vector<std::string> paths;
  for (const auto& e : rec.events_of(cpid, 1000)) {
    auto* o = e.as<event::OpenData>();
    if (o && o->path.starts_with(d))  // not the device nodes the child helper opens
      paths.push_back(o->path + (o->raw.empty() ? "" : " as " + o->raw) + " type " + std::to_string(o->file_type));
  }
  const std::string reg = " type " + std::to_string(event::OpenData::kFileRegular);
  const std::string directory = " type " + std::to_string(event::OpenData::kFileDirectory);
  EXPECT_EQ(paths, (std::vector<std::string>{d + "/sub/syslog as syslog" + reg, d + "/up as ../up" + reg,
                                             d + "/sub/syslog" + reg, d + " as ../" + directory}));
}

INSTANTIATE_TEST_SUITE_P(SensorSyscalls, SyscallArgs, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? std::string("EnterExitPairs") : std::string("ArgsAtExit");
                         });

// Copies `from` to `to` with its mode.
bool copy_file(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary);
  out << in.rdbuf();
  out.close();
  return in && out && chmod(to.c_str(), 0755) == 0;
}

const event::ExecData* exec_of(const std::vector<Event>& evs) {
  for (const auto& e : evs)
    if (auto* x = e.as<event::ExecData>()) return x;
  return nullptr;
}

TEST(SensorExec, AProgramRunFromAMemfdIsFlaggedAndCarriesItsCapabilities) {
  REQUIRE_ROOT();
  auto s = open_sensor(Config{});
  ASSERT_TRUE(s);
  Recorder rec(*s);
  const auto cpid = static_cast<std::uint32_t>(in_child([] {
    int m = static_cast<int>(syscall(SYS_memfd_create, "payload", 0));
    std::ifstream in("/bin/true", std::ios::binary);
    std::string bin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (m < 0 || write(m, bin.data(), bin.size()) != static_cast<ssize_t>(bin.size())) return 1;
    char* argv[] = {const_cast<char*>("payload"), nullptr};
    char* envp[] = {nullptr};
    fexecve(m, argv, envp);
    return 2;
  }));
  ASSERT_TRUE(rec.wait_for([&](const Event& e) { return e.hdr.pid == cpid && e.as<event::ExecData>(); }));
  auto* x = exec_of(rec.events_of(cpid, 0));
  ASSERT_TRUE(x);
  EXPECT_TRUE(x->exe_from_memfd) << x->exe;
  EXPECT_EQ(x->exe, "memfd:payload");  // Falco's proc.exepath for it
  EXPECT_FALSE(x->exe_upper_layer);
  // root: CAP_SYS_ADMIN (21) effective and permitted.
  EXPECT_TRUE(x->cap_effective >> 21 & 1u);
  EXPECT_TRUE(x->cap_permitted >> 21 & 1u);
  EXPECT_TRUE(x->exe_writable);  // root may write any file (CAP_DAC_OVERRIDE)

  // A program from a file is not a memfd.
  const auto tpid = static_cast<std::uint32_t>(in_child([] {
    execl("/bin/true", "true", nullptr);
    return 2;
  }));
  ASSERT_TRUE(rec.wait_for([&](const Event& e) { return e.hdr.pid == tpid && e.as<event::ExecData>(); }));
  auto* t = exec_of(rec.events_of(tpid, 0));
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->exe_from_memfd);
}

TEST(SensorExec, SessionAndProcessGroupOfTheNewProgram) {
  REQUIRE_ROOT();
  auto s = open_sensor(Config{});
  ASSERT_TRUE(s);
  Recorder rec(*s);
  // A new session (and group) led by the child, then a group of its own for
  // a grandchild in the same session.
  const auto cpid = static_cast<std::uint32_t>(in_child([] {
    if (setsid() < 0) return 1;
    pid_t g = fork();
    if (g == 0) {
      setpgid(0, 0);
      execl("/bin/true", "true", nullptr);
      _exit(2);
    }
    int st = 0;
    waitpid(g, &st, 0);
    execl("/bin/true", "true", nullptr);
    return 2;
  }));
  auto leader = rec.wait_for([&](const Event& e) { return e.hdr.pid == cpid && e.as<event::ExecData>(); });
  auto member = rec.wait_for([&](const Event& e) { return e.hdr.ppid == cpid && e.as<event::ExecData>(); });
  ASSERT_TRUE(leader);
  ASSERT_TRUE(member);
  EXPECT_EQ(leader->as<event::ExecData>()->sid, cpid);
  EXPECT_EQ(leader->as<event::ExecData>()->vpgid, cpid);
  EXPECT_EQ(member->as<event::ExecData>()->sid, cpid);
  EXPECT_EQ(member->as<event::ExecData>()->vpgid, member->hdr.pid);
}

TEST(SensorExec, AProgramWrittenIntoAnOverlaysUpperLayerIsFlagged) {
  REQUIRE_ROOT();
  TempDir dir("vigil-ovl");
  const std::string lower = dir.path() + "/lower", upper = dir.path() + "/upper", work = dir.path() + "/work",
                    merged = dir.path() + "/merged";
  for (const auto& p : {lower, upper, work, merged}) ASSERT_EQ(mkdir(p.c_str(), 0755), 0) << p;
  ASSERT_TRUE(copy_file("/bin/true", lower + "/from_image"));
  auto s = open_sensor(Config{});
  ASSERT_TRUE(s);
  Recorder rec(*s);
  // In a mount namespace of its own: the overlay is the container's root
  // file system in small; a file written through it lands in the upper layer.
  const auto cpid = static_cast<std::uint32_t>(in_child([&] {
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 10;
    const std::string opts = "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work;
    if (mount("overlay", merged.c_str(), "overlay", 0, opts.c_str()) != 0) return 11;
    if (!copy_file("/bin/true", merged + "/dropped")) return 12;
    for (const char* name : {"from_image", "dropped"}) {
      pid_t p = fork();
      if (p == 0) {
        execl((merged + "/" + name).c_str(), name, nullptr);
        _exit(2);
      }
      int st = 0;
      waitpid(p, &st, 0);
    }
    return 0;
  }));
  auto from_image = rec.wait_for([&](const Event& e) {
    auto* x = e.as<event::ExecData>();
    return x && e.hdr.ppid == cpid && x->exe.ends_with("/from_image");
  });
  auto dropped = rec.wait_for([&](const Event& e) {
    auto* x = e.as<event::ExecData>();
    return x && e.hdr.ppid == cpid && x->exe.ends_with("/dropped");
  });
  if (!from_image && !dropped) GTEST_SKIP() << "overlay mount not available here (no exec seen)";
  ASSERT_TRUE(from_image);
  ASSERT_TRUE(dropped);
  EXPECT_FALSE(from_image->as<event::ExecData>()->exe_upper_layer);
  EXPECT_TRUE(dropped->as<event::ExecData>()->exe_upper_layer);
}

// Identity (engine/ident): a renamed copy of dash that exits at once is
// still known as dash. The exec record's inode is the file's (as stat gives
// it: its mtime, set far in the past so it cannot be taken for the ctime,
// included), and the process is gone by the time its exec is read, so the
// file is found by that inode in its parent's root.
TEST(SensorExec, ARenamedCopyOfDashIsKnownAsDash) {
  REQUIRE_ROOT();
  if (access("/bin/dash", X_OK) != 0) GTEST_SKIP() << "no /bin/dash here";
  TempDir dir("vigil-ident");
  const std::string copy = dir.path() + "/e2kworker";
  ASSERT_TRUE(copy_file("/bin/dash", copy));
  ASSERT_EQ(chmod(copy.c_str(), 0755), 0);
  const struct timespec times[2] = {{0, UTIME_OMIT}, {1'600'000'000, 123'456'789}};
  ASSERT_EQ(utimensat(AT_FDCWD, copy.c_str(), times, 0), 0);
  struct stat st {};
  ASSERT_EQ(stat(copy.c_str(), &st), 0);
  int fd = open("/bin/dash", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::string dash_sha = ident::sha256_fd(fd, 64ull << 20);
  close(fd);
  auto s = open_sensor(Config{});
  ASSERT_TRUE(s);
  Recorder rec(*s);
  const auto cpid = static_cast<std::uint32_t>(in_child([&] {
    execl(copy.c_str(), "e2kworker", "-c", "exit 0", nullptr);
    return 2;
  }));
  auto ev = rec.wait_for([&](const Event& e) { return e.hdr.pid == cpid && e.as<event::ExecData>(); });
  ASSERT_TRUE(ev);
  const auto* x = ev->as<event::ExecData>();
  EXPECT_EQ(x->exe_ino, st.st_ino);
  EXPECT_EQ(x->exe_dev, st.st_dev);
  EXPECT_EQ(x->exe_ctime_ns, ident::FileKey::of(st).ctime_ns);
  EXPECT_EQ(x->exe_mtime_ns, st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec);
  EXPECT_NE(x->exe_mtime_ns, x->exe_ctime_ns);
  EXPECT_EQ(x->exe_sha256, dash_sha);
  EXPECT_EQ(x->exe_known_as, "dash");
  EXPECT_EQ(x->exe_class, static_cast<std::uint8_t>(ident::ExeClass::kShell));
  EXPECT_TRUE(x->exe_name_mismatch);
  EXPECT_FALSE(x->exe_deleted);
}

}  // namespace
}  // namespace vigil::sensor
