// admin.tsx - the admin console: resource pools (capacity editing, usage
// refreshed every 3 s), executors (slots, labels, liveness), data sources
// (datasources.tsx) and users and
// teams. Non-admins see the same pages read-only. Sections galaxyd has no
// endpoint for yet show a "not available yet" state.
import { useState } from 'preact/hooks';
import { api, ApiError, type Pool, type Role, type User } from '../api';
import { Empty, ErrorBanner, Field, Loading, PageHead, SectionNav, Spinner, Unavailable, toast, useAsync, useInterval, val } from '../components/ui';
import { useMe } from '../session';
import { DataSourcesTab } from './datasources';

function Usage({ used, capacity }: { used: number; capacity: number }) {
  const pct = capacity > 0 ? Math.min(100, (used / capacity) * 100) : used > 0 ? 100 : 0;
  const level = pct >= 90 ? 'hot' : pct >= 60 ? 'warm' : 'cool';
  return (
    <div class="usage">
      <div class="usage-bar">
        <div class={`usage-fill usage-${level}`} style={{ width: `${pct}%` }} />
      </div>
      <span class="small">
        <strong>{used}</strong> / {capacity} used
      </span>
    </div>
  );
}

function PoolRow({ pool, admin, onSaved }: { pool: Pool; admin: boolean; onSaved: (p: Pool) => void }) {
  const [edit, setEdit] = useState<string | null>(null);
  const [err, setErr] = useState<ApiError | Error | null>(null);
  const [busy, setBusy] = useState(false);
  const save = async (e: Event) => {
    e.preventDefault();
    if (edit === null) return;
    const n = Number(edit);
    if (edit.trim() === '' || !Number.isInteger(n) || n < 0 || n > 100000) {
      setErr(new ApiError(400, 'EINVAL', 'capacity must be a whole number from 0 to 100000', 'capacity'));
      return;
    }
    setBusy(true);
    setErr(null);
    try {
      const p = await api.putPool(pool.name, n);
      onSaved(p);
      setEdit(null);
      toast(`Pool ${p.name}: capacity ${p.capacity}`);
    } catch (x) {
      setErr(x as Error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <tr data-pool={pool.name}>
      <td class="strong">{pool.name}</td>
      <td style={{ width: '40%' }}>
        <Usage used={pool.used} capacity={pool.capacity} />
      </td>
      <td>
        {admin ? (
          <form class="inline-form" onSubmit={save} noValidate>
            <div class={`field compact ${err ? 'has-error' : ''}`} data-field="capacity">
              <input
                type="number"
                min={0}
                max={100000}
                aria-label={`Capacity of ${pool.name}`}
                name="capacity"
                value={edit ?? String(pool.capacity)}
                onInput={(e) => setEdit(val(e))}
              />
              {err && <div class="field-error">{err.message}</div>}
            </div>
            {edit !== null && edit !== String(pool.capacity) && (
              <>
                <button class="btn btn-small btn-primary" type="submit" disabled={busy}>
                  {busy ? <Spinner /> : null} Save
                </button>
                <button class="btn btn-small btn-ghost" type="button" onClick={() => (setEdit(null), setErr(null))}>
                  Cancel
                </button>
              </>
            )}
          </form>
        ) : (
          pool.capacity
        )}
      </td>
    </tr>
  );
}

function PoolsTab({ admin }: { admin: boolean }) {
  const pools = useAsync(() => api.pools(), []);
  useInterval(pools.reload, 3000);
  const [name, setName] = useState('');
  const [cap, setCap] = useState('4');
  const [err, setErr] = useState<ApiError | Error | null>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    setErr(null);
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name)) {
      setErr(new ApiError(400, 'EINVAL', 'letters, digits, "_", "." or "-", at most 64', 'name'));
      return;
    }
    try {
      const p = await api.putPool(name, Number(cap));
      toast(`Pool ${p.name} created`);
      setName('');
      pools.reload();
    } catch (x) {
      setErr(x as Error);
    }
  };
  const items = pools.data?.items ?? [];
  const fe = (f: string) => (err instanceof ApiError && err.field === f ? err.message : null);
  return (
    <div>
      <ErrorBanner error={pools.error} onRetry={pools.reload} />
      {pools.loading && !pools.data ? (
        <Loading what="pools" />
      ) : items.length === 0 ? (
        <Empty title="No resource pools" icon="⚙">
          Pools cap how many instances use a shared resource at once (a database, an API quota).
        </Empty>
      ) : (
        <div class="card">
          <table class="table" data-testid="pool-table">
            <thead>
              <tr>
                <th>Pool</th>
                <th>Usage (live)</th>
                <th>Capacity</th>
              </tr>
            </thead>
            <tbody>
              {items.map((p) => (
                <PoolRow key={p.name} pool={p} admin={admin} onSaved={() => pools.reload()} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {admin && (
        <form class="card pad inline-create" onSubmit={create} noValidate>
          <h2>New pool</h2>
          <div class="row3">
            <Field label="Name" field="name" error={fe('name')}>
              <input name="pool-name" value={name} onInput={(e) => setName(val(e))} placeholder="warehouse" />
            </Field>
            <Field label="Capacity" field="capacity" error={fe('capacity')}>
              <input type="number" min={0} value={cap} onInput={(e) => setCap(val(e))} />
            </Field>
            <button class="btn btn-primary" type="submit">
              Create pool
            </button>
          </div>
          {err && !fe('name') && !fe('capacity') && <ErrorBanner error={err} />}
        </form>
      )}
    </div>
  );
}

function ExecutorsTab() {
  const ex = useAsync(() => api.executors(), []);
  useInterval(ex.reload, 5000, !ex.missing);
  if (ex.missing)
    return (
      <Unavailable feature="The executor list" endpoint="GET /api/v1/executors">
        Once it exists, this page shows each executor's slots in use, its labels and when it was last heard from.
      </Unavailable>
    );
  if (ex.error) return <ErrorBanner error={ex.error} onRetry={ex.reload} />;
  if (!ex.data) return <Loading what="executors" />;
  const items = ex.data.items as { name: string; slots: number; used: number; labels?: Record<string, string>; last_seen?: string; alive?: boolean }[];
  if (items.length === 0) return <Empty title="No executor has registered">Start executord on a worker host.</Empty>;
  return (
    <div class="card">
      <table class="table">
        <thead>
          <tr>
            <th>Executor</th>
            <th>Slots</th>
            <th>Labels</th>
            <th>Liveness</th>
          </tr>
        </thead>
        <tbody>
          {items.map((x) => (
            <tr key={x.name}>
              <td class="strong">{x.name}</td>
              <td style={{ width: '35%' }}>
                <Usage used={x.used} capacity={x.slots} />
              </td>
              <td>
                {Object.entries(x.labels ?? {}).map(([k, v]) => (
                  <span key={k} class="tag">
                    {k}={v}
                  </span>
                ))}
              </td>
              <td>{x.alive ? <span class="badge st-success">alive</span> : <span class="badge st-failed">lost</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** An admin changes a user's role, teams or whether it may log in. Saving
 * ends every session of that user at once, which the card says. */
function UserEditor({ user, onSaved }: { user: User; onSaved: (u: User) => void }) {
  const [role, setRole] = useState<Role>(user.role as Role);
  const [teams, setTeams] = useState(user.teams.join(', '));
  const [active, setActive] = useState(user.active);
  const [err, setErr] = useState<ApiError | Error | null>(null);
  const [busy, setBusy] = useState(false);
  const teamList = teams.split(',').map((t) => t.trim()).filter(Boolean);
  const changed = role !== user.role || active !== user.active || teamList.join(',') !== user.teams.join(',');
  const save = async () => {
    setErr(null);
    setBusy(true);
    try {
      const patch: { role?: Role; teams?: string[]; active?: boolean } = {};
      if (role !== user.role) patch.role = role;
      if (teamList.join(',') !== user.teams.join(',')) patch.teams = teamList;
      if (active !== user.active) patch.active = active;
      const u = await api.updateUser(user.name, patch);
      toast(`User ${u.name} changed; their sessions ended`);
      onSaved(u);
    } catch (x) {
      setErr(x as Error);
    } finally {
      setBusy(false);
    }
  };
  const fe = (f: string) => (err instanceof ApiError && (err.field === f || err.field?.startsWith(`${f}[`)) ? err.message : null);
  return (
    <div class="user-editor" data-testid="user-editor">
      <div class="grid2">
        <Field label="Role" field="role" error={fe('role')}>
          <select value={role} onChange={(e) => setRole(val(e) as Role)} aria-label={`Role of ${user.name}`}>
            <option value="viewer">viewer</option>
            <option value="developer">developer</option>
            <option value="admin">admin</option>
          </select>
        </Field>
        <Field label="Teams" field="teams" error={fe('teams')} hint="Comma-separated team names">
          <input value={teams} onInput={(e) => setTeams(val(e))} aria-label={`Teams of ${user.name}`} />
        </Field>
      </div>
      <label class="check-line">
        <input type="checkbox" checked={active} onChange={(e) => setActive((e.currentTarget as HTMLInputElement).checked)} />{' '}
        May log in (active)
      </label>
      {err && !fe('role') && !fe('teams') && <ErrorBanner error={err} />}
      <p class="muted small">Saving ends every session of {user.name} at once; they log in again with what is now true.</p>
      <button class="btn btn-primary" type="button" disabled={!changed || busy} onClick={save}>
        {busy ? <Spinner /> : null} Save changes
      </button>
    </div>
  );
}

function UsersTab({ admin }: { admin: boolean }) {
  const users = useAsync(() => api.users(), []);
  const [lookup, setLookup] = useState('');
  const [found, setFound] = useState<User | null>(null);
  const [lookErr, setLookErr] = useState<unknown>(null);
  const [nu, setNu] = useState({ name: '', password: '', role: 'developer' as Role, teams: '' });
  const [nuErr, setNuErr] = useState<ApiError | Error | null>(null);
  const [team, setTeam] = useState('');
  const [teamErr, setTeamErr] = useState<ApiError | Error | null>(null);

  const look = async (e: Event) => {
    e.preventDefault();
    setLookErr(null);
    setFound(null);
    try {
      setFound(await api.user(lookup.trim()));
    } catch (x) {
      setLookErr(x);
    }
  };
  const createUser = async (e: Event) => {
    e.preventDefault();
    setNuErr(null);
    try {
      const u = await api.createUser({
        name: nu.name.trim(),
        password: nu.password,
        role: nu.role,
        teams: nu.teams.split(',').map((t) => t.trim()).filter(Boolean),
      });
      toast(`User ${u.name} created`);
      setNu({ name: '', password: '', role: 'developer', teams: '' });
      users.reload();
    } catch (x) {
      setNuErr(x as Error);
    }
  };
  const createTeam = async (e: Event) => {
    e.preventDefault();
    setTeamErr(null);
    try {
      const t = await api.createTeam(team.trim());
      toast(`Team ${t.name} created`);
      setTeam('');
    } catch (x) {
      setTeamErr(x as Error);
    }
  };
  const fe = (err: unknown, f: string) => (err instanceof ApiError && err.field === f ? err.message : null);
  const teamsFe = nuErr instanceof ApiError && nuErr.field?.startsWith('teams') ? nuErr.message : null;
  return (
    <div>
      {users.missing ? (
        <Unavailable feature="The user list" endpoint="GET /api/v1/users">
          Look a user up by name below.
        </Unavailable>
      ) : users.error ? (
        <ErrorBanner error={users.error} />
      ) : users.data ? (
        <div class="card">
          <table class="table">
            <tbody>
              {users.data.items.map((u) => (
                <tr key={u.id}>
                  <td class="strong">{u.name}</td>
                  <td>{u.role}</td>
                  <td>{u.teams.join(', ')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <Loading what="users" />
      )}
      <div class="grid2 gap">
        <form class="card pad" onSubmit={look} noValidate>
          <h2>Find a user</h2>
          <div class="row-inline">
            <input placeholder="user name" value={lookup} onInput={(e) => setLookup(val(e))} aria-label="User name" />
            <button class="btn" type="submit" disabled={!lookup.trim()}>
              Look up
            </button>
          </div>
          {lookErr ? (
            lookErr instanceof ApiError && lookErr.status === 404 ? (
              <div class="field-error">No user named {lookup}.</div>
            ) : (
              <ErrorBanner error={lookErr} />
            )
          ) : null}
          {found && (
            <div class="kv user-card" data-testid="user-found">
              <span>Name</span>
              <span class="strong">{found.name}</span>
              <span>Role</span>
              <span>{found.role}</span>
              <span>Teams</span>
              <span>{found.teams.map((t) => <span key={t} class="tag">{t}</span>)}</span>
              <span>Active</span>
              <span>{found.active ? 'yes' : 'no'}</span>
            </div>
          )}
          {found && admin && (
            <UserEditor
              key={`${found.name}:${found.role}:${found.teams.join(',')}:${found.active}`}
              user={found}
              onSaved={(u) => {
                setFound(u);
                users.reload();
              }}
            />
          )}
        </form>
        {admin && (
          <form class="card pad" onSubmit={createTeam} noValidate>
            <h2>New team</h2>
            <Field label="Team name" field="name" error={fe(teamErr, 'name')}>
              <input value={team} onInput={(e) => setTeam(val(e))} placeholder="analytics" />
            </Field>
            {teamErr && !fe(teamErr, 'name') && <ErrorBanner error={teamErr} />}
            <button class="btn btn-primary" type="submit" disabled={!team.trim()}>
              Create team
            </button>
          </form>
        )}
      </div>
      {admin && (
        <form class="card pad" onSubmit={createUser} noValidate>
          <h2>New user</h2>
          <div class="grid2">
            <Field label="Name" field="name" error={fe(nuErr, 'name')}>
              <input value={nu.name} onInput={(e) => setNu({ ...nu, name: val(e) })} autocomplete="off" />
            </Field>
            <Field label="Password" field="password" error={fe(nuErr, 'password')} hint="8 to 1024 characters">
              <input type="password" value={nu.password} onInput={(e) => setNu({ ...nu, password: val(e) })} autocomplete="new-password" />
            </Field>
            <Field label="Role" field="role" error={fe(nuErr, 'role')}>
              <select value={nu.role} onChange={(e) => setNu({ ...nu, role: val(e) as Role })}>
                <option value="viewer">viewer — reads everything</option>
                <option value="developer">developer — changes their teams' tasks</option>
                <option value="admin">admin — everything</option>
              </select>
            </Field>
            <Field label="Teams" field="teams" error={teamsFe} hint="Comma-separated team names">
              <input value={nu.teams} onInput={(e) => setNu({ ...nu, teams: val(e) })} placeholder="analytics, finance" />
            </Field>
          </div>
          {nuErr && !['name', 'password', 'role'].includes((nuErr as ApiError).field ?? '') && !teamsFe && <ErrorBanner error={nuErr} />}
          <button class="btn btn-primary" type="submit">
            Create user
          </button>
        </form>
      )}
    </div>
  );
}

const TABS = [
  { id: 'pools', label: 'Resource pools' },
  { id: 'executors', label: 'Executors' },
  { id: 'datasources', label: 'Data sources' },
  { id: 'users', label: 'Users and teams' },
];

export function AdminPage({ tab }: { tab: string }) {
  const me = useMe();
  const admin = me.role === 'admin';
  return (
    <div>
      <PageHead title="Administration" sub={admin ? 'Capacity, workers and people.' : 'Read-only: only admins change these.'} />
      <SectionNav label="Administration" items={TABS.map((t) => ({ to: `/admin/${t.id}`, label: t.label }))} current={`/admin/${tab}`} />
      {tab === 'pools' ? (
        <PoolsTab admin={admin} />
      ) : tab === 'executors' ? (
        <ExecutorsTab />
      ) : tab === 'datasources' ? (
        <DataSourcesTab admin={admin} />
      ) : tab === 'users' ? (
        <UsersTab admin={admin} />
      ) : (
        <Empty title="No such tab" />
      )}
    </div>
  );
}
