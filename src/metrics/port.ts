/**
 * The metrics port: what erplink's layers report to, as plain method calls
 * with small, bounded arguments. The store, the services and the gateway
 * each receive it injected (never a global) and call it where an event
 * happens; `./prometheus.ts` implements it with prom-client, and
 * {@link NOOP_METRICS} when metrics are off. Types, the no-op and one pure
 * mapping: this module imports nothing, so every layer may depend on it.
 *
 * Arguments are enumerations or numbers, never identifiers a client chose
 * (no key ids, paths or instance names), so an attacker cannot grow the
 * number of series; the implementation maps anything outside the expected
 * values to `other` all the same.
 */

/** What a served HTTP request was, as the route it matched says (never its path). */
export type HttpRoute =
  /** The REST facade, `/admin/…`. */
  | "admin"
  /** The OData data path, `/odata/…`. */
  | "data"
  /** A gRPC, gRPC-Web or Connect call (`/<package>.<Service>/<Method>`); the service is named beside it. */
  | "rpc"
  /** `/healthz`, `/readyz`. */
  | "health"
  /** `/metrics`. */
  | "metrics"
  /** `/dashboard/…`. */
  | "dashboard"
  /** `/api-reference/…`. */
  | "api_reference"
  /** Any other route. */
  | "other"
  /** No route matched (404, 405, a malformed request line). */
  | "unrouted";

/** HTTP requests, recorded once each, after the response. */
export interface HttpMetrics {
  /**
   * One answered request. `service` is the RPC service's full name for
   * `rpc` (`erplink.admin.v1.SystemService`), else "".
   */
  request(route: HttpRoute, service: string, method: string, status: number, seconds: number): void;
}

/** RPC calls (gRPC, gRPC-Web, Connect), by outcome code. */
export interface RpcMetrics {
  /**
   * One finished call of a registered method; `code` is the Connect code's
   * name in snake case (`ok`, `invalid_argument`, `unauthenticated`, …).
   */
  call(service: string, method: string, code: string, seconds: number): void;
}

/** What the data path's record stage knows of a request (its request-log facts). */
export interface DataRequestFacts {
  /** The request log's denial step (`KEY_INVALID`, `OPERATION`, `RATE_LIMITED`, …), or "". */
  readonly denialStep: string;
  /** The method sent to the back end; "" when nothing was forwarded. */
  readonly upstreamMethod: string;
  /** The back end's status, or 0 when it did not answer. */
  readonly upstreamStatus: number;
  /** Time to the back end's answer (ms). */
  readonly upstreamDurationMs: number;
}

/** Results of a fetch from a back end (`$metadata`, an OAuth token, a CSRF token). */
export type FetchResult =
  /** Answered and usable. */
  | "ok"
  /** CSRF only: the back end answered without a token (it does not use them). */
  | "none"
  /** Answered with an error status, or with something unusable. */
  | "refused"
  /** Could not be reached. */
  | "unreachable"
  /** Did not answer in time. */
  | "timeout";

/** Outcome of a `$metadata` cache lookup. */
export type CacheLookup =
  /** A cached model. */
  | "hit"
  /** A remembered failure (the back end is not asked again for a few seconds). */
  | "negative_hit"
  /** Nothing fresh: a fetch was started or joined. */
  | "miss";

/** The OData data path: its record stage and its caches. */
export interface DataPathMetrics {
  /** One data request at its record stage, with the status it was answered with. */
  request(facts: DataRequestFacts, status: number): void;
  /** One `$metadata` cache lookup. */
  metadataLookup(result: CacheLookup): void;
  /** One `$metadata` fetch from a back end. */
  metadataFetch(result: FetchResult, seconds: number): void;
  /** One OAuth 2.0 token request or SAP CSRF token fetch. */
  tokenFetch(kind: "oauth" | "csrf", result: FetchResult): void;
}

/** Who decided: the `Authorize` RPC, or Envoy's external authorization `Check`. */
export type AuthorizationApi = "authorize" | "ext_authz";

/**
 * How a decision ended: allowed, the denial step (the request log's and
 * `Authorize`'s `denial_step`, in lower case), a malformed request, or an
 * error (the store unreachable, …).
 */
export type AuthorizationOutcome =
  | "allowed"
  | "key_invalid"
  | "key_expired"
  | "instance"
  | "service"
  | "entity"
  | "operation"
  | "not_allowed"
  | "rate_limited"
  | "invalid_request"
  | "error";

/** The denial steps that are outcomes of their own (the request log's spelling, in lower case). */
const DENIAL_OUTCOMES = ["key_invalid", "key_expired", "instance", "service", "entity", "operation", "not_allowed", "rate_limited"] as const;

/**
 * The outcome of a data-path decision from its request-log facts: the
 * denial step when the answer was a denial (401, 403, 429), allowed when it
 * was not a refusal, `invalid_request` for another 4xx, `error` otherwise.
 * For deciders that run the data path's stages (ext_authz).
 */
export function outcomeOfDataDecision(denialStep: string, status: number): AuthorizationOutcome {
  if (status < 400) return "allowed";
  if (status === 401 || status === 403 || status === 429) {
    const outcome = denialStep.toLowerCase();
    if ((DENIAL_OUTCOMES as readonly string[]).includes(outcome)) return outcome as AuthorizationOutcome;
  }
  return status < 500 ? "invalid_request" : "error";
}

/** Authorization decisions made for other components (not the data path's own requests). */
export interface AuthorizationMetrics {
  /** One decision of `api`; ext_authz may map its answer with {@link outcomeOfDataDecision}. */
  decided(api: AuthorizationApi, outcome: AuthorizationOutcome): void;
}

/** How a store operation failed. */
export type StoreErrorKind = "unavailable" | "duplicate_key" | "revision_mismatch" | "other";

/** Store operations, per collection and operation (both fixed by the code). */
export interface StoreMetrics {
  /** One operation of a collection; `error` when it failed. */
  operation(collection: string, operation: string, seconds: number, error: StoreErrorKind | undefined): void;
}

/** State read when metrics are scraped, never pushed from the request path. */
export interface MetricSources {
  /** The request log's queue (`LogWriter.stats()`). */
  readonly requestLog?: () => { readonly queued: number; readonly written: number; readonly dropped: number; readonly evicted: number };
  /** The API key cache (`KeyRegistry.stats()`). */
  readonly apiKeys?: () => {
    readonly known: number;
    readonly unknown: number;
    /** When the last sync with the store succeeded (undefined: none yet). */
    readonly lastSyncAt: Date | undefined;
    readonly syncFailures: number;
  };
  /** Entries of the `$metadata` cache. */
  readonly metadataCache?: () => number;
  /** The connection guard's counts (`AbuseGuard.counts`). */
  readonly connections?: () => { readonly calmed: number; readonly refusedConnections: number; readonly refusedStreams: number; readonly cancelledAway: number };
}

/** Everything erplink reports. */
export interface Metrics {
  readonly http: HttpMetrics;
  readonly rpc: RpcMetrics;
  readonly data: DataPathMetrics;
  readonly authorization: AuthorizationMetrics;
  readonly store: StoreMetrics;
  /** Adds state to read at scrape time (each source once; a later one replaces it). */
  watch(sources: MetricSources): void;
}

const nothing = (): void => {};

/** Metrics off: every call does nothing. */
export const NOOP_METRICS: Metrics = Object.freeze({
  http: { request: nothing },
  rpc: { call: nothing },
  data: { request: nothing, metadataLookup: nothing, metadataFetch: nothing, tokenFetch: nothing },
  authorization: { decided: nothing },
  store: { operation: nothing },
  watch: nothing,
});
