/**
 * Bare h2c servers whose every stream goes first to the shortcut
 * (src/gateway/rpc/direct.ts), over services a test registers: with the
 * fast path for plain unary calls (the `unary` map of `recordingRouter`,
 * src/gateway/rpc/unary.ts) or without it (Connect's gRPC handler serves
 * every call on the same shortcut). Tests of the fast path start one of
 * each, send both the same call and compare. What each saw is recorded:
 * the implementation's runs (as the test's routes record them), the
 * shortcut's reports, and how many calls reached Connect's handler.
 */
import http2 from "node:http2";
import type net from "node:net";
import type { AddressInfo } from "node:net";
import { createConnectRouter, createContextValues, type ConnectRouter, type ConnectRouterOptions, type ContextValues } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { createDirectRpc } from "../src/gateway/rpc/direct.js";
import { recordingRouter } from "../src/gateway/rpc/unary.js";

/** What one server's services and shortcut saw. */
export interface PairSeen {
  /** Each run of an implementation (recorded by the test's routes): its input, say as JSON. */
  readonly calls: string[];
  /** Each `answered` report: the status. */
  readonly reported: number[];
  /** Each `failed` report: `rpc: error`. */
  readonly failed: string[];
  /** Free-form notes of implementations and interceptors. */
  readonly notes: string[];
  /** Calls that reached Connect's handler. */
  connect: number;
  /** Streams the shortcut did not take (answered 404), once closed. */
  left: number;
}

export interface PairServer {
  readonly fast: boolean;
  readonly port: number;
  readonly seen: PairSeen;
  /** A client session to it. */
  readonly session: http2.ClientHttp2Session;
  close(): Promise<void>;
}

export interface PairOptions {
  /** The router's options (given `seen`, for interceptors that record). */
  readonly router: (seen: PairSeen) => ConnectRouterOptions;
  /** Registers the services. */
  readonly routes: (router: ConnectRouter, seen: PairSeen) => void;
  /** A call's context values (default: empty). */
  readonly contextValues?: () => ContextValues;
}

/** Starts a server (`fast`: with the fast path) and a client session to it. */
export async function startShortcut(fast: boolean, options: PairOptions): Promise<PairServer> {
  const seen: PairSeen = { calls: [], reported: [], failed: [], notes: [], connect: 0, left: 0 };
  const routerOptions = options.router(seen);
  const { router, unary } = recordingRouter(createConnectRouter(routerOptions), routerOptions);
  options.routes(router, seen);
  // Connect's handlers, counted.
  const handlers = router.handlers.map((h) =>
    Object.assign((req: Parameters<UniversalHandler>[0]) => {
      seen.connect++;
      return h(req);
    }, h) as UniversalHandler,
  );
  const shortcut = createDirectRpc({
    handlers,
    unary: fast ? unary : undefined,
    varyOrigin: false,
    takes: () => true,
    requestId: () => "req_fixed",
    contextValues: options.contextValues ?? createContextValues,
    answered: (c) => seen.reported.push(c.status),
    failed: (_id, rpc, err) => seen.failed.push(`${rpc}: ${String(err)}`),
  });
  const server = http2.createServer();
  const sockets = new Set<net.Socket>();
  server.on("connection", (s: net.Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.on("stream", (stream, headers) => {
    if (shortcut(stream, headers)) return;
    stream.on("error", () => {});
    stream.on("close", () => seen.left++);
    stream.respond({ ":status": 404 }, { endStream: true });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on("error", () => {});
  return {
    fast,
    port,
    seen,
    session,
    close: async () => {
      session.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** One gRPC envelope: `flags`, the length it declares (the message's by default), the message. */
export function envelope(flags: number, message: Uint8Array, declared = message.length): Buffer {
  const prefix = Buffer.alloc(5);
  prefix[0] = flags;
  prefix.writeUInt32BE(declared >>> 0, 1);
  return Buffer.concat([prefix, message]);
}

/** An answer's headers or trailers without what differs between two servers (`date`, `x-request-id`). */
export function strip(h: http2.IncomingHttpHeaders): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(h)) if (k !== "date" && k !== "x-request-id") out[k] = v;
  return out;
}
