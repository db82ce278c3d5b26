/**
 * A uPlot time-series chart as a Preact component. uPlot draws on a canvas
 * and sizes its elements through the CSSOM (`el.style.width = …`), which the
 * dashboard's CSP (`style-src 'self'`) allows; its stylesheet is bundled by
 * esbuild into the app's CSS asset. The chart is described in words by its
 * caption, and the numbers it draws are in the tables beside it.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

/** One line of a chart. */
export interface Line {
  readonly label: string;
  /** A CSS custom property of styles.css (`--chart-requests`), read when the chart is drawn, so the line follows light and dark mode. */
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
  /** Counts: the y axis has whole-number steps only (no 0.5 requests). */
  readonly integer?: boolean;
}

const TICK_FORMAT = new Intl.NumberFormat("en", { maximumFractionDigits: 2 });

/** Whole-number tick steps for counts: uPlot picks the smallest that keeps labels apart. */
const INTEGER_STEPS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1_000, 2_000, 2_500, 5_000, 10_000, 20_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1e6, 2.5e6, 5e6, 1e7, 2.5e7, 5e7, 1e8, 2.5e8, 5e8, 1e9];

/** The value of a CSS custom property on the page (a colour of the current scheme); a name that is not one is used as given. */
function cssColor(name: string): string {
  if (!name.startsWith("--")) return name;
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "currentColor";
}

/** The colour scheme the page is shown in, as a signal for redrawing. */
function useColorScheme(): string {
  const query = typeof matchMedia === "function" ? matchMedia("(prefers-color-scheme: dark)") : undefined;
  const [scheme, setScheme] = useState(query?.matches === true ? "dark" : "light");
  useEffect(() => {
    if (query === undefined) return;
    const change = () => setScheme(query.matches ? "dark" : "light");
    query.addEventListener("change", change);
    return () => query.removeEventListener("change", change);
  }, []);
  return scheme;
}

export function Chart({ times, lines, yLabel, height = 220, integer = false }: ChartProps) {
  const host = useRef<HTMLDivElement>(null);
  const scheme = useColorScheme();
  useEffect(() => {
    const el = host.current;
    if (el === null) return;
    const width = () => Math.max(280, Math.floor(el.clientWidth));
    const fg = cssColor("--fg");
    const grid = cssColor("--line");
    const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const plot = new uPlot(
      {
        width: width(),
        height,
        series: [
          {},
          ...lines.map((l) => ({ label: l.label, stroke: cssColor(l.color), width: 2, ...(l.dash === undefined ? {} : { dash: [...l.dash] }) })),
        ],
        axes: [
          axis,
          {
            ...axis,
            label: yLabel,
            size: 60,
            ...(integer ? { incrs: INTEGER_STEPS } : {}),
            // The ticks drawn, on the element: the canvas itself holds no text to read.
            values: (_u: uPlot, splits: number[]) => {
              el.dataset.yTicks = splits.join(" ");
              return splits.map((v) => TICK_FORMAT.format(v));
            },
          },
        ],
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
  }, [times, lines, yLabel, height, integer, scheme]);
  return <div class="chart" ref={host} />;
}
