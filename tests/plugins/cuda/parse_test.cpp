// The plugin's parsers: /proc/PID/maps lines, configuration, the event wire
// format, and the entry-point table.
#include <dlfcn.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "plugins/cuda/calls.h"
#include "plugins/cuda/config.h"
#include "plugins/cuda/proc_maps.h"
#include "plugins/cuda/wire.h"

namespace vigil::cuda {
namespace {

TEST(CudaProcMaps, ParsesLines) {
  auto m = parse_maps_line(
      "7f2a1c000000-7f2a1c200000 r-xp 00001000 fd:01 1234567                    /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->start, 0x7f2a1c000000u);
  EXPECT_EQ(m->end, 0x7f2a1c200000u);
  EXPECT_TRUE(m->exec);
  EXPECT_EQ(m->dev_major, 0xfdu);
  EXPECT_EQ(m->dev_minor, 1u);
  EXPECT_EQ(m->inode, 1234567u);
  EXPECT_EQ(m->path, "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15");
  EXPECT_FALSE(m->deleted);

  m = parse_maps_line("1000-2000 r-xp 00000000 103:02 77 /tmp/my dir/libcuda.so.1 (deleted)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->path, "/tmp/my dir/libcuda.so.1");
  EXPECT_TRUE(m->deleted);
  EXPECT_EQ(m->dev_major, 0x103u);

  m = parse_maps_line("7ffd1000-7ffd2000 rw-p 00000000 00:00 0                          [stack]");
  ASSERT_TRUE(m);
  EXPECT_FALSE(m->exec);
  EXPECT_EQ(m->path, "[stack]");
  m = parse_maps_line("1000-2000 rw-p 00000000 00:00 0");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->path, "");

  for (const char* bad : {"", "garbage", "2000-1000 r-xp 0 fd:01 1 /x", "1000-2000 r-x 0 fd:01 1 /x",
                          "1000-2000 r-xp zz fd:01 1 /x", "1000-2000 r-xp 0 fd01 1 /x", "1000-2000 r-xp 0 fd:01 -1 /x",
                          "11112222333344445-2000 r-xp 0 fd:01 1 /x", "1000-2000 r-xp 0 fd:01"})
    EXPECT_FALSE(parse_maps_line(bad)) << bad;
  EXPECT_FALSE(parse_maps_line("1000-2000 r-xp 0 fd:01 1 /" + std::string(5000, 'a')));
}

TEST(CudaProcMaps, MatchesLibraryNames) {
  std::vector<std::string> names{"libcuda.so"};
  EXPECT_TRUE(library_name_matches("/usr/lib/libcuda.so", names));
  EXPECT_TRUE(library_name_matches("/usr/lib/libcuda.so.1", names));
  EXPECT_TRUE(library_name_matches("/usr/lib64/libcuda.so.550.54.15", names));
  EXPECT_FALSE(library_name_matches("/usr/lib/libcudart.so.12", names));
  EXPECT_FALSE(library_name_matches("/usr/lib/libcuda.sox", names));
  EXPECT_FALSE(library_name_matches("/opt/libcuda.so/evil.so", names));
  EXPECT_FALSE(library_name_matches("libcuda.so", names));
  EXPECT_FALSE(library_name_matches("[vdso]", names));
}

TEST(CudaProcMaps, FindsEachExecutableFileOnce) {
  std::string text =
      "1000-2000 r--p 00000000 fd:01 10 /lib/libcuda.so.1\n"
      "2000-3000 r-xp 00001000 fd:01 10 /lib/libcuda.so.1\n"
      "3000-4000 r-xp 00002000 fd:01 10 /lib/libcuda.so.1\n"
      "5000-6000 r-xp 00000000 fd:02 10 /other/libcuda.so.1\n"
      "6000-7000 r-xp 00000000 fd:01 11 /lib/libcudart.so.12\n"
      "7000-8000 r-xp 00000000 00:00 0 \n"
      "not a line at all /libcuda.so\n"
      "8000-9000 r-xp 00000000 fd:03 12 /c/libcuda.so";  // no final newline
  auto libs = find_libraries(text, std::vector<std::string>{"libcuda.so"}, 8);
  ASSERT_EQ(libs.size(), 3u);
  EXPECT_EQ(libs[0].start, 0x2000u);
  EXPECT_EQ(libs[1].path, "/other/libcuda.so.1");
  EXPECT_EQ(libs[2].inode, 12u);
  EXPECT_EQ(find_libraries(text, std::vector<std::string>{"libcuda.so"}, 1).size(), 1u);
}

TEST(CudaProcMaps, FindsTheStandInInOwnMaps) {
  void* h = dlopen(VIGIL_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  std::string maps;
  ASSERT_TRUE(read_proc_file("/proc/self/maps", 1 << 24, maps));
  std::string base = std::string(VIGIL_FAKE_CUDA).substr(std::string(VIGIL_FAKE_CUDA).rfind('/') + 1);
  auto libs = find_libraries(maps, std::vector<std::string>{base}, 8);
  ASSERT_EQ(libs.size(), 1u);
  EXPECT_TRUE(libs[0].exec);
  dlclose(h);
  // A cut read ends at a whole line.
  std::string part;
  ASSERT_TRUE(read_proc_file("/proc/self/maps", 100, part));
  EXPECT_LE(part.size(), 100u);
  if (!part.empty()) {
    EXPECT_EQ(part.back(), '\n');
  }
}

TEST(CudaConfig, DefaultsAndKeys) {
  Config c;
  std::string err;
  ASSERT_TRUE(parse_config("{}", c, err)) << err;
  EXPECT_EQ(c.interval_ms, 1000u);
  EXPECT_EQ(c.library_names, std::vector<std::string>{"libcuda.so"});
  EXPECT_TRUE(c.wants(Category::kLaunch));
  ASSERT_TRUE(parse_config("", c, err));
  ASSERT_TRUE(parse_config(R"({"interval":"250ms","scan_interval":"1m","scan_max_pids":10,
      "max_libraries":2,"library_names":["libcuda.so","libnvcuda.so"],"library_paths":["/x/libcuda.so.1"],
      "probes":["launch"],"ringbuf_bytes":65536,"max_processes":64,"max_pending":100,"proc_root":"/host/proc/","multi_uprobe":false})",
                           c, err))
      << err;
  EXPECT_EQ(c.interval_ms, 250u);
  EXPECT_EQ(c.scan_interval_ms, 60000u);
  EXPECT_EQ(c.scan_max_pids, 10u);
  EXPECT_EQ(c.library_names.size(), 2u);
  EXPECT_TRUE(c.wants(Category::kLaunch));
  EXPECT_FALSE(c.wants(Category::kMemory));
  EXPECT_EQ(c.proc_root, "/host/proc");
  EXPECT_FALSE(c.multi_uprobe);
}

TEST(CudaConfig, Refusals) {
  for (const char* bad :
       {"[1]", "{", R"({"intervall":"1s"})", R"({"interval":1})", R"({"interval":"1h"})", R"({"interval":"10ms"})",
        R"({"interval":"1x"})", R"({"scan_max_pids":0})", R"({"scan_max_pids":-3})", R"({"library_names":["a/b"]})",
        R"({"library_paths":["rel/libcuda.so"]})", R"({"probes":["gpu"]})", R"({"ringbuf_bytes":1})",
        R"({"proc_root":"proc"})", R"({"library_names":[""]})", R"({"multi_uprobe":1})"}) {
    Config c;
    std::string err;
    EXPECT_FALSE(parse_config(bad, c, err)) << bad;
    EXPECT_FALSE(err.empty()) << bad;
  }
}

TEST(CudaConfig, Durations) {
  std::uint64_t ms = 0;
  EXPECT_TRUE(parse_duration_ms("1s", ms));
  EXPECT_EQ(ms, 1000u);
  EXPECT_TRUE(parse_duration_ms("2m", ms));
  EXPECT_EQ(ms, 120000u);
  for (const char* bad : {"", "s", "1", "1 s", "-1s", "1.5s", "99999999999999999999s"})
    EXPECT_FALSE(parse_duration_ms(bad, ms)) << bad;
}

TEST(CudaWire, RoundTrips) {
  Record r;
  r.kind = Kind::kCall;
  r.call = CUDA_CALL_MEM_ALLOC_V2;
  r.present = Record::kHasSize | Record::kHasDevice;
  r.device = -2;
  r.size = 1ull << 40;
  r.library = "/usr/lib/libcuda.so.1";
  r.detail = "x";
  r.module_kind = "ptx";
  r.graph_launches = 7;
  std::string data = encode(r);
  auto back = decode({reinterpret_cast<const std::uint8_t*>(data.data()), data.size()});
  ASSERT_TRUE(back);
  EXPECT_EQ(back->call, r.call);
  EXPECT_EQ(back->present, r.present);
  EXPECT_EQ(back->device, -2);
  EXPECT_EQ(back->size, r.size);
  EXPECT_EQ(back->library, r.library);
  EXPECT_EQ(back->detail, "x");
  EXPECT_EQ(back->module_kind, "ptx");
  EXPECT_EQ(back->graph_launches, 7u);
  // Every cut is refused; so are other versions and kinds.
  for (std::size_t n = 0; n < data.size(); ++n)
    EXPECT_FALSE(decode({reinterpret_cast<const std::uint8_t*>(data.data()), n})) << n;
  std::string v2 = data;
  v2[0] = 2;
  EXPECT_FALSE(decode({reinterpret_cast<const std::uint8_t*>(v2.data()), v2.size()}));
  std::string k = data;
  k[1] = 9;
  EXPECT_FALSE(decode({reinterpret_cast<const std::uint8_t*>(k.data()), k.size()}));
  // Long strings are cut, not refused.
  r.library.assign(10000, 'a');
  data = encode(r);
  back = decode({reinterpret_cast<const std::uint8_t*>(data.data()), data.size()});
  ASSERT_TRUE(back);
  EXPECT_EQ(back->library.size(), kWireStringMax);
}

TEST(CudaWire, PrintableKeepsUtf8AndEscapesTheRest) {
  EXPECT_EQ(printable("/usr/lib/libcuda.so.1"), "/usr/lib/libcuda.so.1");
  EXPECT_EQ(printable("/tmp/caf\xc3\xa9"), "/tmp/caf\xc3\xa9");
  EXPECT_EQ(printable("a\nb"), "a\\x0ab");
  EXPECT_EQ(printable("\xff\xc3"), "\\xff\\xc3");
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable("abcdef", 3), "abc");
}

TEST(CudaCalls, TableAndIds) {
  EXPECT_EQ(all_calls().size(), static_cast<std::size_t>(CUDA_CALL_MAX - 1));
  EXPECT_FALSE(call_by_id(CUDA_CALL_NONE));
  EXPECT_FALSE(call_by_id(CUDA_CALL_MAX));
  EXPECT_FALSE(call_by_id(0xffff));
  EXPECT_EQ(call_by_id(CUDA_CALL_LAUNCH_KERNEL)->symbol, "cuLaunchKernel");
  EXPECT_EQ(call_by_id(CUDA_CALL_CTX_CREATE_V3)->device_arg, 5);
  for (const CallInfo& c : all_calls()) {
    EXPECT_EQ(CUDA_CALL_IS_PATH(c.id) || CUDA_CALL_IS_IMAGE(c.id), c.category == Category::kModule) << c.symbol;
    EXPECT_EQ(category_by_name(category_name(c.category)), c.category);
  }
}

}  // namespace
}  // namespace vigil::cuda
