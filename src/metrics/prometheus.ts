/**
 * The metrics port (`./port.ts`) implemented with prom-client: one registry
 * per erplink (no global), exposed in the Prometheus text format by the
 * gateway's `/metrics`. Every metric and label is listed in the README's
 * Metrics section.
 *
 * The request path pays a table lookup and an increment: each labelled
 * child is created once, on first use, and kept in a table indexed by small
 * integers (the route, the method, the status class, …), so nothing is built
 * or hashed per event. The counters and histograms of events are our own
 * small families ({@link EventCounter}, {@link EventHistogram}: a child is a
 * number, or an array of bucket counts) registered in prom-client's registry,
 * which formats them with the rest; prom-client's own children hash their
 * label values on every increment, about a microsecond per event. State that
 * changes on its own (the request log's queue, the key cache) is read at
 * scrape time through prom-client's collect callbacks, never pushed. Label values come from fixed lists; what falls outside them
 * (a method only HTTP/2 allows, a service beyond {@link MAX_SERVICES}) is
 * counted as `other`, so no caller can grow the number of series.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics, type Metric } from "prom-client";
import type {
  AuthorizationApi,
  AuthorizationOutcome,
  CacheLookup,
  DataRequestFacts,
  FetchResult,
  HttpRoute,
  MetricSources,
  Metrics,
  StoreErrorKind,
} from "./port.js";

/** A prom-client child for one label set of a counter and a histogram with the same labels. */
interface Child {
  readonly inc: (value?: number) => void;
  readonly observe: (value: number) => void;
}

/** Methods named as themselves; any other is `other`. */
export const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "MERGE"] as const;
const ROUTES: readonly HttpRoute[] = ["admin", "data", "rpc", "health", "metrics", "dashboard", "api_reference", "other", "unrouted"];
const STATUS_CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx", "other"] as const;
/** Most distinct RPC services named; beyond it they are `other`. */
export const MAX_SERVICES = 64;
/** Most distinct methods per RPC service; beyond it they are `other`. */
export const MAX_METHODS_PER_SERVICE = 256;
/** Most distinct store collections; beyond it they are `other`. */
export const MAX_COLLECTIONS = 64;

/** Connect codes by number (`@connectrpc/connect`'s `Code`), in snake case; the gRPC status names. */
export const RPC_CODES = [
  "ok",
  "canceled",
  "unknown",
  "invalid_argument",
  "deadline_exceeded",
  "not_found",
  "already_exists",
  "permission_denied",
  "resource_exhausted",
  "failed_precondition",
  "aborted",
  "out_of_range",
  "unimplemented",
  "internal",
  "unavailable",
  "data_loss",
  "unauthenticated",
] as const;

/** The data path's denial steps (the request log's `denial_step`), named in lower case. */
export const DENIAL_STEPS = ["KEY_INVALID", "KEY_EXPIRED", "INSTANCE", "SERVICE", "ENTITY", "OPERATION", "NOT_ALLOWED", "RATE_LIMITED"] as const;
const AUTHORIZATION_APIS: readonly AuthorizationApi[] = ["authorize", "ext_authz"];
const AUTHORIZATION_OUTCOMES: readonly AuthorizationOutcome[] = [
  "allowed",
  "key_invalid",
  "key_expired",
  "instance",
  "service",
  "entity",
  "operation",
  "not_allowed",
  "rate_limited",
  "invalid_request",
  "error",
];
const FETCH_RESULTS: readonly FetchResult[] = ["ok", "none", "refused", "unreachable", "timeout"];
const CACHE_LOOKUPS: readonly CacheLookup[] = ["hit", "negative_hit", "miss"];
/** The store's collection operations (`src/store/collection.ts`), then the request-log port's (the embedded store's log is not a collection). */
export const STORE_OPERATIONS = [
  "insert",
  "get",
  "findOne",
  "list",
  "count",
  "update",
  "delete",
  "increment",
  "insertMany",
  "findNewest",
  "since",
  "deleteBefore",
  "incrementMany",
  "getMany",
  "keepNewest",
  "append",
  "query",
  "purge",
  "trim",
] as const;
const STORE_ERRORS: readonly StoreErrorKind[] = ["unavailable", "duplicate_key", "revision_mismatch", "other"];

/** Request and answer times: from a cached decision (well under a millisecond) to the upstream timeout. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Store operations: an embedded read takes microseconds, a MongoDB one milliseconds. */
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Options of {@link createPrometheusMetrics}. */
export interface PrometheusMetricsOptions {
  /** The current time (for the key sync's lag); tests inject theirs. */
  readonly clock?: () => Date;
  /** Whether to add prom-client's process and Node.js metrics (default true). */
  readonly processMetrics?: boolean;
}

/** The port, with its registry. */
export interface PrometheusMetrics extends Metrics {
  readonly registry: Registry;
  /** The exposition of every metric, and its content type. */
  scrape(): Promise<{ readonly contentType: string; readonly body: string }>;
}

/** The index of `value` in `list`, or `list.length` (`other`). */
function indexIn(list: readonly string[], value: string): number {
  const i = list.indexOf(value);
  return i < 0 ? list.length : i;
}

/** The index of a route class; an unknown one is `other`. */
function routeIndex(route: HttpRoute): number {
  const i = ROUTES.indexOf(route);
  return i < 0 ? ROUTES.indexOf("other") : i;
}

/** A value as prom-client's registry formats it (its `MetricValue`). */
interface ExposedValue {
  readonly value: number;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly metricName?: string;
}

/** A family's exposition as prom-client's registry reads it (`Metric.get()`). */
interface ExposedFamily {
  readonly name: string;
  readonly help: string;
  readonly type: "counter" | "histogram";
  readonly aggregator: "sum";
  readonly values: ExposedValue[];
}

/** Label values as a map key (only when a child is created, never per event). */
function childKey(values: readonly string[]): string {
  return values.join("\u0000");
}

/**
 * A counter of events: each child is a number behind a closure made once.
 * A child is shown from its first increment (`inc(0)` shows it at 0).
 */
class EventCounter {
  readonly type = "counter";
  readonly aggregator = "sum";
  private readonly children = new Map<string, { labels: Record<string, string>; value: number; shown: boolean; inc: (value?: number) => void }>();

  constructor(
    registry: Registry,
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** The child of these label values (made on the first call). */
  labels(...values: string[]): { readonly inc: (value?: number) => void } {
    const key = childKey(values);
    let child = this.children.get(key);
    if (child === undefined) {
      const made = {
        labels: Object.fromEntries(this.labelNames.map((n, i) => [n, values[i] ?? ""])),
        value: 0,
        shown: false,
        inc: (value = 1) => {
          made.value += value;
          made.shown = true;
        },
      };
      child = made;
      this.children.set(key, made);
    }
    return child;
  }

  async get(): Promise<ExposedFamily> {
    const values: ExposedValue[] = [];
    for (const c of this.children.values()) if (c.shown) values.push({ labels: c.labels, value: c.value });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    for (const c of this.children.values()) c.value = 0;
  }
}

/** A histogram of events: each child is an array of bucket counts, a sum and a count. */
class EventHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  private readonly children = new Map<
    string,
    { labels: Record<string, string>; counts: Float64Array; sum: number; count: number; observe: (value: number) => void }
  >();

  constructor(
    registry: Registry,
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    /** Upper bounds, ascending; `+Inf` is added. */
    private readonly bounds: readonly number[],
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** The child of these label values (made on the first call, shown from its first observation unless unlabelled). */
  labels(...values: string[]): { readonly observe: (value: number) => void } {
    const key = childKey(values);
    let child = this.children.get(key);
    if (child === undefined) {
      const bounds = this.bounds;
      const made = {
        labels: Object.fromEntries(this.labelNames.map((n, i) => [n, values[i] ?? ""])),
        // Per bucket, not cumulative; the last is above every bound.
        counts: new Float64Array(bounds.length + 1),
        sum: 0,
        count: 0,
        observe: (value: number) => {
          let i = 0;
          while (i < bounds.length && value > bounds[i]!) i++;
          made.counts[i]!++;
          made.sum += value;
          made.count++;
        },
      };
      child = made;
      this.children.set(key, made);
    }
    return child;
  }

  async get(): Promise<ExposedFamily> {
    const values: ExposedValue[] = [];
    for (const c of this.children.values()) {
      // A labelled child from its first observation; the one child of an unlabelled histogram always.
      if (c.count === 0 && this.labelNames.length > 0) continue;
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += c.counts[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { le, ...c.labels }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: "+Inf", ...c.labels }, value: c.count });
      values.push({ metricName: `${this.name}_sum`, labels: c.labels, value: c.sum });
      values.push({ metricName: `${this.name}_count`, labels: c.labels, value: c.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    for (const c of this.children.values()) {
      c.counts.fill(0);
      c.sum = 0;
      c.count = 0;
    }
  }
}

/**
 * Children of a counter for a fixed list of label values, created at once
 * with the value 0, so that each series exists (and `rate()` works) before
 * the first event.
 */
function zeroed(counter: EventCounter, values: readonly (readonly string[])[]): ((value?: number) => void)[] {
  return values.map((labels) => {
    const child = counter.labels(...labels);
    child.inc(0);
    return child.inc;
  });
}

/** The index of a method in {@link HTTP_METHODS}, or its length (`other`). */
function methodIndex(method: string): number {
  switch (method) {
    case "GET":
      return 0;
    case "HEAD":
      return 1;
    case "POST":
      return 2;
    case "PUT":
      return 3;
    case "PATCH":
      return 4;
    case "DELETE":
      return 5;
    case "OPTIONS":
      return 6;
    case "MERGE":
      return 7;
    default:
      return 8;
  }
}

/** `1xx` … `5xx` as 0 … 4; anything else 5 (`other`). */
function statusClassIndex(status: number): number {
  const c = Math.floor(status / 100);
  return c >= 1 && c <= 5 ? c - 1 : 5;
}

/**
 * Small integers for the values of an open label (RPC services, store
 * collections): the first `max` values seen get their own index, later ones
 * share `other`.
 */
class BoundedNames {
  private readonly indexes = new Map<string, number>();
  readonly names: string[] = [];
  constructor(private readonly max: number) {}
  /** The index of `name`; {@link max} when it is `other`. */
  indexOf(name: string): number {
    const i = this.indexes.get(name);
    if (i !== undefined) return i;
    if (this.names.length >= this.max) return this.max;
    this.indexes.set(name, this.names.length);
    this.names.push(name);
    return this.names.length - 1;
  }
  nameOf(index: number): string {
    return this.names[index] ?? "other";
  }
}

/** Creates the prom-client implementation of the metrics port. */
export function createPrometheusMetrics(options: PrometheusMetricsOptions = {}): PrometheusMetrics {
  const clock = options.clock ?? (() => new Date());
  const registry = new Registry();
  const startedAt = clock();
  let sources: MetricSources = {};
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry });

  // HTTP: one child per (route, service, method, status class), made on first use.
  const httpLabels = ["route", "service", "method", "status_class"];
  const httpTotal = new EventCounter(registry, "erplink_http_requests_total", "HTTP requests answered, every protocol (REST, OData, gRPC, gRPC-Web, Connect), by route class, RPC service, method and status class.", httpLabels);
  const httpSeconds = new EventHistogram(registry, "erplink_http_request_duration_seconds", "Time from a request's arrival to the end of its answer (seconds), by route class, RPC service, method and status class.", httpLabels, LATENCY_BUCKETS);
  const rpcServices = new BoundedNames(MAX_SERVICES);
  const SERVICE_SLOTS = MAX_SERVICES + 2; // "" (not an RPC), the named ones, other
  const METHOD_SLOTS = HTTP_METHODS.length + 1;
  const CLASS_SLOTS = STATUS_CLASSES.length;
  const httpChildren: (Child | undefined)[] = new Array(ROUTES.length * SERVICE_SLOTS * METHOD_SLOTS * CLASS_SLOTS);

  // RPC calls: one child per (service, method, code).
  const rpcTotal = new EventCounter(registry, "erplink_rpc_calls_total", "gRPC, gRPC-Web and Connect calls finished, by service, method and status code.", ["service", "method", "code"]);
  const rpcSeconds = new EventHistogram(registry, "erplink_rpc_call_duration_seconds", "Time a call took in erplink's services, interceptors included (seconds), by service and method.", ["service", "method"], LATENCY_BUCKETS);
  interface RpcMethod {
    readonly observe: (value: number) => void;
    readonly codes: ((value?: number) => void)[];
  }
  const rpcMethods = new Map<string, { names: BoundedNames; methods: (RpcMethod | undefined)[] }>();
  const RPC_CODE_INDEX = new Map<string, number>(RPC_CODES.map((c, i) => [c, i]));

  // The data path.
  const denials = new EventCounter(registry, "erplink_data_denials_total", "Data requests refused by a permission step or the rate limit (401, 403, 429), by the request log's denial step in lower case.", ["step"]);
  const denialChildren = [...zeroed(denials, DENIAL_STEPS.map((s) => [s.toLowerCase()])), denials.labels("other").inc];
  const upstreamTotal = new EventCounter(registry, "erplink_data_upstream_requests_total", "Data requests sent to back ends, by the back end's status class, or error (no answer) or timeout.", ["status_class"]);
  const upstreamSeconds = new EventHistogram(registry, "erplink_data_upstream_duration_seconds", "Time from sending a data request to the back end's answer headers, a resend after a refused CSRF or OAuth token included (seconds), by status class.", ["status_class"], LATENCY_BUCKETS);
  const upstreamClasses = [...STATUS_CLASSES.slice(0, 5), "error", "timeout"];
  const upstreamIncs = zeroed(upstreamTotal, upstreamClasses.map((c) => [c]));
  const upstreamChildren: Child[] = upstreamClasses.map((c, i) => ({ inc: upstreamIncs[i]!, observe: upstreamSeconds.labels(c).observe }));
  const lookups = new EventCounter(registry, "erplink_metadata_cache_lookups_total", "Lookups of a service's $metadata model: hit, negative_hit (a failure remembered for a few seconds) or miss (fetched).", ["result"]);
  const lookupChildren = zeroed(lookups, CACHE_LOOKUPS.map((r) => [r]));
  const metadataFetches = new EventCounter(registry, "erplink_metadata_fetches_total", "$metadata documents fetched from back ends, by result (ok, refused, unreachable, timeout).", ["result"]);
  const metadataSeconds = new EventHistogram(
    registry,
    "erplink_metadata_fetch_duration_seconds",
    "Time to fetch and read a $metadata document (seconds).",
    [],
    LATENCY_BUCKETS,
  ).labels();
  // Only a CSRF fetch can end with "none" (no token issued).
  const RESULTS_EXCEPT_NONE: readonly FetchResult[] = FETCH_RESULTS.filter((r) => r !== "none");
  const metadataFetchChildren = zeroed(metadataFetches, RESULTS_EXCEPT_NONE.map((r) => [r]));
  const tokenFetches = new EventCounter(registry, "erplink_upstream_token_fetches_total", "OAuth 2.0 token requests (kind oauth) and SAP CSRF token fetches (kind csrf) for back ends, by result (ok, none: no CSRF token issued, refused, unreachable, timeout).", ["kind", "result"]);
  // An OAuth token endpoint never answers "no token": that is refused.
  const tokenChildren = {
    oauth: zeroed(tokenFetches, FETCH_RESULTS.filter((r) => r !== "none").map((r) => ["oauth", r])),
    csrf: zeroed(tokenFetches, FETCH_RESULTS.map((r) => ["csrf", r])),
  };
  new Gauge({
    name: "erplink_metadata_cache_entries",
    help: "$metadata models and remembered failures in the cache.",
    registers: [registry],
    collect() {
      this.set(sources.metadataCache?.() ?? 0);
    },
  });

  // Authorization decisions.
  const decisions = new EventCounter(registry, "erplink_authorization_decisions_total", "Decisions of the Authorize RPC (api authorize) and of Envoy's external authorization Check (api ext_authz), by outcome: allowed, the denial step, invalid_request or error.", ["api", "outcome"]);
  const decisionChildren = AUTHORIZATION_APIS.map((api) => [
    ...zeroed(decisions, AUTHORIZATION_OUTCOMES.map((o) => [api, o])),
    decisions.labels(api, "other").inc,
  ]);

  // The store.
  const storeSeconds = new EventHistogram(registry, "erplink_store_operation_duration_seconds", "Time of a store operation (seconds), failed ones included, by collection and operation.", ["collection", "operation"], STORE_BUCKETS);
  const storeErrors = new EventCounter(registry, "erplink_store_operation_errors_total", "Store operations that failed, by collection, operation and error (unavailable, duplicate_key, revision_mismatch, other).", ["collection", "operation", "error"]);
  const collections = new BoundedNames(MAX_COLLECTIONS);
  const OP_SLOTS = STORE_OPERATIONS.length + 1;
  const storeChildren: ({ observe: (v: number) => void; errors: ((v?: number) => void)[] } | undefined)[] = new Array(
    (MAX_COLLECTIONS + 1) * OP_SLOTS,
  );

  // State read at scrape time.
  new Gauge({
    name: "erplink_request_log_queued",
    help: "Request-log entries waiting to be written (a batch being written included).",
    registers: [registry],
    collect() {
      this.set(sources.requestLog?.().queued ?? 0);
    },
  });
  new Counter({
    name: "erplink_request_log_written_total",
    help: "Request-log entries written to the store.",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(sources.requestLog?.().written ?? 0);
    },
  });
  new Counter({
    name: "erplink_request_log_dropped_total",
    help: "Request-log entries dropped because the queue was full (the store unreachable for long).",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(sources.requestLog?.().dropped ?? 0);
    },
  });
  new Counter({
    name: "erplink_request_log_evicted_total",
    help: "Request-log entries removed, oldest first, to keep the log within ERPLINK_LOG_MAX_ENTRIES (not an error).",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(sources.requestLog?.().evicted ?? 0);
    },
  });
  new Gauge({
    name: "erplink_api_key_cache_entries",
    help: "API keys cached in this process by the hash of their secret: known keys, and hashes remembered as unknown.",
    labelNames: ["state"],
    registers: [registry],
    collect() {
      const keys = sources.apiKeys?.();
      this.set({ state: "known" }, keys?.known ?? 0);
      this.set({ state: "unknown" }, keys?.unknown ?? 0);
    },
  });
  new Gauge({
    name: "erplink_api_key_sync_lag_seconds",
    help: "Seconds since this process last read the API keys other processes changed (since the start before the first read).",
    registers: [registry],
    collect() {
      const last = sources.apiKeys?.().lastSyncAt ?? startedAt;
      this.set(Math.max(0, (clock().getTime() - last.getTime()) / 1000));
    },
  });
  new Counter({
    name: "erplink_api_key_sync_failures_total",
    help: "Reads of the changed API keys that failed (retried at the next interval).",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(sources.apiKeys?.().syncFailures ?? 0);
    },
  });

  // The connection guard (src/gateway/abuse-guard.ts).
  const guardCounter = (name: string, help: string, read: (c: NonNullable<ReturnType<NonNullable<MetricSources["connections"]>>>) => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        const counts = sources.connections?.();
        this.inc(counts === undefined ? 0 : read(counts));
      },
    });
  guardCounter(
    "erplink_http2_sessions_calmed_total",
    "HTTP/2 sessions closed with GOAWAY ENHANCE_YOUR_CALM because their client reset streams faster than its budget (each also refuses the address for a while).",
    (c) => c.calmed,
  );
  guardCounter(
    "erplink_connections_refused_total",
    "Connections closed on arrival because their address had just been sent away for abuse.",
    (c) => c.refusedConnections,
  );
  guardCounter(
    "erplink_http2_sessions_sent_away_total",
    "HTTP/2 sessions asked to go away (GOAWAY NO_ERROR) after their client cut 200 answers short, before Node's session memory accounting would refuse their streams.",
    (c) => c.cancelledAway,
  );
  guardCounter("erplink_http2_streams_refused_total", "HTTP/2 streams refused with REFUSED_STREAM because the process had its most streams open.", (c) => c.refusedStreams);

  return {
    registry,
    async scrape() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
    watch(added) {
      sources = { ...sources, ...added };
    },
    http: {
      request(route, service, method, status, seconds) {
        const r = routeIndex(route);
        const s = service === "" ? 0 : rpcServices.indexOf(service) + 1;
        const m = methodIndex(method);
        const c = statusClassIndex(status);
        const i = ((r * SERVICE_SLOTS + s) * METHOD_SLOTS + m) * CLASS_SLOTS + c;
        let child = httpChildren[i];
        if (child === undefined) {
          const labels = [
            ROUTES[r]!,
            s === 0 ? "" : rpcServices.nameOf(s - 1),
            HTTP_METHODS[m] ?? "other",
            STATUS_CLASSES[c]!,
          ];
          child = { inc: httpTotal.labels(...labels).inc, observe: httpSeconds.labels(...labels).observe };
          httpChildren[i] = child;
        }
        child.inc();
        child.observe(seconds);
      },
    },
    rpc: {
      call(service, method, code, seconds) {
        let byService = rpcMethods.get(service);
        if (byService === undefined) {
          // Beyond the bound, every further service shares `other`.
          const name = rpcMethods.size < MAX_SERVICES ? service : "other";
          byService = rpcMethods.get(name) ?? { names: new BoundedNames(MAX_METHODS_PER_SERVICE), methods: [] };
          rpcMethods.set(name, byService);
          service = name;
        }
        const m = byService.names.indexOf(method);
        let entry = byService.methods[m];
        if (entry === undefined) {
          const methodName = byService.names.nameOf(m);
          entry = { observe: rpcSeconds.labels(service, methodName).observe, codes: [] };
          byService.methods[m] = entry;
        }
        const c = RPC_CODE_INDEX.get(code) ?? RPC_CODES.length;
        let inc = entry.codes[c];
        if (inc === undefined) {
          inc = rpcTotal.labels(service, byService.names.nameOf(m), RPC_CODES[c] ?? "other").inc;
          entry.codes[c] = inc;
        }
        inc();
        entry.observe(seconds);
      },
    },
    data: {
      request(facts: DataRequestFacts, status: number) {
        // A denial is what the client was answered with: a store outage while
        // the key was looked up is a 503, not an invalid key.
        if (facts.denialStep !== "" && (status === 401 || status === 403 || status === 429)) {
          denialChildren[indexIn(DENIAL_STEPS, facts.denialStep)]!();
        }
        if (facts.upstreamMethod === "") return;
        if (facts.upstreamStatus > 0) {
          const child = upstreamChildren[Math.min(statusClassIndex(facts.upstreamStatus), 4)]!;
          child.inc();
          child.observe(facts.upstreamDurationMs / 1000);
        } else {
          upstreamChildren[status === 504 ? 6 : 5]!.inc();
        }
      },
      metadataLookup(result: CacheLookup) {
        lookupChildren[indexIn(CACHE_LOOKUPS, result) % CACHE_LOOKUPS.length]!();
      },
      metadataFetch(result: FetchResult, seconds: number) {
        const i = RESULTS_EXCEPT_NONE.indexOf(result);
        metadataFetchChildren[i < 0 ? 1 : i]!();
        metadataSeconds.observe(seconds);
      },
      tokenFetch(kind: "oauth" | "csrf", result: FetchResult) {
        if (kind === "oauth") {
          const i = RESULTS_EXCEPT_NONE.indexOf(result);
          tokenChildren.oauth[i < 0 ? 1 : i]!();
        } else {
          tokenChildren.csrf[indexIn(FETCH_RESULTS, result) % FETCH_RESULTS.length]!();
        }
      },
    },
    authorization: {
      decided(api: AuthorizationApi, outcome: AuthorizationOutcome) {
        const a = api === "ext_authz" ? 1 : 0;
        decisionChildren[a]![indexIn(AUTHORIZATION_OUTCOMES, outcome)]!();
      },
    },
    store: {
      operation(collection, operation, seconds, error) {
        const col = collections.indexOf(collection);
        const op = indexIn(STORE_OPERATIONS, operation);
        const i = col * OP_SLOTS + op;
        let child = storeChildren[i];
        if (child === undefined) {
          child = {
            observe: storeSeconds.labels(collections.nameOf(col), STORE_OPERATIONS[op] ?? "other").observe,
            errors: [],
          };
          storeChildren[i] = child;
        }
        child.observe(seconds);
        if (error !== undefined) {
          const e = indexIn(STORE_ERRORS, error) % STORE_ERRORS.length;
          let inc = child.errors[e];
          if (inc === undefined) {
            inc = storeErrors.labels(collections.nameOf(col), STORE_OPERATIONS[op] ?? "other", STORE_ERRORS[e]!).inc;
            child.errors[e] = inc;
          }
          inc();
        }
      },
    },
  };
}
