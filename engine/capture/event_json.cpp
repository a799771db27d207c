#include "engine/capture/event_json.h"

#include <cstdio>
#include <ctime>
#include <climits>
#include <type_traits>

#include "engine/capture/timeline.h"
#include "engine/event/schema.h"

namespace vigil::capture {
namespace {

class Obj {
 public:
  explicit Obj(std::string& out) : out_(out) { out_.push_back('{'); }
  void key(std::string_view k) {
    if (!first_) out_.push_back(',');
    first_ = false;
    out_ += json_quote(k);
    out_.push_back(':');
  }
  void str(std::string_view k, std::string_view v) {
    key(k);
    out_ += json_quote(v);
  }
  template <typename T>
  void num(std::string_view k, T v) {
    key(k);
    out_ += std::to_string(v);
  }
  void boolean(std::string_view k, bool v) {
    key(k);
    out_ += v ? "true" : "false";
  }
  void close() { out_.push_back('}'); }

 private:
  std::string& out_;
  bool first_ = true;
};

std::string hex_bytes(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() * 2);
  for (unsigned char c : s) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

template <class T>
void json_value(std::string& out, const T& x);

struct JsonField {
  std::string& out;
  Obj& o;
  void appended() {}
  template <class V>
  void operator()(std::string_view name, const V& v, unsigned opts = 0) {
    if constexpr (std::is_same_v<V, std::string>) {
      if ((opts & event::kOmitEmpty) && v.empty()) return;
      if (opts & event::kHex) {
        o.str(std::string(name) + "_hex", hex_bytes(v));
        return;
      }
    }
    o.key(name);
    if constexpr (std::is_same_v<V, std::int64_t>) {
      if ((opts & event::kNullIfMin) && v == INT64_MIN) {
        out += "null";
        return;
      }
    }
    json_value(out, v);
  }
};

template <class T>
void json_value(std::string& out, const T& x) {
  if constexpr (std::is_same_v<T, bool>) {
    out += x ? "true" : "false";
  } else if constexpr (std::is_same_v<T, event::Syscall>) {
    out += json_quote(std::string(event::syscall_name(x)));
  } else if constexpr (std::is_enum_v<T>) {
    out += std::to_string(static_cast<std::underlying_type_t<T>>(x));
  } else if constexpr (std::is_integral_v<T>) {
    out += std::to_string(x);
  } else if constexpr (std::is_same_v<T, std::string>) {
    out += json_quote(x);
  } else if constexpr (std::is_same_v<T, event::IpAddr>) {
    out += json_quote(event::to_string(x));
  } else if constexpr (event::kIsVector<T>) {
    out.push_back('[');
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (i) out.push_back(',');
      json_value(out, x[i]);
    }
    out.push_back(']');
  } else {
    Obj o(out);
    JsonField field{out, o};
    T::fields(field, x);
    o.close();
  }
}

// One line of text per payload kind, for `replay --events` text and the
// timeline. Each payload needs its overload: a new one without it fails the build.
std::string summary(const event::ExecData& d) {
  std::string s = "exe=" + d.exe + " args=";
  for (std::size_t i = 0; i < d.args.size(); ++i) s += (i ? " " : "") + d.args[i];
  return s;
}
std::string summary(const event::ForkData& d) { return "child=" + std::to_string(d.child_pid); }
std::string summary(const event::ExitData& d) {
  return "code=" + std::to_string(d.exit_code) + " signal=" + std::to_string(d.signal);
}
std::string summary(const event::ConnectData& d) {
  return "to=" + (d.unix_path.empty() ? ip_port(d.daddr, d.dport) : d.unix_path);
}
std::string summary(const event::EgressData& d) {
  return "to=" + ip_port(d.daddr, d.dport) + " bytes=" + std::to_string(d.bytes) +
         " window_bytes=" + std::to_string(d.window_bytes);
}
std::string summary(const event::OpenData& d) { return "path=" + d.path; }
std::string summary(const event::IoctlData& d) {
  return "nr=" + std::to_string(d.nr) + " class=" + std::to_string(d.rm_class);
}
std::string summary(const event::GpuUsageData& d) {
  std::uint64_t total = 0;
  for (const auto& e : d.entries) total += e.count;
  return "ioctls=" + std::to_string(total);
}
std::string summary(const event::XidData& d) { return "xid=" + std::to_string(d.code) + " pci=" + d.pci; }
std::string summary(const event::DnsData& d) { return "name=" + d.name; }
std::string summary(const event::PayloadData& d) {
  return "to=" + ip_port(d.daddr, d.dport) + " bytes=" + std::to_string(d.bytes.size());
}
std::string summary(const event::BpfData& d) { return "cmd=" + std::to_string(d.cmd) + " prog=" + d.prog_name; }
std::string summary(const event::FileOpData& d) {
  std::string s = "path=" + d.path;
  if (!d.path2.empty()) s += " path2=" + d.path2;
  return s + " res=" + std::to_string(d.result);
}
std::string summary(const event::PtraceData& d) {
  return "request=" + std::to_string(d.request) + " target=" + std::to_string(d.target);
}
std::string summary(const event::SocketData& d) {
  return "domain=" + std::to_string(d.domain) + " type=" + std::to_string(d.type) + " fd=" + std::to_string(d.result);
}
std::string summary(const event::DupData& d) {
  std::string s = "oldfd=" + std::to_string(d.oldfd) + " newfd=" + std::to_string(d.result);
  if (d.dport != 0) s += " peer=" + ip_port(d.daddr, d.dport);
  return s;
}
std::string summary(const event::CredData& d) {
  return "ids=" + std::to_string(d.real) + "," + std::to_string(d.effective) + "," + std::to_string(d.saved) +
         " res=" + std::to_string(d.result);
}
std::string summary(const event::NsData& d) {
  return "flags=" + std::to_string(d.flags) + " res=" + std::to_string(d.result);
}
std::string summary(const event::InboundData& d) {
  std::string s = "local=" + ip_port(d.laddr, d.lport);
  if (d.rport != 0) s += " remote=" + ip_port(d.raddr, d.rport);
  return s + " res=" + std::to_string(d.result);
}
std::string summary(const event::SysCallData& d) {
  std::string s = "a0=" + std::to_string(d.a0);
  if (!d.name.empty()) s += " name=" + d.name;
  return s + " res=" + std::to_string(d.result);
}
std::string summary(const event::CapsData& d) {
  return "effective=" + std::to_string(d.effective) + " res=" + std::to_string(d.result);
}
std::string summary(const event::PluginData& d) {
  std::string s = d.source + "/" + d.name;
  if (d.gpu_minor >= 0) s += " gpu=" + std::to_string(d.gpu_minor);
  return s + " bytes=" + std::to_string(d.data.size());
}
std::string summary(const event::PostureData& d) {
  if (d.kind == "pod") return "pod=" + d.pod_uid + " container=" + d.container + " visible=" + d.visible_devices;
  std::string s = "driver=" + (d.driver_version.empty() ? std::string("unknown") : d.driver_version) +
                  " toolkit=" + (d.toolkit_version.empty() ? std::string("unknown") : d.toolkit_version);
  if (!d.vulnerable.empty()) s += " vulnerable=" + d.vulnerable;
  return s;
}
std::string summary(const event::ModuleData& d) {
  return "fd=" + std::to_string(d.fd) + " res=" + std::to_string(d.result);
}

}  // namespace

std::string event_summary(const event::Event& ev) {
  std::string s;
  event::visit_payload(ev.data, [&](const auto& d) { s = summary(d); });
  return s;
}

std::string ip_port(const event::IpAddr& a, std::uint16_t port) {
  std::string ip = event::to_string(a);
  if (a.family == 10 /* AF_INET6 */) return "[" + ip + "]:" + std::to_string(port);
  return ip + ":" + std::to_string(port);
}

std::string rfc3339(std::uint64_t ts_ns) {
  std::time_t secs = static_cast<std::time_t>(ts_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%09lluZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<unsigned long long>(ts_ns % 1'000'000'000));
  return buf;
}

std::string event_json(const event::Event& ev, const state::EvalContext* ctx) {
  std::string out;
  out.reserve(256);
  Obj o(out);
  const auto& h = ev.hdr;
  o.num("ts_ns", h.ts_ns);
  o.str("time", rfc3339(h.ts_ns));
  o.str("type", event::type_name(h.type));
  o.num("pid", h.pid);
  o.num("tid", h.tid);
  o.num("ppid", h.ppid);
  o.num("uid", h.uid);
  o.num("gid", h.gid);
  o.num("cgroup_id", h.cgroup_id);
  o.num("pid_ns", h.pid_ns);
  o.num("mnt_ns", h.mnt_ns);
  o.num("net_ns", h.net_ns);
  o.str("comm", h.comm);
  event::visit_payload(ev.data, [&](const auto& d) {
    o.key(std::decay_t<decltype(d)>::kKey);
    json_value(out, d);
  });
  if (ctx && ctx->container) o.str("container.id", ctx->container->id);
  if (ctx && ctx->pod) {
    o.str("k8s.ns.name", ctx->pod->ns);
    o.str("k8s.pod.name", ctx->pod->name);
  }
  o.close();
  return out;
}

std::string event_text(const event::Event& ev, const state::EvalContext* ctx) {
  using namespace event;
  std::string s = rfc3339(ev.hdr.ts_ns) + " " + std::string(type_name(ev.hdr.type)) +
                  " pid=" + std::to_string(ev.hdr.pid) + " comm=" + ev.hdr.comm;
  if (ctx && ctx->pod) s += " pod=" + ctx->pod->ns + "/" + ctx->pod->name;
  else if (ctx && ctx->container) s += " container=" + ctx->container->id.substr(0, 12);
  if (std::string brief = event_summary(ev); !brief.empty()) s += " " + brief;
  // Control bytes would garble a terminal: show them escaped.
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof(b), "\\x%02x", c);
      out += b;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

}  // namespace vigil::capture
