/**
 * Summarizes a V8 CPU profile (`node --cpu-prof`, e.g. the erplink processes
 * of `npm run bench:proxy -- --profile <dir>`): self time per function and
 * per package or source folder, as shares of the busy (non-idle) time.
 *
 *   node --import tsx bench/profile-summary.ts <file.cpuprofile> [--top 25] [--callers <function name>] [--inclusive <url part>]
 *
 * `--callers` lists where a function's self time comes from: its callers,
 * three frames up, by share. `--inclusive src/` lists the total time
 * (self and callees) of the functions whose file contains that part.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}

interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Where a function lives: `src/gateway/data`, `node_modules/fastify`, `node:internal/…`, or `(native)`. */
function place(url: string): string {
  if (url === "") return "(native or V8)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "node_modules/".length).split("/");
    return `node_modules/${rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (url.startsWith("node:")) return url.split("/").slice(0, 2).join("/");
  const src = url.indexOf("/src/");
  if (src >= 0) return url.slice(src + 1).split("/").slice(0, -1).join("/");
  return url;
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: "string", default: "25" }, callers: { type: "string" }, inclusive: { type: "string" } } });
if (positionals.length !== 1) {
  console.error("usage: profile-summary.ts <file.cpuprofile> [--top N]");
  process.exit(2);
}
const top = Number(values.top);
const profile = JSON.parse(readFileSync(positionals[0]!, "utf8")) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parentOf = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
const self = new Map<number, number>();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]!;
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
let total = 0;
let idle = 0;
const fns = new Map<string, number>();
const places = new Map<string, number>();
for (const [id, us] of self) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  total += us;
  if (functionName === "(idle)") {
    idle += us;
    continue;
  }
  const short = url.replace(/^.*\/(node_modules|src)\//, "$1/").replace(/^file:\/\//, "");
  const key = `${functionName || "(anonymous)"}  ${short === "" ? "" : `${short}:${lineNumber + 1}`}`;
  fns.set(key, (fns.get(key) ?? 0) + us);
  const p = place(url);
  places.set(p, (places.get(p) ?? 0) + us);
}
const busy = total - idle;
const pct = (us: number) => `${((us / busy) * 100).toFixed(1).padStart(5)} %`;
console.log(`${positionals[0]}: ${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy (shares below are of busy time)`);
console.log("\nself time by function:");
for (const [k, us] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${k}`);
console.log("\nself time by package or source folder:");
for (const [k, us] of [...places].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${k}`);

if (values.callers !== undefined) {
  const chains = new Map<string, number>();
  let sum = 0;
  for (const [id, us] of self) {
    if (byId.get(id)!.callFrame.functionName !== values.callers) continue;
    sum += us;
    const frames: string[] = [];
    for (let p = parentOf.get(id); p !== undefined && frames.length < Number(process.env.DEPTH ?? 3); p = parentOf.get(p)) {
      const f = byId.get(p)!.callFrame;
      frames.push(`${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/(node_modules|src)\//, "$1/")}`);
    }
    const key = frames.join(" <- ");
    chains.set(key, (chains.get(key) ?? 0) + us);
  }
  console.log(`\ncallers of ${values.callers} (${pct(sum)} of busy time):`);
  for (const [k, us] of [...chains].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${k}`);
}

if (values.inclusive !== undefined) {
  const part = values.inclusive;
  const totals = new Map<string, number>();
  for (const [id, us] of self) {
    if (byId.get(id)!.callFrame.functionName === "(idle)") continue;
    // Each function counted once per sample, however often it recurs on the stack.
    const seen = new Set<string>();
    for (let p: number | undefined = id; p !== undefined; p = parentOf.get(p)) {
      const f = byId.get(p)!.callFrame;
      if (!f.url.includes(part)) continue;
      const key = `${f.functionName || "(anonymous)"}  ${f.url.replace(/^.*\/(node_modules|src)\//, "$1/")}`;
      if (seen.has(key)) continue;
      seen.add(key);
      totals.set(key, (totals.get(key) ?? 0) + us);
    }
  }
  console.log(`\ntotal time (self and callees) of functions in files matching '${part}':`);
  for (const [k, us] of [...totals].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${k}`);
}
