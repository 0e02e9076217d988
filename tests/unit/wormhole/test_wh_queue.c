/* test_wh_queue.c - batch pool and double-buffered queues under real threads. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "wh_queue.h"

#define PRODUCERS    3
#define PER_PRODUCER 2000
#define QUEUES       2
#define CONSUMERS    2

typedef struct fixture {
    wh_pool pool;
    wh_queue q[QUEUES];
    atomic_uint_fast64_t sum[QUEUES];
    atomic_uint_fast64_t count[QUEUES];
} fixture;

typedef struct consumer_arg {
    fixture *f;
    int q;
} consumer_arg;

static void *producer(void *arg)
{
    fixture *f = arg;
    for (int i = 0; i < PER_PRODUCER; i++) {
        wh_batch *b = wh_pool_get(&f->pool, 1);
        assert_non_null(b);
        b->shard = (size_t)i + 1;
        atomic_store(&b->refs, QUEUES);
        for (int k = 0; k < QUEUES; k++)
            assert_int_equal(wh_queue_push(&f->q[k], b), ORR_OK);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    consumer_arg *c = arg;
    wh_batch *b;
    while ((b = wh_queue_pop(&c->f->q[c->q])) != NULL) {
        atomic_fetch_add(&c->f->sum[c->q], b->shard);
        atomic_fetch_add(&c->f->count[c->q], 1);
        wh_pool_release(&c->f->pool, b);
    }
    return NULL;
}

static void test_every_batch_reaches_every_queue_once(void **state)
{
    (void)state;
    static fixture f;
    memset(&f, 0, sizeof(f));
    wh_pool_init(&f.pool, 6, 8, 1024); /* fewer batches than work: producers must wait */
    for (int k = 0; k < QUEUES; k++)
        wh_queue_init(&f.q[k], 2);
    pthread_t prod[PRODUCERS], cons[QUEUES * CONSUMERS];
    consumer_arg args[QUEUES * CONSUMERS];
    for (int i = 0; i < QUEUES * CONSUMERS; i++) {
        args[i].f = &f;
        args[i].q = i % QUEUES;
        pthread_create(&cons[i], NULL, consumer, &args[i]);
    }
    for (int i = 0; i < PRODUCERS; i++)
        pthread_create(&prod[i], NULL, producer, &f);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(prod[i], NULL);
    for (int k = 0; k < QUEUES; k++)
        wh_queue_close(&f.q[k]);
    for (int i = 0; i < QUEUES * CONSUMERS; i++)
        pthread_join(cons[i], NULL);
    uint64_t want_sum = (uint64_t)PRODUCERS * PER_PRODUCER * (PER_PRODUCER + 1) / 2;
    for (int k = 0; k < QUEUES; k++) {
        assert_int_equal(atomic_load(&f.count[k]), PRODUCERS * PER_PRODUCER);
        assert_int_equal(atomic_load(&f.sum[k]), want_sum);
    }
    assert_int_equal(f.pool.nfree, f.pool.total); /* every batch came back */
    for (int k = 0; k < QUEUES; k++)
        wh_queue_destroy(&f.q[k]);
    wh_pool_destroy(&f.pool);
}

static void *blocked_pop(void *arg)
{
    return wh_queue_pop(arg);
}

static void *blocked_get(void *arg)
{
    return wh_pool_get(arg, 1);
}

static void test_cancel_wakes_waiters(void **state)
{
    (void)state;
    wh_queue q;
    wh_pool p;
    wh_queue_init(&q, 1);
    wh_pool_init(&p, 1, 1, 64);
    wh_batch *only = wh_pool_get(&p, 1);
    assert_non_null(only);
    pthread_t t1, t2;
    pthread_create(&t1, NULL, blocked_pop, &q);
    pthread_create(&t2, NULL, blocked_get, &p);
    wh_queue_cancel(&q);
    wh_pool_cancel(&p);
    void *r1, *r2;
    pthread_join(t1, &r1);
    pthread_join(t2, &r2);
    assert_null(r1);
    assert_null(r2);
    assert_int_equal(wh_queue_push(&q, only), ORR_ECANCELLED);
    wh_queue_destroy(&q);
    wh_pool_destroy(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_batch_reaches_every_queue_once),
        cmocka_unit_test(test_cancel_wakes_waiters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
