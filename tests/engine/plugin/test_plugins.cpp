// Plugins that misbehave on purpose, one per VIGIL_TEST_* definition, for the
// host's tests: a wrong ABI version, a source without next_batch, a crash in
// init, a next_batch that never returns, a failing source, an extractor that
// suggests an output field it does not have.
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

#ifdef VIGIL_TEST_BAD_SUGGESTION
// An extractor that suggests an output field it does not have.
VIGIL_PLUGIN_EXPORT const vigil_field_info* vigil_plugin_get_fields(uint32_t* n) {
  static const vigil_field_info kFields[] = {{"bad_suggestion.x", VIGIL_FIELD_STRING, VIGIL_ARG_NONE, "x"}};
  *n = 1;
  return kFields;
}
VIGIL_PLUGIN_EXPORT vigil_rc vigil_plugin_extract(vigil_plugin_state*, const vigil_event*, vigil_extract_request* r,
                                                  uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) r[i].has_value = 0;
  return VIGIL_RC_OK;
}
VIGIL_PLUGIN_EXPORT const char* const* vigil_plugin_get_suggested_output_fields(void) {
  static const char* const kSuggested[] = {"bad_suggestion.x", "bad_suggestion.y", nullptr};
  return kSuggested;
}
#endif

}  // extern "C"
