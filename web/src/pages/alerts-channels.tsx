// alerts-channels.tsx - where alerts go: webhook (JSON body signed with
// HMAC-SHA256), email over SMTP, and chat (Slack- or Teams-compatible
// webhook). Create and edit a channel by its kind; write-only secrets (the
// webhook's HMAC key, the SMTP password) are never shown again: the list and
// the form say "set", and an empty field keeps what is stored. "Send a test
// message" puts a test alert in the outbox and follows its delivery until it
// is delivered or failed.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, type AlertChannel, type AlertChannelConfig, type AlertDelivery, type AlertKind } from '../api';
import { Confirm, Empty, ErrorBanner, Field, Loading, Modal, Spinner, Unavailable, errorText, toast, useAsync, val } from '../components/ui';
import { fmtTime } from '../format';
import { canEditTeam, useMe } from '../session';
import { DeliveryBadge } from './alerts-common';

const KINDS: { id: AlertKind; label: string; help: string }[] = [
  { id: 'webhook', label: 'Webhook', help: 'A JSON POST to your URL, signed with HMAC-SHA256 (X-Orrery-Signature) and carrying a dedup key.' },
  { id: 'email', label: 'Email', help: 'Plain-text mail over SMTP (STARTTLS or SMTPS, with a login if the server needs one).' },
  { id: 'chat', label: 'Chat', help: 'An incoming webhook of Slack or Microsoft Teams.' },
];

/** A channel's target in a few words: its URL or its recipients. */
function target(c: AlertChannel): string {
  if (c.kind === 'email') return `${(c.config.to ?? []).join(', ')} via ${c.config.smtp_url ?? ''}`;
  return c.config.url ?? '';
}

/** Whether a write-only secret of the channel is stored. */
function hasSecret(c: AlertChannel): boolean {
  return !!(c.secret_set || c.config.secret_set || c.config.password_set);
}

function headersText(h: Record<string, string> | undefined): string {
  return Object.entries(h ?? {})
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
}

function parseHeaders(text: string): Record<string, string> | string {
  const out: Record<string, string> = {};
  for (const [i, line] of text.split('\n').entries()) {
    if (!line.trim()) continue;
    const m = /^\s*([A-Za-z0-9-]+)\s*:\s*(.*)$/.exec(line);
    if (!m) return `line ${i + 1}: write a header as "Name: value"`;
    out[m[1]] = m[2].trim();
  }
  return out;
}

function ChannelForm(props: { channel: AlertChannel | null; teams: string[]; onClose: () => void; onSaved: () => void }) {
  const c0 = props.channel;
  const [name, setName] = useState(c0?.name ?? '');
  const [team, setTeam] = useState(c0?.team ?? (props.teams.length === 1 ? props.teams[0] : ''));
  const [kind, setKind] = useState<AlertKind>(c0?.kind ?? 'webhook');
  const [cfg, setCfg] = useState<AlertChannelConfig>(() => ({ ...(c0?.config ?? {}) }));
  const [headers, setHeaders] = useState(headersText(c0?.config.headers));
  const [to, setTo] = useState((c0?.config.to ?? []).join(', '));
  const [secret, setSecret] = useState('');
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const fe = (f: string) => (err instanceof ApiError && (err.field === f || err.field === `config.${f}` || err.field?.startsWith(`config.${f}[`)) ? err.message : null);
  // a field's error goes once the field is changed
  const clear = (f: string) => fe(f) && setErr(null);
  const set = <K extends keyof AlertChannelConfig>(k: K, v: AlertChannelConfig[K]) => {
    setCfg((x) => ({ ...x, [k]: v }));
    clear(k);
  };
  const save = async (e?: Event) => {
    e?.preventDefault();
    setErr(null);
    let config: AlertChannelConfig;
    if (kind === 'webhook') {
      const h = parseHeaders(headers);
      if (typeof h === 'string') {
        setErr(new ApiError(400, 'EINVAL', h, 'config.headers'));
        return;
      }
      config = { url: (cfg.url ?? '').trim(), ...(Object.keys(h).length ? { headers: h } : {}), timeout_s: cfg.timeout_s ?? 10, ...(secret ? { secret } : {}) };
    } else if (kind === 'email') {
      config = {
        smtp_url: (cfg.smtp_url ?? '').trim(),
        starttls: !!cfg.starttls,
        ...(cfg.username ? { username: cfg.username.trim() } : {}),
        ...(secret ? { password: secret } : {}),
        from: (cfg.from ?? '').trim(),
        to: to
          .split(/[,\s]+/)
          .map((x) => x.trim())
          .filter(Boolean),
      };
    } else config = { url: (cfg.url ?? '').trim(), format: cfg.format ?? 'slack' };
    if (!name.trim()) {
      setErr(new ApiError(400, 'EINVAL', 'give the channel a name', 'name'));
      return;
    }
    setBusy(true);
    try {
      const body = { name: name.trim(), team, kind, config };
      const c = c0 ? await api.updateAlertChannel(c0.id, body) : await api.createAlertChannel(body);
      toast(c0 ? `Channel ${c.name} saved` : `Channel ${c.name} created`);
      props.onSaved();
    } catch (x) {
      setErr(x);
      setBusy(false);
    }
  };
  const secretSet = !!c0 && c0.kind === kind && hasSecret(c0);
  const known = ['name', 'team', 'kind', 'url', 'secret', 'headers', 'timeout_s', 'smtp_url', 'starttls', 'username', 'password', 'from', 'to', 'format'];
  return (
    <Modal
      wide
      title={c0 ? `Edit channel ${c0.name}` : 'New channel'}
      onClose={props.onClose}
      footer={
        <>
          <button class="btn" type="button" onClick={props.onClose} disabled={busy}>
            Cancel
          </button>
          <button class="btn btn-primary" type="button" onClick={() => save()} disabled={busy} data-testid="channel-save">
            {busy ? <Spinner /> : null} {c0 ? 'Save channel' : 'Create channel'}
          </button>
        </>
      }
    >
      <form onSubmit={save} noValidate data-testid="channel-form" class="alert-form">
        <div class="grid2">
          <Field label="Name" field="name" error={fe('name')}>
            <input value={name} maxLength={128} onInput={(e) => (setName(val(e)), clear('name'))} class="mono" placeholder="oncall-webhook" />
          </Field>
          <Field label="Team" field="team" error={fe('team')} hint="Who owns and may use the channel">
            {props.teams.length ? (
              <select value={team} onChange={(e) => setTeam(val(e))}>
                <option value="">Choose a team…</option>
                {props.teams.map((t) => (
                  <option key={t} value={t}>
                    {t}
                  </option>
                ))}
              </select>
            ) : (
              <input value={team} onInput={(e) => setTeam(val(e))} />
            )}
          </Field>
        </div>
        <Field label="Kind" field="kind" error={fe('kind')} hint={KINDS.find((k) => k.id === kind)?.help}>
          <select value={kind} onChange={(e) => (setKind(val(e) as AlertKind), setSecret(''))} data-testid="channel-kind">
            {KINDS.map((k) => (
              <option key={k.id} value={k.id}>
                {k.label}
              </option>
            ))}
          </select>
        </Field>
        {kind === 'webhook' && (
          <div class="grid2">
            <Field label="URL" field="url" error={fe('url')} class="span2">
              <input type="url" class="mono" value={cfg.url ?? ''} onInput={(e) => set('url', val(e))} placeholder="https://hooks.example.com/orrery" />
            </Field>
            <Field
              label="Signing secret"
              field="secret"
              error={fe('secret')}
              hint={secretSet ? 'A secret is set; leave empty to keep it.' : 'The HMAC-SHA256 key of X-Orrery-Signature; stored encrypted, never shown again.'}
            >
              <input type="password" autocomplete="new-password" value={secret} onInput={(e) => (setSecret(val(e)), clear('secret'))} placeholder={secretSet ? 'set' : ''} />
            </Field>
            <Field label="Timeout (seconds)" field="timeout_s" error={fe('timeout_s')}>
              <input type="number" min={1} max={60} value={cfg.timeout_s ?? 10} onInput={(e) => set('timeout_s', Number(val(e)))} />
            </Field>
            <Field label="Extra headers (optional)" field="headers" error={fe('headers')} hint='One a line, as "Name: value"' class="span2">
              <textarea rows={2} class="mono" value={headers} onInput={(e) => (setHeaders(val(e)), clear('headers'))} />
            </Field>
          </div>
        )}
        {kind === 'email' && (
          <div class="grid2">
            <Field label="SMTP server" field="smtp_url" error={fe('smtp_url')} hint="smtp://host:587 or smtps://host:465">
              <input class="mono" value={cfg.smtp_url ?? ''} onInput={(e) => set('smtp_url', val(e))} placeholder="smtp://mail.example.com:587" />
            </Field>
            <label class="check-line enabled-check">
              <input type="checkbox" checked={!!cfg.starttls} onChange={(e) => set('starttls', (e.currentTarget as HTMLInputElement).checked)} /> Require STARTTLS
            </label>
            <Field label="User name (optional)" field="username" error={fe('username')}>
              <input value={cfg.username ?? ''} autocomplete="off" onInput={(e) => set('username', val(e))} />
            </Field>
            <Field label="Password" field="password" error={fe('password')} hint={secretSet ? 'A password is set; leave empty to keep it.' : 'Stored encrypted; never shown again.'}>
              <input type="password" autocomplete="new-password" value={secret} onInput={(e) => setSecret(val(e))} placeholder={secretSet ? 'set' : ''} />
            </Field>
            <Field label="From" field="from" error={fe('from')}>
              <input type="email" value={cfg.from ?? ''} onInput={(e) => set('from', val(e))} placeholder="orrery@example.com" />
            </Field>
            <Field label="To" field="to" error={fe('to')} hint="Addresses, separated by commas">
              <input value={to} onInput={(e) => (setTo(val(e)), clear('to'))} placeholder="oncall@example.com, data-team@example.com" />
            </Field>
          </div>
        )}
        {kind === 'chat' && (
          <div class="grid2">
            <Field label="Incoming webhook URL" field="url" error={fe('url')}>
              <input type="url" class="mono" value={cfg.url ?? ''} onInput={(e) => set('url', val(e))} placeholder="https://hooks.slack.com/services/…" />
            </Field>
            <Field label="Format" field="format" error={fe('format')}>
              <select value={cfg.format ?? 'slack'} onChange={(e) => set('format', val(e) as 'slack' | 'teams')}>
                <option value="slack">Slack</option>
                <option value="teams">Microsoft Teams</option>
              </select>
            </Field>
          </div>
        )}
        {err && !known.some((k) => fe(k)) ? <ErrorBanner error={err} /> : null}
      </form>
    </Modal>
  );
}

interface TestRun {
  channel: AlertChannel;
  delivery: number | null;
  seen: AlertDelivery | null;
  error: unknown;
}

/** How a test message is doing: asked for, then its delivery as the history
 * shows it, until it is delivered or failed. */
function TestOutcome({ run }: { run: TestRun }) {
  const d = run.seen;
  return (
    <div class={`test-outcome card pad ${d?.state === 'failed' || run.error ? 'test-bad' : d?.state === 'delivered' ? 'test-ok' : ''}`} role="status" data-testid="test-outcome" data-state={run.error ? 'error' : (d?.state ?? 'asked')}>
      <span class="strong">Test message to {run.channel.name}: </span>
      {run.error ? (
        <span>{errorText(run.error)}</span>
      ) : !d ? (
        <span>
          <Spinner /> queued{run.delivery ? ` (delivery ${run.delivery})` : ''}, waiting for the sender…
        </span>
      ) : d.state === 'delivered' ? (
        <span>
          <DeliveryBadge state="delivered" /> at {fmtTime(d.delivered_at)} after {d.attempts} attempt{d.attempts === 1 ? '' : 's'}.
        </span>
      ) : d.state === 'failed' ? (
        <span>
          <DeliveryBadge state="failed" /> after {d.attempts} attempt{d.attempts === 1 ? '' : 's'}: <span class="mono">{d.last_error || 'no error text'}</span>
        </span>
      ) : (
        <span>
          <DeliveryBadge state={d.state} /> {d.attempts ? `attempt ${d.attempts}` : ''}
          {d.last_error ? (
            <>
              ; last error <span class="mono">{d.last_error}</span>, retried {d.next_at ? fmtTime(d.next_at) : 'soon'}
            </>
          ) : null}
        </span>
      )}
    </div>
  );
}

export function ChannelsTab() {
  const me = useMe();
  const channels = useAsync(() => api.alertChannels(), []);
  const teams = useAsync(() => (me.role === 'admin' ? api.teams().then((t) => t.items.map((x) => x.name)) : Promise.resolve(me.teams)), []);
  const [edit, setEdit] = useState<AlertChannel | 'new' | null>(null);
  const [remove, setRemove] = useState<AlertChannel | null>(null);
  const [test, setTest] = useState<TestRun | null>(null);
  const poll = useRef(0);
  const mayCreate = me.role === 'admin' || (me.role === 'developer' && me.teams.length > 0);
  const items = [...(channels.data?.items ?? [])].sort((a, b) => a.name.localeCompare(b.name));

  useEffect(() => () => void (poll.current = -1), []);
  const sendTest = async (c: AlertChannel) => {
    const my = ++poll.current;
    setTest({ channel: c, delivery: null, seen: null, error: null });
    let id: number;
    try {
      id = (await api.testAlertChannel(c.id)).delivery_id;
    } catch (x) {
      if (my === poll.current) setTest({ channel: c, delivery: null, seen: null, error: x });
      return;
    }
    setTest({ channel: c, delivery: id, seen: null, error: null });
    // Follow the delivery in the history (the test alert is the newest of
    // event "test") until it ends, for up to ten minutes (eight attempts
    // with back-off end well within that).
    const end = Date.now() + 600e3;
    while (my === poll.current && Date.now() < end) {
      try {
        const page = await api.alerts({ event: 'test', limit: 20 });
        const d = page.items.flatMap((a) => a.deliveries ?? []).find((x) => x.id === id) ?? null;
        if (my !== poll.current) return;
        if (d) setTest({ channel: c, delivery: id, seen: d, error: null });
        if (d && (d.state === 'delivered' || d.state === 'failed')) return;
      } catch (x) {
        if (my === poll.current) setTest({ channel: c, delivery: id, seen: null, error: x });
        return;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  };

  if (channels.missing) return <Unavailable feature="Alert channels" endpoint="GET /api/v1/alert-channels" />;
  return (
    <div>
      <div class="section-toolbar">
        <p class="muted">Where alerts are sent. A rule names one or more channels of its team.</p>
        {mayCreate && (
          <button class="btn btn-primary" onClick={() => setEdit('new')} data-testid="new-channel">
            New channel
          </button>
        )}
      </div>
      {test && <TestOutcome run={test} />}
      <ErrorBanner error={channels.error} onRetry={channels.reload} />
      {channels.loading && !channels.data ? (
        <Loading what="channels" />
      ) : items.length === 0 ? (
        !channels.error && (
          <Empty title="No channels yet" icon="✉">
            Add a webhook, an email address list or a chat room for alerts to go to.
          </Empty>
        )
      ) : (
        <div class="card table-wrap">
          <table class="table" data-testid="channel-table">
            <thead>
              <tr>
                <th>Channel</th>
                <th>Kind</th>
                <th>Sends to</th>
                <th>Secret</th>
                <th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {items.map((c) => {
                const mine = canEditTeam(me, c.team);
                return (
                  <tr key={c.id} data-channel={c.name}>
                    <td>
                      <div class="strong nowrap">{c.name}</div>
                      <span class="tag">{c.team}</span>
                    </td>
                    <td>
                      {c.kind}
                      {c.kind === 'chat' && c.config.format ? <span class="muted small"> ({c.config.format})</span> : null}
                    </td>
                    <td class="mono small break target">{target(c)}</td>
                    <td>{c.kind === 'chat' ? <span class="muted">—</span> : hasSecret(c) ? <span class="tag" data-testid="secret-set">set</span> : <span class="muted">none</span>}</td>
                    <td class="nowrap">
                      {mine ? (
                        <>
                          <button class="btn btn-small" onClick={() => sendTest(c)} aria-label={`Send a test message to ${c.name}`} data-testid="channel-test">
                            Send a test message
                          </button>{' '}
                          <button class="btn btn-small" onClick={() => setEdit(c)} aria-label={`Edit channel ${c.name}`}>
                            Edit
                          </button>{' '}
                          <button class="btn btn-small btn-ghost danger-text" onClick={() => setRemove(c)} aria-label={`Delete channel ${c.name}`}>
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
        <ChannelForm
          channel={edit === 'new' ? null : edit}
          teams={teams.data ?? []}
          onClose={() => setEdit(null)}
          onSaved={() => {
            setEdit(null);
            channels.reload();
          }}
        />
      )}
      {remove && (
        <Confirm
          title={`Delete channel ${remove.name}?`}
          body="Alerts are no longer sent to it. What was sent stays in the history."
          confirmLabel="Delete"
          danger
          onClose={() => setRemove(null)}
          onConfirm={async () => {
            await api.deleteAlertChannel(remove.id);
            toast(`Channel ${remove.name} deleted`);
            channels.reload();
          }}
        />
      )}
    </div>
  );
}
