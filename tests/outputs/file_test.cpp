// File transport (JSON lines, rotation by size and age, kept count) and the
// spool's on-disk behaviour.
#include "outputs/file_transport.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "outputs/router.h"
#include "outputs/spool.h"
#include "tests/outputs/test_alert.h"

namespace vigil::outputs {
namespace {

using namespace std::chrono_literals;

std::string tmpdir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("vigil-file-test-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Sets the umask for the life of the object.
class Umask {
 public:
  explicit Umask(mode_t m) : old_(::umask(m)) {}
  ~Umask() { ::umask(old_); }

 private:
  mode_t old_;
};

Message msg(std::string body) {
  Message m;
  m.body = std::move(body);
  return m;
}

TEST(FileTransport, WritesJsonLinesThroughTheRouter) {
  const std::string dir = tmpdir("router");
  auto r = Router::from_config(YAML::Load("[{type: file, path: '" + dir + "/alerts.json', fsync: batch}]"),
                               testing::router_options("h"));
  ASSERT_TRUE(r) << r.error().message;
  auto a = testing::golden_alert();
  a.output = "evil\n{\"rule\":\"forged\"}";
  for (int i = 0; i < 10; ++i) {
    a.uuid = std::to_string(i);
    (*r)->publish(std::make_shared<const event::Alert>(a));
  }
  (*r)->shutdown(2s);
  const auto lines = lines_of(dir + "/alerts.json");
  ASSERT_EQ(lines.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    const auto j = nlohmann::json::parse(lines[i]);
    EXPECT_EQ(j["uuid"], std::to_string(i));
    EXPECT_EQ(j["rule"], "Shell in inference pod");
  }
  EXPECT_EQ((*r)->stats()[0].sent, 10u);
  EXPECT_EQ(std::filesystem::status(dir + "/alerts.json").permissions() & std::filesystem::perms::others_read,
            std::filesystem::perms::none);
  std::filesystem::remove_all(dir);
}

TEST(FileTransport, RotatesBySizeKeepingN) {
  const std::string dir = tmpdir("size");
  FileOptions o;
  o.path = dir + "/a.log";
  o.rotate_bytes = 100;
  o.keep = 2;
  auto t = FileTransport::open(o);
  ASSERT_TRUE(t);
  for (int i = 0; i < 10; ++i) {
    std::vector<Message> b = {msg(std::string(39, 'a' + i))};  // 40 bytes a line
    ASSERT_EQ((*t)->send(b).code, SendCode::kOk);
  }
  (*t)->close();
  // 2 lines per file: a.log has i=8,9; a.log.1 has 6,7; a.log.2 has 4,5; older deleted.
  EXPECT_EQ(lines_of(o.path), (std::vector<std::string>{std::string(39, 'i'), std::string(39, 'j')}));
  EXPECT_EQ(lines_of(o.path + ".1")[0], std::string(39, 'g'));
  EXPECT_EQ(lines_of(o.path + ".2")[0], std::string(39, 'e'));
  EXPECT_FALSE(std::filesystem::exists(o.path + ".3"));
  std::filesystem::remove_all(dir);
}

TEST(FileTransport, RotatesByAge) {
  const std::string dir = tmpdir("age");
  FileOptions o;
  o.path = dir + "/a.log";
  o.rotate_age = std::chrono::seconds(1);
  auto t = FileTransport::open(o);
  ASSERT_TRUE(t);
  std::vector<Message> b = {msg("first")};
  ASSERT_EQ((*t)->send(b).code, SendCode::kOk);
  std::this_thread::sleep_for(1100ms);
  b = {msg("second")};
  ASSERT_EQ((*t)->send(b).code, SendCode::kOk);
  (*t)->close();
  EXPECT_EQ(lines_of(o.path), std::vector<std::string>{"second"});
  EXPECT_EQ(lines_of(o.path + ".1"), std::vector<std::string>{"first"});
  std::filesystem::remove_all(dir);
}

TEST(FileTransport, UnwritablePathIsAnError) {
  FileOptions o;
  o.path = "/nonexistent-dir-vigil/x.log";
  auto t = FileTransport::open(o);
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("/nonexistent-dir-vigil/x.log"), std::string::npos);
}

// Issue 16, item 8: a symbolic link at the configured path is refused (exit 2
// at start-up), and the file it points to is left as it was.
TEST(FileTransport, SymlinkAtThePathIsRefusedAndItsTargetUntouched) {
  const std::string dir = tmpdir("symlink");
  const std::string victim = dir + "/victim.txt", link = dir + "/alerts.json";
  std::ofstream(victim) << "precious\n";
  ASSERT_EQ(::symlink("victim.txt", link.c_str()), 0);
  auto r = Router::from_config(YAML::Load("[{type: file, path: '" + link + "'}]"), testing::router_options("h"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, Error::Kind::kBadInput);
  EXPECT_NE(r.error().message.find(link), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("symbolic link"), std::string::npos) << r.error().message;
  EXPECT_EQ(read_all(victim), "precious\n");
  std::filesystem::remove_all(dir);
}

TEST(FileTransport, DirectoryWritableByOthersIsRefused) {
  const std::string dir = tmpdir("ww");
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  FileOptions o;
  o.path = dir + "/alerts.json";
  auto t = FileTransport::open(o);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().kind, Error::Kind::kBadInput);
  EXPECT_NE(t.error().message.find("writable by group or others"), std::string::npos) << t.error().message;
  EXPECT_FALSE(std::filesystem::exists(o.path));
  std::filesystem::remove_all(dir);
}

// Issue 16, item 9: the alert file is 0600 whatever the umask (one that
// allows more, one that allows less).
TEST(FileTransport, CreatedOwnerOnlyWhateverTheUmask) {
  for (mode_t mask : {mode_t{0}, mode_t{0277}}) {
    const std::string dir = tmpdir("umask" + std::to_string(mask));
    Umask u(mask);
    FileOptions o;
    o.path = dir + "/alerts.json";
    o.rotate_bytes = 5;
    auto t = FileTransport::open(o);
    ASSERT_TRUE(t) << t.error().message;
    std::vector<Message> b = {msg("one"), msg("two")};
    ASSERT_EQ((*t)->send(b).code, SendCode::kOk);
    (*t)->close();
    EXPECT_EQ(mode_of(o.path), 0600u) << "umask " << mask;
    EXPECT_EQ(mode_of(o.path + ".1"), 0600u) << "umask " << mask;  // the file before the rotation
    std::filesystem::remove_all(dir);
  }
}

TEST(Spool, KeepsOrderAcrossSegmentsAndReopen) {
  const std::string dir = tmpdir("spool");
  const std::string big(300000, 'x');  // ~14 records per 4 MiB segment
  {
    auto s = Spool::open(dir, 64ULL << 20);
    ASSERT_TRUE(s);
    for (int i = 0; i < 40; ++i) {
      Message m = msg(big);
      m.uuid = std::to_string(i);
      m.time_ns = 1000 + static_cast<std::uint64_t>(i);
      ASSERT_TRUE((*s)->append(m));
    }
    auto first = (*s)->peek(10, 64ULL << 20);
    ASSERT_EQ(first.size(), 10u);
    ASSERT_TRUE((*s)->pop(10));
    EXPECT_EQ((*s)->count(), 30u);
  }
  std::size_t segs = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    segs += e.path().extension() == ".seg";
  }
  EXPECT_GE(segs, 3u);
  auto s = Spool::open(dir, 64ULL << 20);
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)->count(), 30u);
  int next = 10;
  while (!(*s)->empty()) {
    auto batch = (*s)->peek(7, 64ULL << 20);
    ASSERT_FALSE(batch.empty());
    for (const auto& m : batch) {
      EXPECT_EQ(m.uuid, std::to_string(next));
      EXPECT_EQ(m.time_ns, 1000u + static_cast<std::uint64_t>(next));
      EXPECT_EQ(m.body.size(), big.size());
      ++next;
    }
    ASSERT_TRUE((*s)->pop(batch.size()));
  }
  EXPECT_EQ(next, 40);
  EXPECT_EQ((*s)->bytes(), 0u);
  std::filesystem::remove_all(dir);
}

TEST(Spool, TornTailIsCutOffAtOpen) {
  const std::string dir = tmpdir("torn");
  {
    auto s = Spool::open(dir, 1 << 20);
    ASSERT_TRUE(s);
    for (int i = 0; i < 3; ++i) {
      Message m = msg("alert");
      m.uuid = std::to_string(i);
      ASSERT_TRUE((*s)->append(m));
    }
  }
  std::string seg;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".seg") seg = e.path();
  }
  ASSERT_FALSE(seg.empty());
  std::filesystem::resize_file(seg, std::filesystem::file_size(seg) - 3);  // crash mid-write
  auto s = Spool::open(dir, 1 << 20);
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)->count(), 2u);
  EXPECT_EQ((*s)->corrupt_records(), 1u);
  Message m = msg("after");
  m.uuid = "3";
  ASSERT_TRUE((*s)->append(m));
  auto all = (*s)->peek(10, 1 << 20);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].uuid, "3");
  std::filesystem::remove_all(dir);
}

TEST(Spool, RefusesBeyondItsBound) {
  const std::string dir = tmpdir("bound");
  auto s = Spool::open(dir, 4096);
  ASSERT_TRUE(s);
  int ok = 0;
  for (int i = 0; i < 100; ++i) ok += (*s)->append(msg(std::string(100, 'z'))).ok();
  EXPECT_LT(ok, 100);
  EXPECT_LE((*s)->bytes(), 4096u);
  std::filesystem::remove_all(dir);
}

// Issue 16, item 8: a link at a spool segment is refused, never read, cut or
// appended to through.
TEST(Spool, SymlinkAtASegmentIsRefusedAndItsTargetUntouched) {
  const std::string dir = tmpdir("spool-link");
  const std::string victim = tmpdir("spool-victim") + "/victim";
  std::ofstream(victim) << "not a spool record, would be cut off as a torn tail";
  // In a spool that has segments...
  {
    auto s = Spool::open(dir, 1 << 20);
    ASSERT_TRUE(s);
    ASSERT_TRUE((*s)->append(msg("alert")));
  }
  std::string seg;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".seg") seg = e.path();
  }
  ASSERT_FALSE(seg.empty());
  std::filesystem::remove(seg);
  ASSERT_EQ(::symlink(victim.c_str(), seg.c_str()), 0);
  auto s = Spool::open(dir, 1 << 20);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().kind, Error::Kind::kBadInput);
  EXPECT_NE(s.error().message.find(seg), std::string::npos) << s.error().message;
  // ...and in an empty one, at the name the first segment will have.
  const std::string empty = tmpdir("spool-empty");
  ASSERT_EQ(::symlink(victim.c_str(), (empty + "/00000000000000000001.seg").c_str()), 0);
  EXPECT_FALSE(Spool::open(empty, 1 << 20));
  EXPECT_EQ(read_all(victim), "not a spool record, would be cut off as a torn tail");
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(empty);
  std::filesystem::remove_all(std::filesystem::path(victim).parent_path());
}

TEST(Spool, SymlinkAtTheCursorIsNotWrittenThrough) {
  const std::string dir = tmpdir("cursor-link");
  const std::string victim = tmpdir("cursor-victim") + "/victim";
  std::ofstream(victim) << "precious\n";
  auto s = Spool::open(dir, 1 << 20);
  ASSERT_TRUE(s);
  ASSERT_TRUE((*s)->append(msg("a")));
  ASSERT_TRUE((*s)->append(msg("b")));
  ASSERT_EQ(::symlink(victim.c_str(), (dir + "/cursor").c_str()), 0);
  ASSERT_EQ((*s)->peek(1, 1 << 20).size(), 1u);
  Status popped = (*s)->pop(1);
  ASSERT_FALSE(popped);
  EXPECT_NE(popped.error().message.find("symbolic link"), std::string::npos) << popped.error().message;
  EXPECT_EQ(read_all(victim), "precious\n");
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(std::filesystem::path(victim).parent_path());
}

// Issue 16, item 9: under umask 000 the state directory, state/spool and the
// sink's spool were created 0777. Every level vigil makes is 0700, its files 0600.
TEST(Spool, DirectoriesAndFilesAreOwnerOnlyUnderUmaskZero) {
  const std::string base = tmpdir("spool-umask");
  const std::string state = base + "/state";
  {
    Umask u(0);
    auto r = Router::from_config(YAML::Load("[{type: webhook, name: hook, url: 'http://127.0.0.1:9/', spool: true}]"),
                                 testing::router_options("h", state));
    ASSERT_TRUE(r) << r.error().message;
    (*r)->shutdown(100ms);
    auto s = Spool::open(state + "/spool/hook", 1 << 20);
    ASSERT_TRUE(s);
    ASSERT_TRUE((*s)->append(msg("a")));
    ASSERT_EQ((*s)->peek(1, 1 << 20).size(), 1u);
    ASSERT_TRUE((*s)->pop(1));
  }
  for (const std::string& d : {state, state + "/spool", state + "/spool/hook"}) {
    EXPECT_EQ(mode_of(d), 0700u) << d;
  }
  for (const auto& e : std::filesystem::directory_iterator(state + "/spool/hook")) {
    EXPECT_EQ(mode_of(e.path()), 0600u) << e.path();
  }
  EXPECT_TRUE(std::filesystem::exists(state + "/spool/hook/cursor"));
  std::filesystem::remove_all(base);
}

// A spool under a state directory others can write to is refused at start-up.
TEST(Spool, StateDirectoryWritableByOthersIsRefused) {
  const std::string base = tmpdir("spool-ww");
  ASSERT_EQ(::chmod(base.c_str(), 0777), 0);
  auto r = Router::from_config(YAML::Load("[{type: webhook, name: hook, url: 'http://127.0.0.1:9/', spool: true}]"),
                               testing::router_options("h", base + "/state"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, Error::Kind::kBadInput);
  EXPECT_NE(r.error().message.find(base), std::string::npos) << r.error().message;
  EXPECT_FALSE(std::filesystem::exists(base + "/state"));
  std::filesystem::remove_all(base);
}

}  // namespace
}  // namespace vigil::outputs
