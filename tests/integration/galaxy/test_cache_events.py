#!/usr/bin/env python3
"""test_cache_events.py - a change made through one galaxyd is seen through
another at once, whatever the response cache holds.

Two galaxyd share one halleyd, both with a 60 s cache TTL, so an answer
cached by galaxyd B stays served for a minute unless halleyd's event stream
makes it stale. The test:

  - waits until B's cache is kept in step by the events
    (galaxy_http_cache_synced 1: until then the short fallback bound applies,
    which would explain a fresh answer by itself);
  - reads the instance list and one instance through B twice and checks the
    second read was a cache hit (B's hit counter went up, the answer is the
    same);
  - suspends the instance through galaxyd A, then reads through B: the list
    and the instance show "suspended" well before the TTL could have expired
    (polled only until the event arrives; the deadline, far below the TTL,
    only catches a missing invalidation), and B counted invalidations;
  - resumes it through A and checks B again;
  - pauses and resumes a workflow holding the task through A: A's list
    marks the instances at once (its own write), B's as soon as the event
    arrives (galaxyd keeps the paused tasks from the events as well).

Usage: test_cache_events.py BUILD_DIR (the stack of deploy/test.sh).
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
TTL_S = 60
DEADLINE_S = 20.0  # far below the TTL: only invalidation can explain a change
FAILURES = []


def check(ok, what):
    print(("ok   - " if ok else "FAIL - ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def metrics(base):
    text = orrery_it.http(base, "GET", "/metrics").body.decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r'galaxy_http_cache_total\{event="(\w+)"\} (\d+)', line)
        if m:
            out[m.group(1)] = int(m.group(2))
        m = re.match(r"galaxy_http_cache_synced (\d+)", line)
        if m:
            out["synced"] = int(m.group(1))
    return out


def main():
    os.environ["ORRERY_GALAXY_CACHE_TTL"] = f"{TTL_S}s"
    with orrery_it.Platform(BUILD, galaxies=2) as p:
        a = f"http://127.0.0.1:{p.galaxy_ports[0]}"
        b = f"http://127.0.0.1:{p.galaxy_ports[1]}"
        p.add_user("cacheadm", "cacheadm-password-1", "admin", teams=["cachet"])
        tok = p.login("cacheadm", "cacheadm-password-1")

        def req(base, method, path, body=None):
            return orrery_it.http(base, method, path, body=body, token=tok)

        r = req(a, "POST", "/api/v1/tasks", {"name": "cache_events.hourly", "team": "cachet",
                                              "type": "shell", "schedule": "0 * * * *",
                                              "config": {"command": "true"}})
        check(r.status in (200, 201), f"task created through A ({r.status})")
        tid = r.json()["id"]
        r = req(a, "POST", f"/api/v1/tasks/{tid}/backfill",
                {"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T03:00:00Z"})
        check(r.status == 200, f"backfill through A ({r.status})")

        t0 = time.time()
        while metrics(b).get("synced") != 1 and time.time() - t0 < DEADLINE_S:
            time.sleep(0.05)
        check(metrics(b).get("synced") == 1, "B's cache is kept in step by halleyd's events")

        list_path = f"/api/v1/instances?task_id={tid}&limit=50"
        items = req(b, "GET", list_path).json()["items"]
        check(len(items) == 3, f"B lists the 3 instances ({len(items)})")
        iid = items[0]["id"]
        one_path = f"/api/v1/instances/{iid}"
        state0 = req(b, "GET", one_path).json()["state"]
        # The backfill's own events may still be arriving: read until two
        # reads in a row were served from the cache (bounded in count).
        for _ in range(50):
            hits0 = metrics(b).get("hit", 0)
            again = req(b, "GET", list_path).json()["items"]
            one_again = req(b, "GET", one_path).json()["state"]
            hits1 = metrics(b).get("hit", 0)
            if hits1 - hits0 == 2:
                break
        check(hits1 - hits0 == 2 and again == items and one_again == state0,
              f"B answers both reads from its cache (hits {hits0} -> {hits1})")
        check(state0 == "waiting", f"the instance waits ({state0})")

        def seen_on_b(want):
            """Poll B until the list and the instance show want; seconds taken."""
            t0 = time.time()
            while time.time() - t0 < DEADLINE_S:
                lst = {x["id"]: x["state"] for x in req(b, "GET", list_path).json()["items"]}
                one = req(b, "GET", one_path).json()["state"]
                if lst.get(iid) == want and one == want:
                    return time.time() - t0
                time.sleep(0.02)
            return None

        for action, want in (("suspend", "suspended"), ("resume", "waiting")):
            inv0 = metrics(b).get("invalidate", 0)
            r = req(a, "POST", f"/api/v1/instances/{iid}/actions/{action}")
            check(r.status == 200, f"{action} through A ({r.status})")
            took = seen_on_b(want)
            check(took is not None,
                  f"B shows {want} after {action} through A"
                  + (f" ({took * 1000:.0f} ms, TTL {TTL_S} s)" if took is not None else ""))
            check(metrics(b).get("invalidate", 0) > inv0, "B's cache was invalidated by events")

        # A paused workflow marks its task's instances ("paused"): galaxyd
        # keeps the paused tasks from the events too. Through A (its own
        # write) and through B (the event), at once.
        r = req(a, "PUT", "/api/v1/workflows/cache_events_wf",
                {"team": "cachet", "task_ids": [tid]})
        check(r.status == 200, f"workflow made through A ({r.status})")
        for base in (a, b):  # both read and keep the map (nothing paused yet)
            lst = req(base, "GET", list_path).json()["items"]
            check(all(x["paused"] is None for x in lst), "nothing paused yet")
        for action, want in (("pause", True), ("resume", False)):
            r = req(a, "POST", f"/api/v1/workflows/cache_events_wf/{action}", {})
            check(r.status == 200, f"{action} the workflow through A ({r.status})")
            lst = req(a, "GET", list_path).json()["items"]
            check(all((x["paused"] is not None) == want for x in lst),
                  f"A shows its own {action} at once")
            t0 = time.time()
            while time.time() - t0 < DEADLINE_S:
                lst = req(b, "GET", list_path).json()["items"]
                if all((x["paused"] is not None) == want for x in lst):
                    break
                time.sleep(0.02)
            check(all((x["paused"] is not None) == want for x in lst),
                  f"B shows the {action} after its event ({(time.time() - t0) * 1000:.0f} ms)")

        # What B itself caches after the change is served from the cache
        # again. An event still on its way (the resume's) may make the first
        # pair's entry stale between its two reads: read pairs until one
        # read was a hit (bounded in count, as above).
        for _ in range(50):
            hits0 = metrics(b).get("hit", 0)
            req(b, "GET", list_path)
            req(b, "GET", list_path)
            hits1 = metrics(b).get("hit", 0)
            if hits1 > hits0:
                break
        check(hits1 > hits0, "B caches again once in step")
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        sys.exit(1)
    print("all passed")


if __name__ == "__main__":
    main()
