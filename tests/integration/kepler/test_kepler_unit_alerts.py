"""test_kepler_unit_alerts.py - keplerd's data-unit deadlines (unit_late,
unit_unreconciled) against real ZooKeeper, halleyd and PostgreSQL.

    test_kepler_unit_alerts.py BUILD_DIR

A stream of 15-minute buckets declaring the interface "login", and units
reported through halleyd's ReportDataUnit for buckets in the past, so their
deadlines have passed by construction (B is the start of the current
bucket, Q a bucket):

- B-4Q reported and reconciled: no alert;
- B-3Q reported, not reconciled: one unit_unreconciled alert, no unit_late;
- B-2Q and B-Q nothing reported: one unit_late alert each;
- buckets before B-4Q (before the stream's first unit): nothing.

Rule "units" (scope the stream by name, unit_deadline_minutes 0) raises
them; rule "later" (scope "*", the default 60 minutes) raises nothing: the
earliest of its deadlines is at B+Q, at least 15 minutes after the test
began. Then the leader is killed with SIGKILL: the standby that takes over
reads the unit alerts back and raises none again (its check logs
raised=0), and every alert keeps count 1.

Nothing waits a fixed time: the test waits for alerts and log lines, each
with a generous deadline that fails naming what it waited for.
"""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import orrery_it  # noqa: E402
import test_kepler as tk  # noqa: E402

check, wait_until = tk.check, tk.wait_until

STREAM = {
    "name": "ua-clicks",
    "business": "ua",
    "source": {"type": "file", "path": "/nonexistent/ua-clicks", "exit_at_eof": True},
    "format": {"type": "delimited", "delimiter": "|", "fields": ["id", "ts", "iface"]},
    "interface": {"field": "iface"},
    "interfaces": ["login"],
    "time": {"field": "ts", "format": "epoch_s", "timezone": "UTC"},
    "bucket": "15m",
}


def alerts(k, rule_id):
    return [json.loads(line) for line in k.tool("alerts", str(rule_id)).splitlines()]


def run(k):
    q = 900_000
    b = int(time.time() * 1000) // q * q
    b_ok, b_unrec, b_late1, b_late2 = b - 4 * q, b - 3 * q, b - 2 * q, b - q
    k.tool("stream", "ua-clicks", json.dumps(STREAM))
    k.tool("unit", "ua-clicks", "ua", "login", str(b_ok), "1")
    k.tool("unit", "ua-clicks", "ua", "login", str(b_unrec), "0")
    r_units = int(k.tool("alert-rule", "ua-units", "stream", "ua-clicks",
                         "unit_late,unit_unreconciled", '{"unit_deadline_minutes": 0}'))
    r_later = int(k.tool("alert-rule", "ua-later", "stream", "*", "unit_late,unit_unreconciled"))
    k.start_kepler("k1")
    check(wait_until(lambda: k.leader()[0] == "k1", 60), "k1 leads")
    k.start_kepler("k2")
    check(k.wait_log("k2", r"joined kepler election"), "k2 stands by in the election")
    check(k.wait_log("k1", r"alert rules read.* rules=2"), "k1 read the two rules")

    def key(ev, bucket):
        return f"{ev}:ua-clicks:ua:login:{bucket}"
    want = {key("unit_unreconciled", b_unrec), key("unit_late", b_late1),
            key("unit_late", b_late2)}

    def keys():
        return {a["dedup_key"] for a in alerts(k, r_units)}
    got = wait_until(lambda: want <= keys(), 60)
    check(got, f"the three alerts were raised ({sorted(keys())})")
    check(k.wait_log("k1", r"data units checked for alerts.* streams=1 raised=3 "),
          "k1's check raised exactly the three")
    al = alerts(k, r_units)
    for a in al:
        print(f"     {a['event']} {a['dedup_key']} count={a['count']}", flush=True)
    check(len(al) == 3, f"units: three alerts, nothing for the reconciled unit or before it ({al})")
    check(all(a["count"] == 1 for a in al), "units: each counted once")
    check(all(a["event"] == a["dedup_key"].split(":", 1)[0] for a in al),
          "units: the event is the key's")
    check(alerts(k, r_later) == [],
          "later: a 60-minute deadline has not passed for any bucket: nothing")

    # --- failover: the standby raises none of them again
    name, proc = k.leader()
    check(name == "k1", f"failover: k1 leads before the kill ({name})")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    check(wait_until(lambda: k.leader()[0] == "k2", 60), "failover: k2 takes over")
    check(k.wait_log("k2", r"alert history read.* deadline_alerts=3"),
          "failover: k2 read the three unit alerts back")
    check(k.wait_log("k2", r"data units checked for alerts.* streams=1 raised=0 "),
          "failover: k2's check raised nothing again")
    al = alerts(k, r_units)
    check(len(al) == 3 and all(a["count"] == 1 for a in al),
          f"failover: still three alerts with count 1 ({al})")
    check(alerts(k, r_later) == [], "failover: still nothing for the later rule")


def main():
    if len(sys.argv) != 2:
        print("usage: test_kepler_unit_alerts.py BUILD_DIR", file=sys.stderr)
        return 2
    orrery_it.require_env("ORRERY_ZK")
    with orrery_it.Platform(sys.argv[1], galaxies=0) as p:
        k = tk.Kepler(p)
        try:
            run(k)
        except Exception as e:  # report, then fail
            tk.FAILURES.append(f"exception: {e!r}")
            print(f"FAIL exception: {e!r}", flush=True)
        if tk.FAILURES:
            for name, _ in k.keplers:
                print(f"--- keplerd-{name}.log (tail)")
                print("\n".join(p.log(f"keplerd-{name}.log").splitlines()[-60:]))
            print(f"--- kept logs in {p.tmp}")
    print(f"{len(tk.FAILURES)} failed", flush=True)
    return 1 if tk.FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
