// alerts.test.mjs - the Alerts pages in the browser, end to end: an admin
// makes a webhook channel pointing at a receiver this file starts on
// loopback, sends it a test message and sees it delivered; makes a rule on
// a task of this file that fails (its command is `false`, no retry) with
// the scope chosen by type-ahead; runs the task and sees the alert in the
// history with its delivery delivered and the signed message at the
// receiver; silences the rule from its row, runs the task again and sees
// the new alert recorded as silenced, with nothing sent; ends the silence
// and disables the rule; a viewer reads the pages and may change nothing.
// The designer shows the task spec's deadlines in a section of their own.
// Every page passes the accessibility check, at desktop width and at
// 390 px, where it fits without scrolling sideways.
//
// The names are this file's own (alerts_*, with the pid). A failure is
// made by construction (the command `false`), and "nothing sent" is read
// after the silenced alert is in the history: the sender would have sent it
// before the history showed it as silenced otherwise.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import { test } from 'node:test';
import { join } from 'node:path';
import { ADMIN, RUN_T, SHOTS, T, VIEWER, api, checkA11y, login, open, shot, until, useBrowser } from './lib.mjs';

useBrowser();

const SFX = `${process.pid}`;
const TASK = `alerts_fail_${SFX}`;
const CHANNEL = `alerts_hook_${SFX}`;
const RULE = `alerts_rule_${SFX}`;
const SECRET = `alerts-secret-${SFX}`;
const made = {};

// The webhook receiver: every request kept with its headers and body.
const got = [];
const receiver = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    got.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{}');
  });
});

/** The messages of an event the receiver got, their signatures checked. */
function messages(event) {
  return got
    .map((m) => ({ ...m, json: JSON.parse(m.body) }))
    .filter((m) => m.json.event === event)
    .map((m) => {
      const want = `sha256=${createHmac('sha256', SECRET).update(m.body).digest('hex')}`;
      assert.equal(m.headers['x-orrery-signature'], want, 'the body is signed with the secret');
      assert.ok(m.headers['x-orrery-dedup-key'], 'a dedup key header');
      return m;
    });
}

async function narrow(page, name) {
  await page.setViewportSize({ width: 390, height: 844 });
  await until(async () => (await page.evaluate(() => document.documentElement.scrollWidth)) <= 390, `${name} fits 390 px`);
  await checkA11y(page, `${name} at 390 px`);
  await shot(page, `${name}-narrow`);
  await page.setViewportSize({ width: 1440, height: 900 });
}

/** Runs the task's instance of schedule time at, and waits for it to fail. */
async function runToFailure(page, at) {
  const r = await api(page, 'POST', `/tasks/${made.task}/run`, { schedule_time: at.toISOString(), ignore_upstreams: true });
  assert.ok(r.status === 200 || r.status === 201, JSON.stringify(r.body));
  const id = r.body.instance.id;
  await until(async () => (await api(page, 'GET', `/instances/${id}`)).body.state === 'failed', `instance ${id} failed`, RUN_T);
  return id;
}

test.before(async () => {
  await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  made.url = `http://127.0.0.1:${receiver.address().port}/hook`;
});
test.after(() => receiver.close());

test("the designer's deadlines: their own section, a wrong value said at the field, saved in the spec", async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  const r = await api(page, 'POST', '/tasks', {
    name: `alerts_deadline_${SFX}`,
    team: 'analytics',
    type: 'shell',
    timezone: 'Europe/Paris',
    config: { command: 'true' },
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  await page.goto(`/app/tasks/${r.body.id}`);
  const section = page.locator('section', { has: page.getByRole('heading', { name: 'Deadlines', level: 2 }) });
  await section.waitFor({ timeout: T });
  const start = section.getByLabel('Must start by');
  const finish = section.getByLabel('Must finish by');
  // the hint names the task's time zone
  assert.match(await section.textContent(), /clock time in Europe\/Paris/);
  await finish.fill('soon');
  await finish.blur();
  await section.locator('[data-field="deadlines.finish_by"] .field-error').waitFor({ timeout: T });
  assert.match(await section.locator('[data-field="deadlines.finish_by"] .field-error').textContent(), /clock time such as 06:00/);
  await finish.fill('2h');
  await start.fill('06:00');
  await checkA11y(page, 'designer with deadlines');
  await section.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(SHOTS, 'alerts-designer-deadlines.png') });
  await page.getByTestId('save-task').click();
  await until(async () => (await api(page, 'GET', `/tasks/${r.body.id}`)).body.version === 2, 'the new version saved');
  assert.deepEqual((await api(page, 'GET', `/tasks/${r.body.id}`)).body.spec.deadlines, { start_by: '06:00', finish_by: '2h' });
});

test('a webhook channel: made in the form, its secret shown as set, a test message delivered', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  const task = await api(page, 'POST', '/tasks', {
    name: TASK,
    team: 'analytics',
    type: 'shell',
    retries: { max: 0 },
    config: { command: 'false' },
  });
  assert.equal(task.status, 201, JSON.stringify(task.body));
  made.task = task.body.id;

  await page.goto('/app/alerts/channels');
  await page.getByRole('heading', { name: 'Alerts', level: 1 }).waitFor({ timeout: T });
  await page.getByTestId('new-channel').click();
  const dialog = page.getByRole('dialog', { name: 'New channel' });
  await dialog.getByLabel('Name').fill(CHANNEL);
  await dialog.getByLabel('Team').selectOption('analytics');
  await dialog.getByLabel('Kind').selectOption('webhook');
  // a bad URL is refused next to its field, and nothing is made
  await dialog.getByLabel('URL').fill('not a url');
  await dialog.getByLabel('Signing secret').fill(SECRET);
  await dialog.getByTestId('channel-save').click();
  await dialog.locator('[data-field="url"] .field-error').waitFor({ timeout: T });
  await checkA11y(page, 'channel form with an error');
  await dialog.getByLabel('URL').fill(made.url);
  await shot(page, 'alerts-channel-form');
  await dialog.getByTestId('channel-save').click();
  await dialog.waitFor({ state: 'detached', timeout: T });

  const row = page.locator(`tr[data-channel="${CHANNEL}"]`);
  await row.waitFor({ timeout: T });
  assert.equal(await row.getByTestId('secret-set').textContent(), 'set', 'the secret is said to be set');
  const list = await api(page, 'GET', '/alert-channels');
  const ch = list.body.items.find((c) => c.name === CHANNEL);
  assert.ok(ch, 'the channel is listed by the API');
  assert.equal(ch.config.secret, undefined, 'the secret never comes back');
  assert.ok(!JSON.stringify(list.body).includes(SECRET), 'nor anywhere in the list');
  made.channel = ch.id;

  // A test message through the outbox, followed until it is delivered.
  await row.getByTestId('channel-test').click();
  const outcome = page.getByTestId('test-outcome');
  await until(async () => (await outcome.getAttribute('data-state')) === 'delivered', 'the test message delivered', RUN_T);
  const tests = messages('test');
  assert.equal(tests.length, 1, 'the receiver got one test message');
  assert.equal(tests[0].method, 'POST');
  await checkA11y(page, 'alert channels');
  await shot(page, 'alerts-channels');
  await narrow(page, 'alerts-channels');
});

test('a rule on a failing task: scope by type-ahead; its alert in the history, delivered and signed', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  await page.goto('/app/alerts/rules');
  await page.getByTestId('new-rule').click();
  const dialog = page.getByRole('dialog', { name: 'New alert rule' });
  await dialog.getByLabel('Name').fill(RULE);
  await dialog.getByLabel('Team').selectOption('analytics');
  await dialog.getByLabel('Scope kind').selectOption('task');
  // type part of the name; the task is offered and picked
  await dialog.getByRole('combobox', { name: 'Scope', exact: true }).fill(`fail_${SFX}`);
  await dialog.locator(`[data-scope-option="${TASK}"]`).click();
  assert.equal(await dialog.getByRole('combobox', { name: 'Scope', exact: true }).inputValue(), TASK);
  assert.ok(await dialog.getByRole('checkbox', { name: /^Failed/ }).isChecked(), 'failed is chosen by default');
  await dialog.getByRole('checkbox', { name: /^Timed out/ }).check();
  await dialog.getByLabel('Severity').selectOption('critical');
  // no channel chosen: said next to the channels
  await dialog.getByTestId('rule-save').click();
  await dialog.locator('[data-field="channels"] .field-error').waitFor({ timeout: T });
  await dialog.getByRole('checkbox', { name: new RegExp(CHANNEL) }).check();
  await dialog.getByLabel('Quiet period (seconds)').fill('60');
  await dialog.getByLabel('Grouping window (seconds)').fill('0');
  await checkA11y(page, 'rule form');
  await shot(page, 'alerts-rule-form');
  await dialog.getByTestId('rule-save').click();
  await dialog.waitFor({ state: 'detached', timeout: T });
  const row = page.locator(`tr[data-rule="${RULE}"]`);
  await row.waitFor({ timeout: T });
  const rules = (await api(page, 'GET', '/alert-rules')).body.items;
  const rule = rules.find((r) => r.name === RULE);
  assert.ok(rule, 'the rule is stored');
  assert.deepEqual(
    { scope_kind: rule.scope_kind, scope: rule.scope, events: [...rule.events].sort(), severity: rule.severity, channels: rule.channels, quiet: rule.quiet_period_s, group: rule.group_window_s, enabled: rule.enabled },
    { scope_kind: 'task', scope: TASK, events: ['failed', 'timed_out'], severity: 'critical', channels: [made.channel], quiet: 60, group: 0, enabled: true },
  );
  made.rule = rule.id;
  await checkA11y(page, 'alert rules');
  await shot(page, 'alerts-rules');
  await narrow(page, 'alerts-rules');

  // The task fails; its alert is in the history with the delivery delivered.
  const at = new Date(Math.floor(Date.now() / 60000) * 60000 - 2 * 3600e3);
  made.first = await runToFailure(page, at);
  await page.goto(`/app/alerts/history?rule=${made.rule}`);
  const card = page.locator('[data-alert][data-event="failed"]').first();
  await card.waitFor({ timeout: RUN_T });
  const delivery = card.locator(`tr[data-channel="${CHANNEL}"] [data-delivery-state]`);
  await until(async () => (await delivery.getAttribute('data-delivery-state')) === 'delivered', 'the alert delivered', RUN_T);
  assert.match(await card.textContent(), new RegExp(`instance ${made.first}`), 'the alert links its instance');
  const sent = messages('failed');
  assert.equal(sent.length, 1, 'one message for one failure');
  assert.equal(sent[0].json.rule, RULE);
  assert.equal(sent[0].json.severity, 'critical');
  assert.equal(sent[0].json.instance_id, made.first);
  await page.getByTestId('chart-alerts').and(page.locator('[data-ready]')).waitFor({ timeout: T });
  assert.ok(Number(await page.getByTestId('chart-alerts').getAttribute('data-total')) >= 1, 'the chart counts it');
  await checkA11y(page, 'alert history');
  await shot(page, 'alerts-history');
  await narrow(page, 'alerts-history');
});

test('silence the rule from its row: the next failure is recorded as silenced and nothing is sent', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  await page.goto('/app/alerts/rules');
  const row = page.locator(`tr[data-rule="${RULE}"]`);
  await row.getByTestId('rule-silence').click();
  const dialog = page.getByRole('dialog', { name: 'Silence alerts' });
  await dialog.getByTestId('silence-duration').selectOption('1h');
  await dialog.getByLabel('Reason (optional)').fill('alerts test');
  await checkA11y(page, 'silence dialog');
  await shot(page, 'alerts-silence-dialog');
  await dialog.getByTestId('silence-confirm').click();
  await dialog.waitFor({ state: 'detached', timeout: T });

  await page.goto('/app/alerts/silences');
  const silence = page.locator('tr[data-active="true"]', { hasText: RULE });
  await silence.waitFor({ timeout: T });
  await checkA11y(page, 'alert silences');
  await shot(page, 'alerts-silences');
  await narrow(page, 'alerts-silences');

  const before = messages('failed').length;
  const at = new Date(Math.floor(Date.now() / 60000) * 60000 - 3600e3);
  const second = await runToFailure(page, at);
  await page.goto(`/app/alerts/history?rule=${made.rule}&state=silenced`);
  const card = page.locator(`[data-alert][data-state="silenced"]`, { hasText: `instance ${second}` });
  await card.waitFor({ timeout: RUN_T });
  await card.getByTestId('silenced').waitFor({ timeout: T });
  assert.equal(await card.locator('[data-delivery]').count(), 0, 'a silenced alert has no delivery');
  assert.equal(messages('failed').length, before, 'nothing more was sent');
  await shot(page, 'alerts-history-silenced');
  // From the history: the alert's own rule, or its scope, prefilled.
  await card.getByTestId('alert-silence').click();
  const fromHistory = page.getByRole('dialog', { name: 'Silence alerts' });
  await fromHistory.getByRole('radio', { name: /A scope/ }).check();
  assert.equal(await fromHistory.getByLabel('Scope kind').inputValue(), 'task');
  assert.equal(await fromHistory.getByRole('combobox', { name: 'Scope', exact: true }).inputValue(), TASK);
  await checkA11y(page, 'silence dialog from the history');
  await fromHistory.getByRole('button', { name: 'Cancel' }).click();
  await fromHistory.waitFor({ state: 'detached', timeout: T });

  // End the silence; disable the rule with its switch (nothing left on).
  await page.goto('/app/alerts/silences');
  await silence.getByTestId('silence-end').click();
  await page.getByRole('dialog', { name: 'End this silence?' }).getByRole('button', { name: 'End now' }).click();
  await page.locator('tr[data-active="true"]', { hasText: RULE }).waitFor({ state: 'detached', timeout: T });
  await page.goto('/app/alerts/rules');
  await page.locator(`tr[data-rule="${RULE}"]`).getByTestId('rule-enabled').click();
  await until(async () => (await api(page, 'GET', '/alert-rules')).body.items.find((r) => r.id === made.rule)?.enabled === false, 'the rule disabled');
});

test('a viewer reads the rules and channels but changes nothing', async (t) => {
  const page = await open(t);
  await login(page, VIEWER);
  await page.goto('/app/alerts/rules');
  const row = page.locator(`tr[data-rule="${RULE}"]`);
  await row.waitFor({ timeout: T });
  assert.equal(await page.getByTestId('new-rule').count(), 0, 'no new rule');
  assert.match(await row.textContent(), /read-only/);
  assert.ok(await row.getByTestId('rule-enabled').isDisabled(), 'the switch is disabled');
  await page.goto('/app/alerts/channels');
  await page.locator(`tr[data-channel="${CHANNEL}"]`).waitFor({ timeout: T });
  assert.equal(await page.getByTestId('channel-test').count(), 0, 'no test message');
  await checkA11y(page, 'alert channels as a viewer');
});
