#!/usr/bin/env python3
"""test_nginx.py - the real nginx in front of two galaxyd, rendered from
deploy/nginx/orrery.conf: a session made through nginx keeps working when
one galaxyd dies, because galaxyd holds no session state.

usage: test_nginx.py BUILD_DIR
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = None
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


class Nginx(unittest.TestCase):
    def setUp(self):
        self.p = orrery_it.Platform(BUILD, galaxies=2).__enter__()
        self.addCleanup(self.p.__exit__, None, None, None)
        self.p.add_user("ann", "ann-password-1", "developer", teams=["etl"])
        self.prefix = tempfile.mkdtemp(prefix="orr-nginx-")
        self.addCleanup(shutil.rmtree, self.prefix, True)
        self.port = orrery_it.free_port()
        ups = [f"127.0.0.1:{p}" for p in self.p.galaxy_ports]
        subprocess.run([os.path.join(ROOT, "deploy", "nginx", "render.sh"), self.prefix,
                        f"127.0.0.1:{self.port}"] + ups, check=True, capture_output=True)
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        self.nginx = subprocess.Popen([nginx, "-p", self.prefix, "-c",
                                       os.path.join(self.prefix, "nginx.conf")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.addCleanup(self.stop_nginx)
        orrery_it.wait_port(self.port, self.nginx, "nginx")
        self.base = f"http://127.0.0.1:{self.port}"

    def stop_nginx(self):
        if self.nginx.poll() is None:
            self.nginx.send_signal(signal.SIGTERM)
            try:
                self.nginx.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.nginx.kill()
                self.nginx.wait()

    def get(self, path, **kw):
        return orrery_it.http(self.base, "GET", path, **kw)

    def test_session_survives_losing_a_galaxyd(self):
        r = orrery_it.http(self.base, "POST", "/api/v1/auth/login",
                           {"name": "ann", "password": "ann-password-1"})
        self.assertEqual(r.status, 200, r)
        cookie = {"Cookie": "orrery_session=" + r.json()["token"]}
        # Both copies answer through nginx (round robin).
        for _ in range(6):
            self.assertEqual(self.get("/api/v1/auth/me", headers=cookie).status, 200)
        # Kill one galaxyd hard; the session goes on through the other.
        victim = self.p.galaxy_procs[0]
        victim.kill()
        victim.wait()
        t0 = time.time()
        for _ in range(20):
            r = self.get("/api/v1/auth/me", headers=cookie)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json()["name"], "ann")
        # Not a speed requirement: nginx waiting on the dead upstream's
        # timeouts (60 s each by default) would blow this generous bound.
        self.assertLess(time.time() - t0, 15)
        r = orrery_it.http(self.base, "POST", "/api/v1/tasks",
                           {"name": "etl.via.nginx", "team": "etl", "type": "shell",
                            "config": {"command": "/bin/true"}}, headers=cookie)
        self.assertEqual(r.status, 201, r)
        # Security headers pass through nginx untouched.
        r = self.get("/healthz")
        self.assertEqual(r.headers["X-Content-Type-Options"], "nosniff")


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
