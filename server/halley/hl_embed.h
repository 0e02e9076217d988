/*
 * hl_embed.h - the migrations compiled into halleyd (migrations/NNNN_*.sql,
 * embedded by orr_embed() in server/halley/CMakeLists.txt), so a halleyd
 * binary always carries exactly the schema versions it understands. The
 * JSON Schemas it checks specs with are liborrery's (orr_schemas.h).
 */
#ifndef HL_EMBED_H
#define HL_EMBED_H

#include "orr_embed.h"

/* Sorted by name; terminated by an entry with name == NULL. */
extern const orr_embedded_file hl_migration_files[];
extern const unsigned hl_migration_files_count;

#endif
