#include "plugins/cuda/config.h"

#include <charconv>

#include <nlohmann/json.hpp>

namespace vigil::cuda {

bool parse_duration_ms(std::string_view s, std::uint64_t& ms) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p == s.data()) return false;
  std::string_view unit(p, static_cast<std::size_t>(s.data() + s.size() - p));
  std::uint64_t mul;
  if (unit == "ms") mul = 1;
  else if (unit == "s") mul = 1000;
  else if (unit == "m") mul = 60'000;
  else return false;
  if (v > UINT64_MAX / mul) return false;
  ms = v * mul;
  return true;
}

namespace {

using json = nlohmann::json;

bool get_duration(const json& v, std::string_view key, std::uint64_t lo, std::uint64_t hi, std::uint32_t& out,
                  std::string& err) {
  std::uint64_t ms = 0;
  if (!v.is_string() || !parse_duration_ms(v.get<std::string>(), ms)) {
    err = std::string(key) + ": expected a duration string with a unit (\"500ms\", \"1s\", \"2m\")";
    return false;
  }
  if (ms < lo || ms > hi) {
    err = std::string(key) + ": must be between " + std::to_string(lo) + "ms and " + std::to_string(hi) + "ms";
    return false;
  }
  out = static_cast<std::uint32_t>(ms);
  return true;
}

bool get_count(const json& v, std::string_view key, std::uint64_t lo, std::uint64_t hi, std::uint32_t& out,
               std::string& err) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0)) {
    err = std::string(key) + ": expected a non-negative integer";
    return false;
  }
  auto n = v.get<std::uint64_t>();
  if (n < lo || n > hi) {
    err = std::string(key) + ": must be between " + std::to_string(lo) + " and " + std::to_string(hi);
    return false;
  }
  out = static_cast<std::uint32_t>(n);
  return true;
}

bool get_strings(const json& v, std::string_view key, std::size_t max_items, std::vector<std::string>& out,
                 std::string& err) {
  if (!v.is_array() || v.size() > max_items) {
    err = std::string(key) + ": expected a list of at most " + std::to_string(max_items) + " strings";
    return false;
  }
  out.clear();
  for (const json& e : v) {
    if (!e.is_string() || e.get<std::string>().empty() || e.get<std::string>().size() > 4096) {
      err = std::string(key) + ": every entry must be a non-empty string of at most 4096 bytes";
      return false;
    }
    out.push_back(e.get<std::string>());
  }
  return true;
}

}  // namespace

bool parse_config(std::string_view text, Config& out, std::string& err) {
  Config c;
  if (text.empty()) {
    out = c;
    return true;
  }
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    err = "init_config is not valid JSON";
    return false;
  }
  if (doc.is_null()) {
    out = c;
    return true;
  }
  if (!doc.is_object()) {
    err = "init_config must be a JSON object";
    return false;
  }
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    bool ok = true;
    if (k == "interval") ok = get_duration(v, k, 100, 3'600'000, c.interval_ms, err);
    else if (k == "flush_interval") ok = get_duration(v, k, 0, 10'000, c.flush_interval_ms, err);
    else if (k == "scan_interval") ok = get_duration(v, k, 50, 3'600'000, c.scan_interval_ms, err);
    else if (k == "scan_max_pids") ok = get_count(v, k, 1, 1u << 22, c.scan_max_pids, err);
    else if (k == "max_libraries") ok = get_count(v, k, 1, 1024, c.max_libraries, err);
    else if (k == "library_names") {
      ok = get_strings(v, k, 16, c.library_names, err);
      for (const std::string& n : c.library_names)
        if (ok && n.find('/') != std::string::npos) {
          err = "library_names: a name has no '/' (use library_paths for paths): " + n;
          ok = false;
        }
    } else if (k == "library_paths") {
      ok = get_strings(v, k, 64, c.library_paths, err);
      for (const std::string& p : c.library_paths)
        if (ok && p.front() != '/') {
          err = "library_paths: paths must be absolute: " + p;
          ok = false;
        }
    } else if (k == "probes") {
      std::vector<std::string> names;
      ok = get_strings(v, k, 8, names, err);
      c.categories = 0;
      for (const std::string& n : names) {
        auto cat = category_by_name(n);
        if (ok && !cat) {
          err = "probes: unknown group '" + n + "' (context, module, memory, launch)";
          ok = false;
        }
        if (ok) c.categories |= 1u << static_cast<unsigned>(*cat);
      }
    } else if (k == "ringbuf_bytes") ok = get_count(v, k, 4096, 1u << 28, c.ringbuf_bytes, err);
    else if (k == "max_processes") ok = get_count(v, k, 16, 1u << 20, c.max_processes, err);
    else if (k == "max_pending") ok = get_count(v, k, 16, 1u << 22, c.max_pending, err);
    else if (k == "proc_root") {
      if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().front() != '/' ||
          v.get<std::string>().size() > 1024) {
        err = "proc_root: expected an absolute path";
        ok = false;
      } else {
        c.proc_root = v.get<std::string>();
        while (c.proc_root.size() > 1 && c.proc_root.back() == '/') c.proc_root.pop_back();
      }
    } else if (k == "multi_uprobe" || k == "watch_mmap") {
      if (!v.is_boolean()) {
        err = k + ": expected true or false";
        ok = false;
      } else {
        (k == "multi_uprobe" ? c.multi_uprobe : c.watch_mmap) = v.get<bool>();
      }
    } else {
      err = "unknown key '" + k.substr(0, 64) + "'";
      ok = false;
    }
    if (!ok) return false;
  }
  out = std::move(c);
  return true;
}

}  // namespace vigil::cuda
