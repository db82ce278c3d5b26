/**
 * The embedded store's request log in a worker thread of its own
 * (`ERPLINK_LOG_THREAD=on`; off by default, see src/config.ts).
 *
 * The log (./memory-request-log.ts) holds up to 50,000 entries, writes each
 * as a JSON line to its file and rewrites the file when it has grown: on
 * the thread that answers requests that was some 12-18 µs of a data
 * request's CPU time (serializing, the file's writes and rewrites, and the
 * garbage collector moving and marking every entry held). Here
 * the thread that serves requests hands each batch over (one structured
 * clone, done by V8 in C++) and the worker thread does the rest, on another
 * core. Every call of the port is one message and its answer; the worker
 * answers them in the order they come, as the log itself would have.
 *
 * Errors cross as their name and message and are made again here (a
 * duplicate id stays a {@link DuplicateKeyError}, a non-scalar filter a
 * TypeError); a worker that stopped (a bug in it, or out of memory) fails
 * every call under way with {@link StoreUnavailableError}, is reported
 * through `onProblem`, and is started again at the next call: it reads its
 * file again, where every entry it acknowledged is (an append is written
 * before it is answered). A batch under way at the stop may be there too:
 * sent again, the entries read back are skipped, not refused as duplicates.
 * A restart that fails is reported and is StoreUnavailableError to its
 * callers; the next call tries again.
 */
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { Page } from "./aggregate.js";
import { DuplicateKeyError, StoreUnavailableError } from "./errors.js";
import type { MemoryRequestLogStats } from "./memory-request-log.js";
import type { LogQuery, RequestLogPort, RequestLogRecord } from "./request-logs.js";

/** What the worker is opened with. */
export interface LogThreadData {
  readonly dataDir: string;
  readonly maxEntries: number | undefined;
  /** When the log is (re)opened: entries expired by then are left out. */
  readonly openedAtMs: number;
}

/** An error as it crosses between the threads. */
export interface WireError {
  readonly name: string;
  readonly message: string;
  readonly collection?: string;
  readonly field?: string;
}

/** A call of the port, as the worker receives it. */
export type LogCall = { readonly seq: number } & (
  | {
      readonly op: "append";
      readonly records: readonly RequestLogRecord[];
      /** Ids of `records` that were under way when a worker stopped: those the log holds are not added again. */
      readonly again?: readonly string[];
    }
  | { readonly op: "get"; readonly id: string }
  | { readonly op: "query"; readonly query: LogQuery }
  | { readonly op: "purge"; readonly now: Date }
  | { readonly op: "trim"; readonly maxEntries: number }
  | { readonly op: "idle" }
  | { readonly op: "stats" }
);

/** What the worker sends. */
export type FromLogThread =
  | { readonly kind: "ready" }
  | { readonly kind: "failed"; readonly error: WireError }
  | { readonly kind: "reply"; readonly seq: number; readonly value?: unknown; readonly error?: WireError }
  | { readonly kind: "problem"; readonly fields: Record<string, unknown>; readonly message: string };

/** An error as its name and message (and a duplicate's collection and field). */
export function wireError(err: unknown): WireError {
  if (err instanceof DuplicateKeyError) return { name: err.name, message: err.message, collection: err.collection, field: err.field };
  if (err instanceof Error) return { name: err.name, message: err.message };
  return { name: "Error", message: String(err) };
}

/** The error a {@link WireError} stood for, as this thread's class where the store has one. */
function errorOf(e: WireError): Error {
  if (e.name === "DuplicateKeyError") return new DuplicateKeyError(e.collection ?? "request_logs", e.field ?? "id");
  if (e.name === "TypeError") return new TypeError(e.message);
  if (e.name === "RangeError") return new RangeError(e.message);
  const err = new Error(e.message);
  err.name = e.name;
  return err;
}

/** Options of {@link openRequestLogWorker}. */
export interface RequestLogWorkerOptions {
  /** Directory of the log's file (see ./memory-request-log.ts). */
  readonly dataDir: string;
  readonly maxEntries?: number | undefined;
  /** Told of the log's own problems (as MemoryRequestLogOptions.onProblem) and of a worker that stopped. */
  readonly onProblem?: (fields: Record<string, unknown>, message: string) => void;
  /** The time the log is (re)opened at: the entries expired by then are left out (default: now). */
  readonly clock?: () => Date;
}

/** The worker's module, beside this one, as this one is run (TypeScript under tsx, JavaScript once built). */
const THREAD_MODULE = new URL(`./request-log-thread${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

/**
 * How a worker thread is started on {@link THREAD_MODULE}. Node 20 does not
 * run `--import tsx` again in a worker, so TypeScript is loaded through
 * tsx's API first (a short script); JavaScript is started as it is.
 */
function newThread(data: LogThreadData): Worker {
  const options = { workerData: data, name: "erplink request log" };
  if (!THREAD_MODULE.pathname.endsWith(".ts")) return new Worker(THREAD_MODULE, options);
  const tsx = import.meta.resolve("tsx/esm/api");
  const boot = `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(THREAD_MODULE.href)}); });`;
  return new Worker(boot, { ...options, eval: true });
}

/** Opens the log in a worker thread; fails as opening it in this thread would (a data directory it cannot write, say). */
export async function openRequestLogWorker(options: RequestLogWorkerOptions): Promise<RequestLogWorker> {
  const log = new RequestLogWorker(options);
  await log.started();
  return log;
}

/** A call before it is numbered. */
type Unsequenced<C> = C extends unknown ? Omit<C, "seq"> : never;

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: Error) => void;
  /** An append's entries: if its worker stops before answering, they may be in the file all the same. */
  readonly records?: readonly RequestLogRecord[];
}

/** The request log's port, served by a worker thread; see the module comment. */
export class RequestLogWorker implements RequestLogPort {
  private worker: Worker | undefined;
  private ready: Promise<void> | undefined;
  private readonly pending = new Map<number, Pending>();
  private seq = 0;
  private closed = false;
  /**
   * Ids of entries whose append was under way when a worker stopped. Written
   * before it is answered, such a batch may be in the file (wholly, or up to
   * a torn line) that the next worker reads back; the caller sends it again
   * (the log writer keeps a failed batch), and the entries read back must
   * not fail it as duplicates: the writer would retry it forever and hold
   * every later entry behind it. Ids leave it once sent again and answered.
   */
  private readonly inDoubt = new Set<string>();
  /** Whether a worker has opened the log: a start after that is a restart. */
  private hasOpened = false;
  private readonly onProblem: (fields: Record<string, unknown>, message: string) => void;

  constructor(private readonly options: RequestLogWorkerOptions) {
    this.onProblem = options.onProblem ?? (() => undefined);
  }

  /** Starts the worker if none runs; resolves once its log is open. */
  started(): Promise<void> {
    this.ready ??= this.start();
    return this.ready;
  }

  private start(): Promise<void> {
    const data: LogThreadData = { dataDir: this.options.dataDir, maxEntries: this.options.maxEntries, openedAtMs: (this.options.clock?.() ?? new Date()).getTime() };
    const restart = this.hasOpened;
    const worker = newThread(data);
    this.worker = worker;
    const opening = new Promise<void>((resolve, reject) => {
      let opened = false;
      let openError: Error | undefined;
      worker.on("message", (m: FromLogThread) => {
        switch (m.kind) {
          case "ready":
            opened = true;
            this.hasOpened = true;
            // Kept alive only while a call waits for its answer (see `call`).
            if (this.pending.size === 0) worker.unref();
            resolve();
            return;
          case "failed":
            openError = errorOf(m.error);
            return;
          case "problem":
            this.onProblem(m.fields, m.message);
            return;
          case "reply":
            this.settle(m);
            return;
        }
      });
      let failure: Error | undefined;
      worker.on("error", (err) => {
        failure = err;
      });
      worker.on("exit", (code) => {
        if (this.worker === worker) {
          this.worker = undefined;
          this.ready = undefined;
        }
        // A failed open is told once its worker is gone (and `ready` cleared):
        // a call after it starts a new worker, never one beside this one.
        if (!opened) reject(openError ?? failure ?? new Error(`the request log's worker thread stopped (exit code ${code}) before its log was open`));
        else if (!this.closed) {
          this.onProblem(
            { exitCode: code, ...(failure === undefined ? {} : { err: wireError(failure) }), failedCalls: this.pending.size },
            "request log: its worker thread stopped; it is started again at the next call",
          );
        }
        for (const p of this.pending.values()) {
          for (const r of p.records ?? []) this.inDoubt.add(r.id);
          p.reject(new StoreUnavailableError({ cause: new Error(`the request log's worker thread stopped (exit code ${code})`) }));
        }
        this.pending.clear();
      });
    });
    if (!restart) return opening;
    // The first open fails the start with its own error (as in this thread); a
    // restart that fails leaves the store unavailable to the calls waiting for
    // it (a 503 to GET /admin/logs, not a 500), and the operator is told.
    return opening.catch((err: unknown) => {
      this.onProblem({ err: wireError(err) }, "request log: its worker thread could not be started again; the next call tries again");
      throw new StoreUnavailableError({ cause: err });
    });
  }

  private settle(m: Extract<FromLogThread, { kind: "reply" }>): void {
    const p = this.pending.get(m.seq);
    if (p === undefined) return;
    this.pending.delete(m.seq);
    if (this.pending.size === 0) this.worker?.unref();
    if (m.error !== undefined) p.reject(errorOf(m.error));
    else p.resolve(m.value);
  }

  private async call<T>(call: Unsequenced<LogCall>): Promise<T> {
    if (this.closed) throw new StoreUnavailableError({ cause: new Error("the request log is closed") });
    await this.started();
    const worker = this.worker;
    if (worker === undefined) throw new StoreUnavailableError({ cause: new Error("the request log's worker thread stopped") });
    const seq = ++this.seq;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(seq, { resolve: resolve as (value: unknown) => void, reject, records: call.op === "append" ? call.records : undefined });
      if (this.pending.size === 1) worker.ref();
      try {
        worker.postMessage({ ...call, seq });
      } catch (err) {
        // Not cloneable: a caller's mistake, never the worker's.
        this.pending.delete(seq);
        if (this.pending.size === 0) worker.unref();
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  append(records: readonly RequestLogRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    const again = this.inDoubt.size === 0 ? [] : records.filter((r) => this.inDoubt.has(r.id)).map((r) => r.id);
    if (again.length === 0) return this.call({ op: "append", records });
    return this.call<void>({ op: "append", records, again }).then(() => {
      for (const id of again) this.inDoubt.delete(id);
    });
  }

  get(id: string): Promise<RequestLogRecord | undefined> {
    return this.call({ op: "get", id });
  }

  query(q: LogQuery): Promise<Page<RequestLogRecord>> {
    return this.call({ op: "query", query: q });
  }

  purge(now: Date): Promise<number> {
    return this.call({ op: "purge", now });
  }

  trim(maxEntries: number): Promise<{ removed: number; remaining: number }> {
    return this.call({ op: "trim", maxEntries });
  }

  /** The log's counters (as MemoryRequestLog.stats()). */
  stats(): Promise<MemoryRequestLogStats> {
    return this.call({ op: "stats" });
  }

  /** Resolves when the file work queued so far is done. */
  idle(): Promise<void> {
    return this.call({ op: "idle" });
  }

  /** Waits for the file work under way, then stops the worker; later calls fail. */
  async close(): Promise<void> {
    if (this.closed) return;
    const worker = this.worker;
    if (worker !== undefined) {
      try {
        await this.call({ op: "idle" });
      } catch (err) {
        // A worker that stopped, or could not start again, has no file work
        // under way (every entry it answered for is in the file): the stop
        // goes on rather than fail the process's shutdown.
        if (!(err instanceof StoreUnavailableError)) throw err;
      } finally {
        this.closed = true;
        await worker.terminate();
      }
    }
    this.closed = true;
  }
}
