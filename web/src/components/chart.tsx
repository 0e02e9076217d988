// chart.tsx - time-series charts with uPlot, loaded on first use. Series
// are given as plain arrays; "stacked" draws bars stacked bottom-up (uPlot has
// no stacking of its own: the values are accumulated here and drawn
// largest-first so each band shows its own share). The chart's element
// carries data-ready once drawn and data-total (the sum of every value
// shown), so tests and people can tell an empty chart from a real one.
import { useEffect, useRef } from 'preact/hooks';
import type uPlotT from 'uplot';

export interface Series {
  label: string;
  color: string;
  values: (number | null)[];
}

type UPlotCtor = typeof uPlotT;

/** 1234567 -> "1.2M": short y-axis labels that fit the axis. */
function compact(v: number): string {
  const a = Math.abs(v);
  for (const [d, u] of [
    [1e12, 'T'],
    [1e9, 'G'],
    [1e6, 'M'],
    [1e3, 'k'],
  ] as const)
    if (a >= d) return `${+(v / d).toFixed(a >= 10 * d ? 0 : 1)}${u}`;
  return String(v);
}

/** Y-axis tick steps: whole numbers only (counts of rows, records, runs). */
const COUNT_STEPS: number[] = [];
for (let p = 1; p <= 1e15; p *= 10) COUNT_STEPS.push(p, 2 * p, 5 * p);
let lib: Promise<UPlotCtor> | null = null;
function load(): Promise<UPlotCtor> {
  if (!lib) lib = Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]).then(([u]) => u.default);
  return lib;
}

/** Start fetching the chart library now (a page that will draw a chart once
 * its data is in calls this first, so both load at the same time). */
export function preloadCharts(): void {
  void load().catch(() => undefined);
}

export function TimeChart(props: {
  x: number[];
  series: Series[];
  stacked?: boolean;
  height?: number;
  yLabel?: string;
  step?: boolean;
  points?: boolean;
  fractional?: boolean; // values are not whole counts (ratios, seconds): y ticks need not be whole
  testid?: string;
}) {
  const el = useRef<HTMLDivElement>(null);
  const key = JSON.stringify([props.x, props.series.map((s) => s.values), props.stacked]);
  useEffect(() => {
    let plot: { destroy: () => void } | null = null;
    let dead = false;
    let ro: ResizeObserver | null = null;
    load().then((uPlot) => {
      if (dead || !el.current) return;
      let series = props.series;
      if (props.stacked) {
        const acc = props.x.map(() => 0);
        series = props.series.map((s) => ({
          ...s,
          values: s.values.map((v, i) => (acc[i] += v ?? 0)),
        }));
        series = series.reverse();
      }
      const bars = uPlot.paths.bars!({ size: [0.7, 40] });
      const width = el.current.clientWidth || 600;
      const u = new uPlot(
        {
          width,
          height: props.height ?? 220,
          legend: { show: true, live: false },
          cursor: { drag: { x: false, y: false } },
          // Counts: the y axis starts at zero so bar heights compare honestly.
          scales: { x: { time: true }, y: { range: (_u: unknown, _min: number, max: number) => [0, max > 0 ? max * 1.08 : 1] } },
          axes: [
            { stroke: '#6b7485', grid: { stroke: '#eef0f4' } },
            { stroke: '#6b7485', grid: { stroke: '#eef0f4' }, label: props.yLabel, size: 56, incrs: props.fractional ? undefined : COUNT_STEPS, values: (_u: unknown, vals: number[]) => vals.map(compact) },
          ],
          series: [
            {},
            ...series.map((s) => ({
              label: s.label,
              stroke: s.color,
              fill: props.stacked ? s.color : props.points ? undefined : `${s.color}22`,
              width: props.stacked ? 0 : 2,
              paths: props.stacked ? bars : props.step ? uPlot.paths.stepped!({ align: 1 }) : undefined,
              points: { show: !!props.points, size: 7 },
            })),
          ],
        },
        [props.x, ...series.map((s) => s.values)] as never,
        el.current,
      );
      plot = u;
      ro = new ResizeObserver(() => {
        if (el.current) u.setSize({ width: el.current.clientWidth, height: props.height ?? 220 });
      });
      ro.observe(el.current);
      el.current.dataset.ready = 'true';
    });
    return () => {
      dead = true;
      ro?.disconnect();
      plot?.destroy();
    };
  }, [key]);
  let total = 0;
  for (const s of props.series) for (const v of s.values) total += v ?? 0;
  return <div class="chart" ref={el} data-total={total} data-points={props.x.length} data-testid={props.testid} />;
}
