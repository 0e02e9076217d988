// lib.mjs - what every browser test file shares: the environment that
// tests/e2e/run.sh passes (base URL, users, screenshot folder, gates),
// Chromium's launch, a page per test with script errors failing it, login
// by session cookie, screenshots, polling, and calls of the REST API from
// inside the page (the session's cookie, same origin), and the
// accessibility check (axe-core's WCAG 2.1 A and AA rules) every page
// passes.
//
// Every *.test.mjs file runs in a process of its own against the same
// platform and database, one file after another: a file creates the tasks
// and workflows it needs under names of its own.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';

export function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run these tests through tests/e2e/run.sh`);
  return v;
}

export const BASE = env('ORRERY_E2E_BASE_URL');
export const SHOTS = env('ORRERY_E2E_SCREENSHOTS');
export const ADMIN = [env('ORRERY_E2E_ADMIN'), env('ORRERY_E2E_ADMIN_PASSWORD')];
export const DEV = [env('ORRERY_E2E_DEV'), env('ORRERY_E2E_PASSWORD')];
export const FIN = [env('ORRERY_E2E_FIN'), env('ORRERY_E2E_PASSWORD')];
export const VIEWER = [env('ORRERY_E2E_VIEWER'), env('ORRERY_E2E_PASSWORD')];
export const EXECUTOR = env('ORRERY_E2E_EXECUTOR');
// A folder the tasks can see: a task waits for a file here that the test
// creates when it is ready for the task to go on (a gate, not a sleep).
export const GATES = env('ORRERY_E2E_GATES');
export const T = 30000; // per wait (the test machine may be loaded)
export const RUN_T = 120000; // for a run through keplerd and executord
// Hourly, at a minute 30 minutes after now: no fire time falls due while
// the tests run, so keplerd creates no instance of its own.
export const MINUTE = (new Date().getUTCMinutes() + 30) % 60;
export const CRON = `${MINUTE} * * * *`;

let browser;

/** Starts Chromium before the file's tests and closes it after them. */
export function useBrowser() {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    browser = await chromium.launch({
      executablePath: process.env.ORRERY_E2E_CHROMIUM || '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
    });
  });

  after(async () => {
    await browser?.close();
  });
}

/** A new browser context (own cookies) and page; console errors fail the test. */
export async function open(t) {
  const ctx = await browser.newContext({ baseURL: BASE, viewport: { width: 1440, height: 900 } });
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    // 4xx answers the UI expects (404 of endpoints that do not exist yet,
    // 401 before login, 403/409 the tests provoke) are logged by Chromium
    // as failed resources; only script errors count.
    if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) errors.push(m.text());
  });
  // CSP violations would show up as console errors too.
  t.after(async () => {
    await ctx.close();
    assert.deepEqual(errors, [], 'no script error in the page');
  });
  return page;
}

const sessions = new Map(); // user name -> session cookie value

/**
 * Log page's context in as the user. The login form itself is tested once
 * (the first test); other tests reuse one session per user, set as a cookie,
 * which saves two page loads per test on a slow machine. Ends on a
 * same-origin URL so api() works.
 */
export async function login(page, [name, password]) {
  if (!sessions.has(name)) {
    const r = await fetch(`${BASE}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ name, password }),
    });
    assert.equal(r.status, 200, `login of ${name}`);
    const m = /orrery_session=([^;]+)/.exec(r.headers.get('set-cookie') ?? '');
    assert.ok(m, 'the login answer sets the session cookie');
    sessions.set(name, m[1]);
  }
  await page.context().addCookies([{ name: 'orrery_session', value: sessions.get(name), url: BASE }]);
  await page.goto('/api/v1/auth/me');
  const me = await api(page, 'GET', '/auth/me');
  assert.equal(me.body?.name, name, 'the session is the user');
}

export async function shot(page, name) {
  // Sticky parts (the navigation, the designer's spec panel) follow the
  // scroll position: capture from the top.
  await page.evaluate(() => window.scrollTo(0, 0));
  // let CSS transitions and finite animations finish (an endless one, such
  // as a running state's pulse, never does; cancelled ones count as done)
  await page.evaluate(() =>
    Promise.all(
      document
        .getAnimations()
        .filter((a) => Number.isFinite(a.effect?.getComputedTiming().endTime))
        .map((a) => a.finished.catch(() => null)),
    ),
  );
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** Poll fn until it returns a truthy value; fails with what after ms. */
/** Fill input with value until button is enabled by it: a controlled input
 * filled while the page is still settling (its list loading) can lose the
 * value, so the state the test needs is observed, not assumed. */
export async function fillFor(input, value, button) {
  await until(async () => {
    if ((await input.inputValue()) === value && (await button.isEnabled())) return true;
    await input.fill(value);
    return false;
  }, `${value} typed and the button enabled`);
}

export async function until(fn, what, ms = T) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`timed out waiting for ${what} (last: ${last})`);
}

export async function api(page, method, path, body) {
  return page.evaluate(
    async ([m, p, b]) => {
      const r = await fetch(`/api/v1${p}`, {
        method: m,
        headers: b ? { 'Content-Type': 'application/json' } : {},
        body: b ? JSON.stringify(b) : undefined,
        credentials: 'same-origin',
      });
      return { status: r.status, body: await r.json().catch(() => null) };
    },
    [method, path, body],
  );
}

export function localInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}


// ---- accessibility ----------------------------------------------------------

// axe-core's engine, read once from the npm package and evaluated in the
// page (Playwright's evaluate is not subject to the console's CSP, which
// would refuse an injected <script>).
let axeSource;
const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

/**
 * Run axe-core's WCAG 2.1 A/AA rules on the page as it is now and fail with
 * a readable list of what breaks them: rule, impact, the elements (CSS
 * selectors) and what to fix. `name` says which page this is in the message.
 * Call it once the page has settled (its data loaded), and again after
 * opening a dialog or a tab that shows new content.
 *
 * opts.include / opts.exclude: CSS selectors to limit the check to, or to
 * leave out (only for content the console does not make, e.g. a user's own
 * text); opts.disable: rule ids to skip, each with a reason in the test.
 */
export async function checkA11y(page, name, opts = {}) {
  if (!axeSource) {
    const require = createRequire(import.meta.url);
    axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  }
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(axeSource);
  // finished transitions only: a fading toast or a dialog still moving in
  // has colours in between
  await page.evaluate(() =>
    Promise.all(
      document
        .getAnimations()
        .filter((a) => Number.isFinite(a.effect?.getComputedTiming().endTime))
        .map((a) => a.finished.catch(() => null)),
    ),
  );
  // the app makes an overflowing region a tab stop in the animation frame
  // after the change that made it overflow (useScrollFocus, ui.tsx): a
  // frame requested now runs after any such check already queued, so the
  // audit sees the page as the app leaves it, not the moment in between
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
  const violations = await page.evaluate(
    async ([tags, include, exclude, disable]) => {
      const context = include?.length || exclude?.length ? { include: include?.length ? include : [document], exclude: exclude ?? [] } : document;
      const rules = Object.fromEntries((disable ?? []).map((r) => [r, { enabled: false }]));
      const r = await window.axe.run(context, { runOnly: { type: 'tag', values: tags }, rules, resultTypes: ['violations'] });
      return r.violations.map((v) => ({
        id: v.id,
        impact: v.impact,
        help: v.help,
        nodes: v.nodes.map((n) => ({
          target: n.target.map((t) => (Array.isArray(t) ? t.join(' >>> ') : t)).join(' '),
          summary: (n.failureSummary ?? '').replace(/^Fix (any|all) of the following:\s*/gm, '').split('\n').map((l) => l.trim()).filter(Boolean)[0] ?? '',
        })),
      }));
    },
    [AXE_TAGS, opts.include, opts.exclude, opts.disable],
  );
  if (!violations.length) return;
  const MAX = 8; // elements listed per rule
  const lines = [];
  for (const v of violations) {
    lines.push(`- ${v.id} (${v.impact}): ${v.help} [${v.nodes.length} element${v.nodes.length === 1 ? '' : 's'}]`);
    for (const n of v.nodes.slice(0, MAX)) lines.push(`    ${n.target}${n.summary ? ` -- ${n.summary}` : ''}`);
    if (v.nodes.length > MAX) lines.push(`    ... and ${v.nodes.length - MAX} more`);
  }
  const count = violations.reduce((k, v) => k + v.nodes.length, 0);
  assert.fail(`${name} (${page.url()}): ${count} WCAG 2.1 AA violation${count === 1 ? '' : 's'} found by axe-core:\n${lines.join('\n')}`);
}
