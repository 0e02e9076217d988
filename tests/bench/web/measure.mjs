// measure.mjs - cold loads of two console pages in headless Chromium
// (playwright-core from web/node_modules), timed with the browser's own
// performance timings; run.py starts the platform, loads the data and calls
// this script.
//
//   node measure.mjs BASE_URL SESSION_COOKIE WORKFLOW ROUNDS
//
// Each round opens a fresh browser context (empty cache and storage: a cold
// load), sets the session cookie and loads:
//   dashboard  /app/dashboard until its content is on screen: the tiles
//              filled, the outcomes chart drawn, the failures listed
//   grid       /app/workflows/WORKFLOW/runs until the run grid is in the page
// Times are milliseconds from navigation start (performance.now()): "ready"
// is taken by a MutationObserver installed before the page's own scripts,
// in the same task as the DOM change that completes the page. Per page it
// also reports the document's responseEnd, DOMContentLoaded, first
// contentful paint, the slowest API call and the bytes transferred, and for
// the grid the render time alone (its answer's arrival, the page's mark
// "orr:grid-data", to the grid in the document, "orr:grid-rendered").
// For the dashboard, each round also gives when each part first appeared
// (the shell, the failures, the tiles, the chart).
// Prints one JSON object: every round, the medians and the fastest round.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '..', '..', '..', 'web', 'package.json'));
const { chromium } = require('playwright-core');

const [base, cookie, workflow, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg || 7);
if (!base || !cookie || !workflow) {
  console.error('usage: measure.mjs BASE_URL SESSION_COOKIE WORKFLOW [ROUNDS]');
  process.exit(2);
}

// Installed before any script of the page: records when the ready
// condition first holds.
function watch(cond, parts) {
  return `(() => {
    const ok = ${cond};
    const parts = ${parts || '{}'};
    window.__orrParts = {};
    const check = () => {
      if (!document.body) return;
      for (const [k, f] of Object.entries(parts)) if (window.__orrParts[k] === undefined && f()) window.__orrParts[k] = Math.round(performance.now());
      if (window.__orrReady === undefined && ok()) window.__orrReady = performance.now();
    };
    new MutationObserver(check).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  })();`;
}

const PAGES = {
  dashboard: {
    path: '/app/dashboard',
    ready: `() => {
      const tiles = [...document.querySelectorAll('.tile-value')];
      return tiles.length > 0 && tiles.every((t) => !t.textContent.includes('…')) &&
        !!document.querySelector('[data-testid="chart-outcomes"][data-ready]') &&
        !!(document.querySelector('[data-testid="failures"]') || document.querySelector('.empty'));
    }`,
    // When each part was first on screen.
    parts: `{
      shell: () => !!document.querySelector('.tile-value'),
      tiles: () => { const t = [...document.querySelectorAll('.tile-value')]; return t.length > 0 && t.every((x) => !x.textContent.includes('…')); },
      chart: () => !!document.querySelector('[data-testid="chart-outcomes"][data-ready]'),
      failures: () => !!(document.querySelector('[data-testid="failures"]') || document.querySelector('.empty')),
    }`,
  },
  grid: {
    path: `/app/workflows/${encodeURIComponent(workflow)}/runs`,
    ready: `() => !!document.querySelector('[data-testid="run-grid"] a.rg-cell')`,
  },
};

const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return null;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const r1 = (x) => (Number.isFinite(x) ? Math.round(x * 10) / 10 : null);

const browser = await chromium.launch({
  executablePath: process.env.ORRERY_E2E_CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
const out = { rounds, runs: {}, median: {} };
try {
  for (const [name, pg] of Object.entries(PAGES)) {
    const runs = [];
    // One warm-up load (not counted): galaxyd's and PostgreSQL's own caches
    // are then as they are for any user after the first.
    for (let i = 0; i <= rounds; i++) {
      const ctx = await browser.newContext({ baseURL: base, viewport: { width: 1440, height: 900 } });
      await ctx.addCookies([{ name: 'orrery_session', value: cookie, url: base }]);
      await ctx.addInitScript(watch(pg.ready, pg.parts));
      const page = await ctx.newPage();
      await page.goto(pg.path);
      await page.waitForFunction(() => window.__orrReady !== undefined, null, { timeout: 30000 });
      if (name === 'grid') await page.waitForFunction(() => performance.getEntriesByName('orr:grid-rendered').length > 0, null, { timeout: 30000 });
      const m = await page.evaluate(() => {
        const nav = performance.getEntriesByType('navigation')[0];
        const res = performance.getEntriesByType('resource');
        const apis = res.filter((r) => r.name.includes('/api/v1/'));
        const slow = apis.reduce((a, r) => (a && a.duration >= r.duration ? a : r), null);
        const fcp = performance.getEntriesByName('first-contentful-paint')[0];
        const mark = (n) => performance.getEntriesByName(n)[0]?.startTime;
        return {
          ready: window.__orrReady,
          response_end: nav.responseEnd,
          dom_content_loaded: nav.domContentLoadedEventEnd,
          fcp: fcp ? fcp.startTime : null,
          requests: res.length + 1,
          kbytes: (res.reduce((a, r) => a + (r.transferSize || 0), 0) + (nav.transferSize || 0)) / 1024,
          slowest_api: slow ? { path: new URL(slow.name).pathname + new URL(slow.name).search, start: slow.startTime, ms: slow.duration } : null,
          grid_render: mark('orr:grid-rendered') !== undefined ? mark('orr:grid-rendered') - mark('orr:grid-data') : null,
          cells: document.querySelectorAll('[data-testid="run-grid"] .rg-cell').length,
          parts: window.__orrParts,
          // Where the time goes: every request, [what, start, end].
          timeline: [['document', 0, nav.responseEnd], ...res.map((r) => [new URL(r.name).pathname.replace(/^.*\//, '') + new URL(r.name).search, r.startTime, r.responseEnd])].map(
            ([n, a, b]) => [n, Math.round(a), Math.round(b)],
          ),
        };
      });
      await ctx.close();
      if (i > 0) runs.push(m);
    }
    out.runs[name] = runs.map((m) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, typeof v === 'number' ? r1(v) : v])));
    const med = {};
    for (const k of ['ready', 'response_end', 'dom_content_loaded', 'fcp', 'requests', 'kbytes', 'grid_render', 'cells'])
      med[k] = r1(median(runs.map((m) => m[k])));
    med.slowest_api_ms = r1(median(runs.map((m) => m.slowest_api?.ms)));
    out.median[name] = med;
    // The fastest round: the nearest to an idle machine on a shared one.
    const fin = (k) => runs.map((m) => m[k]).filter((x) => Number.isFinite(x));
    out.min = out.min || {};
    out.min[name] = { ready: r1(Math.min(...fin('ready'))), grid_render: fin('grid_render').length ? r1(Math.min(...fin('grid_render'))) : null };
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(out, null, 1));
