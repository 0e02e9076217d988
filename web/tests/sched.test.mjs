// sched.test.mjs - "why is it waiting" and the resources page, in the
// browser against the real scheduler (run.sh starts keplerd and one
// executord).
//
// Each blocker is made by construction: an upstream instance that waits at
// a gate file (the downstream names it, running), then the one executor
// drained on the resources page (the downstream, ready once the gate
// opens, names the drain); resuming it lets the downstream run. Team quotas
// and task type limits are set on the page and checked through the API,
// and put back (no quota, no limits) so the files after this one are not
// held by them. Everything this file makes is named sched_*.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ADMIN, CRON, EXECUTOR, GATES, RUN_T, T, VIEWER, api, checkA11y, login, open, shot, until, useBrowser } from './lib.mjs';

useBrowser();

const SUFFIX = `${process.pid}`;

async function mkTask(page, spec) {
  const r = await api(page, 'POST', '/tasks', { team: 'analytics', type: 'shell', schedule: CRON, timezone: 'UTC', ...spec });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.id;
}

/** Creates the one instance of task id whose fire time lies in the past hour
 * window [now-90m, now-30m): CRON fires hourly at now+30m, so exactly one. */
async function onePast(page, id) {
  const r = await api(page, 'POST', `/tasks/${id}/backfill`, {
    from: new Date(Date.now() - 90 * 60e3).toISOString(),
    to: new Date(Date.now() - 30 * 60e3).toISOString(),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.created.length, 1, 'one instance');
  return r.body.created[0];
}

async function executorRow(page) {
  const row = page.locator(`[data-testid="executors"] tr[data-executor="${EXECUTOR}"]`);
  await row.waitFor({ timeout: T });
  return row;
}

test('why it waits: a running upstream, then a drained executor; resuming it lets the instance run', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  const gate = join(GATES, `sched-${SUFFIX}`);
  try {
    await heldThenDrained(page, gate);
  } finally {
    // whatever happened, nothing stays held for the files after this one
    writeFileSync(gate, '');
    await api(page, 'PATCH', `/executors/${EXECUTOR}`, { drained: false });
  }
});

async function heldThenDrained(page, gate) {
  const up = await mkTask(page, {
    name: `sched_up_${SUFFIX}`,
    config: { command: `i=0; while [ ! -e ${gate} ] && [ $i -lt 3000 ]; do sleep 0.1; i=$((i + 1)); done` },
  });
  const down = await mkTask(page, {
    name: `sched_down_${SUFFIX}`,
    upstreams: [{ kind: 'strong', task: `sched_up_${SUFFIX}` }],
    config: { command: 'true' },
  });
  const upId = await onePast(page, up);
  const downId = await onePast(page, down);

  // 1. the upstream runs, held at its gate: the downstream names it
  await until(async () => (await api(page, 'GET', `/instances/${upId}`)).body.state === 'running', 'the upstream runs', RUN_T);
  await page.goto(`/app/instances/${downId}`);
  const upLine = page.locator('[data-testid="blockers"] li[data-blocker="upstream"]');
  await until(async () => /sched_up_/.test(await upLine.textContent()) && /Running/.test(await upLine.textContent()), 'the upstream named, running');
  assert.match(await upLine.textContent(), new RegExp(`instance #${upId}`), 'with its instance');
  await page.getByTestId('blockers-evaluated').waitFor({ timeout: T });
  const api1 = (await api(page, 'GET', `/instances/${downId}/blockers`)).body;
  assert.equal(api1.blockers[0].kind, 'upstream');
  assert.equal(api1.blockers[0].instance_id, upId);
  await shot(page, 'sched-why-upstream');
  await checkA11y(page, 'instance page, why it waits');

  // 2. drain the executor on the resources page; open the gate: the
  // downstream is ready, and the drain is what holds it
  await page.goto('/app/resources');
  let row = await executorRow(page);
  // executord reported itself at its start: the row says when it last did
  assert.match((await row.getByTestId('heartbeat').textContent()) ?? '', /^last heartbeat /);
  await row.getByRole('button', { name: `Drain ${EXECUTOR}` }).click();
  await until(async () => (await row.getAttribute('data-drained')) === 'yes', 'the row shows it drained');
  const ex = (await api(page, 'GET', '/executors')).body.items.find((x) => x.id === EXECUTOR);
  assert.equal(ex.drained, true, 'drained in the API');
  await shot(page, 'sched-resources-drained');
  await checkA11y(page, 'resources page');
  writeFileSync(gate, '');
  await until(async () => (await api(page, 'GET', `/instances/${upId}`)).body.state === 'success', 'the upstream ends (it was running)', RUN_T);
  await page.goto(`/app/instances/${downId}`);
  const exLine = page.locator('[data-testid="blockers"] li[data-blocker="executor"]');
  await until(async () => /drained/.test((await exLine.textContent()) ?? ''), 'the drain named', RUN_T);
  assert.equal((await api(page, 'GET', `/instances/${downId}`)).body.state, 'ready', 'ready, not dispatched');
  await shot(page, 'sched-why-drained');

  // 3. resume: it runs
  await page.goto('/app/resources');
  row = await executorRow(page);
  await row.getByRole('button', { name: `Resume ${EXECUTOR}` }).click();
  await until(async () => (await row.getAttribute('data-drained')) === 'no', 'the row shows it resumed');
  await until(async () => (await api(page, 'GET', `/instances/${downId}`)).body.state === 'success', 'the downstream runs once resumed', RUN_T);
  // its timeline says what its dependencies were
  const tr = (await api(page, 'GET', `/instances/${downId}`)).body.transitions;
  assert.ok(tr.some((x) => x.to === 'ready' && /^dependencies met/.test(x.reason)), 'made ready by its dependencies');
}

test('resources: an admin sets a team quota and task type limits; specs above a limit are refused', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  const team = `sched_team_${SUFFIX}`;
  assert.equal((await api(page, 'POST', '/teams', { name: team })).status, 201);
  try {
    await quotaAndLimits(page, team);
  } finally {
    await api(page, 'PUT', `/quotas/${team}`, { max_running: 0, max_slots: 0 });
    await api(page, 'PUT', '/task-types/transfer/limits', { limits: {} });
  }
});

async function quotaAndLimits(page, team) {
  await page.goto('/app/resources');
  const q = page.locator(`[data-testid="quotas"] tr[data-team="${team}"]`);
  await q.waitFor({ timeout: T });
  await q.getByLabel(`Running instances at most, team ${team}`).fill('2');
  await q.getByLabel(`Slots at most, team ${team}`).fill('-1');
  await q.getByRole('button', { name: `Save the quota of ${team}` }).click();
  await q.locator('[data-field="max_slots"] .field-error').waitFor({ timeout: T }); // checked before sending
  await q.getByLabel(`Slots at most, team ${team}`).fill('8');
  await q.getByRole('button', { name: `Save the quota of ${team}` }).click();
  await until(async () => {
    const got = (await api(page, 'GET', '/quotas')).body.items.find((x) => x.team === team);
    return got && got.max_running === 2 && got.max_slots === 8;
  }, 'the quota saved');

  // limits of transfer tasks: a bad maximum is named, a good one saved
  const form = page.locator('[data-type-limits="transfer"]');
  await form.getByLabel('transfer: Memory, maximum').fill('lots');
  await form.getByRole('button', { name: 'Save transfer limits' }).click();
  await form.locator('[data-field="memory.max"] .field-error').waitFor({ timeout: T });
  await form.getByLabel('transfer: Memory, maximum').fill('1g');
  await form.getByLabel('transfer: Processes, default').fill('64');
  await form.getByRole('button', { name: 'Save transfer limits' }).click();
  await until(async () => {
    const got = (await api(page, 'GET', '/task-types/limits')).body.items.find((x) => x.type === 'transfer');
    return got && got.limits.memory?.max === '1g' && got.limits.pids?.default === 64;
  }, 'the limits saved');
  const spec = { name: `sched_big_${SUFFIX}`, team: 'analytics', type: 'transfer', config: {} };
  const big = await api(page, 'POST', '/tasks', { ...spec, limits: { memory: '2g' } });
  assert.equal(big.status, 400, JSON.stringify(big.body));
  assert.equal(big.body.error.field, 'spec.limits.memory');
  const ok = await api(page, 'POST', '/tasks', { ...spec, limits: { memory: '512m' } });
  assert.equal(ok.status, 201, JSON.stringify(ok.body));
  assert.deepEqual(ok.body.spec.limits, { memory: '512m', pids: 64 }, 'the default given');
  await api(page, 'DELETE', `/tasks/${ok.body.id}`);
  await shot(page, 'sched-resources');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto('/app/resources');
  await executorRow(page);
  await shot(page, 'sched-resources-390');
  await checkA11y(page, 'resources page at 390 px');
}

test('resources: a viewer reads executors, quotas and limits but changes nothing', async (t) => {
  const page = await open(t);
  await login(page, VIEWER);
  await page.goto('/app/resources');
  await executorRow(page);
  assert.equal(await page.getByRole('button', { name: /^(Drain|Resume|Edit)/ }).count(), 0, 'no buttons to change executors');
  await page.getByTestId('quotas').waitFor({ timeout: T });
  assert.equal(await page.locator('[data-testid="quotas"] input').count(), 0, 'quotas read only');
  const r = await api(page, 'PATCH', `/executors/${EXECUTOR}`, { drained: true });
  assert.equal(r.status, 403, 'the API refuses a viewer');
});
