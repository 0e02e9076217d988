// alerts-common.tsx - what the alerts pages share: the event names a rule
// can watch (with what each means), severity and delivery badges, the scope
// picker (an ARIA 1.2 combobox whose names come from the list of the chosen
// kind: tasks by GET /tasks/suggest as one types, workflows, teams, streams
// and executors from their lists, filtered here; "*" is every one of the
// kind), and the dialog that silences a rule or a scope for a while.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, type AlertEvent, type AlertRule, type AlertScopeKind, type AlertSeverity, type DeliveryState } from '../api';
import { ErrorBanner, Field, Modal, Spinner, toast, val } from '../components/ui';
import { useMe } from '../session';
import '../components/objects.css';
import './alerts.css';

export const SCOPE_KINDS: { id: AlertScopeKind; label: string }[] = [
  { id: 'task', label: 'Task' },
  { id: 'workflow', label: 'Workflow' },
  { id: 'team', label: 'Team' },
  { id: 'stream', label: 'Stream' },
  { id: 'executor', label: 'Executor' },
];

export interface EventInfo {
  id: AlertEvent;
  label: string;
  help: string;
}

/** The events a rule watches, in groups, as the scheduler names them. */
export const EVENT_GROUPS: { title: string; events: EventInfo[] }[] = [
  {
    title: 'Runs',
    events: [
      { id: 'failed', label: 'Failed', help: 'after the last retry (or every attempt, see below)' },
      { id: 'retried', label: 'Retried', help: 'an attempt failed and a retry is scheduled' },
      { id: 'timed_out', label: 'Timed out', help: 'an attempt ran past its timeout' },
      { id: 'killed', label: 'Killed', help: 'an instance was killed' },
      { id: 'recovered', label: 'Recovered', help: 'success after a failed cycle or attempt' },
    ],
  },
  {
    title: 'Deadlines',
    events: [
      { id: 'deadline_start', label: 'Not started by its deadline', help: "the task spec's deadlines.start_by passed" },
      { id: 'deadline_finish', label: 'Not finished by its deadline', help: "the task spec's deadlines.finish_by passed" },
    ],
  },
  {
    title: 'Data',
    events: [
      { id: 'unit_late', label: 'Data unit late', help: "a stream's unit not complete by its deadline" },
      { id: 'unit_unreconciled', label: 'Data unit not reconciled', help: "a stream's unit not reconciled by its deadline" },
      { id: 'dirty_rows', label: 'Dirty rows', help: 'a transfer attempt with more dirty rows than the threshold' },
    ],
  },
  {
    title: 'Platform',
    events: [
      { id: 'executor_lost', label: 'Executor lost', help: 'an executor went away without a clean stop' },
      { id: 'pool_starved', label: 'Pool starved', help: 'queued work and no free slot for the given minutes' },
    ],
  },
];

const EVENT_LABEL: Record<string, string> = Object.fromEntries(EVENT_GROUPS.flatMap((g) => g.events.map((e) => [e.id, e.label])));
EVENT_LABEL.test = 'Test message';

export const EVENT_IDS = EVENT_GROUPS.flatMap((g) => g.events.map((e) => e.id));

export function eventLabel(e: string): string {
  return EVENT_LABEL[e] ?? e;
}

export const SEVERITIES: AlertSeverity[] = ['info', 'warning', 'critical'];

export function SeverityBadge({ severity }: { severity: string }) {
  return (
    <span class={`badge sev sev-${severity}`} data-severity={severity}>
      <span class="dot" />
      {severity}
    </span>
  );
}

const DELIVERY_LABEL: Record<DeliveryState, string> = {
  pending: 'pending',
  sending: 'sending',
  delivered: 'delivered',
  failed: 'failed',
};

export function DeliveryBadge({ state }: { state: DeliveryState }) {
  return (
    <span class={`badge dlv dlv-${state}`} data-delivery-state={state}>
      <span class="dot" />
      {DELIVERY_LABEL[state] ?? state}
    </span>
  );
}

/** "300s" -> "5 min": a period in seconds as people say it. */
export function fmtSeconds(s: number): string {
  if (!s) return 'none';
  if (s % 86400 === 0) return `${s / 86400} d`;
  if (s % 3600 === 0) return `${s / 3600} h`;
  if (s % 60 === 0) return `${s / 60} min`;
  return `${s} s`;
}

/** The scope of a rule or silence in words: "workflow daily", "every task". */
export function scopeText(kind: string | null | undefined, scope: string | null | undefined): string {
  if (!kind) return '';
  return scope === '*' ? `every ${kind}` : `${kind} ${scope ?? ''}`;
}

let pickSeq = 0;

/** Names of the kind that start with or contain q, at most 12. */
async function suggest(kind: AlertScopeKind, q: string, signal: AbortSignal): Promise<{ name: string; note?: string }[]> {
  const needle = q.trim().toLowerCase();
  const match = (n: string) => !needle || n.toLowerCase().includes(needle);
  let names: { name: string; note?: string }[] = [];
  if (kind === 'task') names = (await api.suggestTasks(q.trim(), 12, signal)).items.map((t) => ({ name: t.name, note: t.team }));
  else if (kind === 'workflow') names = (await api.workflowNames()).items.map((w) => ({ name: String(w.name), note: w.team }));
  else if (kind === 'team') names = (await api.teams()).items.map((t) => ({ name: t.name }));
  else if (kind === 'stream') names = (await api.streams()).items.map((s) => ({ name: String(s.name) }));
  else if (kind === 'executor') names = (await api.executors()).items.map((x) => ({ name: String(x.name ?? x.id) }));
  const all = [{ name: '*', note: `every ${kind}` }, ...names.filter((n) => match(n.name))];
  return all.filter((n) => n.name !== '*' || !needle || needle === '*').slice(0, 13);
}

/**
 * The scope of a rule or silence: a combobox of the names of the chosen
 * kind, filtered as one types; any typed name is kept as it is (a task made
 * later, an executor not running now).
 */
export function ScopePicker(props: { kind: AlertScopeKind; value: string; onChange: (v: string) => void; id?: string; disabled?: boolean; label: string }) {
  const [base] = useState(() => props.id ?? `scopepick-${++pickSeq}`);
  const [open, setOpen] = useState(false);
  const [items, setItems] = useState<{ name: string; note?: string }[]>([]);
  const [active, setActive] = useState(-1);
  const [busy, setBusy] = useState(false);
  const abort = useRef<AbortController | null>(null);
  const timer = useRef<number | undefined>(undefined);
  const blurTimer = useRef<number | undefined>(undefined);
  const fetchFor = (q: string) => {
    window.clearTimeout(timer.current);
    timer.current = window.setTimeout(async () => {
      abort.current?.abort();
      const ac = new AbortController();
      abort.current = ac;
      setBusy(true);
      try {
        const r = await suggest(props.kind, q, ac.signal);
        if (ac.signal.aborted) return;
        setItems(r);
        setActive(r.length ? 0 : -1);
      } catch (e) {
        if ((e as Error).name !== 'AbortError') setItems([]);
      } finally {
        if (abort.current === ac) setBusy(false);
      }
    }, 120);
  };
  useEffect(() => () => (window.clearTimeout(timer.current), window.clearTimeout(blurTimer.current), abort.current?.abort()), []);
  useEffect(() => setItems([]), [props.kind]);
  const pick = (n: string) => {
    setOpen(false);
    props.onChange(n);
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'ArrowDown') {
      e.preventDefault();
      if (!open) {
        setOpen(true);
        fetchFor(props.value);
      } else setActive((a) => Math.min(items.length - 1, a + 1));
    } else if (e.key === 'ArrowUp') {
      e.preventDefault();
      setActive((a) => Math.max(0, a - 1));
    } else if (e.key === 'Enter') {
      if (open && active >= 0 && items[active]) {
        e.preventDefault();
        pick(items[active].name);
      }
    } else if (e.key === 'Escape' && open) {
      e.preventDefault();
      e.stopPropagation();
      setOpen(false);
    }
  };
  const listId = `${base}-list`;
  return (
    <div class="taskpick scopepick">
      <input
        id={base}
        type="text"
        role="combobox"
        aria-autocomplete="list"
        aria-expanded={open}
        aria-controls={listId}
        aria-activedescendant={open && active >= 0 ? `${base}-opt-${active}` : undefined}
        autocomplete="off"
        class="mono"
        disabled={props.disabled}
        placeholder={`a ${props.kind} name, or * for every ${props.kind}`}
        value={props.value}
        data-testid="scope-input"
        onInput={(e) => {
          const v = val(e);
          props.onChange(v);
          setOpen(true);
          fetchFor(v);
        }}
        onFocus={() => {
          window.clearTimeout(blurTimer.current);
          setOpen(true);
          fetchFor(props.value);
        }}
        onBlur={() => (blurTimer.current = window.setTimeout(() => setOpen(false), 150))}
        onKeyDown={onKey}
      />
      {open && (
        <ul class="taskpick-list" id={listId} role="listbox" aria-label={`${props.label} suggestions`}>
          {items.length === 0 ? (
            <li class="taskpick-empty" role="option" aria-disabled="true" aria-selected="false">
              {busy ? 'Searching…' : `No ${props.kind} matches`}
            </li>
          ) : (
            items.map((t, i) => (
              <li
                key={t.name}
                id={`${base}-opt-${i}`}
                role="option"
                aria-selected={i === active}
                class={i === active ? 'active' : ''}
                data-scope-option={t.name}
                onMouseDown={(e) => {
                  e.preventDefault();
                  pick(t.name);
                }}
              >
                <span class="strong mono">{t.name}</span> {t.note && <span class="muted small">{t.note}</span>}
              </li>
            ))
          )}
        </ul>
      )}
    </div>
  );
}

export const DURATIONS = [
  { label: '30 minutes', v: '30m' },
  { label: '1 hour', v: '1h' },
  { label: '2 hours', v: '2h' },
  { label: '4 hours', v: '4h' },
  { label: '8 hours', v: '8h' },
  { label: '1 day', v: '24h' },
  { label: '3 days', v: '72h' },
  { label: '1 week', v: '168h' },
];

/**
 * Silence a rule, or a scope (every rule's alerts about it), for a
 * duration. While a silence covers them, alerts are still recorded (state
 * silenced) but nothing is sent.
 */
export function SilenceDialog(props: {
  rule?: Pick<AlertRule, 'id' | 'name' | 'scope_kind' | 'scope'> | null;
  scope?: { kind: AlertScopeKind; scope: string } | null;
  onClose: () => void;
  onDone?: () => void;
}) {
  const me = useMe();
  const start = props.rule ? 'rule' : 'scope';
  const [what, setWhat] = useState<'rule' | 'scope'>(start);
  const [kind, setKind] = useState<AlertScopeKind>(props.scope?.kind ?? props.rule?.scope_kind ?? 'task');
  const [scope, setScope] = useState(props.scope?.scope ?? props.rule?.scope ?? '');
  const [duration, setDuration] = useState('2h');
  const [reason, setReason] = useState('');
  // A scope silence belongs to a team: a developer of several teams says
  // which (an admin's may belong to none; a team's silence is that team's).
  const pickTeam = me.role === 'developer' && me.teams.length > 1;
  const [team, setTeam] = useState('');
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const fe = (f: string) => (err instanceof ApiError && err.field === f ? err.message : null);
  const go = async (e?: Event) => {
    e?.preventDefault();
    setErr(null);
    if (what === 'scope' && !scope.trim()) {
      setErr(new ApiError(400, 'EINVAL', `name the ${kind}, or * for every ${kind}`, 'scope'));
      return;
    }
    setBusy(true);
    try {
      await api.createAlertSilence({
        ...(what === 'rule' && props.rule ? { rule_id: props.rule.id } : { scope_kind: kind, scope: scope.trim(), ...(team && kind !== 'team' ? { team } : {}) }),
        duration,
        ...(reason.trim() ? { reason: reason.trim() } : {}),
      });
      toast(`Silenced ${what === 'rule' && props.rule ? `rule ${props.rule.name}` : scopeText(kind, scope.trim())} for ${DURATIONS.find((d) => d.v === duration)?.label ?? duration}`);
      props.onDone?.();
      props.onClose();
    } catch (x) {
      setErr(x);
      setBusy(false);
    }
  };
  return (
    <Modal
      title="Silence alerts"
      onClose={props.onClose}
      footer={
        <>
          <button class="btn" type="button" onClick={props.onClose} disabled={busy}>
            Cancel
          </button>
          <button class="btn btn-primary" type="button" onClick={() => go()} disabled={busy} data-testid="silence-confirm">
            {busy ? <Spinner /> : null} Silence
          </button>
        </>
      }
    >
      <form onSubmit={go} noValidate data-testid="silence-form">
        <p class="muted small">Alerts a silence covers are still recorded in the history, marked silenced; no message is sent for them.</p>
        {props.rule && (
          <fieldset class="subgroup">
            <legend>What to silence</legend>
            <label class="check-line">
              <input type="radio" name="silence-what" checked={what === 'rule'} onChange={() => setWhat('rule')} />
              <span>
                The rule <strong>{props.rule.name}</strong>
              </span>
            </label>
            <label class="check-line">
              <input type="radio" name="silence-what" checked={what === 'scope'} onChange={() => setWhat('scope')} />
              <span>A scope: every rule's alerts about it</span>
            </label>
          </fieldset>
        )}
        {what === 'scope' && (
          <div class="grid2">
            <Field label="Scope kind" field="scope_kind" error={fe('scope_kind')}>
              <select value={kind} onChange={(e) => setKind(val(e) as AlertScopeKind)}>
                {SCOPE_KINDS.map((k) => (
                  <option key={k.id} value={k.id}>
                    {k.label}
                  </option>
                ))}
              </select>
            </Field>
            <Field label="Scope" field="scope" error={fe('scope')} hint="A name, or * for every one">
              <ScopePicker kind={kind} value={scope} onChange={setScope} label="Scope" />
            </Field>
            {pickTeam && kind !== 'team' && (
              <Field label="Team" field="team" error={fe('team')} hint="The team whose silence this is">
                <select value={team} onChange={(e) => setTeam(val(e))}>
                  <option value="">Choose a team…</option>
                  {me.teams.map((t) => (
                    <option key={t} value={t}>
                      {t}
                    </option>
                  ))}
                </select>
              </Field>
            )}
          </div>
        )}
        <div class="grid2">
          <Field label="For" field="duration" error={fe('duration') ?? fe('ends_at')}>
            <select value={duration} onChange={(e) => setDuration(val(e))} data-testid="silence-duration">
              {DURATIONS.map((d) => (
                <option key={d.v} value={d.v}>
                  {d.label}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Reason (optional)" field="reason" error={fe('reason')}>
            <input value={reason} maxLength={500} onInput={(e) => setReason(val(e))} placeholder="maintenance of the warehouse" />
          </Field>
        </div>
        {err && !fe('scope') && !fe('scope_kind') && !fe('duration') && !fe('ends_at') && !fe('reason') && !(pickTeam && fe('team')) ? <ErrorBanner error={err} /> : null}
      </form>
    </Modal>
  );
}
