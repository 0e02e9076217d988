/*
 * sort_lander.c - the landing thread of a writer (see sort_lander.h).
 *
 * One job slot under a mutex: submit fills it and wakes the thread, the
 * thread runs put_many outside the lock and marks the slot done, poll/wait
 * empty it. The items and their local files belong to the writer; the
 * thread only reads them during put_many.
 */
#include "sort_lander.h"

#include <string.h>

static void *lander_main(void *arg)
{
    sort_lander *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->stop && !(l->busy && !l->done))
            pthread_cond_wait(&l->cv, &l->mu);
        if (l->busy && !l->done) {
            const orr_blob_item *items = l->items;
            size_t n = l->nitems, landed = 0;
            orr_err err;
            orr_err_clear(&err);
            pthread_mutex_unlock(&l->mu);
            orr_status rc = l->blob->ops->put_many(l->blob, items, n, l->durable, &landed, &err);
            pthread_mutex_lock(&l->mu);
            l->landed = landed;
            l->rc = rc;
            l->err = err;
            l->done = 1;
            pthread_cond_broadcast(&l->cv);
            continue; /* a stop waits for the job it was given */
        }
        if (l->stop)
            break;
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

orr_status sort_lander_start(sort_lander *l, orr_blob *blob, int durable, orr_err *err)
{
    memset(l, 0, sizeof *l);
    l->blob = blob;
    l->durable = durable;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    if (pthread_create(&l->thread, NULL, lander_main, l) != 0) {
        pthread_cond_destroy(&l->cv);
        pthread_mutex_destroy(&l->mu);
        return orr_err_set(err, ORR_EIO, "writers", "cannot start a landing thread");
    }
    l->started = 1;
    return ORR_OK;
}

void sort_lander_stop(sort_lander *l)
{
    if (!l->started)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    l->started = 0;
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
}

int sort_lander_busy(sort_lander *l)
{
    pthread_mutex_lock(&l->mu);
    int b = l->busy;
    pthread_mutex_unlock(&l->mu);
    return b;
}

void sort_lander_submit(sort_lander *l, const orr_blob_item *items, size_t n)
{
    pthread_mutex_lock(&l->mu);
    l->items = items;
    l->nitems = n;
    l->busy = 1;
    l->done = 0;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

/* Under mu: hand the finished job's result out and free the slot. */
static int lander__take(sort_lander *l, size_t *landed, orr_status *rc, orr_err *err)
{
    *landed = l->landed;
    *rc = l->rc;
    if (err && l->rc != ORR_OK)
        *err = l->err;
    l->busy = 0;
    l->done = 0;
    l->items = NULL;
    l->nitems = 0;
    return 1;
}

int sort_lander_poll(sort_lander *l, size_t *landed, orr_status *rc, orr_err *err)
{
    pthread_mutex_lock(&l->mu);
    int r = l->busy && l->done ? lander__take(l, landed, rc, err) : 0;
    pthread_mutex_unlock(&l->mu);
    return r;
}

int sort_lander_wait(sort_lander *l, size_t *landed, orr_status *rc, orr_err *err)
{
    pthread_mutex_lock(&l->mu);
    while (l->busy && !l->done)
        pthread_cond_wait(&l->cv, &l->mu);
    int r = l->busy ? lander__take(l, landed, rc, err) : 0;
    pthread_mutex_unlock(&l->mu);
    return r;
}
