#include "outputs/syslog_transport.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "engine/event/alert.h"
#include "outputs/format.h"

namespace vigil::outputs {
namespace {

constexpr std::size_t kMaxDatagram = 65000;

struct FacilityName {
  std::string_view name;
  int code;
};
constexpr FacilityName kFacilities[] = {
    {"kern", 0},    {"user", 1},    {"mail", 2},    {"daemon", 3},    {"auth", 4},    {"syslog", 5},  {"lpr", 6},
    {"news", 7},    {"uucp", 8},    {"cron", 9},    {"authpriv", 10}, {"ftp", 11},    {"local0", 16}, {"local1", 17},
    {"local2", 18}, {"local3", 19}, {"local4", 20}, {"local5", 21},   {"local6", 22}, {"local7", 23},
};

// Printable US-ASCII (33..126), at most `max` characters, "-" when empty.
std::string printable(std::string_view s, std::size_t max) {
  std::string out;
  for (char c : s) {
    if (out.size() >= max) break;
    out += (c >= 33 && c <= 126) ? c : '_';
  }
  return out.empty() ? "-" : out;
}

int severity_of(const std::string& priority) {
  const auto p = event::priority_from_name(priority);
  return p ? static_cast<int>(*p) : static_cast<int>(event::Priority::kWarning);
}

std::string ssl_error() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "TLS error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

}  // namespace

struct SyslogTransport::Tls {
  SSL_CTX* ctx = nullptr;
  SSL* ssl = nullptr;
  ~Tls() {
    if (ssl) SSL_free(ssl);
    if (ctx) SSL_CTX_free(ctx);
  }
};

std::optional<int> syslog_facility_from_name(std::string_view name) {
  for (const auto& f : kFacilities) {
    if (f.name == name) return f.code;
  }
  if (!name.empty() && name.size() <= 2 &&
      std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const int v = std::stoi(std::string(name));
    if (v <= 23) return v;
  }
  return std::nullopt;
}

Status parse_syslog_address(std::string_view address, SyslogOptions& o) {
  const auto sep = address.find("://");
  if (sep == std::string_view::npos) {
    return Error::bad_input("expected udp://HOST:PORT, tcp://HOST:PORT, tls://HOST:PORT or unix:///PATH");
  }
  const std::string_view scheme = address.substr(0, sep);
  std::string_view rest = address.substr(sep + 3);
  if (scheme == "unix") {
    if (rest.empty() || rest[0] != '/') return Error::bad_input("unix:// needs an absolute path");
    if (rest.size() >= sizeof(sockaddr_un::sun_path)) return Error::bad_input("unix path too long");
    o.protocol = SyslogProtocol::kUnix;
    o.path = std::string(rest);
    return {};
  }
  if (scheme == "udp") {
    o.protocol = SyslogProtocol::kUdp;
    o.port = 514;
  } else if (scheme == "tcp") {
    o.protocol = SyslogProtocol::kTcp;
    o.port = 514;
  } else if (scheme == "tls") {
    o.protocol = SyslogProtocol::kTls;
    o.port = 6514;
  } else {
    return Error::bad_input("unknown scheme '" + std::string(scheme) + "'");
  }
  std::string_view host = rest;
  std::string_view port;
  if (!rest.empty() && rest[0] == '[') {
    const auto close = rest.find(']');
    if (close == std::string_view::npos) return Error::bad_input("unbalanced [ in address");
    host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return Error::bad_input("expected :PORT after ]");
      port = rest.substr(close + 2);
    }
  } else if (const auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (host.empty()) return Error::bad_input("missing host");
  if (!port.empty()) {
    int p = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || p > 65535) return Error::bad_input("bad port");
      p = p * 10 + (c - '0');
    }
    if (p < 1 || p > 65535) return Error::bad_input("bad port");
    o.port = static_cast<std::uint16_t>(p);
  }
  o.host = std::string(host);
  return {};
}

std::string syslog_sd_escape(std::string_view s) {
  const std::string clean = sanitize_utf8(s);
  std::string out;
  out.reserve(clean.size());
  for (std::size_t i = 0; i < clean.size(); ++i) {
    const auto c = static_cast<unsigned char>(clean[i]);
    if (c == '"' || c == '\\' || c == ']') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      out += "\xEF\xBF\xBD";
    } else if (c == 0xC2 && i + 1 < clean.size() && static_cast<unsigned char>(clean[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(clean[i + 1]) <= 0x9F) {
      out += "\xEF\xBF\xBD";  // C1 control
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string syslog_record(const SyslogOptions& o, const Message& m, int procid) {
  const int pri = o.facility * 8 + severity_of(m.priority);
  std::string out = "<" + std::to_string(pri) + ">";
  const auto secs = static_cast<std::time_t>(m.time_ns / 1000000000ULL);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char ts[64];
  if (o.framing == SyslogFraming::kRfc5424) {
    std::snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<unsigned>((m.time_ns % 1000000000ULL) / 1000));
    out += "1 ";
    out += ts;
    out += ' ';
    out += printable(m.hostname, 255);
    out += ' ';
    out += printable(o.app_name, 48);
    out += ' ';
    out += std::to_string(procid);
    out += " alert [vigil@32473 rule=\"";
    out += syslog_sd_escape(m.rule);
    out += "\" priority=\"";
    out += syslog_sd_escape(m.priority);
    out += "\" uuid=\"";
    out += syslog_sd_escape(m.uuid);
    out += "\"] ";
  } else {
    static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    std::snprintf(ts, sizeof(ts), "%s %2d %02d:%02d:%02d", kMonths[tm.tm_mon % 12], tm.tm_mday, tm.tm_hour, tm.tm_min,
                  tm.tm_sec);
    out += ts;
    out += ' ';
    out += printable(m.hostname, 255);
    out += ' ';
    out += printable(o.app_name, 32);
    out += '[' + std::to_string(procid) + "]: ";
  }
  out += m.body;
  return out;
}

SyslogTransport::SyslogTransport(SyslogOptions o) : o_(std::move(o)), pid_(getpid()) {}

Result<std::unique_ptr<SyslogTransport>> SyslogTransport::create(SyslogOptions o) {
  std::unique_ptr<SyslogTransport> t(new SyslogTransport(std::move(o)));
  if (t->o_.protocol == SyslogProtocol::kTls) {
    t->tls_ = std::make_unique<Tls>();
    t->tls_->ctx = SSL_CTX_new(TLS_client_method());
    if (!t->tls_->ctx) return Error::runtime("syslog tls: " + ssl_error());
    SSL_CTX_set_min_proto_version(t->tls_->ctx, TLS1_2_VERSION);
    if (!t->o_.ca_file.empty()) {
      if (SSL_CTX_load_verify_locations(t->tls_->ctx, t->o_.ca_file.c_str(), nullptr) != 1) {
        return Error::bad_input("syslog tls ca_file " + t->o_.ca_file + ": " + ssl_error());
      }
    } else {
      SSL_CTX_set_default_verify_paths(t->tls_->ctx);
    }
    if (!t->o_.cert_file.empty()) {
      if (SSL_CTX_use_certificate_chain_file(t->tls_->ctx, t->o_.cert_file.c_str()) != 1 ||
          SSL_CTX_use_PrivateKey_file(t->tls_->ctx, (t->o_.key_file.empty() ? t->o_.cert_file : t->o_.key_file).c_str(),
                                      SSL_FILETYPE_PEM) != 1) {
        return Error::bad_input("syslog tls client certificate: " + ssl_error());
      }
    }
    SSL_CTX_set_verify(t->tls_->ctx, t->o_.tls_verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
  }
  return t;
}

SyslogTransport::~SyslogTransport() { disconnect(); }

void SyslogTransport::disconnect() {
  if (tls_ && tls_->ssl) {
    SSL_free(tls_->ssl);
    tls_->ssl = nullptr;
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void SyslogTransport::close() noexcept {
  if (tls_ && tls_->ssl) SSL_shutdown(tls_->ssl);
  disconnect();
}

Status SyslogTransport::connect() {
  disconnect();
  if (o_.protocol == SyslogProtocol::kUnix) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return Error::runtime(std::string("socket: ") + std::strerror(errno));
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, o_.path.c_str(), o_.path.size() + 1);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
      const std::string err = std::strerror(errno);
      disconnect();
      return Error::runtime("connect " + o_.path + ": " + err);
    }
    return {};
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = o_.protocol == SyslogProtocol::kUdp ? SOCK_DGRAM : SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(o_.port);
  if (const int rc = getaddrinfo(o_.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return Error::runtime("resolve " + o_.host + ": " + gai_strerror(rc));
  }
  std::string err = "no address";
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    fd_ = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) continue;
    int rc = ::connect(fd_, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd_, POLLOUT, 0};
      rc = ::poll(&p, 1, static_cast<int>(o_.timeout.count()));
      int so_err = 0;
      socklen_t len = sizeof(so_err);
      if (rc == 1 && getsockopt(fd_, SOL_SOCKET, SO_ERROR, &so_err, &len) == 0 && so_err == 0) {
        rc = 0;
      } else {
        errno = rc == 0 ? ETIMEDOUT : (so_err ? so_err : errno);
        rc = -1;
      }
    }
    if (rc == 0) break;
    err = std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
  }
  freeaddrinfo(res);
  if (fd_ < 0) return Error::runtime("connect " + o_.host + ":" + port + ": " + err);
  // Back to blocking with timeouts: the worker is the only user of this socket.
  fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  timeval tv{static_cast<time_t>(o_.timeout.count() / 1000),
             static_cast<suseconds_t>((o_.timeout.count() % 1000) * 1000)};
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (o_.protocol == SyslogProtocol::kTcp || o_.protocol == SyslogProtocol::kTls) {
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  if (o_.protocol == SyslogProtocol::kTls) {
    tls_->ssl = SSL_new(tls_->ctx);
    const std::string& name = o_.server_name.empty() ? o_.host : o_.server_name;
    SSL_set_tlsext_host_name(tls_->ssl, name.c_str());
    if (o_.tls_verify) SSL_set1_host(tls_->ssl, name.c_str());
    SSL_set_fd(tls_->ssl, fd_);
    if (SSL_connect(tls_->ssl) != 1) {
      const std::string e = ssl_error();
      disconnect();
      return Error::runtime("tls handshake with " + o_.host + ": " + e);
    }
  }
  return {};
}

bool SyslogTransport::peer_closed() {
  if (o_.protocol != SyslogProtocol::kTcp && o_.protocol != SyslogProtocol::kTls) return false;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR)) return true;
  char c;
  const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0;  // orderly close; data (e.g. a TLS alert) is left for SSL
}

bool SyslogTransport::write_all(std::string_view data) {
  while (!data.empty()) {
    if (tls_ && tls_->ssl) {
      const int n = SSL_write(tls_->ssl, data.data(), static_cast<int>(data.size()));
      if (n <= 0) return false;
      data.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

SendResult SyslogTransport::send(std::span<const Message> batch) noexcept {
  try {
    if (fd_ >= 0 && peer_closed()) disconnect();
    if (fd_ < 0) {
      if (Status st = connect(); !st) {
        const std::string& e = st.error().message;
        return SendResult::retry(e).with_class(e.rfind("tls", 0) == 0 ? ErrorClass::kTls
                                               : e.find(std::strerror(ETIMEDOUT)) != std::string::npos
                                                   ? ErrorClass::kTimeout
                                                   : ErrorClass::kConnect);
      }
    }
    const bool stream = o_.protocol == SyslogProtocol::kTcp || o_.protocol == SyslogProtocol::kTls;
    std::string buf;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const std::string rec = syslog_record(o_, batch[i], pid_);
      if (stream) {
        buf += std::to_string(rec.size());
        buf += ' ';
        buf += rec;
        continue;
      }
      if (rec.size() > kMaxDatagram) {
        return SendResult::fatal("record of " + std::to_string(rec.size()) + " bytes is too large for a datagram", i, 1)
            .with_class(ErrorClass::kRejected);
      }
      if (::send(fd_, rec.data(), rec.size(), MSG_NOSIGNAL) < 0) {
        const std::string err = std::strerror(errno);
        disconnect();
        return SendResult::retry("syslog send: " + err, i).with_class(ErrorClass::kConnect);
      }
    }
    if (stream && !write_all(buf)) {
      const std::string err = std::strerror(errno);
      disconnect();
      return SendResult::retry("syslog write: " + err).with_class(ErrorClass::kConnect);
    }
    return SendResult::ok(batch.size());
  } catch (...) {
    return SendResult::retry("out of memory");
  }
}

}  // namespace vigil::outputs
