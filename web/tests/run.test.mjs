// run.test.mjs - operators' runs in the browser: "Run now" from the task
// list runs the task's next slot at once, through keplerd and executord, to
// success, with a value of its parameter typed in the dialog, and the
// timeline names who asked; a backfill with its downstream
// tasks, one cycle at a time, made from the backfill dialog; "Rerun with…"
// on an instance lists (dry run) exactly its downstream instances of the
// same cycle, then reruns those and no other; bad input shows where it
// belongs (a schedule time that is no fire time, a pace of 0 cycles, a set
// with a running member).
//
// Tasks are this file's own (run_*, with the pid). A running member is made
// by construction: its command waits for a gate file the test creates.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CRON, DEV, GATES, RUN_T, T, api, checkA11y, localInput, login, open, shot, until, useBrowser } from './lib.mjs';

useBrowser();

const SFX = `${process.pid}`;

async function make(page, name, command, upstream, parameters) {
  const r = await api(page, 'POST', '/tasks', {
    name,
    team: 'analytics',
    type: 'shell',
    schedule: CRON,
    retries: { max: 0 },
    config: { command },
    ...(upstream ? { upstreams: [{ kind: 'strong', task: upstream }] } : {}),
    ...(parameters ? { parameters } : {}),
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.id;
}

const inst = async (page, id) => (await api(page, 'GET', `/instances/${id}`)).body;

async function openTaskRow(page, name) {
  await page.goto(`/app/tasks?q=${encodeURIComponent(name)}`);
  const row = page.locator('tr', { has: page.getByRole('link', { name, exact: true }) });
  await row.waitFor({ timeout: T });
  return row;
}

test('run now from the task list runs the next slot at once, to success', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  const name = `run_now_${SFX}`;
  await make(page, name, 'echo run-now region=${region}', undefined, { region: { default: 'eu' } });
  const row = await openTaskRow(page, name);
  await row.getByRole('button', { name: `Run now ${name}` }).click();
  const dialog = page.getByRole('dialog', { name: `Run ${name} now` });
  const when = dialog.getByLabel('Schedule time');
  // the next fire time of the task (at MINUTE, within the hour to come)
  await until(async () => (await when.inputValue()) !== '', 'the next fire time filled in');
  const slot = new Date(await when.inputValue());
  assert.ok(slot.getTime() > Date.now(), `the default slot is ahead (${slot.toISOString()})`);
  // the declared parameter, its default shown; a value typed is the run's own
  const region = dialog.getByLabel('region');
  await region.waitFor({ timeout: T });
  assert.equal(await region.getAttribute('placeholder'), 'eu');
  await region.fill('ap');
  await checkA11y(page, 'run now dialog');
  await shot(page, 'run-now-dialog');
  await dialog.getByTestId('run-now-submit').click();
  await page.waitForURL(/\/app\/instances\/\d+$/, { timeout: T });
  const id = Number(page.url().split('/').pop());
  // it runs now, not at its time (which is up to an hour away)
  await page.getByTestId('instance-state').locator('[data-state="success"]').waitFor({ timeout: RUN_T });
  const d = await inst(page, id);
  assert.equal(Date.parse(d.schedule_time), slot.getTime(), 'the slot chosen');
  assert.ok(Date.parse(d.finished_at) < slot.getTime(), 'finished before its schedule time');
  assert.equal(d.run_now, true);
  const log = await page.evaluate(async (i) => (await fetch(`/api/v1/instances/${i}/log/download`)).text(), id);
  assert.match(log, /^run-now region=ap$/m, `the run's value of the parameter: ${log}`);
  const row2 = d.transitions.find((x) => x.reason.startsWith('run now'));
  assert.ok(row2 && row2.actor === `user:${DEV[0]}`, `the timeline names who: ${JSON.stringify(d.transitions)}`);
  await checkA11y(page, 'instance page after run now');
  await shot(page, 'run-now-instance');
});

test('backfill with downstream, serial; rerun with downstream lists then reruns the cycle', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  const A = `run_a_${SFX}`, B = `run_b_${SFX}`, C = `run_c_${SFX}`, D = `run_d_${SFX}`;
  const ida = await make(page, A, 'echo a');
  await make(page, B, 'echo b', A);
  await make(page, C, 'echo c', B);
  await make(page, D, 'echo d'); // not downstream of a: never in the set

  // The backfill dialog: two hours of a, with b and c, one cycle at a time.
  const row = await openTaskRow(page, A);
  await row.getByRole('button', { name: 'Backfill' }).click();
  const dialog = page.getByRole('dialog', { name: `Backfill ${A}` });
  const now = new Date();
  await dialog.getByLabel('From').fill(localInput(new Date(now.getTime() - 2 * 3600e3)));
  await dialog.getByLabel('To').fill(localInput(now));
  await dialog.getByLabel(/Include downstream tasks/).check();
  const counted = dialog.getByTestId('backfill-downstream');
  await until(async () => /6 instances of 3 tasks, 4 downstream/.test(await counted.textContent()), 'the dry run counts a, b and c');
  await dialog.getByLabel('Cycles', { exact: true }).selectOption('serial');
  await checkA11y(page, 'backfill dialog with downstream');
  await shot(page, 'run-backfill-dialog');
  await dialog.getByTestId('backfill-submit').click();
  await dialog.getByTestId('backfill-result').getByText('One cycle runs at a time.').waitFor({ timeout: T });
  assert.equal(await dialog.locator('.big-number').textContent(), '6');
  await dialog.getByRole('button', { name: 'Done' }).click();

  const list = async (task) =>
    (await api(page, 'GET', `/instances?task_id=${task}&limit=10`)).body.items.sort((x, y) => x.schedule_time.localeCompare(y.schedule_time));
  const ids = {};
  for (const [n, tid] of [[A, ida]]) ids[n] = await list(tid);
  const byName = async (n) => (await api(page, 'GET', `/tasks?q=${n}`)).body.items.find((x) => x.name === n).id;
  ids[B] = await list(await byName(B));
  ids[C] = await list(await byName(C));
  assert.equal(ids[A].length + ids[B].length + ids[C].length, 6);
  assert.equal(ids[A][0].backfill.max_cycles, 1, 'paced serially');
  const all = [...ids[A], ...ids[B], ...ids[C]].map((i) => i.id);
  await until(async () => (await Promise.all(all.map((i) => inst(page, i)))).every((x) => x.state === 'success'), 'the backfill ran to success', RUN_T);

  // Rerun with downstream from a's newer instance: the dry run lists a, b, c of that cycle.
  const newer = ids[A][1];
  const want = [ids[A][1].id, ids[B][1].id, ids[C][1].id];
  await page.goto(`/app/instances/${newer.id}`);
  await page.getByTestId('instance-state').locator('[data-state="success"]').waitFor({ timeout: T });
  await page.locator('[data-action="rerun-set"]').click();
  const rd = page.getByRole('dialog', { name: new RegExp(`^Rerun ${A} of`) });
  await rd.locator('[data-testid="rerun-plan"][data-ready="true"][data-scope="downstream"]').waitFor({ timeout: T });
  const listed = await rd.locator('[data-testid="rerun-members"] tbody tr').evaluateAll((rs) => rs.map((r) => Number(r.dataset.instance)));
  assert.deepEqual(listed, want, 'the dry run lists a, b and c of that cycle, in order');
  assert.match(await rd.getByTestId('rerun-confirm').textContent(), /Rerun 3 instances/);
  await checkA11y(page, 'rerun dialog');
  await shot(page, 'run-rerun-dialog');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'run-rerun-dialog-narrow');
  await page.setViewportSize({ width: 1440, height: 900 });
  await rd.getByTestId('rerun-confirm').click();
  await page.locator('.toast', { hasText: '3 instances back to waiting' }).waitFor({ timeout: T });
  await until(async () => {
    const xs = await Promise.all(want.map((i) => inst(page, i)));
    return xs.every((x) => x.attempt === 2 && x.state === 'success');
  }, 'a, b and c of the cycle ran again to success', RUN_T);
  for (const i of [ids[A][0].id, ids[B][0].id, ids[C][0].id]) assert.equal((await inst(page, i)).attempt, 1, `instance ${i} of the other cycle did not rerun`);
  const dl = await list(await byName(D));
  assert.equal(dl.length, 0, 'd was never touched');
  await shot(page, 'run-rerun-done');
});

test('bad input: no fire time, a pace of 0 cycles, a set with a running member', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  const U = `run_up_${SFX}`, W = `run_wait_${SFX}`;
  const gate = join(GATES, `run-${SFX}`);
  const idu = await make(page, U, 'echo up');
  await make(page, W, `i=0; while [ ! -e ${gate} ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i + 1)); done`, U);

  // A schedule time that is no fire time: the error sits under the field.
  let row = await openTaskRow(page, U);
  await row.getByRole('button', { name: `Run now ${U}` }).click();
  let dialog = page.getByRole('dialog', { name: `Run ${U} now` });
  const when = dialog.getByLabel('Schedule time');
  await until(async () => (await when.inputValue()) !== '', 'the next fire time filled in');
  const off = new Date(await when.inputValue());
  off.setMinutes(off.getMinutes() + 7);
  await when.fill(localInput(off));
  await dialog.getByTestId('run-now-submit').click();
  await dialog.locator('[data-field="schedule_time"] .field-error').getByText(/not a fire time/).waitFor({ timeout: T });
  await checkA11y(page, 'run now dialog with an error');
  await shot(page, 'run-now-bad-time');
  await dialog.getByRole('button', { name: 'Cancel' }).click();

  // Parallel with 0 cycles at a time: named under its field.
  row = await openTaskRow(page, U);
  await row.getByRole('button', { name: 'Backfill' }).click();
  dialog = page.getByRole('dialog', { name: `Backfill ${U}` });
  const now = new Date();
  await dialog.getByLabel('From').fill(localInput(new Date(now.getTime() - 3600e3)));
  await dialog.getByLabel('To').fill(localInput(now));
  await dialog.getByLabel('Cycles', { exact: true }).selectOption('parallel');
  await dialog.getByLabel('Cycles at a time').fill('0');
  await dialog.getByTestId('backfill-submit').click();
  await dialog.locator('[data-field="max_cycles"] .field-error').waitFor({ timeout: T });
  assert.equal((await api(page, 'GET', `/instances?task_id=${idu}`)).body.items.length, 0, 'nothing created');
  await dialog.getByRole('button', { name: 'Cancel' }).click();

  // A set with a running member: the dialog says which, nothing reruns.
  const bf = await api(page, 'POST', `/tasks/${idu}/backfill`, {
    from: new Date(now.getTime() - 3600e3).toISOString(),
    to: now.toISOString(),
    include_downstream: true,
  });
  assert.equal(bf.status, 200, JSON.stringify(bf.body));
  assert.equal(bf.body.created.length, 2);
  const [up, wait] = bf.body.created;
  try {
    await until(async () => (await inst(page, wait)).state === 'running', 'the gated downstream runs', RUN_T);
    assert.equal((await inst(page, up)).state, 'success');
    await page.goto(`/app/instances/${up}`);
    await page.locator('[data-action="rerun-set"]').click();
    const rd = page.getByRole('dialog', { name: new RegExp(`^Rerun ${U} of`) });
    await rd.getByTestId('rerun-plan').getByText(new RegExp(`instance ${wait} \\(task ${W}\\) is running`)).waitFor({ timeout: T });
    assert.equal(await rd.getByTestId('rerun-confirm').isDisabled(), true, 'nothing to confirm');
    await checkA11y(page, 'rerun dialog naming a running member');
    await shot(page, 'run-rerun-running-error');
    // the instance alone is allowed
    await rd.getByLabel('What to rerun').selectOption('instance');
    await rd.locator('[data-testid="rerun-plan"][data-ready="true"][data-scope="instance"]').waitFor({ timeout: T });
    await shot(page, 'run-rerun-running-member');
    await rd.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await inst(page, up)).attempt, 1, 'nothing reran');
  } finally {
    writeFileSync(gate, 'go');
    await until(async () => (await inst(page, wait)).state === 'success', 'the gated downstream ends', RUN_T);
  }
});
