/**
 * Shared setup and checks of the forwarding fuzzer: an erplink listening on
 * a real port of 127.0.0.1 (composed as `src/app.ts` does, with the one-port
 * server, on the test store), a recording upstream behind it, the data key,
 * and the property every exchange must satisfy (see `checkExchange`).
 *
 * Lives outside test/ because uvu runs every file there.
 */
import type { IncomingHttpHeaders } from "node:http";
import { createRouterTransport } from "@connectrpc/connect";
import fc from "fast-check";
import type { AccessLogEntry } from "../../src/gateway/app.js";
import { createGateway } from "../../src/gateway/app.js";
import { bodyUrlRelative } from "../../src/gateway/odata/batch.js";
import { analyzeBatch } from "../../src/gateway/odata/batch.js";
import { jsonValue, parseJson } from "../../src/gateway/odata/json.js";
import { isJsonType } from "../../src/gateway/odata/media-type.js";
import { parseMetadata, type ServiceModel } from "../../src/gateway/odata/metadata.js";
import { analyzeRequest, type RequestBody } from "../../src/gateway/odata/request.js";
import { createDualProtocolServer } from "../../src/gateway/server.js";
import { createServiceLayer } from "../../src/services/layer.js";
import { ENCRYPTION_KEY, MASTER_KEY, openTestStore } from "../world.js";
import type { FuzzCase } from "./generators.js";
import { metadataOf, permissionsOf, permitted, type Universe } from "./model.js";
import { readRequest, rootPathOf, violations, type Reading } from "./oracle.js";
import { RawClient, type RawResponse } from "./raw-client.js";
import type { Received, RecordingUpstream } from "./upstream.js";

/** The seed of a run: `ERPLINK_FUZZ_SEED`, else the fixed default. */
export function fuzzSeed(fallback = 20260211): number {
  const env = process.env.ERPLINK_FUZZ_SEED;
  if (env === undefined || env === "") return fallback;
  const n = Number(env);
  if (!Number.isSafeInteger(n)) throw new Error(`ERPLINK_FUZZ_SEED must be an integer, not '${env}'`);
  return n;
}

/** A positive integer from the environment, else `fallback`. */
export function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === "") return fallback;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, not '${v}'`);
  return n;
}

// ---------------------------------------------------------------- the in-process erplink

/** An erplink on a real port, with the request-log entries it produced, by request id. */
export interface FuzzGateway {
  readonly host: string;
  readonly port: number;
  /** Calls the admin API with the master key (JSON in and out). */
  admin(method: "POST" | "GET", path: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** The request-log entry of a request id, once erplink has recorded it (undefined after `waitMs`). */
  entry(requestId: string, waitMs: number): Promise<LoggedAccesses | undefined>;
  close(): Promise<void>;
}

/** What the request log says erplink authorized. */
export interface LoggedAccesses {
  readonly instance: string;
  readonly service: string;
  readonly accesses: readonly { readonly entity: string; readonly operation: string }[];
  readonly status: number;
  readonly upstreamStatus: number;
  /** The whole entry, when the in-process gateway recorded it. */
  readonly full?: AccessLogEntry;
}

/**
 * Composes erplink as `src/app.ts` does (service layer, gateway, the
 * one-port server) over the test store (embedded in memory, or MongoDB when
 * the suite runs on it), with the request log's entries also kept here, and
 * listens on 127.0.0.1.
 */
export async function startFuzzGateway(options: { upstreamTimeoutMs?: number; extAuthzToken?: string; analysisCache?: boolean } = {}): Promise<FuzzGateway> {
  const store = await openTestStore();
  const entries = new Map<string, LoggedAccesses>();
  const waiters = new Map<string, () => void>();
  const layer = createServiceLayer(store, {
    masterKey: MASTER_KEY,
    encryptionKey: ENCRYPTION_KEY,
    adminLimits: { perMinute: 1_000_000, perDay: 10_000_000 },
    dataLimits: { perMinute: 1_000_000, perDay: 10_000_000 },
    logRetentionMs: 86_400_000,
    log: { error: () => {} },
  });
  const record = (e: AccessLogEntry) => {
    if (e.instance === "") return;
    entries.set(e.requestId, { instance: e.instance, service: e.service, accesses: e.accesses, status: e.status, upstreamStatus: e.upstreamStatus, full: e });
    waiters.get(e.requestId)?.();
  };
  const app = await createGateway({
    transport: createRouterTransport(layer.routes, { router: { interceptors: [...layer.inProcessInterceptors] } }),
    connect: { routes: layer.routes, interceptors: layer.publicInterceptors },
    admit: (a) => layer.admitRest(a),
    record,
    data: layer.dataPlane,
    upstreamTimeoutMs: options.upstreamTimeoutMs ?? 5_000,
    ready: () => store.ping(),
    logger: false,
    bodyLimit: 1024 * 1024,
    ...(options.extAuthzToken !== undefined ? { extAuthz: { injectionToken: options.extAuthzToken } } : {}),
    ...(options.analysisCache !== undefined ? { analysisCache: options.analysisCache } : {}),
    serverFactory: (handler) => createDualProtocolServer(handler, { firstByteTimeoutMs: 10_000, keepAliveTimeoutMs: 72_000, http2SessionTimeoutMs: 72_000 }),
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const addr = app.server.address();
  if (addr === null || typeof addr === "string") throw new Error("no address");
  return {
    host: "127.0.0.1",
    port: addr.port,
    async admin(method, path, body) {
      const res = await app.inject({ method, url: path, headers: { authorization: `Bearer ${MASTER_KEY}` }, ...(body !== undefined ? { payload: body as object } : {}) });
      return { status: res.statusCode, body: JSON.parse(res.body) };
    },
    async entry(requestId, waitMs) {
      const hit = entries.get(requestId);
      if (hit !== undefined || waitMs <= 0) {
        entries.delete(requestId);
        return hit;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        waiters.set(requestId, () => {
          clearTimeout(timer);
          resolve();
        });
      });
      waiters.delete(requestId);
      const found = entries.get(requestId);
      entries.delete(requestId);
      return found;
    },
    async close() {
      await app.close();
      await layer.stop();
      await store.dispose();
    },
  };
}

/**
 * Creates a system, the universe's instances (pointing at `upstreamBase`)
 * and the data key; returns the key's secret.
 */
export async function provision(
  admin: (method: "POST", path: string, body: unknown) => Promise<{ status: number; body: any }>,
  universe: Universe,
  upstreamBase: string,
  credentials?: { username: string; password: string },
): Promise<string> {
  const sys = await admin("POST", "/admin/systems", { name: `fuzz-${Date.now()}` });
  if (sys.status !== 201) throw new Error(`cannot create the system: ${JSON.stringify(sys.body)}`);
  for (const instance of universe.instances) {
    const services = Object.fromEntries(Object.entries(instance.services).map(([name, s]) => [name, { path: s.path }]));
    const res = await admin("POST", `/admin/systems/${sys.body.data.id}/instances`, {
      name: instance.name,
      base_url: `${upstreamBase}${instance.basePath}/`,
      services,
      ...(instance.sapClient !== undefined ? { sap_client: instance.sapClient } : {}),
      ...(credentials ? { auth: { type: "basic", ...credentials } } : {}),
    });
    if (res.status !== 201) throw new Error(`cannot create instance ${instance.name}: ${JSON.stringify(res.body)}`);
  }
  const key = await admin("POST", "/admin/api-keys", { name: "fuzz data key", permissions: permissionsOf(universe) });
  if (key.status !== 201) throw new Error(`cannot create the key: ${JSON.stringify(key.body)}`);
  return key.body.data.key as string;
}

// ---------------------------------------------------------------- one exchange

/** One request through erplink and what came of it. */
export interface Exchange {
  readonly case: FuzzCase;
  readonly requestId: string;
  readonly response: RawResponse;
  /** Records the upstream received carrying this request's id. */
  readonly forwarded: readonly Received[];
  /** Other records in the request's window that are not erplink's own fetches. */
  readonly strays: readonly Received[];
  readonly entry?: LoggedAccesses;
}

let counter = 0;

/** Sends a case through erplink with the key and collects what the upstream received for it. */
export async function runCase(
  client: RawClient,
  upstream: RecordingUpstream,
  key: string,
  c: FuzzCase,
  entryOf: ((requestId: string, waitMs: number) => Promise<LoggedAccesses | undefined>) | undefined,
): Promise<Exchange> {
  const requestId = `fz-${process.pid}-${++counter}`;
  const mark = upstream.received.length;
  let response: RawResponse;
  try {
    response = await client.send({
      method: c.method,
      target: c.target,
      headers: [["Authorization", `Bearer ${key}`], ["X-Request-Id", requestId], ...c.headers],
      ...(c.body ? { body: c.body } : {}),
    });
  } catch (err) {
    client.close();
    response = { status: 0, headers: {}, body: Buffer.from(String(err)), closed: true };
  }
  const window = upstream.received.slice(mark);
  const forwarded = window.filter((r) => r.requestId === requestId);
  const strays = window.filter((r) => r.requestId !== requestId && !upstream.isInternal(r));
  const entry = forwarded.length > 0 && entryOf !== undefined ? await entryOf(requestId, 2_000) : undefined;
  return { case: c, requestId, response, forwarded, strays, ...(entry ? { entry } : {}) };
}

// ---------------------------------------------------------------- the property

/** One way an exchange breaks the promise. */
export interface Problem {
  /** A short class name (for grouping counterexamples). */
  readonly kind: string;
  /** Where in the request, for readings (`path`, `$expand`, `body`, `batch:$filter`, …). */
  readonly where?: string;
  readonly message: string;
  readonly reading?: Reading;
}

/** Parsed `$metadata` per universe (universes may serve different documents under the same names). */
const models = new WeakMap<Universe, Map<string, ServiceModel>>();

function modelFor(universe: Universe, instance: string, service: string): ServiceModel | undefined {
  const inst = universe.instances.find((i) => i.name === instance);
  const svc = inst?.services[service];
  if (inst === undefined || svc === undefined) return undefined;
  let byRoot = models.get(universe);
  if (byRoot === undefined) models.set(universe, (byRoot = new Map()));
  const k = `${instance}|${service}`;
  let m = byRoot.get(k);
  if (m === undefined) {
    m = parseMetadata(metadataOf(universe.services[service]!, svc.version));
    byRoot.set(k, m);
  }
  return m;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** The body as erplink's analyzer is given it by the data route (see `bodyOf` there), from the received bytes. */
function analyzerBody(body: Buffer, contentType: string | undefined): RequestBody | undefined {
  if (body.length === 0) return undefined;
  const declared = isJsonType((contentType ?? "").split(";")[0]!.trim().toLowerCase());
  const other: RequestBody = { kind: "other", contentType: (contentType ?? "").split(";")[0]!.trim() };
  if (!declared && !/^\s*[[{]/.test(body.subarray(0, 64).toString("latin1"))) return other;
  try {
    return { kind: "json", value: jsonValue(parseJson(UTF8.decode(body), "request body")) };
  } catch {
    return other;
  }
}

function headerRecord(h: IncomingHttpHeaders): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(h)) out[k] = Array.isArray(v) ? v.join(", ") : v;
  return out;
}

/** erplink's own analyzer run again on what the upstream received: its accesses, or why it refuses. */
export function reanalyze(universe: Universe, instance: string, service: string, r: Received): { accesses: string[]; optional?: string[] } | { refused: string } {
  const root = rootPathOf(universe, { instance, service });
  const model = modelFor(universe, instance, service);
  const t = r.target;
  if (!(t === root || t.startsWith(`${root}/`) || t.startsWith(`${root}?`))) return { refused: `the received target is not below ${root}` };
  const rest = t.slice(root.length);
  const q = rest.indexOf("?");
  const path = q < 0 ? rest : rest.slice(0, q);
  const query = q < 0 ? "" : rest.slice(q + 1);
  const headers = headerRecord(r.headers);
  const clientRoot = `/odata/${instance}/${service}`;
  // The instance's own SAP client is on every upstream request; the analyzer accepts that one.
  const sapClient = universe.instances.find((i) => i.name === instance)?.sapClient;
  const analysis = analyzeRequest({
    method: r.method,
    path,
    query,
    headers,
    ...(model ? { model } : {}),
    ...(/^\/?\$batch$/.test(path) ? {} : { body: analyzerBody(r.body, headers["content-type"]) }),
    resolveReference: (u) => bodyUrlRelative(u, clientRoot),
    sapClient,
  });
  switch (analysis.kind) {
    case "invalid":
    case "denied":
    case "stopped":
      return { refused: `${analysis.kind}: ${analysis.message}` };
    case "metadata":
      return { accesses: [] };
    case "access": {
      // What the key was allowed besides shows in what was sent: an upsert without If-Match: * creates; an update
      // is answered (a read of what it changed) unless its Prefer is exactly erplink's `return=minimal`.
      // (A key that may read the answer has the client's own `return=minimal` forwarded as it is: then the answer's
      // reads may have been authorized or not.)
      const minimal = headers["prefer"]?.trim() === "return=minimal";
      const answer = (analysis.answer ?? []).map((a) => `${a.operation} ${a.entitySet}`);
      const granted = [...(analysis.upsertEntitySet !== undefined ? [`create ${analysis.upsertEntitySet}`] : []), ...(minimal ? [] : answer)];
      return { accesses: [...analysis.accesses.map((a) => `${a.operation} ${a.entitySet}`), ...granted], ...(minimal ? { optional: answer } : {}) };
    }
    case "batch": {
      const batch = analyzeBatch({
        contentType: headers["content-type"] ?? "",
        body: r.body,
        // Part URLs are forwarded relative to the root; URLs in part bodies as the client wrote them, below its root.
        clientRoot,
        model,
        may: (entity, operation) => permitted(universe, service, entity, operation),
        sapClient,
      });
      if (batch.kind !== "access") return { refused: `batch ${batch.kind}: ${batch.message}` };
      return { accesses: batch.accesses.map((a) => `${a.operation} ${a.entitySet}`) };
    }
  }
}

/**
 * The order of the entity step, as the answer shows it: a 403
 * at the entity step names a set the key may not touch (no grant names it),
 * and a 404 for an entity set names one it may touch (the service lacks
 * it): never a 404 for a set the key may not touch, which would tell it
 * whether the set exists.
 */
function entityStepProblems(universe: Universe, service: string, status: number, message: string): Problem[] {
  const grants = universe.grants[service] ?? {};
  const mayTouch = (set: string) => Object.hasOwn(grants, set) || Object.hasOwn(grants, "*");
  const denied = /^API key has no access to entity '([^']*)'(?: \(batch .*\))?$/.exec(message);
  if (status === 403 && denied && mayTouch(denied[1]!)) {
    return [{ kind: "entity-step-for-touchable", message: `403 at the entity step for '${denied[1]}', which the key may touch: ${message}` }];
  }
  const missing = /(?:^|: )entity set '([^']*)' not found(?: in '.*')?$/.exec(message);
  if (status === 404 && missing && !mayTouch(missing[1]!)) {
    return [{ kind: "not-found-for-untouchable", message: `404 for '${missing[1]}', which the key may not touch: ${message}` }];
  }
  return [];
}

/** Options of {@link checkExchange}. */
export interface CheckOptions {
  /** Where the request was authorized when the request log cannot say (the CAP suite reads the log later). */
  readonly rootFallback?: { instance: string; service: string };
  /** Compare the request log's accesses with a re-analysis (needs `entry`). */
  readonly compareLog: boolean;
}

const READ_ONLY = new Set(["GET", "HEAD", "DELETE"]);

/**
 * The property: erplink refused (an answer of its own, nothing forwarded), or
 * the upstream received exactly one request that stays inside the service
 * root and touches only what the key may, under every interpretation; reads
 * and deletes carry no body; a plain write's body is the client's, byte for
 * byte; and the request log's accesses are what erplink's analyzer makes of
 * the received request.
 */
export function checkExchange(universe: Universe, ex: Exchange, options: CheckOptions): Problem[] {
  const problems: Problem[] = [];
  for (const s of ex.strays) {
    problems.push({ kind: "stray-upstream-request", message: `the upstream received a request that is not erplink's own fetch nor carries this request's id: ${describeReceived(s)}` });
  }
  if (ex.forwarded.length === 0) {
    const res = ex.response;
    if (res.status !== 0 && res.status < 400) {
      problems.push({ kind: "success-without-forwarding", message: `erplink answered ${res.status} but forwarded nothing` });
    } else if (res.headers["x-request-id"] === ex.requestId) {
      // erplink's own refusal: the error envelope.
      // A HEAD answer has no body: its headers say what the body would have been.
      let ok = ex.case.method === "HEAD" && /json/.test(res.headers["content-type"] ?? "");
      try {
        const body = JSON.parse(res.body.toString("utf8")) as { error?: { code?: unknown; message?: unknown } };
        ok ||= typeof body.error?.code === "string" && typeof body.error.message === "string";
        if (typeof body.error?.message === "string") problems.push(...entityStepProblems(universe, ex.case.service, res.status, body.error.message));
      } catch {
        // not JSON
      }
      if (!ok) problems.push({ kind: "refusal-not-enveloped", message: `erplink refused with ${res.status} but not in its error envelope: ${res.body.toString("utf8").slice(0, 200)}` });
    }
    return problems;
  }
  if (ex.forwarded.length > 1) {
    problems.push({ kind: "forwarded-more-than-once", message: `the upstream received ${ex.forwarded.length} requests for one client request` });
  }
  const r = ex.forwarded[0]!;
  if (r.unparsed !== undefined) problems.push({ kind: "unparsable-upstream-request", message: `the upstream could not parse what it received: ${r.unparsed}` });
  const root = ex.entry !== undefined ? { instance: ex.entry.instance, service: ex.entry.service } : options.rootFallback;
  if (root === undefined) {
    problems.push({ kind: "no-log-entry", message: "a request was forwarded but erplink logged no entry naming its instance and service" });
    return problems;
  }
  const inst = universe.instances.find((i) => i.name === root.instance);
  if (inst === undefined || inst.services[root.service] === undefined) {
    problems.push({ kind: "unknown-root", message: `forwarded for ${root.instance}/${root.service}, which the universe does not have` });
    return problems;
  }
  if (universe.grants[root.service] === undefined) {
    problems.push({ kind: "service-without-grant", message: `forwarded for service ${root.service}, on which the key has no permission` });
  }
  // Under every interpretation.
  for (const reading of readRequest(universe, root, { method: r.method, target: r.target, headers: r.headers, body: r.body })) {
    for (const v of violations(universe, root.service, reading)) {
      problems.push({ kind: `${v.kind}[${reading.interpretation}]`, where: v.where, message: v.message, reading });
    }
  }
  // The SAP client (tenant) and session are the instance's: no other may reach the back end in a header.
  const sapClient = inst.sapClient;
  for (const h of ["sap-client", "sap-contextid", "sap-contextid-accept"]) {
    const v = r.headers[h];
    if (v === undefined || (h === "sap-client" && sapClient !== undefined && String(v).trim() === sapClient)) continue;
    problems.push({ kind: "sap-switch", where: "header", message: `the upstream received header ${h}: ${String(v)}` });
  }
  // Bodies.
  const methods = new Set([r.method.toUpperCase(), ...["x-http-method", "x-http-method-override"].map((h) => String(r.headers[h] ?? "").trim().toUpperCase()).filter((m) => m !== "")]);
  const reading = [...methods].every((m) => READ_ONLY.has(m));
  if (reading && (r.body.length > 0 || (r.headers["transfer-encoding"] !== undefined && r.method !== "GET"))) {
    problems.push({ kind: "body-on-read-or-delete", message: `a ${[...methods].join("/")} reached the upstream with a body of ${r.body.length} bytes` });
  }
  // A $batch is written anew (If-Match: *, Prefer: return=minimal added to parts where the key may not do more): its
  // parts are compared by analysis below.
  if (ex.case.kind === "plain" && !READ_ONLY.has(r.method.toUpperCase()) && !/\/\$batch$/.test(r.target.split("?")[0] ?? "")) {
    const sent = ex.case.body ?? Buffer.alloc(0);
    if (!sent.equals(r.body)) problems.push({ kind: "body-changed", message: `the body forwarded (${r.body.length} bytes) is not the client's (${sent.length} bytes)` });
  }
  // The request log says what was authorized: erplink's analyzer must read the received request the same way.
  if (options.compareLog && ex.entry !== undefined) {
    const again = reanalyze(universe, root.instance, root.service, r);
    const logged = ex.entry.accesses.map((a) => `${a.operation} ${a.entity}`).sort();
    if ("refused" in again) {
      problems.push({ kind: "reanalysis-refuses", message: `erplink's analyzer refuses the request it forwarded (${again.refused}); it authorized [${logged.join(", ")}]` });
    } else {
      const now = [...new Set([...again.accesses, ...(again.optional ?? []).filter((a) => logged.includes(a))])].sort();
      const was = [...new Set(logged)].sort();
      if (now.join("|") !== was.join("|")) {
        problems.push({ kind: "reanalysis-differs", message: `authorized [${was.join(", ")}] but the received request analyzes as [${now.join(", ")}]` });
      }
    }
  }
  return problems;
}

// ---------------------------------------------------------------- reports

function printable(s: string): string {
  return JSON.stringify(s);
}

/** One received request, readable. */
export function describeReceived(r: Received): string {
  if (r.unparsed !== undefined) return `(unparsed) ${printable(r.unparsed.slice(0, 300))}`;
  const headers = Object.entries(r.headers)
    .filter(([k]) => !["authorization", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "forwarded", "connection", "host", "x-request-id", "cookie", "x-csrf-token"].includes(k))
    .map(([k, v]) => `${k}: ${String(v)}`);
  return `${r.method} ${printable(r.target)}${headers.length ? ` [${headers.join("; ")}]` : ""}${r.body.length ? ` body ${printable(r.body.toString("latin1").slice(0, 600))}` : ""}`;
}

/** The failure report of an exchange: request, answer, what the upstream received, every problem with the reading behind it. */
export function report(ex: Exchange, problems: readonly Problem[]): string {
  const c = ex.case;
  const lines = [
    `request (${c.kind}): ${c.method} ${printable(c.target)}`,
    `  headers: ${c.headers.map(([n, v]) => `${n}: ${v}`).join("; ") || "(none)"}`,
    `  body: ${c.body ? printable(c.body.toString("latin1").slice(0, 800)) : "(none)"}`,
    `erplink answered ${ex.response.status}${ex.response.status >= 400 ? `: ${ex.response.body.toString("utf8").slice(0, 300)}` : ""}`,
    `authorized (request log): ${ex.entry ? `${ex.entry.instance}/${ex.entry.service} [${ex.entry.accesses.map((a) => `${a.operation} ${a.entity}`).join(", ")}]` : "(no entry)"}`,
    `upstream received: ${ex.forwarded.length === 0 ? "nothing" : ex.forwarded.map(describeReceived).join("\n    ")}`,
    "problems:",
  ];
  for (const p of problems) {
    lines.push(`  - ${p.kind}: ${p.message}`);
    if (p.reading) lines.push(`      ${p.reading.interpretation} read it as ${p.reading.seen.slice(0, 400)}`);
  }
  return lines.join("\n");
}

/** The class of a problem set: its sorted, distinct kinds, interpretations included (for grouping counterexamples). */
export function classOf(problems: readonly Problem[]): string {
  return [...new Set(problems.map((p) => (p.where ? `${p.kind}@${p.where}` : p.kind)))].sort().join(" + ");
}

/** Requests and forwarded requests per shape of a run (see ./shapes.ts), for its report. */
export class ShapeStats {
  readonly #counts = new Map<string, { requests: number; forwarded: number }>();
  count(c: FuzzCase, forwarded: boolean): void {
    const name = c.shape ?? "legacy";
    const entry = this.#counts.get(name) ?? { requests: 0, forwarded: 0 };
    entry.requests++;
    if (forwarded) entry.forwarded++;
    this.#counts.set(name, entry);
  }
  toString(): string {
    return [...this.#counts].map(([name, e]) => `${name} ${e.forwarded}/${e.requests}`).join(", ");
  }
}

/** fast-check parameters of a run. */
export function runParameters(seed: number, numRuns: number, timeLimitMs: number): fc.Parameters<unknown> {
  return {
    seed,
    numRuns,
    interruptAfterTimeLimit: timeLimitMs,
    markInterruptAsFailure: false,
    endOnFailure: false,
    maxSkipsPerRun: 10,
    includeErrorInReport: true,
  };
}
