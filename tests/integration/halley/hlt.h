/*
 * hlt.h - harness of halleyd's integration tests.
 *
 * Each test binary creates a fresh database (halley_test_<pid>_<n>) through
 * ORRERY_PG_DSN, starts real halleyd processes against it (port 0, settings
 * through ORRERY_HALLEY_* variables, ports read back from a port file), calls
 * them through the orr_rpc client, and drops the database at the end. The
 * servers' log files are removed when the test exits, each printed on stderr
 * first when a check failed. Without ORRERY_PG_DSN a test fails with a
 * message saying so: it never skips.
 *
 * HLT_CHECK records a failure and goes on; hlt_finish prints
 * "N passed, N failed" and returns the exit code.
 */
#ifndef HLT_H
#define HLT_H

#include <libpq-fe.h>
#include <stdint.h>
#include <sys/types.h>

#include "halley.pb-c.h"
#include "orr_rpc.h"

#define HLT_TOKEN "halley-test-token"

typedef struct hlt_db {
    char name[64];
    char dsn[1024]; /* DSN of the test database */
} hlt_db;

typedef struct hlt_server {
    pid_t pid;
    int port, metrics_port;
    char port_file[256];
    char log_file[256];
} hlt_server;

extern int hlt_passed, hlt_failed;

#define HLT_CHECK(cond, ...)                                                                       \
    do {                                                                                           \
        if (cond) {                                                                                \
            hlt_passed++;                                                                          \
        } else {                                                                                   \
            hlt_failed++;                                                                          \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

/* Require ORRERY_PG_DSN and create a fresh database; exits 1 with a message
 * if it cannot. */
void hlt_db_create(hlt_db *db);
void hlt_db_drop(hlt_db *db);
/* Run SQL on the test database; returns the result (PQclear it) or exits. */
PGresult *hlt_sql(const hlt_db *db, const char *sql);

/* How many instances carry an exit_code other than their current attempt's
 * in attempts (NULL when that row has none or is missing): 0 while the
 * transition statements keep the copy (migrations/0021_instance_exit_code.sql). */
long hlt_exit_code_drift(const hlt_db *db);

/* Run `halleyd migrate` on dsn; returns its exit code. */
int hlt_migrate(const char *dsn);
/* Start `halleyd serve` on dsn with extra "KEY=VALUE" environment entries
 * (NULL-terminated, may be NULL). Returns 0 once it serves, -1 if it exited
 * (then *exit_code, if not NULL, is its code) or did not come up in 20 s. */
int hlt_start(hlt_server *s, const char *dsn, const char *const *extra_env, int *exit_code);
/* SIGTERM, wait (SIGKILL after 10 s); returns the exit status. */
int hlt_stop(hlt_server *s);

/* The value of the unlabelled sample `name` in s's /metrics (one HTTP GET
 * on loopback); -1 when it cannot be read or is not there. Not thread-safe
 * (a static buffer). */
double hlt_metric(const hlt_server *s, const char *name);

/* Client to s with the right token (token NULL = HLT_TOKEN). */
orr_rpc_client *hlt_client(const hlt_server *s, const char *token);

/* Call method; returns the status, *resp set on ORR_OK. */
orr_status hlt_call(orr_rpc_client *c, const char *method, const void *req, void *resp,
                    orr_err *err);

/* A shell task spec for name in team. Static buffer per call site: copy it. */
const char *hlt_shell_spec(char *buf, size_t n, const char *name, const char *team,
                           const char *extra_fields);

/* Creates team `name` through c; a failure counts as a failed check. */
void hlt_team(orr_rpc_client *c, const char *name);

/* Saves a shell task (hlt_shell_spec with extra; UpdateTask when id > 0,
 * else CreateTask, as "user:ann"), checks the status is want and, on a
 * refusal, that err names field (unless field is NULL). Returns the task's
 * id, or 0 when refused; err holds the refusal for further checks. */
int64_t hlt_save_task(orr_rpc_client *c, int64_t id, const char *name, const char *team,
                      const char *extra, orr_status want, const char *field, orr_err *err);

int hlt_finish(const char *name);
int64_t hlt_now_ms(void);

#endif
