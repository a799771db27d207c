// Prevention against the real kernel (docs/prevention.md): the real `vigil run`
// with the bundled rules and rules with `action: deny`, in enforce mode, then
// monitor, then off (each a reload of the configuration), then enforce again
// and killed with SIGKILL:
//   enforce: a pod's open of an NVIDIA node it was not allocated fails with
//            EPERM (an allocated one reaches the device: ENXIO, no driver
//            here), an mknod of major 195 fails, a pool connect fails while a
//            cluster-internal one succeeds, a raw socket fails, a denied
//            program is killed before its first action (a marker file);
//            each is an alert tagged `prevented`;
//   monitor: each of these succeeds and raises a `would_prevent` alert;
//   off:     nothing is refused, no alert says prevention;
//   after SIGKILL, and after a second agent's SIGTERM: nothing stays refused;
//   the capture replayed with the policy gives the node's decisions.
// Before that, a program denied by its SHA-256 (a copy of the workload with
// bytes of its own appended): its first exec in a pod is killed as soon as
// vigil identifies it (alert tagged `responded`), every later exec of that
// file before its first action (`prevented`), the same file on the host runs;
// and a connect to an address a DNS answer gave a denied name fails with
// EPERM while the pod's other connections succeed.
// Before that, the responses: a rule with `action: [freeze, label]` freezes
// a pod's container cgroup (cgroup.events: frozen 1; thawed by writing 0 to
// cgroup.freeze, as docs/prevention.md tells an operator), the API stand-in
// receives the label PATCH, and the alert, whatever its priority, names a
// flight-recorder capture that exists; a host process that matches the rule
// is left alone; in monitor mode nothing is frozen or patched and the alert
// says would_prevent.
// Needs root and a kernel with BTF (label integration); skipped otherwise.
#include <sys/mount.h>

#include "engine/ident/build_id.h"
#include "engine/ident/file_identity.h"
#include "tests/scenarios/rig.h"

namespace {

constexpr const char* kRules = R"(
- rule: Test pool connection
  desc: A pod connected to the test's mining pool.
  condition: evt.type = connect and vigil_container and fd.sip = 203.0.113.50 and fd.sport = 3333
  output: Pool connection (proc.pid=%proc.pid proc.name=%proc.name proc.cmdline=%proc.cmdline
    container.id=%container.id k8s.ns.name=%k8s.ns.name k8s.pod.name=%k8s.pod.name)
  priority: ERROR
  tags: [egress]
  action: deny
- rule: Test denied program
  desc: A program the test denies.
  condition: evt.type = execve and vigil_container and proc.name = xmrig
  output: Denied program (proc.pid=%proc.pid proc.name=%proc.name proc.cmdline=%proc.cmdline
    container.id=%container.id k8s.ns.name=%k8s.ns.name k8s.pod.name=%k8s.pod.name)
  priority: ERROR
  tags: [crypto_mining]
  action: deny
- rule: Test pool by name
  desc: A pod connected to an address a DNS answer gave the test's pool name.
  condition: evt.type = connect and vigil_container and fd.sip.name in (pool.vigil-test.example)
  output: Pool by name (proc.pid=%proc.pid proc.name=%proc.name fd.sip=%fd.sip fd.sip.name=%fd.sip.name
    container.id=%container.id k8s.ns.name=%k8s.ns.name k8s.pod.name=%k8s.pod.name)
  priority: ERROR
  tags: [egress]
  action: deny
- rule: Test raw socket
  desc: A raw IP socket in a pod.
  condition: evt.type = socket and vigil_container and evt.arg.domain = AF_INET and evt.arg.type startswith SOCK_RAW
  output: Raw socket (proc.pid=%proc.pid proc.name=%proc.name proc.cmdline=%proc.cmdline
    container.id=%container.id k8s.ns.name=%k8s.ns.name k8s.pod.name=%k8s.pod.name)
  priority: ERROR
  tags: [egress]
  action: deny
- rule: Test NVIDIA node created
  desc: An NVIDIA node made in a pod.
  condition: evt.type in (mknod, mknodat) and vigil_container and gpu.node exists
  output: NVIDIA node created (proc.pid=%proc.pid proc.name=%proc.name proc.cmdline=%proc.cmdline
    container.id=%container.id k8s.ns.name=%k8s.ns.name k8s.pod.name=%k8s.pod.name)
  priority: ERROR
  tags: [gpu_device_access]
  action: deny
- rule: Test quarantined program
  desc: A program whose container the test freezes and whose pod it labels (any process, the host's too).
  condition: evt.type = execve and proc.name = rival
  output: Quarantined program (proc.pid=%proc.pid proc.name=%proc.name container.id=%container.id
    k8s.ns.name=%k8s.ns.name k8s.pod.name=%k8s.pod.name)
  priority: NOTICE
  tags: [test]
  action: [freeze, label]
)";

std::string g_config;  // the agent's configuration file

std::string g_hashed;      // the program the test denies by its SHA-256
std::string g_hashed_sha;  // its SHA-256, hex

// A copy of the workload with bytes of its own appended (the loader ignores
// them): a program file no other test runs, denied by its hash.
std::string make_hashed_program(const std::string& tmp) {
  fs::create_directories(tmp + "/hashed");
  g_hashed = tmp + "/hashed/ggml-runner";
  fs::copy_file(VIGIL_WORKLOAD, g_hashed, fs::copy_options::overwrite_existing);
  std::ofstream(g_hashed, std::ios::app) << "vigil prevention test " << getpid() << "\n";
  fs::permissions(g_hashed, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec);
  const int fd = open(g_hashed.c_str(), O_RDONLY | O_CLOEXEC);
  g_hashed_sha = vigil::ident::sha256_fd(fd, 1ull << 30);
  close(fd);
  return "- rule: Test program denied by hash\n"
         "  desc: A program file the test denies by its SHA-256.\n"
         "  condition: evt.type = execve and vigil_container and proc.exe_sha256 in (" +
         g_hashed_sha +
         ")\n"
         "  output: Denied by hash (proc.pid=%proc.pid proc.name=%proc.name proc.exe_sha256=%proc.exe_sha256\n"
         "    container.id=%container.id k8s.ns.name=%k8s.ns.name k8s.pod.name=%k8s.pod.name)\n"
         "  priority: ERROR\n"
         "  tags: [crypto_mining]\n"
         "  action: deny\n";
}

std::string g_static;     // the program the test denies by its build-id
std::string g_static_id;  // its build-id, hex

// A statically linked copy of the workload, denied by its build-id: the
// kernel reads it at exec, so its first exec is prevented, not responded to.
std::string make_static_program(const std::string& tmp) {
  fs::create_directories(tmp + "/static");
  g_static = tmp + "/static/llm-helper";
  fs::copy_file(VIGIL_WORKLOAD_STATIC, g_static, fs::copy_options::overwrite_existing);
  fs::permissions(g_static, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec);
  const int fd = open(g_static.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  g_static_id = fstat(fd, &st) == 0 ? vigil::ident::read_build_id_fd(fd, st.st_size) : "";
  close(fd);
  return "- rule: Test program denied by build-id\n"
         "  desc: A statically linked program the test denies by its ELF build-id.\n"
         "  condition: evt.type = execve and vigil_container and proc.exe_build_id = " +
         g_static_id +
         "\n"
         "  output: Denied by build-id (proc.pid=%proc.pid proc.ppid=%proc.ppid proc.name=%proc.name proc.exe_build_id=%proc.exe_build_id\n"
         "    container.id=%container.id k8s.ns.name=%k8s.ns.name k8s.pod.name=%k8s.pod.name)\n"
         "  priority: ERROR\n"
         "  tags: [crypto_mining]\n"
         "  action: deny\n";
}

std::string g_flight;  // the flight recorder's directory

void write_mode(const std::string& mode) {
  // A short window and after-window: small captures, written a second after
  // the alert (the capture test waits for the file).
  std::ofstream(g_config) << "flight_recorder: {enabled: true, dir: " << g_flight
                          << ", window_s: 5, after_s: 1}\nprevention:\n  mode: " << mode << "\n";
}

class PreventionScenario : public Scenario {
 protected:
  static void SetUpTestSuite() {
    g_extra_agent_args = [](const std::string& tmp) {
      g_config = tmp + "/prevention.yaml";
      g_flight = tmp + "/flight";
      write_mode("enforce");
      std::ofstream(tmp + "/prevention_rules.yaml") << kRules << make_hashed_program(tmp) << make_static_program(tmp);
      // The flight recorder on (the rig turns it off): every response gets a capture.
      return std::vector<std::string>{"-c",        g_config,
                                      "-r",        tmp + "/prevention_rules.yaml",
                                      "--capture", tmp + "/prevention.vcap",
                                      "-o",        "flight_recorder.enabled=true",
                                      "-o",        "flight_recorder.dir=" + g_flight};
    };
    Scenario::SetUpTestSuite();
  }

  // NVIDIA nodes with real numbers, on a tmpfs of their own (the rig's /tmp
  // may be nodev).
  std::string devs() {
    const std::string d = s().tmp + "/devs";
    if (!fs::exists(d + "/nvidia0")) {
      fs::create_directories(d);
      EXPECT_EQ(mount("tmpfs", d.c_str(), "tmpfs", MS_NOSUID, "mode=0755,size=64k"), 0) << std::strerror(errno);
      EXPECT_EQ(mknod((d + "/nvidia0").c_str(), S_IFCHR | 0666, makedev(195, 0)), 0) << std::strerror(errno);
    }
    return d;
  }
  void TearDown() override { umount2((s().tmp + "/devs").c_str(), MNT_DETACH); }

  // The workload's steps, expecting refusals (EPERM) or not.
  PodRun calls(bool refused, const std::string& node) {
    PodRun r;
    r.argv = {s().tool("worker")};
    r.tcp_sinks = {"10.100.4.7:6379", "203.0.113.50:3333"};
    const std::string e = refused ? "!EPERM" : "";
    // The first calls give vigil the pod's cgroup (its entry reaches the kernel).
    r.steps = "sleep:1500;open:" + node + ":rw" + (refused ? "!EPERM" : "!ENXIO") + ";mknod:/dev/nvidia9:195:9" + e +
              ";tcp:203.0.113.50:3333" + e + ";tcp:10.100.4.7:6379;socket:raw" + e;
    return r;
  }
  // The denied program, whose first action writes `marker`: its exit code
  // (and its pid in `pid`).
  int run_denied(const std::string& pod_name, const std::string& marker, pid_t* pid = nullptr) {
    PodRun r;
    r.argv = {s().tool("xmrig"), "-o", "stratum+tcp://pool.example.com:3333"};
    r.steps = "write:" + marker + ":ran";
    auto [p, code] = run_in_pod(pod(pod_name), r);
    if (pid) *pid = p;
    return code;
  }
  // (rule, pid) of the alerts tagged `prevented` among `alerts`, for `pids`.
  static std::set<std::pair<std::string, long>> prevented(const std::vector<json>& alerts, const std::set<long>& pids) {
    std::set<std::pair<std::string, long>> out;
    for (const json& a : alerts) {
      if (a.value("prevention", "") != "prevented" || !a.contains("output_fields")) continue;
      auto pid = a["output_fields"].value("proc.pid", json());
      if (pid.is_number() && pids.count(pid.get<long>())) out.insert({a.value("rule", ""), pid.get<long>()});
    }
    return out;
  }
  std::vector<json> tagged(const std::string& rule, const std::string& outcome, std::chrono::milliseconds wait = 10s) {
    return s().agent.alerts(
        [&](const json& a) {
          // The workloads' own calls (the rig's stand-in nodes, named nvidia*
          // with /dev/null's numbers, are made by the test's process).
          const std::string who = a.contains("output_fields") ? a["output_fields"].value("proc.name", "") : "";
          return a.value("rule", "") == rule && a.value("prevention", "") == outcome &&
                 (who == "worker" || who == "xmrig");
        },
        wait);
  }
  bool reload(const std::string& mode) {
    write_mode(mode);
    const int before = s().agent.stderr_count("rules reloaded");
    s().agent.signal(SIGHUP);
    for (int i = 0; i < 100; ++i) {
      if (s().agent.stderr_count("rules reloaded") > before) {
        std::this_thread::sleep_for(1s);
        return true;
      }
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }
};

// cgroup.events of the pod's container cgroup says `frozen 1` within `wait`
// (frozen = true) or still says `frozen 0` after it (frozen = false).
bool frozen_within(const PodSpec& pod, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  do {
    std::ifstream in(pod.scope + "/cgroup.events");
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (all.find("frozen 1") != std::string::npos) return true;
    std::this_thread::sleep_for(100ms);
  } while (std::chrono::steady_clock::now() < deadline);
  return false;
}

// Declared first: the test below ends with the suite's agent killed.
TEST_F(PreventionScenario, FreezeAndLabelResponsesInEnforceNothingInMonitor) {
  const std::string rule = "Test quarantined program";
  const PodSpec& web = pod("web-0");
  auto rule_alerts = [&](const std::string& outcome) {
    return s().agent.alerts(
        [&](const json& a) {
          return a.value("rule", "") == rule && a.value("prevention", "") == outcome && a.contains("output_fields") &&
                 a["output_fields"].value("k8s.pod.name", json()) == "web-0";
        },
        10s);
  };

  // A host process that matches the rule: alerted, never frozen or killed.
  setenv("VIGIL_STEPS", "sleep:1000", 1);
  Child host = Child::spawn({s().tool("rival")});
  unsetenv("VIGIL_STEPS");
  const int host_st = host.wait(20s);
  EXPECT_TRUE(WIFEXITED(host_st) && WEXITSTATUS(host_st) == 0) << "the host process was stopped or frozen";
  const auto host_alerts = s().agent.alerts_where(rule, "proc.pid", static_cast<long>(host.pid()), 10s);
  ASSERT_FALSE(host_alerts.empty()) << "no alert for the host process\n" << s().agent.stderr_text();
  EXPECT_FALSE(host_alerts[0].contains("prevention")) << host_alerts[0].dump();

  // enforce: the pod's container is frozen and its pod labelled.
  const std::size_t patched_before = s().api->changes().size();
  PodRun r;
  r.argv = {s().tool("rival")};
  r.steps = "sleep:3000";
  std::pair<pid_t, int> result{-1, -1};
  std::thread run([&] { result = run_in_pod(web, r); });
  const bool frozen = frozen_within(web, 15s);
  EXPECT_TRUE(frozen) << "the pod's container was not frozen\n" << s().agent.stderr_text();
  const auto got = rule_alerts("respond");
  std::string capture;
  if (!got.empty()) {
    const auto tags = got[0].value("tags", json::array());
    EXPECT_NE(std::find(tags.begin(), tags.end(), "responded"), tags.end()) << got[0].dump();
    EXPECT_EQ(std::find(tags.begin(), tags.end(), "prevented"), tags.end()) << "a response is not prevention";
    capture = got[0].value("capture", "");
  }
  EXPECT_FALSE(got.empty()) << "no responded alert\n" << s().agent.stderr_text();
  EXPECT_FALSE(capture.empty()) << "a NOTICE response got no flight-recorder capture";
  std::vector<ApiStandIn::Change> changes;
  for (int i = 0; i < 100 && changes.size() <= patched_before; ++i) {
    changes = s().api->changes();
    std::this_thread::sleep_for(100ms);
  }
  // The operator thaws it (docs/prevention.md); the workload then ends.
  // (Before any ASSERT: a frozen pod would outlive the test.)
  std::ofstream(web.scope + "/cgroup.freeze") << "0\n";
  run.join();
  EXPECT_EQ(result.second, 0) << "the workload did not end well once thawed";
  for (int i = 0; i < 300 && !capture.empty() && !fs::exists(capture); ++i) std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(capture.empty() || fs::exists(capture)) << capture;
  ASSERT_GT(changes.size(), patched_before) << "the API stand-in received no PATCH\n" << s().agent.stderr_text();
  const auto& patch = changes.back();
  EXPECT_EQ(patch.method, "PATCH");
  EXPECT_EQ(patch.path, "/api/v1/namespaces/" + web.ns + "/pods/web-0");
  EXPECT_EQ(patch.content_type, "application/merge-patch+json");
  const json body = json::parse(patch.body, nullptr, false);
  ASSERT_TRUE(body.is_object()) << patch.body;
  EXPECT_EQ(body["metadata"]["labels"].value("vigil.dev/quarantined", ""), "true") << patch.body;
  EXPECT_EQ(body["metadata"]["annotations"].value("vigil.dev/quarantine-rule", ""), rule) << patch.body;

  // monitor: nothing frozen, nothing patched; the alert says would_prevent.
  ASSERT_TRUE(reload("monitor")) << s().agent.stderr_text();
  const std::size_t patched = s().api->changes().size();
  std::thread run2([&] { result = run_in_pod(web, r); });
  EXPECT_FALSE(frozen_within(web, 4s)) << "frozen in monitor mode";
  const auto would = rule_alerts("would_respond");
  std::ofstream(web.scope + "/cgroup.freeze") << "0\n";
  run2.join();
  EXPECT_EQ(result.second, 0);
  ASSERT_FALSE(would.empty()) << s().agent.stderr_text();
  const auto tags = would[0].value("tags", json::array());
  EXPECT_NE(std::find(tags.begin(), tags.end(), "would_prevent"), tags.end()) << would[0].dump();
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(s().api->changes().size(), patched) << "patched in monitor mode";
  ASSERT_TRUE(reload("enforce")) << s().agent.stderr_text();
}

// A program denied by its hash: the kernel cannot hash, so the first exec of
// the file is killed once vigil has identified it (a response), and every
// later exec of the same file is killed at exec, before its first action.
TEST_F(PreventionScenario, ProgramDeniedByHashIsKilledOnceIdentifiedThenAtExec) {
  ASSERT_TRUE(reload("enforce")) << s().agent.stderr_text();
  const std::string rule = "Test program denied by hash";
  // First exec in the pod: it would sleep 6 s, then write its marker.
  const std::string first_marker = s().tmp + "/marker-hash-first";
  PodRun r;
  r.argv = {g_hashed, "--model", "/models/llama.gguf"};
  r.steps = "sleep:6000;write:" + first_marker + ":ran";
  const auto t0 = std::chrono::steady_clock::now();
  auto [first_pid, first_code] = run_in_pod(pod("web-0"), r);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(first_code, 100) << "the first exec was not killed\n" << s().agent.stderr_text();
  EXPECT_LT(took, 5s) << "killed only after it had slept";
  std::printf("first exec of the denied file: run_in_pod returned after %lld ms (pod set-up included)\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  EXPECT_FALSE(fs::exists(first_marker));
  const auto first = s().agent.alerts_where(rule, "proc.pid", static_cast<long>(first_pid), 10s);
  ASSERT_FALSE(first.empty()) << s().agent.stderr_text();
  EXPECT_EQ(first[0].value("prevention", ""), "respond") << first[0].dump();
  const auto first_tags = first[0].value("tags", json::array());
  EXPECT_NE(std::find(first_tags.begin(), first_tags.end(), "responded"), first_tags.end()) << first[0].dump();

  // Later execs of the file: killed at exec, the first action never happens.
  const std::string later_marker = s().tmp + "/marker-hash-later";
  r.steps = "write:" + later_marker + ":ran";
  auto [later_pid, later_code] = run_in_pod(pod("web-0"), r);
  EXPECT_EQ(later_code, 100) << s().agent.stderr_text();
  EXPECT_FALSE(fs::exists(later_marker)) << "the denied program ran its first action";
  const auto later = s().agent.alerts_where(rule, "proc.pid", static_cast<long>(later_pid), 10s);
  ASSERT_FALSE(later.empty()) << s().agent.stderr_text();
  EXPECT_EQ(later[0].value("prevention", ""), "prevented") << later[0].dump();
  EXPECT_EQ(later[0]["output_fields"].value("proc.exe_sha256", ""), g_hashed_sha);
  EXPECT_EQ(later[0]["output_fields"].value("k8s.pod.name", json()), "web-0");

  // The same file on the host, now in the kernel's map: never killed.
  const std::string host_marker = s().tmp + "/marker-hash-host";
  setenv("VIGIL_STEPS", ("write:" + host_marker + ":ran").c_str(), 1);
  Child host = Child::spawn({g_hashed});
  unsetenv("VIGIL_STEPS");
  const int host_st = host.wait(20s);
  EXPECT_TRUE(WIFEXITED(host_st) && WEXITSTATUS(host_st) == 0) << "the host's run of the file was stopped";
  EXPECT_TRUE(fs::exists(host_marker));
}

// A statically linked program denied by build-id: the kernel reads the
// build-id at exec, so even its first exec, never identified before, is
// killed before its first action, and a renamed copy too. A shell in the pod
// starts it, as an intruder's would, and lives on: vigil identifies the
// killed program in the shell's root, so the alert names it.
TEST_F(PreventionScenario, StaticProgramDeniedByBuildIdIsKilledAtItsFirstExec) {
  ASSERT_EQ(g_static_id.size(), 40u) << "the static workload has no SHA-1 build-id";
  ASSERT_TRUE(reload("enforce")) << s().agent.stderr_text();
  const std::string rule = "Test program denied by build-id";
  for (const std::string& name : {std::string("llm-helper"), std::string("tokenizer")}) {
    const std::string prog = s().tmp + "/static/" + name;
    if (prog != g_static) fs::copy_file(g_static, prog, fs::copy_options::overwrite_existing);
    const std::string marker = s().tmp + "/marker-buildid-" + name;
    PodRun r;
    r.argv = {"/bin/sh", "-c", "\"$0\" --port 8080; st=$?; sleep 1; exit $st", prog};
    r.steps = "write:" + marker + ":ran";
    auto [sh_pid, code] = run_in_pod(pod("web-0"), r);
    EXPECT_EQ(code, 128 + SIGKILL) << name << " was not killed\n" << s().agent.stderr_text();
    EXPECT_FALSE(fs::exists(marker)) << name << " ran its first action";
    const auto got = s().agent.alerts(
        [&](const json& a) {
          return a.value("rule", "") == rule && a.contains("output_fields") &&
                 a["output_fields"].value("proc.name", json()) == json(name);
        },
        10s);
    ASSERT_FALSE(got.empty()) << name << "\n" << s().agent.stderr_text();
    EXPECT_EQ(got[0]["output_fields"].value("proc.ppid", json()), json(sh_pid)) << got[0].dump();
    EXPECT_EQ(got[0].value("prevention", ""), "prevented") << got[0].dump();
    EXPECT_EQ(got[0]["output_fields"].value("proc.exe_build_id", ""), g_static_id) << got[0].dump();
    EXPECT_EQ(got[0]["output_fields"].value("k8s.pod.name", json()), "web-0");
  }
  // The host runs it.
  const std::string host_marker = s().tmp + "/marker-buildid-host";
  setenv("VIGIL_STEPS", ("write:" + host_marker + ":ran").c_str(), 1);
  Child host = Child::spawn({g_static});
  unsetenv("VIGIL_STEPS");
  const int host_st = host.wait(20s);
  EXPECT_TRUE(WIFEXITED(host_st) && WEXITSTATUS(host_st) == 0) << "the host's run of the program was stopped";
  EXPECT_TRUE(fs::exists(host_marker));
}

// A destination learnt from a DNS answer: the pod's connect to the address
// the answer gave the denied name fails; its other connections do not.
TEST_F(PreventionScenario, AddressesOfDeniedNamesAreRefusedOnceADnsAnswerGivesThem) {
  ASSERT_TRUE(reload("enforce")) << s().agent.stderr_text();
  PodRun r;
  r.argv = {s().tool("worker")};
  r.dns = {{"pool.vigil-test.example", "198.51.100.70"}};
  r.tcp_sinks = {"198.51.100.70:4444", "10.100.4.7:6379"};
  // Before the answer the address is nobody's: the connect succeeds.
  r.steps =
      "sleep:1500;tcp:198.51.100.70:4444;dns:pool.vigil-test.example@10.96.0.10;sleep:1000;"
      "tcp:198.51.100.70:4444!EPERM;tcp:10.100.4.7:6379";
  auto [pid, code] = run_in_pod(pod("web-0"), r);
  EXPECT_EQ(code, 0) << "a connect was refused or let through wrongly (workload exit " << code << ")\n"
                     << s().agent.stderr_text();
  const auto got = s().agent.alerts(
      [&](const json& a) {
        return a.value("rule", "") == "Test pool by name" && a.value("prevention", "") == "prevented" &&
               a.contains("output_fields") && a["output_fields"].value("proc.pid", json()) == json(pid);
      },
      10s);
  ASSERT_FALSE(got.empty()) << s().agent.stderr_text();
  EXPECT_EQ(got[0]["output_fields"].value("fd.sip", ""), "198.51.100.70") << got[0].dump();
  EXPECT_EQ(got[0]["output_fields"].value("fd.sip.name", ""), "pool.vigil-test.example") << got[0].dump();

  // A reload that changes the enforced rules forgets the learnt address
  // (its slot could stand for another rule now): the connect goes through
  // until the next answer gives it again.
  ASSERT_TRUE(reload("monitor")) << s().agent.stderr_text();
  ASSERT_TRUE(reload("enforce")) << s().agent.stderr_text();
  r.steps =
      "sleep:1500;tcp:198.51.100.70:4444;dns:pool.vigil-test.example@10.96.0.10;sleep:1000;"
      "tcp:198.51.100.70:4444!EPERM";
  EXPECT_EQ(run_in_pod(pod("web-0"), r).second, 0) << "a learnt address outlived a reload that moved the slots\n"
                                                   << s().agent.stderr_text();
}

// A hybrid host (v1 controllers beside the unified hierarchy, as here) whose
// runtime put the container in a v1 freezer cgroup (cgroupfs driver layout):
// vigil writes FROZEN to that cgroup's freezer.state, not the v2 file.
TEST_F(PreventionScenario, FreezeUsesTheV1FreezerCgroupWhereTheContainerIsInOne) {
  const std::string freezer = "/sys/fs/cgroup/freezer";
  if (!fs::exists(freezer + "/cgroup.procs") || fs::exists(freezer + "/cgroup.controllers"))
    GTEST_SKIP() << "no cgroup v1 freezer hierarchy at " << freezer;
  const PodSpec& web = pod("web-0");
  // The levels made here, removed (last first) at the end.
  std::vector<std::string> made;
  std::string v1 = freezer;
  for (const std::string& level : {std::string("kubepods"), std::string("besteffort"), "pod" + web.uid, web.id}) {
    v1 += "/" + level;
    if (!fs::exists(v1)) {
      ASSERT_TRUE(fs::create_directory(v1)) << v1;
      made.push_back(v1);
    }
  }
  PodRun r;
  // The workload joins the v1 cgroup, then becomes the program the rule names.
  r.argv = {"/bin/sh", "-c", "echo $$ > " + v1 + "/cgroup.procs && exec " + s().tool("rival")};
  r.steps = "sleep:3000";
  std::pair<pid_t, int> result{-1, -1};
  std::thread run([&] { result = run_in_pod(web, r); });
  std::string state;
  for (int i = 0; i < 150 && state.rfind("FROZEN", 0) != 0; ++i) {
    std::this_thread::sleep_for(100ms);
    std::ifstream in(v1 + "/freezer.state");
    std::getline(in, state);
  }
  const bool v2_frozen = frozen_within(web, 0ms);
  std::ofstream(v1 + "/freezer.state") << "THAWED\n";
  std::ofstream(web.scope + "/cgroup.freeze") << "0\n";
  run.join();
  for (auto it = made.rbegin(); it != made.rend(); ++it) fs::remove(*it);
  EXPECT_EQ(state, "FROZEN") << s().agent.stderr_text();
  EXPECT_FALSE(v2_frozen) << "the v2 cgroup was frozen too";
  EXPECT_EQ(result.second, 0) << "the workload did not end well once thawed";
}

TEST_F(PreventionScenario, EnforceMonitorOffAndNothingLeftRefusedAfterSigkill) {
  const std::string node = devs() + "/nvidia0";
  // enforce: web-0 has no GPU; miner-0 has one (its node reaches the device).
  auto [pid, code] = run_in_pod(pod("web-0"), calls(true, node));
  pid_t denied_pid = 0;
  EXPECT_EQ(code, 0) << "a call was not refused (workload exit " << code << ")\n" << s().agent.stderr_text();
  PodRun allowed;
  allowed.argv = {s().tool("worker")};
  allowed.steps = "sleep:1500;open:" + node + ":rw!ENXIO";
  EXPECT_EQ(run_in_pod(pod("miner-0"), allowed).second, 0) << "the allocated GPU was refused";
  const std::string marker = s().tmp + "/marker-enforce";
  EXPECT_NE(run_denied("web-0", marker, &denied_pid), 0);
  EXPECT_FALSE(fs::exists(marker)) << "the denied program ran its first action";
  for (const char* rule : {"GPU device opened by container without GPU allocation", "Test NVIDIA node created",
                           "Test pool connection", "Test raw socket", "Test denied program"}) {
    auto got = tagged(rule, "prevented");
    EXPECT_FALSE(got.empty()) << "no prevented alert for '" << rule << "'\n"
                              << dump(s().agent.alerts([](const json& a) {
                                   return a.contains("output_fields") &&
                                          a["output_fields"].value("k8s.pod.name", json()) == "web-0";
                                 }));
    if (got.empty()) continue;
    auto tags = got[0].value("tags", json::array());
    EXPECT_NE(std::find(tags.begin(), tags.end(), "prevented"), tags.end()) << got[0].dump();
    EXPECT_EQ(got[0]["output_fields"].value("k8s.pod.name", json()), "web-0") << got[0].dump();
  }

  const std::set<long> first = {static_cast<long>(pid), static_cast<long>(denied_pid)};
  const auto live = prevented(s().agent.alerts([](const json&) { return true; }), first);
  EXPECT_EQ(live.size(), 5u) << "one prevented alert per rule:\n"
                             << dump(s().agent.alerts([](const json& a) { return a.contains("prevention"); }));

  // monitor: the same calls succeed, each with a would_prevent alert.
  ASSERT_TRUE(reload("monitor")) << s().agent.stderr_text();
  EXPECT_EQ(run_in_pod(pod("web-0"), calls(false, node)).second, 0) << s().agent.stderr_text();
  const std::string marker2 = s().tmp + "/marker-monitor";
  EXPECT_EQ(run_denied("web-0", marker2), 0);
  EXPECT_TRUE(fs::exists(marker2));
  for (const char* rule :
       {"Test NVIDIA node created", "Test pool connection", "Test raw socket", "Test denied program"}) {
    EXPECT_FALSE(tagged(rule, "would_prevent").empty()) << "no would_prevent alert for '" << rule << "'";
  }

  // off: nothing refused, nothing said about prevention.
  ASSERT_TRUE(reload("off")) << s().agent.stderr_text();
  const std::size_t said = s().agent.alerts([](const json& a) { return a.contains("prevention"); }).size();
  EXPECT_EQ(run_in_pod(pod("web-0"), calls(false, node)).second, 0);
  const std::string marker3 = s().tmp + "/marker-off";
  EXPECT_EQ(run_denied("web-0", marker3), 0);
  EXPECT_TRUE(fs::exists(marker3));
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(s().agent.alerts([](const json& a) { return a.contains("prevention"); }).size(), said);

  // enforce again, then SIGKILL: the kernel detaches vigil's programs with
  // its links; nothing stays refused.
  ASSERT_TRUE(reload("enforce")) << s().agent.stderr_text();
  ASSERT_EQ(run_in_pod(pod("web-0"), calls(true, node)).second, 0) << "enforce after the reload";
  s().agent.signal(SIGKILL);
  s().agent.wait_exit(10s);
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(run_in_pod(pod("web-0"), calls(false, node)).second, 0) << "a refusal outlived vigil";
  const std::string marker4 = s().tmp + "/marker-after";
  EXPECT_EQ(run_denied("web-0", marker4), 0);
  EXPECT_TRUE(fs::exists(marker4));

  // The same with a clean stop (SIGTERM): a new agent enforces, then stops.
  VigilProcess second(VIGIL_BINARY);
  std::string why;
  ASSERT_TRUE(
      start_agent(second, s().api->port(), s().fifo, why, {"-c", g_config, "-r", s().tmp + "/prevention_rules.yaml"}))
      << why;
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(run_in_pod(pod("web-0"), calls(true, node)).second, 0) << "enforce under the second agent\n"
                                                                   << second.stderr_text();
  second.stop(SIGTERM);
  EXPECT_EQ(run_in_pod(pod("web-0"), calls(false, node)).second, 0) << "a refusal outlived a stopped vigil";

  // The capture replayed with the policy: the decisions the node made.
  write_mode("enforce");
  VigilProcess rep(VIGIL_BINARY);
  ASSERT_TRUE(rep.start_command("replay", {s().tmp + "/prevention.vcap", "-c", g_config, "-r", "rules/", "-r",
                                           s().tmp + "/prevention_rules.yaml"}));
  const int st = rep.wait_exit(120s);
  ASSERT_TRUE(WIFEXITED(st)) << rep.stderr_text();
  EXPECT_EQ(prevented(rep.alerts([](const json&) { return true; }), first), live) << rep.stderr_text();
}

}  // namespace
