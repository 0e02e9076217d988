// parameters.tsx - a task's named parameters in the designer: one row per
// parameter (name, default, description), and the help on the substitutions
// the config's strings may use (the language of lib/orr_subst: halleyd checks
// it at save, executord substitutes at run time).
import { Field, val } from '../../components/ui';
import type { Ctx } from './state';

type Param = { default?: string; description?: string };

export const SUBST_HELP =
  'Use ${name} in the command, args, env or any config text; ${schedule_time:%Y%m%d} formats the schedule time in the task\'s time zone; built-ins: ${task}, ${task_id}, ${instance_id}, ${attempt}, ${version}, ${schedule_time}. $${ writes a literal ${ (for a shell variable). Halleyd checks them at save; executord substitutes them when the attempt starts. A backfill or an instance can override the values.';

export function Parameters({ ctx }: { ctx: Ctx }) {
  const map = (ctx.spec.parameters as Record<string, Param> | undefined) ?? {};
  const entries = Object.entries(map);
  const setAll = (list: [string, Param][]) => ctx.set(['parameters'], list.length ? Object.fromEntries(list) : undefined);
  const setOne = (i: number, name: string, p: Param) => setAll(entries.map((e, j) => (j === i ? [name, p] : e)));
  const clean = (p: Param): Param => Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined && v !== '')) as Param;
  return (
    <div class="span2" data-field="parameters" data-testid="parameters">
      {entries.length === 0 && <div class="muted small">No parameters: the config's text runs as written (built-ins still apply).</div>}
      {entries.map(([name, p], i) => (
        <div class="kv-row" key={i} data-testid={`param-${name}`}>
          <Field label="Name" field={`parameters.${name}`} error={ctx.err(`parameters.${name}`)}>
            <input class="mono" value={name} disabled={ctx.readOnly} onInput={(e) => setOne(i, val(e), p)} />
          </Field>
          <Field label="Default" field={`parameters.${name}.default`} error={ctx.err(`parameters.${name}.default`)}>
            <input class="mono" value={p.default ?? ''} disabled={ctx.readOnly} onInput={(e) => setOne(i, name, clean({ ...p, default: val(e) }))} />
          </Field>
          <Field label="Description" field={`parameters.${name}.description`}>
            <input value={p.description ?? ''} disabled={ctx.readOnly} onInput={(e) => setOne(i, name, clean({ ...p, description: val(e) }))} />
          </Field>
          {!ctx.readOnly && (
            <button type="button" class="icon-btn" aria-label={`Remove parameter ${name}`} onClick={() => setAll(entries.filter((_, j) => j !== i))}>
              ×
            </button>
          )}
        </div>
      ))}
      {!ctx.readOnly && (
        <button
          type="button"
          class="btn btn-small"
          data-testid="add-param"
          onClick={() => {
            let n = entries.length + 1;
            while (`param${n}` in map) n++;
            setAll([...entries, [`param${n}`, { default: '' }]]);
          }}
        >
          + Add a parameter
        </button>
      )}
      {ctx.err('parameters') && <div class="field-error">{ctx.err('parameters')}</div>}
      <p class="muted small subst-help" data-testid="subst-help">
        {SUBST_HELP}
      </p>
    </div>
  );
}
