/**
 * The prom-client implementation of the metrics port (src/metrics/prometheus.ts):
 * each event moves exactly its series, label values stay within their fixed
 * lists whatever the callers pass (no caller can grow the number of series),
 * state is read at scrape time, and the exposition parses.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { NOOP_METRICS, outcomeOfDataDecision, type AuthorizationOutcome, type HttpRoute } from "../../src/metrics/port.js";
import { MAX_COLLECTIONS, MAX_SERVICES, createPrometheusMetrics } from "../../src/metrics/prometheus.js";
import { Exposition } from "../../test-support/metrics.js";

const Prom = suite("prometheus metrics");

async function expose(metrics: ReturnType<typeof createPrometheusMetrics>): Promise<Exposition> {
  return new Exposition((await metrics.scrape()).body);
}

const facts = (denialStep: string, upstreamMethod = "", upstreamStatus = 0, upstreamDurationMs = 0) => ({
  denialStep,
  upstreamMethod,
  upstreamStatus,
  upstreamDurationMs,
});

Prom("HTTP requests: one counter and one histogram series per (route, service, method, status class)", async () => {
  const m = createPrometheusMetrics({ processMetrics: false });
  m.http.request("admin", "", "GET", 200, 0.003);
  m.http.request("admin", "", "GET", 204, 0.004);
  m.http.request("admin", "", "POST", 400, 0.002);
  m.http.request("rpc", "erplink.admin.v1.SystemService", "POST", 200, 0.5);
  const e = await expose(m);
  assert.equal(e.nonZero("erplink_http_requests_total"), [
    { route: "admin", service: "", method: "GET", status_class: "2xx" },
    { route: "admin", service: "", method: "POST", status_class: "4xx" },
    { route: "rpc", service: "erplink.admin.v1.SystemService", method: "POST", status_class: "2xx" },
  ]);
  assert.is(e.value("erplink_http_requests_total", { route: "admin", service: "", method: "GET", status_class: "2xx" }), 2);
  const rpc = { route: "rpc", service: "erplink.admin.v1.SystemService", method: "POST", status_class: "2xx" };
  assert.is(e.count("erplink_http_request_duration_seconds", rpc), 1);
  assert.is(e.sum("erplink_http_request_duration_seconds", rpc), 0.5);
  const buckets = e.sample("erplink_http_request_duration_seconds", rpc)!.buckets!;
  assert.is(buckets["0.25"], "0");
  assert.is(buckets["0.5"], "1");
});

Prom("HTTP labels are bounded: unknown methods, statuses, routes and services beyond the bound are other", async () => {
  const m = createPrometheusMetrics({ processMetrics: false });
  m.http.request("data", "", "BREW", 200, 0.001);
  m.http.request("data", "", "brew", 200, 0.001);
  m.http.request("data", "", "GET", 999, 0.001);
  m.http.request("nonsense" as HttpRoute, "", "GET", 200, 0.001);
  for (let i = 0; i < MAX_SERVICES + 10; i++) m.http.request("rpc", `pkg.v1.Service${i}`, "POST", 200, 0.001);
  const e = await expose(m);
  assert.is(e.value("erplink_http_requests_total", { route: "data", service: "", method: "other", status_class: "2xx" }), 2);
  assert.is(e.value("erplink_http_requests_total", { route: "data", service: "", method: "GET", status_class: "other" }), 1);
  assert.is(e.value("erplink_http_requests_total", { route: "other", service: "", method: "GET", status_class: "2xx" }), 1);
  const services = new Set(e.nonZero("erplink_http_requests_total").filter((l) => l.route === "rpc").map((l) => l.service));
  assert.is(services.size, MAX_SERVICES + 1);
  assert.ok(services.has("pkg.v1.Service0") && services.has(`pkg.v1.Service${MAX_SERVICES - 1}`));
  assert.not.ok(services.has(`pkg.v1.Service${MAX_SERVICES}`));
  assert.is(e.value("erplink_http_requests_total", { route: "rpc", service: "other", method: "POST", status_class: "2xx" }), 10);
});

Prom("RPC calls by service, method and code; unknown codes are other; services beyond the bound are other", async () => {
  const m = createPrometheusMetrics({ processMetrics: false });
  m.rpc.call("erplink.authz.v1.AuthorizationService", "Authorize", "ok", 0.001);
  m.rpc.call("erplink.authz.v1.AuthorizationService", "Authorize", "ok", 0.001);
  m.rpc.call("erplink.authz.v1.AuthorizationService", "Authorize", "invalid_argument", 0.001);
  m.rpc.call("erplink.authz.v1.AuthorizationService", "Authorize", "teapot", 0.001);
  for (let i = 0; i < MAX_SERVICES + 3; i++) m.rpc.call(`pkg.v1.S${i}`, "Call", "ok", 0.001);
  const e = await expose(m);
  const authz = (code: string) => ({ service: "erplink.authz.v1.AuthorizationService", method: "Authorize", code });
  assert.is(e.value("erplink_rpc_calls_total", authz("ok")), 2);
  assert.is(e.value("erplink_rpc_calls_total", authz("invalid_argument")), 1);
  assert.is(e.value("erplink_rpc_calls_total", authz("other")), 1);
  assert.is(e.count("erplink_rpc_call_duration_seconds", { service: "erplink.authz.v1.AuthorizationService", method: "Authorize" }), 4);
  const services = new Set(e.nonZero("erplink_rpc_calls_total").map((l) => l.service));
  // The authorization service took one place: MAX_SERVICES - 1 of the others have theirs.
  assert.is(services.size, MAX_SERVICES + 1);
  assert.is(e.value("erplink_rpc_calls_total", { service: "other", method: "Call", code: "ok" }), 4);
});

Prom("data path: denials only when answered 401, 403 or 429; upstream by status class, error or timeout", async () => {
  const m = createPrometheusMetrics({ processMetrics: false });
  m.data.request(facts("OPERATION"), 403);
  m.data.request(facts("KEY_INVALID"), 401);
  m.data.request(facts("KEY_INVALID"), 503); // the store was unreachable: not a denial
  m.data.request(facts("RATE_LIMITED"), 429);
  m.data.request(facts("NOT_ALLOWED"), 403);
  m.data.request(facts("SOMETHING_NEW"), 403);
  m.data.request(facts("", "GET", 200, 12), 200);
  m.data.request(facts("", "GET", 404, 3), 404);
  m.data.request(facts("", "POST", 503, 40), 503);
  m.data.request(facts("", "GET", 0, 0), 502);
  m.data.request(facts("", "GET", 0, 0), 504);
  m.data.request(facts(""), 400); // refused before anything was sent
  const e = await expose(m);
  const denials = Object.fromEntries(e.family("erplink_data_denials_total").metrics.map((s) => [s.labels!.step, Number(s.value)]));
  assert.equal(denials, {
    key_invalid: 1,
    key_expired: 0,
    instance: 0,
    service: 0,
    entity: 0,
    operation: 1,
    not_allowed: 1,
    rate_limited: 1,
    other: 1,
  });
  const upstream = Object.fromEntries(
    e.family("erplink_data_upstream_requests_total").metrics.map((s) => [s.labels!.status_class, Number(s.value)]),
  );
  assert.equal(upstream, { "1xx": 0, "2xx": 1, "3xx": 0, "4xx": 1, "5xx": 1, error: 1, timeout: 1 });
  assert.is(e.count("erplink_data_upstream_duration_seconds", { status_class: "2xx" }), 1);
  assert.is(e.sum("erplink_data_upstream_duration_seconds", { status_class: "2xx" }), 0.012);
  assert.is(e.sample("erplink_data_upstream_duration_seconds", { status_class: "error" }), undefined, "no time without an answer");
});

Prom("caches and token fetches: each result its own series, all present from the start", async () => {
  const m = createPrometheusMetrics({ processMetrics: false });
  let e = await expose(m);
  assert.equal(e.family("erplink_metadata_cache_lookups_total").metrics.map((s) => [s.labels!.result, s.value]), [
    ["hit", "0"],
    ["negative_hit", "0"],
    ["miss", "0"],
  ]);
  assert.equal(e.family("erplink_upstream_token_fetches_total").metrics.length, 4 + 5);
  m.data.metadataLookup("miss");
  m.data.metadataLookup("hit");
  m.data.metadataLookup("hit");
  m.data.metadataLookup("negative_hit");
  m.data.metadataFetch("ok", 0.2);
  m.data.metadataFetch("refused", 0.1);
  m.data.tokenFetch("oauth", "ok");
  m.data.tokenFetch("oauth", "none"); // not a thing for OAuth: a refusal
  m.data.tokenFetch("csrf", "none");
  m.data.tokenFetch("csrf", "timeout");
  m.watch({ metadataCache: () => 7 });
  e = await expose(m);
  assert.is(e.value("erplink_metadata_cache_lookups_total", { result: "hit" }), 2);
  assert.is(e.value("erplink_metadata_cache_lookups_total", { result: "negative_hit" }), 1);
  assert.is(e.value("erplink_metadata_cache_lookups_total", { result: "miss" }), 1);
  assert.is(e.value("erplink_metadata_fetches_total", { result: "ok" }), 1);
  assert.is(e.value("erplink_metadata_fetches_total", { result: "refused" }), 1);
  assert.is(e.count("erplink_metadata_fetch_duration_seconds"), 2);
  assert.is(e.value("erplink_upstream_token_fetches_total", { kind: "oauth", result: "ok" }), 1);
  assert.is(e.value("erplink_upstream_token_fetches_total", { kind: "oauth", result: "refused" }), 1);
  assert.is(e.sample("erplink_upstream_token_fetches_total", { kind: "oauth", result: "none" }), undefined);
  assert.is(e.value("erplink_upstream_token_fetches_total", { kind: "csrf", result: "none" }), 1);
  assert.is(e.value("erplink_upstream_token_fetches_total", { kind: "csrf", result: "timeout" }), 1);
  assert.is(e.value("erplink_metadata_cache_entries"), 7);
});

Prom("authorization decisions by api and outcome; an unknown outcome is other", async () => {
  const m = createPrometheusMetrics({ processMetrics: false });
  m.authorization.decided("authorize", "allowed");
  m.authorization.decided("authorize", "allowed");
  m.authorization.decided("authorize", "rate_limited");
  m.authorization.decided("ext_authz", "entity");
  m.authorization.decided("authorize", "surprise" as AuthorizationOutcome);
  const e = await expose(m);
  assert.equal(e.nonZero("erplink_authorization_decisions_total"), [
    { api: "authorize", outcome: "allowed" },
    { api: "authorize", outcome: "rate_limited" },
    { api: "authorize", outcome: "other" },
    { api: "ext_authz", outcome: "entity" },
  ]);
  assert.is(e.sample("erplink_authorization_decisions_total", { api: "ext_authz", outcome: "other" }), undefined, "other is shown once used");
  assert.is(e.value("erplink_authorization_decisions_total", { api: "authorize", outcome: "allowed" }), 2);
  // Every (api, outcome) exists from the start, so rate() works before the first event.
  assert.is(e.family("erplink_authorization_decisions_total").metrics.length, 2 * 11 + 1);
});

Prom("store operations by collection and operation; errors by kind; collections beyond the bound are other", async () => {
  const m = createPrometheusMetrics({ processMetrics: false });
  m.store.operation("systems", "insert", 0.001, undefined);
  m.store.operation("systems", "insert", 0.002, "duplicate_key");
  m.store.operation("rate_windows", "increment", 0.0005, "unavailable");
  m.store.operation("systems", "dropDatabase", 0.001, undefined);
  for (let i = 0; i < MAX_COLLECTIONS; i++) m.store.operation(`c${i}`, "get", 0.001, undefined);
  const e = await expose(m);
  assert.is(e.count("erplink_store_operation_duration_seconds", { collection: "systems", operation: "insert" }), 2);
  assert.is(e.count("erplink_store_operation_duration_seconds", { collection: "systems", operation: "other" }), 1);
  assert.equal(e.nonZero("erplink_store_operation_errors_total"), [
    { collection: "systems", operation: "insert", error: "duplicate_key" },
    { collection: "rate_windows", operation: "increment", error: "unavailable" },
  ]);
  // systems and rate_windows took two places.
  assert.is(e.count("erplink_store_operation_duration_seconds", { collection: "other", operation: "get" }), 2);
});

Prom("state read at scrape time: the request log's queue and evictions, the key cache and the key sync's lag", async () => {
  let now = new Date("2026-01-02T03:04:05Z");
  const m = createPrometheusMetrics({ processMetrics: false, clock: () => now });
  const log = { queued: 3, written: 10, dropped: 0, evicted: 0 };
  const keys = { known: 2, unknown: 5, lastSyncAt: undefined as Date | undefined, syncFailures: 0 };
  m.watch({ requestLog: () => log, apiKeys: () => keys });
  now = new Date("2026-01-02T03:04:07.500Z");
  let e = await expose(m);
  assert.is(e.value("erplink_request_log_queued"), 3);
  assert.is(e.value("erplink_request_log_written_total"), 10);
  assert.is(e.value("erplink_request_log_dropped_total"), 0);
  assert.is(e.value("erplink_request_log_evicted_total"), 0);
  assert.is(e.value("erplink_api_key_cache_entries", { state: "known" }), 2);
  assert.is(e.value("erplink_api_key_cache_entries", { state: "unknown" }), 5);
  assert.is(e.value("erplink_api_key_sync_lag_seconds"), 2.5, "since the start before the first sync");
  Object.assign(log, { queued: 0, written: 13, dropped: 4, evicted: 7 });
  Object.assign(keys, { lastSyncAt: new Date("2026-01-02T03:04:07Z"), syncFailures: 1 });
  e = await expose(m);
  assert.is(e.value("erplink_request_log_queued"), 0);
  assert.is(e.value("erplink_request_log_written_total"), 13);
  assert.is(e.value("erplink_request_log_dropped_total"), 4);
  assert.is(e.value("erplink_request_log_evicted_total"), 7);
  assert.is(e.value("erplink_api_key_sync_lag_seconds"), 0.5);
  assert.is(e.value("erplink_api_key_sync_failures_total"), 1);
});

Prom("the connection guard's counts are read at scrape time: calmed sessions, refused connections and streams, 0 before it is watched", async () => {
  const m = createPrometheusMetrics({ processMetrics: false });
  let e = await expose(m);
  assert.is(e.value("erplink_http2_sessions_calmed_total"), 0);
  assert.is(e.value("erplink_connections_refused_total"), 0);
  assert.is(e.value("erplink_http2_streams_refused_total"), 0);
  assert.is(e.value("erplink_http2_sessions_sent_away_total"), 0);
  const counts = { calmed: 2, refusedConnections: 31, refusedStreams: 4, cancelledAway: 5 };
  m.watch({ connections: () => counts });
  e = await expose(m);
  assert.is(e.value("erplink_http2_sessions_calmed_total"), 2);
  assert.is(e.value("erplink_connections_refused_total"), 31);
  assert.is(e.value("erplink_http2_streams_refused_total"), 4);
  assert.is(e.value("erplink_http2_sessions_sent_away_total"), 5);
  counts.refusedConnections = 40;
  e = await expose(m);
  assert.is(e.value("erplink_connections_refused_total"), 40);
});

Prom("the exposition: every family typed and described; process metrics by default; one registry per instance", async () => {
  const a = createPrometheusMetrics();
  const b = createPrometheusMetrics();
  a.authorization.decided("authorize", "allowed");
  const scraped = await a.scrape();
  assert.is(scraped.contentType, "text/plain; version=0.0.4; charset=utf-8");
  const e = new Exposition(scraped.body);
  for (const name of ["process_cpu_user_seconds_total", "process_resident_memory_bytes", "nodejs_heap_size_used_bytes", "nodejs_eventloop_lag_seconds"]) {
    assert.ok(e.families.has(name), name);
  }
  assert.is(e.value("erplink_authorization_decisions_total", { api: "authorize", outcome: "allowed" }), 1);
  assert.is(new Exposition((await b.scrape()).body).value("erplink_authorization_decisions_total", { api: "authorize", outcome: "allowed" }), 0);
  // The registry's own view agrees with the text.
  const json = await a.registry.getMetricsAsJSON();
  const family = json.find((f) => f.name === "erplink_authorization_decisions_total")!;
  assert.is(family.values.find((v) => v.labels.api === "authorize" && v.labels.outcome === "allowed")!.value, 1);
});

Prom("no-op metrics accept every call and record nothing", () => {
  NOOP_METRICS.http.request("admin", "", "GET", 200, 1);
  NOOP_METRICS.rpc.call("s", "m", "ok", 1);
  NOOP_METRICS.data.request(facts("OPERATION"), 403);
  NOOP_METRICS.data.metadataLookup("hit");
  NOOP_METRICS.data.metadataFetch("ok", 1);
  NOOP_METRICS.data.tokenFetch("csrf", "ok");
  NOOP_METRICS.authorization.decided("authorize", "allowed");
  NOOP_METRICS.store.operation("systems", "get", 1, undefined);
  NOOP_METRICS.watch({ metadataCache: () => 1 });
  assert.ok(Object.isFrozen(NOOP_METRICS));
});

Prom("outcomeOfDataDecision: the denial step of a 401/403/429, allowed below 400, else invalid_request or error", () => {
  assert.is(outcomeOfDataDecision("", 200), "allowed");
  assert.is(outcomeOfDataDecision("", 304), "allowed");
  assert.is(outcomeOfDataDecision("KEY_INVALID", 401), "key_invalid");
  assert.is(outcomeOfDataDecision("ENTITY", 403), "entity");
  assert.is(outcomeOfDataDecision("NOT_ALLOWED", 403), "not_allowed");
  assert.is(outcomeOfDataDecision("RATE_LIMITED", 429), "rate_limited");
  assert.is(outcomeOfDataDecision("KEY_INVALID", 503), "error");
  assert.is(outcomeOfDataDecision("", 404), "invalid_request");
  assert.is(outcomeOfDataDecision("", 400), "invalid_request");
  assert.is(outcomeOfDataDecision("WHATEVER", 403), "invalid_request");
  assert.is(outcomeOfDataDecision("", 502), "error");
});

Prom.run();
