/**
 * Self-check of the CAP test back end (not a test file):
 *   node --import tsx test-support/cap/smoke.ts
 * Starts back ends, runs V4 and V2 requests with basic auth, prints each
 * status, and exits non-zero if any differs from what is expected.
 */
import { startCapBackend, type CapBackend } from "./index.js";

let failures = 0;

function check(label: string, actual: unknown, expected: unknown, extra = ""): void {
  const ok = actual === expected;
  if (!ok) failures++;
  console.log(`${ok ? "ok  " : "FAIL"} ${label}: ${String(actual)}${ok ? "" : ` (expected ${String(expected)})`}${extra ? `  ${extra}` : ""}`);
}

function client(be: CapBackend) {
  const authorization = `Basic ${Buffer.from(`${be.credentials.username}:${be.credentials.password}`).toString("base64")}`;
  return async (method: string, path: string, init: { body?: string; headers?: Record<string, string>; auth?: boolean } = {}) => {
    const headers: Record<string, string> = { accept: "application/json", ...init.headers };
    if (init.auth !== false) headers.authorization = authorization;
    if (init.body !== undefined && !headers["content-type"]) headers["content-type"] = "application/json";
    const res = await fetch(be.baseUrl + path, { method, headers, body: init.body });
    const text = await res.text();
    return { status: res.status, text, headers: res.headers, json: () => JSON.parse(text) as Record<string, any> };
  };
}

const t0 = performance.now();
const be = await startCapBackend();
const startMs = Math.round(performance.now() - t0);
console.log(`started ${be.baseUrl} in ${startMs} ms`);
console.log("v4:", be.v4);
console.log("v2:", be.v2);
const req = client(be);
const bp = be.v4.API_BUSINESS_PARTNER!;
const so = be.v4.API_SALES_ORDER!;
const bp2 = be.v2.API_BUSINESS_PARTNER!;

try {
  // Authentication
  check("V4 $metadata without credentials", (await req("GET", `${bp}$metadata`, { auth: false })).status, 401);
  check("V4 collection without credentials", (await req("GET", `${bp}A_BusinessPartner`, { auth: false })).status, 401);
  check("V2 collection without credentials", (await req("GET", `${bp2}A_BusinessPartner`, { auth: false })).status, 401);
  check(
    "V4 wrong password",
    (await req("GET", `${bp}$metadata`, { auth: false, headers: { authorization: `Basic ${Buffer.from("erp-user:nope").toString("base64")}` } })).status,
    401,
  );

  // V4 reads
  const md = await req("GET", `${bp}$metadata`, { headers: { accept: "application/xml" } });
  check("V4 $metadata", md.status, 200, md.headers.get("content-type") ?? "");
  const coll = await req("GET", `${bp}A_BusinessPartner`);
  check("V4 GET A_BusinessPartner", coll.status, 200, `${coll.json().value.length} rows`);
  const countRes = await req("GET", `${bp}A_BusinessPartner?$count=true&$top=2&$orderby=BusinessPartner`);
  check("V4 GET $count=true&$top=2", countRes.json()["@odata.count"], 5);
  const keyPath = `${bp}A_BusinessPartner(${encodeURIComponent("'O''Neil'")})`;
  const byKey = await req("GET", keyPath);
  check(`V4 GET ${keyPath}`, byKey.status, 200, byKey.json().BusinessPartnerFullName);
  const byKeyRaw = await req("GET", `${bp}A_BusinessPartner('O''Neil')`);
  check("V4 GET A_BusinessPartner('O''Neil') unencoded", byKeyRaw.status, 200);
  const comp = await req("GET", `${bp}A_BusinessPartnerAddress(BusinessPartner='1000001',AddressID='2')`);
  check("V4 GET composite key", comp.status, 200, comp.json().CityName);
  const exp = await req("GET", `${bp}A_BusinessPartner('1000001')?$expand=to_Address`);
  check("V4 $expand=to_Address", exp.status, 200, `${exp.json().to_Address?.length} addresses`);
  const back = await req("GET", `${bp}A_BusinessPartnerAddress(BusinessPartner='O''Neil',AddressID='1')/to_BusinessPartner`);
  check("V4 navigate to_BusinessPartner", back.status, 200, back.json().BusinessPartner);
  check("V4 GET missing key", (await req("GET", `${bp}A_BusinessPartner('nope')`)).status, 404);
  check("V4 GET A_Currency('EUR')", (await req("GET", `${bp}A_Currency('EUR')`)).status, 200);

  // V4 writes
  const created = await req("POST", `${bp}A_BusinessPartner`, {
    body: JSON.stringify({
      BusinessPartner: "2000001",
      BusinessPartnerCategory: "2",
      BusinessPartnerFullName: "New Co",
      to_Address: [{ AddressID: "1", CityName: "Vienna", Country: "AT" }],
    }),
  });
  check("V4 POST deep create", created.status, 201, created.headers.get("location") ?? "");
  const deepAddr = await req("GET", `${bp}A_BusinessPartnerAddress(BusinessPartner='2000001',AddressID='1')`);
  check("V4 deep-created address", deepAddr.status, 200);
  check("V4 POST duplicate key", (await req("POST", `${bp}A_BusinessPartner`, { body: JSON.stringify({ BusinessPartner: "2000001" }) })).status, 400);
  const patched = await req("PATCH", `${bp}A_BusinessPartner('2000001')`, { body: JSON.stringify({ SearchTerm1: "NEWCO" }) });
  check("V4 PATCH", patched.status, 200, patched.json().SearchTerm1);
  const put = await req("PUT", `${bp}A_BusinessPartner('2000001')`, {
    body: JSON.stringify({ BusinessPartner: "2000001", BusinessPartnerCategory: "2", BusinessPartnerFullName: "Replaced Co" }),
  });
  check("V4 PUT", put.status, 200, put.json().BusinessPartnerFullName);
  check("V4 POST A_Currency", (await req("POST", `${bp}A_Currency`, { body: JSON.stringify({ Currency: "GBP", CurrencyName: "Pound", Decimals: 2 }) })).status, 201);
  check("V4 DELETE A_Currency('GBP')", (await req("DELETE", `${bp}A_Currency('GBP')`)).status, 204);
  check("V4 DELETE", (await req("DELETE", `${bp}A_BusinessPartner('2000001')`)).status, 204);
  check("V4 GET deleted", (await req("GET", `${bp}A_BusinessPartner('2000001')`)).status, 404);
  check("V4 composition cascade-deleted", (await req("GET", `${bp}A_BusinessPartnerAddress(BusinessPartner='2000001',AddressID='1')`)).status, 404);
  const order = await req("POST", `${so}A_SalesOrder`, {
    body: JSON.stringify({ SalesOrder: "5000100", SoldToParty: "1000001", TransactionCurrency: "EUR", to_Item: [{ SalesOrderItem: "10", Material: "M", RequestedQuantity: 2 }] }),
  });
  check("V4 POST A_SalesOrder with to_Item", order.status, 201);
  const items = await req("GET", `${so}A_SalesOrder('5000100')/to_Item`);
  check("V4 GET A_SalesOrder('5000100')/to_Item", items.status, 200, `${items.json().value?.length} items`);

  // V4 JSON batch
  const jb = await req("POST", `${bp}$batch`, {
    body: JSON.stringify({
      requests: [
        { id: "1", method: "GET", url: "A_BusinessPartner('1000001')" },
        { id: "2", method: "GET", url: "A_Currency?$top=2" },
      ],
    }),
  });
  const jbBody = jb.json();
  check("V4 JSON $batch", jb.status, 200, `inner ${jbBody.responses?.map((r: { status: number }) => r.status).join(",")}`);

  // V4 multipart batch
  const boundary = "batch_smoke";
  const mp = [
    `--${boundary}`,
    "Content-Type: application/http",
    "Content-Transfer-Encoding: binary",
    "",
    "GET A_BusinessPartner('1000002') HTTP/1.1",
    "Accept: application/json",
    "",
    "",
    `--${boundary}`,
    "Content-Type: application/http",
    "Content-Transfer-Encoding: binary",
    "",
    "GET A_Currency('USD') HTTP/1.1",
    "Accept: application/json",
    "",
    "",
    `--${boundary}--`,
    "",
  ].join("\r\n");
  const mb = await req("POST", `${bp}$batch`, { body: mp, headers: { "content-type": `multipart/mixed;boundary=${boundary}`, accept: "multipart/mixed" } });
  const inner = [...mb.text.matchAll(/^HTTP\/1\.1 (\d+)/gm)].map((m) => m[1]).join(",");
  check("V4 multipart $batch", mb.status, 200, `inner ${inner}`);
  check("V4 multipart $batch inner statuses", inner, "200,200");

  // V2
  const v2md = await req("GET", `${bp2}$metadata`, { headers: { accept: "application/xml" } });
  check("V2 $metadata", v2md.status, 200, /Version="1.0"/.test(v2md.text) ? "edmx 1.0" : "");
  const v2coll = await req("GET", `${bp2}A_BusinessPartner?$inlinecount=allpages&$top=2`);
  check("V2 GET $inlinecount=allpages", v2coll.status, 200, `__count=${v2coll.json().d?.__count}`);
  const v2key = await req("GET", `${bp2}A_BusinessPartner(${encodeURIComponent("'O''Neil'")})?$expand=to_Address`);
  check("V2 GET by key with $expand", v2key.status, 200, `${v2key.json().d?.to_Address?.results?.length} addresses`);
  const merge = await req("MERGE", `${bp2}A_BusinessPartner('1000003')`, { body: JSON.stringify({ SearchTerm1: "MERGED" }) });
  check("V2 MERGE", merge.status, 204);
  const tunneled = await req("POST", `${bp2}A_BusinessPartner('1000003')`, {
    body: JSON.stringify({ SearchTerm1: "TUNNELED" }),
    headers: { "x-http-method": "MERGE" },
  });
  check("V2 POST X-HTTP-Method: MERGE", tunneled.status, 204);
  const afterMerge = await req("GET", `${bp}A_BusinessPartner('1000003')`);
  check("V4 sees V2 MERGE", afterMerge.json().SearchTerm1, "TUNNELED");
  const v2put = await req("PUT", `${bp2}A_Currency('CHF')`, { body: JSON.stringify({ CurrencyName: "Franc", Decimals: 2 }) });
  check("V2 PUT", v2put.status, 204);
  check("V2 POST duplicate key", (await req("POST", `${bp2}A_Currency`, { body: JSON.stringify({ Currency: "EUR" }) })).status, 400);
  const v2create = await req("POST", `${bp2}A_Currency`, { body: JSON.stringify({ Currency: "SEK", CurrencyName: "Krona", Decimals: 2 }) });
  check("V2 POST create", v2create.status, 201);

  // Large response: a few MB in the LargeString field Notes.
  const big = "x".repeat(4 * 1024 * 1024);
  const bigPost = await req("POST", `${bp}A_BusinessPartner`, { body: JSON.stringify({ BusinessPartner: "BIG", Notes: big }) });
  check("V4 POST 4 MB Notes", bigPost.status, 201);
  const bigGet = await req("GET", `${bp}A_BusinessPartner('BIG')`);
  check("V4 GET 4 MB row", bigGet.status, 200, `${(bigGet.text.length / 1048576).toFixed(1)} MB`);
  const bigV2 = await req("GET", `${bp2}A_BusinessPartner('BIG')`);
  check("V2 GET 4 MB row", bigV2.status, 200, `${(bigV2.text.length / 1048576).toFixed(1)} MB`);
} finally {
  const s0 = performance.now();
  await be.stop();
  console.log(`stopped in ${Math.round(performance.now() - s0)} ms`);
}

// A second, independent back end with 10000 bulk rows: fresh data, large collection.
const t1 = performance.now();
const bulk = await startCapBackend({ bulkBusinessPartners: 10_000 });
console.log(`bulk back end started in ${Math.round(performance.now() - t1)} ms`);
try {
  const r = client(bulk);
  const bbp = bulk.v4.API_BUSINESS_PARTNER!;
  check("fresh data: V2-created SEK absent", (await r("GET", `${bbp}A_Currency('SEK')`)).status, 404);
  const all = await r("GET", `${bbp}A_BusinessPartner?$top=10000`);
  check("V4 GET $top=10000 bulk rows", all.status, 200, `${all.json().value.length} rows, ${(all.text.length / 1048576).toFixed(1)} MB`);
  const dflt = await r("GET", `${bbp}A_BusinessPartner`);
  const page = dflt.json();
  check("V4 default page size 1000 with nextLink", page.value.length, 1000, page["@odata.nextLink"] ?? "");
} finally {
  await bulk.stop();
}

console.log(failures ? `${failures} check(s) failed` : "all checks passed");
process.exitCode = failures ? 1 : 0;
