// chart.tsx - time-series charts with uPlot, loaded on first use. Series
// are given as plain arrays; "stacked" draws bars stacked bottom-up (uPlot has
// no stacking of its own: the values are accumulated here and drawn
// largest-first so each band shows its own share).
import { useEffect, useRef } from 'preact/hooks';
import type uPlotT from 'uplot';

export interface Series {
  label: string;
  color: string;
  values: (number | null)[];
}

type UPlotCtor = typeof uPlotT;
let lib: Promise<UPlotCtor> | null = null;
function load(): Promise<UPlotCtor> {
  if (!lib) lib = Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]).then(([u]) => u.default);
  return lib;
}

export function TimeChart(props: { x: number[]; series: Series[]; stacked?: boolean; height?: number; yLabel?: string; step?: boolean }) {
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
          legend: { show: true },
          cursor: { drag: { x: false, y: false } },
          scales: { x: { time: true } },
          axes: [
            { stroke: '#6b7485', grid: { stroke: '#eef0f4' } },
            { stroke: '#6b7485', grid: { stroke: '#eef0f4' }, label: props.yLabel, size: 50 },
          ],
          series: [
            {},
            ...series.map((s) => ({
              label: s.label,
              stroke: s.color,
              fill: props.stacked ? s.color : `${s.color}22`,
              width: props.stacked ? 0 : 2,
              paths: props.stacked ? bars : props.step ? uPlot.paths.stepped!({ align: 1 }) : undefined,
              points: { show: false },
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
  return <div class="chart" ref={el} />;
}
