// alerts-rules.tsx - the alert rules: the list (scope, events, severity,
// channels, quiet period and grouping, enabled), a form to create or edit a
// rule (scope kind and a type-ahead scope, events as checkboxes with the
// parameters the chosen ones take, severity, channels, quiet period,
// grouping window), enable / disable in place, silence a rule for a while,
// delete. A developer manages the rules of their teams; a viewer reads.
import { useState } from 'preact/hooks';
import { api, ApiError, type AlertChannel, type AlertEvent, type AlertRule, type AlertRuleInput, type AlertScopeKind, type AlertSeverity } from '../api';
import { Confirm, Empty, ErrorBanner, Field, Link, Loading, Modal, Spinner, Unavailable, toast, useAsync, val } from '../components/ui';
import { canEditTeam, useMe } from '../session';
import { EVENT_GROUPS, SCOPE_KINDS, ScopePicker, SEVERITIES, SeverityBadge, SilenceDialog, eventLabel, fmtSeconds, scopeText } from './alerts-common';

function blank(team: string): AlertRuleInput {
  return {
    name: '',
    team,
    scope_kind: 'task',
    scope: '',
    events: ['failed'],
    severity: 'warning',
    channels: [],
    quiet_period_s: 300,
    group_window_s: 1,
    params: {},
    enabled: true,
  };
}

/** The create / edit form of a rule, in a dialog. */
function RuleForm(props: { rule: AlertRule | null; channels: AlertChannel[]; teams: string[]; onClose: () => void; onSaved: (r: AlertRule) => void }) {
  const me = useMe();
  const [r, setR] = useState<AlertRuleInput>(() => {
    if (!props.rule) return blank(props.teams.length === 1 ? props.teams[0] : '');
    const { id: _i, created_by: _c, created_at: _a, updated_at: _u, ...rest } = props.rule;
    return { ...rest, params: { ...(rest.params ?? {}) } };
  });
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const set = <K extends keyof AlertRuleInput>(k: K, v: AlertRuleInput[K]) => {
    setR((x) => ({ ...x, [k]: v }));
    // a field's error goes once the field is changed
    if (err instanceof ApiError && (err.field === k || err.field?.startsWith(`${k}[`) || err.field?.startsWith(`${k}.`))) setErr(null);
  };
  const setParam = (k: 'dirty_rows' | 'pool_starved_minutes' | 'each_attempt', v: number | boolean | undefined) =>
    setR((x) => {
      const p = { ...x.params };
      if (v === undefined) delete p[k];
      else (p as Record<string, number | boolean>)[k] = v;
      return { ...x, params: p };
    });
  const fe = (f: string) => (err instanceof ApiError && (err.field === f || err.field?.startsWith(`${f}[`) || err.field?.startsWith(`${f}.`)) ? err.message : null);
  const has = (e: AlertEvent) => r.events.includes(e);
  const toggleEvent = (e: AlertEvent, on: boolean) => set('events', on ? [...r.events, e] : r.events.filter((x) => x !== e));
  const toggleChannel = (id: number, on: boolean) => set('channels', on ? [...r.channels, id] : r.channels.filter((x) => x !== id));
  const usable = props.channels.filter((c) => me.role === 'admin' || c.team === r.team || r.channels.includes(c.id));

  const save = async (e?: Event) => {
    e?.preventDefault();
    setErr(null);
    // What the server would refuse, said before it is asked.
    const local = !r.name.trim()
      ? ['name', 'give the rule a name']
      : !r.team
        ? ['team', 'choose the team that owns the rule']
        : !r.scope.trim()
          ? ['scope', `name the ${r.scope_kind}, or * for every ${r.scope_kind}`]
          : r.events.length === 0
            ? ['events', 'choose at least one event']
            : r.channels.length === 0
              ? ['channels', 'choose at least one channel']
              : null;
    if (local) {
      setErr(new ApiError(400, 'EINVAL', local[1], local[0]));
      return;
    }
    // Parameters only of the events chosen.
    const params = { ...r.params };
    if (!has('failed')) delete params.each_attempt;
    if (!has('dirty_rows')) delete params.dirty_rows;
    if (!has('pool_starved')) delete params.pool_starved_minutes;
    const body = { ...r, name: r.name.trim(), scope: r.scope.trim(), params };
    setBusy(true);
    try {
      const saved = props.rule ? await api.updateAlertRule(props.rule.id, body) : await api.createAlertRule(body);
      toast(props.rule ? `Rule ${saved.name} saved` : `Rule ${saved.name} created`);
      props.onSaved(saved);
    } catch (x) {
      setErr(x);
      setBusy(false);
    }
  };
  const known = ['name', 'team', 'scope_kind', 'scope', 'events', 'severity', 'channels', 'quiet_period_s', 'group_window_s', 'params'];
  const num = (v: string) => (v.trim() === '' ? NaN : Number(v));
  return (
    <Modal
      wide
      title={props.rule ? `Edit rule ${props.rule.name}` : 'New alert rule'}
      onClose={props.onClose}
      footer={
        <>
          <button class="btn" type="button" onClick={props.onClose} disabled={busy}>
            Cancel
          </button>
          <button class="btn btn-primary" type="button" onClick={() => save()} disabled={busy} data-testid="rule-save">
            {busy ? <Spinner /> : null} {props.rule ? 'Save rule' : 'Create rule'}
          </button>
        </>
      }
    >
      <form onSubmit={save} noValidate data-testid="rule-form" class="alert-form">
        <div class="grid2">
          <Field label="Name" field="name" error={fe('name')}>
            <input value={r.name} maxLength={128} onInput={(e) => set('name', val(e))} placeholder="nightly-load-failures" class="mono" />
          </Field>
          <Field label="Team" field="team" error={fe('team')} hint="Who owns and may change the rule">
            {props.teams.length ? (
              <select value={r.team} onChange={(e) => set('team', val(e))}>
                <option value="">Choose a team…</option>
                {props.teams.map((t) => (
                  <option key={t} value={t}>
                    {t}
                  </option>
                ))}
              </select>
            ) : (
              <input value={r.team} onInput={(e) => set('team', val(e))} />
            )}
          </Field>
          <Field label="Scope kind" field="scope_kind" error={fe('scope_kind')}>
            <select value={r.scope_kind} onChange={(e) => setR((x) => ({ ...x, scope_kind: val(e) as AlertScopeKind, scope: '' }))}>
              {SCOPE_KINDS.map((k) => (
                <option key={k.id} value={k.id}>
                  {k.label}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Scope" field="scope" error={fe('scope')} hint={`Type to search; * watches every ${r.scope_kind} the team may see`}>
            <ScopePicker kind={r.scope_kind} value={r.scope} onChange={(v) => set('scope', v)} label="Scope" />
          </Field>
        </div>
        <fieldset class="subgroup event-groups" data-field="events" aria-describedby={fe('events') ? 'rule-events-err' : undefined}>
          <legend>Events</legend>
          <div class="event-cols">
            {EVENT_GROUPS.map((g) => (
              <div key={g.title} class="event-group">
                <div class="event-group-title">{g.title}</div>
                {g.events.map((ev) => (
                  <label key={ev.id} class="check-line event-check">
                    <input type="checkbox" name={`event-${ev.id}`} value={ev.id} checked={has(ev.id)} onChange={(e) => toggleEvent(ev.id, (e.currentTarget as HTMLInputElement).checked)} />
                    <span>
                      {ev.label}
                      <span class="muted small event-help"> {ev.help}</span>
                    </span>
                  </label>
                ))}
              </div>
            ))}
          </div>
          {fe('events') && (
            <div class="field-error" role="alert" id="rule-events-err">
              {fe('events')}
            </div>
          )}
        </fieldset>
        {(has('failed') || has('dirty_rows') || has('pool_starved')) && (
          <fieldset class="subgroup" data-field="params">
            <legend>Event parameters</legend>
            <div class="grid2">
              {has('failed') && (
                <label class="check-line span2">
                  <input type="checkbox" checked={!!r.params.each_attempt} onChange={(e) => setParam('each_attempt', (e.currentTarget as HTMLInputElement).checked || undefined)} /> Also alert on every
                  failed attempt that will be retried
                </label>
              )}
              {has('dirty_rows') && (
                <Field label="Dirty rows above" field="params.dirty_rows" error={fe('params.dirty_rows')}>
                  <input type="number" min={0} value={r.params.dirty_rows ?? ''} onInput={(e) => setParam('dirty_rows', Number.isNaN(num(val(e))) ? undefined : num(val(e)))} />
                </Field>
              )}
              {has('pool_starved') && (
                <Field label="Pool starved for (minutes)" field="params.pool_starved_minutes" error={fe('params.pool_starved_minutes')}>
                  <input
                    type="number"
                    min={1}
                    value={r.params.pool_starved_minutes ?? ''}
                    onInput={(e) => setParam('pool_starved_minutes', Number.isNaN(num(val(e))) ? undefined : num(val(e)))}
                  />
                </Field>
              )}
            </div>
          </fieldset>
        )}
        <div class="grid2">
          <Field label="Severity" field="severity" error={fe('severity')}>
            <select value={r.severity} onChange={(e) => set('severity', val(e) as AlertSeverity)}>
              {SEVERITIES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </Field>
          <label class="check-line enabled-check">
            <input type="checkbox" checked={r.enabled} onChange={(e) => set('enabled', (e.currentTarget as HTMLInputElement).checked)} /> Enabled
          </label>
          <Field label="Quiet period (seconds)" field="quiet_period_s" error={fe('quiet_period_s')} hint="0 to 86400: repeats of one alert within it make one digest message">
            <input type="number" min={0} max={86400} value={r.quiet_period_s} onInput={(e) => set('quiet_period_s', num(val(e)))} />
          </Field>
          <Field label="Grouping window (seconds)" field="group_window_s" error={fe('group_window_s')} hint="0 to 3600: how long the first message waits to gather more of the same">
            <input type="number" min={0} max={3600} value={r.group_window_s} onInput={(e) => set('group_window_s', num(val(e)))} />
          </Field>
        </div>
        <fieldset class="subgroup" data-field="channels">
          <legend>Channels</legend>
          {usable.length === 0 ? (
            <p class="muted small">
              No channel{r.team ? ` of team ${r.team}` : ''} yet: <Link to="/alerts/channels">create one</Link> first.
            </p>
          ) : (
            <div class="channel-checks">
              {usable.map((c) => (
                <label key={c.id} class="check-line">
                  <input type="checkbox" name={`channel-${c.name}`} checked={r.channels.includes(c.id)} onChange={(e) => toggleChannel(c.id, (e.currentTarget as HTMLInputElement).checked)} />{' '}
                  <span class="strong">{c.name}</span> <span class="muted small">{c.kind}</span>
                </label>
              ))}
            </div>
          )}
          {fe('channels') && (
            <div class="field-error" role="alert">
              {fe('channels')}
            </div>
          )}
        </fieldset>
        {err && !known.some((k) => fe(k)) ? <ErrorBanner error={err} /> : null}
      </form>
    </Modal>
  );
}

export function RulesTab() {
  const me = useMe();
  const rules = useAsync(() => api.alertRules(), []);
  const channels = useAsync(() => api.alertChannels(), []);
  const teams = useAsync(() => (me.role === 'admin' ? api.teams().then((t) => t.items.map((x) => x.name)) : Promise.resolve(me.teams)), []);
  const [edit, setEdit] = useState<AlertRule | 'new' | null>(null);
  const [silence, setSilence] = useState<AlertRule | null>(null);
  const [remove, setRemove] = useState<AlertRule | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const chName = new Map((channels.data?.items ?? []).map((c) => [c.id, c.name]));
  const items = [...(rules.data?.items ?? [])].sort((a, b) => a.name.localeCompare(b.name));
  const mayCreate = me.role === 'admin' || (me.role === 'developer' && me.teams.length > 0);

  const toggle = async (r: AlertRule) => {
    setErr(null);
    try {
      const { id, created_by: _c, created_at: _a, updated_at: _u, ...rest } = r;
      const s = await api.updateAlertRule(id, { ...rest, enabled: !r.enabled });
      toast(`Rule ${s.name} ${s.enabled ? 'enabled' : 'disabled'}`);
      rules.reload();
    } catch (x) {
      setErr(x);
    }
  };
  if (rules.missing) return <Unavailable feature="Alert rules" endpoint="GET /api/v1/alert-rules" />;
  return (
    <div>
      <div class="section-toolbar">
        <p class="muted">A rule watches a scope for events and sends each alert to its channels, grouped and rate-limited by its quiet period.</p>
        {mayCreate && (
          <button class="btn btn-primary" onClick={() => setEdit('new')} data-testid="new-rule">
            New rule
          </button>
        )}
      </div>
      <ErrorBanner error={rules.error ?? err} onRetry={rules.error ? rules.reload : undefined} />
      {rules.loading && !rules.data ? (
        <Loading what="rules" />
      ) : items.length === 0 ? (
        !rules.error && (
          <Empty title="No alert rules yet" icon="⚑">
            A rule says what to watch (a task, a workflow, a team…), which events matter and where to send them.
          </Empty>
        )
      ) : (
        <div class="card table-wrap">
          <table class="table" data-testid="rule-table">
            <thead>
              <tr>
                <th>Rule</th>
                <th>Scope</th>
                <th>Events</th>
                <th>Severity</th>
                <th>Channels</th>
                <th>Quiet / group</th>
                <th>Enabled</th>
                <th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {items.map((r) => {
                const mine = canEditTeam(me, r.team);
                return (
                  <tr key={r.id} data-rule={r.name}>
                    <td>
                      <div class="strong break">{r.name}</div>
                      <span class="tag">{r.team}</span>
                    </td>
                    <td class="break">{scopeText(r.scope_kind, r.scope)}</td>
                    <td>
                      <span class="tags">
                        {r.events.map((e) => (
                          <span key={e} class="tag tag-muted">
                            {eventLabel(e)}
                          </span>
                        ))}
                      </span>
                    </td>
                    <td>
                      <SeverityBadge severity={r.severity} />
                    </td>
                    <td class="break">{r.channels.map((c) => chName.get(c) ?? `#${c}`).join(', ')}</td>
                    <td class="nowrap">
                      {fmtSeconds(r.quiet_period_s)} / {fmtSeconds(r.group_window_s)}
                    </td>
                    <td>
                      <label class="switch">
                        <input type="checkbox" role="switch" checked={r.enabled} disabled={!mine} onChange={() => toggle(r)} aria-label={`Rule ${r.name} enabled`} data-testid="rule-enabled" />
                        <span>{r.enabled ? 'on' : 'off'}</span>
                      </label>
                    </td>
                    <td class="nowrap">
                      {mine ? (
                        <>
                          <button class="btn btn-small" onClick={() => setEdit(r)} aria-label={`Edit rule ${r.name}`}>
                            Edit
                          </button>{' '}
                          <button class="btn btn-small" onClick={() => setSilence(r)} aria-label={`Silence rule ${r.name}`} data-testid="rule-silence">
                            Silence…
                          </button>{' '}
                          <button class="btn btn-small btn-ghost danger-text" onClick={() => setRemove(r)} aria-label={`Delete rule ${r.name}`}>
                            Delete
                          </button>
                        </>
                      ) : (
                        <span class="muted small">read-only</span>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {edit && (
        <RuleForm
          rule={edit === 'new' ? null : edit}
          channels={channels.data?.items ?? []}
          teams={teams.data ?? []}
          onClose={() => setEdit(null)}
          onSaved={() => {
            setEdit(null);
            rules.reload();
          }}
        />
      )}
      {silence && <SilenceDialog rule={silence} onClose={() => setSilence(null)} />}
      {remove && (
        <Confirm
          title={`Delete rule ${remove.name}?`}
          body="It stops watching at once. The alerts it raised stay in the history."
          confirmLabel="Delete"
          danger
          onClose={() => setRemove(null)}
          onConfirm={async () => {
            await api.deleteAlertRule(remove.id);
            toast(`Rule ${remove.name} deleted`);
            rules.reload();
          }}
        />
      )}
    </div>
  );
}
