/*
 * ex_zk_get.c - prints the data of one ZooKeeper node and its ephemeral
 * owner, for executord's integration test (Python has no ZooKeeper client
 * here).
 *
 *   ex_zk_get HOST:PORT PATH    -> stdout: "owner=<hex>\n<data>"; exit 0
 *                                  exit 3 when the node does not exist,
 *                                  exit 1 on any other error
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: ex_zk_get HOST:PORT PATH\n");
        return 2;
    }
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zhandle_t *zh = zookeeper_init(argv[1], NULL, 10000, NULL, NULL, 0);
    if (!zh)
        return 1;
    for (int i = 0; i < 100 && zoo_state(zh) != ZOO_CONNECTED_STATE; i++)
        usleep(50000);
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
