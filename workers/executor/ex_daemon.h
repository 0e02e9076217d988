/*
 * ex_daemon.h - executord's shared state and the functions its modules offer
 * each other (executord.c: main loop, events, sweeps; ex_job.c: a thread
 * runs each attempt; ex_report.c: reports to Halley with a persistent outbox).
 *
 * Threads: the main thread (signals, ZooKeeper, periodic sweep, reaping
 * finished jobs), the event thread (WatchEvents), the job threads (one per
 * running job; an idle one waits for the next job instead of ending), and
 * the log server's connection threads. d->mu guards the job list, the job
 * queue and threads, and used_slots; the reports, the reads and the
 * guardian have locks of their own (rep_mu, read_mu, guard_mu), named with
 * what they guard; atomics are marked so. Everything else in ex_daemon is
 * set before threads start and read-only afterwards.
 */
#ifndef EX_DAEMON_H
#define EX_DAEMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "ex_cgroup.h"
#include "ex_logsrv.h"
#include "ex_runner.h"
#include "ex_sandbox.h"
#include "ex_rundir.h" /* and ex_remove_tree */
#include "ex_zk.h"
#include "orr_blob.h"
#include "orr_config.h"
#include "orr_halley.h" /* HL(Instance), HL_INIT(INSTANCE), HL_STATE */
#include "orr_rpc.h"

#define EX_PATH   512
#define EX_SPARES 128 /* spare outbox files kept for reuse */

/* Why a job was cancelled (ex_job.cancel). */
typedef enum ex_cancel {
    EX_CANCEL_NONE = 0,
    EX_CANCEL_USER,         /* the instance was moved to killed by someone */
    EX_CANCEL_SESSION_LOST, /* our ZooKeeper session expired */
    EX_CANCEL_STOPPING,     /* executord is shutting down */
    EX_CANCEL_FENCED,       /* out of contact with ZooKeeper too long (executord.c) */
} ex_cancel;

struct ex_daemon;

typedef struct ex_job {
    struct ex_daemon *d;
    int64_t instance_id;
    int attempt;       /* set once the instance was read */
    int slots;         /* set once the spec was read */
    atomic_int done;   /* run_job returned; the main thread frees the job */
    atomic_int cancel; /* ex_cancel */
    ex_sandbox *sb;    /* under d->mu; NULL before start/after end */
    int reporting;     /* under d->mu: the job thread sends the running report
                        * while the process runs, so a cancel kills at once */
    struct ex_job *next;
    struct ex_job *qnext; /* in d->job_queue until a job thread takes it */
} ex_job;

typedef struct ex_daemon {
    orr_config *cfg;
    const char *id;
    const char *host;
    int slots;
    const char *labels; /* "k=v,k=v" as configured */
    int64_t slot_memory;
    int slot_cpu_percent;
    int slot_pids;
    int64_t default_timeout_ms;
    int rpc_timeout_ms;
    int64_t running_hold_ms; /* a run this short is reported in one step */

    char work_dir[EX_PATH];
    char log_dir[EX_PATH];
    char run_dir[EX_PATH];
    char code_dir[EX_PATH];
    char outbox_dir[EX_PATH];
    char spare_dir[EX_PATH]; /* <work>/outbox-spare: outbox files to reuse */
    char bin_dir[EX_PATH];
    char actor[160]; /* "executor:<id>" */

    int drop; /* switch to uid/gid in the sandbox */
    uid_t uid;
    gid_t gid;

    const ex_cgroup_ops *cg;
    ex_cg_env cg_env;
    char cg_root[EX_PATH];

    orr_rpc_client *halley;
    orr_rpc_client *halley_worker; /* with the worker token; NULL if none */
    ex_logsrv *logsrv;
    ex_zk *zk;
    orr_blob *blob;        /* [executor] blob_root: code packages, finished logs */
    int64_t started_at_ms; /* wall clock */

    atomic_int stopping;
    atomic_int fenced;          /* 1: ZooKeeper contact not proven; no job may run */
    atomic_int sweep_now;       /* the main loop sweeps at its next turn */
    atomic_int publish_due;     /* the main loop publishes the card at its next turn */
    struct orr_watch *deployer; /* ex_deploy.c: its event-stream subscriber */
    pthread_mutex_t mu;
    ex_job *jobs;
    int used_slots;
    /* ex_job.c: job threads, kept for the next job (under mu) */
    pthread_cond_t job_cv;
    ex_job *job_queue, *job_qtail; /* started, not taken by a thread yet */
    int job_queued;
    int job_idle; /* threads waiting for a job */
    int job_stop; /* ex_job_threads_stop: threads end once the queue is empty */
    pthread_t *job_threads;
    int n_job_threads, cap_job_threads;
    ex_rundir rundir; /* run folders, kept empty ones (ex_rundir.h) */

    /* ex_report.c: reports waiting to be combined into one call */
    pthread_mutex_t rep_mu;
    pthread_cond_t rep_cv;
    struct ex_rep_item *rep_queue; /* oldest first */
    int rep_leaders;               /* calls to halleyd in flight */
    /* ex_read.c: the runs' instance reads, combined into one call */
    pthread_mutex_t read_mu;
    pthread_cond_t read_cv;
    struct ex_read_item *read_queue;    /* oldest first */
    int read_busy;                      /* a read is in flight */
    atomic_llong read_alone_until;      /* ex_now_ms: halleyd had no GetInstances */
    atomic_ullong read_ids, read_calls; /* instances read, calls made (metrics) */
    /* spare outbox files (open, empty, in spare_dir), under rep_mu */
    int spare_fd[EX_SPARES];
    unsigned spare_name[EX_SPARES];
    int n_spares;
    unsigned spare_next;

    /* ex_guard.c; guard_mu guards guard_fd (job threads write to it) */
    pthread_mutex_t guard_mu;
    int guard_fd;      /* write end of the guardian's pipe; -1 none */
    pid_t guard_pid;   /* main thread only */
    int guard_lock_fd; /* <work>/executord.lock, flock'ed; -1 none */
} ex_daemon;

/* ------------------------------------------------------------ ex_report.c */

/* One state change this executor asks of Halley. */
typedef struct ex_report {
    int64_t instance_id;
    int attempt;
    int from; /* HL InstanceState */
    int to;
    char reason[256];
    int has_exit_code;
    int exit_code;
    /* > 0 (ms since the epoch), with from dispatched: the run started then
     * and has ended; Halley records dispatched -> running -> to at once */
    int64_t started_at_ms;
} ex_report;

/* Send r until it lands. With persist 1, r is first written to the outbox
 * (work_dir/outbox) and removed once Halley answered, so a restart re-sends
 * it; persist 2 (the replay) only removes its file, already there.
 * UNAVAILABLE, deadlines and internal errors are retried with backoff
 * (200 ms doubling to 5 s). Returns:
 *   ORR_OK         it landed
 *   ORR_ECONFLICT  someone else moved the instance first (ABORTED or
 *                  FAILED_PRECONDITION); *now_state (may be NULL) is its
 *                  state now, re-read
 *   ORR_ECANCELLED the daemon is stopping; the outbox keeps it (persist)
 *   other          a permanent error (logged; dropped); *now_state is the
 *                  instance's state, re-read (-1 when it cannot be)
 * Blocks. */
orr_status ex_report_send(ex_daemon *d, const ex_report *r, int persist, int *now_state,
                          orr_err *err);
/* A report staged before the deed it reports (the start record: the
 * dispatched -> running of a run about to start): written to the outbox and
 * synced, not sent. Returns its file, open, or -1 (err set) when it cannot
 * be written. A restart re-sends what is staged like any outbox entry. */
int ex_report_stage(ex_daemon *d, const ex_report *r, orr_err *err);
/* A staged report no longer needed (the run was reported in one step, or
 * never started): its file goes, as after an answer. fd < 0 is a no-op. */
void ex_report_unstage(ex_daemon *d, const ex_report *r, int fd);
/* Send a staged report (*fd from ex_report_stage) as ex_report_send does,
 * except that each wait between tries is pause(cls, ms) when pause is set:
 * when it returns non-zero the sending stops with ORR_EAGAIN, the report
 * stays staged and *fd open. Whatever else it returns, the file is handled
 * as ex_report_send's own and *fd is -1. */
orr_status ex_report_send_staged(ex_daemon *d, const ex_report *r, int *fd,
                                 int (*pause)(void *cls, int ms), void *cls, int *now_state,
                                 orr_err *err);
/* The end of a run whose start is staged (start, *fd), sent as
 * ex_report_send sends: appended to the start record's file as its second
 * line and synced, so the file stands for the end from then on (a crash
 * that cuts the line short leaves the start). Delivered: the file goes and
 * *fd is -1. Stopping: the file keeps both lines (closed, *fd -1). Refused:
 * the file is cut back to the start, still staged in *fd. When the line
 * cannot be written, the end goes in a file of its own and the start stays
 * staged. (*fd is -1 after any of these if the start could not be
 * restored: the caller then writes it anew.) */
orr_status ex_report_send_after_stage(ex_daemon *d, const ex_report *start, int *fd,
                                      const ex_report *end, int *now_state, orr_err *err);
/* Empty the spare folder (an earlier life's spares: empty files) and start
 * with no spares; ex_report_close closes and removes them. */
void ex_report_spares_init(ex_daemon *d);
void ex_report_close(ex_daemon *d);
/* Send every report left in the outbox by an earlier life. Blocks until each
 * has an answer or the daemon stops. Start records go first, so a run's end
 * finds it running, except one whose run was also reported in one step
 * (from dispatched, with its start time): that start record is dropped.
 * Returns how many were sent. */
int ex_report_replay(ex_daemon *d);
/* "running", ... ; "?" for an unknown value. */
const char *ex_state_name(int state);

/* Unary Halley call with the daemon's deadline. */
orr_status ex_halley(ex_daemon *d, const char *method, const ProtobufCMessage *req,
                     ProtobufCMessage **resp, orr_err *err);

/* -------------------------------------------------------------- ex_read.c */

/* A read's answer, shared by the runs read in the same call. */
typedef struct ex_read_ans ex_read_ans;

/* Instance id's own row, with the task at its version in (*in)->task (NULL
 * from a halleyd that does not fill it), read together with the reads of
 * other threads at the same moment (one GetInstances call). *in lives until
 * ex_read_put(*ans). ORR_ENOTFOUND for an unknown id, else the call's error
 * (*in and *ans NULL then). Blocks. */
orr_status ex_read_instance(ex_daemon *d, int64_t id, HL(Instance) * *in, ex_read_ans **ans,
                            orr_err *err);
/* Done with an answer of ex_read_instance; NULL is a no-op. */
void ex_read_put(ex_read_ans *ans);
/* Reads queued behind the call in flight, not yet taken by a leader. */
int ex_read_queued(ex_daemon *d);

/* -------------------------------------------------------------- ex_xfer.c */

/* One transfer attempt's dealings with Halley (lives on the job's stack). */
typedef struct ex_xfer {
    ex_daemon *d;
    int64_t task_id;
    int64_t instance_id;
    int attempt;
    ex_run_hooks hooks; /* for ex_run_ctx.hooks: data sources, watermark */
} ex_xfer;

void ex_xfer_init(ex_xfer *x, ex_daemon *d, int64_t task_id, int64_t instance_id, int attempt);
/* After the run: record the process statistics of wormhole's summary in
 * log_path (failures only logged), and when succeeded and the job is
 * incremental, save the new watermark (compare-and-set with the value read
 * before). ORR_OK, or the error that kept the watermark from being saved
 * (field "watermark"); the caller fails the attempt then. Blocks. */
orr_status ex_xfer_after(ex_xfer *x, orr_arena *a, const ex_run_plan *plan, const char *log_path,
                         int succeeded, orr_err *err);

/* ----------------------------------------------------------- ex_datasrv.c */

/* Mount POST /v1/meta and /v1/preview on the log server (design in
 * ex_datasrv.c). d->logsrv must be started. */
void ex_datasrv_mount(ex_daemon *d);

/* ----------------------------------------------------------- ex_lineage.c */

/* After a successful transfer run: report the tables and columns the job
 * config (parameters applied, data sources by name) moved to Halley
 * (ReportRunLineage). Failures are logged only. Blocks. */
void ex_lineage_report(ex_daemon *d, int64_t instance_id, const json_t *config);

/* ------------------------------------------------------------ ex_deploy.c */

/* Code packages: install the newest package of every name at start-up, and
 * each package announced by a "package.created" event; report each result
 * with ReportDeployment. Runs on its own event-stream subscriber's thread
 * (orr_watch.h: stream + installs). ex_deploy_start returns at once
 * (ORR_ENOMEM or ORR_EINTERNAL when the thread cannot start); ex_deploy_stop
 * sets d->stopping and joins. */
orr_status ex_deploy_start(ex_daemon *d, orr_err *err);
void ex_deploy_stop(ex_daemon *d);

/* ------------------------------------------------------------- ex_guard.c */

/* The guardian process that kills every attempt's processes when executord
 * dies (design in ex_guard.c). */
/* Take <work_dir>/executord.lock (exclusive flock), waiting up to 15 s for an
 * earlier life's guardian to finish. ORR_EINVAL naming executor.work_dir when
 * another executord holds it. Call before ending an earlier life's groups. */
orr_status ex_guard_lock(ex_daemon *d, orr_err *err);
/* Start a guardian (fork + exec of /proc/self/exe) and tell it every live
 * process group. d->cg, cg_root, cg_env and the lock must be set. ORR_EIO on
 * failure. Thread-safe with ex_guard_note; call from the main thread. */
orr_status ex_guard_spawn(ex_daemon *d, orr_err *err);
/* Tell the guardian an attempt's process group started ('+') or ended ('-').
 * Never blocks for long (one small pipe write); thread-safe. */
void ex_guard_note(ex_daemon *d, char op, pid_t pgid);
/* Main loop: if the guardian died, start another. */
void ex_guard_check(ex_daemon *d);
/* Clean stop (every attempt already ended): close the pipe, wait up to 10 s
 * for the guardian, release the lock. */
void ex_guard_stop(ex_daemon *d);
/* `executord guard BACKEND ROOT PARENT EXECUTOR`: the guardian's main (fd 3
 * the pipe, fd 4 the lock). Returns the exit code. */
int ex_guard_main(int argc, char **argv);

/* --------------------------------------------------------------- ex_job.c */

/* Start running instance_id unless a job for it exists. Thread-safe. */
void ex_job_start(ex_daemon *d, int64_t instance_id);
/* Cancel the job of instance_id (if any) for why. Thread-safe. */
void ex_job_cancel(ex_daemon *d, int64_t instance_id, ex_cancel why);
/* Cancel every job for why. Thread-safe. */
void ex_job_cancel_all(ex_daemon *d, ex_cancel why);
/* Free finished jobs; returns how many are still running. Main thread. */
int ex_job_reap(ex_daemon *d, int wait_all);
/* End the job threads. Main thread, once nothing can call ex_job_start any
 * more (the event thread stopped) and ex_job_reap(d, 1) found no job left. */
void ex_job_threads_stop(ex_daemon *d);
/* Publish the card (slots in use) to ZooKeeper. Thread-safe. */
void ex_daemon_publish(ex_daemon *d);
/* Count the slots in use now (the metric) and have the main loop publish
 * the card at its next turn (within 200 ms): one ZooKeeper write, and one
 * re-read by every keplerd watching it, for all the jobs that started or
 * ended meanwhile instead of two per job. keplerd counts slots from the
 * instances' states, so the card's used_slots is informational. */
void ex_daemon_publish_later(ex_daemon *d);

#endif
