// quality.tsx - quality checks on the instance page: the checks of the
// attempt shown (value, threshold, passed or failed, from its process
// statistics quality.<name>.value/.threshold/.ok) and, per check, a chart
// of its value over the task's recent runs with its threshold as a second
// line (GET /tasks/{id}/stats), so a check drifting towards its limit shows
// before it fails. Renders nothing for a task without checks.
import { useMemo } from 'preact/hooks';
import { api, type TaskRunStats } from '../api';
import { TimeChart } from './chart';
import { ErrorBanner, useAsync } from './ui';
import './quality.css';

const KEY = /^quality\.([a-z0-9_]{1,40})\.(value|threshold|ok)$/;

function fmt(v: number | undefined): string {
  if (v === undefined) return '—';
  return Number.isInteger(v) ? v.toLocaleString() : String(+v.toPrecision(6));
}

/** Check names in stats, in first-seen order. */
function checkNames(stats: Record<string, number>[]): string[] {
  const names: string[] = [];
  for (const s of stats)
    for (const k of Object.keys(s)) {
      const m = KEY.exec(k);
      if (m && !names.includes(m[1])) names.push(m[1]);
    }
  return names;
}

export function QualityPanel({ id, attempt, taskId, live }: { id: number; attempt: number; taskId: number; live: boolean }) {
  const inst = useAsync(() => api.instanceStats(id), [id, attempt, live]);
  const runs = useAsync(() => api.taskStats(taskId), [taskId, live]);
  const mine = useMemo(() => {
    const items = inst.data?.items ?? [];
    const shown = items.some((s) => s.attempt === attempt) ? attempt : Math.max(0, ...items.map((s) => s.attempt));
    const m: Record<string, number> = {};
    for (const s of items) if (s.attempt === shown && KEY.test(s.key)) m[s.key] = s.value;
    return m;
  }, [inst.data, attempt]);
  const charts = useMemo(() => {
    const rs = (runs.data?.items ?? [])
      .filter((r): r is TaskRunStats & { schedule_time: string } => r.schedule_time !== null)
      .sort((a, b) => (a.schedule_time < b.schedule_time ? -1 : 1));
    const x = rs.map((r) => new Date(r.schedule_time).getTime() / 1000);
    return checkNames(rs.map((r) => r.stats)).map((name) => {
      const value = rs.map((r) => r.stats[`quality.${name}.value`] ?? null);
      const threshold = rs.map((r) => r.stats[`quality.${name}.threshold`] ?? null);
      const fractional = [...value, ...threshold].some((v) => v !== null && !Number.isInteger(v));
      return { name, x, value, threshold, fractional, runs: value.filter((v) => v !== null).length };
    });
  }, [runs.data]);
  const names = checkNames([mine]);
  if (names.length === 0 && charts.length === 0) return null;
  return (
    <section class="card pad" data-testid="quality-panel">
      <h2>Quality checks</h2>
      <ErrorBanner error={inst.error ?? runs.error} />
      {names.length > 0 ? (
        <div class="quality-table" tabIndex={0} role="region" aria-label="Quality check results">
        <table class="table compact" data-testid="quality-results">
          <thead>
            <tr>
              <th scope="col">Check</th>
              <th scope="col" class="right">
                Value
              </th>
              <th scope="col" class="right">
                Threshold
              </th>
              <th scope="col">Outcome</th>
            </tr>
          </thead>
          <tbody>
            {names.map((n) => {
              const ok = mine[`quality.${n}.ok`];
              return (
                <tr key={n} data-check={n} data-ok={ok === 1 ? 'true' : 'false'}>
                  <td class="mono">{n}</td>
                  <td class="right">{fmt(mine[`quality.${n}.value`])}</td>
                  <td class="right">≤ {fmt(mine[`quality.${n}.threshold`])}</td>
                  <td>{ok === 1 ? <span class="badge st-success">passed</span> : <span class="badge st-failed">failed</span>}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
        </div>
      ) : (
        <div class="muted">No check ran in this attempt.</div>
      )}
      {charts.length > 0 && (
        <div class="quality-charts">
          {charts.map((c) => (
            <figure key={c.name} class="quality-chart" data-check={c.name}>
              <figcaption>
                <span class="mono">{c.name}</span> <span class="muted small">over {c.runs} recent runs, with its threshold</span>
              </figcaption>
              <TimeChart
                x={c.x}
                series={[
                  { label: 'Value', color: '#1f5fd6', values: c.value },
                  { label: 'Threshold', color: '#e0453a', values: c.threshold },
                ]}
                height={180}
                points
                fractional={c.fractional}
                testid={`chart-quality-${c.name}`}
              />
            </figure>
          ))}
        </div>
      )}
    </section>
  );
}
