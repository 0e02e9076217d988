// alerts-silences.tsx - the silences: what each covers (a rule, or a scope:
// every rule's alerts about it), from when until when, why and by whom;
// active ones first, with "End now"; a new silence of a rule or a scope for
// a duration. While a silence is on, alerts it covers are recorded as
// silenced and nothing is sent.
import { useState } from 'preact/hooks';
import { api, type AlertSilence } from '../api';
import { Confirm, Empty, ErrorBanner, Loading, Unavailable, toast, useAsync, useInterval } from '../components/ui';
import { fmtRelative, fmtShort, fmtTime } from '../format';
import { useMe } from '../session';
import { SilenceDialog, scopeText } from './alerts-common';

export function SilencesTab() {
  const me = useMe();
  const list = useAsync(() => api.alertSilences(), []);
  const rules = useAsync(() => api.alertRules(), []);
  useInterval(list.reload, 15000, !list.missing);
  const [adding, setAdding] = useState(false);
  const [end, setEnd] = useState<AlertSilence | null>(null);
  const ruleName = new Map((rules.data?.items ?? []).map((r) => [r.id, r.name]));
  const now = Date.now();
  const active = (s: AlertSilence) => s.active ?? (new Date(s.starts_at).getTime() <= now && new Date(s.ends_at).getTime() > now);
  const items = [...(list.data?.items ?? [])].sort((a, b) => Number(active(b)) - Number(active(a)) || b.ends_at.localeCompare(a.ends_at));
  const may = me.role !== 'viewer';
  if (list.missing) return <Unavailable feature="Alert silences" endpoint="GET /api/v1/alert-silences" />;
  return (
    <div>
      <div class="section-toolbar">
        <p class="muted">A silenced alert is still recorded in the history; no message is sent for it.</p>
        {may && (
          <button class="btn btn-primary" onClick={() => setAdding(true)} data-testid="new-silence">
            New silence
          </button>
        )}
      </div>
      <ErrorBanner error={list.error} onRetry={list.reload} />
      {list.loading && !list.data ? (
        <Loading what="silences" />
      ) : items.length === 0 ? (
        !list.error && (
          <Empty title="Nothing is silenced" icon="◌">
            Silence a rule from its row on the Rules page, an alert from the History page, or any scope here.
          </Empty>
        )
      ) : (
        <div class="card table-wrap">
          <table class="table" data-testid="silence-table">
            <thead>
              <tr>
                <th>Silences</th>
                <th>State</th>
                <th>From</th>
                <th>Until</th>
                <th>Reason</th>
                <th>By</th>
                <th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {items.map((s) => {
                const on = active(s);
                const what = s.rule_id ? `rule ${ruleName.get(s.rule_id) ?? `#${s.rule_id}`}` : scopeText(s.scope_kind, s.scope);
                return (
                  <tr key={s.id} data-silence={s.id} data-active={on}>
                    <td class="strong">{what}</td>
                    <td>
                      {on ? (
                        <span class="badge st-running">
                          <span class="dot" />
                          active
                        </span>
                      ) : new Date(s.starts_at).getTime() > now ? (
                        <span class="badge st-ready">
                          <span class="dot" />
                          scheduled
                        </span>
                      ) : (
                        <span class="badge st-none">ended</span>
                      )}
                    </td>
                    <td class="nowrap">{fmtShort(s.starts_at)}</td>
                    <td class="nowrap">
                      <time dateTime={s.ends_at} title={fmtTime(s.ends_at)}>
                        {on ? `${fmtRelative(s.ends_at)} (${fmtShort(s.ends_at)})` : fmtShort(s.ends_at)}
                      </time>
                    </td>
                    <td>{s.reason || <span class="muted">—</span>}</td>
                    <td>{s.created_by ?? ''}</td>
                    <td>
                      {may && (on || new Date(s.starts_at).getTime() > now) ? (
                        <button class="btn btn-small" onClick={() => setEnd(s)} aria-label={`End now the silence of ${what}`} data-testid="silence-end">
                          End now
                        </button>
                      ) : null}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {adding && <SilenceDialog onClose={() => setAdding(false)} onDone={list.reload} />}
      {end && (
        <Confirm
          title="End this silence?"
          body="Alerts it covered are sent again from now on."
          confirmLabel="End now"
          onClose={() => setEnd(null)}
          onConfirm={async () => {
            await api.deleteAlertSilence(end.id);
            toast('Silence ended');
            list.reload();
          }}
        />
      )}
    </div>
  );
}
