// resources.tsx - resource limits: executors (liveness, slots in use, the
// slots and labels the scheduler uses, drain and resume, overrides of
// slots and labels), team quotas (running instances and slots the
// scheduler lets a team use at once) and, per task type, the default and
// maximum sandbox limits task specs are held to. Admins edit; everyone
// else reads.
import { useState } from 'preact/hooks';
import { api, ApiError, type Executor, type Limits, type TeamQuota } from '../api';
import { Empty, ErrorBanner, Field, Loading, PageHead, Spinner, toast, useAsync, useInterval, val } from '../components/ui';
import { fmtRelative } from '../format';
import { useMe } from '../session';

const TYPES = ['shell', 'transfer', 'quality'];
const PARTS: { key: keyof Limits; label: string; hint: string }[] = [
  { key: 'memory', label: 'Memory', hint: 'a size: 512m, 4g' },
  { key: 'cpu', label: 'CPU (cores)', hint: 'a number of cores: 0.5, 2' },
  { key: 'pids', label: 'Processes', hint: 'a whole number' },
  { key: 'run_time', label: 'Run time', hint: 'a duration: 30m, 6h' },
];

/** "zone=a, gpu=yes" <-> {"zone":"a","gpu":"yes"}; null when malformed. */
function parseLabels(s: string): Record<string, string> | null {
  const out: Record<string, string> = {};
  for (const part of s.split(',').map((x) => x.trim()).filter(Boolean)) {
    const eq = part.indexOf('=');
    if (eq <= 0) return null;
    out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return out;
}
const showLabels = (l: Record<string, string> | null | undefined) =>
  Object.entries(l ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');

function fieldError(err: unknown, f: string): string | null {
  return err instanceof ApiError && err.field === f ? err.message : null;
}

function ExecutorRow({ x, admin, onChanged }: { x: Executor; admin: boolean; onChanged: () => void }) {
  const [edit, setEdit] = useState(false);
  const [slots, setSlots] = useState('');
  const [labels, setLabels] = useState('');
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const send = async (patch: Parameters<typeof api.updateExecutor>[1], what: string) => {
    setBusy(true);
    setErr(null);
    try {
      await api.updateExecutor(x.id, patch);
      toast(`Executor ${x.id}: ${what}`);
      setEdit(false);
      onChanged();
    } catch (e) {
      setErr(e);
    } finally {
      setBusy(false);
    }
  };
  const save = (e: Event) => {
    e.preventDefault();
    const n = slots.trim() === '' ? null : Number(slots);
    if (n !== null && (!Number.isInteger(n) || n < 0 || n > 100000)) {
      setErr(new ApiError(400, 'EINVAL', 'a whole number from 0 to 100000, or empty for its own', 'slots'));
      return;
    }
    const l = labels.trim() === '' ? null : parseLabels(labels);
    if (labels.trim() !== '' && !l) {
      setErr(new ApiError(400, 'EINVAL', 'key=value pairs separated by commas, or empty for its own', 'labels'));
      return;
    }
    void send({ slots: n, labels: l }, 'settings saved');
  };
  const startEdit = () => {
    setSlots(x.slots_override === null ? '' : String(x.slots_override));
    setLabels(showLabels(x.labels_override));
    setErr(null);
    setEdit(true);
  };
  return (
    <tr data-executor={x.id} data-drained={x.drained ? 'yes' : 'no'}>
      <td class="strong">
        {x.id}
        <div class="small muted">{x.host || '—'}</div>
      </td>
      <td>
        <span class={`badge ${x.alive ? 'st-success' : 'st-failed'}`}>
          <span class="dot" />
          {x.alive ? 'alive' : 'gone'}
        </span>
        {x.drained && <span class="badge st-suspended" data-testid="drained">drained</span>}
        <div class="small muted" data-testid="heartbeat">
          {x.last_seen && Date.parse(x.last_seen) > 0 ? `last heartbeat ${fmtRelative(x.last_seen)}` : x.alive ? 'alive, no heartbeat yet' : 'never seen'}
        </div>
      </td>
      <td>
        {edit ? (
          <Field label={`Slots of ${x.id}`} field="slots" error={fieldError(err, 'slots')} hint={`its own: ${x.announced_slots ?? '—'}; empty = its own`}>
            <input type="number" min={0} max={100000} name="slots" aria-label={`Slots of ${x.id}`} value={slots} onInput={(e) => setSlots(val(e))} />
          </Field>
        ) : (
          <>
            <strong>{x.used}</strong> / {x.slots} used
            {x.slots_override !== null && <div class="small muted">set by an admin (its own: {x.announced_slots ?? '—'})</div>}
          </>
        )}
      </td>
      <td>
        {edit ? (
          <Field label={`Labels of ${x.id}`} field="labels" error={fieldError(err, 'labels')} hint={`its own: ${showLabels(x.announced_labels) || 'none'}; empty = its own`}>
            <input name="labels" aria-label={`Labels of ${x.id}`} value={labels} placeholder="zone=a, gpu=yes" onInput={(e) => setLabels(val(e))} />
          </Field>
        ) : (
          <>
            {Object.entries(x.labels ?? {}).map(([k, v]) => (
              <span key={k} class="tag">
                {k}={v}
              </span>
            ))}
            {x.labels_override !== null && <div class="small muted">set by an admin</div>}
          </>
        )}
      </td>
      {admin && (
        <td class="nowrap">
          {edit ? (
            <form class="inline-form" onSubmit={save} noValidate>
              <button class="btn btn-small btn-primary" type="submit" disabled={busy}>
                {busy ? <Spinner /> : null} Save
              </button>
              <button class="btn btn-small btn-ghost" type="button" onClick={() => setEdit(false)}>
                Cancel
              </button>
            </form>
          ) : (
            <>
              <button class="btn btn-small" onClick={startEdit} aria-label={`Edit slots and labels of ${x.id}`}>
                Edit
              </button>{' '}
              {x.drained ? (
                <button class="btn btn-small btn-primary" disabled={busy} onClick={() => send({ drained: false }, 'resumed')} aria-label={`Resume ${x.id}`}>
                  Resume
                </button>
              ) : (
                <button class="btn btn-small" disabled={busy} onClick={() => send({ drained: true }, 'drained: no new dispatches')} aria-label={`Drain ${x.id}`}>
                  Drain
                </button>
              )}
            </>
          )}
          {err && !fieldError(err, 'slots') && !fieldError(err, 'labels') ? <ErrorBanner error={err} /> : null}
        </td>
      )}
    </tr>
  );
}

function Executors({ admin }: { admin: boolean }) {
  const ex = useAsync(() => api.executors(), []);
  useInterval(ex.reload, 5000);
  if (ex.error && !ex.data) return <ErrorBanner error={ex.error} onRetry={ex.reload} />;
  if (!ex.data) return <Loading what="executors" />;
  const items = ex.data.items as Executor[];
  if (items.length === 0) return <Empty title="No executor has registered">Start executord on a worker host.</Empty>;
  return (
    <div class="table-wrap">
      <table class="table" data-testid="executors">
        <thead>
          <tr>
            <th>Executor</th>
            <th>Liveness</th>
            <th>Slots</th>
            <th>Labels</th>
            {admin && <th>Change</th>}
          </tr>
        </thead>
        <tbody>
          {items.map((x) => (
            <ExecutorRow key={x.id} x={x} admin={admin} onChanged={ex.reload} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function QuotaRow({ team, q, admin, onSaved }: { team: string; q: TeamQuota | undefined; admin: boolean; onSaved: () => void }) {
  const [running, setRunning] = useState<string | null>(null);
  const [slots, setSlots] = useState<string | null>(null);
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const r0 = String(q?.max_running ?? 0);
  const s0 = String(q?.max_slots ?? 0);
  const dirty = (running !== null && running !== r0) || (slots !== null && slots !== s0);
  const save = async (e: Event) => {
    e.preventDefault();
    const r = Number(running ?? r0);
    const s = Number(slots ?? s0);
    for (const [v, f] of [
      [r, 'max_running'],
      [s, 'max_slots'],
    ] as const)
      if (!Number.isInteger(v) || v < 0 || v > 1000000) {
        setErr(new ApiError(400, 'EINVAL', 'a whole number, 0 for no limit', f));
        return;
      }
    setBusy(true);
    setErr(null);
    try {
      await api.putQuota(team, r, s);
      toast(`Team ${team}: at most ${r || 'any number of'} running, ${s || 'any number of'} slots`);
      setRunning(null);
      setSlots(null);
      onSaved();
    } catch (x) {
      setErr(x);
    } finally {
      setBusy(false);
    }
  };
  return (
    <tr data-team={team}>
      <td class="strong">{team}</td>
      {admin ? (
        <>
          <td>
            <div class={`field compact ${fieldError(err, 'max_running') ? 'has-error' : ''}`} data-field="max_running">
              <input type="number" min={0} aria-label={`Running instances at most, team ${team}`} value={running ?? r0} onInput={(e) => setRunning(val(e))} />
              {fieldError(err, 'max_running') && <div class="field-error">{fieldError(err, 'max_running')}</div>}
            </div>
          </td>
          <td>
            <div class={`field compact ${fieldError(err, 'max_slots') ? 'has-error' : ''}`} data-field="max_slots">
              <input type="number" min={0} aria-label={`Slots at most, team ${team}`} value={slots ?? s0} onInput={(e) => setSlots(val(e))} />
              {fieldError(err, 'max_slots') && <div class="field-error">{fieldError(err, 'max_slots')}</div>}
            </div>
          </td>
          <td class="nowrap">
            <form class="inline-form" onSubmit={save} noValidate>
              <button class="btn btn-small btn-primary" type="submit" disabled={!dirty || busy} aria-label={`Save the quota of ${team}`}>
                {busy ? <Spinner /> : null} Save
              </button>
            </form>
            {err && !fieldError(err, 'max_running') && !fieldError(err, 'max_slots') ? <ErrorBanner error={err} /> : null}
          </td>
        </>
      ) : (
        <>
          <td>{q?.max_running ? q.max_running : 'no limit'}</td>
          <td>{q?.max_slots ? q.max_slots : 'no limit'}</td>
        </>
      )}
    </tr>
  );
}

function Quotas({ admin }: { admin: boolean }) {
  const data = useAsync(async () => {
    const [teams, quotas] = await Promise.all([api.teams(), api.quotas()]);
    return { teams: teams.items.map((t) => t.name), quotas: quotas.items };
  }, []);
  if (data.error && !data.data) return <ErrorBanner error={data.error} onRetry={data.reload} />;
  if (!data.data) return <Loading what="quotas" />;
  const { teams, quotas } = data.data;
  if (teams.length === 0) return <Empty title="No teams yet" />;
  return (
    <div class="table-wrap">
      <table class="table" data-testid="quotas">
        <thead>
          <tr>
            <th>Team</th>
            <th>Running instances at most</th>
            <th>Slots at most</th>
            {admin && <th />}
          </tr>
        </thead>
        <tbody>
          {teams.map((t) => (
            <QuotaRow key={t} team={t} q={quotas.find((q) => q.team === t)} admin={admin} onSaved={data.reload} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

type LimitForm = Record<string, string>; // "memory.default" -> "512m"

function toForm(l: Limits | undefined): LimitForm {
  const f: LimitForm = {};
  for (const p of PARTS)
    for (const b of ['default', 'max'] as const) {
      const v = (l?.[p.key] as Record<string, unknown> | undefined)?.[b];
      f[`${p.key}.${b}`] = v === undefined || v === null ? '' : String(v);
    }
  return f;
}

function fromForm(f: LimitForm): Limits {
  const out: Record<string, Record<string, string | number>> = {};
  for (const p of PARTS)
    for (const b of ['default', 'max'] as const) {
      const v = (f[`${p.key}.${b}`] ?? '').trim();
      if (!v) continue;
      const num = p.key === 'cpu' || p.key === 'pids' ? Number(v) : NaN;
      (out[p.key] ??= {})[b] = Number.isFinite(num) ? num : v;
    }
  return out as Limits;
}

function TypeLimitsForm({ type, limits, admin, onSaved }: { type: string; limits: Limits | undefined; admin: boolean; onSaved: () => void }) {
  const [form, setForm] = useState<LimitForm>(() => toForm(limits));
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setErr(null);
    try {
      await api.putTypeLimits(type, fromForm(form));
      toast(`Limits of ${type} tasks saved`);
      onSaved();
    } catch (x) {
      setErr(x);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card pad" onSubmit={save} noValidate data-type-limits={type}>
      <h3>{type} tasks</h3>
      <div style={{ display: 'grid', gridTemplateColumns: 'repeat(2, minmax(0, 1fr))', gap: '0 16px' }}>
        {PARTS.map((p) =>
          (['default', 'max'] as const).map((b) => {
            const k = `${p.key}.${b}`;
            return (
              <Field key={k} label={`${p.label}, ${b === 'max' ? 'maximum' : 'default'}`} field={k} error={fieldError(err, `limits.${k}`)} hint={p.hint}>
                <input name={`${type}-${k}`} aria-label={`${type}: ${p.label}, ${b === 'max' ? 'maximum' : 'default'}`} value={form[k]} disabled={!admin} placeholder="none" onInput={(e) => setForm({ ...form, [k]: val(e) })} />
              </Field>
            );
          }),
        )}
      </div>
      {admin && (
        <button class="btn btn-primary" type="submit" disabled={busy}>
          {busy ? <Spinner /> : null} Save {type} limits
        </button>
      )}
      {err && !(err instanceof ApiError && err.field?.startsWith('limits.')) ? <ErrorBanner error={err} /> : null}
    </form>
  );
}

function TypeLimitsSection({ admin }: { admin: boolean }) {
  const lim = useAsync(() => api.typeLimits(), []);
  if (lim.error && !lim.data) return <ErrorBanner error={lim.error} onRetry={lim.reload} />;
  if (!lim.data) return <Loading what="limits" />;
  const items = lim.data.items;
  return (
    <div class="split">
      {TYPES.map((t) => (
        <TypeLimitsForm key={t} type={t} limits={items.find((x) => x.type === t)?.limits} admin={admin} onSaved={lim.reload} />
      ))}
    </div>
  );
}

export function ResourcesPage() {
  const me = useMe();
  const admin = me.role === 'admin';
  return (
    <div>
      <PageHead title="Resources" sub={admin ? 'Executors, team quotas and sandbox limits: what the scheduler may use.' : 'Executors, team quotas and sandbox limits (read only).'} />
      <section class="card pad">
        <h2>Executors</h2>
        <p class="muted small">A drained executor takes no new runs; what runs on it finishes. Slots and labels set here replace what the executor announces.</p>
        <Executors admin={admin} />
      </section>
      <section class="card pad">
        <h2>Team quotas</h2>
        <p class="muted small">At most this many of a team's instances run at once, using at most this many slots (0 = no limit). Instances beyond wait, with the quota as their reason.</p>
        <Quotas admin={admin} />
      </section>
      <section>
        <h2>Sandbox limits per task type</h2>
        <p class="muted small">A task spec above a maximum is refused when it is saved; a spec without a limit gets the default.</p>
        <TypeLimitsSection admin={admin} />
      </section>
    </div>
  );
}
