/*
 * hl_migrate.h - schema migrations of halleyd.
 *
 * Migrations are the embedded files migrations/NNNN_name.sql (hl_embed.h),
 * versions 1, 2, 3... without gaps. `halleyd migrate` applies each pending
 * one in its own transaction and records it in schema_migrations; a session
 * advisory lock keeps two concurrent migrators from interleaving. A database
 * whose schema is newer than the newest embedded migration is refused.
 */
#ifndef HL_MIGRATE_H
#define HL_MIGRATE_H

#include <libpq-fe.h>

#include "hl_embed.h"
#include "orr_status.h"

/* Version of a migration file name: "0007_x.sql" -> 7. ORR_EINVAL (field =
 * the name) unless it is 4 digits, '_', a name and ".sql". */
orr_status hl_migrate_parse_name(const char *name, int *version, orr_err *err);

/* Check a migration list: parsable names, versions 1..n in order without
 * gaps. On success *latest is the last version. */
orr_status hl_migrate_check(const orr_embedded_file *files, unsigned n, int *latest, orr_err *err);

/* Newest version this binary carries (0 if the embedded list is broken). */
int hl_migrate_known_version(void);

/* Highest applied version of the database (0 for an empty database).
 * ORR_EUNAVAIL if the query fails on a lost connection, else ORR_EINTERNAL. */
orr_status hl_migrate_db_version(PGconn *pg, int *version, orr_err *err);

/* Apply every pending embedded migration. *from and *to (may be NULL) get the
 * versions before and after. ORR_ESTATE if the database is newer than this
 * binary; ORR_EINTERNAL (field = file name) if a migration fails, which is
 * rolled back. */
orr_status hl_migrate_apply(PGconn *pg, int *from, int *to, orr_err *err);

#endif
