/**
 * Reading `/metrics` in tests: the exposition parsed by a Prometheus text
 * parser (parse-prometheus-text-format, prom2json's shape) and checked for
 * what the parser lets pass (every family typed and described once, numeric
 * values, cumulative histogram buckets ending in `+Inf` = count), then
 * looked up by name and exact label set.
 *
 * The parser folds every series of a histogram into one (it keeps the
 * buckets of all label sets under one `le` map and drops labelled sums and
 * counts), so histogram families are handed to it as untyped: it then
 * parses their `_bucket`, `_sum` and `_count` lines as samples of their own,
 * which are put together again here, per label set.
 */
import * as assert from "uvu/assert";
import parsePrometheusTextFormat, { type ParsedFamily, type ParsedSample } from "parse-prometheus-text-format";

/** A parsed, checked exposition. */
export class Exposition {
  readonly families: ReadonlyMap<string, ParsedFamily>;

  constructor(readonly text: string) {
    const histograms = new Set<string>();
    const untyped = text.replace(/^# TYPE (\S+) histogram$/gm, (_line, name: string) => {
      histograms.add(name);
      return `# TYPE ${name} untyped`;
    });
    const families = new Map<string, ParsedFamily>();
    /** Histogram series by family, then by label set (without `le`). */
    const series = new Map<string, Map<string, { labels: Record<string, string>; buckets: Record<string, string>; sum?: string; count?: string }>>();
    for (const family of parsePrometheusTextFormat(untyped)) {
      const part = /^(.*)_(bucket|sum|count)$/.exec(family.name);
      if (part !== null && histograms.has(part[1]!) && family.type === "UNTYPED" && family.help === "") {
        const bySeries = series.get(part[1]!) ?? new Map();
        series.set(part[1]!, bySeries);
        for (const sample of family.metrics) {
          const { le, ...labels } = sample.labels ?? {};
          const key = JSON.stringify(Object.entries(labels).sort());
          const entry = bySeries.get(key) ?? { labels, buckets: {} };
          bySeries.set(key, entry);
          if (part[2] === "bucket") {
            assert.ok(le !== undefined, `${family.name}: a bucket without le`);
            entry.buckets[le!] = sample.value!;
          } else {
            assert.is(le, undefined, `${family.name}: le on ${part[2]}`);
            entry[part[2] as "sum" | "count"] = sample.value!;
          }
        }
        continue;
      }
      assert.not.ok(families.has(family.name), `metric family ${family.name} appears twice`);
      assert.ok(family.help !== "", `${family.name} has no HELP`);
      const type = histograms.has(family.name) ? "HISTOGRAM" : family.type;
      assert.ok(["COUNTER", "GAUGE", "HISTOGRAM", "SUMMARY"].includes(type), `${family.name} has type ${type}`);
      assert.ok(type !== "HISTOGRAM" || family.metrics.length === 0, `${family.name}: samples without a suffix`);
      families.set(family.name, { ...family, type });
    }
    for (const name of histograms) {
      const family = families.get(name);
      assert.ok(family !== undefined, `histogram ${name} has no HELP`);
      const metrics = [...(series.get(name)?.values() ?? [])].map((s) => ({
        ...(Object.keys(s.labels).length > 0 ? { labels: s.labels } : {}),
        buckets: s.buckets,
        sum: s.sum,
        count: s.count,
      }));
      families.set(name, { ...family!, metrics });
    }
    for (const family of families.values()) for (const sample of family.metrics) checkSample(family, sample);
    this.families = families;
  }

  /** The family named `name`; fails when absent. */
  family(name: string): ParsedFamily {
    const family = this.families.get(name);
    assert.ok(family !== undefined, `no metric family ${name}`);
    return family!;
  }

  /** The sample of `name` with exactly these labels, or undefined. */
  sample(name: string, labels: Readonly<Record<string, string>> = {}): ParsedSample | undefined {
    return this.family(name).metrics.find((m) => sameLabels(m.labels ?? {}, labels));
  }

  /** A counter's or gauge's value for exactly these labels; 0 when the series does not exist (yet). */
  value(name: string, labels: Readonly<Record<string, string>> = {}): number {
    const sample = this.sample(name, labels);
    return sample === undefined ? 0 : Number(sample.value);
  }

  /** A histogram's count for exactly these labels; 0 when the series does not exist (yet). */
  count(name: string, labels: Readonly<Record<string, string>> = {}): number {
    const sample = this.sample(name, labels);
    return sample === undefined ? 0 : Number(sample.count);
  }

  /** A histogram's sum for exactly these labels; 0 when the series does not exist (yet). */
  sum(name: string, labels: Readonly<Record<string, string>> = {}): number {
    const sample = this.sample(name, labels);
    return sample === undefined ? 0 : Number(sample.sum);
  }

  /** Every label set of a family with a non-zero counter value or histogram count. */
  nonZero(name: string): Record<string, string>[] {
    return this.family(name)
      .metrics.filter((m) => Number(m.value ?? m.count ?? 0) !== 0)
      .map((m) => ({ ...(m.labels ?? {}) }));
  }
}

function sameLabels(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}

/** A sample value: a float, or (in any case, as Prometheus reads them) Inf and NaN. */
const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$|^[+-]?inf$|^nan$/i;

function checkSample(family: ParsedFamily, sample: ParsedSample): void {
  const where = `${family.name}${JSON.stringify(sample.labels ?? {})}`;
  if (family.type === "HISTOGRAM") {
    assert.ok(sample.buckets !== undefined && sample.count !== undefined && sample.sum !== undefined, `${where}: incomplete histogram`);
    const bounds = Object.entries(sample.buckets!)
      .map(([le, v]) => [le === "+Inf" ? Infinity : Number(le), Number(v)] as const)
      .sort((x, y) => x[0] - y[0]);
    assert.is(bounds[bounds.length - 1]![0], Infinity, `${where}: no +Inf bucket`);
    for (let i = 1; i < bounds.length; i++) assert.ok(bounds[i]![1] >= bounds[i - 1]![1], `${where}: buckets are not cumulative`);
    assert.is(bounds[bounds.length - 1]![1], Number(sample.count), `${where}: +Inf bucket differs from the count`);
    assert.match(sample.sum!, NUMBER, `${where}: sum`);
  } else if (family.type !== "SUMMARY") {
    assert.match(sample.value ?? "", NUMBER, `${where}: value`);
    if (family.type === "COUNTER") assert.ok(Number(sample.value) >= 0, `${where}: a negative counter`);
  }
}
