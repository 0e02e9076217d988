#!/usr/bin/env python3
"""run.py - HTTP load on galaxyd's instance list, directly and through nginx.

Starts halleyd + two galaxyd on a fresh database of the stack (ORRERY_PG_DSN
from `eval "$(deploy/stack.sh env)"`), creates a task with 2,000 instances,
then runs wrk (a separate process) for a bounded time against
  GET /api/v1/instances?limit=50
on one galaxyd directly and on nginx in front of both, and samples galaxyd's
peak RSS during the load. Prints requests/s, latency percentiles and RSS.

usage: run.py BUILD_DIR [SECONDS] [CONNECTIONS]
Target (docs/benchmarks.md): >= 5,000 requests/s, p99 < 50 ms, galaxyd
< 64 MB, on 2 cores. Traffic stays on loopback; every run is bounded.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "integration", "lib"))
import orrery_it  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def wrk(url, token, seconds, conns):
    out = subprocess.run(["wrk", "-t2", f"-c{conns}", f"-d{seconds}s", "--latency",
                          "-H", f"Authorization: Bearer {token}", url],
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    lat = {}
    for p in ("50", "90", "99"):
        m = re.search(rf"\s{p}(?:\.000)?%\s+([\d.]+)(us|ms|s)", out)
        if m:
            v, unit = float(m.group(1)), m.group(2)
            lat[p] = v / 1000 if unit == "us" else v * 1000 if unit == "s" else v
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return rps, lat, int(non2xx.group(1)) if non2xx else 0


def main():
    build = sys.argv[1]
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    conns = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    with orrery_it.Platform(build, galaxies=2) as p:
        p.add_user("bench", "bench-password-1", "admin", teams=["bench"])
        tok = p.login("bench", "bench-password-1")
        r = p.http("POST", "/api/v1/tasks", {"name": "bench.hourly", "team": "bench",
                                             "type": "shell", "schedule": "0 * * * *",
                                             "config": {"command": "true"}}, token=tok)
        tid = r.json()["id"]
        for frm, to in (("2026-01-01T00:00:00Z", "2026-02-11T16:00:00Z"),
                        ("2026-02-11T16:00:00Z", "2026-03-25T08:00:00Z")):
            r = p.http("POST", f"/api/v1/tasks/{tid}/backfill", {"from": frm, "to": to},
                       token=tok)
            assert r.status == 200 and len(r.json()["created"]) == 1000, r
        prefix = tempfile.mkdtemp(prefix="orr-bench-nginx-")
        nport = orrery_it.free_port()
        subprocess.run([os.path.join(ROOT, "deploy", "nginx", "render.sh"), prefix,
                        f"127.0.0.1:{nport}"] + [f"127.0.0.1:{g}" for g in p.galaxy_ports],
                       check=True, capture_output=True)
        ngx = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-p", prefix, "-c",
                                os.path.join(prefix, "nginx.conf")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            orrery_it.wait_port(nport, ngx, "nginx")
            path = "/api/v1/instances?limit=50"
            peak = {"kb": 0}
            stop = threading.Event()

            def sample():
                while not stop.is_set():
                    for g in p.galaxy_procs:
                        peak["kb"] = max(peak["kb"], rss_kb(g.pid))
                    time.sleep(0.2)

            t = threading.Thread(target=sample)
            t.start()
            for name, base in (("direct", f"http://127.0.0.1:{p.galaxy_ports[0]}"),
                               ("nginx", f"http://127.0.0.1:{nport}")):
                wrk(base + path, tok, 2, conns)  # warm-up
                rps, lat, bad = wrk(base + path, tok, seconds, conns)
                print(f"{name:7s} GET {path}: {rps:8.0f} req/s  p50 {lat.get('50', 0):.2f} ms  "
                      f"p90 {lat.get('90', 0):.2f} ms  p99 {lat.get('99', 0):.2f} ms  "
                      f"non-2xx {bad}")
            stop.set()
            t.join()
            print(f"galaxyd peak RSS during the load: {peak['kb'] / 1024:.1f} MB")
        finally:
            ngx.send_signal(signal.SIGTERM)
            ngx.wait(timeout=10)
            shutil.rmtree(prefix, True)


if __name__ == "__main__":
    main()
