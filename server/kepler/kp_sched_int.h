/*
 * kp_sched_int.h - what the files of keplerd's scheduler share; private to
 * them (kp_sched.c, kp_watch.c, kp_write.c, kp_load.c, kp_check.c), never
 * included elsewhere. The design is described at the top of kp_sched.c.
 *
 * One kp_sched per `keplerd run`. Apart from the queue fields (qmu), every
 * field belongs to the scheduler thread: the functions below are called on
 * it alone, and none of them blocks on anything but its RPCs (deadline
 * RPC_TIMEOUT_MS each) and ZooKeeper. Names with a double underscore are
 * internal to the scheduler.
 */
#ifndef KP_SCHED_INT_H
#define KP_SCHED_INT_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "halley.pb-c.h"
#include "kp_backfill.h"
#include "kp_deps.h"
#include "kp_du.h"
#include "kp_elect.h"
#include "kp_index.h"
#include "kp_sched.h"
#include "kp_store.h"
#include "kp_why.h"
#include "kp_map.h"
#include "kp_dispatch.h"
#include "orr_rpc.h"
#include "orr_status.h"
#include "orr_watch.h"

#define BATCH_MAX          1000
#define RPC_TIMEOUT_MS     10000
#define MATERIALISE_ROUND  5000 /* instances created per round at most */
#define FETCH_ROUND        64   /* dependency range reads per round at most */
#define REFETCH_ROUND      200  /* single-instance re-reads per round at most */
#define WATERMARK_EVERY_MS 5000
#define READY_ROUND        500    /* waiting -> ready per round at most */
#define READY_MIN          16     /* ... and at least, whatever the write cost */
#define SEND_PARTS         4      /* concurrent calls a transition batch is split into */
#define SEND_PART_MIN      32     /* ... each of at least this many items */
#define READY_BUDGET_US    250000 /* a ready batch should take about this long */
#define DU_FETCH_ROUND     32     /* data-unit range reads per round at most */
#define DU_STREAM_ROUND    8      /* stream grid reads per round at most */
#define DU_RETRY_MS        5000   /* a failed data-unit read is retried after this */
#define WHY_BATCH          1000   /* blocker lists written per PutBlockers call at most */
#define WHY_EVERY_MS       250    /* ... and one call in flight, at most this often */
#define WHY_READY_EVERY_MS 1000   /* ready instances' blockers are evaluated this often */
/* a ready instance behind busy executors is explained once it waited this
 * long (shorter waits are the queue moving); a list is written once it held
 * WHY_SETTLE_MS and its instance kept its state (bursts collapse) */
#define WHY_QUEUED_MS 5000
#define WHY_SETTLE_MS 1000

typedef Orrery__Halley__V1__Instance pb_instance;
typedef Orrery__Halley__V1__TransitionRequest pb_treq;

/* ------------------------------------------------------------ events */

enum {
    EV_INSTANCE_CREATED,
    EV_INSTANCE_TRANSITION,
    EV_INSTANCE_RUN, /* run now on an existing instance: its flags changed */
    EV_TASK,
    EV_DATA_UNIT,
    EV_STREAM,
    EV_WORKFLOW,
    EV_EXECUTOR,       /* an administrator changed an executor's settings */
    EV_QUOTA,          /* ... or a team's quota */
    EV_CALENDAR,       /* ... or a business calendar */
    EV_ALERT_RULE,     /* an alert rule changed: read the rules again */
    EV_INSTANCE_STATS, /* an attempt's process statistics were recorded */
    EV_OTHER
};

/* One event of the stream, as much of it as the scheduler uses. */
typedef struct kp_ev {
    int64_t id, task_id, instance_id, sched_ms, at_ms;
    int kind;
    int from, to, attempt;
    const char *exec; /* interned */
    /* EV_DATA_UNIT: the unit (interned; stream also for EV_STREAM) */
    const char *stream, *business, *interface;
    int64_t bucket_ms;
    /* EV_INSTANCE_CREATED, EV_INSTANCE_RUN: run now; a paced backfill */
    int run_now, ignore_upstreams;
    int32_t bf_cycles;
    int64_t bf_id, bf_cycle_ms;
    /* EV_INSTANCE_TRANSITION: its reason, cut short (alert summaries) */
    char reason[96];
    /* EV_INSTANCE_STATS: the attempt's dirty_rows, when it reported them */
    int has_dirty_rows;
    double dirty_rows;
} kp_ev;

/* A stream's bucket grid as read from Halley. */
typedef struct du_stream {
    char name[KP_NAME_MAX];
    int state;           /* DU_GRID_* */
    int64_t retry_at_ms; /* DU_GRID_FAILED: read again from then */
    kp_du_grid grid;
} du_stream;

enum { DU_GRID_UNREAD, DU_GRID_OK, DU_GRID_FAILED };

/* An administrator's settings of one executor (UpdateExecutor), applied on
 * top of what its ZooKeeper node announces. */
typedef struct kp_exec_ovr {
    char id[KP_EXEC_ID_MAX];
    int drained;
    int slots; /* < 0: the executor's own */
    int has_labels;
    kp_label *labels;
    size_t n_labels;
} kp_exec_ovr;

/* A team: its quota (0 = no limit) and what its instances use now
 * (dispatched and running, counted like the executors' slots). */
typedef struct kp_team {
    char name[KP_NAME_MAX];
    int max_running, max_slots;
    int running, slots;
} kp_team;

/* One blocker list waiting to be written (PutBlockers). */
typedef struct why_entry {
    int64_t id, at_ms;
    int32_t attempt;
    char json[]; /* NUL-terminated */
} why_entry;

typedef struct kp_sched {
    const kp_sched_opts *o;
    volatile sig_atomic_t *stop;
    orr_rpc_client *cl;
    orr_rpc_set *send_set; /* kp__send_batch's calls in flight (made at first use) */
    kp_elect *el;
    kp_index *ix;
    kp_store *st;
    kp_bf *bf; /* backfill pacing, rebuilt by every pass */
    char actor[256];
    /* executors */
    kp_exec *ex;
    size_t n_ex, cap_ex;
    uint64_t ex_version;
    /* event queue (watcher -> scheduler), under qmu */
    orr_watch *watch;
    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    kp_ev *q;
    size_t qn, qcap;
    int64_t last_event_id;
    int need_rebuild;
    /* leadership */
    uint64_t epoch;
    /* work lists */
    int64_t *task_refresh;
    size_t n_task_refresh, cap_task_refresh;
    int64_t next_materialise_ms;
    int64_t next_sweep_ms, next_watermark_ms;
    int again; /* more work is pending: do not sleep */
    /* scratch */
    kp_inst **vec;
    size_t n_vec, cap_vec;
    uint64_t dispatched_total;
    int64_t item_us; /* moving average of halleyd's time per transition */
    /* data units */
    kp_du_cache *du;
    du_stream *streams;
    size_t n_streams, cap_streams;
    int64_t du_retry_at_ms; /* ListDataUnits failed: no reads before then */
    int du_dirty;           /* re-check every task with a data-unit dependency */
    /* paused workflows: ids of the tasks they hold, ascending (kp_load.c) */
    int64_t *paused;
    size_t n_paused, cap_paused;
    int paused_dirty; /* a workflow event came: read the paused tasks again */
    /* resource limits: executor settings and team quotas (kp_load.c) */
    kp_exec_ovr *ovr;
    size_t n_ovr;
    kp_team *teams;
    size_t n_teams, cap_teams;
    int ovr_reload, quota_reload; /* read them again this round */
    /* business calendars by name (kp_load.c), read with the tasks and
     * again on "calendar.changed" */
    struct kp_cal_entry {
        char *name;
        orr_cal *cal;
    } * cals;
    size_t n_cals;
    int cal_reload;
    /* why is it waiting (kp_write.c): lists to write, by instance id */
    kp_map why_pending;        /* id -> why_entry * */
    kp_map met_notes;          /* id -> reason of its "dependencies met", this round */
    int64_t next_why_ms;       /* no PutBlockers before then */
    int64_t why_ready_next_ms; /* next evaluation of ready instances' blockers */
    int why_ready;             /* this round evaluates them */
    kp_why why_buf;            /* scratch of the scheduler thread */
    pthread_t why_th;
    int why_th_started;
    pthread_mutex_t why_mu; /* guards the fields below */
    pthread_cond_t why_cv;
    why_entry **why_out;
    size_t n_why_out;
    int why_busy, why_stop;
    /* alerts (kp_alert_io.c) */
    struct kp_alerter *al;
} kp_sched;

/* ------------------------------------------------------------ dependency checks */

typedef struct fetch_req {
    int64_t task_id, from_ms, to_ms;
} fetch_req;

typedef struct du_fetch_req {
    char stream[KP_NAME_MAX], business[KP_NAME_MAX], interface[KP_NAME_MAX];
    int64_t from_ms, to_ms;
} du_fetch_req;

/* What one pass's dependency checks want read before they can decide:
 * instance ranges of upstream tasks, stream grids and data-unit ranges
 * (each list bounded; what does not fit is asked for by a later pass). */
typedef struct dep_ctx {
    fetch_req fetch[FETCH_ROUND];
    size_t n_fetch;
    int64_t times[KP_DEPS_MAX_CYCLES];
    kp_dep_obs obs[KP_DEPS_MAX_CYCLES];
    /* data units */
    int64_t buckets[KP_DU_MAX_BUCKETS];
    du_fetch_req du_fetch[DU_FETCH_ROUND];
    size_t n_du_fetch;
    char grid_read[DU_STREAM_ROUND][KP_NAME_MAX];
    size_t n_grid_read;
    /* DEP_MET with a strong upstream cycle that has no instance (before the
     * upstream existed, or skipped): the reason its transition says so */
    char met_note[KP_NAME_MAX + 128];
} dep_ctx;

enum { DEP_MET, DEP_WAIT, DEP_FETCH };

/* ------------------------------------------------------------ kp_sched.c: the store's bookkeeping
 */

/* Wall clock, ms since the epoch. */
int64_t kp__wall_ms(void);
/* 1 while the leadership epoch the state was built for is still current. */
int kp__still_leader(kp_sched *s);
/* The executor with this id; with create, a new zeroed one when unknown.
 * NULL for an empty id, or an unknown one without create. */
kp_exec *kp__exec_find(kp_sched *s, const char *id, int create);
/* The one place a record's state changes: keeps executor slots and task
 * parallelism counts in step. exec (interned here) is set when non-NULL. */
void kp__set_state(kp_sched *s, kp_inst *r, int state, const char *exec);
/* Task task_id (and with_downstream its downstream tasks) to a new
 * dependency check; asks for another round. */
void kp__mark_task_dirty(kp_sched *s, int64_t task_id, int with_downstream);
/* Take halleyd's view of an instance into the store (added when unknown);
 * ev_id is the event it reflects (0: a read). Returns the record. */
kp_inst *kp__adopt(kp_sched *s, const pb_instance *in, int64_t ev_id);

/* ------------------------------------------------------------ kp_watch.c: the event stream */

/* Start the event-stream subscriber (orr_watch.h) that queues kp_evs into
 * s->q and asks for a rebuild when events were missed. ORR_OK, or
 * orr_watch_start's failure. Stopped with orr_watch_stop(s->watch). */
orr_status kp__watch_start(kp_sched *s, orr_err *err);
/* Apply one queued event to the store (stale ones are ignored by event id;
 * one that does not follow from the cached state marks its record for a
 * re-read; task events queue a GetTask; an unknown instance is read). */
void kp__apply_event(kp_sched *s, const kp_ev *e);

/* ------------------------------------------------------------ kp_write.c: writes */

/* A transition of r from its cached state and attempt to `to`. Points into
 * s and reason: valid while they are. */
void kp__req_init(pb_treq *t, const kp_sched *s, const kp_inst *r, int to, const char *reason);
/* Send n (<= BATCH_MAX) transitions about recs[0..n) and apply the results.
 * Returns the number applied OK; *failed is set when a call failed (its
 * records are marked for a re-read) or, without sending, when leadership
 * moved. Blocks on the calls. */
size_t kp__send_batch(kp_sched *s, pb_treq *items, kp_inst **recs, size_t n, int *failed);
/* Transitions of recs[0..n) to `to` with one reason, in batches; stops at
 * the first failed batch. Returns the number applied OK. */
size_t kp__transition_all(kp_sched *s, kp_inst **recs, size_t n, int to, const char *reason);
/* Create the instances of fire times due by now (CreateInstances, at most
 * MATERIALISE_ROUND per round); a failed call rolls its tasks back. */
void kp__materialise(kp_sched *s, int64_t now);
/* Every WATERMARK_EVERY_MS: the oldest materialised time of cron tasks to
 * ZooKeeper, while this process leads. */
void kp__write_watermark(kp_sched *s, int64_t now);

/* ------------------------------------------------------------ kp_load.c: reading */

typedef void (*kp__inst_fn)(kp_sched *s, const pb_instance *in, void *ctx);

/* Page through ListInstances (task_id 0 = any; states[0..n_states), none =
 * any; schedule time in [from_ms, to_ms), 0 = open), calling fn for each.
 * ORR_OK or the RPC's failure (logged). */
orr_status kp__list_instances(kp_sched *s, int64_t task_id, const int *states, size_t n_states,
                              int64_t from_ms, int64_t to_ms, kp__inst_fn fn, void *ctx);
/* Adopt every live instance and those finished within the horizon (failed,
 * timed out), marking them KP_I_SEEN; a record an event changed after the
 * listing began is kept. ORR_OK or the listing's failure. */
orr_status kp__load_live_instances(kp_sched *s);
/* Re-read one doubtful record (GetInstance); gone from halleyd -> removed.
 * ORR_OK or the call's failure. */
orr_status kp__refetch_one(kp_sched *s, kp_inst *r);
/* Read instance id (unknown to the store) as of event ev_id; not found is
 * ORR_OK. */
orr_status kp__fetch_instance_id(kp_sched *s, int64_t id, int64_t ev_id);
/* Index every active task (ListTasks); a new task starts materialising at
 * the watermark. ORR_OK or the listing's failure. */
orr_status kp__load_tasks(kp_sched *s, int64_t watermark);
/* Re-read the tasks events named (GetTask): re-index, or drop the inactive
 * and deleted; then re-link and send every task to a dependency check. On a
 * failed call the list is kept for the next round. */
void kp__refresh_tasks(kp_sched *s);
/* Read the tasks held by paused workflows (ListPausedTasks) into s->paused;
 * tasks no longer held go to a dependency check and to materialisation.
 * On a failed call paused_dirty stays set for the next round. ORR_OK or
 * the call's failure. */
orr_status kp__load_paused(kp_sched *s);
/* 1 if a paused workflow holds task id: no instance of it is materialised,
 * made ready or dispatched. */
int kp__task_paused(const kp_sched *s, int64_t id);
/* kp__task_paused, or the paused tasks could not be read since the last
 * workflow event (then every task is held back from ready and dispatch
 * until they are). */
int kp__task_held(const kp_sched *s, int64_t id);

/* ------------------------------------------------------------ why is it waiting (kp_write.c) */

/* Record w as what blocks r now: kept for writing only when it differs
 * from what was last recorded for r (r->why). */
void kp__why_note(kp_sched *s, kp_inst *r, const kp_why *w);
/* The same with a text and fingerprint computed once by the caller. */
void kp__why_note_text(kp_sched *s, kp_inst *r, const char *json, size_t len, uint32_t hash);
/* Hand up to WHY_BATCH recorded lists to the writer thread, when it is
 * idle and WHY_EVERY_MS passed since the last hand-over. Never blocks on
 * the call. */
void kp__why_flush(kp_sched *s, int64_t now);
/* Start / stop the writer thread (PutBlockers). */
void kp__why_start(kp_sched *s);
void kp__why_stop(kp_sched *s);
/* Drop what is recorded and not yet handed over (leadership lost). */
void kp__why_drop(kp_sched *s);
/* r changed state: a list recorded for it and not yet handed over is stale. */
void kp__why_forget(kp_sched *s, const kp_inst *r);

/* ------------------------------------------------------------ kp_load.c: resource limits */

/* Team of that name (created with no quota when unknown); 1 + its index. */
int kp__team_ix(kp_sched *s, const char *name);
/* Read executor settings (ListExecutors) and team quotas (ListTeamQuotas),
 * each when its reload flag is set (both with all = 1). ORR_OK, or the
 * failure of a read (its flag stays set). */
orr_status kp__load_resources(kp_sched *s, int all);
/* Read every business calendar with its days (ListCalendars) and point the
 * tasks that name one at it, recomputing their next fire times. */
orr_status kp__load_calendars(kp_sched *s);
/* The calendar of that name; NULL for "" or an unknown one. */
const orr_cal *kp__calendar(kp_sched *s, const char *name);
/* Free the executor settings and the team table. */
void kp__resources_free(kp_sched *s);

/* ------------------------------------------------------------ kp_check.c: dependency checks */

/* The stream called name; with create, a new DU_GRID_UNREAD one. */
du_stream *kp__stream_find(kp_sched *s, const char *name, int create);
/* The dependencies of task t's waiting instance r: DEP_MET, DEP_WAIT, or
 * DEP_FETCH (c lists what must be read first). Reads nothing itself. */
int kp__check_deps(kp_sched *s, dep_ctx *c, const kp_task *t, const kp_inst *r, int64_t now);
/* What holds back t's waiting instance r (kp__check_deps said DEP_WAIT):
 * every unmet dependency, into w (begun, not ended). Reads nothing. */
void kp__explain_deps(kp_sched *s, const kp_task *t, const kp_inst *r, int64_t now, kp_why *w);
/* Read the instance ranges c asked for; cycles halleyd has no instance for
 * become absent markers. Empties c's list. */
void kp__run_fetches(kp_sched *s, dep_ctx *c);
/* Read the stream grids and reconciled units c asked for; a failure holds
 * the dependents until DU_RETRY_MS later. Empties c's lists. */
void kp__run_du_fetches(kp_sched *s, dep_ctx *c, int64_t now);
/* Ends the back-offs that are over; when data units changed, sends every
 * task with a data-unit dependency to a check. */
void kp__du_mark_tasks(kp_sched *s, int64_t now);

/* ------------------------------------------------------------ kp_alert_io.c: alerts */

/* Start / stop the alert evaluation and its sender thread (RaiseAlert). */
void kp__alert_start(kp_sched *s);
void kp__alert_stop(kp_sched *s);
/* Leadership lost or a rebuild: forget rules, armed deadlines and what was
 * raised; the next kp__alert_round reads them again. */
void kp__alert_drop(kp_sched *s);
/* An event of the stream (after it was applied to the store): transitions
 * raise their alerts; rule and workflow events mark what to read again. */
void kp__alert_event(kp_sched *s, const kp_ev *e);
/* Standing by: keep the recent events that may raise alerts (bounded, the
 * last REPLAY_MS), so a keplerd that takes over evaluates those the old
 * leader did not raise before it died. */
void kp__alert_standby(kp_sched *s, const kp_ev *evs, size_t n);
/* The store took r in (created, adopted): arm its task's deadlines. */
void kp__alert_track(kp_sched *s, const kp_inst *r);
/* An executor's node went away (used: its slots in use then). */
void kp__alert_exec_gone(kp_sched *s, const char *id, int used, int64_t now);
/* A pool denied (granted = 0) or gave (1) tokens to task_id's instance. */
void kp__alert_pool(kp_sched *s, const char *pool, int granted, int64_t task_id, int64_t now);
/* Every round: read rules/workflows/history when due, raise the deadlines
 * that passed and the pools starved too long. Never blocks on RaiseAlert. */
void kp__alert_round(kp_sched *s, int64_t now);
/* When the earliest armed deadline falls (INT64_MAX: none). */
int64_t kp__alert_next_ms(const kp_sched *s);

#endif
