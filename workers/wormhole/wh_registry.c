/*
 * wh_registry.c - the one table of transfer plugins.
 *
 * Each store is a folder under plugins/ exporting one `const wh_plugin`
 * (its name and its reader, writer, splitter and periphery ops). Adding a
 * store = its folder, one line in WH_PLUGIN_LIST below and one line in
 * plugins/CMakeLists.txt. The list of known names is derived from the table.
 */
#include "wh.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* X(symbol): every plugin, in the order their names are listed. */
#define WH_PLUGIN_LIST(X)                                                                          \
    X(wh_pg_plugin)                                                                                \
    X(wh_mysql_plugin)                                                                             \
    X(wh_file_plugin)

#define WH_PLUGIN_EXTERN(sym) extern const wh_plugin sym;
#define WH_PLUGIN_ENTRY(sym)  &sym,

WH_PLUGIN_LIST(WH_PLUGIN_EXTERN)

static const wh_plugin *const wh__plugins[] = {WH_PLUGIN_LIST(WH_PLUGIN_ENTRY)};
#define WH__NPLUGINS (sizeof(wh__plugins) / sizeof(wh__plugins[0]))

const wh_plugin *wh_plugin_find(const char *name)
{
    for (size_t i = 0; i < WH__NPLUGINS; i++)
        if (strcmp(wh__plugins[i]->name, name) == 0)
            return wh__plugins[i];
    return NULL;
}

static pthread_once_t wh__names_once = PTHREAD_ONCE_INIT;
static char wh__names[256];

static void wh__names_build(void)
{
    size_t n = 0;
    for (size_t i = 0; i < WH__NPLUGINS && n < sizeof wh__names; i++) {
        int w = snprintf(wh__names + n, sizeof wh__names - n, "%s%s", i ? ", " : "",
                         wh__plugins[i]->name);
        if (w < 0)
            break;
        n += (size_t)w;
    }
}

const char *wh_plugin_names(void)
{
    pthread_once(&wh__names_once, wh__names_build);
    return wh__names;
}
