// The `outputs:` configuration: a YAML sequence, one mapping per sink.
//
//   outputs:
//     - type: stdout            # stdout | file | syslog | webhook | kafka
//       format: json            # json | ocsf | cef | text
//       min_priority: warning   # filters (all optional)
//       rules: {include: [...], exclude: [...]}
//       tags: {include: [...], exclude: [...]}
//       rate_limit: {per_second: 10, burst: 20}
//       aggregate: true         # false: every repeat, no summaries
//       queue: {max_events: 10000, max_bytes: 67108864, overflow: drop_newest}
//       batch: {max_events: 100, max_bytes: 1048576, max_delay_ms: 50}
//       retry: {max_attempts: 5, initial_backoff_ms: 100, max_backoff_ms: 30000}
//       spool: {enabled: true, dir: ..., max_bytes: ...}   # kafka, webhook
//       ...type-specific settings (docs/outputs.md)
//
// Every error is Error::bad_input and names the entry and key, e.g.
// "outputs[2].address: unknown scheme 'tcpx'", after where the value came
// from when an origin is given ("vigil.yaml:14:14: outputs[2].address: ...",
// "-o outputs.2.address=tcpx://x: outputs[2].address: ..."). Unknown keys are
// errors (a typo must not silently disable a setting). Secret values (tokens,
// passwords, keys) never appear in error messages.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <variant>
#include <vector>

#include "engine/util/config_origin.h"
#include "engine/util/result.h"
#include "outputs/file_transport.h"
#include "outputs/sink.h"
#include "outputs/syslog_transport.h"
#include "outputs/webhook_transport.h"
#ifdef VIGIL_WITH_KAFKA
#include "outputs/kafka_transport.h"
#endif

namespace vigil::outputs {

struct StdoutOptions {
  int fd = 1;
};

#ifndef VIGIL_WITH_KAFKA
struct KafkaOptions {};
#endif

struct OutputConfig {
  SinkOptions sink;
  std::variant<StdoutOptions, FileOptions, SyslogOptions, WebhookOptions, KafkaOptions> transport;
};

// `outputs`: the sequence under `outputs:`; null or absent gives one stdout
// json sink. `state_dir`: where spools go by default
// (<state_dir>/spool/<sink name>). `origin`, when given, names where the
// configuration's values came from (the file's lines, -o overrides) in errors;
// `outputs` is then the root's `outputs` value.
Result<std::vector<OutputConfig>> parse_outputs(const YAML::Node& outputs, const std::string& state_dir,
                                                const ConfigOrigin* origin = nullptr);

// Builds the transport an OutputConfig describes (opens files, loads TLS
// material, creates the Kafka producer). Errors name the sink.
// `log` receives library log lines (librdkafka) and may be null.
Result<std::unique_ptr<Transport>> make_transport(const OutputConfig& c, std::shared_ptr<spdlog::logger> log = nullptr);

}  // namespace vigil::outputs
