// designer.tsx - the task designer: one form for creating and editing a
// task, generated from the task spec JSON Schema (schema.ts). Each schema
// property becomes a widget chosen by its shape (enum -> select, integer ->
// number, object of fixed fields -> fieldset, map -> key/value rows, free
// object -> JSON editor); a few fields get a richer widget by name: the cron
// schedule (next fire times as you type), upstreams (task picker), pools
// (pool picker). The config section follows the chosen type's schema.
//
// Errors: the schema is checked in the browser as the user types (shown once
// a field was touched or a save was tried); the server's answer (error.field)
// is placed next to the same field. Saving an existing task sends If-Match
// with the version that was loaded, so a concurrent edit is a clear 409.
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError, type Pool, type Task, type TaskSpec } from '../api';
import { BackfillDialog } from '../components/backfill';
import { Confirm, ErrorBanner, Field, Link, Loading, PageHead, Spinner, toast, useAsync, val } from '../components/ui';
import { fmtRelative, fmtTime } from '../format';
import { navigate } from '../router';
import {
  configSchemaFor,
  constraintHint,
  fieldToPath,
  humanize,
  loadTaskSchema,
  resolve,
  typeNames,
  validate,
  type JSONSchema,
} from '../schema';
import { canEditTeam, useMe } from '../session';

type Obj = Record<string, unknown>;

/** Sections of the form; properties the schema gains later land in "More". */
const SECTIONS: { title: string; keys: string[]; desc?: string }[] = [
  { title: 'Basics', keys: ['name', 'team', 'type', 'description'] },
  { title: 'Schedule', keys: ['schedule', 'timezone', 'catch_up'], desc: 'When it fires. Leave the schedule empty for a task you run by hand or by backfill.' },
  { title: 'Dependencies', keys: ['upstreams'], desc: 'Tasks whose instance of the same cycle must finish first.' },
  { title: 'Resources', keys: ['pools', 'slots', 'max_parallel', 'priority'], desc: 'What one instance takes while it runs.' },
  { title: 'Retries and timeout', keys: ['retries', 'timeout'] },
  { title: 'Labels', keys: ['labels'] },
];

const TIMEZONES = ['UTC', 'Europe/London', 'Europe/Paris', 'Europe/Berlin', 'America/New_York', 'America/Chicago', 'America/Los_Angeles', 'Asia/Shanghai', 'Asia/Tokyo', 'Asia/Kolkata', 'Australia/Sydney'];

function getIn(o: unknown, path: string[]): unknown {
  let cur = o;
  for (const k of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Obj)[k];
  }
  return cur;
}

function setIn(o: Obj, path: string[], v: unknown): Obj {
  const [k, ...rest] = path;
  const copy: Obj = Array.isArray(o) ? ([...o] as unknown as Obj) : { ...o };
  if (rest.length === 0) {
    if (v === undefined) delete copy[k];
    else copy[k] = v;
  } else {
    const child = copy[k] && typeof copy[k] === 'object' ? (copy[k] as Obj) : {};
    const next = setIn(child, rest, v);
    if (!Array.isArray(next) && Object.keys(next).length === 0) delete copy[k];
    else copy[k] = next;
  }
  return copy;
}

interface Ctx {
  root: JSONSchema;
  spec: Obj;
  set: (path: string[], v: unknown) => void;
  err: (path: string) => string | null;
  touch: (path: string) => void;
  readOnly: boolean;
  teams: string[];
  pools: Pool[];
  selfName: string;
}

// ---- widgets ------------------------------------------------------------------

function Cron({ ctx }: { ctx: Ctx }) {
  const cron = (ctx.spec.schedule as string | undefined) ?? '';
  const tz = (ctx.spec.timezone as string | undefined) || 'UTC';
  const [times, setTimes] = useState<string[] | null>(null);
  const [cronErr, setCronErr] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    setCronErr(null);
    if (!cron.trim()) {
      setTimes(null);
      return;
    }
    const ctl = new AbortController();
    setBusy(true);
    const id = window.setTimeout(() => {
      api.scheduleNext(cron.trim(), tz, 5, ctl.signal).then(
        (r) => {
          setTimes(r.times);
          setBusy(false);
        },
        (e) => {
          if ((e as Error).name === 'AbortError') return;
          setTimes(null);
          setBusy(false);
          setCronErr(e instanceof ApiError ? e.message : String(e));
        },
      );
    }, 250);
    return () => {
      ctl.abort();
      window.clearTimeout(id);
    };
  }, [cron, tz]);
  const presets = [
    ['Every 15 min', '*/15 * * * *'],
    ['Hourly', '0 * * * *'],
    ['Daily 02:00', '0 2 * * *'],
    ['Mondays 06:00', '0 6 * * 1'],
  ];
  const err = ctx.err('schedule') ?? cronErr;
  return (
    <Field label="Schedule (cron)" field="schedule" error={err} class="span2">
      <input
        name="schedule"
        class="mono"
        placeholder="minute hour day month weekday — empty for manual"
        value={cron}
        disabled={ctx.readOnly}
        onInput={(e) => ctx.set(['schedule'], val(e) || undefined)}
        onBlur={() => ctx.touch('schedule')}
      />
      {!ctx.readOnly && (
        <div class="chips">
          {presets.map(([l, c]) => (
            <button type="button" key={c} class={`chip ${cron === c ? 'chip-on' : ''}`} onClick={() => ctx.set(['schedule'], c)}>
              {l}
            </button>
          ))}
        </div>
      )}
      <div class="cron-preview" data-testid="cron-preview">
        {!cron.trim() ? (
          <span class="muted">Manual only: runs when you backfill or rerun it.</span>
        ) : busy && !times ? (
          <span class="muted">
            <Spinner /> computing fire times…
          </span>
        ) : times ? (
          <>
            <div class="muted small">Next fire times ({tz}):</div>
            <ol class="fire-times">
              {times.map((t) => (
                <li key={t}>
                  {fmtTime(t)} <span class="muted small">{fmtRelative(t)}</span>
                </li>
              ))}
            </ol>
          </>
        ) : null}
      </div>
    </Field>
  );
}

function TaskPicker(props: { value: string; onChange: (v: string) => void; disabled: boolean; exclude: string; name: string }) {
  const [opts, setOpts] = useState<Task[]>([]);
  const listId = `tasks-${props.name.replace(/\W/g, '-')}`;
  useEffect(() => {
    const ctl = window.setTimeout(() => {
      api.tasks({ q: props.value, limit: 20 }).then(
        (p) => setOpts(p.items.filter((t) => t.name !== props.exclude)),
        () => setOpts([]),
      );
    }, 200);
    return () => window.clearTimeout(ctl);
  }, [props.value]);
  const known = opts.find((t) => t.name === props.value);
  return (
    <div class="picker">
      <input
        name={props.name}
        list={listId}
        placeholder="Search a task by name…"
        value={props.value}
        disabled={props.disabled}
        onInput={(e) => props.onChange(val(e))}
        autocomplete="off"
      />
      <datalist id={listId}>
        {opts.map((t) => (
          <option key={t.id} value={t.name}>
            {t.team} · {t.type}
          </option>
        ))}
      </datalist>
      {props.value && (
        <div class="picker-note small">
          {known ? (
            <span class="ok-text">✓ {known.team} · {known.type}</span>
          ) : (
            <span class="muted">no task with this name yet</span>
          )}
        </div>
      )}
    </div>
  );
}

function Upstreams({ ctx, schema }: { ctx: Ctx; schema: JSONSchema }) {
  const list = (ctx.spec.upstreams as Obj[] | undefined) ?? [];
  const item = resolve(ctx.root, schema.items);
  const kinds = (item.properties?.kind?.enum ?? ['strong']).map(String);
  const cycles = (item.properties?.cycle?.enum ?? []).map(String);
  const setList = (l: Obj[]) => ctx.set(['upstreams'], l.length ? l : undefined);
  const upd = (i: number, k: string, v: unknown) =>
    setList(list.map((u, j) => (j === i ? (v === undefined || v === '' ? Object.fromEntries(Object.entries(u).filter(([x]) => x !== k)) : { ...u, [k]: v }) : u)));
  return (
    <div class="span2" data-field="upstreams">
      {list.length === 0 && <div class="muted">No upstream: it runs on its schedule alone.</div>}
      {list.map((u, i) => {
        const kind = String(u.kind ?? '');
        const p = `upstreams.${i}`;
        return (
          <div class="upstream-row" key={i} data-upstream={i}>
            <Field label="Kind" field={`${p}.kind`} error={ctx.err(`${p}.kind`)}>
              <select value={kind} disabled={ctx.readOnly} onChange={(e) => upd(i, 'kind', val(e))} name={`${p}.kind`}>
                {kinds.map((k) => (
                  <option key={k} value={k}>
                    {k}
                  </option>
                ))}
              </select>
            </Field>
            {(kind === 'strong' || kind === 'weak') && (
              <Field label="Task" field={`${p}.task`} error={ctx.err(`${p}.task`)} class="grow">
                <TaskPicker
                  name={`${p}.task`}
                  value={String(u.task ?? '')}
                  exclude={ctx.selfName}
                  disabled={ctx.readOnly}
                  onChange={(v) => upd(i, 'task', v)}
                />
              </Field>
            )}
            {kind === 'data_unit' &&
              ['stream', 'business', 'interface'].map((k) => (
                <Field key={k} label={humanize(k)} field={`${p}.${k}`} error={ctx.err(`${p}.${k}`)}>
                  <input value={String(u[k] ?? '')} disabled={ctx.readOnly} onInput={(e) => upd(i, k, val(e))} />
                </Field>
              ))}
            {cycles.length > 0 && kind !== 'data_unit' && (
              <Field label="Cycle" field={`${p}.cycle`} error={ctx.err(`${p}.cycle`)}>
                <select value={String(u.cycle ?? '')} disabled={ctx.readOnly} onChange={(e) => upd(i, 'cycle', val(e) || undefined)}>
                  <option value="">default (same)</option>
                  {cycles.map((c) => (
                    <option key={c} value={c}>
                      {c}
                    </option>
                  ))}
                </select>
              </Field>
            )}
            {!ctx.readOnly && (
              <button type="button" class="icon-btn remove" aria-label="Remove upstream" onClick={() => setList(list.filter((_, j) => j !== i))}>
                ×
              </button>
            )}
          </div>
        );
      })}
      {!ctx.readOnly && (
        <button type="button" class="btn btn-small" onClick={() => setList([...list, { kind: 'strong', task: '' }])} data-testid="add-upstream">
          + Add upstream
        </button>
      )}
      {ctx.err('upstreams') && <div class="field-error">{ctx.err('upstreams')}</div>}
    </div>
  );
}

function Pools({ ctx }: { ctx: Ctx }) {
  const map = (ctx.spec.pools as Record<string, number> | undefined) ?? {};
  const entries = Object.entries(map);
  const setMap = (m: [string, number][]) => ctx.set(['pools'], m.length ? Object.fromEntries(m) : undefined);
  const unused = ctx.pools.filter((p) => !(p.name in map));
  return (
    <div class="span2" data-field="pools">
      <label class="field-label">Resource pools</label>
      {entries.length === 0 && <div class="muted small">Takes no pool tokens.</div>}
      {entries.map(([name, n], i) => {
        const pool = ctx.pools.find((p) => p.name === name);
        return (
          <div class="kv-row" key={name}>
            <span class="tag">{name}</span>
            <Field label="Tokens" field={`pools.${name}`} error={ctx.err(`pools.${name}`)}>
              <input
                type="number"
                min={1}
                value={n}
                disabled={ctx.readOnly}
                onInput={(e) => {
                  const v = val(e);
                  setMap(entries.map(([k, x], j) => [k, j === i ? (v === '' ? 0 : Number(v)) : x]));
                }}
              />
            </Field>
            <span class="muted small">
              {pool ? `${pool.used} of ${pool.capacity} in use` : 'unknown pool: an admin must create it'}
            </span>
            {!ctx.readOnly && (
              <button type="button" class="icon-btn" aria-label={`Remove pool ${name}`} onClick={() => setMap(entries.filter((_, j) => j !== i))}>
                ×
              </button>
            )}
          </div>
        );
      })}
      {!ctx.readOnly && (
        <select
          aria-label="Add a pool"
          value=""
          onChange={(e) => {
            const v = val(e);
            if (v) setMap([...entries, [v, 1]]);
          }}
        >
          <option value="">+ Take tokens from a pool…</option>
          {unused.map((p) => (
            <option key={p.name} value={p.name}>
              {p.name} ({p.capacity - p.used} of {p.capacity} free)
            </option>
          ))}
        </select>
      )}
      {ctx.err('pools') && <div class="field-error">{ctx.err('pools')}</div>}
    </div>
  );
}

function KeyValue({ ctx, path, label, hint }: { ctx: Ctx; path: string[]; label: string; hint?: string }) {
  const map = (getIn(ctx.spec, path) as Record<string, string> | undefined) ?? {};
  const [rows, setRows] = useState<[string, string][]>(() => Object.entries(map));
  useEffect(() => {
    const cur = Object.entries(map);
    if (JSON.stringify(Object.fromEntries(rows.filter(([k]) => k))) !== JSON.stringify(map)) setRows(cur);
  }, [JSON.stringify(map)]);
  const push = (r: [string, string][]) => {
    setRows(r);
    const o = Object.fromEntries(r.filter(([k]) => k));
    ctx.set(path, Object.keys(o).length ? o : undefined);
  };
  const p = path.join('.');
  return (
    <div class="span2" data-field={p}>
      <label class="field-label">{label}</label>
      {hint && <div class="field-hint">{hint}</div>}
      {rows.map(([k, v], i) => (
        <div class="kv-row" key={i}>
          <input placeholder="key" value={k} disabled={ctx.readOnly} onInput={(e) => push(rows.map((r, j) => (j === i ? [val(e), r[1]] : r)))} />
          <span class="muted">=</span>
          <input placeholder="value" value={v} disabled={ctx.readOnly} onInput={(e) => push(rows.map((r, j) => (j === i ? [r[0], val(e)] : r)))} />
          {!ctx.readOnly && (
            <button type="button" class="icon-btn" aria-label="Remove" onClick={() => push(rows.filter((_, j) => j !== i))}>
              ×
            </button>
          )}
          {k && ctx.err(`${p}.${k}`) && <div class="field-error">{ctx.err(`${p}.${k}`)}</div>}
        </div>
      ))}
      {!ctx.readOnly && (
        <button type="button" class="btn btn-small" onClick={() => setRows([...rows, ['', '']])}>
          + Add
        </button>
      )}
      {ctx.err(p) && <div class="field-error">{ctx.err(p)}</div>}
    </div>
  );
}

function StringList({ ctx, path, label }: { ctx: Ctx; path: string[]; label: string }) {
  const list = (getIn(ctx.spec, path) as string[] | undefined) ?? [];
  const p = path.join('.');
  return (
    <Field label={label} field={p} error={ctx.err(p)} hint="One per line." class="span2">
      <textarea
        rows={Math.min(6, Math.max(2, list.length + 1))}
        class="mono"
        value={list.join('\n')}
        disabled={ctx.readOnly}
        onInput={(e) => {
          const v = val(e);
          ctx.set(path, v === '' ? undefined : v.split('\n'));
        }}
      />
    </Field>
  );
}

function JsonObject({ ctx, path, label, hint }: { ctx: Ctx; path: string[]; label: string; hint?: string }) {
  const cur = getIn(ctx.spec, path);
  const [text, setText] = useState(() => JSON.stringify(cur ?? {}, null, 2));
  const [parseErr, setParseErr] = useState<string | null>(null);
  const p = path.join('.');
  return (
    <Field label={label} field={p} error={parseErr ?? ctx.err(p)} hint={hint} class="span2">
      <textarea
        rows={8}
        class="mono"
        value={text}
        disabled={ctx.readOnly}
        onInput={(e) => {
          const v = val(e);
          setText(v);
          try {
            const o = JSON.parse(v || '{}');
            if (!o || typeof o !== 'object' || Array.isArray(o)) throw new Error('must be a JSON object');
            setParseErr(null);
            ctx.set(path, o);
          } catch (x) {
            setParseErr(`not valid JSON: ${(x as Error).message}`);
          }
        }}
      />
    </Field>
  );
}

/** One schema property, widget chosen by shape. */
function Prop({ ctx, path, schema: s0, required }: { ctx: Ctx; path: string[]; schema: JSONSchema; required: boolean }) {
  const s = resolve(ctx.root, s0);
  const key = path[path.length - 1];
  const p = path.join('.');
  const label = humanize(key) + (required ? '' : '');
  const v = getIn(ctx.spec, path);
  const hint = [s.description, constraintHint(s)].filter(Boolean).join(' · ') || undefined;
  const common = { disabled: ctx.readOnly, onBlur: () => ctx.touch(p), name: p };

  if (p === 'schedule') return <Cron ctx={ctx} />;
  if (p === 'upstreams') return <Upstreams ctx={ctx} schema={s} />;
  if (p === 'pools') return <Pools ctx={ctx} />;
  if (p === 'team' && ctx.teams.length > 0 && !ctx.readOnly)
    return (
      <Field label="Team" field={p} error={ctx.err(p)}>
        <select {...common} value={String(v ?? '')} onChange={(e) => ctx.set(path, val(e) || undefined)}>
          <option value="">Choose a team…</option>
          {ctx.teams.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
      </Field>
    );
  if (p === 'type')
    return (
      <Field label="Type" field={p} error={ctx.err(p)}>
        <div class="segmented" role="radiogroup" aria-label="Type">
          {typeNames(ctx.root).map((t) => (
            <button
              type="button"
              key={t}
              role="radio"
              aria-checked={v === t}
              class={v === t ? 'on' : ''}
              disabled={ctx.readOnly}
              onClick={() => ctx.set(path, t)}
            >
              {t}
            </button>
          ))}
        </div>
      </Field>
    );
  if (s.enum)
    return (
      <Field label={label} field={p} error={ctx.err(p)} hint={hint}>
        <select {...common} value={v === undefined ? '' : String(v)} onChange={(e) => ctx.set(path, val(e) || undefined)}>
          {!required && <option value="">default</option>}
          {s.enum.map((x) => (
            <option key={String(x)} value={String(x)}>
              {String(x)}
            </option>
          ))}
        </select>
      </Field>
    );
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  if (type === 'integer' || type === 'number')
    return (
      <Field label={label} field={p} error={ctx.err(p)} hint={hint}>
        <input
          {...common}
          type="number"
          min={s.minimum}
          max={s.maximum}
          value={v === undefined ? '' : String(v)}
          onInput={(e) => {
            const x = val(e);
            ctx.set(path, x === '' ? undefined : Number(x));
          }}
        />
      </Field>
    );
  if (type === 'object') {
    if (s.properties && Object.keys(s.properties).length)
      return (
        <fieldset class="subgroup span2" data-field={p}>
          <legend>{label}</legend>
          <div class="grid2">
            {Object.entries(s.properties).map(([k, ps]) => (
              <Prop key={k} ctx={ctx} path={[...path, k]} schema={ps} required={(s.required ?? []).includes(k)} />
            ))}
          </div>
          {ctx.err(p) && <div class="field-error">{ctx.err(p)}</div>}
        </fieldset>
      );
    const valueSchema = s.patternProperties
      ? Object.values(s.patternProperties)[0]
      : typeof s.additionalProperties === 'object'
        ? s.additionalProperties
        : undefined;
    if (valueSchema && resolve(ctx.root, valueSchema).type === 'string')
      return <KeyValue ctx={ctx} path={path} label={label} hint={s.description} />;
    return <JsonObject ctx={ctx} path={path} label={label} hint={s.description} />;
  }
  if (type === 'array') {
    const it = resolve(ctx.root, s.items);
    if (it.type === 'string') return <StringList ctx={ctx} path={path} label={label} />;
    return <JsonObject ctx={ctx} path={path} label={label} hint={s.description} />;
  }
  const long = key === 'command' || key === 'description';
  const isDuration = s.pattern?.includes('(ms|s|m|h|d)');
  if (long)
    return (
      <Field label={label} field={p} error={ctx.err(p)} hint={key === 'command' ? 'Run by the executor with /bin/sh -c.' : undefined} class="span2">
        <textarea
          {...common}
          rows={key === 'command' ? 4 : 2}
          class={key === 'command' ? 'mono' : ''}
          value={String(v ?? '')}
          onInput={(e) => ctx.set(path, val(e) || undefined)}
        />
      </Field>
    );
  return (
    <Field label={label} field={p} error={ctx.err(p)} hint={isDuration ? 'e.g. 30s, 5m, 2h, 1d' : hint}>
      <input
        {...common}
        class={isDuration || key === 'name' ? 'mono' : ''}
        list={key === 'timezone' ? 'tz-list' : undefined}
        placeholder={key === 'timezone' ? 'UTC' : isDuration ? '10m' : ''}
        value={String(v ?? '')}
        onInput={(e) => ctx.set(path, val(e) || undefined)}
      />
      {key === 'timezone' && (
        <datalist id="tz-list">
          {TIMEZONES.map((z) => (
            <option key={z} value={z} />
          ))}
        </datalist>
      )}
    </Field>
  );
}

function Section(props: { title: string; desc?: string; children: ComponentChildren; id?: string }) {
  return (
    <section class="card form-section" id={props.id}>
      <div class="section-head">
        <h2>{props.title}</h2>
        {props.desc && <p class="muted">{props.desc}</p>}
      </div>
      <div class="grid2">{props.children}</div>
    </section>
  );
}

// ---- page -------------------------------------------------------------------

function DesignerForm({ root, task, pools }: { root: JSONSchema; task: Task | null; pools: Pool[] }) {
  const me = useMe();
  const editable = task ? canEditTeam(me, task.team) : me.role !== 'viewer';
  const myTeams = me.role === 'admin' ? [] : me.teams;
  const [spec, setSpec] = useState<Obj>(() =>
    task
      ? (JSON.parse(JSON.stringify(task.spec)) as Obj)
      : { type: 'shell', team: myTeams.length === 1 ? myTeams[0] : undefined, timezone: 'UTC', config: {} },
  );
  const [touched, setTouched] = useState<Set<string>>(new Set());
  const [tried, setTried] = useState(false);
  const [serverErr, setServerErr] = useState<ApiError | Error | null>(null);
  const [saving, setSaving] = useState(false);
  const [backfill, setBackfill] = useState(false);
  const [confirmDeactivate, setConfirmDeactivate] = useState(false);
  const version = useRef(task?.version);

  const errors = useMemo(() => validate(root, spec), [root, spec]);
  const serverPath = serverErr instanceof ApiError ? fieldToPath(serverErr.field) : '';
  const shown = (p: string) => tried || touched.has(p) || [...touched].some((t) => p.startsWith(`${t}.`));
  const ctx: Ctx = {
    root,
    spec,
    set: (path, v) => {
      setSpec((s) => setIn(s, path, v));
      setTouched((t) => new Set(t).add(path.join('.')));
      if (serverErr && serverPath && path.join('.') === serverPath) setServerErr(null);
    },
    err: (p) => (serverPath === p && serverErr ? serverErr.message : shown(p) ? (errors[p] ?? null) : null),
    touch: (p) => setTouched((t) => new Set(t).add(p)),
    readOnly: !editable,
    teams: me.role === 'admin' ? [] : me.teams,
    pools,
    selfName: String(spec.name ?? ''),
  };
  const type = String(spec.type ?? '');
  const configSchema = configSchemaFor(root, type);
  // Switching type resets config to what the new type needs.
  const lastType = useRef(type);
  useEffect(() => {
    if (lastType.current !== type) {
      lastType.current = type;
      setSpec((s) => ({ ...s, config: {} }));
    }
  }, [type]);

  const props = root.properties ?? {};
  const placed = new Set(SECTIONS.flatMap((s) => s.keys).concat(['config']));
  const extra = Object.keys(props).filter((k) => !placed.has(k));
  const nErr = Object.keys(errors).length;

  const focusField = (p: string) => {
    setTouched((t) => new Set(t).add(p));
    const el = document.querySelector(`[data-field="${CSS.escape(p)}"]`) as HTMLElement | null;
    el?.scrollIntoView({ block: 'center' });
    (el?.querySelector('input, select, textarea') as HTMLElement | null)?.focus();
  };

  const save = async (e: Event) => {
    e.preventDefault();
    setTried(true);
    setServerErr(null);
    if (nErr) {
      const first = document.querySelector('.field.has-error input, .field.has-error select, .field.has-error textarea') as HTMLElement | null;
      first?.focus();
      return;
    }
    setSaving(true);
    try {
      const body = spec as TaskSpec;
      if (task) {
        const t = await api.updateTask(task.id, body, version.current);
        version.current = t.version;
        toast(`Saved ${t.name}, version ${t.version}`);
        navigate(`/tasks/${t.id}`, true);
      } else {
        const t = await api.createTask(body);
        toast(`Created ${t.name}`);
        navigate(`/tasks/${t.id}`);
      }
    } catch (x) {
      setServerErr(x as Error);
    } finally {
      setSaving(false);
    }
  };

  const render = (k: string) =>
    props[k] ? <Prop key={k} ctx={ctx} path={[k]} schema={props[k]} required={(root.required ?? []).includes(k)} /> : null;
  const bannerErr =
    serverErr && !(serverErr instanceof ApiError && serverPath && document.querySelector(`[data-field="${CSS.escape(serverPath)}"]`))
      ? serverErr
      : null;

  return (
    <form onSubmit={save} noValidate class="designer" data-testid="designer">
      <PageHead
        title={task ? task.name : 'New task'}
        sub={
          task ? (
            <>
              <span class="tag">{task.team}</span> version {task.version} · created by {task.created_by} {fmtRelative(task.created_at)}
              {!task.active && <span class="tag tag-muted">deactivated</span>}
            </>
          ) : (
            'Describe what runs, when, and what it needs.'
          )
        }
        actions={
          <>
            {task && (
              <>
                <Link to={`/workflow/${task.id}`} class="btn btn-ghost">
                  Workflow graph
                </Link>
                <Link to={`/instances?task_id=${task.id}`} class="btn btn-ghost">
                  Instances
                </Link>
                {editable && task.schedule && (
                  <button type="button" class="btn btn-ghost" onClick={() => setBackfill(true)}>
                    Backfill…
                  </button>
                )}
                {editable && task.active && (
                  <button type="button" class="btn btn-ghost danger-text" onClick={() => setConfirmDeactivate(true)}>
                    Deactivate
                  </button>
                )}
              </>
            )}
            {editable && (
              <button class="btn btn-primary" type="submit" disabled={saving} data-testid="save-task">
                {saving ? <Spinner /> : null} {task ? 'Save new version' : 'Create task'}
              </button>
            )}
          </>
        }
      />
      {!editable && (
        <div class="banner banner-warn" data-testid="readonly-banner">
          {me.role === 'viewer'
            ? 'You are a viewer: tasks are read-only for you.'
            : `Read-only: this task belongs to team ${task?.team}, and you are not a member (your teams: ${me.teams.join(', ') || 'none'}).`}
        </div>
      )}
      {tried && nErr > 0 && (
        <div class="banner banner-error" role="alert">
          {nErr === 1 ? 'One field needs' : `${nErr} fields need`} attention before saving.
        </div>
      )}
      <ErrorBanner error={bannerErr} />
      <div class="designer-cols">
      <div>
      {SECTIONS.map((sec) => (
        <Section key={sec.title} title={sec.title} desc={sec.desc}>
          {sec.keys.map(render)}
        </Section>
      ))}
      <Section title={`${type || 'Type'} configuration`} desc={configSchema.description} id="config">
        {configSchema.properties ? (
          Object.entries(configSchema.properties).map(([k, ps]) => (
            <Prop key={`${type}.${k}`} ctx={ctx} path={['config', k]} schema={ps} required={(configSchema.required ?? []).includes(k)} />
          ))
        ) : (
          <JsonObject key={type} ctx={ctx} path={['config']} label="Config (JSON)" hint="Checked in full by the engine that runs this type." />
        )}
        {ctx.err('config') && <div class="field-error span2">{ctx.err('config')}</div>}
      </Section>
      {extra.length > 0 && <Section title="More">{extra.map(render)}</Section>}
      </div>
      <aside class="card pad spec-panel" data-testid="spec-panel">
        <h2>Spec</h2>
        <div class={`check-line ${nErr ? 'check-bad' : 'check-ok'}`}>
          {nErr ? `✕ ${nErr} problem${nErr === 1 ? '' : 's'}` : '✓ valid against task.schema.json'}
        </div>
        {nErr > 0 && (
          <ul class="err-list">
            {Object.entries(errors)
              .slice(0, 8)
              .map(([p, m]) => (
                <li key={p}>
                  <button type="button" onClick={() => focusField(p)}>
                    {p}
                  </button>
                  : {m}
                </li>
              ))}
          </ul>
        )}
        <pre class="spec-json mono">{JSON.stringify(spec, null, 2)}</pre>
      </aside>
      </div>
      {backfill && task && <BackfillDialog task={task} onClose={() => setBackfill(false)} />}
      {confirmDeactivate && task && (
        <Confirm
          title={`Deactivate ${task.name}?`}
          body="It stops being scheduled. Its history stays; you can still read it."
          confirmLabel="Deactivate"
          danger
          onClose={() => setConfirmDeactivate(false)}
          onConfirm={async () => {
            await api.deactivateTask(task.id, 'deactivated in the designer');
            toast(`${task.name} deactivated`);
            navigate('/tasks');
          }}
        />
      )}
    </form>
  );
}

export function DesignerPage({ id }: { id: number | null }) {
  const data = useAsync(
    async () => {
      const [root, task, pools] = await Promise.all([
        loadTaskSchema(),
        id ? api.task(id) : Promise.resolve(null),
        api.pools().then(
          (p) => p.items,
          () => [] as Pool[],
        ),
      ]);
      return { root, task, pools };
    },
    [id],
  );
  if (data.error) return <ErrorBanner error={data.error} onRetry={data.reload} />;
  if (!data.data || data.loading) return <Loading what={id ? 'the task' : 'the designer'} />;
  return <DesignerForm key={`${id}-${data.data.task?.version ?? 0}`} root={data.data.root} task={data.data.task} pools={data.data.pools} />;
}
