// objects.test.mjs - workflows as objects, the admin's users and teams, and
// the instance list, as a user meets them in the console:
//
// - a developer creates a workflow from the workflows page (tasks picked by
//   type-ahead), edits its description on its page, pauses it; a backfilled
//   instance of its task then waits, and says why on the instance page and
//   in the instance list, until the workflow is resumed and the instance
//   runs to success; a developer of another team sees no controls and is
//   refused by the API (403);
// - an admin searches users, edits one (role, teams), disables it from its
//   row (its login is refused with 401), and sees teams with their members;
// - the instance list filters by task with the type-ahead (no dropdown of
//   every task), searches text, and shows start, end and duration.
//
// Names start with objects_ (tasks, workflow, user) so nothing collides with
// the other files; every instance made here ends (success).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ADMIN, DEV, FIN, RUN_T, T, api, checkA11y, login, open, shot, until, useBrowser } from './lib.mjs';

useBrowser();

// A yearly schedule: keplerd fires nothing while the tests run; backfills make the instances.
const YEARLY = '0 0 1 1 *';
const ids = {};

/** The page's width at 390 px, with what sticks out past it (for the message). */
async function widthAt390(page) {
  return page.evaluate(() => {
    const out = [];
    for (const el of document.querySelectorAll('body *')) {
      const r = el.getBoundingClientRect();
      if (r.right > 391 && out.length < 5) out.push(`${el.tagName.toLowerCase()}.${[...el.classList].join('.')} ${Math.round(r.right)}`);
    }
    return { wide: document.documentElement.scrollWidth, out: out.join(', ') };
  });
}

async function makeTask(page, name) {
  const r = await api(page, 'POST', '/tasks', {
    name,
    team: 'analytics',
    type: 'shell',
    schedule: YEARLY,
    config: { command: `echo ${name}-ran` },
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  ids[name] = r.body.id;
}

test('a workflow is created, described, paused (its instance waits and says why) and resumed (it runs)', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  await makeTask(page, 'objects_load');
  await makeTask(page, 'objects_report');

  await page.goto('/app/workflows');
  await page.getByRole('heading', { name: 'Workflows', exact: true }).waitFor({ timeout: T });
  const form = page.getByTestId('wf-new');
  await form.getByLabel('Workflow name').fill('objects_flow');
  await form.getByLabel('Description').fill('Loads the objects and reports on them.');
  // Tasks by type-ahead: type part of the name, pick the suggestion.
  const pick = form.getByRole('combobox', { name: 'Add a task' });
  for (const name of ['objects_load', 'objects_report']) {
    await pick.fill(name.replace('objects_', 'ects_'));
    await form.getByRole('option', { name: new RegExp(`^${name}`) }).click({ timeout: T });
  }
  assert.match(await form.getByLabel('Tasks of the new workflow').textContent(), /objects_load.*objects_report/);
  await form.getByRole('button', { name: 'Create workflow' }).click();
  await page.waitForURL(/\/app\/workflows\/objects_flow$/, { timeout: T });
  const head = page.getByTestId('wf-header');
  await head.waitFor({ timeout: T });
  assert.match(await head.textContent(), /objects_flow.*Loads the objects.*analytics.*2 tasks/s);

  // Edit the description in place.
  await head.getByRole('button', { name: 'Edit' }).click();
  await head.getByLabel('Description').fill('Loads the objects every year.');
  await head.getByRole('button', { name: 'Save' }).click();
  await until(async () => /every year/.test(await page.getByTestId('wf-description').textContent()), 'the new description shown');
  assert.equal((await api(page, 'GET', '/workflows/objects_flow')).body.description, 'Loads the objects every year.');

  // Pause, with a confirmation; the banner says who and what it means.
  await head.getByRole('button', { name: /Pause/ }).click();
  await page.locator('[data-confirm]').click();
  await page.getByTestId('wf-paused').waitFor({ timeout: T });
  assert.match(await page.getByTestId('wf-paused').textContent(), new RegExp(`Paused by ${DEV[0]}`));
  await until(async () => (await page.getByTestId('paused-tag').count()) === 2, 'both tasks marked paused');
  await shot(page, 'objects-workflow-paused');
  await checkA11y(page, 'the paused workflow page');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'objects-workflow-paused-390');
  await checkA11y(page, 'the paused workflow page at 390 px');
  const { wide, out } = await widthAt390(page);
  assert.ok(wide <= 390, `the workflow page fits 390 px (${wide}: ${out})`);
  await page.setViewportSize({ width: 1440, height: 900 });

  // A developer of another team: no controls, and the API refuses.
  const fin = await open(t);
  await login(fin, FIN);
  await fin.goto('/app/workflows/objects_flow');
  await fin.getByTestId('wf-header').waitFor({ timeout: T });
  assert.equal(await fin.getByTestId('wf-header').getByRole('button', { name: /Resume|Pause|Edit/ }).count(), 0, 'no controls for another team');
  assert.equal((await api(fin, 'POST', '/workflows/objects_flow/resume', {})).status, 403);
  assert.equal((await api(fin, 'POST', '/workflows/objects_nope/pause', {})).status, 404);

  // Backfilled while paused: the instance waits, and says why.
  const bf = await api(page, 'POST', `/tasks/${ids.objects_load}/backfill`, { from: '2025-01-01T00:00:00Z', to: '2025-01-01T00:00:01Z' });
  assert.equal(bf.status, 200, JSON.stringify(bf.body));
  const inst = bf.body.created[0];
  ids.instance = inst;
  await page.goto(`/app/instances/${inst}`);
  await page.getByTestId('paused-note').waitFor({ timeout: T });
  assert.match(await page.getByTestId('paused-note').textContent(), /objects_flow.*paused by/s);
  assert.match(await page.getByTestId('instance-state').textContent(), /Waiting/);
  await shot(page, 'objects-instance-held');
  await checkA11y(page, 'the held instance');
  await page.goto(`/app/instances?task_id=${ids.objects_load}`);
  await page.locator(`tr[data-instance="${inst}"] [data-testid="paused-tag"]`).waitFor({ timeout: T });
  // Still waiting: keplerd has seen the backfill (events are handled in
  // order) and holds it; the state comes from halleyd.
  assert.equal((await api(page, 'GET', `/instances/${inst}`)).body.state, 'waiting');

  // Resume from the workflows list; the instance runs.
  await page.goto('/app/workflows');
  const row = page.locator('tr[data-workflow="objects_flow"]');
  await row.getByRole('button', { name: 'Resume objects_flow' }).click({ timeout: T });
  await page.locator('[data-confirm]').click();
  await until(async () => /active/.test(await row.textContent()), 'the list shows it active');
  await until(async () => (await api(page, 'GET', `/instances/${inst}`)).body.state === 'success', 'the held instance ran', RUN_T);
  await shot(page, 'objects-workflows');
  await checkA11y(page, 'the workflow list');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'objects-workflows-390');
  await checkA11y(page, 'the workflow list at 390 px');
  const listWide = await widthAt390(page);
  assert.ok(listWide.wide <= 390, `the workflow list fits 390 px (${listWide.wide}: ${listWide.out})`);
  const audit = await api(page, 'GET', '/workflows/objects_flow');
  assert.equal(audit.body.paused, false);
});

test('an admin searches users, edits one, disables it (its login is refused) and sees teams with members', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  const user = ['objects_user', 'objects-user-password'];
  assert.equal((await api(page, 'POST', '/users', { name: user[0], password: user[1], role: 'developer', teams: ['analytics'] })).status, 201);

  await page.goto('/app/admin/users');
  await page.getByLabel('Search users by name').fill('objects_');
  const row = page.locator(`tr[data-user="${user[0]}"]`);
  await row.waitFor({ timeout: T });
  await until(async () => (await page.locator('tr[data-user]').count()) === 1, 'the search keeps one user');
  assert.match(await row.textContent(), /developer.*analytics.*yes/);

  await row.getByRole('button', { name: `Edit ${user[0]}` }).click();
  await page.getByLabel(`Role of ${user[0]}`).selectOption('viewer');
  await page.getByLabel(`Teams of ${user[0]}`).fill('analytics, finance');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await until(async () => /viewer.*analytics.*finance/.test(await row.textContent()), 'the row shows the new role and teams');

  const teams = page.getByTestId('team-table');
  await until(async () => new RegExp(user[0]).test(await teams.locator('tr[data-team="finance"]').textContent()), 'finance lists the user');
  await shot(page, 'objects-admin-users');
  await checkA11y(page, 'the users and teams');

  await row.getByRole('button', { name: `Disable ${user[0]}` }).click();
  await page.locator('[data-confirm]').click();
  await until(async () => /disabled/.test(await row.textContent()), 'the row shows the user disabled');
  const r = await page.evaluate(
    async ([n, p]) => (await fetch('/api/v1/auth/login', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: n, password: p }) })).status,
    user,
  );
  assert.equal(r, 401, 'a disabled user cannot log in');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'objects-admin-users-390');
  await checkA11y(page, 'the users and teams at 390 px');
  const { wide, out } = await widthAt390(page);
  assert.ok(wide <= 390, `the users page fits 390 px (${wide}: ${out})`);
});

test('the instance list filters by task with a type-ahead, searches text, and shows start, end and duration', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  assert.ok(ids.objects_report, 'the first test made the tasks');
  const bf = await api(page, 'POST', `/tasks/${ids.objects_report}/backfill`, { from: '2025-01-01T00:00:00Z', to: '2025-01-01T00:00:01Z' });
  assert.equal(bf.status, 200);
  const inst = bf.body.created[0];
  await until(async () => (await api(page, 'GET', `/instances/${inst}`)).body.state === 'success', 'the report ran', RUN_T);

  await page.goto('/app/instances');
  const task = page.getByRole('combobox', { name: 'Task' });
  await task.fill('objects_rep');
  await page.getByRole('option', { name: /^objects_report/ }).click({ timeout: T });
  await page.waitForURL(new RegExp(`task_id=${ids.objects_report}`), { timeout: T });
  const line = page.locator(`tr[data-instance="${inst}"]`);
  await line.waitFor({ timeout: T });
  await until(async () => (await page.locator('tr[data-instance]').count()) === 1, 'only the report');
  const dur = await line.locator('[data-col="duration"]').textContent();
  assert.match(dur, /\d+ (ms|s)/, `a duration (${dur})`);
  for (const h of ['Started', 'Ended', 'Duration']) await page.getByRole('columnheader', { name: h }).waitFor({ timeout: T });
  await shot(page, 'objects-instances');
  await checkA11y(page, 'the instance list');
  // The type-ahead open, with its suggestions.
  await task.fill('objects_');
  await page.getByRole('option', { name: /^objects_load/ }).waitFor({ timeout: T });
  await checkA11y(page, 'the task type-ahead open');
  await shot(page, 'objects-typeahead');
  await task.press('Escape');

  // Keyboard: clear, type, arrow down, Enter.
  await page.getByRole('button', { name: /Clear the task filter/ }).click();
  await until(async () => !/task_id=/.test(page.url()), 'the task filter cleared');
  await task.fill('objects_lo');
  await page.getByRole('option', { name: /^objects_load/ }).waitFor({ timeout: T });
  await task.press('Enter');
  await page.waitForURL(new RegExp(`task_id=${ids.objects_load}`), { timeout: T });
  await page.getByRole('button', { name: /Clear the task filter/ }).click();

  // Text search: the task name, in any case.
  await page.getByLabel('Search instances').fill('OBJECTS_REPORT');
  await page.waitForURL(/q=OBJECTS_REPORT/, { timeout: T });
  await until(async () => (await page.locator('tr[data-instance]').count()) === 1 && (await line.count()) === 1, 'the search finds the report');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'objects-instances-390');
  await checkA11y(page, 'the instance list at 390 px');
  const { wide, out } = await widthAt390(page);
  assert.ok(wide <= 390, `the instance list fits 390 px (${wide}: ${out})`);
});
