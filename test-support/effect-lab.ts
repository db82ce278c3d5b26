/**
 * The effect lab: erplink in process (`./world.ts`) in front of SAP CAP
 * (`./cap`) and SAP's Fiori elements mock server (`./mockserver`), each
 * behind a recording proxy (`./recording-proxy.ts`), where every exchange is
 * judged by what the back end's data layer did for it.
 *
 * `startEffectLab(permissions)` starts the two back ends and their proxies,
 * reads the services' `$metadata` straight from the back ends, creates a
 * world with one system and four instances, and one data key per entry of
 * `permissions`:
 * - `sap` (SAP's mock server, V2): API_BUSINESS_PARTNER (`BP`) and
 *   API_SALES_ORDER_SRV (`SO`);
 * - `trip` (SAP's mock server, V4): TripPin (`TRIP`);
 * - `s4` (SAP CAP, V4): API_BUSINESS_PARTNER (`BP4`) and API_NOTES (`NOTES4`);
 * - `s4v2` (SAP CAP, V2): the same two (`BP2`, `NOTES2`).
 *
 * `call` sends a request through erplink with a key and judges it with
 * `assertForwardedAsAuthorized` (./forwarded.ts): what the back end received
 * is what erplink authorized and logged (nothing on a refusal), and what its
 * data layer read and wrote is covered by the accesses authorized
 * (./effects.ts). `direct` goes to a back end straight, for seeding and for
 * checking the data afterwards; `mockEffects` and `capEffects` read what a
 * back end's data layer did for an exchange.
 *
 * `effectLabSuite(title, permissions)` is a uvu suite whose context is the
 * lab (started before its tests, closed after them), so its tests receive
 * it:
 *
 *     const E2E = effectLabSuite("…", { reader: { sap: { API_BUSINESS_PARTNER: { A_BusinessPartner: ["get"] } } } });
 *     E2E("…", async (ctx) => {
 *       assertError(await call(ctx, "reader", "DELETE", `${BP}/A_BusinessPartner('1')`), 403, "FORBIDDEN", lacks("delete", "A_BusinessPartner"));
 *     });
 *     E2E.run();
 */
import { suite, type Test } from "uvu";
import * as assert from "uvu/assert";
import type { LightMyRequestResponse } from "fastify";
import { parseMetadata } from "../src/gateway/odata/metadata.js";
import { startCapBackend, type CapBackend } from "./cap/index.js";
import { fromCap, fromMockServer } from "./effects.js";
import { assertForwardedAsAuthorized, type ForwardedService } from "./forwarded.js";
import { json, post } from "./http.js";
import { startMockServer, type MockServer } from "./mockserver/index.js";
import { startRecordingProxy, type Received, type RecordingProxy } from "./recording-proxy.js";
import { createWorld, type World } from "./world.js";

/** Through erplink: SAP's mock server (instances `sap`, V2, and `trip`, V4) and SAP CAP (`s4`, V4, and `s4v2`, V2). */
export const BP = "/odata/sap/API_BUSINESS_PARTNER";
export const SO = "/odata/sap/API_SALES_ORDER_SRV";
export const TRIP = "/odata/trip/TripPin";
export const BP4 = "/odata/s4/API_BUSINESS_PARTNER";
export const BP2 = "/odata/s4v2/API_BUSINESS_PARTNER";
export const NOTES4 = "/odata/s4/API_NOTES";
export const NOTES2 = "/odata/s4v2/API_NOTES";

/** Straight to the back ends. */
export const MOCK_BP = "/sap/opu/odata/sap/API_BUSINESS_PARTNER";
export const MOCK_SO = "/sap/opu/odata/sap/API_SALES_ORDER_SRV";
export const MOCK_TRIP = "/odata/trippin";
export const CAP_BP = "/odata/v4/api-business-partner";
export const CAP_NOTES = "/odata/v4/api-notes";

/** Every entity operation, for a permissions table. */
export const ALL = ["list", "get", "create", "update", "delete"];
export const MULTIPART = { "content-type": "multipart/mixed; boundary=b" };
export const JSON_TYPE = { "content-type": "application/json" };

/** Data keys to create: key name → the `permissions` of `POST /admin/api-keys` (instance → service → entity or operation → grants). */
export type Permissions = Record<string, Record<string, unknown>>;

/** The same services' grants on both SAP CAP instances (`s4`, V4, and `s4v2`, V2). */
export const onCap = (services: Record<string, unknown>) => ({ s4: services, s4v2: services });

export interface EffectLab {
  readonly cap: CapBackend;
  readonly mock: MockServer;
  readonly capProxy: RecordingProxy;
  readonly mockProxy: RecordingProxy;
  /** The services behind erplink, with their `$metadata` and effect oracles, for `assertForwardedAsAuthorized`. */
  readonly services: ForwardedService[];
  readonly world: World;
  /** Key name (as in the permissions table) → the key. */
  readonly keys: Record<string, string>;
  /** Closes erplink, then the proxies, then the back ends. */
  close(): Promise<void>;
}

type Started = { -readonly [K in keyof EffectLab]?: EffectLab[K] };

/** Both promises' values; when one fails, the other is still waited for (so that what it started can be stopped). */
async function both<A, B>(a: Promise<A>, b: Promise<B>): Promise<[A, B]> {
  const [x, y] = await Promise.allSettled([a, b]);
  if (x.status === "rejected") throw x.reason;
  if (y.status === "rejected") throw y.reason;
  return [x.value, y.value];
}

async function closeStarted(lab: Started): Promise<void> {
  await lab.world?.close();
  await Promise.all([lab.capProxy?.close(), lab.mockProxy?.close()]);
  await Promise.all([lab.cap?.stop(), lab.mock?.stop()]);
}

/**
 * Starts SAP CAP and SAP's mock server behind recording proxies and erplink in
 * front of them, with the instances `sap`, `trip`, `s4` and `s4v2` and a key
 * per entry of `permissions`. On a failure what started is stopped again (and
 * the failure logged: uvu drops what a hook throws).
 */
export async function startEffectLab(permissions: Permissions): Promise<EffectLab> {
  const lab: Started = {};
  try {
    const [cap, mock] = await both(
      startCapBackend().then((started) => (lab.cap = started)),
      startMockServer().then((started) => (lab.mock = started)),
    );
    const [capProxy, mockProxy] = await both(
      startRecordingProxy(cap.baseUrl).then((started) => (lab.capProxy = started)),
      startRecordingProxy(mock.baseUrl).then((started) => (lab.mockProxy = started)),
    );
    const model = async (backend: "cap" | "mock", root: string) => parseMetadata((await direct({ cap, mock }, backend, "GET", `${root}/$metadata`)).body);
    const onMock = async (clientRoot: string, upstreamRoot: string): Promise<ForwardedService> => ({ clientRoot, upstreamRoot, model: await model("mock", upstreamRoot), mock });
    const onCapService = async (clientRoot: string, upstreamRoot: string, service: string): Promise<ForwardedService> => ({
      clientRoot,
      upstreamRoot,
      model: await model("cap", upstreamRoot),
      cap: { backend: cap, service },
    });
    lab.services = await Promise.all([
      onMock(BP, MOCK_BP),
      onMock(SO, MOCK_SO),
      onMock(TRIP, MOCK_TRIP),
      onCapService(BP4, CAP_BP, "API_BUSINESS_PARTNER"),
      onCapService(BP2, "/odata/v2/api-business-partner", "API_BUSINESS_PARTNER"),
      onCapService(NOTES4, CAP_NOTES, "API_NOTES"),
      onCapService(NOTES2, "/odata/v2/api-notes", "API_NOTES"),
    ]);
    const world = (lab.world = await createWorld());
    const app = world.app;
    const sys = json(await post(app, "/admin/systems", { name: "S4HANA" })).data.id;
    const mockAuth = { type: "basic", ...mock.credentials };
    const capAuth = { type: "basic", ...cap.credentials };
    const capServices = { API_BUSINESS_PARTNER: { path: "api-business-partner" }, API_NOTES: { path: "api-notes" } };
    const instances: [string, string, Record<string, { path: string }>, unknown][] = [
      ["sap", `${mockProxy.baseUrl}/sap/opu/odata/sap/`, { API_BUSINESS_PARTNER: { path: "API_BUSINESS_PARTNER" }, API_SALES_ORDER_SRV: { path: "API_SALES_ORDER_SRV" } }, mockAuth],
      ["trip", `${mockProxy.baseUrl}/odata/`, { TripPin: { path: "trippin" } }, mockAuth],
      ["s4", `${capProxy.baseUrl}/odata/v4/`, capServices, capAuth],
      ["s4v2", `${capProxy.baseUrl}/odata/v2/`, capServices, capAuth],
    ];
    for (const [name, base_url, services, auth] of instances) {
      const res = await post(app, `/admin/systems/${sys}/instances`, { name, base_url, services, auth });
      assert.is(res.statusCode, 201, res.body);
    }
    lab.keys = {};
    for (const [name, granted] of Object.entries(permissions)) {
      const res = await post(app, "/admin/api-keys", { name, permissions: granted });
      assert.is(res.statusCode, 201, res.body);
      lab.keys[name] = json(res).data.key;
    }
    lab.close = () => closeStarted(lab);
    return lab as EffectLab;
  } catch (error) {
    console.error("starting the effect lab (SAP CAP, SAP's mock server, erplink) failed:", error);
    await closeStarted(lab).catch((closing) => console.error("stopping what the effect lab had started failed:", closing));
    throw error;
  }
}

/** A uvu suite whose context is an effect lab with `permissions`, started before the suite's tests and closed after them. */
export function effectLabSuite(title: string, permissions: Permissions): Test<EffectLab> {
  const lab = suite<EffectLab>(title);
  lab.before(async (ctx) => {
    Object.assign(ctx, await startEffectLab(permissions));
  });
  lab.after(async (ctx) => {
    await ctx.close?.();
  });
  return lab;
}

/** A request straight to a back end with its credentials (JSON unless `$metadata`). */
export async function direct(
  lab: Pick<EffectLab, "cap" | "mock">,
  backend: "cap" | "mock",
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: string }> {
  const server = backend === "cap" ? lab.cap : lab.mock;
  const { username, password } = server.credentials;
  const headers: Record<string, string> = {
    authorization: `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`,
    accept: path.endsWith("/$metadata") ? "application/xml" : "application/json",
    ...(body !== undefined ? { "content-type": "application/json" } : {}),
  };
  const res = await fetch(`${server.baseUrl}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: res.status, body: await res.text() };
}

/** Adds a row at SAP's mock server (straight, not through erplink). */
export async function seed(lab: EffectLab, collection: string, row: Record<string, unknown>): Promise<void> {
  const res = await direct(lab, "mock", "POST", collection, row);
  assert.is(res.status, 201, `seeding ${collection}: ${res.body}`);
}

/** One entity read straight from a back end (V2's `d` unwrapped); it must be there. */
export async function entity(lab: EffectLab, backend: "cap" | "mock", path: string): Promise<Record<string, unknown>> {
  const res = await direct(lab, backend, "GET", path);
  assert.is(res.status, 200, `${path}: ${res.body}`);
  const parsed = JSON.parse(res.body);
  return parsed.d ?? parsed;
}

/** The mock server's answer for one entity, read straight: its status and (when found) the entity. */
export async function mockEntity(lab: EffectLab, path: string): Promise<{ status: number; entity: Record<string, unknown> | undefined }> {
  const res = await direct(lab, "mock", "GET", path);
  if (res.status !== 200) return { status: res.status, entity: undefined };
  const parsed = JSON.parse(res.body);
  return { status: 200, entity: parsed.d ?? parsed };
}

/** The service a client URL addresses. */
export function serviceOf(lab: EffectLab, url: string): ForwardedService {
  const found = lab.services.find((s) => url.startsWith(`${s.clientRoot}/`));
  assert.ok(found, `no service for ${url}`);
  return found!;
}

/**
 * A request through erplink with a data key. What the back end received is
 * what erplink authorized and logged (nothing on a refusal), and what its
 * data layer did is covered by the accesses authorized; `judged: false`
 * leaves the effect oracle out (the caller judges the effects itself).
 */
export async function call(
  lab: EffectLab,
  key: string,
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
  judged = true,
): Promise<LightMyRequestResponse> {
  const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
  const res = await lab.world.app.inject({
    method: method as "GET",
    url,
    headers: {
      authorization: `Bearer ${lab.keys[key]}`,
      accept: "application/json",
      ...(payload !== undefined && typeof body !== "string" ? JSON_TYPE : {}),
      ...headers,
    },
    ...(payload !== undefined ? { payload } : {}),
  });
  const service = serviceOf(lab, url);
  const logs = { store: lab.world.store, flush: () => lab.world.layer.logWriter.flush() };
  const judge = judged ? service : { ...service, mock: undefined, cap: undefined };
  await assertForwardedAsAuthorized(logs, service.cap ? lab.capProxy : lab.mockProxy, judge, String(res.headers["x-request-id"]), /\/\$batch$/.test(url) ? undefined : payload);
  return res;
}

/** What the back end received for an exchange (exactly one request, else the check in `call` failed). */
export function upstream(lab: EffectLab, res: LightMyRequestResponse): Received {
  const id = String(res.headers["x-request-id"]);
  const got = [...lab.capProxy.received, ...lab.mockProxy.received].filter((r) => r.headers["x-request-id"] === id);
  assert.is(got.length, 1, `the back end received ${got.length} requests for ${id}`);
  return got[0]!;
}

/** The accesses erplink logged for an exchange, as `operation entity`. */
export async function authorized(lab: EffectLab, res: LightMyRequestResponse): Promise<{ entity: string; operation: string }[]> {
  await lab.world.layer.logWriter.flush();
  const id = String(res.headers["x-request-id"]);
  const entry = (await lab.world.store.logs.query({ limit: 1000 })).items.find((e) => e.requestId === id);
  assert.ok(entry, `no request-log entry for ${id}`);
  return entry!.accesses.map((a) => ({ entity: a.entity, operation: a.operation }));
}

/** erplink's error answer, exactly: status and envelope. */
export function assertError(res: LightMyRequestResponse, status: number, code: string, message: string): void {
  assert.is(res.statusCode, status, res.body);
  assert.equal(JSON.parse(res.body), { error: { code, message, requestId: res.headers["x-request-id"] } });
}

/** erplink's refusal of a missing grant (in batch part `partNo` when `batchPart` names what needed it). */
export const lacks = (operation: string, entity: string, batchPart?: string, partNo = 1) =>
  `API key lacks permission '${operation}' for entity '${entity}'${batchPart === undefined ? "" : ` (batch part ${partNo}: ${batchPart})`}`;

/**
 * What SAP's mock server's data layer did for a request, as `operation
 * entitySet` (reads to locate a written row included; a row of no entity set
 * as the sets of its type, `|`-separated).
 */
export async function mockEffects(lab: EffectLab, res: LightMyRequestResponse): Promise<string[]> {
  return fromMockServer(await lab.mock.effects(String(res.headers["x-request-id"]))).map((e) => `${e.operation} ${e.entitySets.join("|")}`);
}

/** What SAP CAP's database did for a request on the sets of `service`, as `operation entitySet`. */
export async function capEffects(lab: EffectLab, res: LightMyRequestResponse, service: string): Promise<string[]> {
  return fromCap(await lab.cap.effects(String(res.headers["x-request-id"])), service).map((e) => `${e.operation} ${e.entitySets.join("|")}`);
}

/** A multipart `$batch` body (boundary `b`) of parts outside any change set. */
export function batchOf(...requests: string[]): string {
  return [...requests.flatMap((r) => ["--b", "Content-Type: application/http", "Content-Transfer-Encoding: binary", "", r]), "--b--", ""].join("\r\n");
}

/** A multipart `$batch` body (boundary `b`) of one change set holding `requests` (each with its MIME headers, if any). */
export function changeSetOf(...requests: (string | { mime: string[]; http: string })[]): string {
  const parts = requests.flatMap((r) => {
    const { mime, http } = typeof r === "string" ? { mime: [], http: r } : r;
    return ["--c", "Content-Type: application/http", "Content-Transfer-Encoding: binary", ...mime, "", http];
  });
  return ["--b", "Content-Type: multipart/mixed; boundary=c", "", ...parts, "--c--", "--b--", ""].join("\r\n");
}

/** One HTTP request inside a batch part. */
export function part(requestLine: string, headers: string[] = [], body = ""): string {
  return [requestLine, ...headers, "", body].join("\r\n");
}
