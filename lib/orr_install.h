/*
 * orr_install.h - where an installed Orrery keeps its read-only files.
 *
 * `cmake --install` puts the binaries in PREFIX/bin and the files the
 * daemons read at run time in PREFIX/share/orrery/{static,schema,migrations}.
 * A daemon started from the install (by systemd, from any working folder)
 * finds them here; one run from the source tree keeps using the folders of
 * the tree, relative to its working folder.
 */
#ifndef ORR_INSTALL_H
#define ORR_INSTALL_H

#include <stddef.h>

#include "orr_status.h"

/* The data folder chosen at build time (CMAKE_INSTALL_FULL_DATADIR/orrery). */
const char *orr_install_datadir(void);

/* Resolve the data folder name (e.g. "static") for a setting whose value is
 * value and that was not set by the user (is_default):
 *   - a value set by the user is taken as it is;
 *   - a default that names an existing folder (relative to the working
 *     folder: the source tree) is taken as it is;
 *   - else DIR/../share/orrery/<name>, DIR being the folder of the running
 *     binary (an install moved as a whole, or made with --prefix/DESTDIR);
 *   - else orr_install_datadir()/<name>.
 * The first folder that exists wins; when none does, value is returned.
 * Writes the result to out (n bytes) and returns out. */
const char *orr_install_find_dir(const char *value, int is_default, const char *name, char *out,
                                 size_t n);

#endif
