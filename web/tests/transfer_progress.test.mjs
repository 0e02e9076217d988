// transfer_progress.test.mjs - the instance page's Transfer panel: a
// transfer task of this file's own (transfer_progress_*, PostgreSQL of the
// test stack) copies two tables, the second held locked by the test (ACCESS
// EXCLUSIVE in an open transaction), so the run reads the first table and
// waits: by construction, not by timing. While it is held the panel shows
// the rows read and written, the dirty rows, the rate, an estimated end, the
// split plan's bar (1 of 2 shards) and the chart of the rate, updated
// live; released, the run ends and the panel keeps the final figures and
// the chart. Accessibility checks and screenshots at 1440 and 390 px.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { test } from 'node:test';
import { CRON, DEV, RUN_T, T, api, checkA11y, login, open, shot, until, useBrowser } from './lib.mjs';

useBrowser();

const SFX = `${process.pid}`;
const A = `transfer_progress_a_${SFX}`;
const B = `transfer_progress_b_${SFX}`;
const DST = `transfer_progress_dst_${SFX}`;
const TASK = `transfer_progress_${SFX}`;
const PG = process.env.ORRERY_PG_DSN;

const psql = (sql) =>
  execFileSync('psql', [PG, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-Atc', `SET client_min_messages = warning; ${sql}`], { encoding: 'utf8' });

/** Holds an ACCESS EXCLUSIVE lock on table in a psql of its own until
 * release() commits. */
async function lockTable(table) {
  const p = spawn('psql', [PG, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-At'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  p.stdout.on('data', (d) => (out += d));
  p.stdin.write(`BEGIN; LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE; SELECT 'locked';\n`);
  await until(async () => out.includes('locked'), `the lock on ${table}`);
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      p.stdin.end('COMMIT;\n');
    },
    kill() {
      if (!released) p.kill();
    },
  };
}

const text = async (page, id) => ((await page.getByTestId(id).locator('.stat-value').textContent()) ?? '').trim();

test('a held transfer: the live Transfer panel with its plan bar and rate chart, then the final figures', async (t) => {
  assert.ok(PG, 'ORRERY_PG_DSN is set by the test stack');
  psql(
    `DROP TABLE IF EXISTS ${A}, ${B}, ${DST};` +
      `CREATE TABLE ${A} (id bigint PRIMARY KEY, v text); CREATE TABLE ${B} (LIKE ${A}); CREATE TABLE ${DST} (LIKE ${A});` +
      `INSERT INTO ${A} SELECT g, md5(g::text) FROM generate_series(1, 3000) g;` +
      `INSERT INTO ${B} SELECT g, md5(g::text) FROM generate_series(3001, 5000) g;` +
      `ANALYZE ${A}; ANALYZE ${B}`,
  );
  const gate = await lockTable(B);
  t.after(() => {
    gate.kill();
    psql(`DROP TABLE IF EXISTS ${A}, ${B}, ${DST}`);
  });

  const page = await open(t);
  await login(page, DEV);
  const made = await api(page, 'POST', '/tasks', {
    name: TASK,
    team: 'analytics',
    type: 'transfer',
    schedule: CRON,
    config: {
      name: TASK,
      batch_rows: 100,
      reader: { type: 'postgres', dsn: PG, tables: [A, B], channels: 1 },
      writers: [{ type: 'postgres', dsn: PG, table: DST, mode: 'truncate' }],
    },
  });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const tid = made.body.id;
  t.after(() => api(page, 'DELETE', `/tasks/${tid}`).catch(() => null));
  const now = Date.now();
  const bf = await api(page, 'POST', `/tasks/${tid}/backfill`, {
    from: new Date(now - 2 * 3600e3).toISOString(),
    to: new Date(now - 1 * 3600e3).toISOString(),
  });
  assert.equal(bf.status, 200, JSON.stringify(bf.body));
  assert.equal(bf.body.created.length, 1, 'one fire time in the hour');
  const id = bf.body.created[0];

  // The run reads the first table, then waits for the lock on the second.
  await until(() => Number(psql(`SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = '${B}'::regclass`)) >= 1, 'the reader to wait for the locked table', RUN_T);

  await page.goto(`/app/instances/${id}`);
  const panel = page.getByTestId('transfer-panel');
  await until(async () => (await panel.getAttribute('data-running')) === 'true' && (await text(page, 'tp-rows-read')) === '3,000', 'the live panel with the first table read');
  assert.match(await text(page, 'tp-rows-written'), /^[\d,]+$/);
  assert.equal(await text(page, 'tp-dirty'), '0');
  assert.match(await text(page, 'tp-rate'), /rows\/s$/);
  assert.match(await text(page, 'tp-eta'), /^in \d/, 'an estimated end while held');
  const bar = panel.getByRole('progressbar', { name: 'Shards of the split plan read' });
  assert.equal(await bar.getAttribute('aria-valuenow'), '1');
  assert.equal(await bar.getAttribute('aria-valuemax'), '2');
  assert.match((await panel.getByTestId('transfer-plan').textContent()) ?? '', /3,000 of about 5,000 rows \(60 %\)/);
  // The chart grows while the run is held: a point a second.
  const chart = page.getByTestId('chart-transfer-rate');
  await until(async () => (await chart.getAttribute('data-ready')) === 'true' && Number(await chart.getAttribute('data-points')) >= 2, 'the rate chart with two points');
  const before = Number(await chart.getAttribute('data-points'));
  await until(async () => Number(await chart.getAttribute('data-points')) > before, 'the chart updated live');
  await checkA11y(page, 'instance transfer panel (running)');
  await shot(page, 'transfer-progress-running');
  await page.setViewportSize({ width: 390, height: 844 });
  await until(async () => (await chart.getAttribute('data-ready')) === 'true', 'chart drawn at 390 px');
  await shot(page, 'transfer-progress-running-390');
  await page.setViewportSize({ width: 1440, height: 900 });

  // Released: the run ends and the panel keeps the final figures and the chart.
  gate.release();
  await until(async () => (await api(page, 'GET', `/instances/${id}`)).body.state === 'success', 'the run succeeds', RUN_T);
  await until(async () => (await panel.getAttribute('data-running')) === 'false' && (await page.getByTestId('transfer-final').count()) === 1, 'the final figures', T);
  assert.equal(await text(page, 'tp-rows-read'), '5,000');
  assert.equal(await text(page, 'tp-rows-written'), '5,000');
  assert.equal(await text(page, 'tp-dirty'), '0');
  assert.equal(await panel.getByRole('progressbar').getAttribute('aria-valuenow'), '2', 'every shard read');
  assert.match((await panel.getByTestId('transfer-plan').textContent()) ?? '', /5,000 rows read; the source's estimate was about 5,000/);
  await until(async () => (await chart.getAttribute('data-ready')) === 'true' && Number(await chart.getAttribute('data-points')) >= 2, 'the chart stays');
  assert.equal(psql(`SELECT count(*) FROM ${DST}`).trim(), '5000');
  await checkA11y(page, 'instance transfer panel (ended)');
  await shot(page, 'transfer-progress-ended');
  await page.setViewportSize({ width: 390, height: 844 });
  await until(async () => (await chart.getAttribute('data-ready')) === 'true', 'chart drawn at 390 px');
  await shot(page, 'transfer-progress-ended-390');
});
