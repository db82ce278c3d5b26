/**
 * A call's Node request as Connect's universal request, for both ways a call
 * is served (the Fastify route, src/gateway/rpc/plugin.ts, and the h2c
 * shortcut, src/gateway/rpc/direct.ts).
 *
 * connect-node builds the request's URL from its authority (`:authority`,
 * else `Host`) and throws when there is none or it makes no URL (`x:99999`,
 * `[`, `a%zz`, empty). That is the client's mistake, and it is refused as
 * one: `invalid_argument` in the protocol's own answer, never a handler
 * failure logged as ours, an empty 200 or a stream left open.
 */
import type http from "node:http";
import type http2 from "node:http2";
import { Code, ConnectError, type ContextValues } from "@connectrpc/connect";
import type { UniversalServerRequest } from "@connectrpc/connect/protocol";
import { universalRequestFromNodeRequest } from "@connectrpc/connect-node";

/** Why a call with an authority that makes no URL is refused. */
export const BAD_AUTHORITY_MESSAGE = "the request's authority (:authority or Host) is missing or not a valid host";

/**
 * The universal request of a call (connect-node's), or the refusal
 * (`invalid_argument`) of a call whose authority makes no URL. Anything
 * else connect-node throws is thrown.
 */
export function universalRequestOf(
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
  contextValues: ContextValues | undefined,
): UniversalServerRequest | ConnectError {
  try {
    const uReq = universalRequestFromNodeRequest(req, res, undefined, contextValues);
    clampTimeouts(uReq.header);
    return uReq;
  } catch (err) {
    // Checked only after a failure: the hot path parses the URL once, in connect-node.
    if (makesUrl(req)) throw err;
    return new ConnectError(BAD_AUTHORITY_MESSAGE, Code.InvalidArgument);
  }
}

/** Whether connect-node can make a request's URL (as it does: `new URL(url, scheme://authority)`). */
function makesUrl(req: http.IncomingMessage | http2.Http2ServerRequest): boolean {
  const authority = "authority" in req ? req.authority : req.headers.host;
  return authority !== undefined && URL.canParse(req.url ?? "", `http://${authority}`);
}

/**
 * The universal request of a call taken from a node:http2 stream (the h2c
 * shortcut, src/gateway/rpc/direct.ts), as connect-node makes it from the
 * compat request over the same stream: the authority is `:authority`, else
 * `Host` (Node's compat `authority`), the URL is `new URL(path,
 * scheme://authority)`, the headers are the stream's without pseudo-headers,
 * and the body is the stream's data. A call whose authority makes no URL is
 * the same `invalid_argument` refusal as {@link universalRequestOf}'s.
 */
export function universalRequestOfStream(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  signal: AbortSignal,
  contextValues: ContextValues | undefined,
  body?: AsyncIterable<Uint8Array>,
): UniversalServerRequest | ConnectError {
  const url = urlOfStream(stream, headers);
  if (url === undefined) return new ConnectError(BAD_AUTHORITY_MESSAGE, Code.InvalidArgument);
  const header = nodeHeaderToWebHeader(headers);
  const timeout = headers["grpc-timeout"];
  if (timeout !== undefined && mayOverflow(timeout)) clampTimeouts(header);
  return {
    httpVersion: "2.0",
    method: headers[":method"] ?? "",
    url,
    header,
    // A handler that stops reading early (a malformed message, a body over
    // the limit) must not destroy the stream it still answers on: the
    // compat request connect-node reads from leaves its stream alone too.
    body: body ?? (stream.iterator({ destroyOnReturn: false }) as AsyncIterable<Uint8Array>),
    signal,
    contextValues,
  };
}

/**
 * A call's URL as connect-node makes it from a stream (its authority is
 * `:authority`, else `Host`), or undefined when it makes none.
 */
export function urlOfStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): string | undefined {
  const authority = headers[":authority"] ?? headers.host;
  if (authority === undefined) return undefined;
  return callUrl(headers[":path"] ?? "", `${stream.session?.encrypted === true ? "https" : "http"}://${authority}`);
}

/**
 * A method's path (`/package.Service/Method`): WHATWG URL parsing leaves it
 * as it is. Each segment starts with a letter or `_`, so that neither is a
 * dot segment (`.`, `..`), which the parser removes.
 */
const METHOD_PATH = /^\/[A-Za-z_][A-Za-z0-9_.]*\/[A-Za-z_][A-Za-z0-9_]*$/;
/** Most origins remembered (a client sends one authority; a hostile one many). */
const MAX_ORIGINS = 64;
/** `new URL("/", origin)` without its final `/`, by the origin as sent (undefined: it makes no URL). */
const origins = new Map<string, string | undefined>();

/**
 * `new URL(path, origin).toString()`, or undefined when that throws. A
 * method's path is appended to the origin's parsed form, which is parsed
 * once per origin (the WHATWG parser costs a call several microseconds:
 * the host is lowercased, IPv4 forms normalised, a default port dropped).
 */
export function callUrl(path: string, origin: string): string | undefined {
  if (!METHOD_PATH.test(path)) return parsedUrl(path, origin);
  let base = origins.get(origin);
  if (base === undefined && !origins.has(origin)) {
    base = parsedUrl("/", origin)?.slice(0, -1);
    if (origins.size >= MAX_ORIGINS) origins.clear();
    origins.set(origin, base);
  }
  return base === undefined ? undefined : base + path;
}

function parsedUrl(path: string, origin: string): string | undefined {
  try {
    return new URL(path, origin).toString();
  } catch {
    return undefined;
  }
}

/**
 * The request's headers as web headers, without pseudo-headers: what
 * connect-node's (unexported) `nodeHeaderToWebHeader` makes of the same
 * object.
 */
export function nodeHeaderToWebHeader(headers: http2.IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const name in headers) {
    if (name.charCodeAt(0) === 0x3a /* : */) continue;
    const value = headers[name];
    if (value === undefined) continue;
    if (typeof value === "string") out.append(name, value);
    else if (typeof value === "number") out.append(name, String(value));
    else for (const v of value) out.append(name, v);
  }
  return out;
}

/** The longest delay a Node timer holds (2³¹ − 1 ms, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** A gRPC timeout at that bound: 2,147,483 s. */
const MAX_GRPC_TIMEOUT = "2147483S";
/** Milliseconds per unit of a `grpc-timeout` (gRPC over HTTP/2: `H M S m u n`). */
const GRPC_TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/**
 * Whether a `grpc-timeout` as sent can exceed a Node timer's bound: only
 * hours of 3 digits or more (597H), minutes of 5 or more (35792M) and
 * seconds of 7 or more (2147484S) can; the rest is never looked at again.
 */
export function mayOverflow(value: string | string[]): boolean {
  if (typeof value !== "string") return true;
  const digits = value.length - 1;
  const unit = value.charCodeAt(digits);
  return (unit === 0x48 /* H */ && digits >= 3) || (unit === 0x4d /* M */ && digits >= 5) || (unit === 0x53 /* S */ && digits >= 7);
}

/**
 * Caps a deadline longer than a Node timer can hold (`grpc-timeout`, of
 * gRPC and gRPC-Web; `connect-timeout-ms`, of Connect) at that bound, about
 * 24.8 days. Connect sets its deadline timer with the client's timeout as it
 * is, and Node fires a timer set beyond the bound after 1 ms: a client with
 * a deadline of a month (`720H`, as grpc-go sends it) had every call end
 * DEADLINE_EXCEEDED at once, a health Watch stream within a millisecond. A
 * malformed value is left for Connect to refuse.
 */
export function clampTimeouts(header: Headers): void {
  const grpc = header.get("grpc-timeout");
  if (grpc !== null) {
    const m = /^(\d{1,8})([HMSmun])$/.exec(grpc);
    if (m !== null && Number(m[1]) * GRPC_TIMEOUT_UNIT_MS[m[2]!]! > MAX_TIMER_MS) header.set("grpc-timeout", MAX_GRPC_TIMEOUT);
  }
  const connect = header.get("connect-timeout-ms");
  if (connect !== null && /^\d{1,10}$/.test(connect) && Number(connect) > MAX_TIMER_MS) header.set("connect-timeout-ms", String(MAX_TIMER_MS));
}
