/**
 * gRPC calls over h2c that need none of the gateway's per-request work are
 * served straight from the HTTP/2 stream, before Node's compatibility layer
 * (`Http2ServerRequest`/`Http2ServerResponse`) and Fastify see them: the
 * same Connect handler, interceptors and limits, without the framework's
 * request and reply objects, hooks and routing (about 8 % of an
 * `Authorize` call, bench/README.md), and without the compat objects,
 * connect-node's adapter around them and the work neither needs for a finished call
 * (about 12 % of the server's CPU per call more).
 *
 * Taken: a POST of gRPC (`application/grpc`, `application/grpc+…`, not
 * gRPC-Web) to the exact path of a method of a service the gateway names
 * (the services that need no call facts: Authorize, Envoy's Check, health,
 * reflection), without an `Origin` or an `Expect` header. Everything else (admin services,
 * whose calls the request log records; Connect and gRPC-Web; browser calls,
 * which get CORS; unknown paths, which get UNIMPLEMENTED) goes to the compat
 * layer and Fastify as before. What Fastify would add to a taken call is
 * added here: the request id (`X-Request-Id`, as `genReqId` makes it),
 * `Vary: Origin` when CORS is on, and after the answer the same metrics and
 * access-log line (`answered`). A call refused before its handler (a
 * malformed authority, src/gateway/rpc/node-request.ts) is answered as the
 * Fastify route answers it. test/e2e/rpc-direct.test.ts checks that both
 * ways answer every call alike.
 *
 * A plain unary call (binary protobuf, not compressed, one message: most
 * `Authorize` and `Check` calls) is answered without Connect's streaming
 * pipeline ({@link serveUnary}, src/gateway/rpc/unary.ts): the same
 * implementation, interceptors, serialization and trailers, about a fifth
 * of the server's CPU. Any other call of these services, and a call that
 * turns out not to be plain while its body is read, goes to Connect's
 * handler with what has been read.
 *
 * The answer is written as connect-node's `universalResponseToNodeResponse`
 * writes it to a compat response: the headers after the handler's first
 * chunk (so that it can still set some), each chunk with backpressure, the
 * trailers when the body ends. Two things are left out for a call that
 * ended normally, both of which only make a `DOMException` (with a stack)
 * on Node 20: aborting the request's signal when the stream closes (nothing
 * listens any more), and `return()` on the answer's finished iterator.
 */
import http2 from "node:http2";
import { performance } from "node:perf_hooks";
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { discardUnread, drainUnread, onStreamAborted } from "../h2-stream.js";
import type { Http2Shortcut } from "../server.js";
import { nodeHeaderToWebHeader, universalRequestOfStream, urlOfStream } from "./node-request.js";
import { answerUnary, declaredLength, handlerContext, plainCall, PREFIX_BYTES, type UnaryMethod } from "./unary.js";
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
  /** Unary methods (by request path) whose plain calls are answered without Connect's handler (src/gateway/rpc/unary.ts). */
  readonly unary?: ReadonlyMap<string, UnaryMethod>;
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
function kindOf(headers: http2.IncomingHttpHeaders): RpcKind {
  return rpcKindOf({ method: "POST", path: headers[":path"] ?? "", query: new URLSearchParams(), headers }) ?? { protocol: "grpc", json: false };
}

/**
 * What the client's reset of a stream tells the handler (the abort reason of
 * the request's signal), as connect-node maps it: undefined for the codes it
 * leaves unmapped (NO_ERROR, STREAM_CLOSED, unknown ones).
 */
function resetReason(rstCode: number | undefined): ConnectError | undefined {
  const c = http2.constants;
  let code: Code;
  switch (rstCode) {
    case c.NGHTTP2_PROTOCOL_ERROR:
    case c.NGHTTP2_INTERNAL_ERROR:
    case c.NGHTTP2_FLOW_CONTROL_ERROR:
    case c.NGHTTP2_SETTINGS_TIMEOUT:
    case c.NGHTTP2_FRAME_SIZE_ERROR:
    case c.NGHTTP2_COMPRESSION_ERROR:
    case c.NGHTTP2_CONNECT_ERROR:
      code = Code.Internal;
      break;
    case c.NGHTTP2_REFUSED_STREAM:
      code = Code.Unavailable;
      break;
    case c.NGHTTP2_CANCEL:
      code = Code.Canceled;
      break;
    case c.NGHTTP2_ENHANCE_YOUR_CALM:
      code = Code.ResourceExhausted;
      break;
    case c.NGHTTP2_INADEQUATE_SECURITY:
    case c.NGHTTP2_HTTP_1_1_REQUIRED:
      code = Code.PermissionDenied;
      break;
    default:
      return undefined;
  }
  return new ConnectError(`http/2 stream closed with error code 0x${rstCode.toString(16)}`, code);
}

/**
 * Node headers of web headers, as connect-node's `webHeaderToNodeHeaders`
 * makes them (repeated names as arrays; no prototype, so that a header named
 * `constructor` or `__proto__` is a header like any other).
 */
function nodeHeaders(headers: Headers | undefined): http2.OutgoingHttpHeaders {
  const out = Object.create(null) as http2.OutgoingHttpHeaders;
  headers?.forEach(addHeader, out);
  return out;
}

function addHeader(this: http2.OutgoingHttpHeaders, value: string, name: string): void {
  const existing = this[name];
  if (existing === undefined) this[name] = value;
  else if (Array.isArray(existing)) existing.push(value);
  else this[name] = [String(existing), value];
}

/** Why a write could not go on: the stream went away (the client reset it, or the session ended). */
function goneError(): ConnectError {
  return new ConnectError("the stream was closed before the answer was written", Code.Aborted);
}

/** A stream error nobody else listens to: the compat layer ignores them too (its request's `onStreamError`); the call ends by `close`. */
function ignoreStreamError(): void {}

/** One call taken from a stream: its state, and the stream's `close` listener. */
class DirectStream {
  /** The answer's HTTP status as the compat response would report it (200 until headers are sent). */
  status = 200;
  /** Set once the answer has been written to its end (the request's signal then needs no abort). */
  ended = false;
  private reported = false;
  /** The trailers, once the answer is ended. */
  trailers: http2.OutgoingHttpHeaders | undefined;
  /** A write waiting for `drain`. */
  private waiting: { resolve(): void; reject(err: unknown): void } | undefined;
  readonly abort = new AbortController();
  readonly started = performance.now();
  /** The body's read while a plain unary call's is read ({@link readBody}). */
  reading: BodyReader | undefined;
  /** The handler's signal's controller, while a plain unary call is served ({@link serveUnary}). */
  handlerAbort: AbortController | undefined;

  constructor(
    readonly options: DirectRpcOptions,
    readonly handler: UniversalHandler,
    readonly stream: http2.ServerHttp2Stream,
    readonly headers: http2.IncomingHttpHeaders,
    readonly id: string,
  ) {}

  /** The RPC's name, for `failed`. */
  rpc(): string {
    return `${this.handler.service.typeName}/${this.handler.method.name}`;
  }

  /** The stream closed: fail a write waiting, abort a call still running (the client went away), and report the call once. */
  closed(): void {
    if (this.waiting !== undefined) this.drained(goneError());
    if (!this.ended) {
      this.abort.abort(resetReason(this.stream.rstCode));
      // The handler's signal follows the request's, with its reason, as Connect links them.
      this.handlerAbort?.abort(this.abort.signal.reason);
    }
    if (this.reported) return;
    this.reported = true;
    try {
      this.options.answered({
        id: this.id,
        method: "POST",
        url: this.headers[":path"]!,
        route: this.handler.requestPath,
        status: this.status,
        ms: performance.now() - this.started,
      });
    } catch (err) {
      // Thrown out of the stream's event it would end the process; Fastify's hook runner logs an onResponse hook's error.
      this.options.failed(this.id, this.rpc(), err);
    }
  }

  /** Sends the answer's headers, with the request id and `Vary` the gateway's hooks would have set. */
  respond(status: number, header: Headers | undefined): void {
    const out = nodeHeaders(header);
    out[":status"] = status;
    // The handler's own headers win, as a compat response's writeHead overrides headers set before it.
    if (out["x-request-id"] === undefined) out["x-request-id"] = this.id;
    if (this.options.varyOrigin && out.vary === undefined) out.vary = "Origin";
    this.stream.respond(out, { waitForTrailers: true });
    this.status = status;
  }

  /** Writes one chunk; resolves when the stream can take more, fails when it closes first. */
  write(chunk: Uint8Array): Promise<void> | undefined {
    const stream = this.stream;
    if (stream.destroyed || !stream.writable) throw goneError();
    if (stream.write(chunk)) return undefined;
    return new Promise<void>((resolve, reject) => {
      this.waiting = { resolve, reject };
      stream.once("drain", onDrain);
    });
  }

  /** The stream drained (`err` undefined) or closed (`err` the reason): a write waiting goes on or fails. */
  drained(err: ConnectError | undefined): void {
    const waiting = this.waiting;
    if (waiting === undefined) return;
    this.waiting = undefined;
    this.stream.off("drain", onDrain);
    if (err === undefined) waiting.resolve();
    else waiting.reject(err);
  }

  /** Ends the answer with its trailers (none: an empty trailers frame, as the compat response sends). */
  end(trailer: Headers | undefined): void {
    const stream = this.stream;
    if (stream.destroyed) throw goneError();
    this.trailers = nodeHeaders(trailer);
    // `on`: it fires once, and `once` wraps its listener per call.
    stream.on("wantTrailers", onWantTrailers);
    this.ended = true;
    stream.end();
    // A client still sending gets its rest discarded from now on (see drainUnread).
    if (!stream.readableEnded) discardUnread(stream);
  }
}

/** The `drain` listener of a taken stream that waits to write more. */
function onDrain(this: http2.ServerHttp2Stream): void {
  (this as StreamWithCall)[kCall]?.drained(undefined);
}

/** The `wantTrailers` listener of a taken stream whose answer has ended: sends the trailers, then drains what is left unread. */
function onWantTrailers(this: http2.ServerHttp2Stream): void {
  try {
    this.sendTrailers((this as StreamWithCall)[kCall]?.trailers ?? {});
  } catch (err) {
    // Trailers Node refuses (a connection-specific name a handler set): thrown out of
    // this native event it would end the process; connect-node destroys the response.
    this.destroy(err as Error);
    return;
  }
  drainUnread(this);
}

/** The `close` listener of a taken stream (a module function: nothing is made per call). */
function onClose(this: http2.ServerHttp2Stream): void {
  (this as StreamWithCall)[kCall]?.closed();
}

const kCall = Symbol("erplink.directCall");
type StreamWithCall = http2.ServerHttp2Stream & { [kCall]?: DirectStream };

/**
 * Writes a universal response to the stream: the headers once the body's
 * first chunk is there (or it has none), the chunks with backpressure, then
 * the trailers. An error while writing is given to the handler's body (its
 * `throw`), as connect-node does, and thrown.
 */
async function writeResponse(call: DirectStream, res: UniversalServerResponse): Promise<void> {
  const it = res.body?.[Symbol.asyncIterator]();
  let finished = it === undefined;
  let writing = false;
  try {
    if (it !== undefined) {
      let chunk = await it.next();
      writing = true;
      call.respond(res.status, res.header);
      writing = false;
      for (; chunk.done !== true; chunk = await it.next()) {
        writing = true;
        await call.write(chunk.value);
        writing = false;
      }
      finished = true;
    }
    writing = true;
    if (!call.stream.headersSent) call.respond(res.status, res.header);
    call.end(res.trailer);
  } catch (err) {
    if (writing) it?.throw?.(err).catch(ignoreStreamError);
    throw err;
  } finally {
    // A body read to its end needs no return(); Connect's would only abort its finished context again.
    if (!finished) it?.return?.().catch(ignoreStreamError);
  }
}

/**
 * After a handler failed (a bug: Connect's handlers answer errors
 * themselves): `internal` in the protocol's answer if nothing was sent yet,
 * else the stream reset, so that the client never waits for an end.
 */
async function answerFailure(call: DirectStream): Promise<void> {
  try {
    if (call.stream.headersSent) call.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    else await writeResponse(call, errorResponse(kindOf(call.headers), new ConnectError("internal error", Code.Internal)));
  } catch {
    // The client went away meanwhile.
  }
}

/** Serves one taken call with Connect's handler; `body`: what is left of the request, when some of it has been read. */
async function serve(call: DirectStream, body?: AsyncIterable<Uint8Array>): Promise<void> {
  try {
    const uReq = universalRequestOfStream(call.stream, call.headers, call.abort.signal, call.options.contextValues(call.id), body);
    // A refusal (a malformed authority) is answered as the Fastify route answers it (src/gateway/rpc/plugin.ts).
    const uRes = uReq instanceof ConnectError ? errorResponse(kindOf(call.headers), uReq) : await call.handler(uReq);
    await writeResponse(call, uRes);
  } catch (err) {
    await callFailed(call, err);
  }
}

/** A call's serving threw: unless the client went away, a failure of ours, logged and answered `internal`. */
async function callFailed(call: DirectStream, err: unknown): Promise<void> {
  // The client went away (connect-node's adapter reports its write errors as aborted): nothing to answer, nothing of ours failed.
  if ((err instanceof ConnectError && err.code === Code.Aborted) || call.stream.destroyed) return;
  call.options.failed(call.id, call.rpc(), err);
  await answerFailure(call);
}

/**
 * Serves a plain unary call (src/gateway/rpc/unary.ts): reads its body,
 * and answers it itself when the body is one message that parses, else
 * hands it to Connect's handler with what has been read. A call whose
 * authority makes no URL is refused by {@link serve} before its body is read.
 */
async function serveUnary(call: DirectStream, method: UnaryMethod, timeoutMs: number | undefined): Promise<void> {
  // As Connect's handler does: the deadline runs from the headers, and `timeoutMs()` counts in whole milliseconds.
  const deadline = timeoutMs === undefined ? undefined : Math.trunc(Date.now() + timeoutMs);
  // The handler's own signal (Connect's context signal): aborted when the client goes away (closed()), at the deadline, and once the call is over.
  const handlerAbort = new AbortController();
  call.handlerAbort = handlerAbort;
  let timer = timeoutMs === undefined ? undefined : setTimeout(deadlineExceeded, timeoutMs, handlerAbort);
  try {
    const url = urlOfStream(call.stream, call.headers);
    const read = url === undefined ? undefined : await readBody(call, method);
    if (url === undefined || (read !== undefined && read.input === undefined)) {
      // Connect's handler takes over, with what is left of the deadline.
      clearTimeout(timer);
      timer = undefined;
      call.handlerAbort = undefined;
      if (deadline !== undefined) call.headers["grpc-timeout"] = grpcTimeout(deadline - Date.now());
      return await serve(call, read === undefined ? undefined : bodyAfter(read, call.stream));
    }
    // The stream closed first: nothing to answer (its close reported the call).
    if (read === undefined) return;
    const ctx = handlerContext(method, {
      url,
      header: nodeHeaderToWebHeader(call.headers),
      abort: handlerAbort,
      requestSignal: call.abort.signal,
      values: call.options.contextValues(call.id),
      deadline,
    });
    const answer = await answerUnary(method, ctx, read.input!);
    call.respond(200, ctx.responseHeader);
    const wait = answer === undefined ? undefined : call.write(answer);
    if (wait !== undefined) await wait;
    // Connect aborts its context once the message is written, before the trailers (a failed call's, in answerUnary).
    handlerAbort.abort(ABORTED);
    call.end(ctx.responseTrailer);
  } catch (err) {
    // Writing failed (the client went away, a header Node refuses): Connect aborts its context with that error.
    handlerAbort.abort(err);
    await callFailed(call, err);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What Connect's context is aborted with when a call is over (`abort()`
 * without a reason: an `AbortError`), made once: a `DOMException` captures
 * a stack each time it is made (about 5 µs here).
 */
const ABORTED = new DOMException("This operation was aborted", "AbortError");

/** A `grpc-timeout` for `ms` milliseconds left (none: `0m`), in the finest unit gRPC's 8 digits hold. */
function grpcTimeout(ms: number): string {
  const left = Math.max(0, Math.ceil(ms));
  return left <= 99_999_999 ? `${left}m` : `${Math.ceil(left / 1000)}S`;
}

/** A unary call's deadline passed: its handler's signal is aborted as Connect's deadline aborts it. */
function deadlineExceeded(abort: AbortController): void {
  abort.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
}

/** What {@link readBody} read of a request. */
interface BodyRead {
  readonly chunks: Buffer[];
  /** Whether that is the whole body (else the stream is paused where reading stopped). */
  readonly ended: boolean;
  /** The one message, parsed, when the whole body was exactly that. */
  readonly input: MessageShape<DescMessage> | undefined;
}

/**
 * Reads a unary call's body as Connect's handler reads it, up to where
 * Connect would answer or call the method: to its end when it is one
 * message that parses (the method is called once the client has ended its
 * side), and otherwise no further than where it can no longer be one (a
 * flag, a declared length over the limit, a message that does not parse,
 * more bytes than declared), where Connect's handler takes over.
 * Undefined when the stream closes first, or is reset (a reset stream ends
 * too, once destroyed: the client cancelled the call, which is not served).
 */
function readBody(call: DirectStream, method: UnaryMethod): Promise<BodyRead | undefined> {
  return new Promise((resolve) => {
    call.reading = new BodyReader(method, resolve);
    const stream = call.stream;
    stream.on("data", onBodyData);
    stream.on("end", onBodyEnd);
    stream.on("close", onBodyGone);
  });
}

/** The state of {@link readBody}. */
class BodyReader {
  readonly chunks: Buffer[] = [];
  size = 0;
  /** The envelope's size, once its prefix is read. */
  expected = -1;
  input: MessageShape<DescMessage> | undefined;

  constructor(
    readonly method: UnaryMethod,
    readonly resolve: (read: BodyRead | undefined) => void,
  ) {}

  /** Reading stops: at the end (`true`), where Connect takes over (`false`), or with nothing to serve. */
  stop(stream: http2.ServerHttp2Stream, ended: boolean | undefined): void {
    stream.off("data", onBodyData);
    stream.off("end", onBodyEnd);
    stream.off("close", onBodyGone);
    (stream as StreamWithCall)[kCall]!.reading = undefined;
    if (ended === undefined) return this.resolve(undefined);
    if (!ended) stream.pause();
    this.resolve({ chunks: this.chunks, ended, input: ended ? this.input : undefined });
  }

  data(stream: http2.ServerHttp2Stream, chunk: Buffer): void {
    const chunks = this.chunks;
    chunks.push(chunk);
    this.size += chunk.byteLength;
    if (this.expected === -1 && this.size >= PREFIX_BYTES) {
      const prefix = chunks.length === 1 ? chunk : Buffer.concat(chunks);
      const length = declaredLength(prefix);
      if (prefix[0] !== 0 || length > this.method.readMaxBytes) return this.stop(stream, false);
      this.expected = PREFIX_BYTES + length;
    }
    if (this.expected === -1 || this.size < this.expected) return;
    if (this.size > this.expected || this.input !== undefined) return this.stop(stream, false);
    this.input = parsed(this.method, chunks.length === 1 ? chunk : Buffer.concat(chunks));
    if (this.input === undefined) this.stop(stream, false);
  }
}

function onBodyData(this: http2.ServerHttp2Stream, chunk: Buffer): void {
  (this as StreamWithCall)[kCall]?.reading?.data(this, chunk);
}

function onBodyEnd(this: http2.ServerHttp2Stream): void {
  (this as StreamWithCall)[kCall]?.reading?.stop(this, this.destroyed ? undefined : true);
}

function onBodyGone(this: http2.ServerHttp2Stream): void {
  (this as StreamWithCall)[kCall]?.reading?.stop(this, undefined);
}

/** The message of an envelope (read whole), parsed; undefined when it does not parse (Connect's handler answers it). */
function parsed(method: UnaryMethod, envelope: Buffer): MessageShape<DescMessage> | undefined {
  try {
    return method.parse(envelope.subarray(PREFIX_BYTES));
  } catch {
    return undefined;
  }
}

/** The body of a call handed to Connect after {@link readBody}: what was read, then the rest of the stream. */
async function* bodyAfter(read: BodyRead, stream: http2.ServerHttp2Stream): AsyncGenerator<Uint8Array> {
  yield* read.chunks;
  if (!read.ended) yield* stream.iterator({ destroyOnReturn: false }) as AsyncIterable<Uint8Array>;
}

/** The shortcut to set on the one-port server. */
export function createDirectRpc(options: DirectRpcOptions): Http2Shortcut {
  const byPath = new Map<string, UniversalHandler>();
  for (const h of options.handlers) if (options.takes(h.service.typeName)) byPath.set(h.requestPath, h);
  const unary = options.unary ?? new Map<string, UnaryMethod>();

  return (stream, headers) => {
    if (headers[":method"] !== "POST") return false;
    const path = headers[":path"];
    const handler = path === undefined ? undefined : byPath.get(path);
    if (handler === undefined) return false;
    // A call with an Expect header is left to Node's compat layer, which answers it (100 Continue, or 417).
    if (!isGrpc(headers["content-type"]) || headers.origin !== undefined || headers.expect !== undefined) return false;
    const call = new DirectStream(options, handler, stream, headers, options.requestId(headers["x-request-id"]));
    (stream as StreamWithCall)[kCall] = call;
    stream.on("error", ignoreStreamError);
    // `on`, not `once`: each fires at most once, and `once` wraps its listener per call.
    stream.on("close", onClose);
    stream.on("aborted", onStreamAborted);
    const method = unary.get(path!);
    const timeoutMs = method === undefined ? false : plainCall(headers, method);
    if (timeoutMs === false) void serve(call);
    else void serveUnary(call, method!, timeoutMs);
    return true;
  };
}
