# bench_spec.sh - sourced by the sort benchmarks (run.sh, threads.sh): the
# stream spec they run sortd with, so every figure comes from the same one.
#
#   bench_spec IN_PATH TIMEZONE FSYNC > spec.json
#
# sort_gen's delimited records (10 fields, interface and epoch seconds),
# hourly units, files rolled only by size or their hour's close (roll_age_ms
# 10 min: a run never rolls by age), _CHECK by the data clock.
bench_spec() {
	cat <<JSON
{"name": "bench", "business": "bench",
 "source": {"type": "file", "path": "$1", "exit_at_eof": true},
 "format": {"type": "delimited", "delimiter": "|",
            "fields": ["id", "ts", "iface", "user", "h", "m", "path", "st", "n", "ua"]},
 "interface": {"field": "iface"},
 "time": {"field": "ts", "format": "epoch_s", "timezone": "$2"},
 "bucket": "hour",
 "output": {"roll_size": 268435456, "roll_age_ms": 600000, "fsync": $3},
 "check": {"clock": "data", "grace_ms": 0}}
JSON
}
