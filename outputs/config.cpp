#include "outputs/config.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace vigil::outputs {
namespace {

// Reads one output entry, remembering which keys were used so the rest can
// be reported as unknown. yaml-cpp's conversion exceptions stay in here.
class Entry {
 public:
  Entry(const YAML::Node& n, std::size_t index, const ConfigOrigin* origin)
      : n_(n), where_("outputs[" + std::to_string(index) + "]"), index_(index), origin_(origin) {}

  // The error about `key` ("queue.max_events"; "" for the entry itself),
  // located at the deepest part of it the entry has.
  Error err(const std::string& key, const std::string& why) const {
    if (!origin_) return Error::bad_input(where_ + (key.empty() ? "" : "." + key) + ": " + why);
    std::vector<std::string> path = {"outputs", std::to_string(index_)};
    std::vector<std::string> at = path;
    YAML::Node node;
    node.reset(n_);
    if (!key.empty()) {
      for (const std::string& part : ConfigOrigin::split(key)) {
        path.push_back(part);
        if (!node.IsMap()) continue;
        const YAML::Node& cur = node;
        const YAML::Node child = cur[part];
        if (!child.IsDefined()) continue;
        node.reset(child);
        at = path;
      }
    }
    const std::string k = ConfigOrigin::display(path);
    return Error::bad_input(origin_->where(at, node) + ": " + k + ": " + why);
  }
  // The error about the key node `k` itself (an unknown key).
  Error err_key(const YAML::Node& k, const std::string& why) const {
    const std::string name = k.IsScalar() ? k.Scalar() : "?";
    if (!origin_) return err(name, why);
    const std::vector<std::string> path = {"outputs", std::to_string(index_), name};
    return origin_->error(path, k, why);
  }
  bool has(const std::string& key) {
    used_.insert(key);
    return n_[key].IsDefined() && !n_[key].IsNull();
  }
  YAML::Node node(const std::string& key) {
    used_.insert(key);
    return n_[key];
  }

  Status str(const std::string& key, std::string& out, bool secret = false) {
    if (!has(key)) return {};
    const YAML::Node v = n_[key];
    if (!v.IsScalar()) return err(key, "expected a string");
    out = v.Scalar();
    (void)secret;
    return {};
  }
  Status uint(const std::string& key, std::uint64_t& out, std::uint64_t min = 0, std::uint64_t max = UINT64_MAX) {
    if (!has(key)) return {};
    return parse_uint(n_[key], key, out, min, max);
  }
  Status parse_uint(const YAML::Node& v, const std::string& key, std::uint64_t& out, std::uint64_t min,
                    std::uint64_t max) const {
    if (!v.IsScalar()) return err(key, "expected a number");
    const std::string& s = v.Scalar();
    if (s.empty() || s.size() > 19 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return err(key, "expected a non-negative integer, got '" + s + "'");
    }
    const std::uint64_t x = std::stoull(s);
    if (x < min || x > max) {
      return err(key, "must be between " + std::to_string(min) + " and " + std::to_string(max));
    }
    out = x;
    return {};
  }
  Status ms(const std::string& key, std::chrono::milliseconds& out, std::uint64_t max = 86400000) {
    std::uint64_t v = static_cast<std::uint64_t>(out.count());
    if (Status st = uint(key, v, 0, max); !st) return st;
    out = std::chrono::milliseconds(v);
    return {};
  }
  Status boolean(const std::string& key, bool& out) {
    if (!has(key)) return {};
    const YAML::Node v = n_[key];
    if (v.IsScalar()) {
      const std::string& s = v.Scalar();
      if (s == "true" || s == "yes" || s == "on") return out = true, Status{};
      if (s == "false" || s == "no" || s == "off") return out = false, Status{};
    }
    return err(key, "expected true or false");
  }
  Status list(const YAML::Node& v, const std::string& key, std::vector<std::string>& out) const {
    if (!v.IsDefined() || v.IsNull()) return {};
    if (v.IsScalar()) {
      out.push_back(v.Scalar());
      return {};
    }
    if (!v.IsSequence()) return err(key, "expected a list of strings");
    for (const auto& e : v) {
      if (!e.IsScalar()) return err(key, "expected a list of strings");
      out.push_back(e.Scalar());
    }
    return {};
  }
  // A nested mapping with a fixed set of keys.
  Result<YAML::Node> sub(const std::string& key, std::initializer_list<std::string_view> keys) {
    const YAML::Node v = node(key);
    if (!v.IsDefined() || v.IsNull()) return YAML::Node();
    if (!v.IsMap()) return err(key, "expected a mapping");
    for (const auto& kv : v) {
      const std::string k = kv.first.as<std::string>();
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
        if (!origin_) return err(key + "." + k, "unknown key");
        return origin_->error({"outputs", std::to_string(index_), key, k}, kv.first, "unknown key");
      }
    }
    return v;
  }
  Status unknown_keys() const {
    for (const auto& kv : n_) {
      const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      if (!used_.count(k)) return err_key(kv.first, "unknown key");
    }
    return {};
  }
  const std::string& where() const { return where_; }

 private:
  const YAML::Node& n_;
  std::string where_;
  std::size_t index_;
  const ConfigOrigin* origin_;
  std::set<std::string> used_;
};

Status read_secret_file(const std::string& path, std::string& out) {
  std::ifstream in(path);
  if (!in) return Error::bad_input("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' ')) out.pop_back();
  return {};
}

// The sink's format and its name (the name is part of metrics and of the
// spool's directory).
Status parse_format_and_name(Entry& e, SinkOptions& s) {
  std::string fmt = "json";
  if (Status st = e.str("format", fmt); !st) return st;
  const auto f = format_from_name(fmt);
  if (!f) return e.err("format", "unknown format '" + fmt + "' (json, ocsf, cef, text)");
  s.format = *f;
  if (Status st = e.str("name", s.name); !st) return st;
  if (s.name.empty() || s.name[0] == '.' || s.name.size() > 64 ||
      !std::all_of(s.name.begin(), s.name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
      })) {
    return e.err("name", "letters, digits, '.', '_', '-' (at most 64, not starting with '.')");
  }
  return {};
}

// Which alerts the sink takes: min_priority, the rules and tags included and
// excluded.
Status parse_selection(Entry& e, SinkOptions& s) {
  if (e.has("min_priority")) {
    std::string p;
    if (Status st = e.str("min_priority", p); !st) return st;
    s.filter.min_priority = event::priority_from_name(p);
    if (!s.filter.min_priority) return e.err("min_priority", "unknown priority '" + p + "'");
  }
  // false: every alert, repeats included, no summaries (docs/outputs.md, "Aggregation").
  if (Status st = e.boolean("aggregate", s.filter.aggregate); !st) return st;
  for (const char* which : {"rules", "tags"}) {
    auto r = e.sub(which, {"include", "exclude"});
    if (!r) return r.error();
    auto& inc = std::string(which) == "rules" ? s.filter.rules_include : s.filter.tags_include;
    auto& exc = std::string(which) == "rules" ? s.filter.rules_exclude : s.filter.tags_exclude;
    if (Status st = e.list((*r)["include"], std::string(which) + ".include", inc); !st) return st;
    if (Status st = e.list((*r)["exclude"], std::string(which) + ".exclude", exc); !st) return st;
  }
  return {};
}

Status parse_rate_limit(Entry& e, SinkOptions& s) {
  auto r = e.sub("rate_limit", {"per_second", "burst"});
  if (!r) return r.error();
  if (r->IsMap()) {
    const YAML::Node ps = (*r)["per_second"];
    double rate = 0;
    try {
      rate = ps.as<double>();
    } catch (...) {
      return e.err("rate_limit.per_second", "expected a number");
    }
    if (!(rate > 0) || rate > 1e9) return e.err("rate_limit.per_second", "must be > 0");
    s.filter.rate_per_s = rate;
    std::uint64_t burst = static_cast<std::uint64_t>(std::max(1.0, rate));
    if ((*r)["burst"].IsDefined()) {
      if (Status st = e.parse_uint((*r)["burst"], "rate_limit.burst", burst, 1, 1000000000); !st) return st;
    }
    s.filter.burst = static_cast<double>(burst);
  }
  return {};
}

Status parse_queue(Entry& e, SinkOptions& s) {
  auto r = e.sub("queue", {"max_events", "max_bytes", "overflow"});
  if (!r) return r.error();
  if (r->IsMap()) {
    std::uint64_t v = s.queue_max_events;
    if ((*r)["max_events"].IsDefined()) {
      if (Status st = e.parse_uint((*r)["max_events"], "queue.max_events", v, 1, 10000000); !st) return st;
    }
    s.queue_max_events = v;
    v = s.queue_max_bytes;
    if ((*r)["max_bytes"].IsDefined()) {
      if (Status st = e.parse_uint((*r)["max_bytes"], "queue.max_bytes", v, 1024, 1ULL << 40); !st) return st;
    }
    s.queue_max_bytes = v;
    if ((*r)["overflow"].IsDefined()) {
      const std::string o = (*r)["overflow"].IsScalar() ? (*r)["overflow"].Scalar() : "";
      if (o == "drop_newest") s.overflow = Overflow::kDropNewest;
      else if (o == "drop_oldest") s.overflow = Overflow::kDropOldest;
      else return e.err("queue.overflow", "expected drop_newest or drop_oldest");
    }
  }
  return {};
}

Status parse_batch(Entry& e, SinkOptions& s) {
  auto r = e.sub("batch", {"max_events", "max_bytes", "max_delay_ms"});
  if (!r) return r.error();
  if (r->IsMap()) {
    std::uint64_t v = s.batch.max_events;
    if ((*r)["max_events"].IsDefined()) {
      if (Status st = e.parse_uint((*r)["max_events"], "batch.max_events", v, 1, 100000); !st) return st;
    }
    s.batch.max_events = v;
    v = s.batch.max_bytes;
    if ((*r)["max_bytes"].IsDefined()) {
      if (Status st = e.parse_uint((*r)["max_bytes"], "batch.max_bytes", v, 1, 1ULL << 30); !st) return st;
    }
    s.batch.max_bytes = v;
    v = static_cast<std::uint64_t>(s.batch.max_delay.count());
    if ((*r)["max_delay_ms"].IsDefined()) {
      if (Status st = e.parse_uint((*r)["max_delay_ms"], "batch.max_delay_ms", v, 0, 60000); !st) return st;
    }
    s.batch.max_delay = std::chrono::milliseconds(v);
  }
  return {};
}

Status parse_retry(Entry& e, SinkOptions& s) {
  auto r = e.sub("retry", {"max_attempts", "initial_backoff_ms", "max_backoff_ms"});
  if (!r) return r.error();
  if (r->IsMap()) {
    std::uint64_t v = static_cast<std::uint64_t>(s.retry.max_attempts);
    if ((*r)["max_attempts"].IsDefined()) {
      if (Status st = e.parse_uint((*r)["max_attempts"], "retry.max_attempts", v, 1, 1000); !st) return st;
    }
    s.retry.max_attempts = static_cast<int>(v);
    v = static_cast<std::uint64_t>(s.retry.initial_backoff.count());
    if ((*r)["initial_backoff_ms"].IsDefined()) {
      if (Status st = e.parse_uint((*r)["initial_backoff_ms"], "retry.initial_backoff_ms", v, 1, 3600000); !st)
        return st;
    }
    s.retry.initial_backoff = std::chrono::milliseconds(v);
    v = static_cast<std::uint64_t>(s.retry.max_backoff.count());
    if ((*r)["max_backoff_ms"].IsDefined()) {
      if (Status st = e.parse_uint((*r)["max_backoff_ms"], "retry.max_backoff_ms", v, 1, 3600000); !st) return st;
    }
    s.retry.max_backoff = std::chrono::milliseconds(v);
  }
  return {};
}

// The spool as a mapping: each key given (enabled, dir, max_bytes,
// sync_interval_ms); `enabled` is true unless it says otherwise.
Status parse_spool_map(Entry& e, SinkOptions& s, bool& enabled, std::string& dir, std::uint64_t& max_bytes) {
  auto r = e.sub("spool", {"enabled", "dir", "max_bytes", "sync_interval_ms"});
  if (!r) return r.error();
  enabled = true;
  if ((*r)["enabled"].IsDefined()) {
    const std::string v = (*r)["enabled"].IsScalar() ? (*r)["enabled"].Scalar() : "";
    if (v != "true" && v != "false") return e.err("spool.enabled", "expected true or false");
    enabled = v == "true";
  }
  if ((*r)["dir"].IsDefined()) {
    if (!(*r)["dir"].IsScalar() || (*r)["dir"].Scalar().empty()) return e.err("spool.dir", "expected a directory path");
    dir = (*r)["dir"].Scalar();
  }
  if ((*r)["max_bytes"].IsDefined()) {
    if (Status st = e.parse_uint((*r)["max_bytes"], "spool.max_bytes", max_bytes, 4096, 1ULL << 44); !st) return st;
  }
  if ((*r)["sync_interval_ms"].IsDefined()) {
    std::uint64_t v = 0;
    if (Status st = e.parse_uint((*r)["sync_interval_ms"], "spool.sync_interval_ms", v, 0, 60000); !st) return st;
    s.spool.sync_interval = std::chrono::milliseconds(v);
  }
  return {};
}

// The spool (kafka and webhook only): true, false or a mapping; its
// directory defaults to one per sink under the state directory.
Status parse_spool(Entry& e, SinkOptions& s, const std::string& state_dir) {
  const YAML::Node sp = e.node("spool");
  bool enabled = false;
  std::string dir;
  std::uint64_t max_bytes = s.spool.max_bytes;
  if (sp.IsDefined() && !sp.IsNull()) {
    if (s.type != "kafka" && s.type != "webhook") {
      return e.err("spool", "only kafka and webhook outputs have a spool");
    }
    if (sp.IsScalar()) {
      if (sp.Scalar() == "true") enabled = true;
      else if (sp.Scalar() != "false") return e.err("spool", "expected true, false or a mapping");
    } else if (Status st = parse_spool_map(e, s, enabled, dir, max_bytes); !st) {
      return st;
    }
  }
  if (enabled) {
    s.spool.dir = dir.empty() ? state_dir + "/spool/" + s.name : dir;
    s.spool.max_bytes = max_bytes;
  }
  return {};
}

// The keys every output has, whatever its type, in the order they are
// checked.
Status parse_common(Entry& e, OutputConfig& c, const std::string& state_dir) {
  SinkOptions& s = c.sink;
  if (Status st = parse_format_and_name(e, s); !st) return st;
  if (Status st = parse_selection(e, s); !st) return st;
  if (Status st = parse_rate_limit(e, s); !st) return st;
  if (Status st = parse_queue(e, s); !st) return st;
  if (Status st = parse_batch(e, s); !st) return st;
  if (Status st = parse_retry(e, s); !st) return st;
  return parse_spool(e, s, state_dir);
}

Status parse_file(Entry& e, FileOptions& o) {
  if (Status st = e.str("path", o.path); !st) return st;
  if (o.path.empty()) return e.err("path", "required");
  auto r = e.sub("rotate", {"max_bytes", "max_age_s", "keep"});
  if (!r) return r.error();
  if (r->IsMap()) {
    if ((*r)["max_bytes"].IsDefined()) {
      if (Status st = e.parse_uint((*r)["max_bytes"], "rotate.max_bytes", o.rotate_bytes, 1024, 1ULL << 44); !st)
        return st;
    }
    if ((*r)["max_age_s"].IsDefined()) {
      std::uint64_t v = 0;
      if (Status st = e.parse_uint((*r)["max_age_s"], "rotate.max_age_s", v, 1, 31536000); !st) return st;
      o.rotate_age = std::chrono::seconds(v);
    }
    if ((*r)["keep"].IsDefined()) {
      std::uint64_t v = 0;
      if (Status st = e.parse_uint((*r)["keep"], "rotate.keep", v, 0, 1000); !st) return st;
      o.keep = static_cast<int>(v);
    }
  }
  std::string fs = "never";
  if (Status st = e.str("fsync", fs); !st) return st;
  if (fs == "never") o.fsync = FsyncPolicy::kNever;
  else if (fs == "batch") o.fsync = FsyncPolicy::kBatch;
  else if (fs == "always") o.fsync = FsyncPolicy::kAlways;
  else return e.err("fsync", "expected never, batch or always");
  return {};
}

Status parse_tls(Entry& e, std::string& ca, std::string& cert, std::string& key, bool& verify) {
  if (Status st = e.str("ca_file", ca); !st) return st;
  if (Status st = e.str("cert_file", cert); !st) return st;
  if (Status st = e.str("key_file", key); !st) return st;
  if (Status st = e.boolean("tls_verify", verify); !st) return st;
  if (!key.empty() && cert.empty()) return e.err("key_file", "needs cert_file");
  return {};
}

Status parse_syslog(Entry& e, SyslogOptions& o) {
  std::string addr = "unix:///dev/log";
  if (Status st = e.str("address", addr); !st) return st;
  if (Status st = parse_syslog_address(addr, o); !st) return e.err("address", st.error().message);
  std::string framing = "rfc5424";
  if (Status st = e.str("framing", framing); !st) return st;
  if (framing == "rfc5424") o.framing = SyslogFraming::kRfc5424;
  else if (framing == "rfc3164") o.framing = SyslogFraming::kRfc3164;
  else return e.err("framing", "expected rfc5424 or rfc3164");
  std::string fac = "user";
  if (Status st = e.str("facility", fac); !st) return st;
  const auto f = syslog_facility_from_name(fac);
  if (!f) return e.err("facility", "unknown facility '" + fac + "'");
  o.facility = *f;
  if (Status st = e.str("app_name", o.app_name); !st) return st;
  if (o.app_name.empty()) return e.err("app_name", "must not be empty");
  if (Status st = parse_tls(e, o.ca_file, o.cert_file, o.key_file, o.tls_verify); !st) return st;
  if (Status st = e.str("server_name", o.server_name); !st) return st;
  if (Status st = e.ms("timeout_ms", o.timeout); !st) return st;
  return {};
}

Status parse_webhook(Entry& e, WebhookOptions& o, const SinkOptions& s) {
  if (Status st = e.str("url", o.url); !st) return st;
  if (o.url.rfind("http://", 0) != 0 && o.url.rfind("https://", 0) != 0) {
    return e.err("url", "required, http:// or https://");
  }
  std::string batch = "single";
  if (Status st = e.str("batch_mode", batch); !st) return st;
  if (batch == "single") o.batch = WebhookBatch::kSingle;
  else if (batch == "array") o.batch = WebhookBatch::kArray;
  else if (batch == "ndjson") o.batch = WebhookBatch::kNdjson;
  else return e.err("batch_mode", "expected single, array or ndjson");
  if (o.batch == WebhookBatch::kArray && s.format != Format::kJson && s.format != Format::kOcsf) {
    return e.err("batch_mode", "array needs format json or ocsf");
  }
  if (Status st = e.str("content_type", o.content_type); !st) return st;
  const YAML::Node h = e.node("headers");
  if (h.IsDefined() && !h.IsNull()) {
    if (!h.IsMap()) return e.err("headers", "expected a mapping of header names to values");
    for (const auto& kv : h) {
      if (!kv.first.IsScalar() || !kv.second.IsScalar()) {
        return e.err("headers", "expected string names and values");
      }
      o.headers.emplace_back(kv.first.Scalar(), kv.second.Scalar());
    }
  }
  int sources = 0;
  if (e.has("bearer_token")) {
    ++sources;
    if (Status st = e.str("bearer_token", o.bearer_token, true); !st) return st;
  }
  if (e.has("bearer_token_file")) {
    ++sources;
    std::string path;
    if (Status st = e.str("bearer_token_file", path); !st) return st;
    if (Status st = read_secret_file(path, o.bearer_token); !st) return e.err("bearer_token_file", st.error().message);
  }
  if (e.has("bearer_token_env")) {
    ++sources;
    std::string var;
    if (Status st = e.str("bearer_token_env", var); !st) return st;
    const char* v = std::getenv(var.c_str());  // read once, at start-up
    if (!v || !*v) return e.err("bearer_token_env", "environment variable " + var + " is not set");
    o.bearer_token = v;
  }
  if (sources > 1) {
    return e.err("bearer_token", "give one of bearer_token, bearer_token_file, bearer_token_env");
  }
  if (o.bearer_token.find_first_of("\r\n") != std::string::npos) {
    return e.err("bearer_token", "contains a line break");
  }
  if (Status st = parse_tls(e, o.ca_file, o.cert_file, o.key_file, o.tls_verify); !st) return st;
  if (Status st = e.ms("connect_timeout_ms", o.connect_timeout); !st) return st;
  if (Status st = e.ms("timeout_ms", o.timeout); !st) return st;
  return {};
}

Status parse_kafka(Entry& e, KafkaOptions& o) {
#ifdef VIGIL_WITH_KAFKA
  const YAML::Node b = e.node("brokers");
  if (!b.IsDefined() || b.IsNull()) {
    // reported below as required
  } else if (b.IsScalar()) {
    o.brokers = b.Scalar();
  } else if (b.IsSequence()) {
    for (const auto& x : b) {
      if (!x.IsScalar()) return e.err("brokers", "expected host:port strings");
      if (!o.brokers.empty()) o.brokers += ',';
      o.brokers += x.Scalar();
    }
  }
  if (o.brokers.empty()) return e.err("brokers", "required (\"host:port,host:port\" or a list)");
  if (Status st = e.str("topic", o.topic); !st) return st;
  if (o.topic.empty() || o.topic.size() > 249 || !std::all_of(o.topic.begin(), o.topic.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
      })) {
    return e.err("topic", "required: letters, digits, '.', '_', '-' (at most 249)");
  }
  std::string key = "hostname";
  if (Status st = e.str("key", key); !st) return st;
  if (key == "hostname") o.key = KeyKind::kHostname;
  else if (key == "rule") o.key = KeyKind::kRule;
  else if (key == "pod") o.key = KeyKind::kPod;
  else return e.err("key", "expected hostname, rule or pod");
  if (Status st = e.str("acks", o.acks); !st) return st;
  if (o.acks != "all" && o.acks != "-1" && o.acks != "0" && o.acks != "1") {
    return e.err("acks", "expected all, -1, 0 or 1");
  }
  if (Status st = e.boolean("idempotence", o.idempotence); !st) return st;
  if (Status st = e.str("compression", o.compression); !st) return st;
  if (o.compression != "none" && o.compression != "gzip" && o.compression != "snappy" && o.compression != "lz4" &&
      o.compression != "zstd") {
    return e.err("compression", "expected none, gzip, snappy, lz4 or zstd");
  }
  const YAML::Node p = e.node("properties");
  if (p.IsDefined() && !p.IsNull()) {
    if (!p.IsMap()) return e.err("properties", "expected a mapping of librdkafka properties");
    for (const auto& kv : p) {
      if (!kv.first.IsScalar() || !kv.second.IsScalar()) {
        return e.err("properties", "expected string names and values");
      }
      o.properties.emplace_back(kv.first.Scalar(), kv.second.Scalar());
    }
  }
  if (Status st = e.ms("batch_timeout_ms", o.batch_timeout); !st) return st;
  if (o.batch_timeout.count() < 100) return e.err("batch_timeout_ms", "must be at least 100");
  return {};
#else
  (void)o;
  return e.err("type", "this build has no Kafka support (VIGIL_WITH_KAFKA=OFF)");
#endif
}

}  // namespace

Result<std::vector<OutputConfig>> parse_outputs(const YAML::Node& outputs, const std::string& state_dir,
                                                const ConfigOrigin* origin) {
  std::vector<OutputConfig> out;
  if (!outputs.IsDefined() || outputs.IsNull()) {
    OutputConfig c;
    c.sink.name = "stdout";
    c.sink.type = "stdout";
    c.sink.batch.max_events = 64;
    c.transport = StdoutOptions{};
    out.push_back(std::move(c));
    return out;
  }
  if (!outputs.IsSequence()) {
    if (origin) return origin->error({"outputs"}, outputs, "expected a list of outputs");
    return Error::bad_input("outputs: expected a list of outputs");
  }
  std::set<std::string> names;
  std::size_t i = 0;
  try {
    for (const auto& n : outputs) {
      Entry e(n, i, origin);
      if (!n.IsMap()) return e.err("", "expected a mapping with a type");
      OutputConfig c;
      if (Status st = e.str("type", c.sink.type); !st) return st.error();
      const std::string& type = c.sink.type;
      c.sink.name = type + "-" + std::to_string(i);
      if (type == "stdout") {
        c.sink.batch.max_events = 64;
        c.transport = StdoutOptions{};
      } else if (type == "file") {
        c.sink.batch.max_events = 256;
        c.transport = FileOptions{};
      } else if (type == "syslog") {
        c.sink.batch.max_events = 64;
        c.transport = SyslogOptions{};
      } else if (type == "webhook") {
        c.transport = WebhookOptions{};
      } else if (type == "kafka") {
        c.sink.batch.max_events = 1000;
        c.transport = KafkaOptions{};
      } else if (type.empty()) {
        return e.err("type", "required (stdout, file, syslog, webhook, kafka)");
      } else {
        return e.err("type", "unknown output type '" + type + "' (stdout, file, syslog, webhook, kafka)");
      }
      if (Status st = parse_common(e, c, state_dir); !st) return st.error();
      if (!names.insert(c.sink.name).second) {
        return e.err("name", "duplicate output name '" + c.sink.name + "'");
      }
      Status st;
      if (auto* f = std::get_if<FileOptions>(&c.transport)) st = parse_file(e, *f);
      if (auto* s = std::get_if<SyslogOptions>(&c.transport)) st = parse_syslog(e, *s);
      if (auto* w = std::get_if<WebhookOptions>(&c.transport)) {
        st = parse_webhook(e, *w, c.sink);
        if (st && w->batch != WebhookBatch::kSingle && !e.node("batch").IsDefined()) {
          c.sink.batch.max_events = 100;
          c.sink.batch.max_delay = std::chrono::milliseconds(50);
        }
      }
      if (auto* k = std::get_if<KafkaOptions>(&c.transport)) st = parse_kafka(e, *k);
      if (!st) return st.error();
      if (Status u = e.unknown_keys(); !u) return u.error();
      out.push_back(std::move(c));
      ++i;
    }
  } catch (const YAML::Exception& ex) {
    if (origin) return origin->error({"outputs", std::to_string(i)}, outputs[i], ex.what());
    return Error::bad_input("outputs[" + std::to_string(i) + "]: " + ex.what());
  }
  return out;
}

Result<std::unique_ptr<Transport>> make_transport(const OutputConfig& c, std::shared_ptr<spdlog::logger> log) {
  const std::string where = "output " + c.sink.name + ": ";
  auto wrap = [&](auto r) -> Result<std::unique_ptr<Transport>> {
    if (!r) return Error{r.error().kind, where + r.error().message};
    return std::unique_ptr<Transport>(std::move(*r));
  };
  if (const auto* s = std::get_if<StdoutOptions>(&c.transport)) {
    return std::unique_ptr<Transport>(std::make_unique<FdTransport>(s->fd));
  }
  if (const auto* f = std::get_if<FileOptions>(&c.transport)) return wrap(FileTransport::open(*f));
  if (const auto* s = std::get_if<SyslogOptions>(&c.transport)) {
    return wrap(SyslogTransport::create(*s));
  }
  if (const auto* w = std::get_if<WebhookOptions>(&c.transport)) {
    return wrap(WebhookTransport::create(*w, c.sink.format == Format::kJson || c.sink.format == Format::kOcsf));
  }
#ifdef VIGIL_WITH_KAFKA
  if (const auto* k = std::get_if<KafkaOptions>(&c.transport)) {
    return wrap(KafkaTransport::create(*k, std::move(log)));
  }
#endif
  return Error::bad_input(where + "output type not available in this build");
}

}  // namespace vigil::outputs
