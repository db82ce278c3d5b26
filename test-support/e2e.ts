/**
 * Helpers for the end-to-end suites (test/e2e): an erplink listening on a
 * real port of 127.0.0.1, a @grpc/grpc-js client built from the generated
 * service descriptors, plain HTTP/1.1 requests, and `src/main.ts` run as a
 * child process. Lives outside test/ because uvu runs every file there.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import http from "node:http";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { fromBinary, toBinary, type DescMessage, type DescService, type MessageShape } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { createErplink, type Erplink } from "../src/app.js";
import { loadConfig } from "../src/config.js";

/** The master key every in-process e2e erplink uses (32+ printable characters). */
export const E2E_MASTER_KEY = "erpl_e2e_master_key_0123456789abcdefghijklmnopq";

/** The repository root (cwd of the child processes). */
export const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));

/** An erplink listening on 127.0.0.1. */
export interface RunningErplink {
  readonly erplink: Erplink;
  readonly port: number;
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  readonly baseUrl: string;
  /** `127.0.0.1:<port>`, as grpc-js wants it. */
  readonly address: string;
  readonly masterKey: string;
  /** `Bearer <master key>`. */
  readonly authorization: string;
  /** Closes erplink (idempotent). */
  close(): Promise<void>;
}

/**
 * Composes erplink from a test environment (memory store, silent logs, the
 * e2e master key, port 0) and listens on 127.0.0.1.
 */
export async function startErplink(env: Readonly<Record<string, string>> = {}): Promise<RunningErplink> {
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    ERPLINK_DATA_DIR: ":memory:",
    ERPLINK_MASTER_KEY: E2E_MASTER_KEY,
    LOG_LEVEL: "silent",
    ...env,
  });
  const erplink = await createErplink(config);
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= erplink.close());
  try {
    await erplink.app.listen({ port: 0, host: "127.0.0.1" });
  } catch (err) {
    await close();
    throw err;
  }
  const addr = erplink.app.server.address();
  if (addr === null || typeof addr === "string") {
    await close();
    throw new Error(`unexpected server address ${String(addr)}`);
  }
  return {
    erplink,
    port: addr.port,
    baseUrl: `http://127.0.0.1:${addr.port}`,
    address: `127.0.0.1:${addr.port}`,
    masterKey: erplink.masterKey,
    authorization: `Bearer ${erplink.masterKey}`,
    close,
  };
}

/** A port that was free a moment ago (bind port 0, read it, release it). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Rejects with a clear message when `promise` has not settled within `ms`. */
export async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves with the error code of a TCP connection attempt ("connected" if it succeeds). */
export function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

// ---------------------------------------------------------------- grpc-js

/** A unary grpc-js call as a promise. */
export type GrpcUnary<S extends DescService> = {
  [K in keyof S["method"]]: (
    request: MessageShape<S["method"][K]["input"]>,
    metadata?: Record<string, string>,
  ) => Promise<MessageShape<S["method"][K]["output"]>>;
};

/** A grpc-js client of a generated service, with promise-returning unary methods. */
export interface GrpcJsClient<S extends DescService> {
  readonly call: GrpcUnary<S>;
  /** The underlying grpc-js client (for its channel). */
  readonly raw: grpc.Client;
  close(): void;
}

/**
 * Builds a @grpc/grpc-js client of a protobuf-es service descriptor with
 * `makeGenericClientConstructor`, (de)serializing with `toBinary`/`fromBinary`.
 * Insecure credentials: h2c with prior knowledge.
 */
export function createGrpcJsClient<S extends DescService>(service: S, address: string): GrpcJsClient<S> {
  const definition: Record<string, grpc.MethodDefinition<MessageShape<DescMessage>, MessageShape<DescMessage>>> = {};
  for (const method of service.methods) {
    const input = method.input as DescMessage;
    const output = method.output as DescMessage;
    definition[method.localName] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (m: MessageShape<DescMessage>) => Buffer.from(toBinary(input, m)),
      requestDeserialize: (b: Buffer) => fromBinary(input, b),
      responseSerialize: (m: MessageShape<DescMessage>) => Buffer.from(toBinary(output, m)),
      responseDeserialize: (b: Buffer) => fromBinary(output, b),
    };
  }
  const Ctor = grpc.makeGenericClientConstructor(definition, service.typeName);
  const raw = new Ctor(address, grpc.credentials.createInsecure());
  const call = {} as Record<string, unknown>;
  for (const method of service.methods) {
    const fn = (raw as unknown as Record<string, grpc.requestCallback<unknown> & Function>)[method.localName]!;
    call[method.localName] = (request: unknown, metadata: Record<string, string> = {}) =>
      new Promise((resolve, reject) => {
        const md = new grpc.Metadata();
        for (const [k, v] of Object.entries(metadata)) md.set(k, v);
        fn.call(raw, request, md, { deadline: Date.now() + 5000 }, (err: grpc.ServiceError | null, res: unknown) =>
          err ? reject(err) : resolve(res),
        );
      });
  }
  return { call: call as GrpcUnary<S>, raw, close: () => raw.close() };
}

/** Awaits a grpc-js call that must fail, and returns its error. */
export async function grpcError(promise: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await promise;
  } catch (err) {
    return err as grpc.ServiceError;
  }
  throw new Error("expected the gRPC call to fail");
}

// ---------------------------------------------------------------- HTTP/1.1

/** A response read to the end. */
export interface HttpResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
  /** The socket it came over (to check reuse). */
  readonly socket: net.Socket;
  json(): unknown;
}

/** One HTTP/1.1 request with node:http (an agent to keep the connection alive). */
export function httpRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; agent?: http.Agent } = {},
): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: options.method ?? "GET", headers: options.headers, agent: options.agent },
      (res) => {
        // Captured now: node:http detaches a kept-alive socket from the response at its end.
        const socket = res.socket;
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            text,
            socket,
            json: () => JSON.parse(text),
          });
        });
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

// ---------------------------------------------------------------- child process

/** `node --import tsx src/main.ts`, with its output collected. */
export interface MainProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** Everything written to stdout so far. */
  stdout(): string;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Resolves when stdout or stderr matches `re` (rejects on exit or after `ms`). */
  waitFor(re: RegExp, ms?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code (or the signal name) once the process has exited. */
  readonly exited: Promise<number | string>;
  /** Kills the process if it still runs, and waits for it to exit. */
  kill(): Promise<void>;
}

/**
 * Spawns `src/main.ts` with exactly `env` (plus PATH/HOME so node runs), cwd
 * the repository root.
 */
export function spawnMain(env: Readonly<Record<string, string>>): MainProcess {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  let exitCode: number | string | undefined;
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const l of [...listeners]) l();
  };
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stdout.on("data", (s: string) => {
    out += s;
    notify();
  });
  child.stderr.on("data", (s: string) => {
    err += s;
    notify();
  });
  const exited = new Promise<number | string>((resolve) => {
    child.once("close", (code, signal) => {
      exitCode = code ?? signal ?? "unknown";
      notify();
      resolve(exitCode);
    });
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(re, ms = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = out.match(re) ?? err.match(re);
          if (m) return done(() => resolve(m));
          if (exitCode !== undefined) {
            return done(() => reject(new Error(`process exited (${exitCode}) before ${re}\nstdout: ${out}\nstderr: ${err}`)));
          }
        };
        const timer = setTimeout(
          () => done(() => reject(new Error(`no ${re} within ${ms} ms\nstdout: ${out}\nstderr: ${err}`))),
          ms,
        );
        const done = (f: () => void) => {
          clearTimeout(timer);
          listeners.delete(check);
          f();
        };
        listeners.add(check);
        check();
      });
    },
    async kill() {
      if (exitCode === undefined) child.kill("SIGKILL");
      await exited;
    },
  };
}
