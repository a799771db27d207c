#include "tests/deploy/manifest.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>
#include <sstream>

namespace vigil::deploy_test {

std::vector<YAML::Node> load_documents(const std::string& path) {
  std::vector<YAML::Node> docs;
  for (const YAML::Node& d : YAML::LoadAllFromFile(path)) {
    if (d.IsMap()) docs.push_back(d);
  }
  return docs;
}

YAML::Node dig(const YAML::Node& node, std::initializer_list<const char*> keys) {
  // Node::operator= would write into the document; reset() only rebinds.
  YAML::Node n = node;
  for (const char* k : keys) {
    const YAML::Node& at = n;
    if (!at.IsMap() || !at[k]) return YAML::Node(YAML::NodeType::Null);
    n.reset(at[k]);
  }
  return n;
}

std::string scalar_or(const YAML::Node& node, const std::string& fallback) {
  return node && node.IsScalar() ? node.Scalar() : fallback;
}

YAML::Node find_kind(const std::vector<YAML::Node>& docs, std::string_view kind, std::string_view name) {
  for (const YAML::Node& d : docs) {
    if (!d["kind"] || d["kind"].as<std::string>() != kind) continue;
    if (!name.empty() && (!dig(d, {"metadata", "name"}) || dig(d, {"metadata", "name"}).as<std::string>() != name))
      continue;
    return d;
  }
  return YAML::Node(YAML::NodeType::Null);
}

Agent load_agent(const std::string& path) { return agent_from(load_documents(path)); }

Agent agent_from(std::vector<YAML::Node> docs_in) {
  Agent a;
  a.docs = std::move(docs_in);
  const auto& docs = a.docs;
  a.daemonset.reset(find_kind(docs, "DaemonSet"));
  if (!a.daemonset) return a;
  a.pod.reset(dig(a.daemonset, {"spec", "template", "spec"}));
  for (const YAML::Node& c : a.pod["containers"]) {
    if (c["name"].as<std::string>() == "vigil") a.container.reset(c);
  }
  if (!a.container) return a;
  // The ConfigMap behind the volume that holds vigil.yaml.
  for (const YAML::Node& v : a.pod["volumes"]) {
    if (!v["configMap"]) continue;
    const YAML::Node cm = find_kind(docs, "ConfigMap", dig(v, {"configMap", "name"}).as<std::string>());
    if (!cm || !dig(cm, {"data", "vigil.yaml"})) continue;
    for (const YAML::Node& m : a.container["volumeMounts"]) {
      if (m["name"].as<std::string>() == v["name"].as<std::string>()) {
        a.config_mount = m["mountPath"].as<std::string>();
      }
    }
    a.config_text = dig(cm, {"data", "vigil.yaml"}).as<std::string>();
    a.config.reset(YAML::Load(a.config_text));
  }
  return a;
}

std::string capability_name(std::string_view name) {
  std::string n(name);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::toupper(c); });
  if (n.rfind("CAP_", 0) == 0) n.erase(0, 4);
  return n;
}

std::set<std::string> required_capabilities(std::string_view needs) {
  // Parenthesised text out (nested parentheses too), then what follows " or ".
  std::string flat;
  int depth = 0;
  for (char c : needs) {
    if (c == '(') {
      ++depth;
    } else if (c == ')') {
      if (depth > 0) --depth;
    } else if (depth == 0) {
      flat += c;
    }
  }
  static const std::regex kOr(R"(\s+or\s+)", std::regex::icase);
  std::smatch m;
  if (std::regex_search(flat, m, kOr)) flat.erase(static_cast<std::size_t>(m.position(0)));
  std::set<std::string> caps;
  static const std::regex kCap(R"(CAP_[A-Z_]+)");
  for (auto it = std::sregex_iterator(flat.begin(), flat.end(), kCap); it != std::sregex_iterator(); ++it) {
    caps.insert(capability_name(it->str()));
  }
  return caps;
}

std::vector<std::string> paths_in(std::string_view cell) {
  std::vector<std::string> paths;
  std::string word;
  std::istringstream in{std::string(cell)};
  while (in >> word) {
    word.erase(std::remove(word.begin(), word.end(), '`'), word.end());
    while (!word.empty() && std::string_view(",;.:)").find(word.back()) != std::string_view::npos) {
      word.pop_back();
    }
    if (!word.empty() && word.front() == '(') word.erase(0, 1);
    if (word.size() > 1 && word.front() == '/') paths.push_back(word);
  }
  return paths;
}

namespace {

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

// The cells of a markdown table row "| a | b |".
std::vector<std::string> cells(std::string_view line) {
  std::vector<std::string> out;
  std::string t = trim(line);
  if (t.empty() || t.front() != '|') return out;
  t.erase(0, 1);
  if (!t.empty() && t.back() == '|') t.pop_back();
  std::size_t start = 0;
  for (std::size_t i = 0; i <= t.size(); ++i) {
    if (i == t.size() || (t[i] == '|' && (i == 0 || t[i - 1] != '\\'))) {
      out.push_back(trim(std::string_view(t).substr(start, i - start)));
      start = i + 1;
    }
  }
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

std::vector<CapabilityRow> capability_table(const std::string& markdown, std::string* error) {
  const std::string kBegin = "<!-- capability-table:begin -->";
  const std::string kEnd = "<!-- capability-table:end -->";
  const auto b = markdown.find(kBegin);
  const auto e = markdown.find(kEnd);
  if (b == std::string::npos || e == std::string::npos || e < b) {
    *error = "no " + kBegin + " ... " + kEnd + " markers";
    return {};
  }
  std::istringstream in(markdown.substr(b + kBegin.size(), e - b - kBegin.size()));
  std::string line;
  int part = -1, needs = -1, mounts = -1;
  std::vector<CapabilityRow> rows;
  while (std::getline(in, line)) {
    const auto c = cells(line);
    if (c.empty()) continue;
    if (part < 0) {  // the header
      for (std::size_t i = 0; i < c.size(); ++i) {
        const std::string h = lower(c[i]);
        if (h == "part") part = static_cast<int>(i);
        if (h.rfind("needs", 0) == 0) needs = static_cast<int>(i);
        if (h.rfind("mounts", 0) == 0) mounts = static_cast<int>(i);
      }
      if (part < 0 || needs < 0 || mounts < 0) {
        *error = "the table's header lacks a Part, Needs or Mounts/files column: " + line;
        return {};
      }
      continue;
    }
    if (std::all_of(c.begin(), c.end(),
                    [](const std::string& x) { return x.find_first_not_of("-: ") == std::string::npos; })) {
      continue;  // the |---|---| line
    }
    const auto at = [&](int i) { return i < static_cast<int>(c.size()) ? c[i] : std::string(); };
    CapabilityRow r{at(part), at(needs), at(mounts)};
    const std::string p = lower(r.part);
    r.opt_in = p.find("opt-in") != std::string::npos || p.find("off by default") != std::string::npos;
    rows.push_back(std::move(r));
  }
  if (rows.empty()) *error = "the capability table has no rows";
  return rows;
}

namespace {

// The tokens of a JSON pointer ("/a/b~1c/0" -> a, b/c, 0).
std::vector<std::string> pointer_tokens(const std::string& ptr) {
  std::vector<std::string> out;
  if (ptr.empty()) return out;
  std::size_t at = 1;
  while (at <= ptr.size()) {
    std::size_t slash = ptr.find('/', at);
    if (slash == std::string::npos) slash = ptr.size();
    std::string t = ptr.substr(at, slash - at);
    for (std::size_t i = 0; (i = t.find('~', i)) != std::string::npos; ++i) {
      if (i + 1 < t.size()) t.replace(i, 2, t[i + 1] == '1' ? "/" : "~");
    }
    out.push_back(t);
    at = slash + 1;
  }
  return out;
}

// A sequence index token: its value, or -1 when it is not a number.
long index_of(const std::string& t) {
  if (t.empty() || t.size() > 6 || t.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stol(t);
}

// Two YAML values equal as kustomize compares them (same emitted form).
bool same(const YAML::Node& a, const YAML::Node& b) {
  if (a.IsScalar() && b.IsScalar()) return a.Scalar() == b.Scalar();  // however quoted
  YAML::Emitter ea, eb;
  ea << a;
  eb << b;
  return std::string(ea.c_str()) == std::string(eb.c_str());
}

}  // namespace

std::string apply_json_patch(YAML::Node doc, const YAML::Node& ops) {
  if (!ops.IsSequence()) return "a JSON 6902 patch is a sequence of operations";
  for (const YAML::Node& op : ops) {
    const std::string kind = scalar_or(dig(op, {"op"}), "");
    const std::string path = scalar_or(dig(op, {"path"}), "");
    const auto tokens = pointer_tokens(path);
    if (tokens.empty()) return kind + " " + path + ": the document itself cannot be patched here";
    YAML::Node parent = doc;
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
      const YAML::Node& at = parent;
      YAML::Node next;
      if (at.IsMap() && at[tokens[i]]) {
        next.reset(at[tokens[i]]);
      } else if (at.IsSequence() && index_of(tokens[i]) >= 0 && index_of(tokens[i]) < static_cast<long>(at.size())) {
        next.reset(at[static_cast<std::size_t>(index_of(tokens[i]))]);
      } else {
        return kind + " " + path + ": no " + tokens[i];
      }
      parent.reset(next);
    }
    const std::string& last = tokens.back();
    const long idx = index_of(last);
    const bool seq = parent.IsSequence();
    const std::size_t size = parent.size();
    const YAML::Node& cparent = parent;
    const bool present = seq ? (idx >= 0 && idx < static_cast<long>(size)) : (cparent.IsMap() && cparent[last]);
    if (!seq && !parent.IsMap()) return kind + " " + path + ": the parent is neither a map nor a sequence";
    if (kind == "test") {
      if (!present) return "test " + path + ": nothing there";
      const YAML::Node at = seq ? cparent[static_cast<std::size_t>(idx)] : cparent[last];
      if (!same(at, op["value"])) return "test " + path + ": the value differs";
    } else if (kind == "add") {
      if (seq) {
        if (last == "-" || idx == static_cast<long>(size)) {
          parent.push_back(YAML::Clone(op["value"]));
        } else if (idx >= 0 && idx < static_cast<long>(size)) {
          YAML::Node rebuilt(YAML::NodeType::Sequence);
          for (std::size_t i = 0; i < size; ++i) {
            if (static_cast<long>(i) == idx) rebuilt.push_back(YAML::Clone(op["value"]));
            rebuilt.push_back(YAML::Clone(parent[i]));
          }
          while (parent.size() > 0) parent.remove(parent.size() - 1);
          for (const YAML::Node& e : rebuilt) parent.push_back(e);
        } else {
          return "add " + path + ": index out of range";
        }
      } else {
        parent[last] = YAML::Clone(op["value"]);
      }
    } else if (kind == "replace") {
      if (!present) return "replace " + path + ": nothing there";
      if (seq) {
        parent[static_cast<std::size_t>(idx)] = YAML::Clone(op["value"]);
      } else {
        parent[last] = YAML::Clone(op["value"]);
      }
    } else if (kind == "remove") {
      if (!present) return "remove " + path + ": nothing there";
      if (seq) {
        parent.remove(static_cast<std::size_t>(idx));
      } else {
        parent.remove(last);
      }
    } else {
      return "op '" + kind + "' is not read here (add, replace, remove, test)";
    }
  }
  return "";
}

std::vector<YAML::Node> build_kustomization(const std::string& dir, std::string* error) {
  namespace fs = std::filesystem;
  std::vector<YAML::Node> docs;
  const fs::path root = fs::weakly_canonical(dir);
  const YAML::Node k = YAML::LoadFile((root / "kustomization.yaml").string());
  // A file kustomize reads must lie in the directory (its load restrictor).
  const auto inside = [&root](const fs::path& p) {
    const std::string r = root.string() + "/", c = fs::weakly_canonical(p).string();
    return c.rfind(r, 0) == 0;
  };
  for (const YAML::Node& r : k["resources"]) {
    const fs::path p = root / r.as<std::string>();
    if (fs::is_directory(p)) {
      auto base = build_kustomization(p.string(), error);
      if (!error->empty()) return docs;
      for (auto& d : base) docs.push_back(d);
    } else if (!inside(p)) {
      *error = "resource " + p.string() + " is outside " + root.string() + " (kustomize refuses it)";
      return docs;
    } else if (!fs::exists(p)) {
      *error = "resource " + p.string() + " does not exist";
      return docs;
    } else {
      for (auto& d : load_documents(p.string())) docs.push_back(d);
    }
  }
  for (const YAML::Node& patch : k["patches"]) {
    YAML::Node ops;
    if (patch["path"]) {
      const fs::path p = root / patch["path"].as<std::string>();
      if (!inside(p) || !fs::exists(p)) {
        *error = "patch " + p.string() + " is missing or outside " + root.string();
        return docs;
      }
      ops = YAML::LoadFile(p.string());
    } else {
      ops = YAML::Load(patch["patch"].as<std::string>(""));
    }
    if (!ops.IsSequence()) {
      *error = "only JSON 6902 patches (a sequence of operations) are read here";
      return docs;
    }
    const std::string kind = scalar_or(dig(patch, {"target", "kind"}), "");
    const std::string name = scalar_or(dig(patch, {"target", "name"}), "");
    int applied = 0;
    for (YAML::Node& d : docs) {
      if (scalar_or(dig(d, {"kind"}), "") != kind) continue;
      if (!name.empty() && scalar_or(dig(d, {"metadata", "name"}), "") != name) continue;
      if (std::string why = apply_json_patch(d, ops); !why.empty()) {
        *error = kind + "/" + name + ": " + why;
        return docs;
      }
      ++applied;
    }
    if (applied == 0) {
      *error = "no " + kind + "/" + name + " to patch";
      return docs;
    }
  }
  return docs;
}

}  // namespace vigil::deploy_test
