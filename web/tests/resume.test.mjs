// resume.test.mjs - a transfer task's rerun resumes the splits its earlier
// attempts committed, and the rerun dialog offers "From scratch" for it
// (the new attempt is then marked from_scratch); a shell task's dialog does
// not offer it.
//
// Tasks are this file's own (resume_*, with the pid). The transfer's
// attempt ends by construction without moving anything: its job reads the
// connection from an environment variable that is not set, so wormhole
// refuses the job and the attempt fails at once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEV, RUN_T, T, api, checkA11y, login, open, shot, until, useBrowser } from './lib.mjs';

useBrowser();

const SFX = `${process.pid}`;
const NOPE = `RESUME_E2E_UNSET_${SFX}`;

const inst = async (page, id) => (await api(page, 'GET', `/instances/${id}`)).body;

/** A task of this file run once now; returns its instance once finished. */
async function ranOnce(page, name, type, config) {
  const r = await api(page, 'POST', '/tasks', { name, team: 'analytics', type, retries: { max: 0 }, config });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  const at = new Date(Math.floor(Date.now() / 1000) * 1000 - 60e3);
  const run = await api(page, 'POST', `/tasks/${r.body.id}/run`, { schedule_time: at.toISOString(), ignore_upstreams: true });
  assert.equal(run.status, 201, JSON.stringify(run.body));
  const id = run.body.instance.id;
  await until(async () => ['success', 'failed'].includes((await inst(page, id)).state), `${name} ran`, RUN_T);
  return inst(page, id);
}

async function openRerun(page, i) {
  await page.goto(`/app/instances/${i.id}`);
  await page.getByTestId('instance-state').locator(`[data-state="${i.state}"]`).waitFor({ timeout: T });
  await page.locator('[data-action="rerun-set"]').click();
  const rd = page.getByRole('dialog', { name: new RegExp(`^Rerun ${i.task_name} of`) });
  await rd.locator('[data-testid="rerun-plan"][data-ready="true"]').waitFor({ timeout: T });
  return rd;
}

test('a transfer rerun resumes by default and offers "From scratch"', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  const pgw = { type: 'postgres', dsn_env: NOPE };
  const job = {
    name: `resume_job_${SFX}`,
    reader: { ...pgw, table: 'resume_src', split: { key: 'id', shards: 4 } },
    writers: [{ ...pgw, table: 'resume_dst' }],
  };
  const first = await ranOnce(page, `resume_xfer_${SFX}`, 'transfer', job);
  assert.equal(first.state, 'failed', 'the job names an unset variable: the attempt fails');
  assert.equal(first.from_scratch, false);

  const rd = await openRerun(page, first);
  const box = rd.getByTestId('rerun-from-scratch');
  await box.waitFor({ timeout: T });
  const scratch = rd.getByLabel('From scratch');
  assert.equal(await scratch.isChecked(), false, 'a rerun resumes by default');
  await box.getByText('it reads only the splits its earlier attempt did not commit').waitFor({ timeout: T });
  await scratch.check();
  await box.getByText('The transfer reads everything again').waitFor({ timeout: T });
  await checkA11y(page, 'rerun dialog of a transfer task');
  await shot(page, 'resume-rerun-dialog');
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, 'resume-rerun-dialog-390');
  await page.setViewportSize({ width: 1440, height: 900 });
  await rd.getByTestId('rerun-confirm').click();
  await page.locator('.toast', { hasText: 'back to waiting' }).waitFor({ timeout: T });
  const again = await inst(page, first.id);
  assert.equal(again.attempt, 2);
  assert.equal(again.from_scratch, true, 'the new attempt starts from scratch');
  await until(async () => (await inst(page, first.id)).state === 'failed', 'the second attempt ended', RUN_T);

  // Without the box ticked the next attempt resumes again.
  const rd2 = await openRerun(page, await inst(page, first.id));
  await rd2.getByTestId('rerun-from-scratch').waitFor({ timeout: T });
  await rd2.getByTestId('rerun-confirm').click();
  await page.locator('.toast', { hasText: 'back to waiting' }).last().waitFor({ timeout: T });
  const third = await inst(page, first.id);
  assert.equal(third.attempt, 3);
  assert.equal(third.from_scratch, false, 'a rerun without it resumes');
  await until(async () => (await inst(page, first.id)).state === 'failed', 'the third attempt ended', RUN_T);
});

test('a shell task rerun has no "From scratch"', async (t) => {
  const page = await open(t);
  await login(page, DEV);
  const i = await ranOnce(page, `resume_shell_${SFX}`, 'shell', { command: 'true' });
  assert.equal(i.state, 'success');
  const rd = await openRerun(page, i);
  // the dialog has read the task's type before it is looked at
  await rd.locator('[data-testid="rerun-plan"][data-transfer="false"]').waitFor({ timeout: T });
  assert.equal(await rd.getByTestId('rerun-from-scratch').count(), 0, 'no from-scratch box for a shell task');
  await rd.getByRole('button', { name: 'Cancel' }).click();
});
