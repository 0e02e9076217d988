// graph.tsx - a DAG drawn with Cytoscape and the dagre layout, loaded on
// first use (both are large). Nodes are coloured by state with the shared
// palette; running nodes pulse; clicking a node calls onSelect.
//
// Props are plain data (nodes, edges); the graph is rebuilt when their
// content changes and only restyled when only states change.
import type cytoscapeT from 'cytoscape';
import { useEffect, useRef } from 'preact/hooks';
import type { State } from '../api';
import { stateColor } from '../states';

export interface GNode {
  id: string;
  label: string;
  sub?: string;
  state: State | null;
  focus?: boolean; // the node the page is about
}

export interface GEdge {
  source: string;
  target: string;
  kind?: string; // strong | weak | self
}

type Cy = import('cytoscape').Core;

let libs: Promise<typeof cytoscapeT> | null = null;
function loadLibs() {
  if (!libs)
    libs = Promise.all([import('cytoscape'), import('cytoscape-dagre')]).then(([c, d]) => {
      c.default.use(d.default);
      return c.default;
    });
  return libs;
}

export function Graph(props: {
  nodes: GNode[];
  edges: GEdge[];
  onSelect?: (id: string) => void;
  height?: number;
  direction?: 'LR' | 'TB';
}) {
  const el = useRef<HTMLDivElement>(null);
  const cy = useRef<Cy | null>(null);
  const onSelect = useRef(props.onSelect);
  onSelect.current = props.onSelect;
  const shape = JSON.stringify([props.nodes.map((n) => [n.id, n.label, n.sub, n.focus]), props.edges]);
  const states = JSON.stringify(props.nodes.map((n) => n.state));

  useEffect(() => {
    let dead = false;
    loadLibs().then((cytoscape) => {
      if (dead || !el.current) return;
      cy.current?.destroy();
      const c = cytoscape({
        container: el.current,
        elements: [
          ...props.nodes.map((n) => ({
            data: { id: n.id, label: n.sub ? `${n.label}\n${n.sub}` : n.label, color: stateColor(n.state), state: n.state ?? 'none' },
            classes: n.focus ? 'focus' : '',
          })),
          ...props.edges
            .filter((e) => e.source !== e.target)
            .map((e, i) => ({ data: { id: `e${i}`, source: e.source, target: e.target }, classes: e.kind === 'weak' ? 'weak' : '' })),
        ],
        style: [
          {
            selector: 'node',
            style: {
              shape: 'round-rectangle',
              'background-color': '#ffffff',
              'border-width': 2,
              'border-color': 'data(color)',
              label: 'data(label)',
              'text-wrap': 'wrap',
              'text-valign': 'center',
              'text-halign': 'center',
              'font-size': 13,
              'font-family': 'Inter, system-ui, sans-serif',
              color: '#1d2433',
              width: 'label',
              height: 'label',
              'padding-left': '14px',
              'padding-right': '14px',
              'padding-top': '10px',
              'padding-bottom': '10px',
            },
          },
          {
            selector: 'node[state != "none"]',
            style: { 'background-color': 'data(color)', 'background-opacity': 0.14 },
          },
          { selector: 'node.focus', style: { 'border-width': 4, 'font-weight': 'bold' } },
          {
            selector: 'edge',
            style: {
              width: 2,
              'line-color': '#b8c0cf',
              'target-arrow-color': '#b8c0cf',
              'target-arrow-shape': 'triangle',
              'curve-style': 'bezier',
            },
          },
          { selector: 'edge.weak', style: { 'line-style': 'dashed' } },
        ],
        layout: { name: 'dagre', rankDir: props.direction ?? 'LR', nodeSep: 30, rankSep: 70 } as never,
        minZoom: 0.3,
        maxZoom: 2,
        wheelSensitivity: 0.3,
        autoungrabify: true,
      });
      c.on('tap', 'node', (ev: cytoscapeT.EventObject) => onSelect.current?.(ev.target.id()));
      c.fit(undefined, 24);
      if (c.zoom() > 1.5) {
        c.zoom(1.5);
        c.center();
      }
      cy.current = c;
      el.current.dataset.nodes = String(c.nodes().length);
      el.current.dataset.edges = String(c.edges().length);
      el.current.dataset.ready = 'true';
    });
    return () => {
      dead = true;
    };
  }, [shape]);

  // Restyle on state changes without a new layout.
  useEffect(() => {
    const c = cy.current;
    if (!c) return;
    for (const n of props.nodes) {
      const node = c.getElementById(n.id);
      if (node.nonempty()) node.data({ color: stateColor(n.state), state: n.state ?? 'none' });
    }
  }, [states]);

  // Running nodes pulse.
  useEffect(() => {
    let on = false;
    const id = window.setInterval(() => {
      const c = cy.current;
      if (!c) return;
      on = !on;
      c.nodes('[state = "running"]').style('border-width', on ? 5 : 2);
    }, 700);
    return () => window.clearInterval(id);
  }, []);

  useEffect(() => () => cy.current?.destroy(), []);

  return <div class="graph" ref={el} style={{ height: `${props.height ?? 420}px` }} data-testid="graph" />;
}

export function Legend({ states }: { states: State[] }) {
  return (
    <div class="legend">
      {states.map((s) => (
        <span key={s} class="legend-item">
          <span class="legend-dot" style={{ background: stateColor(s) }} />
          {s.replace('_', ' ')}
        </span>
      ))}
    </div>
  );
}
