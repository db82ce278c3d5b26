/**
 * The reliability survey: erplink (`src/main.ts` as deployed) under hostile
 * clients and sudden death, measured rather than only tested. Every
 * scenario is bounded in time and sends traffic to loopback addresses only
 * (erplink listens on 127.0.0.1; some attackers connect from 127.0.0.2 and
 * 127.0.0.3, which Linux's loopback accepts).
 *
 * Attack scenarios (each on a fresh erplink, embedded store in a temporary
 * data directory, with the OData back end of bench/proxy-backend.ts), first
 * warmed by `--warm-rate` requests a second (bench/proxy-load.ts, open loop)
 * until its request log is at its cap and `--warm` seconds more, so that it
 * is in its steady state before its RSS is read: a healthy client on
 * 127.0.0.1 sends sequential data GETs over one keep-alive HTTP/1.1
 * connection, alone for `--quiet` seconds, then for `--seconds` while
 * bench/reliability-attack.ts (a process of its own) attacks:
 *
 * - `rapid-reset`: two reconnecting HTTP/2 rapid-reset loops, from
 *   127.0.0.2 and 127.0.0.3;
 * - `pipeline`: 4 connections each writing 20,001 pipelined GETs and
 *   reading the answers slowly;
 * - `slowloris`: 500 connections sending a header byte every 2-5 s;
 * - `idle`: 2,000 idle connections, half HTTP/1.1, half h2c.
 *
 * Crash scenarios: a writer (4 lanes) creates and deletes systems over
 * /admin and a reader sends data GETs while erplink is SIGKILLed at random
 * moments (`--kills`, 8) and started again on the same data:
 *
 * - `kill-embedded`: the embedded store, on the same data directory;
 * - `kill-mongodb`: MongoDB, a FerretDB of its own (scripts/ferretdb.sh
 *   builds it; skipped, with the reason, when it cannot be built).
 *
 * Targets (a row that misses one is FAIL, and the run exits with 1): the
 * healthy client's p99 during an attack within 5× its quiet p99, and none
 * of its requests failed; erplink's RSS under 400 MiB all along (sampled
 * every 200 ms) and, `--after` seconds after an attack, within 25 % of what
 * it was before (both read after a full garbage collection, asked of
 * erplink over Node's inspector on a loopback port); every healthy request in
 * the request log and no entry dropped; no request of a reset stream
 * reached the back end; after each kill, no acknowledged write lost, no
 * acknowledged delete back, and no acknowledged data request missing from
 * the request log unless it was answered within the last flush interval
 * before the kill (entries are written in batches every second).
 *
 * Usage: npm run reliability [-- --only <scenario>[,<scenario>…] --seconds 15 --warm 4 --warm-rate 2000 --quiet 5 --after 5 --kills 8 --trace
 *        --node-options <flags for erplink's node; default: those of \`npm start\`, e.g. --max-old-space-size=384>]
 * See bench/README.md and README.md's "Reliability".
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { WebSocket } from "undici";
import { freePort } from "../test-support/e2e.js";
import { ensureFerretDbBinary, startFerretDb, type FerretDbProcess } from "../test-support/processes.js";
import { MASTER_KEY, REPO, NodeLoad, admin, configureErplink, settle, startErplink, startNodeServer, INSTANCE, type Server } from "./harness.js";
import { intOption, percentile, runBench } from "./lib.js";
import { ENTITY_SET, PAYLOAD, QUERY, SERVICE, type BackendCounts } from "./proxy-backend.js";
import type { AttackCommand } from "./reliability-attack.js";

const SCENARIOS = ["rapid-reset", "pipeline", "slowloris", "idle", "kill-embedded", "kill-mongodb"] as const;
type Scenario = (typeof SCENARIOS)[number];

/** The healthy client's p99 during an attack may be this many times its quiet p99. */
const MAX_P99_RATIO = 5;
/** erplink's RSS must stay under this. */
const MAX_RSS = 400 * 2 ** 20;
/** After an attack, RSS must be back within this share above what it was before. */
const MAX_RSS_AFTER = 0.25;
/**
 * After a SIGKILL, request-log entries of requests answered at most this
 * long before it may be missing: the writer flushes its queue every second,
 * and a flush takes what was queued when it began.
 */
const LOG_FLUSH_ALLOWANCE_MS = 1_500;
/** Longest the warm-up waits for the request log to reach its cap. */
const MAX_FILL_MS = 60_000;
/** The query the rapid-reset attacker sends (the back end counts requests by query). */
const RESET_QUERY = "$top=7";
const PIPELINE_QUERY = "$top=8";
const MIB = 2 ** 20;

const DATA_PATH = `/odata/${INSTANCE}/${SERVICE}/${ENTITY_SET}`;

// ------------------------------------------------------------ processes

/** Every process the survey started and has not yet seen exit: SIGKILLed if the survey ends first. */
const children = new Map<number, string>();
process.on("exit", () => {
  for (const pid of children.keys()) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
});
process.on("SIGINT", () => process.exit(130));
process.on("SIGTERM", () => process.exit(143));

function tracked(server: Server): Server {
  children.set(server.pid, server.name);
  return {
    ...server,
    async stop() {
      await server.stop();
      children.delete(server.pid);
    },
  };
}

/** VmRSS of a process (bytes); 0 when it is gone. */
function rssOf(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m === null ? 0 : Number(m[1]) * 1024;
  } catch {
    return 0;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (bytes: number) => (bytes / MIB).toFixed(0);
const ms = (x: number) => (Number.isFinite(x) ? (x < 10 ? x.toFixed(2) : x.toFixed(1)) : "-");
const n = (x: number) => x.toLocaleString("en-US");

/** Samples a process's RSS every 200 ms; `peak()` is the highest since the last `reset()`. */
class RssSampler {
  private highest = 0;
  private readonly timer: NodeJS.Timeout;
  constructor(private pid: number) {
    this.timer = setInterval(() => this.sample(), 200);
  }
  follow(pid: number): void {
    this.pid = pid;
  }
  sample(): number {
    const rss = rssOf(this.pid);
    this.highest = Math.max(this.highest, rss);
    return rss;
  }
  peak(): number {
    this.sample();
    return this.highest;
  }
  reset(): void {
    this.highest = 0;
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

// ------------------------------------------------------------ the healthy client

/** One answered request: its request id and when its answer had arrived (epoch ms). */
interface Answered {
  readonly id: string;
  readonly at: number;
}

/**
 * Sequential data GETs over one keep-alive HTTP/1.1 connection from
 * 127.0.0.1, every answer checked (200 and the back end's exact bytes).
 * Latencies are kept by the phase they were measured in.
 */
class HealthyClient {
  phase = "warm-up";
  private agent: http.Agent;
  private running: Promise<void> | undefined;
  private stopping = false;
  readonly latencies = new Map<string, number[]>();
  readonly answered: Answered[] = [];
  failures = 0;
  firstFailure: string | undefined;
  /** Failures while the server was being killed (expected; not counted in `failures`). */
  failuresWhileDown = 0;
  down = false;

  constructor(
    private port: number,
    private readonly key: string,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  }

  /** Points the client at another erplink (after a restart). */
  retarget(port: number): void {
    this.agent.destroy();
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    this.port = port;
  }

  start(): void {
    this.stopping = false;
    this.running ??= this.loop().finally(() => (this.running = undefined));
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
  }

  sent(): number {
    return this.answered.length;
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      const started = performance.now();
      const phase = this.phase;
      try {
        const id = await this.get();
        const took = performance.now() - started;
        let list = this.latencies.get(phase);
        if (list === undefined) this.latencies.set(phase, (list = []));
        list.push(took);
        this.answered.push({ id, at: Date.now() });
      } catch (err) {
        if (this.down) {
          this.failuresWhileDown++;
          await sleep(20);
        } else {
          this.failures++;
          this.firstFailure ??= `${phase}: ${(err as Error).message}`;
        }
      }
    }
  }

  private get(): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = http.get(
        { host: "127.0.0.1", port: this.port, path: `${DATA_PATH}?${QUERY}`, agent: this.agent, headers: { authorization: `Bearer ${this.key}`, accept: "application/json" } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", reject);
          res.on("end", () => {
            const body = Buffer.concat(chunks);
            if (res.statusCode !== 200 || !body.equals(PAYLOAD)) reject(new Error(`answered ${res.statusCode}: ${body.subarray(0, 200).toString("utf8")}`));
            else resolve(String(res.headers["x-request-id"] ?? ""));
          });
        },
      );
      req.setTimeout(10_000, () => req.destroy(new Error("no answer within 10 s")));
      req.on("error", reject);
    });
  }

  /** p50 and p99 of a phase (ms). */
  stats(phase: string): { count: number; p50: number; p99: number } {
    const sorted = Float64Array.from(this.latencies.get(phase) ?? []).sort();
    return { count: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
  }
}

// ------------------------------------------------------------ erplink over HTTP

/** One JSON request with the master key. */
async function call(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: { data?: unknown; meta?: { nextPageToken?: string } } }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${MASTER_KEY}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let json = {};
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, json };
}

/** Every page of an admin list (`path` has a query already or not). */
async function listAll<T>(base: string, path: string, pageSize: number): Promise<T[]> {
  const out: T[] = [];
  let token = "";
  const sep = path.includes("?") ? "&" : "?";
  for (let page = 0; page < 10_000; page++) {
    const res = await call(base, "GET", `${path}${sep}page_size=${pageSize}${token === "" ? "" : `&page_token=${encodeURIComponent(token)}`}`);
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${JSON.stringify(res.json).slice(0, 300)}`);
    out.push(...((res.json.data as T[]) ?? []));
    token = res.json.meta?.nextPageToken ?? "";
    if (token === "") return out;
  }
  throw new Error(`GET ${path}: too many pages`);
}

/** The request ids of the request log's entries for one API key. */
async function loggedRequestIds(base: string, keyId: string): Promise<Set<string>> {
  const entries = await listAll<{ request_id: string }>(base, `/admin/logs?api_key_id=${encodeURIComponent(keyId)}`, 1000);
  return new Set(entries.map((e) => e.request_id));
}

interface LogHealth {
  queued: number;
  written: number;
  dropped: number;
  evicted?: number;
}

async function logHealth(base: string): Promise<LogHealth> {
  const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(5000) });
  return ((await res.json()) as { data: { request_log: LogHealth } }).data.request_log;
}

/** A data key for the back end's entity set; returns its id and secret. */
async function dataKey(base: string, name: string): Promise<{ id: string; key: string }> {
  const data = await admin(base, "/admin/api-keys", { name, permissions: { [INSTANCE]: { [SERVICE]: { [ENTITY_SET]: ["list"] } } } });
  return { id: String(data.id), key: String(data.key) };
}

// ------------------------------------------------------------ rows

interface Row {
  scenario: string;
  quiet?: { p50: number; p99: number };
  during?: { p50: number; p99: number };
  ratio?: number;
  rss?: { before: number; peak: number; after: number };
  log: string;
  counts: string;
  failures: string[];
  skipped?: string;
}

interface Context {
  seconds: number;
  warm: number;
  warmRate: number;
  quiet: number;
  after: number;
  kills: number;
  /** Print erplink's RSS, V8 heap and request log every second of each attack scenario. */
  trace: boolean;
  /** Node's flags for erplink (`--node-options`), e.g. a heap limit as a container would set it. */
  nodeOptions: string;
  backend: Server;
  load: NodeLoad;
  dir: string;
}

async function backendCounts(ctx: Context): Promise<BackendCounts> {
  return (await (await fetch(`http://127.0.0.1:${ctx.backend.port}/__bench/counts`)).json()) as BackendCounts;
}

/**
 * Starts erplink on `env`'s store, with Node's inspector on a free loopback
 * port: the survey asks it for a full garbage collection before it reads the
 * RSS it compares ({@link memoryAfterGc}).
 */
async function erplink(ctx: Context, name: string, env: Record<string, string>): Promise<Server> {
  return tracked(await startErplink(name, { ...env, NODE_OPTIONS: `--inspect=127.0.0.1:0 ${ctx.nodeOptions}`.trim() }, undefined, REPO));
}

/**
 * A full garbage collection in erplink (`HeapProfiler.collectGarbage` over
 * the inspector), then its memory: what the process keeps, wherever V8's own
 * collection cycle happens to be (under load V8 lets the heap grow to a few
 * times what is live before it collects, so RSS read at a random moment moves
 * by 100 MiB and more).
 */
async function memoryAfterGc(server: Server): Promise<Memory> {
  const url = /ws:\/\/127\.0\.0\.1:\d+\/[\w-]+/.exec(server.stderr())?.[0];
  if (url === undefined) throw new Error(`no inspector address in erplink's output: ${server.stderr().slice(-500)}`);
  const ws = new WebSocket(url);
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the inspector did not answer within 10 s")), 10_000);
      ws.onerror = () => reject(new Error("cannot reach the inspector"));
      ws.onopen = () => ws.send(JSON.stringify({ id: 1, method: "HeapProfiler.collectGarbage" }));
      ws.onmessage = (e) => {
        if ((JSON.parse(String(e.data)) as { id?: number }).id === 1) {
          clearTimeout(timer);
          resolve();
        }
      };
    });
  } finally {
    ws.close();
  }
  await sleep(200);
  const rss = rssOf(server.pid);
  const metrics = await (await fetch(`http://127.0.0.1:${server.port}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(metrics)?.[1] ?? NaN);
  return { rss, heapUsed: gauge("nodejs_heap_size_used_bytes"), heapTotal: gauge("nodejs_heap_size_total_bytes"), external: gauge("nodejs_external_memory_bytes") };
}

/** Memory after a full garbage collection (bytes): RSS, V8's heap in use and as reserved, and the external memory V8 knows of. */
interface Memory {
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
}

const heapText = (before: Memory, after: Memory) =>
  `after a full GC: heap used ${mib(before.heapUsed)} → ${mib(after.heapUsed)} MiB, reserved ${mib(before.heapTotal)} → ${mib(after.heapTotal)} MiB, ` +
  `external ${mib(before.external)} → ${mib(after.external)} MiB, the rest of RSS ${mib(before.rss - before.heapTotal - before.external)} → ` +
  `${mib(after.rss - after.heapTotal - after.external)} MiB`;

/** Runs the attack process to its end; resolves with its counts. `onStarted` is called when the attack begins, `onDone` when it ends. */
async function runAttack(cmd: AttackCommand, onStarted: () => void, onDone: () => void): Promise<Record<string, number>> {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", join(REPO, "bench", "reliability-attack.ts"), JSON.stringify(cmd)], {
    cwd: REPO,
    stdio: ["pipe", "pipe", "pipe"],
  });
  children.set(child.pid!, "attacker");
  let err = "";
  child.stderr!.setEncoding("utf8").on("data", (s: string) => (err = (err + s).slice(-4000)));
  let result: Record<string, number> | undefined;
  createInterface({ input: child.stdout! }).on("line", (line) => {
    if (line === "started") onStarted();
    else if (line.startsWith("result ")) {
      onDone();
      result = JSON.parse(line.slice(7)) as Record<string, number>;
    }
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  children.delete(child.pid!);
  if (result === undefined) throw new Error(`the attacker exited (${code}) without a result: ${err}`);
  return result;
}

/** What each attack scenario sends, and how its counts read. */
function attackOf(scenario: Scenario, port: number, seconds: number, attackerKey: string): AttackCommand {
  switch (scenario) {
    case "rapid-reset":
      return {
        kind: "rapid-reset",
        port,
        seconds,
        path: `${DATA_PATH}?${RESET_QUERY}`,
        authorization: `Bearer ${attackerKey}`,
        localAddresses: ["127.0.0.2", "127.0.0.3"],
        pairsPerWrite: 100,
      };
    case "pipeline":
      return { kind: "pipeline", port, seconds, path: `${DATA_PATH}?${PIPELINE_QUERY}`, authorization: `Bearer ${attackerKey}`, connections: 4, requests: 20_001 };
    case "slowloris":
      return { kind: "slowloris", port, seconds, path: `${DATA_PATH}?${QUERY}`, connections: 500 };
    default:
      return { kind: "idle", port, seconds, connections: 2_000 };
  }
}

async function attackScenario(ctx: Context, scenario: Scenario): Promise<Row> {
  const row: Row = { scenario, log: "", counts: "", failures: [] };
  const dataDir = join(ctx.dir, scenario);
  const server = await erplink(ctx, `erplink-${scenario}`, { ERPLINK_DATA_DIR: dataDir });
  const sampler = new RssSampler(server.pid);
  const healthy = { client: undefined as HealthyClient | undefined };
  let tracer: NodeJS.Timeout | undefined;
  try {
    const base = `http://127.0.0.1:${server.port}`;
    const attackerKey = await configureErplink(base, `http://127.0.0.1:${ctx.backend.port}`);
    const healthyKey = await dataKey(base, "healthy client");
    // Warm-up: `--warm-rate` requests a second until the request log is at its cap (it holds
    // every entry in memory on the embedded store, some 75 MB at the default cap), and then
    // `--warm` seconds more, so that RSS is read before the attack from a process in its steady
    // state, as one that has served for a while is.
    const warmStarted = Date.now();
    for (let extra = -1; extra < 0 || Date.now() - extra < ctx.warm * 1000; ) {
      const warm = await ctx.load.run({
        mode: "open",
        rate: ctx.warmRate,
        url: `${base}${DATA_PATH}?${QUERY}`,
        headers: { authorization: `Bearer ${attackerKey}`, accept: "application/json" },
        durationMs: 2_000,
        connections: 64,
      });
      if (warm.problems > 0) throw new Error(`warm-up: ${warm.problems} requests failed (first: ${warm.firstProblem})`);
      const log = await settle(base);
      if (extra < 0 && ((log?.evicted ?? 0) > 0 || Date.now() - warmStarted > MAX_FILL_MS)) extra = Date.now();
    }
    const warmSeconds = (Date.now() - warmStarted) / 1000;
    const backendBefore = await backendCounts(ctx);
    const client = new HealthyClient(server.port, healthyKey.key);
    healthy.client = client;

    // The healthy client alone, then the quiet phase.
    client.phase = "warm-up";
    client.start();
    if (ctx.trace) tracer = traceEverySecond(base, server.pid, () => client.phase);
    await sleep(1_000);
    client.phase = "quiet";
    await sleep(ctx.quiet * 1000);
    const beforeGc = await memoryAfterGc(server);
    const before = beforeGc.rss;
    sampler.reset();
    let attackStarted = 0;
    let attackEnded = 0;
    const counts = await runAttack(
      attackOf(scenario, server.port, ctx.seconds, attackerKey),
      () => {
        client.phase = "attack";
        attackStarted = Date.now();
      },
      () => {
        client.phase = "after";
        attackEnded = Date.now();
      },
    );
    const peak = sampler.peak();
    // The healthy client goes on, as legitimate traffic does: what erplink keeps once the attack is over.
    await sleep(ctx.after * 1000);
    const afterGc = await memoryAfterGc(server);
    const after = afterGc.rss;
    await client.stop();
    row.rss = { before, peak: Math.max(peak, before), after };

    const quiet = client.stats("quiet");
    const during = client.stats("attack");
    row.quiet = quiet;
    row.during = during;
    row.ratio = during.p99 / quiet.p99;

    // The request log: every healthy request, by request id.
    const log = await settle(base);
    const ids = await loggedRequestIds(base, healthyKey.id);
    // The log keeps the newest entries up to its cap: those of the healthy requests before the
    // oldest one it still holds were evicted (counted by /healthz), not lost.
    const kept = client.answered.findIndex((a) => ids.has(a.id));
    const evictedHealthy = kept < 0 ? 0 : kept;
    const missing = client.answered.slice(evictedHealthy).filter((a) => !ids.has(a.id)).length;
    row.log = `${n(client.sent() - evictedHealthy - missing)}/${n(client.sent() - evictedHealthy)}`;
    const health = await logHealth(base);
    if (health.dropped > 0) row.log += `, ${n(health.dropped)} dropped`;
    if (evictedHealthy > 0) row.log += ` (${n(evictedHealthy)} older evicted by the cap)`;

    const backendAfter = await backendCounts(ctx);
    const hits = (q: string) => (backendAfter.byQuery[q] ?? 0) - (backendBefore.byQuery[q] ?? 0);
    const attackSeconds = (attackEnded - attackStarted) / 1000;
    switch (scenario) {
      case "rapid-reset":
        row.counts =
          `${n(counts.streams!)} streams reset on ${n(counts.connections!)} connections; ${n(counts.calmed!)} sessions calmed (GOAWAY 11), ` +
          `${n(counts.refused!)} connections refused, ${n(counts.connectErrors!)} connect errors; back end hits from reset streams: ${n(hits(RESET_QUERY))}`;
        if (hits(RESET_QUERY) !== 0) row.failures.push(`${hits(RESET_QUERY)} requests of reset streams reached the back end`);
        if (counts.calmed === 0) row.failures.push("no session was sent GOAWAY ENHANCE_YOUR_CALM");
        break;
      case "pipeline":
        row.counts =
          `${n(counts.requestsWritten!)} GETs written (${(counts.bytesWritten! / MIB).toFixed(1)} MiB) on ${n(counts.connections!)} connections; ` +
          `${n(counts.answers!)} answers read; back end hits: ${n(hits(PIPELINE_QUERY))}; ${n(counts.closedByServer!)} closed by erplink`;
        break;
      case "slowloris":
        row.counts =
          `${n(counts.connections!)} connections, ${n(counts.bytesSent!)} bytes; ${n(counts.openAtEnd!)} open at the end, ` +
          `${n(counts.closedByServer!)} closed by erplink${counts.firstClosedAfterMs! >= 0 ? ` (first after ${(counts.firstClosedAfterMs! / 1000).toFixed(1)} s)` : ""}`;
        break;
      default:
        row.counts =
          `${n(counts.opened!)} connections opened, ${n(counts.openAtEnd!)} open at the end; closed by erplink: ${n(counts.closedByServerH1!)} HTTP/1.1, ` +
          `${n(counts.closedByServerH2!)} h2c${counts.firstClosedAfterMs! >= 0 ? ` (first after ${(counts.firstClosedAfterMs! / 1000).toFixed(1)} s)` : ""}; ${n(counts.connectErrors!)} connect errors`;
    }
    row.counts += `; healthy: ${n(quiet.count)} quiet, ${n(during.count)} in ${attackSeconds.toFixed(1)} s of attack; warm-up ${warmSeconds.toFixed(0)} s; ${heapText(beforeGc, afterGc)}`;

    if (!(row.ratio <= MAX_P99_RATIO)) row.failures.push(`healthy p99 ${ms(during.p99)} ms during the attack is ${row.ratio.toFixed(1)}× its quiet ${ms(quiet.p99)} ms (at most ${MAX_P99_RATIO}×)`);
    if (client.failures > 0) row.failures.push(`${client.failures} healthy requests failed (first: ${client.firstFailure})`);
    checkRss(row);
    if (missing > 0) row.failures.push(`${missing} healthy requests have no request-log entry`);
    if ((log?.dropped ?? 0) > 0 || health.dropped > 0) row.failures.push(`${health.dropped} request-log entries dropped`);
    if (rssOf(server.pid) === 0) row.failures.push(`erplink exited during the scenario: ${server.stderr().slice(-500)}`);
    return row;
  } finally {
    clearInterval(tracer);
    sampler.stop();
    await healthy.client?.stop();
    await server.stop();
  }
}

/** With `--trace`: one line a second of erplink's RSS, V8 heap (from /metrics) and request log. */
function traceEverySecond(base: string, pid: number, phase: () => string): NodeJS.Timeout {
  const started = Date.now();
  const gauge = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? NaN) / MIB;
  return setInterval(() => {
    const rss = rssOf(pid);
    void Promise.all([fetch(`${base}/metrics`, { signal: AbortSignal.timeout(900) }).then((r) => r.text()), logHealth(base)]).then(
      ([metrics, log]) =>
        console.log(
          `  ${((Date.now() - started) / 1000).toFixed(0).padStart(3)} s ${phase().padEnd(7)} RSS ${mib(rss)} MiB, heap used ${gauge(metrics, "nodejs_heap_size_used_bytes").toFixed(0)} ` +
            `of ${gauge(metrics, "nodejs_heap_size_total_bytes").toFixed(0)} MiB, external ${gauge(metrics, "nodejs_external_memory_bytes").toFixed(0)} MiB; ` +
            `request log: ${n(log.written)} written, ${n(log.queued)} queued, ${n(log.evicted ?? 0)} evicted`,
        ),
      () => undefined,
    );
  }, 1000);
}

function checkRss(row: Row): void {
  const rss = row.rss!;
  if (rss.peak >= MAX_RSS) row.failures.push(`erplink RSS peaked at ${mib(rss.peak)} MiB (under ${mib(MAX_RSS)} MiB)`);
  if (rss.after > rss.before * (1 + MAX_RSS_AFTER)) row.failures.push(`erplink RSS ${mib(rss.after)} MiB after, ${mib(rss.before)} MiB before (at most +${MAX_RSS_AFTER * 100} %)`);
}

// ------------------------------------------------------------ kill -9

/** The writer's view of the systems it created. */
interface Ledger {
  /** Acknowledged creates not deleted since (id → name). */
  readonly live: Map<string, string>;
  /** Acknowledged deletes. */
  readonly deleted: Set<string>;
  /** Deletes sent but not acknowledged (the kill came first): either outcome is right. */
  readonly unsure: Set<string>;
  creates: number;
  deletes: number;
}

/** One writer lane: creates systems, deleting the oldest of its own every second create, until `stop()`. */
function writerLane(base: string, lane: string, ledger: Ledger, state: { stopped: boolean }): Promise<void> {
  const mine: string[] = [];
  return (async () => {
    for (let i = 0; !state.stopped; i++) {
      try {
        const name = `${lane}-${i}`;
        const made = await call(base, "POST", "/admin/systems", { name });
        if (made.status === 201) {
          const id = String((made.json.data as { id: string }).id);
          ledger.live.set(id, name);
          ledger.creates++;
          mine.push(id);
        }
        if (i % 2 === 1 && mine.length > 1) {
          const victim = mine.shift()!;
          ledger.live.delete(victim);
          ledger.unsure.add(victim);
          const gone = await call(base, "DELETE", `/admin/systems/${victim}`);
          ledger.unsure.delete(victim);
          if (gone.status === 200) {
            ledger.deleted.add(victim);
            ledger.deletes++;
          } else {
            ledger.live.set(victim, "");
            mine.unshift(victim);
          }
        }
      } catch {
        // The process was killed under the request: its outcome is unknown (an unsure delete stays unsure).
        if (!state.stopped) await sleep(20);
      }
    }
  })();
}

async function killScenario(ctx: Context, scenario: "kill-embedded" | "kill-mongodb"): Promise<Row> {
  const row: Row = { scenario, log: "", counts: "", failures: [] };
  let ferret: FerretDbProcess | undefined;
  let env: Record<string, string>;
  if (scenario === "kill-mongodb") {
    let bin: string;
    try {
      bin = await ensureFerretDbBinary();
    } catch (err) {
      row.skipped = `FerretDB cannot be built: ${String((err as Error).message).split("\n")[0]}`;
      return row;
    }
    ferret = await startFerretDb(bin, await freePort(), mkdtempSync(join(ctx.dir, "ferretdb-")));
    children.set(ferret.child.pid!, "FerretDB");
    env = { MONGODB_URL: `${ferret.url}erplink_reliability` };
  } else {
    env = { ERPLINK_DATA_DIR: join(ctx.dir, scenario) };
  }
  let server = await erplink(ctx, `erplink-${scenario}`, env);
  const sampler = new RssSampler(server.pid);
  let reader: HealthyClient | undefined;
  try {
    let base = `http://127.0.0.1:${server.port}`;
    await configureErplink(base, `http://127.0.0.1:${ctx.backend.port}`);
    const readerKey = await dataKey(base, "reader");
    reader = new HealthyClient(server.port, readerKey.key);
    reader.start();
    await sleep(1_000);
    reader.phase = "quiet";
    await sleep(ctx.quiet * 1000);
    let peak = sampler.peak();
    const beforeGc = await memoryAfterGc(server);
    const before = beforeGc.rss;

    const ledger: Ledger = { live: new Map(), deleted: new Set(), unsure: new Set(), creates: 0, deletes: 0 };
    let lost = 0;
    let back = 0;
    let missingLog = 0;
    let lateMissing = 0;
    let worstMissingAgeMs = -1;
    const restarts: number[] = [];
    const roundStart = { index: reader.answered.length };
    for (let round = 1; round <= ctx.kills; round++) {
      reader.phase = "attack";
      const state = { stopped: false };
      const lanes = Array.from({ length: 4 }, (_, l) => writerLane(base, `r${round}-l${l}`, ledger, state));
      await sleep(1_000 + Math.random() * 3_000);
      // The kill: no warning, no flush.
      reader.down = true;
      const killedAt = Date.now();
      process.kill(server.pid, "SIGKILL");
      state.stopped = true;
      await server.stop();
      peak = Math.max(peak, sampler.peak());
      await Promise.all(lanes);
      await reader.stop();
      const roundAnswers = reader.answered.slice(roundStart.index);

      const startedAt = Date.now();
      server = await erplink(ctx, `erplink-${scenario}`, env);
      restarts.push(Date.now() - startedAt);
      sampler.follow(server.pid);
      base = `http://127.0.0.1:${server.port}`;

      // What was acknowledged is there; what was acknowledged deleted is not.
      const present = new Map((await listAll<{ id: string; name: string }>(base, "/admin/systems", 500)).map((s) => [s.id, s.name]));
      for (const id of ledger.live.keys()) {
        if (present.has(id)) continue;
        lost++;
        // Counted once, not again after each later kill.
        ledger.live.delete(id);
      }
      for (const id of ledger.deleted) if (present.has(id)) back++;
      for (const id of ledger.unsure) {
        if (present.has(id)) ledger.live.set(id, present.get(id)!);
        else ledger.deleted.add(id);
      }
      ledger.unsure.clear();
      // Deleted ones are checked once: a later round may not see them again anyway.
      ledger.deleted.clear();

      // The reader's entries: those missing must have been answered within the last flush before the kill.
      const ids = await loggedRequestIds(base, readerKey.id);
      for (const a of roundAnswers) {
        if (ids.has(a.id)) continue;
        missingLog++;
        const age = killedAt - a.at;
        worstMissingAgeMs = Math.max(worstMissingAgeMs, age);
        if (age > LOG_FLUSH_ALLOWANCE_MS) lateMissing++;
      }
      roundStart.index = reader.answered.length;
      reader.retarget(server.port);
      reader.down = false;
      if (round < ctx.kills) reader.start();
    }
    const readerSent = reader.answered.length;
    const during = reader.stats("attack");
    const quiet = reader.stats("quiet");
    row.quiet = quiet;
    row.during = during;
    row.ratio = during.p99 / quiet.p99;
    await sleep(ctx.after * 1000);
    peak = Math.max(peak, sampler.peak());
    const afterGc = await memoryAfterGc(server);
    const after = afterGc.rss;
    row.rss = { before, peak, after };
    const health = await logHealth(base);
    row.log =
      `${n(readerSent - missingLog)}/${n(readerSent)}` +
      (missingLog > 0 ? ` (${n(missingLog)} answered ≤ ${worstMissingAgeMs} ms before a kill)` : "") +
      (health.dropped > 0 ? `, ${n(health.dropped)} dropped` : "");
    const restartText = `${(Math.min(...restarts) / 1000).toFixed(1)}-${(Math.max(...restarts) / 1000).toFixed(1)} s`;
    row.counts =
      `${ctx.kills} SIGKILLs; ${n(ledger.creates)} creates and ${n(ledger.deletes)} deletes acknowledged; ${lost} acknowledged writes lost, ` +
      `${back} acknowledged deletes back; restart to /healthz ${restartText}; reader: ${n(reader.failuresWhileDown)} requests failed around the kills; ${heapText(beforeGc, afterGc)}`;
    if (lost > 0) row.failures.push(`${lost} acknowledged creates lost`);
    if (back > 0) row.failures.push(`${back} acknowledged deletes back`);
    if (lateMissing > 0) row.failures.push(`${lateMissing} request-log entries missing of requests answered more than ${LOG_FLUSH_ALLOWANCE_MS} ms before a kill (worst ${worstMissingAgeMs} ms)`);
    if (reader.failures > 0) row.failures.push(`${reader.failures} reader requests failed while erplink ran (first: ${reader.firstFailure})`);
    if (row.rss.peak >= MAX_RSS) row.failures.push(`erplink RSS peaked at ${mib(row.rss.peak)} MiB (under ${mib(MAX_RSS)} MiB)`);
    return row;
  } finally {
    sampler.stop();
    await reader?.stop();
    await server.stop();
    if (ferret !== undefined) {
      await ferret.kill();
      children.delete(ferret.child.pid!);
    }
  }
}

// ------------------------------------------------------------ output

function printTable(rows: Row[]): void {
  const head = ["scenario", "quiet p50/p99 ms", "attack p50/p99 ms", "p99 ÷ quiet", "RSS MiB before/peak/after", "request log (healthy)", "verdict"];
  const lines = rows.map((r) =>
    r.skipped !== undefined
      ? [r.scenario, "-", "-", "-", "-", "-", "SKIPPED"]
      : [
          r.scenario,
          r.quiet === undefined ? "-" : `${ms(r.quiet.p50)} / ${ms(r.quiet.p99)}`,
          r.during === undefined ? "-" : `${ms(r.during.p50)} / ${ms(r.during.p99)}`,
          r.ratio === undefined ? "-" : `${r.ratio.toFixed(2)}${r.scenario.startsWith("kill-") ? "*" : ""}`,
          r.rss === undefined ? "-" : `${mib(r.rss.before)} / ${mib(r.rss.peak)} / ${mib(r.rss.after)}`,
          r.log,
          r.failures.length === 0 ? "PASS" : "FAIL",
        ],
  );
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
  console.log(`\n${fmt(head)}\n${widths.map((w) => "-".repeat(w)).join("  ")}`);
  for (const l of lines) console.log(fmt(l));
  if (rows.some((r) => r.scenario.startsWith("kill-") && r.skipped === undefined)) {
    console.log("* kill rows: the reader alone, then while the writer runs and the kills come (no target); the log column counts the reader's requests");
  }
  console.log("");
  for (const r of rows) {
    console.log(`${r.scenario}: ${r.skipped ?? r.counts}`);
    for (const f of r.failures) console.log(`  FAIL: ${f}`);
  }
}

// ------------------------------------------------------------ main

const { values } = parseArgs({
  options: {
    only: { type: "string" },
    seconds: { type: "string", default: "15" },
    warm: { type: "string", default: "4" },
    "warm-rate": { type: "string", default: "2000" },
    quiet: { type: "string", default: "5" },
    after: { type: "string", default: "5" },
    kills: { type: "string", default: "8" },
    trace: { type: "boolean", default: false },
    "node-options": { type: "string", default: startFlags() },
  },
});
const seconds = intOption("seconds", values.seconds, 600);
const warm = intOption("warm", values.warm, 120);
const warmRate = intOption("warm-rate", values["warm-rate"], 100_000);
const quiet = intOption("quiet", values.quiet, 120);
const after = intOption("after", values.after, 120);
const kills = intOption("kills", values.kills, 100);
const only = values.only === undefined ? [...SCENARIOS] : values.only.split(",").map((s) => s.trim());
for (const s of only) if (!(SCENARIOS as readonly string[]).includes(s)) throw new Error(`--only: unknown scenario "${s}" (one of ${SCENARIOS.join(", ")})`);
const selected = SCENARIOS.filter((s) => only.includes(s));

// Each attack: start, warm-up, quiet, attack, after, log check; each kill round: up to 4 s, a restart, checks. FerretDB may need building.
const budgetMs =
  selected.reduce((sum, s) => sum + (s.startsWith("kill-") ? 30 + kills * 45 + quiet + after : 60 + MAX_FILL_MS / 1000 + warm + quiet + seconds + after) * 1000, 0) +
  (selected.includes("kill-mongodb") ? 300_000 : 0);

/** The node flags `npm start` gives erplink (package.json), so that the survey measures erplink as it is started. */
function startFlags(): string {
  const start = (JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts.start ?? "";
  return (start.match(/--max-old-space-size=\d+|--max-semi-space-size=\d+/g) ?? []).join(" ");
}

await runBench(budgetMs, async () => {
  const cpus = os.cpus();
  console.log(`reliability survey, ${new Date().toISOString()}`);
  console.log(
    `machine: ${cpus.length} × ${cpus[0]?.model.trim() ?? "cpu"}, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ${os.type()} ${os.release()}, ` +
      `node ${process.version}, load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`,
  );
  console.log(
    `scenarios: ${selected.join(", ")}; attacks of ${seconds} s after a warm-up (${warmRate} requests a second until the request log is at its cap, then ${warm} s) and ${quiet} s quiet, ` +
      `RSS read ${after} s after; ` +
      `${kills} kills; watchdog ${Math.round(budgetMs / 1000)} s${values["node-options"] ? `; erplink's NODE_OPTIONS: ${values["node-options"]}` : ""}`,
  );
  const dir = mkdtempSync(join(os.tmpdir(), "erplink-reliability-"));
  const backend = tracked(await startNodeServer("back end", ["backend"]));
  const load = await NodeLoad.start();
  const ctx: Context = { seconds, warm, warmRate, quiet, after, kills, trace: values.trace ?? false, nodeOptions: values["node-options"] ?? "", backend, load, dir };
  const rows: Row[] = [];
  try {
    for (const scenario of selected) {
      console.log(`\n${scenario} …`);
      let row: Row;
      try {
        row = scenario === "kill-embedded" || scenario === "kill-mongodb" ? await killScenario(ctx, scenario) : await attackScenario(ctx, scenario);
      } catch (err) {
        row = { scenario, log: "-", counts: "", failures: [`the scenario failed: ${(err as Error).stack ?? String(err)}`] };
      }
      rows.push(row);
      console.log(
        row.skipped !== undefined
          ? `  skipped: ${row.skipped}`
          : `  ${row.failures.length === 0 ? "PASS" : "FAIL"}: healthy p99 ${ms(row.quiet?.p99 ?? NaN)} → ${ms(row.during?.p99 ?? NaN)} ms; RSS ${row.rss === undefined ? "-" : `${mib(row.rss.before)}/${mib(row.rss.peak)}/${mib(row.rss.after)} MiB`}; log ${row.log}; ${row.counts}`,
      );
    }
  } finally {
    load.close();
    await backend.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  printTable(rows);
  const failed = rows.filter((r) => r.failures.length > 0).length;
  console.log(`\n${failed === 0 ? "all rows PASS" : `${failed} of ${rows.length} rows FAIL`}`);
  return failed === 0;
});
