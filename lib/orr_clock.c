/*
 * orr_clock.c - absolute deadlines for timed waits (orr_clock.h).
 */
#include "orr_clock.h"

struct timespec orr_clock_add(struct timespec t, int64_t ms)
{
    if (ms <= 0)
        return t;
    t.tv_sec += (time_t)(ms / 1000);
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

int64_t orr_clock_ms(clockid_t clk)
{
    struct timespec now;
    clock_gettime(clk, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

struct timespec orr_clock_after(clockid_t clk, int64_t ms)
{
    struct timespec now;
    clock_gettime(clk, &now);
    return orr_clock_add(now, ms);
}
