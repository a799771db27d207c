// Plugins that misbehave on purpose, one per VIGIL_TEST_* definition, for the
// host's tests: a wrong ABI version, a source without next_batch, a crash in
// init, a next_batch that never returns, a failing source.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "vigil/plugin_api.h"

namespace {
int g_state = 1;
const vigil_event kEvent = {0, 1, 1, -1, 0, "ev", nullptr};
}  // namespace

extern "C" {

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_required_api_version(void) {
#ifdef VIGIL_TEST_BAD_VERSION
  return "2.0";
#else
  return VIGIL_PLUGIN_API_VERSION_STRING;
#endif
}
VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_name(void) { return VIGIL_TEST_NAME; }
VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_version(void) { return "0.0.1"; }
VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_description(void) { return "misbehaves for tests"; }

VIGIL_PLUGIN_EXPORT vigil_plugin_state* vigil_plugin_init(const vigil_host*, const char*, char* err, size_t errlen) {
#ifdef VIGIL_TEST_CRASH
  raise(SIGSEGV);
#endif
#ifdef VIGIL_TEST_FAIL_INIT
  std::snprintf(err, errlen, "the device is gone");
  return nullptr;
#endif
  return reinterpret_cast<vigil_plugin_state*>(&g_state);
}
VIGIL_PLUGIN_EXPORT void vigil_plugin_destroy(vigil_plugin_state*) {}
VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_last_error(vigil_plugin_state*) { return "the source broke"; }

VIGIL_PLUGIN_EXPORT const char* vigil_plugin_get_event_source(void) { return VIGIL_TEST_NAME; }

#ifndef VIGIL_TEST_NO_NEXT_BATCH
VIGIL_PLUGIN_EXPORT vigil_rc vigil_plugin_next_batch(vigil_plugin_state*, uint32_t, uint32_t,
                                                     const vigil_event** events, uint32_t* n) {
#ifdef VIGIL_TEST_BLOCK
  for (;;) pause();  // ignores the timeout: a plugin stuck in a driver call
#endif
#ifdef VIGIL_TEST_FAIL_SOURCE
  static int calls = 0;
  if (++calls > 3) return VIGIL_RC_FAILURE;
  *events = &kEvent;
  *n = 1;
  return VIGIL_RC_OK;
#endif
  *events = nullptr;
  *n = 0;
  return VIGIL_RC_TIMEOUT;
}
#endif

}  // extern "C"
