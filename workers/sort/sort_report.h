/*
 * sort_report.h - the Halley statistics sink: every reconciled unit (a
 * _CHECK version landed) is reported with ReportDataUnit (reconciled =
 * true, check_version = the _CHECK version, so a late amendment that writes
 * version + 1 updates the stored unit and an older report is ignored).
 *
 * The checker calls the sink on the pipeline thread; the sink only copies
 * the unit into a bounded queue and a reporter thread sends the calls, so a
 * slow or absent Halley never stalls the stream. A call that fails with
 * UNAVAILABLE/DEADLINE is retried (backoff up to 5 s) in order; one that
 * Halley refuses (bad argument, auth) is logged and dropped. Past
 * SORT_REPORT_QUEUE_MAX queued units the oldest are dropped and counted.
 *
 * Call order: sort_report_start -> sort_report_sink (pass to the pipeline)
 * -> ... -> sort_report_stop (sends what is queued for at most flush_ms,
 * joins the thread, frees).
 */
#ifndef SORT_REPORT_H
#define SORT_REPORT_H

#include <stdint.h>

#include "orr_status.h"
#include "sort_check.h"

#define SORT_REPORT_QUEUE_MAX 100000

typedef struct sort_report sort_report;

typedef struct sort_report_stats {
    uint64_t sent, refused, dropped, queued;
} sort_report_stats;

/* Reporter to halleyd at addr ("host:port") with token (may be empty).
 * Never blocks on the network. ORR_EINVAL if addr is empty. */
orr_status sort_report_start(const char *addr, const char *token, sort_report **out, orr_err *err);
/* The sink that feeds it (valid until sort_report_stop). */
const sort_check_sink *sort_report_sink(sort_report *r);
void sort_report_get_stats(sort_report *r, sort_report_stats *st);
/* Flush for at most flush_ms, stop, free. NULL is fine. */
void sort_report_stop(sort_report *r, int flush_ms);

#endif
