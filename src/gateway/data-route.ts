/**
 * The OData data path: `/odata/<instance>/<service>/<resource path>?<query>`.
 * Every request is authenticated with a data key, analyzed into the
 * (entity set, operation) pairs it touches (our parser, with the service's
 * `$metadata` for navigation), each pair authorized by the permission
 * engine, counted against the key's rate limit, and only then forwarded to
 * the instance with its back-end credentials. Upstream answers stream back
 * unchanged; erplink's own answers use the envelope.
 */
import type { IncomingHttpHeaders } from "node:http";
import { ConnectError } from "@connectrpc/connect";
import replyFrom from "@fastify/reply-from";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { GatewayError } from "./errors.js";
import { analyzeRequest, needsIfMatchStar, type Analysis } from "./odata/request.js";
import { parseMetadata, type ServiceModel } from "./odata/metadata.js";

/** An operation on an entity set, as the permission engine names it. */
type Operation = "list" | "get" | "create" | "update" | "delete";

/** A permission decision. */
type Decision = { readonly allowed: true } | { readonly allowed: false; readonly step: string; readonly message: string };

/** Back-end credentials with their secrets. */
export interface UpstreamCredentials {
  readonly type: "none" | "basic" | "bearer" | "oauth2_client_credentials";
  readonly username?: string;
  readonly password?: string;
  readonly token?: string;
}

/** An instance as the data path reaches it. */
export interface DataInstance {
  readonly id: string;
  readonly baseUrl: string;
  servicePath(service: string): string;
  readonly credentials: UpstreamCredentials;
}

/** A data key, as far as the data path needs it. */
export interface DataKey {
  readonly id: string;
}

/** Rate-limit outcome with its response headers. */
export interface DataAdmission {
  readonly allowed: boolean;
  readonly headers: Readonly<Record<string, string>>;
}

/** The port through which the data path reaches the services (implemented by the service layer). */
export interface DataPort<K extends DataKey = DataKey> {
  /** The data key of an `Authorization` header; throws the services' ConnectError. */
  authenticate(authorization: string | undefined): Promise<K>;
  instance(name: string): Promise<DataInstance | undefined>;
  serviceDecision(key: K, instance: string, service: string): Decision;
  decide(key: K, access: { instance: string; service: string; entity: string; operation: Operation }): Decision;
  /** Counts the request; resolves to whether it may pass and the rate-limit headers. */
  admit(key: K): Promise<DataAdmission>;
}

/** What the data path reports of a request for the request log. */
export interface DataLogFacts {
  apiKeyId: string;
  instance: string;
  service: string;
  accesses: { entity: string; operation: string }[];
  denialStep: string;
  upstreamStatus: number;
  upstreamDurationMs: number;
}

/** Options of {@link registerDataRoutes}. */
export interface DataRouteOptions<K extends DataKey> {
  readonly port: DataPort<K>;
  /** Upstream answer timeout (ms): slower answers get 504. */
  readonly upstreamTimeoutMs: number;
  /** How long a service's `$metadata` is cached (ms). */
  readonly metadataTtlMs: number;
  /** Where facts for the request log go. */
  readonly facts: WeakMap<object, DataLogFacts>;
}

/** Headers never forwarded in either direction (RFC 9110 §7.6.1), plus the client's credentials. */
const HOP_BY_HOP = ["connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"];

const STEP_NAMES: Readonly<Record<string, string>> = {
  instance: "INSTANCE",
  service: "SERVICE",
  entity: "ENTITY",
  operation: "OPERATION",
};

function credentialHeader(c: UpstreamCredentials): string | undefined {
  if (c.type === "basic") return `Basic ${Buffer.from(`${c.username ?? ""}:${c.password ?? ""}`, "utf8").toString("base64")}`;
  if (c.type === "bearer") return `Bearer ${c.token ?? ""}`;
  return undefined;
}

/** Registers the data routes in their own scope (raw bodies, streamed). */
export async function registerDataRoutes<K extends DataKey>(app: FastifyInstance, options: DataRouteOptions<K>): Promise<void> {
  const { port, facts } = options;
  const metadata = new Map<string, { at: number; model: ServiceModel | undefined }>();

  /** The service's model, fetched with the instance's credentials and cached; undefined when unavailable. */
  async function modelOf(target: DataInstance, service: string, root: string): Promise<ServiceModel | undefined> {
    const cacheKey = `${target.id}|${service}`;
    const hit = metadata.get(cacheKey);
    if (hit !== undefined && Date.now() - hit.at < options.metadataTtlMs) return hit.model;
    let model: ServiceModel | undefined;
    try {
      const headers: Record<string, string> = { accept: "application/xml" };
      const auth = credentialHeader(target.credentials);
      if (auth) headers.authorization = auth;
      const res = await fetch(`${root}/$metadata`, { headers, signal: AbortSignal.timeout(options.upstreamTimeoutMs) });
      if (res.ok) model = parseMetadata(await res.text());
    } catch {
      model = undefined; // fail closed: navigation is denied without a model
    }
    // A failure is remembered briefly, so an unreachable back end is not asked on every request.
    metadata.set(cacheKey, { at: model ? Date.now() : Date.now() - options.metadataTtlMs + 5_000, model });
    return model;
  }

  await app.register(async (scope) => {
    // Bodies are streamed to the back end as they are, never parsed here.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_req, payload, done) => done(null, payload));
    await scope.register(replyFrom, {
      disableRequestLogging: true,
      // Never replay a request on its own: the client decides.
      retryMethods: [],
      maxRetriesOn503: 0,
      undici: { connections: 64, pipelining: 1, keepAliveTimeout: 30_000 },
    });

    const handler = async (req: FastifyRequest, reply: FastifyReply) => {
      const params = req.params as { instance: string; service: string };
      const rawUrl = req.raw.url ?? req.url;
      const query = rawUrl.includes("?") ? rawUrl.slice(rawUrl.indexOf("?") + 1) : "";
      // The resource path, raw (still percent-encoded): everything after the
      // third segment of the raw URL (`/odata/<instance>/<service>`), so the
      // parser decodes it exactly once, however the client encoded the names.
      const segments = rawUrl.split("?")[0]!.split("/");
      const resourcePath = segments.length > 4 ? `/${segments.slice(4).join("/")}` : "";
      const fact: DataLogFacts = {
        apiKeyId: "",
        instance: params.instance,
        service: params.service,
        accesses: [],
        denialStep: "",
        upstreamStatus: 0,
        upstreamDurationMs: 0,
      };
      facts.set(req, fact);

      let key: K;
      try {
        key = await port.authenticate(req.headers.authorization);
      } catch (err) {
        if (err instanceof ConnectError) fact.denialStep = "KEY_INVALID";
        throw err;
      }
      fact.apiKeyId = key.id;

      // Instance before lookup: never reveal instances a key cannot see.
      const seen = port.serviceDecision(key, params.instance, params.service);
      if (!seen.allowed && seen.step === "instance") {
        fact.denialStep = "INSTANCE";
        throw new GatewayError(403, seen.message);
      }
      const target = await port.instance(params.instance);
      if (target === undefined) throw new GatewayError(404, `instance '${params.instance}' not found`);
      if (!seen.allowed) {
        fact.denialStep = STEP_NAMES[seen.step] ?? "";
        throw new GatewayError(403, seen.message);
      }
      if (target.credentials.type === "oauth2_client_credentials") {
        throw new GatewayError(501, "OAuth 2.0 client-credentials back ends are not supported yet", { code: "NOT_IMPLEMENTED" });
      }

      const root = `${target.baseUrl}/${target.servicePath(params.service)}`;
      const needsModel = resourcePath !== "" && resourcePath !== "/" && !/^\/?\$metadata$/.test(resourcePath);
      const analysis: Analysis = analyzeRequest({
        method: req.method,
        path: resourcePath,
        query,
        headers: req.headers as Record<string, string | undefined>,
        model: needsModel ? await modelOf(target, params.service, root) : undefined,
      });
      let ifMatchStar = false;
      switch (analysis.kind) {
        case "invalid":
          throw new GatewayError(400, analysis.message);
        case "denied":
          fact.denialStep = "NOT_ALLOWED";
          throw new GatewayError(403, analysis.message);
        case "batch":
          throw new GatewayError(501, "$batch is not supported yet", { code: "NOT_IMPLEMENTED" });
        case "metadata":
          break;
        case "access": {
          for (const access of analysis.accesses) {
            fact.accesses.push({ entity: access.entitySet, operation: access.operation });
            const decision = port.decide(key, {
              instance: params.instance,
              service: params.service,
              entity: access.entitySet,
              operation: access.operation,
            });
            if (!decision.allowed) {
              fact.denialStep = STEP_NAMES[decision.step] ?? "";
              throw new GatewayError(403, decision.message);
            }
          }
          ifMatchStar = needsIfMatchStar(analysis, (entity) =>
            port.decide(key, { instance: params.instance, service: params.service, entity, operation: "create" }).allowed,
          );
          break;
        }
      }
      const admission = await port.admit(key);
      reply.headers(admission.headers);
      if (!admission.allowed) {
        fact.denialStep = "RATE_LIMITED";
        throw new GatewayError(429, "rate limit exceeded for this API key", { code: "RATE_LIMITED" });
      }

      const started = performance.now();
      const upstreamUrl = `${root}${resourcePath.startsWith("/") ? "" : "/"}${resourcePath}${query ? `?${query}` : ""}`;
      return reply.from(upstreamUrl, {
        timeout: options.upstreamTimeoutMs,
        rewriteRequestHeaders: (_req, headers: IncomingHttpHeaders) => {
          const out: IncomingHttpHeaders = { ...headers };
          for (const h of HOP_BY_HOP) delete out[h];
          delete out.authorization;
          delete out.cookie;
          const auth = credentialHeader(target.credentials);
          if (auth) out.authorization = auth;
          if (ifMatchStar) out["if-match"] = "*";
          out["x-request-id"] = req.id;
          const proto = req.protocol;
          const host = req.headers.host ?? "";
          out.forwarded = `for="${req.ip}";proto=${proto};host="${host}"`;
          out["x-forwarded-for"] = req.ip;
          out["x-forwarded-proto"] = proto;
          out["x-forwarded-host"] = host;
          return out;
        },
        rewriteHeaders: (headers) => {
          const out = { ...headers };
          for (const h of HOP_BY_HOP) delete out[h];
          // The back end's session is erplink's business, not the client's.
          delete out["set-cookie"];
          return { ...out, "x-request-id": req.id, ...admission.headers };
        },
        onResponse: (_request, res, upstream) => {
          fact.upstreamStatus = upstream.statusCode;
          fact.upstreamDurationMs = Math.round((performance.now() - started) * 1000) / 1000;
          res.send(upstream.stream);
        },
        onError: (res, { error }) => {
          const timedOut = (error as { statusCode?: number }).statusCode === 504;
          const e = timedOut
            ? new GatewayError(504, "the back end did not answer in time")
            : new GatewayError(502, "the back end could not be reached");
          res.code(e.status).type("application/json; charset=utf-8").send({
            error: { code: e.code, message: e.message, requestId: req.id },
          });
        },
      });
    };

    scope.route({ method: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "MERGE"], url: "/odata/:instance/:service", handler });
    scope.route({ method: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "MERGE"], url: "/odata/:instance/:service/*", handler });
  });
}
