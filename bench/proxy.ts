/**
 * Benchmark of an OData GET through erplink's data path against the same GET
 * straight to the back end, on loopback.
 *
 * Starts, in this process: a small OData V4 back end of our own (node:http,
 * keep-alive, basic auth; `bench/proxy-backend.ts`) in its own worker thread;
 * erplink, composed as `src/main.ts` does (embedded in-memory store, silent
 * logs, data rate limits so high that the limiter counts every request but
 * never denies, request logs on), in the main thread, with an instance
 * pointing at the back end and a data key allowed to `list` its `Products`,
 * both created over the admin REST API with the master key. Each scenario
 * (direct; through erplink) gets its own load generator in its own worker
 * thread with keep-alive connections and a fixed number of requests in
 * flight; every response is checked (status 200, the exact payload). After a
 * warm-up, the measured requests run in rounds that alternate between the
 * scenarios; the report gives the median of the rounds and, last, the
 * erplink/direct ratios of throughput, p50 and p99.
 *
 * Usage: npm run bench:proxy [-- --count 100000 --warmup 10000 --concurrency 16 --rounds 5 --client auto]
 * See bench/README.md for how to read the output.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import { performance, type EventLoopUtilization } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { createErplink } from "../src/app.js";
import { intOption, type PhaseRequest, type PhaseResult, median, percentile, runBench } from "./lib.js";
import { loadConfig } from "../src/config.js";
import {
  BACKEND_AUTHORIZATION,
  BACKEND_PASSWORD,
  BACKEND_USER,
  ENTITY_SET,
  PAYLOAD,
  QUERY,
  ROOT,
  SERVICE,
  startBackend,
  type BackendCounts,
} from "./proxy-backend.js";

/** The whole run, servers included; past it the process exits with an error. */
const TOTAL_BUDGET_MS = 60_000;
/** Measuring stops once this much of the run has passed (rounds cut short are reported). */
const MEASURE_UNTIL_MS = 50_000;
const MASTER_KEY = "erpl_bench_master_key_0123456789abcdefghijklmno";
/** The data rate limits: far above what the run sends, so the limiter counts but never denies. */
const DATA_LIMIT = 1_000_000_000;
const INSTANCE = "bench";

type ClientKind = "undici" | "http";

/** What a load worker is set up with. */
interface LoadSetup {
  readonly role: "load";
  readonly client: ClientKind;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** The exact body every response must carry. */
  readonly expected: Uint8Array;
  readonly concurrency: number;
}

/** The back-end worker. */
interface BackendSetup {
  readonly role: "backend";
}

/** The part of undici's Pool this file uses (typed here: undici is only a transitive dependency). */
interface UndiciPool {
  request(options: { path: string; method: "GET"; headers: Record<string, string> }): Promise<{
    statusCode: number;
    body: AsyncIterable<Buffer>;
  }>;
  close(): Promise<void>;
}
type UndiciPoolCtor = new (origin: string, options: Record<string, unknown>) => UndiciPool;

/** undici's Pool if it resolves from the repository's node_modules, else undefined. */
async function loadUndici(): Promise<{ Pool: UndiciPoolCtor; version: string } | undefined> {
  const name: string = "undici";
  try {
    const mod = (await import(name)) as { Pool: UndiciPoolCtor };
    let version = "?";
    try {
      const { createRequire } = await import("node:module");
      version = (createRequire(import.meta.url)(`${name}/package.json`) as { version: string }).version;
    } catch {
      // the version is only reported
    }
    return { Pool: mod.Pool, version };
  } catch {
    return undefined;
  }
}

// ------------------------------------------------------------------ workers: back end and load generators

/** One GET, answered with its status and whole body. */
type Get = () => Promise<{ status: number; body: Buffer }>;

async function makeGet(setup: LoadSetup): Promise<{ get: Get; close(): Promise<void> }> {
  const url = new URL(setup.url);
  const path = `${url.pathname}${url.search}`;
  const headers = { ...setup.headers };
  if (setup.client === "undici") {
    const undici = await loadUndici();
    if (undici === undefined) throw new Error("undici does not resolve from this repository");
    const pool = new undici.Pool(url.origin, {
      connections: setup.concurrency,
      pipelining: 1,
      keepAliveTimeout: 120_000,
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
    return {
      get: async () => {
        const res = await pool.request({ path, method: "GET", headers });
        const chunks: Buffer[] = [];
        for await (const c of res.body) chunks.push(c);
        return { status: res.statusCode, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) };
      },
      close: () => pool.close(),
    };
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: setup.concurrency, maxFreeSockets: setup.concurrency });
  return {
    get: () =>
      new Promise((resolve, reject) => {
        const req = http.request({ host: url.hostname, port: url.port, path, method: "GET", headers, agent }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) }));
          res.on("error", reject);
        });
        req.setTimeout(10_000, () => req.destroy(new Error("no answer within 10 s")));
        req.on("error", reject);
        req.end();
      }),
    close: async () => agent.destroy(),
  };
}

async function runLoadWorker(setup: LoadSetup): Promise<void> {
  const { get, close } = await makeGet(setup);
  const expected = Buffer.from(setup.expected);

  const run = async ({ n, measure, deadline }: PhaseRequest): Promise<PhaseResult> => {
    let errors = 0;
    let unexpected = 0;
    let firstProblem: string | undefined;
    const latencies = new Float64Array(measure ? n : 0);
    let started = 0;
    let done = 0;
    // A closed loop: each lane sends its next request when the previous one is answered.
    const lane = async () => {
      while (started < n && Date.now() < deadline) {
        started++;
        const t0 = process.hrtime.bigint();
        try {
          const { status, body } = await get();
          if (status !== 200 || !body.equals(expected)) {
            unexpected++;
            firstProblem ??= `status ${status}, ${body.length} bytes (expected 200, ${expected.length} bytes): ${body.subarray(0, 300).toString("utf8")}`;
          }
        } catch (err) {
          errors++;
          firstProblem ??= `request failed: ${(err as Error).message}`;
        }
        if (measure) latencies[done] = Number(process.hrtime.bigint() - t0) / 1e6;
        done++;
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: Math.min(setup.concurrency, n) }, lane));
    const elapsedMs = performance.now() - t0;
    return { latencies: latencies.subarray(0, done), done, elapsedMs, errors, unexpected, firstProblem };
  };

  parentPort!.on("message", (msg: PhaseRequest | "close") => {
    if (msg === "close") {
      void close().finally(() => parentPort!.close());
      return;
    }
    void run(msg).then((r) => parentPort!.postMessage(r, [r.latencies.buffer as ArrayBuffer]));
  });
  parentPort!.postMessage("ready");
}

async function runBackendWorker(): Promise<void> {
  const backend = await startBackend();
  parentPort!.on("message", (msg: "counts" | "close") => {
    if (msg === "counts") parentPort!.postMessage({ ...backend.counts });
    else void backend.close().finally(() => parentPort!.close());
  });
  parentPort!.postMessage({ port: backend.port });
}

if (!isMainThread) {
  const setup = workerData as LoadSetup | BackendSetup;
  if (setup.role === "backend") await runBackendWorker();
  else await runLoadWorker(setup);
}

// ------------------------------------------------------------------ main: erplink, scenarios, report

/** A worker thread running this file in one of its roles. */
class BenchWorker {
  private constructor(readonly worker: Worker) {}

  static async start<T>(setup: LoadSetup | BackendSetup): Promise<{ w: BenchWorker; ready: T }> {
    // On Node 20, `--import tsx` registers its loader in the main thread only:
    // the worker registers it itself before it imports this TypeScript file.
    const tsx = import.meta.resolve("tsx/esm/api");
    const code = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(import.meta.url)}); })`;
    const w = new BenchWorker(new Worker(code, { eval: true, workerData: setup }));
    return { w, ready: await w.next<T>() };
  }

  next<T>(): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const onMessage = (m: T) => {
        this.worker.off("error", onError);
        resolve(m);
      };
      const onError = (err: Error) => {
        this.worker.off("message", onMessage);
        reject(err);
      };
      this.worker.once("message", onMessage);
      this.worker.once("error", onError);
    });
  }

  /** Sends a message and waits for the answer. */
  ask<T>(msg: unknown): Promise<T> {
    const answer = this.next<T>();
    this.worker.postMessage(msg);
    return answer;
  }

  elu(since?: EventLoopUtilization): EventLoopUtilization {
    return this.worker.performance.eventLoopUtilization(since);
  }

  async close(): Promise<void> {
    this.worker.postMessage("close");
    // Give the worker a moment to close its sockets; then stop it regardless.
    await Promise.race([new Promise((r) => this.worker.once("exit", r)), new Promise((r) => setTimeout(r, 1000))]);
    await this.worker.terminate();
  }
}

/** One measured round of one scenario. */
interface Round {
  readonly done: number;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
}

interface Scenario {
  readonly name: string;
  readonly setup: LoadSetup;
  worker?: BenchWorker;
  readonly rounds: Round[];
  warmupDone: number;
  done: number;
  errors: number;
  unexpected: number;
  firstProblem?: string;
  elapsedMs: number;
  /** Event-loop active time (ms) over the measured rounds: erplink's (main) thread, the back end's, the client's. */
  erplinkActiveMs: number;
  backendActiveMs: number;
  clientActiveMs: number;
}

function tally(s: Scenario, r: PhaseResult): void {
  s.errors += r.errors;
  s.unexpected += r.unexpected;
  s.firstProblem ??= r.firstProblem;
}

/** A JSON request to erplink's admin REST API with the master key; returns `data`. */
async function admin(base: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${MASTER_KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${text}`);
  return (JSON.parse(text) as { data: Record<string, unknown> }).data;
}

async function main(started: number): Promise<boolean> {
  const { values } = parseArgs({
    options: {
      count: { type: "string", default: "100000" },
      warmup: { type: "string", default: "10000" },
      concurrency: { type: "string", default: "16" },
      rounds: { type: "string", default: "5" },
      client: { type: "string", default: "auto" },
    },
  });
  const count = intOption("count", values.count!, 1_000_000);
  const warmup = intOption("warmup", values.warmup!, 100_000);
  const concurrency = intOption("concurrency", values.concurrency!, 512);
  const rounds = intOption("rounds", values.rounds!, 100);
  if (!["auto", "undici", "http"].includes(values.client!)) throw new Error("--client must be auto, undici or http");
  const undici = await loadUndici();
  if (values.client === "undici" && undici === undefined) throw new Error("--client undici: undici does not resolve from this repository");
  const client: ClientKind = values.client === "http" || undici === undefined ? "http" : "undici";
  const perRound = Math.ceil(count / rounds);

  const { w: backend, ready } = await BenchWorker.start<{ port: number }>({ role: "backend" });
  const backendUrl = `http://127.0.0.1:${ready.port}`;
  const erplink = await createErplink(
    loadConfig({
      HOST: "127.0.0.1",
      PORT: "0",
      ERPLINK_DATA_DIR: ":memory:",
      ERPLINK_MASTER_KEY: MASTER_KEY,
      LOG_LEVEL: "silent",
      // Far above what the run sends: the limiter counts every request but never denies.
      ERPLINK_DATA_RATE_PER_MINUTE: String(DATA_LIMIT),
      ERPLINK_DATA_RATE_PER_DAY: String(DATA_LIMIT),
    }),
  ).catch(async (err: unknown) => {
    await backend.close();
    throw err;
  });
  const scenarios: Scenario[] = [];
  let failed = false;
  try {
    await erplink.app.listen({ host: "127.0.0.1", port: 0 });
    const erplinkUrl = `http://127.0.0.1:${(erplink.app.server.address() as AddressInfo).port}`;

    const system = await admin(erplinkUrl, "/admin/systems", { name: "bench" });
    await admin(erplinkUrl, `/admin/systems/${String(system.id)}/instances`, {
      name: INSTANCE,
      environment: "benchmark",
      base_url: `${backendUrl}/odata`,
      auth: { type: "basic", username: BACKEND_USER, password: BACKEND_PASSWORD },
    });
    const key = String(
      (await admin(erplinkUrl, "/admin/api-keys", { name: "bench", permissions: { [INSTANCE]: { [SERVICE]: { [ENTITY_SET]: ["list"] } } } })).key,
    );

    const viaErplink = `${erplinkUrl}/odata/${INSTANCE}/${SERVICE}/${ENTITY_SET}?${QUERY}`;
    // One request before any load, so that a misconfiguration (or a data path answering
    // something else) is reported plainly; it also makes erplink fetch and cache $metadata.
    const probe = await fetch(viaErplink, { headers: { authorization: `Bearer ${key}` } });
    const probeBody = Buffer.from(await probe.arrayBuffer());
    if (probe.status !== 200 || !probeBody.equals(PAYLOAD)) {
      throw new Error(`GET through erplink answered ${probe.status} with ${probeBody.length} bytes: ${probeBody.subarray(0, 300).toString("utf8")}`);
    }

    // erplink writes its request log in batches, every second: before a phase
    // starts, let it finish writing the previous phase's last entries, so that
    // they are not charged to the next phase (a phase pays for the batches
    // written while it runs, which in steady state is all but the last second's).
    const settle = async () => {
      for (let i = 0; i < 30; i++) {
        const health = (await (await fetch(`${erplinkUrl}/healthz`)).json()) as { data: { request_log?: { queued: number } } };
        if ((health.data.request_log?.queued ?? 0) === 0) return;
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    const accept = "application/json";
    const scenario = (name: string, url: string, authorization: string): Scenario => ({
      name,
      setup: { role: "load", client, url, headers: { authorization, accept }, expected: PAYLOAD, concurrency },
      rounds: [],
      warmupDone: 0,
      done: 0,
      errors: 0,
      unexpected: 0,
      elapsedMs: 0,
      erplinkActiveMs: 0,
      backendActiveMs: 0,
      clientActiveMs: 0,
    });
    const direct = scenario("direct: client -> back end", `${backendUrl}${ROOT}/${ENTITY_SET}?${QUERY}`, BACKEND_AUTHORIZATION);
    const proxied = scenario("erplink: client -> erplink -> back end", viaErplink, `Bearer ${key}`);
    scenarios.push(direct, proxied);

    const cpus = os.cpus();
    console.log(
      `OData GET through erplink vs straight to the back end (HTTP/1.1 keep-alive, loopback): node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? "cpu"}\n` +
        `client: ${client === "undici" ? `undici ${undici!.version} Pool` : "node:http keep-alive Agent"} in a worker thread per scenario, ${concurrency} requests in flight; ` +
        `back end: node:http in its own worker thread, ${PAYLOAD.length}-byte JSON answer; erplink in the main thread\n` +
        `${warmup} warm-up requests per scenario, then ${rounds} rounds of ${perRound} per scenario, alternating direct, erplink`,
    );
    for (const s of scenarios) {
      const { w } = await BenchWorker.start<"ready">(s.setup);
      s.worker = w;
      await settle();
      const r = await w.ask<PhaseResult>({ n: warmup, measure: false, deadline: Date.now() + 15_000 } satisfies PhaseRequest);
      s.warmupDone = r.done;
      tally(s, r);
    }

    let cutShort = false;
    const pairs: { rps: number; p50: number; p99: number }[] = [];
    const f2 = (x: number) => x.toFixed(2);
    for (let round = 0; round < rounds; round++) {
      for (const s of scenarios) {
        // Whatever time is left is shared by the rounds still to run; one
        // may take up to twice its share, so that noise rarely cuts it short.
        await settle();
        const left = Math.max(0, started + MEASURE_UNTIL_MS - Date.now());
        const slots = (rounds - round) * scenarios.length - scenarios.indexOf(s);
        const deadline = Date.now() + Math.min(left, (2 * left) / slots);
        const mainElu0 = performance.eventLoopUtilization();
        const backendElu0 = backend.elu();
        const clientElu0 = s.worker!.elu();
        const r = await s.worker!.ask<PhaseResult>({ n: perRound, measure: true, deadline } satisfies PhaseRequest);
        s.erplinkActiveMs += performance.eventLoopUtilization(mainElu0).active;
        s.backendActiveMs += backend.elu(backendElu0).active;
        s.clientActiveMs += s.worker!.elu(clientElu0).active;
        tally(s, r);
        if (r.done < perRound) cutShort = true;
        s.done += r.done;
        s.elapsedMs += r.elapsedMs;
        const sorted = new Float64Array(r.latencies).sort();
        s.rounds.push({ done: r.done, rps: r.done > 0 ? r.done / (r.elapsedMs / 1000) : NaN, p50: percentile(sorted, 50), p99: percentile(sorted, 99) });
      }
      const d = direct.rounds[round]!;
      const e = proxied.rounds[round]!;
      pairs.push({ rps: e.rps / d.rps, p50: e.p50 / d.p50, p99: e.p99 / d.p99 });
      const p = pairs[round]!;
      console.log(
        `  round ${round + 1}/${rounds}: direct ${Math.round(d.rps)} req/s, p50 ${f2(d.p50)} ms, p99 ${f2(d.p99)} ms | ` +
          `erplink ${Math.round(e.rps)} req/s, p50 ${f2(e.p50)} ms, p99 ${f2(e.p99)} ms | ratios ${f2(p.rps)} ${f2(p.p50)} ${f2(p.p99)}`,
      );
    }

    const header = ["scenario", "requests", "errors", "req/s", "p50 ms", "p99 ms", "erplink busy", "back end busy", "client busy"];
    const pct = (active: number, s: Scenario) => `${Math.round((active / s.elapsedMs) * 100)}%`;
    const table = scenarios.map((s) => [
      s.name,
      String(s.done),
      String(s.errors + s.unexpected),
      Math.round(median(s.rounds.map((r) => r.rps))).toString(),
      f2(median(s.rounds.map((r) => r.p50))),
      f2(median(s.rounds.map((r) => r.p99))),
      pct(s.erplinkActiveMs, s),
      pct(s.backendActiveMs, s),
      pct(s.clientActiveMs, s),
    ]);
    const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
    const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
    console.log();
    console.log(line(header));
    console.log(widths.map((w) => "-".repeat(w)).join("  "));
    for (const row of table) console.log(line(row));
    console.log("(req/s, p50, p99: median of the rounds; busy: event-loop utilization over the measured rounds)");
    const us = (activeMs: number, s: Scenario) => `${Math.round((activeMs * 1000) / s.done)} µs`;
    console.log(
      `event-loop time per request: erplink ${us(proxied.erplinkActiveMs, proxied)}; ` +
        `back end ${us(direct.backendActiveMs, direct)} direct, ${us(proxied.backendActiveMs, proxied)} through erplink; ` +
        `client ${us(direct.clientActiveMs, direct)} direct, ${us(proxied.clientActiveMs, proxied)} through erplink`,
    );
    if (cutShort) console.log(`some rounds were cut short to stay within ${MEASURE_UNTIL_MS / 1000} s: see the requests column`);
    console.log();

    // Checks that the run measured what it claims to.
    for (const s of scenarios) {
      if (s.errors + s.unexpected > 0) {
        failed = true;
        console.log(`FAILED ${s.name}: ${s.errors} failed requests, ${s.unexpected} unexpected responses; first: ${s.firstProblem}`);
      }
    }
    const sent = (s: Scenario) => s.warmupDone + s.done;
    // One more request through erplink: its X-RateLimit-Remaining tells how many the limiter counted today.
    const last = await fetch(viaErplink, { headers: { authorization: `Bearer ${key}` } });
    await last.arrayBuffer();
    const counted = DATA_LIMIT - Number(last.headers.get("x-ratelimit-remaining"));
    const counts = await backend.ask<BackendCounts>("counts");
    const throughErplink = sent(proxied) + 2; // the probes before and after
    console.log(
      `back end answered ${counts.viaErplink} requests through erplink (sent ${throughErplink}), ${counts.direct} direct (sent ${sent(direct)}), ` +
        `${counts.metadata} $metadata, ${counts.refused} refused`,
    );
    if (counts.viaErplink !== throughErplink || counts.direct !== sent(direct) || counts.refused !== 0) {
      failed = true;
      console.log("FAILED: the back end did not see exactly the requests that were answered");
    }
    console.log(
      `rate limiter counted ${counted} data requests${counted === throughErplink ? "" : ` (expected ${throughErplink}: did the run cross midnight UTC?)`}`,
    );
    // The request log is written in batches every second: wait for the queue to drain.
    let log = { queued: -1, written: 0, dropped: 0 };
    for (let i = 0; i < 50 && log.queued !== 0; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      const health = (await (await fetch(`${erplinkUrl}/healthz`)).json()) as { data: { request_log?: typeof log } };
      log = health.data.request_log ?? { queued: 0, written: NaN, dropped: NaN };
    }
    console.log(`request log: ${log.written} entries written (${throughErplink} data requests + admin calls), ${log.dropped} dropped, ${log.queued} still queued`);
    console.log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    console.log();
    console.log(`ratio throughput erplink/direct = ${f2(median(pairs.map((p) => p.rps)))}`);
    console.log(`ratio p50 erplink/direct = ${f2(median(pairs.map((p) => p.p50)))}`);
    console.log(`ratio p99 erplink/direct = ${f2(median(pairs.map((p) => p.p99)))}`);
  } finally {
    await Promise.all(scenarios.map((s) => s.worker?.close()));
    await erplink.close();
    await backend.close();
  }
  return !failed;
}

if (isMainThread) await runBench(TOTAL_BUDGET_MS, main);
