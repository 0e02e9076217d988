// metabrowser.tsx - a data source's catalog on the data-sources page:
// its schemas and tables with row estimates (a search box and a schema
// filter over the whole list, which galaxyd caches once), then a table's
// columns (database type, wormhole value kind, nullability, primary-key
// position). Both come from halleyd's cache; "Refresh" reads the catalog
// again through an executor and shows when the answer was fetched.
import { useMemo, useState } from 'preact/hooks';
import { api, type DsTable, type DsTableRef } from '../api';
import { fmtRelative, fmtTime } from '../format';
import { Empty, ErrorBanner, Field, Loading, Spinner, useAsync, val } from './ui';
import './metabrowser.css';

const SHOWN = 300; // table rows rendered at once; the search narrows the rest

function Fetched({ at }: { at: string | null | undefined }) {
  if (!at) return null;
  return (
    <span class="muted small" title={fmtTime(at)} data-testid="meta-fetched">
      fetched {fmtRelative(at)}
    </span>
  );
}

function estimate(n: number | null | undefined): string {
  return n === null || n === undefined ? '—' : `≈ ${n.toLocaleString()}`;
}

function Columns(props: { ds: string; table: string }) {
  const [refresh, setRefresh] = useState(0);
  const t = useAsync<DsTable>(() => api.dsTable(props.ds, props.table, refresh > 0), [props.ds, props.table, refresh]);
  const d = t.data;
  return (
    <section class="card pad meta-columns" aria-labelledby="meta-table-title" data-testid="meta-columns">
      <div class="meta-head">
        <h3 id="meta-table-title" class="mono">
          {props.table}
        </h3>
        <div class="meta-head-actions">
          {d && <Fetched at={d.fetched_at} />}
          <button class="btn btn-small" onClick={() => setRefresh(refresh + 1)} disabled={t.loading} data-testid="meta-table-refresh">
            {t.loading && d ? <Spinner /> : null} Refresh
          </button>
        </div>
      </div>
      <ErrorBanner error={t.error} onRetry={t.reload} />
      {t.loading && !d ? (
        <Loading what="columns" />
      ) : d ? (
        <>
          <p class="muted small">
            {d.kind === 'view' ? 'View' : 'Table'} · {estimate(d.row_estimate)} rows · primary key{' '}
            {d.primary_key.length ? <span class="mono">{d.primary_key.join(', ')}</span> : 'none'}
          </p>
          <div class="table-wrap">
            <table class="table" data-testid="meta-column-table">
              <thead>
                <tr>
                  <th class="right">#</th>
                  <th>Column</th>
                  <th>Type</th>
                  <th>Kind</th>
                  <th>Nullable</th>
                  <th>Key</th>
                </tr>
              </thead>
              <tbody>
                {d.columns.map((c) => (
                  <tr key={c.name} data-column={c.name}>
                    <td class="right muted">{c.ordinal}</td>
                    <td class="mono strong">{c.name}</td>
                    <td class="mono small">{c.type}</td>
                    <td>
                      <span class="tag">{c.kind}</span>
                    </td>
                    <td class="nowrap">{c.nullable ? 'yes' : <span class="strong">NOT NULL</span>}</td>
                    <td class="nowrap">{c.primary_key ? <span class="tag tag-key" title={`primary key, position ${c.primary_key}`}>PK {c.primary_key}</span> : ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      ) : null}
    </section>
  );
}

export function MetaBrowser(props: { ds: string; onClose: () => void }) {
  const [refresh, setRefresh] = useState(0);
  const list = useAsync(() => api.dsTables(props.ds, { limit: 100000, ...(refresh ? { refresh: 1 } : {}) }), [props.ds, refresh]);
  const [q, setQ] = useState('');
  const [schema, setSchema] = useState('');
  const [picked, setPicked] = useState<string | null>(null);
  const all: DsTableRef[] = list.data?.tables ?? [];
  const schemas = useMemo(() => Array.from(new Set(all.map((t) => t.schema))).sort(), [all]);
  const shown = useMemo(() => {
    const needle = q.trim().toLowerCase();
    return all.filter((t) => (!schema || t.schema === schema) && (!needle || `${t.schema}.${t.name}`.toLowerCase().includes(needle)));
  }, [all, q, schema]);
  return (
    <section class="meta-browser section-gap" aria-labelledby="meta-title" data-testid="meta-browser" data-ds={props.ds}>
      <div class="meta-head">
        <h2 id="meta-title">
          Tables of <span class="mono">{props.ds}</span>
        </h2>
        <div class="meta-head-actions">
          {list.data && <Fetched at={list.data.fetched_at} />}
          <button class="btn btn-small" onClick={() => setRefresh(refresh + 1)} disabled={list.loading} data-testid="meta-refresh">
            {list.loading && list.data ? <Spinner /> : null} Refresh
          </button>
          <button class="btn btn-small btn-ghost" onClick={props.onClose}>
            Close
          </button>
        </div>
      </div>
      <ErrorBanner error={list.error} onRetry={list.reload} />
      {list.loading && !list.data ? (
        <Loading what="tables" />
      ) : list.data ? (
        <div class="meta-grid">
          <div class="card pad meta-tables">
            <div class="row2">
              <Field label="Search tables">
                <input type="search" value={q} onInput={(e) => setQ(val(e))} placeholder="schema.table" data-testid="meta-search" />
              </Field>
              <Field label="Schema">
                <select value={schema} onChange={(e) => setSchema(val(e))} data-testid="meta-schema">
                  <option value="">All schemas ({schemas.length})</option>
                  {schemas.map((s) => (
                    <option key={s} value={s}>
                      {s}
                    </option>
                  ))}
                </select>
              </Field>
            </div>
            <p class="muted small" aria-live="polite" data-testid="meta-count">
              {shown.length === all.length ? `${all.length} tables and views` : `${shown.length} of ${all.length} tables and views`}
              {list.data.truncated ? ' (list cut by the server)' : ''}
            </p>
            {shown.length === 0 ? (
              <Empty title={all.length ? 'No table matches' : 'No tables'} icon="⛁" />
            ) : (
              <div class="table-wrap meta-table-list">
                <table class="table" data-testid="meta-table-list">
                  <thead>
                    <tr>
                      <th>Table</th>
                      <th>Kind</th>
                      <th class="right">Rows</th>
                    </tr>
                  </thead>
                  <tbody>
                    {shown.slice(0, SHOWN).map((t) => {
                      const full = `${t.schema}.${t.name}`;
                      return (
                        <tr key={full} data-table={full} class={picked === full ? 'selected' : ''}>
                          <td>
                            <button class="linklike mono" aria-pressed={picked === full} onClick={() => setPicked(full)}>
                              <span class="muted">{t.schema}.</span>
                              {t.name}
                            </button>
                          </td>
                          <td>
                            <span class="tag">{t.kind}</span>
                          </td>
                          <td class="right nowrap small">{estimate(t.row_estimate)}</td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
                {shown.length > SHOWN && <p class="muted small">{shown.length - SHOWN} more: narrow the search.</p>}
              </div>
            )}
          </div>
          {picked ? (
            <Columns ds={props.ds} table={picked} />
          ) : (
            <div class="card pad meta-columns">
              <Empty title="Pick a table" icon="▤">
                Its columns, types, nullability and primary key show here.
              </Empty>
            </div>
          )}
        </div>
      ) : null}
    </section>
  );
}
