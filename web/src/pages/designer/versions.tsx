// versions.tsx - a task's versions in the designer: who saved each, when and
// why (its comment, or the version a rollback restored); a diff of any two
// versions field by field, side by side or unified; and a rollback, which
// saves an old version's spec as a new version after a confirmation.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, type Task, type TaskDiff } from '../../api';
import { Confirm, ErrorBanner, Field, Loading, toast, useAsync, val } from '../../components/ui';
import { fmtRelative, fmtTime } from '../../format';

function show(v: unknown): string {
  if (v === null || v === undefined) return '';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

export function DiffView({ diff, mode }: { diff: TaskDiff; mode: 'split' | 'unified' }) {
  if (diff.changes.length === 0)
    return (
      <div class="muted" data-testid="diff-empty">
        Versions {diff.from.version} and {diff.to.version} have the same spec.
      </div>
    );
  if (mode === 'unified')
    return (
      <pre class="diff-unified mono" data-testid="diff-unified">
        {diff.changes.map((c) => (
          <>
            {c.change !== 'added' && <span class="diff-del">{`- ${c.field}: ${show(c.from)}\n`}</span>}
            {c.change !== 'removed' && <span class="diff-add">{`+ ${c.field}: ${show(c.to)}\n`}</span>}
          </>
        ))}
      </pre>
    );
  return (
    <div class="table-wrap">
      <table class="table compact diff-table" data-testid="diff-table">
        <thead>
          <tr>
            <th scope="col">Field</th>
            <th scope="col">Version {diff.from.version}</th>
            <th scope="col">Version {diff.to.version}</th>
          </tr>
        </thead>
        <tbody>
          {diff.changes.map((c) => (
            <tr key={c.field} data-change={c.change}>
              <td class="mono">{c.field}</td>
              <td class="mono diff-del">{c.change === 'added' ? <span class="muted">(absent)</span> : show(c.from)}</td>
              <td class="mono diff-add">{c.change === 'removed' ? <span class="muted">(absent)</span> : show(c.to)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Versions({ task, editable, pick, onRolledBack }: { task: Task; editable: boolean; pick?: number; onRolledBack: (t: Task) => void }) {
  const list = useAsync(() => api.taskVersions(task.id), [task.id, task.current_version]);
  const cur = task.current_version;
  const [from, setFrom] = useState<number>(pick && pick !== cur ? pick : Math.max(1, cur - 1));
  const [to, setTo] = useState<number>(cur);
  const [mode, setMode] = useState<'split' | 'unified'>('split');
  // A new current version (a save, a rollback): compare it with the one before.
  const seen = useRef(cur);
  useEffect(() => {
    if (seen.current !== cur) {
      seen.current = cur;
      setFrom(Math.max(1, cur - 1));
      setTo(cur);
    }
  }, [cur]);
  const diff = useAsync(() => (from === to ? Promise.resolve(null) : api.taskDiff(task.id, from, to)), [task.id, from, to, cur]);
  const [rollback, setRollback] = useState<number | null>(null);
  const [comment, setComment] = useState('');
  const items = list.data?.items ?? [];
  const options = items.map((v) => (
    <option key={v.version} value={v.version}>
      version {v.version}
      {v.current ? ' (current)' : ''}
    </option>
  ));
  return (
    <section class="card pad" id="versions" data-testid="versions">
      <h2>Versions</h2>
      <ErrorBanner error={list.error} onRetry={list.reload} />
      {!list.data && !list.error && <Loading what="the versions" />}
      {items.length > 0 && (
        <div class="table-wrap">
          <table class="table compact" data-testid="version-list">
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Saved by</th>
                <th scope="col">When</th>
                <th scope="col">Comment</th>
                <th scope="col">
                  Actions
                </th>
              </tr>
            </thead>
            <tbody>
              {items.map((v) => (
                <tr key={v.version} data-version={v.version} class={v.version === pick ? 'row-picked' : ''}>
                  <td>
                    {v.version}
                    {v.current && <span class="tag">current</span>}
                  </td>
                  <td>{v.created_by}</td>
                  <td title={v.created_at ? fmtTime(v.created_at) : ''}>{v.created_at ? fmtRelative(v.created_at) : '—'}</td>
                  <td>
                    {v.comment || <span class="muted">—</span>}
                    {v.restored_from ? <span class="tag tag-muted">restores version {v.restored_from}</span> : null}
                  </td>
                  <td>
                    {editable && !v.current && (
                      <button type="button" class="btn btn-small" data-testid={`rollback-${v.version}`} onClick={() => setRollback(v.version)}>
                        Roll back to {v.version}
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {items.length > 1 && (
        <>
          <div class="diff-controls">
            <Field label="Compare">
              <select value={from} onChange={(e) => setFrom(Number(val(e)))} data-testid="diff-from">
                {options}
              </select>
            </Field>
            <Field label="with">
              <select value={to} onChange={(e) => setTo(Number(val(e)))} data-testid="diff-to">
                {options}
              </select>
            </Field>
            <div class="segmented" role="radiogroup" aria-label="Diff layout">
              {(['split', 'unified'] as const).map((m) => (
                <button type="button" key={m} role="radio" aria-checked={mode === m} class={mode === m ? 'on' : ''} onClick={() => setMode(m)}>
                  {m === 'split' ? 'Side by side' : 'Unified'}
                </button>
              ))}
            </div>
          </div>
          <ErrorBanner error={diff.error} />
          {from === to ? (
            <div class="muted">Choose two different versions.</div>
          ) : diff.data ? (
            <DiffView diff={diff.data} mode={mode} />
          ) : (
            <Loading what="the diff" />
          )}
        </>
      )}
      {rollback !== null && (
        <Confirm
          title={`Roll back ${task.name} to version ${rollback}?`}
          body={
            <>
              <p>
                Version {rollback}'s spec is saved as a new version {cur + 1}; versions {rollback + 1} to {cur} stay in the history. Instances
                created from now on run it.
              </p>
              <Field label="Comment (optional)">
                <input value={comment} placeholder={`rollback to version ${rollback}`} onInput={(e) => setComment(val(e))} data-testid="rollback-comment" />
              </Field>
            </>
          }
          confirmLabel={`Roll back to ${rollback}`}
          onClose={() => setRollback(null)}
          onConfirm={async () => {
            const t = await api.rollbackTask(task.id, rollback, comment);
            toast(t.changed ? `Rolled back: ${t.name} is at version ${t.version}, restoring ${rollback}` : `No change: version ${rollback} is the current spec`);
            setComment('');
            onRolledBack(t);
          }}
        />
      )}
    </section>
  );
}
