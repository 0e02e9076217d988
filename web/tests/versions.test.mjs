// versions.test.mjs - task versions and named parameters in the browser.
//
// A task of this file's own (versions_*) declares a parameter region
// (default "eu") and echoes it with ${schedule_time:%Y%m%d} and ${task}.
// In the designer: the parameter's default is shown; changing it and saving
// with a comment makes version 2; the version list shows both with the
// comment; the diff names the changed field side by side and unified; a
// rollback to 1 (after its confirmation) makes version 3 that restores 1;
// a deactivated task is reactivated from its page. Then one cycle is
// backfilled with region overridden to "ap": keplerd and executord run it,
// and the instance page shows the version it ran, the overridden value, and
// a log with the substituted command's output.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CRON, DEV, RUN_T, T, api, checkA11y, login, open, shot, until, useBrowser } from './lib.mjs';

useBrowser();

const NAME = `versions_p_${process.pid}`;

test('versions: list, diff, rollback, reactivate; a parameter default shown and overridden in a run', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  const r = await api(page, 'POST', '/tasks', {
    name: NAME,
    team: 'analytics',
    type: 'shell',
    schedule: CRON,
    retries: { max: 0 },
    parameters: { region: { default: 'eu', description: 'which shard' } },
    config: { command: 'echo "region=${region} day=${schedule_time:%Y%m%d} task=${task} v=${version}"' },
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  const id = r.body.id;

  // The designer shows the parameter with its default.
  await page.goto(`/app/tasks/${id}`);
  const row = page.getByTestId('param-region');
  await row.waitFor({ timeout: T });
  assert.equal(await row.getByLabel('Default').inputValue(), 'eu');
  assert.match(await page.getByTestId('subst-help').textContent(), /\$\{schedule_time:%Y%m%d\}/);
  await checkA11y(page, 'designer with parameters and versions');

  // Change the default, save with a comment: version 2.
  await row.getByLabel('Default').fill('us');
  await page.getByTestId('save-comment').fill('switch to us');
  await page.getByTestId('save-task').click();
  await until(async () => /version 2/.test(await page.getByTestId('task-version').textContent()), 'the header says version 2');
  const list = page.getByTestId('version-list');
  await until(async () => (await list.locator('tr[data-version]').count()) === 2, 'two versions listed');
  await until(async () => {
    const v2 = await list.locator('tr[data-version="2"]').textContent();
    return /switch to us/.test(v2) && /current/.test(v2);
  }, 'version 2 listed as current with its comment');

  // The diff of 1 and 2: the default changed; side by side, then unified.
  const diff = page.getByTestId('diff-table');
  await diff.waitFor({ timeout: T });
  const changed = diff.locator('tr[data-change]');
  await until(
    async () => (await changed.count()) === 1 && /parameters\.region\.default\s*eu\s*us/.test(await changed.first().textContent()),
    'the diff names the one changed field',
  );
  await shot(page, 'versions-diff');
  await page.getByRole('radio', { name: 'Unified' }).click();
  const uni = page.getByTestId('diff-unified');
  await uni.waitFor({ timeout: T });
  assert.match(await uni.textContent(), /- parameters\.region\.default: eu/);
  assert.match(await uni.textContent(), /\+ parameters\.region\.default: us/);
  await shot(page, 'versions-diff-unified');

  // Roll back to 1: a new version 3 restoring 1.
  await page.getByTestId('rollback-1').click();
  const dialog = page.getByRole('dialog');
  await dialog.waitFor({ timeout: T });
  await shot(page, 'versions-rollback-confirm');
  await dialog.getByRole('button', { name: 'Roll back to 1' }).click();
  await until(async () => /version 3/.test(await page.getByTestId('task-version').textContent()), 'the header says version 3');
  await until(async () => (await list.locator('tr[data-version]').count()) === 3, 'three versions listed');
  assert.match(await list.locator('tr[data-version="3"]').textContent(), /restores version 1/);
  await until(async () => (await page.getByTestId('param-region').getByLabel('Default').inputValue()) === 'eu', 'the form shows the restored default');
  const v3 = (await api(page, 'GET', `/tasks/${id}`)).body;
  assert.equal(v3.version, 3);
  assert.equal(v3.restored_from, 1);
  assert.equal(v3.spec.parameters.region.default, 'eu');

  // Deactivate, then reactivate from the task's page.
  const off = await api(page, 'DELETE', `/tasks/${id}`);
  assert.equal(off.status, 200, JSON.stringify(off.body));
  await page.goto(`/app/tasks/${id}`);
  await page.getByTestId('deactivated').waitFor({ timeout: T });
  await shot(page, 'versions-deactivated');
  await page.getByTestId('reactivate').click();
  await until(async () => (await page.getByTestId('deactivated').count()) === 0, 'the task is active again');
  assert.equal((await api(page, 'GET', `/tasks/${id}`)).body.active, true);

  // One cycle with region overridden: it runs through keplerd and executord.
  const now = Date.now();
  const bf = await api(page, 'POST', `/tasks/${id}/backfill`, {
    from: new Date(now - 3600e3).toISOString(),
    to: new Date(now).toISOString(),
    params: { region: 'ap' },
  });
  assert.equal(bf.status, 200, JSON.stringify(bf.body));
  assert.equal(bf.body.created.length, 1, JSON.stringify(bf.body));
  const iid = bf.body.created[0];
  const bad = await api(page, 'POST', `/tasks/${id}/backfill`, {
    from: new Date(now - 3600e3).toISOString(),
    to: new Date(now).toISOString(),
    params: { regoin: 'ap' },
  });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.field, 'params.regoin');
  await until(async () => (await api(page, 'GET', `/instances/${iid}`)).body.state === 'success', 'the instance succeeded', RUN_T);
  const inst = (await api(page, 'GET', `/instances/${iid}`)).body;
  const day = inst.schedule_time.slice(0, 10).replaceAll('-', '');

  await page.goto(`/app/instances/${iid}`);
  await page.getByTestId('instance-version').waitFor({ timeout: T });
  await until(async () => (await page.getByTestId('instance-task-version').textContent()) === 'version 3', 'the instance names version 3');
  await until(async () => /ap/.test(await page.getByTestId('param-shown-region').textContent()), 'the overridden value is shown');
  assert.match(await page.getByTestId('instance-params').textContent(), /eu/, 'next to the default');
  const log = page.getByTestId('log');
  await until(async () => (await log.textContent()).includes(`region=ap day=${day} task=${NAME} v=3`), 'the log shows the substituted command', RUN_T);
  await shot(page, 'versions-instance');
  await checkA11y(page, 'instance page with its version and parameters');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'versions-instance-390');
  await page.goto(`/app/tasks/${id}`);
  await page.getByTestId('version-list').waitFor({ timeout: T });
  await shot(page, 'versions-designer-390');

  // The version link leads to the task's versions with that one picked.
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`/app/instances/${iid}`);
  await page.getByRole('link', { name: 'task version 3' }).click();
  await page.getByTestId('version-list').waitFor({ timeout: T });
  await until(async () => /version=3/.test(page.url()), 'the address picks version 3');
});
