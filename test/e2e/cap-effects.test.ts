/**
 * The effect oracle of the CAP test back end (test-support/cap, `effects()`):
 * what SQLite really did for a request, per operation and entity set, so that
 * other suites can check each effect against what erplink authorized. Sent
 * straight to CAP (basic auth, an `X-Request-Id` each), over V4 and V2; the
 * expected effects are what SQLite reports, and where they differ from what
 * the OData request suggests, the comment says why.
 *
 * Two back ends: one for reads and operations that write nothing, a fresh one
 * for writes (each write on rows no other case reads).
 */
import { randomUUID } from "node:crypto";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { startCapBackend, type CapBackend, type CapEffect } from "../../test-support/cap/index.js";

interface Ctx {
  cap: CapBackend;
}

const V4 = "/odata/v4/api-business-partner/";
const V2 = "/odata/v2/api-business-partner/";
const N4 = "/odata/v4/api-notes/";
const N2 = "/odata/v2/api-notes/";
/** Entity sets, as effects name them. */
const BP = "API_BUSINESS_PARTNER.A_BusinessPartner";
const ADDR = "API_BUSINESS_PARTNER.A_BusinessPartnerAddress";
const CUR = "API_BUSINESS_PARTNER.A_Currency";
const NOTES = "API_NOTES.Notes";
const SECRETS = "API_NOTES.Secrets";
const LABELS = "API_NOTES.Labels";
const FOLDERS = "API_NOTES.Folders";
const NOTE = "Notes(folder_ID='F1',ID='N1')";

interface Send {
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

/** Sends one request to CAP with a fresh request id; answers its status, body and effects. */
async function send(cap: CapBackend, method: string, path: string, init: Send = {}) {
  const id = `effects-${randomUUID()}`;
  const headers: Record<string, string> = {
    authorization: `Basic ${Buffer.from(`${cap.credentials.username}:${cap.credentials.password}`).toString("base64")}`,
    accept: "application/json",
    "x-request-id": id,
    ...init.headers,
  };
  let body: string | undefined;
  if (init.body !== undefined) {
    body = typeof init.body === "string" ? init.body : JSON.stringify(init.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(cap.baseUrl + path, { method, headers, body });
  const text = await res.text();
  return { id, status: res.status, text, effects: await cap.effects(id) };
}

/** `operation Service.Entity` (the table if it stands for no entity set). */
const label = (e: CapEffect): string => `${e.operation} ${e.touches.map((t) => `${t.service}.${t.entity}`).join("|") || `<${e.table}>`}`;

/** Sends a request and asserts a 2xx answer and exactly these effects (in any order). */
async function expectEffects(cap: CapBackend, method: string, path: string, expected: readonly string[], init: Send = {}) {
  const res = await send(cap, method, path, init);
  assert.ok(res.status >= 200 && res.status < 300, `${method} ${path}: ${res.status} ${res.text.slice(0, 500)}`);
  const actual = res.effects.map(label).sort();
  // On a mismatch, show the plans: they say why SQLite read what it read.
  assert.equal(actual, [...expected].sort(), `${method} ${path}: ${JSON.stringify(res.effects, null, 1)}`);
  return res;
}

// ---------------------------------------------------------------------------
// Reads, and operations that only read: one back end.

const Reads = suite<Ctx>("CAP effect oracle: reads");

Reads.before(async (ctx) => {
  ctx.cap = await startCapBackend();
});

Reads.after(async (ctx) => {
  await ctx.cap?.stop();
});

Reads("a GET by key is a get; the effect names table, entity sets, SQL and plan", async ({ cap }) => {
  for (const root of [V4, V2]) {
    const res = await expectEffects(cap, "GET", `${root}A_BusinessPartner('1000001')`, [`get ${BP}`]);
    const [effect] = res.effects;
    assert.is(effect!.table, "erp_BusinessPartner");
    assert.equal(effect!.touches, [{ service: "API_BUSINESS_PARTNER", entity: "A_BusinessPartner" }]);
    assert.ok(effect!.sql.length > 0 && effect!.sql.length <= 300, effect!.sql);
    // The plan names the view's alias; the index identifies the table.
    assert.ok(
      effect!.plan?.some((line) => /^SEARCH \S+ USING INDEX sqlite_autoindex_erp_BusinessPartner_1 \(BusinessPartner=\?\)/.test(line)),
      String(effect!.plan),
    );
  }
});

Reads("a collection, a filter on another column and $count are lists", async ({ cap }) => {
  for (const root of [V4, V2]) {
    await expectEffects(cap, "GET", `${root}A_BusinessPartner`, [`list ${BP}`]);
    await expectEffects(cap, "GET", `${root}A_BusinessPartner?$filter=${encodeURIComponent("FirstName eq 'x'")}`, [`list ${BP}`]);
    await expectEffects(cap, "GET", `${root}A_BusinessPartner/$count`, [`list ${BP}`]);
  }
});

Reads("a filter is classified by what SQLite does: the full key is a get, an IN list or an OR of keys a list", async ({ cap }) => {
  for (const root of [V4, V2]) {
    // Equality on the whole key reads one row: a get, though it is a collection request.
    await expectEffects(cap, "GET", `${root}A_BusinessPartner?$filter=${encodeURIComponent("BusinessPartner eq '1000001'")}`, [`get ${BP}`]);
    // SQLite plans `k = ? OR k = ?` as an IN list, shown as `(BusinessPartner=?)` like
    // a single key: the oracle tells them apart by the bytecode's IN loop.
    const or = await expectEffects(
      cap,
      "GET",
      `${root}A_BusinessPartner?$filter=${encodeURIComponent("BusinessPartner eq '1000001' or BusinessPartner eq '1000003'")}`,
      [`list ${BP}`],
    );
    assert.ok(
      or.effects[0]!.plan?.some((line) => line.includes("(BusinessPartner=?)")),
      String(or.effects[0]!.plan),
    );
  }
  await expectEffects(cap, "GET", `${V4}A_BusinessPartner?$filter=${encodeURIComponent("BusinessPartner in ('1000001','1000003')")}`, [`list ${BP}`]);
});

Reads("$expand of a collection from one partner: get partner, list addresses", async ({ cap }) => {
  for (const root of [V4, V2]) {
    await expectEffects(cap, "GET", `${root}A_BusinessPartner('1000001')?$expand=to_Address`, [`get ${BP}`, `list ${ADDR}`]);
  }
});

Reads("$expand of the partner from addresses: list addresses, get partner (by the outer row's key)", async ({ cap }) => {
  for (const root of [V4, V2]) {
    await expectEffects(cap, "GET", `${root}A_BusinessPartnerAddress?$top=1&$expand=to_BusinessPartner`, [`list ${ADDR}`, `get ${BP}`]);
  }
});

Reads("navigation to a collection: get partner, list addresses", async ({ cap }) => {
  for (const root of [V4, V2]) {
    await expectEffects(cap, "GET", `${root}A_BusinessPartner('1000001')/to_Address`, [`get ${BP}`, `list ${ADDR}`]);
  }
});

Reads("navigation to a to-one: get the address, list partners (SQLite scans them, testing each against the address)", async ({ cap }) => {
  // The plan: SCAN BusinessPartner_0, then a correlated SEARCH of the address by
  // its full key for every partner. What the URL suggests (one partner) is not
  // what the database reads.
  for (const root of [V4, V2]) {
    await expectEffects(cap, "GET", `${root}A_BusinessPartnerAddress(BusinessPartner='1000001',AddressID='1')/to_BusinessPartner`, [
      `get ${ADDR}`,
      `list ${BP}`,
    ]);
  }
});

Reads("a lambda over addresses lists both sets", async ({ cap }) => {
  await expectEffects(cap, "GET", `${V4}A_BusinessPartner?$filter=${encodeURIComponent("to_Address/any(a:a/CityName eq 'x')")}`, [
    `list ${BP}`,
    `list ${ADDR}`,
  ]);
});

Reads("V2: a key 'aggregation'…'' is read as an aggregation key and answers the whole set: a list", async ({ cap }) => {
  // A known back-end behaviour (the V2 adapter's ID__ aggregation keys): a
  // request that looks like a get reads every partner.
  const res = await expectEffects(cap, "GET", `${V2}A_BusinessPartner('aggregation''x''')`, [`list ${BP}`]);
  assert.ok(JSON.parse(res.text).d.results.length >= 5, res.text.slice(0, 300));
});

Reads("bound functions on Notes reach other entity sets: secretOf, labelText", async ({ cap }) => {
  // The handler reads the note, then the secret its `label` names, each by key.
  await expectEffects(cap, "GET", `${N4}${NOTE}/API_NOTES.secretOf()`, [`get ${NOTES}`, `get ${SECRETS}`]);
  await expectEffects(cap, "GET", `${N2}Notes_secretOf?folder_ID='F1'&ID='N1'`, [`get ${NOTES}`, `get ${SECRETS}`]);
  // The note, its folder, the folder's label.
  await expectEffects(cap, "GET", `${N4}${NOTE}/API_NOTES.labelText()`, [`get ${NOTES}`, `get ${FOLDERS}`, `get ${LABELS}`]);
  await expectEffects(cap, "GET", `${N2}Notes_labelText?folder_ID='F1'&ID='N1'`, [`get ${NOTES}`, `get ${FOLDERS}`, `get ${LABELS}`]);
});

Reads("unbound functions: countSecrets lists Secrets, folderOf gets a folder", async ({ cap }) => {
  const count = await expectEffects(cap, "GET", `${N4}countSecrets()`, [`list ${SECRETS}`]);
  assert.is(JSON.parse(count.text).value, 1);
  await expectEffects(cap, "GET", `${N2}countSecrets`, [`list ${SECRETS}`]);
  await expectEffects(cap, "GET", `${N4}folderOf(ID='F1')`, [`get ${FOLDERS}`]);
  await expectEffects(cap, "GET", `${N2}folderOf?ID='F1'`, [`get ${FOLDERS}`]);
});

Reads("a multipart $batch: every part's effects are under the batch's request id (parts have none of their own)", async ({ cap }) => {
  const boundary = "batch_effects";
  const part = (requestLine: string, headers: string[] = []) => [
    `--${boundary}`,
    "Content-Type: application/http",
    "Content-Transfer-Encoding: binary",
    "",
    requestLine,
    "Accept: application/json",
    ...headers,
    "",
    "",
  ];
  const partId = `effects-part-${randomUUID()}`;
  const body = [
    // An X-Request-Id in a part is not taken as that part's id.
    ...part("GET A_BusinessPartner('1000001') HTTP/1.1", [`X-Request-Id: ${partId}`]),
    ...part("GET A_Currency HTTP/1.1"),
    `--${boundary}--`,
    "",
  ].join("\r\n");
  for (const root of [V4, V2]) {
    const res = await expectEffects(cap, "POST", `${root}$batch`, [`get ${BP}`, `list ${CUR}`], {
      body,
      headers: { "content-type": `multipart/mixed;boundary=${boundary}`, accept: "multipart/mixed" },
    });
    assert.equal(
      [...res.text.matchAll(/^HTTP\/1\.1 (\d+)/gm)].map((m) => m[1]),
      ["200", "200"],
      res.text.slice(0, 500),
    );
  }
  assert.equal(await cap.effects(partId), []);
});

Reads("a request id nothing ran for has no effects", async ({ cap }) => {
  assert.equal(await cap.effects(`effects-unknown-${randomUUID()}`), []);
  // $metadata runs no SQL.
  const res = await send(cap, "GET", `${V4}$metadata`, { headers: { accept: "application/xml" } });
  assert.is(res.status, 200);
  assert.equal(res.effects, []);
});

Reads.run();

// ---------------------------------------------------------------------------
// Writes: a fresh back end (its data changes).

const Writes = suite<Ctx>("CAP effect oracle: writes");

Writes.before(async (ctx) => {
  ctx.cap = await startCapBackend();
});

Writes.after(async (ctx) => {
  await ctx.cap?.stop();
});

Writes("DELETE of a partner deletes it and its addresses (the composition), reading the partner by key", async ({ cap }) => {
  // CAP deletes the addresses first with `DELETE FROM erp_BusinessPartnerAddress
  // WHERE exists (SELECT … FROM erp_BusinessPartner WHERE … = ?)`: that
  // statement reads the partner's row by key (a get; the partner is not the
  // table it writes), then deletes the partner.
  await expectEffects(cap, "DELETE", `${V4}A_BusinessPartner('1000002')`, [`get ${BP}`, `delete ${BP}`, `delete ${ADDR}`]);
  await expectEffects(cap, "DELETE", `${V2}A_BusinessPartner('O''Neil')`, [`get ${BP}`, `delete ${BP}`, `delete ${ADDR}`]);
  // A partner without addresses: the cascade statement still reads it, deletes no address.
  await expectEffects(cap, "DELETE", `${V4}A_BusinessPartner('1000004')`, [`get ${BP}`, `delete ${BP}`]);
});

Writes("PATCH updates and reads the row back to answer; with Prefer: return=minimal it does not read", async ({ cap }) => {
  await expectEffects(cap, "PATCH", `${V4}A_BusinessPartner('1000003')`, [`update ${BP}`, `get ${BP}`], { body: { FirstName: "X" } });
  const minimal = await expectEffects(cap, "PATCH", `${V4}A_BusinessPartner('1000003')`, [`update ${BP}`], {
    body: { FirstName: "Y" },
    headers: { prefer: "return=minimal" },
  });
  assert.is(minimal.status, 204);
  // V2 MERGE: server.mjs asks for return=minimal (SAP Gateway answers 204), so no read-back…
  await expectEffects(cap, "MERGE", `${V2}A_BusinessPartner('1000003')`, [`update ${BP}`], { body: { FirstName: "Z" } });
  // …unless the client asks for the entity.
  await expectEffects(cap, "MERGE", `${V2}A_BusinessPartner('1000003')`, [`update ${BP}`, `get ${BP}`], {
    body: { FirstName: "W" },
    headers: { prefer: "return=representation" },
  });
});

Writes("a deep insert creates both rows and reads them back (partner by key, its addresses as a list)", async ({ cap }) => {
  const partner = (id: string) => ({ BusinessPartner: id, BusinessPartnerFullName: "New Co", to_Address: [{ AddressID: "1", CityName: "Vienna" }] });
  const created = [`create ${BP}`, `create ${ADDR}`, `get ${BP}`, `list ${ADDR}`];
  await expectEffects(cap, "POST", `${V4}A_BusinessPartner`, created, { body: partner("2000001") });
  await expectEffects(cap, "POST", `${V2}A_BusinessPartner`, created, { body: partner("2000002") });
});

Writes("V2: DELETE of a $links entry deletes the address, reading the partner by key", async ({ cap }) => {
  await expectEffects(cap, "DELETE", `${V2}A_BusinessPartner('1000001')/$links/to_Address(BusinessPartner='1000001',AddressID='1')`, [
    `get ${BP}`,
    `delete ${ADDR}`,
  ]);
});

Writes("setSecret, bound to a note, updates its secret", async ({ cap }) => {
  // It reads the note, updates the secret, reads the secret back to answer.
  const v4 = await expectEffects(cap, "POST", `${N4}${NOTE}/API_NOTES.setSecret`, [`get ${NOTES}`, `update ${SECRETS}`, `get ${SECRETS}`], {
    body: { value: "v4" },
  });
  assert.is(JSON.parse(v4.text).value, "v4");
  // V2: a function import; the key and the parameter in the query (a JSON body, even
  // empty, is needed: the adapter moves action parameters into the JSON body).
  const setV2 = `${N2}Notes_setSecret?folder_ID='F1'&ID='N1'&value='v2'`;
  const v2 = await expectEffects(cap, "POST", setV2, [`get ${NOTES}`, `update ${SECRETS}`, `get ${SECRETS}`], { body: {} });
  assert.is(JSON.parse(v2.text).d.value, "v2");
});

Writes("purgeLabels deletes every label; once none is left it has no effect", async ({ cap }) => {
  const res = await expectEffects(cap, "POST", `${N4}purgeLabels`, [`delete ${LABELS}`], { body: {} });
  assert.is(JSON.parse(res.text).value, 1);
  // The DELETE's scan of Labels is its own addressing, not a read; no row deleted, no delete.
  await expectEffects(cap, "POST", `${N2}purgeLabels`, [], { body: {} });
});

Writes.run();
