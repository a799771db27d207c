#include "engine/runtime/replay.h"

#include <type_traits>
#include <variant>

#include "engine/rules/filter.h"

namespace vigil::runtime {

void StateApplier::on_state_record(capture::RecordData&& record) {
  std::visit(
      [&](auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, state::Process>) st_.upsert_process(std::move(r));
        else if constexpr (std::is_same_v<T, state::Container>) st_.upsert_container(std::move(r));
        else if constexpr (std::is_same_v<T, state::Pod>) st_.upsert_pod(std::move(r));
        else if constexpr (std::is_same_v<T, capture::PodRemoved>) st_.remove_pod(r.uid);
        else if constexpr (std::is_same_v<T, state::NvidiaInfo>) st_.upsert_nvidia(std::move(r));
      },
      record);
}

CaptureSource::CaptureSource(std::unique_ptr<capture::CaptureReader> reader, StateSink& sink, CaptureSourceOptions opts)
    : reader_(std::move(reader)), sink_(sink), opts_(std::move(opts)) {}

void CaptureSource::finish() {
  health_ = Health::kDone;
  stats_.skipped_records = reader_->stats().skipped_records;
  if (opts_.progress) opts_.progress(reader_->offset(), reader_->size(), stats_.events);
}

Result<std::size_t> CaptureSource::poll(std::size_t budget, const Emit& emit) {
  std::size_t n = 0;
  while (health_ == Health::kRunning && n < budget) {
    auto more = reader_->next(rec_);
    if (!more) {
      health_ = Health::kFailed;
      failure_ = more.error().message;
      return more.error();
    }
    if (!*more) {
      finish();
      break;
    }
    ++stats_.records;
    if (opts_.progress && (stats_.records & 0xffff) == 0) {
      opts_.progress(reader_->offset(), reader_->size(), stats_.events);
    }
    if (auto* ev = std::get_if<event::Event>(&rec_.data)) {
      if (opts_.until_ns && ev->hdr.ts_ns > opts_.until_ns) {
        finish();
        break;
      }
      ++stats_.events;
      last_ts_ = std::max(last_ts_, ev->hdr.ts_ns);
      emit(std::move(*ev));
      ++n;
      continue;
    }
    if (std::holds_alternative<std::monostate>(rec_.data)) continue;
    ++stats_.state_records;
    sink_.on_state_record(std::move(rec_.data));
  }
  return n;
}

bool ReplaySelector::matches(const state::EvalContext& ctx) const {
  if (!opts_.container.empty()) {
    if (!ctx.container || ctx.container->id.rfind(opts_.container, 0) != 0) return false;
  }
  if (!opts_.pod.empty()) {
    if (!ctx.pod) return false;
    const bool match = opts_.pod.find('/') == std::string::npos ? ctx.pod->name == opts_.pod
                                                                : ctx.pod->ns + "/" + ctx.pod->name == opts_.pod;
    if (!match) return false;
  }
  return !opts_.filter || opts_.filter->accepts(ctx);
}

bool ReplaySelector::select(const event::Event& ev, const state::EvalContext& ctx) {
  if (opts_.since_ns && ev.hdr.ts_ns < opts_.since_ns) return false;  // context only
  if (!matches(ctx)) return false;
  ++reported_;
  if (opts_.on_selected) opts_.on_selected(ev, ctx);
  return true;
}

}  // namespace vigil::runtime
