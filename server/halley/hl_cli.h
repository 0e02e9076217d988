/*
 * hl_cli.h - halleyd's administrative subcommands that act through the
 * running service (so every check of the RPC path applies to them too).
 *
 *   halleyd [--config F] user-add NAME --role admin|developer|viewer [--team T]...
 *       Creates the teams that do not exist yet and the user, with the
 *       password read from the first line of standard input (never argv).
 *       An existing user is reported and left unchanged (exit 0), so scripts
 *       such as the quickstart can run it every time.
 */
#ifndef HL_CLI_H
#define HL_CLI_H

#include "orr_config.h"

/* argv[0] is "user-add". Returns the process exit code (0 ok, 1 failed,
 * 2 bad arguments). */
int hl_cmd_user_add(orr_config *cfg, int argc, char **argv);

#endif
