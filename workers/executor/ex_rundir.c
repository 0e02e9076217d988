/*
 * ex_rundir.c - the private folder of each run, <work>/runs/<instance>-
 * <attempt>, made from a kept empty folder when there is one.
 *
 * A run's folder used to be made at its start and removed at its end: a new
 * inode and a freed one per run. On an ext4 without a journal each new inode
 * skips every inode of its group freed in the last minute or more, so at
 * hundreds of runs a second every mkdir (and the run's log file) walked past
 * thousands of freshly freed inodes (docs/benchmarks.md, "Run folders kept
 * for the next run"). Now a folder its run left empty, still 0700, owned as
 * made and without an ACL, is renamed into <work>/run-spare/<n> and renamed
 * back into place for a later run. A folder that holds anything, or that its
 * task changed, is removed as before, so a run never sees what another left.
 * The spares of an earlier executord are removed at start. Every run has
 * the same user, so a process a run left behind could reach another run's
 * folder by its name already; a kept folder gives it nothing more.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "ex_daemon.h"

orr_status ex_rundir_init(ex_daemon *d, orr_err *err)
{
    snprintf(d->run_spare_dir, sizeof d->run_spare_dir, "%.400s/run-spare", d->work_dir);
    ex_remove_tree(d->run_spare_dir);
    if (mkdir(d->run_spare_dir, 0700) != 0 && errno != EEXIST)
        return orr_err_set(err, ORR_EIO, "executor.work_dir", "%s: %s", d->run_spare_dir,
                           strerror(errno));
    d->n_run_spares = 0;
    return ORR_OK;
}

static void spare_path(const ex_daemon *d, unsigned n, char *out, size_t size)
{
    snprintf(out, size, "%s/%u", d->run_spare_dir, n);
}

int ex_rundir_make(ex_daemon *d, const char *path)
{
    char sp[EX_PATH + 32];
    int took = 0, moved = 0;
    pthread_mutex_lock(&d->run_spare_mu);
    if (d->n_run_spares > 0) {
        spare_path(d, d->run_spare[--d->n_run_spares], sp, sizeof sp);
        took = 1;
        moved = rename(sp, path) == 0;
    }
    pthread_mutex_unlock(&d->run_spare_mu);
    if (moved)
        return 0;
    if (took)
        ex_remove_tree(sp); /* gone, or path in the way: make a new one */
    if (mkdir(path, 0700) != 0)
        return -1;
    if (d->drop && chown(path, d->uid, d->gid) != 0) {
        int e = errno;
        rmdir(path);
        errno = e;
        return -1;
    }
    return 0;
}

/* Empty, 0700, owned as ex_rundir_make made it, and no ACL: what a new
 * folder would be. Names other than "." and ".." mean something is left. */
static int reusable(const ex_daemon *d, const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    int ok = fstat(fd, &st) == 0 && (st.st_mode & 07777) == 0700 &&
             st.st_uid == (d->drop ? d->uid : geteuid()) && (!d->drop || st.st_gid == d->gid) &&
             st.st_nlink == 2 && fgetxattr(fd, "system.posix_acl_access", NULL, 0) < 0 &&
             errno == ENODATA && fgetxattr(fd, "system.posix_acl_default", NULL, 0) < 0 &&
             errno == ENODATA;
    char buf[1024];
    ssize_t got;
    while (ok && (got = getdents64(fd, buf, sizeof buf)) != 0) {
        if (got < 0) {
            ok = 0;
            break;
        }
        for (ssize_t off = 0; off < got && ok;) {
            const struct dirent64 *e = (const struct dirent64 *)(buf + off);
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                ok = 0;
            off += e->d_reclen;
        }
    }
    close(fd);
    return ok;
}

void ex_rundir_done(ex_daemon *d, const char *path)
{
    int kept = 0;
    if (reusable(d, path)) {
        /* Renamed and counted under one lock: once path is gone, the next
         * ex_rundir_make can take it. */
        pthread_mutex_lock(&d->run_spare_mu);
        if (d->n_run_spares < EX_RUN_SPARES) {
            char sp[EX_PATH + 32];
            unsigned n = d->run_spare_next++;
            spare_path(d, n, sp, sizeof sp);
            if (rename(path, sp) == 0) {
                d->run_spare[d->n_run_spares++] = n;
                kept = 1;
            }
        }
        pthread_mutex_unlock(&d->run_spare_mu);
    }
    if (!kept)
        ex_remove_tree(path);
}
