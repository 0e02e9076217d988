/* wh_registry.c - the one table of transfer plugins. Adding a store = one line. */
#include "plugins/wh_plugins.h"

#include <string.h>

static const wh_plugin wh_plugins[] = {
    {"postgres", &wh_pg_reader, &wh_pg_writer, &wh_pg_splitter, &wh_pg_reader_periphery,
     &wh_pg_writer_periphery},
    {"mysql", &wh_mysql_reader, &wh_mysql_writer, &wh_mysql_splitter, &wh_mysql_reader_periphery,
     &wh_mysql_writer_periphery},
    {"file", &wh_file_reader, &wh_file_writer, &wh_file_splitter, NULL, &wh_file_writer_periphery},
};

const wh_plugin *wh_plugin_find(const char *name)
{
    for (size_t i = 0; i < sizeof(wh_plugins) / sizeof(wh_plugins[0]); i++)
        if (strcmp(wh_plugins[i].name, name) == 0)
            return &wh_plugins[i];
    return NULL;
}

const char *wh_plugin_names(void)
{
    return "postgres, mysql, file";
}
