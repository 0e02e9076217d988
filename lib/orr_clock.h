/*
 * orr_clock.h - absolute deadlines for timed waits.
 *
 * pthread_cond_timedwait and its kind take an absolute time on the
 * condition's clock; every timed wait in Orrery needs "now on clock clk,
 * plus ms". That sum, with the carry into seconds, lives here once, and so
 * does "now on clk in milliseconds", which ages and intervals compare.
 */
#ifndef ORR_CLOCK_H
#define ORR_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Now on clk plus ms (ms <= 0: now). */
struct timespec orr_clock_after(clockid_t clk, int64_t ms);

/* t plus ms (ms <= 0: t), nanoseconds kept below one second. */
struct timespec orr_clock_add(struct timespec t, int64_t ms);

/* The same in microseconds (us <= 0: t), for periods below a millisecond. */
struct timespec orr_clock_add_us(struct timespec t, int64_t us);

/* Now on clk in whole milliseconds. */
int64_t orr_clock_ms(clockid_t clk);

#endif
