// Step "select events": what vigil replay does with each event it reports,
// beside the rules: print it (--events, JSON lines or text) and put it on
// the timeline (--timeline); and the progress bar.
#include "engine/agent/steps/steps.h"

#include <cstdio>
#include <string>
#include <unordered_set>

#include "engine/agent/progress.h"
#include "engine/capture/event_json.h"
#include "engine/capture/timeline.h"

namespace vigil::agent::steps {

Status select_events(Agent& a) {
  if (!a.opts.timeline.empty()) a.timeline = std::make_unique<capture::TimelineBuilder>();
  if (a.opts.print_events || a.timeline) {
    a.opts.select.on_selected = [&a, known = std::unordered_set<std::string>(), line = std::string()](
                                    const event::Event& ev, const state::EvalContext& ctx) mutable {
      if (a.opts.print_events) {
        line = a.opts.events_format == "json" ? capture::event_json(ev, &ctx) : capture::event_text(ev, &ctx);
        line.push_back('\n');
        std::fwrite(line.data(), 1, line.size(), stdout);
      }
      if (capture::TimelineBuilder* tl = a.timeline.get()) {
        if (ctx.container && known.insert(ctx.container->id).second) tl->add(*ctx.container);
        if (ctx.pod && known.insert("pod:" + ctx.pod->uid + ctx.pod->resource_version).second) {
          tl->add(*ctx.pod);
        }
        tl->add_event(ev);
      }
    };
  }
  a.progress = std::make_unique<Progress>();
  a.opts.replay.progress = [p = a.progress.get()](std::uint64_t done, std::uint64_t total, std::uint64_t n) {
    p->update(done, total, n);
  };
  return {};
}

}  // namespace vigil::agent::steps
