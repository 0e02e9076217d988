/*
 * orr_rpc_tls.h - TLS settings of halleyd and of its callers, read from the
 * config: the schema keys every daemon adds and the loaders that turn them
 * into an orr_rpc_tls (PEM text read from the named files).
 *
 * Server ([SECTION]): tls_cert_file, tls_key_file (a secret file: the 0600
 * rule of orr_config applies), tls_client_ca_file (set = mutual TLS).
 * Client ([SECTION] of the daemon calling halleyd): halley_tls_ca_file (set
 * = TLS on), halley_tls_cert_file and halley_tls_key_file (its certificate
 * for mutual TLS), halley_tls_server_name (the name halleyd's certificate
 * is checked against instead of the address dialled). None set: plaintext,
 * as before.
 *
 * A missing or unreadable certificate file, a key without its certificate
 * or the reverse: an error naming the file and "section.key".
 */
#ifndef ORR_RPC_TLS_H
#define ORR_RPC_TLS_H

#include "orr_config.h"
#include "orr_rpc.h"

/* The private keys are secrets (ORR_CFG_SECRET): their "_file" key is the one
 * set, checked and read by orr_config like every secret file. */
#define ORR_RPC_TLS_SERVER_KEYS(section)                                                           \
    {section,                                                                                      \
     "tls_cert_file",                                                                              \
     ORR_CFG_STRING,                                                                               \
     "",                                                                                           \
     0,                                                                                            \
     0,                                                                                            \
     0,                                                                                            \
     "PEM certificate chain of the gRPC server ('' = plaintext gRPC)"},                            \
        {section,                                                                                  \
         "tls_key",                                                                                \
         ORR_CFG_SECRET,                                                                           \
         NULL,                                                                                     \
         0,                                                                                        \
         0,                                                                                        \
         0,                                                                                        \
         "PEM private key of tls_cert_file (set tls_key_file)"},                                   \
    {                                                                                              \
        section, "tls_client_ca_file", ORR_CFG_STRING, "", 0, 0, 0,                                \
            "PEM CA: clients must present a certificate signed by it (mutual TLS)"                 \
    }

#define ORR_RPC_TLS_CLIENT_KEYS(section)                                                           \
    {section,                                                                                      \
     "halley_tls_ca_file",                                                                         \
     ORR_CFG_STRING,                                                                               \
     "",                                                                                           \
     0,                                                                                            \
     0,                                                                                            \
     0,                                                                                            \
     "PEM CA halleyd's certificate must be signed by; set = TLS to halleyd"},                      \
        {section,                                                                                  \
         "halley_tls_cert_file",                                                                   \
         ORR_CFG_STRING,                                                                           \
         "",                                                                                       \
         0,                                                                                        \
         0,                                                                                        \
         0,                                                                                        \
         "PEM client certificate sent to halleyd (mutual TLS)"},                                   \
        {section,                                                                                  \
         "halley_tls_key",                                                                         \
         ORR_CFG_SECRET,                                                                           \
         NULL,                                                                                     \
         0,                                                                                        \
         0,                                                                                        \
         0,                                                                                        \
         "PEM private key of halley_tls_cert_file (set halley_tls_key_file)"},                     \
    {                                                                                              \
        section, "halley_tls_server_name", ORR_CFG_STRING, "", 0, 0, 0,                            \
            "name halleyd's certificate must hold, instead of the address dialled (needed "        \
            "with a list of addresses)"                                                            \
    }

/* PEM strings owned by the holder; free with orr_rpc_tls_conf_free. */
typedef struct orr_rpc_tls_conf {
    int on;
    orr_rpc_tls tls;
    char *ca, *cert, *key;
} orr_rpc_tls_conf;

/* Read the server keys of section. out->on = 0 when tls_cert_file is unset. */
orr_status orr_rpc_tls_server_load(const orr_config *cfg, const char *section,
                                   orr_rpc_tls_conf *out, orr_err *err);
/* Read the client keys of section and, when TLS is on, hand them to
 * orr_rpc_client_set_tls. */
orr_status orr_rpc_tls_client_setup(const orr_config *cfg, const char *section, orr_err *err);
void orr_rpc_tls_conf_free(orr_rpc_tls_conf *c);

/* Read a PEM file named by [section] key into *out (malloc'd). */
orr_status orr_rpc_tls_read_pem(const char *path, const char *section, const char *key, char **out,
                                orr_err *err);

#endif
