// Helpers for the rule engine tests: synthetic events, a fake StateView and a
// one-rule loader.
#pragma once

#include <arpa/inet.h>
#include <sys/socket.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/event/event.h"
#include "engine/rules/fields.h"
#include "engine/rules/ruleset.h"
#include "engine/state/model.h"

namespace vigil::rules::testing {

class FakeState : public state::StateView {
 public:
  std::map<std::uint32_t, state::Process> procs;
  std::map<std::string, std::string> dns;  // ip -> name
  std::map<std::uint32_t, std::string> users;
  const state::Process* process(std::uint32_t pid) const override {
    auto it = procs.find(pid);
    return it == procs.end() ? nullptr : &it->second;
  }
  std::string_view dns_name_for(const state::EvalContext&, const event::IpAddr& a) const override {
    auto it = dns.find(event::to_string(a));
    return it == dns.end() ? std::string_view() : std::string_view(it->second);
  }
  std::string_view user_name(std::uint32_t uid) const override {
    auto it = users.find(uid);
    return it == users.end() ? std::string_view() : std::string_view(it->second);
  }
};

inline event::IpAddr ip(const char* s) {
  event::IpAddr a;
  EXPECT_TRUE(parse_ip(s, a)) << s;
  return a;
}

// A world for one event: the process (pid 100, child of 50 bash, child of 1
// containerd-shim), optionally in a container of a pod.
struct World {
  FakeState st;
  state::Process proc;
  state::Container container;
  state::Pod pod;
  event::Event ev;
  bool in_container = true;
  bool pod_known = true;  // false: the container's cgroup names pod uid-1, whose record is not known yet

  World() {
    proc.pid = 100;
    proc.ppid = 50;
    proc.uid = 1000;
    proc.gid = 1000;
    proc.comm = "python3";
    proc.exe = "python3";
    proc.exepath = "/usr/bin/python3.11";
    proc.args = {"train.py", "--epochs", "3"};
    proc.cwd = "/workspace";
    proc.container_id = "3f1c0d2e9a7b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d";
    state::Process bash;
    bash.pid = 50;
    bash.ppid = 1;
    bash.comm = "bash";
    bash.exe = "bash";
    bash.exepath = "/bin/bash";
    state::Process shim;
    shim.pid = 1;
    shim.ppid = 0;
    shim.comm = "containerd-shim";
    shim.exepath = "/usr/bin/containerd-shim-runc-v2";
    st.procs[50] = bash;
    st.procs[1] = shim;
    container.id = proc.container_id;
    container.runtime = "containerd";
    container.name = "trainer";
    container.image = "ghcr.io/acme/train:1.4";
    container.pod_uid = "uid-1";
    pod.uid = "uid-1";
    pod.name = "train-0";
    pod.ns = "ml";
    pod.labels = {{"app", "train"}, {"tier", "gpu"}};
    state::PodContainer pc;
    pc.name = "trainer";
    pc.id = container.id;
    pc.gpu_limit = 1;
    pc.nvidia_visible_devices = "0";
    pc.gpu_devices = {"0"};
    pod.containers.push_back(pc);
    ev.hdr.ts_ns = 1767225600ull * 1000000000ull + 5;
    ev.hdr.pid = 100;
    ev.hdr.tid = 100;
    ev.hdr.ppid = 50;
    ev.hdr.uid = 1000;
    ev.hdr.comm = "python3";
  }

  state::EvalContext ctx() const {
    state::EvalContext c;
    c.ev = &ev;
    c.proc = &proc;
    c.state = &st;
    if (in_container) {
      c.container = &container;
      if (pod_known) {
        c.pod = &pod;
        c.pod_container = &pod.containers[0];
      }
    }
    return c;
  }

  void exec() {
    ev.hdr.type = event::Type::kExec;
    event::ExecData d;
    d.filename = proc.exepath;
    d.exe = proc.exepath;
    d.args.push_back(proc.exe);
    d.args.insert(d.args.end(), proc.args.begin(), proc.args.end());
    d.cwd = proc.cwd;
    ev.data = d;
  }
  void open(const std::string& path, std::uint32_t flags = 0, std::int64_t result = 3) {
    ev.hdr.type = event::Type::kOpen;
    event::OpenData d;
    d.path = path;
    d.flags = flags;
    d.result = result;
    ev.data = d;
  }
  void open_dev(const std::string& path, std::uint32_t major, std::uint32_t minor) {
    open(path, 2);
    auto& d = std::get<event::OpenData>(ev.data);
    d.is_device = true;
    d.dev_major = major;
    d.dev_minor = minor;
  }
  void connect(const char* daddr, std::uint16_t dport, event::L4 proto = event::L4::kTcp, std::int64_t result = 0) {
    ev.hdr.type = event::Type::kConnect;
    event::ConnectData d;
    d.daddr = ip(daddr);
    d.family = d.daddr.family;
    d.saddr = ip(d.family == AF_INET ? "10.1.2.3" : "fd00::3");
    d.sport = 40000;
    d.dport = dport;
    d.proto = proto;
    d.result = result;
    ev.data = d;
  }
  void ioctl(std::uint32_t nr, std::uint32_t rm_class = 0, std::uint32_t minor = 255) {
    ev.hdr.type = event::Type::kIoctl;
    event::IoctlData d;
    d.nr = nr;
    d.rm_class = rm_class;
    d.dev_major = 195;
    d.dev_minor = minor;
    d.fd = 7;
    ev.data = d;
  }
  void dns(const std::string& name, std::vector<const char*> answers = {}) {
    ev.hdr.type = event::Type::kDns;
    event::DnsData d;
    d.name = name;
    d.qtype = 1;
    d.is_response = !answers.empty();
    for (auto a : answers) d.answers.push_back(ip(a));
    d.server = ip("10.96.0.10");
    ev.data = d;
  }
  void payload(const char* daddr, std::uint16_t dport, std::string bytes) {
    ev.hdr.type = event::Type::kPayload;
    event::PayloadData d;
    d.daddr = ip(daddr);
    d.family = d.daddr.family;
    d.saddr = ip("10.1.2.3");
    d.dport = dport;
    d.bytes = std::move(bytes);
    ev.data = d;
  }
};

// The rules `rs` raises on w's event, by name, in the order it raises them.
inline std::vector<std::string> fired_rules(const Ruleset& rs, const World& w) {
  std::vector<event::Alert> out;
  rs.evaluate(w.ctx(), out);
  std::vector<std::string> names;
  for (const auto& a : out) names.push_back(a.rule);
  return names;
}

inline std::string sq(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '\'') o += '\'';
    o += c;
  }
  return o;
}

// One rule named R with this condition (and any extra items before it).
inline std::string rule_yaml(const std::string& cond, const std::string& output = "o", const std::string& extra = "") {
  return extra + "- rule: R\n  desc: d\n  priority: WARNING\n  condition: '" + sq(cond) + "'\n  output: '" +
         sq(output) + "'\n";
}

inline LoadResult load_one(const std::string& yaml) { return load_rules_text({{"test.yaml", yaml}}, LoadOptions{}); }

inline std::string diags(const LoadResult& r) {
  std::string s;
  for (const auto& d : r.diagnostics) s += d.to_string() + "\n";
  return s;
}

// Whether rule R with this condition (and `extra` rules, lists or macros
// before it) loads alone and fires for the world's event.
inline bool fires(const World& w, const std::string& cond, const std::string& extra = "") {
  auto r = load_one(rule_yaml(cond, "o", extra));
  EXPECT_TRUE(r.ruleset) << cond << "\n" << diags(r);
  if (!r.ruleset) return false;
  EXPECT_EQ(r.loaded, 1u) << cond << "\n" << diags(r);
  std::vector<event::Alert> out;
  r.ruleset->evaluate(w.ctx(), out);
  return !out.empty();
}

}  // namespace vigil::rules::testing
