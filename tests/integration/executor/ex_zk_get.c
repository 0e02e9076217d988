/*
 * ex_zk_get.c - prints the data of one ZooKeeper node and its ephemeral
 * owner, for executord's integration test (Python has no ZooKeeper client
 * here).
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
#include <unistd.h>
#include <zookeeper/zookeeper.h>

int main(int argc, char **argv)
{
    int create = argc == 4 && strcmp(argv[2], "--create") == 0;
    if (argc != 3 && !create) {
        fprintf(stderr, "usage: ex_zk_get HOST:PORT [--create] PATH\n");
        return 2;
    }
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zhandle_t *zh = zookeeper_init(argv[1], NULL, 10000, NULL, NULL, 0);
    if (!zh)
        return 1;
    for (int i = 0; i < 100 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
        usleep(50000);
    if (create) {
        int rc = zoo_create(zh, argv[3], NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
        zookeeper_close(zh);
        if (rc != ZOK && rc != ZNODEEXISTS) {
            fprintf(stderr, "ex_zk_get: create %s: %s\n", argv[3], zerror(rc));
            return 1;
        }
        return 0;
    }
    char buf[8192];
    int len = (int)sizeof buf - 1;
    struct Stat st;
    int rc = zoo_get(zh, argv[2], 0, buf, &len, &st);
    int code = 1;
    if (rc == ZOK) {
        buf[len > 0 ? len : 0] = 0;
        printf("owner=%llx\n%s", (unsigned long long)st.ephemeralOwner, buf);
        code = 0;
    } else if (rc == ZNONODE) {
        code = 3;
    } else {
        fprintf(stderr, "ex_zk_get: %s\n", zerror(rc));
    }
    zookeeper_close(zh);
    return code;
}
