/* orr_embed.c - lookup in a table of embedded files (see orr_embed.h). */
#include "orr_embed.h"

#include <string.h>

const orr_embedded_file *orr_embed_find(const orr_embedded_file *files, const char *name)
{
    for (const orr_embedded_file *f = files; f && f->name; f++)
        if (strcmp(f->name, name) == 0)
            return f;
    return NULL;
}
