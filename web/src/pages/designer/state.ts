// state.ts - the designer's form state: the spec being edited as a plain
// object, path-based get/set on it, and the context every widget receives
// (the schema, the spec, setters, the error of a field, the user's teams and
// the pools).
import type { Pool } from '../../api';
import type { JSONSchema } from '../../schema';

export type Obj = Record<string, unknown>;

export function getIn(o: unknown, path: string[]): unknown {
  let cur = o;
  for (const k of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Obj)[k];
  }
  return cur;
}

export function setIn(o: Obj, path: string[], v: unknown): Obj {
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

export interface Ctx {
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
