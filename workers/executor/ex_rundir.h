/*
 * ex_rundir.h - the private folder of each run, <work>/runs/<instance>-
 * <attempt>, made from a kept empty folder when that is safe (ex_rundir.c).
 */
#ifndef EX_RUNDIR_H
#define EX_RUNDIR_H

#include <linux/fs.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

#include "orr_status.h"

#define EX_RUNDIR_PATH   512
#define EX_RUNDIR_SPARES 256 /* empty run folders kept for reuse */

/* What a run may change on its folder besides its entries (ex_rundir.c). */
typedef struct ex_rundir_marks {
    int have_flags, have_fsx;
    int flags;          /* FS_IOC_GETFLAGS */
    struct fsxattr fsx; /* FS_IOC_FSGETXATTR, fsx_nextents zeroed */
    size_t xattrs_len;
    char xattrs[1024]; /* names and values, in list order */
} ex_rundir_marks;

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
    ex_rundir_marks fresh; /* of a folder made at start in runs/ */
} ex_rundir;

/* Empty <work_dir>/run-spare (spares of an earlier life) and probe a new
 * folder in runs_dir, where runs' folders are made. Folders are kept only
 * when the sandbox holds every process of a run (confined: a cgroup
 * backend, whose kill count then covers them all), tasks run as another
 * user than executord (drop: otherwise a task could write into the spares)
 * and the probe's marks could be read; r->reuse says whether they are. Call
 * once the work folder's lock is held; r zeroed or initialised before. */
orr_status ex_rundir_init(ex_rundir *r, const char *work_dir, const char *runs_dir, int confined,
                          int drop, uid_t uid, gid_t gid, orr_err *err);
/* Drop the kept folders (at stop). Safe on a zeroed, never-initialised r. */
void ex_rundir_close(ex_rundir *r);
/* Make path (0700, owned by the run's user): a kept folder renamed into
 * place, or a new one. 0, or -1 with errno. Thread-safe. */
int ex_rundir_make(ex_rundir *r, const char *path);
/* The run of path is over. unreachable: no process of the run can still
 * reach the folder (none was started, or a cgroup held them all and none
 * survived its kill); only then, and only if the folder is as a new one
 * (empty, 0700, its owner, no grown size, and the flags and extended
 * attributes of the folder probed at start), is it kept for a later run.
 * Otherwise it is removed. Thread-safe. */
void ex_rundir_done(ex_rundir *r, const char *path, int unreachable);

/* rm -r of path (not following links); what cannot be removed stays. */
void ex_remove_tree(const char *path);

#endif
