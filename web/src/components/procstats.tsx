// procstats.tsx - process statistics on the instance page: what the run
// reported (rows read and written, dirty rows, bytes, seconds, and any
// other key) for the attempt shown, and for its task a chart of rows over
// the task's recent runs (GET /tasks/{id}/stats), so a run that moved far
// fewer rows than usual stands out.
import { useMemo } from 'preact/hooks';
import { api, type ProcessStat, type TaskRunStats } from '../api';
import { fmtBytes } from '../pages/packages';
import { TimeChart } from './chart';
import { ErrorBanner, Loading, useAsync } from './ui';
import { fmtDuration } from '../format';

const KNOWN: { key: string; label: string; fmt: (v: number) => string }[] = [
  { key: 'rows_read', label: 'Rows read', fmt: (v) => Math.round(v).toLocaleString() },
  { key: 'rows_written', label: 'Rows written', fmt: (v) => Math.round(v).toLocaleString() },
  { key: 'dirty_rows', label: 'Dirty rows', fmt: (v) => Math.round(v).toLocaleString() },
  { key: 'bytes', label: 'Bytes', fmt: fmtBytes },
  { key: 'seconds', label: 'Seconds', fmt: (v) => fmtDuration(v * 1000) },
];

const ROW_SERIES = [
  { key: 'rows_read', label: 'Rows read', color: '#1f5fd6' },
  { key: 'rows_written', label: 'Rows written', color: '#23a55a' },
  { key: 'dirty_rows', label: 'Dirty rows', color: '#e0453a' },
];

export function InstanceStats({ id, attempt, live }: { id: number; attempt: number; live: boolean }) {
  const st = useAsync(() => api.instanceStats(id), [id, attempt, live]);
  if (st.missing) return <div class="muted small" data-unavailable={`GET /api/v1/instances/${id}/stats`}>This galaxyd does not serve process statistics yet.</div>;
  if (st.error) return <ErrorBanner error={st.error} onRetry={st.reload} />;
  if (!st.data) return <Loading what="statistics" />;
  const items: ProcessStat[] = st.data.items;
  const shown = items.some((s) => s.attempt === attempt) ? attempt : Math.max(0, ...items.map((s) => s.attempt));
  const mine = new Map(items.filter((s) => s.attempt === shown).map((s) => [s.key, s.value]));
  if (mine.size === 0) return <div class="muted" data-testid="proc-stats">No statistics reported{live ? ' yet' : ''} for this run.</div>;
  // quality.<check>.* have their own panel (components/quality.tsx)
  const other = [...mine.keys()].filter((k) => !KNOWN.some((x) => x.key === k) && !k.startsWith('quality.')).sort();
  if (other.length === 0 && !KNOWN.some((k) => mine.has(k.key)))
    return (
      <div class="muted" data-testid="proc-stats">
        Only quality checks reported: see below.
      </div>
    );
  return (
    <div data-testid="proc-stats">
      {shown !== attempt && <div class="muted small">from attempt {shown}</div>}
      <div class="stats-row">
        {KNOWN.filter((k) => mine.has(k.key)).map((k) => (
          <div class="stat" key={k.key} data-stat={k.key}>
            <div class="stat-label">{k.label}</div>
            <div class={`stat-value ${k.key === 'dirty_rows' && mine.get(k.key)! > 0 ? 'danger-text' : ''}`}>{k.fmt(mine.get(k.key)!)}</div>
          </div>
        ))}
      </div>
      {other.length > 0 && (
        <table class="table compact">
          <tbody>
            {other.map((k) => (
              <tr key={k} data-stat={k}>
                <td class="mono">{k}</td>
                <td class="right">{mine.get(k)!.toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

export function TaskRowsChart({ taskId }: { taskId: number }) {
  const st = useAsync(() => api.taskStats(taskId), [taskId]);
  const data = useMemo(() => {
    // a run without a schedule time has no place on the time axis
    const runs = (st.data?.items ?? [])
      .filter((r): r is TaskRunStats & { schedule_time: string } => r.schedule_time !== null)
      .sort((a, b) => (a.schedule_time < b.schedule_time ? -1 : 1));
    const series = ROW_SERIES.filter((s) => runs.some((r) => r.stats[s.key] !== undefined)).map((s) => ({
      label: s.label,
      color: s.color,
      values: runs.map((r) => r.stats[s.key] ?? null),
    }));
    return { x: runs.map((r) => new Date(r.schedule_time).getTime() / 1000), series, n: runs.length };
  }, [st.data]);
  if (st.missing) return <div class="muted small">This galaxyd does not serve task statistics yet.</div>;
  if (st.error) return <ErrorBanner error={st.error} onRetry={st.reload} />;
  if (!st.data) return <Loading what="recent runs" />;
  if (data.series.length === 0) return <div class="muted">No run of this task reported row counts yet.</div>;
  return (
    <div>
      <div class="muted small">{data.n} recent runs by schedule time</div>
      <TimeChart x={data.x} series={data.series} height={220} points testid="chart-task-rows" />
    </div>
  );
}
