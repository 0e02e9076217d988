// lineage.tsx - data lineage around one object (a table, file, data unit or
// task): GET /api/v1/lineage?kind&name&depth gives the edges up to depth
// hops upstream and downstream; they are drawn as a graph (the object
// highlighted) and listed with the task that moves the data. Clicking a
// node re-centres the view on it. The query lives in the URL.
import { useEffect, useState } from 'preact/hooks';
import { api, type LineageEdge } from '../api';
import { Graph, type GEdge, type GNode } from '../components/graph';
import { Empty, ErrorBanner, Link, Loading, PageHead, Unavailable, useAsync, val } from '../components/ui';
import { useRoute } from '../router';

const KINDS = ['table', 'file', 'data_unit', 'task'];

const key = (kind: string, name: string) => `${kind}:${name}`;

export function LineagePage() {
  const { query, setQuery } = useRoute();
  const kind = query.get('kind') ?? 'table';
  const name = query.get('name') ?? '';
  const depth = query.get('depth') ?? '2';
  const [draft, setDraft] = useState({ kind, name, depth });
  useEffect(() => setDraft({ kind, name, depth }), [kind, name, depth]);
  const res = useAsync(
    () => (name ? api.lineage({ kind, name, depth: Number(depth) }) : Promise.resolve({ edges: [] as LineageEdge[] })),
    [kind, name, depth],
  );
  const edges = res.data?.edges ?? [];
  const nodes = new Map<string, GNode>();
  const add = (k: string, n: string) => {
    const id = key(k, n);
    if (!nodes.has(id)) nodes.set(id, { id, label: n, sub: k.replace('_', ' '), state: null, focus: k === kind && n === name });
  };
  add(kind, name);
  for (const e of edges) {
    add(e.source_kind, e.source_name);
    add(e.target_kind, e.target_name);
  }
  const gEdges: GEdge[] = edges.map((e) => ({ source: key(e.source_kind, e.source_name), target: key(e.target_kind, e.target_name) }));
  const go = (id: string) => {
    const i = id.indexOf(':');
    setQuery({ kind: id.slice(0, i), name: id.slice(i + 1), depth });
  };
  if (res.missing)
    return (
      <div>
        <PageHead title="Lineage" />
        <Unavailable feature="Lineage" endpoint="GET /api/v1/lineage" />
      </div>
    );
  return (
    <div>
      <PageHead title="Lineage" sub="Where data comes from and where it goes: tables, files, data units and the tasks that move them." />
      <form
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          setQuery(draft);
        }}
      >
        <select aria-label="Kind" value={draft.kind} onChange={(e) => setDraft({ ...draft, kind: val(e) })}>
          {KINDS.map((k) => (
            <option key={k} value={k}>
              {k.replace('_', ' ')}
            </option>
          ))}
        </select>
        <input class="search" aria-label="Name" placeholder="public.orders" value={draft.name} onInput={(e) => setDraft({ ...draft, name: val(e) })} />
        <select aria-label="Depth" value={draft.depth} onChange={(e) => setDraft({ ...draft, depth: val(e) })}>
          {[1, 2, 3, 5, 10].map((d) => (
            <option key={d} value={String(d)}>
              {d} hop{d > 1 ? 's' : ''}
            </option>
          ))}
        </select>
        <button class="btn btn-primary" type="submit">
          Show
        </button>
      </form>
      <ErrorBanner error={res.error} onRetry={res.reload} />
      {!name ? (
        <Empty title="Pick an object" icon="⋔">
          Type a table, file, data unit or task name to see its lineage.
        </Empty>
      ) : res.loading && !res.data ? (
        <Loading what="lineage" />
      ) : edges.length === 0 ? (
        !res.error && <Empty title={`No lineage recorded for ${kind} ${name}`} />
      ) : (
        <>
          <section class="card pad">
            <Graph nodes={[...nodes.values()]} edges={gEdges} onSelect={go} height={360} />
          </section>
          <div class="card">
            <table class="table compact">
              <thead>
                <tr>
                  <th>From</th>
                  <th>To</th>
                  <th>Moved by</th>
                </tr>
              </thead>
              <tbody>
                {edges.map((e, i) => (
                  <tr key={i}>
                    <td>
                      <span class="tag">{e.source_kind}</span> {e.source_name}
                    </td>
                    <td>
                      <span class="tag">{e.target_kind}</span> {e.target_name}
                    </td>
                    <td>{e.task_id ? <Link to={`/tasks/${e.task_id}`}>task #{e.task_id}</Link> : <span class="muted">—</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </div>
  );
}
