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

typedef enum file_format { FILE_CSV, FILE_TEXT, FILE_FIXED } file_format;
typedef enum file_comp { FILE_AUTO, FILE_NONE, FILE_GZIP, FILE_LZO } file_comp;

typedef struct file_conf {
    char path_json[48];
    const char **paths; /* reader: files (globs expanded by the splitter) */
    size_t npaths;
    const char *path; /* writer */
    file_format format;
    wh_textfmt fmt;
    char delim[2], quote[2];
    int header;
    file_comp comp;
    int append;
    int gzip_level;
    int lzo_index;
    wh_schema cols; /* declared columns (names, kinds, widths in size) */
    int *widths;
} file_conf;

orr_status file_conf_parse(const json_t *spec, const char *path, int is_reader, file_conf **out,
                           orr_err *err);
void file_conf_free(void *conf);
/* The compression of path (FILE_AUTO resolved by its extension). */
file_comp file_comp_of(file_comp c, const char *path);

typedef struct file_in {
    file_comp comp;
    int fd;
    gzFile gz;
    orr_lzop_reader *lz;
    char path[512];
} file_in;

orr_status file_in_open(file_in *in, const char *path, file_comp comp, orr_err *err);
/* *n = 0 at end of file. ORR_EIO naming the file on error. */
orr_status file_in_read(file_in *in, void *buf, size_t cap, size_t *n, orr_err *err);
void file_in_close(file_in *in);

typedef struct file_out {
    file_comp comp;
    int fd;
    gzFile gz;
    orr_lzop_writer *lz;
    orr_buf buf;
    char path[512], tmp[540];
    int append;
    int64_t old_size; /* append: size before the run */
    uint64_t bytes;   /* uncompressed bytes written */
} file_out;

orr_status file_out_open(file_out *o, const char *path, file_comp comp, int append, int level,
                         int lzo_index, orr_err *err);
orr_status file_out_write(file_out *o, const void *p, size_t n, orr_err *err);
/* Finish the file and move it into place (commit) or remove it. Always
 * releases everything. */
orr_status file_out_close(file_out *o, int commit, orr_err *err);

#endif
