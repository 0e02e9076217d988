// pools.tsx - the resource pools of a task in the designer: the pools it
// takes tokens from, how many, and how busy each pool is now.
import { useId } from 'preact/hooks';
import { Field, val } from '../../components/ui';
import type { Ctx } from './state';

export function Pools({ ctx }: { ctx: Ctx }) {
  const map = (ctx.spec.pools as Record<string, number> | undefined) ?? {};
  const entries = Object.entries(map);
  const setMap = (m: [string, number][]) => ctx.set(['pools'], m.length ? Object.fromEntries(m) : undefined);
  const unused = ctx.pools.filter((p) => !(p.name in map));
  const id = useId();
  return (
    <div class="span2" data-field="pools" role="group" aria-labelledby={id}>
      <div class="field-label" id={id}>
        Resource pools
      </div>
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
