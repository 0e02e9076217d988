/* oc_args.c - the command line of one `orrery` subcommand: options and
 * positional arguments parsed against the command's table entry (long
 * `--name value` / `--name=value`, short `-x value`, flags, `--` ending the
 * options), the --help text printed from the same entry, and the mapping
 * from a status to the exit code scripts rely on. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "oc.h"
#include "orr_alloc.h"

const oc_opt oc_global_opts[] = {
    {"profile", 'p', "NAME", "use this profile of the config file (default: its current one)", 0},
    {"url", 0, "URL", "galaxyd's address (overrides the profile and ORRERY_URL)", 0},
    {"token", 0, "TOKEN", "API token (overrides the profile and ORRERY_TOKEN)", 0},
    {"output", 'o', "FORMAT", "table (default) or json", 0},
    {"quiet", 'q', NULL, "no progress or summary lines, only what was asked for and errors", 0},
    {"verbose", 'v', NULL, "log every API call on stderr (logfmt: method, path, status, ms)", 0},
    {"help", 'h', NULL, "show this help", 0},
    {NULL, 0, NULL, NULL, 0},
};

const oc_cmd *oc_cmd_find(const char *name)
{
    for (size_t i = 0; i < oc_ncommands; i++)
        if (strcmp(oc_commands[i].name, name) == 0)
            return &oc_commands[i];
    return NULL;
}

static const oc_opt *oc__find_long(const oc_cmd *cmd, const char *name, size_t n)
{
    const oc_opt *tables[2] = {cmd->opts, oc_global_opts};
    for (int t = 0; t < 2; t++)
        for (const oc_opt *o = tables[t]; o && o->name; o++)
            if (strlen(o->name) == n && strncmp(o->name, name, n) == 0)
                return o;
    return NULL;
}

static const oc_opt *oc__find_short(const oc_cmd *cmd, char c)
{
    const oc_opt *tables[2] = {cmd->opts, oc_global_opts};
    for (int t = 0; t < 2; t++)
        for (const oc_opt *o = tables[t]; o && o->name; o++)
            if (o->short_name && o->short_name == c)
                return o;
    return NULL;
}

static void oc__add_opt(oc_args *a, const oc_opt *o, const char *val)
{
    a->opts = orr_xrealloc(a->opts, (size_t)(a->nopts + 1) * sizeof(*a->opts));
    a->opts[a->nopts].opt = o;
    a->opts[a->nopts].val = val;
    a->nopts++;
}

int oc_args_parse(const oc_cmd *cmd, int argc, char **argv, oc_args *a, FILE *err)
{
    memset(a, 0, sizeof(*a));
    a->pos = orr_xcalloc((size_t)argc + 1, sizeof(*a->pos));
    int only_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        if (only_pos || s[0] != '-' || s[1] == 0) {
            a->pos[a->npos++] = s;
            continue;
        }
        if (strcmp(s, "--") == 0) {
            only_pos = 1;
            continue;
        }
        const oc_opt *o;
        const char *val = NULL;
        if (s[1] == '-') {
            const char *name = s + 2, *eq = strchr(name, '=');
            size_t n = eq ? (size_t)(eq - name) : strlen(name);
            o = oc__find_long(cmd, name, n);
            if (!o) {
                fprintf(err, "orrery %s: unknown option --%.*s (see orrery %s --help)\n", cmd->name,
                        (int)n, name, cmd->name);
                goto usage;
            }
            if (eq) {
                if (!o->arg) {
                    fprintf(err, "orrery %s: --%s takes no value\n", cmd->name, o->name);
                    goto usage;
                }
                val = eq + 1;
            }
        } else {
            o = oc__find_short(cmd, s[1]);
            if (!o) {
                fprintf(err, "orrery %s: unknown option -%c (see orrery %s --help)\n", cmd->name,
                        s[1], cmd->name);
                goto usage;
            }
            if (s[2]) {
                if (!o->arg) {
                    fprintf(err, "orrery %s: -%c takes no value\n", cmd->name, s[1]);
                    goto usage;
                }
                val = s + 2;
            }
        }
        if (o->arg && !val) {
            if (i + 1 >= argc) {
                fprintf(err, "orrery %s: --%s needs a value (%s)\n", cmd->name, o->name, o->arg);
                goto usage;
            }
            val = argv[++i];
        }
        if (!o->repeat && o->arg && oc_arg(a, o->name) && strcmp(o->name, "output") != 0) {
            fprintf(err, "orrery %s: --%s given twice\n", cmd->name, o->name);
            goto usage;
        }
        oc__add_opt(a, o, val ? val : "");
    }
    return OC_EXIT_OK;
usage:
    oc_args_free(a);
    return OC_EXIT_USAGE;
}

void oc_args_free(oc_args *a)
{
    free(a->opts);
    free(a->pos);
    memset(a, 0, sizeof(*a));
}

const char *oc_arg(const oc_args *a, const char *name)
{
    const char *v = NULL;
    for (int i = 0; i < a->nopts; i++)
        if (strcmp(a->opts[i].opt->name, name) == 0)
            v = a->opts[i].val;
    return v;
}

int oc_flag(const oc_args *a, const char *name)
{
    return oc_arg(a, name) != NULL;
}

const char *oc_arg_nth(const oc_args *a, const char *name, int n)
{
    for (int i = 0; i < a->nopts; i++)
        if (strcmp(a->opts[i].opt->name, name) == 0 && n-- == 0)
            return a->opts[i].val;
    return NULL;
}

static void oc__opt_lines(const oc_opt *opts, FILE *f)
{
    for (const oc_opt *o = opts; o && o->name; o++) {
        char head[96];
        int n = 0;
        if (o->short_name)
            n = snprintf(head, sizeof(head), "-%c, ", o->short_name);
        snprintf(head + n, sizeof(head) - (size_t)n, "--%s%s%s", o->name, o->arg ? " " : "",
                 o->arg ? o->arg : "");
        fprintf(f, "  %-26s", head);
        if (strlen(head) > 26)
            fprintf(f, "\n%29s", "");
        char help[512];
        snprintf(help, sizeof(help), "%s%s", o->help, o->repeat ? " (repeatable)" : "");
        /* continuation lines line up under the first */
        const char *s = help;
        int col = 29;
        while (*s) {
            while (*s == ' ')
                s++;
            size_t n = strcspn(s, " ");
            if (!n)
                break;
            if (col > 29 && col + 1 + (int)n > 100) {
                fprintf(f, "\n%29s", "");
                col = 29;
            }
            col += fprintf(f, "%s%.*s", col > 29 ? " " : " ", (int)n, s);
            s += n;
        }
        fputc('\n', f);
    }
}

/* Text wrapped at 78 columns, each line indented by indent spaces. */
static void oc__wrap(FILE *f, const char *s, int indent)
{
    int col = 0;
    while (*s) {
        while (*s == ' ')
            s++;
        size_t n = strcspn(s, " ");
        if (!n)
            break;
        if (col && col + 1 + (int)n > 78) {
            fputc('\n', f);
            col = 0;
        }
        if (!col)
            col = fprintf(f, "%*s", indent, "");
        else
            col += fprintf(f, " ");
        col += fprintf(f, "%.*s", (int)n, s);
        s += n;
    }
    fputc('\n', f);
}

void oc_cmd_help(const oc_cmd *cmd, FILE *f)
{
    fprintf(f, "usage: orrery %s%s%s\n\n%s\n", cmd->name, *cmd->usage ? " " : "", cmd->usage,
            cmd->summary);
    if (cmd->help && *cmd->help) {
        fputc('\n', f);
        oc__wrap(f, cmd->help, 0);
    }
    if (cmd->opts && cmd->opts->name) {
        fprintf(f, "\noptions:\n");
        oc__opt_lines(cmd->opts, f);
    }
    fprintf(f, "\ncommon options:\n");
    oc__opt_lines(oc_global_opts, f);
    fprintf(f, "\nexit codes: 0 done, 1 failed, 2 usage or validation, 3 not found, 4 conflict\n");
}

void oc_main_help(FILE *f)
{
    fprintf(f, "usage: orrery COMMAND [ARGS...] [OPTIONS]\n\n"
               "The command line of Orrery: tasks as code (validate, apply, export), instance\n"
               "work and logs, over galaxyd's REST API.\n\ncommands:\n");
    for (size_t i = 0; i < oc_ncommands; i++)
        fprintf(f, "  %-14s %s\n", oc_commands[i].name, oc_commands[i].summary);
    fprintf(f, "\n`orrery COMMAND --help` tells more. Profiles live in "
               "$XDG_CONFIG_HOME/orrery/config\n(or ~/.config/orrery/config); ORRERY_URL and "
               "ORRERY_TOKEN override them.\n"
               "exit codes: 0 done, 1 failed, 2 usage or validation, 3 not found, 4 conflict\n");
}

int oc_exit_for(orr_status s)
{
    switch (s) {
    case ORR_OK:
        return OC_EXIT_OK;
    case ORR_EINVAL:
    case ORR_ETOOBIG:
        return OC_EXIT_USAGE;
    case ORR_ENOTFOUND:
        return OC_EXIT_NOTFOUND;
    case ORR_EEXIST:
    case ORR_ESTATE:
    case ORR_ECONFLICT:
        return OC_EXIT_CONFLICT;
    default:
        return OC_EXIT_FAILED;
    }
}

int oc_fail(oc_ctx *ctx, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("orrery: ", ctx->err);
    vfprintf(ctx->err, fmt, ap);
    fputc('\n', ctx->err);
    va_end(ap);
    return code;
}

int oc_fail_err(oc_ctx *ctx, const orr_err *e)
{
    if (e->field[0])
        fprintf(ctx->err, "orrery: %s: %s: %s\n", orr_status_msg(e->code), e->field, e->msg);
    else
        fprintf(ctx->err, "orrery: %s: %s\n", orr_status_msg(e->code), e->msg);
    return oc_exit_for(e->code);
}
