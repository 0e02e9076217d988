// upstreams.tsx - the dependency editor of the designer: one row per
// upstream (kind, the task picked by name or the data unit, the cycle),
// with a task picker that searches tasks as the user types.
import { useEffect, useState } from 'preact/hooks';
import { api, type Task } from '../../api';
import { Field, val } from '../../components/ui';
import { humanize, resolve, type JSONSchema } from '../../schema';
import type { Ctx, Obj } from './state';

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

export function Upstreams({ ctx, schema }: { ctx: Ctx; schema: JSONSchema }) {
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
