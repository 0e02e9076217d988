/*
 * ex_rundir.h - the private folder of each run, <work>/runs/<instance>-
 * <attempt>, made from a kept empty folder when that is safe (ex_rundir.c).
 */
#ifndef EX_RUNDIR_H
#define EX_RUNDIR_H

#include <pthread.h>
#include <sys/types.h>

#include "orr_status.h"

#define EX_RUNDIR_PATH   512
#define EX_RUNDIR_SPARES 256 /* empty run folders kept for reuse */

typedef struct ex_rundir {
    pthread_mutex_t mu; /* guards the list and each rename in or out */
    int ready;          /* ex_rundir_init ran: mu exists */
    int reuse;          /* 0: every folder made and removed */
    int drop;           /* folders are chowned to uid/gid */
    uid_t uid;
    gid_t gid;
    char spare_dir[EX_RUNDIR_PATH]; /* <work>/run-spare */
    unsigned spare[EX_RUNDIR_SPARES];
    int n_spares;
    unsigned next;
    int have_flags;       /* fresh_flags holds a new folder's inode flags */
    unsigned fresh_flags; /* FS_IOC_GETFLAGS */
} ex_rundir;

/* Empty <work_dir>/run-spare (spares of an earlier life) and probe a new
 * folder there. Folders are kept only when tasks run as another user than
 * executord (drop): otherwise a task could write into the spares. Call once
 * the work folder's lock is held. */
orr_status ex_rundir_init(ex_rundir *r, const char *work_dir, int drop, uid_t uid, gid_t gid,
                          orr_err *err);
/* Drop the kept folders (at stop). Safe on a zeroed, never-initialised r. */
void ex_rundir_close(ex_rundir *r);
/* Make path (0700, owned by the run's user): a kept folder renamed into
 * place, or a new one. 0, or -1 with errno. Thread-safe. */
int ex_rundir_make(ex_rundir *r, const char *path);
/* The run of path is over. unreachable: no process of the run can still
 * reach the folder (none was started, or a cgroup held them all and none
 * survived its kill); only then, and only if the folder is as a new one
 * (empty, 0700, its owner, no extended attribute other than security.*, the
 * inode flags of a new folder, no grown size), is it kept for a later run.
 * Otherwise it is removed. Thread-safe. */
void ex_rundir_done(ex_rundir *r, const char *path, int unreachable);

/* rm -r of path (not following links); what cannot be removed stays. */
void ex_remove_tree(const char *path);

#endif
