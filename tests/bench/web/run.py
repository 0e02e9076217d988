#!/usr/bin/env python3
"""run.py - the console's speed: the dashboard's cold load and the run grid.

Starts halleyd + galaxyd on a fresh database of the stack (ORRERY_PG_DSN
from `eval "$(deploy/stack.sh env)"`), serving the console built into
static/app (built first with `npm run build` in web/ unless --no-build),
and loads the data of the quickstart at scale through the API:

  - a workflow of 50 hourly tasks (chains of five: each task after the one
    before it in its chain) with 30 cycles backfilled: 1,500 instances;
  - 10 tasks every 5 minutes with 850 fire times each: 8,500 instances;

10,000 instances in all. Their outcomes are then set in SQL, as keplerd and
executord would have left them: finished over the last three days, about
90% success, 5% failed, 3% timed out, 2% killed, with their transitions
(ready, dispatched, running, the end: 40,000 rows); the newest two cycles of
the workflow still waiting or running.

It then runs measure.mjs (headless Chromium through playwright-core): ROUNDS
cold loads of /app/dashboard and of the workflow's run grid (30 cycles x 50
tasks), each in a fresh browser context, and prints the rounds and medians.
keplerd does not run: nothing moves while it measures.

usage: run.py BUILD_DIR [ROUNDS] [--no-build] [--explain]   (default 7 rounds)\n--explain also prints EXPLAIN ANALYZE of the two run-history statements.
Targets: dashboard ready < 400 ms, run grid rendered < 300 ms.
"""
import json
import re
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "integration", "lib"))
import orrery_it  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))
WORKFLOW = "bench-wf"


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def ok(r, what):
    if r.status not in (200, 201):
        raise SystemExit(f"{what}: {r}")
    return r.json()


def load(P, token):
    call = lambda m, p, b=None: P.http(m, p, b, token=token, timeout=120)  # noqa: E731
    now = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)
    ids = []
    for i in range(50):
        spec = {"name": f"bench.wf.t{i:02d}", "team": "bench", "type": "shell",
                "schedule": "0 * * * *", "timezone": "UTC", "config": {"command": "/bin/true"}}
        if i % 5:
            spec["upstreams"] = [{"kind": "strong", "task": f"bench.wf.t{i - 1:02d}"}]
        ids.append(ok(call("POST", "/api/v1/tasks", spec), "task")["id"])
    ok(call("PUT", f"/api/v1/workflows/{WORKFLOW}", {"team": "bench", "task_ids": ids}), "workflow")
    for t in ids:
        ok(call("POST", f"/api/v1/tasks/{t}/backfill",
                {"from": iso(now - timedelta(hours=29)), "to": iso(now + timedelta(minutes=1))}),
           "backfill")
    for i in range(10):
        spec = {"name": f"bench.load.{i:02d}", "team": "bench", "type": "shell",
                "schedule": "*/5 * * * *", "timezone": "UTC", "config": {"command": "/bin/true"}}
        t = ok(call("POST", "/api/v1/tasks", spec), "task")["id"]
        r = ok(call("POST", f"/api/v1/tasks/{t}/backfill",
                    {"from": iso(now - timedelta(minutes=5 * 849)),
                     "to": iso(now + timedelta(minutes=1))}), "backfill")
        assert len(r["created"]) == 850, len(r["created"])
    # Outcomes, as the scheduler and the executors would have left them.
    orrery_it.psql(P.dsn, """
        UPDATE instances i SET
          state = CASE WHEN i.schedule_time > now() - interval '90 minutes'
                        AND t.name LIKE 'bench.wf.%' THEN
                         (CASE WHEN random() < 0.5 THEN 'waiting' ELSE 'running' END)
                       ELSE (CASE WHEN r < 0.90 THEN 'success' WHEN r < 0.95 THEN 'failed'
                                  WHEN r < 0.98 THEN 'timed_out' ELSE 'killed' END) END,
          started_at = i.schedule_time + interval '1 minute',
          finished_at = CASE WHEN i.schedule_time > now() - interval '90 minutes'
                              AND t.name LIKE 'bench.wf.%' THEN NULL
                             ELSE i.schedule_time + interval '3 minutes' END,
          reason = '', updated_at = i.schedule_time + interval '3 minutes'
        FROM (SELECT id, random() AS r FROM instances) x, tasks t
        WHERE x.id = i.id AND t.id = i.task_id
    """)
    # Their transitions, as the timeline and the Gantt chart read them.
    orrery_it.psql(P.dsn, """
        INSERT INTO instance_transitions (instance_id, attempt, from_state, to_state, actor, at)
        SELECT i.id, 1, s.f, s.t, 'bench', i.schedule_time + s.after
        FROM instances i, LATERAL (VALUES
            ('waiting', 'ready', interval '10 seconds'),
            ('ready', 'dispatched', interval '40 seconds'),
            ('dispatched', 'running', interval '1 minute'),
            ('running', i.state, interval '3 minutes')) s(f, t, after)
        WHERE i.state <> 'waiting' AND (s.f <> 'running' OR i.state <> 'running')
    """)
    orrery_it.psql(P.dsn, "ANALYZE")
    return subprocess.run(["psql", P.dsn, "-qAtc", "SELECT count(*) FROM instances"], check=True,
                          capture_output=True, text=True).stdout.strip()


def statement(name):
    """The text of hl_api_history.c's statement `name` (its string literals
    joined, HL_WF_TASKS and HL_MS expanded), for EXPLAIN."""
    src = open(os.path.join(ROOT, "server", "halley", "hl_api_history.c")).read()

    def join(body):
        out = []
        for m in re.finditer(r'HL_MS\("([^"]*)"\)|"((?:[^"\\]|\\.)*)"|(HL_WF_TASKS)', body):
            if m.group(1) is not None:
                out.append(f"(extract(epoch from {m.group(1)}) * 1000)::int8")
            elif m.group(3):
                out.append(join(re.search(r"#define HL_WF_TASKS(.*?)\n\n", src, re.S).group(1)))
            else:
                out.append(m.group(2))
        return "".join(out)

    return join(re.search(r"static hl_stmt " + name + r" = HL_STMT\((.*?)\);", src, re.S).group(1))


def explain(P, name, params):
    sql = statement(name)
    for i, v in reversed(list(enumerate(params, 1))):
        sql = sql.replace(f"${i}", v)
    return subprocess.run(["psql", P.dsn, "-qAtc", "EXPLAIN (ANALYZE, BUFFERS) " + sql], check=True,
                          capture_output=True, text=True).stdout


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        raise SystemExit(__doc__)
    build, rounds = args[0], int(args[1]) if len(args) > 1 else 7
    if "--no-build" not in sys.argv:
        subprocess.run(["npm", "run", "build", "--silent"], cwd=os.path.join(ROOT, "web"),
                       check=True, stdout=subprocess.DEVNULL)
    with orrery_it.Platform(build) as P:
        P.add_user("bench", "bench-password-1", "admin", teams=["bench"])
        token = P.login("bench", "bench-password-1")
        t0 = time.time()
        n = load(P, token)
        print(f"loaded {n} instances in {time.time() - t0:.1f} s", file=sys.stderr)
        r = subprocess.run(["node", os.path.join(HERE, "measure.mjs"), P.base, token, WORKFLOW,
                            str(rounds)], capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise SystemExit(f"measure.mjs: {r.stderr}")
        out = json.loads(r.stdout)
        load1 = os.getloadavg()[0]
        if "--explain" in sys.argv:
            cyc = subprocess.run(["psql", P.dsn, "-qAtc", "SELECT (extract(epoch from max(schedule_time))"
                                  " * 1000)::int8 - 3600000 FROM instances"], check=True,
                                 capture_output=True, text=True).stdout.strip()
            print("EXPLAIN ListWorkflowRuns (30 cycles):\n" +
                  explain(P, "q_runs", [f"'{WORKFLOW}'", "31", "0"]))
            print("EXPLAIN GetWorkflowRun (one cycle):\n" +
                  explain(P, "q_run", [f"'{WORKFLOW}'", cyc]))
        print(json.dumps(out, indent=1))
        md, mg = out["median"]["dashboard"], out["median"]["grid"]
        fd, fg = out["min"]["dashboard"], out["min"]["grid"]
        print(f"dashboard cold load: ready {md['ready']} ms (median of {rounds}; "
              f"DOMContentLoaded {md['dom_content_loaded']} ms, first paint {md['fcp']} ms, "
              f"{md['requests']} requests, {md['kbytes']} KB, slowest API call "
              f"{md['slowest_api_ms']} ms); fastest round {fd['ready']} ms")
        print(f"run grid {int(mg['cells'] or 0)} cells: ready {mg['ready']} ms from navigation, "
              f"rendered in {mg['grid_render']} ms after its answer (median of {rounds}; "
              f"slowest API call {mg['slowest_api_ms']} ms); fastest round {fg['ready']} ms, "
              f"rendered in {fg['grid_render']} ms")
        print(f"load average (1 min) at the end: {load1:.2f}")


if __name__ == "__main__":
    main()
