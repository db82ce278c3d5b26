/**
 * What the benchmarks that run erplink as a process share (bench/proxy.ts,
 * bench/soak.ts): starting the back end and the bare proxy
 * (bench/proxy-servers.ts), erplink (`src/main.ts`) and the undici load
 * generator (bench/proxy-load.ts) as processes of their own, each stopped
 * with the benchmark; configuring erplink for the back end over its admin
 * API; and waiting for its request log to be written. Not a benchmark itself.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { createInterface, type Interface } from "node:readline";
import { fileURLToPath } from "node:url";
import { BACKEND_PASSWORD, BACKEND_USER, ENTITY_SET, SERVICE } from "./proxy-backend.js";
import type { LoadCommand, LoadResult } from "./proxy-load.js";
import { freePort } from "../test-support/e2e.js";

/** The repository root (erplink runs from here unless told otherwise). */
export const REPO = fileURLToPath(new URL("..", import.meta.url));
/** The master key every erplink of a benchmark starts with. */
export const MASTER_KEY = "erpl_bench_master_key_0123456789abcdefghijklmno";
/** The data rate limits: far above what the run sends, so the limiter counts every request but never refuses. */
export const DATA_LIMIT = 1_000_000_000;
/** The instance the benchmark's data key may use (its back end is bench/proxy-backend.ts). */
export const INSTANCE = "bench";

/** A server process of the benchmark. */
export interface Server {
  readonly name: string;
  readonly pid: number;
  readonly port: number;
  /** The last lines it wrote on stderr. */
  stderr(): string;
  /** SIGTERM (SIGKILL after 5 s); resolves once it has exited. */
  stop(): Promise<void>;
}

/** Follows a started process: its stderr's tail, and a stop that waits for its exit. */
export function track(name: string, child: ChildProcess, port: number): Server {
  let err = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (s: string) => (err = (err + s).slice(-8000)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    name,
    pid: child.pid!,
    port,
    stderr: () => err,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Runs `bench/proxy-servers.ts <args>` and waits for its `listening <port>` line. */
export async function startNodeServer(name: string, args: string[], profileDir?: string): Promise<Server> {
  const nodeArgs = profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${join(profileDir, name.replace(/\W+/g, "-"))}`];
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", join(REPO, "bench", "proxy-servers.ts"), ...args], {
    cwd: REPO,
    stdio: ["pipe", "pipe", "pipe"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.on("line", (line) => {
      const m = /^listening (\d+)$/.exec(line);
      if (m) resolve(Number(m[1]));
    });
    child.once("exit", (code) => reject(new Error(`${name} exited (${code}) before listening`)));
    setTimeout(() => reject(new Error(`${name} not listening within 20 s`)), 20_000).unref();
  });
  return track(name, child, port);
}

/** Starts erplink (`src/main.ts`) with `env` on a free port and waits for /healthz. */
export async function startErplink(name: string, env: Record<string, string>, profileDir: string | undefined, cwd = REPO): Promise<Server> {
  const port = await freePort();
  // One folder per process: tsx's loader thread writes a profile of its own beside the main thread's.
  const nodeArgs = profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${join(profileDir, name)}`];
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", "src/main.ts"], {
    cwd,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      HOST: "127.0.0.1",
      PORT: String(port),
      ERPLINK_MASTER_KEY: MASTER_KEY,
      ERPLINK_ENCRYPTION_KEY: "ab".repeat(32),
      // As deployed: info, to a file descriptor (here /dev/null).
      LOG_LEVEL: "info",
      ERPLINK_DATA_RATE_PER_MINUTE: String(DATA_LIMIT),
      ERPLINK_DATA_RATE_PER_DAY: String(DATA_LIMIT),
      ERPLINK_ADMIN_RATE_PER_MINUTE: "100000",
      ...env,
    },
    // stdout (pino's lines) is discarded by the OS, as a log shipper would read it.
    stdio: ["ignore", "ignore", "pipe"],
  });
  const server = track(name, child, port);
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}) before listening:\n${server.stderr()}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status === 200) return server;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`${name} not up within 30 s:\n${server.stderr()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** What one measured run of one scenario gave. */
export interface Measured {
  readonly requests: number;
  readonly problems: number;
  readonly firstProblem?: string;
  readonly seconds: number;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  /** Open loop (bench/proxy-load.ts): the median delay of a request's start after its scheduled time (ms). */
  readonly lagMs?: number;
}

/** The bench/proxy-load.ts process. */
export class NodeLoad {
  private constructor(
    private readonly child: ChildProcess,
    private readonly lines: Interface,
  ) {}

  static async start(): Promise<NodeLoad> {
    const child = spawn(process.execPath, ["--import", "tsx", join(REPO, "bench", "proxy-load.ts")], { cwd: REPO, stdio: ["pipe", "pipe", "inherit"] });
    const lines = createInterface({ input: child.stdout! });
    const load = new NodeLoad(child, lines);
    if ((await load.nextLine()) !== "ready") throw new Error("the load generator did not start");
    return load;
  }

  private nextLine(): Promise<string> {
    return new Promise((resolve, reject) => {
      const onExit = () => reject(new Error("the load generator exited"));
      this.child.once("exit", onExit);
      this.lines.once("line", (l) => {
        this.child.off("exit", onExit);
        resolve(l);
      });
    });
  }

  async run(cmd: LoadCommand): Promise<Measured> {
    const answer = this.nextLine();
    this.child.stdin!.write(`${JSON.stringify(cmd)}\n`);
    const r = JSON.parse(await answer) as LoadResult & { failed?: string };
    if (r.failed !== undefined) throw new Error(`load generator: ${r.failed}`);
    return {
      requests: r.requests,
      problems: r.errors + r.unexpected,
      firstProblem: r.firstProblem,
      seconds: r.elapsedMs / 1000,
      rps: r.requests / (r.elapsedMs / 1000),
      p50: r.p50,
      p99: r.p99,
      lagMs: r.lagMs,
    };
  }

  close(): void {
    this.child.stdin!.end();
  }
}

/** A wrk run, with a Lua `done` hook that prints its figures as JSON. */
export async function runWrk(url: string, headers: Readonly<Record<string, string>>, connections: number, seconds: number, script: string): Promise<Measured> {
  const args = ["-t1", `-c${connections}`, `-d${seconds}s`, "--timeout", "10s", "-s", script];
  for (const [k, v] of Object.entries(headers)) args.push("-H", `${k}: ${v}`);
  args.push(url);
  const child = spawn("wrk", args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (s: string) => (out += s));
  child.stderr.setEncoding("utf8").on("data", (s: string) => (err += s));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  const line = out.split("\n").find((l) => l.startsWith("BENCH "));
  if (code !== 0 || line === undefined) throw new Error(`wrk failed (${code}): ${err || out}`);
  const r = JSON.parse(line.slice(6)) as {
    requests: number;
    duration_us: number;
    errors: { connect: number; read: number; write: number; status: number; timeout: number };
    p50_us: number;
    p99_us: number;
  };
  const problems = r.errors.connect + r.errors.read + r.errors.write + r.errors.status + r.errors.timeout;
  return {
    requests: r.requests,
    problems,
    firstProblem: problems > 0 ? `wrk errors: ${JSON.stringify(r.errors)}` : undefined,
    seconds: r.duration_us / 1e6,
    rps: r.requests / (r.duration_us / 1e6),
    p50: r.p50_us / 1000,
    p99: r.p99_us / 1000,
  };
}

/** wrk's Lua `done` hook for {@link runWrk}: one `BENCH {…}` JSON line with the counts and percentiles. */
export const WRK_SCRIPT = `
done = function(summary, latency, requests)
  io.write(string.format('BENCH {"requests":%d,"duration_us":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},"p50_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.status, summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`;

/** Whether wrk is on the PATH. */
export function hasWrk(): boolean {
  return (process.env.PATH ?? "").split(":").some((d) => d !== "" && existsSync(join(d, "wrk")));
}

/** A JSON request to erplink's admin REST API with the master key; returns `data`. */
export async function admin(base: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${MASTER_KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${text}`);
  return (JSON.parse(text) as { data: Record<string, unknown> }).data;
}

/** Creates the system, the instance on the back end and a data key; returns the key. */
export async function configureErplink(base: string, backendUrl: string): Promise<string> {
  const system = await admin(base, "/admin/systems", { name: "bench" });
  await admin(base, `/admin/systems/${String(system.id)}/instances`, {
    name: INSTANCE,
    environment: "benchmark",
    base_url: `${backendUrl}/odata`,
    auth: { type: "basic", username: BACKEND_USER, password: BACKEND_PASSWORD },
  });
  return String((await admin(base, "/admin/api-keys", { name: "bench", permissions: { [INSTANCE]: { [SERVICE]: { [ENTITY_SET]: ["list"] } } } })).key);
}

/** What /healthz says of the request log (`evicted` and `entries`: not from erplink before the cap). */
export interface RequestLogHealth {
  readonly queued: number;
  readonly written: number;
  readonly dropped: number;
  readonly evicted?: number;
  readonly entries?: number | null;
}

/** Waits until erplink has written its request-log queue (it writes in batches every second). */
export async function settle(base: string): Promise<RequestLogHealth | undefined> {
  let log: RequestLogHealth | undefined;
  for (let i = 0; i < 50; i++) {
    const health = (await (await fetch(`${base}/healthz`)).json()) as { data: { request_log?: RequestLogHealth } };
    log = health.data.request_log;
    if ((log?.queued ?? 0) === 0) return log;
    await new Promise((r) => setTimeout(r, 100));
  }
  return log;
}
