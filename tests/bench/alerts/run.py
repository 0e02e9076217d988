"""run.py - benchmark of alert delivery (not a ctest test): failures raised
in a burst through halleyd (RaiseAlert, grouped per dedup key), sent by the
leader keplerd to a webhook receiver on loopback; for every failure, the
time from its raise to the arrival of the first message that covers it
(a message of its key whose count reaches the failure's rank).

    set -a; . stack env; set +a
    python3 tests/bench/alerts/run.py BUILD_DIR [N] [THREADS] [KEYS...]

N failures (default 1000) from THREADS raising threads (default 8), once
per KEYS value (default: 1 and 50 keys, i.e. one workflow run and 50 runs).
The rule has the default group window (1 s) and quiet period (300 s);
keplerd runs with its default sender settings. Prints one line per run.
"""
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration", "notify"))
import orrery_it  # noqa: E402
from receivers import WebhookReceiver  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def main():
    build = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    key_counts = [int(x) for x in sys.argv[4:]] or [1, 50]
    with orrery_it.Platform(build, galaxies=0) as p, WebhookReceiver(secret="s") as hook:
        zk = orrery_it.require_env("ORRERY_ZK") + f"/alerts-bench-{os.getpid()}"
        env = dict(os.environ, NOTIFY_IT_HALLEY=f"127.0.0.1:{p.halley_port}",
                   NOTIFY_IT_TOKEN=p.token, NOTIFY_IT_ZK=zk)

        def tool(*args):
            r = subprocess.run([p.bin("notify_it_tool"), *map(str, args)], env=env,
                               capture_output=True, text=True, timeout=300, check=True)
            return r.stdout

        tool("zk-root")
        tool("team", "bench")
        ch = int(tool("channel", "bench", "hook", "webhook",
                      '{"url": "%s", "secret": "s"}' % hook.url()))
        kenv = dict(os.environ, ORRERY_KEPLER_HALLEY=f"127.0.0.1:{p.halley_port}",
                    ORRERY_KEPLER_HALLEY_TOKEN=p.token, ORRERY_KEPLER_ZK=zk,
                    ORRERY_KEPLER_ID="bench", ORRERY_LOG_LEVEL="warn")
        p._spawn([p.bin("keplerd"), "run"], kenv, "keplerd.log")
        time.sleep(3)  # leadership (not measured)
        for run, keys in enumerate(key_counts):
            rule = int(tool("rule", "bench", f"burst{run}", ch, 300, 1))
            prefix = f"failed:workflow:bench{run}:"
            before = len(hook.requests)
            t0 = time.time()
            lines = tool("burst", rule, prefix, n, threads, keys).split()
            burst_s = time.time() - t0
            raises = {}
            for k, at in zip(lines[0::2], lines[1::2]):
                raises.setdefault(k, []).append(int(at) / 1000.0)
            # every key's first message
            hook.wait_count(before + keys, 60)
            time.sleep(2)  # late digests would show here (not expected within 2 s)
            msgs = {}
            for rq in hook.requests[before:]:
                j = rq["json"]
                msgs.setdefault(j["dedup_key"], []).append((rq["at"], j["count"]))
            lat, uncovered = [], 0
            for k, ats in raises.items():
                ats.sort()
                got = sorted(msgs.get(k, []))
                for rank, at in enumerate(ats, 1):
                    arr = next((a for a, c in got if c >= rank), None)
                    if arr is None:
                        uncovered += 1
                    else:
                        lat.append(arr - at)
            sent = len(hook.requests) - before
            # where the time goes: due (first raise + group window) -> delivered
            late = [(a["deliveries"][0]["delivered_at_ms"] - a["first_at_ms"] - 1000) / 1000.0
                    for a in map(__import__("json").loads, tool("alerts").splitlines())
                    if a["dedup_key"].startswith(prefix) and a["deliveries"]
                    and a["deliveries"][0]["delivered_at_ms"]]
            print(f"keys={keys} failures={n} threads={threads} burst={burst_s:.2f}s "
                  f"messages={sent} covered={len(lat)} not_yet={uncovered} "
                  f"p50={pct(lat, 50):.3f}s p99={pct(lat, 99):.3f}s max={max(lat):.3f}s "
                  f"due_to_delivered_max={max(late):.3f}s",
                  flush=True)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory():
        main()
