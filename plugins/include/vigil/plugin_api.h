/* vigil plugin ABI, version 1.1 (1.1 added vigil_plugin_get_suggested_output_fields).
 *
 * A plugin is a shared object that vigil loads with dlopen. It can be
 *
 *   - an event source: its events enter vigil's pipeline like the kernel's,
 *     get the same process, container and pod enrichment (by pid), carry the
 *     plugin's source name (evt.source), and are captured and replayed;
 *   - a field extractor: it adds `prefix.*` fields that rules and outputs use
 *     on the events of the sources it names;
 *   - or both.
 *
 * The plugin exports plain C functions with the names below. Every plugin
 * exports the "required" group; a source exports the "source" group; an
 * extractor exports the "extract" group. A plugin that exports part of a group
 * is refused with a message naming the symbol it lacks.
 *
 * Versioning: vigil refuses a plugin whose vigil_plugin_get_required_api_version()
 * has another major, or a higher minor, than the VIGIL_PLUGIN_API_VERSION_* this
 * vigil was built with. Minors only add: new optional symbols, new trailing
 * struct members behind a size field.
 *
 * Threads: vigil calls vigil_plugin_next_batch() from one thread of its own per
 * plugin instance (the source thread), and vigil_plugin_extract() from the
 * pipeline thread; the two may run at the same time. init and destroy run with
 * neither running. A plugin whose extraction reads only the event it is given
 * (the common case) needs no lock.
 *
 * Memory: everything a plugin returns (strings, events, field values) stays
 * plugin-owned and valid until the next call of the same function on the same
 * state (destroy ends all). vigil copies what it keeps. Strings are
 * NUL-terminated UTF-8.
 *
 * Bounds: vigil bounds what it takes from a plugin: events of at most
 * VIGIL_PLUGIN_MAX_EVENT_DATA bytes of data (longer ones are dropped and
 * counted), event names of at most 63 bytes, string field values of at most
 * 4096 bytes (longer are cut), at most VIGIL_PLUGIN_MAX_BATCH events per batch.
 */
#ifndef VIGIL_PLUGIN_API_H
#define VIGIL_PLUGIN_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Plugins build with hidden visibility (vigil_add_plugin) and mark the ABI's
 * functions with VIGIL_PLUGIN_EXPORT. */
#define VIGIL_PLUGIN_EXPORT __attribute__((visibility("default")))

#define VIGIL_PLUGIN_API_VERSION_MAJOR 1
#define VIGIL_PLUGIN_API_VERSION_MINOR 1
#define VIGIL_PLUGIN_API_VERSION_STRING "1.1"

#define VIGIL_PLUGIN_MAX_EVENT_DATA 65536u
#define VIGIL_PLUGIN_MAX_BATCH 1024u

/* Return codes. */
typedef enum vigil_rc {
  VIGIL_RC_OK = 0,
  VIGIL_RC_FAILURE = 1, /* see vigil_plugin_get_last_error() */
  VIGIL_RC_TIMEOUT = 2, /* next_batch: nothing within the timeout (not an error) */
  VIGIL_RC_EOF = 3      /* next_batch: the source is done; vigil stops calling it */
} vigil_rc;

/* The plugin's state: whatever init returns, opaque to vigil. */
typedef struct vigil_plugin_state vigil_plugin_state;

/* Log levels for vigil_host.log. */
typedef enum vigil_log_level {
  VIGIL_LOG_DEBUG = 0,
  VIGIL_LOG_INFO = 1,
  VIGIL_LOG_WARN = 2,
  VIGIL_LOG_ERROR = 3
} vigil_log_level;

/* What vigil offers a plugin. Valid from init until destroy returns. */
typedef struct vigil_host {
  uint32_t size; /* sizeof(vigil_host) as vigil built it */
  void* ctx;     /* pass back to the functions below */
  /* Writes one line to vigil's log, prefixed with the plugin's name. Any thread. */
  void (*log)(void* ctx, vigil_log_level level, const char* msg);
} vigil_host;

/* One event from a source plugin. */
typedef struct vigil_event {
  uint64_t ts_ns;      /* wall-clock ns since the Unix epoch; 0: vigil stamps the time it took the event */
  uint32_t pid;        /* the process the event is about (host pid numbering); 0: none */
  uint32_t tid;        /* its thread; 0: same as pid */
  int32_t gpu_minor;   /* the NVIDIA device minor (/dev/nvidiaN) it is about; -1: none */
  uint32_t data_len;   /* bytes at data (at most VIGIL_PLUGIN_MAX_EVENT_DATA) */
  const char* name;    /* the kind of event within the source ("process_sample"); not NULL */
  const uint8_t* data; /* the plugin's own encoding; vigil stores it and hands it back to extract */
} vigil_event;

/* Field types. */
typedef enum vigil_field_type {
  VIGIL_FIELD_STRING = 1,
  VIGIL_FIELD_UINT64 = 2,
  VIGIL_FIELD_INT64 = 3,
  VIGIL_FIELD_BOOL = 4
} vigil_field_type;

/* Whether a field takes an argument: name[arg]. */
typedef enum vigil_field_arg { VIGIL_ARG_NONE = 0, VIGIL_ARG_OPTIONAL = 1, VIGIL_ARG_REQUIRED = 2 } vigil_field_arg;

typedef struct vigil_field_info {
  const char* name; /* "nvml.sm_util": lower case, dotted; must start with the plugin's prefix */
  vigil_field_type type;
  vigil_field_arg arg;
  const char* description; /* one sentence, for `vigil fields` */
} vigil_field_info;

/* One field to extract from one event. vigil fills the first three members,
 * the plugin the rest. */
typedef struct vigil_extract_request {
  uint32_t field;     /* index into the plugin's field table */
  const char* arg;    /* the argument, or NULL when none was given */
  uint32_t has_value; /* plugin: 1 when the field has a value for this event, else 0 (<NA>) */
  union {
    const char* str; /* VIGIL_FIELD_STRING */
    uint64_t u64;    /* VIGIL_FIELD_UINT64, VIGIL_FIELD_BOOL (0 or 1) */
    int64_t i64;     /* VIGIL_FIELD_INT64 */
  } value;
} vigil_extract_request;

/* ---- required ---------------------------------------------------------- */

/* "1.1": the ABI version the plugin was built against
 * (VIGIL_PLUGIN_API_VERSION_STRING). */
const char* vigil_plugin_get_required_api_version(void);
const char* vigil_plugin_get_name(void);    /* "nvml": [a-z0-9_]+, at most 32 bytes */
const char* vigil_plugin_get_version(void); /* the plugin's own version, "0.3.1" */
const char* vigil_plugin_get_description(void);
/* Creates the plugin's state from its init_config, given as a JSON document
 * ("{}" when none). On failure returns NULL and writes a one-line reason into
 * err (at most errlen bytes with the NUL). */
vigil_plugin_state* vigil_plugin_init(const vigil_host* host, const char* config_json, char* err, size_t errlen);
void vigil_plugin_destroy(vigil_plugin_state* s);
/* The last failure's reason, for a call that returned VIGIL_RC_FAILURE. */
const char* vigil_plugin_get_last_error(vigil_plugin_state* s);

/* ---- source ------------------------------------------------------------ */

/* The source name its events carry (evt.source, a rule's `source:`):
 * [a-z0-9_]+, not "syscall". */
const char* vigil_plugin_get_event_source(void);
/* Returns up to `max` events in *events (an array the plugin owns) and their
 * count in *n. Waits at most timeout_ms for the first one (VIGIL_RC_TIMEOUT
 * with *n = 0 when none came). VIGIL_RC_EOF: no more events, ever. */
vigil_rc vigil_plugin_next_batch(vigil_plugin_state* s, uint32_t max, uint32_t timeout_ms, const vigil_event** events,
                                 uint32_t* n);

/* ---- extract ----------------------------------------------------------- */

/* The plugin's fields: a table that lives as long as the library. */
const vigil_field_info* vigil_plugin_get_fields(uint32_t* n);
/* The sources whose events the fields apply to, as a NULL-terminated array;
 * NULL: only the plugin's own source. */
const char* const* vigil_plugin_get_extract_event_sources(void); /* optional */
/* Since 1.1. Fields of the table every alert about the sources they read
 * should carry (Falco's "suggested output" fields), as a NULL-terminated
 * array of names; NULL: none. With append_output's suggested_output (on by
 * default) vigil appends each to the outputs of those sources' rules as
 * "name_with_underscores=%name", unless a rule's output prints it already. */
const char* const* vigil_plugin_get_suggested_output_fields(void); /* optional */
/* Fills reqs[0..n) for one event. `ev` is an event this plugin's source made
 * (live, or read back from a capture). */
vigil_rc vigil_plugin_extract(vigil_plugin_state* s, const vigil_event* ev, vigil_extract_request* reqs, uint32_t n);

#ifdef __cplusplus
}
#endif

#endif /* VIGIL_PLUGIN_API_H */
