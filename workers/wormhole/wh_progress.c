/*
 * wh_progress.c - the progress line and the end estimate (see
 * wh_progress.h).
 */
#include "wh_progress.h"

#include <inttypes.h>

double wh_progress_eta(const wh_progress *p)
{
    double el = p->elapsed_s > 0 ? p->elapsed_s : 0;
    if (p->rows_estimate > p->rows_read && p->rows_read > 0)
        return el * (double)(p->rows_estimate - p->rows_read) / (double)p->rows_read;
    if (p->shards_total > 0 && p->shards_done >= p->shards_total)
        return 0;
    if (p->shards_done > 0 && p->shards_done < p->shards_total)
        return el * (double)(p->shards_total - p->shards_done) / (double)p->shards_done;
    return -1;
}

void wh_progress_print(FILE *f, const wh_progress *p)
{
    double eta = wh_progress_eta(p);
    char eta_s[32] = "-1";
    if (eta >= 0)
        snprintf(eta_s, sizeof eta_s, "%.1f", eta);
    fprintf(f,
            "wormhole progress: rows_read=%" PRIu64 " rows_written=%" PRIu64
            " mb=%.1f rows_per_sec=%.0f dirty=%" PRIu64 " waiting=%s shards_done=%" PRIu64
            " shards_total=%" PRIu64 " rows_estimate=%" PRIu64 " elapsed_s=%.1f eta_s=%s\n",
            p->rows_read, p->rows_written, (double)p->bytes_read / 1048576.0, p->rows_per_sec,
            p->dirty, p->waiting ? p->waiting : "none", p->shards_done, p->shards_total,
            p->rows_estimate, p->elapsed_s, eta_s);
}
