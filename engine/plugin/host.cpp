#include "engine/plugin/host.h"

#include <limits.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace vigil::plugin {
namespace fs = std::filesystem;

struct Host::Binding {
  Plugin* plugin = nullptr;
  std::uint32_t index = 0;
  vigil_field_type type = VIGIL_FIELD_STRING;
  std::vector<std::string> sources;  // the sources whose events it reads
};

namespace {

std::string where(const std::string& file, const YAML::Node& n) {
  std::string w = file.empty() ? "configuration" : file;
  const YAML::Mark m = n.Mark();
  if (m.line >= 0) w += ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  return w;
}

Error bad(const std::string& file, const YAML::Node& n, const std::string& msg) {
  return Error::bad_input(where(file, n) + ": " + msg);
}

bool json_number(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  double d = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  // JSON has no leading '+', no leading zeros, no hex, no inf/nan.
  if (ec != std::errc() || p != s.data() + s.size()) return false;
  std::size_t i = s[0] == '-' ? 1 : 0;
  if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
  if (s[i] == '0' && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '9') return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')) return false;
  }
  return true;
}

// nlohmann's ordered_json keeps the YAML's key order and does the escaping.
nlohmann::ordered_json to_json(const YAML::Node& n, int depth) {
  using J = nlohmann::ordered_json;
  if (depth > 64) return nullptr;  // the YAML gate already bounds nesting; belt and braces
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      J out = J::object();
      for (auto it = n.begin(); it != n.end(); ++it) out[it->first.Scalar()] = to_json(it->second, depth + 1);
      return out;
    }
    case YAML::NodeType::Sequence: {
      J out = J::array();
      for (const auto& e : n) out.push_back(to_json(e, depth + 1));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() != "!") {  // a plain (unquoted) scalar may be a number, bool or null
        if (s == "true" || s == "false") return s == "true";
        if (s == "null" || s == "~") return nullptr;
        if (json_number(s)) {
          try {
            return J::parse(s);
          } catch (const nlohmann::ordered_json::exception&) {  // 1e400: out of a double's range
            return s;
          }
        }
      }
      return s;
    }
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return nullptr;
  }
  return nullptr;
}

std::string exe_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return fs::path(buf).parent_path().string();
}

}  // namespace

std::string yaml_to_json(const YAML::Node& n) {
  // Invalid UTF-8 in a value becomes U+FFFD rather than an invalid document.
  return to_json(n, 0).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string resolve_library(const std::string& library_path) {
  if (library_path.find('/') != std::string::npos) return library_path;
  std::vector<fs::path> dirs;
  if (const char* d = std::getenv("VIGIL_PLUGIN_DIR"); d && *d) dirs.emplace_back(d);
  if (std::string e = exe_dir(); !e.empty()) {
    dirs.push_back(fs::path(e).parent_path() / "plugins");  // build/plugins from build/engine/cli
    dirs.push_back(fs::path(e) / "plugins");
    dirs.push_back(fs::path(e).parent_path() / "lib" / "vigil" / "plugins");  // <prefix>/bin → <prefix>/lib
  }
  dirs.emplace_back("/usr/lib/vigil/plugins");
  dirs.emplace_back("/usr/local/lib/vigil/plugins");
  std::error_code ec;
  for (const fs::path& d : dirs) {
    fs::path p = d / library_path;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return library_path;  // dlopen's own search (LD_LIBRARY_PATH, ld.so.cache), and its error
}

Result<std::vector<PluginSpec>> parse_config(const YAML::Node& cfg, const std::string& file) {
  std::vector<PluginSpec> out;
  if (!cfg || !cfg.IsMap()) return out;
  const YAML::Node plugins = cfg["plugins"];
  const YAML::Node load = cfg["load_plugins"];
  std::map<std::string, PluginSpec> declared;
  if (plugins && !plugins.IsNull()) {
    if (!plugins.IsSequence())
      return bad(file, plugins, "'plugins' must be a list of {name, library_path, init_config}");
    for (const YAML::Node& p : plugins) {
      if (!p.IsMap()) return bad(file, p, "each entry of 'plugins' must be a map");
      PluginSpec s;
      for (auto it = p.begin(); it != p.end(); ++it) {
        const std::string key = it->first.Scalar();
        const YAML::Node v = it->second;
        if (key == "name" || key == "library_path") {
          if (!v.IsScalar() || v.Scalar().empty())
            return bad(file, v, "plugins: '" + key + "' must be a non-empty string");
          (key == "name" ? s.name : s.library_path) = v.Scalar();
        } else if (key == "init_config") {
          if (v.IsNull()) s.init_config = "{}";
          else if (v.IsScalar()) s.init_config = v.Scalar();  // a JSON document as a string, as Falco allows
          else s.init_config = yaml_to_json(v);
        } else {
          return bad(file, it->first, "plugins: unknown key '" + key + "' (name, library_path, init_config)");
        }
      }
      if (s.name.empty()) return bad(file, p, "plugins: an entry has no 'name'");
      if (!valid_name(s.name))
        return bad(file, p, "plugins: name '" + s.name + "' is not [a-z0-9_]+ of at most 32 bytes");
      if (s.library_path.empty()) return bad(file, p, "plugins: '" + s.name + "' has no 'library_path'");
      if (s.init_config.empty()) s.init_config = "{}";
      if (declared.count(s.name)) return bad(file, p, "plugins: '" + s.name + "' is declared twice");
      declared.emplace(s.name, std::move(s));
    }
  }
  if (!load || load.IsNull()) return out;
  if (!load.IsSequence()) return bad(file, load, "'load_plugins' must be a list of plugin names");
  std::set<std::string> chosen;
  for (const YAML::Node& n : load) {
    if (!n.IsScalar()) return bad(file, n, "'load_plugins' must be a list of plugin names");
    const std::string name = n.Scalar();
    auto it = declared.find(name);
    if (it == declared.end()) return bad(file, n, "load_plugins: '" + name + "' is not declared under 'plugins'");
    if (!chosen.insert(name).second) return bad(file, n, "load_plugins: '" + name + "' is listed twice");
    PluginSpec s = it->second;
    s.library_path = resolve_library(s.library_path);
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::unique_ptr<Host>> Host::load(const std::vector<PluginSpec>& specs, std::shared_ptr<spdlog::logger> log) {
  std::unique_ptr<Host> h(new Host());
  h->log_ = std::move(log);
  h->specs_ = specs;
  std::set<std::string> sources;
  for (const PluginSpec& s : specs) {
    auto p = Plugin::open(s.name, s.library_path);
    if (!p) return p.error();
    if ((*p)->is_source() && !sources.insert((*p)->event_source()).second) {
      return Error::bad_input("plugin '" + s.name + "': event source '" + (*p)->event_source() +
                              "' is already another loaded plugin's");
    }
    h->plugins_.push_back(std::move(*p));
  }
  if (Status st = h->build_catalog(); !st) return st.error();
  return h;
}

Status Host::build_catalog() {
  std::vector<rules::FieldDef> defs;
  for (const auto& p : plugins_) {
    for (std::uint32_t i = 0; i < p->fields().size(); ++i) {
      const FieldInfo& f = p->fields()[i];
      auto b = std::make_unique<Binding>();
      b->plugin = p.get();
      b->index = i;
      b->type = f.type;
      b->sources = p->extract_sources();
      rules::FieldDef d{f.name,
                        rules::FieldType::kString,
                        rules::ArgMode::kNone,
                        false,
                        rules::EventSet("pluginevent"),
                        f.description,
                        extract_plugin_field,
                        b.get()};
      switch (f.type) {
        case VIGIL_FIELD_STRING: d.type = rules::FieldType::kString; break;
        case VIGIL_FIELD_UINT64: d.type = rules::FieldType::kUint; break;
        case VIGIL_FIELD_INT64: d.type = rules::FieldType::kInt; break;
        case VIGIL_FIELD_BOOL: d.type = rules::FieldType::kBool; break;
      }
      d.arg = f.arg == VIGIL_ARG_REQUIRED   ? rules::ArgMode::kRequiredKey
              : f.arg == VIGIL_ARG_OPTIONAL ? rules::ArgMode::kOptionalKey
                                            : rules::ArgMode::kNone;
      defs.push_back(d);
      bindings_.push_back(std::move(b));
    }
  }
  auto c = rules::FieldCatalog::extend(rules::FieldCatalog::builtin(), std::move(defs));
  if (!c) return Error::bad_input("plugins: " + c.error().message);
  catalog_ = std::move(*c);
  return {};
}

Status Host::init_all() {
  for (std::size_t i = 0; i < plugins_.size(); ++i) {
    Plugin& p = *plugins_[i];
    if (p.initialised()) continue;
    if (Status s = p.init(specs_[i].init_config, log_); !s) return s;
    if (log_) {
      std::string what = p.is_source() ? "source '" + p.event_source() + "'" : "";
      if (p.is_extractor()) {
        what += (what.empty() ? "" : ", ") + std::to_string(p.fields().size()) + " fields";
      }
      log_->info("plugin {} {} loaded from {} ({})", p.name(), p.version(), p.path(), what);
    }
  }
  return {};
}

void Host::configure(rules::LoadOptions& opts) const {
  opts.fields = catalog_.get();
  for (const std::string& s : event_sources()) opts.plugin_sources.insert(s);
}

std::vector<rules::SuggestedField> Host::suggested_fields() const {
  std::vector<rules::SuggestedField> out;
  for (const auto& p : plugins_) {
    for (const std::string& name : p->suggested_output_fields()) out.push_back({name, p->extract_sources()});
  }
  return out;
}

std::set<std::string> Host::event_sources() const {
  std::set<std::string> out;
  for (const auto& p : plugins_) {
    if (p->is_source()) out.insert(p->event_source());
  }
  return out;
}

Result<std::vector<std::unique_ptr<source::EventSource>>> Host::start_sources(const SourceOptions& opts) {
  std::vector<std::unique_ptr<source::EventSource>> out;
  for (const auto& p : plugins_) {
    if (!p->is_source()) continue;
    auto s = PluginSource::start(*p, opts, log_);
    if (!s) return s.error();
    out.push_back(std::move(*s));
  }
  return out;
}

Host::~Host() {
  // The sources (the runner's) are gone by now; a plugin one of them had to
  // leave running inside next_batch must stay loaded and alive.
  for (auto& p : plugins_) {
    if (p && p->abandoned()) (void)p.release();
  }
}

void extract_plugin_field(const rules::ExtractCtx& x, const rules::FieldInst& f, rules::Extracted& out) noexcept {
  const auto* b = static_cast<const Host::Binding*>(f.def->user);
  const event::PluginData* pd = x.ctx->ev ? x.ctx->ev->as<event::PluginData>() : nullptr;
  if (!b || !pd) return;
  bool reads = false;
  for (const std::string& s : b->sources) reads |= s == pd->source;
  if (!reads) return;
  const event::Header& h = x.ctx->ev->hdr;
  vigil_event ev{};
  ev.ts_ns = h.ts_ns;
  ev.pid = h.pid;
  ev.tid = h.tid;
  ev.gpu_minor = pd->gpu_minor;
  ev.data_len = static_cast<std::uint32_t>(pd->data.size());
  ev.name = pd->name.c_str();
  ev.data = reinterpret_cast<const std::uint8_t*>(pd->data.data());
  vigil_extract_request req{};
  req.field = b->index;
  req.arg = f.has_arg ? f.arg.c_str() : nullptr;
  if (b->plugin->extract(ev, &req, 1) != VIGIL_RC_OK || !req.has_value) return;
  rules::Val& v = out.add();
  switch (b->type) {
    case VIGIL_FIELD_STRING:
      v.s = req.value.str ? x.arena->put(std::string_view(req.value.str, strnlen(req.value.str, kMaxFieldValueBytes)))
                          : std::string_view();
      break;
    case VIGIL_FIELD_UINT64:
      v.i =
          req.value.u64 > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(req.value.u64);
      break;
    case VIGIL_FIELD_INT64: v.i = req.value.i64; break;
    case VIGIL_FIELD_BOOL: v.b = req.value.u64 != 0; break;
  }
}

}  // namespace vigil::plugin
