// instance.tsx - one instance: its state and actions (rerun, suspend,
// resume, mark success, kill; the risky ones ask first), its attempts, a
// state timeline built from the transitions, the upstream/downstream graph
// with each neighbour's state, the process statistics of the run and rows
// over the task's recent runs (components/procstats.tsx), and the logs of
// its attempts (components/logview.tsx); for a transfer, its live progress
// (transfer-progress.tsx).
//
// The page polls the instance (every 2 s while it is not finished) so state
// changes made by the scheduler or by other people show up by themselves.
import { useState } from 'preact/hooks';
import { api, type Action, type DepState, type State, type Transition } from '../api';
import { Blockers } from '../components/blockers';
import { Graph, type GNode, type GEdge } from '../components/graph';
import { InstanceVersion } from '../components/instance-version';
import { LogView } from '../components/logview';
import { InstanceStats, TaskRowsChart } from '../components/procstats';
import { QualityPanel } from '../components/quality';
import { PausedNote } from '../components/workflow-header';
import { Confirm, ErrorBanner, Link, Loading, PageHead, StateBadge, toast, useAsync, useInterval } from '../components/ui';
import { RunActions } from '../components/run';
import { fmtDuration, fmtRelative, fmtShort, fmtTime } from '../format';
import { TransferProgressPanel } from './transfer-progress';
import { useRoute } from '../router';
import { canAct, useMe } from '../session';
import { ACTION_LABEL, actionAllowed, CONFIRM_ACTIONS, isFinished, stateColor, STATE_LABEL } from '../states';

const ACTIONS: Action[] = ['rerun', 'suspend', 'resume', 'mark-success', 'kill'];

const CONFIRM_TEXT: Record<Action, string> = {
  rerun: 'It goes back to waiting and runs again as a new attempt.',
  suspend: '',
  resume: '',
  'mark-success': 'Downstream tasks will treat it as done although it did not run to success.',
  kill: 'If it is running, the executor stops it; it will not be retried.',
};

type Dep = DepState;

/** A neighbour's line under its name in the graph: its cycle and state. */
function depSub(u: Dep): string {
  const st = u.instance_id && u.state ? STATE_LABEL[u.state] : u.schedule_time ? 'not created yet' : 'no cycle';
  return u.schedule_time ? `${fmtShort(u.schedule_time)} · ${st}` : st;
}

/** The upstream and downstream instances this one waits for or is waited
 * for by: one row per mapped cycle (the scheduler's cycle mapping), with
 * "not created yet" for a cycle that has no instance. */
function DepTable({ up, down }: { up: Dep[]; down: Dep[] }) {
  const rows = [...up.map((x) => ['upstream', x] as const), ...down.map((x) => ['downstream', x] as const)];
  return (
    <div class="table-wrap">
      <table class="table compact" data-testid="deps">
        <thead>
          <tr>
            <th>Direction</th>
            <th>Task</th>
            <th>Kind</th>
            <th>Cycle (schedule time)</th>
            <th>Instance</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([dir, x], i) => (
            <tr key={i} data-dep={dir} data-task={x.task_name}>
              <td>{dir}</td>
              <td>
                <Link to={`/tasks/${x.task_id}`}>{x.task_name}</Link>
              </td>
              <td>{x.kind}</td>
              <td class="nowrap">{x.schedule_time ? fmtTime(x.schedule_time) : '—'}</td>
              <td>
                {x.instance_id ? (
                  <Link to={`/instances/${x.instance_id}`}>
                    #{x.instance_id} {x.state && <StateBadge state={x.state} />}
                  </Link>
                ) : (
                  <span class="muted">{x.schedule_time ? 'not created yet' : 'no cycle'}</span>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

interface Attempt {
  n: number;
  start: string;
  end: string | null;
  state: State;
  executor: string | null;
}

function attempts(tr: Transition[]): Attempt[] {
  const m = new Map<number, Attempt>();
  for (const t of tr) {
    const a = m.get(t.attempt) ?? { n: t.attempt, start: t.at, end: null, state: t.to, executor: null };
    a.state = t.to;
    if (t.executor) a.executor = t.executor;
    if (isFinished(t.to)) a.end = t.at;
    m.set(t.attempt, a);
  }
  return [...m.values()].sort((a, b) => b.n - a.n);
}

function Timeline({ tr, now }: { tr: Transition[]; now: number }) {
  if (tr.length === 0) return <div class="muted">No transitions recorded.</div>;
  const t0 = new Date(tr[0].at).getTime();
  const last = tr[tr.length - 1];
  const tEnd = isFinished(last.to) ? new Date(last.at).getTime() : now;
  const span = Math.max(tEnd - t0, 1);
  const segs = tr.map((t, i) => {
    const a = new Date(t.at).getTime();
    const b = i + 1 < tr.length ? new Date(tr[i + 1].at).getTime() : tEnd;
    return { state: t.to, a, b };
  });
  return (
    <div>
      <div class="timeline-bar" aria-label="State timeline">
        {segs.map((s, i) => (
          <div
            key={i}
            class={`tl-seg st-bg-${s.state}`}
            style={{ flexGrow: Math.max((s.b - s.a) / span, 0.02), background: stateColor(s.state) }}
            title={`${STATE_LABEL[s.state]} · ${fmtDuration(s.b - s.a)}`}
          />
        ))}
      </div>
      <div class="timeline-scale small muted">
        <span>{fmtTime(tr[0].at)}</span>
        <span>{fmtDuration(tEnd - t0)}</span>
        <span>{isFinished(last.to) ? fmtTime(last.at) : 'now'}</span>
      </div>
      <ol class="transitions" data-testid="transitions">
        {[...tr].reverse().map((t) => (
          <li key={t.id}>
            <span class="tr-dot" style={{ background: stateColor(t.to) }} />
            <div class="tr-body">
              <div>
                {t.from ? (
                  <>
                    <StateBadge state={t.from} /> →{' '}
                  </>
                ) : null}
                <StateBadge state={t.to} />
                <span class="muted small"> attempt {t.attempt}</span>
              </div>
              <div class="small muted">
                {fmtTime(t.at)} · by {t.actor}
                {t.executor ? ` on ${t.executor}` : ''}
                {t.reason ? ` · ${t.reason}` : ''}
              </div>
            </div>
          </li>
        ))}
      </ol>
    </div>
  );
}

export function InstancePage({ id }: { id: number }) {
  const { navigate } = useRoute();
  const me = useMe();
  const inst = useAsync(() => api.instance(id), [id]);
  const [confirm, setConfirm] = useState<Action | null>(null);
  const [actErr, setActErr] = useState<unknown>(null);
  const [busy, setBusy] = useState<Action | null>(null);
  const [now, setNow] = useState(Date.now());
  const d = inst.data;
  const live = !!d && !isFinished(d.state);
  useInterval(
    () => {
      setNow(Date.now());
      inst.reload();
    },
    live ? 2000 : 10000,
  );

  const act = async (a: Action) => {
    setActErr(null);
    setBusy(a);
    try {
      const r = await api.act(id, a);
      toast(`${ACTION_LABEL[a]}: instance ${id} is now ${STATE_LABEL[r.state]}`);
      inst.reload();
    } catch (e) {
      setActErr(e);
      throw e;
    } finally {
      setBusy(null);
    }
  };

  if (inst.error && !d) return <ErrorBanner error={inst.error} onRetry={inst.reload} />;
  if (!d) return <Loading what="the instance" />;
  const att = attempts(d.transitions);
  const self = `i${d.id}`;
  const nodes: GNode[] = [
    { id: self, label: d.task_name, sub: STATE_LABEL[d.state], state: d.state, focus: true },
    ...d.upstreams.map((u, i) => ({ id: `u${i}`, label: u.task_name, sub: depSub(u), state: u.state })),
    ...d.downstreams.map((u, i) => ({ id: `d${i}`, label: u.task_name, sub: depSub(u), state: u.state })),
  ];
  const edges: GEdge[] = [
    ...d.upstreams.map((u, i) => ({ source: `u${i}`, target: self, kind: u.kind })),
    ...d.downstreams.map((u, i) => ({ source: self, target: `d${i}`, kind: u.kind })),
  ];
  const goto = (nid: string) => {
    const dep = nid.startsWith('u') ? d.upstreams[Number(nid.slice(1))] : nid.startsWith('d') ? d.downstreams[Number(nid.slice(1))] : null;
    if (dep?.instance_id) navigate(`/instances/${dep.instance_id}`);
  };
  const duration = d.started_at ? (d.finished_at ? new Date(d.finished_at).getTime() : now) - new Date(d.started_at).getTime() : NaN;
  return (
    <div>
      <PageHead
        title={
          <>
            <Link to={`/tasks/${d.task_id}`}>{d.task_name}</Link> <span class="muted">#{d.id}</span>{' '}
            <span data-testid="instance-state">
              <StateBadge state={d.state} />
            </span>
          </>
        }
        sub={
          <>
            scheduled {fmtTime(d.schedule_time)} · attempt {d.attempt} · task version {d.task_version} · priority {d.priority}
            {d.reason ? ` · ${d.reason}` : ''}
          </>
        }
        actions={
          canAct(me) && [
            ...ACTIONS.map((a) => (
              <button
                key={a}
                class={`btn ${a === 'kill' ? 'btn-danger' : a === 'rerun' ? 'btn-primary' : ''}`}
                disabled={!actionAllowed(a, d.state) || busy !== null}
                data-action={a}
                onClick={() => (CONFIRM_ACTIONS.includes(a) ? setConfirm(a) : act(a).catch(() => undefined))}
              >
                {ACTION_LABEL[a]}
              </button>
            )),
            <RunActions key="run" inst={d} onDone={inst.reload} />,
          ]
        }
      />
      <PausedNote paused={d.paused} />
      <ErrorBanner error={actErr} />
      <div class="stats-row">
        <div class="stat">
          <div class="stat-label">State</div>
          <div class="stat-value">
            <StateBadge state={d.state} />
          </div>
        </div>
        <div class="stat">
          <div class="stat-label">Started</div>
          <div class="stat-value">{d.started_at ? fmtRelative(d.started_at, now) : '—'}</div>
        </div>
        <div class="stat">
          <div class="stat-label">Duration</div>
          <div class="stat-value">{fmtDuration(duration)}</div>
        </div>
        <div class="stat">
          <div class="stat-label">Executor</div>
          <div class="stat-value">{d.executor ?? '—'}</div>
        </div>
      </div>
      {(d.state === 'waiting' || d.state === 'ready' || d.state === 'suspended') && (
        <section class="card pad">
          <h2>Why it waits</h2>
          <Blockers id={d.id} state={d.state} />
        </section>
      )}
      <InstanceVersion id={d.id} taskId={d.task_id} version={d.task_version} params={d.params} canEdit={canAct(me)} onSaved={inst.reload} />
      <div class="split">
        <section class="card pad">
          <h2>Dependencies</h2>
          {d.upstreams.length + d.downstreams.length === 0 ? (
            <div class="muted">This task has no upstream or downstream task.</div>
          ) : (
            <>
              <Graph nodes={nodes} edges={edges} onSelect={goto} height={260} />
              <DepTable up={d.upstreams} down={d.downstreams} />
            </>
          )}
        </section>
        <section class="card pad">
          <h2>Attempts</h2>
          <table class="table compact" data-testid="attempts">
            <thead>
              <tr>
                <th>#</th>
                <th>State</th>
                <th>Started</th>
                <th>Took</th>
                <th>Executor</th>
              </tr>
            </thead>
            <tbody>
              {att.map((a) => (
                <tr key={a.n}>
                  <td>{a.n}</td>
                  <td>
                    <StateBadge state={a.state} />
                  </td>
                  <td class="nowrap">{fmtShort(a.start)}</td>
                  <td>{fmtDuration((a.end ? new Date(a.end).getTime() : now) - new Date(a.start).getTime())}</td>
                  <td>{a.executor ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      </div>
      <TransferProgressPanel id={d.id} attempt={d.attempt} live={live} />
      <div class="split">
        <section class="card pad">
          <h2>Process statistics</h2>
          <InstanceStats id={d.id} attempt={d.attempt} live={live} />
        </section>
        <section class="card pad">
          <h2>Rows over recent runs of {d.task_name}</h2>
          <TaskRowsChart taskId={d.task_id} />
        </section>
      </div>
      <QualityPanel id={d.id} attempt={d.attempt} taskId={d.task_id} live={live} />
      <section class="card pad">
        <h2>Log</h2>
        <LogView id={d.id} attempt={d.attempt} finished={isFinished(d.state)} />
      </section>
      <section class="card pad">
        <h2>State timeline</h2>
        <Timeline tr={d.transitions} now={now} />
      </section>
      {confirm && (
        <Confirm
          title={`${ACTION_LABEL[confirm]} instance #${d.id} of ${d.task_name}?`}
          body={CONFIRM_TEXT[confirm]}
          confirmLabel={ACTION_LABEL[confirm]}
          danger={confirm === 'kill' || confirm === 'mark-success'}
          onClose={() => setConfirm(null)}
          onConfirm={() => act(confirm)}
        />
      )}
    </div>
  );
}
