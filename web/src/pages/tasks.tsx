// tasks.tsx - the task list: search by name prefix, team / type / active
// filters (kept in the URL), the state of each task's last run (the list
// asks for it with with_last_run=1, one request for the page), and entry
// points to the designer, the workflow view, instances and backfill.
import { useEffect, useState } from 'preact/hooks';
import { api, type Task } from '../api';
import { BackfillDialog } from '../components/backfill';
import { PausedTag } from '../components/workflow-header';
import { RunNowDialog } from '../components/run';
import { Empty, ErrorBanner, Link, Loading, PageHead, StateBadge, useAsync, val } from '../components/ui';
import { fmtRelative, fmtShort, fmtTime } from '../format';
import { STATE_LABEL } from '../states';
import { useRoute } from '../router';
import { canEditTeam, useMe } from '../session';

function LastRun({ task }: { task: Task }) {
  const r = task.last_run;
  if (!r || !r.state) return <StateBadge state={null} />;
  return (
    <Link to={`/instances?task_id=${task.id}`} class="lastrun" title="this task's instances, newest first">
      <StateBadge state={r.state} />
      <span class="muted small" data-at={r.updated_at} title={`${STATE_LABEL[r.state]} at ${fmtTime(r.updated_at)}`}>
        {fmtRelative(r.updated_at)}
      </span>
      <span class="muted small">· scheduled for {fmtShort(r.schedule_time)}</span>
    </Link>
  );
}

export function TasksPage() {
  const me = useMe();
  const { query, setQuery } = useRoute();
  const q = query.get('q') ?? '';
  const team = query.get('team') ?? '';
  const type = query.get('type') ?? '';
  const active = query.get('active') ?? 'true';
  const [search, setSearch] = useState(q);
  const [pages, setPages] = useState<Task[][]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [backfill, setBackfill] = useState<Task | null>(null);
  const [runNow, setRunNow] = useState<Task | null>(null);
  const list = useAsync(() => api.lastRuns({ q, team, type, active, limit: 50 }), [q, team, type, active]);
  useEffect(() => {
    if (list.data) {
      setPages([list.data.items]);
      setNext(list.data.next_page_token);
    }
  }, [list.data]);
  useEffect(() => {
    const t = window.setTimeout(() => {
      if (search !== q) setQuery({ q: search, team, type, active: active === 'true' ? '' : active });
    }, 250);
    return () => window.clearTimeout(t);
  }, [search]);
  const more = async () => {
    if (!next) return;
    const p = await api.lastRuns({ q, team, type, active, limit: 50, page_token: next });
    setPages((old) => [...old, p.items]);
    setNext(p.next_page_token);
  };
  const tasks = pages.flat();
  const teams = Array.from(new Set([...me.teams, ...tasks.map((t) => t.team), ...(team ? [team] : [])])).sort();
  const set = (k: string, v: string) =>
    setQuery({ q, team, type, active: active === 'true' ? '' : active, [k]: v === 'true' && k === 'active' ? '' : v });
  return (
    <div>
      <PageHead
        title="Tasks"
        sub="Everything Orrery schedules, with the state of its last run."
        actions={
          me.role !== 'viewer' && (
            <Link to="/tasks/new" class="btn btn-primary">
              + New task
            </Link>
          )
        }
      />
      <div class="toolbar">
        <input
          class="search"
          type="search"
          placeholder="Search by name…"
          aria-label="Search tasks"
          value={search}
          onInput={(e) => setSearch(val(e))}
        />
        <select aria-label="Team" value={team} onChange={(e) => set('team', val(e))}>
          <option value="">All teams</option>
          {teams.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
        <select aria-label="Type" value={type} onChange={(e) => set('type', val(e))}>
          <option value="">All types</option>
          <option value="shell">shell</option>
          <option value="transfer">transfer</option>
          <option value="quality">quality</option>
        </select>
        <select aria-label="Active" value={active} onChange={(e) => set('active', val(e))}>
          <option value="true">Active</option>
          <option value="false">Deactivated</option>
          <option value="any">Active and deactivated</option>
        </select>
      </div>
      <ErrorBanner error={list.error} onRetry={list.reload} />
      {list.loading && !list.data ? (
        <Loading what="tasks" />
      ) : tasks.length === 0 && !list.error ? (
        <Empty title={q || team || type ? 'No task matches these filters' : 'No tasks yet'} icon="☰">
          {me.role !== 'viewer' ? (
            <>
              <Link to="/tasks/new">Design your first task</Link> — a shell command on a schedule is a good start.
            </>
          ) : (
            'Tasks appear here once developers create them.'
          )}
        </Empty>
      ) : (
        <div class="card">
          <table class="table" data-testid="task-table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Team</th>
                <th>Type</th>
                <th>Schedule</th>
                <th>Last run</th>
                <th class="right">Actions</th>
              </tr>
            </thead>
            <tbody>
              {tasks.map((t) => (
                <tr key={t.id} data-task={t.name}>
                  <td>
                    <Link to={`/tasks/${t.id}`} class="strong">
                      {t.name}
                    </Link>
                    {!t.active && <span class="tag tag-muted">deactivated</span>} <PausedTag paused={t.paused} />
                    {typeof t.spec.description === 'string' && t.spec.description && (
                      <div class="muted small ellipsis">{t.spec.description}</div>
                    )}
                  </td>
                  <td>
                    <span class="tag">{t.team}</span>
                  </td>
                  <td>{t.type}</td>
                  <td>
                    {t.schedule ? <code>{t.schedule}</code> : <span class="muted">manual</span>}
                    {t.schedule && t.timezone && t.timezone !== 'UTC' && <span class="muted small"> {t.timezone}</span>}
                  </td>
                  <td>
                    <LastRun task={t} />
                  </td>
                  <td class="right nowrap">
                    <Link to={`/workflow/${t.id}`} class="btn btn-small btn-ghost">
                      Graph
                    </Link>
                    <Link to={`/instances?task_id=${t.id}`} class="btn btn-small btn-ghost">
                      Instances
                    </Link>
                    {canEditTeam(me, t.team) && t.schedule && (
                      <button class="btn btn-small btn-ghost" onClick={() => setBackfill(t)}>
                        Backfill
                      </button>
                    )}
                    {canEditTeam(me, t.team) && t.active && (
                      <button class="btn btn-small btn-ghost" data-action="run-now" aria-label={`Run now ${t.name}`} onClick={() => setRunNow(t)}>
                        Run now
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {next && (
            <div class="table-foot">
              <button class="btn" onClick={more}>
                Load more
              </button>
            </div>
          )}
        </div>
      )}
      {backfill && <BackfillDialog task={backfill} onClose={() => setBackfill(null)} />}
      {runNow && <RunNowDialog task={runNow} onClose={() => setRunNow(null)} />}
    </div>
  );
}
