/**
 * The Fastify gateway: the `/admin` REST facade built from the route table,
 * the same services for gRPC, gRPC-Web and Connect clients, the OpenAPI
 * document and reference page, and the health endpoints. It reaches the
 * services only through a Connect transport.
 */
import { randomUUID } from "node:crypto";
import http2 from "node:http2";
import type net from "node:net";
import {
  ScalarType,
  create,
  fromJson,
  toJson,
  type DescMethodUnary,
  type JsonObject,
  type JsonValue,
} from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { ConnectError, createContextValues, type ConnectRouter, type Interceptor, type Transport } from "@connectrpc/connect";
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerFactory,
} from "fastify";
import type { Metrics } from "../metrics/port.js";
import { PRINCIPAL_METADATA, kCallFacts, kRequestId, type CallFacts } from "../schema/call-facts.js";
import type { DiagnosticsPort } from "../schema/diagnostics.js";
import { ETAG_FIELD, ETAG_MISMATCH_METADATA, parseIfMatch, shownEtag } from "../schema/etag.js";
import { Authorization as EnvoyAuthorization } from "../gen/envoy/service/auth/v3/external_auth_pb.js";
import { apiReferenceHeaders, registerApiReference } from "./api-reference.js";
import { onClientError } from "./client-errors.js";
import { dashboardHeaders, registerDashboard } from "./dashboard.js";
import { createDiagnostics } from "./data/diagnostics.js";
import { brokenAnswerError } from "./data/forwarder.js";
import { createDataResources } from "./data/resources.js";
import { registerDataRoutes, type DataKey, type DataLogFacts, type DataPort } from "./data/route.js";
import { CLIENT_CLOSED_REQUEST, CODE_TABLE, GatewayError, fromConnectError, type ErrorDetail, type Outcome } from "./errors.js";
import { createExtAuthzService, type ExtAuthzDecision } from "./ext-authz/service.js";
import { bodySchema as restBodySchema } from "./json-schema.js";
import { createRequestRecorder, createRpcMetricsInterceptor, registerMetricsEndpoint, type MetricsEndpoint } from "./metrics.js";
import { buildOpenApi } from "./openapi.js";
import { fromRestJson, toRestJson } from "./rest-json.js";
import { ROUTES, answersEtag, fastifyPath, type RestRoute } from "./route-table.js";
import { registerRpc } from "./rpc/plugin.js";
import { adminCredential, clearedSessionCookies, ownOriginOf, sessionCookies, type AdminCredential } from "./session-cookies.js";
import type { RequestHandler } from "./server.js";

/** Options of {@link createGateway}. */
export interface GatewayOptions {
  /** Transport to the services (in process: `createRouterTransport`). */
  readonly transport: Transport;
  /** The services to serve to gRPC, gRPC-Web and Connect clients on the same port. */
  readonly connect: {
    readonly routes: (router: ConnectRouter) => void;
    readonly interceptors: readonly Interceptor[];
  };
  /**
   * Admits an `/admin` request from its `Authorization` header before the
   * body is read (so a bad token is a 401 whatever the body): authenticates
   * and counts the call against the caller's admin budget. Resolves to the
   * rate-limit headers for the response; throws the services' ConnectError
   * (`unauthenticated`, `permission_denied`, `resource_exhausted` with the
   * headers in its metadata) otherwise.
   */
  readonly admit: (
    authorization: string | undefined,
  ) => Promise<{ readonly headers: Readonly<Record<string, string>>; readonly principalId: string; readonly sessionId?: string | undefined }>;
  /**
   * Receives one entry per `/admin` request, admin RPC call and data
   * request, when its exchange ends, answered or cut short (queued, never
   * awaited).
   */
  readonly record?: (entry: AccessLogEntry) => void;
  /** Resolves when the store answers; rejects otherwise (drives `/readyz`). */
  readonly ready: () => Promise<void>;
  /** The OData data path's port into the services; without it `/odata` is not routed. */
  readonly data?: DataPort<DataKey>;
  /** Upstream answer timeout of the data path (ms). */
  readonly upstreamTimeoutMs?: number;
  /** How long a whole upstream answer may take (ms; default 10 minutes). */
  readonly upstreamTotalTimeoutMs?: number;
  /** Most requests in flight to one instance's back end (default 64). */
  readonly upstreamConnections?: number;
  /** Whether the data path caches analyses of bodiless reads (default true; false only for differential tests). */
  readonly analysisCache?: boolean;
  /**
   * The secret of the CSRF tokens the data path hands OData clients
   * (`./data/client-csrf.ts`): 32 bytes, the same in every process; a random
   * one when unset (tokens then hold in this process only).
   */
  readonly clientCsrfSecret?: Buffer | undefined;
  /**
   * Receives the data path's diagnostics (explain, catalog, connection test),
   * built over the data path's own stages and caches, for the composition
   * root to bind into the services; called once, when `data` is given.
   */
  readonly bindDiagnostics?: (port: DiagnosticsPort<DataKey>) => void;
  /**
   * Envoy external authorization (`envoy.service.auth.v3.Authorization`,
   * served with `data`): `injectionToken` is `ERPLINK_EXT_AUTHZ_TOKEN`, the
   * bearer token a check needs to get the back end's credentials (unset:
   * never); `onDecision` is called once per decision (for metrics).
   */
  readonly extAuthz?: {
    readonly injectionToken?: string | undefined;
    readonly onDecision?: ((decision: ExtAuthzDecision) => void) | undefined;
  };
  /** Extra facts `/healthz` reports (the request log's queue and drops). */
  readonly health?: () => Record<string, unknown>;
  /** The logger (a pino instance), or false for none. */
  readonly logger: FastifyBaseLogger | false;
  /**
   * Whether each request's `request` line (method, URL, status, duration) is
   * written at `info`; otherwise it is written at `debug` (and costs nothing
   * at `info`). The request log in the store records every request either way.
   */
  readonly accessLog?: boolean;
  /** Largest request body, in bytes. */
  readonly bodyLimit: number;
  /**
   * Creates the listening server around Fastify's handler (one port for
   * HTTP/1.1 and h2c); omitted in `inject()` tests.
   */
  readonly serverFactory?: (handler: RequestHandler) => net.Server;
  /** Public base URL for the OpenAPI `servers` entry, if known (also erplink's origin for cookie sessions). */
  readonly publicUrl?: string;
  /** The current time (for session cookie lifetimes); tests inject theirs. */
  readonly clock?: () => Date;
  /** Where the gateway reports requests, RPC calls and the data path's events (default: nowhere). */
  readonly metrics?: Metrics;
  /** Serves `GET /metrics` when given (the exposition, and the token it needs, if any). */
  readonly metricsEndpoint?: MetricsEndpoint;
  /** Origins whose browser pages may call the RPC endpoints (CORS); none by default. */
  readonly corsOrigins?: readonly string[];
  /** How often the store is checked while gRPC health Watch streams are open (ms; default 2000). */
  readonly healthWatchIntervalMs?: number;
}

/** What the gateway reports of each request for the request log. */
export interface AccessLogEntry {
  readonly requestId: string;
  readonly timestamp: Date;
  /** `master`, a key id, or "" when no credential was recognised. */
  readonly apiKeyId: string;
  /** The session (`ses_…`) the request came through, or "". */
  readonly sessionId: string;
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly durationMs: number;
  readonly instance: string;
  readonly service: string;
  readonly accesses: readonly { readonly entity: string; readonly operation: string }[];
  readonly denialStep: string;
  readonly errorCode: string;
  /** The envelope's `error.message` of a failed request ("" otherwise), at most 1024 characters. */
  readonly errorMessage: string;
  readonly upstreamStatus: number;
  readonly upstreamDurationMs: number;
  readonly clientIp: string;
  readonly userAgent: string;
  /** Data requests: the HTTP method sent to the back end; "" when nothing was forwarded. */
  readonly upstreamMethod: string;
  /** Data requests: the full URL sent to the back end (origin, path, query); "" when nothing was forwarded. */
  readonly upstreamUrl: string;
  /** Bytes of the answer's body sent to the client: all of it when answered in full, else up to where the exchange ended. */
  readonly responseBytes: number;
}

/** What the request log needs to know of a request beyond Fastify's own (one per gateway). */
interface RequestFacts {
  /** Who each admitted (or recognised, then refused) request was. */
  readonly principals: WeakMap<object, string>;
  /** The session each admitted request came through. */
  readonly sessions: WeakMap<object, string>;
  /** The envelope code each failed request was answered with. */
  readonly errorCodes: WeakMap<object, string>;
  /** The envelope message each failed request was answered with. */
  readonly errorMessages: WeakMap<object, string>;
}

/** Type name prefix of the admin services (`erplink.admin.v1.SystemService`). */
const ADMIN_SERVICE_PREFIX = "erplink.admin.";
/** Path prefix of the admin services' RPCs (`/erplink.admin.v1.SystemService/…`). */
const ADMIN_RPC_PREFIX = `/${ADMIN_SERVICE_PREFIX}`;

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A request's id: a well-formed incoming `X-Request-Id`, else a new one. */
function requestIdOf(incoming: string | string[] | undefined): string {
  return typeof incoming === "string" && REQUEST_ID.test(incoming) ? incoming : `req_${randomUUID()}`;
}

/** Longest path parameter the router takes; longer ones are 414 `URI_TOO_LONG`. */
const MAX_PARAM_LENGTH = 256;
/** Most field details one error lists (as the services do). */
const MAX_DETAILS = 100;
/** The longest error message kept in a request-log entry. */
const MAX_LOGGED_MESSAGE = 1024;
const JSON_MEDIA_TYPE = /^application\/json\s*(;|$)/i;
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

/** A real calendar date-time (no 30 February) whose instant lies within 0001..9999 UTC. */
function isRfc3339(value: string): boolean {
  const m = RFC3339.exec(value);
  if (m === null) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const daysInMonth = new Date(Date.UTC(2000, month, 0)).getUTCDate() - (month === 2 && !isLeap(year) ? 1 : 0);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59) return false;
  const ms = Date.parse(value);
  return ms >= -62_135_596_800_000 && ms <= 253_402_300_799_000;
}

function isLeap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** Whether a (pino) logger writes `debug` lines. */
function debugEnabled(log: FastifyBaseLogger): boolean {
  const pinoLog = log as FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean };
  return pinoLog.isLevelEnabled?.("debug") ?? false;
}

/** Builds the gateway. Call `listen()` on the result to serve. */
export async function createGateway(options: GatewayOptions): Promise<FastifyInstance> {
  const facts: RequestFacts = { principals: new WeakMap(), sessions: new WeakMap(), errorCodes: new WeakMap(), errorMessages: new WeakMap() };
  const sendError = (reply: FastifyReply, req: FastifyRequest, e: GatewayError) => sendErrorOf(facts, reply, req, e);

  const app = Fastify({
    ...(options.logger === false ? { logger: false } : { loggerInstance: options.logger }),
    bodyLimit: options.bodyLimit,
    // Reuse a well-formed incoming X-Request-Id; otherwise make one.
    genReqId: (req) => requestIdOf(req.headers["x-request-id"]),
    // At most one access-log line per request, written when its exchange ends (exchangeEnded below).
    logController: new LogController({ disableRequestLogging: true }),
    forceCloseConnections: options.serverFactory ? "idle" : undefined,
    // While draining, requests on open connections are still served (with
    // `Connection: close`), not refused with a bare 503.
    return503OnClosing: false,
    ajv: {
      customOptions: { allErrors: true, coerceTypes: false, removeAdditional: false, useDefaults: false },
    },
    ...(options.serverFactory ? { serverFactory: options.serverFactory as unknown as FastifyServerFactory } : {}),
    // Errors before routing (a path that is not valid percent-encoding) are answered in the envelope too.
    frameworkErrors: (err, req, reply) => {
      // No hook has run (nor will onSend): the request id, no-store (whatever the path) and page headers are set here.
      reply.header("x-request-id", req.id).header("cache-control", "no-store");
      reply.headers({ ...dashboardHeaders(req.url), ...apiReferenceHeaders(req.url) });
      sendError(
        reply,
        req,
        err.code === "FST_ERR_BAD_URL"
          ? new GatewayError(400, "the request path is not valid percent-encoding")
          : err.code === "FST_ERR_MAX_PARAM_LENGTH"
            ? new GatewayError(414, `a path segment is longer than ${MAX_PARAM_LENGTH} characters, more than any id or name`)
            : toGatewayError(err),
      );
    },
    // Longer than any id (30 characters) or name (service names: 200) a path holds.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Requests Node's parser refuses, answered in the envelope too (the
    // one-port server passes its HTTP/1.1 server's clientError events on).
    clientErrorHandler: onClientError,
  });

  // The root hooks take callbacks rather than promises: they run on every
  // request, and a promise per hook is measurable there (bench/README.md).
  app.addHook("onRequest", (req, reply, done) => {
    reply.header("x-request-id", req.id);
    // The one place each exchange is reported (request line, metrics, request
    // log): when it ends, however it ends, answered in full or cut short
    // (Fastify's onResponse runs only after an HTTP/1.1 answer has finished,
    // and after every HTTP/2 stream, reset or not). Over HTTP/2 the stream's
    // close rather than the compat response's: for a HEAD request, Node's
    // compat response emits it only once it has been ended, which an
    // exchange cut short need never be.
    const raw = reply.raw as { stream?: http2.ServerHttp2Stream } & NodeJS.EventEmitter;
    (req.raw.httpVersionMajor === 2 && raw.stream !== undefined ? raw.stream : raw).on("close", () => exchangeClosed(req, reply));
    done();
  });
  // While draining, finish in-flight HTTP/1.1 requests with `Connection:
  // close`, so their connections end after the response and close() need not
  // wait for keep-alive timeouts. (HTTP/2 sessions get GOAWAY instead.)
  let draining = false;
  app.addHook("preClose", async () => {
    draining = true;
  });
  // One root onSend hook for what every answer may need (Fastify runs each
  // root hook on every request: one rather than three).
  app.addHook("onSend", (req, reply, _payload, done) => {
    if (draining && req.raw.httpVersionMajor === 1) reply.header("connection", "close");
    // Admin answers hold configuration, secrets shown once and session tokens: never cached.
    if (isAdminRequest(req)) reply.header("cache-control", "no-store");
    // The dashboard's and the API reference's page policies, on their routes' answers and on the 404s and 405s below them.
    const page = dashboardHeaders(req.url) ?? apiReferenceHeaders(req.url);
    if (page !== undefined) reply.headers(page);
    done();
  });
  // At most one access-log line per request, and one request-log entry per
  // /admin and data request, both when the exchange ends.
  const record = options.record;
  // Calls of the admin services over gRPC, gRPC-Web and Connect: the
  // services report caller and outcome into these (see src/schema/call-facts.ts).
  const callFacts = new WeakMap<object, CallFacts>();
  const recordMetrics = options.metrics === undefined ? undefined : createRequestRecorder(options.metrics);
  const accessLog = options.accessLog === true;
  /** The level of an answered request's `request` line: info with the access log on, else debug if written at all. */
  const requestLineLevel = (log: FastifyBaseLogger): "info" | "debug" | undefined => (accessLog ? "info" : debugEnabled(log) ? "debug" : undefined);
  /** Data requests whose exchange ended while their handler still ran: reported when it returns. */
  const endedWhileHandled = new WeakSet<object>();
  function exchangeClosed(req: FastifyRequest, reply: FastifyReply): void {
    const data = dataFacts.get(req);
    // Reported once the handler has returned (with what was forwarded and how the back end answered).
    if (data?.handling === true) endedWhileHandled.add(req);
    else exchangeEnded(req, reply, data);
  }
  function dataHandled(req: FastifyRequest, reply: FastifyReply): void {
    const data = dataFacts.get(req);
    if (data !== undefined) data.handling = false;
    if (endedWhileHandled.delete(req)) exchangeEnded(req, reply, data);
  }
  function exchangeEnded(req: FastifyRequest, reply: FastifyReply, data: DataLogFacts | undefined): void {
    const ms = reply.elapsedTime;
    // The request line and metrics count the status sent (as the h2c shortcut's calls do, src/gateway/rpc/direct.ts).
    const level = requestLineLevel(req.log);
    if (level !== undefined) req.log[level]({ method: req.method, url: req.url, status: reply.statusCode, ms: Math.round(ms) }, "request");
    // Metrics: every request by route class; a data request's record stage too.
    recordMetrics?.({ route: req.routeOptions.url, method: req.method, status: reply.statusCode, seconds: ms / 1000 }, data);
    const call = callFacts.get(req);
    // An RPC's outcome is its code, whatever HTTP status carried it (gRPC answers 200).
    let status = call?.code !== undefined ? CODE_TABLE[call.code].status : reply.statusCode;
    let cutShort: Outcome | undefined;
    if (!answeredInFull(req, reply)) {
      // The request log says how it ended, whichever came first: the back end's answer failed midway, or the client went away.
      cutShort = data?.answerFailure ?? CLIENT_CLOSED_REQUEST;
      status = cutShort.status;
    }
    if (call !== undefined) {
      const failed = call.code === undefined ? undefined : CODE_TABLE[call.code];
      facts.principals.set(req, call.principalId);
      if (call.sessionId !== undefined && call.sessionId !== "") facts.sessions.set(req, call.sessionId);
      if (failed !== undefined) facts.errorCodes.set(req, failed.code);
    }
    const isAdmin = isAdminRequest(req);
    // A data request answered before its route's handler ran (refused while its body was read: over
    // the limit) has no data facts, and is logged all the same.
    if (record !== undefined && (data !== undefined || isAdmin || call !== undefined || isDataRoute(req))) {
      const ua = req.headers["user-agent"];
      // A data request that ended before its handler ran (its body still arriving) is still found by its instance and service.
      const named = data === undefined && isDataRoute(req) ? (req.params as { instance?: string; service?: string }) : undefined;
      record({
        requestId: req.id,
        timestamp: new Date(Date.now() - ms),
        apiKeyId: data?.apiKeyId ?? facts.principals.get(req) ?? "",
        sessionId: facts.sessions.get(req) ?? "",
        method: req.method,
        path: req.url,
        status,
        durationMs: Math.round(ms * 1000) / 1000,
        instance: data?.instance ?? named?.instance ?? "",
        service: data?.service ?? named?.service ?? "",
        accesses: data?.accesses ?? [],
        denialStep: data?.denialStep ?? "",
        errorCode: cutShort?.code ?? facts.errorCodes.get(req) ?? "",
        errorMessage: (cutShort?.message ?? facts.errorMessages.get(req) ?? call?.message ?? "").slice(0, MAX_LOGGED_MESSAGE),
        upstreamStatus: data?.upstreamStatus ?? 0,
        upstreamDurationMs: data?.upstreamDurationMs ?? 0,
        clientIp: req.ip,
        userAgent: typeof ua === "string" ? ua.slice(0, 512) : "",
        // Admin requests and RPC calls forward nothing.
        upstreamMethod: data?.upstreamMethod ?? "",
        upstreamUrl: data?.upstreamUrl ?? "",
        // A streamed answer as far as it went; erplink's own (whole or not sent at all) by its length.
        responseBytes: data?.answerBytes ?? (cutShort === undefined && req.method !== "HEAD" ? contentLengthOf(reply) : 0),
      });
    }
  }

  app.setErrorHandler((err: unknown, req, reply) => {
    // A request no route matched can fail before the not-found handler (a
    // QUERY request without a Content-Type, a body too large): it is
    // answered as an unrouted request all the same, 405 or 404.
    if (req.is404) return sendError(reply, req, unrouted(req));
    const e = toGatewayError(err);
    // A service's internal error was logged with its cause (and this request
    // id) by the services' error interceptor; log only the gateway's own.
    if (e.status === 500 && !(err instanceof ConnectError)) req.log.error({ err }, "request failed");
    return sendError(reply, req, e);
  });
  // Before authentication, as for paths that do not exist: which methods a
  // path takes is no secret (the OpenAPI document lists them).
  app.setNotFoundHandler((req, reply) => sendError(reply, req, unrouted(req)));

  for (const route of ROUTES) registerRoute(app, route, options, facts);
  const dataFacts = new WeakMap<object, DataLogFacts>();
  /** Connect services of the gateway's own (over the data path), served beside the services' routes. */
  let gatewayRoutes: ((router: ConnectRouter) => void) | undefined;
  if (options.data !== undefined) {
    // OData V2 updates with MERGE.
    app.addHttpMethod("MERGE", { hasBody: true });
    // Created once, shared by the data routes and the diagnostics.
    const resources = createDataResources({
      upstreamTimeoutMs: options.upstreamTimeoutMs ?? 30_000,
      upstreamTotalTimeoutMs: options.upstreamTotalTimeoutMs,
      upstreamConnections: options.upstreamConnections,
      metadataTtlMs: 5 * 60_000,
      metrics: options.metrics?.data,
      analysisCache: options.analysisCache,
      clientCsrfSecret: options.clientCsrfSecret,
    });
    options.metrics?.watch({ metadataCache: () => resources.metadata.size });
    app.addHook("onClose", async () => resources.close());
    await registerDataRoutes(app, {
      port: options.data,
      resources,
      facts: dataFacts,
      publicUrl: options.publicUrl,
      handled: dataHandled,
    });
    options.bindDiagnostics?.(createDiagnostics({ port: options.data, resources, publicUrl: options.publicUrl }));
    // Envoy's ext_authz Check, decided by the data path's stages over the same resources.
    const extAuthz = createExtAuthzService({
      port: options.data,
      resources,
      record: options.record,
      injectionToken: options.extAuthz?.injectionToken,
      onDecision: options.extAuthz?.onDecision,
    });
    gatewayRoutes = (router) => router.service(EnvoyAuthorization, extAuthz);
  }

  const openapi = buildOpenApi(ROUTES, { serverUrl: options.publicUrl });
  // The reference page shares the dashboard's origin: strict headers on every answer (src/gateway/api-reference.ts).
  await registerApiReference(app, openapi);

  // The dashboard (src/dashboard), a client of /admin like any other.
  await registerDashboard(app);

  if (options.metricsEndpoint !== undefined) registerMetricsEndpoint(app, options.metricsEndpoint);
  app.get("/healthz", async (req) => ({ data: { status: "ok", ...options.health?.() }, meta: { requestId: req.id } }));
  app.get("/readyz", async (req, reply) => {
    try {
      await options.ready();
      return { data: { status: "ready" }, meta: { requestId: req.id } };
    } catch {
      return sendError(reply, req, new GatewayError(503, "the store is unavailable"));
    }
  });

  // gRPC, gRPC-Web (binary and text) and Connect, with health, reflection,
  // UNIMPLEMENTED for unknown methods and CORS for listed origins (src/gateway/rpc).
  const connectRoutes = options.connect.routes;
  await registerRpc(app, {
    routes: (router) => {
      connectRoutes(router);
      gatewayRoutes?.(router);
    },
    // The metrics interceptor outermost: calls refused by the others count too (health and reflection calls as well).
    observers: options.metrics ? [createRpcMetricsInterceptor(options.metrics.rpc)] : [],
    interceptors: [...options.connect.interceptors],
    ready: options.ready,
    corsOrigins: options.corsOrigins ?? [],
    healthWatchIntervalMs: options.healthWatchIntervalMs,
    sendError,
    // The same body limit as REST, for every protocol.
    readMaxBytes: options.bodyLimit,
    // gRPC calls over h2c of the other services (Authorize, Envoy's Check,
    // health, reflection) need none of the above: served before Fastify
    // routes them, with the same request id, metrics and access log line.
    direct: {
      takes: (service) => !service.startsWith(ADMIN_SERVICE_PREFIX),
      requestId: requestIdOf,
      contextValues: (id) => {
        const values = createContextValues();
        values.set(kRequestId, id);
        return values;
      },
      answered: (call) => {
        // The reqId field in front, where Fastify's request logger writes it.
        const level = requestLineLevel(app.log);
        if (level !== undefined) app.log[level]({ reqId: call.id, method: call.method, url: call.url, status: call.status, ms: Math.round(call.ms) }, "request");
        recordMetrics?.({ route: call.route, method: call.method, status: call.status, seconds: call.ms / 1000 }, undefined);
      },
      failed: (id, rpc, err) => app.log.error({ reqId: id, err, rpc }, "RPC handler failed"),
    },
    contextValues: (req) => {
      const values = createContextValues();
      // The services log it with an internal error, and the audit trail records it.
      values.set(kRequestId, req.id);
      // Admin services only: Authorize is the hot path of internal callers, not an admin request.
      if (routedPath(req).startsWith(ADMIN_RPC_PREFIX)) {
        const call: CallFacts = { principalId: "", code: undefined };
        callFacts.set(req, call);
        values.set(kCallFacts, call);
      }
      return values;
    },
  });
  return app;
}

/**
 * The path a request was routed by: its route's (the router decodes
 * `/%61dmin/…` to `/admin/…`), or, unrouted, the path it sent.
 */
function routedPath(req: FastifyRequest): string {
  return req.routeOptions.url ?? req.url;
}

/** Whether a request was routed to the OData data path (by its route, not the path it sent). */
function isDataRoute(req: FastifyRequest): boolean {
  return req.routeOptions.url?.startsWith("/odata/") === true;
}

const { NGHTTP2_NO_ERROR } = http2.constants;

/**
 * Whether an exchange's answer was handed over whole. HTTP/2: its stream
 * finished writing and closed without an error code (closing a stream with
 * a code, as the data path does when the back end's answer breaks off, also
 * finishes its writable side). HTTP/1.1: the response finished writing; an
 * in-process `inject()` answer ends on a stand-in socket that is written on
 * the next turn, so one ended on a socket still open counts too (over a
 * real connection, one that closed with the answer's end unwritten does not).
 */
function answeredInFull(req: FastifyRequest, reply: FastifyReply): boolean {
  const raw = reply.raw;
  if (req.raw.httpVersionMajor === 2) {
    const stream = (raw as unknown as http2.Http2ServerResponse).stream;
    return stream.writableFinished && (stream.rstCode ?? NGHTTP2_NO_ERROR) === NGHTTP2_NO_ERROR;
  }
  return raw.writableFinished || (raw.writableEnded && raw.socket?.destroyed === false);
}

/** The Content-Length of erplink's own answer (0 when it has none). */
function contentLengthOf(reply: FastifyReply): number {
  const length = Number(reply.getHeader("content-length"));
  return Number.isSafeInteger(length) && length > 0 ? length : 0;
}

/** Whether a request is an `/admin` request (answered no-store, and logged). */
function isAdminRequest(req: FastifyRequest): boolean {
  const path = routedPath(req);
  return path === "/admin" || path.startsWith("/admin/") || path.startsWith("/admin?");
}

/** Sends an error in the envelope. */
function sendErrorOf(facts: RequestFacts, reply: FastifyReply, req: FastifyRequest, e: GatewayError): FastifyReply {
  facts.errorCodes.set(req, e.code);
  facts.errorMessages.set(req, e.message);
  if (e.headers) reply.headers(e.headers);
  const error: Record<string, unknown> = { code: e.code, message: e.message, requestId: req.id };
  if (e.details && e.details.length > 0) error.details = e.details;
  return reply.code(e.status).type("application/json; charset=utf-8").send({ error });
}

/** Maps anything thrown while handling a request to the gateway's error. */
function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof ConnectError) return fromConnectError(err);
  // A back end's answer that failed before its first byte was passed on (the data path's forward stage).
  const broken = brokenAnswerError(err);
  if (broken !== undefined) return broken;
  const fe = err as FastifyError & { validation?: AjvError[] };
  if (Array.isArray(fe.validation)) {
    const all = fe.validation;
    const details = all.slice(0, MAX_DETAILS).map(ajvDetail);
    const message =
      all.length === 1
        ? `${details[0]!.field}: ${details[0]!.message}`
        : `${all.length} fields are invalid${all.length > MAX_DETAILS ? ` (the first ${MAX_DETAILS} are listed)` : ""}`;
    return new GatewayError(400, message, { details });
  }
  switch (fe.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new GatewayError(413, "request body is larger than the limit");
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new GatewayError(415, "request body must be application/json");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new GatewayError(400, "request body is empty; send a JSON object");
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return new GatewayError(400, "request body is not valid JSON");
  }
  if (err instanceof SyntaxError || fe.code === "FST_ERR_CTP_INVALID_CONTENT_LENGTH") {
    return new GatewayError(400, "request body is not valid JSON");
  }
  if (typeof fe.statusCode === "number" && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new GatewayError(fe.statusCode, "the request is malformed");
  }
  return new GatewayError(500, "internal error");
}

interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** Turns one ajv error into a field detail with a plain message. */
function ajvDetail(e: AjvError): ErrorDetail {
  const path = e.instancePath.split("/").slice(1).map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~")).join(".");
  switch (e.keyword) {
    case "additionalProperties":
      return { field: path ? `${path}.${String(e.params.additionalProperty)}` : String(e.params.additionalProperty), message: "is not a known field" };
    case "type": {
      const types = String(e.params.type).split(",").filter((t) => t !== "null");
      const article = (t: string) => (t === "object" || t === "integer" || t === "array" ? "an" : "a");
      return { field: path || "body", message: `must be ${types.map((t) => `${article(t)} ${t}`).join(" or ")}` };
    }
    case "minProperties":
      return { field: path || "body", message: "must name at least one field to change" };
    case "not":
      // The only `not` of the schemas: a patch that holds its etag and nothing else.
      return { field: path || "body", message: "must name at least one field to change besides etag" };
    case "format":
      return { field: path || "body", message: `must be a valid ${String(e.params.format)}` };
    default:
      return { field: path || "body", message: e.message ?? "is invalid" };
  }
}

/** Compiled route patterns, for telling 405 from 404. */
const PATTERNS = ROUTES.map((r) => ({
  method: r.method,
  re: new RegExp(`^${r.path.replace(/\{[^}]+\}/g, "[^/]+")}$`),
}));

/** The answer to a request no route matched: 405 with `Allow` when the path takes other methods, else 404. */
function unrouted(req: FastifyRequest): GatewayError {
  const allowed = allowedMethods(req.url);
  if (allowed.length > 0) {
    return new GatewayError(405, `method ${req.method} is not allowed on this path`, { headers: { allow: allowed.join(", ") } });
  }
  const path = req.url.split("?")[0]!;
  const shown = path.length > 200 ? `${path.slice(0, 200)}…` : path;
  return new GatewayError(404, `no route for ${req.method} ${shown}`);
}

function allowedMethods(url: string): string[] {
  const path = url.split("?")[0]!;
  const methods = new Set<string>(PATTERNS.filter((p) => p.re.test(path)).map((p) => p.method));
  if (methods.has("GET")) methods.add("HEAD");
  return [...methods];
}

/** Whether a request announces a body (a non-zero length, or a chunked one). */
function hasBody(req: FastifyRequest): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

/** Sets a dot-path (`system.id`) in a plain object. */
function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split(".");
  let obj = target;
  for (const key of keys.slice(0, -1)) {
    obj = (obj[key] ??= {}) as Record<string, unknown>;
  }
  obj[keys[keys.length - 1]!] = value;
}

/** The request's `If-Match` field value (several fields joined as one list), if any. */
function ifMatchOf(req: FastifyRequest): string | undefined {
  const value = req.headers["if-match"] as string | string[] | undefined;
  return Array.isArray(value) ? value.join(", ") : value;
}

/**
 * The etag a conditional write (PATCH, DELETE) hands to its service, which
 * compares it with the resource's in the write itself: the body's `etag`
 * (`given`, "" for none) and `If-Match` must both hold. Without `If-Match`,
 * or with `*` (any current resource: the service answers 404 for none), the
 * body's (none: unconditional). With a list, the strong tags (RFC 9110
 * §13.1.1: weak ones never match), only the body's when it gave one; one
 * candidate is sent as it is, else the resource's etag is read (404 when
 * there is none, since a precondition is not evaluated where the answer
 * would not be 2xx) and sent if it is a candidate, and otherwise the write
 * fails with 412. A field that is neither `*` nor a list of entity tags
 * matches nothing.
 */
async function writeCondition(
  ifMatch: string | undefined,
  given: string,
  current: () => Promise<string>,
  singular: string,
): Promise<{ readonly etag: string; readonly refusal?: GatewayError }> {
  if (ifMatch === undefined) return { etag: given };
  const parsed = parseIfMatch(ifMatch);
  if (parsed?.any === true) return { etag: given };
  const strong = [...new Set((parsed?.tags ?? []).filter((t) => !t.weak).map((t) => t.tag))];
  const candidates = given === "" ? strong : strong.filter((t) => t === given);
  if (candidates.length === 1) return { etag: candidates[0]! };
  const now = await current();
  if (candidates.includes(now)) return { etag: now };
  const shown = ifMatch.length > 200 ? `${ifMatch.slice(0, 200)}…` : ifMatch;
  const weak = parsed?.tags.some((t) => t.weak) === true ? "; weak tags never match" : "";
  // Refused, but by the service, with an etag no resource has: a request that is invalid as well gets its 400 first.
  return {
    etag: NO_RESOURCE_ETAG,
    refusal: new GatewayError(
      412,
      `the ${singular} changed since it was read (If-Match: ${shown}${given === "" ? "" : ` and etag ${shownEtag(given)}`}, now ${now}${weak}): read it again and retry`,
    ),
  };
}

/** An etag no resource has (not a revision's): the service refuses the write as stale, once it has checked the rest. */
const NO_RESOURCE_ETAG = '"none"';

function registerRoute(app: FastifyInstance, route: RestRoute, options: GatewayOptions, facts: RequestFacts): void {
  const method = route.rpc as DescMethodUnary;
  const bodySchema = route.body ? restBodySchema(method.input, route.body, false) : undefined;
  /** Fields of the request message read from the body beside `route.body.field`'s. */
  const bodyExtras = new Set(route.body?.extras ?? []);
  // Worked out once per route, not per request.
  const queryParams = (route.query ?? []).map((name) => {
    const field = method.input.fields.find((f) => f.name === name);
    const kind =
      field?.fieldKind === "scalar" && field.scalar === ScalarType.BOOL
        ? "boolean"
        : field?.fieldKind === "scalar" && field.scalar !== ScalarType.STRING
        ? "integer"
        : field?.fieldKind === "message" && field.message.typeName === "google.protobuf.Timestamp"
          ? "timestamp"
          : "string";
    return { name, kind };
  });
  const maskField = route.body?.patch ? method.input.fields.find((f) => f.name === route.body!.patch) : undefined;
  const sendsEtag = answersEtag(route);
  const publicOrigin = options.publicUrl === undefined ? undefined : new URL(options.publicUrl).origin;
  // `Location` URLs: under the public base URL (its path prefix included) when configured.
  const publicBase = options.publicUrl?.replace(/\/+$/, "");
  const clock = options.clock ?? (() => new Date());
  /** The credential each admitted request presented (its header, or its session cookie). */
  const credentials = new WeakMap<object, AdminCredential>();
  /** Requests to a route with an optional body that sent none. */
  const optionalBodyAbsent = new WeakSet<object>();

  app.route({
    method: route.method,
    url: fastifyPath(route.path),
    schema: bodySchema ? { body: bodySchema } : undefined,
    // Authenticate before the body is read: a bad token is a 401 whatever the body.
    onRequest: async (req, reply) => {
      // `/admin/systems//instances` or `/admin/systems/`: no such resource.
      for (const value of Object.values(req.params as Record<string, string>)) {
        if (value === "") throw new GatewayError(404, `no route for ${req.method} ${req.url.split("?")[0]}`);
      }
      let admission;
      try {
        const credential = adminCredential(req, ownOriginOf(req, publicOrigin));
        credentials.set(req, credential);
        admission = await options.admit(credential.authorization);
      } catch (err) {
        // A recognised caller refused (a data key, a spent budget) is still logged as itself.
        const who = err instanceof ConnectError ? err.metadata.get(PRINCIPAL_METADATA) : null;
        if (who !== null) facts.principals.set(req, who);
        throw err;
      }
      facts.principals.set(req, admission.principalId);
      if (admission.sessionId !== undefined) facts.sessions.set(req, admission.sessionId);
      // Set now, so that every later answer (errors included) carries them.
      reply.headers(admission.headers);
      if (route.body?.optional === true && req.headers["content-type"] === undefined && !hasBody(req)) {
        // An optional body left out: nothing to parse or validate.
        optionalBodyAbsent.add(req);
      } else if (route.body) {
        const type = req.headers["content-type"];
        if (type === undefined || !JSON_MEDIA_TYPE.test(type)) {
          throw new GatewayError(415, "request body must be application/json");
        }
      } else {
        // A route without a body ignores any: clients that always send
        // `Content-Type: application/json` must not get "empty body".
        delete req.headers["content-type"];
      }
    },
    // An optional body left out reads as an empty object (validated as one).
    preValidation: async (req) => {
      if (optionalBodyAbsent.has(req)) req.body = {};
    },
    handler: async (req, reply) => {
      const json: Record<string, unknown> = {};
      const details: ErrorDetail[] = [];
      if (route.body?.field === "*") {
        Object.assign(json, fromRestJson(route.body.schema, req.body as JsonValue));
      } else if (route.body && bodyExtras.size === 0) {
        json[route.body.field] = fromRestJson(route.body.schema, req.body as JsonValue);
      } else if (route.body) {
        // One JSON object, two destinations: the extras are the request's own fields.
        const entries = Object.entries(req.body as JsonObject);
        const own = Object.fromEntries(entries.filter(([name]) => !bodyExtras.has(name))) as JsonObject;
        json[route.body.field] = fromRestJson(route.body.schema, own);
        const extras = Object.fromEntries(entries.filter(([name]) => bodyExtras.has(name))) as JsonObject;
        Object.assign(json, fromRestJson(method.input, extras));
      }
      for (const { name, kind } of queryParams) {
        const value = (req.query as Record<string, unknown>)[name];
        if (value === undefined) continue;
        if (typeof value !== "string") {
          details.push({ field: name, message: "must be given once" });
        } else if (kind === "boolean") {
          if (value !== "true" && value !== "false") details.push({ field: name, message: "must be true or false" });
          else json[name] = value === "true";
        } else if (kind === "integer") {
          if (!/^\d{1,9}$/.test(value)) details.push({ field: name, message: "must be a non-negative integer" });
          else json[name] = Number(value);
        } else if (kind === "timestamp") {
          if (!isRfc3339(value)) {
            details.push({
              field: name,
              message: "must be an RFC 3339 date-time between 0001 and 9999, such as 2026-01-02T03:04:05Z",
            });
          } else json[name] = value;
        } else {
          json[name] = value;
        }
      }
      if (details.length > 0) {
        throw new GatewayError(400, details.length === 1 ? `${details[0]!.field}: ${details[0]!.message}` : `${details.length} parameters are invalid`, { details });
      }
      for (const [param, path] of Object.entries(route.params ?? {})) {
        setPath(json, path, (req.params as Record<string, string>)[param]);
      }
      const headers = new Headers({ "x-request-id": req.id });
      const credential = credentials.get(req);
      if (credential?.authorization) headers.set("authorization", credential.authorization);
      let refusal: GatewayError | undefined;
      if (route.conditional !== undefined) {
        // The etag the service compares, in the same write: the body's, If-Match's, or one both allow.
        const resource = route.body ? (json[route.body.field] as Record<string, unknown>) : json;
        const given = typeof resource[ETAG_FIELD] === "string" ? (resource[ETAG_FIELD] as string) : "";
        const id = (req.params as Record<string, string>).id!;
        const get = route.conditional.get as DescMethodUnary;
        const current = async () => {
          const res = await options.transport.unary(get, undefined, undefined, headers, fromJson(get.input, { id }), undefined);
          const out = toJson(get.output, res.message, { useProtoFieldName: true }) as Record<string, Record<string, JsonValue>>;
          return String(out[route.data]?.[ETAG_FIELD] ?? "");
        };
        const condition = await writeCondition(ifMatchOf(req), given, current, route.conditional.singular);
        resource[ETAG_FIELD] = condition.etag;
        refusal = condition.refusal;
      }
      let input;
      try {
        input = fromJson(method.input, json as JsonValue);
      } catch {
        throw new GatewayError(400, "the request does not match the resource's schema");
      }
      if (maskField !== undefined) {
        (input as unknown as Record<string, unknown>)[maskField.localName] = create(FieldMaskSchema, {
          // The etag is the change's condition, not a field it changes.
          paths: Object.keys(req.body as object).filter((name) => !bodyExtras.has(name) && !(route.conditional !== undefined && name === ETAG_FIELD)),
        });
      }
      let res;
      try {
        res = await options.transport.unary(method, undefined, undefined, headers, input, undefined);
      } catch (err) {
        // The service refused the etag that stands for If-Match's failure: If-Match's words.
        if (refusal !== undefined && err instanceof ConnectError && err.metadata.get(ETAG_MISMATCH_METADATA) !== null) throw refusal;
        throw err;
      }
      const out = toJson(method.output, res.message, { useProtoFieldName: true, alwaysEmitImplicit: true }) as Record<string, JsonValue>;
      const meta: Record<string, string> = { requestId: req.id };
      if (route.list && typeof out.next_page_token === "string" && out.next_page_token !== "") {
        meta.nextPageToken = out.next_page_token;
      }
      const data = toRestJson(route.resource, out[route.data]!) as JsonObject;
      for (const extra of route.merge ?? []) data[extra] = out[extra]!;
      if (route.sessionCookies === "set" && json.cookie === true) {
        // Browser mode: the token lives only in the HttpOnly cookie, out of reach of page scripts.
        const expires = new Date(String((data as Record<string, JsonValue>).expires_at));
        reply.header("set-cookie", sessionCookies(String(data.token), String(data.csrf_token), expires, clock()));
        data.token = "";
      } else if (route.sessionCookies === "clear" && credential?.viaCookie === true && data.id === facts.sessions.get(req)) {
        reply.header("set-cookie", clearedSessionCookies());
      }
      if (route.location !== undefined) {
        const path = route.location.replace("{id}", encodeURIComponent(String(data.id)));
        reply.header("location", publicBase === undefined ? path : `${publicBase}${path}`);
      }
      if (sendsEtag && typeof data[ETAG_FIELD] === "string" && data[ETAG_FIELD] !== "") reply.header("etag", data[ETAG_FIELD]);
      return reply.code(route.status).send({ data, meta });
    },
  });
}
