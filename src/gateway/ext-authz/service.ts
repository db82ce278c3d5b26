/**
 * `envoy.service.auth.v3.Authorization/Check`: Envoy's (and Istio's)
 * external authorization, decided by the data path's own stages over the
 * request Envoy is about to forward (`./attributes.ts`):
 *
 *   authenticate -> resolve instance -> analyze -> authorize -> admit -> (forward's checks)
 *
 * the same functions, caches and rate-limit windows as `/odata` (nothing is
 * re-implemented here), so a request gets through Envoy exactly when it
 * would get through erplink's data path, with the same status, envelope
 * code, message and request-log denial step when it does not.
 *
 * What differs is who forwards: Envoy sends the client's own request on,
 * not erplink's canonical one. So at the forward stage's place the check
 * also requires that the client's request be one erplink could have sent:
 * its request target must be spelt as erplink's encoder writes it, up to
 * what no reader tells apart (`./spelling.ts`), and, read again as a URL
 * parser reads it, be analyzed as exactly what was authorized
 * (`verifyReading`); no method tunnel
 * (Envoy would forward the outer `POST`); a `$batch` only when its bytes
 * are the very batch erplink would write. Every client header the data
 * path would not forward is removed (`headers_to_remove`, `Authorization`
 * among them, and Envoy's `x-envoy-auth-partial-body`, which Envoy hides
 * from the check when a client sends one), `If-Match: *` is set where the data path sets it, and the
 * instance's SAP client is selected with the `sap-client` header.
 *
 * Before the analysis, the data path's client CSRF stage
 * (`../data/client-csrf.ts`): a write whose `X-CSRF-Token` is not
 * erplink's is denied (403, `X-CSRF-Token: Required`); a fetch gets
 * erplink's token added to its answer; a `HEAD` fetch is answered from the
 * check (a `denied_response` with status 200, no body, the token: Envoy
 * answers it and forwards nothing).
 *
 * Allowed: status OK, an `ok_response` with those header changes, the
 * back end's credentials when the route asks for them
 * (`erplink_inject_credentials`, for callers holding
 * `ERPLINK_EXT_AUTHZ_TOKEN` only) and the rate-limit headers for the
 * client's answer. Denied: a `denied_response` with the data path's status
 * and JSON envelope (`requestId` is `request.http.id`), its headers
 * (`Retry-After` when limited, `WWW-Authenticate` on 401). Each check is
 * one request-log entry, as a data request.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  HeaderValueOptionSchema,
  HeaderValueOption_HeaderAppendAction,
  HeaderValueSchema,
  type HeaderValueOption,
} from "../../gen/envoy/config/core/v3/base_pb.js";
import type { AttributeContext, AttributeContext_HttpRequest } from "../../gen/envoy/service/auth/v3/attribute_context_pb.js";
import {
  CheckResponseSchema,
  DeniedHttpResponseSchema,
  OkHttpResponseSchema,
  type Authorization,
  type CheckRequest,
  type CheckResponse,
} from "../../gen/envoy/service/auth/v3/external_auth_pb.js";
import { HttpStatusSchema } from "../../gen/envoy/type/v3/http_status_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import type { AccessLogEntry } from "../app.js";
import { admit, count, type HeaderSink } from "../data/admit.js";
import { analyze } from "../data/analyze.js";
import { authenticate } from "../data/authenticate.js";
import { authorize } from "../data/authorize.js";
import { clientCsrf, FETCH_ANSWER_HEADERS } from "../data/client-csrf.js";
import type { Admitted, ClientRequest, Incoming } from "../data/exchange.js";
import { upstreamTarget } from "../data/forward.js";
import { forwardedRequestHeaders, scopeRepeatability } from "../data/headers.js";
import { FORWARDED_REQUEST_HEADERS } from "../odata/forwarded-headers.js";
import type { DataKey, DataLogFacts, DataPort } from "../data/ports.js";
import { newFacts } from "../data/record.js";
import { resolveInstance } from "../data/resolve-instance.js";
import type { DataResources } from "../data/resources.js";
import { ServiceRoot } from "../data/service-root.js";
import { verifyReading } from "../data/verify.js";
import { GatewayError, fromConnectError } from "../errors.js";
import { PARTIAL_BODY_HEADER, addressOf, bodyOf, placeOf, readCheck, type CheckedRequest } from "./attributes.js";
import { spelledOtherwise } from "./spelling.js";

/** One decision, as the metrics hook receives it. */
export interface ExtAuthzDecision {
  readonly allowed: boolean;
  /** 200 when allowed, else the denial's HTTP status. */
  readonly status: number;
  /** The request log's denial step (`OPERATION`, `RATE_LIMITED`, …), or "". */
  readonly denialStep: string;
  readonly durationMs: number;
}

/** Options of {@link createExtAuthzService}. */
export interface ExtAuthzOptions<K extends DataKey> {
  /** The data path's port into the services (the one `/odata` uses). */
  readonly port: DataPort<K>;
  /** The data path's shared resources (`$metadata` cache, back-end sessions). */
  readonly resources: DataResources;
  /** Receives one request-log entry per check (as the gateway's data requests). */
  readonly record?: ((entry: AccessLogEntry) => void) | undefined;
  /**
   * `ERPLINK_EXT_AUTHZ_TOKEN`: the bearer token (call metadata
   * `authorization`) a check must carry to get the back end's credentials.
   * Unset: credential injection is refused.
   */
  readonly injectionToken?: string | undefined;
  /** Called once per decided check: the place where decisions are counted (metrics). */
  readonly onDecision?: ((decision: ExtAuthzDecision) => void) | undefined;
}

/** gRPC codes of the `CheckResponse.status` of a denial, by HTTP status (Envoy reads only OK or not). */
const GRPC_CODES: Readonly<Record<number, Code>> = {
  400: Code.InvalidArgument,
  401: Code.Unauthenticated,
  403: Code.PermissionDenied,
  404: Code.NotFound,
  413: Code.InvalidArgument,
  415: Code.InvalidArgument,
  429: Code.ResourceExhausted,
  502: Code.Unavailable,
  503: Code.Unavailable,
  504: Code.DeadlineExceeded,
};

/** Request headers Envoy keeps for the back end beyond the data path's allowlist: the request's framing, and Envoy's own. */
const KEPT_HEADERS: ReadonlySet<string> = new Set([
  "host",
  "content-type",
  "content-length",
  "transfer-encoding",
  "x-request-id",
  "x-forwarded-for",
  "x-forwarded-proto",
]);

/** Methods that only read; a write gets a fresh SAP CSRF session (as `forward` sends one). */
const READS = new Set(["GET", "HEAD"]);

/** A header to set, replacing any value it had. */
function header(key: string, value: string): HeaderValueOption {
  return create(HeaderValueOptionSchema, {
    header: create(HeaderValueSchema, { key, value }),
    appendAction: HeaderValueOption_HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD,
  });
}

function headerList(values: Readonly<Record<string, string>>): HeaderValueOption[] {
  return Object.entries(values).map(([k, v]) => header(k, v));
}

/** A constant-time test of a caller's `authorization` metadata against the injection token. */
function tokenMatcher(token: string | undefined): (authorization: string | null) => boolean {
  if (token === undefined) return () => false;
  const expected = createHash("sha256").update(`Bearer ${token}`, "utf8").digest();
  return (authorization) =>
    authorization !== null && timingSafeEqual(createHash("sha256").update(authorization.trim(), "utf8").digest(), expected);
}

/**
 * The Check implementation over the data path's stages. Register it beside
 * the services: `router.service(Authorization, createExtAuthzService(…))`;
 * its callers present no admin credential (the key is in the request).
 */
export function createExtAuthzService<K extends DataKey>(options: ExtAuthzOptions<K>): ServiceImpl<typeof Authorization> {
  const mayInject = tokenMatcher(options.injectionToken);
  return {
    async check(req: CheckRequest, ctx: HandlerContext): Promise<CheckResponse> {
      const started = performance.now();
      const at = new Date();
      const http = req.attributes?.request?.http;
      const checked = readCheck(http, req.attributes?.contextExtensions ?? {});
      const clientIp = peerAddress(req.attributes);
      if (checked.injectCredentials && !mayInject(ctx.requestHeader.get("authorization"))) {
        throw new ConnectError(
          "credential injection (erplink_inject_credentials) needs the ext_authz caller token: set ERPLINK_EXT_AUTHZ_TOKEN and send it as the call's bearer token (grpc_service.initial_metadata)",
          Code.PermissionDenied,
        );
      }
      const fact = newFacts("", "");
      const sink = collector();
      let outcome: { allowed: true; response: CheckResponse } | { allowed: false; error: GatewayError };
      try {
        outcome = { allowed: true, response: await decide(checked, http!, fact, sink, options) };
      } catch (err) {
        let error: GatewayError;
        if (err instanceof GatewayError) error = err;
        else if (err instanceof ConnectError) error = fromConnectError(err);
        else {
          // Unexpected: logged and masked by the services' error interceptor; Envoy fails closed.
          log(options, checked, clientIp, fact, at, started, { status: 500, errorCode: "INTERNAL", errorMessage: "internal error" });
          throw err;
        }
        if (error.status === 500) {
          log(options, checked, clientIp, fact, at, started, { status: 500, errorCode: "INTERNAL", errorMessage: "internal error" });
          throw new ConnectError("internal error", Code.Internal);
        }
        outcome = { allowed: false, error };
      }
      const durationMs = performance.now() - started;
      if (outcome.allowed) {
        log(options, checked, clientIp, fact, at, started, { status: 200, errorCode: "", errorMessage: "" });
        options.onDecision?.({ allowed: true, status: 200, denialStep: "", durationMs });
        return outcome.response;
      }
      const e = outcome.error;
      log(options, checked, clientIp, fact, at, started, { status: e.status, errorCode: e.code, errorMessage: e.message });
      options.onDecision?.({ allowed: false, status: e.status, denialStep: fact.denialStep, durationMs });
      return denied(e, checked.requestId, sink.values);
    },
  };
}

/** Collects the rate-limit headers the `admit` stage puts on the answer. */
function collector(): HeaderSink & { readonly values: Record<string, string> } {
  const values: Record<string, string> = {};
  return {
    values,
    headers(h) {
      Object.assign(values, h);
    },
  };
}

/** The data path's stages over the checked request; resolves to the allowing answer, throws the refusal. */
async function decide<K extends DataKey>(
  checked: CheckedRequest,
  http: AttributeContext_HttpRequest,
  fact: DataLogFacts,
  sink: ReturnType<typeof collector>,
  options: ExtAuthzOptions<K>,
): Promise<CheckResponse> {
  const { port, resources } = options;
  const address = addressOf(checked);
  fact.instance = address.instanceName;
  fact.service = address.serviceName;
  if (checked.host === "") throw new GatewayError(400, "the request names no host: send a Host header");
  // What the stages read of the client's request; the body once Envoy's is checked.
  const req: { -readonly [P in keyof ClientRequest]: ClientRequest[P] } = {
    id: checked.requestId,
    ip: "",
    method: checked.method,
    headers: { ...checked.headers },
    body: undefined,
  };
  const incoming: Incoming = {
    req,
    fact,
    instanceName: address.instanceName,
    serviceName: address.serviceName,
    rawPath: "",
    rawQuery: "",
    client: { origin: `${checked.scheme}://${checked.host}`, proto: checked.scheme, host: checked.host, path: "" },
  };
  const authenticated = await authenticate(incoming, port);
  const resolved = await resolveInstance(authenticated, port);
  // The data path's client CSRF stage: a write's token must be erplink's; a fetch gets erplink's token on its
  // answer (the rate-limit headers' way), and a HEAD fetch is answered from here, forwarding nothing.
  if (clientCsrf(resolved, resources.clientCsrf, sink)) {
    await count(resolved, port, sink);
    return fetchAnswer(checked.requestId, sink.values);
  }
  const place = placeOf(checked, address, resolved.root.path);
  req.body = bodyOf(http, checked);
  const analyzed = await analyze(
    // Object.assign, not spreads with further members (V8's slow path; bench/README.md).
    Object.assign({}, resolved, { rawPath: place.rawPath, rawQuery: place.rawQuery, client: Object.assign({}, resolved.client, { path: place.clientPath }) }),
    port,
    resources.metadata,
  );
  const authorized = authorize(analyzed, port);
  if (authorized.preferMinimal && authorized.request.model?.version === "2.0") {
    // Envoy forwards the back end's answer as it comes: erplink cannot drop an entity a V2 back end answers an
    // update with although asked for none (OData V2 has no such preference; SAP's mock server ignores it).
    throw new GatewayError(
      403,
      "the key may not read what this update answers with, and behind Envoy erplink cannot drop the answer of an OData V2 service: " +
        "grant it 'get' on the entity set, or send the update through erplink's data path",
    );
  }
  const admitted = await admit(authorized, port, sink);
  // forward: the data path's own self-check first (the same refusals), then Envoy's request.
  upstreamTarget(admitted, port);
  forwardable(admitted, checked, place);
  // No prototype: `set[name]` below must not find Object's `constructor` for a client's header of that name.
  const set: Record<string, string> = Object.create(null) as Record<string, string>;
  if (admitted.ifMatchStar) set["if-match"] = "*";
  // An update's answer would read what the key may not: the back end is asked for none, as on the data path.
  if (admitted.preferMinimal) set.prefer = "return=minimal";
  // Repeatable-request ids scoped to the key, as the data path sends them (`../data/headers.ts`).
  const ids = forwardedRequestHeaders({ "repeatability-request-id": checked.headers["repeatability-request-id"], "repeatability-client-id": checked.headers["repeatability-client-id"] });
  scopeRepeatability(ids, admitted.key.id);
  Object.assign(set, ids);
  if (admitted.instance.sapClient !== undefined && admitted.instance.sapClient !== "") set["sap-client"] = admitted.instance.sapClient;
  if (checked.injectCredentials) Object.assign(set, await credentials(admitted, resources));
  // Every header the data path would not forward goes, the key first; a header set here replaces the client's.
  // Envoy's partial-body marker too: Envoy hides a client's own from the check, so it is never seen to be removed.
  const remove = new Set<string>(set.authorization === undefined ? ["authorization", PARTIAL_BODY_HEADER] : [PARTIAL_BODY_HEADER]);
  for (const name of Object.keys(checked.headers)) {
    if (!FORWARDED_REQUEST_HEADERS.has(name) && !KEPT_HEADERS.has(name) && set[name] === undefined) remove.add(name);
  }
  return create(CheckResponseSchema, {
    // google.rpc.Code OK (0): Envoy lets the request through.
    status: create(StatusSchema, { code: 0 }),
    httpResponse: {
      case: "okResponse",
      value: create(OkHttpResponseSchema, {
        headers: headerList(set),
        headersToRemove: [...remove],
        responseHeadersToAdd: headerList(sink.values),
      }),
    },
  });
}

/** A check erplink refuses for Envoy (400, as the data path's self-check). */
function cannotAuthorize(why: string): GatewayError {
  return new GatewayError(400, `erplink cannot authorize this request for Envoy: ${why}`);
}

/**
 * What Envoy will forward must be what was authorized: the client's method
 * (no tunnel), its request target (spelt as erplink writes it, and read
 * again by the WHATWG URL parser and analyzed, it is the authorized
 * request), and for a `$batch` its exact
 * bytes (erplink forwards batches it writes itself; Envoy forwards the
 * client's). Refusals are 400, as the data path's self-check.
 */
function forwardable<K extends DataKey>(a: Admitted<K>, checked: CheckedRequest, place: { rawPath: string; rawQuery: string; clientPath: string }): void {
  const { request } = a;
  if (request.method !== checked.method) {
    throw cannotAuthorize(`Envoy forwards the method the client sent (${checked.method}), not the one X-HTTP-Method names: send ${request.method} itself`);
  }
  if (request.kind === "batch") {
    const sent = a.req.body;
    const same = Buffer.isBuffer(sent) && request.body !== undefined && sent.equals(request.body.bytes) && checked.headers["content-type"] === request.body.contentType;
    if (!same) throw cannotAuthorize("a $batch reaches the back end as erplink writes it, and Envoy forwards the client's: send $batch requests to erplink's /odata path");
  }
  // The client's spelling reaches the back end: it must be erplink's (./spelling.ts), which no back end reads otherwise.
  if (spelledOtherwise(request.method, place.rawPath, place.rawQuery, request.forward, a.instance.sapClient)) {
    throw cannotAuthorize(
      "its request target is not written as erplink writes it (a ';' or '+' in the query, an option name, or a character that " +
        `some back end reads as structure, spelt otherwise): send ${place.clientPath}/${request.forward}`,
    );
  }
  // The back end's URL as Envoy sends it (an /odata target once the route has rewritten its prefix to the
  // service root), without the instance's query options: the SAP client goes in a header instead.
  const root = new ServiceRoot({ baseUrl: a.instance.baseUrl, servicePath: a.instance.servicePath, sapClient: undefined }, a.serviceName);
  let url: URL;
  try {
    // The service root itself is its document, with or without the `/` (`pathOf("")` writes it with).
    url = new URL(`${root.origin}${root.path}${place.rawPath === "" ? "/" : place.rawPath}${place.rawQuery === "" ? "" : `?${place.rawQuery}`}`);
  } catch {
    throw cannotAuthorize("its request target does not parse as a URL");
  }
  if (url.origin !== root.origin) throw cannotAuthorize("its request target leaves the back end");
  const headers: Record<string, string> = Object.assign({}, request.headers);
  if (a.ifMatchStar) headers["if-match"] = "*";
  if (a.preferMinimal) headers.prefer = "return=minimal";
  // The client may name the instance's own SAP client, as on the data path: the back end then reads the same one.
  verifyReading(Object.assign({}, a, { root }), url, headers, a.instance.sapClient);
}

/**
 * The back end's credentials for the forwarded request, as `forward` sends
 * them: `Authorization` (basic, bearer, or an OAuth 2.0 token, fetched and
 * cached by the shared sessions), and on a write the SAP CSRF token with
 * its session cookies. The CSRF session is fetched for each write and not
 * kept: erplink never sees the back end's answer, so it could not renew a
 * token the back end stops accepting.
 */
async function credentials<K extends DataKey>(a: Admitted<K>, resources: DataResources): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const authorization = await resources.sessions.authorization(a.instance);
  if (authorization !== undefined) out.authorization = authorization;
  if (!READS.has(a.request.method)) {
    const csrf = await resources.sessions.csrfSession(a.instance, a.root, authorization, a.key.id);
    resources.sessions.dropCsrf(a.instance, a.root, csrf, a.key.id);
    if (csrf.token !== undefined) out["x-csrf-token"] = csrf.token;
    if (csrf.cookie !== "") out.cookie = csrf.cookie;
  }
  return out;
}

/**
 * The answer to a client's `HEAD` with `X-CSRF-Token: Fetch`, as the data
 * path gives it: 200, no body, erplink's token (in `headers`, with the
 * rate-limit headers). A `denied_response` only in Envoy's terms (a status
 * other than OK makes Envoy answer the client itself rather than forward):
 * a fetch reads nothing, so nothing is forwarded.
 */
function fetchAnswer(requestId: string, headers: Readonly<Record<string, string>>): CheckResponse {
  return create(CheckResponseSchema, {
    status: create(StatusSchema, { code: Code.PermissionDenied, message: "CSRF token fetch: answered by erplink" }),
    httpResponse: {
      case: "deniedResponse",
      value: create(DeniedHttpResponseSchema, {
        status: create(HttpStatusSchema, { code: 200 }),
        headers: headerList({ "x-request-id": requestId, ...headers, ...FETCH_ANSWER_HEADERS }),
        body: "",
      }),
    },
  });
}

/** The denying answer: the data path's status, headers and envelope. */
function denied(e: GatewayError, requestId: string, admission: Readonly<Record<string, string>>): CheckResponse {
  const error: Record<string, unknown> = { code: e.code, message: e.message, requestId };
  if (e.details && e.details.length > 0) error.details = e.details;
  const headers = {
    "content-type": "application/json; charset=utf-8",
    "x-request-id": requestId,
    ...admission,
    ...e.headers,
  };
  return create(CheckResponseSchema, {
    status: create(StatusSchema, { code: GRPC_CODES[e.status] ?? Code.PermissionDenied, message: e.message }),
    httpResponse: {
      case: "deniedResponse",
      value: create(DeniedHttpResponseSchema, {
        status: create(HttpStatusSchema, { code: e.status }),
        headers: headerList(headers),
        body: JSON.stringify({ error }),
      }),
    },
  });
}

/** Writes the check's request-log entry (as a data request's: what was authorized, the decision). */
function log<K extends DataKey>(
  options: ExtAuthzOptions<K>,
  checked: CheckedRequest,
  clientIp: string,
  fact: DataLogFacts,
  at: Date,
  started: number,
  outcome: { status: number; errorCode: string; errorMessage: string },
): void {
  if (options.record === undefined) return;
  const ua = checked.headers["user-agent"];
  options.record({
    requestId: checked.requestId,
    timestamp: at,
    apiKeyId: fact.apiKeyId,
    sessionId: "",
    method: checked.method,
    path: checked.target,
    status: outcome.status,
    durationMs: Math.round((performance.now() - started) * 1000) / 1000,
    instance: fact.instance,
    service: fact.service,
    accesses: fact.accesses,
    denialStep: fact.denialStep,
    errorCode: outcome.errorCode,
    // Bounded as the gateway bounds it.
    errorMessage: outcome.errorMessage.slice(0, 1024),
    // Envoy forwards and sees the back end's answer; erplink sent nothing.
    upstreamStatus: 0,
    upstreamDurationMs: 0,
    clientIp,
    userAgent: typeof ua === "string" ? ua.slice(0, 512) : "",
    upstreamMethod: "",
    upstreamUrl: "",
    // Envoy answers the client; erplink answered only Envoy.
    responseBytes: 0,
  });
}

/** The client's address as Envoy saw it (the downstream peer), or "". */
function peerAddress(attributes: AttributeContext | undefined): string {
  const address = attributes?.source?.address?.address;
  return address?.case === "socketAddress" ? address.value.address : "";
}
