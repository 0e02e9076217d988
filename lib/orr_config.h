/*
 * orr_config.h - the configuration format shared by every Orrery daemon.
 *
 * File format (deploy/orrery.conf.sample is a full example):
 *
 *   # comment
 *   [halley]
 *   listen = 127.0.0.1:7070
 *   pool_size = 8
 *
 * Each daemon declares the keys it knows in a schema (a table of orr_cfg_key).
 * Values come, lowest precedence first, from the key's default, the file, and
 * the environment variable ORRERY_<SECTION>_<KEY> (upper-cased). Every daemon
 * also knows [log] level and [log] file.
 *
 * One file can serve the whole platform: a daemon skips the sections of the
 * other daemons ([halley], [galaxy], [kepler], [executor], [wormhole], [sort],
 * [stack]) that are not in its schema; their owners check them.
 *
 * An unknown section or key, a bad value or a missing required key is an error
 * whose field is "section.key" and whose message names the file and line (or
 * the environment variable) — e.g.
 *   "orrery.conf:12: [halley] pool_size: must be an integer between 1 and 256"
 *
 * Secrets in files: every secret key K also has a key K_file (e.g. [halley]
 * token_file, [galaxy] jwt_secret_file, [halley] secret_key_file) naming a
 * file that holds the value, read once at load: the file must be a regular
 * file owned by the process's effective user with no access for group or
 * others (mode 0600 or 0400), not empty, at most 64 KiB; one trailing
 * newline is dropped. Otherwise, or when it cannot be opened, loading fails
 * naming the file and the key. K and K_file set at the same level (both in
 * the file, or both in the environment) is an error; an environment value
 * wins over the file's, whichever of the two it sets.
 *
 * Types: string, secret (a string never printed), int, bool (true/false/yes/
 * no/on/off/1/0), duration (number + ms|s|m|h|d, read as milliseconds) and
 * size (number + optional k|m|g, KiB units, read as bytes).
 */
#ifndef ORR_CONFIG_H
#define ORR_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#include "orr_status.h"

typedef enum orr_cfg_type {
    ORR_CFG_STRING,
    ORR_CFG_SECRET,
    ORR_CFG_INT,
    ORR_CFG_BOOL,
    ORR_CFG_DURATION,
    ORR_CFG_SIZE,
} orr_cfg_type;

typedef struct orr_cfg_key {
    const char *section;
    const char *key;
    orr_cfg_type type;
    const char *def; /* default as written in a file; NULL = no default */
    int required;    /* 1: must be set by file or environment */
    int64_t min;     /* bounds for int/duration/size; min == max == 0: unbounded */
    int64_t max;
    const char *help;
} orr_cfg_key;

typedef struct orr_config orr_config;

/* Load schema keys from path (NULL = no file) and the environment envp (NULL =
 * the process environment). On success *out owns everything; free with
 * orr_config_free(). On failure *out is NULL and err says file, line and key. */
orr_status orr_config_load(const orr_cfg_key *schema, size_t n, const char *path, char *const *envp,
                           orr_config **out, orr_err *err);
void orr_config_free(orr_config *cfg);

/* Getters of a schema key; an unknown key aborts (a programming error).
 * Strings are owned by cfg; NULL if unset with no default. */
const char *orr_config_str(const orr_config *cfg, const char *section, const char *key);
int64_t orr_config_int(const orr_config *cfg, const char *section, const char *key);
int orr_config_bool(const orr_config *cfg, const char *section, const char *key);
/* Where the value came from: "default", "FILE:LINE" or "env ORRERY_X_Y". */
const char *orr_config_origin(const orr_config *cfg, const char *section, const char *key);

/* Print the effective configuration in the file format, secrets as "<set>". */
void orr_config_print(const orr_config *cfg, FILE *f);

/* The usual daemon start: parse leading options of argv
 *   --config FILE   --print-config   --help
 * load the config, and open the log as [log] says. On --print-config/--help it
 * prints and sets *exit_code (0) — the caller returns it. On a config error it
 * prints the message to stderr and sets *exit_code = 2. *argi is the index of
 * the first argument that is not an option (a subcommand). prog names the
 * daemon in messages. Returns NULL whenever the caller should exit. */
orr_config *orr_config_from_args(const char *prog, int argc, char **argv, const orr_cfg_key *schema,
                                 size_t n, int *argi, int *exit_code);

/* Parse helpers, exposed for tests and for other parsers. */
orr_status orr_config_parse_duration(const char *s, int64_t *ms);
orr_status orr_config_parse_size(const char *s, int64_t *bytes);
orr_status orr_config_parse_bool(const char *s, int *out);

#endif
