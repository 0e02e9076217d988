#!/usr/bin/env python3
"""run.py - HTTP load on galaxyd's read API, directly and through nginx.

Starts halleyd + two galaxyd on a fresh database of the stack (ORRERY_PG_DSN
from `eval "$(deploy/stack.sh env)"`), creates a task with 2,000 instances,
renders the real nginx front (deploy/nginx/render.sh) over both galaxyd, and
then, ROUNDS times, runs wrk (a separate process, bounded in time) on:

  list/direct   GET /api/v1/instances?limit=50 on one galaxyd
  list/nginx    the same through nginx (balanced over both galaxyd)
  task/direct   the task page's calls, in turn: GET /api/v1/tasks/{id},
                GET /api/v1/instances?task_id={id}&order=desc&limit=50,
                GET /api/v1/schedule/next?cron=...&tz=UTC&count=5
  task/nginx    the same through nginx
  static/nginx  the peer: the same nginx serving a static JSON file as large
                as the list answer, from disk (what a request costs when no
                application work is done at all, at this very moment)

Each line gives requests/s, latency p50/p90/p99, non-2xx answers and the
1-minute load average when the run ended; the end gives galaxyd's peak RSS
(sampled every 0.2 s), galaxyd's response-cache counters and the ratio of
each galaxyd figure to the static peer of the same round. The machine may be
shared: compare runs by that ratio and quote the load average with figures.
Last, the floor of the uncached list: the default page's SQL alone through
pgbench (-M prepared, 8 clients; cpu.py's pgbench_floor), and list/direct of
the last round over it.

usage: run.py BUILD_DIR [SECONDS] [CONNECTIONS] [ROUNDS]
       (defaults 10 s, 32 connections, 2 rounds; wrk -t2)
Target: >= 5,000 requests/s, p99 < 50 ms, galaxyd < 64 MB, on 2 cores.
Traffic stays on loopback; every run is bounded.
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
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "integration", "lib"))
import orrery_it  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu import pgbench_floor  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def wrk(base, paths, token, seconds, conns):
    """One bounded wrk run over paths (in turn, per connection)."""
    args = ["wrk", "-t2", f"-c{conns}", f"-d{seconds}s", "--latency", "--timeout", "5s"]
    if token:
        args += ["-H", f"Authorization: Bearer {token}"]
    env = dict(os.environ)
    if len(paths) > 1:
        args += ["-s", os.path.join(HERE, "paths.lua")]
        env["ORRERY_BENCH_PATHS"] = "\n".join(paths)
    args.append(base + paths[0])
    out = subprocess.run(args, capture_output=True, text=True, env=env,
                         timeout=seconds + 60).stdout
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not m:
        raise RuntimeError(f"wrk printed no rate:\n{out}")
    lat = {}
    for p in ("50", "90", "99"):
        m2 = re.search(rf"\s{p}(?:\.000)?%\s+([\d.]+)(us|ms|s)\b", out)
        if m2:
            v, unit = float(m2.group(1)), m2.group(2)
            lat[p] = v / 1000 if unit == "us" else v * 1000 if unit == "s" else v
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errs = re.search(r"Socket errors:.*", out)
    return {"rps": float(m.group(1)), "lat": lat, "bad": int(non2xx.group(1)) if non2xx else 0,
            "errors": errs.group(0) if errs else "", "load": loadavg()}


def show(name, r):
    lat = r["lat"]
    print(f"  {name:13s} {r['rps']:9.0f} req/s  p50 {lat.get('50', 0):7.2f} ms  "
          f"p90 {lat.get('90', 0):7.2f} ms  p99 {lat.get('99', 0):7.2f} ms  "
          f"non-2xx {r['bad']}  load {r['load']:.1f}  {r['errors']}", flush=True)


def add_static_peer(conf, listen, root):
    """A second server block in the rendered nginx.conf: static files only."""
    with open(conf) as f:
        text = f.read().rstrip()
    assert text.endswith("}"), "rendered nginx.conf should end with the http block"
    peer = (f"    server {{\n        listen {listen};\n        access_log off;\n"
            f"        location / {{ root {root}; default_type application/json; }}\n    }}\n")
    with open(conf, "w") as f:
        f.write(text[:-1] + peer + "}\n")


def metric(base, name):
    r = orrery_it.http(base, "GET", "/metrics")
    out = {}
    for line in r.body.decode().splitlines():
        m = re.match(rf'{name}\{{event="(\w+)"\}} (\d+)', line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def main():
    build = sys.argv[1]
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    conns = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    if not (1 <= seconds <= 120 and 1 <= conns <= 512 and 1 <= rounds <= 5):
        sys.exit("run.py: SECONDS 1..120, CONNECTIONS 1..512, ROUNDS 1..5")
    with orrery_it.Platform(build, galaxies=2) as p:
        p.add_user("bench", "bench-password-1", "viewer", teams=["bench"])
        p.add_user("owner", "owner-password-1", "admin", teams=["bench"])
        admin = p.login("owner", "owner-password-1")
        tok = p.login("bench", "bench-password-1")
        r = p.http("POST", "/api/v1/tasks", {"name": "bench.hourly", "team": "bench",
                                             "type": "shell", "schedule": "0 * * * *",
                                             "config": {"command": "true"}}, token=admin)
        assert r.status in (200, 201), r
        tid = r.json()["id"]
        # 2,000 hourly instances, in chunks a loaded machine answers within
        # galaxyd's RPC deadline; a chunk that timed out is asked again
        # (backfill is idempotent on task + schedule time).
        start = 1767225600  # 2026-01-01T00:00:00Z
        for k in range(8):
            frm, to = (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + h * 3600))
                       for h in (k * 250, (k + 1) * 250))
            for attempt in range(5):
                r = p.http("POST", f"/api/v1/tasks/{tid}/backfill", {"from": frm, "to": to},
                           token=admin, timeout=60)
                if r.status != 503:
                    break
                time.sleep(1)
            assert r.status == 200, r
        page = p.http("GET", f"/api/v1/instances?task_id={tid}&limit=1000", token=admin).json()
        nxt = page["next_page_token"]
        rest = p.http("GET", f"/api/v1/instances?task_id={tid}&limit=1000&page_token={nxt}",
                      token=admin).json()
        assert len(page["items"]) == 1000 and len(rest["items"]) == 1000, "want 2,000 instances"
        list_path = "/api/v1/instances?limit=50"
        cron = urllib.parse.quote("0 * * * *")
        task_paths = [f"/api/v1/tasks/{tid}",
                      f"/api/v1/instances?task_id={tid}&order=desc&limit=50",
                      f"/api/v1/schedule/next?cron={cron}&tz=UTC&count=5"]
        for path in [list_path] + task_paths:
            r = p.http("GET", path, token=tok)
            assert r.status == 200, (path, r)
        body = p.http("GET", list_path, token=tok).body

        prefix = tempfile.mkdtemp(prefix="orr-bench-nginx-")
        nport, sport = orrery_it.free_port(), orrery_it.free_port()
        conf = subprocess.run([os.path.join(ROOT, "deploy", "nginx", "render.sh"), prefix,
                               f"127.0.0.1:{nport}"] +
                              [f"127.0.0.1:{g}" for g in p.galaxy_ports],
                              check=True, capture_output=True, text=True).stdout.strip()
        sroot = os.path.join(prefix, "static")
        os.makedirs(sroot)
        os.chmod(prefix, 0o755)
        os.chmod(sroot, 0o755)
        with open(os.path.join(sroot, "list.json"), "wb") as f:
            f.write(body)
        os.chmod(os.path.join(sroot, "list.json"), 0o644)
        add_static_peer(conf, f"127.0.0.1:{sport}", sroot)
        ngx = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-p", prefix, "-c",
                                conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        peak = {"kb": 0}
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                for g in p.galaxy_procs:
                    peak["kb"] = max(peak["kb"], rss_kb(g.pid))
                time.sleep(0.2)

        t = threading.Thread(target=sample)
        try:
            orrery_it.wait_port(nport, ngx, "nginx")
            orrery_it.wait_port(sport, ngx, "nginx (static peer)")
            direct = f"http://127.0.0.1:{p.galaxy_ports[0]}"
            front = f"http://127.0.0.1:{nport}"
            peer = f"http://127.0.0.1:{sport}"
            print(f"galaxyd x2 (threads: shipped default), halleyd, nginx (render.sh); wrk -t2 "
                  f"-c{conns} -d{seconds}s; list answer {len(body)} bytes; "
                  f"{os.cpu_count()} CPUs; load before {loadavg():.1f}", flush=True)
            t.start()
            runs = [("list/direct", direct, [list_path], tok),
                    ("list/nginx", front, [list_path], tok),
                    ("task/direct", direct, task_paths, tok),
                    ("task/nginx", front, task_paths, tok),
                    ("static/nginx", peer, ["/list.json"], None)]
            for name, base, paths, token in runs:  # warm-up, not reported
                wrk(base, paths, token, 1, conns)
            for rnd in range(1, rounds + 1):
                print(f"round {rnd}:", flush=True)
                res = {}
                for name, base, paths, token in runs:
                    res[name] = wrk(base, paths, token, seconds, conns)
                    show(name, res[name])
                s = res["static/nginx"]
                ratios = "  ".join(
                    f"{n} {res[n]['rps'] / s['rps']:.2f}x" for n, *_ in runs[:-1]
                    if s["rps"] > 0)
                print(f"  rate vs static peer: {ratios}", flush=True)
            stop.set()
            t.join()
            pg_port = urllib.parse.urlsplit(os.environ["ORRERY_PG_DSN"]).port
            tps, pg_us, pb_us = pgbench_floor(
                p, pg_port, lambda: p.http("GET", list_path, token=tok), seconds)
            print(f"  pgbench, the list's SQL alone (-M prepared, 8 clients): {tps:.0f} tps, "
                  f"CPU us/query: postgres {pg_us:.0f}, pgbench {pb_us:.0f}; list/direct / "
                  f"pgbench {res['list/direct']['rps'] / tps:.2f}  load {loadavg():.1f}",
                  flush=True)
            print(f"galaxyd peak RSS during the load: {peak['kb'] / 1024:.1f} MB")
            for i, g in enumerate(p.galaxy_ports):
                c = metric(f"http://127.0.0.1:{g}", "galaxy_http_cache_total")
                print(f"galaxyd #{i + 1} response cache: hits {c.get('hit', 0)}  "
                      f"misses {c.get('miss', 0)}  stores {c.get('store', 0)}")
        finally:
            stop.set()
            if t.is_alive():
                t.join()
            ngx.send_signal(signal.SIGTERM)
            ngx.wait(timeout=10)
            shutil.rmtree(prefix, True)


if __name__ == "__main__":
    main()
