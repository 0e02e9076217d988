/*
 * wh_plugins.h - every plugin's ops, for the registry table (wh_registry.c).
 * A data store brings one file per role: reader, writer, splitter,
 * periphery (prepare/finish of both sides).
 */
#ifndef WH_PLUGINS_H
#define WH_PLUGINS_H

#include "wh.h"

extern const wh_reader_ops wh_pg_reader;
extern const wh_writer_ops wh_pg_writer;
extern const wh_splitter_ops wh_pg_splitter;
extern const wh_periphery_ops wh_pg_reader_periphery;
extern const wh_periphery_ops wh_pg_writer_periphery;

extern const wh_reader_ops wh_mysql_reader;
extern const wh_writer_ops wh_mysql_writer;
extern const wh_splitter_ops wh_mysql_splitter;
extern const wh_periphery_ops wh_mysql_reader_periphery;
extern const wh_periphery_ops wh_mysql_writer_periphery;

extern const wh_reader_ops wh_file_reader;
extern const wh_writer_ops wh_file_writer;
extern const wh_splitter_ops wh_file_splitter;
extern const wh_periphery_ops wh_file_writer_periphery;

#endif
