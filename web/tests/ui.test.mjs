// ui.test.mjs - Orrery's browser tests: headless Chromium (Debian's, through
// playwright-core) against a real galaxyd + halleyd started by
// tests/e2e/run.sh, which passes the base URL, the users and where to save
// screenshots in ORRERY_E2E_* variables.
//
// The tests run in order and build on each other: the designer creates a
// three-task workflow that later tests backfill, act on and look at.
//
// keplerd and one executord run too (run.sh), so every instance whose
// upstreams are met runs. Tests that need instances to stay still use the
// designer's workflow, held back by a strong upstream on a deactivated task
// (hold_gate), which keplerd never counts as met. The scheduler test runs its
// own workflow (flow_*), whose instances all end (success, killed) so later
// counts of waiting instances stay true. Every schedule fires at a minute
// half an hour away from the start of the run, so no fire time falls due and
// keplerd creates no instance by itself while the tests run.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { test } from 'node:test';
import {
  ADMIN,
  BASE,
  CRON,
  DEV,
  EXECUTOR,
  FIN,
  GATES,
  MINUTE,
  RUN_T,
  T,
  VIEWER,
  api,
  checkA11y,
  localInput,
  login,
  open,
  shot,
  until,
  useBrowser,
} from './lib.mjs';

useBrowser();
const ids = {}; // task name -> id, filled by the designer test

/** Adds an upstream row in the designer and names its task. A click that
 * lands while the form is still being (re)built is lost: click again then. */
async function addUpstream(page, task) {
  const input = page.locator('input[name="upstreams.0.task"]');
  for (let i = 0; i < 3 && (await input.count()) === 0; i++) {
    await page.getByTestId('add-upstream').click();
    await input.waitFor({ timeout: 5000 }).catch(() => undefined);
  }
  await input.fill(task);
  await page.locator('[data-upstream="0"] .ok-text').waitFor({ timeout: T }); // the picker found it
}

test('the root redirects to the console, which asks to log in; bad logins are explained', async (t) => {
  const page = await open(t);
  await page.goto('/');
  await page.waitForURL(/\/app\//, { timeout: T });
  await page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: T });
  await shot(page, 'login');
  await checkA11y(page, 'login');

  await page.getByRole('button', { name: 'Sign in' }).click();
  const nameErr = page.locator('[data-field="name"] .field-error');
  assert.match(await nameErr.textContent(), /user name/i, 'empty name is flagged next to the field');

  await page.locator('input[name="name"]').fill(ADMIN[0]);
  await page.locator('input[name="password"]').fill('not-the-password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: /wrong user name or password/i }).waitFor({ timeout: T });

  await page.locator('input[name="password"]').fill(ADMIN[1]);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('whoami').filter({ hasText: ADMIN[0] }).waitFor({ timeout: T });
  assert.match(page.url(), /\/app\/dashboard$/);
  const me = await api(page, 'GET', '/auth/me');
  assert.equal(me.status, 200);
  assert.equal(me.body.role, 'admin');

  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor({ timeout: T });
  assert.equal((await api(page, 'GET', '/auth/me')).status, 401, 'logged out for real');
});

test('the console moves in the page: links push a history entry, filters replace it, back and forward work, deep links load', async (t) => {
  const page = await open(t);
  await login(page, VIEWER);
  await page.goto('/app/dashboard');
  await page.getByTestId('whoami').waitFor({ timeout: T });
  // A mark on the window: it survives moves inside the page, not a load.
  await page.evaluate(() => (window.orreryMark = 1));
  const marked = () => page.evaluate(() => window.orreryMark === 1);
  const entries = () => page.evaluate(() => history.length);
  const n0 = await entries();

  await page.getByRole('link', { name: 'Tasks', exact: true }).click();
  await page.getByRole('heading', { name: 'Tasks', exact: true }).waitFor({ timeout: T });
  assert.match(page.url(), /\/app\/tasks$/);
  assert.equal(await entries(), n0 + 1, 'a link click is one new history entry');
  assert.ok(await marked(), 'a link inside the console does not load the page');

  await page.getByLabel('Type', { exact: true }).selectOption('shell');
  await until(async () => /\/app\/tasks\?type=shell$/.test(page.url()), 'the filter in the URL');
  assert.equal(await entries(), n0 + 1, 'a filter replaces the entry');

  await page.goBack();
  await page.getByRole('heading', { name: 'Dashboard', exact: true }).waitFor({ timeout: T });
  assert.match(page.url(), /\/app\/dashboard$/);
  await page.goForward();
  await page.getByRole('heading', { name: 'Tasks', exact: true }).waitFor({ timeout: T });
  assert.equal(await page.getByLabel('Type', { exact: true }).inputValue(), 'shell', 'forward comes back with the filter');
  assert.ok(await marked(), 'back and forward stay in the page');

  // A deep link is served index.html by galaxyd and routed in the browser;
  // a path the console does not know says so.
  await page.goto('/app/admin');
  await page.getByRole('heading', { name: 'Administration', exact: true }).waitFor({ timeout: T });
  await page.goto('/app/no/such/page');
  await page.getByRole('heading', { name: 'Page not found' }).waitFor({ timeout: T });
  assert.equal(await page.locator('main code').textContent(), '/no/such/page');
});

test('a developer designs a three-task workflow with inline errors and a live cron preview', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  await page.goto('/app/tasks/new');
  await page.getByTestId('designer').waitFor({ timeout: T });

  // The hold of this workflow (see the top of the file), made first so the
  // designer's upstream picker finds it.
  const gate = await api(page, 'POST', '/tasks', {
    name: 'hold_gate',
    team: 'analytics',
    type: 'shell',
    schedule: CRON,
    config: { command: 'true' },
  });
  assert.equal(gate.status, 201, JSON.stringify(gate.body));
  ids.hold_gate = gate.body.id;

  // Schema-driven checks, before the server is asked.
  const name = page.locator('input[name="name"]');
  await name.fill('Bad Name');
  await name.blur();
  assert.match(await page.locator('[data-field="name"] .field-error').textContent(), /lower-case/);
  await checkA11y(page, 'designer with an inline error');
  await name.fill('e2e_extract');
  assert.equal(await page.locator('[data-field="name"] .field-error').count(), 0, 'the error goes once fixed');

  assert.equal(await page.locator('select[name="team"]').inputValue(), 'analytics', 'the only team is preselected');

  const cron = page.locator('input[name="schedule"]');
  await cron.fill(CRON);
  await until(async () => (await page.locator('[data-testid="cron-preview"] li').count()) === 5, 'five fire times');
  const first = await page.locator('[data-testid="cron-preview"] li').first().textContent();
  const mm = String(MINUTE).padStart(2, '0');
  assert.match(first, new RegExp(`:${mm}`), `hourly fire times fall on minute ${mm}`);
  await cron.fill('61 * * * *');
  await page.locator('[data-field="schedule"] .field-error').waitFor({ timeout: T });
  await cron.fill(CRON);
  await until(async () => (await page.locator('[data-testid="cron-preview"] li').count()) === 5, 'preview back');

  const timeout = page.locator('input[name="timeout"]');
  await timeout.fill('ten minutes');
  await timeout.blur();
  assert.match(await page.locator('[data-field="timeout"] .field-error').textContent(), /duration/);
  await timeout.fill('10m');
  // The validator compiled from the schema at build time names the field,
  // next to it and in the spec panel.
  const max = page.locator('input[name="retries.max"]');
  await max.fill('101');
  await max.blur();
  assert.match(await page.locator('[data-field="retries.max"] .field-error').textContent(), /must be at most 100/);
  assert.match(await page.getByTestId('spec-panel').textContent(), /retries\.max: must be at most 100/);
  await max.fill('2');
  await page.locator('textarea[name="config.command"]').fill('echo extract');
  // The hold: an upstream that is deactivated once e2e_extract exists.
  await addUpstream(page, 'hold_gate');
  await shot(page, 'designer');
  await checkA11y(page, 'designer');
  await page.getByTestId('save-task').click();
  await page.waitForURL(/\/app\/tasks\/\d+$/, { timeout: T });
  ids.e2e_extract = Number(page.url().split('/').pop());
  const off = await api(page, 'DELETE', `/tasks/${ids.hold_gate}`);
  assert.ok(off.status === 200 || off.status === 204, `hold_gate deactivated (${off.status})`);

  // A duplicate name is refused by the server; the answer is shown.
  await page.goto('/app/tasks/new');
  await page.locator('input[name="name"]').fill('e2e_extract');
  await page.locator('textarea[name="config.command"]').fill('echo again');
  await page.getByTestId('save-task').click();
  await page.locator('.field-error, .banner-error').first().waitFor({ timeout: T });
  assert.match(page.url(), /\/tasks\/new$/, 'no task created');

  for (const [task, up] of [
    ['e2e_transform', 'e2e_extract'],
    ['e2e_load', 'e2e_transform'],
  ]) {
    await page.goto('/app/tasks/new');
    await page.getByTestId('designer').waitFor({ timeout: T });
    await page.locator('input[name="name"]').fill(task);
    await page.locator('input[name="schedule"]').fill(CRON);
    await addUpstream(page, up);
    await page.locator('textarea[name="config.command"]').fill(`echo ${task}`);
    await page.getByTestId('save-task').click();
    await page.waitForURL(/\/app\/tasks\/\d+$/, { timeout: T });
    ids[task] = Number(page.url().split('/').pop());
  }
  const got = await api(page, 'GET', `/tasks/${ids.e2e_load}`);
  assert.deepEqual(got.body.spec.upstreams, [{ kind: 'strong', task: 'e2e_transform' }]);
  const ex = await api(page, 'GET', `/tasks/${ids.e2e_extract}`);
  assert.equal(ex.body.spec.timeout, '10m');
  assert.deepEqual(ex.body.spec.retries, { max: 2 });
  assert.deepEqual(ex.body.spec.upstreams, [{ kind: 'strong', task: 'hold_gate' }]);
});

test('saving a new version updates the header; saving with no change makes no version', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  const made = await api(page, 'POST', '/tasks', {
    name: 'ver_demo',
    team: 'analytics',
    type: 'shell',
    schedule: CRON,
    config: { command: 'true' },
  });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  await page.goto(`/app/tasks/${made.body.id}`);
  await page.getByTestId('designer').waitFor({ timeout: T });
  const version = page.getByTestId('task-version');
  assert.equal((await version.textContent()).trim(), 'version 1');
  await page.locator('textarea[name="description"], input[name="description"]').first().fill('the second version');
  await page.getByTestId('save-task').click();
  await page.locator('.toast', { hasText: 'Saved ver_demo, version 2' }).waitFor({ timeout: T });
  await until(async () => (await version.textContent()).trim() === 'version 2', 'the header shows version 2');
  // Again, unchanged: halleyd writes nothing and the console says so.
  await page.getByTestId('save-task').click();
  await page.locator('.toast', { hasText: 'No change' }).waitFor({ timeout: T });
  assert.equal((await version.textContent()).trim(), 'version 2');
  const got = await api(page, 'GET', `/tasks/${made.body.id}`);
  assert.equal(got.body.current_version, 2, 'no version 3');
  await shot(page, 'designer-saved');
  await checkA11y(page, 'designer-saved');
});

test('the task list searches and filters; the workflow view draws the DAG', async (t) => {
  assert.ok(ids.e2e_load, 'the designer test created the tasks');
  const page = await open(t);
  await login(page, DEV);
  await page.goto('/app/tasks');
  await page.getByLabel('Search tasks').fill('e2e_');
  await until(async () => (await page.locator('tr[data-task]').count()) === 3, 'three e2e tasks');
  await page.getByLabel('Search tasks').fill('e2e_tr');
  await until(async () => (await page.locator('tr[data-task]').count()) === 1, 'search narrows');
  await page.getByLabel('Search tasks').fill('e2e_');
  await until(async () => (await page.locator('tr[data-task]').count()) === 3, 'three again');
  await page.getByLabel('Team').selectOption('analytics');
  await until(async () => (await page.locator('tr[data-task]').count()) === 3, 'team filter');
  await until(async () => (await page.locator('tr[data-task] .badge.st-none').count()) === 3, 'no runs yet');
  await shot(page, 'tasks');
  await checkA11y(page, 'tasks');

  await page.goto('/app/workflow');
  await page.locator('.wf-card', { hasText: 'e2e_extract' }).click();
  const graph = page.getByTestId('graph');
  await page.locator('[data-testid="graph"][data-ready="true"]').waitFor({ timeout: T });
  // The three tasks and their (deactivated) hold.
  assert.equal(await graph.getAttribute('data-nodes'), '4');
  assert.equal(await graph.getAttribute('data-edges'), '3');
  await shot(page, 'workflow');
  await checkA11y(page, 'workflow');
});

test('backfill creates instances (held: they wait for hold_gate)', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  const now = new Date();
  const from = new Date(now.getTime() - 3 * 3600e3 + 60e3); // 3 fire times
  for (const task of ['e2e_extract', 'e2e_transform', 'e2e_load']) {
    await page.goto('/app/tasks?q=e2e_');
    await page.locator(`tr[data-task="${task}"]`).getByRole('button', { name: 'Backfill' }).click();
    await page.locator('input[name="from"]').fill(localInput(from));
    await page.locator('input[name="to"]').fill(localInput(now));
    await until(async () => /\b3\b/.test(await page.getByTestId('backfill-preview').textContent()), 'preview of 3');
    if (task === 'e2e_extract') await checkA11y(page, 'backfill dialog');
    await page.getByTestId('backfill-submit').click();
    const res = await page.getByTestId('backfill-result').textContent({ timeout: T });
    assert.match(res, /^3\s*instances created for 3 fire times/);
    await page.getByRole('button', { name: 'Done' }).click();
  }
  const list = await api(page, 'GET', `/instances?task_id=${ids.e2e_extract}`);
  assert.equal(list.body.items.length, 3);
  assert.ok(list.body.items.every((i) => i.state === 'waiting'));
});

/** Text of the instance page's log panel. */
const logText = async (page) => (await page.getByTestId('log').textContent()) ?? '';

/** Backfills the one fire time of the last hour of a flow task; its instance id. */
async function backfillOne(page, taskId) {
  const now = Date.now();
  const r = await api(page, 'POST', `/tasks/${taskId}/backfill`, {
    from: new Date(now - 3600e3).toISOString(),
    to: new Date(now).toISOString(),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.created.length, 1, 'one fire time in the last hour');
  return r.body.created[0];
}

/** Processes whose command line holds marker (the shell of a task). */
function procsWith(marker) {
  try {
    return execFileSync('pgrep', ['-f', marker], { encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

test('the scheduler runs a workflow: states turn to success, the log follows live, rerun, kill', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  const flow = {};
  const make = async (name, command, upstream) => {
    const r = await api(page, 'POST', '/tasks', {
      name,
      team: 'analytics',
      type: 'shell',
      schedule: CRON,
      config: { command },
      ...(upstream ? { upstreams: [{ kind: 'strong', task: upstream }] } : {}),
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    flow[name] = r.body.id;
  };
  // flow_extract writes a line, waits at a gate, writes another: the page
  // must show the first before the second exists, then the second without a
  // reload. The gate opens when the test creates the file (the task gives up
  // after 300 s, so a failed test leaves no endless run).
  const gate = join(GATES, `extract-${process.pid}`);
  await make(
    'flow_extract',
    `echo extract-begin; i=0; while [ ! -e ${gate} ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i + 1)); done; ` +
      'echo extract-live-line; echo extract-end',
  );
  await make('flow_transform', 'echo transform-ran', 'flow_extract');
  await make('flow_load', 'echo load-ran', 'flow_transform');
  const marker = `e2e-long-${process.pid}-${Date.now()}`;
  await make('flow_long', `echo long-started; sleep 300; echo ${marker}`);

  // The run, watched from flow_extract's instance page.
  const ext = await backfillOne(page, flow.flow_extract);
  await page.goto(`/app/instances/${ext}`);
  const state = page.getByTestId('instance-state');
  await state.locator('[data-state="running"]').waitFor({ timeout: RUN_T });
  await until(async () => (await logText(page)).includes('extract-begin'), 'the first log line', RUN_T);
  const early = await logText(page);
  assert.ok(!early.includes('extract-live-line'), `the page shows the log before the line exists: ${early}`);
  await shot(page, 'instance-live-log');
  await checkA11y(page, 'instance-live-log');
  writeFileSync(gate, '');
  await until(async () => (await logText(page)).includes('extract-live-line'), 'the next line, live', T);
  const tr = await backfillOne(page, flow.flow_transform);
  const ld = await backfillOne(page, flow.flow_load);
  await state.locator('[data-state="success"]').waitFor({ timeout: RUN_T });
  await until(async () => (await logText(page)).includes('extract-end'), 'the whole log', T);

  // The workflow view follows the downstream tasks to success.
  await page.goto(`/app/workflow/${flow.flow_load}`);
  await page.locator('[data-testid="graph"][data-ready="true"]').waitFor({ timeout: T });
  assert.equal(await page.getByTestId('graph').getAttribute('data-nodes'), '3');
  await page.locator('[data-testid="wf-side"] [data-state="success"]').waitFor({ timeout: RUN_T });
  await shot(page, 'workflow-run');
  await checkA11y(page, 'workflow-run');
  for (const id of [ext, tr, ld]) {
    const d = await api(page, 'GET', `/instances/${id}`);
    assert.equal(d.body.state, 'success', `instance ${id}`);
  }
  const order = await Promise.all(
    [ext, tr, ld].map(async (id) => {
      const d = await api(page, 'GET', `/instances/${id}`);
      return Date.parse(d.body.transitions.find((x) => x.to === 'running').at);
    }),
  );
  assert.ok(order[0] <= order[1] && order[1] <= order[2], `ran in dependency order: ${order}`);

  // Rerun: a second attempt that runs to success too.
  await page.goto(`/app/instances/${ld}`);
  await state.locator('[data-state="success"]').waitFor({ timeout: T });
  await until(async () => (await logText(page)).includes('load-ran'), 'the log of attempt 1', T);
  await page.locator('[data-action="rerun"]').click();
  await page.locator('[data-confirm]').click();
  await page.getByText(/attempt 2/).first().waitFor({ timeout: T });
  await until(async () => {
    const d = await api(page, 'GET', `/instances/${ld}`);
    return d.body.attempt === 2 && d.body.state === 'success';
  }, 'attempt 2 ends in success', RUN_T);
  await state.locator('[data-state="success"]').waitFor({ timeout: T });
  await until(async () => (await page.locator('[data-testid="attempts"] tbody tr').count()) === 2, 'two attempts');
  await until(async () => (await logText(page)).includes('load-ran'), 'the log of attempt 2', T);
  await shot(page, 'instance-rerun');
  await checkA11y(page, 'instance-rerun');

  // Kill a long run: it ends killed and its processes are gone.
  const long = await backfillOne(page, flow.flow_long);
  await page.goto(`/app/instances/${long}`);
  await state.locator('[data-state="running"]').waitFor({ timeout: RUN_T });
  await until(async () => (await logText(page)).includes('long-started'), 'the long task started', T);
  assert.ok(procsWith(marker).length > 0, 'the task runs on this machine');
  await page.locator('[data-action="kill"]').click();
  await page.locator('[data-confirm]').click();
  await state.locator('[data-state="killed"]').waitFor({ timeout: T });
  await until(async () => procsWith(marker).length === 0, 'the executor ended the task', T);
  const k = await api(page, 'GET', `/instances/${long}`);
  assert.equal(k.body.state, 'killed', 'killed, not failed or retried');
  // The executor closes the log of the killed attempt.
  await page.getByText(/attempt 1 · [\d,]+ bytes · complete/).waitFor({ timeout: T });
  const log = await logText(page);
  assert.ok(log.includes('long-started') && !log.includes(marker), `the task never got past its sleep: ${log}`);
  await shot(page, 'instance-killed');
  await checkA11y(page, 'instance-killed');
});

test('instances: filter by state, select, bulk suspend with confirmation', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  await page.goto(`/app/instances?task_id=${ids.e2e_extract}`);
  await until(async () => (await page.locator('tr[data-instance]').count()) === 3, 'three instances');
  await page.locator('.chip-state.st-waiting').click();
  await page.waitForURL(/state=waiting/);
  await until(async () => (await page.locator('tr[data-instance]').count()) === 3, 'three waiting');
  await page.getByLabel('Select all shown').check();
  await page.getByTestId('bulkbar').getByRole('button', { name: /^Suspend/ }).click();
  await page.getByRole('dialog').waitFor({ timeout: T });
  await checkA11y(page, 'bulk suspend confirmation');
  await page.locator('[data-confirm]').click();
  await page.locator('.toast', { hasText: 'Suspend: 3 done' }).waitFor({ timeout: T });
  await page.locator('.chip-state.st-waiting').click(); // state filter off
  await until(async () => (await page.locator('tr[data-instance] [data-state="suspended"]').count()) === 3, 'three suspended');
  await page.locator('.chip-state.st-suspended').click();
  await until(async () => (await page.locator('tr[data-instance]').count()) === 3, 'suspended filter');
  await shot(page, 'instances');
  await checkA11y(page, 'instances');
});

test('instance page: dependencies, timeline, and suspend, resume, kill, rerun', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  const list = await api(page, 'GET', `/instances?task_id=${ids.e2e_transform}`);
  const id = list.body.items[0].id;
  await page.goto(`/app/instances/${id}`);
  const state = page.getByTestId('instance-state');
  await state.locator('[data-state="waiting"]').waitFor({ timeout: T });
  await page.locator('[data-testid="graph"][data-ready="true"]').waitFor({ timeout: T });
  assert.equal(await page.getByTestId('graph').getAttribute('data-nodes'), '3', 'upstream, itself, downstream');
  // One row per neighbour: the instance of the same cycle (both hourly).
  const sched = list.body.items[0].schedule_time;
  const deps = (await api(page, 'GET', `/instances/${id}`)).body;
  assert.deepEqual(
    deps.upstreams.map((u) => [u.task_name, u.schedule_time]),
    [['e2e_extract', sched]],
  );
  assert.deepEqual(
    deps.downstreams.map((u) => [u.task_name, u.schedule_time]),
    [['e2e_load', sched]],
  );
  await page.locator('[data-testid="deps"] tr[data-dep="upstream"][data-task="e2e_extract"] [data-state="suspended"]').waitFor({ timeout: T });
  await page.locator('[data-testid="deps"] tr[data-dep="downstream"][data-task="e2e_load"] [data-state="waiting"]').waitFor({ timeout: T });
  // No executor ran it yet: the log panel is there, empty, following attempt 1.
  await page.getByTestId('log').waitFor({ timeout: T });
  await page.getByText(/attempt 1 · 0 bytes · following/).waitFor({ timeout: T });

  await page.locator('[data-action="rerun"]').isDisabled().then((d) => assert.ok(d, 'no rerun while waiting'));
  await page.locator('[data-action="suspend"]').click();
  await state.locator('[data-state="suspended"]').waitFor({ timeout: T });
  await page.locator('[data-action="resume"]').click();
  await state.locator('[data-state="waiting"]').waitFor({ timeout: T });

  await page.locator('[data-action="kill"]').click();
  await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
  await state.locator('[data-state="waiting"]').waitFor({ timeout: T }); // cancel did nothing
  await page.locator('[data-action="kill"]').click();
  await page.locator('[data-confirm]').click();
  await state.locator('[data-state="killed"]').waitFor({ timeout: T });

  await page.locator('[data-action="rerun"]').click();
  await page.locator('[data-confirm]').click();
  await state.locator('[data-state="waiting"]').waitFor({ timeout: T });
  await page.getByText(/attempt 2/).first().waitFor({ timeout: T });
  const d = await api(page, 'GET', `/instances/${id}`);
  assert.equal(d.body.state, 'waiting');
  assert.equal(d.body.attempt, 2);
  const moves = d.body.transitions.filter((x) => x.from).map((x) => `${x.from}>${x.to}`);
  assert.deepEqual(moves, ['waiting>suspended', 'suspended>waiting', 'waiting>killed', 'killed>waiting']);
  await until(
    async () => (await page.locator('[data-testid="transitions"] li').count()) === d.body.transitions.length,
    'every transition listed',
  );
  assert.equal(await page.locator('[data-testid="attempts"] tbody tr').count(), 2, 'two attempts');
  await shot(page, 'instance');
  await checkA11y(page, 'instance');
});

test('an admin changes a pool capacity; a developer only reads it', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  await page.goto('/app/admin/pools');
  await page.locator('input[name="pool-name"]').fill('warehouse');
  await page.getByRole('button', { name: 'Create pool' }).click();
  const cap = page.getByLabel('Capacity of warehouse');
  await cap.waitFor({ timeout: T });
  assert.equal(await cap.inputValue(), '4');
  await cap.fill('-3');
  await page.locator('tr[data-pool="warehouse"]').getByRole('button', { name: 'Save' }).click();
  await page.locator('tr[data-pool="warehouse"] .field-error').waitFor({ timeout: T });
  await checkA11y(page, 'admin-pools with an error');
  await cap.fill('7');
  await page.locator('tr[data-pool="warehouse"]').getByRole('button', { name: 'Save' }).click();
  await page.locator('.toast', { hasText: 'capacity 7' }).waitFor({ timeout: T });
  await page.reload();
  await until(async () => (await page.getByLabel('Capacity of warehouse').inputValue()) === '7', 'capacity kept');
  const pools = await api(page, 'GET', '/pools');
  assert.equal(pools.body.items.find((p) => p.name === 'warehouse').capacity, 7);
  await shot(page, 'admin-pools');
  await checkA11y(page, 'admin-pools');

  await page.goto('/app/admin/executors');
  // galaxyd reads live executors from ZooKeeper: the one run.sh started.
  const exRow = page.locator('tr', { hasText: EXECUTOR });
  await exRow.waitFor({ timeout: T });
  assert.match(await exRow.textContent(), /zone=e2e.*alive/);
  await shot(page, 'admin-executors');
  await checkA11y(page, 'admin-executors');
  await page.goto('/app/admin/users');
  await page.getByLabel('Search users by name').fill(DEV[0]);
  await until(async () => /analytics/.test((await page.locator(`tr[data-user="${DEV[0]}"]`).textContent({ timeout: T })) ?? ''), 'the developer is listed with their team');

  // An admin changes a user: role and teams, then disables it; its session
  // ends at once (a user made for this, so the others' sessions live on).
  const temp = ['e2e_temp', 'e2e-temp-password'];
  assert.equal((await api(page, 'POST', '/users', { name: temp[0], password: temp[1], role: 'developer', teams: ['analytics'] })).status, 201);
  const tempSession = await open(t);
  await login(tempSession, temp);
  assert.equal((await api(tempSession, 'GET', '/auth/me')).status, 200);
  await page.getByLabel('Search users by name').fill(temp[0]);
  const tempRow = page.locator(`tr[data-user="${temp[0]}"]`);
  await tempRow.getByRole('button', { name: `Edit ${temp[0]}` }).click({ timeout: T });
  await page.getByTestId('user-editor').waitFor({ timeout: T });
  await page.getByLabel(`Role of ${temp[0]}`).selectOption('viewer');
  await page.getByLabel(`Teams of ${temp[0]}`).fill('finance');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.locator('.toast', { hasText: 'their sessions ended' }).waitFor({ timeout: T });
  await until(async () => /viewer/.test(await tempRow.textContent()), 'the row shows the new role');
  const changed = await api(page, 'GET', `/users/${temp[0]}`);
  assert.equal(changed.body.role, 'viewer');
  assert.deepEqual(changed.body.teams, ['finance']);
  assert.equal((await api(tempSession, 'GET', '/auth/me')).status, 401, 'the changed user is logged out');
  await shot(page, 'admin-users');
  await checkA11y(page, 'admin-users');
  await tempRow.getByRole('button', { name: `Disable ${temp[0]}` }).click();
  await page.getByRole('dialog').waitFor({ timeout: T });
  await checkA11y(page, 'disable user confirmation');
  await page.locator('[data-confirm]').click();
  await until(async () => /disabled/.test(await tempRow.textContent()), 'the row shows the user disabled');
  assert.equal((await api(page, 'GET', `/users/${temp[0]}`)).body.active, false);

  const dev = await open(t);
  await login(dev, DEV);
  await dev.goto('/app/admin/pools');
  await dev.locator('tr[data-pool="warehouse"]').waitFor({ timeout: T });
  assert.equal(await dev.getByLabel('Capacity of warehouse').count(), 0, 'no capacity editor for developers');
  assert.equal((await api(dev, 'PUT', '/pools/warehouse', { capacity: 1 })).status, 403);
});

test("a developer cannot edit another team's task", async (t) => {
  const fin = await open(t);
  await login(fin, FIN);
  const made = await api(fin, 'POST', '/tasks', {
    name: 'fin_report',
    team: 'finance',
    type: 'shell',
    schedule: '30 6 * * *',
    config: { command: 'echo report' },
  });
  assert.equal(made.status, 201, JSON.stringify(made.body));

  const page = await open(t);
  await login(page, DEV);
  await page.goto(`/app/tasks/${made.body.id}`);
  await page.getByTestId('readonly-banner').waitFor({ timeout: T });
  assert.match(await page.getByTestId('readonly-banner').textContent(), /finance/);
  assert.equal(await page.getByTestId('save-task').count(), 0, 'no save button');
  assert.ok(await page.locator('textarea[name="config.command"]').isDisabled(), 'fields are read-only');
  // And the server refuses it too, whatever the page shows.
  const put = await api(page, 'PUT', `/tasks/${made.body.id}`, { ...made.body.spec, description: 'mine now' });
  assert.equal(put.status, 403);
  await page.goto('/app/tasks?q=fin_');
  await page.locator('tr[data-task="fin_report"]').waitFor({ timeout: T });
  assert.equal(await page.locator('tr[data-task="fin_report"]').getByRole('button', { name: 'Backfill' }).count(), 0);

  const viewer = await open(t);
  await login(viewer, VIEWER);
  await viewer.goto('/app/tasks');
  await viewer.locator('tr[data-task]').first().waitFor({ timeout: T });
  assert.equal(await viewer.getByRole('link', { name: '+ New task' }).count(), 0, 'viewers cannot create');
});

test("the task list shows each task's last run", async (t) => {
  const page = await open(t);
  await login(page, DEV);
  await page.goto('/app/tasks?q=e2e_');
  await until(async () => (await page.locator('tr[data-task]').count()) === 3, 'three e2e tasks');
  // The instances test suspended every e2e_extract instance; the others wait.
  await page.locator('tr[data-task="e2e_extract"] [data-state="suspended"]').waitFor({ timeout: T });
  await page.locator('tr[data-task="e2e_load"] [data-state="waiting"]').waitFor({ timeout: T });
  assert.equal(await page.locator('tr[data-task] .badge.st-none').count(), 0, 'every task has run');
  // The relative time is when the last run changed state, not its slot,
  // which is shown as a schedule time.
  const listed = await api(page, 'GET', '/tasks?q=e2e_&with_last_run=1');
  const ex = listed.body.items.find((x) => x.name === 'e2e_extract');
  assert.ok(ex.last_run.updated_at, 'the API says when the last run changed');
  const cell = page.locator('tr[data-task="e2e_extract"] .lastrun');
  assert.equal(await cell.locator('[data-at]').getAttribute('data-at'), ex.last_run.updated_at);
  assert.match(await cell.textContent(), /(ago|just now).*scheduled for/);
  await shot(page, 'tasks-last-run');
  await checkA11y(page, 'tasks-last-run');
});

test('the dashboard charts outcomes from the statistics API, queue and running slots', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  // Give the outcome chart a real data point: mark one waiting instance done.
  const load = await api(page, 'GET', `/instances?task_id=${ids.e2e_load}&order=desc&limit=1`);
  const marked = await api(page, 'POST', `/instances/${load.body.items[0].id}/actions/mark-success`, { reason: 'e2e' });
  assert.equal(marked.status, 200, JSON.stringify(marked.body));
  await page.goto('/app/dashboard');
  const outcomes = page.getByTestId('chart-outcomes');
  await page.locator('[data-testid="chart-outcomes"][data-ready="true"]').waitFor({ timeout: T });
  await page.locator('[data-testid="chart-queue"][data-ready="true"]').waitFor({ timeout: T });
  const stats = await api(page, 'GET', '/stats/instances?step=1h');
  assert.equal(stats.status, 200);
  const sum = stats.body.buckets.reduce((a, b) => a + b.success + b.failed + b.killed + b.timed_out + b.marked_success, 0);
  assert.ok(sum >= 1, 'the statistics API counts the instance marked done');
  const total = (k) => stats.body.buckets.reduce((a, b) => a + b[k], 0);
  // The scheduler test's runs: three successes (one rerun) and one kill.
  assert.ok(total('success') >= 3, `successes counted (${total('success')})`);
  assert.ok(total('killed') >= 1, `the kill counted (${total('killed')})`);
  assert.equal(Number(await outcomes.getAttribute('data-total')), sum, 'the chart draws every finished instance');
  assert.equal(Number(await outcomes.getAttribute('data-points')), stats.body.buckets.length, 'one bar per hour');
  // 3 e2e_extract suspended; 3 e2e_transform + 3 e2e_load waiting, one of them marked done -> 5.
  assert.equal(stats.body.now.waiting + stats.body.now.ready, 5);
  const queue = await page.locator('.tile', { hasText: 'Queue now' }).locator('.tile-value').textContent();
  assert.equal(queue.trim(), '5');
  await shot(page, 'dashboard');
  await checkA11y(page, 'dashboard');
});

test('instance page: upstream and downstream cycles with no instance yet are named', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  // A cycle of e2e_transform a day ahead: no e2e_extract or e2e_load
  // instance exists for it (and keplerd holds it: its time has not come).
  const at = Date.now() + 86400e3;
  const r = await api(page, 'POST', `/tasks/${ids.e2e_transform}/backfill`, {
    from: new Date(at - 3600e3).toISOString(),
    to: new Date(at).toISOString(),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.created.length, 1);
  const id = r.body.created[0];
  try {
    const d = (await api(page, 'GET', `/instances/${id}`)).body;
    await page.goto(`/app/instances/${id}`);
    const table = page.getByTestId('deps');
    await table.waitFor({ timeout: T });
    for (const [dir, task] of [
      ['upstream', 'e2e_extract'],
      ['downstream', 'e2e_load'],
    ]) {
      const row = table.locator(`tr[data-dep="${dir}"][data-task="${task}"]`);
      assert.match(await row.textContent({ timeout: T }), /not created yet/, `${dir} ${task} not created yet`);
      const dep = (dir === 'upstream' ? d.upstreams : d.downstreams).find((x) => x.task_name === task);
      assert.equal(dep.schedule_time, d.schedule_time, `${dir} of the same cycle`);
      assert.equal(dep.instance_id, null);
    }
    await shot(page, 'instance-deps-not-created');
    await checkA11y(page, 'instance-deps-not-created');
  } finally {
    await api(page, 'POST', `/instances/${id}/actions/kill`, { reason: 'e2e' });
  }
});

test('at 390 px wide, tables scroll sideways to the state column and the icon-only navigation is labelled', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`/app/instances?task_id=${ids.e2e_extract}`);
  await until(async () => (await page.locator('tr[data-instance]').count()) > 0, 'instances listed');
  // The page itself does not scroll sideways; the table does, in its card.
  const pageWide = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(pageWide <= 390, `the page fits (${pageWide} px)`);
  const state = page.locator('tr[data-instance] [data-state]').first();
  const box0 = await state.boundingBox();
  const table = page.locator('table:has(tr[data-instance])');
  const tb = await table.boundingBox();
  if (box0.x + box0.width > 390) {
    // Scrolled as a user does, with the wheel (or a swipe) over the table, a
    // notch at a time. A notch's scroll is animated and ends when the page
    // gets to it: each is let come to rest before the next, so a loaded
    // machine neither stops short nor piles notches up past the column.
    await page.mouse.move(Math.min(tb.x + 40, 380), tb.y + 60);
    const rest = async (from) => {
      let last;
      return until(async () => {
        const b = await state.boundingBox();
        const still = b.x !== from && b.x === last;
        last = b.x;
        return still && b;
      }, 'the table at rest after a notch of the wheel');
    };
    let b = box0;
    for (let i = 0; i < 20 && b.x + b.width > 390; i++) {
      await page.mouse.wheel(100, 0);
      b = await rest(b.x);
    }
  }
  const box = await state.boundingBox();
  assert.ok(box.x >= 0 && box.x + box.width <= 390, `the state column is in view (${box.x}..${box.x + box.width})`);
  // Every navigation link has a name and a tooltip; the page shown is marked.
  const links = page.locator('nav[aria-label="Main"] a.nav-item');
  const n = await links.count();
  assert.ok(n >= 5);
  for (let i = 0; i < n; i++) {
    const a = links.nth(i);
    assert.ok(await a.getAttribute('title'), `link ${i} has a tooltip`);
    assert.ok(await a.getAttribute('aria-label'), `link ${i} has a label`);
  }
  const cur = page.locator('nav[aria-label="Main"] a[aria-current="page"]');
  assert.equal(await cur.count(), 1, 'one link marks the current page');
  assert.equal(await cur.getAttribute('title'), 'Instances');
  await shot(page, 'narrow-instances');
  await checkA11y(page, 'narrow-instances');
  const one = await api(page, 'GET', `/instances?task_id=${ids.e2e_transform}&limit=1`);
  for (const [path, name] of [
    ['/app/dashboard', 'narrow-dashboard'],
    [`/app/tasks?q=e2e_`, 'narrow-tasks'],
    [`/app/instances/${one.body.items[0].id}`, 'narrow-instance'],
  ]) {
    await page.goto(path);
    await page.locator('.page-head').first().waitFor({ timeout: T });
    await page.locator('.loading').first().waitFor({ state: 'detached', timeout: T }).catch(() => undefined);
    const w = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(w <= 390, `${path} fits (${w} px)`);
    await shot(page, name);
    await checkA11y(page, name);
  }
});

/** Skips t, with the reason, when galaxyd has no route for path yet. */
async function needs(t, page, path) {
  const r = await api(page, 'GET', path);
  return serves(t, r, `GET /api/v1${path}`);
}

/** Skips t when r says the platform lacks the route: galaxyd (404 with
 * field "path") or halleyd behind it (501 "not implemented"). */
function serves(t, r, what) {
  if (r.status === 404 && r.body?.error?.field === 'path') {
    t.skip(`galaxyd does not serve ${what} yet`);
    return false;
  }
  if (r.status === 501) {
    t.skip(`${what}: ${r.body?.error?.message ?? 'not implemented'}`);
    return false;
  }
  return true;
}

test('API tokens: the secret is shown once, works as a Bearer token, and stops working once revoked', async (t) => {
  const page = await open(t);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE });
  await login(page, DEV);
  if (!(await needs(t, page, '/tokens'))) return;
  await page.goto('/app/tokens');
  await page.getByTestId('token-form').waitFor({ timeout: T });
  await page.getByRole('button', { name: 'Create token' }).click();
  assert.match(await page.locator('[data-field="name"] .field-error').textContent(), /name/, 'a name is required');
  await checkA11y(page, 'tokens with an error');
  await page.locator('input[name="token-name"]').fill('e2e-ci');
  await page.getByRole('button', { name: 'Create token' }).click();
  const secretBox = page.getByTestId('token-secret');
  await secretBox.waitFor({ timeout: T });
  const secret = await secretBox.inputValue();
  assert.ok(secret.length >= 20, `a real secret (${secret.length} characters)`);
  await page.getByTestId('copy-secret').click();
  await page.getByTestId('copy-secret').filter({ hasText: 'Copied' }).waitFor({ timeout: T });
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret, 'the copy button copies the secret');
  await page.locator('tr[data-token="e2e-ci"]').waitFor({ timeout: T });
  await shot(page, 'tokens');
  await checkA11y(page, 'tokens');

  // The secret works on its own, without the session cookie.
  const bearer = (s) => fetch(`${BASE}/api/v1/tasks?q=e2e_`, { headers: { Authorization: `Bearer ${s}` } });
  const ok = await bearer(secret);
  assert.equal(ok.status, 200);
  assert.equal((await ok.json()).items.length, 3, 'the token sees what its user sees');
  assert.equal((await bearer(`${secret}x`)).status, 401, 'a wrong secret is refused');

  // Shown once: after a reload only the name is listed.
  await page.reload();
  await page.locator('tr[data-token="e2e-ci"]').waitFor({ timeout: T });
  assert.equal(await page.getByTestId('token-secret').count(), 0, 'the secret is not shown again');
  assert.ok(!(await page.content()).includes(secret), 'nor anywhere in the page');

  await page.locator('tr[data-token="e2e-ci"]').getByRole('button', { name: 'Revoke' }).click();
  await page.locator('[data-confirm]').click();
  await until(async () => (await page.locator('tr[data-token="e2e-ci"]').count()) === 0, 'token gone from the list');
  assert.equal((await bearer(secret)).status, 401, 'a revoked token is refused');
});

test('streams: a stream created through the API is listed, with its units and spec', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  if (!(await needs(t, page, '/streams'))) return;
  const spec = {
    name: 'e2e_clicks',
    business: 'b42',
    source: { type: 'file', path: '/data/clicks' },
    format: { type: 'delimited', delimiter: '|', fields: ['id', 'ts', 'iface', 'user', 'url'] },
    interface: { field: 'iface' },
    interfaces: ['login', 'pay'],
    time: { field: 'ts', format: '%Y-%m-%d %H:%M:%S', timezone: 'UTC' },
    bucket: 'hour',
  };
  const put = await api(page, 'PUT', '/streams/e2e_clicks', { spec, active: true });
  if (!serves(t, put, 'PUT /api/v1/streams/{name}')) return;
  assert.equal(put.status, 200, JSON.stringify(put.body));
  await page.goto('/app/streams');
  const row = page.locator('tr[data-stream="e2e_clicks"]');
  await row.waitFor({ timeout: T });
  assert.match(await row.textContent(), /b42.*file.*hour/);
  await shot(page, 'streams');
  await checkA11y(page, 'streams');
  await row.getByRole('link', { name: 'e2e_clicks' }).click();
  await page.waitForURL(/\/app\/streams\/e2e_clicks$/);
  await page.getByText('No data units').waitFor({ timeout: T });
  assert.match(await page.locator('.spec-json').textContent(), /"business": "b42"/);
  // The interface filter offers the declared interfaces and lands in the URL.
  await page.getByLabel('Interface').selectOption('pay');
  await page.waitForURL(/interface=pay/);
  await shot(page, 'stream');
  await checkA11y(page, 'stream');

  // A broken spec is refused with the field named, and nothing changes.
  await page.getByRole('button', { name: 'Edit spec' }).click();
  await page.locator('textarea[name="stream-spec"]').fill(JSON.stringify({ ...spec, bucket: 'fortnight' }));
  await page.getByRole('button', { name: 'Save and publish' }).click();
  await page.locator('[data-field="spec"] .field-error').waitFor({ timeout: T });
  await checkA11y(page, 'stream spec editor with an error');
  const still = await api(page, 'GET', '/streams/e2e_clicks');
  assert.equal(still.body.spec.bucket, 'hour');
  assert.equal(still.body.version, put.body.version);
});

/** A .tar.gz holding one small file, made here (ustar header + data). */
function tarGz(name, text) {
  const data = Buffer.from(text);
  const h = Buffer.alloc(512);
  const put = (s, off, len) => h.write(s.slice(0, len), off, 'ascii');
  const oct = (n, len) => n.toString(8).padStart(len - 1, '0') + '\0';
  put(name, 0, 100);
  put(oct(0o755, 8), 100, 8);
  put(oct(0, 8), 108, 8);
  put(oct(0, 8), 116, 8);
  put(oct(data.length, 12), 124, 12);
  put(oct(Math.floor(Date.now() / 1000), 12), 136, 12);
  h.fill(' ', 148, 156);
  put('0', 156, 1);
  put('ustar\u000000', 257, 8);
  let sum = 0;
  for (const b of h) sum += b;
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8);
  const pad = Buffer.alloc((512 - (data.length % 512)) % 512);
  return gzipSync(Buffer.concat([h, data, pad, Buffer.alloc(1024)]));
}

test('packages: upload a .tar.gz and see it listed with its checksum', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  if (!(await needs(t, page, '/packages'))) return;
  const dir = mkdtempSync(join(tmpdir(), 'orr-e2e-pkg-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const archive = tarGz('run.sh', '#!/bin/sh\necho from the e2e package\n');
  const file = join(dir, 'e2e-scripts.tar.gz');
  writeFileSync(file, archive);
  await page.goto('/app/packages');
  await page.getByTestId('package-upload').waitFor({ timeout: T });
  await page.locator('input[name="archive"]').setInputFiles(file);
  assert.equal(await page.locator('input[name="package-name"]').inputValue(), 'e2e-scripts', 'the name follows the file');
  await page.getByRole('button', { name: 'Upload' }).click();
  const row = page.locator('tr[data-package="e2e-scripts"]');
  await row.waitFor({ timeout: T });
  const sha = createHash('sha256').update(archive).digest('hex');
  const list = await api(page, 'GET', '/packages');
  const got = list.body.items.find((p) => p.name === 'e2e-scripts');
  assert.equal(got.sha256, sha, 'the server hashed the bytes the browser sent');
  assert.equal(got.size, archive.length);
  assert.match(await row.textContent(), new RegExp(sha.slice(0, 12)));
  await shot(page, 'packages');
  await checkA11y(page, 'packages');
});

test('data sources: an admin adds one and tests its connection', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  if (!(await needs(t, page, '/datasources'))) return;
  await page.goto('/app/admin/datasources');
  await page.getByRole('button', { name: '+ New data source' }).click();
  await page.locator('input[name="ds-name"]').fill('e2e_pg');
  await checkA11y(page, 'new data source dialog');
  // Port 9 (discard) on loopback: nothing listens, so the test must fail clearly.
  await page.getByLabel('Parameter 2 value').fill('9');
  await page.getByLabel('Parameter 3 value').fill('orrery');
  await page.getByLabel('Parameter 4 value').fill('orrery');
  await page.getByTestId('ds-save').click();
  const row = page.locator('tr[data-ds="e2e_pg"]');
  await row.waitFor({ timeout: T });
  const got = await api(page, 'GET', '/datasources/e2e_pg');
  assert.deepEqual(got.body.params, { host: '127.0.0.1', port: 9, database: 'orrery', user: 'orrery' });
  await row.getByRole('button', { name: 'Test' }).click();
  // Either galaxyd tried and failed to connect, or it says why it cannot test.
  await until(async () => /failed in \d+ ms|datasource_test_token/.test(await row.textContent()), 'a test result', T);
  await shot(page, 'admin-datasources');
  await checkA11y(page, 'admin-datasources');
});

test('instance page: process statistics and rows over recent runs', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  const list = await api(page, 'GET', `/instances?task_id=${ids.e2e_load}&order=desc&limit=1`);
  if (!(await needs(t, page, `/instances/${list.body.items[0].id}/stats`))) return;
  await page.goto(`/app/instances/${list.body.items[0].id}`);
  // No executor ran it here, so nothing was reported: the page says so.
  await page.getByTestId('proc-stats').filter({ hasText: 'No statistics reported' }).waitFor({ timeout: T });
  await page.getByText('No run of this task reported row counts yet').waitFor({ timeout: T });
});
