// schema.ts - the task spec JSON Schema (schema/task.schema.json, served as
// /app/task.schema.json) as the designer uses it: loading, $ref resolution,
// the config schema of a task type (the schema's allOf if/then branches), and
// a small validator for the keywords that schema uses, so the form can show
// errors before the server does. halleyd validates again on save and its
// answer wins: this is a convenience, not the check.
//
// Paths are dotted, without the "spec." prefix galaxyd puts on its
// error.field: "retries.max", "upstreams.0.task", "pools.etl".

export interface JSONSchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  required?: string[];
  properties?: Record<string, JSONSchema>;
  patternProperties?: Record<string, JSONSchema>;
  additionalProperties?: boolean | JSONSchema;
  items?: JSONSchema;
  maxItems?: number;
  maxProperties?: number;
  allOf?: JSONSchema[];
  if?: JSONSchema;
  then?: JSONSchema;
  $ref?: string;
  $defs?: Record<string, JSONSchema>;
  description?: string;
  title?: string;
}

let loaded: Promise<JSONSchema> | null = null;

export function loadTaskSchema(): Promise<JSONSchema> {
  if (!loaded)
    loaded = fetch(`${import.meta.env.BASE_URL}task.schema.json`, { credentials: 'same-origin' }).then((r) => {
      if (!r.ok) throw new Error(`the task schema could not be loaded (${r.status})`);
      return r.json() as Promise<JSONSchema>;
    });
  loaded.catch(() => (loaded = null));
  return loaded;
}

export function resolve(root: JSONSchema, s: JSONSchema | undefined): JSONSchema {
  let cur = s ?? {};
  for (let i = 0; i < 8 && cur.$ref; i++) {
    const m = /^#\/\$defs\/(.+)$/.exec(cur.$ref);
    const next = m ? root.$defs?.[m[1]] : undefined;
    if (!next) break;
    cur = { ...next, ...Object.fromEntries(Object.entries(cur).filter(([k]) => k !== '$ref')) };
  }
  return cur;
}

/** The schema of spec.config for a task type, from the root's allOf if/then. */
export function configSchemaFor(root: JSONSchema, type: string): JSONSchema {
  for (const branch of root.allOf ?? []) {
    const cond = branch.if?.properties?.type;
    if (cond && (cond.const === type || cond.enum?.includes(type)))
      return resolve(root, branch.then?.properties?.config);
  }
  return resolve(root, root.properties?.config);
}

export function typeNames(root: JSONSchema): string[] {
  return (root.properties?.type?.enum ?? []).map(String);
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function matchesIf(root: JSONSchema, cond: JSONSchema, v: unknown): boolean {
  const errs: Record<string, string> = {};
  check(root, cond, v, '', errs);
  return Object.keys(errs).length === 0;
}

function join(path: string, key: string | number): string {
  return path ? `${path}.${key}` : String(key);
}

function check(root: JSONSchema, s0: JSONSchema, v: unknown, path: string, errs: Record<string, string>): void {
  const s = resolve(root, s0);
  const add = (p: string, m: string) => {
    if (!(p in errs)) errs[p] = m;
  };
  if (s.type) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    const t = typeOf(v);
    if (!types.includes(t) && !(t === 'integer' && types.includes('number'))) {
      add(path, t === 'number' && types.includes('integer') ? 'must be a whole number' : `must be ${types.join(' or ')}`);
      return;
    }
  }
  if (s.const !== undefined && v !== s.const) add(path, `must be ${JSON.stringify(s.const)}`);
  if (s.enum && !s.enum.includes(v)) add(path, `must be one of ${s.enum.join(', ')}`);
  if (typeof v === 'string') {
    if (s.minLength !== undefined && v.length < s.minLength)
      add(path, s.minLength === 1 ? 'is required' : `must be at least ${s.minLength} characters`);
    if (s.maxLength !== undefined && v.length > s.maxLength) add(path, `must be at most ${s.maxLength} characters`);
    if (s.pattern && !new RegExp(s.pattern, 'u').test(v)) add(path, patternMessage(s.pattern));
  }
  if (typeof v === 'number') {
    if (s.minimum !== undefined && v < s.minimum) add(path, `must be at least ${s.minimum}`);
    if (s.maximum !== undefined && v > s.maximum) add(path, `must be at most ${s.maximum}`);
  }
  if (Array.isArray(v)) {
    if (s.maxItems !== undefined && v.length > s.maxItems) add(path, `at most ${s.maxItems} items`);
    if (s.items) v.forEach((x, i) => check(root, s.items!, x, join(path, i), errs));
  }
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    for (const r of s.required ?? []) if (o[r] === undefined) add(join(path, r), 'is required');
    const keys = Object.keys(o);
    if (s.maxProperties !== undefined && keys.length > s.maxProperties) add(path, `at most ${s.maxProperties} entries`);
    for (const k of keys) {
      const p = join(path, k);
      let known = false;
      if (s.properties?.[k]) {
        known = true;
        check(root, s.properties[k], o[k], p, errs);
      }
      for (const [pat, ps] of Object.entries(s.patternProperties ?? {})) {
        if (new RegExp(pat, 'u').test(k)) {
          known = true;
          check(root, ps, o[k], p, errs);
        }
      }
      if (!known) {
        if (s.additionalProperties === false)
          add(p, s.patternProperties ? `"${k}" is not a valid name` : `"${k}" is not a known field`);
        else if (s.additionalProperties && typeof s.additionalProperties === 'object')
          check(root, s.additionalProperties, o[k], p, errs);
      }
    }
  }
  for (const sub of s.allOf ?? []) {
    if (sub.if) {
      if (matchesIf(root, sub.if, v) && sub.then) check(root, sub.then, v, path, errs);
    } else check(root, sub, v, path, errs);
  }
}

function patternMessage(p: string): string {
  if (p === '^[a-z][a-z0-9_.-]{0,127}$') return 'lower-case letters, digits, "_", "." or "-", starting with a letter';
  if (p.includes('(ms|s|m|h|d)')) return 'a duration such as 30s, 5m, 2h or 1d';
  if (p.includes('{4}')) return 'five fields: minute hour day-of-month month day-of-week';
  return `must match ${p}`;
}

/** Validate a spec; returns path -> message (empty when valid). */
export function validate(root: JSONSchema, spec: unknown): Record<string, string> {
  const errs: Record<string, string> = {};
  check(root, root, spec, '', errs);
  return errs;
}

/** galaxyd's error.field ("spec.upstreams[0].task") to a form path. */
export function fieldToPath(field: string | null | undefined): string {
  if (!field) return '';
  return field
    .replace(/^spec\.?/, '')
    .replace(/\[(\d+)\]/g, '.$1')
    .replace(/^\./, '');
}

export function humanize(key: string): string {
  const s = key.replace(/_/g, ' ');
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** "1–1024", "at most 256 characters": the constraints as a hint. */
export function constraintHint(s: JSONSchema): string {
  const parts: string[] = [];
  if (s.minimum !== undefined && s.maximum !== undefined) parts.push(`${s.minimum} to ${s.maximum}`);
  else if (s.minimum !== undefined) parts.push(`at least ${s.minimum}`);
  else if (s.maximum !== undefined) parts.push(`at most ${s.maximum}`);
  return parts.join(', ');
}
