// The `outputs:` configuration: the issue's form works as written; invalid
// blocks are errors naming the key and the reason; secrets stay out of errors.
#include "outputs/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "outputs/router.h"
#include "tests/outputs/test_alert.h"

namespace vigil::outputs {
namespace {

Result<std::vector<OutputConfig>> parse(const std::string& yaml) {
  return parse_outputs(YAML::Load(yaml)["outputs"], "/tmp/vigil-state");
}

std::string error_of(const std::string& yaml) {
  auto r = parse(yaml);
  if (r) return "";
  EXPECT_EQ(r.error().kind, Error::Kind::kBadInput);
  return r.error().message;
}

#ifdef VIGIL_WITH_KAFKA
TEST(OutputsConfig, IssueFormWorksAsWritten) {
  auto r = parse(R"(
outputs:
  - type: stdout
    format: json
  - type: kafka
    brokers: "127.0.0.1:9092,127.0.0.1:9093"
    topic: vigil-alerts
    format: json
  - type: syslog
    address: tcp://127.0.0.1:5514      # udp://, tls://, unix:///dev/log
    framing: rfc5424                   # or rfc3164
    format: json                       # the message body: json, cef, ocsf, text
  - type: webhook
    url: https://siem.example/api/alerts
    format: json
)");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0].sink.type, "stdout");
  const auto& k = std::get<KafkaOptions>((*r)[1].transport);
  EXPECT_EQ(k.brokers, "127.0.0.1:9092,127.0.0.1:9093");
  EXPECT_EQ(k.topic, "vigil-alerts");
  EXPECT_EQ(k.acks, "all");
  EXPECT_TRUE(k.idempotence);
  const auto& s = std::get<SyslogOptions>((*r)[2].transport);
  EXPECT_EQ(s.protocol, SyslogProtocol::kTcp);
  EXPECT_EQ(s.host, "127.0.0.1");
  EXPECT_EQ(s.port, 5514);
  EXPECT_EQ(s.framing, SyslogFraming::kRfc5424);
  const auto& w = std::get<WebhookOptions>((*r)[3].transport);
  EXPECT_EQ(w.url, "https://siem.example/api/alerts");
  EXPECT_EQ((*r)[3].sink.name, "webhook-3");
}

#endif  // VIGIL_WITH_KAFKA

TEST(OutputsConfig, SpoolSyncIntervalIsReadAndBounded) {
  auto r = parse("outputs: [{type: webhook, url: 'http://h/', spool: {sync_interval_ms: 0}}]");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ((*r)[0].sink.spool.sync_interval, std::chrono::milliseconds(0));
  auto d = parse("outputs: [{type: webhook, url: 'http://h/', spool: true}]");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ((*d)[0].sink.spool.sync_interval, std::chrono::milliseconds(100));
  EXPECT_NE(error_of("outputs: [{type: webhook, url: 'http://h/', spool: {sync_interval_ms: -1}}]")
                .find("spool.sync_interval_ms"),
            std::string::npos);
}

TEST(OutputsConfig, AbsentMeansOneStdoutJsonSink) {
  auto r = parse_outputs(YAML::Node(), "/tmp");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].sink.type, "stdout");
  EXPECT_EQ((*r)[0].sink.format, Format::kJson);
}

// docs/outputs.md, "Aggregation": outputs aggregate unless they say not.
TEST(OutputsConfig, AggregateIsOnUnlessTheOutputSaysFalse) {
  auto r = parse("outputs: [{type: stdout}, {type: stdout, aggregate: false}, {type: stdout, aggregate: on}]");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 3u);
  EXPECT_TRUE((*r)[0].sink.filter.aggregate);
  EXPECT_FALSE((*r)[1].sink.filter.aggregate);
  EXPECT_TRUE((*r)[2].sink.filter.aggregate);
}

TEST(OutputsConfig, ErrorsNameTheKeyAndTheReason) {
  EXPECT_EQ(error_of("outputs: [{type: stdout, format: xml}]"),
            "outputs[0].format: unknown format 'xml' (json, ocsf, cef, text)");
  EXPECT_NE(error_of("outputs: [{type: carrier-pigeon}]").find("outputs[0].type: unknown output type"),
            std::string::npos);
  EXPECT_EQ(error_of("outputs: [{type: stdout}, {type: stdout, formt: json}]"), "outputs[1].formt: unknown key");
  EXPECT_NE(error_of("outputs: [{type: syslog, address: 'tcpx://h:1'}]").find("outputs[0].address:"),
            std::string::npos);
  EXPECT_NE(error_of("outputs: [{type: syslog, address: 'tcp://h:99999'}]").find("bad port"), std::string::npos);
#ifdef VIGIL_WITH_KAFKA
  EXPECT_NE(error_of("outputs: [{type: kafka, topic: t}]").find("outputs[0].brokers: required"), std::string::npos);
  EXPECT_NE(error_of("outputs: [{type: kafka, brokers: b, topic: 'a/b'}]").find("outputs[0].topic"), std::string::npos);
#endif
  EXPECT_NE(error_of("outputs: [{type: webhook, url: 'ftp://x'}]").find("outputs[0].url"), std::string::npos);
  EXPECT_NE(error_of("outputs: [{type: stdout, queue: {max_events: -1}}]").find("outputs[0].queue.max_events"),
            std::string::npos);
  EXPECT_NE(error_of("outputs: [{type: stdout, queue: {overflow: block}}]")
                .find("outputs[0].queue.overflow: expected drop_newest or drop_oldest"),
            std::string::npos);
  EXPECT_NE(error_of("outputs: [{type: stdout, min_priority: loud}]")
                .find("outputs[0].min_priority: unknown priority 'loud'"),
            std::string::npos);
  EXPECT_NE(error_of("outputs: [{type: stdout, spool: true}]").find("outputs[0].spool"), std::string::npos);
  EXPECT_NE(error_of("outputs: [{type: file}]").find("outputs[0].path: required"), std::string::npos);
  EXPECT_NE(error_of("outputs: [{type: stdout, name: a}, {type: stdout, name: a}]").find("outputs[1].name: duplicate"),
            std::string::npos);
  EXPECT_NE(error_of("outputs: [{type: stdout, name: '../../etc'}]").find("outputs[0].name"), std::string::npos);
  EXPECT_NE(error_of("outputs: [{type: webhook, url: 'http://x', format: cef, batch_mode: array}]")
                .find("outputs[0].batch_mode: array needs format json or ocsf"),
            std::string::npos);
  EXPECT_NE(error_of("outputs: {type: stdout}").find("outputs: expected a list"), std::string::npos);
  EXPECT_NE(
      error_of("outputs: [{type: stdout, rate_limit: {per_second: fast}}]").find("outputs[0].rate_limit.per_second"),
      std::string::npos);
  EXPECT_NE(
      error_of("outputs: [{type: stdout, aggregate: sometimes}]").find("outputs[0].aggregate: expected true or false"),
      std::string::npos);
}

#ifdef VIGIL_WITH_KAFKA
// Issue 16, item 7: with the configuration's origin, an error inside an
// entry names the file, line and column (or the -o that set the value).
TEST(OutputsConfig, ErrorsWithAnOriginNameTheFileLineOrOverride) {
  const YAML::Node root =
      YAML::Load("outputs:\n  - type: stdout\n  - type: syslog\n    address: tcpx://h:1\n    framing: rfc1\n");
  ConfigOrigin file("/etc/vigil/vigil.yaml");
  auto r = parse_outputs(root["outputs"], "/tmp", &file);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("/etc/vigil/vigil.yaml:4:14: outputs[1].address: ", 0), 0u) << r.error().message;
  r = parse_outputs(YAML::Load("outputs:\n  - type: x\n  - type: file\n")["outputs"], "/tmp", &file);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "/etc/vigil/vigil.yaml:2:11: outputs[0].type: unknown output type 'x' "
            "(stdout, file, syslog, webhook, kafka)");
  // A missing key: the entry's position.
  r = parse_outputs(YAML::Load("outputs:\n  - type: stdout\n  - type: file\n")["outputs"], "/tmp", &file);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "/etc/vigil/vigil.yaml:3:5: outputs[1].path: required");
  // An unknown key inside a nested block: the key's position.
  r = parse_outputs(YAML::Load("outputs:\n  - type: stdout\n    queue: {max_event: 1}\n")["outputs"], "/tmp", &file);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "/etc/vigil/vigil.yaml:3:13: outputs[0].queue.max_event: unknown key");
  // A value an override set.
  ConfigOrigin with_o("/etc/vigil/vigil.yaml");
  with_o.add_override("outputs.1.framing", "outputs.1.framing=rfc1");
  r = parse_outputs(YAML::Load("outputs:\n  - type: stdout\n  - {type: syslog, framing: rfc1}\n")["outputs"], "/tmp",
                    &with_o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "-o outputs.1.framing=rfc1: outputs[1].framing: expected rfc5424 or rfc3164");
}

TEST(OutputsConfig, FullSettingsParse) {
  auto r = parse(R"(
outputs:
  - type: file
    name: audit
    path: /tmp/vigil-alerts.json
    rotate: {max_bytes: 1048576, max_age_s: 3600, keep: 3}
    fsync: batch
    min_priority: error
    rules: {exclude: [noisy]}
    tags: {include: [crypto_mining, egress]}
    rate_limit: {per_second: 5, burst: 10}
    queue: {max_events: 500, max_bytes: 1048576, overflow: drop_oldest}
  - type: webhook
    url: http://127.0.0.1:8080/
    batch_mode: ndjson
    headers: {X-Tenant: gpu-fleet}
    bearer_token: s3cr3t
    timeout_ms: 2000
    retry: {max_attempts: 7, initial_backoff_ms: 50, max_backoff_ms: 1000}
    spool: {max_bytes: 1048576}
  - type: kafka
    brokers: [a:9092, b:9092]
    topic: t
    key: pod
    compression: zstd
    properties: {security.protocol: SASL_SSL, sasl.mechanism: PLAIN}
    spool: true
)");
  ASSERT_TRUE(r) << r.error().message;
  const auto& f = (*r)[0];
  EXPECT_EQ(f.sink.name, "audit");
  EXPECT_EQ(std::get<FileOptions>(f.transport).rotate_bytes, 1048576u);
  EXPECT_EQ(std::get<FileOptions>(f.transport).keep, 3);
  EXPECT_EQ(std::get<FileOptions>(f.transport).fsync, FsyncPolicy::kBatch);
  EXPECT_EQ(f.sink.filter.min_priority, event::Priority::kError);
  EXPECT_EQ(f.sink.filter.tags_include.size(), 2u);
  EXPECT_EQ(f.sink.filter.burst, 10);
  EXPECT_EQ(f.sink.overflow, Overflow::kDropOldest);
  EXPECT_EQ(f.sink.queue_max_events, 500u);
  const auto& w = (*r)[1];
  EXPECT_EQ(std::get<WebhookOptions>(w.transport).batch, WebhookBatch::kNdjson);
  EXPECT_EQ(std::get<WebhookOptions>(w.transport).bearer_token, "s3cr3t");
  EXPECT_EQ(w.sink.retry.max_attempts, 7);
  EXPECT_EQ(w.sink.spool.dir, "/tmp/vigil-state/spool/webhook-1");
  EXPECT_EQ(w.sink.batch.max_events, 100u);
  const auto& k = (*r)[2];
  EXPECT_EQ(std::get<KafkaOptions>(k.transport).brokers, "a:9092,b:9092");
  EXPECT_EQ(std::get<KafkaOptions>(k.transport).key, KeyKind::kPod);
  EXPECT_EQ(std::get<KafkaOptions>(k.transport).properties.size(), 2u);
  EXPECT_EQ(k.sink.spool.dir, "/tmp/vigil-state/spool/kafka-2");
}

#endif  // VIGIL_WITH_KAFKA

TEST(OutputsConfig, BearerTokenFromFileAndEnv) {
  const std::string path = "/tmp/vigil-token-" + std::to_string(getpid());
  std::ofstream(path) << "from-file\n";
  auto r = parse("outputs: [{type: webhook, url: 'http://x', bearer_token_file: '" + path + "'}]");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(std::get<WebhookOptions>((*r)[0].transport).bearer_token, "from-file");
  std::filesystem::remove(path);
  setenv("VIGIL_TEST_TOKEN", "from-env", 1);
  r = parse("outputs: [{type: webhook, url: 'http://x', bearer_token_env: VIGIL_TEST_TOKEN}]");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(std::get<WebhookOptions>((*r)[0].transport).bearer_token, "from-env");
  EXPECT_NE(error_of("outputs: [{type: webhook, url: 'http://x', bearer_token_env: VIGIL_NOPE_X}]")
                .find("outputs[0].bearer_token_env"),
            std::string::npos);
}

TEST(OutputsConfig, SecretsNeverAppearInErrors) {
  const std::string e1 = error_of("outputs: [{type: webhook, url: 'http://x', bearer_token: \"hunter2\\nX: y\"}]");
  EXPECT_NE(e1.find("bearer_token"), std::string::npos);
  EXPECT_EQ(e1.find("hunter2"), std::string::npos);
  const std::string e2 =
      error_of("outputs: [{type: webhook, url: 'http://x', bearer_token: hunter2, bearer_token_env: X}]");
  EXPECT_EQ(e2.find("hunter2"), std::string::npos);
#ifdef VIGIL_WITH_KAFKA
  // librdkafka rejects the property; the message names it without its value.
  auto r = parse(
      "outputs: [{type: kafka, brokers: 'b:1', topic: t, properties: {sasl.password: hunter2, "
      "no.such.property: hunter3}}]");
  ASSERT_TRUE(r);
  auto t = make_transport((*r)[0]);
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("no.such.property"), std::string::npos);
  EXPECT_EQ(t.error().message.find("hunter"), std::string::npos);
#endif
}

#ifndef VIGIL_WITH_KAFKA
TEST(OutputsConfig, KafkaOutputInABuildWithoutKafkaIsAnError) {
  EXPECT_NE(error_of("outputs: [{type: kafka, brokers: b, topic: t}]").find("VIGIL_WITH_KAFKA=OFF"), std::string::npos);
}
#endif

TEST(OutputsConfig, RouterFromConfigRejectsBadBlocks) {
  auto r = Router::from_config(YAML::Load("[{type: stdout, format: yaml}]"), RouterOptions{});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, Error::Kind::kBadInput);
  auto ok = Router::from_config(YAML::Node(), testing::router_options("h"));
  ASSERT_TRUE(ok);
  EXPECT_EQ((*ok)->stats().size(), 1u);
  (*ok)->shutdown(std::chrono::milliseconds(100));
}

}  // namespace
}  // namespace vigil::outputs
