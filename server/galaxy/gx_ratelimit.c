/* gx_ratelimit.c - fixed-window failure counters in a bounded table (see gx_ratelimit.h). */
#include "gx_ratelimit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct rl_slot {
    uint64_t hash; /* 0 = empty */
    time_t window_start;
    int failures;
};

struct gx_ratelimit {
    pthread_mutex_t mu;
    int max_failures;
    int window_s;
    size_t nslots;
    struct rl_slot *slots;
};

static uint64_t rl_hash(const char *key)
{
    /* FNV-1a 64; never 0 so 0 can mean "empty". */
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    return h ? h : 1;
}

gx_ratelimit *gx_ratelimit_create(int max_failures, int window_s, size_t slots)
{
    gx_ratelimit *rl = calloc(1, sizeof(*rl));
    if (!rl)
        abort();
    pthread_mutex_init(&rl->mu, NULL);
    rl->max_failures = max_failures;
    rl->window_s = window_s;
    rl->nslots = slots ? slots : 4096;
    rl->slots = calloc(rl->nslots, sizeof(*rl->slots));
    if (!rl->slots)
        abort();
    return rl;
}

void gx_ratelimit_destroy(gx_ratelimit *rl)
{
    if (!rl)
        return;
    pthread_mutex_destroy(&rl->mu);
    free(rl->slots);
    free(rl);
}

/* Linear probe over 8 slots; caller holds the lock. create: take the oldest. */
static struct rl_slot *rl_find(gx_ratelimit *rl, uint64_t h, int create)
{
    size_t base = (size_t)(h % rl->nslots);
    struct rl_slot *oldest = NULL;
    for (size_t i = 0; i < 8; i++) {
        struct rl_slot *s = &rl->slots[(base + i) % rl->nslots];
        if (s->hash == h)
            return s;
        if (!oldest || s->hash == 0 ||
            (oldest->hash != 0 && s->window_start < oldest->window_start))
            oldest = s;
    }
    if (!create)
        return NULL;
    oldest->hash = h;
    oldest->failures = 0;
    oldest->window_start = 0;
    return oldest;
}

int gx_ratelimit_blocked(gx_ratelimit *rl, const char *key, time_t now)
{
    int wait = 0;
    pthread_mutex_lock(&rl->mu);
    struct rl_slot *s = rl_find(rl, rl_hash(key), 0);
    if (s && s->failures >= rl->max_failures && now < s->window_start + rl->window_s)
        wait = (int)(s->window_start + rl->window_s - now);
    pthread_mutex_unlock(&rl->mu);
    return wait;
}

void gx_ratelimit_fail(gx_ratelimit *rl, const char *key, time_t now)
{
    pthread_mutex_lock(&rl->mu);
    struct rl_slot *s = rl_find(rl, rl_hash(key), 1);
    if (now >= s->window_start + rl->window_s) {
        s->window_start = now;
        s->failures = 0;
    }
    s->failures++;
    pthread_mutex_unlock(&rl->mu);
}

void gx_ratelimit_clear(gx_ratelimit *rl, const char *key)
{
    pthread_mutex_lock(&rl->mu);
    struct rl_slot *s = rl_find(rl, rl_hash(key), 0);
    if (s)
        memset(s, 0, sizeof(*s));
    pthread_mutex_unlock(&rl->mu);
}
