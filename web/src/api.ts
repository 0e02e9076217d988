// api.ts - the typed client of galaxyd's REST API (/api/v1, see
// static/openapi.json). Every call goes through request(): same-origin
// fetch with the session cookie, JSON in and out, and one error type,
// ApiError, that keeps the API's {code, message, field}.
//
// Endpoints the UI would like but galaxyd does not serve yet answer 404 with
// field "path" (no route) or 405 (route exists for another method);
// isMissingEndpoint() tells those apart from "no such resource", so pages
// can show a clear "not available yet" state instead of an error.

// The types come from the OpenAPI document (api-types.ts, generated from
// static/openapi.json): a field the document renames or drops fails the
// build where the console uses it.
import type { components, operations } from './api-types';

type Schemas = components['schemas'];

/**
 * A schema as galaxyd sends it: every property present (the document lists
 * the properties of answers without marking them required), all the way
 * down. Properties galaxyd may leave out are put back as optional with Maybe.
 */
type Sent<T> = T extends readonly (infer E)[] ? Sent<E>[] : T extends object ? { [K in keyof T]-?: Sent<T[K]> } : T;
type Maybe<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;

type JsonOf<R> = R extends { content: { 'application/json': infer T } } ? T : never;
type Responses<O extends keyof operations> = operations[O]['responses'];
/** The JSON answer of an operation (its 200, else its 201), as sent. */
type Answer<O extends keyof operations> = Sent<
  200 extends keyof Responses<O> ? JsonOf<Responses<O>[200]> : 201 extends keyof Responses<O> ? JsonOf<Responses<O>[201]> : never
>;
/** The JSON body an operation takes. */
type Body<O extends keyof operations> = operations[O] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
/** The items of a list answer. */
type ItemOf<O extends keyof operations> = Answer<O> extends { items: (infer I)[] } ? I : never;

export type State = Schemas['State'];
export type Role = Sent<Schemas['User']>['role'];
export type Me = Sent<Schemas['Me']> & { role: Role };
export type User = Sent<Schemas['User']>;
/** A task spec: name, team and type, and the rest of task.schema.json. */
export type TaskSpec = Schemas['TaskSpec'] & Record<string, unknown>;
/** last_run: with with_last_run=1, for a task that has run. */
export type Task = Maybe<Omit<Sent<Schemas['Task']>, 'spec'> & { spec: TaskSpec }, 'last_run'>;
/** A page of a list (TaskPage, InstancePage, ... in the document). */
export type Page<T> = Omit<Answer<'listTasks'>, 'items'> & { items: T[] };
export type DepState = Sent<Schemas['DepState']>;
/** upstreams and downstreams: in lists, only when the instance has some. */
export type Instance = Maybe<Sent<Schemas['Instance']>, 'upstreams' | 'downstreams'>;
export type Transition = Sent<Schemas['Transition']>;
export type InstanceDetail = Answer<'getInstance'>;
export type Pool = Sent<Schemas['Pool']>;
export type Action = operations['instanceAction']['parameters']['path']['action'];
type BulkItem = Sent<NonNullable<Schemas['BulkResult']['results']>[number]>;
/** Each result has the instance when it went through, the error when not. */
export type BulkResult = Omit<Sent<Schemas['BulkResult']>, 'results'> & {
  results: (Maybe<Omit<BulkItem, 'error'>, 'instance'> & { error?: Sent<Schemas['Error']>['error'] })[];
};
export type BackfillResult = Answer<'backfillTask'>;
export type TaskVersion = ItemOf<'listTaskVersions'>;
export type TaskDiff = Answer<'diffTaskVersions'>;
/** Backfill's options beyond the range: downstream tasks, pacing, dry run. */
export type BackfillOptions = Omit<Body<'backfillTask'>, 'from' | 'to'>;
export type RunNowResult = Answer<'runTaskNow'>;
export type RerunResult = Answer<'rerunInstanceSet'>;
export type RerunScope = NonNullable<Body<'rerunInstanceSet'>['scope']>;
export type InstanceStats = Answer<'instanceStatsOverTime'>;
export type ApiToken = Sent<Schemas['ApiToken']>;
export type DataSource = Sent<Schemas['DataSource']>;
export type DsTables = Answer<'listDataSourceTables'>;
export type DsTableRef = DsTables['tables'][number];
export type DsTable = Answer<'getDataSourceTable'>;
export type DsColumn = DsTable['columns'][number];
export type TransferPreview = Answer<'previewTransfer'>;
export type CodePackage = Sent<Schemas['CodePackage']>;
export type Deployment = CodePackage['deployments'][number];
export type SortStream = Sent<Schemas['SortStream']>;
export type DataUnit = Sent<Schemas['DataUnit']>;
export type ProcessStat = ItemOf<'instanceStats'>;
export type TaskRunStats = ItemOf<'taskStats'>;
/** GET /instances/{id}/progress: a transfer attempt's live figures and rate series. */
export type TransferProgress = Answer<'instanceProgress'>;
export type TransferPoint = TransferProgress['series'][number];
export type LineageEdge = Sent<Schemas['LineageEdge']>;
export type LineageNode = Sent<Schemas['LineageNode']>;
export type WorkflowRuns = Answer<'listWorkflowRuns'>;
export type WorkflowRun = Answer<'getWorkflowRun'>;
/** A grid cell: [task index, cycle index, instance id, state, attempt]. */
export type RunCell = [number, number, number, State, number];
export type Workflow = Sent<Schemas['Workflow']>;
/** The paused workflow holding a task (on tasks and instances), or null. */
export type Paused = Sent<NonNullable<Schemas['Paused']>> | null;
export type TaskSuggestion = ItemOf<'suggestTasks'>;
export type Team = ItemOf<'listTeams'>;
/** One thing holding an instance back; its fields depend on kind. */
export type Blocker = Schemas['Blocker'];
export type Blockers = Omit<Answer<'getInstanceBlockers'>, 'blockers'> & { blockers: Blocker[] };
export type Executor = Sent<Schemas['Executor']>;
export type TeamQuota = Sent<Schemas['TeamQuota']>;
export type Limits = Schemas['Limits'];
export type TypeLimits = Omit<Sent<Schemas['TypeLimits']>, 'limits'> & { limits: Limits };
/** days: in the answer of one calendar, not in lists. */
export type Calendar = Maybe<Sent<Schemas['Calendar']>, 'days'>;
export type CalendarDayMark = Sent<Schemas['CalendarDay']>;
export type CalendarDays = Answer<'calendarDays'>;
export type CalendarImport = Answer<'importCalendar'>;

// Alerts: channels, rules, silences and the history with its deliveries
// (the "Alerts" section of docs/api.md). Where the document leaves a member
// free (a channel's config by kind, a rule's params) or a plain string (an
// alert's severity), the console says what it holds.
type AlertRuleSchema = Sent<Schemas['AlertRule']>;
export type AlertKind = Sent<Schemas['AlertChannel']>['kind'];
export type AlertScopeKind = AlertRuleSchema['scope_kind'];
export type AlertSeverity = AlertRuleSchema['severity'];
export type AlertEvent = AlertRuleSchema['events'][number];
export type DeliveryState = Sent<Schemas['AlertDelivery']>['state'];
/** A channel's config as galaxyd answers it: write-only secrets are left
 * out (the channel's secret_set says one is stored). */
export type AlertChannelConfig = {
  url?: string;
  secret?: string;
  secret_set?: boolean;
  headers?: Record<string, string>;
  timeout_s?: number;
  smtp_url?: string;
  starttls?: boolean;
  username?: string;
  password?: string;
  password_set?: boolean;
  from?: string;
  to?: string[];
  format?: 'slack' | 'teams';
};
export type AlertChannel = Maybe<Omit<Sent<Schemas['AlertChannel']>, 'config'> & { config: AlertChannelConfig }, 'created_by' | 'created_at' | 'updated_at' | 'secret_set'>;
export type AlertRuleParams = {
  dirty_rows?: number;
  pool_starved_minutes?: number;
  each_attempt?: boolean;
};
export type AlertRule = Maybe<Omit<AlertRuleSchema, 'params'> & { params: AlertRuleParams }, 'created_by' | 'created_at' | 'updated_at'>;
export type AlertRuleInput = Omit<AlertRule, 'id' | 'created_by' | 'created_at' | 'updated_at'>;
export type AlertSilence = Maybe<Omit<Sent<Schemas['AlertSilence']>, 'scope_kind'> & { scope_kind: AlertScopeKind | null }, 'team' | 'active' | 'created_by' | 'created_at'>;
export type AlertSilenceInput = Body<'createAlertSilence'> & { scope_kind?: AlertScopeKind };
export type AlertDelivery = Sent<Schemas['AlertDelivery']>;
export type Alert = Omit<Sent<Schemas['Alert']>, 'severity' | 'scope_kind'> & { severity: AlertSeverity; scope_kind: AlertScopeKind | null };
export type AlertPage = Omit<Answer<'listAlerts'>, 'items'> & { items: Alert[] };

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
  opts: {
    query?: Query;
    body?: unknown;
    headers?: Record<string, string>;
    signal?: AbortSignal;
    /** a body sent as it is, with its content type (an .ics file) */
    raw?: { type: string; text: string };
  } = {},
): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json', ...opts.headers };
  let body: string | undefined;
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  } else if (opts.raw) {
    headers['Content-Type'] = opts.raw.type;
    body = opts.raw.text;
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
    request<Answer<'login'>>('POST', '/auth/login', { body: { name, password } satisfies Body<'login'> }),
  logout: () => request<Answer<'logout'>>('POST', '/auth/logout'),
  me: () => request<Me>('GET', '/auth/me'),

  tasks: (q: { team?: string; type?: string; q?: string; active?: string; limit?: number; page_token?: string }) =>
    request<Page<Task>>('GET', '/tasks', { query: q }),
  task: (id: number) => request<Task>('GET', `/tasks/${id}`),
  createTask: (spec: Body<'createTask'>) => request<Task>('POST', '/tasks', { body: spec }),
  updateTask: (id: number, spec: Body<'updateTask'>, version?: number, comment?: string) =>
    request<Task & { changed: boolean }>('PUT', `/tasks/${id}`, {
      body: spec,
      query: comment ? { comment } : undefined,
      headers: version ? { 'If-Match': String(version) } : undefined,
    }),
  deactivateTask: (id: number, reason?: string) => request<Task>('DELETE', `/tasks/${id}`, { query: { reason } }),
  backfill: (id: number, from: string, to: string, opts: BackfillOptions = {}) =>
    request<BackfillResult>('POST', `/tasks/${id}/backfill`, { body: { from, to, ...opts } satisfies Body<'backfillTask'> }),
  runNow: (id: number, schedule_time: string, ignore_upstreams: boolean, reason?: string, params?: Record<string, string>) =>
    request<RunNowResult>('POST', `/tasks/${id}/run`, {
      body: { schedule_time, ignore_upstreams, ...(reason ? { reason } : {}), ...(params ? { params } : {}) } satisfies Body<'runTaskNow'>,
    }),
  rerunSet: (id: number, scope: RerunScope, dry_run: boolean, reason?: string, from_scratch?: boolean) =>
    request<RerunResult>('POST', `/instances/${id}/rerun`, {
      body: { scope, dry_run, ...(reason ? { reason } : {}), ...(from_scratch ? { from_scratch } : {}) } satisfies Body<'rerunInstanceSet'>,
    }),
  rerunWorkflowFailed: (name: string, schedule_time: string, dry_run: boolean) =>
    request<RerunResult>('POST', `/workflows/${encodeURIComponent(name)}/rerun-failed`, {
      body: { schedule_time, dry_run } satisfies Body<'rerunWorkflowFailed'>,
    }),
  scheduleNext: (cron: string, tz: string, count = 5, signal?: AbortSignal, from?: string, calendar?: string, policy?: string) =>
    request<Answer<'scheduleNext'>>('GET', '/schedule/next', {
      query: { cron, tz, count, from, calendar, policy: calendar ? policy : undefined },
      signal,
    }),
  calendars: () => request<Answer<'listCalendars'>>('GET', '/calendars'),
  calendar: (name: string) => request<Calendar>('GET', `/calendars/${encodeURIComponent(name)}`),
  createCalendar: (body: Body<'createCalendar'>) => request<Calendar>('POST', '/calendars', { body }),
  updateCalendar: (name: string, body: Body<'updateCalendar'>) =>
    request<Calendar>('PUT', `/calendars/${encodeURIComponent(name)}`, { body }),
  deleteCalendar: (name: string) => request<null>('DELETE', `/calendars/${encodeURIComponent(name)}`),
  calendarDays: (name: string, from: string, to: string) =>
    request<CalendarDays>('GET', `/calendars/${encodeURIComponent(name)}/days`, { query: { from, to } }),
  importCalendar: (name: string, ics: string, kind: 'excluded' | 'included') =>
    request<CalendarImport>('POST', `/calendars/${encodeURIComponent(name)}/import`, {
      query: { kind },
      raw: { type: 'text/calendar', text: ics },
    }),

  instances: (q: { task_id?: number; state?: string; from?: string; to?: string; q?: string; limit?: number; page_token?: string; order?: 'asc' | 'desc' }) =>
    request<Page<Instance>>('GET', '/instances', { query: q }),
  instance: (id: number) => request<InstanceDetail>('GET', `/instances/${id}`),
  act: (id: number, action: Action, reason?: string) =>
    request<Answer<'instanceAction'>>('POST', `/instances/${id}/actions/${action}`, { body: (reason ? { reason } : {}) satisfies Body<'instanceAction'> }),
  bulk: (ids: number[], action: Action) =>
    request<BulkResult>('POST', '/instances/actions', { body: { ids, action } satisfies Body<'bulkInstanceAction'> }),

  pools: () => request<Answer<'listPools'>>('GET', '/pools'),
  putPool: (name: string, capacity: number) =>
    request<Answer<'putPool'>>('PUT', `/pools/${encodeURIComponent(name)}`, { body: { capacity } satisfies Body<'putPool'> }),

  user: (name: string) => request<Answer<'getUser'>>('GET', `/users/${encodeURIComponent(name)}`),
  users: () => request<Answer<'listUsers'>>('GET', '/users'),
  createUser: (u: Body<'createUser'>) => request<Answer<'createUser'>>('POST', '/users', { body: u }),
  /** Any change ends every session of the user at once (on every galaxyd). */
  updateUser: (name: string, patch: Body<'updateUser'>) =>
    request<Answer<'updateUser'>>('PATCH', `/users/${encodeURIComponent(name)}`, { body: patch }),
  createTeam: (name: string) => request<Answer<'createTeam'>>('POST', '/teams', { body: { name } satisfies Body<'createTeam'> }),

  executors: () => request<Answer<'listExecutors'>>('GET', '/executors'),
  stats: (q: { from?: string; to?: string; step: string; team?: string }) =>
    request<InstanceStats>('GET', '/stats/instances', { query: q }),
  lastRuns: (q: { q?: string; team?: string; type?: string; active?: string; limit?: number; page_token?: string }) =>
    request<Page<Task>>('GET', '/tasks', { query: { ...q, with_last_run: 1 } }),
  latest: (taskId: number) => request<Page<Instance>>('GET', '/instances', { query: { task_id: taskId, order: 'desc', limit: 1 } }),

  // Third API round. Pages that use these show "not available yet" while
  // galaxyd answers 404 (no route) for them.
  tokens: () => request<Answer<'listTokens'>>('GET', '/tokens'),
  createToken: (name: string, expires_at: string | null) =>
    request<Answer<'createToken'>>('POST', '/tokens', { body: { name, expires_at } satisfies Body<'createToken'> }),
  revokeToken: (id: number) => request<null>('DELETE', `/tokens/${id}`),

  datasources: () => request<{ items: DataSource[] }>('GET', '/datasources'),
  datasource: (name: string) => request<DataSource>('GET', `/datasources/${encodeURIComponent(name)}`),
  putDatasource: (name: string, body: Body<'putDataSource'>) =>
    request<DataSource>('PUT', `/datasources/${encodeURIComponent(name)}`, { body }),
  testDatasource: (name: string) =>
    request<Answer<'testDataSource'>>('POST', `/datasources/${encodeURIComponent(name)}/test`),
  // Data metadata (cached in halleyd, read by an executor on a miss).
  dsTables: (name: string, q: { q?: string; limit?: number; refresh?: 1 } = {}) =>
    request<DsTables>('GET', `/datasources/${encodeURIComponent(name)}/tables`, { query: q }),
  dsTable: (name: string, table: string, refresh = false) =>
    request<DsTable>('GET', `/datasources/${encodeURIComponent(name)}/tables/${encodeURIComponent(table)}`, {
      query: refresh ? { refresh: 1 } : undefined,
    }),
  previewTransfer: (body: Body<'previewTransfer'>) => request<TransferPreview>('POST', '/transfers/preview', { body }),
  // A transfer task's incremental watermark (name = <table>.<column>; value '' = none yet).
  taskWatermark: (id: number, name: string) => request<Answer<'getTaskWatermark'>>('GET', `/tasks/${id}/watermark`, { query: { name } }),

  packages: () => request<{ items: CodePackage[] }>('GET', '/packages'),

  streams: () => request<Answer<'listStreams'>>('GET', '/streams'),
  stream: (name: string) => request<SortStream>('GET', `/streams/${encodeURIComponent(name)}`),
  putStream: (name: string, spec: Record<string, unknown>, active: boolean) =>
    request<SortStream>('PUT', `/streams/${encodeURIComponent(name)}`, { body: { spec, active } satisfies Body<'putStream'> }),
  units: (name: string, q: { business?: string; interface?: string; from?: string; to?: string; reconciled?: string }) =>
    request<Answer<'listDataUnits'>>('GET', `/streams/${encodeURIComponent(name)}/units`, { query: q }),

  instanceStats: (id: number) => request<Answer<'instanceStats'>>('GET', `/instances/${id}/stats`),
  taskStats: (id: number) => request<Answer<'taskStats'>>('GET', `/tasks/${id}/stats`),
  instanceProgress: (id: number, attempt?: number) =>
    request<TransferProgress>('GET', `/instances/${id}/progress`, { query: attempt ? { attempt } : {} }),
  lineage: (q: { kind: string; name: string; depth?: number; columns?: boolean }) => request<{ edges: LineageEdge[] }>('GET', '/lineage', { query: q }),
  lineageNames: (q: string, limit = 12, signal?: AbortSignal) =>
    request<Answer<'suggestLineageNames'>>('GET', '/lineage/names', { query: { q, limit }, signal }),

  workflowRuns: (name: string, q: { limit?: number; before?: string }) =>
    request<WorkflowRuns>('GET', `/workflows/${encodeURIComponent(name)}/runs`, { query: q }),
  workflowRun: (name: string, cycle: string) =>
    request<WorkflowRun>('GET', `/workflows/${encodeURIComponent(name)}/runs/${cycle}`),
  workflowNames: () => request<Answer<'listWorkflows'>>('GET', '/workflows', { query: { limit: 1000 } }),
  // Workflows as objects, the admin lists.
  workflows: () => request<{ items: Workflow[] }>('GET', '/workflows', { query: { limit: 1000 } }),
  workflow: (name: string) => request<Answer<'getWorkflow'>>('GET', `/workflows/${encodeURIComponent(name)}`),
  putWorkflow: (name: string, body: Body<'putWorkflow'>) =>
    request<Workflow>('PUT', `/workflows/${encodeURIComponent(name)}`, { body }),
  patchWorkflow: (name: string, body: Body<'patchWorkflow'>) =>
    request<Workflow>('PATCH', `/workflows/${encodeURIComponent(name)}`, { body }),
  pauseWorkflow: (name: string) => request<Workflow>('POST', `/workflows/${encodeURIComponent(name)}/pause`, { body: {} }),
  resumeWorkflow: (name: string) => request<Workflow>('POST', `/workflows/${encodeURIComponent(name)}/resume`, { body: {} }),
  suggestTasks: (q: string, limit = 12, signal?: AbortSignal) =>
    request<Answer<'suggestTasks'>>('GET', '/tasks/suggest', { query: { q, limit }, signal }),
  searchUsers: (q: { q?: string; role?: string; limit?: number }) => request<Answer<'listUsers'>>('GET', '/users', { query: q }),
  teams: () => request<Answer<'listTeams'>>('GET', '/teams', { query: { limit: 1000 } }),
  // Why is it waiting; resource limits.
  blockers: (id: number) => request<Blockers>('GET', `/instances/${id}/blockers`),
  updateExecutor: (name: string, patch: Body<'updateExecutor'>) =>
    request<Answer<'updateExecutor'>>('PATCH', `/executors/${encodeURIComponent(name)}`, { body: patch }),
  quotas: () => request<{ items: TeamQuota[] }>('GET', '/quotas'),
  putQuota: (team: string, max_running: number, max_slots: number) =>
    request<TeamQuota>('PUT', `/quotas/${encodeURIComponent(team)}`, { body: { max_running, max_slots } satisfies Body<'putQuota'> }),
  typeLimits: () => request<{ items: TypeLimits[] }>('GET', '/task-types/limits'),
  putTypeLimits: (type: string, limits: Limits) =>
    request<TypeLimits>('PUT', `/task-types/${encodeURIComponent(type)}/limits`, { body: { limits } satisfies Body<'putTypeLimits'> }),

  // Task versions and parameters.
  taskVersions: (id: number) => request<Answer<'listTaskVersions'>>('GET', `/tasks/${id}/versions`, { query: { limit: 1000 } }),
  taskVersion: (id: number, version: number) => request<Task>('GET', `/tasks/${id}/versions/${version}`),
  taskDiff: (id: number, from: number, to: number) => request<Answer<'diffTaskVersions'>>('GET', `/tasks/${id}/diff`, { query: { from, to } }),
  rollbackTask: (id: number, version: number, comment?: string) =>
    request<Task & { changed: boolean }>('POST', `/tasks/${id}/rollback`, {
      body: { version, comment: comment || undefined } satisfies Body<'rollbackTask'>,
    }),
  reactivateTask: (id: number) => request<Task>('POST', `/tasks/${id}/reactivate`),
  setInstanceParams: (id: number, params: Record<string, string>) =>
    request<Instance>('PUT', `/instances/${id}/params`, { body: { params } satisfies Body<'setInstanceParams'> }),

  // Alerts.
  alertChannels: () => request<{ items: AlertChannel[] }>('GET', '/alert-channels', { query: { limit: 1000 } }),
  createAlertChannel: (c: Body<'createAlertChannel'>) => request<AlertChannel>('POST', '/alert-channels', { body: c }),
  updateAlertChannel: (id: number, c: Body<'updateAlertChannel'>) => request<AlertChannel>('PUT', `/alert-channels/${id}`, { body: c }),
  deleteAlertChannel: (id: number) => request<null>('DELETE', `/alert-channels/${id}`),
  testAlertChannel: (id: number) => request<Answer<'testAlertChannel'>>('POST', `/alert-channels/${id}/test`),
  alertRules: () => request<{ items: AlertRule[] }>('GET', '/alert-rules', { query: { limit: 1000 } }),
  createAlertRule: (r: AlertRuleInput) => request<AlertRule>('POST', '/alert-rules', { body: r satisfies Body<'createAlertRule'> }),
  updateAlertRule: (id: number, r: AlertRuleInput) => request<AlertRule>('PUT', `/alert-rules/${id}`, { body: r satisfies Body<'updateAlertRule'> }),
  deleteAlertRule: (id: number) => request<null>('DELETE', `/alert-rules/${id}`),
  alertSilences: (active?: boolean) => request<{ items: AlertSilence[] }>('GET', '/alert-silences', { query: { active: active ? 1 : undefined, limit: 1000 } }),
  createAlertSilence: (s: AlertSilenceInput) => request<AlertSilence>('POST', '/alert-silences', { body: s }),
  deleteAlertSilence: (id: number) => request<null>('DELETE', `/alert-silences/${id}`),
  alerts: (q: { rule?: number | string; event?: string; state?: string; since?: string; page_token?: string; limit?: number }, signal?: AbortSignal) =>
    request<AlertPage>('GET', '/alerts', { query: q, signal }),

  log: (id: number, attempt: number, offset: number, timestamps = false, signal?: AbortSignal) =>
    request<Answer<'instanceLog'>>('GET', `/instances/${id}/log`, {
      query: { attempt, offset, timestamps: timestamps ? 1 : undefined },
      signal,
    }),
};

/**
 * A call whose first answer is asked for at once: a page that makes it while
 * it first renders (in a useState initializer) has its request on the wire
 * before the first paint instead of in an effect after it. Later calls (a
 * reload) ask again.
 */
export function early<T>(fn: () => Promise<T>): () => Promise<T> {
  let first: Promise<T> | null = fn();
  first.catch(() => undefined); // the caller that takes it handles its error
  return () => {
    const p = first ?? fn();
    first = null;
    return p;
  };
}

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
