#include "engine/baseline/profile_file.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/baseline/key.h"

namespace vigil::baseline {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/vigil-baseline-XXXXXX";
    path = mkdtemp(tmpl);
    chmod(path.c_str(), 0700);
  }
  ~TempDir() { fs::remove_all(path); }
};

Profile sample() {
  Profile p("docker.io/vllm/vllm-openai:v0.6.3");
  Caps caps;
  p.set_first_seen(1700000000000000000ull);
  p.add_exe("/usr/bin/python3.12", std::string(64, 'a'), caps, 1700000000000000001ull);
  p.add_exe("/bin/sh", "", caps, 1700000000000000002ull);
  Destination d;
  EXPECT_TRUE(parse_destination("10.96.0.0/24:53/udp", d));
  p.add_destination(d, caps, 1700000000000000003ull);
  p.add_file("/etc/hosts", caps, 1700000000000000004ull);
  p.add_gpu_class(0xc7c0, caps, 1700000000000000005ull);
  p.add_full(Set::kFiles, 3);
  p.lock(1700000000000000009ull, "time");
  return p;
}

TEST(BaselineFile, WrittenThenReadIsTheSameProfile) {
  TempDir dir;
  const Profile p = sample();
  ASSERT_TRUE(static_cast<bool>(write_profile(dir.path, p)));
  const fs::path file = dir.path / file_name_for(p.key());
  EXPECT_TRUE(fs::exists(file));
  EXPECT_FALSE(fs::exists(file.string() + ".tmp"));
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  auto back = read_profile(file, Caps{});
  ASSERT_TRUE(static_cast<bool>(back));
  EXPECT_EQ(encode_profile(*back), encode_profile(p));
  EXPECT_EQ(back->phase(), Phase::kLocked);
  EXPECT_EQ(back->lock_cause(), "time");
  EXPECT_TRUE(back->has_exe("/usr/bin/python3.12", std::string(64, 'a')));
  EXPECT_FALSE(back->has_exe("/usr/bin/python3.12", std::string(64, 'b')));
  EXPECT_EQ(back->full()[static_cast<std::size_t>(Set::kFiles)], 3u);
}

std::string error_of(std::string_view text, const Caps& caps = Caps{}) {
  auto r = decode_profile(text, "/x/p.json", caps);
  return r ? "" : r.error().message;
}

TEST(BaselineFile, HostileFilesAreRefusedNamingTheFileAndTheReason) {
  EXPECT_EQ(error_of("{"), "/x/p.json: not valid JSON");
  EXPECT_EQ(error_of("[]"), "/x/p.json: not a JSON object");
  EXPECT_NE(error_of(R"({"format":"other","version":1})").find("\"format\""), std::string::npos);
  EXPECT_NE(error_of(R"({"format":"vigil-baseline","version":2,"workload":"a","state":"learning"})").find("version"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format":"vigil-baseline","version":1,"workload":"a","state":"sleeping"})").find("\"state\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format":"vigil-baseline","version":1,"workload":"a","state":"locked","files":"x"})")
                .find("\"files\" must be a list"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format":"vigil-baseline","version":1,"workload":"a","state":"locked","destinations":["x"]})")
                .find("\"destinations\"[0]"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format":"vigil-baseline","version":1,"workload":"a","state":"locked",
                          "exes":[{"path":"/a","sha256":["zz"]}]})")
                .find("SHA-256"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format":"vigil-baseline","version":1,"workload":"a","state":"locked",
                          "exes":[{"path":"/a"},{"path":"/a"}]})")
                .find("listed twice"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format":"vigil-baseline","version":1,"workload":"a","state":"locked","gpu_classes":[-1]})")
                .find("gpu_classes"),
            std::string::npos);
  Caps small;
  small.files = 1;
  EXPECT_NE(
      error_of(R"({"format":"vigil-baseline","version":1,"workload":"a","state":"locked","files":["/a","/b"]})", small)
          .find("more than the cap of 1 (baseline.max_files)"),
      std::string::npos);
  EXPECT_EQ(
      error_of(R"({"format":"vigil-baseline","version":1,"workload":"a","state":"locked","files":["/a"]})", small), "");
}

TEST(BaselineFile, OversizedFileIsRefusedBeforeItIsParsed) {
  TempDir dir;
  const fs::path file = dir.path / file_name_for("a");
  {
    std::ofstream out(file);
    out << std::string(kMaxFileBytes + 10, ' ');
  }
  auto r = read_profile(file, Caps{});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find(file.string()), std::string::npos);
  EXPECT_NE(r.error().message.find("larger than"), std::string::npos);
}

TEST(BaselineFile, AFileNamedForAnotherWorkloadIsRefused) {
  TempDir dir;
  Profile p("a:1");
  ASSERT_TRUE(static_cast<bool>(write_profile(dir.path, p)));
  fs::rename(dir.path / file_name_for("a:1"), dir.path / file_name_for("b:1"));
  auto r = read_profile(dir.path / file_name_for("b:1"), Caps{});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("holds workload 'a:1'"), std::string::npos);
}

TEST(BaselineFile, ASymlinkIsNotFollowed) {
  TempDir dir;
  Profile p("a:1");
  ASSERT_TRUE(static_cast<bool>(write_profile(dir.path, p)));
  fs::rename(dir.path / file_name_for("a:1"), dir.path / "real");
  fs::create_symlink(dir.path / "real", dir.path / file_name_for("a:1"));
  EXPECT_FALSE(read_profile(dir.path / file_name_for("a:1"), Caps{}));
}

}  // namespace
}  // namespace vigil::baseline
