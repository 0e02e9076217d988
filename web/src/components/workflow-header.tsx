// workflow-header.tsx - a workflow as an object, at the top of its page:
// name, description, owning team, how many tasks; a banner while it is
// paused (who, since when, what that means); pause / resume (with a
// confirmation) and an editor for the description and the team. Only the
// owning team's developers and admins see the controls (galaxyd decides:
// a refusal is shown as it comes). Also PausedTag, the mark shown wherever
// a held task or instance appears.
import { useState } from 'preact/hooks';
import { api, ApiError, type Paused, type Workflow } from '../api';
import { fmtRelative, fmtTime } from '../format';
import { canEditTeam, useMe } from '../session';
import { Confirm, ErrorBanner, Field, Link, Spinner, toast, useAsync, val } from './ui';
import './objects.css';

/** "Paused" with the workflow and who paused it, for lists and pages. */
export function PausedTag({ paused }: { paused: Paused | undefined }) {
  if (!paused) return null;
  return (
    <span class="paused-tag" data-testid="paused-tag" title={`Workflow ${paused.workflow} paused by ${paused.by.replace(/^user:/, '')} ${fmtRelative(paused.at)}`}>
      paused ({paused.workflow})
    </span>
  );
}

/** The banner of an instance or task its workflow holds. */
export function PausedNote({ paused }: { paused: Paused | undefined }) {
  if (!paused) return null;
  return (
    <div class="paused-banner" role="status" data-testid="paused-note">
      <span>
        <strong>Held:</strong> workflow <Link to={`/workflows/${encodeURIComponent(paused.workflow)}`}>{paused.workflow}</Link> was paused by{' '}
        {paused.by.replace(/^user:/, '')} <span title={fmtTime(paused.at)}>{fmtRelative(paused.at)}</span>. No new instance of this task is made ready or
        dispatched until it is resumed.
      </span>
    </div>
  );
}

function Editor({ wf, onSaved, onCancel }: { wf: Workflow; onSaved: (w: Workflow) => void; onCancel: () => void }) {
  const me = useMe();
  const [desc, setDesc] = useState(wf.description);
  const [team, setTeam] = useState(wf.team);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<unknown>(null);
  const teams = me.role === 'admin' ? null : me.teams;
  const save = async (e: Event) => {
    e.preventDefault();
    setErr(null);
    if (desc.length > 2000) {
      setErr(new ApiError(400, 'EINVAL', 'at most 2000 characters', 'description'));
      return;
    }
    const body: { description?: string; team?: string } = {};
    if (desc !== wf.description) body.description = desc;
    if (team.trim() !== wf.team) body.team = team.trim();
    if (!Object.keys(body).length) return onCancel();
    setBusy(true);
    try {
      const w = await api.patchWorkflow(wf.name, body);
      toast(`Workflow ${w.name} saved`);
      onSaved(w);
    } catch (x) {
      setErr(x);
    } finally {
      setBusy(false);
    }
  };
  const fe = (f: string) => (err instanceof ApiError && err.field === f ? err.message : null);
  return (
    <form class="wf-edit" onSubmit={save} noValidate data-testid="wf-edit">
      <Field label="Description" field="description" error={fe('description')} hint={`${desc.length} / 2000`}>
        <textarea rows={3} value={desc} onInput={(e) => setDesc(val(e))} aria-label="Description" />
      </Field>
      <Field label="Owning team" field="team" error={fe('team')} hint="Its developers (and admins) edit and pause it">
        {teams ? (
          <select value={team} onChange={(e) => setTeam(val(e))} aria-label="Owning team">
            {[...new Set([wf.team, ...teams])].map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        ) : (
          <input value={team} onInput={(e) => setTeam(val(e))} aria-label="Owning team" />
        )}
      </Field>
      {err && !fe('description') && !fe('team') ? <ErrorBanner error={err} /> : null}
      <div class="btn-row">
        <button class="btn btn-primary" type="submit" disabled={busy}>
          {busy ? <Spinner /> : null} Save
        </button>
        <button class="btn btn-ghost" type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** The header of a workflow's page; onChange gets the workflow after an edit, a pause or a resume. */
export function WorkflowHeader({ wf, onChange }: { wf: Workflow; onChange: (w: Workflow) => void }) {
  const me = useMe();
  const mayEdit = canEditTeam(me, wf.team);
  const [editing, setEditing] = useState(false);
  const [confirm, setConfirm] = useState<'pause' | 'resume' | null>(null);
  const n = wf.task_ids.length;
  return (
    <section class="card pad wf-head" data-testid="wf-header" aria-label={`Workflow ${wf.name}`}>
      {wf.paused && (
        <div class="paused-banner" role="status" data-testid="wf-paused">
          <span>
            <strong>Paused</strong> by {(wf.paused_by ?? '').replace(/^user:/, '')} <span title={fmtTime(wf.paused_at)}>{fmtRelative(wf.paused_at)}</span>: no
            new instance of its tasks is created or dispatched; running ones finish.
          </span>
        </div>
      )}
      <div class="wf-head-top">
        <div>
          <h2 class="wf-head-name">
            {wf.name} {wf.paused && <span class="paused-tag">paused</span>}
          </h2>
          <p class="wf-head-desc" data-testid="wf-description">
            {wf.description || <span class="muted">No description.</span>}
          </p>
          <div class="wf-head-meta">
            <span>
              Team <span class="tag">{wf.team}</span>
            </span>
            <span>
              {n} task{n === 1 ? '' : 's'}
            </span>
            <span>Updated {fmtRelative(wf.updated_at)}</span>
          </div>
        </div>
        {mayEdit && (
          <div class="btn-row">
            {wf.paused ? (
              <button class="btn btn-primary" onClick={() => setConfirm('resume')}>
                ▶ Resume
              </button>
            ) : (
              <button class="btn" onClick={() => setConfirm('pause')}>
                Pause
              </button>
            )}
            {!editing && (
              <button class="btn btn-ghost" onClick={() => setEditing(true)}>
                Edit
              </button>
            )}
          </div>
        )}
      </div>
      {!mayEdit && <p class="muted small">Only developers of team {wf.team} (or admins) edit or pause this workflow.</p>}
      {editing && (
        <Editor
          wf={wf}
          onCancel={() => setEditing(false)}
          onSaved={(w) => {
            setEditing(false);
            onChange(w);
          }}
        />
      )}
      {confirm && (
        <Confirm
          title={`${confirm === 'pause' ? 'Pause' : 'Resume'} workflow ${wf.name}?`}
          body={
            confirm === 'pause' ? (
              <>
                While it is paused no instance of its {n} task{n === 1 ? '' : 's'} is created or dispatched (backfilled ones wait too); instances that are
                running now finish. Everyone sees who paused it.
              </>
            ) : (
              <>Its waiting instances are checked again and run when their upstreams allow; fire times missed while paused follow each task's catch-up setting.</>
            )
          }
          confirmLabel={confirm === 'pause' ? 'Pause' : 'Resume'}
          onClose={() => setConfirm(null)}
          onConfirm={async () => {
            const w = confirm === 'pause' ? await api.pauseWorkflow(wf.name) : await api.resumeWorkflow(wf.name);
            toast(`Workflow ${w.name} ${w.paused ? 'paused' : 'resumed'}`);
            onChange(w);
          }}
        />
      )}
    </section>
  );
}

/** The header of the workflow named name, read on its own (one small call:
 * the workflow list), for pages that have the name only (the run history). */
export function WorkflowHeaderOf({ name }: { name: string }) {
  const list = useAsync(() => api.workflows(), [name]);
  const wf = list.data?.items.find((w) => w.name === name);
  if (!wf) return list.error ? <ErrorBanner error={list.error} onRetry={list.reload} /> : null;
  return <WorkflowHeader wf={wf} onChange={() => list.reload()} />;
}
