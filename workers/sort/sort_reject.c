/* sort_reject.c - the reject sink (see sort_reject.h). */
#include "sort_reject.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#define REJ_SAMPLE 1024

orr_status sort_reject_open(sort_reject *r, const char *path, orr_err *err)
{
    memset(r, 0, sizeof *r);
    r->f = fopen(path, "ae");
    if (!r->f)
        return orr_err_set(err, ORR_EIO, path, "cannot open reject file: %s", strerror(errno));
    return ORR_OK;
}

void sort_reject_add(sort_reject *r, uint32_t partition, sort_off off, sort_reject_reason why,
                     const char *rec, size_t len)
{
    char ob[SORT_OFF_MAX];
    r->count[why]++;
    r->total++;
    if (!r->f)
        return;
    fprintf(r->f, "partition=%" PRIu32 " offset=%s reason=%s len=%zu record=\"", partition,
            sort_off_fmt(off, ob), sort_reject_name(why), len);
    size_t n = len < REJ_SAMPLE ? len : REJ_SAMPLE;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)rec[i];
        if (c == '\\' || c == '"')
            fprintf(r->f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", r->f);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(r->f, "\\x%02x", c);
        else
            fputc(c, r->f);
    }
    fputs(n < len ? "\" cut=1\n" : "\"\n", r->f);
}

void sort_reject_flush(sort_reject *r)
{
    if (r->f)
        fflush(r->f);
}

void sort_reject_close(sort_reject *r)
{
    if (r->f)
        fclose(r->f);
    r->f = NULL;
}
