// workflow.tsx - workflows: the connected groups of tasks linked by their
// upstreams. Without a task id it lists the workflows; with one it draws that
// task's workflow as a DAG, each node coloured by the state of its task's
// latest instance (refreshed every few seconds).
//
// The graph is computed in the browser from the task list (every task's
// spec.upstreams names its upstream tasks). Named workflows (the registry's)
// are listed on top, each leading to its run history (history.tsx).
import { useEffect, useMemo, useState } from 'preact/hooks';
import { allPages, api, type Instance, type State, type Task } from '../api';
import { Graph, Legend, type GEdge, type GNode } from '../components/graph';
import { Empty, ErrorBanner, Link, Loading, PageHead, StateBadge, useAsync, useInterval } from '../components/ui';
import { PausedTag } from '../components/workflow-header';
import { fmtRelative, fmtShort } from '../format';
import { latestInstance } from '../latest';
import { useRoute } from '../router';
import { STATES } from '../states';

interface Wf {
  tasks: Task[];
  edges: GEdge[];
  missing: string[]; // upstream names with no task
}

function upstreamNames(t: Task): { name: string; kind: string }[] {
  const ups = (t.spec.upstreams as { kind?: string; task?: string }[] | undefined) ?? [];
  return ups.filter((u) => (u.kind === 'strong' || u.kind === 'weak') && u.task).map((u) => ({ name: u.task!, kind: u.kind! }));
}

/** Split tasks into connected components by their upstream links. */
export function workflows(tasks: Task[]): Wf[] {
  const byName = new Map(tasks.map((t) => [t.name, t]));
  const parent = new Map<string, string>();
  const find = (x: string): string => {
    let r = x;
    while (parent.get(r) !== r) r = parent.get(r)!;
    parent.set(x, r);
    return r;
  };
  const union = (a: string, b: string) => parent.set(find(a), find(b));
  for (const t of tasks) parent.set(t.name, t.name);
  for (const t of tasks)
    for (const u of upstreamNames(t)) {
      if (!parent.has(u.name)) parent.set(u.name, u.name);
      union(u.name, t.name);
    }
  const groups = new Map<string, Wf>();
  for (const name of parent.keys()) {
    const r = find(name);
    if (!groups.has(r)) groups.set(r, { tasks: [], edges: [], missing: [] });
    const g = groups.get(r)!;
    const t = byName.get(name);
    if (t) {
      g.tasks.push(t);
      for (const u of upstreamNames(t)) g.edges.push({ source: u.name, target: t.name, kind: u.kind });
    } else g.missing.push(name);
  }
  return [...groups.values()].filter((g) => g.tasks.length > 0).sort((a, b) => b.tasks.length - a.tasks.length);
}

function useAllTasks() {
  return useAsync(() => allPages((tok) => api.tasks({ limit: 1000, page_token: tok }), 10), []);
}

/** Named workflows (saved with PUT /workflows/{name}), each to its run history. */
function NamedWorkflows() {
  const wfs = useAsync(() => api.workflowNames(), []);
  const items = wfs.data?.items ?? [];
  if (wfs.error || items.length === 0) return null;
  return (
    <div class="card pad" data-testid="named-workflows" style={{ marginBottom: '16px' }}>
      <h2>Run history</h2>
      <div class="chips">
        {items.map((w) => (
          <Link key={w.id} to={`/workflows/${encodeURIComponent(w.name)}/runs`} class="chip" title={`Run history of ${w.name}`}>
            {w.name} · {w.task_ids.length} task{w.task_ids.length === 1 ? '' : 's'}
          </Link>
        ))}
      </div>
    </div>
  );
}

function WorkflowList() {
  const all = useAllTasks();
  const wfs = useMemo(() => (all.data ? workflows(all.data.items) : []), [all.data]);
  const linked = wfs.filter((w) => w.tasks.length > 1);
  const single = wfs.filter((w) => w.tasks.length === 1);
  return (
    <div>
      <PageHead title="Workflows" sub="Tasks that depend on each other, drawn as graphs." />
      <NamedWorkflows />
      <ErrorBanner error={all.error} onRetry={all.reload} />
      {all.loading && !all.data ? (
        <Loading what="tasks" />
      ) : wfs.length === 0 ? (
        <Empty title="No tasks yet" icon="⋔">
          <Link to="/tasks/new">Create a task</Link>, then give other tasks an upstream to build a workflow.
        </Empty>
      ) : (
        <>
          <div class="wf-grid">
            {linked.map((w) => {
              const roots = w.tasks.filter((t) => upstreamNames(t).length === 0);
              return (
                <Link key={w.tasks[0].id} to={`/workflow/${(roots[0] ?? w.tasks[0]).id}`} class="card wf-card">
                  <div class="wf-title">{(roots[0] ?? w.tasks[0]).name}</div>
                  <div class="muted small">
                    {w.tasks.length} tasks · {w.edges.length} links · teams {[...new Set(w.tasks.map((t) => t.team))].join(', ')}
                  </div>
                  <div class="wf-names small">{w.tasks.map((t) => t.name).join(' · ')}</div>
                </Link>
              );
            })}
          </div>
          {single.length > 0 && (
            <div class="card pad">
              <h2>Standalone tasks</h2>
              <div class="chips">
                {single.map((w) => (
                  <Link key={w.tasks[0].id} to={`/workflow/${w.tasks[0].id}`} class="chip">
                    {w.tasks[0].name}
                  </Link>
                ))}
              </div>
            </div>
          )}
        </>
      )}
    </div>
  );
}

function WorkflowGraph({ taskId }: { taskId: number }) {
  const { navigate } = useRoute();
  const all = useAllTasks();
  const wf = useMemo(() => {
    if (!all.data) return null;
    return workflows(all.data.items).find((w) => w.tasks.some((t) => t.id === taskId)) ?? null;
  }, [all.data, taskId]);
  const [latest, setLatest] = useState<Record<number, Instance | null>>({});
  const [selected, setSelected] = useState<string | null>(null);
  const refresh = (fresh: boolean) => {
    if (!wf) return;
    for (const t of wf.tasks)
      latestInstance(t.id, fresh).then(
        (i) => setLatest((m) => (m[t.id]?.id === i?.id && m[t.id]?.state === i?.state && t.id in m ? m : { ...m, [t.id]: i })),
        () => undefined,
      );
  };
  useEffect(() => refresh(false), [wf]);
  useInterval(() => refresh(true), 5000, !!wf);

  if (all.error) return <ErrorBanner error={all.error} onRetry={all.reload} />;
  if (!all.data) return <Loading what="the workflow" />;
  if (!wf) return <Empty title="No such task">It may have been deactivated.</Empty>;
  const focus = wf.tasks.find((t) => t.id === taskId)!;
  const nodes: GNode[] = [
    ...wf.tasks.map((t) => ({
      id: t.name,
      label: t.name,
      sub: latest[t.id] ? latest[t.id]!.state.replace('_', ' ') : t.id in latest ? 'no runs' : '…',
      state: (latest[t.id]?.state ?? null) as State | null,
      focus: t.id === taskId,
    })),
    ...wf.missing.map((m) => ({ id: m, label: m, sub: 'missing task', state: null })),
  ];
  const sel = wf.tasks.find((t) => t.name === selected) ?? focus;
  const selInst = latest[sel.id];
  return (
    <div>
      <PageHead
        title={`Workflow of ${focus.name}`}
        sub={`${wf.tasks.length} task${wf.tasks.length === 1 ? '' : 's'}, coloured by the state of their latest instance.`}
        actions={
          <Link to="/workflow" class="btn btn-ghost">
            All workflows
          </Link>
        }
      />
      <div class="split">
        <div class="card">
          <Graph nodes={nodes} edges={wf.edges} onSelect={(id) => setSelected(id)} height={480} />
          <Legend states={STATES} />
        </div>
        <aside class="card pad side-panel" data-testid="wf-side">
          <h2>{sel.name}</h2>
          <div class="kv">
            <span>Team</span>
            <span>
              <span class="tag">{sel.team}</span> <PausedTag paused={sel.paused} />
            </span>
            <span>Type</span>
            <span>{sel.type}</span>
            <span>Schedule</span>
            <span>{sel.schedule ? <code>{sel.schedule}</code> : 'manual'}</span>
            <span>Latest run</span>
            <span>
              {selInst ? (
                <Link to={`/instances/${selInst.id}`}>
                  <StateBadge state={selInst.state} /> <span class="small muted" data-at={selInst.updated_at}>
                    {fmtRelative(selInst.updated_at)} · scheduled for {fmtShort(selInst.schedule_time)}
                  </span>
                </Link>
              ) : (
                <StateBadge state={null} />
              )}
            </span>
            <span>Upstreams</span>
            <span>{upstreamNames(sel).map((u) => `${u.name} (${u.kind})`).join(', ') || 'none'}</span>
          </div>
          <div class="btn-row">
            <Link to={`/tasks/${sel.id}`} class="btn btn-small">
              Open in designer
            </Link>
            <Link to={`/instances?task_id=${sel.id}`} class="btn btn-small">
              Instances
            </Link>
            {sel.id !== taskId && (
              <button class="btn btn-small btn-ghost" onClick={() => navigate(`/workflow/${sel.id}`)}>
                Focus
              </button>
            )}
          </div>
        </aside>
      </div>
    </div>
  );
}

export function WorkflowPage({ taskId }: { taskId: number | null }) {
  return taskId ? <WorkflowGraph taskId={taskId} /> : <WorkflowList />;
}
