/**
 * One cleartext port for HTTP/1.1 (REST, Connect, gRPC-Web) and HTTP/2
 * (gRPC, h2c with prior knowledge). Node cannot serve both on one cleartext
 * server (`allowHTTP1` applies to TLS only), so a `net.Server` reads the first
 * bytes of each connection and hands it to `node:http2` when they are the
 * HTTP/2 connection preface, else to `node:http`.
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { AbuseGuard } from "./abuse-guard.js";
import { onClientError } from "./client-errors.js";
import { settleStream } from "./h2-stream.js";

/** Fastify's request handler, as a server factory receives it (HTTP/1.1 or HTTP/2 compat objects). */
export type RequestHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** Options of {@link createDualProtocolServer}. */
export interface DualProtocolServerOptions {
  /** A connection that sends nothing for this long is dropped (ms). */
  readonly firstByteTimeoutMs: number;
  /** Idle keep-alive timeout of HTTP/1.1 connections (ms). */
  readonly keepAliveTimeoutMs: number;
  /**
   * An HTTP/1.1 request whose headers have not all arrived this long after
   * its first byte is answered 408 and its connection closed (ms; default
   * 30,000). Checked every quarter of it, at most every 5 s, so a connection
   * that drips header bytes lives at most 1.25 times this long.
   */
  readonly headersTimeoutMs?: number;
  /** Idle timeout of HTTP/2 sessions (ms). */
  readonly http2SessionTimeoutMs: number;
  /** Limits on rapid resets, streams at once, reconnecting abusers and pipelining (default: {@link AbuseGuard}'s). */
  readonly guard?: AbuseGuard;
}

/**
 * Offered every HTTP/2 stream before Node's compatibility layer makes its
 * request and response objects for the gateway's handler: returns true if it
 * took the stream (and answers it), false to leave it to the gateway.
 */
export type Http2Shortcut = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean;

/** The server, with the connection controls Fastify calls on close. */
export interface DualProtocolServer extends net.Server {
  /** Sets (or, with undefined, removes) the {@link Http2Shortcut}; src/gateway/rpc/direct.ts sets one. */
  setHttp2Shortcut(shortcut: Http2Shortcut | undefined): void;
  /** The shortcut set, if any. */
  http2Shortcut(): Http2Shortcut | undefined;
  /** Closes idle HTTP/1.1 connections and asks HTTP/2 clients to go away after their open streams. */
  closeIdleConnections(): void;
  /** Destroys every connection, in flight or not. */
  closeAllConnections(): void;
}

/** Whether `server` is a {@link DualProtocolServer} (Fastify's own servers, as in most tests, are not). */
export function isDualProtocolServer(server: unknown): server is DualProtocolServer {
  return typeof (server as Partial<DualProtocolServer> | null)?.setHttp2Shortcut === "function";
}

/** Creates the one-port server; pass it to Fastify as `serverFactory`. */
export function createDualProtocolServer(handler: RequestHandler, options: DualProtocolServerOptions): DualProtocolServer {
  const guard = options.guard ?? new AbuseGuard();
  const headersTimeout = options.headersTimeoutMs ?? 30_000;
  const h1 = http.createServer(
    // requestTimeout stays Node's (300 s for a whole request, body included); it must not be below headersTimeout.
    { headersTimeout, requestTimeout: Math.max(300_000, headersTimeout), connectionsCheckingInterval: Math.min(5_000, Math.ceil(headersTimeout / 4)) },
    guard.pipeline(handler as http.RequestListener),
  );
  h1.keepAliveTimeout = options.keepAliveTimeoutMs;
  let shortcut: Http2Shortcut | undefined;
  // The streams the shortcut leaves get Node's compat objects, made as Node
  // makes them (CONNECT, Expect) by a server of their own that never
  // listens: it only turns a stream into the handler's request and response.
  const compat = http2.createServer(handler);
  // maxSessionMemory: Node's default (10 MB) counts the queued parts of cancelled answers
  // it never gives back; the guard sends such sessions away long before 32 MB.
  const h2 = http2.createServer({ settings: { maxConcurrentStreams: guard.maxConcurrentStreams }, maxSessionMemory: 32 });
  h2.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, flags: number, rawHeaders: string[]) => {
    if (!guard.admitStream(stream)) return;
    if (shortcut !== undefined && shortcut(stream, headers)) return;
    compat.emit("stream", stream, headers, flags, rawHeaders);
    // As the shortcut does for its own: the unread rest drained after the answer, the stream
    // ended when its client resets it (src/gateway/h2-stream.ts). After the compat objects are
    // made, so that their `wantTrailers` listener (which sends the trailers) runs before ours.
    settleStream(stream);
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  // Set once a close has begun: a session that starts after it (its client
  // connected just before, its preface came just after) is asked to go away
  // at once, or it would hold the close until its timeout.
  let closing = false;
  h2.on("session", (session) => {
    sessions.add(session);
    guard.watchSession(session, session.socket?.remoteAddress);
    session.once("close", () => sessions.delete(session));
    session.setTimeout(options.http2SessionTimeoutMs, () => session.close());
    if (closing) session.close();
  });
  const sockets = new Set<net.Socket>();

  // No Nagle: an answer written in pieces (a streamed body, chunked) would
  // otherwise wait for the client's delayed ACK, some 40 ms a piece.
  const outer = net.createServer({ noDelay: true }, (socket) => {
    // An address that was just sent away for abuse is refused for a while.
    if (guard.refuses(socket.remoteAddress)) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.setTimeout(options.firstByteTimeoutMs, () => socket.destroy());
    let seen = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      seen = Buffer.concat([seen, chunk]);
      const n = Math.min(seen.length, PREFACE.length);
      const isH2 = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
      // Wait for more bytes while they still could be the preface.
      if (isH2 && seen.length < PREFACE.length) return;
      socket.off("data", onData);
      socket.setTimeout(0);
      socket.pause();
      // Give the bytes back, then let the chosen server own the socket.
      socket.unshift(seen);
      if (isH2) {
        // node:http2 reads the unshifted bytes itself, then consumes the
        // native handle; resuming the JS stream here would steal its data.
        h2.emit("connection", socket);
      } else {
        h1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", onData);
    socket.on("error", () => socket.destroy());
  }) as DualProtocolServer;

  // Requests node:http's parser refuses or that take too long to arrive:
  // answered by the one-port server's own `clientError` listeners (Fastify's
  // clientErrorHandler, which Fastify attaches to the server its
  // serverFactory returns), else in the envelope all the same.
  h1.on("clientError", (err: NodeJS.ErrnoException, socket: net.Socket) => {
    if (outer.listenerCount("clientError") > 0) outer.emit("clientError", err, socket);
    else onClientError(err, socket);
  });

  // node:http only tracks connections (for closeIdleConnections and its
  // timeouts) once it has seen `listening`.
  outer.on("listening", () => h1.emit("listening"));
  outer.on("close", () => {
    h1.close();
    h2.close();
  });

  outer.setHttp2Shortcut = (s) => {
    shortcut = s;
  };
  outer.http2Shortcut = () => shortcut;
  outer.closeIdleConnections = () => {
    closing = true;
    h1.closeIdleConnections();
    for (const session of sessions) session.close();
  };
  outer.closeAllConnections = () => {
    h1.closeAllConnections();
    for (const session of sessions) session.destroy();
    for (const socket of sockets) socket.destroy();
  };
  return outer;
}
