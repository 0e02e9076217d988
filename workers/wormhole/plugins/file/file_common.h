/*
 * file_common.h - what the file plugin's roles share: options, and byte
 * streams over plain, gzip (zlib) and lzop (.lzo, lib/orr_lzop.h) files.
 *
 * Output goes to "<path>.wh-tmp" and is renamed over path only on commit, so
 * a failed or killed run never leaves a half-written file under the final
 * name. Append mode writes in place and cuts the file back to its old size
 * when the run fails.
 */
#ifndef WH_FILE_COMMON_H
#define WH_FILE_COMMON_H

#include <stdint.h>
#include <zlib.h>

#include "orr_buf.h"
#include "orr_lzop.h"
#include "wh.h"
#include "wh_text.h"

typedef enum wh_file_format { WH_FILE_CSV, WH_FILE_TEXT, WH_FILE_FIXED } wh_file_format;
typedef enum wh_file_comp { WH_FILE_AUTO, WH_FILE_NONE, WH_FILE_GZIP, WH_FILE_LZO } wh_file_comp;

typedef struct wh_file_conf {
    char path_json[48];
    const char **paths; /* reader: files (globs expanded by the splitter) */
    size_t npaths;
    const char *path; /* writer */
    wh_file_format format;
    wh_textfmt fmt;
    char delim[2], quote[2];
    int header;
    wh_file_comp comp;
    int append;
    int gzip_level;
    int lzo_index;
    wh_schema cols; /* declared columns (names, kinds, widths in size) */
    int *widths;
} wh_file_conf;

orr_status wh_file_conf_parse(const json_t *spec, const char *path, int is_reader,
                              wh_file_conf **out, orr_err *err);
void wh_file_conf_free(void *conf);
/* The compression of path (WH_FILE_AUTO resolved by its extension). */
wh_file_comp wh_file_comp_of(wh_file_comp c, const char *path);

typedef struct wh_file_in {
    wh_file_comp comp;
    int fd;
    gzFile gz;
    orr_lzop_reader *lz;
    char path[512];
} wh_file_in;

orr_status wh_file_in_open(wh_file_in *in, const char *path, wh_file_comp comp, orr_err *err);
/* *n = 0 at end of file. ORR_EIO naming the file on error. */
orr_status wh_file_in_read(wh_file_in *in, void *buf, size_t cap, size_t *n, orr_err *err);
void wh_file_in_close(wh_file_in *in);

typedef struct wh_file_out {
    wh_file_comp comp;
    int fd;
    gzFile gz;
    orr_lzop_writer *lz;
    orr_buf buf;
    char path[512], tmp[540];
    int append;
    int64_t old_size; /* append: size before the run */
    uint64_t bytes;   /* uncompressed bytes written */
} wh_file_out;

orr_status wh_file_out_open(wh_file_out *o, const char *path, wh_file_comp comp, int append,
                            int level, int lzo_index, orr_err *err);
orr_status wh_file_out_write(wh_file_out *o, const void *p, size_t n, orr_err *err);
/* Finish the file and move it into place (commit) or remove it. Always
 * releases everything. */
orr_status wh_file_out_close(wh_file_out *o, int commit, orr_err *err);

/* The roles, each in its own file, gathered in wh_file_plugin (file_common.c). */
extern const wh_reader_ops wh_file_reader;
extern const wh_writer_ops wh_file_writer;
extern const wh_splitter_ops wh_file_splitter;
extern const wh_periphery_ops wh_file_writer_periphery;
extern const wh_meta_ops wh_file_meta; /* file_meta.c */

#endif
