/*
 * hl_embed.h - files compiled into halleyd: the migrations and task schemas.
 *
 * The build turns migrations/NNNN_*.sql and schema/NAME.schema.json into arrays
 * (hl_embed.cmake), so a halleyd binary always carries exactly the schema
 * versions it understands. data is NUL-terminated; len excludes the NUL.
 */
#ifndef HL_EMBED_H
#define HL_EMBED_H

#include <stddef.h>

typedef struct hl_embedded_file {
    const char *name; /* base name, "0001_init.sql" */
    const unsigned char *data;
    size_t len;
} hl_embedded_file;

/* Sorted by name; terminated by an entry with name == NULL. */
extern const hl_embedded_file hl_migration_files[];
extern const unsigned hl_migration_files_count;
extern const hl_embedded_file hl_schema_files[];
extern const unsigned hl_schema_files_count;

/* The embedded file called name, or NULL. */
const hl_embedded_file *hl_embed_find(const hl_embedded_file *files, const char *name);

#endif
