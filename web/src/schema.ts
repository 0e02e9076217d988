// schema.ts - the task spec JSON Schema (schema/task.schema.json, served as
// /app/task.schema.json) as the designer uses it: loading, $ref resolution,
// the config schema of a task type (the schema's allOf if/then branches), and
// the spec's problems as the form shows them, from the validator Ajv compiles
// from the same file at build time (virtual:task-validator; no eval in the
// browser), so the form can show errors before the server does. halleyd
// validates again on save and its answer wins: this is a convenience, not
// the check.
//
// Paths are dotted, without the "spec." prefix galaxyd puts on its
// error.field: "retries.max", "upstreams.0.task", "pools.etl".
import type { SchemaError } from 'virtual:task-validator';

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
/** The compiled validator, loaded with the schema (its own chunk: only the
 * designer needs it). */
let validateSpec: ((data: unknown) => boolean) & { errors?: SchemaError[] | null } = () => true;

export function loadTaskSchema(): Promise<JSONSchema> {
  if (!loaded)
    loaded = Promise.all([
      fetch(`${import.meta.env.BASE_URL}task.schema.json`, { credentials: 'same-origin' }).then((r) => {
        if (!r.ok) throw new Error(`the task schema could not be loaded (${r.status})`);
        return r.json() as Promise<JSONSchema>;
      }),
      import('virtual:task-validator').then((m) => {
        validateSpec = m.default;
      }),
    ]).then(([root]) => root);
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

/** The value at a JSON Pointer ("/upstreams/0/task") and its dotted path. */
function pointer(data: unknown, ptr: string): { path: string; value: unknown } {
  const keys = ptr
    .split('/')
    .slice(1)
    .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
  let value = data;
  for (const k of keys) value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[k] : undefined;
  return { path: keys.join('.'), value };
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** The schema at a "#/..." path of the root (an error's schemaPath). */
function schemaAt(root: JSONSchema, ref: string): JSONSchema | undefined {
  let cur: unknown = root;
  for (const k of ref.replace(/^#\/?/, '').split('/').filter(Boolean))
    cur = cur && typeof cur === 'object' ? (cur as Record<string, unknown>)[k.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
  return cur as JSONSchema | undefined;
}

/** One Ajv error as [form path, message]; null for errors that only say a
 * sub-schema failed (if/then), whose own errors are reported too. */
function describe(root: JSONSchema, spec: unknown, e: SchemaError): [string, string] | null {
  const { path, value } = pointer(spec, e.instancePath);
  const p = e.params;
  switch (e.keyword) {
    case 'type': {
      const types = ([] as string[]).concat(p.type as string | string[]);
      return [path, typeOf(value) === 'number' && types.includes('integer') ? 'must be a whole number' : `must be ${types.join(' or ')}`];
    }
    case 'const':
      return [path, `must be ${JSON.stringify(p.allowedValue)}`];
    case 'enum':
      return [path, `must be one of ${(p.allowedValues as unknown[]).join(', ')}`];
    case 'minLength':
      return [path, p.limit === 1 ? 'is required' : `must be at least ${p.limit} characters`];
    case 'maxLength':
      return [path, `must be at most ${p.limit} characters`];
    case 'pattern':
      return [path, patternMessage(String(p.pattern))];
    case 'minimum':
      return [path, `must be at least ${p.limit}`];
    case 'maximum':
      return [path, `must be at most ${p.limit}`];
    case 'maxItems':
      return [path, `at most ${p.limit} items`];
    case 'maxProperties':
      return [path, `at most ${p.limit} entries`];
    case 'required':
      return [join(path, String(p.missingProperty)), 'is required'];
    case 'additionalProperties': {
      const k = String(p.additionalProperty);
      const named = schemaAt(root, e.schemaPath.replace(/\/additionalProperties$/, ''))?.patternProperties;
      return [join(path, k), named ? `"${k}" is not a valid name` : `"${k}" is not a known field`];
    }
    case 'if':
      return null;
    default:
      return [path, `does not match the schema (${e.keyword})`];
  }
}

function patternMessage(p: string): string {
  if (p === '^[a-z][a-z0-9_.-]{0,127}$') return 'lower-case letters, digits, "_", "." or "-", starting with a letter';
  if (p.includes('(ms|s|m|h|d)') && p.includes(':[0-9]{2}')) return 'a duration such as 30m or 2h, or a clock time such as 06:00';
  if (p.includes('(ms|s|m|h|d)')) return 'a duration such as 30s, 5m, 2h or 1d';
  if (p.includes('{4}')) return 'five fields: minute hour day-of-month month day-of-week';
  return `must match ${p}`;
}

/** Validate a spec against task.schema.json (the validator compiled at build
 * time); returns path -> message, the first problem of each path (empty when
 * valid). root is the same schema as loaded, for the wording. */
export function validate(root: JSONSchema, spec: unknown): Record<string, string> {
  const errs: Record<string, string> = {};
  if (validateSpec(spec)) return errs;
  for (const e of validateSpec.errors ?? []) {
    const d = describe(root, spec, e);
    if (d && !(d[0] in errs)) errs[d[0]] = d[1];
  }
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
