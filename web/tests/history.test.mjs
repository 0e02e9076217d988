// history.test.mjs - the run history of a workflow in the browser: the grid
// of cycles x tasks shows each cell's state (and a dashed square where a
// task has no instance), a click opens that instance, the Gantt chart lists
// the tasks of the chosen cycle with their spans, and the graph of an older
// cycle shows that cycle's states, not the newest's.
//
// The workflow is this file's own (history_*): history_a succeeds, history_b
// (after a) fails, history_c waits behind a strong upstream on a deactivated
// task (history_gate), which keplerd never counts as met. Three cycles are
// backfilled for a and b, two for c; c's older instance is killed, so the
// middle cycle's graph differs from the newest's (killed vs waiting), and the
// oldest cycle has no instance of c. The newest is killed at the end, so the
// file leaves nothing waiting or running for the files after it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CRON, DEV, RUN_T, T, api, checkA11y, login, open, shot, until, useBrowser } from './lib.mjs';

useBrowser();

const WF = `history_wf_${process.pid}`;
const ids = {};
const inst = {}; // task name -> instance ids, oldest first

async function make(page, name, command, upstream) {
  const r = await api(page, 'POST', '/tasks', {
    name,
    team: 'analytics',
    type: 'shell',
    schedule: CRON,
    retries: { max: 0 },
    config: { command },
    ...(upstream ? { upstreams: [{ kind: 'strong', task: upstream }] } : {}),
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  ids[name] = r.body.id;
}

async function backfill(page, name, hours) {
  const now = Date.now();
  const r = await api(page, 'POST', `/tasks/${ids[name]}/backfill`, {
    from: new Date(now - hours * 3600e3).toISOString(),
    to: new Date(now).toISOString(),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.created.length, hours, `${hours} fire times of ${name}`);
  inst[name] = r.body.created;
}

test('run history: grid, click to the instance, Gantt and graph of a chosen cycle', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  const sfx = `${process.pid}`;
  const A = `history_a_${sfx}`, B = `history_b_${sfx}`, C = `history_c_${sfx}`, G = `history_gate_${sfx}`;
  await make(page, G, 'true');
  const off = await api(page, 'DELETE', `/tasks/${ids[G]}`);
  assert.ok(off.status === 200 || off.status === 204, `the gate task is deactivated (${off.status})`);
  await make(page, A, 'echo history-a');
  await make(page, B, 'echo history-b; exit 3', A);
  await make(page, C, 'echo never', G);
  const wf = await api(page, 'PUT', `/workflows/${WF}`, { team: 'analytics', task_ids: [ids[A], ids[B], ids[C]] });
  assert.equal(wf.status, 200, JSON.stringify(wf.body));
  await backfill(page, A, 3);
  await backfill(page, B, 3);
  await backfill(page, C, 2);
  try {
    await look(page, A, B, C, sfx);
  } finally {
    // Leave nothing waiting: later files count the queue.
    const k = await api(page, 'POST', `/instances/${inst[C][1]}/actions/kill`, {});
    assert.equal(k.status, 200, JSON.stringify(k.body));
  }
});

async function look(page, A, B, C, sfx) {
  const k = await api(page, 'POST', `/instances/${inst[C][0]}/actions/kill`, {});
  assert.equal(k.status, 200, JSON.stringify(k.body));
  // a and b run through keplerd and executord: a succeeds, b fails.
  await until(async () => {
    const states = await Promise.all([...inst[A], ...inst[B]].map(async (id) => (await api(page, 'GET', `/instances/${id}`)).body.state));
    return states.slice(0, 3).every((s) => s === 'success') && states.slice(3).every((s) => s === 'failed');
  }, 'a succeeded and b failed in every cycle', RUN_T);

  // The spans are the instance's own transitions.
  const d = (await api(page, 'GET', `/instances/${inst[A][2]}`)).body;
  const run = (await api(page, 'GET', `/workflows/${WF}/runs/${d.schedule_time}`)).body;
  const span = run.instances.find((i) => i.id === inst[A][2]).spans[0];
  const at = (to) => Date.parse(d.transitions.find((x) => x.to === to).at);
  const msg = JSON.stringify({ span, transitions: d.transitions });
  assert.equal(Date.parse(span.queued_at), at('ready'), msg);
  assert.equal(Date.parse(span.started_at), at('running'), msg);
  assert.equal(Date.parse(span.ended_at), at('success'), msg);

  // The grid: three cycles, three tasks, each cell in its instance's state.
  await page.goto(`/app/workflows/${WF}/runs`);
  const grid = page.locator('[data-testid="run-grid"][data-ready="true"]');
  await grid.waitFor({ timeout: T });
  const cycles = await page.locator('[data-testid="run-grid"] button[data-cycle]').evaluateAll((bs) => bs.map((b) => b.dataset.cycle));
  assert.equal(cycles.length, 3, `three cycles: ${cycles}`);
  assert.deepEqual([...cycles].sort(), cycles, 'oldest on the left, newest on the right');
  const cell = (task, cycle) => page.locator(`[data-testid="run-grid"] [data-task="${task}"][data-cycle="${cycle}"]`);
  for (let i = 0; i < 3; i++) {
    assert.equal(await cell(A, cycles[i]).getAttribute('data-state'), 'success', `a in cycle ${i}`);
    assert.equal(await cell(B, cycles[i]).getAttribute('data-state'), 'failed', `b in cycle ${i}`);
    assert.equal(await cell(A, cycles[i]).getAttribute('data-instance'), String(inst[A][i]));
  }
  assert.equal(await cell(C, cycles[0]).getAttribute('data-state'), null, 'c has no instance in the oldest cycle');
  assert.match(await cell(C, cycles[0]).getAttribute('aria-label'), /no instance/);
  assert.equal(await cell(C, cycles[1]).getAttribute('data-state'), 'killed');
  assert.equal(await cell(C, cycles[2]).getAttribute('data-state'), 'waiting');
  await shot(page, 'history-grid');

  // The Gantt of the newest cycle (the default) lists the tasks with spans.
  const panel = page.getByTestId('cycle-panel');
  assert.equal(await panel.getAttribute('data-cycle'), cycles[2]);
  const gantt = page.getByTestId('gantt');
  await gantt.waitFor({ timeout: T });
  for (const n of [A, B, C]) await gantt.locator(`[data-gantt-task="${n}"]`).waitFor({ timeout: T });
  assert.ok((await gantt.locator(`[data-gantt-task="${A}"] .gantt-bar`).count()) >= 1, 'a ran: a bar');
  assert.match(await gantt.locator(`[data-gantt-task="${A}"] .gantt-what`).textContent(), /ran /);
  assert.match(await gantt.locator(`[data-gantt-task="${C}"] .gantt-what`).textContent(), /did not run/);
  await checkA11y(page, 'run history: grid and Gantt');

  // The middle cycle's Gantt, then its graph: c killed there (waiting in the newest).
  // The panel names the chosen cycle at once but shows the newest cycle's
  // instances until that cycle's answer arrives: its states are waited for.
  await page.locator(`[data-testid="run-grid"] button[data-cycle="${cycles[1]}"]`).click();
  await page.locator(`[data-testid="cycle-panel"][data-cycle="${cycles[1]}"] [data-testid="gantt"]`).waitFor({ timeout: T });
  await page.locator('[data-view="graph"]').click();
  await page.locator('[data-testid="graph"][data-ready="true"]').waitFor({ timeout: T });
  assert.equal(await page.getByTestId('graph').getAttribute('data-nodes'), '3');
  assert.equal(await page.getByTestId('graph').getAttribute('data-edges'), '1', 'a -> b (c waits on a task outside the workflow)');
  const states = page.getByTestId('cycle-states');
  const stateOf = (task) => states.locator(`[data-task="${task}"]`).getAttribute('data-state');
  await until(
    async () => (await stateOf(C)) === 'killed' && (await stateOf(A)) === 'success' && (await stateOf(B)) === 'failed',
    'the middle cycle: c killed, a succeeded, b failed',
  );
  await shot(page, 'history-cycle-graph');
  await checkA11y(page, 'run history: graph of a cycle');
  // The oldest cycle's graph: no instance of c.
  await page.locator(`[data-testid="run-grid"] button[data-cycle="${cycles[0]}"]`).click();
  await until(async () => (await page.getByTestId('cycle-panel').getAttribute('data-cycle')) === cycles[0], 'the oldest cycle chosen');
  await until(async () => (await stateOf(C)) === 'none', 'c has no instance there');

  // A click on a cell opens that instance.
  await cell(B, cycles[1]).click();
  await page.waitForURL(`**/app/instances/${inst[B][1]}`, { timeout: T });
  await page.getByTestId('instance-state').locator('[data-state="failed"]').waitFor({ timeout: T });

  // At phone width the grid scrolls in its card; the Gantt stays readable.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`/app/workflows/${WF}/runs`);
  await grid.waitFor({ timeout: T });
  await gantt.waitFor({ timeout: T });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `the page fits 390 px (overflow ${overflow})`);
  await shot(page, 'history-narrow');
  await checkA11y(page, 'run history at 390 px');

  // Bad input shows as an error, not a blank page.
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`/app/workflows/history_none_${sfx}/runs`);
  await page.getByText(/no such workflow/i).waitFor({ timeout: T });
}
