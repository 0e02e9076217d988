/* gx_ratelimit.c - growing delays in a bounded table (see gx_ratelimit.h). */
#include "gx_ratelimit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "orr_alloc.h"
#include "orr_hash.h"

struct rl_slot {
    uint64_t hash;   /* 0 = empty */
    int64_t last;    /* last failure (or when remembered), ms */
    int64_t next_ok; /* no attempt is heard before this, ms */
    int failures;
    int remembered;
};

struct gx_ratelimit {
    pthread_mutex_t mu;
    gx_ratelimit_policy p;
    size_t nslots;
    struct rl_slot *slots;
};

static uint64_t rl_hash(const char *key)
{
    /* Never 0 so 0 can mean "empty". */
    uint64_t h = orr_hash_fnv1a_str(key);
    return h ? h : 1;
}

gx_ratelimit *gx_ratelimit_create(const gx_ratelimit_policy *p, size_t slots)
{
    gx_ratelimit *rl = orr_xcalloc(1, sizeof(*rl));
    pthread_mutex_init(&rl->mu, NULL);
    rl->p = *p;
    if (rl->p.base_delay_ms < 1)
        rl->p.base_delay_ms = 1;
    if (rl->p.max_delay_ms < rl->p.base_delay_ms)
        rl->p.max_delay_ms = rl->p.base_delay_ms;
    rl->nslots = slots ? slots : 4096;
    rl->slots = orr_xcalloc(rl->nslots, sizeof(*rl->slots));
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

/* 1 if s holds nothing that still matters at now. */
static int rl_stale(const gx_ratelimit *rl, const struct rl_slot *s, int64_t now)
{
    return s->hash == 0 || (now >= s->next_ok && now - s->last >= rl->p.forget_after_ms);
}

/* Linear probe over 8 slots; caller holds the lock. create: take a stale
 * slot, else the one whose last event is oldest. */
static struct rl_slot *rl_find(gx_ratelimit *rl, uint64_t h, int create, int64_t now)
{
    size_t base = (size_t)(h % rl->nslots);
    struct rl_slot *victim = NULL;
    for (size_t i = 0; i < 8; i++) {
        struct rl_slot *s = &rl->slots[(base + i) % rl->nslots];
        if (s->hash == h) {
            if (rl_stale(rl, s, now)) {
                memset(s, 0, sizeof(*s));
                s->hash = h;
            }
            return s;
        }
        if (!victim || (rl_stale(rl, s, now) && !rl_stale(rl, victim, now)) ||
            (rl_stale(rl, s, now) == rl_stale(rl, victim, now) && s->last < victim->last))
            victim = s;
    }
    if (!create)
        return NULL;
    memset(victim, 0, sizeof(*victim));
    victim->hash = h;
    return victim;
}

int64_t gx_ratelimit_blocked(gx_ratelimit *rl, const char *key, int64_t now)
{
    int64_t wait = 0;
    pthread_mutex_lock(&rl->mu);
    struct rl_slot *s = rl_find(rl, rl_hash(key), 0, now);
    if (s && s->next_ok > now)
        wait = s->next_ok - now;
    pthread_mutex_unlock(&rl->mu);
    return wait;
}

int64_t gx_ratelimit_fail(gx_ratelimit *rl, const char *key, int64_t now)
{
    pthread_mutex_lock(&rl->mu);
    struct rl_slot *s = rl_find(rl, rl_hash(key), 1, now);
    if (s->failures < 1000000)
        s->failures++;
    s->last = now;
    int over = s->failures - rl->p.free_failures;
    int64_t wait = 0;
    if (over > 0) {
        wait = rl->p.base_delay_ms;
        for (int i = 1; i < over && wait < rl->p.max_delay_ms; i++)
            wait *= 2;
        if (wait > rl->p.max_delay_ms)
            wait = rl->p.max_delay_ms;
        s->next_ok = now + wait;
    }
    pthread_mutex_unlock(&rl->mu);
    return wait;
}

void gx_ratelimit_clear(gx_ratelimit *rl, const char *key)
{
    pthread_mutex_lock(&rl->mu);
    struct rl_slot *s = rl_find(rl, rl_hash(key), 0, 0);
    if (s) {
        s->failures = 0;
        s->next_ok = 0;
    }
    pthread_mutex_unlock(&rl->mu);
}

void gx_ratelimit_remember(gx_ratelimit *rl, const char *key, int64_t now)
{
    pthread_mutex_lock(&rl->mu);
    struct rl_slot *s = rl_find(rl, rl_hash(key), 1, now);
    s->remembered = 1;
    s->last = now;
    pthread_mutex_unlock(&rl->mu);
}

int gx_ratelimit_known(gx_ratelimit *rl, const char *key, int64_t now)
{
    pthread_mutex_lock(&rl->mu);
    struct rl_slot *s = rl_find(rl, rl_hash(key), 0, now);
    int known = s && s->remembered;
    pthread_mutex_unlock(&rl->mu);
    return known;
}
