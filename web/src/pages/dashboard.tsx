// dashboard.tsx - the overview: instance outcomes over the last 24 hours,
// the queue (waiting + ready instances) and running slots (pool tokens in
// use), and headline numbers.
//
// When galaxyd serves a statistics API the charts will read it; until then
// outcomes are computed in the browser from the last day's instances (at
// most 5000), and queue and slots are sampled by this page every 5 s since it
// was opened. The page says which of the two it shows.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { allPages, api, isMissingEndpoint, type Instance, type State } from '../api';
import { TimeChart } from '../components/chart';
import { ErrorBanner, Link, Loading, PageHead, StateBadge, useAsync, useInterval } from '../components/ui';
import { fmtRelative } from '../format';
import { FINISHED, STATE_COLOR, STATE_LABEL } from '../states';

const HOUR = 3600e3;
const MAX_SAMPLES = 720; // one hour at 5 s

interface Sample {
  t: number;
  queue: number;
  running: number;
  used: number;
}

export function DashboardPage() {
  const [since] = useState(() => new Date(Math.floor(Date.now() / HOUR) * HOUR - 23 * HOUR));
  const stats = useAsync(() => api.stats({ from: since.toISOString(), to: new Date().toISOString(), step: '1h' }), []);
  const day = useAsync(
    () => allPages((tok) => api.instances({ from: since.toISOString(), limit: 1000, page_token: tok }), 5),
    [],
  );
  const tasks = useAsync(() => api.tasks({ limit: 1000 }), []);
  const [samples, setSamples] = useState<Sample[]>([]);
  const [sampleErr, setSampleErr] = useState<unknown>(null);
  const sample = async () => {
    try {
      const [q, run, pools] = await Promise.all([
        allPages((tok) => api.instances({ state: 'waiting,ready', limit: 1000, page_token: tok }), 2),
        allPages((tok) => api.instances({ state: 'dispatched,running', limit: 1000, page_token: tok }), 2),
        api.pools(),
      ]);
      const used = pools.items.reduce((a, p) => a + p.used, 0);
      setSamples((s) => [...s, { t: Date.now() / 1000, queue: q.items.length, running: run.items.length, used }].slice(-MAX_SAMPLES));
      setSampleErr(null);
    } catch (e) {
      setSampleErr(e);
    }
  };
  useEffect(() => void sample(), []);
  useInterval(sample, 5000);
  useInterval(day.reload, 30000);

  const outcome = useMemo(() => {
    const items = day.data?.items ?? [];
    const x: number[] = [];
    for (let t = since.getTime(); t <= Date.now(); t += HOUR) x.push(t / 1000);
    const shown: State[] = ['success', 'marked_success', 'failed', 'timed_out', 'killed'];
    const per = Object.fromEntries(shown.map((s) => [s, x.map(() => 0)])) as Record<State, number[]>;
    for (const i of items) {
      if (!shown.includes(i.state)) continue;
      const b = Math.floor((new Date(i.schedule_time).getTime() - since.getTime()) / HOUR);
      if (b >= 0 && b < x.length) per[i.state][b]++;
    }
    return { x, series: shown.map((s) => ({ label: STATE_LABEL[s], color: STATE_COLOR[s], values: per[s] })) };
  }, [day.data]);

  const items: Instance[] = day.data?.items ?? [];
  const count = (pred: (i: Instance) => boolean) => items.filter(pred).length;
  const finished = count((i) => FINISHED.includes(i.state));
  const ok = count((i) => i.state === 'success' || i.state === 'marked_success');
  const failed = items.filter((i) => i.state === 'failed' || i.state === 'timed_out').sort((a, b) => (a.schedule_time < b.schedule_time ? 1 : -1));
  const last = samples[samples.length - 1];

  return (
    <div>
      <PageHead title="Dashboard" sub="The last 24 hours of your platform." />
      <div class="tiles">
        <div class="tile">
          <div class="tile-label">Active tasks</div>
          <div class="tile-value">{tasks.data ? tasks.data.items.length + (tasks.data.next_page_token ? '+' : '') : '…'}</div>
        </div>
        <div class="tile">
          <div class="tile-label">Finished (24 h)</div>
          <div class="tile-value">{day.data ? finished : '…'}</div>
        </div>
        <div class="tile">
          <div class="tile-label">Success rate</div>
          <div class="tile-value">{day.data ? (finished ? `${Math.round((ok / finished) * 100)}%` : '—') : '…'}</div>
        </div>
        <div class="tile tile-bad">
          <div class="tile-label">Failed or timed out</div>
          <div class="tile-value">{day.data ? failed.length : '…'}</div>
        </div>
        <div class="tile">
          <div class="tile-label">Queue now</div>
          <div class="tile-value">{last ? last.queue : '…'}</div>
        </div>
        <div class="tile">
          <div class="tile-label">Running now</div>
          <div class="tile-value">{last ? last.running : '…'}</div>
        </div>
      </div>
      {stats.missing && (
        <div class="note small" data-unavailable="GET /api/v1/stats/instances">
          The statistics API (<code>GET /api/v1/stats/instances</code>) is not available yet: outcomes are computed from the
          last day's instances{day.data?.truncated ? ' (the first 5000)' : ''}, queue and slots are sampled by this page while it is open.
        </div>
      )}
      <ErrorBanner error={day.error} onRetry={day.reload} />
      <div class="grid2 gap">
        <section class="card pad">
          <h2>Outcomes per hour</h2>
          {day.data ? <TimeChart x={outcome.x} series={outcome.series} stacked height={240} /> : <Loading what="instances" />}
        </section>
        <section class="card pad">
          <h2>Queue and running slots</h2>
          <div class="muted small">sampled every 5 s since this page opened</div>
          {sampleErr && !isMissingEndpoint(sampleErr) ? <ErrorBanner error={sampleErr} /> : null}
          {samples.length < 2 ? (
            <Loading what="samples" />
          ) : (
            <TimeChart
              step
              x={samples.map((s) => s.t)}
              series={[
                { label: 'Queue (waiting + ready)', color: STATE_COLOR.waiting, values: samples.map((s) => s.queue) },
                { label: 'Running instances', color: STATE_COLOR.running, values: samples.map((s) => s.running) },
                { label: 'Pool tokens in use', color: STATE_COLOR.marked_success, values: samples.map((s) => s.used) },
              ]}
              height={220}
            />
          )}
        </section>
      </div>
      <section class="card pad">
        <h2>Recent failures</h2>
        {!day.data ? (
          <Loading />
        ) : failed.length === 0 ? (
          <div class="muted">No failure in the last 24 hours.</div>
        ) : (
          <table class="table compact">
            <tbody>
              {failed.slice(0, 8).map((i) => (
                <tr key={i.id}>
                  <td>
                    <Link to={`/instances/${i.id}`} class="strong">
                      {i.task_name}
                    </Link>
                  </td>
                  <td>
                    <StateBadge state={i.state} />
                  </td>
                  <td class="muted">{fmtRelative(i.schedule_time)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}
