#include "engine/rules/prevention.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <set>

#include "bpf/shared/events.h"

namespace vigil::rules {

std::optional<PreventionMode> prevention_mode_from(std::string_view s) {
  if (s == "off") return PreventionMode::kOff;
  if (s == "monitor") return PreventionMode::kMonitor;
  if (s == "enforce") return PreventionMode::kEnforce;
  return std::nullopt;
}

std::string_view prevention_mode_name(PreventionMode m) {
  switch (m) {
    case PreventionMode::kOff: return "off";
    case PreventionMode::kMonitor: return "monitor";
    case PreventionMode::kEnforce: return "enforce";
  }
  return "off";
}

std::string_view hook_name(policy::Hook h) {
  switch (h) {
    case policy::Hook::kNone: return "none";
    case policy::Hook::kDevice: return "cgroup/dev";
    case policy::Hook::kNet: return "cgroup/connect4|6, sendmsg4|6";
    case policy::Hook::kSocket: return "cgroup/sock_create";
    case policy::Hook::kExec: return "exec (killed before its first instruction)";
  }
  return "none";
}

std::string_view response_name(Response r) {
  switch (r) {
    case kResponseKill: return "kill";
    case kResponseFreeze: return "freeze";
    case kResponseLabel: return "label";
    case kResponseDeletePod: return "delete_pod";
  }
  return "none";
}

std::uint8_t responses_of(std::string_view action) {
  std::uint8_t out = 0;
  while (!action.empty()) {
    const std::size_t comma = action.find(',');
    const std::string_view w = action.substr(0, comma);
    for (Response r : kResponses)
      if (w == response_name(r)) out |= r;
    if (comma == std::string_view::npos) break;
    action.remove_prefix(comma + 1);
  }
  return out;
}

std::optional<std::string> canonical_action(const std::vector<std::string>& words, std::string& why) {
  if (words.empty()) {
    why = "the action list is empty (write 'none' for no action)";
    return std::nullopt;
  }
  std::uint8_t bits = 0;
  bool deny = false, none = false;
  for (const std::string& w : words) {
    if (w == "deny") {
      deny = true;
      continue;
    }
    if (w == "none") {
      none = true;
      continue;
    }
    const std::uint8_t b = responses_of(w);
    if (b == 0 || w.find(',') != std::string::npos) {
      why = "unknown action '" + w +
            "' (deny: refuse in the kernel or kill at exec; kill: kill the process after the alert; freeze: "
            "freeze the container; label: label the pod quarantined; delete_pod: delete the pod; none)";
      return std::nullopt;
    }
    bits |= b;
  }
  if ((deny || none) && words.size() > 1) {
    why = std::string("'") + (deny ? "deny" : "none") +
          "' cannot be listed with other actions (only the responses kill, freeze, label and delete_pod combine)";
    return std::nullopt;
  }
  if (deny) return std::string("deny");
  std::string out;
  for (Response r : kResponses) {
    if (!(bits & r)) continue;
    if (!out.empty()) out += ',';
    out += response_name(r);
  }
  return out;  // "" for none
}

namespace {

constexpr int kMaxDepth = 64;

NodePtr node(Node::Kind k) {
  auto n = std::make_unique<Node>();
  n->kind = k;
  return n;
}

NodePtr constant(bool v) {
  auto n = node(Node::Kind::kBool);
  n->bool_value = v;
  return n;
}

// Macros expanded in place (a missing macro or a cycle: false).
bool expand_macros(NodePtr& n, const MacroMap& macros, int depth) {
  if (depth > kMaxDepth) return false;
  if (n->kind == Node::Kind::kMacro) {
    auto it = macros.find(n->macro);
    if (it == macros.end() || !it->second.ast) return false;
    n = it->second.ast->clone();
    return expand_macros(n, macros, depth + 1);
  }
  for (auto& c : n->children)
    if (!expand_macros(c, macros, depth + 1)) return false;
  return true;
}

// A list value's items as strings, list names among bare items expanded.
void flatten(const Value& v, const ListMap& lists, std::vector<std::string>& out, int depth) {
  if (v.kind == Value::Kind::kList) {
    for (const auto& i : v.items) flatten(i, lists, out, depth);
    return;
  }
  if (v.kind != Value::Kind::kString) return;
  if (v.bare && depth < 32) {
    if (auto it = lists.find(v.text); it != lists.end()) {
      for (const auto& s : it->second) {
        Value sub;
        sub.text = s;
        sub.bare = true;
        flatten(sub, lists, out, depth + 1);
      }
      return;
    }
  }
  out.push_back(v.text);
}

std::vector<std::string> values_of(const Node& c, const ListMap& lists) {
  std::vector<std::string> out;
  flatten(c.value, lists, out, 0);
  return out;
}

// Folds what is constant in a container: container.id against "host",
// evt.source against "syscall", and the and/or/not of constants.
NodePtr fold(NodePtr n) {
  switch (n->kind) {
    case Node::Kind::kCheck:
      if (n->field.name == "container.id" && !n->field.has_arg && n->field.transformers.empty() &&
          n->value.kind == Value::Kind::kString && n->value.text == "host" && (n->op == Op::kEq || n->op == Op::kNe))
        return constant(n->op == Op::kNe);
      if (n->field.name == "evt.source" && n->op == Op::kEq && n->value.kind == Value::Kind::kString)
        return constant(n->value.text == "syscall");
      return n;
    case Node::Kind::kNot: {
      n->children[0] = fold(std::move(n->children[0]));
      if (n->children[0]->kind == Node::Kind::kBool) return constant(!n->children[0]->bool_value);
      return n;
    }
    case Node::Kind::kAnd:
    case Node::Kind::kOr: {
      const bool is_and = n->kind == Node::Kind::kAnd;
      std::vector<NodePtr> kept;
      for (auto& c : n->children) {
        NodePtr f = fold(std::move(c));
        if (f->kind == Node::Kind::kBool) {
          if (f->bool_value == is_and) continue;  // neutral
          return constant(!is_and);               // absorbing
        }
        kept.push_back(std::move(f));
      }
      if (kept.empty()) return constant(is_and);
      if (kept.size() == 1) return std::move(kept[0]);
      n->children = std::move(kept);
      return n;
    }
    default: return n;
  }
}

void conjuncts(NodePtr n, std::vector<NodePtr>& out) {
  if (n->kind == Node::Kind::kAnd) {
    for (auto& c : n->children) conjuncts(std::move(c), out);
    return;
  }
  out.push_back(std::move(n));
}

void fields_of(const Node& n, std::set<std::string>& out) {
  if (n.kind == Node::Kind::kCheck) out.insert(n.field.name);
  for (const auto& c : n.children) fields_of(*c, out);
}

bool is_outcome(std::string_view f) {
  return f == "evt.failed" || f == "evt.res" || f == "evt.rawres" || f == "evt.dir";
}

bool is_container_field(std::string_view f) {
  return f.starts_with("container.") || f.starts_with("k8s.") || f == "gpu.limit" || f == "gpu.visible_devices" ||
         f == "gpu.allocated";
}

// The hook an event type name belongs to.
policy::Hook hook_of_type(std::string_view t) {
  if (t == "open" || t == "openat" || t == "openat2" || t == "creat" || t == "mknod" || t == "mknodat")
    return policy::Hook::kDevice;
  if (t == "connect" || t == "sendto" || t == "sendmsg") return policy::Hook::kNet;
  if (t == "socket") return policy::Hook::kSocket;
  if (t == "execve" || t == "execveat") return policy::Hook::kExec;
  return policy::Hook::kNone;
}

// A check, seen through any number of `not`s: the check and whether it is negated.
const Node* through_nots(const Node& n, bool& negated) {
  const Node* p = &n;
  negated = false;
  while (p->kind == Node::Kind::kNot) {
    negated = !negated;
    p = p->children[0].get();
  }
  return p->kind == Node::Kind::kCheck ? p : nullptr;
}

bool plain(const Node& c) { return !c.field.has_arg && c.field.transformers.empty(); }

// = x, in (...): the values; false for any other operator.
bool set_values(const Node& c, const ListMap& lists, std::vector<std::string>& out) {
  if (c.op == Op::kEq && c.value.kind == Value::Kind::kString) {
    out = {c.value.text};
    return true;
  }
  if (c.op == Op::kIn && c.modifier == Modifier::kNone) {
    out = values_of(c, lists);
    return true;
  }
  return false;
}

bool parse_net(const std::string& text, policy::NetEntry& e) {
  std::string addr = text;
  int prefix = -1;
  if (auto slash = text.find('/'); slash != std::string::npos) {
    addr = text.substr(0, slash);
    try {
      std::size_t used = 0;
      prefix = std::stoi(text.substr(slash + 1), &used);
      if (used != text.size() - slash - 1) return false;
    } catch (...) {
      return false;
    }
  }
  in6_addr a6{};
  in_addr a4{};
  if (inet_pton(AF_INET, addr.c_str(), &a4) == 1) {
    e.v6 = false;
    std::memcpy(e.addr.data(), &a4, 4);
    if (prefix < 0) prefix = 32;
    if (prefix > 32) return false;
  } else if (inet_pton(AF_INET6, addr.c_str(), &a6) == 1) {
    e.v6 = true;
    std::memcpy(e.addr.data(), &a6, 16);
    if (prefix < 0) prefix = 128;
    if (prefix > 128) return false;
  } else {
    return false;
  }
  e.prefix = static_cast<std::uint8_t>(prefix);
  for (std::size_t b = 0; b < e.addr.size(); ++b) {  // host bits cleared
    const int keep = std::clamp(prefix - static_cast<int>(b) * 8, 0, 8);
    e.addr[b] &= static_cast<std::uint8_t>(0xff00 >> keep);
  }
  return true;
}

std::uint32_t node_kind_bit(std::string_view k) {
  if (k == "gpu") return VG_POL_NODE_GPU;
  if (k == "ctl") return VG_POL_NODE_CTL;
  if (k == "modeset") return VG_POL_NODE_MODESET;
  if (k == "uvm") return VG_POL_NODE_UVM;
  if (k == "uvm-tools") return VG_POL_NODE_UVM_TOOLS;
  if (k == "caps") return VG_POL_NODE_CAPS;
  if (k == "nvlink") return VG_POL_NODE_NVLINK;
  if (k == "nvswitch") return VG_POL_NODE_NVSWITCH;
  if (k == "other") return VG_POL_NODE_OTHER;
  return 0;
}
constexpr std::uint32_t kAllNodes = 0x1ff;

int socket_number(std::string_view s, bool family) {
  static const std::pair<const char*, int> kFamilies[] = {{"AF_UNIX", 1},   {"AF_LOCAL", 1},    {"AF_INET", 2},
                                                          {"AF_INET6", 10}, {"AF_NETLINK", 16}, {"AF_PACKET", 17}};
  static const std::pair<const char*, int> kTypes[] = {
      {"SOCK_STREAM", 1}, {"SOCK_DGRAM", 2}, {"SOCK_RAW", 3}, {"SOCK_SEQPACKET", 5}, {"SOCK_PACKET", 10}};
  using Table = std::span<const std::pair<const char*, int>>;
  for (const auto& [name, v] : family ? Table(kFamilies) : Table(kTypes))
    if (s == name) return v;
  int v = -1;
  try {
    std::size_t used = 0;
    v = std::stoi(std::string(s), &used);
    if (used != s.size()) return -1;
  } catch (...) {
    return -1;
  }
  return v >= 0 && v < 32 ? v : -1;
}

class Analysis {
 public:
  Analysis(PreventionRule& out, const ListMap& lists) : out_(out), lists_(lists) {}

  // One term for the hook; "" when it is judged, else why not.
  std::string term(const Node& t) {
    bool neg = false;
    const Node* c = through_nots(t, neg);
    if (!c) return "a term '" + t.to_string() + "' mixes tests the kernel cannot combine";
    const std::string& f = c->field.name;
    if (!plain(*c) && !(f == "evt.arg" && c->field.has_arg && c->field.transformers.empty()))
      return "field '" + c->field.to_string() + "' with an argument or transformer cannot be judged in the kernel";
    if (f == "proc.name") return comm(*c, neg);
    switch (out_.hook) {
      case policy::Hook::kDevice: return device(*c, neg);
      case policy::Hook::kNet: return net(*c, neg);
      case policy::Hook::kSocket: return sock(*c, neg);
      case policy::Hook::kExec: return exec(*c, neg);
      case policy::Hook::kNone: break;
    }
    return "no hook";
  }

 private:
  std::string op_error(const Node& c, const char* allowed) {
    return "operator '" + std::string(op_name(c.op)) + "' on " + c.field.name + " cannot be judged in the kernel (" +
           allowed + ")";
  }

  std::string comm(const Node& c, bool neg) {
    if (out_.slot.flags & VG_POLR_COMM) return "two tests of proc.name: the kernel judges one";
    bool ne = c.op == Op::kNe;
    std::vector<std::string> v;
    if (ne) v = {c.value.text};
    else if (!set_values(c, lists_, v)) return op_error(c, "=, != and in");
    for (auto& s : v) s = s.substr(0, VG_COMM_LEN - 1);
    out_.comms = std::move(v);
    out_.slot.flags |= VG_POLR_COMM | ((neg != ne) ? VG_POLR_COMM_NEG : 0);
    return "";
  }

  std::string device(const Node& c, bool neg) {
    const std::string& f = c.field.name;
    if (f == "gpu.allowed") {
      if (c.op != Op::kEq || c.value.kind != Value::Kind::kString) return op_error(c, "= false");
      const bool want_true = c.value.text == "true";
      if (want_true != neg) return "gpu.allowed = true cannot be enforced: only refusing what is not allowed is";
      out_.slot.flags |= VG_POLR_NOT_ALLOWED;
      return "";
    }
    if (c.op == Op::kExists && !neg && (f == "gpu.device" || f == "gpu.minor" || f == "gpu.major" || f == "gpu.node")) {
      kinds(kAllNodes);
      return "";
    }
    if (c.op == Op::kExists && !neg && f == "gpu.index") {
      kinds(VG_POL_NODE_GPU);
      return "";
    }
    if (f == "gpu.node") {
      std::vector<std::string> v;
      if (!set_values(c, lists_, v)) return op_error(c, "= and in");
      std::uint32_t m = 0;
      for (const auto& k : v) {
        const std::uint32_t b = node_kind_bit(k);
        if (!b) return "gpu.node value '" + k + "' is not a node kind";
        m |= b;
      }
      kinds(neg ? kAllNodes & ~m : m);
      return "";
    }
    return "field '" + f + "' cannot be judged at cgroup/dev (it sees the device's numbers and the container)";
  }

  void kinds(std::uint32_t m) { out_.slot.kinds = out_.slot.kinds ? (out_.slot.kinds & m) : m; }

  std::string net(const Node& c, bool neg) {
    const std::string& f = c.field.name;
    if ((f == "fd.sip" || f == "fd.snet" || f == "fd.sip.name") && c.op == Op::kExists)
      return neg ? "not " + f + " exists cannot be enforced" : "";
    if (f == "fd.sip" || f == "fd.snet" || f == "fd.sip.name") {
      if (out_.slot.flags & VG_POLR_NET) return "two destination tests: the kernel judges one";
      std::vector<std::string> v;
      if (!set_values(c, lists_, v)) return op_error(c, "= and in");
      if (f == "fd.sip.name") {
        if (neg) return "not fd.sip.name cannot be enforced: the names of every destination are not known";
        out_.dns_names = std::move(v);
      } else {
        for (const auto& s : v) {
          policy::NetEntry e;
          if (!parse_net(s, e)) return "'" + s + "' is not an address or network";
          if (f == "fd.sip" && e.prefix != (e.v6 ? 128 : 32))
            return "fd.sip compares addresses; '" + s + "' is a network";
          out_.nets.push_back(e);
        }
      }
      out_.slot.flags |= VG_POLR_NET | (neg ? VG_POLR_NET_NEG : 0);
      return "";
    }
    if (f == "fd.sport") {
      if (out_.slot.flags & VG_POLR_PORTS) return "two tests of fd.sport: the kernel judges one";
      bool ne = c.op == Op::kNe;
      std::vector<std::string> v;
      if (ne) v = {c.value.text};
      else if (!set_values(c, lists_, v)) return op_error(c, "=, != and in");
      for (const auto& s : v) {
        int p = socket_port(s);
        if (p < 0) return "'" + s + "' is not a port";
        out_.ports.push_back(static_cast<std::uint16_t>(p));
      }
      out_.slot.flags |= VG_POLR_PORTS | ((neg != ne) ? VG_POLR_PORTS_NEG : 0);
      return "";
    }
    if (f == "fd.l4proto" && c.op == Op::kEq && !neg) {
      if (c.value.text == "tcp") out_.slot.flags |= VG_POLR_TCP;
      else if (c.value.text == "udp") out_.slot.flags |= VG_POLR_UDP;
      else return "fd.l4proto value '" + c.value.text + "' is not tcp or udp";
      return "";
    }
    return "field '" + f + "' cannot be judged at cgroup/connect (it sees the destination and the container)";
  }

  static int socket_port(const std::string& s) {
    try {
      std::size_t used = 0;
      int v = std::stoi(s, &used);
      return used == s.size() && v >= 0 && v <= 65535 ? v : -1;
    } catch (...) {
      return -1;
    }
  }

  std::string sock(const Node& c, bool neg) {
    const std::string key =
        c.field.name == "evt.arg" ? c.field.arg : c.field.name.substr(std::min<std::size_t>(8, c.field.name.size()));
    if (c.field.name.starts_with("evt.arg") && (key == "domain" || key == "type")) {
      if (neg) return "not evt.arg." + key + " cannot be enforced";
      std::vector<std::string> v;
      // A type is written with the call's flags (SOCK_RAW|SOCK_CLOEXEC):
      // `startswith SOCK_RAW` is the type whatever the flags.
      const bool type_prefix = key == "type" && c.op == Op::kStartsWith && c.value.kind == Value::Kind::kString;
      if (type_prefix) v = {c.value.text};
      else if (!set_values(c, lists_, v)) return op_error(c, key == "type" ? "=, in and startswith" : "= and in");
      std::uint32_t m = 0;
      for (const auto& s : v) {
        const int n = socket_number(s, key == "domain");
        if (n < 0) return "'" + s + "' is not a socket " + key;
        // The kernel runs cgroup/sock_create for inet sockets only.
        if (key == "domain" && n != 2 && n != 10)
          return "socket family '" + s +
                 "' cannot be refused at cgroup/sock_create: the kernel runs it for "
                 "AF_INET and AF_INET6 sockets only";
        m |= 1u << n;
      }
      (key == "domain" ? out_.slot.families : out_.slot.types) |= m;
      return "";
    }
    return "field '" + c.field.to_string() + "' cannot be judged at cgroup/sock_create (it sees the family and type)";
  }

  std::string exec(const Node& c, bool neg) {
    const std::string& f = c.field.name;
    if ((f == "proc.is_exe_from_memfd" || f == "proc.is_exe_upper_layer") && c.op == Op::kEq &&
        c.value.kind == Value::Kind::kString && (c.value.text == "true") != neg) {
      out_.slot.flags |= f == "proc.is_exe_from_memfd" ? VG_POLR_MEMFD : VG_POLR_UPPER;
      return "";
    }
    if (f == "proc.exe_sha256" || f == "proc.exe_build_id") return identity(c, neg);
    return "field '" + f +
           "' cannot be judged at exec in the kernel (it sees the program's name, memfd and upper "
           "layer flags, the files denied by proc.exe_sha256 or proc.exe_build_id, and the container)";
  }

  // proc.exe_sha256 / proc.exe_build_id = x or in (...): the files user
  // space identifies as one of them are denied by inode.
  std::string identity(const Node& c, bool neg) {
    const std::string& f = c.field.name;
    if (out_.slot.flags & VG_POLR_EXE) return "two tests of the program's identity: the kernel judges one";
    if (neg) return "not " + f + " cannot be enforced: only listed programs are killed";
    std::vector<std::string> v;
    if (!set_values(c, lists_, v)) return op_error(c, "= and in");
    const bool sha = f == "proc.exe_sha256";
    for (const std::string& id : v) {
      // The fields give lower-case hex: an upper-case value never matches.
      const bool hex = !id.empty() && std::all_of(id.begin(), id.end(), [](char ch) {
        return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
      });
      // A SHA-256 is 64 hex digits; a GNU build-id is usually 20 bytes
      // (SHA-1), but any whole number of bytes up to 32 is one.
      if (!hex || (sha ? id.size() != 64 : (id.size() % 2 != 0 || id.size() > 64)))
        return "'" + id + "' is not " + (sha ? "a SHA-256" : "an ELF build-id") + " in lower-case hex (" + f +
               " gives " + (sha ? "64 digits" : "an even number of digits, at most 64") +
               " in lower case: the rule would never match)";
      out_.exe_ids.push_back((sha ? "sha256:" : "buildid:") + id);
    }
    // An empty list (one an operator fills later) kills nothing.
    out_.slot.flags |= VG_POLR_EXE;
    return "";
  }

  PreventionRule& out_;
  const ListMap& lists_;
};

NodePtr and_of(std::vector<NodePtr> terms) {
  if (terms.empty()) return constant(true);
  if (terms.size() == 1) return std::move(terms[0]);
  auto n = node(Node::Kind::kAnd);
  n->children = std::move(terms);
  return n;
}

std::shared_ptr<const Expr> compile_part(std::vector<NodePtr> terms, const ListMap& lists, const FieldCatalog& catalog,
                                         std::string& error) {
  CompileResult cr = compile_condition(and_of(std::move(terms)), MacroMap{}, lists, catalog);
  if (!cr.expr) {
    error = cr.errors.empty() ? "a part of the condition did not compile" : cr.errors[0].message;
    return nullptr;
  }
  return std::shared_ptr<const Expr>(std::move(cr.expr));
}

}  // namespace

PreventionRule analyse_prevention(const RuleDef& r, const Node& condition, const MacroMap& macros, const ListMap& lists,
                                  const FieldCatalog& catalog) {
  PreventionRule out;
  out.name = r.name;
  out.action = r.action;
  out.responses = responses_of(r.action);
  out.action_mode = r.action_mode;
  out.file = r.pos.file;
  out.line = r.pos.line;
  NodePtr root = condition.clone();
  if (!expand_macros(root, macros, 0)) {
    out.why_not = "a macro it uses is missing or refers to itself";
    return out;
  }
  root = fold(std::move(root));
  std::vector<NodePtr> terms;
  conjuncts(std::move(root), terms);

  // The event types pick the hook.
  std::set<policy::Hook> hooks;
  std::vector<NodePtr> container_terms, judged, kernel_terms;
  bool false_always = false;
  for (auto& t : terms) {
    if (t->kind == Node::Kind::kBool) {
      false_always = false_always || !t->bool_value;
      continue;
    }
    std::set<std::string> fs;
    fields_of(*t, fs);
    if (fs.size() == 1 && *fs.begin() == "evt.type") {
      bool neg = false;
      const Node* c = through_nots(*t, neg);
      std::vector<std::string> v;
      if (c && !neg && set_values(*c, lists, v)) {
        for (const auto& name : v) {
          hooks.insert(hook_of_type(name));
          if (name == "mknod" || name == "mknodat") out.slot.flags |= VG_POLR_MKNOD;
          else if (hook_of_type(name) == policy::Hook::kDevice) out.slot.flags |= VG_POLR_OPEN;
        }
      } else {
        hooks.insert(policy::Hook::kNone);
      }
      judged.push_back(t->clone());
      continue;
    }
    if (std::all_of(fs.begin(), fs.end(), [](const std::string& f) { return is_outcome(f); })) continue;
    if (std::all_of(fs.begin(), fs.end(), [](const std::string& f) { return is_container_field(f); })) {
      judged.push_back(t->clone());
      container_terms.push_back(std::move(t));
      continue;
    }
    judged.push_back(t->clone());
    kernel_terms.push_back(std::move(t));
  }
  std::string error;
  out.judge = compile_part(std::move(judged), lists, catalog, error);
  if (!out.judge) {
    out.why_not = error;
    return out;
  }
  if (!container_terms.empty()) {
    out.container_part = compile_part(std::move(container_terms), lists, catalog, error);
    if (!out.container_part) {
      out.why_not = error;
      return out;
    }
  }
  if (out.action != "deny") return out;  // responses: judged in user space
  if (false_always) {
    out.why_not = "the condition never holds in a container";
    return out;
  }
  if (hooks.size() != 1 || *hooks.begin() == policy::Hook::kNone) {
    out.why_not = hooks.empty() ? "the condition does not name its event types (evt.type): the kernel needs one kind "
                                  "of call (open/mknod, connect/sendto, socket or execve)"
                                : "the event types are not all of one kind the kernel refuses (open and mknod, "
                                  "connect and sendto, socket, or execve)";
    return out;
  }
  out.hook = *hooks.begin();
  out.slot.hook = out.hook;
  Analysis a(out, lists);
  for (const auto& t : kernel_terms) {
    if (std::string why = a.term(*t); !why.empty()) {
      out.why_not = why;
      return out;
    }
  }
  if (out.hook == policy::Hook::kDevice && out.slot.kinds == 0) out.slot.kinds = kAllNodes;
  if (out.hook == policy::Hook::kNet && !(out.slot.flags & (VG_POLR_NET | VG_POLR_PORTS)))
    out.why_not =
        "the rule names no destination (fd.sip, fd.snet, fd.sip.name or fd.sport): it would refuse every "
        "connection";
  else if (out.hook == policy::Hook::kSocket && !out.slot.families && !out.slot.types)
    out.why_not = "the rule names no socket family or type (evt.arg.domain, evt.arg.type)";
  else if (out.hook == policy::Hook::kExec &&
           !(out.slot.flags & (VG_POLR_COMM | VG_POLR_MEMFD | VG_POLR_UPPER | VG_POLR_EXE)))
    out.why_not =
        "the rule names no program (proc.name, proc.exe_sha256, proc.exe_build_id) and no memfd or upper-layer "
        "test: it would kill every program of the container";
  else out.enforceable = true;
  return out;
}

}  // namespace vigil::rules
