// instances.tsx - the instance table: filters by task (a type-ahead over
// GET /tasks/suggest, so ten thousand tasks stay quick), text search (the
// task name or reason contains it, or the executor or id is it), state and
// schedule time (all kept in the URL), newest first, with when each
// instance started and ended and how long it ran; row selection and bulk
// actions (POST /instances/actions, with a confirmation and a per-row
// result). An instance held by a paused workflow says so.
//
// The page reads up to MAX_PAGES pages of 1000 (newest schedule time first)
// and sorts them in the browser; when there are more, it says so and asks
// for a narrower filter.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { allPages, api, type Action, type BulkResult, type Instance, type State } from '../api';
import { TaskPicker } from '../components/taskpicker';
import { PausedTag } from '../components/workflow-header';
import { Confirm, Empty, ErrorBanner, Link, Loading, PageHead, StateBadge, toast, useAsync, useInterval, val } from '../components/ui';
import { fmtDuration, fmtRelative, fmtShort, fmtTime, localToIso, toLocalInput } from '../format';
import { useRoute } from '../router';
import { canAct, useMe } from '../session';
import { ACTION_LABEL, actionAllowed, STATES, STATE_LABEL } from '../states';

const MAX_PAGES = 5;
const SHOW_STEP = 100;
const BULK: Action[] = ['rerun', 'suspend', 'resume', 'mark-success', 'kill'];

export function InstancesPage() {
  const me = useMe();
  const { query, setQuery } = useRoute();
  const taskId = query.get('task_id') ?? '';
  const states = (query.get('state') ?? '').split(',').filter(Boolean) as State[];
  const from = query.get('from') ?? '';
  const to = query.get('to') ?? '';
  const text = query.get('q') ?? '';
  const [typed, setTyped] = useState(text);
  useEffect(() => setTyped(text), [text]);
  const [show, setShow] = useState(SHOW_STEP);
  const [sel, setSel] = useState<Set<number>>(new Set());
  const [confirm, setConfirm] = useState<Action | null>(null);
  const [bulkResult, setBulkResult] = useState<BulkResult | null>(null);

  // The chosen task's name, for the picker (the URL holds its id).
  const chosen = useAsync(() => (taskId ? api.task(Number(taskId)) : Promise.resolve(null)), [taskId]);
  const list = useAsync(
    () =>
      allPages(
        (tok) =>
          api.instances({
            task_id: taskId ? Number(taskId) : undefined,
            state: states.join(','),
            from: from ? localToIso(from) : undefined,
            to: to ? localToIso(to) : undefined,
            q: text || undefined,
            order: 'desc',
            limit: 1000,
            page_token: tok,
          }),
        MAX_PAGES,
      ),
    [taskId, states.join(','), from, to, text],
  );
  useInterval(list.reload, 5000);
  useEffect(() => setSel(new Set()), [taskId, states.join(','), from, to, text]);
  // The search box: the URL follows what is typed after a short pause.
  useEffect(() => {
    if (typed === text) return;
    const h = window.setTimeout(() => setF('q', typed.trim()), 300);
    return () => window.clearTimeout(h);
  }, [typed]);

  const rows = useMemo(
    () => (list.data ? [...list.data.items].sort((a, b) => (a.schedule_time < b.schedule_time ? 1 : a.schedule_time > b.schedule_time ? -1 : b.id - a.id)) : []),
    [list.data],
  );
  const visible = rows.slice(0, show);
  const byId = new Map(rows.map((r) => [r.id, r]));
  const selected = [...sel].map((id) => byId.get(id)).filter(Boolean) as Instance[];
  const setF = (k: string, v: string) => setQuery({ task_id: taskId, state: states.join(','), from, to, q: text, [k]: v });
  const now = Date.now();
  const toggleState = (s: State) => setF('state', (states.includes(s) ? states.filter((x) => x !== s) : [...states, s]).join(','));
  const allOn = visible.length > 0 && visible.every((r) => sel.has(r.id));
  const counts = useMemo(() => {
    const c: Partial<Record<State, number>> = {};
    for (const r of rows) c[r.state] = (c[r.state] ?? 0) + 1;
    return c;
  }, [rows]);

  const runBulk = async (a: Action) => {
    const r = await api.bulk([...sel], a);
    setBulkResult(r);
    toast(`${ACTION_LABEL[a]}: ${r.succeeded} done${r.failed ? `, ${r.failed} refused` : ''}`, r.failed ? 'error' : 'ok');
    setSel(new Set(r.results.filter((x) => !x.ok).map((x) => x.id)));
    list.reload();
  };

  return (
    <div>
      <PageHead title="Instances" sub="Every run of every task, newest first." />
      <div class="toolbar">
        <TaskPicker
          label="Task"
          value={taskId ? { id: Number(taskId), name: chosen.data?.name ?? `task ${taskId}` } : null}
          onChange={(t) => setF('task_id', t ? String(t.id) : '')}
        />
        <input
          type="search"
          class="obj-q"
          aria-label="Search instances"
          placeholder="Search: task, reason, executor or id"
          value={typed}
          onInput={(e) => setTyped(val(e))}
          onKeyDown={(e) => e.key === 'Enter' && setF('q', typed.trim())}
        />
        <label class="inline-label">
          From <input type="datetime-local" value={from} onInput={(e) => setF('from', val(e))} aria-label="Scheduled from" />
        </label>
        <label class="inline-label">
          To <input type="datetime-local" value={to} onInput={(e) => setF('to', val(e))} aria-label="Scheduled before" />
        </label>
        {(taskId || states.length || from || to || text) && (
          <button class="btn btn-ghost btn-small" onClick={() => setQuery({})}>
            Clear filters
          </button>
        )}
        <button class="btn btn-ghost btn-small" onClick={() => setF('from', toLocalInput(new Date(Date.now() - 24 * 3600e3)))}>
          Last 24 h
        </button>
      </div>
      <div class="chips state-chips" role="group" aria-label="States">
        {STATES.map((s) => (
          <button key={s} class={`chip chip-state st-${s} ${states.includes(s) ? 'chip-on' : ''}`} aria-pressed={states.includes(s)} onClick={() => toggleState(s)}>
            <span class="dot" />
            {STATE_LABEL[s]}
            {counts[s] ? <span class="chip-count">{counts[s]}</span> : null}
          </button>
        ))}
      </div>
      <ErrorBanner error={list.error} onRetry={list.reload} />
      {canAct(me) && sel.size > 0 && (
        <div class="bulkbar" data-testid="bulkbar">
          <strong>{sel.size} selected</strong>
          {BULK.map((a) => {
            const n = selected.filter((i) => actionAllowed(a, i.state)).length;
            return (
              <button key={a} class={`btn btn-small ${a === 'kill' ? 'btn-danger' : ''}`} disabled={n === 0} onClick={() => setConfirm(a)} title={`${n} of ${sel.size} allow this`}>
                {ACTION_LABEL[a]} {n !== sel.size && n > 0 ? `(${n})` : ''}
              </button>
            );
          })}
          <button class="btn btn-small btn-ghost" onClick={() => setSel(new Set())}>
            Clear
          </button>
        </div>
      )}
      {bulkResult && bulkResult.failed > 0 && (
        <div class="banner banner-warn" role="alert">
          {bulkResult.failed} refused:{' '}
          {bulkResult.results
            .filter((r) => !r.ok)
            .slice(0, 5)
            .map((r) => `#${r.id} ${r.error?.message ?? ''}`)
            .join('; ')}
          <button class="btn btn-small btn-ghost" onClick={() => setBulkResult(null)}>
            Dismiss
          </button>
        </div>
      )}
      {list.loading && !list.data ? (
        <Loading what="instances" />
      ) : rows.length === 0 && !list.error ? (
        <Empty title="No instance matches" icon="▤">
          Instances appear when the scheduler fires a task, or when you backfill one from the task list.
        </Empty>
      ) : (
        <div class="card">
          <table class="table" data-testid="instance-table">
            <thead>
              <tr>
                {canAct(me) && (
                  <th class="check">
                    <input
                      type="checkbox"
                      aria-label="Select all shown"
                      checked={allOn}
                      onChange={() => setSel(allOn ? new Set() : new Set(visible.map((r) => r.id)))}
                    />
                  </th>
                )}
                <th>#</th>
                <th>Task</th>
                <th>Scheduled</th>
                <th>State</th>
                <th>Started</th>
                <th>Ended</th>
                <th class="num">Duration</th>
                <th class="num">Attempt</th>
                <th>Executor</th>
                <th>Updated</th>
              </tr>
            </thead>
            <tbody>
              {visible.map((r) => (
                <tr key={r.id} data-instance={r.id} class={sel.has(r.id) ? 'selected' : ''}>
                  {canAct(me) && (
                    <td class="check">
                      <input
                        type="checkbox"
                        aria-label={`Select instance ${r.id}`}
                        checked={sel.has(r.id)}
                        onChange={() => {
                          const n = new Set(sel);
                          if (n.has(r.id)) n.delete(r.id);
                          else n.add(r.id);
                          setSel(n);
                        }}
                      />
                    </td>
                  )}
                  <td>
                    <Link to={`/instances/${r.id}`} class="mono">
                      {r.id}
                    </Link>
                  </td>
                  <td>
                    <Link to={`/instances/${r.id}`} class="strong">
                      {r.task_name}
                    </Link>{' '}
                    <PausedTag paused={r.paused} />
                  </td>
                  <td>{fmtShort(r.schedule_time)}</td>
                  <td>
                    <StateBadge state={r.state} />
                  </td>
                  <td class="nowrap" title={fmtTime(r.started_at)}>
                    {r.started_at ? fmtShort(r.started_at) : <span class="muted">—</span>}
                  </td>
                  <td class="nowrap" title={fmtTime(r.finished_at)}>
                    {r.finished_at ? fmtShort(r.finished_at) : <span class="muted">—</span>}
                  </td>
                  <td class="num" data-col="duration">
                    {r.started_at ? (
                      <>
                        {fmtDuration((r.finished_at ? new Date(r.finished_at).getTime() : now) - new Date(r.started_at).getTime())}
                        {!r.finished_at && <span class="muted small"> so far</span>}
                      </>
                    ) : (
                      <span class="muted">—</span>
                    )}
                  </td>
                  <td class="num">{r.attempt}</td>
                  <td>{r.executor ?? <span class="muted">—</span>}</td>
                  <td class="muted">{fmtRelative(r.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <div class="table-foot">
            <span class="muted small">
              {visible.length} of {rows.length}
              {list.data?.truncated ? ` (only the first ${MAX_PAGES * 1000} matches were read: narrow the filters)` : ''}
            </span>
            {rows.length > show && (
              <button class="btn btn-small" onClick={() => setShow(show + SHOW_STEP)}>
                Show more
              </button>
            )}
          </div>
        </div>
      )}
      {confirm && (
        <Confirm
          title={`${ACTION_LABEL[confirm]} ${sel.size} instance${sel.size === 1 ? '' : 's'}?`}
          body={
            <>
              {selected.filter((i) => actionAllowed(confirm, i.state)).length} of the selected instances allow this; the others will be
              refused by the server and stay selected.
            </>
          }
          confirmLabel={ACTION_LABEL[confirm]}
          danger={confirm === 'kill'}
          onClose={() => setConfirm(null)}
          onConfirm={() => runBulk(confirm)}
        />
      )}
    </div>
  );
}
