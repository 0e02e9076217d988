/* hl_cli.c - `halleyd user-add` (see hl_cli.h): a client of the running
 * halleyd at [halley] listen with [halley] token. */
#include "hl_cli.h"

#include <stdio.h>
#include <string.h>

#include "halley.pb-c.h"
#include "orr_rpc.h"
#include "orr_rpc_tls.h"

#define HL_CLI_TIMEOUT_MS 10000

static int hl_cli_usage(void)
{
    fprintf(stderr, "usage: halleyd [--config FILE] user-add NAME --role admin|developer|viewer "
                    "[--team TEAM]...   (password on standard input)\n");
    return 2;
}

int hl_cmd_user_add(orr_config *cfg, int argc, char **argv)
{
    const char *name = NULL, *role_s = NULL;
    char *teams[64];
    size_t nteams = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--role") == 0 && i + 1 < argc) {
            role_s = argv[++i];
        } else if (strcmp(argv[i], "--team") == 0 && i + 1 < argc) {
            if (nteams == sizeof(teams) / sizeof(teams[0]))
                return hl_cli_usage();
            teams[nteams++] = argv[++i];
        } else if (argv[i][0] != '-' && !name) {
            name = argv[i];
        } else {
            return hl_cli_usage();
        }
    }
    Orrery__Halley__V1__Role role;
    if (!name || !role_s)
        return hl_cli_usage();
    if (strcmp(role_s, "admin") == 0)
        role = ORRERY__HALLEY__V1__ROLE__ROLE_ADMIN;
    else if (strcmp(role_s, "developer") == 0)
        role = ORRERY__HALLEY__V1__ROLE__ROLE_DEVELOPER;
    else if (strcmp(role_s, "viewer") == 0)
        role = ORRERY__HALLEY__V1__ROLE__ROLE_VIEWER;
    else {
        fprintf(stderr, "halleyd: user-add: --role must be admin, developer or viewer\n");
        return 2;
    }
    char password[1024];
    if (!fgets(password, sizeof(password), stdin)) {
        fprintf(stderr, "halleyd: user-add: no password on standard input\n");
        return 2;
    }
    password[strcspn(password, "\r\n")] = '\0';

    orr_err err;
    orr_err_clear(&err);
    orr_rpc_client *c = NULL;
    int rc = 1;
    if (orr_rpc_tls_client_setup(cfg, "halley", &err) != ORR_OK) {
        fprintf(stderr, "halleyd: user-add: %s\n", err.msg);
        rc = 2;
        goto out;
    }
    if (orr_rpc_client_create(&orrery__halley__v1__halley__descriptor,
                              orr_config_str(cfg, "halley", "listen"),
                              orr_config_str(cfg, "halley", "token"), &c, &err) != ORR_OK) {
        fprintf(stderr, "halleyd: user-add: %s\n", err.msg);
        goto out;
    }
    for (size_t i = 0; i < nteams; i++) {
        Orrery__Halley__V1__CreateTeamRequest tq = ORRERY__HALLEY__V1__CREATE_TEAM_REQUEST__INIT;
        tq.name = teams[i];
        tq.actor = "cli:user-add";
        ProtobufCMessage *tr = NULL;
        orr_status s = orr_rpc_call_unary(c, "CreateTeam", &tq.base, &tr, HL_CLI_TIMEOUT_MS, &err);
        if (tr)
            protobuf_c_message_free_unpacked(tr, NULL);
        if (s != ORR_OK && s != ORR_EEXIST) {
            fprintf(stderr, "halleyd: user-add: team %s: %s\n", teams[i], err.msg);
            goto out;
        }
    }
    Orrery__Halley__V1__CreateUserRequest uq = ORRERY__HALLEY__V1__CREATE_USER_REQUEST__INIT;
    uq.name = (char *)name;
    uq.password = password;
    uq.role = role;
    uq.n_teams = nteams;
    uq.teams = teams;
    uq.actor = "cli:user-add";
    ProtobufCMessage *ur = NULL;
    orr_status s = orr_rpc_call_unary(c, "CreateUser", &uq.base, &ur, HL_CLI_TIMEOUT_MS, &err);
    if (ur)
        protobuf_c_message_free_unpacked(ur, NULL);
    if (s == ORR_EEXIST) {
        printf("user %s already exists; left unchanged\n", name);
        rc = 0;
    } else if (s != ORR_OK) {
        fprintf(stderr, "halleyd: user-add: %s%s%s\n", err.field, err.field[0] ? ": " : "",
                err.msg);
    } else {
        printf("user %s created (%s)\n", name, role_s);
        rc = 0;
    }
out:
    explicit_bzero(password, sizeof(password));
    orr_rpc_client_destroy(c);
    return rc;
}
