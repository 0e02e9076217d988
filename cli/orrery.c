/* orrery.c - main() of the `orrery` command line: find the subcommand in
 * the table (oc_cmds.c), parse its options, resolve the profile when it
 * talks to galaxyd, run it and return its exit code (0 done, 1 failed,
 * 2 usage or validation, 3 not found, 4 conflict). */
#include <stdio.h>
#include <string.h>

#include "oc.h"
#include "oc_config.h"
#include "oc_http.h"
#include "orr_log.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        oc_main_help(stderr);
        return OC_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        oc_main_help(stdout);
        return OC_EXIT_OK;
    }
    const oc_cmd *cmd = oc_cmd_find(name);
    if (!cmd) {
        fprintf(stderr, "orrery: no command \"%s\" (orrery --help lists them)\n", name);
        return OC_EXIT_USAGE;
    }
    oc_args a;
    int rc = oc_args_parse(cmd, argc - 2, argv + 2, &a, stderr);
    if (rc)
        return rc;
    oc_ctx ctx = {.out = stdout, .err = stderr};
    if (oc_flag(&a, "help")) {
        oc_cmd_help(cmd, stdout);
        goto out;
    }
    const char *output = oc_arg(&a, "output");
    if (output && strcmp(output, "json") != 0 && strcmp(output, "table") != 0) {
        rc = oc_fail(&ctx, OC_EXIT_USAGE, "--output %s: table or json", output);
        goto out;
    }
    ctx.json = output && strcmp(output, "json") == 0;
    ctx.quiet = oc_flag(&a, "quiet");
    orr_log_set_level(oc_flag(&a, "verbose") ? ORR_LOG_DEBUG : ORR_LOG_ERROR);
    int need_api = cmd->needs_api || strcmp(cmd->name, "login") == 0;
    if (need_api && (rc = oc_ctx_resolve(&ctx, &a, cmd->needs_api)))
        goto out;
    oc_http_init();
    rc = cmd->run(&ctx, &a);
    oc_http_cleanup();
out:
    oc_ctx_free(&ctx);
    oc_args_free(&a);
    return rc;
}
