// dashboard.tsx - the overview: instance outcomes per hour over the last 24
// hours, the queue (waiting + ready instances) and running slots over time,
// headline numbers and the newest failures.
//
// Everything comes from the statistics API (GET /api/v1/stats/instances):
// its buckets give the outcomes; its "now" block gives the queue and slots at
// the moment of the call. The API keeps no history of the queue, so this page
// samples "now" every 5 s and keeps the samples for as long as the console
// is open (module state: they survive moving between pages).
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, early, type InstanceStats } from '../api';
import { preloadCharts, TimeChart } from '../components/chart';
import { Empty, ErrorBanner, Link, Loading, PageHead, StateBadge, useAsync, useInterval } from '../components/ui';
import { fmtRelative, fmtShort, fmtTime } from '../format';
import { STATE_COLOR, STATE_LABEL } from '../states';

const MAX_SAMPLES = 720; // one hour at 5 s
const OUTCOMES = ['success', 'marked_success', 'failed', 'timed_out', 'killed'] as const;

interface Sample {
  t: number; // seconds
  queue: number;
  running: number;
  slots: number;
}

let kept: Sample[] = [];

function sampleOf(s: InstanceStats): Sample {
  return {
    t: Date.now() / 1000,
    queue: s.now.waiting + s.now.ready,
    running: s.now.dispatched + s.now.running,
    slots: s.now.running_slots,
  };
}

export function DashboardPage() {
  // The charts' library loads while the statistics do, not after them.
  preloadCharts();
  // The first answers are asked for as the page first renders.
  const [calls] = useState(() => ({
    stats: early(() => api.stats({ step: '1h' })),
    failures: early(() => api.instances({ state: 'failed,timed_out', order: 'desc', limit: 8 })),
  }));
  const stats = useAsync(calls.stats, []);
  const failures = useAsync(calls.failures, []);
  const [samples, setSamples] = useState<Sample[]>(kept);
  useInterval(stats.reload, 5000);
  useInterval(failures.reload, 30000);
  useEffect(() => {
    if (!stats.data) return;
    kept = [...kept, sampleOf(stats.data)].slice(-MAX_SAMPLES);
    setSamples(kept);
  }, [stats.data]);

  const outcome = useMemo(() => {
    const b = stats.data?.buckets ?? [];
    return {
      x: b.map((x) => new Date(x.start).getTime() / 1000),
      series: OUTCOMES.map((s) => ({ label: STATE_LABEL[s], color: STATE_COLOR[s], values: b.map((x) => x[s]) })),
    };
  }, [stats.data]);

  const sum = (k: (typeof OUTCOMES)[number]) => (stats.data?.buckets ?? []).reduce((a, b) => a + b[k], 0);
  const finished = OUTCOMES.reduce((a, k) => a + sum(k), 0);
  const ok = sum('success') + sum('marked_success');
  const bad = sum('failed') + sum('timed_out');
  const now = stats.data?.now;
  const have = !!stats.data;
  // A chart needs two points: until the second sample, draw the first twice.
  const shown = samples.length === 1 ? [{ ...samples[0], t: samples[0].t - 5 }, samples[0]] : samples;

  return (
    <div>
      <PageHead title="Dashboard" sub="The last 24 hours of your platform." />
      <div class="tiles">
        <div class="tile">
          <div class="tile-label">Active tasks</div>
          <div class="tile-value">{now ? now.active_tasks : '…'}</div>
        </div>
        <div class="tile">
          <div class="tile-label">Finished (24 h)</div>
          <div class="tile-value">{have ? finished : '…'}</div>
        </div>
        <div class="tile">
          <div class="tile-label">Success rate</div>
          <div class="tile-value">{have ? (finished ? `${Math.round((ok / finished) * 100)}%` : '—') : '…'}</div>
        </div>
        <div class={`tile ${bad ? 'tile-bad' : ''}`}>
          <div class="tile-label">Failed or timed out</div>
          <div class="tile-value">{have ? bad : '…'}</div>
        </div>
        <div class="tile">
          <div class="tile-label">Queue now</div>
          <div class="tile-value">{now ? now.waiting + now.ready : '…'}</div>
        </div>
        <div class="tile">
          <div class="tile-label">Running now</div>
          <div class="tile-value">{now ? now.dispatched + now.running : '…'}</div>
          {now && <div class="tile-sub">{now.running_slots} slots in use</div>}
        </div>
      </div>
      <ErrorBanner error={stats.error} onRetry={stats.reload} />
      <div class="grid2 gap">
        <section class="card pad">
          <h2>Outcomes per hour</h2>
          <div class="muted small">finished instances by outcome, from the statistics API</div>
          {!have ? (
            <Loading what="statistics" />
          ) : (
            <TimeChart x={outcome.x} series={outcome.series} stacked height={240} testid="chart-outcomes" />
          )}
        </section>
        <section class="card pad">
          <h2>Queue and running slots</h2>
          <div class="muted small">sampled every 5 s while the console is open</div>
          {shown.length < 2 ? (
            <Loading what="samples" />
          ) : (
            <TimeChart
              step
              testid="chart-queue"
              x={shown.map((s) => s.t)}
              series={[
                { label: 'Queue (waiting + ready)', color: STATE_COLOR.waiting, values: shown.map((s) => s.queue) },
                { label: 'Running instances', color: STATE_COLOR.running, values: shown.map((s) => s.running) },
                { label: 'Running slots', color: STATE_COLOR.marked_success, values: shown.map((s) => s.slots) },
              ]}
              height={240}
            />
          )}
        </section>
      </div>
      <section class="card pad">
        <h2>Recent failures</h2>
        <ErrorBanner error={failures.error} onRetry={failures.reload} />
        {!failures.data ? (
          !failures.error && <Loading />
        ) : failures.data.items.length === 0 ? (
          <Empty title="No failure" icon="✓">
            Nothing failed or timed out recently.
          </Empty>
        ) : (
          <table class="table compact" data-testid="failures">
            <tbody>
              {failures.data.items.map((i) => (
                <tr key={i.id}>
                  <td>
                    <Link to={`/instances/${i.id}`} class="strong">
                      {i.task_name}
                    </Link>
                  </td>
                  <td>
                    <StateBadge state={i.state} />
                  </td>
                  <td class="muted">{i.reason}</td>
                  <td class="muted nowrap" data-at={i.finished_at ?? i.updated_at} title={fmtTime(i.finished_at ?? i.updated_at)}>
                    {fmtRelative(i.finished_at ?? i.updated_at)}
                  </td>
                  <td class="muted nowrap">scheduled for {fmtShort(i.schedule_time)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}
