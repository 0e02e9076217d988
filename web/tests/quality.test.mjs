// quality.test.mjs - quality checks in the console: a task of type quality
// on a data source (PostgreSQL of the test stack) shown in the designer's
// check editor, run twice by keplerd and the executor: the first run passes,
// then rows that break two checks are added and the second run fails with
// reason quality (retried once, as any failed attempt). Its instance page lists each check's value, threshold and
// outcome, and charts each check's value over the two runs with its
// threshold. Accessibility checks and screenshots at 1440 and 390 px.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { ADMIN, CRON, DEV, RUN_T, T, api, checkA11y, login, open, shot, until, useBrowser } from './lib.mjs';

useBrowser();

const SFX = `${process.pid}`;
const DS = `quality_pg_${SFX}`;
const TABLE = `quality_orders_${SFX}`;
const TASK = `quality_orders_${SFX}`;
const PG = process.env.ORRERY_PG_DSN;

const psql = (sql) =>
  execFileSync('psql', [PG, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-Atc', `SET client_min_messages = warning; ${sql}`], { encoding: 'utf8' });

/** Backfills the one fire time between hours and hours-1 ago; its instance id. */
async function backfillOne(page, taskId, hours) {
  const now = Date.now();
  const r = await api(page, 'POST', `/tasks/${taskId}/backfill`, {
    from: new Date(now - hours * 3600e3).toISOString(),
    to: new Date(now - (hours - 1) * 3600e3).toISOString(),
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.created.length, 1, 'one fire time in the hour');
  return r.body.created[0];
}

async function ended(page, id) {
  let inst;
  await until(
    async () => {
      inst = (await api(page, 'GET', `/instances/${id}`)).body;
      return ['success', 'failed', 'timed_out'].includes(inst.state);
    },
    `instance ${id} ends`,
    RUN_T,
  );
  return inst;
}

test('a quality task: the check editor, a run that passes, one that fails with reason quality, the chart', async (t) => {
  assert.ok(PG, 'ORRERY_PG_DSN is set by the test stack');
  const u = new URL(PG);
  psql(
    `DROP TABLE IF EXISTS ${TABLE}, ${TABLE}_copy; CREATE TABLE ${TABLE} (id bigint, amount numeric, at timestamptz);` +
      `CREATE TABLE ${TABLE}_copy (LIKE ${TABLE});` +
      `INSERT INTO ${TABLE} SELECT g, g, now() FROM generate_series(1, 40) g`,
  );
  t.after(() => psql(`DROP TABLE IF EXISTS ${TABLE}, ${TABLE}_copy`));

  const page = await open(t);
  await login(page, ADMIN);
  const ds = await api(page, 'PUT', `/datasources/${DS}`, {
    kind: 'postgresql',
    params: { host: u.hostname, port: Number(u.port || 5432), user: decodeURIComponent(u.username), database: u.pathname.slice(1) },
    password: decodeURIComponent(u.password),
  });
  assert.ok(ds.status === 200 || ds.status === 201, JSON.stringify(ds.body));

  await login(page, DEV);
  // The config is checked when saved: a row_count check needs a transfer.
  const spec = {
    name: TASK,
    team: 'analytics',
    type: 'quality',
    schedule: CRON,
    // a failed check is retried like any failed attempt
    retries: { max: 1, delay: '1s' },
    config: {
      datasource: DS,
      checks: [{ name: 'rows', kind: 'row_count' }],
    },
  };
  const bad = await api(page, 'POST', '/tasks', spec);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.field, 'spec.config.checks[0].kind');
  spec.config.checks = [
    { name: 'id_unique', kind: 'unique', table: TABLE, columns: ['id'] },
    { name: 'amount_nulls', kind: 'null_ratio', table: TABLE, column: 'amount', max_ratio: 0.2 },
    { name: 'no_negative', kind: 'sql', query: `SELECT id, amount FROM ${TABLE} WHERE amount < 0 ORDER BY id` },
  ];
  const made = await api(page, 'POST', '/tasks', spec);
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const tid = made.body.id;

  // The designer shows the checks in the editor, one card per check.
  await page.goto(`/app/tasks/${tid}`);
  const editor = page.getByTestId('quality-checks');
  await editor.waitFor({ timeout: T });
  await until(async () => (await editor.locator('.quality-check').count()) === 3, 'three check cards');
  assert.equal(await editor.locator('[data-check="amount_nulls"] input[type="number"]').inputValue(), '0.2');
  assert.equal(await editor.locator('[data-check="no_negative"] textarea').inputValue(), spec.config.checks[2].query);
  // The kind offers no row_count outside a transfer.
  const kinds = await editor.locator('[data-check="id_unique"] select').locator('option').allTextContents();
  assert.ok(!kinds.includes('Row count'), kinds.join(','));
  await checkA11y(page, 'designer quality checks');
  await shot(page, 'quality-designer');

  // Run 1 passes.
  const first = await backfillOne(page, tid, 2);
  const i1 = await ended(page, first);
  assert.equal(i1.state, 'success', JSON.stringify(i1));

  // Rows that break two checks: a duplicate id and negative amounts.
  psql(`INSERT INTO ${TABLE} VALUES (7, -3, now()), (8, -4, now())`);
  const second = await backfillOne(page, tid, 1);
  let i2;
  await until(
    async () => {
      i2 = (await api(page, 'GET', `/instances/${second}`)).body;
      return i2.attempt === 2 && i2.state === 'failed';
    },
    'the retry fails too',
    RUN_T,
  );
  assert.equal(i2.reason, 'quality');

  await page.goto(`/app/instances/${second}`);
  const panel = page.getByTestId('quality-panel');
  await panel.waitFor({ timeout: T });
  await page.getByText(/· quality$/).first().waitFor({ timeout: T });
  const row = (n) => panel.locator(`tr[data-check="${n}"]`);
  await row('no_negative').waitFor({ timeout: T });
  assert.equal(await row('no_negative').getAttribute('data-ok'), 'false');
  assert.match(await row('no_negative').textContent(), /2.*≤ 0.*failed/);
  assert.equal(await row('id_unique').getAttribute('data-ok'), 'false');
  assert.equal(await row('amount_nulls').getAttribute('data-ok'), 'true');
  // One chart per check, a point for each run, drawn.
  for (const n of ['id_unique', 'amount_nulls', 'no_negative']) {
    const chart = page.getByTestId(`chart-quality-${n}`);
    await until(async () => (await chart.getAttribute('data-ready')) === 'true' && (await chart.getAttribute('data-points')) === '2', `chart of ${n} drawn with both runs`);
  }
  // value 0 then 2, threshold 0 twice
  await until(async () => (await page.getByTestId('chart-quality-no_negative').getAttribute('data-total')) === '2', 'the no_negative chart totals 2');
  await checkA11y(page, 'instance quality checks');
  await shot(page, 'quality-instance');
  await page.setViewportSize({ width: 390, height: 844 });
  await until(async () => (await page.getByTestId('chart-quality-no_negative').getAttribute('data-ready')) === 'true', 'chart drawn at 390 px');
  await checkA11y(page, 'instance quality checks, narrow');
  await shot(page, 'quality-instance-390');
  await page.goto(`/app/tasks/${tid}`);
  await page.getByTestId('quality-checks').waitFor({ timeout: T });
  await shot(page, 'quality-designer-390');

  // Leave nothing scheduled.
  const off = await api(page, 'DELETE', `/tasks/${tid}`);
  assert.ok(off.status === 200 || off.status === 204, `deactivated (${off.status})`);
});

test("a transfer's quality key in the designer: the same editor, with row_count, kept in the job", async (t) => {
  psql(`CREATE TABLE IF NOT EXISTS ${TABLE} (id bigint, amount numeric, at timestamptz); CREATE TABLE IF NOT EXISTS ${TABLE}_copy (LIKE ${TABLE})`);
  t.after(() => psql(`DROP TABLE IF EXISTS ${TABLE}, ${TABLE}_copy`));
  const page = await open(t);
  await login(page, DEV);
  // A check's column is looked up in the writer's table when saved.
  const wrong = await api(page, 'POST', '/tasks', {
    name: `quality_copy_${SFX}`,
    team: 'analytics',
    type: 'transfer',
    schedule: CRON,
    config: {
      reader: { type: 'postgres', datasource: DS, table: TABLE },
      writers: [{ type: 'postgres', datasource: DS, table: `${TABLE}_copy` }],
      quality: [{ name: 'nulls', kind: 'null_ratio', column: 'no_such_column' }],
    },
  });
  assert.equal(wrong.status, 400, JSON.stringify(wrong.body));
  assert.equal(wrong.body.error.field, 'spec.config.quality[0].column');
  const made = await api(page, 'POST', '/tasks', {
    name: `quality_copy_${SFX}`,
    team: 'analytics',
    type: 'transfer',
    schedule: CRON,
    retries: { max: 0 },
    config: {
      reader: { type: 'postgres', datasource: DS, table: TABLE },
      writers: [{ type: 'postgres', datasource: DS, table: `${TABLE}_copy` }],
      quality: [
        { name: 'rows', kind: 'row_count' },
        { name: 'amount_nulls', kind: 'null_ratio', column: 'amount', max_ratio: 0.1 },
      ],
    },
  });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const id = made.body.id;
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`/app/tasks/${id}`);
  const editor = page.getByTestId('quality-checks');
  await editor.waitFor({ timeout: T });
  await until(async () => (await editor.locator('.quality-check').count()) === 2, 'two check cards');
  const kinds = await editor.locator('[data-check="rows"] select').locator('option').allTextContents();
  assert.ok(kinds.includes('Row count'), kinds.join(','));
  // A threshold changed in the editor shows in the job's JSON and is saved.
  await editor.locator('[data-check="amount_nulls"] input[type="number"]').fill('0.3');
  await until(async () => /"max_ratio": 0.3/.test(await page.getByTestId('spec-panel').locator('pre').textContent()), 'the job follows the editor');
  await checkA11y(page, 'designer transfer quality checks');
  await shot(page, 'quality-designer-transfer');
  await page.getByTestId('save-task').click();
  await until(async () => {
    const got = (await api(page, 'GET', `/tasks/${id}`)).body;
    return got.spec?.config?.quality?.[1]?.max_ratio === 0.3;
  }, 'the new threshold saved');
  const off = await api(page, 'DELETE', `/tasks/${id}`);
  assert.ok(off.status === 200 || off.status === 204, `deactivated (${off.status})`);
});
