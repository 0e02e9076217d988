// admin.tsx - the admin console: resource pools (capacity editing, usage
// refreshed every 3 s), executors (slots, labels, liveness), data sources
// (datasources.tsx), and users and teams (users searched by name and role,
// edited or disabled in place; teams with their members). Non-admins see the
// same pages read-only. Sections galaxyd has no endpoint for yet show a "not
// available yet" state.
import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, type Pool, type Role, type User } from '../api';
import { Confirm, Empty, ErrorBanner, Field, Loading, PageHead, SectionNav, Spinner, Unavailable, toast, useAsync, useInterval, val } from '../components/ui';
import '../components/objects.css';
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

/** The users: searched by name (and role), each row with role, teams and
 * whether it may log in; an admin opens a row to edit it, or disables /
 * enables it at once (its sessions and API tokens stop at once). */
function UsersTab({ admin }: { admin: boolean }) {
  const [q, setQ] = useState('');
  const [role, setRole] = useState('');
  const [typed, setTyped] = useState('');
  useEffect(() => {
    const h = window.setTimeout(() => setQ(typed.trim()), 250);
    return () => window.clearTimeout(h);
  }, [typed]);
  const users = useAsync(() => api.searchUsers({ q: q || undefined, role: role || undefined, limit: 200 }), [q, role]);
  const teams = useAsync(() => api.teams(), []);
  const [open, setOpen] = useState<string | null>(null);
  const [toggle, setToggle] = useState<User | null>(null);
  const [nu, setNu] = useState({ name: '', password: '', role: 'developer' as Role, teams: '' });
  const [nuErr, setNuErr] = useState<ApiError | Error | null>(null);
  const [team, setTeam] = useState('');
  const [teamErr, setTeamErr] = useState<ApiError | Error | null>(null);

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
      teams.reload();
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
      teams.reload();
    } catch (x) {
      setTeamErr(x as Error);
    }
  };
  const fe = (err: unknown, f: string) => (err instanceof ApiError && err.field === f ? err.message : null);
  const teamsFe = nuErr instanceof ApiError && nuErr.field?.startsWith('teams') ? nuErr.message : null;
  const items = users.data?.items ?? [];
  return (
    <div>
      <section class="card pad" aria-labelledby="users-h">
        <h2 id="users-h">Users</h2>
        <div class="obj-search">
          <input type="search" aria-label="Search users by name" placeholder="Name starts with…" value={typed} onInput={(e) => setTyped(val(e))} />
          <select aria-label="Role filter" value={role} onChange={(e) => setRole(val(e))}>
            <option value="">Every role</option>
            <option value="admin">admin</option>
            <option value="developer">developer</option>
            <option value="viewer">viewer</option>
          </select>
          <span class="muted small" aria-live="polite">
            {users.data ? `${items.length}${users.data.next_page_token ? '+' : ''} shown` : ''}
          </span>
        </div>
        <ErrorBanner error={users.error} onRetry={users.reload} />
        {users.loading && !users.data ? (
          <Loading what="users" />
        ) : items.length === 0 ? (
          <Empty title="No user matches" />
        ) : (
          <div class="table-wrap">
            <table class="table" data-testid="user-table">
              <thead>
                <tr>
                  <th>User</th>
                  <th>Role</th>
                  <th>Teams</th>
                  <th>May log in</th>
                  {admin && (
                    <th>Actions</th>
                  )}
                </tr>
              </thead>
              <tbody>
                {items.map((u) => (
                  <Fragment key={u.id}>
                    <tr data-user={u.name}>
                      <td class="strong">{u.name}</td>
                      <td>{u.role}</td>
                      <td>
                        <span class="members">
                          {u.teams.length ? u.teams.map((t) => <span key={t} class="tag">{t}</span>) : <span class="muted">none</span>}
                        </span>
                      </td>
                      <td>{u.active ? <span>yes</span> : <span class="badge st-failed">disabled</span>}</td>
                      {admin && (
                        <td class="nowrap">
                          <button class="btn btn-small" aria-expanded={open === u.name} onClick={() => setOpen(open === u.name ? null : u.name)} aria-label={`Edit ${u.name}`}>
                            Edit
                          </button>{' '}
                          <button class={`btn btn-small ${u.active ? 'btn-danger' : ''}`} onClick={() => setToggle(u)} aria-label={`${u.active ? 'Disable' : 'Enable'} ${u.name}`}>
                            {u.active ? 'Disable' : 'Enable'}
                          </button>
                        </td>
                      )}
                    </tr>
                    {admin && open === u.name && (
                      <tr class="row-editor">
                        <td colSpan={5}>
                          <UserEditor
                            key={`${u.name}:${u.role}:${u.teams.join(',')}:${u.active}`}
                            user={u}
                            onSaved={() => {
                              setOpen(null);
                              users.reload();
                              teams.reload();
                            }}
                          />
                        </td>
                      </tr>
                    )}
                  </Fragment>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section class="card pad" aria-labelledby="teams-h">
        <h2 id="teams-h">Teams</h2>
        <ErrorBanner error={teams.error} onRetry={teams.reload} />
        {teams.data ? (
          teams.data.items.length === 0 ? (
            <Empty title="No teams yet" />
          ) : (
            <div class="table-wrap">
              <table class="table" data-testid="team-table">
                <thead>
                  <tr>
                    <th>Team</th>
                    <th class="num">Members</th>
                    <th>Who</th>
                  </tr>
                </thead>
                <tbody>
                  {teams.data.items.map((t) => (
                    <tr key={t.id} data-team={t.name}>
                      <td class="strong">{t.name}</td>
                      <td class="num">{t.members.length}</td>
                      <td>
                        <span class="members">
                          {t.members.length ? t.members.map((m) => <span key={m} class="tag">{m}</span>) : <span class="muted">nobody yet</span>}
                        </span>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        ) : (
          !teams.error && <Loading what="teams" />
        )}
      </section>
      {admin && (
        <div class="grid2 gap">
          <form class="card pad" onSubmit={createUser} noValidate>
            <h2>New user</h2>
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
            {nuErr && !['name', 'password', 'role'].includes((nuErr as ApiError).field ?? '') && !teamsFe && <ErrorBanner error={nuErr} />}
            <button class="btn btn-primary" type="submit">
              Create user
            </button>
          </form>
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
        </div>
      )}
      {toggle && (
        <Confirm
          title={`${toggle.active ? 'Disable' : 'Enable'} ${toggle.name}?`}
          body={
            toggle.active
              ? `${toggle.name} is logged out at once everywhere, cannot log in, and their API tokens stop working until an admin enables them again.`
              : `${toggle.name} may log in again and their API tokens work again.`
          }
          confirmLabel={toggle.active ? 'Disable' : 'Enable'}
          danger={toggle.active}
          onClose={() => setToggle(null)}
          onConfirm={async () => {
            const u = await api.updateUser(toggle.name, { active: !toggle.active });
            toast(`User ${u.name} ${u.active ? 'enabled' : 'disabled'}`);
            users.reload();
          }}
        />
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
      <div class="admin-sections">
        <SectionNav label="Administration" items={TABS.map((t) => ({ to: `/admin/${t.id}`, label: t.label }))} current={`/admin/${tab}`} />
      </div>
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
