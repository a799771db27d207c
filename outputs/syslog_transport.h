// Syslog transport: RFC 5424 or RFC 3164 records over UDP, TCP (RFC 6587
// octet counting), TLS (RFC 5425, octet counting) or a local datagram socket
// (unix:///dev/log). The alert, formatted by the sink's format, is the MSG.
//
// RFC 5424 record:
//   <PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID alert [vigil@32473 rule="..."
//   priority="..." uuid="..."] MSG
// RFC 3164 record:
//   <PRI>Mmm dd hh:mm:ss HOSTNAME APP-NAME[PROCID]: MSG
// PRI = facility * 8 + the alert's priority (Falco's levels are syslog's).
// HOSTNAME/APP-NAME keep printable ASCII only ('_' otherwise); SD values
// escape '"', '\' and ']' and replace control characters and invalid UTF-8
// with U+FFFD, so no value can close the SD element or start a record.
//
// Reconnects: a failed or closed connection is dropped and reopened on the
// next send (the sink's backoff paces the attempts).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/util/result.h"
#include "outputs/transport.h"

namespace vigil::outputs {

enum class SyslogFraming : std::uint8_t { kRfc5424, kRfc3164 };
enum class SyslogProtocol : std::uint8_t { kUdp, kTcp, kTls, kUnix };

struct SyslogOptions {
  SyslogProtocol protocol = SyslogProtocol::kUnix;
  std::string host;  // udp/tcp/tls
  std::uint16_t port = 514;
  std::string path = "/dev/log";  // unix
  SyslogFraming framing = SyslogFraming::kRfc5424;
  int facility = 1;  // 0..23 (user = 1, local0 = 16)
  std::string app_name = "vigil";
  // tls
  std::string ca_file;    // empty: system trust store
  std::string cert_file;  // client certificate (mutual TLS), optional
  std::string key_file;
  std::string server_name;  // empty: host
  bool tls_verify = true;
  std::chrono::milliseconds timeout{5000};  // connect and write
};

// "udp://h:p", "tcp://h:p", "tls://h:p", "unix:///dev/log". IPv6 as [::1]:p.
// Default ports: 514 (udp, tcp), 6514 (tls).
Status parse_syslog_address(std::string_view address, SyslogOptions& o);
// "user", "local0".."local7", "daemon", "auth", ... or a number 0..23.
std::optional<int> syslog_facility_from_name(std::string_view name);

// One record without transport framing. `procid` is the sender's pid.
std::string syslog_record(const SyslogOptions& o, const Message& m, int procid);
// SD-PARAM value escaping (RFC 5424 6.3.3) plus control/UTF-8 sanitising.
std::string syslog_sd_escape(std::string_view s);

class SyslogTransport final : public Transport {
 public:
  static Result<std::unique_ptr<SyslogTransport>> create(SyslogOptions o);
  ~SyslogTransport() override;
  SendResult send(std::span<const Message> batch) noexcept override;
  void close() noexcept override;

 private:
  struct Tls;
  explicit SyslogTransport(SyslogOptions o);
  Status connect();
  void disconnect();
  bool write_all(std::string_view data);
  bool peer_closed();

  SyslogOptions o_;
  int fd_ = -1;
  std::unique_ptr<Tls> tls_;
  int pid_;
};

}  // namespace vigil::outputs
