// Child-process entry of the second real OData back end: SAP's Fiori elements
// mock server (`@sap-ux/fe-mockserver-core`, devDependency) on express 4,
// serving SAP's published service definitions from third_party/sap-edmx/
// with the data in ./data/. Started by ./index.ts; not meant to be run by
// hand, though `node test-support/mockserver/server.mjs` works.
//
// Environment:
//   MOCKSERVER_PORT         port to listen on (default 0: an ephemeral port), on 127.0.0.1
//   MOCKSERVER_SEED         seed of Math.random, which the mock server uses to generate rows
//                           of the entity sets without a data file (default 1)
//   MOCKSERVER_DEBUG        set to 1 to keep the mock server's own logging
//   MOCKSERVER_WATCH_STDIN  set to 1 to exit when stdin closes (index.ts does)
//
// Prints one line `MOCKSERVER_READY {"port":N,"url":…,"roots":{…}}` on stdout
// once it is listening; exits on SIGTERM/SIGINT.
//
// Effect recording: every read and write the mock server's data layer does
// (its per-entity-set row containers, FileBasedMockData) is recorded under the
// request's X-Request-Id; `GET /__effects/<id>` (no authentication) answers
// them. See README.md.
import { AsyncLocalStorage } from "node:async_hooks";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { exitWithParent } from "../child-lifecycle.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const edmxDir = join(here, "..", "..", "third_party", "sap-edmx");
const require = createRequire(import.meta.url);
// The mock server's own modules and dependencies (its body-parser is 1.x).
const core = createRequire(require.resolve("@sap-ux/fe-mockserver-core"));

const debug = process.env.MOCKSERVER_DEBUG === "1";

// Deterministic generated data: the mock server generates 150 rows per entity
// set without a data file with Math.random (and keys from the row index).
{
  let seed = Number(process.env.MOCKSERVER_SEED ?? 1) >>> 0;
  Math.random = () => {
    // mulberry32
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FEMockserver = core("./index.js").default;
const { FileBasedMockData } = core("./mockdata/fileBasedMockData.js");
const ODataRequest = core("./request/odataRequest.js").default;
const bodyParser = core("body-parser");
const express = require("express");

const SERVICES = [
  { name: "API_BUSINESS_PARTNER", urlPath: "/sap/opu/odata/sap/API_BUSINESS_PARTNER", edmx: "API_BUSINESS_PARTNER.edmx" },
  { name: "API_SALES_ORDER_SRV", urlPath: "/sap/opu/odata/sap/API_SALES_ORDER_SRV", edmx: "API_SALES_ORDER_SRV.edmx" },
  { name: "TripPin", urlPath: "/odata/trippin", edmx: "TripPin.xml" },
];
const CREDENTIALS = { username: "erp-user", password: "erp-pass" };

// ---------------------------------------------------------------------------
// Effects: per request id, what the data layer did, one entry per
// (operation, entity set), in the order first seen.
const EFFECTS_MAX = 50_000;
/** @type {Map<string, Map<string, { operation: string, entitySet: string, sets: string[] | undefined, details: string[] }>>} */
const effects = new Map();
/** @type {AsyncLocalStorage<{ ids: string[], batch: boolean, parts: number }>} */
const context = new AsyncLocalStorage();

function record(operation, container, detail) {
  const ctx = context.getStore();
  if (ctx === undefined) return;
  const entitySet = entitySetOf(container);
  for (const id of ctx.ids) {
    let list = effects.get(id);
    if (list === undefined) {
      if (effects.size >= EFFECTS_MAX) effects.delete(effects.keys().next().value);
      list = new Map();
      effects.set(id, list);
    }
    const key = `${operation} ${entitySet}`;
    let entry = list.get(key);
    if (entry === undefined) {
      entry = { operation, entitySet, sets: setsOfType(container), details: [] };
      list.set(key, entry);
    }
    if (detail !== undefined && !entry.details.includes(detail) && entry.details.length < 20) entry.details.push(detail);
  }
}

/** The entity set a row container belongs to; `(Type)` for rows with no entity set (contained data). */
function entitySetOf(container) {
  const set = container._mockDataEntitySet?.entitySetDefinition;
  if (set?.name) return set.name;
  return `(${container._entityType?.name ?? "?"})`;
}

/**
 * For rows with no entity set (V2 navigation data the mock server keeps
 * inside the row it belongs to): the service's entity sets of their type,
 * where the `$metadata` says such an entity lives.
 */
function setsOfType(container) {
  if (container._mockDataEntitySet?.entitySetDefinition?.name) return undefined;
  const type = container._entityType?.fullyQualifiedName;
  const metadata = container._mockDataEntitySet?.dataAccess?.getMetadata?.();
  if (type === undefined || metadata === undefined) return [];
  return metadata
    .getEntitySets()
    .filter((set) => set.entityType?.fullyQualifiedName === type)
    .map((set) => set.name);
}

function isSingleton(container) {
  return container._mockDataEntitySet?.entitySetDefinition?._type === "Singleton";
}

function literal(value) {
  return typeof value === "string" ? `'${value.replace(/'/g, "''")}'` : String(value);
}

/** `{BusinessPartner:'1', AddressID:'2'}` -> `BusinessPartner='1',AddressID='2'`; none -> undefined. */
function keyPredicate(keyValues) {
  const entries = Object.entries(keyValues ?? {});
  if (entries.length === 0) return undefined;
  return entries.map(([k, v]) => (k === "" ? literal(v) : `${k}=${literal(v)}`)).join(",");
}

/** Whether `keyValues` names every key property of the container's entity type. */
function isFullKey(container, keyValues) {
  const names = Object.keys(keyValues ?? {});
  const keys = container._entityType?.keys?.map((k) => k.name) ?? [];
  if (names.length === 1 && names[0] === "" && keys.length === 1) return true;
  return keys.length > 0 && keys.every((k) => names.includes(k));
}

function keysOfRow(container, row) {
  const out = {};
  for (const k of container._entityType?.keys ?? []) out[k.name] = row?.[k.name];
  return out;
}

// Instrument the row containers. FileBasedMockData holds the rows of one
// entity set (per tenant); FunctionBasedMockData (an entity set with a JS
// contributor) extends it and reaches the rows through `super`, and
// contributors through `this.base.*` / `getEntityInterface()`, which are
// bound to these same prototype methods. Every row the mock server reads or
// changes goes through one of them.
{
  const proto = FileBasedMockData.prototype;
  const wrap = (name, before) => {
    const original = proto[name];
    if (typeof original !== "function") throw new Error(`fe-mockserver-core: FileBasedMockData.${name} is gone`);
    proto[name] = function (...args) {
      before(this, ...args);
      return original.apply(this, args);
    };
  };
  // A singleton is one entity: whatever the mock server reads of it is a read of that entity (`get`).
  const read = (container, keyValues) => {
    const full = isSingleton(container) || isFullKey(container, keyValues);
    const detail = isSingleton(container) ? undefined : Object.keys(keyValues ?? {}).length === 0 ? "all" : keyPredicate(keyValues);
    record(full ? "get" : "list", container, detail);
  };
  // Keyed lookups: by the full key a `get`, by part of it (a to-many navigation) a `list`.
  wrap("fetchEntries", read);
  wrap("hasEntry", read);
  // The whole set (a collection, $filter, $count, $top, …).
  wrap("getAllEntries", (c) => record(isSingleton(c) ? "get" : "list", c, isSingleton(c) ? undefined : "all"));
  // A read with no key: a singleton (`get`), else the set's first row (`list`).
  wrap("getDefaultElement", (c) => record(isSingleton(c) ? "get" : "list", c, isSingleton(c) ? undefined : "first row"));
  wrap("addEntry", (c, row) => record("create", c, keyPredicate(keysOfRow(c, row))));
  wrap("updateEntry", (c, keyValues) => record("update", c, keyPredicate(keyValues)));
  wrap("removeEntry", (c, keyValues) => record("delete", c, keyPredicate(keyValues)));
}

// $batch: the mock server handles the parts one after another, each through
// ODataRequest.handleRequest. Each part's effects go to the batch's id, to
// `<batch id>#<n>` (n = 1, 2, … in document order, change set parts
// included) and to the part's own X-Request-Id header if it has one.
{
  const handleRequest = ODataRequest.prototype.handleRequest;
  ODataRequest.prototype.handleRequest = function () {
    const ctx = context.getStore();
    if (ctx === undefined || !ctx.batch) return handleRequest.call(this);
    ctx.parts += 1;
    const ids = [...ctx.ids, `${ctx.ids[0]}#${ctx.parts}`];
    for (const [name, value] of Object.entries(this.headers ?? {})) {
      if (name.toLowerCase() === "x-request-id" && typeof value === "string" && value && !ids.includes(value)) ids.push(value);
    }
    return context.run({ ids, batch: false, parts: 0 }, () => handleRequest.call(this));
  };
}

// ---------------------------------------------------------------------------
const quiet = {
  info: (m) => debug && process.stdout.write(`info mockserver :: ${m}\n`),
  warn: (m) => process.stderr.write(`warn mockserver :: ${m}\n`),
  error: (m) => process.stderr.write(`error mockserver :: ${m?.stack ?? m}\n`),
  debug: (m) => debug && process.stdout.write(`debug mockserver :: ${m}\n`),
  verbose: () => {},
  silly: () => {},
};

const mockserver = new FEMockserver({
  debug,
  logger: quiet,
  services: SERVICES.map((s) => ({
    urlPath: s.urlPath,
    metadataPath: join(edmxDir, s.edmx),
    mockdataPath: join(here, "data", s.name),
    generateMockData: true,
    debug,
    logger: quiet,
  })),
});
await mockserver.isReady;
// The recording above must sit under the rows the services really use:
// check that one entity set per service keeps its rows in FileBasedMockData.
for (const [service, entitySet] of [
  ["/sap/opu/odata/sap/API_BUSINESS_PARTNER", "A_BusinessPartner"],
  ["/sap/opu/odata/sap/API_SALES_ORDER_SRV", "A_SalesOrder"],
  ["/odata/trippin", "People"],
]) {
  const set = await mockserver.getServiceRegistry().getService(service)?.getMockEntitySet(entitySet);
  if (!(set?.getMockData("tenant-default") instanceof FileBasedMockData)) {
    throw new Error(`fe-mockserver-core: ${service} ${entitySet} does not keep its rows in FileBasedMockData; effects would be lost`);
  }
}

const app = express();
app.disable("x-powered-by");

// The effects, unauthenticated (a test back end on loopback).
app.get("/__effects/:id", (req, res) => {
  const list = effects.get(req.params.id);
  res.json({
    effects: [...(list?.values() ?? [])].map(({ operation, entitySet, sets, details }) => ({
      operation,
      entitySet,
      ...(sets !== undefined ? { entitySets: sets } : {}),
      ...(details.length ? { detail: details.join(" | ") } : {}),
    })),
  });
});

// Basic authentication on everything else, $metadata included.
const expected = `Basic ${Buffer.from(`${CREDENTIALS.username}:${CREDENTIALS.password}`).toString("base64")}`;
app.use((req, res, next) => {
  if (req.headers.authorization === expected) return next();
  res.status(401).set("WWW-Authenticate", 'Basic realm="Users"').type("text/plain").send("Unauthorized");
});

// Request id -> async context for the data layer. The body is read here with
// the mock server's own parser and options (body-parser 1.x raw, */*, 100 kB),
// so that its parser finds it read and continues synchronously, inside the
// context (stream callbacks would run outside it).
const rawBody = bodyParser.raw({ type: "*/*" });
app.use((req, res, next) => {
  rawBody(req, res, (err) => {
    if (err) return next(err);
    // Workaround: the mock server hands an empty POST body to operations as
    // the string "{}" unless the request says JSON, and then fails with 500
    // ("Cannot create property '_type' on string '{}'") on every function
    // import called by POST without a body (releaseApprovalRequest). Say JSON.
    const empty = !Buffer.isBuffer(req.body) || req.body.length === 0;
    if (req.method === "POST" && empty && !req.headers["content-type"]) req.headers["content-type"] = "application/json";
    const id = req.headers["x-request-id"];
    if (typeof id !== "string" || id === "") return next();
    context.run({ ids: [id], batch: /\/\$batch$/.test(req.path), parts: 0 }, () => next());
  });
});

app.use(mockserver.getRouter());
// Errors outside the mock server's own handling (a body over 100 kB: 413):
// plain text, no stack trace.
app.use((err, _req, res, _next) => {
  const status = Number(err?.status ?? err?.statusCode ?? 500);
  res.status(status >= 400 && status < 600 ? status : 500).type("text/plain").send(String(err?.message ?? err));
});

const server = app.listen(Number(process.env.MOCKSERVER_PORT ?? 0), "127.0.0.1");
await new Promise((resolve, reject) => server.once("listening", resolve).once("error", reject));
const port = server.address().port;

// Die with the parent, which holds our stdin open (see ../child-backend.ts).
exitWithParent(server, process.env.MOCKSERVER_WATCH_STDIN === "1");

const roots = Object.fromEntries(SERVICES.map((s) => [s.name, `${s.urlPath}/`]));
process.stdout.write(`MOCKSERVER_READY ${JSON.stringify({ port, url: `http://127.0.0.1:${port}`, roots })}\n`);
