#!/usr/bin/env bash
# Fidelity of `wormhole run` against real PostgreSQL and MariaDB: reject
# lines, the date forms PostgreSQL prints, MariaDB BIT, one type-torture
# table per database moved both ways and compared with EXCEPT, and the
# PostgreSQL -> PostgreSQL pass-through on the torture table.
#
#   fidelity.sh WORMHOLE_BINARY CASE
#
# CASE: rejects dates bits torture_pg torture_my passthrough.
# Needs ORRERY_PG_DSN and ORRERY_MYSQL_DSN (deploy/stack.sh env); fails when
# they are unset. Every table name ends with this shell's pid and is dropped
# at exit, with the temporary folder.
set -euo pipefail

WH=${1:?usage: fidelity.sh WORMHOLE_BINARY CASE}
CASE=${2:?usage: fidelity.sh WORMHOLE_BINARY CASE}
MY_CHARSET=utf8mb4 # the torture rows hold every code point class
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
wh_it_setup fid

# Rows of A not in B plus rows of B not in A, each row compared in its
# whole text form (json and point have no equality).
pg_same() {
	local a=$1 b=$2 d
	d=$(pg -c "SELECT (SELECT count(*) FROM (SELECT l_::text FROM $a l_ EXCEPT ALL SELECT r_::text FROM $b r_) p) + (SELECT count(*) FROM (SELECT r_::text FROM $b r_ EXCEPT ALL SELECT l_::text FROM $a l_) q)")
	if [[ $d != 0 ]]; then
		pg -c "SELECT 'only in $a', l_::text FROM $a l_ EXCEPT ALL SELECT 'only in $a', r_::text FROM $b r_" >&2
		pg -c "SELECT 'only in $b', r_::text FROM $b r_ EXCEPT ALL SELECT 'only in $b', l_::text FROM $a l_" >&2
	fi
	expect_eq "rows differing between $a and $b" "$d" 0
}
# The same in MariaDB over the named columns.
my_same() {
	local a=$1 b=$2 cols=$3 d
	d=$(my -e "SELECT (SELECT count(*) FROM (SELECT $cols FROM $a EXCEPT ALL SELECT $cols FROM $b) p) + (SELECT count(*) FROM (SELECT $cols FROM $b EXCEPT ALL SELECT $cols FROM $a) q)")
	if [[ $d != 0 ]]; then
		my -e "SELECT 'only in $a', $cols FROM $a EXCEPT ALL SELECT 'only in $a', $cols FROM $b" >&2
		my -e "SELECT 'only in $b', $cols FROM $b EXCEPT ALL SELECT 'only in $b', $cols FROM $a" >&2
	fi
	expect_eq "rows differing between $a and $b" "$d" 0
}

PG="\"type\":\"postgres\",\"dsn_env\":\"ORRERY_PG_DSN\""
MY="\"type\":\"mysql\",\"dsn_env\":\"ORRERY_MYSQL_DSN\""

# job NAME READER WRITER [extra top-level keys]: writes $TMP/NAME.json
job() {
	echo "{\"name\":\"$1\",\"max_dirty_rows\":-1,\"reject_file\":\"$TMP/$1.rej\"${4:+,$4},\"reader\":{$2},\"writers\":[{$3}]}" >"$TMP/$1.json"
}
# Every reject line of FILE is one JSON object; prints their count.
rejects_valid() {
	/usr/bin/python3 - "$1" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1], 'rb'):
    v = json.loads(line.decode('utf-8'))
    assert isinstance(v, dict) and line.endswith(b'}\n'), line
    n += 1
print(n)
PY
}

case_rejects() {
	# Writer side: a value that is not UTF-8 into PostgreSQL; reader side:
	# a broken CSV record holding bytes that are not UTF-8.
	local dst=wh_fid_rej_$S
	pgt "$dst"
	pg -c "CREATE TABLE $dst (id int, name text, note text)"
	printf 'id,name,note\n1,ok,fine\n2,bad \xff\xfe byte,after\n3,"broken \xe9 quote" x,y\n4,"caf\xc3\xa9",z\n' >"$TMP/r.csv"
	job rej "\"type\":\"file\",\"path\":\"$TMP/r.csv\",\"header\":true" "$PG,\"table\":\"$dst\""
	must_run "$TMP/rej.json"
	expect_eq "rows loaded" "$(pg -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM $dst")" "1,4"
	expect_eq "reject lines, each whole JSON" "$(rejects_valid "$TMP/rej.rej")" 2
	/usr/bin/python3 - "$TMP/rej.rej" <<'PY' || fail "reject lines do not give back the row's bytes"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1], 'rb')]
w = [l for l in lines if l['side'] != 'reader'][0]
assert w['row'] == 3 and w['fields'][2] == 'after', w
assert bytes.fromhex(w['fields_hex']['1']) == b'bad \xff\xfe byte', w
assert w['fields'][1] == 'bad \ufffd\ufffd byte' and '0' not in w['fields_hex'], w
r = [l for l in lines if l['side'] == 'reader'][0]
assert r['row'] == 4 and bytes.fromhex(r['raw_hex']).startswith(b'3,"broken \xe9 quote" x'), r
PY
	echo "ok: reject lines give back every byte of the row"

	# A reader-side reject from MariaDB (a zero date) carries the row's values.
	local src=wh_fid_zero_$S dz=wh_fid_zero_pg_$S
	myt "$src"
	pgt "$dz"
	my -e "CREATE TABLE $src (id int PRIMARY KEY, d date, note varchar(20)) DEFAULT CHARSET=utf8mb4;
	       SET SESSION sql_mode = ''; INSERT INTO $src VALUES (1, '2024-01-02', 'a'), (2, '0000-00-00', 'zero \"q\"'), (3, '2024-00-10', NULL),
	       (4, '0000-00-00', CONCAT('nul', CHAR(0)))"
	pg -c "CREATE TABLE $dz (id int, d date, note text)"
	job zero "$MY,\"table\":\"$src\"" "$PG,\"table\":\"$dz\""
	must_run "$TMP/zero.json"
	expect_eq "zero-date rows loaded" "$(pg -c "SELECT count(*) FROM $dz")" 1
	/usr/bin/python3 - "$TMP/zero.rej" <<'PY' || fail "zero-date rejects do not carry the row"
import json, sys
lines = sorted((json.loads(l) for l in open(sys.argv[1])), key=lambda l: l['row'])
assert [l['fields'] for l in lines] == [['2', '0000-00-00', 'zero "q"'], ['3', '2024-00-10', None],
                                        ['4', '0000-00-00', 'nul\x00']], lines
assert all(l['side'] == 'reader' and l['reason'] == 'zero date' and 'raw' not in l for l in lines), lines
PY
	echo "ok: a MariaDB zero-date reject carries the row's values"
	# The preview lists them all, the one holding a NUL too.
	"$WH" preview "$TMP/zero.json" >"$TMP/preview.json" 2>"$TMP/err.txt" || fail "wormhole preview exited $?"
	expect_eq "preview dirty rows" "$(/usr/bin/python3 -c "import json,sys; print([d['row'] for d in json.load(open(sys.argv[1]))['dirty']])" "$TMP/preview.json")" "[2, 3, 4]"

	# What PostgreSQL refuses in the middle of a COPY (a NUL byte in text, the
	# escape \u0000 in jsonb) from columns of the same type name is a dirty
	# row, not a failed load.
	local mn=wh_fid_nul_$S pn=wh_fid_nul_pg_$S
	myt "$mn"
	pgt "$pn"
	my -e "CREATE TABLE $mn (id int PRIMARY KEY, t text, j json) DEFAULT CHARSET=utf8mb4;
	       INSERT INTO $mn VALUES (1, CONCAT('a', CHAR(0), 'b'), '{}'), (2, 'ok', '{\"a\":\"x\\\\u0000y\"}'),
	       (3, 'ok', '{\"a\":\"x\\\\\\\\u0000y\"}'), (4, 'fine', '[]')"
	pg -c "CREATE TABLE $pn (id int, t text, j jsonb)"
	job nul "$MY,\"table\":\"$mn\"" "$PG,\"table\":\"$pn\""
	must_run "$TMP/nul.json"
	expect_eq "rows loaded past NUL and \\u0000" "$(pg -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM $pn")" "3,4"
	expect_eq "reject lines, each whole JSON" "$(rejects_valid "$TMP/nul.rej")" 2
}

case_dates() {
	# Every date form PostgreSQL prints, PostgreSQL -> CSV -> PostgreSQL.
	local src=wh_fid_dates_$S back=wh_fid_dates_back_$S
	pgt "$src"
	pgt "$back"
	pg <<SQL
CREATE TABLE $src (id int, d date, ts timestamp, tz timestamptz, t time, ttz timetz);
INSERT INTO $src VALUES
 (1, 'infinity', 'infinity', 'infinity', '24:00:00', '24:00:00-15:59'),
 (2, '-infinity', '-infinity', '-infinity', '00:00:00', '00:00:00+15:59'),
 (3, '0044-03-15 BC', '0044-03-15 12:30:00.5 BC', '0044-03-15 12:30:00.5+00 BC', '12:34:56.789012', '12:00:00+05:30'),
 (4, '4714-11-24 BC', '4714-11-24 00:00:00 BC', '4714-11-24 00:00:00+00 BC', '23:59:59.999999', '01:02:03.5-03:30'),
 (5, '5874897-12-31', '294276-12-31 23:59:59.999999', '294276-12-30 23:59:59.999999+00', NULL, NULL),
 (6, '0001-02-29 BC', '10000-01-01 00:00:00', '1850-01-01 00:00:00+00', '00:00:00.000001', '12:00:00+00'),
 (7, NULL, NULL, NULL, NULL, NULL),
 (8, '2024-02-29', '2024-02-29 12:00:00.5', '2024-02-29 12:00:00.5+00', '12:00:00', '12:00:00+00');
CREATE TABLE $back (LIKE $src);
SQL
	job dout "$PG,\"table\":\"$src\"" "\"type\":\"file\",\"path\":\"$TMP/dates.csv\",\"header\":true"
	must_run "$TMP/dout.json"
	job din "\"type\":\"file\",\"path\":\"$TMP/dates.csv\",\"header\":true" "$PG,\"table\":\"$back\""
	must_run "$TMP/din.json"
	expect_eq "dirty rows PostgreSQL -> CSV -> PostgreSQL" "$(summary "['dirty_rows']")" 0
	pg_same "$src" "$back"

	# Into MariaDB, what it cannot store (infinity, BC, years past 9999, a
	# TIMESTAMP outside 1970..2038) is a dirty row, never a failed load.
	local md=wh_fid_dates_my_$S
	myt "$md"
	my -e "CREATE TABLE $md (id int, d date, ts datetime(6), tz timestamp(6) NULL DEFAULT NULL, t time(6), ttz time(6))"
	job dmy "$PG,\"table\":\"$src\"" "$MY,\"table\":\"$md\""
	must_run "$TMP/dmy.json"
	expect_eq "dirty rows PostgreSQL -> MariaDB" "$(summary "['dirty_rows']")" 6
	expect_eq "rows in MariaDB" "$(my -e "SELECT GROUP_CONCAT(CONCAT_WS('|', id, d, ts, tz, t, ttz) ORDER BY id SEPARATOR ' ') FROM $md")" \
		'7 8|2024-02-29|2024-02-29 12:00:00.500000|2024-02-29 12:00:00.500000|12:00:00.000000|12:00:00.000000'
	expect_eq "reject lines, each whole JSON" "$(rejects_valid "$TMP/dmy.rej")" 6

	# Values PostgreSQL refuses are dirty rows, never a failed load.
	printf 'id,d,ts,tz,t,ttz\n1,0000-01-01,,,,\n2,4714-11-23 BC,,,,\n3,,2024-02-30 00:00:00,,,\n4,2024-01-01,,,,\n' >"$TMP/bad.csv"
	pg -c "TRUNCATE $back"
	job dbad "\"type\":\"file\",\"path\":\"$TMP/bad.csv\",\"header\":true" "$PG,\"table\":\"$back\""
	must_run "$TMP/dbad.json"
	expect_eq "dirty out-of-range dates" "$(summary "['dirty_rows']")" 3
	expect_eq "rows loaded" "$(pg -c "SELECT count(*) FROM $back")" 1
}

case_bits() {
	local src=wh_fid_bits_$S pgb=wh_fid_bits_pg_$S back=wh_fid_bits_back_$S
	myt "$src"
	myt "$back"
	pgt "$pgb"
	my -e "CREATE TABLE $src (id int PRIMARY KEY, b1 bit(1), b8 bit(8), b10 bit(10), b64 bit(64));
	       INSERT INTO $src VALUES (1, b'1', b'00000101', b'0100000101', b'0111111111111111111111111111111111111111111111111111111111111111'),
	       (2, b'0', b'11111111', b'1111111111', b'1'), (3, NULL, NULL, NULL, NULL),
	       (4, b'1', b'0', b'0', b'1111111111111111111111111111111111111111111111111111111111111111');
	       CREATE TABLE $back LIKE $src"
	# Into bit(n), bytea and bigint as the target asks; a value that does not
	# fit (64 bits set into bigint, 10 bits into bit(8)) is a dirty row.
	pg -c "CREATE TABLE $pgb (id int, b1 boolean, b8 bit(8), b10 bytea, b64 bigint)"
	job bp "$MY,\"table\":\"$src\"" "$PG,\"table\":\"$pgb\""
	must_run "$TMP/bp.json"
	expect_eq "MariaDB BIT -> PostgreSQL rows" "$(pg -c "SELECT string_agg(concat_ws('|', id, b1, b8, b10, b64), ' ' ORDER BY id) FROM $pgb")" \
		'1|t|00000101|\x0105|9223372036854775807 2|f|11111111|\x03ff|1 3'
	expect_eq "dirty BIT rows" "$(summary "['dirty_rows']")" 1
	grep -q 'bit string value too large for the integer column' "$TMP/bp.rej" || fail "no reason for the dirty BIT row"
	pg -c "ALTER TABLE $pgb ALTER b1 TYPE bit(1) USING b1::int::bit(1), ALTER b10 TYPE bit(10) USING NULL, ALTER b64 TYPE bit(64) USING NULL; TRUNCATE $pgb"
	job bp2 "$MY,\"table\":\"$src\"" "$PG,\"table\":\"$pgb\""
	must_run "$TMP/bp2.json"
	expect_eq "MariaDB BIT -> PostgreSQL bit(n) dirty" "$(summary "['dirty_rows']")" 0
	# ... and back: PostgreSQL bit(n) -> MariaDB BIT(n).
	job pb "$PG,\"table\":\"$pgb\"" "$MY,\"table\":\"$back\""
	must_run "$TMP/pb.json"
	my_same "$src" "$back" "id, b1 + 0, b8 + 0, b10 + 0, b64 + 0"
	# MariaDB -> CSV -> MariaDB.
	my -e "DELETE FROM $back"
	job bc "$MY,\"table\":\"$src\"" "\"type\":\"file\",\"path\":\"$TMP/bits.csv\",\"header\":true"
	must_run "$TMP/bc.json"
	grep -q '^1,1,00000101,0100000101,0111' "$TMP/bits.csv" || fail "BIT in CSV: $(head -2 "$TMP/bits.csv")"
	job cb "\"type\":\"file\",\"path\":\"$TMP/bits.csv\",\"header\":true" "$MY,\"table\":\"$back\""
	must_run "$TMP/cb.json"
	my_same "$src" "$back" "id, b1 + 0, b8 + 0, b10 + 0, b64 + 0"
	# A bit string wider than the MariaDB column is dirty, not a failed load.
	printf 'id,b1,b8,b10,b64\n9,1,100000000,0,0\n' >"$TMP/wide.csv"
	job cw "\"type\":\"file\",\"path\":\"$TMP/wide.csv\",\"header\":true" "$MY,\"table\":\"$back\""
	must_run "$TMP/cw.json"
	expect_eq "too wide for BIT(8)" "$(summary "['dirty_rows']")" 1
}

# torture_pg_table TABLE ENUM: the PostgreSQL type-torture table (every
# built-in type family at its limits, and one column of the enum type ENUM).
torture_pg_table() {
	local src=$1 ty=$2
	pgt "$src"
	PG_TYPES+=("$ty")
	pg <<SQL
CREATE TYPE $ty AS ENUM ('sad', 'ok', 'happy ☺');
CREATE TABLE $src (id int, i2 smallint, i4 int, i8 bigint, n numeric, np numeric(38,10),
  f4 real, f8 double precision, b boolean, t text, vc varchar(10), ch char(5), by bytea,
  d date, tm time, ttz timetz, ts timestamp, tz timestamptz, iv interval, j json, jb jsonb,
  ai int[], at text[], u uuid, ip inet, net cidr, mac macaddr, bt bit(8), vb varbit(16),
  m money, r int4range, tr tstzrange, e $ty, pt point, tv tsvector, x xml);
INSERT INTO $src VALUES
 (1, -32768, -2147483648, -9223372036854775808, 'NaN', -9999999999999999999999999999.9999999999,
  '-Infinity', 'NaN', false,
  (SELECT string_agg(chr(c), '') FROM generate_series(1, 127) c) || ' é ü ñ 日本語 😀 ‮rtl‬ ́combining 𐍈 ' || chr(65535) || chr(1114111),
  '', 'a', (SELECT string_agg(set_byte('\\x00'::bytea, 0, g), ''::bytea) FROM generate_series(0, 255) g),
  '4714-11-24 BC', '00:00:00', '00:00:00+15:59', '4714-11-24 00:00:00 BC', '4714-11-24 00:00:00+00 BC',
  '-178000000 years', '{"a":[1,2.50,{"b":null}],"u":"\\u00e9","big":1e400}', '{"a":[1,2.5,{"b":null}],"e":"é \\\\ \\""}',
  '{1,NULL,-3}', '{"a,b","c\\"d",NULL,"NULL","",\\\\}', '00000000-0000-0000-0000-000000000000', '::1', '10.0.0.0/8',
  '00:00:00:00:00:00', '00000000', '', '-92233720368547758.08', 'empty', '(,)', 'sad', '(1.5,-2)', 'a fat:1A cat:2B', '<a>x &amp; y</a>'),
 (2, 32767, 2147483647, 9223372036854775807, 'Infinity', 9999999999999999999999999999.9999999999,
  'Infinity', 1.7976931348623157e308, true, E'tab\\there\\nnew line\\r\\nCRLF, comma; "quote" \\\\ backslash \\\\N',
  'ten chars!', 'abcde', '\\x', '5874897-12-31', '24:00:00', '24:00:00-15:59', '294276-12-31 23:59:59.999999',
  '294276-12-30 23:59:59.999999+00', '178000000 years 11 mons 30 days 23:59:59.999999', '[]', '{}', '{}', '{}',
  'ffffffff-ffff-ffff-ffff-ffffffffffff', '255.255.255.255/32', 'ffff::/16', 'ff:ff:ff:ff:ff:ff', '11111111',
  '1111111111111111', '92233720368547758.07', '[-2147483648,2147483647)', '["2024-01-01 00:00:00+00","infinity")', 'happy ☺',
  '(-1e300,1e-300)', '', '<?xml version="1.0"?><r/>'),
 (3, 0, 0, 0, '-Infinity', 0, 1.4e-45, 4.9e-324, NULL, 'NULL', 'N', ' ', '\\x5c4e', '-infinity', '12:34:56.789012',
  '12:00:00.5+05:30', 'infinity', '-infinity', '1 year 2 mons 3 days 04:05:06.789', '"a string"', 'null',
  '{{1,2},{3,4}}', '{" lead", "trail "}', '123e4567-e89b-12d3-a456-426614174000', '192.168.1.1/24', '192.168.0.0/16',
  '08:00:2b:01:02:03', '10101010', '1', '0.00', '(1,5]', 'empty', 'ok', '(0,0)', 'x', ''),
 (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (5, 1, -1, 1, 0.000000000000000000000000000001, -0.0000000001, -0.0, -0.0, true, '', '', '', '\\x00', '0044-03-15 BC',
  '23:59:59.999999', '23:59:59.999999-00:00:01', '0044-03-15 12:30:00.5 BC', '0044-03-15 12:30:00.5+00 BC',
  '-1 days +00:00:00.000001', '{"k":"\\ud83d\\ude00"}', '{"k":"\\ud83d\\ude00","n":-0.0}', '{}', '{""}',
  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2001:db8::1/64', '2001:db8::/32', '01:23:45:67:89:ab', '00000001', '0',
  '-0.01', '[1,2)', '["0044-03-15 12:00:00+00 BC","2024-01-01 00:00:00+00"]', 'sad', '(-0,0)', 'ab:1,2,3', 'text only');
SQL
}

case_torture_pg() {
	local src=wh_fid_tpg_$S pp=wh_fid_tpg_pp_$S pc=wh_fid_tpg_pc_$S ty=wh_fid_mood_$S
	torture_pg_table "$src" "$ty"
	pgt "$pp"
	pgt "$pc"
	pg -c "CREATE TABLE $pp (LIKE $src); CREATE TABLE $pc (LIKE $src)"
	# pg -> pg: the copy is exact (in canonical text: an enum is no
	# built-in type, so no pass-through).
	job tpp "$PG,\"table\":\"$src\"" "$PG,\"table\":\"$pp\""
	must_run "$TMP/tpp.json"
	expect_eq "pg -> pg dirty" "$(summary "['dirty_rows']")" 0
	expect_eq "pg -> pg with an enum: no pass-through" "$(summary "['passthrough']")" False
	pg_same "$src" "$pp"
	# pg -> CSV -> pg: every value PostgreSQL printed loads back.
	job tpc "$PG,\"table\":\"$src\"" "\"type\":\"file\",\"path\":\"$TMP/t.csv\",\"header\":true"
	must_run "$TMP/tpc.json"
	job tcp "\"type\":\"file\",\"path\":\"$TMP/t.csv\",\"header\":true" "$PG,\"table\":\"$pc\""
	must_run "$TMP/tcp.json"
	expect_eq "CSV -> pg dirty" "$(summary "['dirty_rows']")" 0
	pg_same "$src" "$pc"
	# pg -> MariaDB: what MariaDB cannot store (NaN, infinities, BC dates) is
	# a dirty row with its reason, never a failed load.
	local pm=wh_fid_tpg_my_$S
	myt "$pm"
	my -e "CREATE TABLE $pm (id int, i2 smallint, i4 int, i8 bigint, n decimal(65,30), np decimal(38,10),
	  f4 float, f8 double, b boolean, t longtext, vc varchar(10), ch char(5), \`by\` longblob, d date,
	  tm time(6), ttz time(6), ts datetime(6), tz datetime(6), iv varchar(100), j json, jb json, ai text,
	  at text, u char(36), ip varchar(64), net varchar(64), mac varchar(32), bt bit(8), vb bit(16), m varchar(40),
	  r varchar(64), tr varchar(128), e varchar(20), pt varchar(64), tv text, x text) DEFAULT CHARSET=utf8mb4"
	job tpm "$PG,\"table\":\"$src\"" "$MY,\"table\":\"$pm\""
	must_run "$TMP/tpm.json"
	expect_eq "pg -> MariaDB dirty" "$(summary "['dirty_rows']")" 4
	expect_eq "pg -> MariaDB rows" "$(my -e "SELECT GROUP_CONCAT(id) FROM $pm")" 4
	expect_eq "reject lines, each whole JSON" "$(rejects_valid "$TMP/tpm.rej")" 4
	# ... and the tsv form too.
	pg -c "TRUNCATE $pc"
	job tpt "$PG,\"table\":\"$src\"" "\"type\":\"file\",\"path\":\"$TMP/t.tsv\",\"format\":\"tsv\",\"header\":true"
	must_run "$TMP/tpt.json"
	job ttp "\"type\":\"file\",\"path\":\"$TMP/t.tsv\",\"format\":\"tsv\",\"header\":true" "$PG,\"table\":\"$pc\""
	must_run "$TMP/ttp.json"
	pg_same "$src" "$pc"
}

# PostgreSQL -> PostgreSQL pass-through (binary COPY both ways) on the
# torture table without its enum column: the target equals the source
# (EXCEPT both ways), with one channel, with two on a split key, and with
# resume bookkeeping; and what turns it off.
case_passthrough() {
	local tor=wh_fid_raw_tor_$S src=wh_fid_raw_$S dst=wh_fid_raw_d_$S oth=wh_fid_raw_o_$S
	torture_pg_table "$tor" "wh_fid_rmood_$S"
	pgt "$src"
	pgt "$dst"
	pgt "$oth"
	# More rows than one batch holds (batch_rows 64), NULLs in every column.
	pg <<SQL
CREATE TABLE $src AS SELECT * FROM $tor;
ALTER TABLE $src DROP COLUMN e;
INSERT INTO $src SELECT g, i2, i4, i8, n, np, f4, f8, b, t || g, vc, ch, by, d, tm, ttz, ts, tz, iv, j, jb,
  ai, at, u, ip, net, mac, bt, vb, m, r, tr, pt, tv, x FROM $src, generate_series(10, 99) g;
CREATE TABLE $dst (LIKE $src);
CREATE TABLE $oth (LIKE $src);
ALTER TABLE $oth ALTER COLUMN i4 TYPE bigint;
SQL
	local rows
	rows=$(pg -c "SELECT count(*) FROM $src")
	job raw1 "$PG,\"table\":\"$src\"" "$PG,\"table\":\"$dst\"" '"batch_rows":64'
	must_run "$TMP/raw1.json"
	expect_eq "pass-through used" "$(summary "['passthrough']")" True
	expect_eq "pass-through rows confirmed" "$(summary "['writers'][0]['rows_confirmed']")" "$rows"
	expect_eq "pass-through dirty" "$(summary "['dirty_rows']")" 0
	pg_same "$src" "$dst"
	# Two channels on a split key, into a truncated target.
	job raw2 "$PG,\"table\":\"$src\",\"split\":{\"key\":\"id\",\"shards\":4}" \
		"$PG,\"table\":\"$dst\",\"mode\":\"truncate\"" '"batch_rows":64,"channels":2'
	must_run "$TMP/raw2.json"
	expect_eq "pass-through, 2 channels" "$(summary "['passthrough']")" True
	expect_eq "2 channels, reader channels" "$(summary "['reader_channels']")" 2
	pg_same "$src" "$dst"
	# Resume bookkeeping: every split its own COPY (header and trailer each).
	pg -c "TRUNCATE $dst"
	job raw3 "$PG,\"table\":\"$src\",\"split\":{\"key\":\"id\",\"shards\":3}" \
		"$PG,\"table\":\"$dst\"" '"batch_rows":64,"channels":2,"resume":true'
	must_run "$TMP/raw3.json"
	expect_eq "pass-through with resume" "$(summary "['passthrough']")" True
	pg_same "$src" "$dst"
	# Turned off: the same copy in canonical text.
	pg -c "TRUNCATE $dst"
	ORRERY_WH_PASSTHROUGH=0 must_run "$TMP/raw1.json"
	expect_eq "pass-through turned off" "$(summary "['passthrough']")" False
	pg_same "$src" "$dst"
	# A column of another type: canonical text and value checks.
	job raw4 "$PG,\"table\":\"$src\"" "$PG,\"table\":\"$oth\""
	must_run "$TMP/raw4.json"
	expect_eq "another column type: no pass-through" "$(summary "['passthrough']")" False
	expect_eq "another column type: rows" "$(pg -c "SELECT count(*) FROM $oth")" "$rows"
	# A column subset of the same types: pass-through, the rest NULL.
	pg -c "TRUNCATE $dst"
	job raw5 "$PG,\"table\":\"$src\",\"columns\":[\"id\",\"t\"]" \
		"$PG,\"table\":\"$dst\",\"columns\":[\"id\",\"t\"]"
	must_run "$TMP/raw5.json"
	expect_eq "a column subset of the same types: pass-through" "$(summary "['passthrough']")" True
	expect_eq "column subset: rows" "$(pg -c "SELECT count(*) FROM $dst WHERE i2 IS NULL")" "$rows"
	expect_eq "column subset: texts" "$(pg -c "SELECT count(*) FROM (SELECT id, t FROM $src EXCEPT SELECT id, t FROM $dst) x")" 0
}

case_torture_my() {
	local src=wh_fid_tmy_$S mm=wh_fid_tmy_mm_$S mc=wh_fid_tmy_mc_$S mpm=wh_fid_tmy_mpm_$S mp=wh_fid_tmy_p_$S
	myt "$src"
	myt "$mm"
	myt "$mc"
	myt "$mpm"
	pgt "$mp"
	my <<SQL
CREATE TABLE $src (id int PRIMARY KEY, ti tinyint, tiu tinyint unsigned, si smallint, mi mediumint,
  i int, iu int unsigned, bi bigint, biu bigint unsigned, bo boolean, de decimal(65,30), fl float,
  db double, b1 bit(1), b64 bit(64), yr year, d date, dt datetime(6), ts timestamp(6) NULL DEFAULT NULL,
  tm time(6), c char(10), vc varchar(255), tx text, lt longtext, bin binary(4), vb varbinary(16),
  bl blob, lb longblob, j json, e enum('a','b','c d','é'), s set('x','y','z')) DEFAULT CHARSET=utf8mb4;
INSERT INTO $src VALUES
 (1, -128, 0, -32768, -8388608, -2147483648, 0, -9223372036854775808, 0, false,
  -99999999999999999999999999999999999.999999999999999999999999999999, 16777215, -1.7976931348623157e308,
  b'0', b'0', 1901, '1000-01-01', '1000-01-01 00:00:00.000000', '1970-01-01 00:00:01.000000',
  '-838:59:59.000000', '', '', '', '', x'00000000', x'', x'', x'', '[]', 'a', ''),
 (2, 127, 255, 32767, 8388607, 2147483647, 4294967295, 9223372036854775807, 18446744073709551615, true,
  99999999999999999999999999999999999.999999999999999999999999999999, 3.4028234e38, 1.7976931348623157e308,
  b'1', b'1111111111111111111111111111111111111111111111111111111111111111', 2155, '9999-12-31',
  '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07.999999', '838:59:59.000000', 'abcdefghij',
  CONCAT('tab\there\nnew line\r\nCRLF, "q" \\\\ \\\\N é 日本語 😀 ', CHAR(1), CHAR(31)), REPEAT('x', 65535),
  REPEAT('long ', 100000), x'ffffffff', x'00ff00ff00ff', x'5c4e', (SELECT GROUP_CONCAT(CHAR(seq) ORDER BY seq SEPARATOR '') FROM seq_0_to_255),
  '{"a":[1,2.5,{"b":null}],"s":"é 😀 \\\\u00e9"}', 'é', 'x,y,z'),
 (3, 0, 1, 0, 0, 0, 1, 0, 1, NULL, 0.000000000000000000000000000001, -1.2345678e-10, 5e-324, NULL, b'1', 2000,
  '2024-02-29', '2024-02-29 12:34:56.789012', '2024-06-30 23:59:59.500000', '00:00:00.000001', 'NULL',
  'NULL', '\\\\N', NULL, x'5c000000', x'0a0d09', x'', NULL, 'null', 'c d', 'y'),
 (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
CREATE TABLE $mm LIKE $src;
CREATE TABLE $mc LIKE $src;
CREATE TABLE $mpm LIKE $src;
SQL
	local cols="id, ti, tiu, si, mi, i, iu, bi, biu, bo, de, fl, db, b1 + 0, b64 + 0, yr, d, dt, ts, tm, c, vc, tx, lt, bin, vb, bl, lb, j, e, s"
	# mysql -> mysql
	job tmm "$MY,\"table\":\"$src\"" "$MY,\"table\":\"$mm\""
	must_run "$TMP/tmm.json"
	expect_eq "mysql -> mysql dirty" "$(summary "['dirty_rows']")" 0
	my_same "$src" "$mm" "$cols"
	# mysql -> CSV -> mysql
	job tmc "$MY,\"table\":\"$src\"" "\"type\":\"file\",\"path\":\"$TMP/m.csv\",\"header\":true"
	must_run "$TMP/tmc.json"
	job tcm "\"type\":\"file\",\"path\":\"$TMP/m.csv\",\"header\":true" "$MY,\"table\":\"$mc\""
	must_run "$TMP/tcm.json"
	expect_eq "CSV -> mysql dirty" "$(summary "['dirty_rows']")" 0
	my_same "$src" "$mc" "$cols"
	# mysql -> pg -> mysql, into the PostgreSQL types each MariaDB type maps to.
	pg -c "CREATE TABLE $mp (id int, ti smallint, tiu smallint, si smallint, mi int, i int, iu bigint,
	  bi bigint, biu numeric(20), bo boolean, de numeric(65,30), fl real, db double precision, b1 bit(1),
	  b64 bit(64), yr smallint, d date, dt timestamp, ts timestamptz, tm interval, c varchar(10), vc varchar(255),
	  tx text, lt text, bin bytea, vb bytea, bl bytea, lb bytea, j json, e text, s text)"
	job tmp "$MY,\"table\":\"$src\"" "$PG,\"table\":\"$mp\""
	must_run "$TMP/tmp.json"
	expect_eq "mysql -> pg dirty" "$(summary "['dirty_rows']")" 0
	expect_eq "mysql -> pg a few values" "$(pg -c "SELECT concat_ws('|', biu, de, b64, tm, ts, length(lb), fl) FROM $mp WHERE id = 2")" \
		'18446744073709551615|99999999999999999999999999999999999.999999999999999999999999999999|1111111111111111111111111111111111111111111111111111111111111111|838:59:59|2038-01-19 03:14:07.999999+00|256|3.4028235e+38'
	# A FLOAT keeps every digit of its value (MariaDB itself prints 6).
	expect_eq "FLOAT in CSV" "$(cut -d, -f12 "$TMP/m.csv" | sed -n 2p)" 16777215
	job tpm "$PG,\"table\":\"$mp\"" "$MY,\"table\":\"$mpm\""
	must_run "$TMP/tpm.json"
	expect_eq "pg -> mysql dirty" "$(summary "['dirty_rows']")" 0
	my_same "$src" "$mpm" "$cols"
}

"case_$CASE"
