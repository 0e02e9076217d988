#!/usr/bin/env python3
"""cpu.py - CPU cost of one uncached instance-list request, per process.

Starts halleyd + one galaxyd with the response cache off on a fresh database
of the stack (ORRERY_PG_DSN from `eval "$(deploy/stack.sh env)"`), makes a
task with 2,000 hourly instances (backfill; one in a hundred then made
failed) and ANALYZEs, then for each list a console can ask for (the default
page, a task's newest, a state filter in both orders and its second pages,
the dashboard's failures, a text search in both orders, the second page by
token, a time range, and the console's instance page: 1,000 rows newest
first, which it asks for again every 5 s; and two floors: a page of one row,
and a task read from halleyd's cache, which reaches no statement) runs wrk
for SECONDS and reports requests/s and the CPU each process spent per
request: galaxyd, halleyd and PostgreSQL's backends (utime + stime from
/proc, so the figure holds whatever else the machine runs; wrk's own CPU is
left out of the total), and the context switches each made per request
(voluntary and involuntary, summed over its threads from
/proc/PID/task/*/status), and from halleyd's /metrics its RPC workers'
busy seconds per second of the run and completion queue (behind the gate,
about 1.00 means calls waited for the one worker that waits for events;
above it, let-in workers ran beside it) and the wake-ups past the gate a
request; then wrk's own CPU per request (its rusage as a
child) and the rate all four allow when they keep busy every core this
script may run on ("bound": cores / CPU per request of the four); then
galaxyd's and halleyd's peak RSS. GX_BENCH_THREADS=N runs galaxyd with N
HTTP threads (default 4). With
GX_BENCH_LISTS=NAME,NAME only those lists run (and the default page, the
rates' reference). With BIG > 0 it then adds BIG more instances of
the task straight in SQL, each finished one (four in five) with its attempt
row, as a busy task's history has them, and times each list (median of 5
requests) at that size; with GX_BENCH_BIG_FIRST=1 it adds them before the
runs instead, so that every figure is measured at that size.

With GX_BENCH_PERF=DIR it also records `perf record -g` of galaxyd, halleyd
and PostgreSQL during the default page's run into DIR/{galaxyd,halleyd,
postgres}.data (read them with `perf report -i ... --no-children`);
GX_BENCH_PERF_LIST=NAME records another list's run instead.

usage: cpu.py BUILD_DIR [SECONDS] [CONNECTIONS] [BIG]   (defaults 5, 4, 0)
Traffic stays on loopback; every run is bounded.
"""
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "integration", "lib"))
import orrery_it  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pids):
    t = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            t += int(parts[11]) + int(parts[12])
        except OSError:
            pass
    return t / TICK


def peak_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        kb = next(int(x.split()[1]) for x in f if x.startswith("VmHWM:"))
    return kb // 1024


def switches(pids):
    """Context switches (voluntary + involuntary) of every thread of pids.

    Threads that ended between two readings take their counts with them
    (/proc keeps no total for them), so a figure can only be low, never high."""
    n = 0
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/status") as f:
                    for line in f:
                        if "ctxt_switches:" in line:
                            n += int(line.split()[-1])
            except OSError:
                pass
    return n


def pg_backends(port):
    """PostgreSQL processes of the stack's server on port (postmaster + children)."""
    out = subprocess.run(["pgrep", "-f", f"postgres.*-p {port}|postgres.*port={port}"],
                         capture_output=True, text=True).stdout.split()
    pids = set(int(x) for x in out)
    kids = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids.update(int(x) for x in f.read().split())
        except OSError:
            pass
    return sorted(pids | kids)


def wrk(url, token, seconds, conns):
    out = subprocess.run(["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "--latency", "--timeout",
                          "5s", "-H", f"Authorization: Bearer {token}", url],
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    n = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    m = re.search(r"\s99%\s+([\d.]+)(us|ms|s)\b", out)
    p99 = float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)] if m else 0
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return n, rps, p99, int(bad.group(1)) if bad else 0


def pg_cpu_s(port):
    """CPU of the server: its live processes, plus the children it reaped
    (cutime + cstime of the postmaster: backends that exited meanwhile)."""
    pids = pg_backends(port)
    t = cpu_s(pids)
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            if int(parts[1]) not in pids:  # the postmaster
                t += (int(parts[13]) + int(parts[14])) / TICK
        except OSError:
            pass
    return t


def pgbench_floor(p, pg_port, poke, seconds, clients=8):
    """The default page's SQL alone: the statement halleyd runs for it (read
    from halleyd's binary, else from pg_stat_activity), through pgbench -M prepared with the same
    parameters, CLIENTS connections over TCP like halleyd's; poke() asks
    galaxyd for the default page. The uncached
    list cannot be served faster than PostgreSQL serves this. Returns
    (tps, PostgreSQL us/query, pgbench us/query). It runs with the generic plan, as halleyd
    does (GX_BENCH_FLOOR_PLAN=auto: PostgreSQL's default choice), and text results where
    halleyd asks for binary ones."""
    head, tail = "SELECT i.id, i.task_id, t.name", "WHERE i.id > $1::int8 ORDER BY i.id LIMIT $2::int"
    # The statement is one string in halleyd's binary (pg_stat_activity cuts
    # one longer than track_activity_query_size, 1 KB, short).
    with open(p.bin("halleyd"), "rb") as f:
        data = f.read()
    end = data.find(tail.encode())
    start = data.rfind(head.encode(), 0, end) if end >= 0 else -1
    q = data[start:end + len(tail)].decode() if start >= 0 and b"\0" not in data[start:end] else ""
    for _ in range(0 if q else 50):  # the pool's connections also run other statements
        poke()
        q = subprocess.run(["psql", p.dsn, "-qAtc",
                            "SELECT query FROM pg_stat_activity WHERE datname = current_database()"
                            f" AND query LIKE '{head}%' AND query LIKE "
                            f"'%{tail}' LIMIT 1"],
                           check=True, capture_output=True, text=True).stdout.strip()
        if q:
            break
    assert q, "the default page's statement was not found"
    script = tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False)
    script.write("\\set p1 0\n\\set p2 51\n" + q.replace("$1", ":p1").replace("$2", ":p2") + ";\n")
    script.close()
    try:
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        c0 = pg_cpu_s(pg_port)
        # halleyd runs the statement with its generic plan (HL_STMT_LIST); its
        # binary results are the one difference pgbench cannot copy.
        # GX_BENCH_FLOOR_PLAN=auto shows what planning at each call costs.
        mode = os.environ.get("GX_BENCH_FLOOR_PLAN", "force_generic_plan")
        env = dict(os.environ, PGOPTIONS=f"-c plan_cache_mode={mode}")
        pb = subprocess.Popen(["pgbench", "-n", "-M", "prepared", "-c", str(clients), "-j", "2",
                               "-T", str(seconds), "-f", script.name, p.dsn],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        out, _ = pb.communicate(timeout=seconds + 60)
        c1 = pg_cpu_s(pg_port)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        os.unlink(script.name)
    n = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
    tps = float(re.search(r"tps = ([\d.]+)", out).group(1))
    own = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    return tps, (c1 - c0) * 1e6 / max(n, 1), own * 1e6 / max(n, 1)


def rpc_workers(port):
    """halleyd's RPC workers from its /metrics: (busy seconds, let-ins, queues)."""
    r = orrery_it.http(f"http://127.0.0.1:{port}", "GET", "/metrics")
    assert r.status == 200, f"halleyd's /metrics: {r.status}"
    text = r.body.decode()
    v = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith("halley_rpc_"):
            v[parts[0]] = float(parts[1])
    return (v["halley_rpc_worker_busy_seconds_total"], v["halley_rpc_worker_let_ins_total"],
            v["halley_rpc_queues"])


def perf_start(gx, hl, pg, seconds):
    """perf record -g of each process for the run's length (GX_BENCH_PERF=DIR)."""
    out = os.environ.get("GX_BENCH_PERF")
    if not out:
        return []
    os.makedirs(out, exist_ok=True)
    recs = []
    for name, pids in (("galaxyd", gx), ("halleyd", hl), ("postgres", pg)):
        recs.append(subprocess.Popen(
            ["perf", "record", "-g", "-q", "-o", os.path.join(out, f"{name}.data"), "-p",
             ",".join(str(x) for x in pids), "--", "sleep", str(seconds)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return recs


def add_big(p, tid, big):
    """BIG more instances of task tid, four in five finished with an attempt."""
    # Each instance's exit code on its row too where the schema has it
    # (0021), as the transitions keep it: written with the row, so that the
    # tables of both schemas are laid out alike.
    has_exit = subprocess.run(
        ["psql", p.dsn, "-qAtc", "SELECT count(*) FROM information_schema.columns"
         " WHERE table_name = 'instances' AND column_name = 'exit_code'"],
        check=True, capture_output=True, text=True).stdout.strip() == "1"
    col = ", exit_code" if has_exit else ""
    val = ", CASE s.st WHEN 'success' THEN 0 WHEN 'failed' THEN 1 END" if has_exit else ""
    orrery_it.psql(p.dsn, f"""
        INSERT INTO instances (task_id, task_version, schedule_time, state, reason{col})
        SELECT {tid}, i.task_version, to_timestamp(1767225600 - g * 60.0), s.st,
               CASE WHEN g % 97 = 0 THEN 'exit 1' ELSE '' END{val}
        FROM generate_series(1, {big}) g,
             LATERAL (SELECT (ARRAY['success','success','success','failed',
                                    'waiting'])[1 + g % 5] AS st) s,
             (SELECT task_version FROM instances WHERE task_id = {tid} LIMIT 1) i;
        INSERT INTO attempts (instance_id, attempt, executor, state, exit_code, reason,
                              started_at, finished_at, task_version)
        SELECT id, attempt, 'bench-executor', state,
               CASE WHEN state = 'success' THEN 0 ELSE 1 END, '', schedule_time,
               schedule_time + interval '1 minute', task_version
        FROM instances WHERE task_id = {tid} AND state IN ('success', 'failed')
          AND schedule_time < to_timestamp(1767225600)
        ON CONFLICT DO NOTHING;
        ANALYZE instances;
        ANALYZE attempts;""")


def main():
    build = sys.argv[1]
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    conns = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    big = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    if not (1 <= seconds <= 60 and 1 <= conns <= 64 and 0 <= big <= 1000000):
        sys.exit("cpu.py: SECONDS 1..60, CONNECTIONS 1..64, BIG 0..1000000")
    threads = int(os.environ.get("GX_BENCH_THREADS", "4"))
    if not 1 <= threads <= 64:
        sys.exit("cpu.py: GX_BENCH_THREADS 1..64")
    os.environ["ORRERY_GALAXY_CACHE_TTL"] = "0s"
    pg_port = urllib.parse.urlsplit(os.environ["ORRERY_PG_DSN"]).port

    class BenchPlatform(orrery_it.Platform):
        def start_galaxy(self, extra_env=None):
            env = dict(extra_env or {})
            env["ORRERY_GALAXY_THREADS"] = str(threads)
            return super().start_galaxy(env)

    with BenchPlatform(build, galaxies=1) as p:
        p.add_user("owner", "owner-password-1", "admin", teams=["bench"])
        tok = p.login("owner", "owner-password-1")
        r = p.http("POST", "/api/v1/tasks", {"name": "bench.hourly", "team": "bench",
                                             "type": "shell", "schedule": "0 * * * *",
                                             "config": {"command": "true"}}, token=tok)
        tid = r.json()["id"]
        start = 1767225600
        for k in range(8):
            frm, to = (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + h * 3600))
                       for h in (k * 250, (k + 1) * 250))
            for _ in range(5):
                r = p.http("POST", f"/api/v1/tasks/{tid}/backfill", {"from": frm, "to": to},
                           token=tok, timeout=60)
                if r.status != 503:
                    break
                time.sleep(1)
            assert r.status == 200, r
        # One instance in a hundred failed, for the dashboard's failures.
        orrery_it.psql(p.dsn, "UPDATE instances SET state = 'failed', reason = 'exit 1'"
                              " WHERE id % 100 = 0")
        # Current planner statistics, as on a database autovacuum keeps
        # (without them a filtered list is planned for an empty table).
        orrery_it.psql(p.dsn, "ANALYZE")
        big_first = os.environ.get("GX_BENCH_BIG_FIRST") == "1"
        if big and big_first:
            add_big(p, tid, big)
        p1 = p.http("GET", "/api/v1/instances?limit=50", token=tok).json()
        st = "/api/v1/instances?state=waiting,failed&limit=50"
        st1, st1d = (p.http("GET", st + o, token=tok).json() for o in ("", "&order=desc"))
        paths = {
            "default": "/api/v1/instances?limit=50",
            "task desc": f"/api/v1/instances?task_id={tid}&order=desc&limit=50",
            "state": st,
            "state desc": st + "&order=desc",
            "failures": "/api/v1/instances?state=failed,timed_out&order=desc&limit=8",
            "search": "/api/v1/instances?q=hourly&limit=50",
            "search desc": "/api/v1/instances?q=hourly&order=desc&limit=50",
            "page 2": "/api/v1/instances?limit=50&page_token="
                      + urllib.parse.quote(p1["next_page_token"]),
            "state p2": st + "&page_token=" + urllib.parse.quote(st1["next_page_token"]),
            "state desc p2": st + "&order=desc&page_token="
                             + urllib.parse.quote(st1d["next_page_token"]),
            "range desc": "/api/v1/instances?from=2026-01-20T00:00:00Z&to=2026-02-01T00:00:00Z"
                          "&order=desc&limit=50",
            # The console's instance page: pages of 1,000, newest first,
            # asked again every 5 s while it is open.
            "console 1000": "/api/v1/instances?order=desc&limit=1000",
            # Floors: the same call and statement for one row, and a call
            # that halleyd answers from its task cache (no statement).
            "1 row": "/api/v1/instances?limit=1",
            "a task": f"/api/v1/tasks/{tid}",
        }
        only = [x for x in os.environ.get("GX_BENCH_LISTS", "").split(",") if x]
        perf_list = os.environ.get("GX_BENCH_PERF_LIST", "default")
        for name in only + [perf_list]:
            if name not in paths:
                sys.exit(f"cpu.py: no list {name!r}; the lists: {', '.join(paths)}")
        if only:
            paths = {k: v for k, v in paths.items() if k in only or k == "default"}
        gx = [p.galaxy_procs[0].pid]
        hl = [p.procs[0].pid]
        pg = pg_backends(pg_port)
        base = f"http://127.0.0.1:{p.galaxy_ports[0]}"
        cores = len(os.sched_getaffinity(0))
        print(f"wrk -t1 -c{conns} -d{seconds}s; cache off; galaxyd {threads} HTTP threads; "
              f"{2000 + (big if big_first else 0):,} instances; "
              f"load {os.getloadavg()[0]:.1f}")
        print(f"  {'list':13s} {'req/s':>8s} {'p99 ms':>7s}  CPU us/request: "
              f"{'galaxyd':>8s} {'halleyd':>8s} {'postgres':>8s} {'total':>8s}  "
              f"(+ wrk's own; the rate the four allow on {cores} cores)")
        for name, path in paths.items():
            assert p.http("GET", path, token=tok).status == 200, path
            wrk(base + path, tok, 1, conns)  # warm-up
            rec = perf_start(gx, hl, pg_backends(pg_port), seconds) if name == perf_list else []
            # the scrapes (two statements each) stay out of the CPU and
            # switches counted for the run
            r0 = rpc_workers(p.halley_metrics_port)
            s0 = [switches(gx), switches(hl), switches(pg_backends(pg_port))]
            c0 = [cpu_s(gx), cpu_s(hl), cpu_s(pg_backends(pg_port))]
            w0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            n, rps, p99, bad = wrk(base + path, tok, seconds, conns)
            w1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            c1 = [cpu_s(gx), cpu_s(hl), cpu_s(pg_backends(pg_port))]
            s1 = [switches(gx), switches(hl), switches(pg_backends(pg_port))]
            r1 = rpc_workers(p.halley_metrics_port)
            for r in rec:
                r.wait(timeout=seconds + 60)
            us = [(b - a) * 1e6 / max(n, 1) for a, b in zip(c0, c1)]
            sw = [(b - a) / max(n, 1) for a, b in zip(s0, s1)]
            wrk_us = ((w1.ru_utime + w1.ru_stime) - (w0.ru_utime + w0.ru_stime)) * 1e6 / max(n, 1)
            bound = cores * 1e6 / max(sum(us) + wrk_us, 1)
            # halleyd's workers: their busy seconds per second of the run
            # (wrk's requests over its rate) and queue; behind the gate
            # about 1.00 means the waiting worker was seldom back to wait,
            # above it let-in workers ran beside it; and the wake-ups past
            # the gate a request
            busy = (r1[0] - r0[0]) / max(n / max(rps, 1e-9) * r1[2], 1e-9)
            lets = (r1[1] - r0[1]) / max(n, 1)
            if name == "default":
                default_rps = rps
            print(f"  {name:13s} {rps:8.0f} {p99:7.1f}  {'':15s} {us[0]:8.0f} {us[1]:8.0f} "
                  f"{us[2]:8.0f} {sum(us):8.0f}  wrk {wrk_us:4.0f}  bound {bound:6.0f}/s  "
                  f"switches/request {sw[0]:.1f} {sw[1]:.1f} "
                  f"{sw[2]:.1f}  halleyd workers busy {busy:.2f}, let-ins/request {lets:.3f}  "
                  f"non-2xx {bad}  load {os.getloadavg()[0]:.1f}",
                  flush=True)
        print(f"  peak RSS (VmHWM), MB: galaxyd {peak_mb(gx[0])}, halleyd {peak_mb(hl[0])}")
        del pg
        # The floor: the default page's SQL alone through pgbench.
        tps, pg_us, pb_us = pgbench_floor(
            p, pg_port, lambda: p.http("GET", paths["default"], token=tok), seconds)
        print(f"  pgbench, the default page's SQL alone (-M prepared, 8 clients): {tps:.0f} tps, "
              f"CPU us/query: postgres {pg_us:.0f}, pgbench {pb_us:.0f}; galaxyd's default page "
              f"above / pgbench: {default_rps / tps:.2f}  load {os.getloadavg()[0]:.1f}", flush=True)
        if big and not big_first:
            add_big(p, tid, big)
            print(f"\nwith {big:,} more instances:")
            for name, path in paths.items():
                took = []
                for _ in range(5):
                    t0 = time.time()
                    r = p.http("GET", path, token=tok)
                    took.append((time.time() - t0) * 1000)
                took.sort()
                print(f"  {name:13s} median {took[2]:8.1f} ms  max {took[-1]:8.1f} ms  "
                      f"status {r.status}  load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
