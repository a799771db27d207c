// The evaluator's optimisations (reordered and/or children, folded constant
// checks, merged literal sets, regex prefilters, flat in-lists, one program
// array per event type) must not change which rules fire. These tests compare
// the optimised rule set with the same rules compiled as written
// (LoadOptions::optimise = false) over many random events whose names, paths,
// command lines and images are drawn from the rule files' own lists and
// literals, so that rules do fire; and they pin down the mechanisms on inputs
// chosen to trip them.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>

#include "engine/rules/compiler.h"
#include "engine/rules/document.h"
#include "engine/rules/ruleset.h"
#include "engine/rules/sequence.h"
#include "tests/engine/rules/test_util.h"
#include "tests/support/temp_dir.h"

namespace vigil::rules {
namespace {

using testing::World;

std::string falco_rules_path() {
  const char* env = std::getenv("VIGIL_FALCO_RULES_DIR");
  return std::string(env ? env : "../shared/falco-rules") + "/falco_rules.yaml";
}

std::vector<std::string> rule_files() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator("rules")) {
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  if (std::filesystem::exists(falco_rules_path())) files.push_back(falco_rules_path());
  return files;
}

// Every list item and every literal of every condition in the files: the
// values rules compare against, so random events built from them match rules.
std::vector<std::string> vocabulary(const std::vector<std::string>& files) {
  std::set<std::string> words;
  Diagnostics d;
  Collector col;
  for (const auto& f : files) {
    for (const auto& item : read_rules_yaml(support::read_file(f), f, d)) col.apply(item, d);
  }
  for (const auto& l : col.lists()) {
    for (auto w : l.items) {
      if (w.size() >= 2 && (w.front() == '"' || w.front() == '\'')) w = w.substr(1, w.size() - 2);
      if (!w.empty()) words.insert(w);
    }
  }
  auto scan = [&](const std::string& cond) {
    std::size_t i = 0;
    while (i < cond.size()) {
      char c = cond[i];
      if (c == '"' || c == '\'') {
        auto e = cond.find(c, i + 1);
        if (e == std::string::npos) break;
        words.insert(cond.substr(i + 1, e - i - 1));
        i = e + 1;
        continue;
      }
      if (std::isspace(static_cast<unsigned char>(c)) || c == '(' || c == ')' || c == ',') {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < cond.size() && !std::isspace(static_cast<unsigned char>(cond[j])) && cond[j] != '(' &&
             cond[j] != ')' && cond[j] != ',') {
        ++j;
      }
      std::string w = cond.substr(i, j - i);
      if (w.find('.') == std::string::npos || w.front() == '/') words.insert(w);  // not a field name
      i = j;
    }
  };
  for (const auto& m : col.macros()) scan(m.condition);
  for (const auto& r : col.rules()) scan(r.condition);
  return {words.begin(), words.end()};
}

struct Corpus {
  std::mt19937 rng{20260101};
  std::vector<std::string> words;

  const std::string& word() { return words[rng() % words.size()]; }
  bool coin(unsigned percent) { return rng() % 100 < percent; }
  std::string name() {
    std::string w = word();
    auto s = w.rfind('/');
    if (s != std::string::npos) w = w.substr(s + 1);
    if (coin(20)) w = "python3";
    return w.substr(0, 15);
  }
  std::string path() {
    std::string w = word();
    if (w.empty() || w[0] != '/') w = "/" + w;
    if (coin(30)) w += coin(50) ? "/x" : ".bak";
    // Shapes that literal guards must get right: a literal as a suffix or
    // inside a longer path, repeated or missing leading slashes (pmatch skips
    // them, a prefix does not).
    if (coin(5)) w += "/" + word();
    if (coin(3)) w = "/" + w;
    if (coin(3)) w = w.substr(1);
    return w;
  }
  std::string text() {
    std::string s;
    int n = 1 + static_cast<int>(rng() % 5);
    for (int i = 0; i < n; ++i) {
      if (i) s += ' ';
      s += coin(70) ? word() : std::string(coin(50) ? "--algo" : "-e");
    }
    return s;
  }
  event::IpAddr addr() {
    static const char* kAddrs[] = {"10.0.0.5",   "8.8.8.8", "169.254.169.254", "192.168.1.4", "1.2.3.4",
                                   "100.64.0.1", "fd00::1", "2001:db8::7",     "172.16.5.5",  "127.0.0.1"};
    return testing::ip(kAddrs[rng() % 10]);
  }

  // A random process with random ancestors and container, and one event.
  void fill(World& w) {
    w.proc.comm = name();
    w.proc.exe = coin(50) ? w.proc.comm : word();
    w.proc.exepath = coin(50) ? "/usr/bin/" + w.proc.comm : path();
    w.proc.args.clear();
    int nargs = static_cast<int>(rng() % 4);
    for (int i = 0; i < nargs; ++i) w.proc.args.push_back(coin(60) ? word() : text());
    w.proc.cwd = coin(80) ? "/workspace" : path();
    w.proc.uid = coin(30) ? 0 : 1000;
    w.proc.tty = coin(20) ? 34816 : 0;
    w.proc.loginuid = coin(20) ? 0 : 0xffffffffu;
    w.proc.stdin_is_socket = coin(10);
    w.proc.stdout_is_socket = coin(10);
    w.proc.gpu_compute = coin(30);
    // The program's identity facts, which flag guards (F = true) read.
    w.proc.exe_class = static_cast<std::uint8_t>(coin(15) ? 1 + rng() % 2 : 0);
    w.proc.exe_known_as = w.proc.exe_class == 1 ? "bash" : w.proc.exe_class == 2 ? "python3" : "";
    w.proc.elf32 = coin(10);
    w.proc.exe_from_memfd = coin(10);
    w.proc.exe_upper_layer = coin(10);
    w.proc.exe_deleted = coin(10);
    w.proc.exe_name_mismatch = coin(10);
    w.st.procs[50].comm = name();
    w.st.procs[50].exe = w.st.procs[50].comm;
    w.st.procs[50].exepath = "/usr/bin/" + w.st.procs[50].comm;
    w.st.procs[50].args = {text()};
    w.st.procs[1].comm = coin(50) ? "containerd-shim" : name();
    w.in_container = coin(80);
    w.container.image = coin(50) ? word() + ":1.0" : "ghcr.io/acme/train:1.4";
    w.container.privileged = coin(10);
    w.container.name = coin(80) ? "trainer" : word();
    w.pod.ns = coin(70) ? "ml" : word();
    w.pod.labels.clear();
    if (coin(30)) w.pod.labels[coin(50) ? "app.kubernetes.io/component" : "ray.io/serve"] = word();
    w.pod.containers[0].gpu_limit = coin(70) ? 1 : 0;
    w.pod.containers[0].nvidia_visible_devices = coin(70) ? "0" : (coin(50) ? "all" : "");
    w.ev.hdr.comm = w.proc.comm;
    w.ev.hdr.uid = w.proc.uid;
    switch (rng() % 6) {
      case 0: {
        w.exec();
        auto& d = std::get<event::ExecData>(w.ev.data);
        d.exe_class = w.proc.exe_class;
        d.exe_known_as = w.proc.exe_known_as;
        d.elf32 = w.proc.elf32;
        d.exe_from_memfd = w.proc.exe_from_memfd;
        d.exe_upper_layer = w.proc.exe_upper_layer;
        d.exe_deleted = w.proc.exe_deleted;
        d.exe_name_mismatch = w.proc.exe_name_mismatch;
        break;
      }
      case 1: {
        std::uint32_t flags = coin(50) ? O_RDONLY : (coin(50) ? O_WRONLY | O_CREAT : O_RDWR);
        w.open(path(), flags, coin(90) ? 3 : -2);
        // The path as given, when it differs (fd.nameraw): with "../" in it.
        if (coin(10)) std::get<event::OpenData>(w.ev.data).raw = coin(50) ? "../../" + word() : "/srv/www/../" + word();
        if (coin(30)) {
          auto& d = std::get<event::OpenData>(w.ev.data);
          d.is_device = true;
          d.dev_major = coin(70) ? 195 : 1;
          d.dev_minor = static_cast<std::uint32_t>(rng() % 256);
          if (coin(50)) d.path = "/dev/nvidia" + std::string(coin(50) ? "ctl" : "0");
        }
        break;
      }
      case 2: {
        w.ev.hdr.type = event::Type::kConnect;
        event::ConnectData d;
        d.saddr = testing::ip("10.244.0.7");
        d.daddr = addr();
        d.family = d.daddr.family;
        d.proto = coin(80) ? event::L4::kTcp : event::L4::kUdp;
        d.sport = 40000;
        static const std::uint16_t kPorts[] = {22, 443, 3333, 4444, 6443, 80, 14444, 53, 2222};
        d.dport = kPorts[rng() % 9];
        d.result = coin(90) ? 0 : -111;
        w.ev.data = d;
        if (coin(40)) w.st.dns[event::to_string(d.daddr)] = word();
        break;
      }
      case 3: {
        w.ev.hdr.type = event::Type::kIoctl;
        event::IoctlData d;
        d.fd = 9;
        d.nr = coin(50) ? 0x2A : static_cast<std::uint32_t>(rng() % 0x60);
        d.rm_control = coin(50) ? 0x20800110 : static_cast<std::uint32_t>(rng());
        d.rm_class = coin(30) ? static_cast<std::uint32_t>(rng() % 0xd000) : 0;
        d.uvm = coin(20);
        d.dev_major = 195;
        d.dev_minor = coin(50) ? 255 : static_cast<std::uint32_t>(rng() % 8);
        w.ev.data = d;
        break;
      }
      case 4: {
        w.ev.hdr.type = event::Type::kDns;
        event::DnsData d;
        std::string n = word();
        d.name = coin(50) ? n : "x." + n;
        d.qtype = 1;
        d.is_response = coin(30);
        d.server = testing::ip("10.96.0.10");
        w.ev.data = d;
        break;
      }
      default: {
        w.ev.hdr.type = event::Type::kPayload;
        event::PayloadData d;
        d.family = 2;
        d.saddr = testing::ip("10.244.0.7");
        d.daddr = addr();
        d.dport = 3333;
        d.bytes = coin(50) ? "{\"id\":1,\"method\":\"mining.subscribe\",\"params\":[]}" : text();
        w.ev.data = d;
        break;
      }
    }
  }
};

std::vector<std::string> fired(const Ruleset& rs, const state::EvalContext& ctx) {
  std::vector<event::Alert> out;
  rs.evaluate(ctx, out);
  std::vector<std::string> names;
  for (const auto& a : out) names.push_back(a.rule + " | " + a.output);
  return names;
}

TEST(Optimiser, SameAlertsAsTheConditionsAsWritten) {
  auto files = rule_files();
  LoadOptions fast;
  LoadOptions plain;
  plain.optimise = false;
  auto a = load_rules(files, fast);
  auto b = load_rules(files, plain);
  ASSERT_TRUE(a.ruleset) << summary_line(a);
  ASSERT_TRUE(b.ruleset) << summary_line(b);
  ASSERT_EQ(a.loaded, b.loaded);
  EXPECT_EQ(a.ruleset->event_types(), b.ruleset->event_types());
  EXPECT_EQ(a.ruleset->open_paths().prefixes, b.ruleset->open_paths().prefixes);
  EXPECT_EQ(a.ruleset->open_paths().whole, b.ruleset->open_paths().whole);

  Corpus corpus;
  corpus.words = vocabulary(files);
  ASSERT_GT(corpus.words.size(), 100u);
  std::size_t alerts = 0;
  std::set<std::string> rules_fired;
  for (int i = 0; i < 30000; ++i) {
    World w;
    corpus.fill(w);
    auto ctx = w.ctx();
    auto fa = fired(*a.ruleset, ctx);
    auto fb = fired(*b.ruleset, ctx);
    ASSERT_EQ(fa, fb) << "event " << i << " type " << event::type_name(w.ev.hdr.type) << " proc " << w.proc.comm;
    alerts += fa.size();
    for (const auto& n : fa) rules_fired.insert(n.substr(0, n.find(" | ")));
  }
  // The comparison means something only if many rules fired.
  EXPECT_GT(alerts, 1000u);
  // (falco_rules.yaml is optional: without it, only the bundled rules run.)
  const bool with_falco = std::filesystem::exists(falco_rules_path());
  EXPECT_GE(rules_fired.size(), with_falco ? 20u : 15u) << rules_fired.size() << " rules fired";
}

// The same comparison over the bundled rules and all three of Falco's stock
// files (many more rules for the guard index to skip, literal guards on
// paths and command lines among them), with the sequences' partial matches
// kept from one event to the next, as the pipeline does.
TEST(Optimiser, SameAlertsWithAllStockRulesAndSequences) {
  const std::string dir = std::filesystem::path(falco_rules_path()).parent_path().string();
  auto files = rule_files();
  for (const char* f : {"falco-incubating_rules.yaml", "falco-sandbox_rules.yaml"}) {
    if (std::filesystem::exists(dir + "/" + f)) files.push_back(dir + "/" + f);
  }
  LoadOptions plain;
  plain.optimise = false;
  auto a = load_rules(files, LoadOptions{});
  auto b = load_rules(files, plain);
  ASSERT_TRUE(a.ruleset) << summary_line(a);
  ASSERT_TRUE(b.ruleset) << summary_line(b);
  ASSERT_EQ(a.loaded, b.loaded);
  SequenceState sa(*a.ruleset, nullptr);
  SequenceState sb(*b.ruleset, nullptr);
  Corpus corpus;
  corpus.rng.seed(20261126);
  corpus.words = vocabulary(files);
  std::size_t alerts = 0;
  std::set<std::string> rules_fired;
  for (int i = 0; i < 30000; ++i) {
    World w;
    corpus.fill(w);
    w.ev.hdr.ts_ns = 1'000'000'000ull * static_cast<std::uint64_t>(i);
    auto ctx = w.ctx();
    std::vector<event::Alert> oa, ob;
    a.ruleset->evaluate(ctx, oa, &sa);
    b.ruleset->evaluate(ctx, ob, &sb);
    std::vector<std::string> fa, fb;
    for (const auto& x : oa) fa.push_back(x.rule + " | " + x.output);
    for (const auto& x : ob) fb.push_back(x.rule + " | " + x.output);
    ASSERT_EQ(fa, fb) << "event " << i << " type " << event::type_name(w.ev.hdr.type) << " proc " << w.proc.comm;
    alerts += fa.size();
    for (const auto& n : fa) rules_fired.insert(n.substr(0, n.find(" | ")));
  }
  EXPECT_GT(alerts, 1000u);
  // Falco's three files bring more rules to fire (they are optional: the
  // bundled rules alone are four files).
  const bool all_falco = std::filesystem::exists(falco_rules_path()) && files.size() >= 3 &&
                         files[files.size() - 1].find("falco-sandbox") != std::string::npos;
  EXPECT_GE(rules_fired.size(), all_falco ? 30u : 15u) << rules_fired.size() << " rules fired";
}

// An `in` list is a flat table with length and first/last byte filters:
// members, near misses that pass the filters, long values sharing the
// length bucket, and the empty string.
TEST(Optimiser, InListsMatchExactlyTheirMembers) {
  std::string long1(70, 'a');
  std::string long2 = "/" + std::string(98, 'x') + "/";
  auto r = load_rules_text({{"t.yaml",
                             "- rule: r\n"
                             "  desc: d\n"
                             "  condition: evt.type = openat and fd.name in (/etc/shadow, /etc/shadoz, "
                             "/a, \"/b c\", /" +
                                 long1 + ", " + long2 +
                                 ")\n"
                                 "  output: o\n"
                                 "  priority: WARNING\n"}},
                           LoadOptions{});
  ASSERT_TRUE(r.ruleset) << summary_line(r);
  auto fires = [&](const std::string& path) {
    World w;
    w.open(path);
    std::vector<event::Alert> out;
    r.ruleset->evaluate(w.ctx(), out);
    return !out.empty();
  };
  EXPECT_TRUE(fires("/etc/shadow"));
  EXPECT_TRUE(fires("/etc/shadoz"));
  EXPECT_TRUE(fires("/a"));
  EXPECT_TRUE(fires("/b c"));
  EXPECT_TRUE(fires("/" + long1));
  EXPECT_TRUE(fires(long2));
  EXPECT_FALSE(fires("/etc/shadow "));
  EXPECT_FALSE(fires("/etc/shadox"));  // same length, first and last byte as members
  EXPECT_FALSE(fires("/etc/sHadow"));
  EXPECT_FALSE(fires("/" + long1 + "a"));  // shares the "63 or more" length bucket
  EXPECT_FALSE(fires("/" + std::string(98, 'y') + "/"));
  EXPECT_FALSE(fires("/"));
  EXPECT_FALSE(fires(""));
}

// never_true (evt.num = 0) and evt.source checks are constants: a rule
// guarded by one is still listed under its event types (and so still asks the
// sensor for them), but costs nothing to evaluate and never fires.
TEST(Optimiser, ConstantChecksFoldButKeepTheRuleListed) {
  auto r = load_rules_text({{"t.yaml",
                             "- macro: never_true\n"
                             "  condition: (evt.num=0)\n"
                             "- rule: guarded\n"
                             "  desc: d\n"
                             "  condition: evt.type = execve and never_true\n"
                             "  output: o\n"
                             "  priority: WARNING\n"
                             "- rule: source\n"
                             "  desc: d\n"
                             "  condition: evt.type = execve and evt.source = syscall and not evt.num = 0\n"
                             "  output: o\n"
                             "  priority: WARNING\n"}},
                           LoadOptions{});
  ASSERT_TRUE(r.ruleset) << summary_line(r);
  auto infos = r.ruleset->rules();
  ASSERT_EQ(infos.size(), 2u);
  EXPECT_EQ(infos[0].event_types, std::vector<std::string>{"execve"});
  EXPECT_EQ(r.ruleset->event_types(), std::set<event::Type>{event::Type::kExec});
  EXPECT_EQ(r.ruleset->plan("guarded", event::Type::kExec), "false\n");
  EXPECT_EQ(r.ruleset->plan("source", event::Type::kExec), "true\n");
  World w;
  w.exec();
  std::vector<event::Alert> out;
  r.ruleset->evaluate(w.ctx(), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].rule, "source");
}

// Exceptions (`and not ...`) almost always hold, so the selective tests of a
// rule run first whatever order the condition is written in.
TEST(Optimiser, SelectiveTestsRunBeforeExceptions) {
  auto r = load_rules_text({{"t.yaml",
                             "- rule: r\n"
                             "  desc: d\n"
                             "  condition: >\n"
                             "    evt.type = openat and not proc.name in (a, b) and not proc.cmdline contains x\n"
                             "    and fd.name = /etc/shadow\n"
                             "  output: o\n"
                             "  priority: WARNING\n"}},
                           LoadOptions{});
  ASSERT_TRUE(r.ruleset) << summary_line(r);
  std::string plan = r.ruleset->plan("r", event::Type::kOpen);
  auto first_check = plan.substr(plan.find('\n') + 1);
  EXPECT_EQ(first_check.rfind("  fd.name = /etc/shadow\n", 0), 0u) << plan;
}

// Both rule sets (optimised and as written) for one rule file.
struct Pair {
  LoadResult fast, plain;
  explicit Pair(const std::string& yaml) {
    LoadOptions o;
    fast = load_rules_text({{"t.yaml", yaml}}, o);
    o.optimise = false;
    plain = load_rules_text({{"t.yaml", yaml}}, o);
  }
  // Which rules fire for an exec of a process with this command line; the
  // two rule sets must agree.
  std::vector<std::string> exec(const std::string& comm, const std::vector<std::string>& args) {
    World w;
    w.proc.comm = comm;
    w.proc.args = args;
    w.exec();
    auto a = fired(*fast.ruleset, w.ctx());
    auto b = fired(*plain.ruleset, w.ctx());
    EXPECT_EQ(a, b) << comm;
    std::vector<std::string> names;
    for (const auto& n : a) names.push_back(n.substr(0, n.find(" | ")));
    return names;
  }
};

std::string rule(const std::string& name, const std::string& cond) {
  return "- rule: " + name + "\n  desc: d\n  condition: evt.type = execve and (" + cond +
         ")\n  output: o\n  priority: WARNING\n";
}

// anyof and or-chains of contains run as one literal matcher: prefixes,
// suffixes and substrings at the edges, overlapping literals, literals that
// share prefixes, case folding, and an empty literal.
TEST(Optimiser, LiteralSetsMatchLikeTheSingleComparisons) {
  Pair p(rule("contains",
              "proc.cmdline contains \" --rig\" or proc.cmdline contains \" --rig-id\" or "
              "proc.cmdline contains abab or proc.cmdline contains zz") +
         rule("icontains", "proc.cmdline icontains anyof (Stratum+TCP://, xmr)") +
         rule("starts", "proc.cmdline startswith anyof (\"python3 -m\", py, \"sh -c\")") +
         rule("ends", "proc.cmdline endswith anyof (.sh, /x.sh, \" &\")") +
         rule("empty", "proc.cmdline contains anyof (\"\", never)"));
  ASSERT_TRUE(p.fast.ruleset) << summary_line(p.fast);
  ASSERT_TRUE(p.plain.ruleset);
  using V = std::vector<std::string>;
  EXPECT_EQ(p.exec("a", {"--rig"}), (V{"contains", "empty"}));   // " --rig" at the very end
  EXPECT_EQ(p.exec("a", {"--ri"}), (V{"empty"}));                // a prefix of a literal only
  EXPECT_EQ(p.exec("a", {"ababab"}), (V{"contains", "empty"}));  // overlapping occurrences
  EXPECT_EQ(p.exec("a", {"aba", "bab"}), (V{"empty"}));          // split by a space
  EXPECT_EQ(p.exec("z", {"z"}), (V{"empty"}));                   // "z z": no "zz"
  EXPECT_EQ(p.exec("zz", {}), (V{"contains", "empty"}));         // the whole value
  EXPECT_EQ(p.exec("a", {"sTRATUM+tcp://pool"}), (V{"icontains", "empty"}));
  EXPECT_EQ(p.exec("a", {"XMR"}), (V{"icontains", "empty"}));
  EXPECT_EQ(p.exec("a", {"stratum+tcp:/"}), (V{"empty"}));
  EXPECT_EQ(p.exec("python3", {"-m", "x"}), (V{"starts", "empty"}));
  EXPECT_EQ(p.exec("p", {"y"}), (V{"empty"}));  // "p y" does not start with "py"
  EXPECT_EQ(p.exec("pyx", {}), (V{"starts", "empty"}));
  EXPECT_EQ(p.exec("bash", {"/tmp/x.sh"}), (V{"ends", "empty"}));
  EXPECT_EQ(p.exec("bash", {"/tmp/x.shh"}), (V{"empty"}));
  EXPECT_EQ(p.exec("sh", {}), (V{"empty"}));  // shorter than ".sh"
  EXPECT_EQ(p.exec(".sh", {}), (V{"ends", "empty"}));
  EXPECT_EQ(p.exec("a", {"&"}), (V{"ends", "empty"}));
}

// A regex runs only when its input holds a literal every match needs; the
// answers must be the regex's own, including for matches that need only one
// branch of an alternation, classes, case differences and no literals at all.
TEST(Optimiser, RegexPrefiltersNeverChangeTheAnswer) {
  Pair p(rule("algo", "proc.cmdline regex \".* (-a|--algo)[ =](kawpow|ethash|equihash[0-9_]*)( .*)?\"") +
         rule("caseless", "proc.cmdline regex \"(?i).*stratum.*\"") +
         rule("noliteral", "proc.cmdline regex \"[a-c]+ [0-9]{2,}\"") +
         rule("utf8", "proc.cmdline regex \".*Élan.*\"") +
         // The prefilter runs on the value before tolower (it folds ASCII case itself).
         rule("lowered", "tolower(proc.cmdline) regex \".* (-a|--algo)[ =](kawpow|ethash)( .*)?\""));
  ASSERT_TRUE(p.fast.ruleset) << summary_line(p.fast);
  ASSERT_TRUE(p.plain.ruleset);
  using V = std::vector<std::string>;
  EXPECT_EQ(p.exec("miner", {"--algo", "kawpow"}), (V{"algo", "lowered"}));
  EXPECT_EQ(p.exec("miner", {"-a=ethash", "-o", "x"}), (V{"algo", "lowered"}));
  EXPECT_EQ(p.exec("miner", {"--algo", "equihash144_5"}), (V{"algo"}));
  EXPECT_EQ(p.exec("miner", {"--ALGO", "kawpow"}), (V{"lowered"}));  // the regex is case-sensitive
  EXPECT_EQ(p.exec("miner", {"--algo", "KAWPOW"}), (V{"lowered"}));
  EXPECT_EQ(p.exec("miner", {"-A=EtHash"}), (V{"lowered"}));
  EXPECT_EQ(p.exec("miner", {"kawpow", "--algo"}), (V{}));  // atoms present, no match
  EXPECT_EQ(p.exec("miner", {"--algox", "kawpow"}), (V{}));
  EXPECT_EQ(p.exec("miner", {"--ALGOX", "KAWPOW"}), (V{}));
  EXPECT_EQ(p.exec("x", {"STRATUM"}), (V{"caseless"}));
  EXPECT_EQ(p.exec("abc", {"42"}), (V{"noliteral"}));
  EXPECT_EQ(p.exec("x", {"\xc3\x89lan"}), (V{"utf8"}));
  EXPECT_EQ(p.exec("x", {"\xc3\xa9lan"}), (V{}));
}

// An or of contains, icontains and prefiltered regexes on one field runs as
// one scan of the field (the bundled miner rule's pool URLs, flags and
// algorithm regex on proc.cmdline): each part's hits as its own check finds
// them, a regex only where it matches (not where its prefilter's literal
// merely occurs), with other terms of the or kept, and an or of plain
// contains checks left as it is (the guard index may guard a rule by it).
TEST(Optimiser, OneScanForAnOrOfLiteralChecksOnOneField) {
  Pair p(rule("miner",
              "proc.cmdline icontains \"stratum+tcp://\" or proc.cmdline icontains \"stratum+ssl://\" or "
              "proc.cmdline contains \" --donate-level\" or proc.cmdline contains \" -wal \" or "
              "tolower(proc.cmdline) regex \".* (-a|--algo)[ =](kawpow|ethash)( .*)?\"") +
         rule("mixed",
              "proc.name = xmrig or proc.cmdline icontains XMR or proc.cmdline contains \"--Pool\" or "
              "proc.exe contains \"--Pool\"") +
         rule("plain", "proc.cmdline contains \" --rig\" or proc.cmdline contains zz"));
  ASSERT_TRUE(p.fast.ruleset) << summary_line(p.fast);
  ASSERT_TRUE(p.plain.ruleset);
  EXPECT_NE(p.fast.ruleset->plan("miner", event::Type::kExec).find("[one scan]"), std::string::npos)
      << p.fast.ruleset->plan("miner", event::Type::kExec);
  EXPECT_NE(p.fast.ruleset->plan("mixed", event::Type::kExec).find("[one scan]"), std::string::npos);
  EXPECT_EQ(p.fast.ruleset->plan("plain", event::Type::kExec).find("[one scan]"), std::string::npos);
  using V = std::vector<std::string>;
  EXPECT_EQ(p.exec("x", {"-o", "STRATUM+TCP://pool:3333"}), (V{"miner"}));
  EXPECT_EQ(p.exec("x", {"-o", "stratum+ssl://pool"}), (V{"miner"}));
  EXPECT_EQ(p.exec("x", {"-o", "stratum+tcp:/pool"}), (V{}));
  EXPECT_EQ(p.exec("x", {"--donate-level", "1"}), (V{"miner"}));
  EXPECT_EQ(p.exec("x", {"--DONATE-LEVEL", "1"}), (V{}));  // contains is case-sensitive
  EXPECT_EQ(p.exec("x", {"-wal", "w"}), (V{"miner"}));
  EXPECT_EQ(p.exec("x", {"-wal"}), (V{}));                     // " -wal " needs the space after
  EXPECT_EQ(p.exec("x", {"--ALGO", "KawPow"}), (V{"miner"}));  // the regex sees the value lowered
  EXPECT_EQ(p.exec("x", {"--algo", "scrypt"}), (V{}));         // prefilter literal, no match
  EXPECT_EQ(p.exec("x", {"kawpow", "--algo"}), (V{}));
  EXPECT_EQ(p.exec("x", {"--algo", "ethash", "--donate-level"}), (V{"miner"}));
  EXPECT_EQ(p.exec("xmrig", {}), (V{"mixed"}));
  EXPECT_EQ(p.exec("a", {"Xmr"}), (V{"mixed"}));
  EXPECT_EQ(p.exec("a", {"--Pool"}), (V{"mixed"}));
  EXPECT_EQ(p.exec("a", {"--pool"}), (V{}));
  EXPECT_EQ(p.exec("a", {"--rig"}), (V{"plain"}));
  EXPECT_EQ(p.exec("a", {}), (V{}));
  std::string lng(8000, 'k');  // long, within what the arena holds of a command line
  EXPECT_EQ(p.exec("a", {lng}), (V{}));
  EXPECT_EQ(p.exec("a", {lng, "-o", "Stratum+Ssl://x"}), (V{"miner"}));
}

// The guard index picks rules by the values of the fields they require;
// rules it lets through still run in full, and rules without a guard always
// run.
TEST(Optimiser, GuardIndexPicksRulesByRequiredValues) {
  std::string yaml;
  auto open_rule = [&](const std::string& name, const std::string& cond) {
    yaml += "- rule: " + name + "\n  desc: d\n  condition: evt.type = openat and " + cond +
            "\n  output: o\n  priority: WARNING\n";
  };
  open_rule("shadow", "fd.name = /etc/shadow and proc.name != cat");
  open_rule("pam", "(fd.name in (/etc/pam.conf, /etc/shadow) or fd.directory = /etc/pam.d)");
  open_rule("gpu", "gpu.device exists and not proc.name in (nvidia-smi)");
  open_rule("python_any", "proc.name = python3 and fd.name startswith /etc");
  open_rule("any", "not fd.name startswith /proc");
  auto r = load_rules_text({{"t.yaml", yaml}}, LoadOptions{});
  ASSERT_TRUE(r.ruleset) << summary_line(r);
  auto fields = r.ruleset->guard_fields(event::Type::kOpen);
  std::sort(fields.begin(), fields.end());
  EXPECT_EQ(fields, (std::vector<std::string>{"fd.directory", "fd.name", "gpu.device", "proc.name"}));
  auto fires = [&](const std::string& comm, const std::string& path, bool device) {
    World w;
    w.proc.comm = comm;
    if (device) w.open_dev(path, 195, 0);
    else w.open(path);
    return fired_rules(*r.ruleset, w);
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(fires("python3", "/etc/shadow", false), (V{"shadow", "pam", "python_any", "any"}));
  EXPECT_EQ(fires("cat", "/etc/shadow", false), (V{"pam", "any"}));
  EXPECT_EQ(fires("bash", "/etc/pam.d/sshd", false), (V{"pam", "any"}));
  EXPECT_EQ(fires("bash", "/etc/pam.d", false), (V{"any"}));
  EXPECT_EQ(fires("bash", "/proc/self/status", false), (V{}));
  EXPECT_EQ(fires("bash", "/dev/nvidia0", true), (V{"gpu", "any"}));
  EXPECT_EQ(fires("nvidia-smi", "/dev/nvidia0", true), (V{"any"}));
  EXPECT_EQ(fires("python3", "/etc/hosts", false), (V{"python_any", "any"}));
}

// Guards on numbers (ports in a list); booleans are not used as guards.
TEST(Optimiser, GuardIndexOnNumbers) {
  std::string yaml;
  auto connect_rule = [&](const std::string& name, const std::string& cond) {
    yaml += "- rule: " + name + "\n  desc: d\n  condition: evt.type = connect and " + cond +
            "\n  output: o\n  priority: WARNING\n";
  };
  connect_rule("pool_port", "fd.sport in (3333, 4444, 14444) and container.id != host");
  connect_rule("ssh", "fd.sport = 22");
  connect_rule("compute", "proc.gpu.compute = true and fd.sip exists");
  connect_rule("not_compute", "proc.gpu.compute in (false) and fd.sport != 3333");
  auto r = load_rules_text({{"t.yaml", yaml}}, LoadOptions{});
  LoadOptions plain_opts;
  plain_opts.optimise = false;
  auto plain = load_rules_text({{"t.yaml", yaml}}, plain_opts);
  ASSERT_TRUE(r.ruleset) << summary_line(r);
  ASSERT_TRUE(plain.ruleset);
  auto fields = r.ruleset->guard_fields(event::Type::kConnect);
  std::sort(fields.begin(), fields.end());
  // "compute" is guarded by fd.sip exists and "not_compute" by nothing: a
  // boolean lets too many events through to be worth a lookup.
  EXPECT_EQ(fields, (std::vector<std::string>{"fd.sip", "fd.sport"}));
  auto fires = [&](std::uint16_t port, bool compute) {
    World w;
    w.proc.gpu_compute = compute;
    w.ev.hdr.type = event::Type::kConnect;
    event::ConnectData d;
    d.family = AF_INET;
    d.proto = event::L4::kTcp;
    d.saddr = testing::ip("10.0.0.2");
    d.daddr = testing::ip("1.2.3.4");
    d.dport = port;
    w.ev.data = d;
    auto a = fired(*r.ruleset, w.ctx());
    EXPECT_EQ(a, fired(*plain.ruleset, w.ctx())) << port << " " << compute;
    std::vector<std::string> names;
    for (const auto& n : a) names.push_back(n.substr(0, n.find(" | ")));
    return names;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(fires(3333, true), (V{"pool_port", "compute"}));
  EXPECT_EQ(fires(14444, false), (V{"pool_port", "not_compute"}));
  EXPECT_EQ(fires(22, false), (V{"ssh", "not_compute"}));
  EXPECT_EQ(fires(3333, false), (V{"pool_port"}));
  EXPECT_EQ(fires(443, true), (V{"compute"}));
  EXPECT_EQ(fires(65535, false), (V{"not_compute"}));
}

// An `or` of `and`s, each with a guard, is guarded by the union of them.
TEST(Optimiser, GuardIndexThroughOrsOfAnds) {
  Pair p(rule("search",
              "(proc.name = find and proc.args contains id_rsa) or "
              "(proc.name in (grep, egrep) and proc.args contains \"BEGIN RSA\")") +
         rule("other", "proc.name = vi and proc.args contains x"));
  ASSERT_TRUE(p.fast.ruleset) << summary_line(p.fast);
  EXPECT_EQ(p.fast.ruleset->guard_fields(event::Type::kExec), std::vector<std::string>{"proc.name"});
  using V = std::vector<std::string>;
  EXPECT_EQ(p.exec("find", {"/", "-name", "id_rsa"}), (V{"search"}));
  EXPECT_EQ(p.exec("egrep", {"BEGIN RSA"}), (V{"search"}));
  EXPECT_EQ(p.exec("grep", {"id_rsa"}), (V{}));
  EXPECT_EQ(p.exec("cat", {"id_rsa", "BEGIN RSA"}), (V{}));
  EXPECT_EQ(p.exec("vi", {"x"}), (V{"other"}));
}

}  // namespace
}  // namespace vigil::rules
