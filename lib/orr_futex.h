/*
 * orr_futex.h - the two futex calls Orrery's hand-offs sleep and wake on.
 *
 * A thread that waits for one word (a call's end, a turn at a queue, a
 * batch's answer) sleeps with orr_futex_wait while the word still holds
 * `seen`, and whoever changes the word wakes it with orr_futex_wake. Both
 * are process-private. A wait may return early (a signal, a wake-up meant
 * for a word that reused the address): every caller re-checks its word.
 */
#ifndef ORR_FUTEX_H
#define ORR_FUTEX_H

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sleep while *w == seen, at most rel (NULL: no limit). */
static inline void orr_futex_wait(_Atomic uint32_t *w, uint32_t seen, const struct timespec *rel)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, seen, rel, NULL, 0);
}

/* Wake up to n threads sleeping on w. */
static inline void orr_futex_wake(_Atomic uint32_t *w, int n)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

#endif
