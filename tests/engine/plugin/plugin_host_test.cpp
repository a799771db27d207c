#include "engine/plugin/host.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/capture/reader.h"
#include "engine/capture/writer.h"
#include "engine/pipeline/pipeline.h"
#include "engine/plugin/plugin.h"
#include "engine/plugin/source.h"
#include "engine/rules/append_output.h"
#include "engine/rules/ruleset.h"
#include "engine/runtime/replay.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/taps.h"
#include "engine/state/state.h"

namespace vigil::plugin {
namespace {

std::string test_plugin(const std::string& kind) {
  return std::string(VIGIL_TEST_PLUGIN_DIR) + "/libvigil_test_" + kind + ".so";
}

struct Logged {
  std::ostringstream text;
  std::shared_ptr<spdlog::logger> log;
  Logged() {
    log = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(text));
    log->set_level(spdlog::level::debug);
  }
};

std::unique_ptr<Host> example_host(const std::string& init_config, Logged& l) {
  auto h = Host::load({{"example", VIGIL_EXAMPLE_PLUGIN, init_config}}, l.log);
  EXPECT_TRUE(h) << (h ? "" : h.error().message);
  if (!h) return nullptr;
  Status s = (*h)->init_all();
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  return std::move(*h);
}

// Polls `src` (waiting on its fd) until it is no longer running or `max` events came.
std::vector<event::Event> drain(source::EventSource& src, std::size_t max,
                                std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  std::vector<event::Event> out;
  const auto end = std::chrono::steady_clock::now() + limit;
  while (out.size() < max && std::chrono::steady_clock::now() < end) {
    pollfd p{src.wait_fd(), POLLIN, 0};
    ::poll(&p, 1, 50);
    auto n = src.poll(64, [&](event::Event&& ev) { out.push_back(std::move(ev)); });
    EXPECT_TRUE(n);
    if (src.health() != source::EventSource::Health::kRunning) break;
  }
  return out;
}

TEST(PluginOpen, TheExamplePluginDescribesItself) {
  auto p = Plugin::open("example", VIGIL_EXAMPLE_PLUGIN);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ((*p)->version(), "1.0.0");
  EXPECT_TRUE((*p)->is_source());
  EXPECT_TRUE((*p)->is_extractor());
  EXPECT_EQ((*p)->event_source(), "example");
  ASSERT_EQ((*p)->fields().size(), 4u);
  EXPECT_EQ((*p)->fields()[0].name, "example.seq");
  EXPECT_EQ((*p)->fields()[3].arg, VIGIL_ARG_REQUIRED);
  EXPECT_EQ((*p)->suggested_output_fields(), std::vector<std::string>{"example.label"});  // ABI 1.1
}

TEST(PluginOpen, ASuggestedOutputFieldItDoesNotHaveIsRefused) {
  auto p = Plugin::open("bad_suggestion", test_plugin("bad_suggestion"));
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().kind, Error::Kind::kBadInput);
  EXPECT_NE(p.error().message.find("plugin 'bad_suggestion'"), std::string::npos) << p.error().message;
  EXPECT_NE(p.error().message.find("suggested output field 'bad_suggestion.y' is not one of its fields"),
            std::string::npos)
      << p.error().message;
}

TEST(PluginOpen, AnotherAbiMajorIsRefusedNamingThePlugin) {
  auto p = Plugin::open("bad_version", test_plugin("bad_version"));
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().kind, Error::Kind::kBadInput);
  EXPECT_NE(p.error().message.find("plugin 'bad_version'"), std::string::npos) << p.error().message;
  EXPECT_NE(p.error().message.find("built for plugin ABI 2.0"), std::string::npos) << p.error().message;
}

TEST(PluginOpen, APartialSymbolGroupIsRefusedNamingTheSymbol) {
  auto p = Plugin::open("no_next_batch", test_plugin("no_next_batch"));
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().kind, Error::Kind::kBadInput);
  EXPECT_NE(p.error().message.find("source symbol vigil_plugin_next_batch is missing"), std::string::npos)
      << p.error().message;
}

TEST(PluginOpen, AMissingFileOrAWrongNameIsBadInput) {
  auto missing = Plugin::open("nvml", "/nonexistent/libvigil_nvml.so");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cannot load"), std::string::npos);
  auto renamed = Plugin::open("nvml", VIGIL_EXAMPLE_PLUGIN);
  ASSERT_FALSE(renamed);
  EXPECT_NE(renamed.error().message.find("calls itself 'example'"), std::string::npos) << renamed.error().message;
}

TEST(PluginInit, AFailedInitNamesThePluginAndItsReason) {
  Logged l;
  auto p = Plugin::open("fail_init", test_plugin("fail_init"));
  ASSERT_TRUE(p) << p.error().message;
  Status s = (*p)->init("{}", l.log);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "plugin 'fail_init': init failed: the device is gone");

  auto h = Host::load({{"example", VIGIL_EXAMPLE_PLUGIN, R"({"burst": 0})"}}, l.log);
  ASSERT_TRUE(h);
  Status hs = (*h)->init_all();
  ASSERT_FALSE(hs);
  EXPECT_NE(hs.error().message.find("burst must be"), std::string::npos) << hs.error().message;
}

TEST(PluginInitDeathTest, ACrashInInitIsReportedByName) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto p = Plugin::open("crash", test_plugin("crash"));
        if (p) (void)(*p)->init("{}", nullptr);
      },
      "plugin 'crash' crashed in init \\(signal 11\\)");
}

TEST(PluginSource, EventsArriveWithTheirSourceAndFieldsReadThemBack) {
  Logged l;
  auto h = example_host(R"({"interval_ms": 1, "count": 20, "burst": 5, "pid": 4242, "label": "L"})", l);
  ASSERT_TRUE(h);
  auto sources = h->start_sources({});
  ASSERT_TRUE(sources);
  ASSERT_EQ(sources->size(), 1u);
  source::EventSource& src = *(*sources)[0];
  EXPECT_EQ(src.name(), "plugin:example");
  auto evs = drain(src, 100);
  ASSERT_EQ(evs.size(), 20u);
  EXPECT_EQ(src.health(), source::EventSource::Health::kDone);
  const auto* d = evs[6].as<event::PluginData>();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(evs[6].hdr.type, event::Type::kPlugin);
  EXPECT_EQ(evs[6].hdr.pid, 4242u);
  EXPECT_NE(evs[6].hdr.ts_ns, 0u);
  EXPECT_EQ(d->plugin, "example");
  EXPECT_EQ(d->source, "example");
  EXPECT_EQ(d->name, "tick");
  EXPECT_EQ(d->gpu_minor, -1);

  // The rules see them through the plugin's fields, and only rules of the
  // plugin's source do.
  rules::LoadOptions opts;
  h->configure(opts);
  auto r = rules::load_rules_text({{"p.yaml", R"(
- rule: Seventh tick
  desc: d
  condition: example.seq = 7 and example.even = false and example.label = L and example.tag[team] = gpu
  output: "tick %example.seq label=%example.label pid=%proc.pid source=%evt.source"
  priority: NOTICE
  source: example
- rule: Any event at all
  desc: a kernel rule with no event type must not see plugin events
  condition: evt.rawtime > 0
  output: "x"
  priority: NOTICE
  warn_evttypes: false
)"}},
                                  opts);
  ASSERT_TRUE(r.ruleset);
  EXPECT_EQ(r.loaded, 2u);
  state::State st(state::Config{.live = false});
  std::vector<std::shared_ptr<const event::Alert>> alerts;
  pipeline::Pipeline pipe({st, [&](std::shared_ptr<const event::Alert> a) { alerts.push_back(a); }, "h"}, r.ruleset);
  for (auto& ev : evs) pipe.process(ev);
  ASSERT_EQ(alerts.size(), 0u) << "tags were not configured: example.tag[team] is <NA>";

  auto h2 = example_host(R"({"interval_ms": 1, "count": 8, "tags": {"team": "gpu"}, "label": "L"})", l);
  rules::LoadOptions opts2;
  h2->configure(opts2);
  auto r2 = rules::load_rules_text({{"p.yaml", R"(
- rule: Seventh tick
  desc: d
  condition: example.seq = 7 and example.even = false and example.label = L and example.tag[team] = gpu
  output: "tick %example.seq label=%example.label source=%evt.source"
  priority: NOTICE
  source: example
)"}},
                                   opts2);
  ASSERT_TRUE(r2.ruleset);
  auto s2 = h2->start_sources({});
  ASSERT_TRUE(s2);
  auto evs2 = drain(*(*s2)[0], 100);
  ASSERT_EQ(evs2.size(), 8u);
  pipeline::Pipeline pipe2({st, [&](std::shared_ptr<const event::Alert> a) { alerts.push_back(a); }, "h"}, r2.ruleset);
  for (auto& ev : evs2) pipe2.process(ev);
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0]->output, "tick 7 label=L source=example");
  EXPECT_EQ(alerts[0]->source, "example");
}

// append_output's suggested_output: the fields a plugin suggests end the
// alerts of its sources' rules, after vigil's own (container and pod).
TEST(PluginRules, TheFieldsAPluginSuggestsAreAppendedToItsSourcesAlerts) {
  Logged l;
  auto h = example_host(R"({"interval_ms": 1, "count": 3, "label": "L"})", l);
  ASSERT_TRUE(h);
  const std::vector<rules::SuggestedField> plugin_fields = h->suggested_fields();
  ASSERT_EQ(plugin_fields.size(), 1u);
  EXPECT_EQ(plugin_fields[0].name, "example.label");
  EXPECT_EQ(plugin_fields[0].sources, std::vector<std::string>{"example"});
  rules::LoadOptions opts;
  h->configure(opts);
  std::vector<rules::SuggestedField> suggested = rules::builtin_suggested_fields();
  suggested.insert(suggested.end(), plugin_fields.begin(), plugin_fields.end());
  auto ao = rules::compile_append_output(rules::AppendOutputConfig::falco_default(), *opts.fields, suggested);
  ASSERT_TRUE(ao) << ao.error().message;
  opts.append_output = *ao;
  auto r = rules::load_rules_text({{"p.yaml", R"(
- rule: Third tick
  desc: d
  condition: example.seq = 3
  output: "tick %example.seq"
  priority: NOTICE
  source: example
)"}},
                                  opts);
  ASSERT_TRUE(r.ruleset);
  auto s = h->start_sources({});
  ASSERT_TRUE(s);
  auto evs = drain(*(*s)[0], 100);
  ASSERT_EQ(evs.size(), 3u);
  state::State st(state::Config{.live = false});
  std::vector<std::shared_ptr<const event::Alert>> alerts;
  pipeline::Pipeline pipe({st, [&](std::shared_ptr<const event::Alert> a) { alerts.push_back(a); }, "h"}, r.ruleset);
  for (auto& ev : evs) pipe.process(ev);
  ASSERT_EQ(alerts.size(), 1u);
  const std::string& out = alerts[0]->output;
  EXPECT_EQ(out.rfind("tick 3 container_id=", 0), 0u) << out;
  EXPECT_EQ(out.substr(out.size() - std::string(" k8s_ns_name=<NA> k8s_meta=host example_label=L").size()),
            " k8s_ns_name=<NA> k8s_meta=host example_label=L")
      << out;
  EXPECT_EQ(alerts[0]->output_fields.back().first, "example.label");
}

TEST(PluginRules, ARuleOnAnUnknownPluginFieldOrSourceIsSkippedWithAWarningNamingIt) {
  auto r = rules::load_rules_text({{"p.yaml", R"(
- rule: GPU busy
  desc: d
  condition: nvml.sm_util > 90
  output: "x"
  priority: NOTICE
- rule: From nvml
  desc: d
  condition: evt.rawtime > 0
  output: "x"
  priority: NOTICE
  source: nvml
)"}},
                                  rules::LoadOptions{});
  ASSERT_TRUE(r.ruleset);
  EXPECT_EQ(r.skipped, 2u);
  std::string all;
  for (const auto& d : r.diagnostics) all += d.to_string() + "\n";
  EXPECT_NE(all.find("unknown field nvml.sm_util"), std::string::npos) << all;
  EXPECT_NE(all.find("source 'nvml' is not one vigil has"), std::string::npos) << all;
}

// peek shows what waits in the queue, as poll will give it, and leaves it
// there (the agent reads the GPUs' ECC this way before its loop runs).
TEST(PluginSource, PeekLeavesTheQueueAsItWas) {
  Logged l;
  auto h = example_host(R"({"interval_ms": 1, "count": 6, "burst": 6, "pid": 4242})", l);
  ASSERT_TRUE(h);
  auto sources = h->start_sources({});
  ASSERT_TRUE(sources);
  auto* src = dynamic_cast<plugin::PluginSource*>((*sources)[0].get());
  ASSERT_NE(src, nullptr);
  std::vector<event::Event> seen;
  for (int i = 0; i < 500 && seen.size() < 6; ++i) {
    seen = src->peek(100);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(src->peek(2).size(), 2u);
  auto evs = drain(*src, 100);
  ASSERT_EQ(evs.size(), 6u);
  for (std::size_t i = 0; i < evs.size(); ++i) {
    EXPECT_EQ(evs[i].hdr.ts_ns, seen[i].hdr.ts_ns) << i;
    EXPECT_EQ(evs[i].hdr.pid, 4242u) << i;
    EXPECT_EQ(evs[i].as<event::PluginData>()->data, seen[i].as<event::PluginData>()->data) << i;
    EXPECT_EQ(seen[i].as<event::PluginData>()->plugin, "example") << i;
  }
  EXPECT_TRUE(src->peek(100).empty());
}

TEST(PluginSource, AFloodLosesOnlyItsOwnEventsAndCountsThem) {
  Logged l;
  auto h = example_host(R"({"interval_ms": 0, "burst": 1024})", l);
  ASSERT_TRUE(h);
  SourceOptions o;
  o.queue_events = 100;
  auto sources = h->start_sources(o);
  ASSERT_TRUE(sources);
  source::EventSource& src = *(*sources)[0];
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the pipeline is "busy"
  std::size_t got = 0;
  auto n = src.poll(1000000, [&](event::Event&&) { ++got; });
  ASSERT_TRUE(n);
  EXPECT_EQ(got, 100u) << "the queue is bounded";
  std::uint64_t full = 0;
  for (const auto& [reason, c] : src.drops().by_reason) {
    if (reason == "queue_full") full = c;
  }
  EXPECT_GT(full, 1000u);
}

TEST(PluginSource, AStuckPluginDoesNotStallTheStop) {
  Logged l;
  auto h = Host::load({{"block", test_plugin("block"), "{}"}}, l.log);
  ASSERT_TRUE(h) << h.error().message;
  ASSERT_TRUE((*h)->init_all());
  SourceOptions o;
  o.stop_grace = std::chrono::milliseconds(100);
  auto sources = (*h)->start_sources(o);
  ASSERT_TRUE(sources);
  auto* src = static_cast<PluginSource*>((*sources)[0].get());
  std::size_t got = 0;
  ASSERT_TRUE(src->poll(10, [&](event::Event&&) { ++got; }));   // returns at once
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the thread is inside next_batch
  const auto t0 = std::chrono::steady_clock::now();
  src->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_TRUE((*h)->plugins()[0]->abandoned());
  EXPECT_NE(l.text.str().find("did not return"), std::string::npos) << l.text.str();
  sources->clear();
  h->reset();  // leaks the stuck plugin instead of unloading it under its thread
}

TEST(PluginSource, AFailingSourceDeliversWhatItGaveThenReportsWhy) {
  Logged l;
  auto h = Host::load({{"fail_source", test_plugin("fail_source"), "{}"}}, l.log);
  ASSERT_TRUE(h) << h.error().message;
  ASSERT_TRUE((*h)->init_all());
  auto sources = (*h)->start_sources({});
  ASSERT_TRUE(sources);
  auto evs = drain(*(*sources)[0], 100);
  EXPECT_EQ(evs.size(), 3u);
  EXPECT_EQ((*sources)[0]->health(), source::EventSource::Health::kFailed);
  EXPECT_EQ((*sources)[0]->failure(), "the source broke");
}

TEST(PluginConfig, LoadPluginsChoosesAmongTheDeclaredInItsOrder) {
  YAML::Node cfg = YAML::Load(R"(
plugins:
  - name: nvml
    library_path: /opt/libvigil_nvml.so
    init_config: {nvml_library: libnvidia-ml.so.1, interval: 1s, max: 10, on: true, quoted: "10"}
  - name: example
    library_path: /opt/libvigil_example.so
load_plugins: [example, nvml]
)");
  auto specs = parse_config(cfg, "vigil.yaml");
  ASSERT_TRUE(specs) << specs.error().message;
  ASSERT_EQ(specs->size(), 2u);
  EXPECT_EQ((*specs)[0].name, "example");
  EXPECT_EQ((*specs)[0].init_config, "{}");
  EXPECT_EQ((*specs)[1].init_config,
            R"({"nvml_library":"libnvidia-ml.so.1","interval":"1s","max":10,"on":true,"quoted":"10"})");

  YAML::Node none = YAML::Load("plugins: [{name: nvml, library_path: /x.so}]\n");
  auto empty = parse_config(none, "vigil.yaml");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty()) << "declared but not chosen: not loaded";
}

TEST(PluginConfig, MistakesNameTheFileLineAndKey) {
  auto undeclared = parse_config(YAML::Load("plugins: []\nload_plugins: [nvml]\n"), "vigil.yaml");
  ASSERT_FALSE(undeclared);
  EXPECT_EQ(undeclared.error().message, "vigil.yaml:2:16: load_plugins: 'nvml' is not declared under 'plugins'");
  auto typo = parse_config(YAML::Load("plugins:\n  - name: nvml\n    libary_path: /x.so\n"), "vigil.yaml");
  ASSERT_FALSE(typo);
  EXPECT_EQ(typo.error().message,
            "vigil.yaml:3:5: plugins: unknown key 'libary_path' (name, library_path, init_config)");
  auto bad_name = parse_config(YAML::Load("plugins:\n  - {name: NVML, library_path: /x.so}\n"), "c.yaml");
  ASSERT_FALSE(bad_name);
  EXPECT_NE(bad_name.error().message.find("c.yaml:2:5: plugins: name 'NVML' is not [a-z0-9_]+"), std::string::npos)
      << bad_name.error().message;
}

TEST(PluginConfig, JsonOfYamlEscapesStrings) {
  EXPECT_EQ(yaml_to_json(YAML::Load(R"({a: "q\"uo\\te", b: [1, -2.5, x, null, "true"], c: 0755})")),
            R"({"a":"q\"uo\\te","b":[1,-2.5,"x",null,"true"],"c":"0755"})");
}

}  // namespace
}  // namespace vigil::plugin

// Captured plugin events replay, with the plugin loaded, to the live run's
// alerts field for field (uuid included).
namespace vigil::plugin {
namespace {

constexpr const char* kTickRule = R"(
- rule: Even ticks
  desc: every second tick
  condition: example.seq > 0 and example.even = true
  output: "tick %example.seq (%example.label) gpu=%gpu.minor source=%evt.source"
  priority: NOTICE
  source: example
)";

std::vector<std::string> alert_lines(const std::vector<std::shared_ptr<const event::Alert>>& as) {
  std::vector<std::string> out;
  for (const auto& a : as) out.push_back(a->uuid + " " + a->rule + " " + a->output + " " + a->source);
  return out;
}

TEST(PluginCapture, APluginsEventsReplayToTheLiveRunsAlerts) {
  Logged l;
  const std::string path = ::testing::TempDir() + "/plugin_events.vcap";
  std::vector<std::shared_ptr<const event::Alert>> live, replayed;
  {
    auto h = example_host(R"({"interval_ms": 1, "count": 40, "burst": 4, "label": "cap"})", l);
    ASSERT_TRUE(h);
    rules::LoadOptions opts;
    h->configure(opts);
    auto r = rules::load_rules_text({{"p.yaml", kTickRule}}, opts);
    ASSERT_TRUE(r.ruleset);
    state::State st(state::Config{.live = false});
    auto w = capture::CaptureWriter::open(path, capture::WriterOptions{});
    ASSERT_TRUE(w) << w.error().message;
    st.set_listener(w->get());
    runtime::CaptureTap tap(**w);
    auto runner = runtime::Runner::create(runtime::RunnerOptions{.signals = false});
    ASSERT_TRUE(runner);
    auto sources = h->start_sources({});
    ASSERT_TRUE(sources);
    for (auto& s : *sources) (*runner)->add_source(std::move(s), false);
    pipeline::Pipeline pipe({st, [&](std::shared_ptr<const event::Alert> a) { live.push_back(a); }, "h"}, r.ruleset);
    pipe.add_tap(&tap);
    auto rep = (*runner)->run(pipe);
    EXPECT_EQ(rep.exit_code, 0);
    (*runner)->close_sources();
    st.set_listener(nullptr);
    ASSERT_TRUE((*w)->close());
  }
  ASSERT_EQ(live.size(), 20u);
  {
    auto h = example_host(R"({"label": "cap"})", l);  // loaded for its fields; its source is not started
    rules::LoadOptions opts;
    h->configure(opts);
    auto r = rules::load_rules_text({{"p.yaml", kTickRule}}, opts);
    ASSERT_TRUE(r.ruleset);
    state::State st(state::Config{.live = false});
    runtime::StateApplier sink(st);
    auto reader = capture::CaptureReader::open(path);
    ASSERT_TRUE(reader) << reader.error().message;
    auto runner = runtime::Runner::create(runtime::RunnerOptions{.signals = false});
    ASSERT_TRUE(runner);
    (*runner)->add_source(std::make_unique<runtime::CaptureSource>(std::move(*reader), sink));
    pipeline::Pipeline pipe({st, [&](std::shared_ptr<const event::Alert> a) { replayed.push_back(a); }, "h"},
                            r.ruleset);
    auto rep = (*runner)->run(pipe);
    EXPECT_EQ(rep.exit_code, 0);
  }
  EXPECT_EQ(alert_lines(replayed), alert_lines(live));
  EXPECT_EQ(live[0]->output, "tick 2 (cap) gpu=<NA> source=example");
}

}  // namespace
}  // namespace vigil::plugin
