/**
 * The permission order at the entity step: a key without a grant
 * for an entity set gets 403 at the entity step with the specification's
 * message whether or not the service has the set, before anything else
 * about it is read; a key that may touch a set the service lacks gets 404
 * `NOT_FOUND`. Through the REST data path (exact envelopes, the request
 * log's denial step and accesses, nothing forwarded), in every place a
 * request names an entity set (the path, `$batch` parts, URLs in bodies,
 * function and action imports); then as properties over the forwarding
 * fuzzer's requests: the data path's stages answer exactly alike, request
 * log included, whether or not `$metadata` has a set the key may not touch,
 * and never answer 404 for one; and the `Authorize` RPC gives the entity
 * step's denial exactly as the data path does.
 */
import { createClient } from "@connectrpc/connect";
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AuthorizationService, DenialStep, Operation } from "../../../src/gen/erplink/authz/v1/authorization_pb.js";
import { parseMetadata } from "../../../src/gateway/odata/metadata.js";
import { parsePermissions, type Permissions } from "../../../src/services/permissions.js";
import { decide, stageInstance, type StageAnswer, type StageKey } from "../../../test-support/data-stages.js";
import { fuzzCase } from "../../../test-support/fuzz/generators.js";
import { envInt, fuzzSeed } from "../../../test-support/fuzz/harness.js";
import { FUZZ_UNIVERSE, SALES, metadataOf, permissionsOf, type Universe } from "../../../test-support/fuzz/model.js";
import { startSalesWorld, stopSalesWorld, type SalesWorld } from "../../../test-support/sales-world.js";

type Ctx = SalesWorld;

const Step = suite<Ctx>("data path: the entity step comes before the entity set's lookup");

Step.before.each(async (ctx) => {
  // `Nope` is granted but not in the service; `Products`, `Categories`, `Search` and `ResetAll` are in it but not granted; `Secrets` is neither.
  Object.assign(ctx, await startSalesWorld({
    reader: { SalesOrders: ["list", "get"], Customers: ["get"], Nope: ["list", "get"] },
    writer: { SalesOrders: ["create"], Customers: ["get"], Nope: ["get"] },
    wild: { "*": ["list", "get"] },
    cased: { products: ["list"], SalesOrders: ["list"] },
  }));
});

Step.after.each(async (ctx) => {
  await stopSalesWorld(ctx);
});

/** One data request and the exact answer expected. */
interface Case {
  readonly key: string;
  readonly method?: string;
  readonly url: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  /** 200 (forwarded to `forwarded`), or the refusal's status, code and message. */
  readonly status: number;
  readonly code?: string;
  readonly message?: string;
  /** The request log's denial step and accesses (`operation entity`). */
  readonly denialStep: string;
  readonly accesses: readonly string[];
  readonly forwarded?: string;
}

const S = "/odata/prod/SALES";
const NO_ACCESS = (set: string) => `API key has no access to entity '${set}'`;
const MULTIPART = { "content-type": "multipart/mixed; boundary=b" };
const JSON_TYPE = { "content-type": "application/json" };
const batch = (...lines: string[]) => `${lines.map((l) => `--b\r\nContent-Type: application/http\r\n\r\n${l} HTTP/1.1\r\n\r\n\r\n`).join("")}--b--\r\n`;

/** An untouchable set that exists and one that does not: both cases answer byte for byte alike. */
const both = (f: (set: string) => Case): Case[] => [f("Products"), f("Secrets")];

const CASES: readonly Case[] = [
  // The resource path.
  ...both((set) => ({ key: "reader", url: `${S}/${set}`, status: 403, code: "FORBIDDEN", message: NO_ACCESS(set), denialStep: "ENTITY", accesses: [`list ${set}`] })),
  ...both((set) => ({ key: "reader", method: "DELETE", url: `${S}/${set}('1')`, status: 403, code: "FORBIDDEN", message: NO_ACCESS(set), denialStep: "ENTITY", accesses: [`delete ${set}`] })),
  // Before anything else about the entity: its key properties, its properties, options naming them.
  ...both((set) => ({ key: "reader", url: `${S}/${set}(Nope=1)/Nope?$expand=Nope`, status: 403, code: "FORBIDDEN", message: NO_ACCESS(set), denialStep: "ENTITY", accesses: [] })),
  ...both((set) => ({
    key: "reader",
    method: "POST",
    url: `${S}/${set}`,
    headers: { "content-type": "application/pdf" },
    body: "%PDF-1.7",
    status: 403,
    code: "FORBIDDEN",
    message: NO_ACCESS(set),
    denialStep: "ENTITY",
    accesses: [`create ${set}`],
  })),
  // A set the key may touch that the service lacks: 404, whatever the operation and whatever follows.
  { key: "reader", url: `${S}/Nope`, status: 404, code: "NOT_FOUND", message: "entity set 'Nope' not found", denialStep: "", accesses: [] },
  { key: "reader", method: "DELETE", url: `${S}/Nope(1)/Nope`, status: 404, code: "NOT_FOUND", message: "entity set 'Nope' not found", denialStep: "", accesses: [] },
  { key: "wild", url: `${S}/Secrets`, status: 404, code: "NOT_FOUND", message: "entity set 'Secrets' not found", denialStep: "", accesses: [] },
  { key: "wild", url: `${S}/Products`, status: 200, denialStep: "", accesses: ["list Products"], forwarded: "GET /erp/SALES/Products" },
  // Names matched regardless of case count only for a set the key may touch; otherwise the name is looked at as written.
  // A name in another case is another name: not granted here, so the entity step stops it.
  { key: "cased", url: `${S}/salesorders`, status: 403, code: "FORBIDDEN", message: NO_ACCESS("salesorders"), denialStep: "ENTITY", accesses: ["list salesorders"] },
  { key: "cased", url: `${S}/products`, status: 404, code: "NOT_FOUND", message: "entity set 'products' not found", denialStep: "", accesses: [] },
  { key: "cased", url: `${S}/Products`, status: 403, code: "FORBIDDEN", message: NO_ACCESS("Products"), denialStep: "ENTITY", accesses: ["list Products"] },
  // Function and action imports are names like entity sets: the entity step first, then the gateway's own refusal.
  { key: "reader", url: `${S}/Search()`, status: 403, code: "FORBIDDEN", message: NO_ACCESS("Search"), denialStep: "ENTITY", accesses: [] },
  // `*` never includes an operation: invoking one needs an entry naming it.
  { key: "wild", url: `${S}/Search()`, status: 403, code: "FORBIDDEN", message: "API key has no access to operation 'Search'", denialStep: "ENTITY", accesses: ["invoke Search"] },
  { key: "reader", method: "POST", url: `${S}/ResetAll`, headers: JSON_TYPE, body: "{}", status: 403, code: "FORBIDDEN", message: NO_ACCESS("ResetAll"), denialStep: "ENTITY", accesses: ["create ResetAll"] },
  // $batch: the first part naming a set the key may not touch stops the batch (later parts are not read); earlier parts are authorized first.
  ...both((set) => ({
    key: "reader",
    method: "POST",
    url: `${S}/$batch`,
    headers: MULTIPART,
    body: batch("GET SalesOrders", `GET ${set}('1')`, "GET SalesOrders(1)/Nope"),
    status: 403,
    code: "FORBIDDEN",
    message: `${NO_ACCESS(set)} (batch part 2: resource path)`,
    denialStep: "ENTITY",
    accesses: ["list SalesOrders", `get ${set}`],
  })),
  ...both((set) => ({
    key: "reader",
    method: "POST",
    url: `${S}/$batch`,
    headers: MULTIPART,
    body: batch("DELETE SalesOrders(1)", `GET ${set}`),
    status: 403,
    code: "FORBIDDEN",
    message: "API key lacks permission 'delete' for entity 'SalesOrders' (batch part 1: resource path)",
    denialStep: "OPERATION",
    accesses: ["delete SalesOrders"],
  })),
  {
    key: "reader",
    method: "POST",
    url: `${S}/$batch`,
    headers: MULTIPART,
    body: batch("GET SalesOrders", "GET Nope", "GET Products"),
    status: 404,
    code: "NOT_FOUND",
    message: "batch part 2 (GET Nope): entity set 'Nope' not found",
    denialStep: "",
    accesses: ["list SalesOrders"],
  },
  // URLs in bodies: a bind to a set the key may not touch, whether or not it exists; to one it may touch that the service lacks.
  ...both((set) => ({
    key: "writer",
    method: "POST",
    url: `${S}/SalesOrders`,
    headers: JSON_TYPE,
    body: `{"ID":1,"Customer@odata.bind":"${set}('1')"}`,
    status: 403,
    code: "FORBIDDEN",
    message: NO_ACCESS(set),
    denialStep: "ENTITY",
    accesses: ["create SalesOrders", "get Customers", `get ${set}`],
  })),
  {
    key: "writer",
    method: "POST",
    url: `${S}/SalesOrders`,
    headers: JSON_TYPE,
    body: '{"ID":1,"Customer@odata.bind":"Nope(\'1\')"}',
    status: 404,
    code: "NOT_FOUND",
    message: "entity set 'Nope' not found in 'Customer@odata.bind'",
    denialStep: "",
    accesses: ["create SalesOrders", "get Customers"],
  },
  // Navigation targets come from the model: they exist, and are checked at the entity step as every access is.
  {
    key: "reader",
    url: `${S}/SalesOrders(1)?$expand=Items($expand=Product)`,
    status: 403,
    code: "FORBIDDEN",
    message: NO_ACCESS("Products"),
    denialStep: "ENTITY",
    accesses: ["get SalesOrders", "list SalesOrders", "list Products"],
  },
];

Step("every place a request names an entity set: 403 at the entity step alike whether the set exists, 404 only for a set the key may touch (exact envelopes, request log)", async (ctx) => {
  const answers = new Map<string, string>();
  for (const [i, c] of CASES.entries()) {
    const label = `case ${i + 1}: ${c.key} ${c.method ?? "GET"} ${c.url}`;
    const before = ctx.seen.length;
    const res = await ctx.world.app.inject({
      method: (c.method ?? "GET") as "GET",
      url: c.url,
      headers: { authorization: `Bearer ${ctx.keys[c.key]}`, "x-request-id": `step-${i}`, ...c.headers },
      ...(c.body !== undefined ? { payload: c.body } : {}),
    });
    assert.is(res.statusCode, c.status, `${label}: ${res.body}`);
    if (c.status === 200) {
      assert.equal(ctx.seen.slice(before), [c.forwarded], `${label}: forwarded`);
    } else {
      assert.equal(JSON.parse(res.body), { error: { code: c.code, message: c.message, requestId: `step-${i}` } }, label);
      assert.is(ctx.seen.length, before, `${label}: nothing forwarded`);
      // Whether the set exists never shows: the same request naming Products or Secrets gets the same bytes (but the name).
      const shape = `${c.key} ${c.method ?? "GET"} ${c.url.replace(/Products|Secrets/g, "X")} ${c.body?.replace(/Products|Secrets/g, "X")}`;
      const body = res.body.replace(/Products|Secrets/g, "X").replace(/step-\d+/, "");
      if (answers.has(shape)) assert.is(body, answers.get(shape), `${label}: the same answer as for the other set`);
      answers.set(shape, body);
    }
    await ctx.world.layer.logWriter.flush();
    const entry = (await ctx.world.store.logs.query({ limit: 1000 })).items.find((e) => e.requestId === `step-${i}`);
    assert.equal(
      [entry?.status, entry?.denialStep, entry?.accesses.map((a) => `${a.operation} ${a.entity}`)],
      [c.status, c.denialStep, c.accesses],
      `${label}: request log`,
    );
  }
});

Step("Authorize gives the entity step's denial exactly as the data path does, whether or not the set exists", async (ctx) => {
  const authz = createClient(AuthorizationService, ctx.world.transport);
  for (const set of ["Products", "Secrets"]) {
    const data = await ctx.world.app.inject({ method: "GET", url: `${S}/${set}`, headers: { authorization: `Bearer ${ctx.keys.reader}` } });
    const res = await authz.authorize({ apiKey: ctx.keys.reader, instance: "prod", service: "SALES", entity: set, operation: Operation.LIST, dryRun: true });
    assert.equal(
      [res.allowed, res.denialStep, res.code, res.message],
      [false, DenialStep.ENTITY, JSON.parse(data.body).error.code, JSON.parse(data.body).error.message],
    );
  }
  // Authorize reads no $metadata: for a set the key may touch it answers for the name given (the data path adds the 404).
  const nope = await authz.authorize({ apiKey: ctx.keys.reader, instance: "prod", service: "SALES", entity: "Nope", operation: Operation.LIST, dryRun: true });
  assert.equal([nope.allowed, nope.denialStep], [true, DenialStep.UNSPECIFIED]);
});

Step.run();

// ---------------------------------------------------------------------------
// Properties over the forwarding fuzzer's requests, on the stages themselves.

/** The fuzz universe with a set the key has no grant for, `Secrets`, in SALES. */
const WITH_SECRETS: Universe = { ...FUZZ_UNIVERSE, services: { ...FUZZ_UNIVERSE.services, SALES: { ...SALES, sets: { ...SALES.sets, Secrets: "Customer" } } } };
const MODELS = {
  "4.0": { with: parseMetadata(metadataOf(WITH_SECRETS.services.SALES!, "4.0")), without: parseMetadata(metadataOf(SALES, "4.0")) },
  "2.0": { with: parseMetadata(metadataOf(WITH_SECRETS.services.SALES!, "2.0")), without: parseMetadata(metadataOf(SALES, "2.0")) },
};
const parsed = parsePermissions(permissionsOf(FUZZ_UNIVERSE));
if (!parsed.ok) throw new Error("the fuzz key's permissions do not parse");
const KEY: StageKey = { id: "key_fuzz", permissions: parsed.permissions };
const INSTANCES = new Map(FUZZ_UNIVERSE.instances.map((i) => [i.name, stageInstance(i.sapClient)]));

/** Whether the key's grants in SALES name `set` (the entity step). */
function touchable(permissions: Permissions, set: string): boolean {
  return Object.values(permissions).some((services) => Object.hasOwn(services.SALES ?? {}, set) || Object.hasOwn(services.SALES ?? {}, "*"));
}

/** The entity set a refusal names at the entity step or as not found, if any. */
function named(a: StageAnswer): { step: "entity" | "not found"; set: string } | undefined {
  if (a.allowed) return undefined;
  const entity = /^API key has no access to entity '([^']*)'(?: \(batch .*\))?$/.exec(a.message);
  if (entity) return { step: "entity", set: entity[1]! };
  const missing = /(?:^|: )entity set '([^']*)' not found(?: in '.*')?$/.exec(a.message);
  if (missing && a.status === 404) return { step: "not found", set: missing[1]! };
  return undefined;
}

const Props = suite("data path: the entity step never tells whether a set exists (property-based)");

Props("the stages answer alike, request log included, whether or not $metadata has a set the key may not touch; no 404 for such a set", async () => {
  const numRuns = envInt("ERPLINK_ENTITY_STEP_RUNS", 1500);
  const stats = { runs: 0, secrets: 0, stopped: 0, notFound: 0 };
  // Half the requests name Secrets wherever the generator wrote Customers (a set the key may read, so the analysis goes far).
  const arb = fc.tuple(fuzzCase(WITH_SECRETS), fc.boolean());
  await fc.assert(
    fc.asyncProperty(arb, async ([{ case: c }, swap]) => {
      if (c.service !== "SALES") return;
      const version = FUZZ_UNIVERSE.instances.find((i) => i.name === c.instance)!.services.SALES!.version;
      const rename = (s: string) => (swap ? s.replace(/\bCustomers\b/g, "Secrets") : s);
      const request = {
        method: c.method,
        target: rename(c.target),
        headers: Object.fromEntries(c.headers.map(([n, v]) => [n, v])),
        body: c.body === undefined ? undefined : Buffer.from(rename(c.body.toString("latin1")), "latin1"),
      };
      stats.runs++;
      if (/Secrets/.test(`${request.target} ${request.body?.toString("latin1") ?? ""}`)) stats.secrets++;
      const withSet = await decide(request, KEY, MODELS[version].with, INSTANCES);
      const withoutSet = await decide(request, KEY, MODELS[version].without, INSTANCES);
      assert.equal(withSet, withoutSet, `${request.method} ${request.target}\n${request.body?.toString("latin1") ?? ""}`);
      for (const answer of [withSet, withoutSet]) {
        const n = answer === undefined ? undefined : named(answer);
        if (n === undefined) continue;
        if (n.step === "entity") {
          stats.stopped++;
          assert.ok(!touchable(KEY.permissions, n.set), `403 at the entity step for '${n.set}', which the key may touch: ${request.target}`);
        } else {
          stats.notFound++;
          assert.ok(touchable(KEY.permissions, n.set), `404 for '${n.set}', which the key may not touch: ${request.target}`);
        }
      }
    }),
    { numRuns, seed: fuzzSeed() },
  );
  console.log(`entity-step property: ${stats.runs} SALES requests, ${stats.secrets} naming Secrets; answers (two per request): ${stats.stopped} at the entity step, ${stats.notFound} not found`);
  assert.ok(stats.secrets > stats.runs / 10 && stats.stopped > 0, "the requests exercise the entity step");
});

Props.run();
