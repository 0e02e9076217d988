// workflows.tsx - workflows as objects: the list (name, description, owning
// team, tasks, paused or not, with pause / resume for the owning team), a
// form to create one from tasks picked by type-ahead, and a workflow's own
// page (/workflows/<name>): its header (workflow-header.tsx: description,
// team, pause, edit) and its tasks with the state of their latest instance,
// linking to the run history. The task graphs drawn from upstreams stay on
// /workflow (workflow.tsx).
import { useMemo, useState } from 'preact/hooks';
import { api, ApiError, type Instance, type Paused, type Task, type Workflow } from '../api';
import { TaskPicker } from '../components/taskpicker';
import { PausedTag, WorkflowHeader } from '../components/workflow-header';
import { Confirm, Empty, ErrorBanner, Field, Link, Loading, PageHead, Spinner, StateBadge, toast, useAsync, useInterval, val } from '../components/ui';
import { fmtRelative, fmtShort } from '../format';
import { useRoute } from '../router';
import { canAct, canEditTeam, useMe } from '../session';
import '../components/objects.css';

function NewWorkflow({ onSaved }: { onSaved: () => void }) {
  const me = useMe();
  const { navigate } = useRoute();
  const [name, setName] = useState('');
  const [team, setTeam] = useState(me.teams[0] ?? '');
  const [desc, setDesc] = useState('');
  const [tasks, setTasks] = useState<{ id: number; name: string }[]>([]);
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const fe = (f: string) => (err instanceof ApiError && (err.field === f || err.field?.startsWith(`${f}[`)) ? err.message : null);
  const save = async (e: Event) => {
    e.preventDefault();
    setErr(null);
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(name)) {
      setErr(new ApiError(400, 'EINVAL', 'letters, digits, "_", "." or "-", starting with a letter or digit', 'name'));
      return;
    }
    setBusy(true);
    try {
      const w = await api.putWorkflow(name, { team: team.trim(), task_ids: tasks.map((t) => t.id), description: desc });
      toast(`Workflow ${w.name} created`);
      onSaved();
      navigate(`/workflows/${encodeURIComponent(w.name)}`);
    } catch (x) {
      setErr(x);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card pad" onSubmit={save} noValidate data-testid="wf-new">
      <h2>New workflow</h2>
      <div class="grid2">
        <Field label="Name" field="name" error={fe('name')}>
          <input value={name} onInput={(e) => setName(val(e))} placeholder="etl-daily" autocomplete="off" aria-label="Workflow name" />
        </Field>
        <Field label="Owning team" field="team" error={fe('team')}>
          {me.role === 'admin' ? (
            <input value={team} onInput={(e) => setTeam(val(e))} placeholder="etl" aria-label="Owning team" />
          ) : (
            <select value={team} onChange={(e) => setTeam(val(e))} aria-label="Owning team">
              {me.teams.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <Field label="Description" field="description" error={fe('description')}>
        <textarea rows={2} value={desc} onInput={(e) => setDesc(val(e))} aria-label="Description" placeholder="What it does, who to ask" />
      </Field>
      <Field label="Tasks" field="task_ids" error={fe('task_ids')} hint="Type to find a task; pick as many as belong to it">
        <TaskPicker
          key={tasks.length}
          label="Add a task"
          placeholder="Add a task — type to search"
          value={null}
          onChange={(t) => t && !tasks.some((x) => x.id === t.id) && setTasks([...tasks, t])}
        />
      </Field>
      {tasks.length > 0 && (
        <div class="chips-picked" aria-label="Tasks of the new workflow">
          {tasks.map((t) => (
            <span key={t.id} class="tag">
              {t.name}
              <button type="button" aria-label={`Remove ${t.name}`} onClick={() => setTasks(tasks.filter((x) => x.id !== t.id))}>
                ×
              </button>
            </span>
          ))}
        </div>
      )}
      {err && !fe('name') && !fe('team') && !fe('description') && !fe('task_ids') ? <ErrorBanner error={err} /> : null}
      <button class="btn btn-primary" type="submit" disabled={busy || !name}>
        {busy ? <Spinner /> : null} Create workflow
      </button>
    </form>
  );
}

export function WorkflowsPage() {
  const me = useMe();
  const list = useAsync(() => api.workflows(), []);
  useInterval(list.reload, 10000);
  const [q, setQ] = useState('');
  const [confirm, setConfirm] = useState<{ wf: Workflow; op: 'pause' | 'resume' } | null>(null);
  const items = useMemo(() => {
    const s = q.trim().toLowerCase();
    const all = list.data?.items ?? [];
    return s ? all.filter((w) => w.name.toLowerCase().includes(s) || w.description.toLowerCase().includes(s) || w.team.toLowerCase().includes(s)) : all;
  }, [list.data, q]);
  return (
    <div>
      <PageHead
        title="Workflows"
        sub="Named sets of tasks with an owning team; pause one to hold all of its tasks."
        actions={
          <Link to="/workflow" class="btn btn-ghost">
            Task graphs
          </Link>
        }
      />
      <div class="obj-search">
        <input type="search" aria-label="Search workflows" placeholder="Search by name, description or team" value={q} onInput={(e) => setQ(val(e))} />
        <span class="muted small" aria-live="polite">
          {list.data ? `${items.length} of ${list.data.items.length}` : ''}
        </span>
      </div>
      <ErrorBanner error={list.error} onRetry={list.reload} />
      {list.loading && !list.data ? (
        <Loading what="workflows" />
      ) : (list.data?.items.length ?? 0) === 0 ? (
        <Empty title="No workflows yet" icon="⋔">
          A workflow names a set of tasks, says which team owns them, and can be paused as a whole.
        </Empty>
      ) : (
        <div class="card table-wrap">
          <table class="table" data-testid="wf-table">
            <thead>
              <tr>
                <th>Workflow</th>
                <th>Team</th>
                <th class="num">Tasks</th>
                <th>Status</th>
                <th>Updated</th>
                <th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {items.map((w) => (
                <tr key={w.id} data-workflow={w.name}>
                  <td>
                    <Link to={`/workflows/${encodeURIComponent(w.name)}`} class="strong">
                      {w.name}
                    </Link>
                    {w.description && <div class="muted small">{w.description.length > 120 ? `${w.description.slice(0, 117)}…` : w.description}</div>}
                  </td>
                  <td>
                    <span class="tag">{w.team}</span>
                  </td>
                  <td class="num">{w.task_ids.length}</td>
                  <td>
                    {w.paused ? (
                      <span class="paused-tag" title={`by ${(w.paused_by ?? '').replace(/^user:/, '')} ${fmtRelative(w.paused_at)}`}>
                        paused by {(w.paused_by ?? '').replace(/^user:/, '')}
                      </span>
                    ) : (
                      <span class="muted">active</span>
                    )}
                  </td>
                  <td class="muted">{fmtRelative(w.updated_at)}</td>
                  <td>
                    {canEditTeam(me, w.team) && (
                      <button class="btn btn-small" onClick={() => setConfirm({ wf: w, op: w.paused ? 'resume' : 'pause' })} aria-label={`${w.paused ? 'Resume' : 'Pause'} ${w.name}`}>
                        {w.paused ? 'Resume' : 'Pause'}
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {canAct(me) && <NewWorkflow onSaved={list.reload} />}
      {confirm && (
        <Confirm
          title={`${confirm.op === 'pause' ? 'Pause' : 'Resume'} workflow ${confirm.wf.name}?`}
          body={
            confirm.op === 'pause'
              ? 'No instance of its tasks is created or dispatched while it is paused; running ones finish.'
              : 'Its held instances are checked again and run when their upstreams allow.'
          }
          confirmLabel={confirm.op === 'pause' ? 'Pause' : 'Resume'}
          onClose={() => setConfirm(null)}
          onConfirm={async () => {
            const w = confirm.op === 'pause' ? await api.pauseWorkflow(confirm.wf.name) : await api.resumeWorkflow(confirm.wf.name);
            toast(`Workflow ${w.name} ${w.paused ? 'paused' : 'resumed'}`);
            list.reload();
          }}
        />
      )}
    </div>
  );
}

/** A task of GET /workflows/{name}: with its latest instance, or only an id when it was removed. */
type WfTask = Task & { latest_instance?: Instance | null; missing?: boolean; paused?: Paused };

/** A workflow's own page: its header, then its tasks. */
export function WorkflowObjectPage({ name }: { name: string }) {
  const wf = useAsync(() => api.workflow(name), [name]);
  useInterval(wf.reload, 5000, !!wf.data);
  const [override, setOverride] = useState<Workflow | null>(null);
  if (wf.error)
    return (
      <div>
        <PageHead title="Workflow" />
        {wf.error instanceof ApiError && wf.error.status === 404 ? (
          <Empty title={`No workflow named ${name}`}>
            <Link to="/workflows">All workflows</Link>
          </Empty>
        ) : (
          <ErrorBanner error={wf.error} onRetry={wf.reload} />
        )}
      </div>
    );
  if (!wf.data) return <Loading what="the workflow" />;
  const d = wf.data;
  const head: Workflow = override && override.updated_at && d.updated_at && override.updated_at > d.updated_at ? override : d;
  return (
    <div>
      <PageHead
        title={`Workflow ${d.name}`}
        actions={
          <>
            <Link to={`/workflows/${encodeURIComponent(d.name)}/runs`} class="btn">
              Run history
            </Link>
            <Link to="/workflows" class="btn btn-ghost">
              All workflows
            </Link>
          </>
        }
      />
      <WorkflowHeader
        wf={head}
        onChange={(w) => {
          setOverride(w);
          wf.reload();
        }}
      />
      <div class="card table-wrap">
        <table class="table" data-testid="wf-tasks">
          <thead>
            <tr>
              <th>Task</th>
              <th>Team</th>
              <th>Schedule</th>
              <th>Latest instance</th>
            </tr>
          </thead>
          <tbody>
            {(d.tasks as WfTask[]).map((t) =>
              t.missing ? (
                <tr key={t.id}>
                  <td colSpan={4} class="muted">
                    Task {t.id} (removed)
                  </td>
                </tr>
              ) : (
                <tr key={t.id} data-task={t.name}>
                  <td>
                    <Link to={`/tasks/${t.id}`} class="strong">
                      {t.name}
                    </Link>{' '}
                    <PausedTag paused={t.paused} />
                  </td>
                  <td>
                    <span class="tag">{t.team}</span>
                  </td>
                  <td>{t.schedule ? <code>{t.schedule}</code> : <span class="muted">manual</span>}</td>
                  <td>
                    {t.latest_instance ? (
                      <Link to={`/instances/${t.latest_instance.id}`}>
                        <StateBadge state={t.latest_instance.state} />{' '}
                        <span class="small muted">scheduled for {fmtShort(t.latest_instance.schedule_time)}</span>
                      </Link>
                    ) : (
                      <StateBadge state={null} />
                    )}
                  </td>
                </tr>
              ),
            )}
          </tbody>
        </table>
      </div>
    </div>
  );
}
