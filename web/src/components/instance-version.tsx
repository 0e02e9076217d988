// instance-version.tsx - on the instance page: the task version the instance
// runs (a link to it in the task's version list) and its parameters: each
// declared parameter with the value this instance gets (its own override, or
// the version's default), editable by those who may act on the task; the
// values apply from the next attempt (a rerun or a run now).
import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorBanner, Field, Link, toast, useAsync, val } from './ui';

type Param = { default?: string; description?: string };

export function InstanceVersion(props: { id: number; taskId: number; version: number; params?: Record<string, string>; canEdit: boolean; onSaved: () => void }) {
  const spec = useAsync(() => api.taskVersion(props.taskId, props.version), [props.taskId, props.version]);
  const [edit, setEdit] = useState<Record<string, string> | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const declared = (spec.data?.spec.parameters as Record<string, Param> | undefined) ?? {};
  const names = Object.keys(declared);
  const own = props.params ?? {};
  return (
    <section class="card pad" data-testid="instance-version">
      <h2>Version and parameters</h2>
      <p>
        Runs{' '}
        <Link to={`/tasks/${props.taskId}?version=${props.version}`} label={`task version ${props.version}`}>
          <span data-testid="instance-task-version">version {props.version}</span>
        </Link>{' '}
        of the task{spec.data && spec.data.current_version !== props.version ? ` (the task is now at version ${spec.data.current_version})` : ''}.
      </p>
      <ErrorBanner error={spec.error || err} />
      {names.length === 0 ? (
        <div class="muted small">This version declares no parameters.</div>
      ) : (
        <div class="table-wrap">
          <table class="table compact" data-testid="instance-params">
            <thead>
              <tr>
                <th scope="col">Parameter</th>
                <th scope="col">Value</th>
                <th scope="col">Default</th>
              </tr>
            </thead>
            <tbody>
              {names.map((n) => (
                <tr key={n} data-param={n}>
                  <td class="mono">{n}</td>
                  <td class="mono">
                    {edit ? (
                      <Field label={`Value of ${n}`}>
                        <input
                          value={edit[n] ?? ''}
                          placeholder={declared[n].default ?? ''}
                          onInput={(e) => setEdit({ ...edit, [n]: val(e) })}
                          data-testid={`param-value-${n}`}
                        />
                      </Field>
                    ) : n in own ? (
                      <span data-testid={`param-shown-${n}`}>
                        {own[n]} <span class="tag">this instance</span>
                      </span>
                    ) : (
                      <span data-testid={`param-shown-${n}`} class="muted">
                        {declared[n].default ?? ''} (default)
                      </span>
                    )}
                  </td>
                  <td class="mono muted">{declared[n].default ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {props.canEdit && names.length > 0 && (
        <div class="row-actions">
          {edit ? (
            <>
              <button
                class="btn btn-primary btn-small"
                data-testid="save-params"
                onClick={async () => {
                  setErr(null);
                  try {
                    const keep = Object.fromEntries(Object.entries(edit).filter(([, v]) => v !== ''));
                    await api.setInstanceParams(props.id, keep);
                    toast('Parameters saved: they apply from the next attempt');
                    setEdit(null);
                    props.onSaved();
                  } catch (x) {
                    setErr(x);
                  }
                }}
              >
                Save parameters
              </button>
              <button class="btn btn-small" onClick={() => setEdit(null)}>
                Cancel
              </button>
            </>
          ) : (
            <button class="btn btn-small" data-testid="edit-params" onClick={() => setEdit({ ...own })}>
              Override values…
            </button>
          )}
        </div>
      )}
    </section>
  );
}
