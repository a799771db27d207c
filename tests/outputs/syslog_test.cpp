// Syslog records (RFC 5424 / 3164), hostile values in structured data, and
// delivery over loopback UDP and TCP (octet counting) with reconnects.
#include "outputs/syslog_transport.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/un.h>

#include "outputs/format.h"
#include "tests/outputs/parsers.h"
#include "tests/outputs/http_server.h"
#include "tests/outputs/peer_util.h"
#include "tests/outputs/test_alert.h"

namespace vigil::outputs {
namespace {

using namespace std::chrono_literals;

Message golden_message(Format f = Format::kJson) {
  const auto a = testing::golden_alert();
  Message m;
  m.body = format_alert(f, a);
  m.uuid = a.uuid;
  m.rule = a.rule;
  m.priority = "Critical";
  m.hostname = a.hostname;
  m.time_ns = a.time_ns;
  return m;
}

TEST(Syslog, Rfc5424Record) {
  SyslogOptions o;
  o.facility = 16;  // local0
  Message m = golden_message(Format::kCef);
  const std::string r = syslog_record(o, m, 77);
  const std::string want =
      "<130>1 2023-11-14T22:13:20.123456Z gpu-node-1 vigil 77 alert [vigil@32473 "
      "rule=\"Shell in inference pod\" priority=\"Critical\" "
      "uuid=\"7d3f5e1a-9c2b-4e8f-a1d6-0b4c8e2f9a37\"] ";
  EXPECT_EQ(r, want + m.body);
  const auto p = testing::parse_syslog5424(r);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pri, 16 * 8 + 2);
  EXPECT_EQ(p->msg, m.body);
}

TEST(Syslog, Rfc3164Record) {
  SyslogOptions o;
  o.framing = SyslogFraming::kRfc3164;
  o.facility = 4;
  Message m = golden_message(Format::kText);
  EXPECT_EQ(syslog_record(o, m, 9), "<34>Nov 14 22:13:20 gpu-node-1 vigil[9]: " + m.body);
}

TEST(Syslog, HostileValuesCannotBreakStructuredData) {
  SyslogOptions o;
  for (std::string v :
       {std::string("a\"] [evil@1 x=\"y"), std::string("back\\slash]"), std::string("new\nline\r\0nul", 14),
        std::string("\xFF\xC2\x9B"), std::string("host name\twith spaces")}) {
    Message m = golden_message();
    m.rule = v;
    m.uuid = v;
    m.hostname = v;
    const std::string r = syslog_record(o, m, 1);
    EXPECT_EQ(r.find('\n'), std::string::npos);
    EXPECT_EQ(r.find('\r'), std::string::npos);
    EXPECT_EQ(r.find('\0'), std::string::npos);
    const auto p = testing::parse_syslog5424(r);
    ASSERT_TRUE(p) << r;
    EXPECT_EQ(p->sd.size(), 3u);
    EXPECT_EQ(p->sd.at("rule"), testing::sd_expected(v));
    EXPECT_EQ(p->sd.at("uuid"), testing::sd_expected(v));
    EXPECT_EQ(p->hostname.find(' '), std::string::npos);
    EXPECT_EQ(p->msg, m.body);
  }
}

TEST(Syslog, ParsesAddresses) {
  SyslogOptions o;
  ASSERT_TRUE(parse_syslog_address("tcp://127.0.0.1:5514", o));
  EXPECT_EQ(o.protocol, SyslogProtocol::kTcp);
  EXPECT_EQ(o.port, 5514);
  ASSERT_TRUE(parse_syslog_address("tls://siem.example", o));
  EXPECT_EQ(o.port, 6514);
  ASSERT_TRUE(parse_syslog_address("udp://[::1]:600", o));
  EXPECT_EQ(o.host, "::1");
  EXPECT_EQ(o.port, 600);
  ASSERT_TRUE(parse_syslog_address("unix:///dev/log", o));
  EXPECT_EQ(o.path, "/dev/log");
  EXPECT_FALSE(parse_syslog_address("tcp://h:0", o));
  EXPECT_FALSE(parse_syslog_address("http://h:1", o));
  EXPECT_FALSE(parse_syslog_address("tcp://:1", o));
  EXPECT_EQ(syslog_facility_from_name("local7"), 23);
  EXPECT_FALSE(syslog_facility_from_name("local9"));
}

// A TCP listener that reads octet-counted frames, one connection at a time.
class FrameServer {
 public:
  FrameServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
    ::listen(fd_, 4);
    socklen_t len = sizeof(sa);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port_ = ntohs(sa.sin_port);
  }
  ~FrameServer() { ::close(fd_); }
  std::uint16_t port() const { return port_; }
  // Accepts one connection and reads `n` frames (then closes it).
  std::vector<std::string> read_frames(std::size_t n) {
    std::vector<std::string> out;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) return out;
    const int c = ::accept(fd_, nullptr, nullptr);
    std::string buf;
    char tmp[4096];
    while (out.size() < n) {
      // Parse complete frames out of buf.
      const auto sp = buf.find(' ');
      if (sp != std::string::npos) {
        const std::size_t len = std::stoul(buf.substr(0, sp));
        if (buf.size() >= sp + 1 + len) {
          out.push_back(buf.substr(sp + 1, len));
          buf.erase(0, sp + 1 + len);
          continue;
        }
      }
      pollfd q{c, POLLIN, 0};
      if (::poll(&q, 1, 5000) != 1) break;
      const ssize_t k = ::read(c, tmp, sizeof(tmp));
      if (k <= 0) break;
      buf.append(tmp, static_cast<std::size_t>(k));
    }
    ::close(c);
    return out;
  }

 private:
  int fd_;
  std::uint16_t port_;
};

TEST(SyslogTransport, TcpOctetCountingAndReconnect) {
  testing::block_sigpipe_in_this_thread();  // as on a sink's worker
  FrameServer server;
  SyslogOptions o;
  ASSERT_TRUE(parse_syslog_address("tcp://127.0.0.1:" + std::to_string(server.port()), o));
  auto t = SyslogTransport::create(o);
  ASSERT_TRUE(t);
  std::vector<Message> batch;
  for (int i = 0; i < 3; ++i) {
    Message m = golden_message();
    m.body = "body " + std::to_string(i) + " with\nnewline-free json";
    m.uuid = std::to_string(i);
    batch.push_back(m);
  }
  std::vector<std::string> frames;
  std::thread reader([&] { frames = server.read_frames(3); });
  EXPECT_EQ((*t)->send(batch).code, SendCode::kOk);
  reader.join();
  ASSERT_EQ(frames.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const auto p = testing::parse_syslog5424(frames[i]);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->sd.at("uuid"), std::to_string(i));
  }
  // The server closed the connection; the next send reconnects.
  std::this_thread::sleep_for(50ms);
  std::thread reader2([&] { frames = server.read_frames(1); });
  SendResult r = (*t)->send(std::span<const Message>(batch.data(), 1));
  if (r.code != SendCode::kOk) r = (*t)->send(std::span<const Message>(batch.data(), 1));
  EXPECT_EQ(r.code, SendCode::kOk) << r.error;
  reader2.join();
  EXPECT_EQ(frames.size(), 1u);
}

TEST(SyslogTransport, RefusedConnectionIsRetry) {
  SyslogOptions o;
  ASSERT_TRUE(parse_syslog_address("tcp://127.0.0.1:" + std::to_string(testing::free_port()), o));
  auto t = SyslogTransport::create(o);
  ASSERT_TRUE(t);
  std::vector<Message> b = {golden_message()};
  const SendResult r = (*t)->send(b);
  EXPECT_EQ(r.code, SendCode::kRetry);
  EXPECT_NE(r.error.find("connect"), std::string::npos);
  EXPECT_EQ(r.error_class, ErrorClass::kConnect);
}

TEST(SyslogTransport, UdpOneDatagramPerRecord) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  SyslogOptions o;
  ASSERT_TRUE(parse_syslog_address("udp://127.0.0.1:" + std::to_string(ntohs(sa.sin_port)), o));
  auto t = SyslogTransport::create(o);
  ASSERT_TRUE(t);
  std::vector<Message> b = {golden_message(), golden_message()};
  ASSERT_EQ((*t)->send(b).code, SendCode::kOk);
  for (int i = 0; i < 2; ++i) {
    char buf[70000];
    pollfd p{fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 2000), 1);
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    ASSERT_GT(n, 0);
    const auto rec = testing::parse_syslog5424(std::string(buf, static_cast<std::size_t>(n)));
    ASSERT_TRUE(rec);
    EXPECT_EQ(nlohmann::json::parse(rec->msg)["uuid"], b[0].uuid);
  }
  ::close(fd);
}

TEST(SyslogTransport, OversizedDatagramIsRejectedAloneOthersSent) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  SyslogOptions o;
  ASSERT_TRUE(parse_syslog_address("udp://127.0.0.1:" + std::to_string(ntohs(sa.sin_port)), o));
  auto t = SyslogTransport::create(o);
  ASSERT_TRUE(t);
  std::vector<Message> b = {golden_message(), golden_message(), golden_message()};
  b[1].body = std::string(70000, 'x');
  const SendResult r = (*t)->send(b);
  EXPECT_EQ(r.code, SendCode::kFatal);
  EXPECT_EQ(r.delivered, 1u);
  EXPECT_EQ(r.rejected, 1u);
  EXPECT_EQ(r.error_class, ErrorClass::kRejected);
  ::close(fd);
}

TEST(SyslogTransport, UnixDatagramSocket) {
  const std::string dir = testing::temp_dir("devlog");
  const std::string path = dir + "/log";
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  SyslogOptions o;
  ASSERT_TRUE(parse_syslog_address("unix://" + path, o));
  o.framing = SyslogFraming::kRfc3164;
  auto t = SyslogTransport::create(o);
  ASSERT_TRUE(t);
  std::vector<Message> b = {golden_message(Format::kText)};
  ASSERT_EQ((*t)->send(b).code, SendCode::kOk);
  char buf[8192];
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 2000), 1);
  const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<std::size_t>(n)),
            "<10>Nov 14 22:13:20 gpu-node-1 vigil[" + std::to_string(getpid()) + "]: " + b[0].body);
  ::close(fd);
  std::filesystem::remove_all(dir);
}

TEST(SyslogTransport, TlsWithPrivateCa) {
  testing::block_sigpipe_in_this_thread();  // as on a sink's worker
  const std::string dir = testing::temp_dir("syslog-pki");
  if (!testing::make_test_pki(dir)) GTEST_SKIP() << "openssl could not make a test CA";
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  ASSERT_EQ(SSL_CTX_use_certificate_chain_file(ctx, (dir + "/server.crt").c_str()), 1);
  ASSERT_EQ(SSL_CTX_use_PrivateKey_file(ctx, (dir + "/server.key").c_str(), SSL_FILETYPE_PEM), 1);
  const int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ::listen(lfd, 4);
  socklen_t len = sizeof(sa);
  getsockname(lfd, reinterpret_cast<sockaddr*>(&sa), &len);
  std::string got;
  std::thread server([&] {
    testing::block_sigpipe_in_this_thread();  // the client hanging up must not kill the test
    const int c = ::accept(lfd, nullptr, nullptr);
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, c);
    if (SSL_accept(ssl) == 1) {
      char buf[8192];
      int n;
      while ((n = SSL_read(ssl, buf, sizeof(buf))) > 0) got.append(buf, static_cast<std::size_t>(n));
    }
    SSL_free(ssl);
    ::close(c);
  });
  SyslogOptions o;
  ASSERT_TRUE(parse_syslog_address("tls://localhost:" + std::to_string(ntohs(sa.sin_port)), o));
  o.ca_file = dir + "/ca.crt";
  {
    auto t = SyslogTransport::create(o);
    ASSERT_TRUE(t) << t.error().message;
    std::vector<Message> b = {golden_message()};
    EXPECT_EQ((*t)->send(b).code, SendCode::kOk);
    (*t)->close();
  }
  server.join();
  const auto sp = got.find(' ');
  ASSERT_NE(sp, std::string::npos);
  EXPECT_EQ(std::stoul(got.substr(0, sp)), got.size() - sp - 1);  // one octet-counted frame
  const auto p = testing::parse_syslog5424(got.substr(sp + 1));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->sd.at("uuid"), "7d3f5e1a-9c2b-4e8f-a1d6-0b4c8e2f9a37");
  ::close(lfd);
  SSL_CTX_free(ctx);
  std::filesystem::remove_all(dir);
}

TEST(SyslogTransport, TlsRejectsAnUntrustedServer) {
  testing::block_sigpipe_in_this_thread();  // as on a sink's worker
  const std::string dir = testing::temp_dir("syslog-pki2");
  if (!testing::make_test_pki(dir)) GTEST_SKIP() << "openssl could not make a test CA";
  testing::HttpServer server(dir + "/server.crt", dir + "/server.key");  // any TLS listener
  SyslogOptions o;
  ASSERT_TRUE(parse_syslog_address("tls://localhost:" + std::to_string(server.port()), o));
  o.ca_file = dir + "/client.crt";  // not the CA that signed the server
  auto t = SyslogTransport::create(o);
  ASSERT_TRUE(t);
  std::vector<Message> b = {golden_message()};
  const SendResult r = (*t)->send(b);
  EXPECT_EQ(r.code, SendCode::kRetry);
  EXPECT_NE(r.error.find("tls"), std::string::npos) << r.error;
  EXPECT_EQ(r.error_class, ErrorClass::kTls);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vigil::outputs
