/* oc_cmds.c - the command table of `orrery`: every subcommand's name,
 * arguments, options, summary and help text, in one place. The dispatcher,
 * --help, shell completion and the man page all read it. Also the helpers
 * the commands share (tables, JSON output, task lookup, ids and times). */
#include <stdlib.h>
#include <string.h>

#include "oc_cmds.h"
#include "oc_http.h"
#include "orr_alloc.h"
#include "orr_buf.h"

static const char *const oc_files[] = {"@files", NULL};
static const char *const oc_ls_words[] = {"tasks",     "instances", "workflows",
                                          "executors", "pools",     NULL};
static const char *const oc_shells[] = {"bash", "zsh", NULL};

static const oc_opt oc_no_opts[] = {{NULL, 0, NULL, NULL, 0}};

static const oc_opt oc_login_opts[] = {
    {"user", 'u', "NAME", "user name (asked for when not given)", 0},
    {"token-name", 0, "NAME", "name of the API token to create (default orrery-cli)", 0},
    {"expires", 0, "TIME", "expiry of the token (RFC 3339; default: never)", 0},
    {NULL, 0, NULL, NULL, 0},
};

static const oc_opt oc_apply_opts[] = {
    {"yes", 'y', NULL, "carry the plan out (without it, only print the plan)", 0},
    {"prune", 0, NULL,
     "also deactivate the tasks of the files' teams and workflows that the files no longer hold",
     0},
    {NULL, 0, NULL, NULL, 0},
};

static const oc_opt oc_export_opts[] = {
    {"team", 't', "TEAM", "only this team's tasks and workflows", 0},
    {"workflow", 'w', "NAME", "only this workflow and its tasks", 0},
    {"dir", 'd', "DIR", "write one file per object under DIR instead of to stdout", 0},
    {NULL, 0, NULL, NULL, 0},
};

static const oc_opt oc_run_opts[] = {
    {"at", 0, "TIME",
     "the slot to run (a fire time of the schedule; default: the latest one, now for a task "
     "without a schedule)",
     0},
    {"ignore-upstreams", 0, NULL, "run without waiting for its dependencies", 0},
    {"reason", 'r', "TEXT", "why (kept in the instance's history and the audit log)", 0},
    {"param", 0, "KEY=VALUE", "a value of one of the task's parameters for this run", 1},
    {NULL, 0, NULL, NULL, 0},
};

static const oc_opt oc_rerun_opts[] = {
    {"downstream", 0, NULL, "also rerun the instances that depend on it in the same cycle", 0},
    {"upstream", 0, NULL, "also rerun the instances it depends on in the same cycle", 0},
    {"dry-run", 'n', NULL, "list the instances it would rerun, change nothing", 0},
    {"reason", 'r', "TEXT", "why (kept in the instance's history)", 0},
    {"from-scratch", 0, NULL, "transfer tasks: do not resume the splits earlier attempts committed",
     0},
    {NULL, 0, NULL, NULL, 0},
};

static const oc_opt oc_rerun_failed_opts[] = {
    {"at", 0, "TIME", "the workflow's run: its schedule time (required)", 0},
    {"dry-run", 'n', NULL, "list the instances it would rerun, change nothing", 0},
    {"reason", 'r', "TEXT", "why (kept in the instances' history)", 0},
    {NULL, 0, NULL, NULL, 0},
};

static const oc_opt oc_action_opts[] = {
    {"reason", 'r', "TEXT", "why (kept in the instance's history)", 0},
    {NULL, 0, NULL, NULL, 0},
};

static const oc_opt oc_backfill_opts[] = {
    {"from", 0, "TIME", "first schedule time (inclusive; RFC 3339 or YYYY-MM-DD)", 0},
    {"to", 0, "TIME", "end of the range (exclusive)", 0},
    {"downstream", 0, NULL, "also create the dependent tasks' instances of those cycles", 0},
    {"mode", 'm', "MODE", "all (default: every cycle at once), serial or parallel", 0},
    {"max-cycles", 0, "N", "with parallel: at most N cycles at a time (1..100)", 0},
    {"priority", 0, "N", "priority of the new instances (-1000..1000)", 0},
    {"dry-run", 'n', NULL, "list what it would create, create nothing", 0},
    {"param", 0, "KEY=VALUE", "a value of one of the task's parameters for these instances", 1},
    {NULL, 0, NULL, NULL, 0},
};

static const oc_opt oc_logs_opts[] = {
    {"follow", 'f', NULL, "follow the live log to the end of the run", 0},
    {"attempt", 'a', "N", "this attempt (default: the newest)", 0},
    {"timestamps", 't', NULL, "each line behind the time executord read it (without -f)", 0},
    {NULL, 0, NULL, NULL, 0},
};

static const oc_opt oc_ls_opts[] = {
    {"team", 't', "TEAM", "tasks, instances, workflows: of this team", 0},
    {"name", 'n', "PREFIX", "tasks: whose name starts with PREFIX", 0},
    {"all", 0, NULL, "tasks: inactive ones too", 0},
    {"task", 0, "TASK", "instances: of this task (name or id)", 0},
    {"state", 's', "STATES", "instances: in these states (comma-separated)", 0},
    {"executor", 0, "ID", "instances: on this executor", 0},
    {"from", 0, "TIME", "instances: scheduled at or after", 0},
    {"to", 0, "TIME", "instances: scheduled before", 0},
    {"limit", 'l', "N", "at most N rows (default 100, at most 1000)", 0},
    {NULL, 0, NULL, NULL, 0},
};

const oc_cmd oc_commands[] = {
    {"login", "[URL]", "Log in and keep an API token in a profile",
     "Asks for the password (without echo; read from stdin when it is not a terminal), "
     "creates an API token for the user through the API and keeps it with the URL in the "
     "profile (--profile, default \"default\") of the config file, written with mode 0600. "
     "The login session itself is ended at once: only the token stays.",
     oc_login_opts, NULL, 0, oc_run_login},
    {"validate", "PATH...", "Check spec files offline",
     "Reads YAML or JSON spec files (a folder: its *.yaml, *.yml and *.json) and checks each "
     "document against its schema (schema/task.schema.json for tasks), with no platform. "
     "Problems are printed as FILE:LINE: FIELD: MESSAGE; exit code 2 when there are any.",
     oc_no_opts, oc_files, 0, oc_run_validate},
    {"apply", "PATH... [--yes] [--prune]", "Make the platform match spec files",
     "Reads the files as `validate` does, compares them with the platform and prints the "
     "plan: create, update (with the fields that change), unchanged, deactivate. --yes "
     "carries it out in order (pools, data sources, tasks upstream first, workflows, "
     "deactivations). Applying the same files again changes nothing. Kinds: task, workflow, "
     "pool, datasource (calendars and alert rules are not in the platform yet).",
     oc_apply_opts, oc_files, 1, oc_run_apply},
    {"export", "[--team TEAM] [--workflow NAME] [--dir DIR]", "Write today's specs as files",
     "Writes the active tasks, the workflows, pools and data sources (never a password) as "
     "spec documents: to stdout as one YAML stream, or with --dir one file per object "
     "(DIR/tasks/NAME.yaml, DIR/workflows/, DIR/pools/, DIR/datasources/). Applying what "
     "export wrote changes nothing. --team and --workflow limit it to tasks and workflows.",
     oc_export_opts, NULL, 1, oc_run_export},
    {"run", "TASK [--at TIME] [--ignore-upstreams]", "Run a task now",
     "Runs the instance of TASK (name or id) for one slot of its schedule at once: created "
     "if missing, released if waiting, a new attempt if finished. keplerd dispatches it "
     "without waiting for its schedule time (and with --ignore-upstreams without checking "
     "its dependencies). A slot whose instance is ready or running is a conflict (exit 4).",
     oc_run_opts, NULL, 1, oc_run_run},
    {"rerun", "ID... [--downstream|--upstream] [--dry-run] [--from-scratch]",
     "Rerun finished instances",
     "A new attempt of each instance; with --downstream also of the instances that depend on "
     "it in the same cycle (directly or not), with --upstream of those it depends on. The set "
     "is one change: a member that is running refuses it all (exit 4). Waiting and suspended "
     "members are left as they are. A transfer task's new attempt resumes the splits earlier "
     "attempts committed, unless --from-scratch.",
     oc_rerun_opts, NULL, 1, oc_run_rerun},
    {"rerun-failed", "WORKFLOW --at TIME [--dry-run]",
     "Rerun the failed instances of a workflow's run",
     "The failed, killed and timed-out instances of the workflow's tasks at that schedule "
     "time go back to waiting, in one change; their waiting dependents then run as their "
     "dependencies are met.",
     oc_rerun_failed_opts, NULL, 1, oc_run_rerun_failed},
    {"kill", "ID...", "Kill running instances", "Stops the instances' processes; they end killed.",
     oc_action_opts, NULL, 1, oc_run_kill},
    {"mark-success", "ID...", "Mark instances as succeeded",
     "Their dependents may go on as if they had succeeded.", oc_action_opts, NULL, 1,
     oc_run_mark_success},
    {"suspend", "ID...", "Hold waiting instances back",
     "Waiting or ready instances stay suspended until resumed.", oc_action_opts, NULL, 1,
     oc_run_suspend},
    {"resume", "ID...", "Resume suspended instances", "They wait for their turn again.",
     oc_action_opts, NULL, 1, oc_run_resume},
    {"backfill", "TASK --from TIME --to TIME [--downstream] [--mode MODE]",
     "Create a task's instances over a time range",
     "One instance per fire time of TASK's schedule in [from, to) (at most 1000 per call); "
     "existing ones are kept, so it can be repeated. --downstream also creates the mapped "
     "cycles of the tasks that depend on it; --mode serial runs one cycle at a time, "
     "parallel --max-cycles N at most N at once.",
     oc_backfill_opts, NULL, 1, oc_run_backfill},
    {"logs", "ID [-f] [--attempt N] [--timestamps]", "Print an instance's log",
     "Prints the log of the newest (or the given) attempt, byte for byte as the task wrote "
     "it (--timestamps: each line behind its time). With -f it follows the live log "
     "over Server-Sent Events until the run ends, and the exit code says how it ended: 0 "
     "success, 1 anything else.",
     oc_logs_opts, NULL, 1, oc_run_logs},
    {"ls", "tasks|instances|workflows|executors|pools [FILTERS]", "List objects",
     "A table, or with --output json the API's answer ({\"items\": [...]}) as it is.", oc_ls_opts,
     oc_ls_words, 1, oc_run_ls},
    {"completion", "bash|zsh", "Print a shell completion script",
     "bash: `source <(orrery completion bash)`; zsh: `orrery completion zsh > "
     "\"${fpath[1]}/_orrery\"`. Generated from the same table as --help.",
     oc_no_opts, oc_shells, 0, oc_run_completion},
    {"man", "", "Print the man page (roff)", "`orrery man | man -l -` reads it.", oc_no_opts, NULL,
     0, oc_run_man},
    {"help", "[COMMAND]", "Show help", "The list of commands, or one command's help.", oc_no_opts,
     NULL, 0, oc_run_help},
};

const size_t oc_ncommands = sizeof(oc_commands) / sizeof(oc_commands[0]);

/* ------------------------------------------------------------- helpers */

void oc_print_json(oc_ctx *ctx, const json_t *v)
{
    json_dumpf(v, ctx->out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', ctx->out);
}

void oc_table_init(oc_table *t, int ncols, const char *const *header)
{
    memset(t, 0, sizeof(*t));
    t->ncols = ncols;
    oc_table_row(t, header);
}

void oc_table_row(oc_table *t, const char *const *cells)
{
    t->cells = orr_xrealloc(t->cells, (t->nrows + 1) * (size_t)t->ncols * sizeof(char *));
    for (int i = 0; i < t->ncols; i++)
        t->cells[t->nrows * (size_t)t->ncols + (size_t)i] =
            orr_xstrdup(cells[i] && *cells[i] ? cells[i] : "-");
    t->nrows++;
}

void oc_table_print(oc_table *t, FILE *f)
{
    size_t *w = orr_xcalloc((size_t)t->ncols, sizeof(size_t));
    for (size_t r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            size_t n = strlen(t->cells[r * (size_t)t->ncols + (size_t)c]);
            if (n > w[c])
                w[c] = n;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *s = t->cells[r * (size_t)t->ncols + (size_t)c];
            if (c == t->ncols - 1)
                fprintf(f, "%s\n", s);
            else
                fprintf(f, "%-*s  ", (int)w[c], s);
        }
    }
    free(w);
}

void oc_table_free(oc_table *t)
{
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof(*t));
}

int oc_parse_id(oc_ctx *ctx, const char *what, const char *s, int64_t *out)
{
    if (!s || !*s || s[0] == '0' || strspn(s, "0123456789") != strlen(s) || strlen(s) > 18)
        return oc_fail(ctx, OC_EXIT_USAGE, "%s: \"%s\" is not an id (a positive number)", what,
                       s ? s : "");
    *out = strtoll(s, NULL, 10);
    return OC_EXIT_OK;
}

static const char *oc__name(const json_t *t)
{
    const char *n = json_string_value(json_object_get(t, "name"));
    return n ? n : "";
}

int oc_task_find(oc_ctx *ctx, const char *ref, json_t **task)
{
    orr_err e;
    orr_err_clear(&e);
    *task = NULL;
    orr_buf p = ORR_BUF_INIT;
    int rc = OC_EXIT_OK;
    if (*ref && strspn(ref, "0123456789") == strlen(ref)) {
        orr_buf_appendf(&p, "/api/v1/tasks/%s", ref);
        if (oc_api(ctx, "GET", p.data, NULL, task, &e) != ORR_OK)
            rc = oc_fail_err(ctx, &e);
        goto out;
    }
    char *q = oc_esc(ref);
    orr_buf_appendf(&p, "/api/v1/tasks?q=%s&active=any&limit=1000", q);
    free(q);
    json_t *list = NULL;
    if (oc_api(ctx, "GET", p.data, NULL, &list, &e) != ORR_OK) {
        rc = oc_fail_err(ctx, &e);
        goto out;
    }
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(list, "items"), i, t)
    {
        if (strcmp(oc__name(t), ref) == 0) {
            *task = json_incref(t);
            break;
        }
    }
    json_decref(list);
    if (!*task)
        rc = oc_fail(ctx, OC_EXIT_NOTFOUND, "no task named \"%s\"", ref);
out:
    orr_buf_free(&p);
    return rc;
}

char *oc_time_arg(const char *s)
{
    size_t n = strlen(s);
    orr_buf b = ORR_BUF_INIT;
    if (n == 10 && s[4] == '-' && s[7] == '-')
        orr_buf_appendf(&b, "%sT00:00:00Z", s);
    else if (n == 16 && s[10] == 'T')
        orr_buf_appendf(&b, "%s:00Z", s);
    else
        orr_buf_append_str(&b, s);
    return orr_buf_detach(&b, NULL);
}
