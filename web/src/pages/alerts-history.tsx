// alerts-history.tsx - what fired: alerts newest first, filtered by rule,
// event, state and how far back (kept in the URL), each with its grouped
// occurrences (count, first and last time) and its deliveries (channel,
// first message or digest, state, attempts, last error, delivered at); a
// chart of alerts per hour over the chosen days by severity; "Silence…" on
// an alert silences its rule or its scope. Refreshed every 5 s.
import { useMemo, useState } from 'preact/hooks';
import { api, type Alert, type AlertPage, type AlertRule } from '../api';
import { preloadCharts, TimeChart } from '../components/chart';
import { Empty, ErrorBanner, Link, Loading, Unavailable, useAsync, useInterval, val } from '../components/ui';
import { fmtRelative, fmtShort, fmtTime } from '../format';
import { useRoute } from '../router';
import { canEditTeam, useMe } from '../session';
import { DeliveryBadge, EVENT_IDS, SeverityBadge, SilenceDialog, eventLabel, scopeText } from './alerts-common';

const SINCE = [
  { v: '24h', label: 'Last 24 hours', hours: 24 },
  { v: '3d', label: 'Last 3 days', hours: 72 },
  { v: '7d', label: 'Last 7 days', hours: 168 },
  { v: '30d', label: 'Last 30 days', hours: 720 },
];
const SEV_COLOR: Record<string, string> = { critical: '#e0453a', warning: '#d97706', info: '#3f74e0' };
const PAGE = 250; // alerts per request
const MAX_PAGES = 8; // the chart counts at most this many pages
const SHOWN = 20; // alerts listed at first

async function fetchAll(q: { rule?: string; event?: string; state?: string; since: string }): Promise<{ items: Alert[]; truncated: boolean }> {
  const items: Alert[] = [];
  let token: string | undefined;
  for (let i = 0; i < MAX_PAGES; i++) {
    const p: AlertPage = await api.alerts({ ...q, limit: PAGE, page_token: token });
    items.push(...p.items);
    if (!p.next_page_token) return { items, truncated: false };
    token = p.next_page_token;
  }
  return { items, truncated: true };
}

function AlertCard({ a, rule, onSilence, maySilence }: { a: Alert; rule: AlertRule | undefined; onSilence: () => void; maySilence: boolean }) {
  const name = a.rule ?? rule?.name ?? (a.rule_id ? `rule #${a.rule_id}` : 'no rule');
  return (
    <article class={`card alert-card sevline-${a.severity}`} data-alert={a.id} data-event={a.event} data-state={a.state} aria-labelledby={`alert-${a.id}-h`}>
      <div class="alert-head">
        <div class="alert-title">
          <SeverityBadge severity={a.severity} />
          <h3 id={`alert-${a.id}-h`}>
            {eventLabel(a.event)} <span class="muted">·</span> {name}
          </h3>
          {a.state === 'silenced' && (
            <span class="badge st-waiting" data-testid="silenced">
              <span class="dot" />
              silenced
            </span>
          )}
        </div>
        <div class="alert-when small muted">
          <time dateTime={a.last_at} title={fmtTime(a.last_at)}>
            {fmtRelative(a.last_at)}
          </time>
          {maySilence && (
            <button class="btn btn-small" onClick={onSilence} aria-label={`Silence alerts like ${a.id}`} data-testid="alert-silence">
              Silence…
            </button>
          )}
        </div>
      </div>
      <p class="alert-summary">{a.summary || <span class="muted">no summary</span>}</p>
      <div class="alert-meta small">
        {a.scope_kind && <span class="tag">{scopeText(a.scope_kind, a.scope)}</span>}
        {a.instance_id ? (
          <Link to={`/instances/${a.instance_id}`}>instance {a.instance_id}</Link>
        ) : a.task_id ? (
          <Link to={`/tasks/${a.task_id}`}>task {a.task_id}</Link>
        ) : null}
        <span data-testid="alert-count">
          {a.count === 1 ? (
            'one occurrence'
          ) : (
            <>
              <strong>{a.count}</strong> occurrences grouped
            </>
          )}
          , {a.count === 1 ? 'at' : 'first'} {fmtShort(a.first_at)}
          {a.count > 1 ? `, last ${fmtShort(a.last_at)}` : ''}
        </span>
      </div>
      {a.deliveries?.length ? (
        <div class="table-wrap">
          <table class="table table-compact" aria-label={`Deliveries of alert ${a.id}`} data-testid="deliveries">
            <thead>
              <tr>
                <th>Channel</th>
                <th>Message</th>
                <th>State</th>
                <th class="num">Attempts</th>
                <th>Last error</th>
                <th>Delivered at</th>
              </tr>
            </thead>
            <tbody>
              {a.deliveries.map((d) => (
                <tr key={d.id} data-delivery={d.id} data-channel={d.channel ?? d.channel_id}>
                  <td class="strong nowrap">{d.channel ?? `#${d.channel_id}`}</td>
                  <td class="nowrap">
                    {d.seq <= 1 ? 'first' : `digest ${d.seq - 1}`}
                    {d.count_sent && d.count_sent > 1 ? <span class="muted"> ({d.count_sent} occurrences)</span> : null}
                  </td>
                  <td>
                    <DeliveryBadge state={d.state} />
                  </td>
                  <td class="num">{d.attempts}</td>
                  <td class="mono small break">{d.last_error || <span class="muted">—</span>}</td>
                  <td class="nowrap">{d.delivered_at ? fmtShort(d.delivered_at) : d.state === 'pending' && d.next_at ? <span class="muted">due {fmtRelative(d.next_at)}</span> : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p class="muted small">{a.state === 'silenced' ? 'Silenced: nothing sent.' : 'No message sent.'}</p>
      )}
    </article>
  );
}

export function HistoryTab() {
  preloadCharts();
  const me = useMe();
  const { query, setQuery } = useRoute();
  const f = {
    rule: query.get('rule') ?? '',
    event: query.get('event') ?? '',
    state: query.get('state') ?? '',
    since: query.get('since') ?? '7d',
  };
  const set = (k: keyof typeof f, v: string) => setQuery({ ...f, [k]: v, ...(k === 'since' && v === '7d' ? { since: undefined } : {}) });
  const win = SINCE.find((s) => s.v === f.since) ?? SINCE[2];
  const since = new Date(Date.now() - win.hours * 3600e3).toISOString();
  const alerts = useAsync(() => fetchAll({ rule: f.rule || undefined, event: f.event || undefined, state: f.state || undefined, since }), [f.rule, f.event, f.state, f.since]);
  const rules = useAsync(() => api.alertRules(), []);
  useInterval(alerts.reload, 5000, !alerts.missing);
  const [shown, setShown] = useState(SHOWN);
  const [silence, setSilence] = useState<Alert | null>(null);
  const byId = new Map((rules.data?.items ?? []).map((r) => [r.id, r]));
  const items = useMemo(() => [...(alerts.data?.items ?? [])].sort((a, b) => b.last_at.localeCompare(a.last_at) || b.id - a.id), [alerts.data]);

  // Alerts per hour (by first occurrence), stacked by severity.
  const chart = useMemo(() => {
    const hour = 3600e3;
    const end = Math.floor(Date.now() / hour) * hour;
    const start = end - (win.hours - 1) * hour;
    const x: number[] = [];
    for (let t = start; t <= end; t += hour) x.push(t / 1000);
    const counts: Record<string, number[]> = { critical: x.map(() => 0), warning: x.map(() => 0), info: x.map(() => 0) };
    for (const a of items) {
      const i = Math.floor((new Date(a.first_at).getTime() - start) / hour);
      if (i >= 0 && i < x.length && counts[a.severity]) counts[a.severity][i]++;
    }
    return { x, series: ['critical', 'warning', 'info'].map((s) => ({ label: s, color: SEV_COLOR[s], values: counts[s] })) };
  }, [items, win.hours]);

  const ruleOf = (a: Alert) => (a.rule_id ? byId.get(a.rule_id) : undefined);
  if (alerts.missing) return <Unavailable feature="The alert history" endpoint="GET /api/v1/alerts" />;
  return (
    <div>
      <div class="toolbar alert-filters" role="search" aria-label="Filter alerts">
        <select aria-label="Rule" value={f.rule} onChange={(e) => set('rule', val(e))} data-testid="filter-rule">
          <option value="">Every rule</option>
          {(rules.data?.items ?? []).map((r) => (
            <option key={r.id} value={String(r.id)}>
              {r.name}
            </option>
          ))}
        </select>
        <select aria-label="Event" value={f.event} onChange={(e) => set('event', val(e))} data-testid="filter-event">
          <option value="">Every event</option>
          {[...EVENT_IDS, 'test'].map((e) => (
            <option key={e} value={e}>
              {eventLabel(e)}
            </option>
          ))}
        </select>
        <select aria-label="State" value={f.state} onChange={(e) => set('state', val(e))} data-testid="filter-state">
          <option value="">Sent and silenced</option>
          <option value="open">Sent (open)</option>
          <option value="silenced">Silenced</option>
        </select>
        <select aria-label="Period" value={f.since} onChange={(e) => set('since', val(e))}>
          {SINCE.map((s) => (
            <option key={s.v} value={s.v}>
              {s.label}
            </option>
          ))}
        </select>
        <span class="muted small" aria-live="polite">
          {alerts.data ? `${items.length}${alerts.data.truncated ? '+' : ''} alert${items.length === 1 ? '' : 's'}` : ''}
        </span>
      </div>
      <ErrorBanner error={alerts.error} onRetry={alerts.reload} />
      <section class="card pad" aria-labelledby="alerts-chart-h">
        <h2 id="alerts-chart-h">Alerts per hour</h2>
        <div class="muted small">{win.label.toLowerCase()}, by severity, counted at each alert's first occurrence</div>
        {alerts.data ? <TimeChart x={chart.x} series={chart.series} stacked height={180} testid="chart-alerts" /> : !alerts.error && <Loading what="alerts" />}
      </section>
      {alerts.loading && !alerts.data ? null : items.length === 0 ? (
        !alerts.error && (
          <Empty title="No alert in this period" icon="◌">
            {f.rule || f.event || f.state ? 'Nothing matches the filters.' : 'When a rule fires, its alerts and their deliveries show here.'}
          </Empty>
        )
      ) : (
        <div class="alert-list" data-testid="alert-list">
          {items.slice(0, shown).map((a) => {
            const r = ruleOf(a);
            return <AlertCard key={a.id} a={a} rule={r} maySilence={me.role !== 'viewer' && (r ? canEditTeam(me, r.team) : true)} onSilence={() => setSilence(a)} />;
          })}
          {items.length > shown && (
            <button class="btn" onClick={() => setShown(shown + SHOWN)}>
              Show {Math.min(SHOWN, items.length - shown)} more
            </button>
          )}
        </div>
      )}
      {silence && (
        <SilenceDialog
          rule={ruleOf(silence) ?? null}
          scope={silence.scope_kind && silence.scope ? { kind: silence.scope_kind, scope: silence.scope } : null}
          onClose={() => setSilence(null)}
          onDone={alerts.reload}
        />
      )}
    </div>
  );
}
