// transfer-progress.tsx - the "Transfer" panel of the instance page: while a
// transfer runs, the rows it read and wrote, its dirty rows, its rate, the
// estimated end, a bar over its split plan (shards read of all shards) and a
// chart of the rate over time, polled every second
// (GET /instances/{id}/progress); after the end, the final figures of the
// run's summary with the same chart. Nothing is shown for an instance that
// never reported transfer progress (another task type).
import { useMemo } from 'preact/hooks';
import { api, type TransferProgress, type TransferPoint } from '../api';
import { TimeChart } from '../components/chart';
import { ErrorBanner, useAsync, useInterval } from '../components/ui';
import { fmtDuration, fmtTime } from '../format';

const count = (v: number) => Math.round(v).toLocaleString('en-US');
const rate = (v: number) => `${count(v)} rows/s`;

/** "in 12 s", or "unknown" when wormhole cannot tell. */
function endText(p: TransferPoint): string {
  if (p.eta_s === null || p.eta_s === undefined || !p.estimated_end) return 'unknown';
  return `in ${fmtDuration(p.eta_s * 1000)}`;
}

/** The clock time of the estimated end (the date in its title). */
function endClock(p: TransferPoint): { text: string; title: string } | undefined {
  if (!p.estimated_end) return undefined;
  const d = new Date(p.estimated_end);
  return { text: `at ${d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })}`, title: fmtTime(p.estimated_end) };
}

function Stat({ label, value, testid, danger, sub }: { label: string; value: string; testid: string; danger?: boolean; sub?: { text: string; title: string } }) {
  return (
    <div class="stat" data-testid={testid}>
      <div class="stat-label">{label}</div>
      <div class={`stat-value ${danger ? 'danger-text' : ''}`}>{value}</div>
      {sub && (
        <div class="muted small" title={sub.title}>
          {sub.text}
        </div>
      )}
    </div>
  );
}

/** The split plan: shards read of all shards, and the share of the row
 * estimate read when there is one. */
function PlanBar({ p, done, finalRows }: { p: TransferPoint; done: boolean; finalRows: number | null }) {
  const total = p.shards_total;
  const read = done ? total : p.shards_done;
  const frac = total > 0 ? read / total : 0;
  const rowsShare = p.rows_estimate > 0 ? Math.min(p.rows_read / p.rows_estimate, 1) : null;
  const rowsText =
    finalRows !== null
      ? `${count(finalRows)} rows read${p.rows_estimate > 0 ? `; the source's estimate was about ${count(p.rows_estimate)}` : ''}`
      : p.rows_estimate > 0
        ? `${count(p.rows_read)} of about ${count(p.rows_estimate)} rows (${Math.round((rowsShare ?? 0) * 100)} %) by the source's estimate`
        : 'The source gave no row estimate: the end is estimated from the shards.';
  return (
    <div data-testid="transfer-plan">
      <div
        class="progress"
        role="progressbar"
        aria-label="Shards of the split plan read"
        aria-valuenow={read}
        aria-valuemin={0}
        aria-valuemax={total}
        aria-valuetext={`${read} of ${total} shards read`}
      >
        <div class="progress-fill" style={{ width: `${Math.round(frac * 100)}%` }} />
        <span>
          {read} of {total} {total === 1 ? 'shard' : 'shards'} read
        </span>
      </div>
      <div class="muted small">{rowsText}</div>
    </div>
  );
}

function RateChart({ series }: { series: TransferPoint[] }) {
  const data = useMemo(
    () => ({
      x: series.map((p) => new Date(p.at).getTime() / 1000),
      series: [{ label: 'Rows per second', color: '#1f5fd6', values: series.map((p) => p.rows_per_sec) }],
    }),
    [series],
  );
  if (series.length === 0) return null;
  return <TimeChart x={data.x} series={data.series} height={200} yLabel="rows/s" testid="chart-transfer-rate" />;
}

export function TransferProgressPanel({ id, attempt, live }: { id: number; attempt: number; live: boolean }) {
  const pr = useAsync<TransferProgress>(() => api.instanceProgress(id), [id, attempt, live]);
  useInterval(pr.reload, 1000, live);
  const d = pr.data;
  if (pr.missing) return null;
  if (pr.error && !d) return <ErrorBanner error={pr.error} onRetry={pr.reload} />;
  if (!d || (!d.current && !d.final)) return null;
  const cur = d.current;
  const fin = d.final;
  const ended = !d.running && !!fin;
  return (
    <section class="card pad" data-testid="transfer-panel" data-running={d.running ? 'true' : 'false'}>
      <h2>Transfer</h2>
      <div class="muted small">
        attempt {d.attempt} · {d.running ? 'running: updated every second' : ended ? 'ended: the figures of its summary' : d.state}
      </div>
      {ended && fin ? (
        <div class="stats-row" data-testid="transfer-final">
          <Stat label="Rows read" value={count(fin.rows_read ?? 0)} testid="tp-rows-read" />
          <Stat label="Rows written" value={count(fin.rows_written ?? 0)} testid="tp-rows-written" />
          <Stat label="Dirty rows" value={count(fin.dirty_rows ?? 0)} testid="tp-dirty" danger={(fin.dirty_rows ?? 0) > 0} />
          <Stat label="Mean rate" value={rate(fin.rows_per_sec ?? 0)} testid="tp-rate" />
          <Stat label="Took" value={fmtDuration((fin.seconds ?? 0) * 1000)} testid="tp-took" />
        </div>
      ) : cur ? (
        <div class="stats-row" data-testid="transfer-live">
          <Stat label="Rows read" value={count(cur.rows_read)} testid="tp-rows-read" />
          <Stat label="Rows written" value={count(cur.rows_written)} testid="tp-rows-written" />
          <Stat label="Dirty rows" value={count(cur.dirty_rows)} testid="tp-dirty" danger={cur.dirty_rows > 0} />
          <Stat label="Rate" value={rate(cur.rows_per_sec)} testid="tp-rate" />
          <Stat label="Estimated end" value={endText(cur)} testid="tp-eta" sub={endClock(cur)} />
        </div>
      ) : null}
      {cur && <PlanBar p={cur} done={ended && d.state === 'success'} finalRows={ended && fin ? fin.rows_read : null} />}
      {d.series.length > 0 && (
        <div class="transfer-chart">
          <h3 class="small muted">Rate over time</h3>
          <RateChart series={d.series} />
        </div>
      )}
    </section>
  );
}
