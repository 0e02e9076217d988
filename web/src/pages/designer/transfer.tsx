// transfer.tsx - the designer's guided form of a transfer task's config (the
// wormhole job, docs/wormhole.md): source and target data sources and
// tables (searched through the data-metadata API), the column mapping of the
// first writer (auto-map by name; rename, skip, cast, constant; source and
// target types side by side, with a warning where a value may not fit),
// write mode, incremental column with its current watermark, split key and
// channels, dirty-row limit, and a preview of the first rows as they would
// be written (a dry run on an executor). A "JSON" tab keeps the raw job.
//
// The form edits spec.config like every other widget (ctx.set), so the spec
// panel shows the job live and the task is saved by the normal save. Keys
// the form does not show (quality, limits, ...) are kept as they are.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, ApiError, type DataSource, type DsColumn, type DsTable, type TransferPreview } from '../../api';
import { ErrorBanner, Field, Spinner, Tabs, val } from '../../components/ui';
import { JsonObject } from './inputs';
import { getIn, type Ctx, type Obj } from './state';

type Entry = { target: string; source?: string; cast?: string; constant?: string | null };
type Endpoint = Obj & { type?: string; datasource?: string; table?: string };

const CASTS = ['text', 'int', 'bigint', 'numeric', 'float', 'bool', 'date', 'time', 'timestamp', 'timestamptz', 'bytes', 'json'];
const MODES = ['append', 'truncate', 'replace', 'upsert', 'staging'];

/** The endpoint type a data source kind is read and written with. */
function endpointType(kind: string | undefined): string | undefined {
  if (kind === 'postgresql' || kind === 'postgres') return 'postgres';
  if (kind === 'mysql' || kind === 'mariadb') return 'mysql';
  return undefined;
}

/** Characters a varchar/char type holds ("varchar(50)", "character varying(50)"), or 0. */
function textSize(type: string): number {
  const m = /(?:char|varchar|character varying|character)\((\d+)\)/i.exec(type);
  return m ? Number(m[1]) : 0;
}

function intBytes(type: string): number {
  const t = type.toLowerCase();
  if (/^(smallint|int2)/.test(t)) return 2;
  if (/^(integer|int4|int\b|int$|mediumint)/.test(t)) return 4;
  if (/^(bigint|int8)/.test(t)) return 8;
  if (/^tinyint/.test(t)) return 1;
  return 0;
}

/** Why a value of the source column may not fit the target column, or ''. */
export function fitWarning(src: DsColumn | undefined, dst: DsColumn, cast?: string): string {
  const out: string[] = [];
  if (!src) return '';
  const kind = cast ? (cast === 'bigint' ? 'int' : cast) : src.kind;
  if (!cast && src.kind !== dst.kind && dst.kind !== 'text' && dst.kind !== 'other') out.push(`${src.kind} → ${dst.kind}: some values may not convert`);
  if (cast && src.kind !== kind && kind !== 'text') out.push(`cast ${src.kind} → ${cast}: some values may not convert`);
  const ds = textSize(dst.type);
  if (ds && (kind === 'text' || src.kind === 'text')) {
    const ss = textSize(src.type);
    if (!ss || ss > ds) out.push(`${src.type} → ${dst.type}: longer values do not fit`);
  }
  const sb = cast === 'bigint' ? 8 : cast === 'int' ? 4 : intBytes(src.type);
  const db = intBytes(dst.type);
  if (sb && db && sb > db) out.push(`${cast ?? src.type} → ${dst.type}: large numbers do not fit`);
  if (src.nullable && !dst.nullable) out.push('nullable → NOT NULL: rows with NULL are dirty');
  return out.join('; ');
}

/** The table picker: a search box whose suggestions come from the data source. */
function TablePicker(props: { label: string; ds: string | undefined; value: string; onPick: (t: string) => void; field: string; error: string | null; disabled: boolean; testid: string }) {
  const [q, setQ] = useState(props.value);
  const [opts, setOpts] = useState<string[]>([]);
  const [err, setErr] = useState<string | null>(null);
  useEffect(() => setQ(props.value), [props.value]);
  useEffect(() => {
    if (!props.ds) return;
    let live = true;
    const t = setTimeout(() => {
      api
        .dsTables(props.ds!, { q: q.includes('.') ? q.split('.').pop() : q, limit: 50 })
        .then((r) => {
          if (!live) return;
          setErr(null);
          setOpts(r.tables.map((x) => (x.schema ? `${x.schema}.${x.name}` : x.name)));
        })
        .catch((x) => live && setErr(x instanceof Error ? x.message : String(x)));
    }, 200);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [props.ds, q]);
  const listId = `${props.testid}-list`;
  return (
    <Field label={props.label} field={props.field} error={props.error ?? err} hint={props.ds ? 'Type to search the tables.' : 'Choose a data source first.'}>
      <input
        class="mono"
        list={listId}
        value={q}
        disabled={props.disabled || !props.ds}
        data-testid={props.testid}
        onInput={(e) => {
          const v = val(e);
          setQ(v);
          if (opts.includes(v)) props.onPick(v);
        }}
        onChange={(e) => props.onPick(val(e))}
      />
      <datalist id={listId}>
        {opts.map((o) => (
          <option key={o} value={o} />
        ))}
      </datalist>
    </Field>
  );
}

/** Columns of a table, read when the data source and table are set. */
function useColumns(ds: string | undefined, table: string | undefined): { t: DsTable | null; err: string | null; loading: boolean } {
  const [state, setState] = useState<{ t: DsTable | null; err: string | null; loading: boolean }>({ t: null, err: null, loading: false });
  useEffect(() => {
    if (!ds || !table) {
      setState({ t: null, err: null, loading: false });
      return;
    }
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    api
      .dsTable(ds, table)
      .then((t) => live && setState({ t, err: null, loading: false }))
      .catch((x) => live && setState({ t: null, err: x instanceof Error ? x.message : String(x), loading: false }));
    return () => {
      live = false;
    };
  }, [ds, table]);
  return state;
}

export function TransferConfig({ ctx }: { ctx: Ctx }) {
  const [tab, setTab] = useState<'form' | 'json'>('form');
  return (
    <div class="span2 transfer-config" data-testid="transfer-config">
      <Tabs
        label="Transfer configuration"
        tabs={[
          { id: 'form', label: 'Form' },
          { id: 'json', label: 'JSON' },
        ]}
        selected={tab}
        onSelect={setTab}
      >
        {tab === 'form' ? <TransferForm ctx={ctx} /> : <JsonObject ctx={ctx} path={['config']} label="Job (JSON)" hint="The wormhole job as it is saved (docs/wormhole.md)." />}
      </Tabs>
    </div>
  );
}

function TransferForm({ ctx }: { ctx: Ctx }) {
  const config = (getIn(ctx.spec, ['config']) as Obj | undefined) ?? {};
  const reader = (config.reader as Endpoint | undefined) ?? {};
  const writers = (config.writers as Endpoint[] | undefined) ?? [];
  const writer: Endpoint = writers[0] ?? {};
  const mapping = (writer.mapping as Entry[] | undefined) ?? [];
  const [sources, setSources] = useState<DataSource[]>([]);
  const [dsErr, setDsErr] = useState<unknown>(null);
  const [preview, setPreview] = useState<TransferPreview | null>(null);
  const [previewErr, setPreviewErr] = useState<unknown>(null);
  const [previewing, setPreviewing] = useState(false);
  const [mark, setMark] = useState<string | null>(null);
  const ro = ctx.readOnly;

  useEffect(() => {
    api
      .datasources()
      .then((r) => setSources(r.items.filter((d) => endpointType(d.kind))))
      .catch(setDsErr);
  }, []);

  const src = useColumns(reader.datasource, reader.table);
  const dst = useColumns(writer.datasource, writer.table);

  const setConfig = (next: Obj) => ctx.set(['config'], next);
  const setReader = (r: Endpoint) => setConfig({ ...config, reader: r });
  const setWriter = (w: Endpoint) => setConfig({ ...config, writers: [w, ...writers.slice(1)] });
  const kindOf = (name: string) => endpointType(sources.find((d) => d.name === name)?.kind);
  const setMapping = (m: Entry[]) => {
    const w = { ...writer };
    delete w.columns;
    if (m.length) w.mapping = m;
    else delete w.mapping;
    setWriter(w);
  };

  // Incremental watermark of the saved task, when it has one.
  const incr = reader.incremental as { column?: string; kind?: string } | undefined;
  const taskId = Number(new URLSearchParams(location.search).get('id')) || Number(/\/tasks\/(\d+)/.exec(location.pathname)?.[1]) || 0;
  useEffect(() => {
    setMark(null);
    if (!taskId || !incr?.column || !reader.table) return;
    api
      .taskWatermark(taskId, `${reader.table}.${incr.column}`)
      .then((w) => setMark(w.value))
      .catch(() => setMark(null));
  }, [taskId, incr?.column, reader.table]);

  const srcCols = src.t?.columns ?? [];
  const dstCols = dst.t?.columns ?? [];
  const byTarget = useMemo(() => new Map(mapping.map((e, i) => [e.target, { e, i }])), [JSON.stringify(mapping)]);
  const used = new Set(mapping.map((e) => e.source).filter(Boolean));
  const skipped = srcCols.filter((c) => !used.has(c.name)).map((c) => c.name);

  const autoMap = () => {
    const names = new Map(srcCols.map((c) => [c.name.toLowerCase(), c.name]));
    const m: Entry[] = [];
    for (const d of dstCols) {
      const cur = byTarget.get(d.name)?.e;
      const s = names.get(d.name.toLowerCase());
      if (cur) m.push(cur);
      else if (s) m.push({ target: d.name, source: s });
    }
    setMapping(m);
  };

  const setEntry = (target: string, e: Entry | null) => {
    const order = dstCols.map((c) => c.name);
    const rest = mapping.filter((x) => x.target !== target);
    const m = e ? [...rest, e] : rest;
    m.sort((a, b) => order.indexOf(a.target) - order.indexOf(b.target));
    setMapping(m);
  };

  const runPreview = async () => {
    setPreviewing(true);
    setPreviewErr(null);
    try {
      setPreview(await api.previewTransfer({ config } as Parameters<typeof api.previewTransfer>[0]));
    } catch (x) {
      setPreview(null);
      setPreviewErr(x);
    } finally {
      setPreviewing(false);
    }
  };

  const dsSelect = (label: string, value: string | undefined, onPick: (name: string) => void, field: string, testid: string) => (
    <Field label={label} field={field} error={ctx.err(field)}>
      <select value={value ?? ''} disabled={ro} data-testid={testid} onChange={(e) => onPick(val(e))}>
        <option value="">Choose a data source…</option>
        {sources.map((d) => (
          <option key={d.name} value={d.name}>
            {d.name} ({d.kind})
          </option>
        ))}
      </select>
    </Field>
  );
  const numberField = (label: string, path: string[], hint: string, testid: string, min = 0) => {
    const v = getIn(config, path);
    const p = ['config', ...path].join('.');
    return (
      <Field label={label} field={p} error={ctx.err(p)} hint={hint}>
        <input
          type="number"
          min={min}
          value={v === undefined ? '' : String(v)}
          disabled={ro}
          data-testid={testid}
          onInput={(e) => {
            const x = val(e);
            const next = { ...config };
            if (path.length === 1) {
              if (x === '') delete next[path[0]];
              else next[path[0]] = Number(x);
              setConfig(next);
            }
          }}
        />
      </Field>
    );
  };
  const mp = (k: number, key: string) => `config.writers.0.mapping.${k}.${key}`;

  return (
    <div class="transfer-form">
      <ErrorBanner error={dsErr} />
      <div class="grid2">
        {dsSelect(
          'Source data source',
          reader.datasource,
          (name) => setReader({ ...reader, type: kindOf(name), datasource: name || undefined }),
          'config.reader.datasource',
          'xf-src-ds',
        )}
        {dsSelect(
          'Target data source',
          writer.datasource,
          (name) => setWriter({ ...writer, type: kindOf(name), datasource: name || undefined }),
          'config.writers.0.datasource',
          'xf-dst-ds',
        )}
        <TablePicker
          label="Source table"
          ds={reader.datasource}
          value={reader.table ?? ''}
          onPick={(t) => setReader({ ...reader, table: t || undefined })}
          field="config.reader.table"
          error={ctx.err('config.reader.table') ?? src.err}
          disabled={ro}
          testid="xf-src-table"
        />
        <TablePicker
          label="Target table"
          ds={writer.datasource}
          value={writer.table ?? ''}
          onPick={(t) => setWriter({ ...writer, table: t || undefined })}
          field="config.writers.0.table"
          error={ctx.err('config.writers.0.table') ?? dst.err}
          disabled={ro}
          testid="xf-dst-table"
        />
        <Field label="Write mode" field="config.writers.0.mode" error={ctx.err('config.writers.0.mode')} hint="upsert uses the target's primary key.">
          <select
            value={String(writer.mode ?? 'append')}
            disabled={ro}
            data-testid="xf-mode"
            onChange={(e) => {
              const m = val(e);
              const w: Endpoint = { ...writer, mode: m === 'append' ? undefined : m };
              if (m === 'append') delete w.mode;
              if (m === 'upsert' && dst.t?.primary_key?.length) w.key = dst.t.primary_key;
              else delete w.key;
              setWriter(w);
            }}
          >
            {MODES.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </Field>
        {numberField('Dirty-row limit', ['max_dirty_rows'], 'Rows that do not fit are skipped and counted; past this many the run fails (−1 = no limit, 0 = none allowed).', 'xf-dirty', -1)}
        <Field label="Split key" field="config.reader.split.key" error={ctx.err('config.reader.split.key')} hint="A numeric key the reader cuts into ranges, one per channel.">
          <select
            value={String((reader.split as Obj | undefined)?.key ?? '')}
            disabled={ro || !srcCols.length}
            data-testid="xf-split"
            onChange={(e) => {
              const k = val(e);
              const r = { ...reader };
              if (k) r.split = { key: k };
              else delete r.split;
              setReader(r);
            }}
          >
            <option value="">no split</option>
            {srcCols
              .filter((c) => c.kind === 'int' || c.kind === 'numeric')
              .map((c) => (
                <option key={c.name} value={c.name}>
                  {c.name}
                </option>
              ))}
          </select>
        </Field>
        {numberField('Channels', ['channels'], 'Reader and writer threads (1-256).', 'xf-channels', 1)}
        <Field
          label="Incremental column"
          field="config.reader.incremental.column"
          error={ctx.err('config.reader.incremental.column')}
          hint={incr?.column ? (mark === null ? 'Watermark: not read yet.' : mark === '' ? 'Watermark: none yet (the next run reads everything).' : `Current watermark: ${mark}`) : 'Read only rows above the last run’s high mark.'}
        >
          <select
            value={incr?.column ?? ''}
            disabled={ro || !srcCols.length}
            data-testid="xf-incr"
            onChange={(e) => {
              const c = val(e);
              const r = { ...reader };
              const col = srcCols.find((x) => x.name === c);
              if (col) r.incremental = { column: c, kind: col.kind === 'int' || col.kind === 'numeric' ? 'integer' : 'timestamp' };
              else delete r.incremental;
              setReader(r);
            }}
          >
            <option value="">full load every run</option>
            {srcCols
              .filter((c) => ['int', 'numeric', 'timestamp', 'timestamptz', 'date'].includes(c.kind))
              .map((c) => (
                <option key={c.name} value={c.name}>
                  {c.name} ({c.type})
                </option>
              ))}
          </select>
        </Field>
      </div>

      <div class="xf-mapping" data-field="config.writers.0.mapping">
        <div class="section-head">
          <h3>Column mapping</h3>
          <p class="muted">
            One row per target column: which source column fills it (renamed when the names differ), cast to a value kind, or a constant. Source columns no row
            uses are skipped.
          </p>
        </div>
        {(src.loading || dst.loading) && <Spinner />}
        {dstCols.length > 0 && !ro && (
          <div class="toolbar">
            <button type="button" class="btn btn-small" data-testid="xf-automap" onClick={autoMap} disabled={!srcCols.length}>
              Auto-map by name
            </button>
            {mapping.length > 0 && (
              <button type="button" class="btn btn-small btn-ghost" onClick={() => setMapping([])}>
                Clear mapping (load by position)
              </button>
            )}
          </div>
        )}
        {dstCols.length > 0 ? (
          <div class="table-wrap">
            <table class="table compact" data-testid="xf-mapping">
              <thead>
                <tr>
                  <th scope="col">Target column</th>
                  <th scope="col">Target type</th>
                  <th scope="col">Source</th>
                  <th scope="col">Source type</th>
                  <th scope="col">Cast</th>
                  <th scope="col">Fit</th>
                </tr>
              </thead>
              <tbody>
                {dstCols.map((d) => {
                  const cur = byTarget.get(d.name);
                  const e = cur?.e;
                  const k = cur?.i ?? -1;
                  const s = e?.source ? srcCols.find((c) => c.name === e.source) : undefined;
                  const choice = !e ? '' : e.source !== undefined ? `s:${e.source}` : e.constant === null ? 'null' : 'const';
                  const warn = e?.source ? fitWarning(s, d, e.cast) : e && e.constant === null && !d.nullable ? 'NULL into NOT NULL' : '';
                  const errs = k >= 0 ? ['target', 'source', 'cast', 'constant'].map((f) => ctx.err(mp(k, f))).filter(Boolean) : [];
                  return (
                    <tr key={d.name} data-testid={`xf-row-${d.name}`} class={errs.length ? 'has-error' : ''}>
                      <td class="mono">
                        {d.name}
                        {d.primary_key ? <span class="tag">key</span> : null}
                      </td>
                      <td class="mono">
                        {d.type}
                        {d.nullable ? '' : ' not null'}
                      </td>
                      <td>
                        <select
                          aria-label={`Source of ${d.name}`}
                          value={choice}
                          disabled={ro}
                          data-testid={`xf-src-${d.name}`}
                          onChange={(ev) => {
                            const v = val(ev);
                            if (!v) setEntry(d.name, null);
                            else if (v === 'null') setEntry(d.name, { target: d.name, constant: null });
                            else if (v === 'const') setEntry(d.name, { target: d.name, constant: '' });
                            else setEntry(d.name, { target: d.name, source: v.slice(2), ...(e?.cast ? { cast: e.cast } : {}) });
                          }}
                        >
                          <option value="">— not loaded —</option>
                          {srcCols.map((c) => (
                            <option key={c.name} value={`s:${c.name}`}>
                              {c.name}
                            </option>
                          ))}
                          <option value="const">constant text…</option>
                          <option value="null">constant NULL</option>
                        </select>
                        {e && e.constant !== undefined && e.constant !== null && (
                          <input
                            aria-label={`Constant for ${d.name}`}
                            class="mono"
                            value={e.constant}
                            disabled={ro}
                            data-testid={`xf-const-${d.name}`}
                            onInput={(ev) => setEntry(d.name, { target: d.name, constant: val(ev) })}
                          />
                        )}
                      </td>
                      <td class="mono">{s ? `${s.type}${s.nullable ? '' : ' not null'}` : ''}</td>
                      <td>
                        {e?.source !== undefined && (
                          <select
                            aria-label={`Cast of ${d.name}`}
                            value={e.cast ?? ''}
                            disabled={ro}
                            data-testid={`xf-cast-${d.name}`}
                            onChange={(ev) => {
                              const c = val(ev);
                              setEntry(d.name, c ? { target: d.name, source: e.source, cast: c } : { target: d.name, source: e.source });
                            }}
                          >
                            <option value="">as is</option>
                            {CASTS.map((c) => (
                              <option key={c} value={c}>
                                {c}
                              </option>
                            ))}
                          </select>
                        )}
                      </td>
                      <td>
                        {warn && (
                          <span class="xf-warn" data-testid={`xf-warn-${d.name}`}>
                            ⚠ {warn}
                          </span>
                        )}
                        {errs.map((m) => (
                          <div key={m} class="field-error" role="alert">
                            {m}
                          </div>
                        ))}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        ) : (
          <p class="muted">Choose the source and target tables to map their columns.</p>
        )}
        {skipped.length > 0 && mapping.length > 0 && (
          <p class="muted" data-testid="xf-skipped">
            Skipped source columns: <span class="mono">{skipped.join(', ')}</span>
          </p>
        )}
        {ctx.err('config.writers.0.mapping') && <div class="field-error">{ctx.err('config.writers.0.mapping')}</div>}
      </div>

      <div class="xf-preview">
        <div class="toolbar">
          <button type="button" class="btn" data-testid="xf-preview" disabled={previewing || !reader.table || !writer.table} onClick={runPreview}>
            {previewing ? <Spinner /> : null} Preview
          </button>
          <span class="muted">The first 20 rows as they would be written; nothing is written.</span>
        </div>
        {previewErr instanceof ApiError && previewErr.field ? (
          <div class="banner banner-error" role="alert">
            {previewErr.field}: {previewErr.message}
          </div>
        ) : (
          <ErrorBanner error={previewErr} />
        )}
        {preview && <PreviewTable p={preview} />}
      </div>
    </div>
  );
}

function PreviewTable({ p }: { p: TransferPreview }) {
  const dirty = new Map(p.dirty.map((d) => [d.row, d]));
  return (
    <div class="table-wrap" data-testid="xf-preview-table">
      {p.warnings?.length ? <p class="muted">{p.warnings.join(' · ')}</p> : null}
      <table class="table compact">
        <caption class="muted">
          {p.rows.length} row{p.rows.length === 1 ? '' : 's'}
          {p.dirty.length ? `, ${p.dirty.length} dirty` : ''}
        </caption>
        <thead>
          <tr>
            {p.columns.map((c) => (
              <th key={c.name} scope="col">
                {c.name} <span class="muted">{c.kind}</span>
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {p.rows.map((r, i) => (
            <tr key={i}>
              {r.map((v, j) => (
                <td key={j} class="mono">
                  {v === null ? <span class="muted">NULL</span> : v}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {p.dirty.length > 0 && (
        <ul class="xf-dirty" data-testid="xf-preview-dirty">
          {[...dirty.values()].map((d) => (
            <li key={d.row}>
              <span class="tag tag-warn">dirty</span> row {d.row}
              {d.field ? ` (${d.field})` : ''}: {d.reason}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
