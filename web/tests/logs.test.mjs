// logs.test.mjs - an instance's logs in the browser: a task of this file's
// own fails on its first attempt and succeeds on the retry, so the instance
// has two attempts. Each tab shows its own attempt's log (the older one
// from the blob archive), every line with the time executord read it (a
// toggle hides the times), search finds a marker and steps through many
// matches with a count, and the download is the attempt's raw log byte for
// byte (or each line behind its time).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CRON, DEV, RUN_T, T, api, checkA11y, login, open, shot, until, useBrowser } from './lib.mjs';

useBrowser();

const NAME = `logs_retry_${process.pid}`;
const FILLER = 300;

/** What attempt n writes: its marker line, FILLER filler lines, a marker
 * near the end and a last line without a newline. Attempt 1 fails. */
const COMMAND =
  'echo "logs-attempt-$ORRERY_ATTEMPT"; i=0; ' +
  `while [ $i -lt ${FILLER} ]; do echo "filler $i of attempt $ORRERY_ATTEMPT"; i=$((i + 1)); done; ` +
  `echo "MARKER-$ORRERY_ATTEMPT-${process.pid}"; printf 'no newline at the end'; [ "$ORRERY_ATTEMPT" -ge 2 ]`;

function expected(n) {
  let s = `logs-attempt-${n}\n`;
  for (let i = 0; i < FILLER; i++) s += `filler ${i} of attempt ${n}\n`;
  return s + `MARKER-${n}-${process.pid}\nno newline at the end`;
}

/** GET a same-origin URL in the page: status, headers we need, body text. */
async function fetchText(page, url) {
  return page.evaluate(async (u) => {
    const r = await fetch(u, { credentials: 'same-origin' });
    return { status: r.status, disposition: r.headers.get('Content-Disposition'), text: await r.text() };
  }, url);
}

const logText = async (page) => (await page.getByTestId('log').textContent()) ?? '';

test('logs: a tab per attempt, times per line, search, download', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  const r = await api(page, 'POST', '/tasks', {
    name: NAME,
    team: 'analytics',
    type: 'shell',
    schedule: CRON,
    retries: { max: 1, delay: '1s' },
    config: { command: COMMAND },
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  const now = Date.now();
  const b = await api(page, 'POST', `/tasks/${r.body.id}/backfill`, {
    from: new Date(now - 3600e3).toISOString(),
    to: new Date(now).toISOString(),
  });
  assert.equal(b.status, 200, JSON.stringify(b.body));
  assert.equal(b.body.created.length, 1);
  const id = b.body.created[0];
  await until(async () => {
    const d = await api(page, 'GET', `/instances/${id}`);
    return d.body.attempt === 2 && d.body.state === 'success';
  }, 'attempt 1 fails, the retry succeeds', RUN_T);

  await page.goto(`/app/instances/${id}`);
  const tab1 = page.getByRole('tab', { name: /^Attempt 1/ });
  const tab2 = page.getByRole('tab', { name: /^Attempt 2/ });
  await tab2.waitFor({ timeout: T });
  assert.equal(await tab2.getAttribute('aria-selected'), 'true', 'the current attempt is shown first');
  await page.getByText(/attempt 2 · [\d,]+ bytes · complete/).waitFor({ timeout: T });
  await until(async () => (await logText(page)).includes(`MARKER-2-${process.pid}`), 'the log of attempt 2', T);
  assert.ok(!(await logText(page)).includes('of attempt 1'), 'attempt 2 shows only its own lines');
  assert.equal(await page.getByTestId('log').getAttribute('data-lines'), String(FILLER + 3));

  // Times: one per line, as executord read them; the toggle hides them.
  const stamp = page.locator('[data-testid="log"] .logv-ts').first();
  assert.match((await stamp.textContent()) ?? '', /^\d\d:\d\d:\d\d\.\d{3}Z$/);
  const times = await page.locator('[data-testid="log"] .logv-ts').allTextContents();
  const rows = await page.locator('[data-testid="log"] .logv-row').count();
  assert.equal(times.length, rows, 'a time on every row shown');
  await page.getByTestId('log-times').uncheck();
  assert.equal(await page.locator('[data-testid="log"] .logv-ts').count(), 0);
  await page.getByTestId('log-times').check();
  await shot(page, 'logs-attempt-2');

  // The older attempt, from the archive.
  await tab1.click();
  await page.getByText(/attempt 1 · [\d,]+ bytes · complete/).waitFor({ timeout: T });
  await until(async () => (await logText(page)).includes(`MARKER-1-${process.pid}`), 'the log of attempt 1', T);
  assert.ok(!(await logText(page)).includes('of attempt 2'), 'attempt 1 shows only its own lines');

  // Search: a marker, then many matches stepped through with a count.
  const search = page.getByTestId('log-search');
  const count = page.getByTestId('log-matches');
  await search.fill(`MARKER-1-${process.pid}`);
  await until(async () => (await count.textContent()) === '1 of 1', 'one match of the marker');
  assert.equal(await page.locator('[data-testid="log"] mark.current').textContent(), `MARKER-1-${process.pid}`);
  await search.fill('FILLER');
  await until(async () => (await count.textContent()) === `1 of ${FILLER}`, 'every filler line found');
  const current = page.locator('[data-testid="log"] .logv-row:has(mark.current)');
  assert.equal(await current.getAttribute('data-line'), '2', 'the first match is on line 2');
  await page.getByRole('button', { name: 'Next match' }).click();
  await until(async () => (await count.textContent()) === `2 of ${FILLER}`, 'the next match');
  assert.equal(await current.getAttribute('data-line'), '3');
  await search.press('Enter');
  await until(async () => (await count.textContent()) === `3 of ${FILLER}`, 'Enter goes on');
  await page.getByRole('button', { name: 'Previous match' }).click();
  await page.getByRole('button', { name: 'Previous match' }).click();
  await page.getByRole('button', { name: 'Previous match' }).click();
  await until(async () => (await count.textContent()) === `${FILLER} of ${FILLER}`, 'previous wraps to the last');
  assert.equal(await current.getAttribute('data-line'), String(FILLER + 1), 'the last filler line, scrolled into view');
  assert.match((await current.textContent()) ?? '', new RegExp(`filler ${FILLER - 1} of attempt 1`));
  await search.fill('no such text anywhere');
  await until(async () => (await count.textContent()) === 'no match', 'no match');
  await search.fill('filler 150 ');
  await until(async () => (await count.textContent()) === '1 of 1', 'the middle line');
  await shot(page, 'logs-search');
  await checkA11y(page, 'instance page, log of attempt 1 with a search');

  // Download: the raw bytes of this attempt, as an attachment.
  const href = await page.getByTestId('log-download').getAttribute('href');
  assert.match(href, /attempt=1/);
  const raw = await fetchText(page, href);
  assert.equal(raw.status, 200);
  assert.match(raw.disposition, /^attachment; filename="instance-\d+-attempt-1\.log"$/);
  assert.equal(raw.text, expected(1), 'the download is the log as the task wrote it');
  const stamped = await fetchText(page, await page.getByTestId('log-download-times').getAttribute('href'));
  assert.equal(stamped.status, 200);
  const lines = stamped.text.split('\n');
  assert.equal(lines.length, FILLER + 3);
  lines.forEach((l, i) => assert.match(l, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z /, `line ${i + 1}`));
  assert.deepEqual(
    lines.map((l) => l.slice(25)),
    expected(1).split('\n'),
  );
  const ms = lines.map((l) => Date.parse(l.slice(0, 24)));
  assert.ok(ms.every((x, i) => i === 0 || x >= ms[i - 1]), 'times never go back');
  await tab2.click();
  const raw2 = await fetchText(page, await page.getByTestId('log-download').getAttribute('href'));
  assert.equal(raw2.text, expected(2));

  // Narrow screen: the tabs, tools and log fit.
  await page.setViewportSize({ width: 390, height: 844 });
  await until(async () => (await logText(page)).includes(`MARKER-2-${process.pid}`), 'the log at 390 px', T);
  await shot(page, 'logs-390');
  await checkA11y(page, 'instance page, log at 390 px');
});

test('logs: a log of 60,000 lines is shown a window at a time and searched whole', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  const LINES = 60000;
  const r = await api(page, 'POST', '/tasks', {
    name: `logs_big_${process.pid}`,
    team: 'analytics',
    type: 'shell',
    schedule: CRON,
    retries: { max: 0 },
    config: { command: `i=1; while [ $i -le ${LINES} ]; do echo "big line $i ."; i=$((i + 1)); done` },
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  const now = Date.now();
  const b = await api(page, 'POST', `/tasks/${r.body.id}/backfill`, {
    from: new Date(now - 3600e3).toISOString(),
    to: new Date(now).toISOString(),
  });
  assert.equal(b.status, 200, JSON.stringify(b.body));
  const id = b.body.created[0];
  await until(async () => (await api(page, 'GET', `/instances/${id}`)).body.state === 'success', 'the big log written', RUN_T);

  await page.goto(`/app/instances/${id}`);
  await page.getByText(/attempt 1 · [\d,]+ bytes · complete/).waitFor({ timeout: T });
  const log = page.getByTestId('log');
  // Every line is held ...
  assert.equal(await log.getAttribute('data-lines'), String(LINES));
  // ... but only the rows in view are in the page.
  const rows = await page.locator('[data-testid="log"] .logv-row').count();
  assert.ok(rows > 10 && rows < 200, `${rows} rows in the page`);
  await page.locator(`[data-testid="log"] .logv-row[data-line="${LINES}"]`).waitFor({ timeout: T });

  // Search covers the whole log and brings a match from far away into view.
  await page.getByTestId('log-search').fill('big line 7 .');
  await until(async () => (await page.getByTestId('log-matches').textContent()) === '1 of 1', 'the line far up');
  await page.locator('[data-testid="log"] .logv-row[data-line="7"] mark.current').waitFor({ timeout: T });
  await page.getByTestId('log-search').fill('line 5999');
  await until(async () => (await page.getByTestId('log-matches').textContent()) === '1 of 11', 'line 5999 and 59990-59999');
  await page.getByRole('button', { name: 'Previous match' }).click();
  await until(async () => (await page.getByTestId('log-matches').textContent()) === '11 of 11', 'the last one');
  await page.locator('[data-testid="log"] .logv-row[data-line="59999"] mark.current').waitFor({ timeout: T });
  await shot(page, 'logs-big');
});
