/**
 * The OData data path: `/odata/<instance>/<service>/<resource path>?<query>`.
 * Every request is authenticated with a data key, analyzed into the
 * (entity set, operation) pairs it touches (our parser, with the service's
 * `$metadata` for navigation), each pair authorized by the permission
 * engine, counted against the key's rate limit, and only then forwarded to
 * the instance with its back-end credentials. Upstream answers stream back
 * unchanged; erplink's own answers use the envelope.
 *
 * Request bodies are buffered (within the gateway's body limit): the
 * analyzer authorizes what they touch (deep inserts, `@odata.bind`, every
 * `$batch` part), and a modifying request can be sent once more when the
 * back end refuses its CSRF token (`403` + `X-CSRF-Token: Required`) or its
 * OAuth token (`401`). Answers are never buffered.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import { ConnectError } from "@connectrpc/connect";
import replyFrom from "@fastify/reply-from";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { GatewayError } from "./errors.js";
import { analyzeBatch } from "./odata/batch.js";
import { jsonValue, parseJson } from "./odata/json.js";
import { isJsonType, isUtf8, parseMediaType } from "./odata/media-type.js";
import { parseMetadata, type ServiceModel } from "./odata/metadata.js";
import { SAP_SESSION_HEADERS, analyzeRequest, needsIfMatchStar, type Analysis, type RequestBody } from "./odata/request.js";
import { Refusal } from "./odata/syntax.js";
import { UpstreamSessions, csrfRequired, isTimeout, type UpstreamCredentials } from "./upstream-session.js";

/** An operation on an entity set, as the permission engine names it. */
type Operation = "list" | "get" | "create" | "update" | "delete";

/** A permission decision. */
type Decision = { readonly allowed: true } | { readonly allowed: false; readonly step: string; readonly message: string };

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
  upstreamMethod: string;
  upstreamUrl: string;
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
  /** Answers an error in the envelope (used where the route's error handler cannot be: after the proxy took over). */
  readonly sendError: (reply: FastifyReply, req: FastifyRequest, e: GatewayError) => unknown;
}

/** Headers never forwarded in either direction (RFC 9110 §7.6.1), plus the client's credentials. */
const HOP_BY_HOP = ["connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"];

const STEP_NAMES: Readonly<Record<string, string>> = {
  instance: "INSTANCE",
  service: "SERVICE",
  entity: "ENTITY",
  operation: "OPERATION",
};

/** Methods that only read; every other one carries the CSRF session. */
const READS = new Set(["GET", "HEAD"]);

/**
 * The body as the analyzer sees it: parsed JSON for JSON content types,
 * otherwise only its content type; undefined when there is none. Throws 400
 * on malformed JSON.
 */
function bodyOf(raw: Buffer | undefined, contentType: string | undefined): RequestBody | undefined {
  if (raw === undefined || raw.length === 0) return undefined;
  const declared = isJsonType((contentType ?? "").split(";")[0]!.trim().toLowerCase());
  const other: RequestBody = { kind: "other", contentType: (contentType ?? "").split(";")[0]!.trim() };
  // Some back ends (CAP) read a body as JSON whatever its Content-Type: a
  // body that parses as a JSON object or array is analyzed as one, so that
  // a "media" upload cannot carry a deep insert past the analyzer.
  if (!declared && !/^\s*[[{]/.test(raw.subarray(0, 64).toString("latin1"))) return other;
  let text: string;
  try {
    text = UTF8.decode(raw);
  } catch {
    if (!declared) return other;
    throw new GatewayError(400, "request body is not valid UTF-8");
  }
  let value: unknown;
  try {
    // Strict: a duplicate member would be read one way here and maybe another way by the back end.
    value = jsonValue(parseJson(text, "request body"));
  } catch (err) {
    if (!declared) return other;
    throw new GatewayError(400, err instanceof Refusal ? err.message : "request body is not valid JSON");
  }
  // The back end decodes with the charset the client names (even UTF-7):
  // anything but UTF-8 could read as another body than the one authorized.
  // A parameter given twice is refused (back ends disagree on which counts).
  let charset: string | undefined;
  try {
    charset = contentType === undefined ? undefined : parseMediaType(contentType, "the request's Content-Type").params.get("charset");
  } catch (err) {
    throw new GatewayError(400, err instanceof Refusal ? err.message : "the request's Content-Type is malformed");
  }
  if (charset !== undefined && !isUtf8(charset)) {
    throw new GatewayError(415, `JSON request bodies must be UTF-8, not '${charset.slice(0, 40)}'`);
  }
  return { kind: "json", value };
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A service name as it may appear in the back end's URL: RFC 3986 path
 * segment characters, no `%` (it is already decoded), `/`, `?` or `#`.
 */
const SERVICE_NAME = /^[A-Za-z0-9_.~!$&'()*+,;=:@-]{1,200}$/;

/** A metadata fetch outcome, cached per instance and service. */
type ModelEntry = { readonly at: number; readonly model: ServiceModel } | { readonly at: number; readonly error: GatewayError };

/** Registers the data routes in their own scope (bodies buffered for analysis, answers streamed). */
export async function registerDataRoutes<K extends DataKey>(app: FastifyInstance, options: DataRouteOptions<K>): Promise<void> {
  const { port, facts } = options;
  const sessions = new UpstreamSessions({ timeoutMs: options.upstreamTimeoutMs });
  const models = new Map<string, ModelEntry>();
  const modelFlights = new Map<string, Promise<ModelEntry>>();

  /**
   * The service's model, fetched with the instance's credentials and cached
   * (single-flight). Without it nothing below the service root can be
   * authorized, so a failure answers 502 (504 on timeout); it is remembered
   * for a few seconds, so a broken back end is not asked on every request.
   */
  async function modelOf(target: DataInstance, root: string): Promise<ServiceModel> {
    // Keyed by the root too: a changed base URL or service path is a new document.
    const cacheKey = `${target.id}|${root}`;
    const hit = models.get(cacheKey);
    const now = Date.now();
    if (hit !== undefined && now - hit.at < ("model" in hit ? options.metadataTtlMs : METADATA_FAILURE_TTL_MS)) {
      if ("model" in hit) return hit.model;
      throw hit.error;
    }
    let flight = modelFlights.get(cacheKey);
    if (flight === undefined) {
      flight = fetchModel(target, root)
        .then((entry) => {
          if (models.size >= MAX_MODELS && !models.has(cacheKey)) models.clear();
          models.set(cacheKey, entry);
          return entry;
        })
        .finally(() => modelFlights.delete(cacheKey));
      modelFlights.set(cacheKey, flight);
    }
    const entry = await flight;
    if ("model" in entry) return entry.model;
    throw entry.error;
  }

  async function fetchModel(target: DataInstance, root: string): Promise<ModelEntry> {
    const failed = (error: GatewayError): ModelEntry => ({ at: Date.now(), error });
    const headers: Record<string, string> = { accept: "application/xml" };
    const auth = await sessions.authorization(target);
    if (auth) headers.authorization = auth;
    let res: Response;
    try {
      res = await fetch(`${root}/$metadata`, { headers, redirect: "manual", signal: AbortSignal.timeout(options.upstreamTimeoutMs) });
    } catch (err) {
      return failed(
        isTimeout(err)
          ? new GatewayError(504, "cannot authorize the request: the back end did not send the service's $metadata in time")
          : new GatewayError(502, "cannot authorize the request: the back end could not be reached for the service's $metadata"),
      );
    }
    if (!res.ok) {
      await res.body?.cancel();
      if (res.status === 401) sessions.dropToken(target, auth);
      return failed(new GatewayError(502, `cannot authorize the request: the back end answered HTTP ${res.status} to $metadata`));
    }
    try {
      return { at: Date.now(), model: parseMetadata(await res.text()) };
    } catch {
      return failed(new GatewayError(502, "cannot authorize the request: the service's $metadata could not be read"));
    }
  }

  await app.register(async (scope) => {
    // Bodies are buffered (within the body limit) so that they can be
    // authorized (deep inserts, binds, $batch parts) and replayed once when
    // the back end asks for a new CSRF or OAuth token.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => done(null, body));
    await scope.register(replyFrom, {
      disableRequestLogging: true,
      // Never replay a request on its own: the client decides.
      retryMethods: [],
      maxRetriesOn503: 0,
      undici: { connections: 64, pipelining: 1, keepAliveTimeout: 30_000 },
    });

    /** Answers an upstream failure in the envelope, dropping the headers of a refused first attempt. */
    const sendUpstreamError = (reply: FastifyReply, req: FastifyRequest, err: unknown): void => {
      if (reply.sent) return;
      clearUpstreamHeaders(reply);
      options.sendError(reply, req, err instanceof GatewayError ? err : new GatewayError(502, "the back end could not be reached"));
    };

    const handler = async (req: FastifyRequest, reply: FastifyReply) => {
      const params = req.params as { instance: string; service: string };
      const rawUrl = req.raw.url ?? req.url;
      const query = rawUrl.includes("?") ? rawUrl.slice(rawUrl.indexOf("?") + 1) : "";
      // The resource path, raw (still percent-encoded): everything after the
      // third segment of the raw URL (`/odata/<instance>/<service>`), so the
      // parser decodes it exactly once, however the client encoded the names.
      const segments = rawUrl.split("?")[0]!.split("/");
      const resourcePath = segments.length > 4 ? `/${segments.slice(4).join("/")}` : "";
      const clientRoot = segments.slice(0, 4).join("/");
      const fact: DataLogFacts = {
        apiKeyId: "",
        instance: params.instance,
        service: params.service,
        accesses: [],
        denialStep: "",
        upstreamStatus: 0,
        upstreamDurationMs: 0,
        upstreamMethod: "",
        upstreamUrl: "",
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

      if (!SERVICE_NAME.test(params.service)) {
        throw new GatewayError(400, "the service name may only contain letters, digits and the characters _ . ~ ! $ & ' ( ) * + , ; = : @ -");
      }
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

      const root = `${target.baseUrl}/${target.servicePath(params.service)}`;
      const raw = Buffer.isBuffer(req.body) ? req.body : undefined;
      const contentType = req.headers["content-type"];
      const isServiceRoot = resourcePath === "" || resourcePath === "/" || /^\/?\$metadata$/.test(resourcePath);
      const model = isServiceRoot ? undefined : await modelOf(target, root);
      const decide = (entity: string, operation: Operation) =>
        port.decide(key, { instance: params.instance, service: params.service, entity, operation });
      const analysis: Analysis = analyzeRequest({
        method: req.method,
        path: resourcePath,
        query,
        headers: req.headers as Record<string, string | undefined>,
        model,
        // A $batch body is the batch module's to read (once).
        body: /^\/?\$batch$/.test(resourcePath) ? undefined : bodyOf(raw, contentType),
        resolveReference: (url) => relativeToRoot(url, clientRoot),
      });
      let ifMatchStar = false;
      let forwardBody: { body: Buffer; contentType: string } | undefined =
        raw !== undefined && raw.length > 0 ? { body: raw, contentType: contentType ?? "application/octet-stream" } : undefined;
      let accesses: readonly { readonly entitySet: string; readonly operation: Operation; readonly reason: string }[] = [];
      let batched = false;
      switch (analysis.kind) {
        case "invalid":
          throw new GatewayError(400, analysis.message);
        case "denied":
          fact.denialStep = "NOT_ALLOWED";
          throw new GatewayError(403, analysis.message);
        case "batch": {
          const batch = analyzeBatch({
            contentType: contentType ?? "",
            body: raw ?? Buffer.alloc(0),
            clientRoot,
            model,
            mayCreate: (entity: string) => decide(entity, "create").allowed,
          });
          if (batch.kind === "invalid") throw new GatewayError(400, batch.message);
          if (batch.kind === "denied") {
            fact.denialStep = "NOT_ALLOWED";
            throw new GatewayError(403, batch.message);
          }
          accesses = batch.accesses;
          batched = true;
          forwardBody = { body: batch.body, contentType: batch.contentType };
          break;
        }
        case "metadata":
          break;
        case "access":
          accesses = analysis.accesses;
          ifMatchStar = needsIfMatchStar(analysis, (entity) => decide(entity, "create").allowed);
          break;
      }
      for (const access of accesses) {
        fact.accesses.push({ entity: access.entitySet, operation: access.operation });
        const decision = decide(access.entitySet, access.operation);
        if (!decision.allowed) {
          fact.denialStep = STEP_NAMES[decision.step] ?? "";
          // In a batch, say which part needs it.
          throw new GatewayError(403, batched ? `${decision.message} (batch ${access.reason})` : decision.message);
        }
      }
      const admission = await port.admit(key);
      reply.headers(admission.headers);
      if (!admission.allowed) {
        fact.denialStep = "RATE_LIMITED";
        throw new GatewayError(429, "rate limit exceeded for this API key", { code: "RATE_LIMITED" });
      }

      const modifying = !READS.has(req.method);
      const upstreamUrl = `${root}${resourcePath.startsWith("/") ? "" : "/"}${resourcePath}${query ? `?${query}` : ""}`;
      const started = performance.now();

      /** Sends the request to the back end; once more after a CSRF or OAuth token was refused. */
      const attempt = async (retried: boolean): Promise<void> => {
        const authorization = await sessions.authorization(target);
        const csrf = modifying ? await sessions.csrfSession(target, root, authorization) : undefined;
        reply.from(upstreamUrl, {
          timeout: options.upstreamTimeoutMs,
          ...(modifying ? { body: forwardBody?.body ?? null, contentType: forwardBody?.contentType } : {}),
          rewriteRequestHeaders: (_req, headers: IncomingHttpHeaders) => {
            const out: IncomingHttpHeaders = { ...headers };
            for (const h of HOP_BY_HOP) delete out[h];
            delete out.authorization;
            delete out.cookie;
            delete out["x-csrf-token"];
            for (const h of SAP_SESSION_HEADERS) delete out[h];
            if (authorization) out.authorization = authorization;
            if (csrf?.token !== undefined) out["x-csrf-token"] = csrf.token;
            if (csrf !== undefined && csrf.cookie !== "") out.cookie = csrf.cookie;
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
            delete out["x-csrf-token"];
            delete out["sap-contextid"];
            // A challenge for erplink's back-end credentials is not the client's to answer.
            delete out["www-authenticate"];
            // URLs of the back end's root name erplink's instead (the client cannot reach the back end).
            for (const h of URL_HEADERS) {
              const v = out[h];
              if (typeof v === "string" && v.startsWith(`${root}/`)) out[h] = `${req.protocol}://${req.headers.host ?? ""}${clientRoot}${v.slice(root.length)}`;
            }
            return { ...out, "x-request-id": req.id, ...admission.headers };
          },
          onResponse: (_request, _reply, response) => {
            // reply-from's type says a server response; it is undici's answer.
            const upstream = response as unknown as { statusCode: number; headers: Record<string, unknown>; stream: Readable };
            const status = upstream.statusCode;
            const refused =
              !retried &&
              ((csrf !== undefined && csrfRequired(status, upstream.headers)) ||
                (status === 401 && target.credentials.type === "oauth2_client_credentials"));
            if (refused) {
              upstream.stream.on("error", () => {});
              upstream.stream.resume();
              if (csrf !== undefined && status === 403) sessions.dropCsrf(target, root, csrf);
              else sessions.dropToken(target, authorization);
              clearUpstreamHeaders(reply);
              attempt(true).catch((err: unknown) => sendUpstreamError(reply, req, err));
              return;
            }
            fact.upstreamStatus = status;
            fact.upstreamDurationMs = Math.round((performance.now() - started) * 1000) / 1000;
            reply.send(upstream.stream);
          },
          onError: (_reply, { error }) => {
            const timedOut = (error as { statusCode?: number }).statusCode === 504;
            sendUpstreamError(
              reply,
              req,
              timedOut ? new GatewayError(504, "the back end did not answer in time") : new GatewayError(502, "the back end could not be reached"),
            );
          },
        });
      };
      await attempt(false);
      return reply;
    };

    scope.route({ method: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "MERGE"], url: "/odata/:instance/:service", handler });
    scope.route({ method: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "MERGE"], url: "/odata/:instance/:service/*", handler });
  });
}

/** Removes what a back end's answer put on `reply`, keeping erplink's own headers. */
function clearUpstreamHeaders(reply: FastifyReply): void {
  for (const name of Object.keys(reply.getHeaders())) {
    if (name !== "x-request-id" && !name.startsWith("x-ratelimit-") && !name.startsWith("ratelimit")) reply.removeHeader(name);
  }
}

/** Response headers holding URLs of the back end (`Location` of a created entity, its OData id). */
const URL_HEADERS = ["location", "content-location", "odata-entityid", "entityid"];

/** Most `$metadata` models kept (per instance and service root); beyond it the cache starts over. */
const MAX_MODELS = 1_000;

/** How long a failed `$metadata` fetch is remembered (ms). */
const METADATA_FAILURE_TTL_MS = 5_000;

/**
 * The service-relative form of a URL a client wrote in a body or batch part
 * (absolute, or absolute-path under `clientRoot`), or undefined when it
 * leaves the service root.
 */
export function relativeToRoot(url: string, clientRoot: string): string | undefined {
  // Content-ID references name requests of a batch; there is none here.
  if (url.startsWith("$")) return undefined;
  let path = url;
  if (/^[a-z][a-z0-9+.-]*:/i.test(url)) {
    try {
      const parsed = new URL(url);
      path = `${parsed.pathname}${parsed.search}`;
    } catch {
      return undefined;
    }
  }
  if (!path.startsWith("/")) return path;
  return path.startsWith(`${clientRoot}/`) ? path.slice(clientRoot.length + 1) : undefined;
}
