/**
 * SAP's Fiori elements mock server ignores `X-Forwarded-*` and writes its own
 * host and path into the URLs of its V2 answers. Through erplink every one of
 * them names erplink (`src/gateway/data/v2-urls.ts`), and a client
 * following one is served by erplink, judged by effect. (The mock server
 * answers a V2 request for Atom in JSON: the unit tests cover Atom.) SAP
 * CAP's V2 adapter honours the forwarded headers: its URLs name erplink
 * already and pass unchanged.
 */
import * as assert from "uvu/assert";
import { BP, BP2, call, effectLabSuite, onCap } from "../../test-support/effect-lab.js";

const READ = { A_BusinessPartner: ["list", "get"], A_BusinessPartnerAddress: ["list", "get"] };
const E2E = effectLabSuite("V2 answers' URLs name erplink", { reader: { sap: { API_BUSINESS_PARTNER: READ }, ...onCap({ API_BUSINESS_PARTNER: READ }) } });

/** What erplink's injected client reaches it as. */
const ERPLINK = "http://localhost:80";

/** Every value of the members (of the objects under `holder`, or anywhere when undefined) named `name`. */
function urlsIn(value: unknown, name: string, holder?: string, parent?: string): string[] {
  if (Array.isArray(value)) return value.flatMap((v) => urlsIn(v, name, holder, parent));
  if (value === null || typeof value !== "object") return [];
  const found: string[] = [];
  for (const [k, v] of Object.entries(value)) {
    if (k === name && typeof v === "string" && (holder === undefined || parent === holder)) found.push(v);
    else found.push(...urlsIn(v, name, holder, k));
  }
  return found;
}

E2E("JSON: every __metadata.uri, __deferred.uri and __next names erplink, and following them is served by erplink", async (lab) => {
  const res = await call(lab, "reader", "GET", `${BP}/A_BusinessPartner?$top=2`);
  assert.is(res.statusCode, 200, res.body);
  const body = JSON.parse(res.body);
  const uris = urlsIn(body, "uri", "__metadata");
  const deferred = urlsIn(body, "uri", "__deferred");
  assert.is(uris.length, 2);
  // The mock server writes no __deferred of its own (it leaves unexpanded navigations out); any other back end's are checked too.
  for (const url of [...uris, ...deferred]) assert.ok(url.startsWith(`${ERPLINK}${BP}/`), url);
  assert.is(res.headers["content-length"], undefined);
  assert.is(res.headers["transfer-encoding"], "chunked");
  const entity = await call(lab, "reader", "GET", uris[0]!.slice(ERPLINK.length));
  assert.is(entity.statusCode, 200, entity.body);
  assert.is(JSON.parse(entity.body).d.__metadata.uri, uris[0]);
});

E2E("JSON: __next of a server-driven page names erplink and the next page is served through it", async (lab) => {
  // The mock server pages at 1000 entries: ask for fewer with $top and $skiptoken is not written; $inlinecount asks for __count only.
  const res = await call(lab, "reader", "GET", `${BP}/A_BusinessPartner?$top=2&$inlinecount=allpages`);
  assert.is(res.statusCode, 200, res.body);
  const next = urlsIn(JSON.parse(res.body), "__next");
  for (const url of next) {
    assert.ok(url.startsWith(`${ERPLINK}${BP}/`), url);
    const page = await call(lab, "reader", "GET", url.slice(ERPLINK.length));
    assert.is(page.statusCode, 200, page.body);
  }
});

E2E("a back end that honours X-Forwarded-* (CAP's V2 adapter): its URLs name erplink and pass as written", async (lab) => {
  const res = await call(lab, "reader", "GET", `${BP2}/A_BusinessPartner?$top=2`);
  assert.is(res.statusCode, 200, res.body);
  const uris = urlsIn(JSON.parse(res.body), "uri", "__metadata");
  assert.is(uris.length, 2);
  for (const url of uris) assert.ok(url.startsWith(`${ERPLINK}${BP2}/`), url);
});

E2E.run();
