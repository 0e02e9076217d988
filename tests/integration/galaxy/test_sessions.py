"""test_sessions.py - a session ends at once on every galaxyd.

Two galaxyd share one halleyd. For each way a session ends - logout, a
password change, a role or team change by an admin, the user disabled -
the test ends it through one galaxyd and checks that:

  - that galaxyd refuses the old token at once (its own logout) or as soon
    as the event arrives (a change by an admin);
  - the other galaxyd refuses it too (polled: the event stream's delay is
    the documented staleness bound; the deadline only catches a hang);
  - the user's other sessions end with it where they should, and a new
    login works with what is now true (new role, new password).

Then halleyd is stopped: galaxyd says its sessions are no longer kept from
events (/healthz "sessions": "asking") and refuses to vouch for a token
(503, not 200); a session ended while galaxyd B was cut off from the events
is refused by B once halleyd is back.

Usage: test_sessions.py BUILD_DIR (the stack of deploy/test.sh).
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
DEADLINE_S = 30.0  # only to fail rather than hang
FAILURES = []


def check(ok, what):
    print(("ok   - " if ok else "FAIL - ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def main():
    with orrery_it.Platform(BUILD, galaxies=2) as p:
        a = f"http://127.0.0.1:{p.galaxy_ports[0]}"
        b = f"http://127.0.0.1:{p.galaxy_ports[1]}"

        def req(base, method, path, body=None, token=None):
            return orrery_it.http(base, method, path, body=body, token=token)

        def me(base, token):
            return req(base, "GET", "/api/v1/auth/me", token=token).status

        def login(base, name, password):
            r = req(base, "POST", "/api/v1/auth/login", {"name": name, "password": password})
            return r.json()["token"] if r.status == 200 else r.status

        def refused_on(base, token, what):
            """Poll until base refuses token (401); the time it took is printed."""
            t0 = time.time()
            while time.time() - t0 < DEADLINE_S:
                st = me(base, token)
                if st == 401:
                    check(True, f"{what} (after {1000 * (time.time() - t0):.0f} ms)")
                    return
                if st != 200:
                    break
                time.sleep(0.02)
            check(False, f"{what}: still answered {st} after {time.time() - t0:.1f} s")

        def synced(base):
            return req(base, "GET", "/healthz").json().get("sessions") == "events"

        def wait(cond, what):
            t0 = time.time()
            while time.time() - t0 < DEADLINE_S:
                if cond():
                    return True
                time.sleep(0.05)
            check(False, f"{what} (waited {DEADLINE_S:.0f} s)")
            return False

        p.add_user("admin1", "admin1-password", "admin")
        p.add_user("ann", "ann-password-1", "developer", teams=["etl"])
        p.add_user("bob", "bob-password-1", "viewer")
        wait(lambda: synced(a) and synced(b), "both galaxyd keep sessions from events")
        admin = login(a, "admin1", "admin1-password")

        # ---- logout ------------------------------------------------------
        t1 = login(a, "ann", "ann-password-1")
        other = login(b, "ann", "ann-password-1")
        check(me(a, t1) == 200 and me(b, t1) == 200, "a session works on both galaxyd")
        r = req(a, "POST", "/api/v1/auth/logout", token=t1)
        check(r.status == 200 and r.json().get("session_ended") is True,
              f"logout through A ends the session ({r})")
        check(me(a, t1) == 401, "A refuses the logged-out token at once")
        refused_on(b, t1, "B refuses the logged-out token")
        check(me(b, other) == 200 and me(a, other) == 200,
              "ann's other session is not ended by a logout")

        # ---- a role change by an admin -------------------------------------
        r = req(a, "PATCH", "/api/v1/users/ann", {"role": "viewer"}, token=admin)
        check(r.status == 200 and r.json()["role"] == "viewer", f"admin changes ann's role ({r})")
        refused_on(b, other, "B refuses ann's session after the role change")
        refused_on(a, other, "A refuses it too")
        t2 = login(b, "ann", "ann-password-1")
        r = req(b, "GET", "/api/v1/auth/me", token=t2)
        check(r.status == 200 and r.json()["role"] == "viewer", f"a new login has the new role ({r})")

        # ---- a team change -------------------------------------------------
        r = req(b, "PATCH", "/api/v1/users/ann", {"teams": []}, token=admin)
        check(r.status == 200 and r.json()["teams"] == [], f"admin clears ann's teams ({r})")
        refused_on(a, t2, "A refuses ann's session after the team change")

        # ---- one's own password --------------------------------------------
        t3 = login(a, "ann", "ann-password-1")
        t4 = login(b, "ann", "ann-password-1")
        r = req(b, "POST", "/api/v1/auth/password",
                {"old_password": "wrong-password", "new_password": "ann-password-2"}, token=t4)
        check(r.status == 403 and r.json()["error"]["field"] == "old_password",
              f"a wrong old password is refused ({r})")
        check(me(b, t4) == 200, "and ends nothing")
        r = req(b, "POST", "/api/v1/auth/password",
                {"old_password": "ann-password-1", "new_password": "ann-password-2"}, token=t4)
        check(r.status == 200 and "token" in r.json(), f"password changed through B ({r})")
        t5 = r.json().get("token") if r.status == 200 else None
        check(me(b, t4) == 401, "B refuses the session that changed it at once")
        refused_on(a, t3, "A refuses ann's other session")
        refused_on(a, t4, "A refuses the session that changed it")
        check(me(a, t5) == 200 and me(b, t5) == 200, "the new session works on both")
        check(login(a, "ann", "ann-password-1") == 401, "the old password no longer logs in")
        check(isinstance(login(a, "ann", "ann-password-2"), str), "the new one does")

        # ---- a disabled user -----------------------------------------------
        tb = login(b, "bob", "bob-password-1")
        r = req(a, "PATCH", "/api/v1/users/bob", {"active": False}, token=admin)
        check(r.status == 200 and r.json()["active"] is False, f"admin disables bob ({r})")
        refused_on(b, tb, "B refuses the disabled user's session")
        check(login(a, "bob", "bob-password-1") == 401, "a disabled user cannot log in")
        r = req(a, "PATCH", "/api/v1/users/bob", {}, token=admin)
        check(r.status == 400, f"an empty change is refused ({r.status})")
        r = req(a, "PATCH", "/api/v1/users/bob", {"role": "root"}, token=admin)
        check(r.status == 400 and r.json()["error"]["field"] == "role", f"a bad role ({r})")
        r = req(a, "PATCH", "/api/v1/users/nobody", {"active": True}, token=admin)
        check(r.status == 404, f"an unknown user is 404 ({r.status})")
        r = req(a, "PATCH", "/api/v1/users/bob", {"active": True}, token=t5)
        check(r.status == 403, f"a viewer cannot change users ({r.status})")

        # ---- halleyd away: nothing is assumed --------------------------------
        keep = login(a, "ann", "ann-password-2")
        hl = p.procs[0]
        hl.send_signal(signal.SIGTERM)
        hl.wait(timeout=DEADLINE_S)
        wait(lambda: not synced(a) and not synced(b), "both galaxyd notice the stream is gone")
        st = me(a, keep)
        check(st == 503, f"with halleyd away a session is not vouched for (503, got {st})")
        env = p.halley_env()
        with open(os.path.join(p.tmp, "halleyd-2.log"), "ab") as out:
            hl2 = subprocess.Popen([p.bin("halleyd"), "serve"], env=env, stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        p.procs.append(hl2)
        orrery_it.wait_port(p.halley_port, hl2, "halleyd")
        # End the session through A as soon as halleyd answers, whatever B's
        # stream is doing: B must refuse it, by the load at its resync or by
        # asking halleyd while it is not in step.
        t0 = time.time()
        while time.time() - t0 < DEADLINE_S:
            r = req(a, "POST", "/api/v1/auth/logout", token=keep)
            if r.status == 200:
                break
            time.sleep(0.05)
        check(r.status == 200 and r.json().get("session_ended") is True,
              f"logout through A once halleyd is back ({r})")
        refused_on(b, keep, "B refuses a session ended while it was cut off")
        wait(lambda: synced(a) and synced(b), "both galaxyd keep sessions from events again")
        check(me(b, t5) == 200, "a live session still works on B")

    if FAILURES:
        print(f"{len(FAILURES)} failed", flush=True)
        return 1
    print("PASS galaxy_it_sessions", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
