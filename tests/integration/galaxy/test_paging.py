"""test_paging.py - one keyset paging scheme for every REST list that can grow.

Every GET operation the OpenAPI document gives a page_token parameter is
walked, as a class: the test fills the lists first (pools, teams, data
sources, workflows, API tokens, tasks, instances, users, and the audit
entries all of that writes), then for each list

  - reads it whole (limit=1000) and page by page (limit=2, following
    next_page_token): the pages hold exactly the whole list, in the same
    order, no row twice, and the last page says null;
  - rows added between two pages do not make the walk repeat or skip the
    rows that were there before;
  - a page_token that is garbage, or that another list made, is a 400
    naming page_token; limit outside 1..1000 is a 400 naming limit.

Usage: test_paging.py BUILD_DIR (the stack of deploy/test.sh).
"""
import base64
import os
import sys
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
FAILURES = []
MAX_PAGES = 500  # bounds every walk


def check(ok, what):
    print(("ok   - " if ok else "FAIL - ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def main():
    with orrery_it.Platform(BUILD) as p:
        p.add_user("pgadmin", "pgadmin-password", "admin")
        tok = p.login("pgadmin", "pgadmin-password")

        def get(path, **q):
            url = path + ("?" + urllib.parse.urlencode(q) if q else "")
            return p.http("GET", url, token=tok)

        # ---- fill the lists --------------------------------------------------
        for i in range(5):
            assert p.http("POST", "/api/v1/teams", {"name": f"team{i}"}, token=tok).status == 201
            assert p.http("PUT", f"/api/v1/pools/pool{i}", {"capacity": i + 1},
                          token=tok).status == 200
            assert p.http("PUT", f"/api/v1/datasources/ds{i}",
                          {"kind": "postgresql", "params": {"host": "h"}}, token=tok).status == 200
            assert p.http("POST", "/api/v1/tokens", {"name": f"tok{i}"}, token=tok).status == 201
            assert p.http("POST", "/api/v1/users", {"name": f"user{i}", "password": "pw-123456",
                                                    "role": "viewer"}, token=tok).status == 201
        task_ids = []
        for i in range(5):
            r = p.http("POST", "/api/v1/tasks",
                       {"name": f"pg.task{i}", "team": "team0", "type": "shell",
                        "schedule": "0 * * * *", "timezone": "UTC",
                        "config": {"command": "/bin/true"}}, token=tok)
            assert r.status == 201, r
            task_ids.append(r.json()["id"])
            r = p.http("PUT", f"/api/v1/workflows/wf{i}", {"team": "team0", "task_ids": [r.json()["id"]]},
                       token=tok)
            assert r.status == 200, r
        for i in range(4):  # versions 2..5 of the first task: its version list pages
            r = p.http("PUT", f"/api/v1/tasks/{task_ids[0]}",
                       {"name": "pg.task0", "team": "team0", "type": "shell",
                        "schedule": "0 * * * *", "timezone": "UTC",
                        "config": {"command": f"/bin/true {i}"}}, token=tok)
            assert r.status == 200, r
        r = p.http("POST", f"/api/v1/tasks/{task_ids[0]}/backfill",
                   {"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T07:00:00Z"}, token=tok)
        assert r.status == 200, r

        doc = p.http("GET", "/api/v1/openapi.json").json()
        lists = []
        for path, item in doc["paths"].items():
            op = item.get("get")
            if op and any(x.get("name") == "page_token" for x in op.get("parameters", [])):
                lists.append(path)
        check(len(lists) >= 10, f"the document pages {len(lists)} lists")

        def walk(path, limit, between=None):
            rows, token, pages = [], None, 0
            while pages < MAX_PAGES:
                q = {"limit": limit}
                if token:
                    q["page_token"] = token
                r = get(path, **q)
                if r.status != 200:
                    return None, f"{r.status} {r.body[:120]!r}"
                body = r.json()
                rows += body["items"]
                pages += 1
                if between and pages == 1:
                    between()
                token = body.get("next_page_token")
                if token is None:
                    return rows, pages
            return None, "too many pages"

        tokens = {}
        for path in lists:
            target = path.replace("{name}", "nostream").replace("{id}", str(task_ids[0]))
            whole = get(target, limit=1000)
            if whole.status != 200:
                check(False, f"{path}: whole list ({whole})")
                continue
            full = whole.json()["items"]
            check(whole.json().get("next_page_token") is None,
                  f"{path}: a list of {len(full)} rows fits one page of 1000")
            rows, pages = walk(target, 2)
            check(rows == full, f"{path}: {len(full)} rows in {pages} pages of 2, same rows, same "
                  f"order")
            first = get(target, limit=1).json()
            if first.get("next_page_token"):
                tokens[path] = first["next_page_token"]
            for bad in ("0", "1001", "-1", "x"):
                r = get(target, limit=bad)
                check(r.status == 400 and r.json()["error"]["field"] == "limit",
                      f"{path}: limit={bad} is a 400 naming limit ({r.status})")
            garbage = base64.urlsafe_b64encode(b"nonsense:zz").decode().rstrip("=")
            for bad in ("garbage!", garbage):
                r = get(target, page_token=bad)
                check(r.status == 400 and r.json()["error"]["field"] == "page_token",
                      f"{path}: page_token={bad!r} is a 400 naming page_token ({r.status})")

        # A token is only good for the list that made it.
        pairs = [(a, b) for a in tokens for b in tokens if a != b]
        for a, b in pairs[:12]:
            r = get(b.replace("{name}", "nostream").replace("{id}", str(task_ids[0])),
                    page_token=tokens[a])
            check(r.status == 400 and r.json()["error"]["field"] == "page_token",
                  f"a token of {a} is refused by {b} ({r.status})")

        # Rows added between pages: the walk still holds every row that was
        # there before, once each.
        before = [x["name"] for x in get("/api/v1/pools", limit=1000).json()["items"]]

        def add_pools():
            for name in ("aaa-first", "pool2b", "zzz-last"):
                assert p.http("PUT", f"/api/v1/pools/{name}", {"capacity": 1},
                              token=tok).status == 200

        rows, _ = walk("/api/v1/pools", 2, between=add_pools)
        names = [x["name"] for x in rows]
        check(len(names) == len(set(names)), f"pools: no row twice across an insert ({names})")
        check(all(n in names for n in before), "pools: no row that was there is skipped")
        check("zzz-last" in names and "aaa-first" not in names,
              f"pools: a row after the position is seen, one before it is not ({names})")

    if FAILURES:
        print(f"{len(FAILURES)} failed", flush=True)
        return 1
    print("PASS galaxy_it_paging", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
