"""test_input.py - galaxyd refuses malformed input as a class, on every route.

The routes come from the OpenAPI document galaxyd serves, so a new route is
covered as soon as it is documented. With an admin's token (so refusals come
from input checks, not from authorisation), for every operation:

  - every integer path parameter written leniently ("+1", " 1", "01", "1 ",
    "0x1", "-1", "1e3", 20 digits, "0") is a 400 naming that parameter,
    while a plain "1" is not refused for it;
  - every name path parameter that breaks the name rule (a NUL, a control
    character, ".", "..", leading or trailing space, 129 characters) is a
    400 naming it, and nothing is created under the cut name;
  - every query parameter (documented or not) holding invalid UTF-8, a NUL
    or a control character is a 400 naming it, before halleyd sees it;
  - integer query parameters written leniently, and unknown values of
    enumerated and boolean parameters, are a 400 naming them;
  - a JSON body without Content-Type, or with another type, is a 415;
  - a 401 carries WWW-Authenticate, a 405 carries Allow, and API answers
    carry Cache-Control: no-store;
  - oversize requests (hundreds to thousands of query arguments, a long
    target, many or large headers), with or without a token, get an answer:
    414 or 431 with a JSON error within the documented limits and beyond
    them, up to what the HTTP library itself refuses (then still an
    answer, never a dropped or hanging connection); and galaxyd still
    serves afterwards.

Usage: test_input.py BUILD_DIR (the stack of deploy/test.sh).
"""
import json
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
FAILURES = []
CHECKS = [0]


def check(ok, what):
    CHECKS[0] += 1
    if not ok:
        print("FAIL - " + what, flush=True)
        FAILURES.append(what)


def raw(port, method, target, headers=None, body=b""):
    """One request with the target sent byte for byte (urllib would quote it)."""
    hdrs = {"Host": "127.0.0.1", "Connection": "close"}
    hdrs.update(headers or {})
    if body or method in ("POST", "PUT", "PATCH"):
        hdrs["Content-Length"] = str(len(body))
    head = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        try:
            s.sendall(head.encode("latin-1") + b"\r\n" + body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered before it read everything: the answer is what counts
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    if not data:
        return 0, {}, b""  # no answer at all: a dropped connection
    head, _, payload = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    out = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        out[k.strip().lower()] = v.strip()
    if out.get("transfer-encoding") == "chunked":
        body_out, rest = b"", payload
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            n = int(size_line.split(b";")[0], 16)
            if n == 0:
                break
            body_out, rest = body_out + rest[:n], rest[n + 2:]
        payload = body_out
    return status, out, payload


def error_field(payload):
    try:
        return json.loads(payload)["error"].get("field")
    except (ValueError, KeyError, TypeError):
        return "<not a JSON error>"


def fill(path, values):
    for k, v in values.items():
        path = path.replace("{" + k + "}", v)
    return path


def main():
    with orrery_it.Platform(BUILD) as p:
        port = p.galaxy_ports[0]
        p.add_user("inputadmin", "input-admin-pw-1", "admin")
        token = p.login("inputadmin", "input-admin-pw-1")
        auth = {"Authorization": f"Bearer {token}"}
        jauth = dict(auth, **{"Content-Type": "application/json"})
        doc = p.http("GET", "/api/v1/openapi.json").json()

        ops = []
        for path, item in doc["paths"].items():
            common = [x for x in item.get("parameters", []) if isinstance(x, dict)]
            for method, op in item.items():
                if method == "parameters":
                    continue
                params = common + [x for x in op.get("parameters", []) if isinstance(x, dict)]
                ops.append((method.upper(), path, op, params))
        check(len(ops) > 30, f"the OpenAPI document lists the routes ({len(ops)})")

        def defaults(params):
            vals = {}
            for prm in params:
                if prm.get("in") != "path":
                    continue
                sch = prm.get("schema", {})
                if sch.get("enum"):
                    vals[prm["name"]] = str(sch["enum"][0])
                elif sch.get("type") == "integer":
                    vals[prm["name"]] = "1"
                else:
                    vals[prm["name"]] = "inputx"
            return vals

        def required_query(params, skip):
            """name=value of the required query parameters but skip."""
            out = []
            for prm in params:
                if prm.get("in") == "query" and prm.get("required") and prm["name"] != skip:
                    sch = prm.get("schema", {})
                    v = sch["enum"][0] if sch.get("enum") else (
                        "1" if sch.get("type") == "integer" else "x")
                    out.append(f"{prm['name']}={v}")
            return "".join("&" + x for x in out)

        def body_for(op):
            return b"{}" if "requestBody" in op else b""

        # ---- ids in paths ------------------------------------------------
        lenient = ["%2B1", "%201", "01", "1%20", "0x1", "-1", "1e3", "9" * 20, "0", "1.0"]
        for method, path, op, params in ops:
            for prm in params:
                if prm.get("in") != "path" or prm.get("schema", {}).get("type") != "integer":
                    continue
                for bad in lenient:
                    vals = defaults(params)
                    vals[prm["name"]] = bad
                    st, _, pl = raw(port, method, fill(path, vals), jauth, body_for(op))
                    check(st == 400 and error_field(pl) == prm["name"],
                          f"{method} {path} with {prm['name']}={bad!r}: want 400 naming "
                          f"{prm['name']}, got {st} field={error_field(pl)!r}")
                st, _, pl = raw(port, method, fill(path, defaults(params)), jauth, body_for(op))
                check(not (st == 400 and error_field(pl) == prm["name"]),
                      f"{method} {path} with {prm['name']}=1 is not refused as an id ({st})")

        # ---- names in paths ----------------------------------------------
        bad_names = ["x%00", "x%01y", "x%7F", ".", "..", "%2E%2E", "x%20", "%20x", "n" * 129,
                     "x%C3", "x%E2%80%8B%FF"]
        for method, path, op, params in ops:
            for prm in params:
                if prm.get("in") != "path" or prm.get("schema", {}).get("type") != "string" \
                        or prm.get("schema", {}).get("enum"):
                    continue
                for bad in bad_names:
                    vals = defaults(params)
                    vals[prm["name"]] = bad
                    st, _, pl = raw(port, method, fill(path, vals), jauth, body_for(op))
                    check(st == 400 and error_field(pl) in (prm["name"], "path"),
                          f"{method} {path} with {prm['name']}={bad!r}: want 400 naming it, "
                          f"got {st} field={error_field(pl)!r}")
        # Nothing was made under a cut name.
        for listing, key in (("/api/v1/pools", "items"), ("/api/v1/workflows", "items"),
                             ("/api/v1/streams", "items"), ("/api/v1/datasources", "items")):
            st, _, pl = raw(port, "GET", listing, auth)
            names = [x.get("name") for x in json.loads(pl).get(key, [])] if st == 200 else []
            check(st == 200 and "x" not in names and "inputx" not in names,
                  f"{listing}: nothing created by refused names ({st} {names[:5]})")

        # ---- query text --------------------------------------------------
        for method, path, op, params in ops:
            if method != "GET" or path in ("/healthz", "/metrics"):
                continue
            target = fill(path, defaults(params))
            names = [x["name"] for x in params if x.get("in") == "query"] + ["zz_unknown"]
            for name in names:
                for bad in ("%FF%FE", "a%00b", "a%0Ab", "%C0%AF", "%ED%A0%80"):
                    st, _, pl = raw(port, "GET",
                                    f"{target}?{name}={bad}{required_query(params, name)}", auth)
                    check(st == 400 and error_field(pl) == name,
                          f"GET {path}?{name}={bad}: want 400 naming {name}, got {st} "
                          f"field={error_field(pl)!r}")

        # ---- integers, enums and booleans in queries ---------------------
        for method, path, op, params in ops:
            if method != "GET":
                continue
            target = fill(path, defaults(params))
            for prm in params:
                if prm.get("in") != "query":
                    continue
                sch = prm.get("schema", {})
                bads = []
                if sch.get("enum"):
                    bads = ["abc", "TRUE " if "true" in map(str, sch["enum"]) else "zz"]
                elif sch.get("type") == "integer":
                    bads = ["%2B5", "05", "%205", "5%20", "5x", ""]
                elif sch.get("type") == "boolean":
                    bads = ["abc", "yes", "2"]
                for bad in bads:
                    st, _, pl = raw(port, "GET", f"{target}?{prm['name']}={bad}"
                                    f"{required_query(params, prm['name'])}", auth)
                    check(st == 400 and error_field(pl) == prm["name"],
                          f"GET {path}?{prm['name']}={bad!r}: want 400 naming it, got {st} "
                          f"field={error_field(pl)!r}")

        # ---- Content-Type on body routes ---------------------------------
        for method, path, op, params in ops:
            rb = op.get("requestBody", {}).get("content", {})
            if "application/json" not in rb or path == "/api/v1/auth/login":
                continue
            target = fill(path, defaults(params))
            for ctype in (None, "text/plain", "application/jsonx"):
                hdrs = dict(auth)
                if ctype:
                    hdrs["Content-Type"] = ctype
                st, _, pl = raw(port, method, target, hdrs, b'{"name": "x"}')
                check(st == 415, f"{method} {path} with Content-Type {ctype}: want 415, got {st}")
        st, _, _ = raw(port, "POST", "/api/v1/auth/login", {},
                       json.dumps({"name": "inputadmin", "password": "x"}).encode())
        check(st == 415, f"login without Content-Type: want 415, got {st}")

        # ---- headers -----------------------------------------------------
        st, h, _ = raw(port, "GET", "/api/v1/tasks")
        check(st == 401 and h.get("www-authenticate", "").startswith("Bearer"),
              f"401 carries WWW-Authenticate ({st} {h.get('www-authenticate')!r})")
        st, h, _ = raw(port, "DELETE", "/api/v1/pools", auth)
        check(st == 405 and "GET" in h.get("allow", ""),
              f"405 carries Allow ({st} {h.get('allow')!r})")
        st, h, _ = raw(port, "GET", "/api/v1/tasks", auth)
        check(st == 200 and h.get("cache-control") == "no-store",
              f"an authenticated answer carries Cache-Control: no-store ({h.get('cache-control')!r})")

        # ---- oversize requests -----------------------------------------
        def args(n):
            return "&".join(f"p{i}=v" for i in range(n))

        for who, hdrs in (("anonymous", {}), ("admin", auth)):
            for n in (257, 450, 1000, 5000, 11000):
                st, h, pl = raw(port, "GET", f"/api/v1/tasks?{args(n)}", hdrs)
                check(st == 414 and error_field(pl) == "path",
                      f"{who}: {n} query arguments: want a JSON 414, got {st} {pl[:80]!r}")
            st, h, pl = raw(port, "GET", "/api/v1/tasks?q=" + "a" * 9000, hdrs)
            check(st == 414 and error_field(pl) == "path", f"{who}: a 9 kB target: JSON 414 ({st})")
            many = dict(hdrs, **{f"X-H{i}": "v" * 40 for i in range(150)})
            st, h, pl = raw(port, "GET", "/api/v1/tasks", many)
            check(st == 431 and error_field(pl) == "headers", f"{who}: 150 headers: JSON 431 ({st})")
            big = dict(hdrs, **{"X-Big": "v" * 40000})
            st, h, pl = raw(port, "GET", "/api/v1/tasks", big)
            check(st == 431 and error_field(pl) == "headers", f"{who}: a 40 kB header: JSON 431 ({st})")
            # Past the HTTP library's own memory: still an answer, not a drop.
            st, h, pl = raw(port, "GET", f"/api/v1/tasks?{args(40000)}", hdrs)
            check(st in (414, 431), f"{who}: a 400 kB target is answered 414/431 ({st})")
        st, _, _ = raw(port, "GET", f"/api/v1/tasks?{args(256)}", auth)
        check(st == 200, f"256 query arguments are within the limit ({st})")
        st, _, _ = raw(port, "GET", "/api/v1/tasks", auth)
        check(st == 200, f"galaxyd serves after the oversize requests ({st})")

    print(f"{CHECKS[0]} checks, {len(FAILURES)} failed", flush=True)
    if FAILURES:
        return 1
    print("PASS galaxy_it_input", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
