// fd.*: the file or socket the event is about: an open's path, a
// connection's endpoints (client and server, local and remote).
#include <sys/socket.h>

#include <string_view>
#include <vector>

#include "engine/rules/field_extractors.h"

namespace vigil::rules {

using namespace fx;

namespace {

constexpr std::string_view kNetEv = "connect, sendto, sendmsg, payload, dup, accept, listen, bind, egress";

struct Endpoints {
  std::uint8_t family = 0;
  event::L4 proto = event::L4::kUnknown;
  const event::IpAddr* client = nullptr;
  std::uint16_t cport = 0;
  const event::IpAddr* server = nullptr;
  std::uint16_t sport = 0;
  std::string_view unix_path;
  bool inbound = false;  // the local end is the server (accept, listen, bind)
};
bool endpoints(const event::Event& e, Endpoints& ep) noexcept {
  if (auto* c = e.as<event::ConnectData>()) {
    ep.family = c->family;
    ep.proto = c->proto;
    ep.client = &c->saddr;
    ep.cport = c->sport;
    ep.server = &c->daddr;
    ep.sport = c->dport;
    ep.unix_path = c->unix_path;
    return true;
  }
  if (auto* d = e.as<event::DupData>(); d && d->family != 0) {
    ep.family = d->family;
    ep.proto = d->proto;
    ep.client = &d->saddr;
    ep.cport = d->sport;
    ep.server = &d->daddr;
    ep.sport = d->dport;
    return true;
  }
  if (auto* d = e.as<event::InboundData>(); d && d->family != 0) {
    ep.family = d->family;
    ep.proto = d->proto;
    ep.client = &d->raddr;
    ep.cport = d->rport;
    ep.server = &d->laddr;
    ep.sport = d->lport;
    ep.inbound = true;
    return true;
  }
  if (auto* g = e.as<event::EgressData>()) {
    static const event::IpAddr kNoAddress{};  // the kernel counts by destination only
    ep.family = g->family;
    ep.proto = g->proto;
    ep.client = &kNoAddress;
    ep.server = &g->daddr;
    ep.sport = g->dport;
    return true;
  }
  if (auto* p = e.as<event::PayloadData>()) {
    ep.family = p->family;
    ep.proto = event::L4::kTcp;
    ep.client = &p->saddr;
    ep.cport = p->sport;
    ep.server = &p->daddr;
    ep.sport = p->dport;
    return true;
  }
  return false;
}
void x_fd_name(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) {
    str(o, p->path);
    return;
  }
  Endpoints ep;
  if (!endpoints(ev(x), ep)) return;
  if (ep.family == AF_UNIX) {
    if (!ep.unix_path.empty()) str(o, ep.unix_path);
    return;
  }
  Arena& a = *x.arena;
  a.begin();
  if (ep.client->family != 0) {  // an egress report has no client end
    append_ip(a, *ep.client);
    a.append(':');
    a.append_uint(ep.cport);
    a.append("->");
  }
  append_ip(a, *ep.server);
  a.append(':');
  a.append_uint(ep.sport);
  str(o, a.finish());
}
void x_fd_nameraw(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) str(o, given_path(*p));
}
void x_fd_directory(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) {
    auto d = dirname_of(p->path);
    if (!d.empty()) str(o, d);
  }
}
void x_fd_filename(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) str(o, basename_of(p->path));
}
void x_fd_type(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) {
    str(o, p->file_type == event::OpenData::kFileDirectory ? "directory"
           : p->file_type == event::OpenData::kFileFifo    ? "pipe"
                                                           : "file");
    return;
  }
  Endpoints ep;
  if (!endpoints(ev(x), ep)) return;
  if (ep.family == AF_INET) str(o, "ipv4");
  else if (ep.family == AF_INET6) str(o, "ipv6");
  else if (ep.family == AF_UNIX) str(o, "unix");
}
void x_fd_typechar(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) {
    str(o, p->file_type == event::OpenData::kFileDirectory ? "d"
           : p->file_type == event::OpenData::kFileFifo    ? "p"
                                                           : "f");
    return;
  }
  Endpoints ep;
  if (!endpoints(ev(x), ep)) return;
  if (ep.family == AF_INET) str(o, "4");
  else if (ep.family == AF_INET6) str(o, "6");
  else if (ep.family == AF_UNIX) str(o, "u");
}
void x_fd_sockfamily(const X& x, const F&, E& o) noexcept {
  std::uint32_t family = 0;
  if (auto* s = ev(x).as<event::SocketData>()) {
    family = s->domain;
  } else if (Endpoints ep; endpoints(ev(x), ep)) {
    family = ep.family;
  }
  if (family == AF_INET || family == AF_INET6) str(o, "ip");
  else if (family == AF_UNIX) str(o, "unix");
}
void x_fd_l4proto(const X& x, const F&, E& o) noexcept {
  Endpoints ep;
  if (!endpoints(ev(x), ep)) return;
  if (ep.proto == event::L4::kTcp) str(o, "tcp");
  else if (ep.proto == event::L4::kUdp) str(o, "udp");
}
void x_fd_num(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::OpenData>()) {
    num(o, p->result >= 0 ? p->result : -1);
    return;
  }
  if (auto* p = ev(x).as<event::IoctlData>()) {
    num(o, p->fd);
    return;
  }
  if (auto* p = ev(x).as<event::DupData>()) {
    num(o, p->oldfd);
    return;
  }
  if (auto* p = ev(x).as<event::SocketData>()) {
    num(o, p->result);
    return;
  }
  if (auto* p = ev(x).as<event::InboundData>()) num(o, p->syscall == event::Syscall::kNone ? p->fd : p->result);
}
bool inet(const X& x, Endpoints& ep) noexcept {
  return endpoints(ev(x), ep) && (ep.family == AF_INET || ep.family == AF_INET6);
}
void x_fd_sip(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) ip(o, *ep.server);
}
void x_fd_cip(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) ip(o, *ep.client);
}
void x_fd_ip(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) {
    ip(o, *ep.client);
    ip(o, *ep.server);
  }
}
void x_fd_sport(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) num(o, ep.sport);
}
void x_fd_cport(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) num(o, ep.cport);
}
void x_fd_port(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) {
    num(o, ep.cport);
    num(o, ep.sport);
  }
}
// fd.lip/rip/lport/rport/lnet/rnet: the local end is the client of an
// outbound connection and the server of an inbound one.
void x_fd_lip(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) ip(o, ep.inbound ? *ep.server : *ep.client);
}
void x_fd_rip(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep) && !(ep.inbound && ep.cport == 0)) ip(o, ep.inbound ? *ep.client : *ep.server);
}
void x_fd_lport(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep)) num(o, ep.inbound ? ep.sport : ep.cport);
}
void x_fd_rport(const X& x, const F&, E& o) noexcept {
  if (Endpoints ep; inet(x, ep) && !(ep.inbound && ep.cport == 0)) num(o, ep.inbound ? ep.cport : ep.sport);
}
void x_fd_cip_name(const X& x, const F&, E& o) noexcept {
  Endpoints ep;
  if (!inet(x, ep) || !x.ctx->state) return;
  auto n = x.ctx->state->dns_name_for(*x.ctx, *ep.client);
  if (!n.empty()) str(o, n);
}
void x_fd_connected(const X& x, const F&, E& o) noexcept {
  if (auto* c = ev(x).as<event::ConnectData>(); c && c->proto == event::L4::kTcp) boolean(o, true);
  else if (ev(x).as<event::PayloadData>()) boolean(o, true);
}
void x_fd_name_changed(const X& x, const F&, E& o) noexcept {
  // A connect (or unconnected send) gives the socket its tuple.
  if (ev(x).as<event::ConnectData>()) boolean(o, true);
}
void x_fd_sip_name(const X& x, const F&, E& o) noexcept {
  Endpoints ep;
  if (!inet(x, ep) || !x.ctx->state) return;
  auto n = x.ctx->state->dns_name_for(*x.ctx, *ep.server);
  if (!n.empty()) str(o, n);
}

}  // namespace

void x_egress_bytes(const X& x, const F&, E& o) noexcept {
  if (auto* g = ev(x).as<event::EgressData>()) num(o, static_cast<std::int64_t>(g->bytes));
}
void x_egress_packets(const X& x, const F&, E& o) noexcept {
  if (auto* g = ev(x).as<event::EgressData>()) num(o, static_cast<std::int64_t>(g->packets));
}
void x_egress_window_bytes(const X& x, const F&, E& o) noexcept {
  if (auto* g = ev(x).as<event::EgressData>()) num(o, static_cast<std::int64_t>(g->window_bytes));
}
void x_egress_window_s(const X& x, const F&, E& o) noexcept {
  if (auto* g = ev(x).as<event::EgressData>()) num(o, static_cast<std::int64_t>(g->window_ns / 1000000000ULL));
}

void append_fd_fields(std::vector<FieldDef>& fields) {
  using T = FieldType;
  using A = ArgMode;
  fields.insert(
      fields.end(),
      {
          {"fd.name", T::kString, A::kNone, false,
           "open, openat, openat2, creat, connect, sendto, "
           "sendmsg, payload",
           "File path (of an open: resolved; as given when the open failed), or the connection tuple "
           "cip:cport->sip:sport.",
           x_fd_name},
          {"fd.nameraw", T::kString, A::kNone, false, kOpenEv, "The path as given to the call (not normalised).",
           x_fd_nameraw},
          {"fd.directory", T::kString, A::kNone, false, kOpenEv, "Directory of the opened file.", x_fd_directory},
          {"fd.filename", T::kString, A::kNone, false, kOpenEv, "Base name of the opened file.", x_fd_filename},
          {"fd.type", T::kString, A::kNone, false,
           "open, openat, openat2, creat, connect, sendto, "
           "sendmsg, payload, dup, accept, listen, bind",
           "file (a regular file or a device), directory, pipe, ipv4, ipv6 or unix.", x_fd_type},
          {"fd.typechar", T::kString, A::kNone, false,
           "open, openat, openat2, creat, connect, sendto, "
           "sendmsg, payload, dup, accept, listen, bind",
           "f (a regular file or a device), d (directory), p (pipe), 4, 6 or u.", x_fd_typechar},
          {"fd.l4proto", T::kString, A::kNone, false, kNetEv, "tcp or udp.", x_fd_l4proto},
          {"fd.sockfamily", T::kString, A::kNone, false,
           "connect, sendto, sendmsg, payload, dup, accept, "
           "listen, bind, socket",
           "Socket family: ip (IPv4 or IPv6) or unix.", x_fd_sockfamily},
          {"fd.num", T::kInt, A::kNone, false,
           "open, openat, openat2, creat, ioctl, dup, socket, accept, "
           "listen, bind",
           "File descriptor number (-1 for a failed open; dup: the old fd; socket, accept: the new one).", x_fd_num},
          {"fd.sip", T::kIp, A::kNone, false, kNetEv, "Server (destination) IP address.", x_fd_sip},
          {"fd.rip", T::kIp, A::kNone, false, kNetEv,
           "Remote IP address (the server of an outbound connection, the client of an accepted one).", x_fd_rip},
          {"fd.cip", T::kIp, A::kNone, false, kNetEv, "Client (source) IP address.", x_fd_cip},
          {"fd.lip", T::kIp, A::kNone, false, kNetEv,
           "Local IP address (the client of an outbound connection, the server of an accepted one).", x_fd_lip},
          {"fd.ip", T::kIp, A::kNone, true, kNetEv, "Either IP address of the connection.", x_fd_ip},
          {"fd.net", T::kIp, A::kNone, true, kNetEv, "Either IP address, compared with networks (CIDR).", x_fd_ip},
          {"fd.snet", T::kIp, A::kNone, false, kNetEv, "Server IP address, compared with networks (CIDR).", x_fd_sip},
          {"fd.rnet", T::kIp, A::kNone, false, kNetEv, "Remote IP address, compared with networks (CIDR).", x_fd_rip},
          {"fd.cnet", T::kIp, A::kNone, false, kNetEv, "Client IP address, compared with networks (CIDR).", x_fd_cip},
          {"fd.lnet", T::kIp, A::kNone, false, kNetEv, "Local IP address, compared with networks (CIDR).", x_fd_lip},
          {"fd.sport", T::kInt, A::kNone, false, kNetEv, "Server (destination) port.", x_fd_sport},
          {"fd.rport", T::kInt, A::kNone, false, kNetEv,
           "Remote port (the server's for an outbound connection, the client's for an accepted one).", x_fd_rport},
          {"fd.cport", T::kInt, A::kNone, false, kNetEv, "Client (source) port.", x_fd_cport},
          {"fd.lport", T::kInt, A::kNone, false, kNetEv,
           "Local port (the client's for an outbound connection, the server's for an accepted or listening "
           "one).",
           x_fd_lport},
          {"fd.port", T::kInt, A::kNone, true, kNetEv, "Either port of the connection.", x_fd_port},
          {"fd.connected", T::kBool, A::kNone, false, kNetEv,
           "The socket is connected (TCP connects; unknown for UDP).", x_fd_connected},
          {"fd.name_changed", T::kBool, A::kNone, false, kNetEv,
           "The event gave the socket its address tuple (every connect event).", x_fd_name_changed},
          {"fd.sip.name", T::kString, A::kNone, false, kNetEv,
           "The DNS name this pod resolved to the server IP, where seen.", x_fd_sip_name},
          {"net.egress.bytes", T::kUint, A::kNone, false, "egress",
           "Bytes the container sent to the destination (fd.sip, fd.sport, fd.l4proto) in this report's "
           "interval (sensor.egress_interval_ms): IP packet lengths, headers included.",
           x_egress_bytes},
          {"net.egress.packets", T::kUint, A::kNone, false, "egress", "Packets behind net.egress.bytes.",
           x_egress_packets},
          {"net.egress.window_bytes", T::kUint, A::kNone, false, "egress",
           "Bytes the container sent to the destination within the last net.egress.window_s seconds, this "
           "report's included: the figure a per-window budget compares.",
           x_egress_window_bytes},
          {"net.egress.window_s", T::kUint, A::kNone, false, "egress",
           "The window of net.egress.window_bytes, in seconds (sensor.egress_window_s).", x_egress_window_s},
          {"fd.rip.name", T::kString, A::kNone, false, kNetEv,
           "The DNS name this pod resolved to the remote IP, where seen.", x_fd_sip_name},
          {"fd.cip.name", T::kString, A::kNone, false, kNetEv,
           "The DNS name this pod resolved to the client IP, where seen.", x_fd_cip_name},
          {"fd.lip.name", T::kString, A::kNone, false, kNetEv,
           "The DNS name this pod resolved to the local IP, where seen.", x_fd_cip_name},
      });
}

}  // namespace vigil::rules
