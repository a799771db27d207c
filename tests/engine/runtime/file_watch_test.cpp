// runtime::FileWatch: a change of a watched file's content (an edit, an
// editor's replace, a Kubernetes ConfigMap's `..data` symlink swap, a rule
// file added to a watched directory) is reported once the writes settle; a
// touch or a rewrite with the same bytes is not.
#include "engine/runtime/file_watch.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/support/temp_dir.h"

namespace vigil::runtime {
namespace {

using namespace std::chrono_literals;
using Clock = FileWatch::Clock;

class FileWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto w = FileWatch::create({.quiet = 50ms, .max_delay = 1000ms, .max_dirs = 16, .log = nullptr});
    ASSERT_TRUE(w) << w.error().message;
    w_ = std::move(*w);
  }
  // Feeds the watch its events for `for_how_long` and returns what it
  // reported (nullopt: nothing), as the runner's loop would.
  std::optional<std::string> settle(std::chrono::milliseconds for_how_long = 400ms) {
    const auto end = Clock::now() + for_how_long;
    while (Clock::now() < end) {
      pollfd p{w_->fd(), POLLIN, 0};
      if (poll(&p, 1, 10) > 0) w_->on_readable(Clock::now());
      if (auto what = w_->changed(Clock::now())) return what;
    }
    return std::nullopt;
  }
  support::TempDir dir_{"vigil-file-watch"};
  std::unique_ptr<FileWatch> w_;
};

TEST_F(FileWatchTest, AnEditIsAChangeAndATouchIsNot) {
  const std::string cfg = dir_.write("vigil.yaml", "outputs: []\n");
  w_->set_paths({cfg});
  EXPECT_EQ(settle(150ms), std::nullopt);
  // The same bytes again, and a new mtime: no change.
  dir_.write("vigil.yaml", "outputs: []\n");
  std::filesystem::last_write_time(cfg, std::filesystem::file_time_type::clock::now());
  EXPECT_EQ(settle(), std::nullopt);
  // Written in place, in two steps (as an editor may): one change.
  {
    std::ofstream out(cfg, std::ios::trunc);
    out << "outputs:\n";
    out.flush();
    std::this_thread::sleep_for(20ms);
    out << "  - type: stdout\n";
  }
  EXPECT_EQ(settle(), cfg);
  EXPECT_EQ(settle(150ms), std::nullopt);
}

// A ConfigMap volume: vigil.yaml -> ..data/vigil.yaml, ..data -> a timestamped
// directory; an update writes a new directory and renames a new ..data link
// over the old one, then removes the old directory.
TEST_F(FileWatchTest, AConfigMapSymlinkSwapIsAChange) {
  dir_.write("..2026_11_26_05_00_00.1/vigil.yaml", "outputs: []\n");
  dir_.symlink("..data", "..2026_11_26_05_00_00.1");
  const std::string cfg = dir_.symlink("vigil.yaml", "..data/vigil.yaml");
  w_->set_paths({cfg});
  dir_.write("..2026_11_26_05_01_00.2/vigil.yaml", "outputs: [{type: stdout}]\n");
  dir_.symlink("..data", "..2026_11_26_05_01_00.2");  // an atomic rename over the old link
  std::filesystem::remove_all(dir_.path() + "/..2026_11_26_05_00_00.1");
  EXPECT_EQ(settle(), cfg);
  // The watch follows the new target: an edit of it in place is seen too.
  dir_.write("..2026_11_26_05_01_00.2/vigil.yaml", "outputs: [{type: stdout, format: text}]\n");
  EXPECT_EQ(settle(), cfg);
}

TEST_F(FileWatchTest, ARuleFileAddedToAWatchedDirectoryIsAChange) {
  const std::string rules = dir_.mkdirs("rules");
  dir_.write("rules/a.yaml", "- list: a\n  items: []\n");
  w_->set_paths({rules});
  // A file rule loading does not read: no change.
  dir_.write("rules/notes.txt", "hello");
  EXPECT_EQ(settle(), std::nullopt);
  dir_.write("rules/b.yml", "- list: b\n  items: []\n");
  EXPECT_EQ(settle(), rules);
  std::filesystem::remove(dir_.path() + "/rules/a.yaml");
  EXPECT_EQ(settle(), rules);
}

TEST_F(FileWatchTest, AFileThatAppearsLaterIsAChange) {
  const std::string cfg = dir_.path() + "/later.yaml";
  w_->set_paths({cfg});
  dir_.write("later.yaml", "outputs: []\n");
  EXPECT_EQ(settle(), cfg);
}

TEST_F(FileWatchTest, TheNumberOfWatchedDirectoriesIsCapped) {
  std::vector<std::string> paths;
  for (int i = 0; i < 40; ++i) paths.push_back(dir_.write("d" + std::to_string(i) + "/f.yaml", "x: 1\n"));
  w_->set_paths(paths);
  EXPECT_EQ(w_->watched_dirs(), 16u);
}

// dir_suffixes (the baseline profiles): a rewritten *.json in the watched
// directory is a change; other files there are not.
TEST_F(FileWatchTest, DirectorySuffixesPickTheFilesThatCount) {
  auto w = FileWatch::create({.quiet = 50ms, .max_delay = 1000ms, .max_dirs = 16, .dir_suffixes = {".json"}});
  ASSERT_TRUE(w) << w.error().message;
  w_ = std::move(*w);
  dir_.write("profiles/a.json", "{}");
  const std::string d = dir_.path() + "/profiles";
  w_->set_paths({d});
  EXPECT_EQ(settle(150ms), std::nullopt);
  dir_.write("profiles/notes.yaml", "x: 1\n");
  EXPECT_EQ(settle(), std::nullopt);
  dir_.write("profiles/a.json", "{\"state\": \"locked\"}");  // replaced by rename, as vigil baseline lock does
  EXPECT_EQ(settle(), d);
  dir_.write("profiles/b.json", "{}");
  EXPECT_EQ(settle(), d);
}

}  // namespace
}  // namespace vigil::runtime
