// The CUDA plugin end to end, through the C ABI, against the stand-in
// libcuda: it finds the library in the callers' /proc/PID/maps, attaches once
// per distinct file (a second copy at another path is a second file),
// reports the entry points a file lacks, and its events carry the exact
// counts and arguments the callers used. Needs root (uprobes).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/plugins/cuda/abi_client.h"

namespace fs = std::filesystem;
using vigil::cuda::test::AbiClient;
using vigil::cuda::test::Extracted;

namespace {

// A cuda_caller process with a pipe to its stdin and from its stdout.
class Caller {
 public:
  Caller(const std::string& lib, int n) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      std::string ns = std::to_string(n);
      execl(VIGIL_CUDA_CALLER, VIGIL_CUDA_CALLER, lib.c_str(), ns.c_str(), "--wait", nullptr);
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = fdopen(out[0], "r");
  }
  ~Caller() {
    if (to_ >= 0) close(to_);
    if (from_) fclose(from_);
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  std::string line() {
    char buf[256] = {};
    if (!from_ || !fgets(buf, sizeof(buf), from_)) return {};
    std::string s(buf);
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
  void go() { [[maybe_unused]] ssize_t n = write(to_, "go\n", 3); }
  int wait_exit() {
    int st = 0;
    waitpid(pid_, &st, 0);
    reaped_ = true;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int to_ = -1;
  FILE* from_ = nullptr;
  bool reaped_ = false;
};

struct Collected {
  std::vector<Extracted> all;
  std::vector<const Extracted*> of(std::uint32_t pid, const std::string& name) const {
    std::vector<const Extracted*> v;
    for (const Extracted& e : all)
      if (e.pid == pid && e.name == name) v.push_back(&e);
    return v;
  }
  std::uint64_t launches(std::uint32_t pid) const {
    std::uint64_t n = 0;
    for (const Extracted* e : of(pid, "cuda_launches")) n += e->u64("cuda.launches");
    return n;
  }
  std::uint64_t graphs(std::uint32_t pid) const {
    std::uint64_t n = 0;
    for (const Extracted* e : of(pid, "cuda_launches")) n += e->u64("cuda.graph_launches");
    return n;
  }
};

class CudaProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: attaches uprobes";
    dir_ = fs::temp_directory_path() / ("vigil-cuda-" + std::to_string(getpid()));
    fs::create_directories(dir_ / "a");
    fs::create_directories(dir_ / "b");
    fs::create_directories(dir_ / "old");
    // Copies: each is a file (inode) of its own, like a container image's libcuda.
    lib_a_ = (dir_ / "a" / "libcuda.so.1").string();
    lib_b_ = (dir_ / "b" / "libcuda.so.550.54.15").string();
    lib_old_ = (dir_ / "old" / "libcuda.so.1").string();
    fs::copy_file(VIGIL_FAKE_CUDA, lib_a_);
    fs::copy_file(VIGIL_FAKE_CUDA, lib_b_);
    fs::copy_file(VIGIL_FAKE_CUDA_MINIMAL, lib_old_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Polls the plugin until `done` holds or `ms` pass.
  template <class Pred>
  bool collect(AbiClient& p, Collected& c, int ms, Pred done) {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      std::vector<Extracted> got;
      int rc = p.next(100, got);
      EXPECT_NE(rc, VIGIL_RC_FAILURE) << p.error();
      if (rc == VIGIL_RC_FAILURE) return false;
      for (Extracted& e : got) c.all.push_back(std::move(e));
      if (done()) return true;
    }
    return done();
  }

  fs::path dir_;
  std::string lib_a_, lib_b_, lib_old_;
};

const Extracted* library_event(const Collected& c, const std::string& lib) {
  for (const Extracted& e : c.all)
    if (e.name == "cuda_library" && e.str("cuda.library") == lib) return &e;
  return nullptr;
}

TEST_F(CudaProbeTest, FindsLibrariesInMapsAndReportsExactActivity) {
  constexpr int kN = 100;
  Caller a(lib_a_, kN);
  ASSERT_EQ(a.line(), "ready " + std::to_string(a.pid()));

  AbiClient p(VIGIL_CUDA_PLUGIN);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_STREQ(p.name(), "cuda");
  EXPECT_STREQ(p.source(), "cuda");
  ASSERT_TRUE(p.init(R"({"scan_interval": "100ms", "interval": "200ms"})")) << p.error();

  // The first scan runs in init: caller A's library is probed already.
  Collected c;
  ASSERT_TRUE(collect(p, c, 3000, [&] { return library_event(c, lib_a_) != nullptr; }));
  const Extracted* la = library_event(c, lib_a_);
  EXPECT_EQ(la->pid, static_cast<std::uint32_t>(a.pid()));
  EXPECT_EQ(la->u64("cuda.probes"), 23u);  // every entry point the plugin knows
  EXPECT_EQ(la->str("cuda.missing"), "");

  // Processes started later, mapping other files, are found by the rescans.
  Caller b(lib_b_, kN);
  ASSERT_EQ(b.line(), "ready " + std::to_string(b.pid()));
  Caller old(lib_old_, kN);
  ASSERT_EQ(old.line(), "ready " + std::to_string(old.pid()));
  ASSERT_TRUE(collect(p, c, 5000, [&] {
    return library_event(c, lib_b_) != nullptr && library_event(c, lib_old_) != nullptr;
  })) << "libraries of the later callers not probed";
  const Extracted* lo = library_event(c, lib_old_);
  EXPECT_EQ(lo->pid, static_cast<std::uint32_t>(old.pid()));
  EXPECT_EQ(lo->u64("cuda.probes"), 11u);
  std::string missing = lo->str("cuda.missing");
  for (const char* m :
       {"cuCtxCreate_v3 (absent)", "cuCtxCreate_v4 (absent)", "cuLaunchKernelEx (absent)", "cuLibraryLoadData (absent)",
        "cuLaunchCooperativeKernel (not a function)", "cuGraphLaunch (absent)"})
    EXPECT_NE(missing.find(m), std::string::npos) << m << " not in: " << missing;

  a.go();
  b.go();
  old.go();
  EXPECT_EQ(a.line(), "done " + std::to_string(17 * kN) + " " + std::to_string(3 * kN));
  EXPECT_EQ(b.line(), "done " + std::to_string(17 * kN) + " " + std::to_string(3 * kN));
  EXPECT_EQ(old.line(), "done " + std::to_string(15 * kN) + " 0");
  EXPECT_EQ(a.wait_exit(), 0);
  EXPECT_EQ(b.wait_exit(), 0);
  EXPECT_EQ(old.wait_exit(), 0);

  // Launches are summed in the kernel and reported per interval; a process's
  // last launches come in the summary after it exits.
  auto pa = static_cast<std::uint32_t>(a.pid()), pb = static_cast<std::uint32_t>(b.pid()),
       po = static_cast<std::uint32_t>(old.pid());
  EXPECT_TRUE(collect(p, c, 5000, [&] {
    return c.launches(pa) >= 17 * kN && c.launches(pb) >= 17 * kN && c.launches(po) >= 15 * kN &&
           c.graphs(pa) >= 3 * kN && c.graphs(pb) >= 3 * kN && c.of(pa, "cuda_call").size() >= 2 * kN + 8;
  }));
  // Then one more interval: nothing may be counted twice.
  collect(p, c, 600, [] { return false; });
  EXPECT_EQ(c.launches(pa), 17u * kN);
  EXPECT_EQ(c.launches(pb), 17u * kN);
  EXPECT_EQ(c.launches(po), 15u * kN);
  EXPECT_EQ(c.graphs(pa), 3u * kN);  // counted apart from kernel launches
  EXPECT_EQ(c.graphs(pb), 3u * kN);
  EXPECT_EQ(c.graphs(po), 0u);

  for (auto [pid, lib] : {std::pair{pa, lib_a_}, std::pair{pb, lib_b_}}) {
    SCOPED_TRACE(lib);
    for (const Extracted* e : c.of(pid, "cuda_launches")) {
      EXPECT_EQ(e->str("cuda.library"), lib);
      EXPECT_EQ(e->str("cuda.category"), "launch");
      EXPECT_EQ(e->u64("cuda.drops.calls"), 0u);
      EXPECT_EQ(e->u64("cuda.drops.launches"), 0u);
      EXPECT_TRUE(e->has("cuda.interval_ms"));
      EXPECT_EQ(e->gpu_minor, -1);
    }
    std::multiset<std::uint64_t> sizes, freed;
    std::map<std::string, std::int64_t> device;
    std::map<std::string, std::string> module;
    for (const Extracted* e : c.of(pid, "cuda_call")) {
      EXPECT_EQ(e->tid, pid);  // the caller is single-threaded
      EXPECT_EQ(e->str("cuda.library"), lib);
      EXPECT_GT(e->ts_ns, 1'600'000'000'000'000'000ull);  // wall clock
      std::string call = e->str("cuda.call");
      if (call == "cuMemAlloc_v2") {
        EXPECT_EQ(e->str("cuda.category"), "memory");
        sizes.insert(e->u64("cuda.alloc.size"));
      } else if (call == "cuMemFree_v2") {
        freed.insert(e->u64("cuda.ptr"));
      } else if (call == "cuMemAllocManaged") {
        EXPECT_EQ(e->u64("cuda.alloc.size"), 1u << 20);
      } else if (e->str("cuda.category") == "context") {
        device[call] = e->i64("cuda.device");
      } else if (e->str("cuda.category") == "module") {
        module[call] = e->has("cuda.module.path") ? e->str("cuda.module.path") : e->str("cuda.module.kind");
      } else {
        ADD_FAILURE() << "unexpected call " << call;
      }
    }
    std::multiset<std::uint64_t> want_sizes, want_freed;
    for (int i = 0; i < kN; ++i) {
      want_sizes.insert(4096ull * (i + 1));
      want_freed.insert(0x700000000000ull + 0x100000ull * i);  // what the stand-in returned
    }
    EXPECT_EQ(sizes, want_sizes);
    EXPECT_EQ(freed, want_freed);
    EXPECT_EQ(device, (std::map<std::string, std::int64_t>{
                          {"cuCtxCreate_v2", 3}, {"cuDevicePrimaryCtxRetain", 1}, {"cuCtxCreate_v4", 2}}));
    EXPECT_EQ(module, (std::map<std::string, std::string>{{"cuModuleLoad", "/opt/kernels/miner.cubin"},
                                                          {"cuModuleLoadData", "cubin"},
                                                          {"cuModuleLoadDataEx", "ptx"},
                                                          {"cuLibraryLoadData", "fatbin"}}));
  }
  // The old driver's file: what it has is probed, what it lacks is not called.
  std::set<std::string> old_calls;
  for (const Extracted* e : c.of(po, "cuda_call")) old_calls.insert(e->str("cuda.call"));
  EXPECT_EQ(old_calls,
            (std::set<std::string>{"cuCtxCreate_v2", "cuDevicePrimaryCtxRetain", "cuMemAlloc_v2", "cuMemFree_v2",
                                   "cuMemAllocManaged", "cuModuleLoad", "cuModuleLoadData", "cuModuleLoadDataEx"}));
  EXPECT_EQ(c.of(po, "cuda_call").size(), 2u * kN + 6);
}

TEST_F(CudaProbeTest, LibraryPathsAreProbedBeforeAnyProcessMapsThem) {
  AbiClient p(VIGIL_CUDA_PLUGIN);
  ASSERT_TRUE(p.ok()) << p.error();
  // A scan interval far longer than the test: only library_paths can probe it.
  ASSERT_TRUE(p.init(R"({"scan_interval": "10m", "interval": "100ms", "library_paths": [")" + lib_b_ +
                     R"("], "probes": ["launch", "memory"], "multi_uprobe": false,
                     "flush_interval": "0ms"})"))
      << p.error();
  Collected c;
  ASSERT_TRUE(collect(p, c, 2000, [&] { return library_event(c, lib_b_) != nullptr; }));
  EXPECT_EQ(library_event(c, lib_b_)->pid, 0u);
  EXPECT_EQ(library_event(c, lib_b_)->u64("cuda.probes"), 13u);  // 8 launch + 5 memory
  bool single = false;
  for (const std::string& l : p.logs) single = single || l.find("one uprobe link per entry point") != std::string::npos;
  EXPECT_TRUE(single) << "multi_uprobe: false was not honoured";

  Caller b(lib_b_, 10);
  ASSERT_EQ(b.line(), "ready " + std::to_string(b.pid()));
  b.go();
  EXPECT_EQ(b.line(), "done 170 30");
  EXPECT_EQ(b.wait_exit(), 0);
  auto pb = static_cast<std::uint32_t>(b.pid());
  EXPECT_TRUE(collect(p, c, 3000, [&] { return c.launches(pb) >= 170 && c.of(pb, "cuda_call").size() >= 21; }));
  EXPECT_EQ(c.launches(pb), 170u);
  // Context and module groups are off: only memory calls are recorded.
  EXPECT_EQ(c.of(pb, "cuda_call").size(), 21u);
  for (const Extracted* e : c.of(pb, "cuda_call")) EXPECT_EQ(e->str("cuda.category"), "memory");
}

TEST_F(CudaProbeTest, ProbesALibraryDeletedAfterItWasMapped) {
  // maps then shows "<path> (deleted)" and the path leads nowhere: the plugin
  // opens the mapping itself (map_files).
  Caller a(lib_a_, 5);
  ASSERT_EQ(a.line(), "ready " + std::to_string(a.pid()));
  ASSERT_TRUE(fs::remove(lib_a_));
  AbiClient p(VIGIL_CUDA_PLUGIN);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_TRUE(p.init(R"({"scan_interval": "100ms", "interval": "100ms"})")) << p.error();
  Collected c;
  ASSERT_TRUE(collect(p, c, 2000, [&] { return library_event(c, lib_a_) != nullptr; }));
  a.go();
  EXPECT_EQ(a.line(), "done 85 15");
  EXPECT_EQ(a.wait_exit(), 0);
  auto pa = static_cast<std::uint32_t>(a.pid());
  EXPECT_TRUE(collect(p, c, 3000, [&] { return c.launches(pa) >= 85 && c.of(pa, "cuda_call").size() >= 18; }));
  EXPECT_EQ(c.launches(pa), 85u);
  EXPECT_EQ(c.of(pa, "cuda_call").size(), 18u);  // 3 contexts, 5 allocs, 5 frees, 1 managed, 4 modules
}

TEST_F(CudaProbeTest, MmapWatchProbesANewLibraryWithoutWaitingForAScan) {
  for (bool watch : {true, false}) {
    SCOPED_TRACE(watch ? "watch_mmap" : "no watch");
    AbiClient p(VIGIL_CUDA_PLUGIN);
    ASSERT_TRUE(p.ok()) << p.error();
    // No scan after the one in init: only the mmap watch can find the caller.
    ASSERT_TRUE(p.init(std::string(R"({"scan_interval": "10m", "interval": "100ms", "watch_mmap": )") +
                       (watch ? "true" : "false") + "}"))
        << p.error();
    for (const std::string& l : p.logs) EXPECT_EQ(l.find("no mmap watch"), std::string::npos) << l;
    Collected c;
    Caller b(lib_b_, 2);
    ASSERT_EQ(b.line(), "ready " + std::to_string(b.pid()));
    bool found = collect(p, c, watch ? 2000 : 800, [&] { return library_event(c, lib_b_) != nullptr; });
    EXPECT_EQ(found, watch);
    if (found) {
      EXPECT_EQ(library_event(c, lib_b_)->pid, static_cast<std::uint32_t>(b.pid()));
    }
    b.go();
    EXPECT_EQ(b.line(), "done 34 6");
    EXPECT_EQ(b.wait_exit(), 0);
    auto pb = static_cast<std::uint32_t>(b.pid());
    collect(p, c, watch ? 3000 : 300, [&] { return c.launches(pb) >= 34; });
    EXPECT_EQ(c.launches(pb), watch ? 34u : 0u);
  }
}

TEST_F(CudaProbeTest, ProbesAtMostMaxLibraries) {
  Caller a(lib_a_, 1);
  ASSERT_EQ(a.line(), "ready " + std::to_string(a.pid()));
  Caller b(lib_b_, 1);
  ASSERT_EQ(b.line(), "ready " + std::to_string(b.pid()));
  AbiClient p(VIGIL_CUDA_PLUGIN);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_TRUE(p.init(R"({"scan_interval": "100ms", "max_libraries": 1})")) << p.error();
  Collected c;
  // Until the limit is logged (both processes were scanned), then 500 ms more
  // for a second library event that must not come. Bounded for a loaded CI.
  auto limit_logged = [&] {
    for (const std::string& l : p.logs) {
      if (l.find("max_libraries (1) reached") != std::string::npos) return true;
    }
    return false;
  };
  collect(p, c, 10000, limit_logged);
  collect(p, c, 500, [] { return false; });
  int probed = 0;
  for (const Extracted& e : c.all) probed += e.name == "cuda_library";
  EXPECT_EQ(probed, 1);
  EXPECT_TRUE(library_event(c, lib_a_) || library_event(c, lib_b_));
  int warned = 0;
  for (const std::string& l : p.logs) warned += l.find("max_libraries (1) reached") != std::string::npos;
  EXPECT_EQ(warned, 1) << "the limit is logged once";
}

// A /proc of our making (proc_root): processes whose maps name a file and
// whose root holds, at that path, the same file, another file, or nothing.
// Only the first is probed: a container cannot point the plugin at a file
// other than the one its process mapped.
TEST_F(CudaProbeTest, OpensLibrariesThroughTheProcessRootOnlyWhenTheInodeMatches) {
  fs::path proc = dir_ / "proc";
  struct stat a {
  }, b{};
  ASSERT_EQ(stat(lib_a_.c_str(), &a), 0);
  ASSERT_EQ(stat(lib_b_.c_str(), &b), 0);
  auto maps_line = [](const struct stat& st, const std::string& path) {
    char buf[512];
    std::snprintf(buf, sizeof(buf), "7f0000000000-7f0000100000 r-xp 00001000 %02x:%02x %llu    %s\n", major(st.st_dev),
                  minor(st.st_dev), static_cast<unsigned long long>(st.st_ino), path.c_str());
    return std::string(buf);
  };
  auto process = [&](int pid, const std::string& maps, const fs::path& root) {
    fs::path p = proc / std::to_string(pid);
    fs::create_directories(p);
    std::ofstream(p / "maps") << maps;
    if (!root.empty()) fs::create_directory_symlink(root, p / "root");
  };
  // The container's view: /usr/lib/libcuda.so.1 inside each root.
  for (auto [name, file] : {std::pair{"same", lib_a_}, std::pair{"other", lib_b_}}) {
    fs::create_directories(dir_ / name / "usr/lib");
    ASSERT_EQ(link(file.c_str(), (dir_ / name / "usr/lib/libcuda.so.1").c_str()), 0);  // the same inode
  }
  // 4001 maps a (its root has a there); 3999 (read first) claims to map a, but its root
  // has b at that path; 4003 has no root at all; 4004 has only hostile lines.
  process(4001, maps_line(a, "/usr/lib/libcuda.so.1"), dir_ / "same");
  process(3999, maps_line(a, "/usr/lib/libcuda.so.1"), dir_ / "other");
  process(4003, maps_line(b, "/usr/lib/libcuda.so.1"), {});
  process(4004,
          "garbage\n" + std::string(100000, 'x') + "\n" +
              "7f0000000000-7f0000100000 r-xp 00001000 fd:01 1 /../../../etc/libcuda.so.1\n"
              "7f0000000000-7f0000100000 r-xp 00001000 zz:01 1 /usr/lib/libcuda.so.1\n",
          dir_ / "same");

  AbiClient p(VIGIL_CUDA_PLUGIN);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_TRUE(p.init(R"({"scan_interval": "100ms", "watch_mmap": false, "proc_root": ")" + proc.string() + R"("})"))
      << p.error();
  Collected c;
  collect(p, c, 700, [] { return false; });
  std::vector<const Extracted*> libs;
  for (const Extracted& e : c.all)
    if (e.name == "cuda_library") libs.push_back(&e);
  ASSERT_EQ(libs.size(), 1u);
  EXPECT_EQ(libs[0]->pid, 4001u);
  EXPECT_EQ(libs[0]->str("cuda.library"), "/usr/lib/libcuda.so.1");
  EXPECT_EQ(libs[0]->u64("cuda.probes"), 23u);
}

TEST_F(CudaProbeTest, InitRefusesBadConfiguration) {
  AbiClient p(VIGIL_CUDA_PLUGIN);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_FALSE(p.init(R"({"interval": 5})"));
  EXPECT_NE(p.error().find("interval"), std::string::npos) << p.error();
}

}  // namespace
