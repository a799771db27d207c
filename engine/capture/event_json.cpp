#include "engine/capture/event_json.h"

#include <cstdio>
#include <ctime>
#include <type_traits>

#include "engine/capture/timeline.h"

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

void payload_json(std::string& out, Obj& o, const event::Payload& data) {
  using namespace event;
  std::visit(
      [&](const auto& d) {
        using T = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return;
        } else {
          const char* name = std::is_same_v<T, ExecData>       ? "exec"
                             : std::is_same_v<T, ForkData>     ? "fork"
                             : std::is_same_v<T, ExitData>     ? "exit"
                             : std::is_same_v<T, ConnectData>  ? "connect"
                             : std::is_same_v<T, OpenData>     ? "open"
                             : std::is_same_v<T, IoctlData>    ? "ioctl"
                             : std::is_same_v<T, GpuUsageData> ? "gpu_usage"
                             : std::is_same_v<T, XidData>      ? "xid"
                             : std::is_same_v<T, DnsData>      ? "dns"
                             : std::is_same_v<T, PayloadData>  ? "payload"
                                                               : "bpf";
          o.key(name);
          Obj p(out);
          if constexpr (std::is_same_v<T, ExecData>) {
            p.str("filename", d.filename);
            p.str("exe", d.exe);
            p.key("args");
            out.push_back('[');
            for (std::size_t i = 0; i < d.args.size(); ++i) {
              if (i) out.push_back(',');
              out += json_quote(d.args[i]);
            }
            out.push_back(']');
            p.boolean("args_truncated", d.args_truncated);
            p.str("cwd", d.cwd);
            p.num("tty", d.tty);
            p.num("loginuid", d.loginuid);
            p.boolean("stdin_is_socket", d.stdin_is_socket);
            p.boolean("stdout_is_socket", d.stdout_is_socket);
            p.boolean("elf32", d.elf32);
          } else if constexpr (std::is_same_v<T, ForkData>) {
            p.num("child_pid", d.child_pid);
            p.num("child_tid", d.child_tid);
            p.boolean("is_thread", d.is_thread);
          } else if constexpr (std::is_same_v<T, ExitData>) {
            p.num("exit_code", d.exit_code);
            p.num("signal", d.signal);
          } else if constexpr (std::is_same_v<T, ConnectData>) {
            p.num("family", d.family);
            p.num("proto", static_cast<int>(d.proto));
            p.str("saddr", to_string(d.saddr));
            p.num("sport", d.sport);
            p.str("daddr", to_string(d.daddr));
            p.num("dport", d.dport);
            if (!d.unix_path.empty()) p.str("unix_path", d.unix_path);
            if (d.result == ConnectData::kResultUnknown) {
              p.key("result");
              out += "null";
            } else {
              p.num("result", d.result);
            }
          } else if constexpr (std::is_same_v<T, OpenData>) {
            p.str("path", d.path);
            p.num("flags", d.flags);
            p.num("mode", d.mode);
            p.num("result", d.result);
            p.num("dev_major", d.dev_major);
            p.num("dev_minor", d.dev_minor);
            p.boolean("is_device", d.is_device);
            if (!d.raw.empty()) p.str("raw", d.raw);
          } else if constexpr (std::is_same_v<T, IoctlData>) {
            p.num("fd", d.fd);
            p.num("cmd", d.cmd);
            p.num("nr", d.nr);
            p.boolean("xfer", d.xfer);
            p.boolean("uvm", d.uvm);
            p.num("dev_major", d.dev_major);
            p.num("dev_minor", d.dev_minor);
            p.num("rm_class", d.rm_class);
            p.num("rm_control", d.rm_control);
            p.num("result", d.result);
            p.num("rm_status", d.rm_status);
          } else if constexpr (std::is_same_v<T, GpuUsageData>) {
            p.num("interval_ns", d.interval_ns);
            p.key("entries");
            out.push_back('[');
            for (std::size_t i = 0; i < d.entries.size(); ++i) {
              if (i) out.push_back(',');
              Obj e(out);
              e.num("dev_major", d.entries[i].dev_major);
              e.num("dev_minor", d.entries[i].dev_minor);
              e.num("nr", d.entries[i].nr);
              e.num("count", d.entries[i].count);
              e.close();
            }
            out.push_back(']');
          } else if constexpr (std::is_same_v<T, XidData>) {
            p.str("source", d.source);
            p.num("facility", d.facility);
            p.num("level", d.level);
            p.str("pci", d.pci);
            p.num("code", d.code);
            p.num("pid", d.xid_pid);
            p.str("comm", d.xid_comm);
            p.str("text", d.text);
          } else if constexpr (std::is_same_v<T, DnsData>) {
            p.boolean("is_response", d.is_response);
            p.num("id", d.id);
            p.str("name", d.name);
            p.num("qtype", d.qtype);
            p.num("rcode", d.rcode);
            p.key("answers");
            out.push_back('[');
            for (std::size_t i = 0; i < d.answers.size(); ++i) {
              if (i) out.push_back(',');
              out += json_quote(to_string(d.answers[i]));
            }
            out.push_back(']');
            p.str("server", to_string(d.server));
            p.num("server_port", d.server_port);
          } else if constexpr (std::is_same_v<T, PayloadData>) {
            p.num("family", d.family);
            p.str("saddr", to_string(d.saddr));
            p.num("sport", d.sport);
            p.str("daddr", to_string(d.daddr));
            p.num("dport", d.dport);
            p.str("bytes_hex", hex_bytes(d.bytes));
            p.boolean("truncated", d.truncated);
          } else if constexpr (std::is_same_v<T, BpfData>) {
            p.num("cmd", d.cmd);
            p.num("prog_type", d.prog_type);
            p.str("prog_name", d.prog_name);
            p.num("result", d.result);
          }
          p.close();
        }
      },
      data);
}

}  // namespace

std::string rfc3339(std::uint64_t ts_ns) {
  std::time_t secs = static_cast<std::time_t>(ts_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%09lluZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<unsigned long long>(ts_ns % 1'000'000'000));
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
  payload_json(out, o, ev.data);
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
  if (const auto* d = ev.as<ExecData>()) {
    s += " exe=" + d->exe + " args=";
    for (std::size_t i = 0; i < d->args.size(); ++i) s += (i ? " " : "") + d->args[i];
  } else if (const auto* d = ev.as<ConnectData>()) {
    s += " to=" + (d->unix_path.empty() ? to_string(d->daddr) + ":" + std::to_string(d->dport)
                                         : d->unix_path);
  } else if (const auto* d = ev.as<OpenData>()) {
    s += " path=" + d->path;
  } else if (const auto* d = ev.as<ExitData>()) {
    s += " code=" + std::to_string(d->exit_code) + " signal=" + std::to_string(d->signal);
  } else if (const auto* d = ev.as<XidData>()) {
    s += " xid=" + std::to_string(d->code) + " pci=" + d->pci;
  } else if (const auto* d = ev.as<DnsData>()) {
    s += " name=" + d->name;
  } else if (const auto* d = ev.as<IoctlData>()) {
    s += " nr=" + std::to_string(d->nr) + " class=" + std::to_string(d->rm_class);
  } else if (const auto* d = ev.as<ForkData>()) {
    s += " child=" + std::to_string(d->child_pid);
  }
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
