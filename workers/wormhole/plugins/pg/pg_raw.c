/*
 * pg_raw.c - PostgreSQL to PostgreSQL pass-through: rows travel in COPY's
 * binary format from the reader's COPY TO to the writer's COPY FROM, with
 * no value decoded to text and encoded again (and the servers spared their
 * text output and input functions).
 *
 * It is planned only where nothing could differ: the same type text on
 * both sides for every column, no value check and no conversion the writer
 * would apply to canonical text (pg_periphery.c), no table list, and only
 * built-in types on both sides (a built-in type has the same OID in every
 * database, and binary arrays and records carry OIDs). The batch then holds
 * the tuples back to back as the reader got them; its fields point at the
 * values inside them (binary, not canonical text), and the writer sends the
 * batch's bytes as they are.
 */
#include <stdlib.h>
#include <string.h>

#include "pg_common.h"

/* "PGCOPY\n\377\r\n\0", flags, header extension length. */
static const char pg_raw_sig[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', '\377', '\r', '\n', '\0'};

static uint32_t pg_raw_u32(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static int pg_raw_i16(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    return (int16_t)(uint16_t)((unsigned)u[0] << 8 | u[1]);
}

size_t wh_pg_raw_header(char *out)
{
    memcpy(out, pg_raw_sig, sizeof(pg_raw_sig));
    memset(out + sizeof(pg_raw_sig), 0, 8);
    return sizeof(pg_raw_sig) + 8;
}

int wh_pg_raw_parse(wh_pg_raw *st, const char *p, size_t n, wh_batch *b, const char **why)
{
    size_t pos = 0;
    int rows = 0;
    if (!st->header_done) {
        if (n < 19 || memcmp(p, pg_raw_sig, sizeof(pg_raw_sig)) != 0) {
            *why = "binary COPY without its signature";
            return -1;
        }
        uint32_t flags = pg_raw_u32(p + 11), ext = pg_raw_u32(p + 15);
        if (flags & 0xFFFF0000u || ext > n - 19) {
            *why = "binary COPY header with flags or an extension this reader does not know";
            return -1;
        }
        pos = 19 + ext;
        st->header_done = 1;
    }
    while (pos < n) {
        if (n - pos < 2) {
            *why = "binary COPY tuple cut short";
            return -1;
        }
        int nf = pg_raw_i16(p + pos);
        if (nf == -1) {
            st->ended = 1;
            pos += 2;
            continue;
        }
        if (st->ended || nf < 0 || (size_t)nf != b->ncols || b->nrows >= b->cap_rows) {
            *why = "binary COPY tuple with another number of fields than the columns";
            return -1;
        }
        /* Walk the tuple once to know it is whole, then copy it in one go. */
        size_t end = pos + 2;
        for (int f = 0; f < nf; f++) {
            if (n - end < 4) {
                *why = "binary COPY tuple cut short";
                return -1;
            }
            int32_t len = (int32_t)pg_raw_u32(p + end);
            end += 4;
            if (len < -1 || (len > 0 && (size_t)len > n - end)) {
                *why = "binary COPY field cut short";
                return -1;
            }
            if (len > 0)
                end += (size_t)len;
        }
        size_t off = wh_batch_raw(b, p + pos, end - pos);
        wh_batch_row_begin(b, ++st->rownum);
        size_t q = 2;
        for (int f = 0; f < nf; f++) {
            int32_t len = (int32_t)pg_raw_u32(p + pos + q);
            q += 4;
            wh_batch_put_ref(b, off + q, len);
            if (len > 0)
                q += (size_t)len;
        }
        if (wh_batch_row_end(b) != ORR_OK) {
            b->data.len = off;
            *why = "batch too large";
            return -1;
        }
        pos = end;
        rows++;
    }
    return rows;
}

/* 1 when every column of s has a built-in type in table; 0 when one has
 * not, is missing, or the query fails. */
static int pg_raw_builtin(PGconn *conn, const char *table, const wh_schema *s)
{
    if (!conn)
        return 0;
    orr_buf lit = ORR_BUF_INIT;
    wh_pg_quote_qualified(&lit, table);
    const char *params[1] = {lit.data};
    PGresult *r = PQexecParams(conn,
                               "SELECT a.attname, a.atttypid::int8 FROM pg_attribute a "
                               "WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 "
                               "AND NOT a.attisdropped",
                               1, NULL, params, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    for (size_t i = 0; ok && i < s->ncols; i++) {
        int found = 0;
        for (int k = 0; k < PQntuples(r) && !found; k++) {
            if (strcmp(PQgetvalue(r, k, 0), s->cols[i].name) != 0)
                continue;
            found = 1;
            /* FirstNormalObjectId: below it, the OIDs initdb assigns. */
            ok = strtoll(PQgetvalue(r, k, 1), NULL, 10) < 16384;
        }
        ok = ok && found;
    }
    PQclear(r);
    orr_buf_free(&lit);
    return ok;
}

int wh_pg_raw_from(void *conf, const struct wh_reader_ops *reader, void *reader_conf)
{
    wh_pg_conf *w = conf, *rd = reader_conf;
    if (reader != &wh_pg_reader || !rd || rd->o.tables || !w->check || !w->conv ||
        w->target.ncols != rd->src.ncols)
        return 0;
    for (size_t i = 0; i < w->target.ncols; i++) {
        if (w->check[i] || strcmp(w->target.cols[i].type, rd->src.cols[i].type) != 0)
            return 0;
        /* Of the conversions, only the bit strings' change a value; a NUL
         * byte or \u0000 in jsonb cannot come out of PostgreSQL, and a bit
         * string fits a column of its own type. */
        if (w->conv[i] == WH_PG_CONV_BITS_BYTES || w->conv[i] == WH_PG_CONV_BITS_INT)
            return 0;
    }
    return pg_raw_builtin(rd->snap_conn, rd->o.table, &rd->src) &&
           pg_raw_builtin(w->per_conn, w->o.table, &w->target);
}
