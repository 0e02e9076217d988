// streams.tsx - sort streams (sortd's spec per stream, kept by Halley and
// published to ZooKeeper) and the data units they land.
//
// /streams lists the streams (admins create one from a JSON spec);
// /streams/{name} shows one: its spec (admins edit it and switch it on or
// off), a chart of records per data-time bucket (stacked by interface) with
// late records, and the units table (records, files, bytes, late records,
// check status) with business / interface / time / reconciled filters kept
// in the URL.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, ApiError, type DataUnit, type SortStream } from '../api';
import { TimeChart } from '../components/chart';
import { Empty, ErrorBanner, Field, Link, Loading, PageHead, Spinner, Unavailable, toast, useAsync, useInterval, val } from '../components/ui';
import { fmtRelative, fmtShort, localToIso } from '../format';
import { useRoute } from '../router';
import { useMe } from '../session';
import { fmtBytes } from './packages';

const PALETTE = ['#1f5fd6', '#23a55a', '#ef8a17', '#8e5bd6', '#139c96', '#e0453a', '#5b8def', '#8a94a6'];

const EXAMPLE = {
  name: 'clicks',
  business: 'b42',
  source: { type: 'file', path: '/data/clicks' },
  format: { type: 'delimited', delimiter: '|', fields: ['id', 'ts', 'iface', 'user', 'url'] },
  interface: { field: 'iface' },
  interfaces: ['login', 'pay'],
  time: { field: 'ts', format: '%Y-%m-%d %H:%M:%S', timezone: 'UTC' },
  bucket: 'hour',
};

function bucketMs(b: string | number | null): number {
  if (b === null) return 0; // no bucket time: the epoch, as Date(null) reads it
  return typeof b === 'number' ? b : new Date(b).getTime();
}

function StreamEditor(props: { stream: SortStream | null; onSaved: (s: SortStream) => void; onCancel?: () => void }) {
  const [text, setText] = useState(() => JSON.stringify(props.stream?.spec ?? EXAMPLE, null, 2));
  const [active, setActive] = useState(props.stream?.active ?? true);
  const [err, setErr] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const save = async (e: Event) => {
    e.preventDefault();
    setErr(null);
    let spec: Record<string, unknown>;
    try {
      spec = JSON.parse(text);
    } catch (x) {
      setErr(new ApiError(400, 'EINVAL', `the spec is not valid JSON: ${(x as Error).message}`, 'spec'));
      return;
    }
    if (typeof spec !== 'object' || spec === null || Array.isArray(spec) || typeof spec.name !== 'string' || !spec.name) {
      setErr(new ApiError(400, 'EINVAL', 'the spec must be an object with a "name"', 'spec.name'));
      return;
    }
    if (props.stream && spec.name !== props.stream.name) {
      setErr(new ApiError(400, 'EINVAL', `the name must stay "${props.stream.name}"`, 'spec.name'));
      return;
    }
    setBusy(true);
    try {
      const s = await api.putStream(spec.name, spec, active);
      toast(`Stream ${s.name} saved (version ${s.version})`);
      props.onSaved(s);
    } catch (x) {
      setErr(x);
    } finally {
      setBusy(false);
    }
  };
  const field = err instanceof ApiError ? err.field : null;
  return (
    <form class="card pad" onSubmit={save} noValidate data-testid="stream-editor">
      <h2>{props.stream ? 'Edit the spec' : 'New stream'}</h2>
      <Field
        label="Spec (JSON)"
        field="spec"
        error={err ? `${field ? `${field}: ` : ''}${(err as Error).message}` : null}
        hint="The fields are described in the sort stream reference (docs/sort.md)."
      >
        <textarea class="mono" rows={14} name="stream-spec" value={text} onInput={(e) => setText(val(e))} spellcheck={false} />
      </Field>
      <label class="check-line">
        <input type="checkbox" checked={active} onChange={(e) => setActive(e.currentTarget.checked)} /> Active (sortd runs it)
      </label>
      <div class="btn-row">
        <button class="btn btn-primary" type="submit" disabled={busy}>
          {busy ? <Spinner /> : null} {props.stream ? 'Save and publish' : 'Create stream'}
        </button>
        {props.onCancel && (
          <button class="btn btn-ghost" type="button" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

export function StreamsPage() {
  const { navigate } = useRoute();
  const me = useMe();
  const list = useAsync(() => api.streams(), []);
  const [creating, setCreating] = useState(false);
  if (list.missing)
    return (
      <div>
        <PageHead title="Streams" />
        <Unavailable feature="Sort streams" endpoint="GET /api/v1/streams">
          Once it exists, sortd's streams and their data units show here.
        </Unavailable>
      </div>
    );
  const items = list.data?.items ?? [];
  return (
    <div>
      <PageHead
        title="Streams"
        sub="Record streams that sortd splits into data units by business, interface and time bucket."
        actions={
          me.role === 'admin' &&
          !creating && (
            <button class="btn btn-primary" onClick={() => setCreating(true)}>
              + New stream
            </button>
          )
        }
      />
      {creating && <StreamEditor stream={null} onSaved={(s) => navigate(`/streams/${encodeURIComponent(s.name)}`)} onCancel={() => setCreating(false)} />}
      <ErrorBanner error={list.error} onRetry={list.reload} />
      {list.loading && !list.data ? (
        <Loading what="streams" />
      ) : items.length === 0 ? (
        !list.error && (
          <Empty title="No streams yet" icon="≋">
            {me.role === 'admin' ? 'Create one from its JSON spec.' : 'Admins define streams.'}
          </Empty>
        )
      ) : (
        <div class="card">
          <table class="table" data-testid="stream-table">
            <thead>
              <tr>
                <th>Stream</th>
                <th>Business</th>
                <th>Source</th>
                <th>Bucket</th>
                <th>Version</th>
                <th>Updated</th>
              </tr>
            </thead>
            <tbody>
              {items.map((s) => {
                const src = (s.spec.source ?? {}) as { type?: string };
                return (
                  <tr key={s.name} data-stream={s.name}>
                    <td>
                      <Link to={`/streams/${encodeURIComponent(s.name)}`} class="strong">
                        {s.name}
                      </Link>{' '}
                      {s.active ? <span class="badge st-success">active</span> : <span class="tag tag-muted">paused</span>}
                    </td>
                    <td>{String(s.spec.business ?? '—')}</td>
                    <td>{src.type ?? '—'}</td>
                    <td>{String(s.spec.bucket ?? '—')}</td>
                    <td>v{s.version}</td>
                    <td class="nowrap">{fmtRelative(s.updated_at)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

function UnitsChart({ units }: { units: DataUnit[] }) {
  const data = useMemo(() => {
    const xs = Array.from(new Set(units.map((u) => bucketMs(u.bucket)))).sort((a, b) => a - b);
    const idx = new Map(xs.map((x, i) => [x, i]));
    const ifaces = Array.from(new Set(units.map((u) => u.interface))).sort();
    const per = new Map(ifaces.map((i) => [i, xs.map(() => 0)]));
    const late = xs.map(() => 0);
    for (const u of units) {
      const i = idx.get(bucketMs(u.bucket))!;
      per.get(u.interface)![i] += u.records;
      late[i] += u.late_records;
    }
    return {
      x: xs.map((x) => x / 1000),
      series: ifaces.map((f, i) => ({ label: f, color: PALETTE[i % PALETTE.length], values: per.get(f)! })),
      late: late.some((v) => v > 0) ? late : null,
    };
  }, [units]);
  if (data.x.length === 0) return <div class="muted">No units in this range.</div>;
  return (
    <>
      <TimeChart x={data.x} series={data.series} stacked height={240} testid="chart-units" />
      {data.late && (
        <TimeChart x={data.x} series={[{ label: 'Late records', color: '#e0453a', values: data.late }]} height={170} points />
      )}
    </>
  );
}

export function StreamPage({ name }: { name: string }) {
  const me = useMe();
  const { query, setQuery } = useRoute();
  const f = {
    business: query.get('business') ?? '',
    interface: query.get('interface') ?? '',
    from: query.get('from') ?? '',
    to: query.get('to') ?? '',
    reconciled: query.get('reconciled') ?? '',
  };
  const stream = useAsync(() => api.stream(name), [name]);
  const units = useAsync(
    () =>
      api.units(name, {
        business: f.business,
        interface: f.interface,
        from: f.from ? localToIso(f.from) : '',
        to: f.to ? localToIso(f.to) : '',
        reconciled: f.reconciled,
      }),
    [name, f.business, f.interface, f.from, f.to, f.reconciled],
  );
  useInterval(units.reload, 15000, !units.error);
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState(f);
  useEffect(() => setDraft(f), [query.toString()]);
  const set = (k: keyof typeof f, v: string) => setQuery({ ...f, [k]: v });

  if (stream.missing)
    return (
      <div>
        <PageHead title={name} />
        <Unavailable feature="Sort streams" endpoint={`GET /api/v1/streams/${name}`} />
      </div>
    );
  if (stream.error && !stream.data) return <ErrorBanner error={stream.error} onRetry={stream.reload} />;
  const s = stream.data;
  if (!s) return <Loading what="the stream" />;
  const list = units.data?.items ?? [];
  const total = (k: 'records' | 'bytes' | 'late_records' | 'files') => list.reduce((a, u) => a + u[k], 0);
  const checked = list.filter((u) => u.reconciled).length;
  const ifaces = Array.from(new Set([...list.map((u) => u.interface), ...((s.spec.interfaces as string[]) ?? [])])).sort();
  return (
    <div>
      <PageHead
        title={
          <>
            <Link to="/streams">Streams</Link> <span class="muted">/</span> {s.name}{' '}
            {s.active ? <span class="badge st-success">active</span> : <span class="tag tag-muted">paused</span>}
          </>
        }
        sub={
          <>
            business {String(s.spec.business ?? '—')} · bucket {String(s.spec.bucket ?? '—')} · version {s.version} · updated{' '}
            {fmtRelative(s.updated_at)}
          </>
        }
        actions={
          me.role === 'admin' &&
          !editing && (
            <button class="btn" onClick={() => setEditing(true)}>
              Edit spec
            </button>
          )
        }
      />
      {editing && (
        <StreamEditor
          stream={s}
          onSaved={(x) => {
            stream.setData(x);
            setEditing(false);
          }}
          onCancel={() => setEditing(false)}
        />
      )}
      <div class="stats-row">
        <div class="stat">
          <div class="stat-label">Units</div>
          <div class="stat-value">{units.data ? list.length.toLocaleString() : '…'}</div>
        </div>
        <div class="stat">
          <div class="stat-label">Records</div>
          <div class="stat-value">{units.data ? total('records').toLocaleString() : '…'}</div>
        </div>
        <div class="stat">
          <div class="stat-label">Bytes</div>
          <div class="stat-value">{units.data ? fmtBytes(total('bytes')) : '…'}</div>
        </div>
        <div class="stat">
          <div class="stat-label">Late records</div>
          <div class={`stat-value ${total('late_records') ? 'danger-text' : ''}`}>{units.data ? total('late_records').toLocaleString() : '…'}</div>
        </div>
        <div class="stat">
          <div class="stat-label">Checked</div>
          <div class="stat-value">{units.data ? `${checked} / ${list.length}` : '…'}</div>
        </div>
      </div>
      <form
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          setQuery(draft);
        }}
      >
        <input class="filter-input" aria-label="Business" placeholder="business" value={draft.business} onInput={(e) => setDraft({ ...draft, business: val(e) })} />
        <select aria-label="Interface" value={f.interface} onChange={(e) => set('interface', val(e))}>
          <option value="">All interfaces</option>
          {ifaces.map((i) => (
            <option key={i} value={i}>
              {i}
            </option>
          ))}
        </select>
        <label class="inline-label small">
          from <input type="datetime-local" aria-label="From" value={draft.from} onChange={(e) => set('from', val(e))} />
        </label>
        <label class="inline-label small">
          to <input type="datetime-local" aria-label="To" value={draft.to} onChange={(e) => set('to', val(e))} />
        </label>
        <select aria-label="Check status" value={f.reconciled} onChange={(e) => set('reconciled', val(e))}>
          <option value="">Checked or not</option>
          <option value="true">Checked only</option>
        </select>
        <button class="btn" type="submit">
          Apply
        </button>
      </form>
      <ErrorBanner error={units.error} onRetry={units.reload} />
      <section class="card pad">
        <h2>Records per bucket</h2>
        {units.data ? <UnitsChart units={list} /> : !units.error && <Loading what="units" />}
      </section>
      <section class="card">
        {units.data && list.length === 0 ? (
          <Empty title="No data units" icon="≋">
            Units appear once sortd lands records of this stream.
          </Empty>
        ) : (
          units.data && (
            <table class="table" data-testid="unit-table">
              <thead>
                <tr>
                  <th>Bucket</th>
                  <th>Business</th>
                  <th>Interface</th>
                  <th class="right">Records</th>
                  <th class="right">Files</th>
                  <th class="right">Bytes</th>
                  <th class="right">Late</th>
                  <th>Check</th>
                  <th>Updated</th>
                </tr>
              </thead>
              <tbody>
                {list.map((u) => (
                  <tr key={`${u.business}/${u.interface}/${u.bucket}`} data-unit={`${u.interface}@${u.bucket}`}>
                    <td class="nowrap">{fmtShort(new Date(bucketMs(u.bucket)).toISOString())}</td>
                    <td>{u.business}</td>
                    <td>
                      <span class="tag">{u.interface}</span>
                    </td>
                    <td class="right">{u.records.toLocaleString()}</td>
                    <td class="right">{u.files}</td>
                    <td class="right nowrap">{fmtBytes(u.bytes)}</td>
                    <td class={`right ${u.late_records ? 'danger-text' : ''}`}>{u.late_records.toLocaleString()}</td>
                    <td>
                      {u.reconciled ? (
                        <span class="badge st-success">checked v{u.check_version}</span>
                      ) : (
                        <span class="badge st-waiting">open</span>
                      )}
                    </td>
                    <td class="nowrap muted">{fmtRelative(u.updated_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        )}
      </section>
      <section class="card pad">
        <h2>Spec</h2>
        <pre class="spec-json">{JSON.stringify(s.spec, null, 2)}</pre>
      </section>
    </div>
  );
}
