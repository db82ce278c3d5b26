/**
 * gRPC calls over h2c that need none of the gateway's per-request work are
 * served straight from the HTTP/2 server, before Fastify routes them: the
 * same Connect handler, interceptors and limits, without the framework's
 * request and reply objects, hooks and routing around a call that uses none
 * of them (issue #14: about 8 % of an `Authorize` call).
 *
 * Taken: a POST of gRPC (`application/grpc`, `application/grpc+…`, not
 * gRPC-Web) over HTTP/2 to the exact path of a method of a service the
 * gateway names (the services that need no call facts: Authorize, Envoy's
 * Check, health, reflection), without an `Origin` header. Everything else
 * (admin services, whose calls the request log records; Connect and
 * gRPC-Web; browser calls, which get CORS; unknown paths, which get
 * UNIMPLEMENTED) goes through Fastify as before. What Fastify would add to a
 * taken call is added here: the request id (`X-Request-Id`, as
 * `genReqId` makes it), `Vary: Origin` when CORS is on, and after the answer
 * the same metrics and access-log line (`answered`). A call refused before
 * its handler (a malformed authority, src/gateway/rpc/node-request.ts) is
 * answered as the Fastify route answers it. test/e2e/rpc-direct.test.ts
 * checks that both ways answer every call alike.
 */
import http2 from "node:http2";
import { performance } from "node:perf_hooks";
import { Code, ConnectError, type ContextValues } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { Http2Shortcut } from "../server.js";
import { universalRequestOf } from "./node-request.js";
import { errorResponse, rpcKindOf, type RpcKind } from "./unimplemented.js";

/** A call served directly, once answered: what the gateway's onResponse hook would see. */
export interface DirectCall {
  readonly id: string;
  readonly method: string;
  readonly url: string;
  /** The route pattern Fastify would have matched (the method's path). */
  readonly route: string;
  readonly status: number;
  readonly ms: number;
}

/** Options of {@link createDirectRpc}. */
export interface DirectRpcOptions {
  /** The router's handlers; those of services `takes` accepts are served directly. */
  readonly handlers: readonly UniversalHandler[];
  /** Whether answers carry `Vary: Origin` (CORS is on: the gateway's RPC answers to calls without an Origin do). */
  readonly varyOrigin: boolean;
  /** Whether calls of a service (by type name) may skip the gateway. */
  readonly takes: (service: string) => boolean;
  /** The request id of a request, as Fastify's `genReqId` makes it. */
  readonly requestId: (incoming: string | string[] | undefined) => string;
  /** Context values of a call, by its request id. */
  readonly contextValues: (requestId: string) => ContextValues;
  /** After the answer (or its failure): metrics and access log. */
  readonly answered: (call: DirectCall) => void;
  /** A handler failed for another reason than the client going away, or `answered` threw. */
  readonly failed: (id: string, rpc: string, err: unknown) => void;
}

/** Whether a Content-Type names gRPC (not gRPC-Web). */
function isGrpc(contentType: string | undefined): boolean {
  return (
    contentType !== undefined &&
    contentType.startsWith("application/grpc") &&
    (contentType.length === 16 || contentType.charCodeAt(16) === 0x2b /* + */ || contentType.charCodeAt(16) === 0x3b /* ; */)
  );
}

/** How a taken call is framed (gRPC, by {@link isGrpc}), as the Fastify route tells it. */
function kindOf(req: http2.Http2ServerRequest): RpcKind {
  return rpcKindOf({ method: req.method, path: req.url, query: new URLSearchParams(), headers: req.headers }) ?? { protocol: "grpc", json: false };
}

/**
 * After a handler failed (a bug: Connect's handlers answer errors
 * themselves): `internal` in the protocol's answer if nothing was sent yet,
 * else the stream reset, so that the client never waits for an end.
 */
async function answerFailure(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): Promise<void> {
  try {
    if (res.headersSent) res.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    else await universalResponseToNodeResponse(errorResponse(kindOf(req), new ConnectError("internal error", Code.Internal)), res);
  } catch {
    // The client went away meanwhile.
  }
}

/**
 * Tells `options.answered` of a call once, when its response finishes or
 * fails. A helper's closure rather than an arrow bound to a `const` per
 * call: tsx's keepNames would rename it on every call (see
 * src/gateway/data/analyze.ts).
 */
function answeredOnce(
  options: DirectRpcOptions,
  handler: UniversalHandler,
  req: http2.Http2ServerRequest,
  res: http2.Http2ServerResponse,
  id: string,
  started: number,
): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    try {
      options.answered({ id, method: req.method, url: req.url, route: handler.requestPath, status: res.statusCode, ms: performance.now() - started });
    } catch (err) {
      // Thrown out of the response's event it would end the process; Fastify's hook runner logs an onResponse hook's error.
      options.failed(id, `${handler.service.typeName}/${handler.method.name}`, err);
    }
  };
}

/** The shortcut to set on the one-port server. */
export function createDirectRpc(options: DirectRpcOptions): Http2Shortcut {
  const byPath = new Map<string, UniversalHandler>();
  for (const h of options.handlers) if (options.takes(h.service.typeName)) byPath.set(h.requestPath, h);

  const serve = async (handler: UniversalHandler, req: http2.Http2ServerRequest, res: http2.Http2ServerResponse, id: string) => {
    try {
      const uReq = universalRequestOf(req, res, options.contextValues(id));
      // A refusal (a malformed authority) is answered as the Fastify route answers it (src/gateway/rpc/plugin.ts).
      const uRes = uReq instanceof ConnectError ? errorResponse(kindOf(req), uReq) : await handler(uReq);
      await universalResponseToNodeResponse(uRes, res);
    } catch (err) {
      if (ConnectError.from(err).code === Code.Aborted) return;
      options.failed(id, `${handler.service.typeName}/${handler.method.name}`, err);
      await answerFailure(req, res);
    }
  };

  return (req, res) => {
    if (req.method !== "POST") return false;
    const handler = byPath.get(req.url);
    if (handler === undefined) return false;
    const headers = req.headers;
    if (!isGrpc(headers["content-type"]) || headers.origin !== undefined) return false;
    const started = performance.now();
    const id = options.requestId(headers["x-request-id"]);
    res.setHeader("x-request-id", id);
    if (options.varyOrigin) res.setHeader("vary", "Origin");
    const answered = answeredOnce(options, handler, req, res, id, started);
    res.once("finish", answered);
    res.once("error", answered);
    void serve(handler, req, res, id);
    return true;
  };
}
