#include "engine/config/config.h"

#include "engine/config/config_schema.h"
#include "engine/util/config_origin.h"
#include "engine/util/yaml_canonical.h"
#include "engine/util/yaml_gate.h"

#include <cctype>
#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace vigil::config {
namespace {

std::vector<std::string> split_dots(std::string_view s) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t dot = s.find('.', start);
    if (dot == std::string_view::npos) dot = s.size();
    parts.emplace_back(s.substr(start, dot - start));
    start = dot + 1;
  }
  return parts;
}

bool is_index(const std::string& s) {
  if (s.empty() || s.size() > 6) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

namespace detail {
YAML::Node lookup(const YAML::Node& root, std::string_view dotted) {
  // Rebind (reset) rather than assign: assigning a yaml-cpp handle writes
  // through to the tree. Const access never creates keys.
  YAML::Node cur;
  cur.reset(root);
  for (const std::string& part : split_dots(dotted)) {
    if (!cur) return YAML::Node();
    const YAML::Node& c = cur;
    YAML::Node next;
    if (c.IsSequence() && is_index(part)) {
      std::size_t i = std::stoul(part);
      if (i >= c.size()) return YAML::Node();
      next.reset(c[i]);
    } else if (c.IsMap()) {
      const YAML::Node child = c[part];
      if (!child) return YAML::Node();  // missing keys give invalid handles
      next.reset(child);
    } else {
      return YAML::Node();
    }
    cur.reset(next);
  }
  return cur;
}

std::string schema_problem(std::string_view dotted, const YAML::Node& value) {
  const KeySpec* spec = find_key(dotted);
  if (!spec) return {};
  Status st = check_value(*spec, value);
  return st ? std::string() : st.error().message;
}
}  // namespace detail

namespace {

Result<YAML::Node> read_config_file(const std::string& path) {
  if (path.empty()) return YAML::Node(YAML::NodeType::Map);
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::bad_input(path + ": cannot read the configuration file");
  // Bounded: a configuration is kilobytes; /dev/zero or a huge file is refused.
  constexpr std::size_t kMaxConfigBytes = 16u << 20;
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxConfigBytes) {
      return Error::bad_input(path + ": the configuration file is larger than 16 MiB");
    }
  }
  std::stringstream ss(std::move(text));
  // libyaml first: yaml-cpp 0.7 can loop without bound on some malformed input.
  if (YamlSyntaxError se; !yaml_syntax_ok(ss.str(), &se)) {
    return Error::bad_input(path + ":" + std::to_string(se.line) + ":" + std::to_string(se.column) + ": " + se.message);
  }
  try {
    YAML::Node n = YAML::Load(ss.str());
    if (!n || n.IsNull()) return YAML::Node(YAML::NodeType::Map);
    if (!n.IsMap()) return Error::bad_input(path + ":1:1: the configuration must be a YAML mapping");
    return n;
  } catch (const YAML::Exception& e) {
    return Error::bad_input(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                            ": " + e.msg);
  }
}

}  // namespace

Result<YAML::Node> load_config(const std::string& path, const std::vector<std::string>& overrides) {
  auto cfg = read_config_file(path);
  if (!cfg) return cfg.error();
  for (const std::string& o : overrides) {
    if (Status st = apply_override(*cfg, o); !st) return st.error();
  }
  if (Status st = check_config(*cfg, config_origin(path, overrides)); !st) return st.error();
  return cfg;
}

ConfigOrigin config_origin(const std::string& path, const std::vector<std::string>& overrides) {
  ConfigOrigin origin(path);
  for (const std::string& o : overrides) origin.add_override(std::string_view(o).substr(0, o.find('=')), o);
  return origin;
}

std::vector<std::string> changed_keys(const YAML::Node& before, const YAML::Node& after,
                                      const std::vector<std::string>& skip) {
  // The keys of a mapping, in order; nothing for anything else.
  auto keys = [](const YAML::Node& n, std::set<std::string>& out) {
    if (!n.IsDefined() || !n.IsMap()) return;
    for (const auto& kv : n) {
      if (kv.first.IsScalar()) out.insert(kv.first.Scalar());
    }
  };
  auto child = [](const YAML::Node& n, const std::string& k) {
    return n.IsDefined() && n.IsMap() ? n[k] : YAML::Node();
  };
  std::set<std::string> top;
  keys(before, top);
  keys(after, top);
  std::vector<std::string> out;
  for (const std::string& k : top) {
    if (std::find(skip.begin(), skip.end(), k) != skip.end()) continue;
    const YAML::Node b = child(before, k), a = child(after, k);
    if (canonical_yaml(b) == canonical_yaml(a)) continue;
    const KeySpec* spec = find_key(k);
    if (!spec || spec->kind != ValueKind::kSection) {
      out.push_back(k);
      continue;
    }
    std::set<std::string> sub;
    keys(b, sub);
    keys(a, sub);
    for (const std::string& s : sub) {
      if (canonical_yaml(child(b, s)) != canonical_yaml(child(a, s))) out.push_back(k + "." + s);
    }
    if (sub.empty()) out.push_back(k);
  }
  return out;
}

Status apply_override(YAML::Node& root, std::string_view kv) {
  std::size_t eq = kv.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Error::bad_input("-o " + std::string(kv) + ": expected key=value");
  }
  std::vector<std::string> parts = split_dots(kv.substr(0, eq));
  for (const std::string& p : parts) {
    if (p.empty()) return Error::bad_input("-o " + std::string(kv) + ": empty key part");
  }
  YAML::Node value;
  if (YamlSyntaxError se; !yaml_syntax_ok(kv.substr(eq + 1), &se)) {
    return Error::bad_input("-o " + std::string(kv) + ": value is not valid YAML: " + se.message);
  }
  try {
    value = YAML::Load(std::string(kv.substr(eq + 1)));
  } catch (const YAML::Exception& e) {
    return Error::bad_input("-o " + std::string(kv) + ": value is not valid YAML: " + e.msg);
  }
  if (!root || !root.IsMap()) root = YAML::Node(YAML::NodeType::Map);

  // yaml-cpp nodes are handles: walk with copies of handles, then assign.
  YAML::Node cur = root;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const bool last = i + 1 == parts.size();
    if (is_index(part)) {
      if (!cur.IsSequence()) {
        if (cur.IsNull() || !cur.IsDefined()) {
          cur = YAML::Node(YAML::NodeType::Sequence);
        } else {
          return Error::bad_input("-o " + std::string(kv) + ": '" + part + "' indexes something that is not a list");
        }
      }
      std::size_t idx = std::stoul(part);
      if (idx > cur.size()) {
        return Error::bad_input("-o " + std::string(kv) + ": index " + part + " is past the end of the list");
      }
      if (idx == cur.size()) cur.push_back(YAML::Node(YAML::NodeType::Map));
      if (last) {
        cur[idx] = value;
      } else {
        YAML::Node next = cur[idx];
        cur.reset(next);
      }
    } else {
      if (!cur.IsMap()) {
        if (cur.IsNull()) {
          cur = YAML::Node(YAML::NodeType::Map);
        } else {
          return Error::bad_input("-o " + std::string(kv) + ": '" + part +
                                  "' is inside something that is not a mapping");
        }
      }
      if (last) {
        cur[part] = value;
      } else {
        if (!cur[part] || cur[part].IsNull()) {
          const bool next_is_index = is_index(parts[i + 1]);
          cur[part] = YAML::Node(next_is_index ? YAML::NodeType::Sequence : YAML::NodeType::Map);
        }
        YAML::Node next = cur[part];
        cur.reset(next);
      }
    }
  }
  return Status();
}

}  // namespace vigil::config
