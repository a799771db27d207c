// Per-exec cost of the executable identity check (engine/ident), as the
// sensor pays it for one exec event:
//   BM_ExecKnownInode  the exec record's inode was identified before: a cache
//                      lookup and a readlink of /proc/<pid>/exe (deleted?)
//   BM_ExecViaProcExe  no inode from the kernel (older record): open, readlink
//                      and fstat of /proc/<pid>/exe, then the cache hit
//   BM_IdentifyFile    a file never seen: ELF build-id and SHA-256 of the
//                      whole file (dash, python3, this binary)
//   BM_LearnHost       the start-up search for the host's shells/interpreters
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "engine/ident/identifier.h"

namespace {

using namespace vigil;

event::Event self_exec(bool with_inode) {
  event::Event ev;
  ev.hdr.type = event::Type::kExec;
  ev.hdr.pid = static_cast<std::uint32_t>(::getpid());
  ev.hdr.comm = "ident_bench";
  event::ExecData d;
  struct stat st {};
  ::stat("/proc/self/exe", &st);
  if (with_inode) {
    d.exe_ino = st.st_ino;
    d.exe_dev = st.st_dev;
    d.exe_ctime_ns = ident::FileKey::of(st).ctime_ns;
  }
  ev.data = d;
  return ev;
}

void run_execs(benchmark::State& state, bool with_inode) {
  ident::ExeIdentifier id(ident::Options{});
  id.learn_host();
  const event::Event proto = self_exec(with_inode);
  {
    event::Event ev = proto;
    id.enrich(ev);
  }  // the first exec reads the file
  const auto misses = id.stats().cache_misses;
  for (auto _ : state) {
    event::Event ev = proto;
    id.enrich(ev);
    benchmark::DoNotOptimize(ev);
  }
  if (id.stats().cache_misses != misses) state.SkipWithError("the cache missed after the first exec");
}

void BM_ExecKnownInode(benchmark::State& state) { run_execs(state, true); }
void BM_ExecViaProcExe(benchmark::State& state) { run_execs(state, false); }

void BM_IdentifyFile(benchmark::State& state, const char* path) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    state.SkipWithError("cannot open the file");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(ident::identify_fd(fd, st, 64ull << 20));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * st.st_size);
  state.counters["file_bytes"] = static_cast<double>(st.st_size);
  ::close(fd);
}

void BM_LearnHost(benchmark::State& state) {
  std::size_t known = 0;
  for (auto _ : state) {
    ident::ExeIdentifier id(ident::Options{});
    id.learn_host();
    known = id.stats().known;
  }
  state.counters["identities"] = static_cast<double>(known);
}

BENCHMARK(BM_ExecKnownInode);
BENCHMARK(BM_ExecViaProcExe);
BENCHMARK_CAPTURE(BM_IdentifyFile, dash, "/bin/dash")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_IdentifyFile, python3, "/usr/bin/python3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_IdentifyFile, self, "/proc/self/exe")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LearnHost)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
