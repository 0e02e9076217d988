/*
 * orr_install.c - the installed data folder of Orrery (see orr_install.h).
 */
#include "orr_install.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef ORR_INSTALL_DATADIR
#define ORR_INSTALL_DATADIR "/usr/local/share/orrery"
#endif

const char *orr_install_datadir(void)
{
    return ORR_INSTALL_DATADIR;
}

static int inst_is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *orr_install_find_dir(const char *value, int is_default, const char *name, char *out,
                                 size_t n)
{
    snprintf(out, n, "%s", value ? value : "");
    if (!is_default || (value && *value && inst_is_dir(value)))
        return out;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (len > 0) {
        exe[len] = '\0';
        char cand[PATH_MAX + 64];
        snprintf(cand, sizeof(cand), "%s/../share/orrery/%s", dirname(exe), name);
        if (inst_is_dir(cand)) {
            snprintf(out, n, "%s", cand);
            return out;
        }
    }
    char cand[PATH_MAX];
    snprintf(cand, sizeof(cand), "%s/%s", ORR_INSTALL_DATADIR, name);
    if (inst_is_dir(cand))
        snprintf(out, n, "%s", cand);
    return out;
}
