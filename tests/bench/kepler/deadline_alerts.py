"""deadline_alerts.py - how soon after its deadline keplerd's leader raises a
deadline alert (a benchmark, not a test: figures are printed, not asserted).

    tests/bench/kepler/deadline_alerts.py BUILD_DIR [COUNT]

Against a real stack (ORRERY_PG_DSN, ORRERY_ZK from deploy/stack.sh env),
with the integration tests' platform (halleyd on a fresh database, keplerd,
a stand-in executor that holds every run): COUNT instances (default 200) of
a task with deadlines.finish_by = 3s, their schedule times spread over 10 s
from now, all running (held) when their deadline passes. The delay of each
is the alert's created_at in halleyd (the RaiseAlert transaction) minus the
deadline: p50 / p99 / max, and how many were raised.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration", "kepler"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration", "lib"))
import orrery_it  # noqa: E402
import test_kepler as tk  # noqa: E402


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else None


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: deadline_alerts.py BUILD_DIR [COUNT]", file=sys.stderr)
        return 2
    count = int(sys.argv[2]) if len(sys.argv) == 3 else 200
    orrery_it.require_env("ORRERY_ZK")
    with orrery_it.Platform(sys.argv[1], galaxies=0) as p:
        k = tk.Kepler(p)
        rule = int(k.tool("alert-rule", "dl-bench", "team", "data", "deadline_finish"))
        k.start_executor("exec-hold", count + 8, -1)
        k.start_kepler("k1")
        if not tk.wait_until(lambda: k.leader()[0] == "k1", 60):
            print("FAIL keplerd did not lead", flush=True)
            return 1
        task = k.task("dl-bench-x", deadlines={"finish_by": "3s"})
        k.wait_indexed("dl-bench-x")
        now = int(time.time() * 1000) + 2000
        times = [now + (i * 10000) // count for i in range(count)]
        ids = k.create(task, times)
        sched = dict(zip(ids, times))
        got = {}
        end = time.time() + 60
        while time.time() < end and len(got) < count:
            for line in k.tool("alerts", str(rule)).splitlines():
                a = json.loads(line)
                got[a["instance_id"]] = a
            time.sleep(0.5)
        running = sum(1 for i in k.instances("dl-bench-") if i["state"] == "running")
        delays = [got[i]["created_at_ms"] - (sched[i] + 3000) for i in got if i in sched]
        print(f"deadline alerts raised: {len(got)} of {count} "
              f"(instances still running at the end: {running})")
        if delays:
            print(f"delay after the deadline, ms: p50 {pct(delays, 0.5)} p99 {pct(delays, 0.99)} "
                  f"max {max(delays)} min {min(delays)}")
        print(f"load: {os.getloadavg()}")
        for i in ids:
            k.tool("finish", str(i), "1")
        return 0 if len(got) == count else 1


if __name__ == "__main__":
    sys.exit(main())
