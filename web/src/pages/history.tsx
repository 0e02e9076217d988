// history.tsx - the run history of a named workflow: a grid of cycles x
// tasks coloured by the state of each task's instance (columns oldest to
// newest, the newest on the right as in Airflow's grid; a click opens the
// instance; a dashed square where a task has no instance), and for one
// chosen cycle (a column's header) either a Gantt chart of the queued and
// running spans of every task's attempts or the workflow's graph coloured
// by that cycle's states.
//
// Each view is one API call: the grid GET /workflows/{name}/runs (30 cycles
// a page, `before` pages back), the cycle GET /workflows/{name}/runs/{cycle}.
// The grid marks "orr:grid-data" when its answer arrives and
// "orr:grid-rendered" once it is in the document (performance marks the
// console benchmark reads).
import { useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, early, type RunCell, type State, type WorkflowRun, type WorkflowRuns } from '../api';
import { Graph, Legend, type GEdge, type GNode } from '../components/graph';
import { FAILED, RerunFailedButton } from '../components/run';
import { Empty, ErrorBanner, Link, Loading, PageHead, StateBadge, useAsync, useInterval } from '../components/ui';
import { WorkflowHeaderOf } from '../components/workflow-header';
import { fmtDuration, fmtTime } from '../format';
import { href, useRoute } from '../router';
import { STATE_LABEL, STATES } from '../states';
import './history.css';

const PAGE = 30;

// Formatters made once: Intl formatting per cell would dominate the grid's
// render (1,500 cells).
const SHORT = new Intl.DateTimeFormat(undefined, { month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit' });

function cycleLabel(iso: string): string {
  const d = new Date(iso);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** The grid: tasks down, cycles across (oldest left, newest right). One
 * element per cell: a link to the instance, or a dashed square. */
function RunGrid(props: { g: WorkflowRuns; selected: string | null; onSelect: (cycle: string) => void }) {
  const { g, selected } = props;
  const nc = g.cycles.length;
  // Columns in time order; the API answers newest first.
  const cols = useMemo(() => g.cycles.map((c, i) => ({ c, i, short: SHORT.format(new Date(c)), label: cycleLabel(c) })).reverse(), [g]);
  const byCell = useMemo(() => {
    const m = new Map<number, RunCell>();
    for (const cell of g.cells as unknown as RunCell[]) m.set(cell[0] * nc + cell[1], cell);
    return m;
  }, [g]);
  const ref = useRef<HTMLDivElement>(null);
  const box = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    // The grid is in the document (before the browser paints it).
    performance.mark('orr:grid-rendered');
    if (ref.current) ref.current.dataset.ready = 'true';
    // The newest cycles are on the right: show them first when the grid scrolls.
    if (box.current) box.current.scrollLeft = box.current.scrollWidth;
  }, [g]);
  const cells = [];
  cells.push(
    <div class="rg-corner" key="corner">
      Task \ cycle
    </div>,
  );
  for (const { c, label } of cols)
    cells.push(
      <button
        key={`h${c}`}
        type="button"
        class={`rg-col ${selected === c ? 'on' : ''}`}
        data-cycle={c}
        aria-pressed={selected === c}
        title={`Show the cycle of ${fmtTime(c)}`}
        onClick={() => props.onSelect(c)}
      >
        {label}
      </button>,
    );
  g.tasks.forEach((t, ti) => {
    cells.push(
      <div class="rg-task" key={`t${t.id}`} title={t.name}>
        {t.name}
        {!t.active && <span class="muted small"> (inactive)</span>}
      </div>,
    );
    for (const { c, i, short } of cols) {
      const cell = byCell.get(ti * nc + i);
      const what = `${t.name} · ${short}`;
      if (!cell) {
        cells.push(<span key={`${t.id}-${i}`} class="rg-cell rg-empty" role="img" data-task={t.name} data-cycle={c} aria-label={`${what}: no instance`} title={`${what}: no instance`} />);
        continue;
      }
      const st = cell[3];
      const label = `${what}: ${STATE_LABEL[st] ?? st}${cell[4] > 1 ? ` (attempt ${cell[4]})` : ''}`;
      cells.push(
        <a
          key={`${t.id}-${i}`}
          class={`rg-cell st-${st}${selected === c ? ' sel' : ''}`}
          href={href(`/instances/${cell[2]}`)}
          data-task={t.name}
          data-state={st}
          data-cycle={c}
          data-instance={cell[2]}
          aria-label={label}
          title={label}
        />,
      );
    }
  });
  return (
    <div class="rg-scroll" ref={box}>
      <div
        class="rg"
        ref={ref}
        data-testid="run-grid"
        role="group"
        aria-label={`Runs of ${g.workflow}: tasks by cycle`}
        style={{ gridTemplateColumns: `var(--rg-task) repeat(${nc}, 20px)` }}
      >
        {cells}
      </div>
    </div>
  );
}

function GridLegend() {
  return (
    <div class="rg-legend" aria-label="Legend">
      {STATES.map((s) => (
        <span key={s}>
          <span class={`rg-cell st-${s}`} aria-hidden="true" />
          {STATE_LABEL[s]}
        </span>
      ))}
      <span>
        <span class="rg-cell rg-empty" aria-hidden="true" />
        No instance
      </span>
    </div>
  );
}

const clock = (t: number) => new Date(t).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });

type Span = WorkflowRun['instances'][number]['spans'][number];
const ms = (iso: string | null | undefined) => (iso ? Date.parse(iso) : NaN);

/** Queued and running bars of every task's attempts in one cycle. */
function Gantt({ run, now }: { run: WorkflowRun; now: number }) {
  const byTask = new Map(run.instances.map((i) => [i.task_id, i]));
  const times: number[] = [];
  for (const i of run.instances)
    for (const s of i.spans) {
      for (const v of [ms(s.queued_at), ms(s.started_at), ms(s.ended_at)]) if (Number.isFinite(v)) times.push(v);
      if ((s.queued_at || s.started_at) && !s.ended_at) times.push(now);
    }
  if (times.length === 0)
    return (
      <Empty title="Nothing ran in this cycle yet" icon="▭">
        No instance of this cycle has been queued or run.
      </Empty>
    );
  const t0 = Math.min(...times);
  const t1 = Math.max(t0 + 1000, Math.max(...times));
  const pct = (t: number) => `${(((t - t0) / (t1 - t0)) * 100).toFixed(3)}%`;
  const bar = (from: number, to: number, cls: string, title: string, key: string) => (
    <span key={key} class={`gantt-bar ${cls}`} title={title} style={{ left: pct(from), width: `calc(${pct(to)} - ${pct(from)})` }} />
  );
  const spanText = (s: Span) => {
    const q = ms(s.queued_at), st = ms(s.started_at), e = ms(s.ended_at);
    const parts: string[] = [];
    if (Number.isFinite(q)) parts.push(`queued ${fmtDuration((Number.isFinite(st) ? st : Number.isFinite(e) ? e : now) - q)}`);
    if (Number.isFinite(st)) parts.push(`ran ${fmtDuration((Number.isFinite(e) ? e : now) - st)}`);
    return parts.join(', ') || 'did not run';
  };
  return (
    <div>
      <div class="gantt" data-testid="gantt">
        {run.tasks.map((t) => {
          const inst = byTask.get(t.id);
          const last = inst?.spans[inst.spans.length - 1];
          return (
            <div key={t.id} style={{ display: 'contents' }} data-gantt-task={t.name}>
              <div class="gantt-task" title={t.name}>
                {inst ? <Link to={`/instances/${inst.id}`}>{t.name}</Link> : t.name}
              </div>
              <div class="gantt-track" role="img" aria-label={inst ? `${t.name}: ${inst.spans.map(spanText).join('; ') || 'did not run'}` : `${t.name}: no instance`}>
                {inst?.spans.flatMap((s) => {
                  const q = ms(s.queued_at), st = ms(s.started_at), e = ms(s.ended_at);
                  const end = Number.isFinite(e) ? e : now;
                  const out = [];
                  if (Number.isFinite(q)) out.push(bar(q, Number.isFinite(st) ? st : end, 'queued', `attempt ${s.attempt}: queued`, `q${s.attempt}`));
                  if (Number.isFinite(st)) out.push(bar(st, end, `st-${s.state}`, `attempt ${s.attempt}: ${STATE_LABEL[s.state] ?? s.state}`, `r${s.attempt}`));
                  return out;
                })}
              </div>
              <div class="gantt-what">
                {inst ? (
                  <>
                    <StateBadge state={inst.state} /> {last ? spanText(last) : 'did not run'}
                    {inst.attempt > 1 ? ` · attempt ${inst.attempt}` : ''}
                  </>
                ) : (
                  'no instance'
                )}
              </div>
            </div>
          );
        })}
      </div>
      <div class="gantt" style={{ marginTop: '4px' }}>
        <span />
        <div class="gantt-axis">
          <span>{clock(t0)}</span>
          <span>{fmtDuration(t1 - t0)}</span>
          <span>{clock(t1)}</span>
        </div>
      </div>
      <div class="rg-legend" style={{ marginTop: '8px' }}>
        <span>
          <span class="gantt-bar queued" style={{ position: 'static', display: 'inline-block', width: '18px', height: '10px', marginRight: '4px' }} aria-hidden="true" />
          Queued (ready, waiting for an executor)
        </span>
        <span>Coloured: running, by how the attempt ended</span>
      </div>
    </div>
  );
}

/** The workflow's graph coloured by one cycle's states. */
function CycleGraph({ run }: { run: WorkflowRun }) {
  const { navigate } = useRoute();
  const byTask = new Map(run.instances.map((i) => [i.task_id, i]));
  const names = new Map(run.tasks.map((t) => [t.id, t.name]));
  const nodes: GNode[] = run.tasks.map((t) => {
    const i = byTask.get(t.id);
    return { id: t.name, label: t.name, sub: i ? STATE_LABEL[i.state].toLowerCase() : 'no instance', state: (i?.state ?? null) as State | null };
  });
  const edges: GEdge[] = run.edges.map((e) => ({ source: names.get(e.upstream_task_id)!, target: names.get(e.task_id)!, kind: e.kind }));
  const ids = new Map(run.tasks.map((t) => [t.name, t.id]));
  return (
    <div>
      <Graph
        nodes={nodes}
        edges={edges}
        height={360}
        onSelect={(name) => {
          const i = byTask.get(ids.get(name) ?? 0);
          if (i) navigate(`/instances/${i.id}`);
        }}
      />
      <Legend states={STATES} />
      <div class="cycle-states" data-testid="cycle-states">
        {run.tasks.map((t) => {
          const i = byTask.get(t.id);
          return (
            <span key={t.id} data-task={t.name} data-state={i?.state ?? 'none'}>
              {i ? <Link to={`/instances/${i.id}`}>{t.name}</Link> : t.name} <StateBadge state={i?.state ?? null} />
            </span>
          );
        })}
      </div>
    </div>
  );
}

function CyclePanel({ name, cycle, view, setView }: { name: string; cycle: string; view: string; setView: (v: string) => void }) {
  const run = useAsync(() => api.workflowRun(name, cycle), [name, cycle]);
  const [now, setNow] = useState(Date.now());
  const live = !!run.data?.instances.some((i) => ['waiting', 'ready', 'dispatched', 'running'].includes(i.state));
  useInterval(() => {
    setNow(Date.now());
    run.reload();
  }, 5000, live);
  return (
    <div class="card pad" data-testid="cycle-panel" data-cycle={cycle}>
      <div class="section-head" style={{ display: 'flex', justifyContent: 'space-between', alignItems: 'center', flexWrap: 'wrap', gap: '8px' }}>
        <h2 style={{ margin: 0 }}>Cycle of {fmtTime(cycle)}</h2>
        {run.data?.instances.some((i) => FAILED.includes(i.state)) && <RerunFailedButton workflow={name} cycle={cycle} onDone={run.reload} />}
        <div class="segmented" role="group" aria-label="View of the cycle">
          <button type="button" class={view === 'gantt' ? 'on' : ''} aria-pressed={view === 'gantt'} data-view="gantt" onClick={() => setView('gantt')}>
            Gantt
          </button>
          <button type="button" class={view === 'graph' ? 'on' : ''} aria-pressed={view === 'graph'} data-view="graph" onClick={() => setView('graph')}>
            Graph
          </button>
        </div>
      </div>
      <ErrorBanner error={run.error} onRetry={run.reload} />
      {!run.data ? (
        run.error ? null : <Loading what="the cycle" />
      ) : view === 'graph' ? (
        <CycleGraph run={run.data} />
      ) : (
        <Gantt run={run.data} now={now} />
      )}
    </div>
  );
}

export function HistoryPage({ name }: { name: string }) {
  const { query, setQuery } = useRoute();
  const before = query.get('before') ?? undefined;
  const view = query.get('view') === 'graph' ? 'graph' : 'gantt';
  const ask = () =>
    api.workflowRuns(name, { limit: PAGE, before }).then((g) => {
      performance.mark('orr:grid-data');
      return g;
    });
  // The first grid is asked for as the page first renders.
  const [first] = useState(() => ({ key: `${name}\n${before}`, call: early(ask) }));
  const grid = useAsync(() => (first.key === `${name}\n${before}` ? first.call() : ask()), [name, before]);
  const g = grid.data;
  const cycle = query.get('cycle') ?? g?.cycles[0] ?? null;
  const set = (q: Record<string, string | undefined>) =>
    setQuery({ before, cycle: query.get('cycle') ?? undefined, view: query.get('view') ?? undefined, ...q });
  return (
    <div>
      <PageHead
        title={`Run history of ${name}`}
        sub="Each column is a cycle (a schedule time), newest on the right; each square is a task's instance in it. Choose a cycle by its time for its Gantt chart or graph."
        actions={
          <Link to="/workflows" class="btn btn-ghost">
            All workflows
          </Link>
        }
      />
      <WorkflowHeaderOf name={name} />
      <ErrorBanner error={grid.error} onRetry={grid.reload} />
      {!g ? (
        grid.error ? null : <Loading what="the run history" />
      ) : g.cycles.length === 0 ? (
        <div class="card pad">
          <Empty title="No runs yet" icon="▦">
            None of the {g.tasks.length} tasks of this workflow has an instance{before ? ' before this time' : ''}. Backfill a task or wait for its schedule.
          </Empty>
        </div>
      ) : (
        <div class="card pad">
          <RunGrid g={g} selected={cycle} onSelect={(c) => set({ cycle: c })} />
          <div class="rg-foot">
            <GridLegend />
            <div class="btn-row" style={{ margin: 0 }}>
              {before && (
                <button type="button" class="btn btn-small" onClick={() => set({ before: undefined, cycle: undefined })}>
                  Newest
                </button>
              )}
              {g.next_before && (
                <button type="button" class="btn btn-small" data-testid="older" onClick={() => set({ before: g.next_before ?? undefined, cycle: undefined })}>
                  Older cycles
                </button>
              )}
            </div>
          </div>
        </div>
      )}
      {g && cycle && <CyclePanel key={cycle} name={name} cycle={cycle} view={view} setView={(v) => set({ view: v === 'gantt' ? undefined : v })} />}
    </div>
  );
}
