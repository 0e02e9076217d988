/*
 * orr_name.h - the one rule for the names of Orrery's objects (pools, data
 * sources, workflows, teams, users, streams, packages, executors, ...),
 * shared by halleyd, which stores them, and galaxyd, which reads them from
 * paths and bodies.
 *
 * A name is 1..max bytes; the first is an ASCII letter or digit, the rest
 * ASCII letters, digits, '_', '.' or '-'. So a name is safe as one segment
 * of a URL, a file path or a ZooKeeper path: no NUL, control character,
 * space, '/', '%' or non-ASCII byte, never "." or "..", no leading or
 * trailing space. Task names follow schema/task.schema.json, a subset.
 */
#ifndef ORR_NAME_H
#define ORR_NAME_H

#include <stddef.h>

/* Longest name of most objects. */
#define ORR_NAME_MAX 128

/* 1 if s follows the rule with at most max bytes; 0 otherwise (NULL too). */
int orr_name_ok(const char *s, size_t max);

/* The rule in words, for error messages ("must be ..."). */
#define ORR_NAME_RULE "1-128 characters of A-Z a-z 0-9 _ . -, starting with a letter or digit"

#endif
