// dns.* and conn.*: DNS packets and the first bytes of new outbound TCP
// connections.
#include <string_view>
#include <vector>

#include "engine/rules/field_extractors.h"

namespace vigil::rules {

using namespace fx;

namespace {

void x_dns_name(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::DnsData>(); p && !p->name.empty()) str(o, p->name);
}
void x_dns_type(const X& x, const F&, E& o) noexcept {
  auto* p = ev(x).as<event::DnsData>();
  if (!p) return;
  switch (p->qtype) {
    case 1: str(o, "A"); return;
    case 2: str(o, "NS"); return;
    case 5: str(o, "CNAME"); return;
    case 6: str(o, "SOA"); return;
    case 12: str(o, "PTR"); return;
    case 15: str(o, "MX"); return;
    case 16: str(o, "TXT"); return;
    case 28: str(o, "AAAA"); return;
    case 33: str(o, "SRV"); return;
    case 65: str(o, "HTTPS"); return;
    case 255: str(o, "ANY"); return;
    default: {
      Arena& a = *x.arena;
      a.begin();
      a.append("TYPE");
      a.append_uint(p->qtype);
      str(o, a.finish());
    }
  }
}
void x_dns_rcode(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::DnsData>(); p && p->is_response) num(o, p->rcode);
}
void x_dns_answers(const X& x, const F&, E& o) noexcept {
  auto* p = ev(x).as<event::DnsData>();
  if (!p) return;
  Arena& a = *x.arena;
  for (const auto& ans : p->answers) {
    if (o.n >= Extracted::kMax) break;
    a.begin();
    append_ip(a, ans);
    str(o, a.finish());
  }
}
void x_dns_response(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::DnsData>()) boolean(o, p->is_response);
}
void x_dns_server(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::DnsData>()) ip(o, p->server);
}
void x_payload(const X& x, const F&, E& o) noexcept {
  if (auto* p = ev(x).as<event::PayloadData>()) str(o, p->bytes);
}
bool has_sub(std::string_view h, std::string_view n) { return h.find(n) != std::string_view::npos; }
void x_protocol(const X& x, const F&, E& o) noexcept {
  auto* p = ev(x).as<event::PayloadData>();
  if (!p) return;
  std::string_view b = p->bytes;
  std::size_t i = 0;
  while (i < b.size() && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n')) ++i;
  std::string_view t = b.substr(i);
  if (!t.empty() && t[0] == '{' &&
      (has_sub(t, "mining.subscribe") || has_sub(t, "mining.authorize") || has_sub(t, "mining.extranonce") ||
       (has_sub(t, "\"login\"") && has_sub(t, "\"agent\"")) || has_sub(t, "eth_submitLogin"))) {
    str(o, "stratum");
    return;
  }
  if (b.size() >= 3 && static_cast<unsigned char>(b[0]) == 0x16 && static_cast<unsigned char>(b[1]) == 0x03) {
    str(o, "tls");
    return;
  }
  if (b.rfind("SSH-", 0) == 0) {
    str(o, "ssh");
    return;
  }
  static constexpr std::string_view kMethods[] = {"GET ",     "POST ",  "PUT ",     "HEAD ",       "DELETE ",
                                                  "OPTIONS ", "PATCH ", "CONNECT ", "PRI * HTTP/2"};
  for (auto m : kMethods) {
    if (b.rfind(m, 0) == 0) {
      str(o, "http");
      return;
    }
  }
  str(o, "unknown");
}

}  // namespace

void append_net_fields(std::vector<FieldDef>& fields) {
  using T = FieldType;
  using A = ArgMode;
  fields.insert(
      fields.end(),
      {
          {"dns.name", T::kString, A::kNone, false, "dns", "Question name, lower case, no trailing dot.", x_dns_name},
          {"dns.type", T::kString, A::kNone, false, "dns", "Question type (A, AAAA, TXT, ...).", x_dns_type},
          {"dns.rcode", T::kInt, A::kNone, false, "dns", "Response code (responses only).", x_dns_rcode},
          {"dns.answers", T::kList, A::kNone, false, "dns", "Addresses in the answer.", x_dns_answers},
          {"dns.is_response", T::kBool, A::kNone, false, "dns", "The packet is a response.", x_dns_response},
          {"dns.server", T::kIp, A::kNone, false, "dns", "The DNS server address.", x_dns_server},
          {"conn.payload", T::kString, A::kNone, false, "payload", "First bytes sent on a new outbound TCP connection.",
           x_payload},
          {"conn.protocol", T::kString, A::kNone, false, "payload",
           "Protocol guessed from the first bytes: stratum, http, tls, ssh, unknown.", x_protocol},
      });
}

}  // namespace vigil::rules
