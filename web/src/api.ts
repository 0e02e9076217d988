// api.ts - the typed client of galaxyd's REST API (/api/v1, see
// static/openapi.json). Every call goes through request(): same-origin
// fetch with the session cookie, JSON in and out, and one error type,
// ApiError, that keeps the API's {code, message, field}.
//
// Endpoints the UI would like but galaxyd does not serve yet answer 404 with
// field "path" (no route) or 405 (route exists for another method);
// isMissingEndpoint() tells those apart from "no such resource", so pages
// can show a clear "not available yet" state instead of an error.

export type State =
  | 'waiting'
  | 'ready'
  | 'dispatched'
  | 'running'
  | 'success'
  | 'failed'
  | 'killed'
  | 'timed_out'
  | 'suspended'
  | 'marked_success';

export type Role = 'admin' | 'developer' | 'viewer';

export interface Me {
  id: number;
  name: string;
  role: Role;
  teams: string[];
}

export interface User extends Me {
  active: boolean;
}

export interface TaskSpec {
  name: string;
  team: string;
  type: string;
  [key: string]: unknown;
}

export interface Task {
  last_run?: { state: State | null; schedule_time: string | null };
  id: number;
  name: string;
  team: string;
  type: string;
  active: boolean;
  version: number;
  current_version: number;
  schedule: string;
  timezone: string;
  created_by: string;
  created_at: string | null;
  spec: TaskSpec;
}

export interface Page<T> {
  items: T[];
  next_page_token: string | null;
}

export interface DepState {
  task_id: number;
  task_name: string;
  kind: string;
  instance_id: number | null;
  schedule_time: string | null;
  state: State | null;
}

export interface Instance {
  id: number;
  task_id: number;
  task_name: string;
  task_version: number;
  schedule_time: string;
  state: State;
  attempt: number;
  executor: string | null;
  priority: number;
  created_at: string | null;
  updated_at: string | null;
  started_at: string | null;
  finished_at: string | null;
  reason: string;
  upstreams?: DepState[];
  downstreams?: DepState[];
}

export interface Transition {
  id: number;
  attempt: number;
  from: State | null;
  to: State;
  actor: string;
  reason: string;
  executor: string | null;
  at: string;
}

export interface InstanceDetail extends Instance {
  transitions: Transition[];
  upstreams: DepState[];
  downstreams: DepState[];
}

export interface Pool {
  name: string;
  capacity: number;
  used: number;
}

export type Action = 'rerun' | 'suspend' | 'resume' | 'mark-success' | 'kill';

export interface BulkResult {
  succeeded: number;
  failed: number;
  results: { id: number; ok: boolean; instance?: Instance; error?: { code: string; message: string; field: string | null } }[];
}

export interface BackfillResult {
  fire_times: number;
  created: number[];
  existing: number[];
}

export interface InstanceStats {
  step: number;
  buckets: { start: string; success: number; failed: number; killed: number; timed_out: number; marked_success: number }[];
  now: { waiting: number; ready: number; dispatched: number; running: number; running_slots: number };
}

export interface ApiToken {
  id: number;
  user: string;
  name: string;
  expires_at: string | null;
  created_at: string | null;
  last_used_at: string | null;
}

export interface DataSource {
  name: string;
  kind: string;
  params: Record<string, unknown>;
  has_password: boolean;
  updated_at?: string | null;
}

export interface Deployment {
  executor: string;
  result: string; // pending | ok | failed
  message: string;
  updated_at: string | null;
}

export interface CodePackage {
  id: number;
  name: string;
  sha256: string;
  size: number;
  source?: string;
  created_by: string;
  created_at: string | null;
  deployments: Deployment[];
}

export interface SortStream {
  name: string;
  active: boolean;
  version: number;
  updated_at: string | null;
  spec: Record<string, unknown>;
}

export interface DataUnit {
  business: string;
  interface: string;
  bucket: string;
  records: number;
  files: number;
  bytes: number;
  late_records: number;
  check_version: number;
  reconciled: boolean;
  updated_at: string | null;
}

export interface ProcessStat {
  attempt: number;
  key: string;
  value: number;
  recorded_at: string | null;
}

export interface TaskRunStats {
  instance_id: number;
  schedule_time: string;
  attempt: number;
  stats: Record<string, number>;
}

export interface LineageEdge {
  source_kind: string;
  source_name: string;
  target_kind: string;
  target_name: string;
  task_id?: number;
  created_at?: string | null;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly field: string | null;
  constructor(status: number, code: string, message: string, field: string | null) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

/** True when the endpoint itself does not exist (yet) in this galaxyd, or the
 * metadata service behind it does not implement it (501). */
export function isMissingEndpoint(e: unknown): boolean {
  return e instanceof ApiError && ((e.status === 404 && e.field === 'path') || e.status === 405 || e.status === 501);
}

/** Called on any 401 so the app can go back to the login page. */
let onUnauthorized: (() => void) | null = null;
export function setUnauthorizedHandler(fn: () => void): void {
  onUnauthorized = fn;
}

type Query = Record<string, string | number | boolean | undefined | null>;

function qs(q?: Query): string {
  if (!q) return '';
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}

export async function request<T>(
  method: string,
  path: string,
  opts: { query?: Query; body?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json', ...opts.headers };
  let body: string | undefined;
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  let res: Response;
  try {
    res = await fetch(`/api/v1${path}${qs(opts.query)}`, {
      method,
      headers,
      body,
      credentials: 'same-origin',
      signal: opts.signal,
    });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError(0, 'ENETWORK', 'galaxyd cannot be reached; check your connection', null);
  }
  const text = await res.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!res.ok) {
    const err = (data as { error?: { code?: string; message?: string; field?: string | null } } | null)?.error;
    const e = new ApiError(
      res.status,
      err?.code ?? `HTTP${res.status}`,
      err?.message ?? `${res.status} ${res.statusText}`,
      err?.field ?? null,
    );
    if (res.status === 401 && path !== '/auth/login' && onUnauthorized) onUnauthorized();
    throw e;
  }
  return data as T;
}

export const api = {
  login: (name: string, password: string) =>
    request<{ token: string; expires_at: string; user: User }>('POST', '/auth/login', { body: { name, password } }),
  logout: () => request<{ ok: boolean }>('POST', '/auth/logout'),
  me: () => request<Me>('GET', '/auth/me'),

  tasks: (q: { team?: string; type?: string; q?: string; active?: string; limit?: number; page_token?: string }) =>
    request<Page<Task>>('GET', '/tasks', { query: q }),
  task: (id: number) => request<Task>('GET', `/tasks/${id}`),
  createTask: (spec: TaskSpec) => request<Task>('POST', '/tasks', { body: spec }),
  updateTask: (id: number, spec: TaskSpec, version?: number) =>
    request<Task>('PUT', `/tasks/${id}`, {
      body: spec,
      headers: version ? { 'If-Match': String(version) } : undefined,
    }),
  deactivateTask: (id: number, reason?: string) => request<Task>('DELETE', `/tasks/${id}`, { query: { reason } }),
  backfill: (id: number, from: string, to: string) =>
    request<BackfillResult>('POST', `/tasks/${id}/backfill`, { body: { from, to } }),
  scheduleNext: (cron: string, tz: string, count = 5, signal?: AbortSignal, from?: string) =>
    request<{ cron: string; tz: string; times: string[] }>('GET', '/schedule/next', {
      query: { cron, tz, count, from },
      signal,
    }),

  instances: (q: { task_id?: number; state?: string; from?: string; to?: string; limit?: number; page_token?: string; order?: 'asc' | 'desc' }) =>
    request<Page<Instance>>('GET', '/instances', { query: q }),
  instance: (id: number) => request<InstanceDetail>('GET', `/instances/${id}`),
  act: (id: number, action: Action, reason?: string) =>
    request<Instance>('POST', `/instances/${id}/actions/${action}`, { body: reason ? { reason } : {} }),
  bulk: (ids: number[], action: Action) =>
    request<BulkResult>('POST', '/instances/actions', { body: { ids, action } }),

  pools: () => request<{ items: Pool[] }>('GET', '/pools'),
  putPool: (name: string, capacity: number) =>
    request<Pool>('PUT', `/pools/${encodeURIComponent(name)}`, { body: { capacity } }),

  user: (name: string) => request<User>('GET', `/users/${encodeURIComponent(name)}`),
  users: () => request<{ items: User[] }>('GET', '/users'),
  createUser: (u: { name: string; password: string; role: Role; teams: string[] }) =>
    request<User>('POST', '/users', { body: u }),
  /** Any change ends every session of the user at once (on every galaxyd). */
  updateUser: (name: string, patch: { role?: Role; teams?: string[]; active?: boolean; password?: string }) =>
    request<User>('PATCH', `/users/${encodeURIComponent(name)}`, { body: patch }),
  createTeam: (name: string) => request<{ id: number; name: string }>('POST', '/teams', { body: { name } }),

  executors: () => request<{ items: unknown[] }>('GET', '/executors'),
  stats: (q: { from?: string; to?: string; step: string; team?: string }) =>
    request<InstanceStats>('GET', '/stats/instances', { query: q }),
  lastRuns: (q: { q?: string; team?: string; type?: string; active?: string; limit?: number; page_token?: string }) =>
    request<Page<Task>>('GET', '/tasks', { query: { ...q, with_last_run: 1 } }),
  latest: (taskId: number) => request<Page<Instance>>('GET', '/instances', { query: { task_id: taskId, order: 'desc', limit: 1 } }),

  // Third API round. Pages that use these show "not available yet" while
  // galaxyd answers 404 (no route) for them.
  tokens: () => request<{ items: ApiToken[] }>('GET', '/tokens'),
  createToken: (name: string, expires_at: string | null) =>
    request<{ token: ApiToken; secret: string }>('POST', '/tokens', { body: { name, expires_at } }),
  revokeToken: (id: number) => request<null>('DELETE', `/tokens/${id}`),

  datasources: () => request<{ items: DataSource[] }>('GET', '/datasources'),
  datasource: (name: string) => request<DataSource>('GET', `/datasources/${encodeURIComponent(name)}`),
  putDatasource: (name: string, body: { kind: string; params: Record<string, unknown>; password?: string }) =>
    request<DataSource>('PUT', `/datasources/${encodeURIComponent(name)}`, { body }),
  testDatasource: (name: string) =>
    request<{ ok: boolean; message: string; elapsed_ms: number }>('POST', `/datasources/${encodeURIComponent(name)}/test`),

  packages: () => request<{ items: CodePackage[] }>('GET', '/packages'),

  streams: () => request<{ items: SortStream[] }>('GET', '/streams'),
  stream: (name: string) => request<SortStream>('GET', `/streams/${encodeURIComponent(name)}`),
  putStream: (name: string, spec: Record<string, unknown>, active: boolean) =>
    request<SortStream>('PUT', `/streams/${encodeURIComponent(name)}`, { body: { spec, active } }),
  units: (name: string, q: { business?: string; interface?: string; from?: string; to?: string; reconciled?: string }) =>
    request<{ items: DataUnit[] }>('GET', `/streams/${encodeURIComponent(name)}/units`, { query: q }),

  instanceStats: (id: number) => request<{ items: ProcessStat[] }>('GET', `/instances/${id}/stats`),
  taskStats: (id: number) => request<{ items: TaskRunStats[] }>('GET', `/tasks/${id}/stats`),
  lineage: (q: { kind: string; name: string; depth?: number }) => request<{ edges: LineageEdge[] }>('GET', '/lineage', { query: q }),

  log: (id: number, attempt: number, offset: number, signal?: AbortSignal) =>
    request<{ data: string; next_offset: number; complete: boolean }>('GET', `/instances/${id}/log`, {
      query: { attempt, offset },
      signal,
    }),
};

/** Fetch every page of a paged list, bounded by maxPages. */
export async function allPages<T>(
  fetchPage: (token?: string) => Promise<Page<T>>,
  maxPages = 20,
): Promise<{ items: T[]; truncated: boolean }> {
  const items: T[] = [];
  let token: string | undefined;
  for (let i = 0; i < maxPages; i++) {
    const p = await fetchPage(token);
    items.push(...p.items);
    if (!p.next_page_token) return { items, truncated: false };
    token = p.next_page_token;
  }
  return { items, truncated: true };
}

/**
 * Upload a code package archive (.tar.gz) as the raw request body, reporting
 * progress (0..1) as the browser sends it. Resolves with the stored package;
 * rejects with an ApiError carrying the API's {code, message, field}.
 */
export function uploadPackage(name: string, file: Blob, onProgress: (f: number) => void): Promise<CodePackage> {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open('POST', `/api/v1/packages${qs({ name })}`);
    x.setRequestHeader('Content-Type', 'application/gzip');
    x.setRequestHeader('Accept', 'application/json');
    x.withCredentials = true;
    x.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    x.onerror = () => reject(new ApiError(0, 'ENETWORK', 'galaxyd cannot be reached; check your connection', null));
    x.onload = () => {
      let data: unknown = null;
      try {
        data = x.responseText ? JSON.parse(x.responseText) : null;
      } catch {
        data = null;
      }
      if (x.status >= 200 && x.status < 300) {
        onProgress(1);
        const d = data as { package?: CodePackage } & CodePackage;
        resolve(d.package ?? d);
        return;
      }
      const err = (data as { error?: { code?: string; message?: string; field?: string | null } } | null)?.error;
      if (x.status === 401 && onUnauthorized) onUnauthorized();
      reject(new ApiError(x.status, err?.code ?? `HTTP${x.status}`, err?.message ?? `${x.status} ${x.statusText}`, err?.field ?? null));
    };
    x.send(file);
  });
}
