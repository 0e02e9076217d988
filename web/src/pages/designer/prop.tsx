// prop.tsx - one schema property of the task spec as a form widget, chosen by
// its shape (enum -> select, integer -> number, object of fixed fields ->
// fieldset, map -> key/value rows, free object -> JSON editor) or, for a few
// fields, by name (schedule, upstreams, pools, parameters, team, type); and the card that
// groups properties into a section.
import type { ComponentChildren } from 'preact';
import { Field, val } from '../../components/ui';
import { constraintHint, humanize, resolve, typeNames, type JSONSchema } from '../../schema';
import { Cron } from './cron';
import { JsonObject, KeyValue, StringList } from './inputs';
import { Parameters } from './parameters';
import { Pools } from './pools';
import { QualityChecks } from './quality';
import { getIn, type Ctx } from './state';
import { Upstreams } from './upstreams';

const TIMEZONES = ['UTC', 'Europe/London', 'Europe/Paris', 'Europe/Berlin', 'America/New_York', 'America/Chicago', 'America/Los_Angeles', 'Asia/Shanghai', 'Asia/Tokyo', 'Asia/Kolkata', 'Australia/Sydney'];

/** One schema property, widget chosen by shape. */
export function Prop({ ctx, path, schema: s0, required }: { ctx: Ctx; path: string[]; schema: JSONSchema; required: boolean }) {
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
  if (p === 'parameters') return <Parameters ctx={ctx} />;
  if (p === 'config.checks' && getIn(ctx.spec, ['type']) === 'quality') return <QualityChecks ctx={ctx} path={path} />;
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
  // The deadlines have a section of their own: their fields go in it
  // without a box around them.
  if (p === 'deadlines' && s.properties)
    return (
      <>
        {Object.entries(s.properties).map(([k, ps]) => (
          <Prop key={k} ctx={ctx} path={[...path, k]} schema={ps} required={false} />
        ))}
        {ctx.err(p) && <div class="field-error span2">{ctx.err(p)}</div>}
      </>
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
  // A deadline is a duration after the schedule time or a clock time of the
  // task's time zone: the hint says both and which zone.
  if (path.length === 2 && path[0] === 'deadlines') {
    const tz = String(getIn(ctx.spec, ['timezone']) ?? '') || 'UTC';
    const what = key === 'start_by' ? 'started' : 'finished';
    return (
      <Field
        label={key === 'start_by' ? 'Must start by' : key === 'finish_by' ? 'Must finish by' : label}
        field={p}
        error={ctx.err(p)}
        hint={`Not ${what} by then: a deadline alert. 30m, 2h… after the schedule time, or a clock time in ${tz} such as 06:00.`}
      >
        <input
          {...common}
          class="mono"
          placeholder={key === 'start_by' ? '30m' : '07:30'}
          value={String(v ?? '')}
          onInput={(e) => ctx.set(path, val(e) || undefined)}
        />
      </Field>
    );
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

export function Section(props: { title: string; desc?: string; children: ComponentChildren; id?: string }) {
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
