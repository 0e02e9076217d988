// quality.tsx - the designer's editor of quality checks: the `checks` of a
// task of type quality and the `quality` key of a transfer job (mounted by
// Prop for config.checks, and by the transfer form for config.quality). One
// row per check: its name, kind, the fields the kind needs (table, column,
// key columns, query) and its threshold, named as wormhole names it.
// docs/wormhole.md "Quality checks" has the meaning of each kind.
import { Field, val } from '../../components/ui';
import { getIn, type Ctx, type Obj } from './state';

type Kind = 'row_count' | 'null_ratio' | 'unique' | 'freshness' | 'sql';

const KINDS: { kind: Kind; label: string; limit: string; limitLabel: string; hint: string }[] = [
  { kind: 'row_count', label: 'Row count', limit: 'max_diff', limitLabel: 'Max difference', hint: 'Rows sent against rows the target confirmed.' },
  { kind: 'null_ratio', label: 'Null ratio', limit: 'max_ratio', limitLabel: 'Max ratio (0–1)', hint: 'NULLs in the column ÷ rows.' },
  { kind: 'unique', label: 'Key uniqueness', limit: 'max_duplicates', limitLabel: 'Max duplicates', hint: 'Rows beyond the first of each key.' },
  { kind: 'freshness', label: 'Freshness', limit: 'max_age_s', limitLabel: 'Max age (seconds)', hint: 'Seconds since the newest value.' },
  { kind: 'sql', label: 'SQL assertion', limit: 'max_rows', limitLabel: 'Max rows', hint: 'Rows the query returns (the offending rows).' },
];

const kindOf = (k: unknown) => KINDS.find((x) => x.kind === k) ?? KINDS[KINDS.length - 1];

/** The fields a check of this kind keeps when its kind changes. */
function reshape(c: Obj, kind: Kind, transfer: boolean): Obj {
  const out: Obj = { name: c.name, kind };
  if (transfer && c.writer) out.writer = c.writer;
  if (kind === 'null_ratio' || kind === 'unique' || kind === 'freshness') {
    if (c.table) out.table = c.table;
  }
  if ((kind === 'null_ratio' || kind === 'freshness') && c.column) out.column = c.column;
  if (kind === 'unique' && Array.isArray(c.columns)) out.columns = c.columns;
  if (kind === 'sql' && c.query) out.query = c.query;
  if (kind === 'freshness') out.max_age_s = 86400;
  return out;
}

export function QualityChecks({ ctx, path, transfer = false }: { ctx: Ctx; path: string[]; transfer?: boolean }) {
  const p = path.join('.');
  const raw = getIn(ctx.spec, path);
  const checks: Obj[] = Array.isArray(raw) ? (raw as Obj[]) : [];
  const kinds = transfer ? KINDS : KINDS.filter((k) => k.kind !== 'row_count');
  const put = (next: Obj[]) => ctx.set(path, next.length || !transfer ? next : undefined);
  const setCheck = (i: number, c: Obj) => put(checks.map((x, j) => (j === i ? c : x)));
  const setField = (i: number, key: string, v: unknown) => {
    const c = { ...checks[i] };
    if (v === undefined || v === '') delete c[key];
    else c[key] = v;
    setCheck(i, c);
  };
  const add = () => {
    const used = new Set(checks.map((c) => String(c.name)));
    let n = checks.length + 1;
    while (used.has(`check_${n}`)) n++;
    put([...checks, transfer ? { name: `check_${n}`, kind: 'row_count' } : { name: `check_${n}`, kind: 'sql', query: '' }]);
  };
  const err = (i: number, key?: string) => ctx.err(key ? `${p}.${i}.${key}` : `${p}.${i}`);

  return (
    <fieldset class="span2 quality-checks" data-field={p} data-testid="quality-checks">
      <legend>{transfer ? 'Quality checks of the target' : 'Quality checks'}</legend>
      <p class="muted small">
        {transfer
          ? 'Run after the load, before the commit where the writer allows it. A failed check fails the run with reason quality.'
          : 'A failed check fails the run with reason quality. Every check but SQL names its table.'}
      </p>
      {ctx.err(p) && <div class="field-error">{ctx.err(p)}</div>}
      {checks.length === 0 && <div class="muted">No checks yet.</div>}
      {checks.map((c, i) => {
        const k = kindOf(c.kind);
        const needsTable = k.kind === 'null_ratio' || k.kind === 'unique' || k.kind === 'freshness';
        const limit = c[k.limit];
        return (
          <div class="card pad quality-check grid2" key={i} data-check={String(c.name ?? i)}>
            <Field label="Name" error={err(i, 'name')} hint="a-z, 0-9 and _; names its statistics">
              <input
                class="mono"
                value={String(c.name ?? '')}
                disabled={ctx.readOnly}
                onInput={(e) => setField(i, 'name', val(e))}
                onBlur={() => ctx.touch(`${p}.${i}.name`)}
              />
            </Field>
            <Field label="Kind" error={err(i, 'kind')} hint={k.hint}>
              <select value={k.kind} disabled={ctx.readOnly} onChange={(e) => setCheck(i, reshape(c, val(e) as Kind, transfer))}>
                {kinds.map((x) => (
                  <option key={x.kind} value={x.kind}>
                    {x.label}
                  </option>
                ))}
              </select>
            </Field>
            {needsTable && (
              <Field label="Table" error={err(i, 'table')} hint={transfer ? "Empty: the writer's table" : undefined}>
                <input class="mono" value={String(c.table ?? '')} disabled={ctx.readOnly} placeholder={transfer ? "the writer's table" : 'schema.table'} onInput={(e) => setField(i, 'table', val(e))} />
              </Field>
            )}
            {(k.kind === 'null_ratio' || k.kind === 'freshness') && (
              <Field label="Column" error={err(i, 'column')}>
                <input class="mono" value={String(c.column ?? '')} disabled={ctx.readOnly} onInput={(e) => setField(i, 'column', val(e))} />
              </Field>
            )}
            {k.kind === 'unique' && (
              <Field label="Key columns" error={err(i, 'columns')} hint="Comma-separated">
                <input
                  class="mono"
                  value={Array.isArray(c.columns) ? (c.columns as string[]).join(', ') : ''}
                  disabled={ctx.readOnly}
                  onInput={(e) => {
                    const cols = val(e)
                      .split(',')
                      .map((s) => s.trim())
                      .filter(Boolean);
                    setField(i, 'columns', cols.length ? cols : undefined);
                  }}
                />
              </Field>
            )}
            {k.kind === 'sql' && (
              <Field label="Query" error={err(i, 'query')} hint="A SELECT returning the offending rows" class="span2">
                <textarea class="mono" rows={3} value={String(c.query ?? '')} disabled={ctx.readOnly} onInput={(e) => setField(i, 'query', val(e))} />
              </Field>
            )}
            {transfer && (
              <Field label="Writer" error={err(i, 'writer')} hint="Empty: the first writer">
                <input class="mono" value={String(c.writer ?? '')} disabled={ctx.readOnly} onInput={(e) => setField(i, 'writer', val(e))} />
              </Field>
            )}
            <Field label={k.limitLabel} error={err(i, k.limit)}>
              <input
                type="number"
                min={k.kind === 'freshness' ? 1 : 0}
                max={k.kind === 'null_ratio' ? 1 : undefined}
                step={k.kind === 'null_ratio' ? 0.01 : 1}
                value={limit === undefined ? '' : String(limit)}
                placeholder={k.kind === 'freshness' ? 'required' : '0'}
                disabled={ctx.readOnly}
                onInput={(e) => {
                  const s = val(e);
                  setField(i, k.limit, s === '' ? undefined : Number(s));
                }}
              />
            </Field>
            {!ctx.readOnly && (
              <div class="span2 right">
                <button type="button" class="btn btn-ghost danger-text" onClick={() => put(checks.filter((_, j) => j !== i))} aria-label={`Remove check ${String(c.name ?? i + 1)}`}>
                  Remove
                </button>
              </div>
            )}
          </div>
        );
      })}
      {!ctx.readOnly && (
        <button type="button" class="btn" onClick={add} data-testid="add-quality-check">
          Add check
        </button>
      )}
    </fieldset>
  );
}
