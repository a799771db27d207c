#include "tests/deploy/manifest.h"

#include <algorithm>
#include <cctype>
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

YAML::Node find_kind(const std::vector<YAML::Node>& docs, std::string_view kind, std::string_view name) {
  for (const YAML::Node& d : docs) {
    if (!d["kind"] || d["kind"].as<std::string>() != kind) continue;
    if (!name.empty() && (!dig(d, {"metadata", "name"}) || dig(d, {"metadata", "name"}).as<std::string>() != name))
      continue;
    return d;
  }
  return YAML::Node(YAML::NodeType::Null);
}

Agent load_agent(const std::string& path) {
  Agent a;
  const auto docs = load_documents(path);
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

}  // namespace vigil::deploy_test
