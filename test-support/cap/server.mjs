// Child-process entry of the simulated ERP (one CAP app per process).
// Started by ./index.ts with this folder as cwd; not meant to be run by hand,
// though `node test-support/cap/server.mjs` works (prints the port).
//
// Environment:
//   CAP_PORT      port to listen on (default 0: an ephemeral port), on 127.0.0.1
//   CAP_BULK_BP   number of extra A_BusinessPartner rows to seed (default 0)
//   CAP_DEBUG     set to 1 to keep CAP's own logging
//   CAP_WATCH_STDIN  set to 1 to exit when stdin closes (index.ts does)
//
// Prints one line `CAP_READY {"port":N}` on stdout once it is listening and
// seeded; exits on SIGTERM/SIGINT.
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createEffectOracle } from "./effects.mjs";
import { exitWithParent } from "../child-lifecycle.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
process.chdir(here);

// This folder has no package.json, so tell CAP its plugins explicitly. Must be
// set before @sap/cds computes cds.env.
process.env.CDS_PLUGINS = JSON.stringify({
  "@cap-js/sqlite": { impl: require.resolve("@cap-js/sqlite/cds-plugin") },
  "@cap-js-community/odata-v2-adapter": { impl: require.resolve("@cap-js-community/odata-v2-adapter/cds-plugin") },
});

const cds = require("@sap/cds");
const express = require("express");

if (process.env.CAP_DEBUG !== "1") {
  for (const id of ["cds", "serve", "server", "odata", "sqlite", "db", "deploy", "cov2ap", "cov2ap/hpm", "app", "auth", "cli"]) {
    cds.log(id, "warn");
  }
}

await cds.plugins;
// CAP shuts the server down on a "system error" (a TypeError in its own code)
// a request provokes; the fuzzer finds such requests (a PUT to `$value` of an
// entity that has none). A test back end answers 500 and stays up.
cds.env.server.shutdown_on_uncaught_errors = false;

const app = express();
// Workaround: with @sap/cds 9.9 the V2 adapter answers 500 on $metadata when
// `Accept-Language` contains `*`, which Node's fetch sends by default. Drop
// the wildcard entries (CAP then uses its default language).
app.use((req, _res, next) => {
  const al = req.headers["accept-language"];
  if (typeof al === "string" && al.includes("*")) {
    const rest = al.split(",").filter((part) => part.split(";")[0].trim() !== "*").join(",");
    if (rest.trim()) req.headers["accept-language"] = rest;
    else delete req.headers["accept-language"];
  }
  next();
});
// Like SAP Gateway, answer V2 updates (PUT, MERGE, PATCH, also tunnelled
// through POST + X-HTTP-Method) with 204 No Content unless the client asks
// otherwise: ask the V4 service for `Prefer: return=minimal`.
app.use("/odata/v2", (req, _res, next) => {
  const method = String(req.headers["x-http-method"] ?? req.method).toUpperCase();
  if (["PUT", "MERGE", "PATCH"].includes(method) && !req.headers.prefer) req.headers.prefer = "return=minimal";
  next();
});
// The SQL ledger: every statement the database prepares, by the request it
// ran for (CAP's correlation id, taken from the forwarded X-Request-Id), so
// that tests can see what CAP really read and wrote. Read with
// `GET /__ledger/<id>` (no authentication; this server is a test back end on
// loopback). At most LEDGER_MAX ids are kept, oldest dropped first.
const LEDGER_MAX = 50_000;
const ledger = new Map();
app.use((req, _res, next) => {
  const id = req.headers["x-request-id"];
  if (typeof id === "string" && !req.headers["x-correlation-id"]) req.headers["x-correlation-id"] = id;
  next();
});
app.get("/__ledger/:id", (req, res) => {
  const statements = ledger.get(req.params.id) ?? [];
  res.json({ statements: statements.map((sql) => ({ sql, touches: touchesOf(sql) })) });
});
// The effect oracle (effects.mjs): what SQLite really did for a request, as
// get/list/create/update/delete per table and the service entities it stands
// for. Read with `GET /__effects/<id>`; same bound as the ledger.
const effects = createEffectOracle({
  max: LEDGER_MAX,
  requestId: () => cds.context?.id,
  touchesOf: (table) => sqlNameMap().get(table) ?? [],
});
app.get("/__effects/:id", (req, res) => {
  if (effects.unavailable) res.status(500).json({ error: effects.unavailable });
  else res.json({ effects: effects.effects(req.params.id) });
});
// SQL names (views of service entities, tables of db entities, and their
// `localized_` variants) -> the service entities they stand for. Each
// statement is answered with `touches`: per SQL name it names, the service
// entities that name may stand for.
let sqlNames;
function sqlNameMap() {
  if (sqlNames === undefined) {
    sqlNames = new Map();
    const add = (name, touch) => {
      for (const n of [name, `localized_${name}`]) {
        if (!sqlNames.has(n)) sqlNames.set(n, []);
        sqlNames.get(n).push(touch);
      }
    };
    for (const srv of cds.services) {
      if (!srv.definition || srv.definition.kind !== "service") continue;
      for (const entity of Object.values(srv.entities ?? {})) {
        const touch = { service: srv.name, entity: entity.name.slice(srv.name.length + 1) };
        add(entity.name.replace(/\./g, "_"), touch);
        const source = entity.query?.SELECT?.from?.ref?.[0] ?? entity.projection?.from?.ref?.[0];
        if (typeof source === "string") add(source.replace(/\./g, "_"), touch);
      }
    }
  }
  return sqlNames;
}
function touchesOf(sql) {
  const sqlNames = sqlNameMap();
  // One entry per SQL name: the service entities it may stand for (a table
  // projected by several services stands for each of them).
  const out = new Map();
  for (const word of sql.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []) {
    const alternatives = sqlNames.get(word);
    if (alternatives !== undefined) out.set(word, alternatives);
  }
  return [...out.values()];
}
function record(sql) {
  const id = cds.context?.id;
  if (id === undefined || typeof sql !== "string") return;
  let list = ledger.get(id);
  if (list === undefined) {
    if (ledger.size >= LEDGER_MAX) ledger.delete(ledger.keys().next().value);
    list = [];
    ledger.set(id, list);
  }
  list.push(sql);
}
cds.on("served", () => {
  const db = cds.db;
  const prepare = db.prepare;
  db.prepare = function (sql) {
    record(sql);
    return prepare.call(this, sql);
  };
  // Every transaction acquires the (pooled) connection: instrument it for the
  // effect oracle once, before any of its statements runs for a request.
  const acquire = db.acquire;
  db.acquire = async function (...args) {
    const dbc = await acquire.apply(this, args);
    effects.instrument(dbc);
    return dbc;
  };
});
// A duplicate key on create is a client error (400, like SAP), not a 500:
// the sql.js driver does not tag SQLite's constraint errors.
cds.on("served", (services) => {
  for (const srv of Object.values(services)) {
    if (!(srv instanceof cds.ApplicationService)) continue;
    srv.prepend(() =>
      srv.on("CREATE", "*", async (_req, next) => {
        try {
          return await next();
        } catch (err) {
          if (/^UNIQUE constraint failed/.test(err?.message)) {
            throw Object.assign(new Error("ENTITY_ALREADY_EXISTS"), { status: 400, code: "ENTITY_ALREADY_EXISTS" });
          }
          throw err;
        }
      }),
    );
  }
});
// cds.server calls app.listen(port): bind to loopback only.
const listen = app.listen.bind(app);
app.listen = (port) => listen(port, "127.0.0.1");

const server = await cds.server({ app, in_memory: true, port: Number(process.env.CAP_PORT ?? 0) });
await new Promise((resolve, reject) => {
  if (server.listening) resolve();
  else server.once("listening", resolve).once("error", reject);
});
const port = server.address().port;
const url = `http://127.0.0.1:${port}`;
// The V2 adapter registers its routes and finds its V4 target on `listening`.
cds.emit("listening", { server, url });

const bulk = Number(process.env.CAP_BULK_BP ?? 0);
if (bulk > 0) {
  const rows = [];
  for (let i = 1; i <= bulk; i++) {
    const id = `9${String(i).padStart(9, "0")}`;
    rows.push({
      BusinessPartner: id,
      BusinessPartnerCategory: "2",
      BusinessPartnerFullName: `Bulk Partner ${i}`,
      OrganizationBPName1: `Bulk Partner ${i}`,
      SearchTerm1: `BULK${i}`,
      BusinessPartnerIsBlocked: false,
      CreationDate: "2024-01-01",
      Notes: `Generated row ${i}. `.padEnd(200, "x"),
    });
  }
  await cds.db.run(cds.ql.INSERT.into("erp.BusinessPartner").entries(rows));
}

// Die with the parent, which holds our stdin open (see ../child-backend.ts).
exitWithParent(server, process.env.CAP_WATCH_STDIN === "1");

// Service roots, e.g. { API_SALES_ORDER: "/odata/v4/api-sales-order/" }.
const v4 = {};
const v2 = {};
for (const srv of cds.services) {
  if (!srv.definition || srv.definition.kind !== "service" || !srv.endpoints) continue;
  for (const ep of srv.endpoints) {
    if (ep.kind !== "odata" && ep.kind !== "odata-v4") continue;
    v4[srv.name] = `${ep.path.replace(/\/$/, "")}/`;
    // The V2 adapter serves each V4 service under /odata/v2 instead of /odata/v4.
    v2[srv.name] = v4[srv.name].replace(/^\/odata\/v4\//, "/odata/v2/");
  }
}
process.stdout.write(`CAP_READY ${JSON.stringify({ port, url, v4, v2 })}\n`);
