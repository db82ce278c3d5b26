/**
 * Plain unary gRPC calls of the h2c shortcut (src/gateway/rpc/direct.ts),
 * answered without Connect's streaming pipeline (bench/README.md).
 *
 * Connect's gRPC handler serves a unary call as a stream of one message:
 * about ten chained async iterables (each step a few promises), two linked
 * `AbortController`s and a deadline signal, a copy of the request headers,
 * and at the end two aborts whose `DOMException`s capture a stack on Node
 * 20. Measured on its own (bench/README.md, the run of commit 5d57b3f),
 * that is about 85 % of the server's CPU
 * for a stub `Authorize`; the call's own work is the rest. Here the same call is one function: the body is read whole, the
 * one message parsed, the implementation invoked through the same
 * interceptors with Connect's own `invokeUnaryImplementation`, and the
 * answer written as Connect's handler writes it.
 *
 * Only the plainest call is taken: binary protobuf (`application/grpc` or
 * `application/grpc+proto`), not compressed (no `grpc-encoding`, or
 * `identity`), a valid `grpc-timeout` or none, and a body that is exactly
 * one uncompressed message within the read limit that parses. Anything else
 * (JSON, compression, a malformed or missing timeout, no message, two
 * messages, a flag, a truncated or oversized message, bytes that do not
 * parse) is handed to Connect's handler with the bytes read so far and the
 * rest of the stream, and Connect answers it as it always has. What the
 * answer is built from is Connect's too: the serialization (and its write
 * limit), the response compression negotiated from `grpc-accept-encoding`,
 * the trailer status of an error. test/gateway/rpc/unary.test.ts checks,
 * over hostile calls, that both ways answer every call alike.
 *
 * The handler's signal is the call's own (aborted when the client goes
 * away, with the reason Connect gives, or when the deadline passes, which
 * runs from the headers), and it is aborted once the call is over, as
 * Connect aborts it, when anything listens to it. Methods of a router with
 * a `shutdownSignal` (none here) are left to Connect, which links it in.
 */
import type http2 from "node:http2";
import type { DescMessage, DescMethodUnary, MessageShape } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createMethodImplSpec,
  createServiceImplSpec,
  type ConnectRouter,
  type ConnectRouterOptions,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
} from "@connectrpc/connect";
import {
  compressionNegotiate,
  createMethodSerializationLookup,
  envelopeCompress,
  invokeUnaryImplementation,
  validateUniversalHandlerOptions,
  type Compression,
  type UniversalHandlerOptions,
} from "@connectrpc/connect/protocol";
import { contentTypeProto, parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { mayOverflow } from "./node-request.js";

type UnarySpec = MethodImplSpec<DescMessage, DescMessage> & { kind: "unary"; method: DescMethodUnary };

/** A unary method the shortcut answers itself, with what Connect's handler for it would use. */
export interface UnaryMethod {
  readonly spec: UnarySpec;
  readonly interceptors: Interceptor[];
  readonly parse: (bytes: Uint8Array) => MessageShape<DescMessage>;
  readonly serialize: (message: MessageShape<DescMessage>) => Uint8Array;
  readonly readMaxBytes: number;
  readonly maxTimeoutMs: number;
  readonly acceptCompression: Compression[];
  readonly compressMinBytes: number;
}

/** Service options as a router takes them (`ConnectRouter.service`'s third argument). */
type ServiceOptions = Partial<UniversalHandlerOptions> & { readonly grpc?: boolean };

/**
 * A router that registers on `router` and keeps, by request path, each
 * unary method served over gRPC with the options Connect's router gives its
 * handler: the router's, or a service's own merged over them (as
 * `createConnectRouter` merges them: a service's interceptors replace the
 * router's).
 */
export function recordingRouter(router: ConnectRouter, routerOptions: ConnectRouterOptions): { router: ConnectRouter; unary: Map<string, UnaryMethod> } {
  const base = { ...routerOptions, ...validateUniversalHandlerOptions(routerOptions) };
  const unary = new Map<string, UnaryMethod>();
  const add = (spec: MethodImplSpec, options: ServiceOptions | undefined): void => {
    // As Connect's router picks the protocols: a service's options replace the router's.
    if (spec.kind !== "unary" || (options === undefined ? routerOptions.grpc === false : options.grpc === false)) return;
    // As Connect's router merges them and its gRPC handler factory validates the result.
    const opt = validateUniversalHandlerOptions(options === undefined ? base : { ...validateUniversalHandlerOptions(base), ...options });
    // A call of a server that can shut down has its signal linked to that: left to Connect.
    if (opt.shutdownSignal !== undefined) return;
    const serialization = createMethodSerializationLookup(spec.method, opt.binaryOptions, opt.jsonOptions, opt);
    const binaryIn = serialization.getI(true);
    const binaryOut = serialization.getO(true);
    unary.set(`/${spec.method.parent.typeName}/${spec.method.name}`, {
      spec: spec as UnarySpec,
      interceptors: opt.interceptors ?? [],
      parse: (bytes) => binaryIn.parse(bytes),
      serialize: (message) => binaryOut.serialize(message),
      readMaxBytes: opt.readMaxBytes,
      maxTimeoutMs: opt.maxTimeoutMs,
      acceptCompression: opt.acceptCompression,
      compressMinBytes: opt.compressMinBytes,
    });
  };
  const recording = {
    get handlers() {
      return router.handlers;
    },
    service(service, implementation, options) {
      for (const spec of Object.values(createServiceImplSpec(service, implementation).methods)) add(spec as MethodImplSpec, options);
      router.service(service, implementation, options);
      return recording;
    },
    rpc(method, implementation, options) {
      add(createMethodImplSpec(method, implementation) as MethodImplSpec, options);
      router.rpc(method, implementation, options);
      return recording;
    },
  } as ConnectRouter;
  return { router: recording, unary };
}

/**
 * Whether the fast path may take a call, by its headers: binary protobuf,
 * not compressed, and a deadline it can hold. The deadline (ms), undefined
 * when there is none; `false` when Connect's handler serves the call.
 * Timeouts that may exceed a Node timer as written (which
 * src/gateway/rpc/node-request.ts clamps), past the router's maximum,
 * zero, or malformed (Connect's `parseTimeout` says) are left to Connect.
 */
export function plainCall(headers: http2.IncomingHttpHeaders, method: UnaryMethod): number | undefined | false {
  const type = headers["content-type"];
  if (type !== "application/grpc" && type !== "application/grpc+proto") return false;
  const encoding = headers["grpc-encoding"];
  if (encoding !== undefined && encoding !== "identity") return false;
  const timeout = headers["grpc-timeout"];
  if (timeout === undefined) return undefined;
  if (typeof timeout !== "string" || mayOverflow(timeout)) return false;
  const parsed = parseTimeout(timeout, method.maxTimeoutMs);
  return parsed.error !== undefined || parsed.timeoutMs === undefined || !(parsed.timeoutMs > 0) ? false : parsed.timeoutMs;
}

/** Bytes of an envelope's prefix: a flags byte and the message's length (big-endian). */
export const PREFIX_BYTES = 5;

/** The message length an envelope's prefix declares (at least 5 bytes given). */
export function declaredLength(prefix: Uint8Array): number {
  return ((prefix[1]! << 24) >>> 0) + (prefix[2]! << 16) + (prefix[3]! << 8) + prefix[4]!;
}

/** What a call's context is made of. */
export interface UnaryCall {
  readonly url: string;
  readonly header: Headers;
  /** The handler's signal's: aborted when the client goes away, the deadline passes, or the call is over. */
  readonly abort: AbortController;
  /** The request's: aborted when the client goes away. */
  readonly requestSignal: AbortSignal;
  readonly values: ContextValues;
  /** When the call's deadline passes (epoch ms), if it has one. */
  readonly deadline: number | undefined;
}

/** The context Connect's handler would give the implementation (`createHandlerContext`'s fields), with the call's signal. */
export function handlerContext(method: UnaryMethod, call: UnaryCall): HandlerContext {
  const spec = method.spec;
  const signal = call.abort.signal;
  // A literal, not a spread of the spec with more members (a slow path on Node 20: README, Performance).
  return {
    kind: spec.kind,
    method: spec.method,
    impl: spec.impl,
    service: spec.method.parent,
    requestMethod: "POST",
    protocolName: "grpc",
    url: call.url,
    signal,
    requestSignal: call.requestSignal,
    shutdownSignal: undefined,
    timeoutMs: call.deadline === undefined ? noTimeout : remaining(call.deadline),
    requestHeader: call.header,
    responseHeader: new Headers({ "Content-Type": contentTypeProto }),
    responseTrailer: new Headers({ "Grpc-Status": "0" }),
    abort: aborting(call.abort),
    values: call.values,
    contextValues: call.values,
  } as HandlerContext;
}

/** `timeoutMs()` of a call with a deadline (anonymous closures: a named one costs a `__name` per call under tsx). */
function remaining(deadline: number): () => number {
  return () => deadline - Date.now();
}

/** `abort(reason)` of a call's context. */
function aborting(abort: AbortController): (reason?: unknown) => void {
  return (reason) => abort.abort(reason);
}

function noTimeout(): undefined {
  return undefined;
}

/**
 * Runs the implementation through the interceptors and makes the answer as
 * Connect's handler does: the response compression named in its headers
 * (negotiated from `grpc-accept-encoding`), and the one message enveloped
 * (and compressed past the threshold); or, when anything failed, no message
 * (undefined), the context aborted with the error, and the error's status
 * in the trailers (an error that is not a `ConnectError` as `internal`;
 * `undefined` thrown leaves the status OK, as Connect's handler leaves it).
 */
export async function answerUnary(method: UnaryMethod, ctx: HandlerContext, input: MessageShape<DescMessage>): Promise<Uint8Array | undefined> {
  const compression = compressionNegotiate(method.acceptCompression, null, ctx.requestHeader.get("Grpc-Accept-Encoding"), "Grpc-Accept-Encoding").response;
  if (compression !== null) ctx.responseHeader.set("Grpc-Encoding", compression.name);
  try {
    const output = await invokeUnaryImplementation(method.spec, ctx, input, method.interceptors);
    const data = method.serialize(output);
    const envelope = compression === null || data.byteLength < method.compressMinBytes ? { flags: 0, data } : await envelopeCompress({ flags: 0, data }, compression, method.compressMinBytes);
    return enveloped(envelope.flags, envelope.data);
  } catch (err) {
    (ctx as HandlerContext & { abort(reason?: unknown): void }).abort(err);
    if (err !== undefined) setTrailerStatus(ctx.responseTrailer, err instanceof ConnectError ? err : new ConnectError("internal error", Code.Internal, undefined, undefined, err));
    return undefined;
  }
}

/** One envelope: flags, length, message. */
function enveloped(flags: number, data: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(PREFIX_BYTES + data.byteLength);
  bytes[0] = flags;
  const n = data.byteLength;
  bytes[1] = n >>> 24;
  bytes[2] = (n >>> 16) & 0xff;
  bytes[3] = (n >>> 8) & 0xff;
  bytes[4] = n & 0xff;
  bytes.set(data, PREFIX_BYTES);
  return bytes;
}
