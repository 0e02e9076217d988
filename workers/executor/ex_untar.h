/*
 * ex_untar.h - unpack a code package (a gzip-compressed tar archive) into a
 * folder, refusing anything that could reach outside it.
 *
 * Accepted members: regular files, folders, and symbolic links whose target
 * resolves inside the folder. Refused (the whole archive): absolute names,
 * any ".." component, hard links, character and block devices, FIFOs,
 * names over 4096 bytes, a malformed extended header, a bad header
 * checksum, a truncated archive, more than max_entries members or max_bytes
 * of content. Names come from ustar (prefix + name), pax ("path",
 * "linkpath", "size") and GNU long-name members; a member of a type tar does
 * not define is read as a regular file, as POSIX tells readers to. Files
 * get mode & 0755 | 0644, folders 0755; owners, times and set-id bits are
 * not restored. Reading and writing are libarchive's (ex_untar.c).
 *
 * Symbolic links are made last, after every file and folder, so no member
 * is ever written through a link; then each link must resolve (realpath) to
 * a path inside the folder: a dangling or escaping link refuses the archive.
 */
#ifndef EX_UNTAR_H
#define EX_UNTAR_H

#include <stdint.h>

#include "orr_status.h"

/* Unpack archive (path of a .tar.gz) into dir (an existing, empty folder).
 * On failure ORR_EINVAL naming the member and why (or ORR_EIO naming a
 * path); dir may then hold part of the archive: the caller removes it.
 * Blocks on disk I/O (on a thread of its own, joined before it returns). */
orr_status ex_untar(const char *archive, const char *dir, int64_t max_bytes, int max_entries,
                    orr_err *err);

#endif
