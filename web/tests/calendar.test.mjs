// calendar.test.mjs - the Calendars pages in the browser: a calendar is
// created from the list's form, a business day is excluded and a weekend
// day included with a click in the month view (and checked through the
// API), an .ics file is imported (its day turns into a holiday) and a
// broken one is refused naming the line, a viewer sees the month but cannot
// change it, and the calendar is deleted at the end. Accessibility is
// checked on both pages; screenshots at desktop and phone width. Everything
// this file makes is named calendar_*.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ADMIN, T, VIEWER, api, checkA11y, login, open, shot, until, useBrowser } from './lib.mjs';

useBrowser();

const NAME = `calendar_${process.pid}`;

const ics = (date) =>
  `BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//orrery e2e//EN\r\nBEGIN:VEVENT\r\nUID:e2e-1\r\nDTSTART;VALUE=DATE:${date.replaceAll('-', '')}\r\nSUMMARY:Founders day\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n`;

async function dayOf(page, day) {
  const r = await api(page, 'GET', `/calendars/${NAME}/days?from=${day}&to=${day}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.days[0];
}

test('calendars: create, mark days in the month view, import an .ics file, delete', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  await page.goto('/app/calendars');
  const form = page.getByTestId('calendar-form');
  await form.waitFor({ timeout: T });
  await form.getByLabel('Name').fill(NAME);
  await form.getByLabel('Team').fill('analytics');
  await form.getByLabel('Time zone').fill('Europe/Berlin');
  await form.getByRole('button', { name: 'Create calendar' }).click();
  await page.waitForURL(`**/app/calendars/${NAME}`, { timeout: T });
  const month = page.getByTestId('calendar-month');
  await month.waitFor({ timeout: T });

  // this month's days as the page shows them
  const days = await month.locator('button[data-day]').evaluateAll((bs) => bs.map((b) => ({ day: b.dataset.day, business: b.dataset.business === '1' })));
  assert.ok(days.length >= 28, 'a whole month');
  const weekdays = days.filter((d) => d.business);
  const weekend = days.find((d) => !d.business);
  assert.ok(weekdays.length >= 20 && weekend, 'Monday to Friday are business days, weekends not');

  // exclude a business day, include a weekend day: one click each
  const off = weekdays[0].day;
  await month.locator(`button[data-day="${off}"]`).click();
  await until(async () => (await month.locator(`button[data-day="${off}"]`).getAttribute('data-business')) === '0', 'the day shown excluded');
  assert.equal((await dayOf(page, off)).kind, 'excluded');
  await month.locator(`button[data-day="${weekend.day}"]`).click();
  await until(async () => (await month.locator(`button[data-day="${weekend.day}"]`).getAttribute('data-business')) === '1', 'the weekend day shown included');
  const inc = await dayOf(page, weekend.day);
  assert.deepEqual([inc.kind, inc.business], ['included', true]);

  // import an .ics file: its day becomes a holiday with the event's summary
  const holiday = weekdays[weekdays.length - 1].day;
  const imp = page.getByTestId('calendar-import');
  await imp.getByLabel('iCalendar file').setInputFiles({ name: 'holidays.ics', mimeType: 'text/calendar', buffer: Buffer.from(ics(holiday)) });
  await imp.getByRole('button', { name: 'Import' }).click();
  await until(async () => /1 days in the file, 1 new or changed/.test((await page.getByTestId('calendar-imported').textContent({ timeout: 1000 })) ?? ''), 'the import summary');
  await until(async () => (await month.locator(`button[data-day="${holiday}"]`).getAttribute('data-business')) === '0', 'the imported holiday shown');
  const h = await dayOf(page, holiday);
  assert.deepEqual([h.kind, h.note], ['excluded', 'Founders day']);

  // a broken file: refused, naming the line; nothing added
  const count = (await api(page, 'GET', `/calendars/${NAME}`)).body.days_count;
  await imp.getByLabel('iCalendar file').setInputFiles({ name: 'broken.ics', mimeType: 'text/calendar', buffer: Buffer.from(ics('2026-13-40')) });
  await imp.getByRole('button', { name: 'Import' }).click();
  await until(async () => /line 6: DTSTART/.test((await imp.locator('.field-error').textContent({ timeout: 1000 })) ?? ''), 'the error naming the line');
  assert.equal((await api(page, 'GET', `/calendars/${NAME}`)).body.days_count, count, 'nothing added');

  await checkA11y(page, 'calendar page');
  await shot(page, 'calendar');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'calendar-390');
  await page.setViewportSize({ width: 1440, height: 900 });

  // the list shows it
  await page.goto('/app/calendars');
  const row = page.locator(`[data-testid="calendar-table"] tr[data-calendar="${NAME}"]`);
  await row.waitFor({ timeout: T });
  assert.match(await row.textContent(), /Europe\/Berlin/);
  await checkA11y(page, 'calendars list');
  await shot(page, 'calendars');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'calendars-390');
});

test('calendars: a viewer sees the month view but changes nothing', async (t) => {
  const page = await open(t);
  await login(page, VIEWER);
  await page.goto(`/app/calendars/${NAME}`);
  const month = page.getByTestId('calendar-month');
  await month.waitFor({ timeout: T });
  assert.equal(await month.locator('button[data-day]:not([disabled])').count(), 0, 'every day is read-only');
  assert.equal(await page.getByTestId('calendar-import').count(), 0, 'no import form');
  assert.equal(await page.getByTestId('calendar-form').count(), 0);
  await checkA11y(page, 'calendar page (viewer)');
});

test('calendars: the designer previews the fire times a calendar moves', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  const r = await api(page, 'POST', '/tasks', {
    name: `calendar_task_${process.pid}`,
    team: 'analytics',
    type: 'shell',
    schedule: '0 6 * * 0',
    timezone: 'Europe/Berlin',
    calendar: NAME,
    calendar_policy: 'next',
    config: { command: 'true' },
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  try {
    await page.goto(`/app/tasks/${r.body.id}`);
    const list = page.getByTestId('cron-calendar');
    await list.locator('li').first().waitFor({ timeout: T });
    // Sundays are not business days: moved to Monday (at most one Sunday, the
    // included one, is kept)
    assert.equal(await list.locator('li').count(), 5);
    assert.ok((await list.locator('li[data-outcome="moved"]').count()) >= 4, 'Sundays moved');
    assert.match(await list.locator('li[data-outcome="moved"]').first().textContent(), /moved to/);
    await shot(page, 'calendar-designer');
  } finally {
    await api(page, 'DELETE', `/tasks/${r.body.id}`);
  }
});

test('calendars: delete from the calendar page', async (t) => {
  const page = await open(t);
  await login(page, ADMIN);
  await page.goto(`/app/calendars/${NAME}`);
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.locator('[data-confirm]').click();
  await page.waitForURL('**/app/calendars', { timeout: T });
  await until(async () => (await api(page, 'GET', `/calendars/${NAME}`)).status === 404, 'the calendar gone');
});
