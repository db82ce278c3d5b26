/** Types of parse-prometheus-text-format 1.1 (the package ships none): prom2json's shape. */
declare module "parse-prometheus-text-format" {
  export interface ParsedSample {
    readonly labels?: Readonly<Record<string, string>>;
    /** Counters, gauges and untyped samples. */
    readonly value?: string;
    /** Histograms: cumulative counts by upper bound (`le`), `+Inf` included. */
    readonly buckets?: Readonly<Record<string, string>>;
    readonly quantiles?: Readonly<Record<string, string>>;
    readonly count?: string;
    readonly sum?: string;
  }
  export interface ParsedFamily {
    readonly name: string;
    readonly help: string;
    /** `COUNTER`, `GAUGE`, `HISTOGRAM`, `SUMMARY` or `UNTYPED`. */
    readonly type: string;
    readonly metrics: readonly ParsedSample[];
  }
  /** Parses the Prometheus text format; throws on a malformed line. */
  export default function parsePrometheusTextFormat(text: string): ParsedFamily[];
}
