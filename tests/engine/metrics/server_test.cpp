#include "engine/metrics/server.h"

#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "tests/support/net.h"

namespace vigil::metrics {
namespace {

int free_port() { return support::free_port(SOCK_STREAM); }

TEST(ParseListen, AcceptsHostPortAndBracketedIpv6) {
  auto a = parse_listen("0.0.0.0:8765");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "0.0.0.0");
  EXPECT_EQ(a->port, 8765);
  auto b = parse_listen("[::1]:9000");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->port, 9000);
}

TEST(ParseListen, RefusesWhatCannotBeBoundWithAReason) {
  for (const char* bad :
       {"8765", ":8765", "0.0.0.0:", "0.0.0.0:0", "0.0.0.0:65536", "0.0.0.0:87a", "::1:8765", "[::1]8765", "[::1"}) {
    auto r = parse_listen(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find(std::string("webserver.listen '") + bad + "'"), std::string::npos)
        << r.error().message;
  }
}

TEST(Server, ServesMetricsHealthAndReadiness) {
  std::atomic<bool> healthy{true}, ready{false};
  std::atomic<int> samples{0};
  Handlers h;
  h.metrics = [] { return std::string("# HELP x y\n# TYPE x gauge\nx 1\n"); };
  h.health = [&] {
    Verdict v;
    if (!healthy) {
      v.ok = false;
      v.reasons = {"the event loop has not turned for 12 s", "source bpf failed: gone"};
    }
    return v;
  };
  h.ready = [&] {
    Verdict v;
    v.ok = ready.load();
    if (!v.ok) v.reasons = {"starting"};
    return v;
  };
  h.sample = [&] { ++samples; };
  const int port = free_port();
  auto s = Server::start({"127.0.0.1:" + std::to_string(port), nullptr}, h);
  ASSERT_TRUE(s) << s.error().message;
  httplib::Client c("127.0.0.1", port);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_EQ(m->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(m->body, "# HELP x y\n# TYPE x gauge\nx 1\n");
  auto hz = c.Get("/healthz");
  ASSERT_TRUE(hz);
  EXPECT_EQ(hz->status, 200);
  EXPECT_EQ(hz->body, "ok\n");
  healthy = false;
  hz = c.Get("/healthz");
  ASSERT_TRUE(hz);
  EXPECT_EQ(hz->status, 503);
  EXPECT_EQ(hz->body, "the event loop has not turned for 12 s\nsource bpf failed: gone\n");
  auto rz = c.Get("/readyz");
  ASSERT_TRUE(rz);
  EXPECT_EQ(rz->status, 503);
  ready = true;
  rz = c.Get("/readyz");
  ASSERT_TRUE(rz);
  EXPECT_EQ(rz->status, 200);
  EXPECT_EQ(rz->body, "ready\n");
  auto nf = c.Get("/debug/pprof");
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);
  // The sampler runs once a second from the start.
  for (int i = 0; i < 200 && samples.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(samples.load(), 1);
  (*s)->stop();
  EXPECT_FALSE(c.Get("/healthz"));
}

TEST(Server, APortInUseIsAnErrorNamingTheAddress) {
  const int port = free_port();
  auto first = Server::start({"127.0.0.1:" + std::to_string(port), nullptr}, {});
  ASSERT_TRUE(first);
  // No SO_REUSEPORT: a second agent cannot share the port.
  auto second = Server::start({"127.0.0.1:" + std::to_string(port), nullptr}, {});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().kind, Error::Kind::kRuntime);
  EXPECT_NE(second.error().message.find("cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << second.error().message;
  EXPECT_NE(second.error().message.find("in use"), std::string::npos) << second.error().message;
}

TEST(Server, OversizedRequestsAreRefused) {
  const int port = free_port();
  Handlers h;
  h.metrics = [] { return std::string("x 1\n"); };
  auto s = Server::start({"127.0.0.1:" + std::to_string(port), nullptr}, h);
  ASSERT_TRUE(s);
  httplib::Client c("127.0.0.1", port);
  auto r = c.Post("/metrics", std::string(64 * 1024, 'a'), "text/plain");
  ASSERT_TRUE(r);
  EXPECT_GE(r->status, 400);
}

}  // namespace
}  // namespace vigil::metrics
