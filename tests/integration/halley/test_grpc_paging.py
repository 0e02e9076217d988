#!/usr/bin/python3
"""Paging of halleyd's growing lists as a stock gRPC client sees it: every
list walks in pages of page_size with opaque page_token / next_page_token and
returns each row exactly once, also while rows are added between pages; an
oversize page_size is clamped to 1000 (not refused), 0 is the default, a
negative one names page_size; a token only works for the list and order that
made it; the deprecated fields (limit, before_id) keep working.

usage: test_grpc_paging.py <build dir> <source dir>
"""
import sys

import grpc

from stockclient import Halley, check, finish, rpc_error, trailer

BASE_MS = 1700000000000
HOUR = 3600 * 1000


def walk(fn, make_req, rows_of, size, add_between=None):
    """All rows of a list in pages of size; add_between() runs after page 1."""
    rows, token, pages = [], "", 0
    while True:
        r = fn(make_req(size, token))
        got = rows_of(r)
        check(len(got) <= size, "a page holds at most page_size rows (%d)" % len(got))
        rows += got
        pages += 1
        if pages == 1 and add_between:
            add_between()
        token = r.next_page_token
        if not token or pages > 10000:
            return rows, pages


def check_list(h, name, fn, make_req, rows_of, want, size, add_between=None, other_token=None):
    rows, pages = walk(fn, make_req, rows_of, size, add_between)
    check(rows == want, "%s: pages of %d give every row once, in order (%d rows, %d pages)"
          % (name, size, len(rows), pages))
    # the token is opaque and bound to its list
    first = fn(make_req(size, ""))
    check(first.next_page_token != "", "%s: a first page with more rows has a token" % name)
    for bad in ["garbage", "123", "!!!!", other_token or "YXVkaXQKMQ"]:
        e = rpc_error(fn, make_req(size, bad))
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and
              trailer(e, "orr-field") == "page_token", "%s: token %r refused naming page_token"
              % (name, bad[:24]))
    e = rpc_error(fn, make_req(-1, ""))
    check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and
          trailer(e, "orr-field") == "page_size", "%s: negative page_size refused" % name)
    r = fn(make_req(1000000, ""))
    check(rows_of(r)[:len(want)] == want[:1000], "%s: oversize page_size is clamped, not refused"
          % name)
    r = fn(make_req(0, ""))
    check(len(rows_of(r)) > 0, "%s: page_size 0 is the default" % name)
    return first.next_page_token


def main():
    h = Halley(sys.argv[1], sys.argv[2])
    pb = h.pb
    try:
        h.method("CreateTeam")(pb.CreateTeamRequest(name="pg", actor="test"))
        # --- tasks, ascending id
        tids = []
        for i in range(7):
            spec = ('{"name":"pg_task_%d","team":"pg","type":"shell","schedule":"0 * * * *",'
                    '"config":{"command":"echo hi"}}' % i)
            tids.append(h.method("CreateTask")(pb.CreateTaskRequest(spec_json=spec,
                                                                   actor="test")).id)
        lt = h.method("ListTasks")
        extra = []

        def add_task():
            spec = ('{"name":"pg_task_late","team":"pg","type":"shell","schedule":"0 * * * *",'
                    '"config":{"command":"echo hi"}}')
            extra.append(h.method("CreateTask")(pb.CreateTaskRequest(spec_json=spec,
                                                                    actor="test")).id)
        rows, _ = walk(lt, lambda n, t: pb.ListTasksRequest(team="pg", page_size=n,
                                                            page_token=t),
                       lambda r: [x.id for x in r.tasks], 3, add_task)
        check(rows == tids + extra, "ListTasks: a task added between pages shows once, at the end")
        tids += extra
        task_token = check_list(
            h, "ListTasks", lt,
            lambda n, t: pb.ListTasksRequest(team="pg", page_size=n, page_token=t),
            lambda r: [x.id for x in r.tasks], tids, 3)

        # --- instances, both orders (tokens do not cross orders)
        tid = tids[0]
        h.method("CreateInstances")(pb.CreateInstancesRequest(instances=[
            pb.CreateInstance(task_id=tid, schedule_time_ms=BASE_MS + i * HOUR, actor="t")
            for i in range(8)]))
        li = h.method("ListInstances")
        asc = [x.id for x in li(pb.ListInstancesRequest(task_id=tid, page_size=100)).instances]
        check(len(asc) == 8, "ListInstances: 8 instances")
        asc_token = check_list(
            h, "ListInstances ascending", li,
            lambda n, t: pb.ListInstancesRequest(task_id=tid, page_size=n, page_token=t),
            lambda r: [x.id for x in r.instances], asc, 3, other_token=task_token)
        desc = [x.id for x in li(pb.ListInstancesRequest(task_id=tid, page_size=100,
                                                        descending=True)).instances]
        check_list(h, "ListInstances descending", li,
                   lambda n, t: pb.ListInstancesRequest(task_id=tid, page_size=n, page_token=t,
                                                        descending=True),
                   lambda r: [x.id for x in r.instances], desc, 3, other_token=asc_token)
        # No filter at all runs statements of its own (prepared, no optional
        # filters): the same rows (only tid has instances), in both orders.
        check_list(h, "ListInstances ascending, no filter", li,
                   lambda n, t: pb.ListInstancesRequest(page_size=n, page_token=t),
                   lambda r: [x.id for x in r.instances], asc, 3)
        check_list(h, "ListInstances descending, no filter", li,
                   lambda n, t: pb.ListInstancesRequest(page_size=n, page_token=t,
                                                        descending=True),
                   lambda r: [x.id for x in r.instances], desc, 3, other_token=asc_token)
        e = rpc_error(h.method("ListReadyInstances"), pb.ListReadyInstancesRequest(limit=-1))
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and
              trailer(e, "orr-field") == "limit", "ListReadyInstances: negative limit refused")
        h.method("ListReadyInstances")(pb.ListReadyInstancesRequest(limit=5000))
        check(True, "ListReadyInstances: limit 5000 is clamped, not refused")

        # --- code packages, newest first
        h.sql("INSERT INTO code_packages (name, sha256, size, source) SELECT 'pkg', "
              "lpad(to_hex(g), 64, '0'), g, 'file:///p' FROM generate_series(1, 9) g")
        lp = h.method("ListCodePackages")
        pk = [x.id for x in lp(pb.ListCodePackagesRequest(name="pkg", page_size=100)).packages]
        check(len(pk) == 9 and pk == sorted(pk, reverse=True), "ListCodePackages: newest first")
        check_list(h, "ListCodePackages", lp,
                   lambda n, t: pb.ListCodePackagesRequest(name="pkg", page_size=n, page_token=t),
                   lambda r: [x.id for x in r.packages], pk, 4, other_token=asc_token)
        r = lp(pb.ListCodePackagesRequest(name="pkg", limit=2))
        check([x.id for x in r.packages] == pk[:2], "ListCodePackages: deprecated limit works")
        r = lp(pb.ListCodePackagesRequest(name="pkg", limit=5000))
        check(len(r.packages) == 9, "ListCodePackages: oversize deprecated limit is clamped")

        # --- data units: newest bucket first, then business, interface
        h.sql("INSERT INTO sort_streams (name, spec) VALUES ('st', '{}')")
        h.sql("INSERT INTO data_units (stream, business, interface, bucket) SELECT 'st', "
              "'b' || (g %% 3), 'if' || (g %% 2), to_timestamp((%d + (g / 6) * %d) / 1000.0) "
              "FROM generate_series(0, 29) g" % (BASE_MS, HOUR))
        lu = h.method("ListDataUnits")
        units = [(u.bucket_ms, u.business, u.interface) for u in
                 lu(pb.ListDataUnitsRequest(stream="st", page_size=100)).units]
        check(len(units) == 30 and
              units == sorted(units, key=lambda u: (-u[0], u[1], u[2])),
              "ListDataUnits: 30 units, newest bucket first")
        check_list(h, "ListDataUnits", lu,
                   lambda n, t: pb.ListDataUnitsRequest(stream="st", page_size=n, page_token=t),
                   lambda r: [(u.bucket_ms, u.business, u.interface) for u in r.units], units, 4,
                   other_token=task_token)
        r = lu(pb.ListDataUnitsRequest(stream="st", limit=7))
        check(len(r.units) == 7, "ListDataUnits: deprecated limit works")

        # --- audit: more than the maximum page, newest first
        h.sql("INSERT INTO audit_log (actor, action, object) SELECT 'bulk', 'x', 'obj/' || g "
              "FROM generate_series(1, 1100) g")
        la = h.method("ListAudit")
        r = la(pb.ListAuditRequest(actor="bulk", page_size=5000))
        check(len(r.entries) == 1000 and r.next_page_token,
              "ListAudit: page_size 5000 is clamped to 1000 with a next page")
        r2 = la(pb.ListAuditRequest(actor="bulk", page_size=5000, page_token=r.next_page_token))
        check(len(r2.entries) == 100 and not r2.next_page_token, "ListAudit: the last 100 follow")
        ids = [x.id for x in r.entries] + [x.id for x in r2.entries]
        check(len(set(ids)) == 1100 and ids == sorted(ids, reverse=True),
              "ListAudit: 1100 entries once each, newest first")
        r = la(pb.ListAuditRequest(actor="bulk"))
        check(len(r.entries) == 100, "ListAudit: page_size 0 = 100")
        r = la(pb.ListAuditRequest(actor="bulk", page_size=5, before_id=ids[10]))
        check([x.id for x in r.entries] == ids[11:16], "ListAudit: deprecated before_id works")

        def add_audit():
            h.sql("INSERT INTO audit_log (actor, action, object) VALUES ('bulk', 'x', 'late')")
        rows, _ = walk(la, lambda n, t: pb.ListAuditRequest(actor="bulk", page_size=n,
                                                            page_token=t),
                       lambda r: [x.id for x in r.entries], 400, add_audit)
        check(rows == ids, "ListAudit: an entry added between pages neither repeats nor shifts")
    finally:
        h.close()
    return finish("test_grpc_paging")


if __name__ == "__main__":
    sys.exit(main())
