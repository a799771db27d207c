// RFC 5424 delivery to a real rsyslogd over TCP (octet counting) and UDP on
// loopback. The test writes rsyslog's configuration (ephemeral ports, an
// output file with a template that shows each field), starts the daemon,
// sends through the Router, and reads back what rsyslog wrote.
// Label: integration (needs the rsyslog package's daemon).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "outputs/router.h"
#include "tests/outputs/peer_util.h"
#include "tests/outputs/test_alert.h"

namespace vigil::outputs {
namespace {

using namespace std::chrono_literals;

class Rsyslog : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string bin = testing::find_program("rsyslogd");
    if (bin.empty()) GTEST_SKIP() << "rsyslogd is not installed (apt-get install rsyslog)";
    dir_ = testing::temp_dir("rsyslog");
    tcp_ = testing::free_port(SOCK_STREAM);
    udp_ = testing::free_port(SOCK_DGRAM);
    std::ofstream(dir_ + "/rsyslog.conf")
        << "global(workDirectory=\"" << dir_ << "\")\n"
        << "module(load=\"imtcp\")\nmodule(load=\"imudp\")\n"
        << "input(type=\"imtcp\" port=\"" << tcp_ << "\" address=\"127.0.0.1\")\n"
        << "input(type=\"imudp\" port=\"" << udp_ << "\" address=\"127.0.0.1\")\n"
        << "template(name=\"fields\" type=\"string\" string=\"%pri%\\t%hostname%\\t%app-name%"
           "\\t%msgid%\\t%structured-data%\\t%msg%\\n\")\n"
        << "*.* action(type=\"omfile\" file=\"" << dir_ << "/out.log\" template=\"fields\")\n";
    daemon_ =
        testing::Child({bin, "-n", "-f", dir_ + "/rsyslog.conf", "-i", dir_ + "/rsyslog.pid"}, dir_ + "/rsyslogd.log");
    ASSERT_TRUE(testing::wait_until([&] { return testing::tcp_port_open(tcp_); }, 10s))
        << "rsyslogd did not start: " << testing::slurp(dir_ + "/rsyslogd.log.err");
  }
  void TearDown() override {
    daemon_.stop();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::vector<std::vector<std::string>> wait_lines(std::size_t n) {
    std::vector<std::string> lines;
    testing::wait_until(
        [&] {
          lines = testing::split_lines(testing::slurp(dir_ + "/out.log"));
          return lines.size() >= n;
        },
        10s);
    std::vector<std::vector<std::string>> out;
    for (const auto& l : lines) {
      std::vector<std::string> f;
      std::size_t s = 0;
      for (;;) {
        const auto e = l.find('\t', s);
        f.push_back(l.substr(s, e == std::string::npos ? std::string::npos : e - s));
        if (e == std::string::npos) break;
        s = e + 1;
      }
      out.push_back(f);
    }
    return out;
  }

  void send_through(const std::string& scheme, std::uint16_t port) {
    const std::string cfg = "[{type: syslog, address: '" + scheme + "://127.0.0.1:" + std::to_string(port) +
                            "', framing: rfc5424, facility: local3," + " app_name: vigil-test, format: json}]";
    auto r = Router::from_config(YAML::Load(cfg), testing::router_options("h"));
    ASSERT_TRUE(r) << r.error().message;
    for (int i = 0; i < 5; ++i) {
      auto a = testing::golden_alert();
      a.uuid = "u" + std::to_string(i);
      // Hostile values: try to close the SD element and start a new record.
      a.rule = "evil\"] [x@1 a=\"b\"]\n<13>1 - forged";
      a.output = "line1\nline2 \x1b[31m";
      (*r)->publish(std::make_shared<const event::Alert>(a));
    }
    (*r)->shutdown(5s);
    EXPECT_EQ((*r)->stats()[0].sent, 5u);
  }

  void check(const std::vector<std::vector<std::string>>& lines) {
    ASSERT_EQ(lines.size(), 5u);  // no forged record
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const auto& f = lines[i];
      ASSERT_EQ(f.size(), 6u);
      EXPECT_EQ(f[0], std::to_string(19 * 8 + 2));  // local3.crit
      EXPECT_EQ(f[1], "gpu-node-1");
      EXPECT_EQ(f[2], "vigil-test");
      EXPECT_EQ(f[3], "alert");
      EXPECT_EQ(f[4],
                "[vigil@32473 rule=\"evil\\\"\\] [x@1 a=\\\"b\\\"\\]\xEF\xBF\xBD<13>1 - forged\" "
                "priority=\"Critical\" uuid=\"u" +
                    std::to_string(i) + "\"]");
      const auto j = nlohmann::json::parse(f[5]);
      EXPECT_EQ(j["uuid"], "u" + std::to_string(i));
      EXPECT_EQ(j["output"], "line1\nline2 \x1b[31m");
    }
  }

  std::string dir_;
  std::uint16_t tcp_ = 0, udp_ = 0;
  testing::Child daemon_;
};

TEST_F(Rsyslog, ReceivesRfc5424OverTcp) {
  send_through("tcp", tcp_);
  check(wait_lines(5));
}

TEST_F(Rsyslog, ReceivesRfc5424OverUdp) {
  send_through("udp", udp_);
  check(wait_lines(5));
}

TEST_F(Rsyslog, TcpReconnectsAfterDaemonRestart) {
  const std::string cfg = "[{type: syslog, address: 'tcp://127.0.0.1:" + std::to_string(tcp_) +
                          "', retry: {max_attempts: 100, initial_backoff_ms: 50, max_backoff_ms: 200}}]";
  auto r = Router::from_config(YAML::Load(cfg), testing::router_options("h"));
  ASSERT_TRUE(r) << r.error().message;
  auto a = testing::golden_alert();
  a.uuid = "before";
  (*r)->publish(std::make_shared<const event::Alert>(a));
  ASSERT_EQ(wait_lines(1).size(), 1u);
  daemon_.stop();
  daemon_ = testing::Child(
      {testing::find_program("rsyslogd"), "-n", "-f", dir_ + "/rsyslog.conf", "-i", dir_ + "/rsyslog.pid"},
      dir_ + "/rsyslogd.log");
  ASSERT_TRUE(testing::wait_until([&] { return testing::tcp_port_open(tcp_); }, 10s));
  a.uuid = "after";
  (*r)->publish(std::make_shared<const event::Alert>(a));
  const auto lines = wait_lines(2);
  (*r)->shutdown(2s);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(lines[1][5])["uuid"], "after");
}

}  // namespace
}  // namespace vigil::outputs
