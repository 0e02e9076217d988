/*
 * oc.h - the `orrery` command line: what every subcommand shares.
 *
 * One table (oc_commands, oc_cmds.c) lists every subcommand with its
 * arguments, options, summary and help text; the dispatcher, `--help`, shell
 * completion (oc_complete.c) and the man page (`orrery man`) are all
 * generated from it, so they cannot drift apart. Adding a command = one
 * function and one table line.
 *
 * Exit codes (stable, for scripts):
 *   0 done, 1 failed, 2 usage or validation, 3 not found, 4 conflict.
 */
#ifndef OC_H
#define OC_H

#include <jansson.h>
#include <stdio.h>

#include "orr_status.h"

enum {
    OC_EXIT_OK = 0,
    OC_EXIT_FAILED = 1,
    OC_EXIT_USAGE = 2,
    OC_EXIT_NOTFOUND = 3,
    OC_EXIT_CONFLICT = 4,
};

/* One option of a command. arg NULL = a flag; repeat = may be given more
 * than once (every value is kept). */
typedef struct oc_opt {
    const char *name; /* long name, without "--" */
    char short_name;  /* 0 = none */
    const char *arg;  /* metavariable ("TIME"), NULL for a flag */
    const char *help;
    int repeat;
} oc_opt;

/* Parsed command line of one command: options (in order given) and
 * positional arguments. Strings point into argv. */
typedef struct oc_args {
    struct {
        const oc_opt *opt;
        const char *val; /* "" for a flag */
    } * opts;
    int nopts;
    const char **pos;
    int npos;
} oc_args;

/* What a command runs with: where the API is and how to authenticate. */
typedef struct oc_ctx {
    const char *profile; /* name of the profile in use */
    char *url;           /* base URL without trailing slash, e.g. http://127.0.0.1:8080 */
    char *token;         /* bearer token, NULL when none */
    const char *config_path;
    int json;  /* --output json */
    int quiet; /* --quiet */
    FILE *out; /* stdout */
    FILE *err; /* stderr */
} oc_ctx;

typedef struct oc_cmd {
    const char *name;
    const char *usage;   /* arguments after the name: "ID [--downstream]" */
    const char *summary; /* one line */
    const char *help;    /* paragraphs; blank line between them */
    const oc_opt *opts;  /* terminated by {NULL} */
    /* words the first positional argument completes to (NULL-terminated),
     * or NULL; "@files" completes file names */
    const char *const *words;
    int needs_api; /* 1: resolve the profile before running */
    int (*run)(oc_ctx *ctx, const oc_args *a);
} oc_cmd;

extern const oc_cmd oc_commands[];
extern const size_t oc_ncommands;
/* Options every command takes (--profile, --url, --token, --output, --help). */
extern const oc_opt oc_global_opts[];

/* Look a command up by name; NULL if none. */
const oc_cmd *oc_cmd_find(const char *name);

/* Parse argv (after the command name) against cmd's options and the global
 * ones. On a usage error: message on err, returns OC_EXIT_USAGE. a->opts and
 * a->pos are malloc'ed: free with oc_args_free. */
int oc_args_parse(const oc_cmd *cmd, int argc, char **argv, oc_args *a, FILE *err);
void oc_args_free(oc_args *a);
/* Last value of option name, or NULL when not given. */
const char *oc_arg(const oc_args *a, const char *name);
int oc_flag(const oc_args *a, const char *name);
/* The i-th value (0-based) of a repeated option, NULL past the end. */
const char *oc_arg_nth(const oc_args *a, const char *name, int i);

/* Print the command's --help text. */
void oc_cmd_help(const oc_cmd *cmd, FILE *f);
/* The top-level help: every command with its summary. */
void oc_main_help(FILE *f);

/* Exit code for an orr_status: EINVAL 2, ENOTFOUND 3, EEXIST/ESTATE/
 * ECONFLICT 4, OK 0, anything else 1. */
int oc_exit_for(orr_status s);

/* "orrery: " + message on ctx->err; returns code. */
int oc_fail(oc_ctx *ctx, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Print an API error ("orrery: not found: no such task (field id)") and
 * return its exit code. */
int oc_fail_err(oc_ctx *ctx, const orr_err *e);

/* Generators over the command table (oc_complete.c). */
void oc_completion_bash(FILE *f);
void oc_completion_zsh(FILE *f);
void oc_man_page(FILE *f);

#endif
