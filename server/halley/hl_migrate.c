/*
 * hl_migrate.c - apply embedded migrations in order, each in a transaction.
 */
#include "hl_migrate.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orr_log.h"

/* Key of the advisory lock held while migrating ("orrmigr"). */
#define HL_MIGRATE_LOCK "7310599234116399218"

orr_status hl_migrate_parse_name(const char *name, int *version, orr_err *err)
{
    size_t len = strlen(name);
    if (len < 10 || name[4] != '_' || strcmp(name + len - 4, ".sql") != 0)
        return orr_err_set(err, ORR_EINVAL, name, "migration names look like 0001_name.sql");
    int v = 0;
    for (int i = 0; i < 4; i++) {
        if (!isdigit((unsigned char)name[i]))
            return orr_err_set(err, ORR_EINVAL, name, "migration names start with 4 digits");
        v = v * 10 + (name[i] - '0');
    }
    *version = v;
    return ORR_OK;
}

orr_status hl_migrate_check(const orr_embedded_file *files, unsigned n, int *latest, orr_err *err)
{
    int want = 1;
    for (unsigned i = 0; i < n; i++, want++) {
        int v = 0;
        if (hl_migrate_parse_name(files[i].name, &v, err) != ORR_OK)
            return ORR_EINVAL;
        if (v != want)
            return orr_err_set(err, ORR_EINVAL, files[i].name,
                               "expected migration version %d here (no gaps, no duplicates)", want);
    }
    *latest = want - 1;
    return ORR_OK;
}

int hl_migrate_known_version(void)
{
    int v = 0;
    orr_err e;
    if (hl_migrate_check(hl_migration_files, hl_migration_files_count, &v, &e) != ORR_OK)
        return 0;
    return v;
}

static orr_status hl__exec(PGconn *pg, const char *sql, const char *what, orr_err *err)
{
    PGresult *r = PQexec(pg, sql);
    ExecStatusType t = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK) {
        PQclear(r);
        return ORR_OK;
    }
    const char *m = r ? PQresultErrorMessage(r) : PQerrorMessage(pg);
    orr_status s = PQstatus(pg) == CONNECTION_OK ? ORR_EINTERNAL : ORR_EUNAVAIL;
    orr_err_set(err, s, what, "%.*s", (int)strcspn(m, "\n"), m);
    PQclear(r);
    return s;
}

orr_status hl_migrate_db_version(PGconn *pg, int *version, orr_err *err)
{
    PGresult *r = PQexec(pg, "SELECT to_regclass('schema_migrations') IS NOT NULL");
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) {
        orr_status s = PQstatus(pg) == CONNECTION_OK ? ORR_EINTERNAL : ORR_EUNAVAIL;
        orr_err_set(err, s, NULL, "cannot read schema version: %s", PQerrorMessage(pg));
        PQclear(r);
        return s;
    }
    int exists = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (!exists) {
        *version = 0;
        return ORR_OK;
    }
    r = PQexec(pg, "SELECT coalesce(max(version), 0) FROM schema_migrations");
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) {
        orr_status s = PQstatus(pg) == CONNECTION_OK ? ORR_EINTERNAL : ORR_EUNAVAIL;
        orr_err_set(err, s, NULL, "cannot read schema version: %s", PQerrorMessage(pg));
        PQclear(r);
        return s;
    }
    *version = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return ORR_OK;
}

orr_status hl_migrate_apply(PGconn *pg, int *from, int *to, orr_err *err)
{
    int known;
    if (hl_migrate_check(hl_migration_files, hl_migration_files_count, &known, err) != ORR_OK)
        return ORR_EINTERNAL;
    orr_status s = hl__exec(pg, "SET client_min_messages = warning", "settings", err);
    if (s == ORR_OK)
        s = hl__exec(pg, "SELECT pg_advisory_lock(" HL_MIGRATE_LOCK ")", "lock", err);
    if (s != ORR_OK)
        return s;
    s = hl__exec(pg,
                 "CREATE TABLE IF NOT EXISTS schema_migrations ("
                 " version integer PRIMARY KEY, name text NOT NULL,"
                 " applied_at timestamptz NOT NULL DEFAULT now())",
                 "schema_migrations", err);
    int cur = 0;
    if (s == ORR_OK)
        s = hl_migrate_db_version(pg, &cur, err);
    if (s != ORR_OK)
        goto unlock;
    if (from)
        *from = cur;
    if (cur > known) {
        s = orr_err_set(err, ORR_ESTATE, "schema_migrations",
                        "database schema version %d is newer than this halleyd knows (%d)", cur,
                        known);
        goto unlock;
    }
    for (int v = cur + 1; v <= known; v++) {
        const orr_embedded_file *f = &hl_migration_files[v - 1];
        if ((s = hl__exec(pg, "BEGIN", f->name, err)) != ORR_OK)
            goto unlock;
        if ((s = hl__exec(pg, (const char *)f->data, f->name, err)) != ORR_OK) {
            orr_err e2;
            hl__exec(pg, "ROLLBACK", f->name, &e2);
            goto unlock;
        }
        char vbuf[16];
        snprintf(vbuf, sizeof vbuf, "%d", v);
        const char *params[2] = {vbuf, f->name};
        PGresult *r =
            PQexecParams(pg, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", 2,
                         NULL, params, NULL, NULL, 0);
        int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (!ok) {
            orr_err e2;
            s = orr_err_set(err, ORR_EINTERNAL, f->name, "cannot record migration: %s",
                            PQerrorMessage(pg));
            hl__exec(pg, "ROLLBACK", f->name, &e2);
            goto unlock;
        }
        if ((s = hl__exec(pg, "COMMIT", f->name, err)) != ORR_OK)
            goto unlock;
        ORR_INFO("migration applied", "version=%d name=%s", v, f->name);
        cur = v;
    }
    if (to)
        *to = cur;
unlock:;
    orr_err e3;
    hl__exec(pg, "SELECT pg_advisory_unlock(" HL_MIGRATE_LOCK ")", "unlock", &e3);
    return s;
}
