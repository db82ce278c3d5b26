/**
 * The RPC side of the port: every Connect service for gRPC, gRPC-Web (binary
 * and text) and Connect clients, with the conventions the gRPC world expects
 * of a server: `grpc.health.v1.Health`, server reflection (v1 and v1alpha),
 * `UNIMPLEMENTED` for unknown services and methods, and CORS for browser
 * clients of listed origins.
 *
 * The Fastify registration follows @connectrpc/connect-fastify's plugin
 * (Apache-2.0; one route per RPC, content types left unparsed for Connect to
 * read), with each handler wrapped for gRPC-Web text.
 */
import type { DescService } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createConnectRouter,
  type ConnectRouter,
  type ContextValues,
  type Interceptor,
} from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { compressionBrotli, compressionGzip, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { file_erplink_errors_v1_bad_request } from "../../gen/erplink/errors/v1/bad_request_pb.js";
import { file_google_rpc_status } from "../../gen/google/rpc/status_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { ServerReflection as ServerReflectionV1 } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionV1alpha } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { GatewayError, fromConnectError } from "../errors.js";
import { isDualProtocolServer } from "../server.js";
import { createCorsPolicy } from "./cors.js";
import { createDirectRpc, type DirectRpcOptions } from "./direct.js";
import { withGrpcWebText } from "./grpc-web-text.js";
import { createHealth, type HealthServer } from "./health.js";
import { createReflection } from "./reflection.js";
import { recordingRouter } from "./unary.js";
import { universalRequestOf } from "./node-request.js";
import { errorResponse, isRpcPath, rpcKindOf, unimplementedMessage, unimplementedResponse } from "./unimplemented.js";

/** Options of {@link registerRpc}. */
export interface RpcOptions {
  /** The application's services. */
  readonly routes: (router: ConnectRouter) => void;
  /** Interceptors that see every call, health and reflection included (metrics), outermost. */
  readonly observers?: readonly Interceptor[];
  /** Interceptors of the application's services (not of health and reflection, which need no credential). */
  readonly interceptors: readonly Interceptor[];
  /** Largest message, in bytes. */
  readonly readMaxBytes: number;
  /** Context values of each call. */
  readonly contextValues?: (req: FastifyRequest) => ContextValues;
  /** Resolves when the store answers (drives the health service, as it drives `/readyz`). */
  readonly ready: () => Promise<void>;
  /** Origins allowed to call the RPC endpoints from a browser (none: no CORS at all). */
  readonly corsOrigins: readonly string[];
  /** How often the store is checked while health Watch streams are open (ms; default 2000). */
  readonly healthWatchIntervalMs?: number;
  /** Answers a refusal in the gateway's envelope. */
  readonly sendError: (reply: FastifyReply, req: FastifyRequest, e: GatewayError) => FastifyReply;
  /**
   * gRPC calls over h2c of the services this takes are served before
   * Fastify routes them (src/gateway/rpc/direct.ts), when the gateway runs
   * on the one-port server; unset: every call goes through Fastify.
   */
  readonly direct?: Omit<DirectRpcOptions, "handlers" | "varyOrigin">;
}

/** What the gateway keeps of the RPC side. */
export interface RpcServer {
  readonly health: HealthServer;
}

/** The gRPC infrastructure services: served without credentials, healthy whatever the store does. */
const INFRASTRUCTURE: ReadonlySet<string> = new Set([Health.typeName, ServerReflectionV1.typeName, ServerReflectionV1alpha.typeName]);

/** Registers the RPC side on the gateway (call once, before `listen`). */
export async function registerRpc(app: FastifyInstance, options: RpcOptions): Promise<RpcServer> {
  const routerOptions = {
    interceptors: [...(options.observers ?? []), ...options.interceptors],
    readMaxBytes: options.readMaxBytes,
    acceptCompression: [compressionGzip, compressionBrotli],
  };
  // Every service is registered through it, so that the h2c shortcut knows the unary methods it may answer itself.
  const { router, unary } = recordingRouter(createConnectRouter(routerOptions), routerOptions);
  options.routes(router);

  // Read at call time: services registered on the router later are served, listed and described too.
  const services = (): DescService[] => [...new Map(router.handlers.map((h) => [h.service.typeName, h.service])).values()];
  const health = createHealth({
    ready: options.ready,
    services: () => services().map((s) => s.typeName),
    independent: INFRASTRUCTURE,
    watchIntervalMs: options.healthWatchIntervalMs ?? 2000,
    checkTimeoutMs: 2000,
  });
  const reflection = createReflection({
    services,
    // The error detail types: google.rpc.Status (grpc-status-details-bin) and the BadRequest it carries.
    extraFiles: [file_google_rpc_status, file_erplink_errors_v1_bad_request],
  });
  // Their own interceptors replace the router's: no admin credential, no rate limit.
  const infrastructure = { interceptors: [...(options.observers ?? []), maskUnexpected(app)] };
  router.service(Health, health.service, infrastructure);
  router.service(ServerReflectionV1, reflection.v1, infrastructure);
  router.service(ServerReflectionV1alpha, reflection.v1alpha, infrastructure);
  // Watch and reflection streams would hold HTTP/2 sessions open through a shutdown.
  app.addHook("preClose", async () => {
    health.shutdown();
    reflection.shutdown();
  });

  await app.register(async (scope) => {
    // Every body is left to Connect, which answers a content type it does not serve with 415.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_req, _payload, done) => done(null, undefined));
    for (const handler of router.handlers) registerHandler(scope, handler, options);
  });

  registerConventions(app, router, options);
  const direct = options.direct;
  if (direct !== undefined && isDualProtocolServer(app.server)) {
    app.server.setHttp2Shortcut(
      createDirectRpc({
        handlers: router.handlers,
        unary,
        varyOrigin: createCorsPolicy(options.corsOrigins).enabled,
        takes: direct.takes,
        requestId: direct.requestId,
        contextValues: direct.contextValues,
        answered: direct.answered,
        failed: direct.failed,
      }),
    );
  }
  return { health };
}

/** Copies the headers hooks set (request id, CORS), which live on the reply until it is sent, to the raw response. */
function copyHeaders(reply: FastifyReply): void {
  for (const [key, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) reply.raw.setHeader(key, value);
  }
}

function registerHandler(scope: FastifyInstance, uHandler: UniversalHandler, options: RpcOptions): void {
  const handle = withGrpcWebText(uHandler);
  const kindOf = (req: FastifyRequest) =>
    rpcKindOf({ method: req.method, path: uHandler.requestPath, query: new URLSearchParams(req.url.split("?")[1] ?? ""), headers: req.headers });
  scope.all(uHandler.requestPath, async (req, reply) => {
    try {
      const uReq = universalRequestOf(req.raw, reply.raw, options.contextValues?.(req));
      let uRes;
      if (uReq instanceof ConnectError) {
        // Refused before the handler (a malformed authority): in the protocol's answer, else in the envelope.
        const kind = kindOf(req);
        if (kind === undefined) return options.sendError(reply, req, fromConnectError(uReq));
        uRes = errorResponse(kind, uReq);
      } else {
        uRes = await handle(uReq);
      }
      copyHeaders(reply);
      await universalResponseToNodeResponse(uRes, reply.raw);
    } catch (err) {
      if (ConnectError.from(err).code === Code.Aborted) return;
      req.log.error({ err, rpc: `${uHandler.service.typeName}/${uHandler.method.name}` }, "RPC handler failed");
      // A bug (Connect's handlers answer errors themselves): `internal` if nothing was sent yet, else the connection or stream ended.
      if (reply.raw.headersSent) {
        reply.raw.destroy();
        return;
      }
      const kind = kindOf(req);
      const internal = new ConnectError("internal error", Code.Internal);
      if (kind === undefined) return options.sendError(reply, req, fromConnectError(internal));
      try {
        // The request id with it, to find the logged error; CORS, for a browser to read it.
        copyHeaders(reply);
        await universalResponseToNodeResponse(errorResponse(kind, internal), reply.raw);
      } catch {
        // The client went away meanwhile.
      }
    }
  });
}

/**
 * CORS preflights and headers on RPC paths, and UNIMPLEMENTED for RPC calls
 * no route took. A root hook, so that it also sees requests no route matched.
 */
function registerConventions(app: FastifyInstance, router: ConnectRouter, options: RpcOptions): void {
  const paths = new Map<string, readonly string[]>();
  for (const h of router.handlers) paths.set(h.requestPath, h.allowedMethods);
  const knownServices = () => new Set(router.handlers.map((h) => h.service.typeName));
  const policy = createCorsPolicy(options.corsOrigins);

  const conventions = async (req: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    const routed = req.routeOptions.url;
    const queryAt = req.url.indexOf("?");
    const path = queryAt < 0 ? req.url : req.url.slice(0, queryAt);
    const kind =
      routed === undefined
        ? rpcKindOf({ method: req.method, path, query: new URLSearchParams(queryAt < 0 ? "" : req.url.slice(queryAt + 1)), headers: req.headers })
        : undefined;
    // An RPC path: one we serve, one shaped like an RPC, or whatever path an RPC call was sent to.
    const rpcPath = routed !== undefined ? paths.has(routed) : kind !== undefined || isRpcPath(path);
    if (!rpcPath) return;

    const origin = req.headers.origin;
    if (req.method === "OPTIONS" && origin !== undefined && req.headers["access-control-request-method"] !== undefined) {
      if (!policy.allows(origin)) {
        const allow = (routed !== undefined ? paths.get(routed) : undefined) ?? ["POST"];
        return options.sendError(
          reply,
          req,
          new GatewayError(405, `method OPTIONS is not allowed on this path: cross-origin calls from ${origin.slice(0, 200)} are not allowed (ERPLINK_CORS_ORIGINS)`, {
            headers: { allow: allow.join(", ") },
          }),
        );
      }
      return reply.code(204).headers(policy.preflightHeaders(origin)).send();
    }
    if (policy.enabled) {
      if (origin !== undefined && policy.allows(origin)) reply.headers(policy.responseHeaders(origin));
      else reply.header("vary", "Origin");
    }
    if (kind === undefined) return;
    const uRes = unimplementedResponse(kind, unimplementedMessage(path, knownServices()));
    reply.hijack();
    for (const [key, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) reply.raw.setHeader(key, value);
    }
    try {
      await universalResponseToNodeResponse(uRes, reply.raw);
    } catch {
      // The client went away: nothing to answer.
    }
    return undefined;
  };
  // Every request passes here: one a route took that is not an RPC path (the
  // data path, /admin) leaves at once, without the promise an async hook
  // costs (bench/README.md); the others return the promise, which Fastify awaits
  // as it does an async hook's.
  app.addHook("onRequest", (req, reply, done) => {
    const routed = req.routeOptions.url;
    if (routed !== undefined && !paths.has(routed)) return done();
    return conventions(req, reply);
  });
}

/** Masks anything but a ConnectError as `internal`, logging the cause (the services' error interceptor does this for theirs). */
function maskUnexpected(app: FastifyInstance): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      if (err instanceof ConnectError) throw err;
      app.log.error({ err, rpc: `${req.service.typeName}/${req.method.name}` }, "RPC failed");
      throw new ConnectError("internal error", Code.Internal);
    }
  };
}
