/**
 * Helpers for the multi-process and fault suites (test/e2e/multi-process,
 * test/e2e/store-faults): erplink as a real `src/main.ts` process, a private
 * FerretDB process (tools/ferretdb, built by scripts/ferretdb.sh), JSON REST
 * calls with a bounded wait, polling, and UTC-minute guards. Lives outside
 * test/ because uvu runs every file there.
 */
import { execFile, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT, freePort, spawnMain, type MainProcess } from "./e2e.js";

// ---------------------------------------------------------------- erplink

/** `src/main.ts` listening on 127.0.0.1. */
export interface ErplinkProcess {
  readonly main: MainProcess;
  readonly port: number;
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  readonly baseUrl: string;
  /** `127.0.0.1:<port>`, as grpc-js wants it. */
  readonly address: string;
  /** Whether the process is still running. */
  alive(): boolean;
  /** The last lines the process wrote (stdout and stderr), for failure messages. */
  output(): string;
  /** SIGKILLs the process if it runs and waits for its exit (idempotent). */
  kill(): Promise<void>;
}

/**
 * Starts `node --import tsx src/main.ts` with exactly `env` (plus PATH and
 * HOME; nothing else is inherited, so no MONGODB_URL leaks in) on a free port
 * of 127.0.0.1, and resolves once `/healthz` answers 200. Rejects (after
 * killing it) if it exits or is not up within `timeoutMs`.
 */
export async function startErplinkProcess(
  env: Readonly<Record<string, string>>,
  timeoutMs = 20_000,
): Promise<ErplinkProcess> {
  const port = await freePort();
  const main = spawnMain({ HOST: "127.0.0.1", LOG_LEVEL: "warn", ...env, PORT: String(port) });
  let exited = false;
  void main.exited.then(() => (exited = true));
  const baseUrl = `http://127.0.0.1:${port}`;
  const output = () => tail(`${main.stdout()}${main.stderr()}`);
  const proc: ErplinkProcess = {
    main,
    port,
    baseUrl,
    address: `127.0.0.1:${port}`,
    alive: () => !exited,
    output,
    kill: () => main.kill(),
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited) throw new Error(`erplink exited (${await main.exited}) before listening:\n${output()}`);
    try {
      const res = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status === 200) return proc;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await main.kill();
      throw new Error(`erplink not up on ${baseUrl} within ${timeoutMs} ms:\n${output()}`);
    }
    await sleep(100);
  }
}

function tail(s: string, lines = 30): string {
  return s.split("\n").slice(-lines).join("\n");
}

// ---------------------------------------------------------------- FerretDB

/** The FerretDB binary scripts/ferretdb.sh builds (honours ERPLINK_TOOLS_DIR as the script does). */
export function ferretDbBinary(): string {
  return join(process.env.ERPLINK_TOOLS_DIR || join(REPO_ROOT, ".tmp", "bin"), "erplink-ferretdb");
}

/**
 * Makes sure the FerretDB binary exists (`scripts/ferretdb.sh install`, a
 * no-op when it is up to date) and returns its path.
 */
export async function ensureFerretDbBinary(): Promise<string> {
  try {
    await promisify(execFile)("bash", [join(REPO_ROOT, "scripts", "ferretdb.sh"), "install"], {
      cwd: REPO_ROOT,
      timeout: 300_000,
    });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? String(err);
    throw new Error(`cannot build FerretDB (scripts/ferretdb.sh install): ${stderr}`);
  }
  const bin = ferretDbBinary();
  if (!existsSync(bin)) throw new Error(`FerretDB binary missing after install: ${bin}`);
  return bin;
}

/** A FerretDB process of our own. */
export interface FerretDbProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly port: number;
  /** Its SQLite directory (survives a stop, for a restart on the same data). */
  readonly dir: string;
  /** `mongodb://127.0.0.1:<port>/` */
  readonly url: string;
  /** Resolves with the exit code (or signal name) once it has exited. */
  readonly exited: Promise<number | string>;
  /** What it wrote on stderr (its log). */
  stderr(): string;
  /** SIGTERM, then waits for the exit (SIGKILL after `graceMs`); resolves with how it exited. */
  stop(graceMs?: number): Promise<number | string>;
  /** SIGKILL if it still runs, and waits for the exit (idempotent). */
  kill(): Promise<void>;
}

/**
 * Runs the FerretDB binary directly on 127.0.0.1:`port` over `dir` and
 * resolves when it prints `ready <addr>`.
 */
export async function startFerretDb(bin: string, port: number, dir: string, timeoutMs = 30_000): Promise<FerretDbProcess> {
  const child = spawn(bin, ["-listen-addr", `127.0.0.1:${port}`, "-sqlite-dir", dir], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  let code: number | string | undefined;
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (s: string) => {
    // Keep the log bounded: only its end matters in a failure message.
    err = (err + s).slice(-20_000);
  });
  const exited = new Promise<number | string>((resolve) => {
    child.once("close", (c, signal) => resolve((code = c ?? signal ?? "unknown")));
  });
  const kill = async () => {
    if (code === undefined) child.kill("SIGKILL");
    await exited;
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`FerretDB not ready on port ${port} within ${timeoutMs} ms:\n${tail(err)}`)), timeoutMs);
      child.stdout.on("data", (s: string) => {
        out += s;
        if (/^ready /m.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      });
      void exited.then((c) => {
        clearTimeout(timer);
        reject(new Error(`FerretDB exited (${c}) before it was ready on port ${port}:\n${tail(err)}`));
      });
    });
  } catch (e) {
    await kill();
    throw e;
  }
  return {
    child,
    port,
    dir,
    url: `mongodb://127.0.0.1:${port}/`,
    exited,
    stderr: () => err,
    async stop(graceMs = 10_000) {
      if (code === undefined) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
    kill,
  };
}

// ---------------------------------------------------------------- REST

/** A JSON response read to the end, with how long it took. */
export interface JsonResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly body: any;
  /** From sending the request to the end of the body (ms). */
  readonly ms: number;
}

/**
 * One JSON request with fetch, bounded by `timeoutMs` (a hang rejects with a
 * clear message). `auth` is the bearer token, if any.
 */
export async function rest(
  baseUrl: string,
  method: string,
  path: string,
  options: { auth?: string; body?: unknown; timeoutMs?: number } = {},
): Promise<JsonResponse> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const headers: Record<string, string> = {};
  if (options.auth !== undefined) headers.authorization = `Bearer ${options.auth}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const started = Date.now();
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await res.text();
  } catch (err) {
    if ((err as Error).name === "TimeoutError") {
      throw new Error(`${method} ${path}: no answer within ${timeoutMs} ms`);
    }
    throw err;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, text, body, ms: Date.now() - started };
}

// ---------------------------------------------------------------- time

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Calls `check` every `intervalMs` until it returns something other than
 * undefined, and resolves with that; rejects after `timeoutMs` naming `what`.
 */
export async function pollUntil<T>(
  what: string,
  check: () => Promise<T | undefined>,
  options: { intervalMs?: number; timeoutMs?: number } = {},
): Promise<T> {
  const interval = options.intervalMs ?? 100;
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  let last: unknown;
  for (;;) {
    const started = Date.now();
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) {
      throw new Error(`${what}: not within ${options.timeoutMs ?? 10_000} ms${last ? ` (last error: ${String(last)})` : ""}`);
    }
    await sleep(Math.max(0, interval - (Date.now() - started)));
  }
}

/**
 * Waits, if needed, until at least `seconds` remain in the current UTC
 * minute (crossing into the next one), so a burst lands in one rate window.
 */
export async function awayFromMinuteEnd(seconds: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < seconds * 1000) await sleep(left + 100);
}
