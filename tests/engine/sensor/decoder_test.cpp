#include "engine/sensor/decoder.h"
#include "engine/sensor/sensor.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <cstring>
#include <vector>

#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include "bpf/shared/events.h"

namespace vigil::sensor {
namespace {

// Builds a record: a fixed body followed by variable data; hdr.len is set to
// the total unless the test overrides it.
template <typename T>
std::vector<std::uint8_t> record(T body, const std::string& tail = {}) {
  body.hdr.abi = VG_ABI_VERSION;
  body.hdr.len = static_cast<__u32>(sizeof(T) + tail.size());
  std::vector<std::uint8_t> out(sizeof(T) + tail.size());
  std::memcpy(out.data(), &body, sizeof(T));
  std::memcpy(out.data() + sizeof(T), tail.data(), tail.size());
  return out;
}

void fill_hdr(vg_hdr* h, __u16 type) {
  h->type = type;
  h->ts_ns = 5'000'000'000ULL;
  h->pid = 100;
  h->tid = 101;
  h->ppid = 1;
  h->uid = 1000;
  h->gid = 1001;
  h->cgroup_id = 4242;
  h->pid_ns = 11;
  h->mnt_ns = 12;
  h->net_ns = 13;
  std::memcpy(h->comm, "python3", 8);
}

Result<event::Event> decode(const std::vector<std::uint8_t>& r) {
  TimeBase tb;
  tb.boot_to_wall_ns = 1'700'000'000'000'000'000LL;
  return decode_record(r, tb);
}

std::string S(const char* s, std::size_t n) { return std::string(s, n); }

TEST(Decoder, ExecWithArgsPathsAndFlags) {
  vg_exec b{};
  fill_hdr(&b.hdr, VG_EXEC);
  std::string filename = S("/usr/bin/python3\0", 17);
  std::string exe = S("python3.11\0bin\0usr\0", 19);
  std::string args = S("python3\0-c\0print(1)\0", 20);
  std::string cwd = S("work\0", 5);
  b.filename_len = filename.size();
  b.exe_len = exe.size();
  b.args_len = args.size();
  b.cwd_len = cwd.size();
  b.tty = (136u << 20) | 3;
  b.loginuid = 1000;
  b.flags = VG_EXEC_STDIN_SOCK | VG_EXEC_ARGS_TRUNC | VG_EXEC_MEMFD | VG_EXEC_WRITABLE;
  b.cap_effective = 1ull << 21;
  b.cap_permitted = (1ull << 21) | (1ull << 16);
  b.cap_inheritable = 1;
  b.exe_ino = 393224;
  b.exe_dev = (259u << 20) | 2;  // the kernel's dev_t of the file's filesystem
  b.exe_ctime_ns = 1'700'000'000'123'456'789LL;
  b.exe_mtime_ns = 1'699'999'000'000'000'042LL;
  auto ev = decode(record(b, filename + exe + args + cwd));
  ASSERT_TRUE(ev) << ev.error().message;
  EXPECT_EQ(ev->hdr.type, event::Type::kExec);
  EXPECT_EQ(ev->hdr.ts_ns, 1'700'000'005'000'000'000ULL);
  EXPECT_EQ(ev->hdr.pid, 100u);
  EXPECT_EQ(ev->hdr.ppid, 1u);
  EXPECT_EQ(ev->hdr.cgroup_id, 4242u);
  EXPECT_EQ(ev->hdr.net_ns, 13u);
  EXPECT_EQ(ev->hdr.comm, "python3");
  const auto* x = ev->as<event::ExecData>();
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->filename, "/usr/bin/python3");
  EXPECT_EQ(x->exe, "/usr/bin/python3.11");
  EXPECT_EQ(x->args, (std::vector<std::string>{"python3", "-c", "print(1)"}));
  EXPECT_TRUE(x->args_truncated);
  EXPECT_EQ(x->cwd, "/work");
  EXPECT_TRUE(x->stdin_is_socket);
  EXPECT_FALSE(x->stdout_is_socket);
  EXPECT_EQ(x->tty, (136u << 8) | 3);  // as /proc/PID/stat's tty_nr: pts/3

  EXPECT_EQ(x->loginuid, 1000u);
  EXPECT_TRUE(x->exe_from_memfd);
  EXPECT_FALSE(x->exe_upper_layer);
  EXPECT_TRUE(x->exe_writable);
  EXPECT_EQ(x->cap_effective, 1ull << 21);
  EXPECT_EQ(x->cap_permitted, (1ull << 21) | (1ull << 16));
  EXPECT_EQ(x->cap_inheritable, 1u);
  EXPECT_EQ(x->exe_ino, 393224u);
  EXPECT_EQ(x->exe_dev, makedev(259, 2));  // as stat's st_dev
  EXPECT_EQ(x->exe_ctime_ns, 1'700'000'000'123'456'789LL);
  EXPECT_EQ(x->exe_mtime_ns, 1'699'999'000'000'000'042LL);
  EXPECT_FALSE(x->interpreted);  // no interpreter path: not a #! script
}

TEST(Decoder, ExecOfAScriptIsInterpreted) {
  vg_exec b{};
  fill_hdr(&b.hdr, VG_EXEC);
  std::string filename = S("/entrypoint.sh\0", 15);
  std::string interp = S("/bin/sh\0", 8);
  b.filename_len = filename.size();
  b.interp_len = interp.size();
  auto ev = decode(record(b, filename + interp));
  ASSERT_TRUE(ev) << ev.error().message;
  EXPECT_TRUE(ev->as<event::ExecData>()->interpreted);
  EXPECT_EQ(ev->as<event::ExecData>()->filename, "/entrypoint.sh");
}

TEST(Decoder, ExecCarriesTheEnvironmentItStartedWith) {
  vg_exec b{};
  fill_hdr(&b.hdr, VG_EXEC);
  std::string filename = S("/usr/bin/nvidia-ctk\0", 20);
  std::string env = S("PATH=/usr/bin\0LD_PRELOAD=/proc/self/cwd/poc.so\0", 47);
  b.filename_len = filename.size();
  b.env_len = env.size();
  auto ev = decode(record(b, filename + env));
  ASSERT_TRUE(ev) << ev.error().message;
  const auto* x = ev->as<event::ExecData>();
  EXPECT_EQ(x->env, (std::vector<std::string>{"PATH=/usr/bin", "LD_PRELOAD=/proc/self/cwd/poc.so"}));
  EXPECT_FALSE(x->env_truncated);

  // Cut at the sensor's bound: the half variable is dropped, not shown wrong.
  std::string cut = S("A=1\0LD_PRELOAD=/tm", 18);
  b.env_len = cut.size();
  b.flags2 = VG_EXEC2_ENV_TRUNC;
  ev = decode(record(b, filename + cut));
  ASSERT_TRUE(ev) << ev.error().message;
  EXPECT_EQ(ev->as<event::ExecData>()->env, (std::vector<std::string>{"A=1"}));
  EXPECT_TRUE(ev->as<event::ExecData>()->env_truncated);
  EXPECT_FALSE(ev->as<event::ExecData>()->killed_at_exec);

  // The kernel killed it at exec (prevention): said in the same record.
  b.flags2 = VG_EXEC2_ENV_TRUNC | VG_EXEC2_KILLED;
  ev = decode(record(b, filename + cut));
  ASSERT_TRUE(ev) << ev.error().message;
  EXPECT_TRUE(ev->as<event::ExecData>()->killed_at_exec);
  EXPECT_TRUE(ev->as<event::ExecData>()->env_truncated);

  // An environment past the record's end is refused.
  b.env_len = 4000;
  EXPECT_FALSE(decode(record(b, filename + cut)));
}

TEST(Decoder, MknodCarriesTheDeviceNumber) {
  vg_fileop b{};
  fill_hdr(&b.hdr, VG_MKNOD);
  b.fd = VG_AT_FDCWD;
  b.syscall = VG_SC_MKNODAT;
  b.mode = S_IFCHR | 0666;
  b.flags = (195u << 8) | 7;  // the record carries dev where the others carry flags
  const std::string tail = S("/dev/nvidia7\0", 13);
  b.path_len = 13;
  auto ev = decode(record(b, tail));
  ASSERT_TRUE(ev) << ev.error().message;
  EXPECT_EQ(ev->hdr.type, event::Type::kMknod);
  auto* d = ev->as<event::FileOpData>();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->syscall, event::Syscall::kMknodat);
  EXPECT_EQ(d->path, "/dev/nvidia7");
  EXPECT_EQ(d->dev, makedev(195, 7));
  EXPECT_EQ(d->flags, 0u);
  EXPECT_EQ(d->mode, static_cast<std::uint32_t>(S_IFCHR | 0666));
}

TEST(Decoder, ExecFieldLengthsBeyondTheRecordAreRejected) {
  vg_exec b{};
  fill_hdr(&b.hdr, VG_EXEC);
  b.filename_len = 10;
  b.args_len = 60000;  // hostile: far more than the record holds
  auto ev = decode(record(b, std::string(10, 'a')));
  ASSERT_FALSE(ev);
  EXPECT_NE(ev.error().message.find("exec"), std::string::npos);
}

TEST(Decoder, HostileHeaderLengths) {
  vg_fork b{};
  fill_hdr(&b.hdr, VG_FORK);
  auto r = record(b);
  // shorter than a header
  EXPECT_FALSE(decode(std::vector<std::uint8_t>(r.begin(), r.begin() + 10)));
  // claims more bytes than received
  auto big = r;
  vg_hdr h{};
  std::memcpy(&h, big.data(), sizeof(h));
  h.len = 4096;
  std::memcpy(big.data(), &h, sizeof(h));
  EXPECT_FALSE(decode(big));
  // claims less than a header
  h.len = 8;
  std::memcpy(big.data(), &h, sizeof(h));
  EXPECT_FALSE(decode(big));
  // header fine but body cut: len = header only
  h.len = sizeof(vg_hdr);
  std::memcpy(big.data(), &h, sizeof(h));
  EXPECT_FALSE(decode(big));
  // wrong ABI
  h.len = sizeof(vg_fork);
  h.abi = VG_ABI_VERSION + 1;
  std::memcpy(big.data(), &h, sizeof(h));
  EXPECT_FALSE(decode(big));
  // unknown type
  auto u = r;
  std::memcpy(&h, u.data(), sizeof(h));
  h.type = 200;
  std::memcpy(u.data(), &h, sizeof(h));
  EXPECT_FALSE(decode(u));
}

TEST(Decoder, TruncatedTailOfEveryVariableRecordIsRejected) {
  vg_open o{};
  fill_hdr(&o.hdr, VG_OPEN);
  o.path_len = 20;
  EXPECT_FALSE(decode(record(o, "short")));
  vg_connect c{};
  fill_hdr(&c.hdr, VG_CONNECT);
  c.family = AF_UNIX;
  c.unix_path_len = 200;  // above sun_path's bound
  EXPECT_FALSE(decode(record(c, std::string(200, 'x'))));
  vg_xid x{};
  fill_hdr(&x.hdr, VG_XID);
  x.dev_len = 12;
  x.msg_len = 100;
  EXPECT_FALSE(decode(record(x, "0000:01:00.0")));
  vg_payload p{};
  fill_hdr(&p.hdr, VG_PAYLOAD);
  p.data_len = 50;
  EXPECT_FALSE(decode(record(p, "abc")));
  vg_dns d{};
  fill_hdr(&d.hdr, VG_DNS);
  d.dns_len = 40;
  EXPECT_FALSE(decode(record(d, "abc")));
}

TEST(Decoder, PathCallsKeepBothPathsAndTheirCall) {
  vg_fileop b{};
  fill_hdr(&b.hdr, VG_SYMLINK);
  b.result = 0;
  b.fd = VG_AT_FDCWD;
  b.fd2 = 5;
  b.syscall = VG_SC_SYMLINKAT;
  const std::string tail = S("/etc/shadow\0", 12) + S("s\0", 2);
  b.path_len = 12;
  b.path2_len = 2;
  auto ev = decode(record(b, tail));
  ASSERT_TRUE(ev) << ev.error().message;
  EXPECT_EQ(ev->hdr.type, event::Type::kSymlink);
  auto* d = ev->as<event::FileOpData>();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->syscall, event::Syscall::kSymlinkat);
  EXPECT_EQ(d->path, "/etc/shadow");
  EXPECT_EQ(d->path2, "s");
  EXPECT_EQ(d->fd, event::kAtFdcwd);
  EXPECT_EQ(d->fd2, 5);
  // A second path past the record's end is refused, not read.
  b.path2_len = 40;
  EXPECT_FALSE(decode(record(b, tail)));
  // A call number beyond what this build knows reads as none.
  b.path2_len = 2;
  b.syscall = 250;
  ev = decode(record(b, tail));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::FileOpData>()->syscall, event::Syscall::kNone);
}

TEST(Decoder, PtraceSocketDupModule) {
  vg_sys p{};
  fill_hdr(&p.hdr, VG_PTRACE);
  p.a[0] = 16;
  p.a[1] = 777;
  auto ev = decode(record(p));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::PtraceData>()->request, 16u);
  EXPECT_EQ(ev->as<event::PtraceData>()->target, 777u);
  EXPECT_FALSE(ev->as<event::PtraceData>()->to_vigil);
  p.a[3] = 1;  // the kernel found vigil among the tracer's tracees
  ev = decode(record(p));
  ASSERT_TRUE(ev);
  EXPECT_TRUE(ev->as<event::PtraceData>()->to_vigil);
  vg_sys so{};
  fill_hdr(&so.hdr, VG_SOCKET);
  so.a[0] = 17;
  so.a[1] = 3;
  so.result = 4;
  ev = decode(record(so));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::SocketData>()->domain, 17u);
  EXPECT_EQ(ev->as<event::SocketData>()->result, 4);
  vg_sockfd du{};
  fill_hdr(&du.hdr, VG_DUP);
  du.fd = 3;
  du.result = 1;
  du.family = AF_INET;
  du.proto = VG_L4_TCP;
  du.syscall = VG_SC_DUP2;
  du.dport = 4444;
  du.daddr[0] = 203;
  du.daddr[3] = 9;
  ev = decode(record(du));
  ASSERT_TRUE(ev);
  auto* d = ev->as<event::DupData>();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->syscall, event::Syscall::kDup2);
  EXPECT_EQ(d->proto, event::L4::kTcp);
  EXPECT_EQ(event::to_string(d->daddr), "203.0.0.9");
  vg_module m{};
  fill_hdr(&m.hdr, VG_MODULE);
  m.fd = 3;
  m.syscall = VG_SC_FINIT_MODULE;
  m.args_len = 8;
  ev = decode(record(m, S("debug=1\0", 8)));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::ModuleData>()->args, "debug=1");
  m.args_len = 9;  // one byte past the record
  EXPECT_FALSE(decode(record(m, S("debug=1\0", 8))));
}

TEST(Decoder, CredentialsNamespacesInboundAndNumberedCalls) {
  vg_sys c{};
  fill_hdr(&c.hdr, VG_SETUID);
  c.syscall = VG_SC_SETRESUID;
  c.a[0] = 0xffffffff;  // -1: unchanged
  c.a[1] = 1000;
  c.a[2] = 0;
  auto ev = decode(record(c));
  ASSERT_TRUE(ev);
  auto* cd = ev->as<event::CredData>();
  ASSERT_TRUE(cd);
  EXPECT_EQ(cd->real, -1);
  EXPECT_EQ(cd->effective, 1000);
  EXPECT_EQ(cd->saved, 0);
  c.syscall = VG_SC_SETUID;
  c.a[0] = 0;
  ev = decode(record(c));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::CredData>()->effective, 0);
  EXPECT_EQ(ev->as<event::CredData>()->real, -1);

  vg_sys n{};
  fill_hdr(&n.hdr, VG_SETNS);
  n.a[0] = 4;
  n.a[1] = 0x40000000;
  ev = decode(record(n));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->hdr.type, event::Type::kSetns);
  EXPECT_EQ(ev->as<event::NsData>()->fd, 4);
  EXPECT_EQ(ev->as<event::NsData>()->flags, 0x40000000u);

  vg_sockfd a{};
  fill_hdr(&a.hdr, VG_ACCEPT);
  a.syscall = VG_SC_ACCEPT4;
  a.fd = 3;
  a.result = 6;
  a.family = AF_INET;
  a.proto = VG_L4_TCP;
  a.sport = 8080;
  a.dport = 51000;
  a.saddr[0] = 127;
  a.saddr[3] = 1;
  a.daddr[0] = 10;
  a.daddr[3] = 9;
  ev = decode(record(a));
  ASSERT_TRUE(ev);
  auto* in = ev->as<event::InboundData>();
  ASSERT_TRUE(in);
  EXPECT_EQ(in->syscall, event::Syscall::kAccept4);
  EXPECT_EQ(event::to_string(in->laddr), "127.0.0.1");
  EXPECT_EQ(in->lport, 8080);
  EXPECT_EQ(event::to_string(in->raddr), "10.0.0.9");
  EXPECT_EQ(in->rport, 51000);

  vg_sys m{};
  fill_hdr(&m.hdr, VG_MEMFD_CREATE);
  m.a[1] = 1;
  m.str_len = 8;
  ev = decode(record(m, S("payload\0", 8)));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::SysCallData>()->name, "payload");
  m.str_len = 300;  // past the record
  EXPECT_FALSE(decode(record(m, S("payload\0", 8))));
}

TEST(Decoder, SignalToVigilAndPerfEventOpen) {
  vg_sys k{};
  fill_hdr(&k.hdr, VG_VIGIL_SIGNAL);
  k.a[0] = 10;                                            // SIGUSR1
  k.a[1] = 4242;                                          // vigil's pid
  k.a[2] = static_cast<std::uint64_t>(std::int64_t{-6});  // SI_TKILL
  k.a[3] = 4243;                                          // the thread named
  k.result = 1;                                           // ignored
  auto ev = decode(record(k));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->hdr.type, event::Type::kVigilSignal);
  auto* kd = ev->as<event::SysCallData>();
  ASSERT_TRUE(kd);
  EXPECT_EQ(kd->a0, 10u);
  EXPECT_EQ(kd->a1, 4242u);
  EXPECT_EQ(static_cast<std::int64_t>(kd->a2), -6);
  EXPECT_EQ(kd->a3, 4243u);
  EXPECT_EQ(kd->result, 1);
  // kill: the same record, another type.
  fill_hdr(&k.hdr, VG_KILL);
  k.a[0] = 9;
  k.a[1] = 5900;
  k.a[2] = 0;  // SI_USER
  k.a[3] = 5900 | (std::uint64_t{1} << 32);
  k.result = 0;
  ev = decode(record(k));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->hdr.type, event::Type::kKill);
  kd = ev->as<event::SysCallData>();
  ASSERT_TRUE(kd);
  EXPECT_EQ(kd->a0, 9u);
  EXPECT_EQ(kd->a1, 5900u);
  EXPECT_EQ(kd->a3 >> 32, 1u);
  vg_sys pe{};
  fill_hdr(&pe.hdr, VG_PERF_EVENT_OPEN);
  pe.a[0] = 2;
  pe.a[1] = 311;
  pe.a[3] = VG_PERF_TRACEPOINT;
  pe.result = 5;
  ev = decode(record(pe));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->hdr.type, event::Type::kPerfEventOpen);
  EXPECT_EQ(ev->as<event::SysCallData>()->a1, 311u);
  // A record shorter than its body is refused, as for every type.
  auto rec = record(pe);
  rec.resize(sizeof(vg_hdr) + 8);
  const auto len = static_cast<std::uint32_t>(rec.size());
  std::memcpy(rec.data() + 4, &len, sizeof(len));  // hdr.len agrees with what arrived
  EXPECT_FALSE(decode(rec));
}

TEST(Decoder, ForkAndExit) {
  vg_fork f{};
  fill_hdr(&f.hdr, VG_FORK);
  f.child_pid = 200;
  f.child_tid = 201;
  f.flags = VG_FORK_THREAD;
  auto ev = decode(record(f));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::ForkData>()->child_pid, 200u);
  EXPECT_EQ(ev->as<event::ForkData>()->child_tid, 201u);
  EXPECT_TRUE(ev->as<event::ForkData>()->is_thread);

  vg_exit e{};
  fill_hdr(&e.hdr, VG_EXIT);
  e.exit_code = 3 << 8;
  ev = decode(record(e));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::ExitData>()->exit_code, 3);
  EXPECT_EQ(ev->as<event::ExitData>()->signal, 0);
  e.exit_code = 9;  // killed by SIGKILL
  ev = decode(record(e));
  EXPECT_EQ(ev->as<event::ExitData>()->signal, 9);
  EXPECT_EQ(ev->as<event::ExitData>()->exit_code, 0);
}

TEST(Decoder, ConnectInet6AndUnix) {
  vg_connect c{};
  fill_hdr(&c.hdr, VG_CONNECT);
  c.family = AF_INET6;
  c.proto = VG_L4_TCP;
  c.dport = 443;
  c.daddr[0] = 0xfd;
  c.daddr[15] = 1;
  c.flags = VG_CONN_HAS_RESULT;
  c.result = -111;
  auto ev = decode(record(c));
  ASSERT_TRUE(ev);
  const auto* d = ev->as<event::ConnectData>();
  EXPECT_EQ(d->proto, event::L4::kTcp);
  EXPECT_EQ(d->dport, 443);
  EXPECT_EQ(event::to_string(d->daddr), "fd00::1");
  EXPECT_EQ(d->result, -111);

  vg_connect u{};
  fill_hdr(&u.hdr, VG_CONNECT);
  u.family = AF_UNIX;
  u.proto = VG_L4_UNIX;
  std::string path = S("\0dbus-abc\0", 10);
  u.unix_path_len = path.size();
  ev = decode(record(u, path));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::ConnectData>()->unix_path, "@dbus-abc");
  EXPECT_EQ(ev->as<event::ConnectData>()->result, event::ConnectData::kResultUnknown);
}

TEST(Decoder, OpenPrefersTheResolvedPath) {
  vg_open o{};
  fill_hdr(&o.hdr, VG_OPEN);
  std::string given = S("nvidia0\0", 8);
  std::string fpath = S("nvidia0\0dev\0", 12);
  o.path_len = given.size();
  o.fpath_len = fpath.size();
  o.oflags = VG_OPEN_CHR;
  o.dev_major = 195;
  o.dev_minor = 0;
  o.result = 3;
  o.flags = 2;
  auto ev = decode(record(o, given + fpath));
  ASSERT_TRUE(ev);
  const auto* d = ev->as<event::OpenData>();
  EXPECT_EQ(d->path, "/dev/nvidia0");
  EXPECT_EQ(d->raw, "nvidia0") << "the path as given, for fd.nameraw";
  EXPECT_TRUE(d->is_device);
  EXPECT_EQ(d->dev_major, 195u);
  EXPECT_EQ(d->result, 3);
  // A failed open has no resolved path: the given one is used.
  o.fpath_len = 0;
  o.oflags = 0;
  o.result = -13;
  ev = decode(record(o, given));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::OpenData>()->path, "nvidia0");
  EXPECT_EQ(ev->as<event::OpenData>()->raw, "") << "the same as path";
  EXPECT_FALSE(ev->as<event::OpenData>()->is_device);
  // Given as the kernel resolved it: raw stays empty.
  given = S("/dev/nvidia0\0", 13);
  o.path_len = given.size();
  o.fpath_len = fpath.size();
  o.result = 3;
  ev = decode(record(o, given + fpath));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::OpenData>()->path, "/dev/nvidia0");
  EXPECT_EQ(ev->as<event::OpenData>()->raw, "");
}

// A failed open through a traversal names the file it aimed at, as Falco's
// fd.name does: the absolute given path, normalised; fd.nameraw keeps it.
TEST(Decoder, FailedOpenThroughTraversalIsNormalised) {
  vg_open o{};
  fill_hdr(&o.hdr, VG_OPEN);
  std::string given = S("/srv/www/../../etc/./shadow\0", 28);
  o.path_len = given.size();
  o.result = -13;
  auto ev = decode(record(o, given));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::OpenData>()->path, "/etc/shadow");
  EXPECT_EQ(ev->as<event::OpenData>()->raw, "/srv/www/../../etc/./shadow");
  // A relative one has no directory to start from: it stays as given.
  given = S("../../etc/shadow\0", 17);
  o.path_len = given.size();
  ev = decode(record(o, given));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::OpenData>()->path, "../../etc/shadow");
}

TEST(Decoder, IoctlXidPayloadBpf) {
  vg_ioctl i{};
  fill_hdr(&i.hdr, VG_IOCTL);
  i.fd = 5;
  i.cmd = 0xC030462B;
  i.nr = 0x2B;
  i.rm_class = 0xC6C0;
  i.iflags = VG_IOCTL_XFER | VG_IOCTL_ALLOC;
  i.rm_status = 0x1F;
  auto ev = decode(record(i));
  ASSERT_TRUE(ev);
  const auto* d = ev->as<event::IoctlData>();
  EXPECT_EQ(d->nr, 0x2Bu);
  EXPECT_EQ(d->rm_class, 0xC6C0u);
  EXPECT_TRUE(d->xfer);
  EXPECT_FALSE(d->uvm);
  EXPECT_EQ(d->rm_status, 0x1Fu);

  vg_xid x{};
  fill_hdr(&x.hdr, VG_XID);
  std::string dev = S("0000:3b:00.0\0", 13), msg = "GPU has fallen off the bus.";
  x.dev_len = dev.size();
  x.msg_len = msg.size();
  x.code = 79;
  ev = decode(record(x, dev + msg));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::XidData>()->source, "tracepoint");
  EXPECT_EQ(ev->as<event::XidData>()->pci, "0000:3b:00.0");
  EXPECT_EQ(ev->as<event::XidData>()->code, 79u);
  EXPECT_EQ(ev->as<event::XidData>()->text, msg);

  vg_payload p{};
  fill_hdr(&p.hdr, VG_PAYLOAD);
  std::string bytes = S("{\"id\":1,\"method\":\"mining.subscribe\"\0\x01", 38);
  p.data_len = bytes.size();
  p.wire_len = 500;
  p.family = AF_INET;
  p.daddr[0] = 10;
  p.daddr[3] = 7;
  p.dport = 3333;
  ev = decode(record(p, bytes));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::PayloadData>()->bytes, bytes);  // binary-safe
  EXPECT_TRUE(ev->as<event::PayloadData>()->truncated);
  EXPECT_EQ(event::to_string(ev->as<event::PayloadData>()->daddr), "10.0.0.7");

  vg_bpf b{};
  fill_hdr(&b.hdr, VG_BPF);
  b.cmd = 5;
  b.prog_type = 2;
  std::memcpy(b.prog_name, "evil_prog_name_x", 16);  // no NUL: bounded by the field
  b.result = 7;
  ev = decode(record(b));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->as<event::BpfData>()->prog_name, "evil_prog_name_x");
  EXPECT_EQ(ev->as<event::BpfData>()->result, 7);
}

TEST(Decoder, PathAndArgHelpers) {
  EXPECT_EQ(decode_dpath(""), "/");
  EXPECT_EQ(decode_dpath(S("a\0", 2)), "/a");
  EXPECT_EQ(decode_dpath(S("c\0b\0a\0", 6)), "/a/b/c");
  EXPECT_EQ(decode_dpath(S("c\0b", 3)), "/b/c");  // last component without NUL
  EXPECT_EQ(split_args(S("a\0\0b\0", 5)), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(split_args(S("a\0bc", 4)), (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(split_args("").empty());
  EXPECT_EQ(c_string(S("ab\0cd", 5)), "ab");
}

TEST(Decoder, PayloadAboveItsBoundIsRejected) {
  vg_payload p{};
  fill_hdr(&p.hdr, VG_PAYLOAD);
  p.data_len = VG_PAYLOAD_MAX + 1;
  EXPECT_FALSE(decode(record(p, std::string(VG_PAYLOAD_MAX + 1, 'x'))));
}

TEST(Decoder, DnsRecordCarriesServerByDirection) {
  std::vector<std::uint8_t> q = {0, 7, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0, 1, 'a', 0, 0, 1, 0, 1};
  vg_dns d{};
  fill_hdr(&d.hdr, VG_DNS);
  d.family = AF_INET;
  d.ingress = 1;
  d.sport = 53;
  d.dport = 40000;
  d.saddr[0] = 10;
  d.saddr[3] = 53;
  d.dns_len = q.size();
  auto ev = decode(record(d, std::string(q.begin(), q.end())));
  ASSERT_TRUE(ev) << ev.error().message;
  const auto* x = ev->as<event::DnsData>();
  EXPECT_TRUE(x->is_response);
  EXPECT_EQ(x->name, "a");
  EXPECT_EQ(event::to_string(x->server), "10.0.0.53");
  EXPECT_EQ(x->server_port, 53);
}

TEST(DropCounters, SumAndDescribe) {
  DropCounters d;
  EXPECT_EQ(d.total(), 0u);
  EXPECT_EQ(d.to_string(), "none");
  d.ringbuf_full = 3;
  d.truncated = 2;
  d.decode_failed = 1;
  EXPECT_EQ(d.total(), 6u);
  EXPECT_EQ(d.lost(), 4u);  // truncated events were still delivered
  EXPECT_EQ(d.to_string(), "ringbuf_full=3 truncated=2 decode_failed=1");
}

TEST(Decoder, CommIsBoundedTo15Bytes) {
  vg_fork f{};
  fill_hdr(&f.hdr, VG_FORK);
  std::memset(f.hdr.comm, 'z', sizeof(f.hdr.comm));  // hostile: no NUL
  auto ev = decode(record(f));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->hdr.comm, std::string(15, 'z'));
}

}  // namespace
}  // namespace vigil::sensor
