/*
 * gx_http_static.c - the files of the UI under static_dir: a URL path is
 * mapped to a file only through clean segments (gx_static_path), served
 * from its descriptor with a type from its extension; assets (hashed names)
 * are cached for a year, everything else revalidated.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gx_http_int.h"

const char *gx_static_path(orr_arena *a, const char *root, const char *url_path)
{
    if (!url_path || url_path[0] != '/')
        return NULL;
    if (strchr(url_path, '\\') || strstr(url_path, "//"))
        return NULL;
    /* Check every segment: no "", ".", "..", or hidden names. */
    const char *seg = url_path + 1;
    while (*seg) {
        size_t len = strcspn(seg, "/");
        if (len == 0 || seg[0] == '.')
            return NULL;
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)seg[i] < 0x20)
                return NULL;
        seg += len;
        if (*seg == '/')
            seg++;
    }
    return orr_arena_sprintf(a, "%s%s", root, url_path);
}

static const char *gx_mime(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".woff2", "font/woff2"},
        {".txt", "text/plain; charset=utf-8"},
        {".map", "application/json"},
    };
    const char *dot = strrchr(path, '.');
    if (dot)
        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
            if (strcmp(dot, types[i].ext) == 0)
                return types[i].type;
    return "application/octet-stream";
}

/* Open a regular file for the static handler; -1 if absent or not regular. */
static int gx_open_regular(const char *path, uint64_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    *size = (uint64_t)st.st_size;
    return fd;
}

/* Serve a file from static_dir. "/" -> "/index.html"; a path with no file
 * under /app/ falls back to /app/index.html (the UI routes in the browser).
 * Returns 1 if it answered. */
int gx_static_serve(gx_server *s, gx_req *req, gx_resp *resp)
{
    if (!s->o.static_dir || (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0))
        return 0;
    const char *url = strcmp(req->path, "/") == 0 ? "/index.html" : req->path;
    const char *file = gx_static_path(req->arena, s->o.static_dir, url);
    if (!file)
        return 0;
    uint64_t size = 0;
    int fd = gx_open_regular(file, &size);
    if (fd < 0 && strncmp(url, "/app/", 5) == 0 && !strrchr(strrchr(url, '/'), '.')) {
        file = orr_arena_sprintf(req->arena, "%s/app/index.html", s->o.static_dir);
        fd = gx_open_regular(file, &size);
    }
    if (fd < 0)
        return 0;
    resp->status = 200;
    resp->fd = fd;
    resp->fd_size = size;
    resp->content_type = gx_mime(file);
    if (strstr(file, "/assets/"))
        gx_resp_header(resp, "Cache-Control", "public, max-age=31536000, immutable");
    else
        gx_resp_header(resp, "Cache-Control", "no-cache");
    return 1;
}
