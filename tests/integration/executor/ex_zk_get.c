/*
 * ex_zk_get.c - prints the data of one ZooKeeper node and its ephemeral
 * owner, for executord's integration test (Python has no ZooKeeper client
 * here). Uses lib/orr_zk.
 *
 *   ex_zk_get HOST:PORT PATH    -> stdout: "owner=<hex>\n<data>"; exit 0
 *                                  exit 3 when the node does not exist,
 *                                  exit 1 on any other error
 *   ex_zk_get HOST:PORT --create PATH
 *                               -> creates PATH as a persistent node (a
 *                                  private chroot for a test); exit 0 also
 *                                  when it exists
 */
#include <stdio.h>
#include <string.h>

#include "orr_zk.h"

int main(int argc, char **argv)
{
    int create = argc == 4 && strcmp(argv[2], "--create") == 0;
    if (argc != 3 && !create) {
        fprintf(stderr, "usage: ex_zk_get HOST:PORT [--create] PATH\n");
        return 2;
    }
    orr_zk *zk = NULL;
    orr_err err;
    orr_buf data = ORR_BUF_INIT;
    orr_zk_stat st;
    int code = 1;
    if (orr_zk_open(argv[1], 5000, &zk, &err) != ORR_OK) {
        fprintf(stderr, "ex_zk_get: %s\n", err.msg);
        goto out;
    }
    if (create) {
        orr_status rc = orr_zk_create(zk, argv[3], NULL, 0, 0, NULL, NULL, &err);
        if (rc != ORR_OK && rc != ORR_EEXIST) {
            fprintf(stderr, "ex_zk_get: create %s: %s\n", argv[3], err.msg);
            goto out;
        }
        code = 0;
        goto out;
    }
    orr_status rc = orr_zk_read(zk, argv[2], 0, &data, &st, &err);
    if (rc == ORR_OK) {
        printf("owner=%llx\n%s", (unsigned long long)st.owner, data.len ? data.data : "");
        code = 0;
    } else if (rc == ORR_ENOTFOUND) {
        code = 3;
    } else {
        fprintf(stderr, "ex_zk_get: %s\n", err.msg);
    }
out:
    orr_buf_free(&data);
    orr_zk_close(zk);
    return code;
}
