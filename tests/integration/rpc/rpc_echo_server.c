/*
 * rpc_echo_server.c - the Echo test service as a process, for clients that
 * are not Orrery's (the interop test).
 *
 *   rpc_echo_server [--listen 127.0.0.1:0] [--token T]
 *
 * Prints "port=<n>" on stdout once serving, serves until stdin closes (or
 * reads "quit"), then stops cleanly and prints the per-method call counts.
 */
#include <stdio.h>
#include <string.h>

#include "echo_service.h"
#include "orr_log.h"

int main(int argc, char **argv)
{
    const char *listen = "127.0.0.1:0", *token = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--listen") == 0)
            listen = argv[i + 1];
        else if (strcmp(argv[i], "--token") == 0)
            token = argv[i + 1];
        else {
            fprintf(stderr, "usage: %s [--listen addr] [--token T]\n", argv[0]);
            return 2;
        }
    }
    orr_log_set_level(ORR_LOG_WARN);
    static echo_state es;
    orr_rpc_server_opts o = {.listen = listen, .threads = 4, .token = token};
    orr_rpc_server *s = NULL;
    orr_err err;
    if (orr_rpc_server_create(&orrery__test__v1__echo__descriptor, echo_methods, 3, &es, &o, &s,
                              &err) != ORR_OK ||
        orr_rpc_server_start(s) != ORR_OK) {
        fprintf(stderr, "rpc_echo_server: %s: %s\n", err.field, err.msg);
        orr_rpc_server_destroy(s);
        return 1;
    }
    printf("port=%d\n", orr_rpc_server_port(s));
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof(line), stdin))
        if (strncmp(line, "quit", 4) == 0)
            break;
    orr_rpc_server_destroy(s);
    printf("say=%lu count=%lu fail=%lu\n", (unsigned long)es.say_calls,
           (unsigned long)es.count_calls, (unsigned long)es.fail_calls);
    return 0;
}
