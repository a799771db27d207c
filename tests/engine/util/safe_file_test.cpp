// The files vigil writes as root (issue 16, items 8 and 9): no final symbolic
// link followed, no directory that others can write to, exact modes whatever
// the umask.
#include "engine/util/safe_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace vigil::util {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

bool write_text(int fd, const std::string& text) {
  return ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

// Sets the umask for the life of the object.
class Umask {
 public:
  explicit Umask(mode_t m) : old_(::umask(m)) {}
  ~Umask() { ::umask(old_); }

 private:
  mode_t old_;
};

class SafeFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "vigil-safe-file-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    victim_ = dir_ + "/victim.txt";
    spit(victim_, "precious\n");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string sub(const std::string& name, mode_t mode) {
    const std::string p = dir_ + "/" + name;
    EXPECT_EQ(::mkdir(p.c_str(), 0700), 0);
    EXPECT_EQ(::chmod(p.c_str(), mode), 0);
    return p;
  }

  std::string dir_, victim_;
};

TEST_F(SafeFileTest, NewFilesGetExactlyTheirModeWhateverTheUmask) {
  for (mode_t mask : {mode_t{0}, mode_t{0277}}) {
    Umask u(mask);
    const std::string a = dir_ + "/a" + std::to_string(mask), c = dir_ + "/c" + std::to_string(mask);
    auto fa = open_for_write(a, OpenMode::kAppend, kFileMode);
    ASSERT_TRUE(fa) << fa.error().message;
    ::close(*fa);
    auto fc = open_for_write(c, OpenMode::kTruncate, kCaptureMode);
    ASSERT_TRUE(fc) << fc.error().message;
    ::close(*fc);
    EXPECT_EQ(mode_of(a), 0600u) << "umask " << mask;
    EXPECT_EQ(mode_of(c), 0640u) << "umask " << mask;
  }
}

TEST_F(SafeFileTest, AppendAppendsAndTruncateEmpties) {
  const std::string p = dir_ + "/f";
  spit(p, "old\n");
  auto fa = open_for_write(p, OpenMode::kAppend, kFileMode);
  ASSERT_TRUE(fa) << fa.error().message;
  ASSERT_TRUE(write_text(*fa, "new\n"));
  ::close(*fa);
  EXPECT_EQ(slurp(p), "old\nnew\n");
  auto ft = open_for_write(p, OpenMode::kTruncate, kFileMode);
  ASSERT_TRUE(ft) << ft.error().message;
  ASSERT_TRUE(write_text(*ft, "x"));
  ::close(*ft);
  EXPECT_EQ(slurp(p), "x");
}

TEST_F(SafeFileTest, ASymbolicLinkAtThePathIsRefusedAndItsTargetUntouched) {
  const std::string link = dir_ + "/link.vcap";
  ASSERT_EQ(::symlink("victim.txt", link.c_str()), 0);
  for (OpenMode how : {OpenMode::kAppend, OpenMode::kTruncate}) {
    auto fd = open_for_write(link, how, kCaptureMode);
    ASSERT_FALSE(fd);
    EXPECT_EQ(fd.error().kind, Error::Kind::kBadInput);
    EXPECT_NE(fd.error().message.find(link), std::string::npos) << fd.error().message;
    EXPECT_NE(fd.error().message.find("symbolic link"), std::string::npos) << fd.error().message;
  }
  // A dangling link is not created through either.
  const std::string dangling = dir_ + "/dangling";
  ASSERT_EQ(::symlink("created-through-link", dangling.c_str()), 0);
  EXPECT_FALSE(open_for_write(dangling, OpenMode::kTruncate, kFileMode));
  EXPECT_FALSE(fs::exists(dir_ + "/created-through-link"));
  EXPECT_EQ(slurp(victim_), "precious\n");
}

TEST_F(SafeFileTest, AHardLinkedFileIsRefusedNotTruncated) {
  const std::string hard = dir_ + "/hard.vcap";
  ASSERT_EQ(::link(victim_.c_str(), hard.c_str()), 0);
  auto fd = open_for_write(hard, OpenMode::kTruncate, kCaptureMode);
  ASSERT_FALSE(fd);
  EXPECT_NE(fd.error().message.find("hard links"), std::string::npos) << fd.error().message;
  EXPECT_EQ(slurp(victim_), "precious\n");
}

TEST_F(SafeFileTest, AFifoOrADirectoryIsRefusedWithoutBlocking) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto f = open_for_write(fifo, OpenMode::kAppend, kFileMode);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().kind, Error::Kind::kBadInput);
  EXPECT_FALSE(open_for_write(dir_ + "/", OpenMode::kAppend, kFileMode));
}

TEST_F(SafeFileTest, ADirectoryWritableByOthersIsRefusedNamingIt) {
  const std::string ww = sub("ww", 0777);
  auto fd = open_for_write(ww + "/alerts.json", OpenMode::kAppend, kFileMode);
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().kind, Error::Kind::kBadInput);
  EXPECT_NE(fd.error().message.find(ww), std::string::npos) << fd.error().message;
  EXPECT_NE(fd.error().message.find("writable by group or others"), std::string::npos) << fd.error().message;
  EXPECT_FALSE(fs::exists(ww + "/alerts.json"));
  // Group-writable is refused too; so is a writable directory higher up.
  const std::string gw = sub("gw", 0770);
  EXPECT_FALSE(open_for_write(gw + "/alerts.json", OpenMode::kAppend, kFileMode));
  ASSERT_EQ(::mkdir((ww + "/deeper").c_str(), 0755), 0);
  EXPECT_FALSE(open_for_write(ww + "/deeper/alerts.json", OpenMode::kAppend, kFileMode));
  EXPECT_FALSE(make_dirs(ww + "/spool/x", kDirMode));
  EXPECT_FALSE(fs::exists(ww + "/spool"));
}

TEST_F(SafeFileTest, AStickyDirectoryLikeTmpIsAccepted) {
  const std::string sticky = sub("sticky", 01777);
  auto fd = open_for_write(sticky + "/run.vcap", OpenMode::kTruncate, kCaptureMode);
  ASSERT_TRUE(fd) << fd.error().message;
  ::close(*fd);
}

TEST_F(SafeFileTest, ALinkInTheDirectoryPartIsFollowedWhenItIsTrusted) {
  const std::string real = sub("real", 0755);
  ASSERT_EQ(::symlink("real", (dir_ + "/alias").c_str()), 0);
  auto fd = open_for_write(dir_ + "/alias/out.json", OpenMode::kAppend, kFileMode);
  ASSERT_TRUE(fd) << fd.error().message;
  ::close(*fd);
  EXPECT_TRUE(fs::is_regular_file(real + "/out.json"));
  // A link that leads into a directory others can write to is no way around the rule.
  const std::string ww = sub("ww", 0777);
  ASSERT_EQ(::symlink("ww", (dir_ + "/to-ww").c_str()), 0);
  EXPECT_FALSE(open_for_write(dir_ + "/to-ww/out.json", OpenMode::kAppend, kFileMode));
}

// Ownership by another user needs root to set up.
TEST_F(SafeFileTest, WhatAnotherUserOwnsIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown test files to another user";
  const std::string theirs = sub("theirs", 0755);
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  auto in_dir = open_for_write(theirs + "/x.json", OpenMode::kAppend, kFileMode);
  ASSERT_FALSE(in_dir);
  EXPECT_NE(in_dir.error().message.find("owned by uid 65534"), std::string::npos) << in_dir.error().message;
  // A file another user planted in a sticky directory (their own /tmp file).
  const std::string sticky = sub("sticky", 01777);
  const std::string planted = sticky + "/run.vcap";
  spit(planted, "theirs\n");
  ASSERT_EQ(::chown(planted.c_str(), 65534, 65534), 0);
  EXPECT_FALSE(open_for_write(planted, OpenMode::kTruncate, kCaptureMode));
  EXPECT_EQ(slurp(planted), "theirs\n");
  // A directory link another user planted in a sticky directory.
  const std::string link = sticky + "/caps";
  ASSERT_EQ(::symlink(dir_.c_str(), link.c_str()), 0);
  ASSERT_EQ(::lchown(link.c_str(), 65534, 65534), 0);
  EXPECT_FALSE(open_for_write(link + "/run.vcap", OpenMode::kTruncate, kCaptureMode));
  EXPECT_FALSE(fs::exists(dir_ + "/run.vcap"));
}

TEST_F(SafeFileTest, MakeDirsCreatesEveryLevelAt0700WhateverTheUmask) {
  for (mode_t mask : {mode_t{0}, mode_t{0777}}) {
    Umask u(mask);
    const std::string top = dir_ + "/state" + std::to_string(mask);
    ASSERT_TRUE(make_dirs(top + "/spool/webhook-0", kDirMode));
    ASSERT_TRUE(make_dirs(top + "/flight", kDirMode));
    for (const char* rel : {"", "/spool", "/spool/webhook-0", "/flight"}) {
      EXPECT_EQ(mode_of(top + rel), 0700u) << top + rel << " under umask " << mask;
    }
  }
}

TEST_F(SafeFileTest, MakeDirsLeavesAnExistingDirectoryAsItIs) {
  const std::string d = sub("shared", 0750);
  ASSERT_TRUE(make_dirs(d, kDirMode));
  EXPECT_EQ(mode_of(d), 0750u);
}

TEST_F(SafeFileTest, RotateRenamesAndRemovesLinksThemselves) {
  const std::string p = dir_ + "/out.json";
  spit(p, "0");
  spit(p + ".1", "1");
  ASSERT_EQ(::symlink("victim.txt", (p + ".2").c_str()), 0);  // the oldest, removed
  ASSERT_TRUE(rotate(p, 2));
  EXPECT_EQ(slurp(p + ".1"), "0");
  EXPECT_EQ(slurp(p + ".2"), "1");
  EXPECT_FALSE(fs::exists(p));
  EXPECT_EQ(slurp(victim_), "precious\n");
  ASSERT_TRUE(rotate(p + ".1", 0));
  EXPECT_FALSE(fs::exists(p + ".1"));
}

}  // namespace
}  // namespace vigil::util
