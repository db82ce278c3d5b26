/**
 * `npm run bench:analyze [-- --rounds 7 --count 20000 --compare <dir>]`:
 * what the OData analyzer (parse, bind against `$metadata`, accesses) costs
 * per request when its result is not cached (every request names another
 * key), in one process, on the sample services of
 * test-support/odata/fixtures.ts.
 *
 * Baseline in the same run: reading the same requests as a proxy that looks
 * at them at all does (the path split and percent-decoded, the query through
 * `URLSearchParams`, a JSON body through `JSON.parse`). `--compare <dir>`
 * adds the analyzer of another source tree (a git worktree of an earlier
 * commit), loaded beside this one; rounds alternate between the scenarios.
 */
import { parseArgs } from "node:util";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { intOption, median, runBench } from "./lib.js";

const REPO = fileURLToPath(new URL("..", import.meta.url));

interface Case {
  readonly v: "2" | "4";
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly body?: string;
}

/** `#` in a path is replaced by the request's number, so that no two requests are alike. */
const CASES: readonly Case[] = [
  { v: "4", method: "GET", path: "SalesOrders", query: "$select=ID,Note&$top=10&$skip=#" },
  { v: "4", method: "GET", path: "SalesOrders(#)", query: "" },
  { v: "4", method: "GET", path: "SalesOrders", query: "$filter=Note%20eq%20'a'%20and%20ID%20gt%20#&$orderby=ID%20desc&$top=50" },
  { v: "4", method: "GET", path: "SalesOrders(#)", query: "$expand=Items($select=ItemNo;$filter=Quantity%20gt%201)" },
  { v: "4", method: "PATCH", path: "SalesOrders(#)", query: "", body: `{"Note":"changed"}` },
  { v: "2", method: "GET", path: "SalesOrderSet('#')", query: "$format=json" },
  { v: "2", method: "GET", path: "SalesOrderSet", query: "$filter=substringof('x',Note)%20and%20SalesOrderID%20ne%20'#'&$top=20&$inlinecount=allpages" },
];

interface Scenario {
  readonly name: string;
  readonly run: (c: Case, i: number) => void;
  readonly perRound: number[];
}

async function analyzerOf(tree: string): Promise<(c: Case, i: number) => void> {
  const at = (p: string) => pathToFileURL(join(tree, p)).href;
  const { analyzeRequest } = await import(at("src/gateway/odata/request.ts"));
  const { parseMetadata } = await import(at("src/gateway/odata/metadata.ts"));
  const { V4_METADATA, V2_METADATA } = await import(at("test-support/odata/fixtures.ts"));
  const models = { "4": parseMetadata(V4_METADATA), "2": parseMetadata(V2_METADATA) };
  const run = (c: Case, i: number): unknown => {
    const n = String(i);
    return analyzeRequest({
      method: c.method,
      path: c.path.replace("#", n),
      query: c.query.replace("#", n),
      headers: c.body === undefined ? {} : { "content-type": "application/json" },
      model: models[c.v],
      ...(c.body === undefined ? {} : { body: { kind: "json", value: JSON.parse(c.body) } }),
    });
  };
  for (const [i, c] of CASES.entries()) {
    const r = run(c, i + 1) as { kind: string; message?: string };
    if (r.kind !== "access") throw new Error(`${tree}: ${c.method} ${c.path}?${c.query}: ${r.kind} ${r.message ?? ""}`);
  }
  return run;
}

/** What reading a request costs a proxy that reads it at all. */
function readOnly(c: Case, i: number): unknown {
  const n = String(i);
  const segments = c.path.replace("#", n).split("/").map(decodeURIComponent);
  const params = [...new URLSearchParams(c.query.replace("#", n))];
  return [segments, params, c.body === undefined ? undefined : JSON.parse(c.body)];
}

await runBench(120_000, async () => {
  const { values } = parseArgs({ options: { rounds: { type: "string" }, count: { type: "string" }, compare: { type: "string" } } });
  const rounds = intOption("rounds", values.rounds ?? "7", 50);
  const count = intOption("count", values.count ?? "20000", 1_000_000);
  const scenarios: Scenario[] = [
    { name: "baseline: split, decode, URLSearchParams, JSON.parse", run: readOnly, perRound: [] },
    { name: "erplink analyzer", run: await analyzerOf(REPO), perRound: [] },
  ];
  if (values.compare !== undefined) {
    const other = resolve(values.compare);
    if (!existsSync(join(other, "src", "gateway", "odata", "request.ts"))) throw new Error(`--compare ${other}: no analyzer there`);
    scenarios.push({ name: `analyzer from ${other}`, run: await analyzerOf(other), perRound: [] });
  }
  let sink = 0;
  const pass = (s: Scenario, n: number): number => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) if (s.run(CASES[i % CASES.length]!, i) !== undefined) sink++;
    return Number(process.hrtime.bigint() - t0) / n / 1000;
  };
  for (const s of scenarios) pass(s, Math.min(count, 5000)); // warm-up
  for (let r = 0; r < rounds; r++) for (const s of scenarios) s.perRound.push(pass(s, count));
  const base = median(scenarios[0]!.perRound);
  console.log(`${CASES.length} request shapes, ${count} requests per round, ${rounds} rounds alternating; node ${process.version}`);
  console.log(`${"scenario".padEnd(60)}  µs/request (median)  ÷ baseline`);
  for (const s of scenarios) {
    const m = median(s.perRound);
    console.log(`${s.name.padEnd(60)}  ${m.toFixed(2).padStart(19)}  ${(m / base).toFixed(2).padStart(10)}`);
  }
  return sink > 0;
});
