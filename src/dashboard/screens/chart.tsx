/**
 * A uPlot time-series chart as a Preact component. uPlot draws on a canvas
 * and sizes its elements through the CSSOM (`el.style.width = …`), which the
 * dashboard's CSP (`style-src 'self'`) allows; its stylesheet is bundled by
 * esbuild into the app's CSS asset. The chart is described in words by its
 * caption, and the numbers it draws are in the tables beside it.
 */
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

/** One line of a chart. */
export interface Line {
  readonly label: string;
  readonly color: string;
  readonly values: readonly (number | null)[];
  readonly dash?: readonly number[];
}

interface ChartProps {
  /** Bucket starts, in seconds since the epoch. */
  readonly times: readonly number[];
  readonly lines: readonly Line[];
  /** Unit of the y axis, shown in the axis label. */
  readonly yLabel: string;
  readonly height?: number;
}

export function Chart({ times, lines, yLabel, height = 220 }: ChartProps) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = host.current;
    if (el === null) return;
    const width = () => Math.max(280, Math.floor(el.clientWidth));
    const plot = new uPlot(
      {
        width: width(),
        height,
        series: [
          {},
          ...lines.map((l) => ({ label: l.label, stroke: l.color, width: 2, ...(l.dash === undefined ? {} : { dash: [...l.dash] }) })),
        ],
        axes: [{}, { label: yLabel, size: 60 }],
        scales: { x: { time: true }, y: { range: (_u: uPlot, min: number, max: number) => [0, Math.max(1, max, min)] } },
        cursor: { drag: { x: false, y: false } },
      },
      [[...times], ...lines.map((l) => [...l.values])] as uPlot.AlignedData,
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: width(), height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [times, lines, yLabel, height]);
  return <div class="chart" ref={host} />;
}
