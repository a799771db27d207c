// Executable identity: the ELF build-id reader on well-formed and hostile
// bytes, the SHA-256 cache, learning a root's shells through its symbolic
// links (never outside it), and the exec enrichment on a fake /proc.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/ident/build_id.h"
#include "engine/ident/file_identity.h"
#include "engine/ident/identifier.h"
#include "engine/ident/known.h"
#include "tests/support/temp_dir.h"

namespace vigil::ident {
namespace {

namespace fs = std::filesystem;

void put(std::vector<std::uint8_t>& b, std::size_t off, std::uint64_t v, std::size_t n) {
  if (b.size() < off + n) b.resize(off + n);
  for (std::size_t i = 0; i < n; ++i) b[off + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// A minimal 64-bit little-endian ELF: header, one PT_NOTE program header and
// a GNU build-id note with the given bytes.
std::vector<std::uint8_t> elf_with_build_id(const std::vector<std::uint8_t>& id) {
  std::vector<std::uint8_t> b(64, 0);
  b[0] = 0x7f;
  b[1] = 'E';
  b[2] = 'L';
  b[3] = 'F';
  b[4] = 2;
  b[5] = 1;
  b[6] = 1;
  put(b, 32, 64, 8);  // e_phoff
  put(b, 54, 56, 2);  // e_phentsize
  put(b, 56, 1, 2);   // e_phnum
  const std::size_t note = 64 + 56;
  put(b, 64, 4, 4);                    // p_type PT_NOTE
  put(b, 64 + 8, note, 8);             // p_offset
  put(b, 64 + 32, 16 + id.size(), 8);  // p_filesz
  put(b, note, 4, 4);                  // namesz
  put(b, note + 4, id.size(), 4);      // descsz
  put(b, note + 8, 3, 4);              // NT_GNU_BUILD_ID
  b.resize(note + 16 + id.size());
  std::memcpy(&b[note + 12], "GNU", 4);
  std::memcpy(&b[note + 16], id.data(), id.size());
  return b;
}

std::string build_id_of(const std::vector<std::uint8_t>& b) {
  return read_build_id(
      [&](std::uint64_t off, void* buf, std::size_t n) {
        if (off > b.size() || n > b.size() - off) return false;
        std::memcpy(buf, b.data() + off, n);
        return true;
      },
      b.size());
}

TEST(BuildId, ReadsTheGnuNote) {
  EXPECT_EQ(build_id_of(elf_with_build_id({0xde, 0xad, 0xbe, 0xef, 0x01})), "deadbeef01");
}

TEST(BuildId, HostileHeadersGiveNothing) {
  auto good = elf_with_build_id({1, 2, 3, 4});
  auto b = good;
  put(b, 32, ~0ull - 8, 8);  // e_phoff past the end (and overflowing)
  EXPECT_EQ(build_id_of(b), "");
  b = good;
  put(b, 64 + 32, ~0ull, 8);  // p_filesz enormous
  EXPECT_EQ(build_id_of(b), "");
  b = good;
  put(b, 120, 0xfffffff0u, 4);  // namesz runs past the note
  EXPECT_EQ(build_id_of(b), "");
  b = good;
  put(b, 124, 0xfffffff0u, 4);  // descsz runs past the note
  EXPECT_EQ(build_id_of(b), "");
  b = good;
  b[4] = 3;  // no such ELF class
  EXPECT_EQ(build_id_of(b), "");
  b = good;
  b.resize(40);  // cut inside the header
  EXPECT_EQ(build_id_of(b), "");
  EXPECT_EQ(build_id_of({}), "");
}

TEST(BuildId, RealBinaryHasOne) {
  int fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  std::string id = read_build_id_fd(fd, static_cast<std::uint64_t>(st.st_size));
  ::close(fd);
  EXPECT_GE(id.size(), 16u);  // the toolchain writes a build-id (sha1: 40 hex)
}

std::string sha_of(const std::string& path, FileIdentityCache& c) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0);
  struct stat st {};
  ::fstat(fd, &st);
  std::string s = c.get(fd, st).sha256;
  ::close(fd);
  return s;
}

TEST(FileIdentityCache, HashesOncePerFileVersion) {
  support::TempDir d;
  std::string f = d.write("f", "abc");
  FileIdentityCache c(16, 1 << 20);
  EXPECT_EQ(sha_of(f, c), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha_of(f, c), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(c.stats().misses, 1u);
  EXPECT_EQ(c.stats().hits, 1u);
  d.write("f", "abd");  // a new file (new inode) under the same name
  EXPECT_NE(sha_of(f, c), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(c.stats().misses, 2u);
}

TEST(FileIdentityCache, BoundedBytesAndEntries) {
  support::TempDir d;
  std::string f = d.write("big", std::string(10, 'x'));
  int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
  bool partial = false;
  std::string head = sha256_fd(fd, 3, &partial);
  EXPECT_TRUE(partial);
  ::close(fd);
  EXPECT_EQ(head, sha_of(d.write("xxx", "xxx"), *std::make_unique<FileIdentityCache>(4, 1 << 20)));
  FileIdentityCache c(2, 1 << 20);
  for (int i = 0; i < 5; ++i) sha_of(d.write("n" + std::to_string(i), std::to_string(i)), c);
  EXPECT_EQ(c.size(), 2u);
}

void make_exec(const std::string& path, const std::string& content) {
  fs::create_directories(fs::path(path).parent_path());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  ::close(fd);
}

TEST(KnownPrograms, LearnsThroughLinksInsideTheRootOnly) {
  support::TempDir root, outside;
  make_exec(root.path() + "/usr/bin/dash", "the dash program");
  make_exec(root.path() + "/usr/bin/python3.12", "the python program");
  fs::create_directories(root.path() + "/bin");
  fs::create_symlink("/usr/bin/dash", root.path() + "/bin/sh");  // absolute: inside the root
  fs::create_symlink("python3.12", root.path() + "/usr/bin/python3");
  make_exec(outside.path() + "/perl", "outside");
  fs::create_symlink(outside.path() + "/perl", root.path() + "/usr/bin/perl");  // not in the root
  root.write("etc/shells", "# comment\n/bin/sh\n/usr/bin/dash\n");

  FileIdentityCache cache(64, 1 << 20);
  KnownPrograms known;
  int fd = ::open(root.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  known.learn_root(fd, cache);
  ::close(fd);
  EXPECT_EQ(known.size(), 2u);

  int f = ::open((root.path() + "/usr/bin/dash").c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  ::fstat(f, &st);
  const KnownProgram* k = known.find(cache.get(f, st).key());
  ::close(f);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->name, "dash");
  EXPECT_EQ(k->cls, ExeClass::kShell);
  EXPECT_NE(std::find(k->names.begin(), k->names.end(), "sh"), k->names.end());
}

TEST(KnownPrograms, Bounded) {
  KnownPrograms k(2);
  EXPECT_TRUE(k.add("a", "bash", ExeClass::kShell));
  EXPECT_TRUE(k.add("b", "dash", ExeClass::kShell));
  EXPECT_FALSE(k.add("c", "zsh", ExeClass::kShell));
  for (int i = 0; i < 20; ++i) k.add("a", "alias" + std::to_string(i), ExeClass::kShell);
  EXPECT_EQ(k.find("a")->names.size(), KnownPrograms::kMaxAliases);
  EXPECT_EQ(k.find("c"), nullptr);
}

TEST(Busybox, OnlyItsShellAppletsAreShells) {
  event::ExecData d;
  d.args = {"/bin/sh", "-c", "id"};
  EXPECT_TRUE(busybox_runs_shell(d));
  d.args = {"busybox", "ash"};
  EXPECT_TRUE(busybox_runs_shell(d));
  d.args = {"/bin/ls", "-l"};
  EXPECT_FALSE(busybox_runs_shell(d));
  d.args = {"busybox"};
  EXPECT_FALSE(busybox_runs_shell(d));
  d.args = {};
  EXPECT_FALSE(busybox_runs_shell(d));
}

struct FakeNode {
  support::TempDir host, proc, files;
  std::unique_ptr<ExeIdentifier> id;
  FakeNode() {
    make_exec(host.path() + "/usr/bin/dash", "the dash program");
    make_exec(host.path() + "/usr/bin/python3", "the python program");
    fs::create_directories(host.path() + "/bin");
    fs::create_symlink("/usr/bin/dash", host.path() + "/bin/sh");
    Options o;
    o.proc_root = proc.path();
    o.host_root = host.path();
    id = std::make_unique<ExeIdentifier>(o);
    id->learn_host();
  }
  // pid's exe link points at `target`.
  void exe(std::uint32_t pid, const std::string& target) {
    fs::create_directories(proc.path() + "/" + std::to_string(pid));
    fs::create_symlink(target, proc.path() + "/" + std::to_string(pid) + "/exe");
  }
  event::Event exec(std::uint32_t pid, std::string comm, std::string exe, std::vector<std::string> args) {
    event::Event ev;
    ev.hdr.type = event::Type::kExec;
    ev.hdr.pid = pid;
    ev.hdr.comm = std::move(comm);
    event::ExecData d;
    d.exe = std::move(exe);
    d.filename = d.exe;
    d.args = std::move(args);
    ev.data = d;
    id->enrich(ev);
    return ev;
  }
};

TEST(ExeIdentifier, ARenamedCopyOfDashIsAShell) {
  FakeNode n;
  make_exec(n.files.path() + "/x", "the dash program");
  n.exe(10, n.files.path() + "/x");
  auto ev = n.exec(10, "x", "/tmp/x", {"x", "-c", "id"});
  const auto* d = ev.as<event::ExecData>();
  EXPECT_EQ(d->exe_known_as, "dash");
  EXPECT_EQ(d->exe_class, static_cast<std::uint8_t>(ExeClass::kShell));
  EXPECT_TRUE(d->exe_name_mismatch);
  EXPECT_EQ(d->exe_sha256.size(), 64u);
  EXPECT_FALSE(d->exe_deleted);
}

TEST(ExeIdentifier, ShUnderItsOwnNamesIsNoMismatch) {
  FakeNode n;
  n.exe(11, n.host.path() + "/usr/bin/dash");
  auto ev = n.exec(11, "sh", "/usr/bin/dash", {"/bin/sh", "-c", "true"});
  EXPECT_EQ(ev.as<event::ExecData>()->exe_known_as, "dash");
  EXPECT_FALSE(ev.as<event::ExecData>()->exe_name_mismatch);
  // A #! script carries the script's name: not a mismatch.
  n.exe(12, n.host.path() + "/usr/bin/dash");
  event::Event s;
  s.hdr.type = event::Type::kExec;
  s.hdr.pid = 12;
  s.hdr.comm = "entrypoint.sh";
  event::ExecData d;
  d.exe = "/usr/bin/dash";
  d.filename = "/entrypoint.sh";
  d.interpreted = true;
  s.data = d;
  n.id->enrich(s);
  EXPECT_EQ(s.as<event::ExecData>()->exe_class, static_cast<std::uint8_t>(ExeClass::kShell));
  EXPECT_FALSE(s.as<event::ExecData>()->exe_name_mismatch);
}

TEST(ExeIdentifier, DeletedAndUnknownAndRaced) {
  FakeNode n;
  // The kernel shows a deleted file as "<path> (deleted)".
  make_exec(n.files.path() + "/miner (deleted)", "some miner");
  n.exe(20, n.files.path() + "/miner (deleted)");
  auto ev = n.exec(20, "miner", "/tmp/miner", {"miner"});
  EXPECT_TRUE(ev.as<event::ExecData>()->exe_deleted);
  EXPECT_EQ(ev.as<event::ExecData>()->exe_known_as, "");
  EXPECT_EQ(ev.as<event::ExecData>()->exe_class, 0);
  EXPECT_FALSE(ev.as<event::ExecData>()->exe_name_mismatch);
  // The exe link names another program than the exec: it moved on.
  n.exe(21, n.host.path() + "/usr/bin/python3");
  auto moved = n.exec(21, "x", "/tmp/x", {"x"});
  EXPECT_EQ(moved.as<event::ExecData>()->exe_sha256, "");
  // Gone.
  auto gone = n.exec(22, "y", "/tmp/y", {"y"});
  EXPECT_EQ(gone.as<event::ExecData>()->exe_sha256, "");
  EXPECT_EQ(n.id->stats().raced, 2u);
  EXPECT_EQ(n.id->stats().identified, 1u);
}

// The process is gone when its exec is read: its path, opened in its
// parent's root, is taken only when it is the inode the kernel ran; the
// next exec of that inode is a cache hit without any file read.
TEST(ExeIdentifier, AGoneProcessIsIdentifiedByTheInodeTheKernelRan) {
  FakeNode n;
  make_exec(n.host.path() + "/usr/local/bin/y", "the dash program");
  const std::string parent = n.proc.path() + "/30";
  fs::create_directories(parent + "/ns");
  make_exec(parent + "/ns/mnt", "");
  fs::create_symlink(n.host.path(), parent + "/root");
  struct stat ns {
  }, y{};
  ASSERT_EQ(::stat((parent + "/ns/mnt").c_str(), &ns), 0);
  ASSERT_EQ(::stat((n.host.path() + "/usr/local/bin/y").c_str(), &y), 0);
  auto exec = [&](std::uint32_t pid, std::uint64_t ino) {
    event::Event ev;
    ev.hdr.type = event::Type::kExec;
    ev.hdr.pid = pid;
    ev.hdr.ppid = 30;
    ev.hdr.mnt_ns = static_cast<std::uint32_t>(ns.st_ino);
    ev.hdr.comm = "y";
    event::ExecData d;
    d.exe = d.filename = "/usr/local/bin/y";
    d.args = {"y"};
    d.exe_ino = ino;
    d.exe_dev = y.st_dev;
    d.exe_ctime_ns = FileKey::of(y).ctime_ns;
    ev.data = d;
    n.id->enrich(ev);
    return ev.as<event::ExecData>()->exe_known_as;
  };
  EXPECT_EQ(exec(31, y.st_ino + 1), "");  // not the inode that ran: refused
  EXPECT_EQ(exec(32, y.st_ino), "dash");
  const auto misses = n.id->stats().cache_misses;
  EXPECT_EQ(exec(33, y.st_ino), "dash");
  EXPECT_EQ(n.id->stats().cache_misses, misses);
}

// Killed at exec and its parent outside the container (`kubectl exec`):
// the path is opened in the root of the process the container's mount
// namespace was first learnt from, if it still lives there.
TEST(ExeIdentifier, AGoneProcessWithAParentElsewhereIsIdentifiedInTheContainersRoot) {
  FakeNode n;
  support::TempDir root;
  make_exec(root.path() + "/tmp/xmrig", "the dash program");
  const std::string first = n.proc.path() + "/40";
  fs::create_directories(first + "/ns");
  make_exec(first + "/ns/mnt", "");
  fs::create_symlink(root.path(), first + "/root");
  struct stat ns {
  }, x{};
  ASSERT_EQ(::stat((first + "/ns/mnt").c_str(), &ns), 0);
  ASSERT_EQ(::stat((root.path() + "/tmp/xmrig").c_str(), &x), 0);
  auto exec = [&](std::uint32_t pid, std::uint32_t ppid, const std::string& path, const struct stat& st) {
    event::Event ev;
    ev.hdr.type = event::Type::kExec;
    ev.hdr.pid = pid;
    ev.hdr.ppid = ppid;
    ev.hdr.mnt_ns = static_cast<std::uint32_t>(ns.st_ino);
    ev.hdr.comm = "x";
    event::ExecData d;
    d.exe = d.filename = path;
    d.args = {"x"};
    d.exe_ino = st.st_ino;
    d.exe_dev = st.st_dev;
    d.exe_ctime_ns = FileKey::of(st).ctime_ns;
    ev.data = d;
    n.id->enrich(ev);
    return ev.as<event::ExecData>()->exe_known_as;
  };
  // The container's first process (pid 40, alive) execs: its root is learnt.
  n.exe(40, n.host.path() + "/usr/bin/python3");
  struct stat py {};
  ASSERT_EQ(::stat((n.host.path() + "/usr/bin/python3").c_str(), &py), 0);
  exec(40, 1, "/usr/bin/python3", py);
  // pid 41 is gone, its parent 7 is not in the namespace (no /proc entry).
  EXPECT_EQ(exec(41, 7, "/tmp/xmrig", x), "dash");
  // Once pid 40 is gone (or another namespace's), nothing is taken.
  fs::remove_all(first);
  make_exec(root.path() + "/tmp/other", "the dash program");
  struct stat o {};
  ASSERT_EQ(::stat((root.path() + "/tmp/other").c_str(), &o), 0);
  EXPECT_EQ(exec(42, 7, "/tmp/other", o), "");
}

}  // namespace
}  // namespace vigil::ident
