#include "engine/capture/replay.h"

#include "engine/rules/ruleset.h"

namespace vigil::capture {

Snapshot snapshot_of(const state::State& st) {
  Snapshot s;
  s.nvidia = st.nvidia();
  s.processes = st.processes();
  s.containers = st.containers();
  s.pods = st.pods();
  return s;
}

void CaptureTap::on_event(const event::Event& ev) {
  if (!status_) return;
  if (Status s = w_.write_event(ev); !s) status_ = s;
}

FlightRecorderTap::FlightRecorderTap(FlightRecorder& fr, const state::State& st)
    : fr_(fr), st_(st) {
  // The state usually read the NVIDIA devices before the recorder became its
  // listener (seed_from_proc runs first): hand the recorder what it has now.
  fr_.on_nvidia(st_.nvidia());
}

void FlightRecorderTap::on_event(const event::Event& ev) {
  const state::EvalContext ctx = st_.enrich(ev);
  fr_.on_event(ev, ctx);
}

void FlightRecorderTap::on_alert(const event::Event& ev, event::Alert& alert) {
  const state::EvalContext ctx = st_.enrich(ev);
  fr_.on_alert(ev, ctx, alert);
}

Result<std::shared_ptr<const rules::Ruleset>> compile_filter(const std::string& condition) {
  if (condition.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Error::bad_input("--filter: empty condition");
  }
  // A one-rule file; the condition goes in a literal block so no YAML quoting applies.
  std::string yaml =
      "- rule: vigil filter\n"
      "  desc: the --filter condition\n"
      "  output: match\n"
      "  priority: DEBUG\n"
      "  condition: |-\n";
  std::size_t start = 0;
  while (start <= condition.size()) {
    std::size_t nl = condition.find('\n', start);
    std::string line = condition.substr(start, nl == std::string::npos ? std::string::npos
                                                                        : nl - start);
    yaml += "    " + line + "\n";
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  rules::LoadOptions lo;
  auto r = rules::load_rules_text({{"--filter", yaml}}, lo);
  if (!r.ruleset || r.ruleset->size() == 0) {
    std::string why;
    for (const auto& d : r.diagnostics) {
      if (!why.empty()) why += "; ";
      why += d.to_string();
    }
    return Error::bad_input("--filter: the condition does not compile: " + why);
  }
  return r.ruleset;
}

bool filter_accepts(const rules::Ruleset& filter, const state::EvalContext& ctx) {
  thread_local std::vector<event::Alert> scratch;
  scratch.clear();
  filter.evaluate(ctx, scratch);
  bool hit = !scratch.empty();
  scratch.clear();
  return hit;
}

Replayer::Replayer(state::State& st, ReplayOptions opts) : st_(st), opts_(std::move(opts)) {}

pipeline::Publisher Replayer::gate(pipeline::Publisher next) {
  return [this, next = std::move(next)](std::shared_ptr<const event::Alert> a) {
    if (current_selected_ && next) next(std::move(a));
  };
}

bool Replayer::selected(const event::Event& ev, const state::EvalContext& ctx) const {
  if (!opts_.container.empty()) {
    if (!ctx.container || ctx.container->id.rfind(opts_.container, 0) != 0) return false;
  }
  if (!opts_.pod.empty()) {
    if (!ctx.pod) return false;
    bool match = opts_.pod.find('/') == std::string::npos
                     ? ctx.pod->name == opts_.pod
                     : ctx.pod->ns + "/" + ctx.pod->name == opts_.pod;
    if (!match) return false;
  }
  if (opts_.filter && !filter_accepts(*opts_.filter, ctx)) return false;
  (void)ev;
  return true;
}

void Replayer::on_event(const event::Event& ev) {
  bool plain = opts_.container.empty() && opts_.pod.empty() && !opts_.filter;
  if (plain && !opts_.on_selected) {
    current_selected_ = true;
    ++reported_;
    return;
  }
  const state::EvalContext ctx = st_.enrich(ev);
  current_selected_ = plain || selected(ev, ctx);
  if (current_selected_) {
    ++reported_;
    if (opts_.on_selected) opts_.on_selected(ev, ctx);
  }
}

Result<ReplayStats> Replayer::run(CaptureReader& reader, pipeline::Pipeline& pl) {
  ReplayStats st;
  reported_ = 0;
  Record rec;
  for (;;) {
    auto more = reader.next(rec);
    if (!more) return more.error();
    if (!*more) break;
    ++st.records;
    if (opts_.progress && (st.records & 0xffff) == 0) {
      opts_.progress(reader.offset(), reader.size(), st.events);
    }
    if (auto* ev = std::get_if<event::Event>(&rec.data)) {
      ++st.events;
      if (opts_.until_ns && ev->hdr.ts_ns > opts_.until_ns) break;
      if (opts_.since_ns && ev->hdr.ts_ns < opts_.since_ns) {
        st_.apply(*ev);  // context only: no rules, nothing reported
        st_.after(*ev);
        continue;
      }
      pl.process(*ev);
      continue;
    }
    ++st.state_records;
    std::visit(
        [&](auto& r) {
          using T = std::decay_t<decltype(r)>;
          if constexpr (std::is_same_v<T, state::Process>) st_.upsert_process(std::move(r));
          else if constexpr (std::is_same_v<T, state::Container>) st_.upsert_container(std::move(r));
          else if constexpr (std::is_same_v<T, state::Pod>) st_.upsert_pod(std::move(r));
          else if constexpr (std::is_same_v<T, PodRemoved>) st_.remove_pod(r.uid);
          else if constexpr (std::is_same_v<T, state::NvidiaInfo>) st_.upsert_nvidia(std::move(r));
        },
        rec.data);
  }
  if (opts_.progress) opts_.progress(reader.offset(), reader.size(), st.events);
  st.reported = reported_;
  st.skipped_records = reader.stats().skipped_records;
  st.truncated = reader.truncated();
  return st;
}

}  // namespace vigil::capture
