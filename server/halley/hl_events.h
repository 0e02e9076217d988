/*
 * hl_events.h - the LISTEN side of halleyd's event stream.
 *
 * Writers insert into the events table in the transaction of the change (the
 * table is the source of truth). Rare kinds (task.*, pools, users) also
 * pg_notify('orrery_events', "<id> <kind> <task_id>") in that transaction.
 * Hot writes (instance creation and transitions) do not: a NOTIFY takes a
 * database-wide lock from pre-commit to the end of the transaction, which
 * serialises every notifying commit. Instead the writer calls
 * hl_events_committed() after its commit; that wakes local readers at once
 * and has the listener thread send ONE coalesced NOTIFY
 * "<max id> instance.batch 0" (at most one per HL_EVENTS_NOTIFY_MS) for the
 * other replicas. Each halleyd keeps one LISTEN connection in a background
 * thread which
 *   - bumps a sequence number and wakes every WatchEvents reader, who then
 *     fetch new rows by id from the table (so nothing depends on the
 *     notification payload being delivered, and order = id order);
 *   - drops task cache entries named by task.* notifications, and disables
 *     the cache while it is not listening;
 *   - deletes events older than the retention window, once a minute.
 * Readers also poll on a timeout, so a lost notification only delays.
 *
 * Call order: hl_events_start -> (hl_events_seq / hl_events_wait)* ->
 * hl_events_stop. Thread-safe.
 */
#ifndef HL_EVENTS_H
#define HL_EVENTS_H

#include <stdint.h>

#include "hl_cache.h"
#include "orr_status.h"

typedef struct hl_events hl_events;

/* Start the listener thread on its own connection to dsn. PostgreSQL being
 * down is not an error (it keeps retrying every second). retention_ms <= 0
 * keeps events forever. cache may be NULL. */
orr_status hl_events_start(const char *dsn, int64_t retention_ms, hl_cache *cache, hl_events **out,
                           orr_err *err);
/* Stop the thread and close its connection. NULL is a no-op. */
void hl_events_stop(hl_events *ev);

/* 1 while the LISTEN connection is up. */
int hl_events_listening(hl_events *ev);
/* Counter bumped on every notification (and on reconnects). */
uint64_t hl_events_seq(hl_events *ev);
/* Block until the counter passes seen or timeout_ms elapse; returns the
 * counter. */
uint64_t hl_events_wait(hl_events *ev, uint64_t seen, int timeout_ms);
/* Report that this process committed events up to id (no NOTIFY sent in
 * the transaction): wakes local readers now and schedules one coalesced
 * NOTIFY for other replicas. Never blocks on the database. NULL is a no-op. */
void hl_events_committed(hl_events *ev, int64_t id);

/* Coalescing window of hl_events_committed's NOTIFY. */
#define HL_EVENTS_NOTIFY_MS 2

/* Wake every waiter (used on shutdown). */
void hl_events_wake(hl_events *ev);

/* Parse a notification payload "<id> <kind> <task_id>": 0 on success. */
int hl_events_parse_payload(const char *payload, int64_t *id, char *kind, size_t kind_size,
                            int64_t *task_id);

#endif
