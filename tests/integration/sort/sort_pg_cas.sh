#!/usr/bin/env bash
# sort_pg_cas.sh CAS_TEST - the PostgreSQL sink's position compare-and-set
# (sort_pg_cas_test.c) against a real PostgreSQL: a fresh database per run
# (from ORRERY_PG_DSN), dropped at the end.
set -euo pipefail
CAS_TEST=$1
. "$(dirname "$0")/sort_lib.sh"
[ -n "${ORRERY_PG_DSN:-}" ] || fail "ORRERY_PG_DSN is not set"

T=$(mktemp -d /tmp/sort-pgcas.XXXXXX)
DB=sortcas_$$_$RANDOM
BASE=${ORRERY_PG_DSN%%\?*}
BASE=${BASE%/*}
export SORT_PG_TEST_DSN="$BASE/$DB"
cleanup() {
    psql -q "$ORRERY_PG_DSN" -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
    rm -rf "$T"
}
trap cleanup EXIT
psql -q -v ON_ERROR_STOP=1 "$ORRERY_PG_DSN" -c "CREATE DATABASE $DB" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 "$SORT_PG_TEST_DSN" \
    -c "CREATE SCHEMA it; CREATE TABLE it.cas (id bigint)" >/dev/null
ORRERY_LOG_LEVEL=warn "$CAS_TEST" "$T/rejects" || fail "compare-and-set checks"
