/* wh_state.c - the watermark state file (see wh_state.h). */
#include "wh_state.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "orr_buf.h"
#include "orr_json.h"

orr_status wh_state_load(const char *path, const char *column, char *out, size_t n, orr_err *err)
{
    json_error_t je;
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return orr_err_set(err, ORR_ENOTFOUND, "state_file", "%s does not exist", path);
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return orr_err_set(err, ORR_EINVAL, "state_file", "%s: bad JSON at line %d: %s", path,
                           je.line, je.text);
    orr_status rc = ORR_OK;
    const char *col = NULL, *mark = NULL;
    if ((rc = orr_json_get_str(root, "", "column", 1, &col, err)) ||
        (rc = orr_json_get_str(root, "", "watermark", 1, &mark, err)))
        goto out;
    if (strcmp(col, column) != 0) {
        rc = orr_err_set(err, ORR_EINVAL, "state_file",
                         "%s holds a watermark of column \"%s\", not \"%s\"", path, col, column);
        goto out;
    }
    if (strlen(mark) >= n) {
        rc = orr_err_set(err, ORR_EINVAL, "state_file", "%s: watermark too long", path);
        goto out;
    }
    snprintf(out, n, "%s", mark);
out:
    json_decref(root);
    return rc;
}

orr_status wh_state_save(const char *path, const char *job, const char *column,
                         const char *watermark, orr_err *err)
{
    orr_buf tmp = ORR_BUF_INIT, body = ORR_BUF_INIT;
    orr_status rc = ORR_OK;
    int fd = -1;
    orr_buf_appendf(&tmp, "%s.tmp", path);
    json_t *v = json_pack("{s:s, s:s, s:s}", "job", job, "column", column, "watermark", watermark);
    orr_json_dump_buf(v, &body);
    orr_buf_append_byte(&body, '\n');
    json_decref(v);
    fd = open(tmp.data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, body.data, body.len) != (ssize_t)body.len || fsync(fd) != 0) {
        rc = orr_err_set(err, ORR_EIO, "state_file", "cannot write %s: %s", tmp.data,
                         strerror(errno));
        goto out;
    }
    close(fd);
    fd = -1;
    if (rename(tmp.data, path) != 0)
        rc = orr_err_set(err, ORR_EIO, "state_file", "cannot rename %s to %s: %s", tmp.data, path,
                         strerror(errno));
out:
    if (fd >= 0) {
        close(fd);
        unlink(tmp.data);
    }
    orr_buf_free(&tmp);
    orr_buf_free(&body);
    return rc;
}
