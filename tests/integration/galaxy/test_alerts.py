#!/usr/bin/env python3
"""test_alerts.py - galaxyd's alert routes against real halleyd and
PostgreSQL: channels (secrets go in and never come out, kept on a PUT that
leaves them out), rules (the defaults of a new one, a PUT that merges),
silences (a duration, a past end refused, a developer's only team), the
test message of a channel through the outbox, the history with its
deliveries (raises grouped into one alert), deletes (a channel a rule uses
is 409), team ownership (another team's developer is refused and nothing
changes), and bad input on every route (400 naming the field).

usage: test_alerts.py BUILD_DIR
"""
import datetime
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import orrery_it  # noqa: E402

BUILD = None
P = None
TOK = {}


def setUpModule():
    global P
    P = orrery_it.Platform(BUILD).__enter__()
    P.add_user("root", "root-password-1", "admin")
    P.add_user("ann", "ann-password-1", "developer", teams=["alr"])
    P.add_user("bob", "bob-password-1", "developer", teams=["alr2"])
    P.add_user("vic", "vic-password-1", "viewer", teams=["alr"])
    for u in ("root", "ann", "bob", "vic"):
        TOK[u] = P.login(u, f"{u}-password-1")


def tearDownModule():
    if P:
        P.__exit__(None, None, None)


def raise_alert(rule, event, key, instance=0):
    """Raise as keplerd's evaluation would (see gx_it_rpc.c)."""
    r = subprocess.run([os.path.join(BUILD, "bin", "gx_it_rpc"), f"127.0.0.1:{P.halley_port}",
                        P.token, "raise-alert", str(rule), event, key, str(instance)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"raise-alert: {r.stderr}")


HOOK = {"name": "alr-hook", "team": "alr", "kind": "webhook",
        "config": {"url": "https://hooks.example/alr", "secret": "very-secret-hmac",
                   "headers": {"X-Team": "alr"}}}
MAIL = {"name": "alr-mail", "team": "alr", "kind": "email",
        "config": {"smtp_url": "smtp://mail.example:587", "starttls": True, "username": "bot",
                   "password": "mail-pass-77", "from": "orrery@example.org",
                   "to": ["alr@example.org"]}}


class Alerts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        r = P.http("POST", "/api/v1/alert-channels", HOOK, token=TOK["ann"])
        assert r.status == 201, r
        cls.hook = r.json()["id"]
        r = P.http("POST", "/api/v1/alert-channels", MAIL, token=TOK["ann"])
        assert r.status == 201, r
        cls.mail = r.json()["id"]

    def field(self, r, status, field):
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.json()["error"]["field"], field, r)

    def rule(self, name, **kw):
        body = {"name": name, "team": "alr", "scope_kind": "workflow", "scope": "alr-daily",
                "events": ["failed"], "channels": [Alerts.hook, Alerts.mail]}
        body.update(kw)
        r = P.http("POST", "/api/v1/alert-rules", body, token=TOK["ann"])
        self.assertEqual(r.status, 201, r)
        return r.json()

    # ------------------------------------------------------------ channels

    def test_channel_secrets_never_come_back(self):
        for path in ("/api/v1/alert-channels", f"/api/v1/alert-channels/{Alerts.hook}",
                     f"/api/v1/alert-channels/{Alerts.mail}"):
            r = P.http("GET", path, token=TOK["vic"])
            self.assertEqual(r.status, 200, r)
            self.assertNotIn(b"very-secret-hmac", r.body)
            self.assertNotIn(b"mail-pass-77", r.body)
        c = P.http("GET", f"/api/v1/alert-channels/{Alerts.hook}", token=TOK["vic"]).json()
        self.assertTrue(c["secret_set"])
        self.assertTrue(c["config"]["secret_set"])
        self.assertNotIn("secret", c["config"])
        self.assertEqual(c["config"]["headers"], {"X-Team": "alr"})
        m = P.http("GET", f"/api/v1/alert-channels/{Alerts.mail}", token=TOK["vic"]).json()
        self.assertTrue(m["config"]["password_set"])
        self.assertNotIn("password", m["config"])
        # A PUT without the secret keeps it; the answer still hides it.
        r = P.http("PUT", f"/api/v1/alert-channels/{Alerts.hook}",
                   {"config": {"url": "https://hooks.example/alr2"}}, token=TOK["ann"])
        self.assertEqual(r.status, 200, r)
        self.assertNotIn(b"very-secret-hmac", r.body)
        self.assertTrue(r.json()["secret_set"])
        self.assertEqual(r.json()["config"]["url"], "https://hooks.example/alr2")
        self.assertEqual(r.json()["name"], "alr-hook")
        # Sending back what was read (secret_set included) changes nothing secret.
        r = P.http("PUT", f"/api/v1/alert-channels/{Alerts.hook}", r.json(), token=TOK["ann"])
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json()["secret_set"])
        # Nor in the database's config.
        out = subprocess.run(["psql", P.dsn, "-qAtc",
                              "SELECT config::text FROM alert_channels"],
                             capture_output=True, text=True, check=True).stdout
        self.assertNotIn("very-secret-hmac", out)
        self.assertNotIn("mail-pass-77", out)

    def test_channel_bad_input(self):
        def post(body):
            return P.http("POST", "/api/v1/alert-channels", body, token=TOK["ann"])
        base = {"name": "alr-bad", "team": "alr", "kind": "webhook",
                "config": {"url": "https://h.example/x"}}
        self.field(post(dict(base, kind="pager")), 400, "kind")
        self.field(post(dict(base, config={"url": "ftp://h/x"})), 400, "config.url")
        self.field(post(dict(base, config={})), 400, "config.url")
        self.field(post(dict(base, config={"url": "https://h/x", "timeout_s": 0})), 400,
                   "config.timeout_s")
        self.field(post({k: v for k, v in base.items() if k != "config"}), 400, "config")
        self.field(post(dict(base, name="bad name")), 400, "name")
        self.field(post(dict(base, colour="red")), 400, "colour")
        self.field(post(dict(base, config="x")), 400, "config")
        self.field(post(dict(base, kind="email", config={"smtp_url": "smtp://m:25",
                                                         "from": "a@b.example"})),
                   400, "config.to")
        self.field(post(dict(base, kind="email", config={"smtp_url": "http://m:25",
                                                         "from": "a@b.example",
                                                         "to": ["x@y.example"]})),
                   400, "config.smtp_url")
        self.field(post(dict(base, kind="chat", config={"url": "https://c/x",
                                                        "format": "irc"})),
                   400, "config.format")
        self.field(post(dict(base, name="alr-hook")), 409, "name")
        self.field(post(dict(base, team="nosuchteam")), 403, "team")
        r = P.http("POST", "/api/v1/alert-channels", dict(base, team="nosuchteam"),
                   token=TOK["root"])
        self.field(r, 404, "team")
        self.field(P.http("GET", "/api/v1/alert-channels/999999", token=TOK["vic"]), 404, "id")
        self.field(P.http("GET", "/api/v1/alert-channels/abc", token=TOK["vic"]), 400, "id")
        self.field(P.http("PUT", f"/api/v1/alert-channels/{Alerts.hook}",
                          {"config": {"url": "nope"}}, token=TOK["ann"]), 400, "config.url")
        r = P.http("GET", "/api/v1/alert-channels?team=alr", token=TOK["vic"])
        self.assertEqual({c["name"] for c in r.json()["items"]}, {"alr-hook", "alr-mail"})

    def test_another_team_is_refused(self):
        r = P.http("PUT", f"/api/v1/alert-channels/{Alerts.hook}",
                   {"config": {"url": "https://evil.example/"}}, token=TOK["bob"])
        self.field(r, 403, "team")
        # A developer cannot move a channel into a team that is not theirs.
        r = P.http("PUT", f"/api/v1/alert-channels/{Alerts.hook}", {"team": "alr2"},
                   token=TOK["ann"])
        self.assertEqual(r.status, 403, r)
        c = P.http("GET", f"/api/v1/alert-channels/{Alerts.hook}", token=TOK["vic"]).json()
        self.assertEqual(c["team"], "alr")
        self.assertNotIn("evil", c["config"]["url"])
        r = P.http("POST", "/api/v1/alert-rules",
                   {"name": "alr-sneaky", "team": "alr", "scope_kind": "task", "scope": "*",
                    "events": ["failed"], "channels": [Alerts.hook]}, token=TOK["bob"])
        self.assertEqual(r.status, 403, r)
        r = P.http("GET", "/api/v1/alert-rules", token=TOK["root"])
        self.assertNotIn("alr-sneaky", [x["name"] for x in r.json()["items"]])
        self.assertEqual(P.http("POST", f"/api/v1/alert-channels/{Alerts.hook}/test", {},
                                token=TOK["vic"]).status, 403)

    # ------------------------------------------------------------ rules

    def test_rule_defaults_merge_and_bad_input(self):
        r = self.rule("alr-defaults")
        self.assertEqual((r["severity"], r["quiet_period_s"], r["group_window_s"], r["enabled"],
                          r["params"], r["created_by"]),
                         ("warning", 300, 1, True, {}, "user:ann"))
        r2 = P.http("PUT", f"/api/v1/alert-rules/{r['id']}",
                    {"severity": "critical", "quiet_period_s": 0}, token=TOK["ann"])
        self.assertEqual(r2.status, 200, r2)
        got = P.http("GET", f"/api/v1/alert-rules/{r['id']}", token=TOK["vic"]).json()
        self.assertEqual((got["severity"], got["quiet_period_s"], got["events"],
                          got["channels"], got["scope"]),
                         ("critical", 0, ["failed"], [Alerts.hook, Alerts.mail], "alr-daily"))

        def post(**kw):
            body = {"name": "alr-bad-rule", "team": "alr", "scope_kind": "workflow",
                    "scope": "alr-daily", "events": ["failed"], "channels": [Alerts.hook]}
            body.update(kw)
            return P.http("POST", "/api/v1/alert-rules", body, token=TOK["ann"])
        self.field(post(events=["failed", "exploded"]), 400, "events[1]")
        self.field(post(events=[]), 400, "events")
        self.field(post(events="failed"), 400, "events")
        self.field(post(events=[3]), 400, "events[0]")
        self.field(post(scope_kind="galaxy"), 400, "scope_kind")
        self.field(post(channels=[]), 400, "channels")
        self.field(post(channels=[987654]), 400, "channels[0]")
        self.field(post(channels=["x"]), 400, "channels[0]")
        self.field(post(quiet_period_s=86401), 400, "quiet_period_s")
        self.field(post(quiet_period_s="5m"), 400, "quiet_period_s")
        self.field(post(group_window_s=3601), 400, "group_window_s")
        self.field(post(severity="loud"), 400, "severity")
        self.field(post(params={"each_attempt": "yes"}), 400, "params.each_attempt")
        self.field(post(params={"unit_deadline_minutes": 10081}), 400,
                   "params.unit_deadline_minutes")
        self.field(post(params={"unit_deadline_minutes": "1h"}), 400,
                   "params.unit_deadline_minutes")
        self.field(post(events=["dirty_rows"]), 400, "params.dirty_rows")
        self.field(post(enabled="yes"), 400, "enabled")
        self.field(post(name="alr-defaults"), 409, "name")
        body = {"name": "alr-x", "team": "alr", "scope_kind": "task", "scope": "*",
                "events": ["failed"]}
        self.field(P.http("POST", "/api/v1/alert-rules", body, token=TOK["ann"]), 400, "channels")
        self.field(P.http("PUT", f"/api/v1/alert-rules/{r['id']}", {"events": ["nope"]},
                          token=TOK["ann"]), 400, "events[0]")
        self.field(P.http("GET", "/api/v1/alert-rules/999999", token=TOK["vic"]), 404, "id")
        self.field(P.http("GET", "/api/v1/alert-rules?enabled=maybe", token=TOK["vic"]), 400,
                   "enabled")
        # Nothing half-made: the refused rules are not there.
        names = [x["name"] for x in
                 P.http("GET", "/api/v1/alert-rules?team=alr", token=TOK["vic"]).json()["items"]]
        self.assertNotIn("alr-bad-rule", names)
        self.assertNotIn("alr-x", names)

    # ------------------------------------------------------------ silences

    def test_silences(self):
        rule = self.rule("alr-silenced")
        r = P.http("POST", "/api/v1/alert-silences",
                   {"rule_id": rule["id"], "duration": "2h", "reason": "maintenance"},
                   token=TOK["ann"])
        self.assertEqual(r.status, 201, r)
        s = r.json()
        self.assertEqual((s["rule_id"], s["team"], s["active"], s["reason"]),
                         (rule["id"], "alr", True, "maintenance"))
        raise_alert(rule["id"], "failed", "alr-silenced-1")
        items = P.http("GET", f"/api/v1/alerts?rule={rule['id']}", token=TOK["vic"]).json()["items"]
        self.assertEqual(len(items), 1)
        self.assertEqual((items[0]["state"], items[0]["deliveries"]), ("silenced", []))
        r = P.http("GET", "/api/v1/alert-silences?active=true", token=TOK["vic"])
        self.assertIn(s["id"], [x["id"] for x in r.json()["items"]])
        self.field(P.http("DELETE", f"/api/v1/alert-silences/{s['id']}", token=TOK["bob"]), 403,
                   "team")
        self.assertEqual(P.http("DELETE", f"/api/v1/alert-silences/{s['id']}",
                                token=TOK["ann"]).status, 204)
        self.field(P.http("DELETE", f"/api/v1/alert-silences/{s['id']}", token=TOK["ann"]), 404,
                   "id")
        # A scope silence takes the developer's only team.
        soon = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=3))
        r = P.http("POST", "/api/v1/alert-silences",
                   {"scope_kind": "workflow", "scope": "alr-daily",
                    "ends_at": soon.strftime("%Y-%m-%dT%H:%M:%SZ")}, token=TOK["ann"])
        self.assertEqual(r.status, 201, r)
        self.assertEqual((r.json()["team"], r.json()["rule_id"], r.json()["scope"]),
                         ("alr", None, "alr-daily"))

        def post(body, who="ann"):
            return P.http("POST", "/api/v1/alert-silences", body, token=TOK[who])
        self.field(post({"rule_id": rule["id"], "ends_at": "2020-01-01T00:00:00Z"}), 400,
                   "ends_at")
        self.field(post({"rule_id": rule["id"], "ends_at": "tomorrow"}), 400, "ends_at")
        self.field(post({"rule_id": rule["id"], "ends_at": "2099-01-01T00:00:00Z"}), 400,
                   "ends_at")
        self.field(post({"rule_id": rule["id"]}), 400, "ends_at")
        self.field(post({"rule_id": rule["id"], "duration": "forever"}), 400, "duration")
        self.field(post({"rule_id": rule["id"], "duration": "400d"}), 400, "duration")
        self.field(post({"rule_id": rule["id"], "duration": "1h",
                         "ends_at": "2099-01-01T00:00:00Z"}), 400, "duration")
        self.field(post({"duration": "1h"}), 400, "rule_id")
        self.field(post({"rule_id": rule["id"], "scope_kind": "team", "scope": "alr",
                         "duration": "1h"}), 400, "scope_kind")
        self.field(post({"scope_kind": "workflow", "duration": "1h"}), 400, "scope")
        self.field(post({"scope_kind": "planet", "scope": "x", "duration": "1h"}), 400,
                   "scope_kind")
        self.field(post({"rule_id": 999999, "duration": "1h"}), 404, "rule_id")
        self.field(post({"rule_id": rule["id"], "duration": "1h"}, who="bob"), 403, "team")
        self.field(post({"scope_kind": "team", "scope": "alr", "duration": "1h"}, who="bob"),
                   403, "team")

    # ------------------------------------------------------------ history

    def test_history_groups_raises_with_deliveries(self):
        rule = self.rule("alr-history", group_window_s=0)
        for i in range(5):
            raise_alert(rule["id"], "failed", "failed:workflow:alr-daily:1767225600000", 100 + i)
        raise_alert(rule["id"], "failed", "failed:workflow:alr-daily:1767229200000", 200)
        r = P.http("GET", f"/api/v1/alerts?rule={rule['id']}", token=TOK["vic"])
        self.assertEqual(r.status, 200, r)
        items = r.json()["items"]
        self.assertEqual([a["count"] for a in items], [1, 5])
        grouped = items[1]
        self.assertEqual((grouped["rule"], grouped["event"], grouped["state"], grouped["team"]),
                         ("alr-history", "failed", "open", "alr"))
        self.assertEqual(grouped["details"]["instance_ids"], [100, 101, 102, 103, 104])
        self.assertEqual(sorted(d["channel"] for d in grouped["deliveries"]),
                         ["alr-hook", "alr-mail"])
        for d in grouped["deliveries"]:
            self.assertEqual((d["state"], d["attempts"], d["seq"], d["delivered_at"]),
                             ("pending", 0, 1, None))
        # Paging, and the filters.
        r = P.http("GET", f"/api/v1/alerts?rule={rule['id']}&limit=1", token=TOK["vic"]).json()
        self.assertEqual(len(r["items"]), 1)
        r2 = P.http("GET", f"/api/v1/alerts?rule={rule['id']}&limit=1&page_token="
                    f"{r['next_page_token']}", token=TOK["vic"]).json()
        self.assertEqual(r2["items"][0]["count"], 5)
        self.assertIsNone(r2["next_page_token"])
        r = P.http("GET", f"/api/v1/alerts?rule={rule['id']}&since=2099-01-01T00:00:00Z",
                   token=TOK["vic"])
        self.assertEqual(r.json()["items"], [])
        self.field(P.http("GET", "/api/v1/alerts?state=loud", token=TOK["vic"]), 400, "state")
        self.field(P.http("GET", "/api/v1/alerts?event=exploded", token=TOK["vic"]), 400, "event")
        self.field(P.http("GET", "/api/v1/alerts?since=yesterday", token=TOK["vic"]), 400, "since")
        self.field(P.http("GET", "/api/v1/alerts?rule=abc", token=TOK["vic"]), 400, "rule")
        self.field(P.http("GET", "/api/v1/alerts?page_token=zz", token=TOK["vic"]), 400,
                   "page_token")

    def test_test_message_and_deletes(self):
        r = P.http("POST", f"/api/v1/alert-channels/{Alerts.mail}/test", {}, token=TOK["ann"])
        self.assertEqual(r.status, 201, r)
        delivery = r.json()["delivery_id"]
        items = P.http("GET", "/api/v1/alerts?event=test", token=TOK["vic"]).json()["items"]
        mine = [a for a in items if any(d["id"] == delivery for d in a["deliveries"])]
        self.assertEqual(len(mine), 1)
        self.assertEqual((mine[0]["rule_id"], mine[0]["team"], mine[0]["deliveries"][0]["channel"],
                          mine[0]["deliveries"][0]["state"]),
                         (None, "alr", "alr-mail", "pending"))
        self.field(P.http("POST", "/api/v1/alert-channels/999999/test", {}, token=TOK["ann"]),
                   404, "id")
        # A channel a rule sends to cannot go; the rule can, then the channel.
        r = P.http("POST", "/api/v1/alert-channels",
                   {"name": "alr-tmp", "team": "alr", "kind": "chat",
                    "config": {"url": "https://chat.example/tmp", "format": "slack"}},
                   token=TOK["ann"])
        self.assertEqual(r.status, 201, r)
        ch = r.json()["id"]
        rule = self.rule("alr-tmp-rule", channels=[ch])
        r = P.http("DELETE", f"/api/v1/alert-channels/{ch}", token=TOK["ann"])
        self.assertEqual(r.status, 409, r)
        self.assertIn("alr-tmp-rule", r.json()["error"]["message"])
        self.assertEqual(P.http("DELETE", f"/api/v1/alert-rules/{rule['id']}",
                                token=TOK["ann"]).status, 204)
        self.assertEqual(P.http("DELETE", f"/api/v1/alert-channels/{ch}",
                                token=TOK["ann"]).status, 204)
        self.field(P.http("DELETE", f"/api/v1/alert-channels/{ch}", token=TOK["ann"]), 404, "id")
        self.field(P.http("DELETE", f"/api/v1/alert-rules/{rule['id']}", token=TOK["ann"]), 404,
                   "id")


if __name__ == "__main__":
    BUILD = sys.argv.pop(1)
    unittest.main(verbosity=2)
