/*
 * orr_clock.c - absolute deadlines for timed waits (orr_clock.h).
 */
#include "orr_clock.h"

struct timespec orr_clock_add_us(struct timespec t, int64_t us)
{
    if (us <= 0)
        return t;
    t.tv_sec += (time_t)(us / 1000000);
    t.tv_nsec += (long)(us % 1000000) * 1000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

struct timespec orr_clock_add(struct timespec t, int64_t ms)
{
    return ms <= 0 ? t : orr_clock_add_us(t, ms * 1000);
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
