// a11y.test.mjs - every route of the console passes axe-core's WCAG 2.1 A
// and AA rules (checkA11y in lib.mjs), as an admin and as a viewer, at
// desktop width and at 390 px; dialogs keep the focus while they are open
// and give it back to what opened them; the navigation marks the page shown;
// keyboard focus is visible.
//
// The routes are those of web/src/main.tsx's router. The file makes its own
// task pair (a11y_*), one finished and one waiting instance, a stream and a
// named workflow, so that the pages with an id show real content; it kills
// what it leaves waiting.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ADMIN, CRON, T, RUN_T, VIEWER, api, checkA11y, login, open, shot, until, useBrowser } from './lib.mjs';

useBrowser();

const made = { adminSections: [] }; // what the routes with an id show, the admin sections
const ALL_WIDTHS = [
  ['desktop', { width: 1440, height: 900 }],
  ['narrow', { width: 390, height: 844 }],
];
// ORRERY_E2E_A11Y_WIDTHS=desktop[,narrow] audits only those widths. The
// audits judge the console's markup and CSS, which do not depend on how
// the daemons were built: deploy/test.sh audits both widths in the normal
// build and only the desktop width in the sanitizer build, whose point is
// the daemons (a narrow page asks them the same as a wide one).
const only = (process.env.ORRERY_E2E_A11Y_WIDTHS ?? '').split(',').filter(Boolean);
for (const w of only) assert.ok(ALL_WIDTHS.some(([n]) => n === w), `ORRERY_E2E_A11Y_WIDTHS: no width "${w}"`);
const WIDTHS = only.length ? ALL_WIDTHS.filter(([n]) => only.includes(n)) : ALL_WIDTHS;

/** Waits until the page shown has settled: its heading is drawn and
 * nothing is loading any more. */
async function settle(page) {
  await page.locator('main h1, .login-card h1, h1').first().waitFor({ timeout: T });
  await until(async () => (await page.locator('.loading, .spinner').count()) === 0, 'the page loaded');
}

function routes() {
  return [
    ['dashboard', '/app/dashboard'],
    ['tasks', '/app/tasks'],
    ['task-new', '/app/tasks/new'],
    ['task', `/app/tasks/${made.task}`],
    ['workflows', '/app/workflow'],
    ['workflow', `/app/workflow/${made.task}`],
    ['workflow-list', '/app/workflows'],
    ...(made.flow
      ? [
          ['workflow-named', `/app/workflows/${made.flow}`],
          ['workflow-runs', `/app/workflows/${made.flow}/runs`],
        ]
      : []),
    ['instances', '/app/instances'],
    ['instance-finished', `/app/instances/${made.finished}`],
    ['instance-waiting', `/app/instances/${made.waiting}`],
    ['streams', '/app/streams'],
    ...(made.stream ? [['stream', `/app/streams/${made.stream}`]] : []),
    ['lineage', '/app/lineage'],
    ['packages', '/app/packages'],
    ['tokens', '/app/tokens'],
    ['resources', '/app/resources'],
    ['alerts-history', '/app/alerts/history'],
    ['alerts-rules', '/app/alerts/rules'],
    ['alerts-channels', '/app/alerts/channels'],
    ['alerts-silences', '/app/alerts/silences'],
    ['calendars', '/app/calendars'],
    // every section the admin page links to (a new one is checked too)
    ...made.adminSections.map((to) => [`admin-${to.split('/').pop()}`, to]),
    ['not-found', '/app/no/such/page'],
  ];
}

test('setup: a task pair, a finished and a waiting instance, a stream', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  const up = await api(page, 'POST', '/tasks', {
    name: 'a11y_extract',
    team: 'analytics',
    type: 'shell',
    schedule: CRON,
    config: { command: 'echo a11y' },
  });
  assert.equal(up.status, 201, JSON.stringify(up.body));
  const down = await api(page, 'POST', '/tasks', {
    name: 'a11y_load',
    team: 'analytics',
    type: 'shell',
    schedule: CRON,
    config: { command: 'echo a11y' },
    upstreams: [{ kind: 'strong', task: 'a11y_extract' }],
  });
  assert.equal(down.status, 201, JSON.stringify(down.body));
  made.task = down.body.id;
  // One cycle an hour ago runs to its end; one a day ahead waits for its
  // time (keplerd does not start it before).
  const hour = 3600e3;
  const past = Math.floor(Date.now() / hour) * hour - hour;
  const r1 = await api(page, 'POST', `/tasks/${up.body.id}/backfill`, {
    from: new Date(past - hour).toISOString(),
    to: new Date(past).toISOString(),
  });
  assert.equal(r1.status, 200, JSON.stringify(r1.body));
  assert.equal(r1.body.created.length, 1);
  made.finished = r1.body.created[0];
  const future = past + 25 * hour;
  const r2 = await api(page, 'POST', `/tasks/${made.task}/backfill`, {
    from: new Date(future - hour).toISOString(),
    to: new Date(future).toISOString(),
  });
  assert.equal(r2.status, 200, JSON.stringify(r2.body));
  assert.equal(r2.body.created.length, 1);
  made.waiting = r2.body.created[0];
  await until(
    async () => ['success', 'failed'].includes((await api(page, 'GET', `/instances/${made.finished}`)).body?.state),
    'the past cycle ran',
    RUN_T,
  );
  const spec = {
    name: 'a11y_clicks',
    business: 'b7',
    source: { type: 'file', path: '/data/a11y' },
    format: { type: 'delimited', delimiter: '|', fields: ['id', 'ts', 'iface'] },
    interface: { field: 'iface' },
    interfaces: ['login'],
    time: { field: 'ts', format: '%Y-%m-%d %H:%M:%S', timezone: 'UTC' },
    bucket: 'hour',
  };
  await page.goto('/app/admin/pools');
  const sections = page.getByRole('navigation', { name: 'Administration' }).getByRole('link');
  await sections.first().waitFor({ timeout: T });
  made.adminSections = await sections.evaluateAll((as) => as.map((a) => new URL(a.href).pathname));
  assert.ok(made.adminSections.length >= 4, `the admin sections (${made.adminSections})`);
  const s = await api(page, 'PUT', '/streams/a11y_clicks', { spec, active: true });
  if (s.status === 200) made.stream = 'a11y_clicks';
  // a named workflow of the pair, for its run history (where served)
  const w = await api(page, 'PUT', '/workflows/a11y_flow', { team: 'analytics', task_ids: [up.body.id, down.body.id] });
  if (w.status === 200 || w.status === 201) made.flow = 'a11y_flow';
});

test(`the login page passes WCAG 2.1 AA at ${WIDTHS.map(([w]) => w).join(' and ')} width`, async (t) => {
  const page = await open(t);
  for (const [w, size] of WIDTHS) {
    await page.setViewportSize(size);
    await page.goto('/app/login');
    await page.locator('input[name="name"], input[type="text"]').first().waitFor({ timeout: T });
    await checkA11y(page, `login ${w}`);
    // an error shown is checked too
    await page.locator('input[type="password"]').fill('wrong');
    await page.locator('input[name="name"], input[type="text"]').first().fill('nobody');
    await page.getByRole('button', { name: /sign in/i }).click();
    await page.locator('[role="alert"]').first().waitFor({ timeout: T });
    await checkA11y(page, `login error ${w}`);
  }
});

for (const [who, user] of [
  ['admin', ADMIN],
  ['viewer', VIEWER],
]) {
  for (const [w, size] of WIDTHS) {
    test(`every page passes WCAG 2.1 AA as ${who} at ${w} width`, async (t) => {
      const page = await open(t);
      await page.setViewportSize(size);
      await login(page, user);
      for (const [name, path] of routes()) {
        await t.test(name, async () => {
          await page.goto(path);
          await settle(page);
          await checkA11y(page, `${name} as ${who}, ${w}`);
          if (who === 'admin') await shot(page, `a11y-${name}-${w}`);
        });
      }
    });
  }
}

test('a dialog takes the focus, keeps it on Tab and Shift+Tab, closes on Escape and gives the focus back', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  await page.goto(`/app/instances/${made.waiting}`);
  await settle(page);
  const opener = page.locator('[data-action="kill"]');
  await opener.focus();
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog');
  await dialog.waitFor({ timeout: T });
  const inDialog = () => page.evaluate(() => !!document.activeElement?.closest('[role="dialog"]'));
  await until(inDialog, 'the focus in the dialog');
  // the dialog has a name (its title) and is modal
  assert.match(await dialog.getAttribute('aria-labelledby'), /./);
  assert.equal(await dialog.getAttribute('aria-modal'), 'true');
  await checkA11y(page, 'instance with the kill dialog open');
  // round and round: more presses than the dialog has stops, both ways
  const seen = new Set();
  for (let i = 0; i < 6; i++) {
    await page.keyboard.press('Tab');
    assert.ok(await inDialog(), `Tab ${i + 1} stays in the dialog`);
    seen.add(await page.evaluate(() => document.activeElement?.textContent?.trim() || document.activeElement?.getAttribute('aria-label')));
  }
  assert.ok(seen.size >= 3, `Tab visits the close, cancel and kill buttons (${[...seen]})`);
  for (let i = 0; i < 6; i++) {
    await page.keyboard.press('Shift+Tab');
    assert.ok(await inDialog(), `Shift+Tab ${i + 1} stays in the dialog`);
  }
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached', timeout: T });
  await until(
    async () => (await page.evaluate(() => document.activeElement?.getAttribute('data-action'))) === 'kill',
    'the focus back on the button that opened the dialog',
    5000,
  );
  assert.equal((await api(page, 'GET', `/instances/${made.waiting}`)).body.state, 'waiting', 'Escape killed nothing');
});

test('the keyboard focus is visible and the navigation marks the page shown', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  await page.goto('/app/tasks');
  await settle(page);
  const current = page.locator('nav[aria-label="Main"] a[aria-current="page"]');
  assert.equal(await current.count(), 1);
  assert.equal(await current.getAttribute('aria-label'), 'Tasks');
  // the first Tab stops land on the navigation's links, each with a ring
  for (let i = 0; i < 3; i++) {
    await page.keyboard.press('Tab');
    const ring = await page.evaluate(() => {
      const e = document.activeElement;
      const st = getComputedStyle(e);
      return { tag: e.tagName, outline: st.outlineStyle, width: parseFloat(st.outlineWidth), shadow: st.boxShadow };
    });
    assert.ok((ring.outline !== 'none' && ring.width >= 2) || ring.shadow !== 'none', `focus ring on ${ring.tag}: ${JSON.stringify(ring)}`);
  }
  // the admin sections are links, the one shown marked, without tab roles
  await page.goto('/app/admin/executors');
  await settle(page);
  const sections = page.getByRole('navigation', { name: 'Administration' });
  assert.equal(await sections.locator('a[aria-current="page"]').textContent(), 'Executors');
  assert.equal(await page.locator('[role="tablist"] a').count(), 0, 'no links in a tab list');
  await sections.getByRole('link', { name: 'Resource pools' }).click();
  await page.waitForURL(/\/admin\/pools$/);
  assert.equal(await sections.locator('a[aria-current="page"]').textContent(), 'Resource pools');
});

test('clean up: the waiting instance is killed', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  const r = await api(page, 'POST', `/instances/${made.waiting}/actions/kill`, { reason: 'a11y test done' });
  assert.equal(r.status, 200, JSON.stringify(r.body));
});
