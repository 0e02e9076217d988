// blockers.tsx - "why is it waiting": what holds a waiting or ready instance
// back, as the scheduler itself last evaluated it (GET
// /api/v1/instances/{id}/blockers): each unmet upstream instance with its
// state or "not created yet", a pool without tokens and who holds them, no
// executor with the labels or a free slot (or only drained ones), the
// task's parallelism cap, the team's quota, a schedule time in the future,
// a paused workflow, suspension. Polled every 2 s while the instance waits.
import { api, type Blocker, type State } from '../api';
import { fmtRelative, fmtShort, fmtTime } from '../format';
import { STATE_LABEL } from '../states';
import { ErrorBanner, Link, Loading, StateBadge, Unavailable, useAsync, useInterval } from './ui';

const EXEC_REASON: Record<string, string> = {
  no_executors: 'No executor is running.',
  no_label_match: 'No live executor has the labels this task asks for.',
  drained: 'The executors with the labels this task asks for are drained by an administrator.',
  too_big: 'No executor with these labels has that many slots.',
  no_free_slot: 'Every executor that could take it is busy: no free slot.',
};

function labels(l: Record<string, string> | undefined): string {
  const e = Object.entries(l ?? {});
  return e.length ? e.map(([k, v]) => `${k}=${v}`).join(', ') : 'none';
}

function isState(s: string | undefined): s is State {
  return !!s && s in STATE_LABEL;
}

/** One blocker as a sentence, with links to what it names. */
function Line({ b }: { b: Blocker }) {
  switch (b.kind) {
    case 'upstream': {
      const cyc = b.schedule_time ? ` for ${fmtShort(b.schedule_time)}` : '';
      const what = b.instance_id ? (
        <>
          <Link to={`/instances/${b.instance_id}`}>instance #{b.instance_id}</Link> is{' '}
          {isState(b.state) ? <StateBadge state={b.state} /> : b.state}
          {b.retry_pending ? ' (a retry will follow)' : ''}
        </>
      ) : b.note ? (
        b.note
      ) : b.state === 'unknown' ? (
        'is being read by the scheduler'
      ) : (
        'has no instance: not created yet'
      );
      return (
        <>
          {b.dependency === 'self' ? 'Its own previous cycle' : b.dependency === 'weak' ? 'Weak upstream' : 'Upstream'}{' '}
          {b.task_id ? <Link to={`/tasks/${b.task_id}`}>{b.task}</Link> : <strong>{b.task}</strong>}
          {cyc}: {what}
        </>
      );
    }
    case 'upstream_unresolved':
      return (
        <>
          Upstream <strong>{b.task}</strong> is not an active task: it holds this instance until it exists again.
        </>
      );
    case 'data_unit':
      return (
        <>
          Data unit {b.business}/{b.interface} of stream <Link to={`/streams/${b.stream}`}>{b.stream}</Link> is not reconciled yet
          {b.note ? ` (${b.note})` : ''}.
        </>
      );
    case 'dependency_cycle':
      return <>The task is on a dependency cycle: the scheduler runs none of its tasks until the cycle is broken.</>;
    case 'task_inactive':
      return <>The task is deactivated.</>;
    case 'workflow_paused':
      return <>Its workflow is paused: it waits until the workflow is resumed.</>;
    case 'not_due':
      return <>Its schedule time is in the future ({b.schedule_time ? fmtTime(b.schedule_time) : '—'}).</>;
    case 'suspended':
      return <>It is suspended: resume it to let it run.</>;
    case 'max_parallel':
      return (
        <>
          Task {b.task} runs at most {String(b.limit)} at once ({b.live} running now).
        </>
      );
    case 'team_quota':
      return b.limit === 'max_running' ? (
        <>
          Team {b.team} may run {b.max} instance{b.max === 1 ? '' : 's'} at once and {b.used} {b.used === 1 ? 'is' : 'are'} running (<Link to="/resources">quotas</Link>).
        </>
      ) : (
        <>
          Team {b.team} may use {b.max} slots and {b.used} are in use; this needs {b.needs} more (<Link to="/resources">quotas</Link>).
        </>
      );
    case 'executor':
      return (
        <>
          {EXEC_REASON[b.reason ?? ''] ?? 'No executor can take it.'} It needs {b.slots ?? 1} slot{b.slots === 1 ? '' : 's'}, labels {labels(b.labels)} (
          <Link to="/resources">executors</Link>).
        </>
      );
    case 'pool': {
      const h = b.holders ?? [];
      return (
        <>
          Pool <strong>{b.pool}</strong> has no {b.tokens} free token{b.tokens === 1 ? '' : 's'}.
          {h.length > 0 && (
            <>
              {' '}
              Held by{' '}
              {h.map((x, i) => (
                <span key={x.instance_id}>
                  {i ? ', ' : ''}
                  <Link to={`/instances/${x.instance_id}`}>
                    {x.task} #{x.instance_id}
                  </Link>{' '}
                  ({x.tokens}
                  {x.state ? `, ${STATE_LABEL[x.state as State] ?? x.state}` : ''})
                </span>
              ))}
              .
            </>
          )}
        </>
      );
    }
    case 'more':
      return <>… and {b.count} more.</>;
    default:
      return <>{b.kind}</>;
  }
}

/** The "why is it waiting" panel of an instance in state. */
export function Blockers({ id, state }: { id: number; state: State }) {
  const r = useAsync(() => api.blockers(id), [id, state]);
  const waits = state === 'waiting' || state === 'ready' || state === 'suspended';
  useInterval(r.reload, 2000, waits && !r.missing);
  if (!waits) return null;
  if (r.missing) return <Unavailable feature="Why it waits" endpoint="GET /api/v1/instances/{id}/blockers" />;
  if (r.error && !r.data) return <ErrorBanner error={r.error} onRetry={r.reload} />;
  if (!r.data) return <Loading what="what it waits for" />;
  const d = r.data;
  return (
    <div data-testid="blockers">
      {d.blockers.length === 0 ? (
        <p class="muted">
          {d.evaluated_at
            ? 'Nothing holds it back: the scheduler is about to move it.'
            : 'The scheduler has not evaluated it yet.'}
        </p>
      ) : (
        <ul class="blockers">
          {d.blockers.map((b, i) => (
            <li key={i} data-blocker={b.kind}>
              {/* a paragraph: its links are underlined like those of running text */}
              <p style={{ margin: 0 }}>
                <Line b={b} />
              </p>
            </li>
          ))}
        </ul>
      )}
      {d.evaluated_at && (
        <div class="small muted" data-testid="blockers-evaluated">
          As the scheduler evaluated it {fmtRelative(d.evaluated_at)} ({fmtTime(d.evaluated_at)})
          {d.current ? '' : ', before its current attempt'}.
        </div>
      )}
    </div>
  );
}
