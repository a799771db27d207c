// Step "open capture": vigil replay's capture file (unreadable or corrupt:
// bad input → 2, naming the file and byte offset).
#include "engine/agent/steps/steps.h"

#include "engine/capture/reader.h"

namespace vigil::agent::steps {

Status open_capture(Agent& a) {
  auto reader = capture::CaptureReader::open(a.opts.replay_file);
  if (!reader) return reader.error();
  a.reader = std::move(*reader);
  return {};
}

}  // namespace vigil::agent::steps
