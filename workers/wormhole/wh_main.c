/*
 * wh_main.c - the `wormhole` command.
 *
 *   wormhole run JOB.json [--state FILE] [--log-level LEVEL] [--resume | --from-scratch]
 *                         [--run-id ID]
 *   wormhole check JOB.json        parse the spec only
 *   wormhole quality JOB.json      run quality checks on a data store
 *                                  (wh_quality.h; exit 3: a check failed)
 *   wormhole meta META.json        a data source's catalog (wh_meta.h)
 *   wormhole preview JOB.json      the first rows as writers[0] would get
 *                                  them, writing nothing (wh_preview.h)
 *
 * JOB.json "-" reads the job from standard input (how executord hands over
 * a job holding passwords); an incremental job then needs --state or
 * state_file.
 *
 * --resume keeps per-split commit records in the targets and resumes a
 * failed run of the same job from the splits it committed (also the job's
 * "resume": true); --from-scratch keeps records too but drops earlier ones
 * first (docs/wormhole.md, Resume). --run-id ID is part of the run key: a
 * run resumes only records of the same ID (executord passes the instance).
 *
 * Progress lines and logs go to stderr, the final JSON summary to stdout.
 * Exit status: 0 the run succeeded, 1 it failed, 2 bad job spec or usage
 * (the message names the JSON path of the bad field), 3 it failed because a
 * quality check did not pass.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "orr_json.h"
#include "orr_log.h"
#include "wh_engine.h"
#include "wh_job.h"
#include "wh_quality.h"
#include "wh_meta.h"
#include "wh_preview.h"

static void wh_on_signal(int sig)
{
    (void)sig;
    wh_interrupt();
}

static int wh_usage(void)
{
    fprintf(stderr, "usage: wormhole run JOB.json [--state FILE] [--log-level LEVEL]\n"
                    "                             [--resume | --from-scratch] [--run-id ID]\n"
                    "       wormhole check JOB.json\n"
                    "       wormhole quality JOB.json [--log-level LEVEL]\n"
                    "       wormhole meta META.json\n"
                    "       wormhole preview JOB.json\n");
    return 2;
}

/* Print {"error": ...} for err on stdout. */
static void wh_print_error(const orr_err *err)
{
    json_t *body = orr_json_error_body(err);
    orr_buf out = ORR_BUF_INIT;
    orr_json_dump_buf(body, &out);
    printf("%s\n", orr_buf_cstr(&out));
    orr_buf_free(&out);
    json_decref(body);
}

/* `wormhole meta|preview FILE|-`: the whole job is read, answered, and the
 * buffer that held it (a dsn with a password) wiped. */
static int wh_meta_main(const char *path, int preview)
{
    orr_err err;
    orr_err_clear(&err);
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!f) {
        orr_err_set(&err, ORR_EIO, "job", "cannot open %s", path);
        wh_print_error(&err);
        return 2;
    }
    orr_buf text = ORR_BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && text.len < (1u << 20))
        orr_buf_append(&text, chunk, n);
    explicit_bzero(chunk, sizeof chunk);
    fclose(f);
    json_t *ans = NULL;
    orr_status rc = preview ? wh_preview_run(text.data ? text.data : "", text.len, &ans, &err)
                            : wh_meta_run(text.data ? text.data : "", text.len, &ans, &err);
    if (text.data)
        explicit_bzero(text.data, text.cap);
    orr_buf_free(&text);
    if (rc != ORR_OK) {
        wh_print_error(&err);
        return rc == ORR_EINVAL ? 2 : rc == ORR_ENOTFOUND ? 3 : 1;
    }
    orr_buf out = ORR_BUF_INIT;
    orr_json_dump_buf(ans, &out);
    printf("%s\n", orr_buf_cstr(&out));
    fflush(stdout);
    orr_buf_free(&out);
    json_decref(ans);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return wh_usage();
    const char *cmd = argv[1], *job_path = argv[2], *state = NULL;
    if (strcmp(cmd, "meta") == 0 || strcmp(cmd, "preview") == 0) {
        if (argc != 3)
            return wh_usage();
        orr_err le;
        orr_log_open(ORR_LOG_WARN, NULL, &le);
        return wh_meta_main(job_path, cmd[0] == 'p');
    }
    orr_log_level level = ORR_LOG_INFO;
    int resume = -1;
    const char *run_id = NULL;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--resume") == 0 && resume != 2) {
            resume = 1;
        } else if (strcmp(argv[i], "--from-scratch") == 0 && resume != 1) {
            resume = 2;
        } else if (strcmp(argv[i], "--run-id") == 0 && i + 1 < argc && argv[i + 1][0]) {
            run_id = argv[++i];
        } else if (strcmp(argv[i], "--state") == 0 && i + 1 < argc) {
            state = argv[++i];
        } else if (strcmp(argv[i], "--log-level") == 0 && i + 1 < argc) {
            if (orr_log_level_parse(argv[++i], &level) != ORR_OK)
                return wh_usage();
        } else {
            return wh_usage();
        }
    }
    if (strcmp(cmd, "run") != 0 && strcmp(cmd, "check") != 0 && strcmp(cmd, "quality") != 0)
        return wh_usage();
    orr_err err;
    orr_err_clear(&err);
    orr_log_open(level, NULL, &err);
    if (strcmp(cmd, "quality") == 0)
        return state ? wh_usage() : wh_quality_main(job_path);

    wh_job *job = NULL;
    orr_status rc = wh_job_load_file(job_path, &job, &err);
    if (rc != ORR_OK) {
        fprintf(stderr, "wormhole: bad job spec %s: %s%s%s\n", job_path,
                err.field[0] ? err.field : "", err.field[0] ? ": " : "", err.msg);
        json_t *body = orr_json_error_body(&err);
        orr_buf out = ORR_BUF_INIT;
        orr_json_dump_buf(body, &out);
        printf("%s\n", orr_buf_cstr(&out));
        orr_buf_free(&out);
        json_decref(body);
        return 2;
    }
    job->run_id = run_id;
    if (resume == 1)
        job->resume = WH_RESUME_ON;
    else if (resume == 2)
        job->resume = WH_RESUME_SCRATCH;
    if (strcmp(cmd, "check") == 0) {
        printf("{\"status\":\"ok\",\"job\":\"%s\"}\n", job->name);
        wh_job_free(job);
        return 0;
    }
    char state_buf[4096];
    if (!state && !job->state_file && job->incr_on && strcmp(job_path, "-") != 0) {
        snprintf(state_buf, sizeof(state_buf), "%s.state", job_path);
        state = state_buf;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = wh_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    wh_result res;
    rc = wh_run(job, state, &res);
    json_t *summary = wh_result_json(job, &res);
    orr_buf out = ORR_BUF_INIT;
    orr_json_dump_buf(summary, &out);
    printf("%s\n", orr_buf_cstr(&out));
    fflush(stdout);
    orr_buf_free(&out);
    json_decref(summary);
    int ok = res.ok;
    int quality_failed = !ok && wh_quality_failed(job);
    wh_result_free(&res);
    wh_job_free(job);
    (void)rc;
    return ok ? 0 : quality_failed ? 3 : 1;
}
