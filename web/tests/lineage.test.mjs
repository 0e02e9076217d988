// lineage.test.mjs - the lineage page over edges recorded when tasks are
// saved.
//
// Two transfer tasks of this file's own (lineage_*, manual only, so nothing
// runs): A moves t1 -> t2 with a column mapping (id, amount -> total as
// numeric), B moves t2 -> t3 by position and has A as its strong upstream.
// The tables are reached through a dsn naming database lineage_wh, so their
// nodes are lineage_wh.public.<table>. The search box completes t2's name;
// picking it shows t1 -> A -> t2 -> B -> t3 and the dependency A -> B; the
// Columns tab shows the path t1.amount -> t2.total -> t3.total with the cast;
// a name in the edge list re-centres the view; a column name completes too.
// Both tasks are deactivated at the end, which hides their edges.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEV, T, api, checkA11y, login, open, shot, until, useBrowser } from './lib.mjs';

useBrowser();

const P = process.pid;
const DSN = 'postgresql://lineage@127.0.0.1/lineage_wh';
const t = (n) => `lineage_t${n}_${P}`;
const node = (n) => `lineage_wh.public.${t(n)}`;
const A = `lineage_a_${P}`;
const B = `lineage_b_${P}`;

function transfer(name, from, to, writer, extra = {}) {
  return {
    name,
    team: 'analytics',
    type: 'transfer',
    ...extra,
    config: {
      reader: { type: 'postgres', dsn: DSN, table: from, ...(writer.columns ? { columns: ['id', 'total'] } : {}) },
      writers: [{ type: 'postgres', dsn: DSN, table: to, ...writer }],
    },
  };
}

async function edgeRows(page) {
  return page.locator('table.lineage-edges tbody tr').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent.trim())));
}

test('lineage: tables and tasks, the column path, name completion, re-centring', async (tt) => {
  const page = await open(tt);
  await login(page, DEV);
  const a = await api(
    page,
    'POST',
    '/tasks',
    transfer(A, t(1), t(2), {
      mapping: [
        { target: 'id', source: 'id' },
        { target: 'total', source: 'amount', cast: 'numeric' },
      ],
    }),
  );
  assert.equal(a.status, 201, JSON.stringify(a.body));
  const b = await api(page, 'POST', '/tasks', transfer(B, t(2), t(3), { columns: ['id', 'total'] }, { upstreams: [{ kind: 'strong', task: A }] }));
  assert.equal(b.status, 201, JSON.stringify(b.body));

  // The search box completes the table's name; picking it centres the page.
  await page.goto('/app/lineage');
  const search = page.getByRole('combobox', { name: 'Find a table, column, task or stream' });
  await search.waitFor({ timeout: T });
  await search.fill(`t2_${P}`);
  const option = page.getByRole('option', { name: new RegExp(`table ${node(2).replace(/\./g, '\\.')}$`) });
  await option.waitFor({ timeout: T });
  await option.click();
  await until(async () => new URL(page.url()).searchParams.get('name') === node(2), 'the URL names t2');

  // The table graph: t1 -> t2 moved by A, t2 -> t3 moved by B, A -> B.
  let rows = [];
  await until(async () => (rows = await edgeRows(page)).length === 3, 'three edges listed');
  const has = (from, to, by) => rows.some((r) => r[0].endsWith(from) && r[1].endsWith(to) && (by === null || r[2] === by));
  assert.ok(has(node(1), node(2), A), `t1 -> t2 by A: ${JSON.stringify(rows)}`);
  assert.ok(has(node(2), node(3), B), `t2 -> t3 by B: ${JSON.stringify(rows)}`);
  assert.ok(
    rows.some((r) => r[0] === `task ${A}` && r[1] === `task ${B}` && /strong dependency/.test(r[3])),
    `the dependency A -> B: ${JSON.stringify(rows)}`,
  );
  await page.locator('section[aria-label="Table graph"] canvas').first().waitFor({ timeout: T });
  await checkA11y(page, 'lineage table graph');
  await shot(page, 'lineage-tables');

  // The column graph of t2: its columns' upstream and downstream columns.
  await page.getByRole('tab', { name: 'Columns' }).click();
  await until(async () => new URL(page.url()).searchParams.get('view') === 'columns', 'the URL says columns');
  await until(async () => (rows = await edgeRows(page)).length === 4, 'four column edges listed');
  const col = (from, to) => rows.find((r) => r[0] === `column ${from}` && r[1] === `column ${to}`);
  assert.ok(/cast to numeric/.test(col(`${node(1)}.amount`, `${node(2)}.total`)?.[3] ?? ''), `amount -> total with its cast: ${JSON.stringify(rows)}`);
  assert.ok(col(`${node(1)}.id`, `${node(2)}.id`), 'id -> id');
  assert.ok(col(`${node(2)}.total`, `${node(3)}.total`), 't2.total -> t3.total by position');
  assert.ok(col(`${node(2)}.id`, `${node(3)}.id`), 't2.id -> t3.id by position');
  await page.locator('section[aria-label="Column graph"] canvas').first().waitFor({ timeout: T });
  await checkA11y(page, 'lineage column graph');
  await shot(page, 'lineage-columns');

  // A column's path over two hops, re-centred from the list.
  await page.getByLabel('Depth').selectOption('2');
  await page.getByRole('button', { name: `${node(3)}.total` }).first().click();
  await until(async () => {
    const q = new URL(page.url()).searchParams;
    return q.get('kind') === 'column' && q.get('name') === `${node(3)}.total`;
  }, 'centred on t3.total');
  await until(async () => (rows = await edgeRows(page)).length === 2, 'the path of t3.total');
  assert.ok(col(`${node(1)}.amount`, `${node(2)}.total`) && col(`${node(2)}.total`, `${node(3)}.total`), `t1.amount -> t2.total -> t3.total: ${JSON.stringify(rows)}`);

  // Re-centring on a table from the list; then a column name completes.
  await page.goto(`/app/lineage?kind=table&name=${encodeURIComponent(node(2))}&depth=1`);
  await until(async () => (rows = await edgeRows(page)).length === 3, 'three edges again');
  await page.getByRole('button', { name: node(3) }).first().click();
  await until(async () => new URL(page.url()).searchParams.get('name') === node(3), 'centred on t3');
  await until(async () => (rows = await edgeRows(page)).some((r) => r[0].endsWith(node(2)) && r[1].endsWith(node(3))), 't3 shows where it comes from');
  await search.fill(`t1_${P}.amo`);
  await page.getByRole('option', { name: `column ${node(1)}.amount` }).waitFor({ timeout: T });
  await search.press('Escape');

  // 390 px: the page fits without scrolling sideways.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`/app/lineage?kind=table&name=${encodeURIComponent(node(2))}&depth=2`);
  await until(async () => (await edgeRows(page)).length === 3, 'edges at 390 px');
  await page.locator('section[aria-label="Table graph"] canvas').first().waitFor({ timeout: T });
  await until(async () => (await page.evaluate(() => document.documentElement.scrollWidth)) <= 390, 'the page fits 390 px');
  await checkA11y(page, 'lineage at 390 px');
  await shot(page, 'lineage-390');

  // Deactivated tasks: their edges leave the page.
  for (const id of [a.body.id, b.body.id]) assert.equal((await api(page, 'DELETE', `/tasks/${id}`)).status, 200);
  const r = await api(page, 'GET', `/lineage?kind=table&name=${encodeURIComponent(node(2))}`);
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.edges, [], 'no edges once both tasks are deactivated');
});
