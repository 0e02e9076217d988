// lineage.tsx - data lineage around one node: a table, column, file, data
// unit, sort stream or task. A search box completes node names (GET
// /api/v1/lineage/names); the view shows either the table graph (tables,
// files, streams and data units with the tasks that move the data between
// them, and the dependencies between those tasks) or, for a table, the
// column graph (its columns with their upstream and downstream columns,
// from GET /api/v1/lineage?columns=true). Depth is the number of hops both
// ways. Clicking a node, or a name in the edge list, re-centres the view on
// it. The query (kind, name, depth, view) lives in the URL.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, type LineageEdge, type LineageNode } from '../api';
import '../components/objects.css';
import './lineage.css';
import { Graph, type GEdge, type GNode } from '../components/graph';
import { Empty, ErrorBanner, Link, Loading, PageHead, Tabs, Unavailable, useAsync, val } from '../components/ui';
import { useRoute } from '../router';

const key = (kind: string, name: string) => `${kind}:${name}`;
const KIND_LABEL: Record<string, string> = {
  table: 'table',
  column: 'column',
  file: 'file',
  data_unit: 'data unit',
  stream: 'stream',
  task: 'task',
};

// A column node's name is <table node>.<column>: split at the last dot.
function splitColumn(name: string): [string, string] {
  const i = name.lastIndexOf('.');
  return i < 0 ? ['', name] : [name.slice(0, i), name.slice(i + 1)];
}

function detailText(e: LineageEdge): string {
  const d = (e.detail ?? {}) as Record<string, unknown>;
  const parts: string[] = [];
  if (typeof d.cast === 'string') parts.push(`cast to ${d.cast}`);
  if (d.match === 'name') parts.push('same name');
  if (typeof d.kind === 'string') parts.push(`${d.kind} dependency`);
  if (Array.isArray(d.constants))
    for (const c of d.constants as { target: string; constant: unknown }[])
      parts.push(`${c.target} = ${c.constant === null ? 'null' : JSON.stringify(c.constant)}`);
  return parts.join('; ');
}

let searchSeq = 0;

// The name search: an ARIA 1.2 combobox over GET /lineage/names (debounced,
// the previous request aborted). Picking a suggestion re-centres the page.
function NodeSearch(props: { initial: string; onPick: (n: LineageNode) => void }) {
  const [id] = useState(() => `lineage-search-${++searchSeq}`);
  const [text, setText] = useState(props.initial);
  const [open, setOpen] = useState(false);
  const [items, setItems] = useState<LineageNode[]>([]);
  const [active, setActive] = useState(-1);
  const [busy, setBusy] = useState(false);
  const abort = useRef<AbortController | null>(null);
  const timer = useRef<number | undefined>(undefined);
  const blurTimer = useRef<number | undefined>(undefined);
  useEffect(() => setText(props.initial), [props.initial]);
  useEffect(() => () => (window.clearTimeout(timer.current), window.clearTimeout(blurTimer.current), abort.current?.abort()), []);

  const fetchFor = (q: string) => {
    window.clearTimeout(timer.current);
    if (!q.trim()) {
      setItems([]);
      return;
    }
    timer.current = window.setTimeout(async () => {
      abort.current?.abort();
      const ac = new AbortController();
      abort.current = ac;
      setBusy(true);
      try {
        const r = await api.lineageNames(q.trim(), 12, ac.signal);
        setItems(r.items);
        setActive(r.items.length ? 0 : -1);
      } catch (e) {
        if ((e as Error).name !== 'AbortError') setItems([]);
      } finally {
        if (abort.current === ac) setBusy(false);
      }
    }, 120);
  };
  const pick = (n: LineageNode) => {
    setOpen(false);
    setText(n.name);
    props.onPick(n);
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'ArrowDown') {
      e.preventDefault();
      if (!open) {
        setOpen(true);
        fetchFor(text);
      } else setActive((a) => Math.min(items.length - 1, a + 1));
    } else if (e.key === 'ArrowUp') {
      e.preventDefault();
      setActive((a) => Math.max(0, a - 1));
    } else if (e.key === 'Enter') {
      if (open && active >= 0 && items[active]) {
        e.preventDefault();
        pick(items[active]);
      }
    } else if (e.key === 'Escape' && open) {
      e.preventDefault();
      setOpen(false);
    }
  };
  const listId = `${id}-list`;
  return (
    <div class="taskpick lineage-search">
      <input
        id={id}
        type="text"
        role="combobox"
        aria-label="Find a table, column, task or stream"
        aria-autocomplete="list"
        aria-expanded={open}
        aria-controls={listId}
        aria-activedescendant={open && active >= 0 ? `${id}-opt-${active}` : undefined}
        autocomplete="off"
        placeholder="Table, column, task or stream — type to search"
        value={text}
        onInput={(e) => {
          const v = val(e);
          setText(v);
          setOpen(true);
          fetchFor(v);
        }}
        onFocus={() => {
          window.clearTimeout(blurTimer.current);
          if (text) {
            setOpen(true);
            fetchFor(text);
          }
        }}
        onBlur={() => (blurTimer.current = window.setTimeout(() => setOpen(false), 150))}
        onKeyDown={onKey}
      />
      {open && (
        <ul class="taskpick-list" id={listId} role="listbox" aria-label="Lineage name suggestions">
          {items.length === 0 ? (
            <li class="taskpick-empty" role="option" aria-disabled="true" aria-selected="false">
              {busy ? 'Searching…' : text.trim() ? 'No recorded name matches' : 'Type part of a name'}
            </li>
          ) : (
            items.map((n, i) => (
              <li
                key={key(n.kind, n.name)}
                id={`${id}-opt-${i}`}
                role="option"
                aria-selected={i === active}
                class={i === active ? 'active' : ''}
                onMouseDown={(e) => {
                  e.preventDefault();
                  pick(n);
                }}
              >
                <span class="tag">{KIND_LABEL[n.kind] ?? n.kind}</span> <span class="strong">{n.name}</span>
              </li>
            ))
          )}
        </ul>
      )}
    </div>
  );
}

// The table graph: a table edge moved by a task becomes source -> task ->
// target, so tasks show as nodes; task dependencies are dashed.
function tableGraph(edges: LineageEdge[], kind: string, name: string) {
  const nodes = new Map<string, GNode>();
  const out: GEdge[] = [];
  const seen = new Set<string>();
  const add = (k: string, n: string) => {
    const id = key(k, n);
    if (!nodes.has(id)) nodes.set(id, { id, label: n, sub: KIND_LABEL[k] ?? k, state: null, focus: k === kind && n === name });
    return id;
  };
  const link = (s: string, t: string, kindOf?: string) => {
    const id = `${s}>${t}`;
    if (seen.has(id)) return;
    seen.add(id);
    out.push({ source: s, target: t, kind: kindOf });
  };
  add(kind, name);
  for (const e of edges) {
    const s = add(e.source_kind, e.source_name);
    const t = add(e.target_kind, e.target_name);
    if (e.source_kind === 'task' && e.target_kind === 'task') link(s, t, 'weak');
    else if (e.task && e.source_kind !== 'task' && e.target_kind !== 'task') {
      const m = add('task', e.task);
      link(s, m);
      link(m, t);
    } else link(s, t);
  }
  return { nodes: [...nodes.values()], edges: out };
}

// The column graph: each column labelled by its own name, its table below.
function columnGraph(edges: LineageEdge[], focusTable: string, focusColumn: string) {
  const nodes = new Map<string, GNode>();
  const add = (n: string) => {
    const id = key('column', n);
    const [table, col] = splitColumn(n);
    if (!nodes.has(id)) nodes.set(id, { id, label: col, sub: table, state: null, focus: n === focusColumn || table === focusTable });
    return id;
  };
  const out: GEdge[] = edges.map((e) => ({ source: add(e.source_name), target: add(e.target_name) }));
  return { nodes: [...nodes.values()], edges: out };
}

function NodeName(props: { kind: string; name: string; go: (kind: string, name: string) => void }) {
  return (
    <button type="button" class="link-button" onClick={() => props.go(props.kind, props.name)} title={`Centre on ${props.name}`}>
      {props.name}
    </button>
  );
}

export function LineagePage() {
  const { query, setQuery } = useRoute();
  const kind = query.get('kind') ?? 'table';
  const name = query.get('name') ?? '';
  const depth = query.get('depth') ?? '2';
  const hasColumns = kind === 'table' || kind === 'file';
  const view: 'graph' | 'columns' = kind === 'column' || (hasColumns && query.get('view') === 'columns') ? 'columns' : 'graph';
  const res = useAsync(
    () =>
      name
        ? api.lineage({ kind, name, depth: Number(depth), ...(view === 'columns' && kind !== 'column' ? { columns: true } : {}) })
        : Promise.resolve({ edges: [] as LineageEdge[] }),
    [kind, name, depth, view],
  );
  const edges = res.data?.edges ?? [];
  const go = (k: string, n: string, v?: string) => setQuery({ kind: k, name: n, depth, ...(v ? { view: v } : {}) });
  const onSelect = (id: string) => {
    const i = id.indexOf(':');
    const k = id.slice(0, i);
    const n = id.slice(i + 1);
    // a column of another table: that table's column graph; else re-centre
    if (view === 'columns' && k === 'column') go('column', n);
    else go(k, n);
  };
  if (res.missing)
    return (
      <div>
        <PageHead title="Lineage" />
        <Unavailable feature="Lineage" endpoint="GET /api/v1/lineage" />
      </div>
    );
  // a phone draws the graph top to bottom: long names fit the width better
  const narrow = typeof window !== 'undefined' && window.innerWidth < 640;
  const focusTable = kind === 'column' ? splitColumn(name)[0] : name;
  const g = view === 'columns' ? columnGraph(edges, kind === 'column' ? '' : focusTable, kind === 'column' ? name : '') : tableGraph(edges, kind, name);
  const body = !name ? (
    <Empty title="Find a table, column, task or stream" icon="⋔">
      Type part of a name in the search box: the names recorded from saved tasks, transfer runs and sort streams are suggested as you type.
    </Empty>
  ) : res.loading && !res.data ? (
    <Loading what="lineage" />
  ) : edges.length === 0 ? (
    !res.error && <Empty title={`No lineage recorded for ${KIND_LABEL[kind] ?? kind} ${name}${view === 'columns' && kind !== 'column' ? ' (columns)' : ''}`} />
  ) : (
    <>
      <section class="card pad" aria-label={view === 'columns' ? 'Column graph' : 'Table graph'}>
        <Graph nodes={g.nodes} edges={g.edges} onSelect={onSelect} height={view === 'columns' ? 420 : 360} direction={narrow ? 'TB' : 'LR'} />
      </section>
      <div class="card table-scroll">
        <table class="table compact lineage-edges">
          <caption class="sr-only">{view === 'columns' ? 'Column edges' : 'Edges'}</caption>
          <thead>
            <tr>
              <th>From</th>
              <th>To</th>
              <th>Moved by</th>
              <th>Notes</th>
            </tr>
          </thead>
          <tbody>
            {edges.map((e, i) => (
              <tr key={i}>
                <td data-label="From">
                  <span class="tag">{KIND_LABEL[e.source_kind] ?? e.source_kind}</span> <NodeName kind={e.source_kind} name={e.source_name} go={go} />
                </td>
                <td data-label="To">
                  <span class="tag">{KIND_LABEL[e.target_kind] ?? e.target_kind}</span> <NodeName kind={e.target_kind} name={e.target_name} go={go} />
                </td>
                <td data-label="Moved by">{e.task_id ? <Link to={`/tasks/${e.task_id}`}>{e.task ?? `task #${e.task_id}`}</Link> : <span class="muted">—</span>}</td>
                <td class="small" data-label="Notes">
                  {detailText(e)}
                  {e.origins?.length ? <span class="muted"> {detailText(e) ? '· ' : ''}recorded at {e.origins.join(', ')}</span> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
  return (
    <div>
      <PageHead title="Lineage" sub="Where data comes from and where it goes: tables and their columns, files, streams, data units and the tasks that move them." />
      <div class="toolbar lineage-toolbar">
        <NodeSearch initial={name} onPick={(n) => go(n.kind, n.name, view === 'columns' && (n.kind === 'table' || n.kind === 'file') ? 'columns' : undefined)} />
        <label class="inline-field">
          <span>Depth</span>
          <select aria-label="Depth" value={depth} onChange={(e) => setQuery({ kind, name, depth: val(e), ...(view === 'columns' ? { view: 'columns' } : {}) })}>
            {[1, 2, 3, 5, 10].map((d) => (
              <option key={d} value={String(d)}>
                {d} hop{d > 1 ? 's' : ''}
              </option>
            ))}
          </select>
        </label>
      </div>
      <ErrorBanner error={res.error} onRetry={res.reload} />
      {name && hasColumns ? (
        <Tabs
          label="Lineage view"
          tabs={[
            { id: 'graph', label: 'Tables and tasks' },
            { id: 'columns', label: 'Columns' },
          ]}
          selected={view}
          onSelect={(v) => setQuery({ kind, name, depth, ...(v === 'columns' ? { view: 'columns' } : {}) })}
        >
          {body}
        </Tabs>
      ) : (
        body
      )}
    </div>
  );
}
