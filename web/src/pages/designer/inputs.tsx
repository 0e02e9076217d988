// inputs.tsx - the designer's generic widgets for schema shapes that are not
// a single input: a string map as key/value rows, a string list as lines,
// and a free object as a JSON editor.
import { useEffect, useId, useState } from 'preact/hooks';
import { Field, val } from '../../components/ui';
import { getIn, type Ctx } from './state';

export function KeyValue({ ctx, path, label, hint }: { ctx: Ctx; path: string[]; label: string; hint?: string }) {
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
  const id = useId();
  return (
    <div class="span2" data-field={p} role="group" aria-labelledby={id}>
      <div class="field-label" id={id}>
        {label}
      </div>
      {hint && <div class="field-hint">{hint}</div>}
      {rows.map(([k, v], i) => (
        <div class="kv-row" key={i}>
          <input placeholder="key" aria-label={`${label}: key ${i + 1}`} value={k} disabled={ctx.readOnly} onInput={(e) => push(rows.map((r, j) => (j === i ? [val(e), r[1]] : r)))} />
          <span class="muted">=</span>
          <input placeholder="value" aria-label={`${label}: value ${i + 1}`} value={v} disabled={ctx.readOnly} onInput={(e) => push(rows.map((r, j) => (j === i ? [r[0], val(e)] : r)))} />
          {!ctx.readOnly && (
            <button type="button" class="icon-btn" aria-label={`Remove ${label.toLowerCase()} ${i + 1}`} onClick={() => push(rows.filter((_, j) => j !== i))}>
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

export function StringList({ ctx, path, label }: { ctx: Ctx; path: string[]; label: string }) {
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

export function JsonObject({ ctx, path, label, hint }: { ctx: Ctx; path: string[]; label: string; hint?: string }) {
  const cur = getIn(ctx.spec, path);
  const [text, setText] = useState(() => JSON.stringify(cur ?? {}, null, 2));
  const [parseErr, setParseErr] = useState<string | null>(null);
  const p = path.join('.');
  // A change made by another widget of the same value (the quality checks of
  // a transfer) shows here too, unless the text is being typed and invalid.
  const curText = JSON.stringify(cur ?? {});
  useEffect(() => {
    try {
      if (JSON.stringify(JSON.parse(text || '{}')) === curText) return;
    } catch {
      return;
    }
    setText(JSON.stringify(cur ?? {}, null, 2));
  }, [curText]);
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
