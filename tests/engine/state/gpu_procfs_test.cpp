#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>

#include <string>

#include "engine/state/gpu.h"
#include "engine/state/procfs.h"
#include "engine/state/state.h"
#include "tests/engine/state/test_util.h"
#include "tests/support/temp_dir.h"

namespace vigil::state {
namespace {

TEST(ProcStat, CommWithParenthesesAndSpaces) {
  std::string line = "123 (evil) S 1 (x)) R 77 1 1 34817 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 999 0 0\n";
  auto st = parse_proc_stat(line);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->comm, "evil) S 1 (x)");  // the kernel's comm runs to the last ')'
  EXPECT_EQ(st->ppid, 77u);
  EXPECT_EQ(st->tty, 34817u);
  EXPECT_EQ(st->start_ticks, 999u);
}

TEST(ProcStat, TruncatedOrGarbageIsRejected) {
  EXPECT_FALSE(parse_proc_stat(""));
  EXPECT_FALSE(parse_proc_stat("1 (a"));
  EXPECT_FALSE(parse_proc_stat("1 (a) S 1 2 3"));
  EXPECT_FALSE(parse_proc_stat("1 (a) S x 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0"));
  EXPECT_FALSE(parse_proc_stat("1 (a) S 99999999999 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0"));
}

TEST(ProcStatus, UidsGidsAndNamespacePid) {
  auto s = parse_proc_status(
      "Name:\tx\nTgid:\t50\nPPid:\t1\nUid:\t1000\t0\t0\t0\n"
      "Gid:\t100\t0\t0\t0\nNSpid:\t50\t3\t1\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->uid, 1000u);  // the real uid
  EXPECT_EQ(s->gid, 100u);
  EXPECT_EQ(s->ppid, 1u);
  EXPECT_EQ(s->vpid, 1u);  // innermost namespace
  EXPECT_FALSE(parse_proc_status("Name:\tx\nUid:\tabc\nGid:\t1\n"));
  EXPECT_FALSE(parse_proc_status(""));
}

TEST(ProcStatus, SessionAndNamespaceProcessGroup) {
  auto st = parse_proc_stat("77 (bash) S 1 77 70 34816 77 4194560 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0");
  ASSERT_TRUE(st);
  EXPECT_EQ(st->session, 70u);
  auto s = parse_proc_status("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nNSpgid:\t77\t5\nNSpid:\t77\t5\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->vpgid, 5u);  // innermost namespace
}

TEST(ProcStatus, CapabilitySetsInHex) {
  auto s = parse_proc_status(
      "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nCapInh:\t0000000000000000\n"
      "CapPrm:\t000001ffffffffff\nCapEff:\t0000000000210000\nCapBnd:\tffffffffffffffff\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->cap_inheritable, 0u);
  EXPECT_EQ(s->cap_permitted, 0x1ffffffffffull);
  EXPECT_EQ(s->cap_effective, (1ull << 21) | (1ull << 16));  // CAP_SYS_ADMIN, CAP_SYS_MODULE
  // A malformed set is left at zero, never half-read.
  s = parse_proc_status("Uid:\t0\nGid:\t0\nCapEff:\t00zz\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->cap_effective, 0u);
}

TEST(ProcFs, NamespaceLinksAndCmdline) {
  EXPECT_EQ(parse_ns_link("net:[4026531840]"), 4026531840u);
  EXPECT_EQ(parse_ns_link("net:[x]"), 0u);
  EXPECT_EQ(parse_ns_link("net:4026531840"), 0u);
  EXPECT_EQ(parse_ns_link(""), 0u);
  EXPECT_EQ(parse_cmdline(std::string("a\0b\0\0c", 6)), (std::vector<std::string>{"a", "b", "", "c"}));
  std::string many;
  for (int i = 0; i < 1000; ++i) many += std::string("x") + '\0';
  EXPECT_EQ(parse_cmdline(many).size(), kMaxArgs);
  EXPECT_EQ(parse_boot_time_ns("cpu 1\nbtime 1700000000\nprocesses 5\n"), 1700000000000000000ULL);
  EXPECT_EQ(parse_boot_time_ns("cpu 1\n"), 0u);
}

TEST(ProcFs, ReadFileIsBounded) {
  support::TempDir d;
  d.write("big", std::string(10000, 'a'));
  bool truncated = false;
  auto t = read_file_bounded(d.path() + "/big", 100, &truncated);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->size(), 100u);
  EXPECT_TRUE(truncated);
  t = read_file_bounded(d.path() + "/big", 20000, &truncated);
  EXPECT_EQ(t->size(), 10000u);
  EXPECT_FALSE(truncated);
  EXPECT_FALSE(read_file_bounded(d.path() + "/missing", 10));
  EXPECT_FALSE(read_file_bounded(d.path(), 10)) << "a directory is not a file";
  EXPECT_FALSE(read_file_bounded("/dev/zero", 10)) << "device nodes are never read";
}

TEST(NvidiaInfo, ProcDevicesAndInformation) {
  NvidiaInfo info;
  parse_proc_devices(
      "Character devices:\n  1 mem\n195 nvidia\n234 nvidia-uvm\n235 nvidia-caps\n"
      "Block devices:\n236 nvidia-uvm\n",
      &info);
  EXPECT_EQ(info.uvm_major, 234u);
  EXPECT_EQ(info.caps_major, 235u);
  auto g = parse_gpu_information("Model: \t\t Tesla T4\nGPU UUID: \t GPU-1234\nDevice Minor: \t 3\n", "0000:00:04.0");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->uuid, "GPU-1234");
  EXPECT_EQ(g->minor, 3u);
  EXPECT_FALSE(parse_gpu_information("GPU UUID: GPU-1\nDevice Minor: 300\n", "x"));
  EXPECT_FALSE(parse_gpu_information("Device Minor: 1\n", "x"));
}

// An Xid line names its GPU without the PCI function ("0000:3B:00"); the
// driver's GPU list with it ("0000:3b:00.0").
TEST(NvidiaInfo, MinorOfThePciAddressAnXidNames) {
  NvidiaInfo info;
  info.gpus = {{"GPU-a", "0000:3b:00.0", 0, "H100"}, {"GPU-b", "0000:5e:00.0", 1, "H100"}};
  EXPECT_EQ(minor_of_pci("0000:3b:00", info), 0u);
  EXPECT_EQ(minor_of_pci("0000:3B:00", info), 0u);
  EXPECT_EQ(minor_of_pci("0000:5e:00.0", info), 1u);
  EXPECT_FALSE(minor_of_pci("0000:5e:0", info)) << "a prefix of the device number is not the device";
  EXPECT_FALSE(minor_of_pci("0000:86:00", info));
  EXPECT_FALSE(minor_of_pci("", info));
}

TEST(NvidiaNode, NumbersFirstThenNames) {
  NvidiaInfo info;
  info.uvm_major = 234;
  info.caps_major = 235;
  EXPECT_EQ(nvidia_node(195, 0, "", info).kind, NvidiaNodeKind::kGpu);
  EXPECT_EQ(nvidia_node(195, 255, "", info).kind, NvidiaNodeKind::kCtl);
  EXPECT_EQ(nvidia_node(195, 254, "", info).kind, NvidiaNodeKind::kModeset);
  EXPECT_EQ(nvidia_node(234, 0, "", info).kind, NvidiaNodeKind::kUvm);
  EXPECT_EQ(nvidia_node(234, 1, "", info).kind, NvidiaNodeKind::kUvmTools);
  EXPECT_EQ(nvidia_node(235, 2, "/dev/nvidia-caps/nvidia-cap2", info).kind, NvidiaNodeKind::kCaps);
  EXPECT_EQ(nvidia_node(1, 3, "/dev/null", info).kind, NvidiaNodeKind::kNone);
  NvidiaNode n = nvidia_node(1, 3, "/tmp/rig/nvidia7", info);
  EXPECT_EQ(n.kind, NvidiaNodeKind::kGpu);
  EXPECT_EQ(n.major, 195u);
  EXPECT_EQ(n.minor, 7u);
  EXPECT_EQ(nvidia_node(1, 3, "/dev/nvidia-uvm-tools", info).kind, NvidiaNodeKind::kUvmTools);
  EXPECT_EQ(nvidia_node(1, 3, "/dev/nvidia-uvm", info).major, 234u);
  EXPECT_EQ(nvidia_node(1, 3, "/dev/nvidia9999", info).kind, NvidiaNodeKind::kOther);
  EXPECT_EQ(nvidia_node(1, 3, "/dev/nvidiaX", info).kind, NvidiaNodeKind::kOther);
}

TEST(ResolveAllocation, MigAndUnknownIds) {
  NvidiaInfo info;
  info.gpus = {{"GPU-aaa", "0000:01:00.0", 4, ""}, {"GPU-bbb", "0000:02:00.0", 5, ""}};
  PodContainer pc;
  pc.nvidia_visible_devices = "MIG-GPU-bbb/1/0";
  GpuAllocation a = resolve_allocation(pc, info);
  EXPECT_TRUE(a.any);
  EXPECT_EQ(a.minors, std::vector<std::uint32_t>{5});
  EXPECT_FALSE(a.unresolved);
  pc.nvidia_visible_devices = "1:0, gpu-AAA";  // MIG index pair, case-insensitive UUID
  a = resolve_allocation(pc, info);
  EXPECT_EQ(a.minors, (std::vector<std::uint32_t>{4, 5}));
  pc.nvidia_visible_devices = "MIG-6d3f9c1e-0000-5000-8000-000000000000";
  a = resolve_allocation(pc, info);
  EXPECT_TRUE(a.unresolved);
  EXPECT_TRUE(allocation_allows(a, {NvidiaNodeKind::kGpu, 195, 4}))
      << "an id we cannot map gives no evidence against any GPU";
  pc.nvidia_visible_devices = "7";  // index beyond the GPUs present
  a = resolve_allocation(pc, info);
  EXPECT_TRUE(a.minors.empty());
  EXPECT_TRUE(a.unresolved);
}

// 10k processes with realistic command lines stay well inside the agent's
// 64 MiB RSS budget.
TEST(Memory, TenThousandProcessesFitTheBudget) {
  struct mallinfo2 before = ::mallinfo2();
  {
    State s(testing::replay_config());
    for (std::uint32_t pid = 1000; pid < 11000; ++pid) {
      Process p;
      p.pid = pid;
      p.ppid = pid - 1;
      p.comm = "python3";
      p.exe = "/usr/bin/python3";
      p.exepath = "/usr/bin/python3.11";
      p.args = {"-m", "torch.distributed.run", "--nproc-per-node=8", "train.py",
                "--config=/workspace/configs/llama-70b.yaml"};
      p.cwd = "/workspace/project";
      p.container_id = std::string(64, 'a');
      s.upsert_process(std::move(p));
    }
    struct mallinfo2 after = ::mallinfo2();
    std::size_t used = after.uordblks - before.uordblks;
    EXPECT_EQ(s.process_count(), 10000u);
    ::testing::Test::RecordProperty("bytes_for_10k_processes", std::to_string(used));
    std::printf("heap used by 10k processes: %zu bytes\n", used);
    EXPECT_LT(used, 24u << 20) << "bytes used by 10k processes: " << used;
  }
}

}  // namespace
}  // namespace vigil::state
