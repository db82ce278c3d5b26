/**
 * The gateway's side of the metrics: `GET /metrics` (Prometheus text
 * format, optionally behind a bearer token), the record of every answered
 * request by route class (from the route it matched, never its path), and
 * the interceptor that counts RPC calls by code. The gateway knows only the
 * metrics port (`../metrics/port.ts`); the exposition comes from the
 * composition root as a function.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import type { DataRequestFacts, HttpRoute, Metrics, RpcMetrics } from "../metrics/port.js";
import { GatewayError } from "./errors.js";
import { settled } from "../schema/settled.js";

/** How `GET /metrics` is served. */
export interface MetricsEndpoint {
  /** The bearer token scrapers must send; undefined: none is asked for. */
  readonly token?: string | undefined;
  /** The exposition of every metric, and its content type. */
  readonly scrape: () => Promise<{ readonly contentType: string; readonly body: string }>;
}

/** The path of the endpoint. */
export const METRICS_PATH = "/metrics";

/** Registers `GET /metrics` (and HEAD). */
export function registerMetricsEndpoint(app: FastifyInstance, endpoint: MetricsEndpoint): void {
  const expected = endpoint.token === undefined ? undefined : digest(endpoint.token);
  app.get(METRICS_PATH, async (req, reply) => {
    if (expected !== undefined) {
      const m = /^Bearer[ \t]+([!-~]+)[ \t]*$/i.exec(req.headers.authorization ?? "");
      // Digests of equal length, compared in constant time: neither the token nor its length leaks.
      if (m === null || !timingSafeEqual(digest(m[1]!), expected)) {
        throw new GatewayError(401, m === null ? "missing bearer token: send Authorization: Bearer <metrics token>" : "invalid metrics token", {
          headers: { "www-authenticate": 'Bearer realm="metrics"' },
        });
      }
    }
    const { contentType, body } = await endpoint.scrape();
    return reply.header("cache-control", "no-store").type(contentType).send(body);
  });
}

function digest(s: string): Buffer {
  return createHash("sha256").update(s, "utf8").digest();
}

/** A route pattern's class, and the RPC service it belongs to (or ""). */
interface RouteClass {
  readonly route: HttpRoute;
  readonly service: string;
}

/** An RPC's route: `/<package>.<Service>/<Method>`, literal (no parameters). */
const RPC_ROUTE = /^\/([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)\/[A-Za-z_][A-Za-z0-9_]*$/;

/** Classifies a route pattern (Fastify's `routeOptions.url`), or undefined when none matched. */
export function classifyRoute(pattern: string | undefined): RouteClass {
  if (pattern === undefined) return { route: "unrouted", service: "" };
  if (pattern === "/admin" || pattern.startsWith("/admin/")) return { route: "admin", service: "" };
  if (pattern.startsWith("/odata/")) return { route: "data", service: "" };
  if (pattern === "/healthz" || pattern === "/readyz") return { route: "health", service: "" };
  if (pattern === METRICS_PATH) return { route: "metrics", service: "" };
  if (pattern === "/dashboard" || pattern.startsWith("/dashboard/")) return { route: "dashboard", service: "" };
  if (pattern === "/api-reference" || pattern.startsWith("/api-reference/")) return { route: "api_reference", service: "" };
  const rpc = RPC_ROUTE.exec(pattern);
  if (rpc !== null) return { route: "rpc", service: rpc[1]! };
  return { route: "other", service: "" };
}

/** Most route patterns remembered (the app has a fixed set, far fewer). */
const MAX_PATTERNS = 4096;

/** One answered request, as the recorder reads it. */
export interface AnsweredRequest {
  /** The route pattern it matched (undefined: none). */
  readonly route: string | undefined;
  readonly method: string;
  readonly status: number;
  readonly seconds: number;
}

/**
 * Records one answered request, after its response: its route class, RPC
 * service, method, status and time, and for a data request its record
 * stage's facts. Route patterns are classified once each.
 */
export function createRequestRecorder(metrics: Metrics): (answered: AnsweredRequest, data: DataRequestFacts | undefined) => void {
  const classes = new Map<string, RouteClass>();
  return (answered, data) => {
    const pattern = answered.route;
    let cls = pattern === undefined ? undefined : classes.get(pattern);
    if (cls === undefined) {
      cls = classifyRoute(pattern);
      if (pattern !== undefined && classes.size < MAX_PATTERNS) classes.set(pattern, cls);
    }
    metrics.http.request(cls.route, cls.service, answered.method, answered.status, answered.seconds);
    if (data !== undefined) metrics.data.request(data, answered.status);
  };
}

/** Connect codes by number, in snake case (`invalid_argument`): the gRPC status names. */
const CODE_NAMES: readonly string[] = Array.from({ length: 17 }, (_, c) =>
  c === 0 ? "ok" : (Code[c] ?? "unknown").replace(/[A-Z]/g, (ch, i: number) => `${i === 0 ? "" : "_"}${ch.toLowerCase()}`),
);

function codeName(err: unknown): string {
  return CODE_NAMES[ConnectError.from(err).code] ?? "unknown";
}

/**
 * An interceptor counting every call of a registered method by code and
 * time; outermost, so refusals of the other interceptors (authentication,
 * rate limits) count too. A streaming call counts when its stream ends.
 */
export function createRpcMetricsInterceptor(metrics: RpcMetrics): Interceptor {
  return (next) => (req) => {
    const started = performance.now();
    const service = req.service.typeName;
    const method = req.method.name;
    // Handlers, not an async frame: this wraps every call (Authorize's hot path included).
    return settled(next, req).then(
      (res) => {
        if (!res.stream) {
          recordCall(metrics, service, method, "ok", started);
          return res;
        }
        return { ...res, message: observed(res.message, (code) => recordCall(metrics, service, method, code, started)) };
      },
      (err: unknown) => {
        recordCall(metrics, service, method, codeName(err), started);
        throw err;
      },
    );
  };
}

/** Counts a call that began at `started` (performance.now()) and ended now with `code`. */
function recordCall(metrics: RpcMetrics, service: string, method: string, code: string, started: number): void {
  metrics.call(service, method, code, (performance.now() - started) / 1000);
}

/** A response stream that reports its code when it ends: ok, the error's, or canceled when the client left. */
async function* observed<T>(messages: AsyncIterable<T>, done: (code: string) => void): AsyncGenerator<T> {
  let code = "canceled";
  try {
    yield* messages;
    code = "ok";
  } catch (err) {
    code = codeName(err);
    throw err;
  } finally {
    done(code);
  }
}
