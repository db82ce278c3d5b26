/**
 * Benchmark of AuthorizationService.Authorize over gRPC on loopback.
 *
 * Starts, in this process, erplink (embedded in-memory store, data rate
 * limits so high that the limiter counts but never denies) and a second, bare
 * Connect server (connect-node's adapter on node:http2, h2c) whose Authorize
 * is a stub answering `allowed: true` at once: the baseline of what any unary
 * Connect RPC costs here. Each scenario gets its own @grpc/grpc-js client in
 * its own worker thread (so that load generation does not share the servers'
 * event loop) with one HTTP/2 connection and a fixed number of calls in
 * flight. After a warm-up, the measured calls run in rounds that alternate
 * between the scenarios, so that a slow spell of a shared machine does not
 * land on one scenario only. The table compares each scenario to the
 * baseline.
 *
 * Usage: npm run bench [-- --count 20000 --warmup 2000 --concurrency 32 --rounds 8]
 * See bench/README.md for how to read the output.
 */
import http2 from "node:http2";
import type net from "node:net";
import os from "node:os";
import { performance, type EventLoopUtilization } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { createErplink } from "../src/app.js";
import { intOption, median, type PhaseRequest, type PhaseResult, percentile, runBench } from "./lib.js";
import { loadConfig } from "../src/config.js";
import {
  ApiKeySchema,
  ApiKeyService,
  ApiKeyType,
  CreateApiKeyRequestSchema,
  CreateApiKeyResponseSchema,
} from "../src/gen/erplink/admin/v1/api_key_pb.js";
import {
  AuthorizationService,
  AuthorizeRequestSchema,
  AuthorizeResponseSchema,
  type AuthorizeResponse,
  DenialStep,
  Operation,
} from "../src/gen/erplink/authz/v1/authorization_pb.js";

/** The whole run, servers included; past it the process exits with an error. */
const TOTAL_BUDGET_MS = 60_000;
/** Measuring stops once this much of the run has passed (rounds cut short are reported). */
const MEASURE_UNTIL_MS = 50_000;
const MASTER_KEY = "erpl_bench_master_key_0123456789abcdefghijklmno";
const AUTHORIZE_PATH = `/${AuthorizationService.typeName}/${AuthorizationService.method.authorize.name}`;

/** What a worker is set up with. */
interface WorkerSetup {
  readonly address: string;
  /** The encoded AuthorizeRequest sent on every call. */
  readonly request: Uint8Array;
  /** What every response must say, or the run fails. */
  readonly expect: { readonly allowed: boolean; readonly denialStep: DenialStep };
  readonly concurrency: number;
}

// ------------------------------------------------------------------ worker: the load generator

async function runWorker(setup: WorkerSetup): Promise<void> {
  const definition: grpc.ServiceDefinition = {
    authorize: {
      path: AUTHORIZE_PATH,
      requestStream: false,
      responseStream: false,
      // The request is encoded once; every call sends the same bytes.
      requestSerialize: (b: Buffer) => b,
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: (b: Buffer) => b,
      responseDeserialize: (b: Buffer) => b,
    },
  };
  const Ctor = grpc.makeGenericClientConstructor(definition, AuthorizationService.typeName);
  const client = new Ctor(setup.address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    authorize(req: Buffer, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Buffer) => void): void;
  };
  const body = Buffer.from(setup.request);
  await new Promise<void>((resolve, reject) =>
    client.waitForReady(Date.now() + 5000, (err) => (err ? reject(err) : resolve())),
  );

  const run = async ({ n, measure, deadline }: PhaseRequest): Promise<PhaseResult> => {
    let errors = 0;
    let unexpected = 0;
    let firstProblem: string | undefined;
    const call = () =>
      new Promise<void>((resolve) => {
        client.authorize(body, new grpc.Metadata(), { deadline: Date.now() + 10_000 }, (err, res) => {
          if (err || !res) {
            errors++;
            firstProblem ??= `gRPC error ${err?.code}: ${err?.details}`;
          } else {
            const decoded = fromBinary(AuthorizeResponseSchema, res);
            if (decoded.allowed !== setup.expect.allowed || decoded.denialStep !== setup.expect.denialStep) {
              unexpected++;
              firstProblem ??= `unexpected response: allowed=${decoded.allowed} step=${DenialStep[decoded.denialStep]} ${decoded.message}`;
            }
          }
          resolve();
        });
      });
    const latencies = new Float64Array(measure ? n : 0);
    let started = 0;
    let done = 0;
    // A closed loop: each lane starts its next call when the previous one ends.
    const lane = async () => {
      while (started < n && Date.now() < deadline) {
        started++;
        const t0 = process.hrtime.bigint();
        await call();
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
      client.close();
      parentPort!.close();
      return;
    }
    void run(msg).then((r) => parentPort!.postMessage(r, [r.latencies.buffer as ArrayBuffer]));
  });
  parentPort!.postMessage("ready");
}

if (!isMainThread) await runWorker(workerData as WorkerSetup);

// ------------------------------------------------------------------ main: servers, scenarios, report

/** A load-generating worker thread with its own grpc-js client. */
class LoadWorker {
  private constructor(private readonly worker: Worker) {}

  static async start(setup: WorkerSetup): Promise<LoadWorker> {
    // On Node 20, `--import tsx` registers its loader in the main thread only:
    // the worker registers it itself before it imports this TypeScript file.
    const tsx = import.meta.resolve("tsx/esm/api");
    const code = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(import.meta.url)}); })`;
    const worker = new Worker(code, { eval: true, workerData: setup });
    const lw = new LoadWorker(worker);
    await lw.next<"ready">();
    return lw;
  }

  private next<T>(): Promise<T> {
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

  /** Runs a phase; also returns the worker's event-loop utilization over it. */
  async run(phase: PhaseRequest): Promise<PhaseResult & { clientElu: EventLoopUtilization }> {
    const elu0 = this.worker.performance.eventLoopUtilization();
    const result = this.next<PhaseResult>();
    this.worker.postMessage(phase);
    const r = await result;
    return { ...r, clientElu: this.worker.performance.eventLoopUtilization(elu0) };
  }

  async close(): Promise<void> {
    this.worker.postMessage("close");
    await this.worker.terminate();
  }
}

/**
 * A stub AuthorizationService on a bare connect-node h2c server, answering
 * `answer` at once: the baseline (`allowed: true`), or, for the informative
 * row, an answer as large as erplink's (key id, rate-limit status and both
 * windows), so that what its encoding and the client's decoding cost shows
 * apart from erplink's work.
 */
async function startBaseline(answer: AuthorizeResponse = create(AuthorizeResponseSchema, { allowed: true })): Promise<{ address: string; close(): Promise<void> }> {
  const allowed = answer;
  const routes = (router: ConnectRouter) => router.service(AuthorizationService, { authorize: () => allowed });
  const server = http2.createServer(connectNodeAdapter({ routes }));
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sessions) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Creates a data key on erplink over grpc-js, as the master key; returns its secret. */
async function createDataKey(address: string): Promise<string> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  try {
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${MASTER_KEY}`);
    const req = create(CreateApiKeyRequestSchema, {
      apiKey: create(ApiKeySchema, {
        name: "bench",
        type: ApiKeyType.DATA,
        permissions: { prod: { API_BP: { A_BusinessPartner: ["list", "get"] } } },
      }),
    });
    const res = await new Promise<Buffer>((resolve, reject) =>
      client.makeUnaryRequest(
        `/${ApiKeyService.typeName}/${ApiKeyService.method.createApiKey.name}`,
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from(toBinary(CreateApiKeyRequestSchema, req)),
        md,
        { deadline: Date.now() + 5000 },
        (err, value) => (err || !value ? reject(err ?? new Error("no response")) : resolve(value)),
      ),
    );
    return fromBinary(CreateApiKeyResponseSchema, res).key;
  } finally {
    client.close();
  }
}

/** One Authorize call over grpc-js: erplink's decoded answer. */
async function authorizeOnce(address: string, request: Uint8Array): Promise<AuthorizeResponse> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  try {
    const res = await new Promise<Buffer>((resolve, reject) =>
      client.makeUnaryRequest(
        AUTHORIZE_PATH,
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from(request),
        new grpc.Metadata(),
        { deadline: Date.now() + 5000 },
        (err, value) => (err || !value ? reject(err ?? new Error("no response")) : resolve(value)),
      ),
    );
    return fromBinary(AuthorizeResponseSchema, res);
  } finally {
    client.close();
  }
}

interface Scenario {
  readonly name: string;
  readonly setup: WorkerSetup;
  worker?: LoadWorker;
  readonly latencies: Float64Array[];
  done: number;
  elapsedMs: number;
  /** Throughput of each measured round (calls ÷ the round's time). */
  readonly roundRps: number[];
  /** Event-loop time (ms) of the servers' thread and of the client's, over the measured rounds. */
  serverActiveMs: number;
  clientActiveMs: number;
}

function fail(name: string, r: PhaseResult): void {
  if (r.errors > 0 || r.unexpected > 0) {
    throw new Error(`${name}: ${r.errors} errors, ${r.unexpected} unexpected responses; first: ${r.firstProblem}`);
  }
}

async function main(started: number): Promise<void> {
  const { values } = parseArgs({
    options: {
      count: { type: "string", default: "20000" },
      warmup: { type: "string", default: "2000" },
      concurrency: { type: "string", default: "32" },
      rounds: { type: "string", default: "8" },
    },
  });
  const count = intOption("count", values.count!, 200_000);
  const warmup = intOption("warmup", values.warmup!, 50_000);
  const concurrency = intOption("concurrency", values.concurrency!, 1024);
  const rounds = intOption("rounds", values.rounds!, 100);
  const perRound = Math.ceil(count / rounds);

  const erplink = await createErplink(
    loadConfig({
      HOST: "127.0.0.1",
      PORT: "0",
      ERPLINK_DATA_DIR: ":memory:",
      ERPLINK_MASTER_KEY: MASTER_KEY,
      LOG_LEVEL: "silent",
      // Far above what the run sends: the limiter counts but never denies.
      ERPLINK_DATA_RATE_PER_MINUTE: "1000000000",
      ERPLINK_DATA_RATE_PER_DAY: "1000000000",
    }),
  );
  const baseline = await startBaseline();
  let fullStub: Awaited<ReturnType<typeof startBaseline>> | undefined;
  const scenarios: Scenario[] = [];
  try {
    await erplink.app.listen({ host: "127.0.0.1", port: 0 });
    const address = `127.0.0.1:${(erplink.app.server.address() as net.AddressInfo).port}`;
    const apiKey = await createDataKey(address);
    const request = (extra: { apiKey?: string; dryRun?: boolean } = {}) =>
      toBinary(
        AuthorizeRequestSchema,
        create(AuthorizeRequestSchema, {
          apiKey,
          instance: "prod",
          service: "API_BP",
          entity: "A_BusinessPartner",
          operation: Operation.GET,
          requestId: "bench",
          ...extra,
        }),
      );
    const allowed = { allowed: true, denialStep: DenialStep.UNSPECIFIED };
    // erplink's own answer to the warm key, for the stub that answers as much.
    const sample = await authorizeOnce(address, request());
    fullStub = await startBaseline(sample);
    const scenario = (name: string, addr: string, req: Uint8Array, expect: WorkerSetup["expect"]): Scenario => ({
      name,
      setup: { address: addr, request: req, expect, concurrency },
      latencies: [],
      roundRps: [],
      done: 0,
      elapsedMs: 0,
      serverActiveMs: 0,
      clientActiveMs: 0,
    });
    scenarios.push(
      scenario("baseline: stub Authorize, bare connect-node", baseline.address, request(), allowed),
      scenario("stub answering erplink's full answer", fullStub.address, request(), allowed),
      scenario("erplink Authorize, warm key", address, request(), allowed),
      scenario("erplink Authorize, warm key, dry_run", address, request({ dryRun: true }), allowed),
      // Refused before any lookup: what erplink's stack costs around the check.
      scenario("erplink Authorize, malformed key", address, request({ apiKey: "erpl_malformed" }), {
        allowed: false,
        denialStep: DenialStep.KEY_INVALID,
      }),
    );

    console.log(
      `Authorize over gRPC (h2c, loopback): node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model.trim() ?? "cpu"}\n` +
        `per scenario: a grpc-js client in a worker thread, one connection, ${concurrency} calls in flight; ` +
        `${warmup} warm-up calls, then ${perRound * rounds} measured in ${rounds} interleaved rounds`,
    );
    for (const s of scenarios) {
      s.worker = await LoadWorker.start(s.setup);
      fail(s.name, await s.worker.run({ n: warmup, measure: false, deadline: Date.now() + 15_000 }));
    }
    let cutShort = false;
    for (let round = 0; round < rounds; round++) {
      for (const s of scenarios) {
        // Whatever time is left is shared by the rounds still to run; one
        // may take up to twice its share, so that noise rarely cuts it short.
        const left = Math.max(0, started + MEASURE_UNTIL_MS - Date.now());
        const slots = (rounds - round) * scenarios.length - scenarios.indexOf(s);
        const deadline = Date.now() + Math.min(left, (2 * left) / slots);
        const elu0 = performance.eventLoopUtilization();
        const r = await s.worker!.run({ n: perRound, measure: true, deadline });
        const serverElu = performance.eventLoopUtilization(elu0);
        fail(s.name, r);
        if (r.done < perRound) cutShort = true;
        s.latencies.push(r.latencies);
        s.roundRps.push(r.done / (r.elapsedMs / 1000));
        s.done += r.done;
        s.elapsedMs += r.elapsedMs;
        s.serverActiveMs += serverElu.active;
        s.clientActiveMs += r.clientElu.active;
      }
      process.stdout.write(`  round ${round + 1}/${rounds} done\n`);
    }

    const rows = scenarios.map((s) => {
      const all = new Float64Array(s.done);
      let at = 0;
      for (const l of s.latencies) {
        all.set(l, at);
        at += l.length;
      }
      all.sort();
      return {
        name: s.name,
        rps: s.done / (s.elapsedMs / 1000),
        p50: percentile(all, 50),
        p99: percentile(all, 99),
        done: s.done,
        serverBusy: s.serverActiveMs / s.elapsedMs,
        clientBusy: s.clientActiveMs / s.elapsedMs,
      };
    });
    const base = rows[0]!;
    const baseRounds = scenarios[0]!.roundRps;
    // Each round's throughput against the baseline's round of the same pass (seconds apart): a slow spell moves both.
    const roundRatio = (s: Scenario) => median(s.roundRps.map((rps, i) => rps / baseRounds[i]!));
    const header = ["scenario", "calls", "req/s", "p50 ms", "p99 ms", "req/s ÷ base", "median round ÷ base", "p50 ÷ base", "server busy", "client busy"];
    const pct = (x: number) => `${Math.round(x * 100)}%`;
    const table = rows.map((r, i) => [
      r.name,
      String(r.done),
      Math.round(r.rps).toString(),
      r.p50.toFixed(2),
      r.p99.toFixed(2),
      (r.rps / base.rps).toFixed(2),
      roundRatio(scenarios[i]!).toFixed(2),
      (r.p50 / base.p50).toFixed(2),
      pct(r.serverBusy),
      pct(r.clientBusy),
    ]);
    const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
    const line = (cells: string[]) =>
      cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
    console.log();
    console.log(line(header));
    console.log(widths.map((w) => "-".repeat(w)).join("  "));
    for (const row of table) console.log(line(row));
    if (cutShort) console.log(`\nsome rounds were cut short to stay within ${MEASURE_UNTIL_MS / 1000} s: see the calls column`);
  } finally {
    await Promise.all(scenarios.map((s) => s.worker?.close()));
    await baseline.close();
    await fullStub?.close();
    await erplink.close();
  }
}

if (isMainThread) {
  await runBench(TOTAL_BUDGET_MS, async (started) => {
    await main(started);
    console.log(`\ndone in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });
}
