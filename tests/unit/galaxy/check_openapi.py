#!/usr/bin/env python3
"""check_openapi.py - every galaxyd route is documented in static/openapi.json,
and the document names no route galaxyd lacks.

usage: check_openapi.py GALAXYD_BINARY OPENAPI_JSON
"""
import json
import subprocess
import sys


def main():
    galaxyd, path = sys.argv[1], sys.argv[2]
    out = subprocess.run([galaxyd, "routes"], check=True, capture_output=True, text=True).stdout
    routes = set()
    for line in out.splitlines():
        method, pattern, _role = line.split()
        routes.add((method.lower(), pattern))
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    assert doc.get("openapi", "").startswith("3."), "not an OpenAPI 3 document"
    documented = set()
    for p, item in doc["paths"].items():
        for method in ("get", "put", "post", "delete", "patch"):
            if method in item:
                op = item[method]
                assert op.get("summary"), f"{method.upper()} {p} has no summary"
                assert op.get("responses"), f"{method.upper()} {p} has no responses"
                documented.add((method, p))
    missing = sorted(routes - documented)
    extra = sorted(documented - routes)
    for m, p in missing:
        print(f"undocumented route: {m.upper()} {p}")
    for m, p in extra:
        print(f"documented but not served: {m.upper()} {p}")
    if missing or extra:
        return 1
    print(f"{len(routes)} routes, all documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
