// datasources.tsx - the data sources tab of the admin console: the list
// (kind, connection parameters, whether a password is stored; secrets are
// never returned), an editor (kind, parameters as key/value rows, a new
// password or "keep the stored one") and a connection test per source whose
// result (ok or the error, with the time it took) stays next to the row.
// "Browse" opens the source's catalog below the list (MetaBrowser): any
// logged-in user may read table and column names.
import { useState } from 'preact/hooks';
import { api, ApiError, type DataSource } from '../api';
import { Empty, ErrorBanner, Field, Loading, Modal, Spinner, Unavailable, toast, useAsync, val } from '../components/ui';
import { fmtRelative } from '../format';
import { MetaBrowser } from '../components/metabrowser';

const KINDS = ['postgresql', 'mysql', 'hdfs', 'redis', 'kafka', 'http'];
const NAME_RE = /^[A-Za-z0-9_.-]{1,128}$/;

type TestResult = { ok: boolean; message: string; elapsed_ms: number } | { error: unknown } | 'running';

function paramText(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function Editor(props: { ds: DataSource | null; onClose: () => void; onSaved: () => void }) {
  const [name, setName] = useState(props.ds?.name ?? '');
  const [kind, setKind] = useState(props.ds?.kind ?? 'postgresql');
  const [rows, setRows] = useState<[string, string][]>(() => {
    const p = Object.entries(props.ds?.params ?? { host: '127.0.0.1', port: 5432, database: '', user: '' });
    return p.map(([k, v]) => [k, paramText(v)]);
  });
  const [password, setPassword] = useState('');
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const save = async () => {
    setErr(null);
    if (!NAME_RE.test(name)) {
      setErr(new ApiError(400, 'EINVAL', 'letters, digits, "_", "." or "-", 1 to 128', 'name'));
      return;
    }
    const params: Record<string, unknown> = {};
    for (const [k, v] of rows) {
      if (!k.trim()) continue;
      if (k.trim() === 'password') {
        setErr(new ApiError(400, 'EINVAL', 'put the password in the password field: parameters are readable by everyone', 'params.password'));
        return;
      }
      params[k.trim()] = /^\d+$/.test(v) ? Number(v) : v === 'true' ? true : v === 'false' ? false : v;
    }
    setBusy(true);
    try {
      await api.putDatasource(name, { kind, params, ...(password ? { password } : {}) });
      toast(`Data source ${name} saved`);
      props.onSaved();
      props.onClose();
    } catch (x) {
      setErr(x);
    } finally {
      setBusy(false);
    }
  };
  const fe = (f: string) => (err instanceof ApiError && (err.field === f || err.field?.startsWith(`${f}.`)) ? err.message : null);
  return (
    <Modal
      title={props.ds ? `Edit data source ${props.ds.name}` : 'New data source'}
      onClose={props.onClose}
      footer={
        <>
          <button class="btn" onClick={props.onClose}>
            Cancel
          </button>
          <button class="btn btn-primary" onClick={save} disabled={busy} data-testid="ds-save">
            {busy ? <Spinner /> : null} Save
          </button>
        </>
      }
    >
      <div class="row2">
        <Field label="Name" field="name" error={fe('name')}>
          <input name="ds-name" value={name} disabled={!!props.ds} onInput={(e) => setName(val(e))} placeholder="warehouse" />
        </Field>
        <Field label="Kind" field="kind" error={fe('kind')}>
          <select name="ds-kind" value={kind} onChange={(e) => setKind(val(e))}>
            {Array.from(new Set([...KINDS, kind])).map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </Field>
      </div>
      <Field label="Connection parameters" field="params" error={fe('params')}>
        <div class="param-rows">
          {rows.map(([k, v], i) => (
            <div class="param-row" key={i}>
              <input aria-label={`Parameter ${i + 1} name`} value={k} onInput={(e) => setRows(rows.map((r, j) => (j === i ? [val(e), r[1]] : r)))} />
              <input aria-label={`Parameter ${i + 1} value`} value={v} onInput={(e) => setRows(rows.map((r, j) => (j === i ? [r[0], val(e)] : r)))} />
              <button class="icon-btn" type="button" aria-label="Remove parameter" onClick={() => setRows(rows.filter((_, j) => j !== i))}>
                ×
              </button>
            </div>
          ))}
          <button class="btn btn-small btn-ghost" type="button" onClick={() => setRows([...rows, ['', '']])}>
            + Parameter
          </button>
        </div>
      </Field>
      <Field
        label="Password"
        field="password"
        error={fe('password')}
        hint={props.ds?.has_password ? 'A password is stored; leave empty to keep it.' : 'Stored encrypted; never shown again.'}
      >
        <input type="password" name="ds-password" autocomplete="new-password" value={password} onInput={(e) => setPassword(val(e))} />
      </Field>
      {err && !fe('name') && !fe('kind') && !fe('params') && !fe('password') ? <ErrorBanner error={err} /> : null}
    </Modal>
  );
}

function TestCell({ r }: { r: TestResult | undefined }) {
  if (!r) return <span class="muted small">not tested</span>;
  if (r === 'running')
    return (
      <span class="small">
        <Spinner /> connecting…
      </span>
    );
  if ('error' in r) return <span class="danger-text small">{(r.error as Error).message}</span>;
  return (
    <span class={`small ${r.ok ? 'ok-text' : 'danger-text'}`} data-test-result={r.ok ? 'ok' : 'failed'}>
      {r.ok ? '✓ ok' : '✗ failed'} in {r.elapsed_ms} ms{r.message ? ` — ${r.message}` : ''}
    </span>
  );
}

export function DataSourcesTab({ admin }: { admin: boolean }) {
  const list = useAsync(() => api.datasources(), []);
  const [edit, setEdit] = useState<DataSource | null | 'new'>(null);
  const [tests, setTests] = useState<Record<string, TestResult>>({});
  const [browse, setBrowse] = useState<string | null>(null);
  const test = async (name: string) => {
    setTests((t) => ({ ...t, [name]: 'running' }));
    try {
      const r = await api.testDatasource(name);
      setTests((t) => ({ ...t, [name]: r }));
    } catch (e) {
      setTests((t) => ({ ...t, [name]: { error: e } }));
    }
  };
  if (list.missing)
    return (
      <Unavailable feature="The data source list" endpoint="GET /api/v1/datasources">
        Once it exists, data sources used by transfer tasks show here with a connection test.
      </Unavailable>
    );
  const items = list.data?.items ?? [];
  return (
    <div>
      {admin && (
        <div class="btn-row section-gap">
          <button class="btn btn-primary" onClick={() => setEdit('new')}>
            + New data source
          </button>
        </div>
      )}
      <ErrorBanner error={list.error} onRetry={list.reload} />
      {list.loading && !list.data ? (
        <Loading what="data sources" />
      ) : items.length === 0 ? (
        !list.error && (
          <Empty title="No data sources" icon="⛁">
            Transfer tasks read from and write to data sources defined here.
          </Empty>
        )
      ) : (
        <div class="card">
          <table class="table" data-testid="ds-table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Kind</th>
                <th>Parameters</th>
                <th>Password</th>
                <th>Connection test</th>
                <th class="right" />
              </tr>
            </thead>
            <tbody>
              {items.map((d) => (
                <tr key={d.name} data-ds={d.name}>
                  <td>
                    <span class="strong">{d.name}</span>
                    {d.updated_at && <div class="muted small">updated {fmtRelative(d.updated_at)}</div>}
                  </td>
                  <td>
                    <span class="tag">{d.kind}</span>
                  </td>
                  <td class="small mono">
                    {Object.entries(d.params).map(([k, v]) => (
                      <div key={k}>
                        {k}={paramText(v)}
                      </div>
                    ))}
                  </td>
                  <td>{d.has_password ? 'stored' : <span class="muted">none</span>}</td>
                  <td>
                    <TestCell r={tests[d.name]} />
                  </td>
                  <td class="right nowrap">
                    {(d.kind === 'postgresql' || d.kind === 'mysql' || d.kind === 'mariadb') && (
                      <button
                        class="btn btn-small"
                        aria-pressed={browse === d.name}
                        onClick={() => setBrowse(browse === d.name ? null : d.name)}
                        data-testid="ds-browse"
                      >
                        Browse
                      </button>
                    )}
                    {admin && (
                      <>
                        <button class="btn btn-small" onClick={() => test(d.name)} disabled={tests[d.name] === 'running'}>
                          Test
                        </button>
                        <button class="btn btn-small btn-ghost" onClick={() => setEdit(d)}>
                          Edit
                        </button>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {browse && <MetaBrowser key={browse} ds={browse} onClose={() => setBrowse(null)} />}
      {edit && <Editor ds={edit === 'new' ? null : edit} onClose={() => setEdit(null)} onSaved={list.reload} />}
    </div>
  );
}
