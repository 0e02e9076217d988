/*
 * orr_embed.h - files compiled into a binary: migrations, JSON Schemas.
 *
 * The build turns a list of files into an array of orr_embedded_file with
 * orr_embed(target var FILES...) (the top-level CMakeLists.txt, script
 * lib/orr_embed.cmake), so a binary always carries exactly the files it was
 * built with. data is NUL-terminated; len excludes the NUL. The project's
 * JSON Schemas (schema/NAME.schema.json) are embedded once, in liborrery
 * (orr_schemas.h).
 */
#ifndef ORR_EMBED_H
#define ORR_EMBED_H

#include <stddef.h>

typedef struct orr_embedded_file {
    const char *name; /* base name, "0001_init.sql" */
    const unsigned char *data;
    size_t len;
} orr_embedded_file;

/* The embedded file called name in files (terminated by a NULL name), or
 * NULL. Never allocates. */
const orr_embedded_file *orr_embed_find(const orr_embedded_file *files, const char *name);

#endif
