#include "engine/plugin/plugin.h"

#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <mutex>
#include <set>
#include <string_view>

#include <spdlog/spdlog.h>

namespace vigil::plugin {
namespace {

// A bounded copy of a string a plugin returned ("" for NULL).
std::string bounded(const char* s, std::size_t max) {
  if (!s) return {};
  return std::string(s, strnlen(s, max));
}

// ---- the init crash guard ------------------------------------------------
//
// While a plugin's init runs, fatal signals print which plugin died before the
// default action (core, exit) proceeds. Only async-signal-safe calls inside.
char g_crash_name[64];
std::mutex g_init_mu;  // one guarded init at a time
constexpr int kFatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

void crash_handler(int sig) {
  static const char a[] = "vigil: plugin '";
  static const char b[] = "' crashed in init (signal ";
  static const char c[] = "); remove it from load_plugins to start without it\n";
  (void)!write(STDERR_FILENO, a, sizeof(a) - 1);
  (void)!write(STDERR_FILENO, g_crash_name, strnlen(g_crash_name, sizeof(g_crash_name)));
  (void)!write(STDERR_FILENO, b, sizeof(b) - 1);
  char num[8];
  int n = 0;
  for (int v = sig; v > 0 && n < 7; v /= 10) num[n++] = static_cast<char>('0' + v % 10);
  for (int i = n - 1; i >= 0; --i) (void)!write(STDERR_FILENO, &num[i], 1);
  (void)!write(STDERR_FILENO, c, sizeof(c) - 1);
  signal(sig, SIG_DFL);
  raise(sig);
}

class InitGuard {
 public:
  explicit InitGuard(const std::string& name) : lock_(g_init_mu) {
    std::memset(g_crash_name, 0, sizeof(g_crash_name));
    std::memcpy(g_crash_name, name.data(), std::min(name.size(), sizeof(g_crash_name) - 1));
    struct sigaction sa {};
    sa.sa_handler = crash_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NODEFER;
    for (std::size_t i = 0; i < std::size(kFatal); ++i) sigaction(kFatal[i], &sa, &old_[i]);
  }
  ~InitGuard() {
    for (std::size_t i = 0; i < std::size(kFatal); ++i) sigaction(kFatal[i], &old_[i], nullptr);
  }

 private:
  std::lock_guard<std::mutex> lock_;
  struct sigaction old_[std::size(kFatal)];
};

}  // namespace

bool parse_api_version(const char* s, unsigned& major, unsigned& minor) {
  if (!s) return false;
  std::string_view v(s, strnlen(s, 16));
  auto dot = v.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= v.size()) return false;
  auto [p1, e1] = std::from_chars(v.data(), v.data() + dot, major);
  if (e1 != std::errc() || p1 != v.data() + dot) return false;
  auto [p2, e2] = std::from_chars(v.data() + dot + 1, v.data() + v.size(), minor);
  return e2 == std::errc() && p2 == v.data() + v.size();
}

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > kMaxNameBytes) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

Result<std::unique_ptr<Plugin>> Plugin::open(const std::string& name, const std::string& path) {
  std::unique_ptr<Plugin> p(new Plugin());
  p->name_ = name;
  p->path_ = path;
  const std::string who = "plugin '" + name + "' (" + path + ")";
  // RTLD_LOCAL: plugins never see each other's symbols; RTLD_NOW: a missing
  // dependency fails here, not at the first call.
  p->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!p->handle_) {
    const char* e = dlerror();
    return Error::bad_input(who + ": cannot load: " + (e ? e : "unknown error"));
  }
  auto sym = [&](const char* s) { return dlsym(p->handle_, s); };
#define VIGIL_SYM(member, symbol) p->member = reinterpret_cast<decltype(p->member)>(sym(symbol))
  VIGIL_SYM(api_version_, "vigil_plugin_get_required_api_version");
  VIGIL_SYM(get_name_, "vigil_plugin_get_name");
  VIGIL_SYM(get_version_, "vigil_plugin_get_version");
  VIGIL_SYM(get_description_, "vigil_plugin_get_description");
  VIGIL_SYM(init_, "vigil_plugin_init");
  VIGIL_SYM(destroy_, "vigil_plugin_destroy");
  VIGIL_SYM(last_error_, "vigil_plugin_get_last_error");
  VIGIL_SYM(event_source_, "vigil_plugin_get_event_source");
  VIGIL_SYM(next_batch_, "vigil_plugin_next_batch");
  VIGIL_SYM(get_fields_, "vigil_plugin_get_fields");
  VIGIL_SYM(extract_sources_fn_, "vigil_plugin_get_extract_event_sources");
  VIGIL_SYM(suggested_fn_, "vigil_plugin_get_suggested_output_fields");
  VIGIL_SYM(extract_, "vigil_plugin_extract");
#undef VIGIL_SYM

  // The version first: an older or newer ABI may name its symbols otherwise.
  if (!p->api_version_) {
    return Error::bad_input(who + ": not a vigil plugin (no vigil_plugin_get_required_api_version)");
  }
  unsigned major = 0, minor = 0;
  const char* v = p->api_version_();
  if (!parse_api_version(v, major, minor)) {
    return Error::bad_input(who + ": bad ABI version string '" + bounded(v, 16) + "'");
  }
  if (major != VIGIL_PLUGIN_API_VERSION_MAJOR || minor > VIGIL_PLUGIN_API_VERSION_MINOR) {
    return Error::bad_input(who + ": built for plugin ABI " + std::to_string(major) + "." + std::to_string(minor) +
                            ", this vigil speaks " + VIGIL_PLUGIN_API_VERSION_STRING + " (same major, minor at most " +
                            std::to_string(VIGIL_PLUGIN_API_VERSION_MINOR) + ")");
  }
  struct Need {
    const void* fn;
    const char* symbol;
  };
  auto missing = [&](std::initializer_list<Need> group, const char* what) -> std::string {
    bool any = false;
    for (const Need& n : group) any |= n.fn != nullptr;
    if (!any && std::string_view(what) != "required") return "";
    for (const Need& n : group) {
      if (!n.fn) return std::string(what) + " symbol " + n.symbol + " is missing";
    }
    return "";
  };
  std::string m = missing({{reinterpret_cast<const void*>(p->get_name_), "vigil_plugin_get_name"},
                           {reinterpret_cast<const void*>(p->get_version_), "vigil_plugin_get_version"},
                           {reinterpret_cast<const void*>(p->get_description_), "vigil_plugin_get_description"},
                           {reinterpret_cast<const void*>(p->init_), "vigil_plugin_init"},
                           {reinterpret_cast<const void*>(p->destroy_), "vigil_plugin_destroy"},
                           {reinterpret_cast<const void*>(p->last_error_), "vigil_plugin_get_last_error"}},
                          "required");
  if (m.empty()) {
    m = missing({{reinterpret_cast<const void*>(p->event_source_), "vigil_plugin_get_event_source"},
                 {reinterpret_cast<const void*>(p->next_batch_), "vigil_plugin_next_batch"}},
                "source");
  }
  if (m.empty()) {
    m = missing({{reinterpret_cast<const void*>(p->get_fields_), "vigil_plugin_get_fields"},
                 {reinterpret_cast<const void*>(p->extract_), "vigil_plugin_extract"}},
                "extract");
  }
  if (!m.empty()) return Error::bad_input(who + ": " + m);
  if (!p->next_batch_ && !p->extract_) {
    return Error::bad_input(who + ": neither an event source nor a field extractor");
  }
  if (Status s = p->check_and_copy_info(); !s) return Error::bad_input(who + ": " + s.error().message);
  return p;
}

Status Plugin::check_and_copy_info() {
  const std::string lib_name = bounded(get_name_(), 256);
  if (!valid_name(lib_name)) {
    return Error::bad_input("its name '" + lib_name + "' is not [a-z0-9_]+ of at most 32 bytes");
  }
  if (lib_name != name_) {
    return Error::bad_input("the library calls itself '" + lib_name + "', the configuration '" + name_ + "'");
  }
  version_ = bounded(get_version_(), 64);
  description_ = bounded(get_description_(), 1024);
  if (event_source_) {
    source_ = bounded(event_source_(), 256);
    if (!valid_name(source_) || source_ == "syscall") {
      return Error::bad_input("its event source '" + source_ + "' is not [a-z0-9_]+ (and not 'syscall')");
    }
  }
  if (get_fields_) {
    uint32_t n = 0;
    const vigil_field_info* f = get_fields_(&n);
    if (n > kMaxFields) return Error::bad_input("it declares " + std::to_string(n) + " fields (at most 512)");
    if (n > 0 && !f) return Error::bad_input("vigil_plugin_get_fields returned no table");
    std::set<std::string> seen;
    for (uint32_t i = 0; i < n; ++i) {
      FieldInfo fi;
      fi.name = bounded(f[i].name, 128);
      fi.description = bounded(f[i].description, 1024);
      fi.type = f[i].type;
      fi.arg = f[i].arg;
      const std::string at = "field " + std::to_string(i) + " ('" + fi.name + "')";
      if (fi.name.rfind(name_ + ".", 0) != 0 || fi.name.size() == name_.size() + 1) {
        return Error::bad_input(at + " is not under the plugin's prefix '" + name_ + ".'");
      }
      for (char c : fi.name) {
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.')) {
          return Error::bad_input(at + ": field names are lower case, digits, '_' and '.'");
        }
      }
      if (fi.type < VIGIL_FIELD_STRING || fi.type > VIGIL_FIELD_BOOL) {
        return Error::bad_input(at + " has an unknown type " + std::to_string(static_cast<int>(fi.type)));
      }
      if (fi.arg < VIGIL_ARG_NONE || fi.arg > VIGIL_ARG_REQUIRED) {
        return Error::bad_input(at + " has an unknown argument mode");
      }
      if (!seen.insert(fi.name).second) return Error::bad_input(at + " is declared twice");
      fields_.push_back(std::move(fi));
    }
    if (extract_sources_fn_) {
      const char* const* srcs = extract_sources_fn_();
      for (std::size_t i = 0; srcs && srcs[i] && i < 64; ++i) {
        std::string s = bounded(srcs[i], 256);
        if (!valid_name(s)) return Error::bad_input("extract event source '" + s + "' is not [a-z0-9_]+");
        extract_sources_.push_back(std::move(s));
      }
    }
    if (extract_sources_.empty()) {
      if (source_.empty()) {
        return Error::bad_input(
            "a field extractor with no event source of its own must name the sources "
            "it reads (vigil_plugin_get_extract_event_sources)");
      }
      extract_sources_.push_back(source_);
    }
    if (suggested_fn_) {
      const char* const* names = suggested_fn_();
      for (std::size_t i = 0; names && names[i]; ++i) {
        if (i >= kMaxFields) return Error::bad_input("it suggests more than 512 output fields");
        std::string s = bounded(names[i], 128);
        if (!seen.count(s)) return Error::bad_input("suggested output field '" + s + "' is not one of its fields");
        if (std::find(suggested_.begin(), suggested_.end(), s) == suggested_.end()) suggested_.push_back(std::move(s));
      }
    }
  }
  return {};
}

Status Plugin::init(const std::string& config_json, std::shared_ptr<spdlog::logger> log) {
  if (state_) return {};
  log_ = std::move(log);
  host_.size = sizeof(vigil_host);
  host_.ctx = this;
  host_.log = [](void* ctx, vigil_log_level level, const char* msg) {
    auto* self = static_cast<Plugin*>(ctx);
    if (!self || !self->log_) return;
    const std::string line = bounded(msg, 1024);
    const spdlog::level::level_enum lv = level == VIGIL_LOG_ERROR  ? spdlog::level::err
                                         : level == VIGIL_LOG_WARN ? spdlog::level::warn
                                         : level == VIGIL_LOG_INFO ? spdlog::level::info
                                                                   : spdlog::level::debug;
    self->log_->log(lv, "plugin {}: {}", self->name_, line);
  };
  char err[512] = {0};
  {
    InitGuard guard(name_);
    state_ = init_(&host_, config_json.c_str(), err, sizeof(err));
  }
  if (!state_) {
    err[sizeof(err) - 1] = '\0';
    std::string why = bounded(err, sizeof(err));
    return Error::runtime("plugin '" + name_ + "': init failed: " + (why.empty() ? "no reason given" : why));
  }
  return {};
}

vigil_rc Plugin::next_batch(std::uint32_t max, std::uint32_t timeout_ms, const vigil_event** events, std::uint32_t* n) {
  *events = nullptr;
  *n = 0;
  if (!state_ || !next_batch_) return VIGIL_RC_EOF;
  return next_batch_(state_, max, timeout_ms, events, n);
}

vigil_rc Plugin::extract(const vigil_event& ev, vigil_extract_request* reqs, std::uint32_t n) {
  if (!state_ || !extract_) return VIGIL_RC_FAILURE;
  return extract_(state_, &ev, reqs, n);
}

std::string Plugin::last_error() {
  if (!state_ || !last_error_) return {};
  return bounded(last_error_(state_), 1024);
}

void Plugin::destroy() {
  if (abandoned()) return;
  if (state_ && destroy_) destroy_(state_);
  state_ = nullptr;
}

Plugin::~Plugin() {
  destroy();
  if (handle_ && !abandoned()) dlclose(handle_);
}

}  // namespace vigil::plugin
