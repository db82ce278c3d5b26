/**
 * OData V2 reads a system query option only as `$name` in lower case; to a
 * V2 back end `top` or `$TOP` is a custom option. Through erplink such a
 * request is refused, naming the spelling to use, and reaches no back end
 * (it is neither read as the system option, OData 4.01's reading, nor
 * rewritten into one, which would change what the back end answers); on V4
 * the 4.01 reading stays. A V2 function import's parameters named like
 * options (SAP CAP's `folderOf?ID=…`) are its parameters. Judged by what SAP's
 * mock server and SAP CAP did (the effect lab, test-support/effect-lab.ts).
 */
import * as assert from "uvu/assert";
import { BP, NOTES2, TRIP, assertError, call, capEffects, effectLabSuite, mockEffects, onCap, type Permissions } from "../../test-support/effect-lab.js";

const permissions: Permissions = {
  partners: { sap: { API_BUSINESS_PARTNER: { A_BusinessPartner: ["list", "get"] } }, trip: { TripPin: { People: ["list", "get"] } } },
  folders: onCap({ API_NOTES: { folderOf: ["invoke"], Folders: ["get"], Notes_labelText: ["invoke"], Notes: ["get"], Labels: ["get"] } }),
};

const E2E = effectLabSuite("V2 option spellings, judged by what the back ends did", permissions);

const misspelled = (name: string, canonical: string) =>
  `query option '${name}' is not $${canonical} on an OData V2 service, which reads it as a custom option: write '$${canonical}' for the system query option`;

E2E("on V2, `top`, `select` and `$TOP` are refused with the spelling to use, and SAP's mock server receives nothing", async (ctx) => {
  for (const [query, name, canonical] of [
    ["top=2&select=BusinessPartner", "top", "top"],
    ["$top=2&select=BusinessPartner", "select", "select"],
    ["$TOP=2", "$TOP", "top"],
    ["$format=json&$Filter=BusinessPartner%20eq%20'1'", "$Filter", "filter"],
  ] as const) {
    // `call` checks that nothing was forwarded for a refusal, and that the log says so.
    const res = await call(ctx, "partners", "GET", `${BP}/A_BusinessPartner?${query}`);
    assertError(res, 400, "VALIDATION_ERROR", misspelled(name, canonical));
  }
});

E2E("on V2, `$top` and `$select` as V2 spells them pass, read as SAP's mock server reads them", async (ctx) => {
  const res = await call(ctx, "partners", "GET", `${BP}/A_BusinessPartner?$top=2&$select=BusinessPartner`);
  assert.is(res.statusCode, 200, res.body);
  const rows = JSON.parse(res.body).d.results as Record<string, unknown>[];
  assert.is(rows.length, 2);
  assert.equal(Object.keys(rows[0]!).sort(), ["BusinessPartner", "__metadata"]);
  assert.equal(await mockEffects(ctx, res), ["list A_BusinessPartner"]);
});

E2E("on V4, OData 4.01's spellings are the system options: `top=2&SELECT=UserName` reads two people's user names", async (ctx) => {
  const res = await call(ctx, "partners", "GET", `${TRIP}/People?top=2&SELECT=UserName`);
  assert.is(res.statusCode, 200, res.body);
  const rows = JSON.parse(res.body).value as Record<string, unknown>[];
  assert.is(rows.length, 2);
  assert.equal(Object.keys(rows[0]!).filter((k) => !k.startsWith("@")), ["UserName"]);
});

E2E("a V2 function import's parameter named like an option (SAP CAP's folderOf?ID=…) is its parameter: the call reaches the folder it names", async (ctx) => {
  const res = await call(ctx, "folders", "GET", `${NOTES2}/folderOf?ID='F1'`);
  assert.is(res.statusCode, 200, res.body);
  assert.is(JSON.parse(res.body).d.ID, "F1");
  assert.equal(await capEffects(ctx, res, "API_NOTES"), ["get Folders"]);
  const bound = await call(ctx, "folders", "GET", `${NOTES2}/Notes_labelText?folder_ID='F1'&ID='N1'`);
  assert.is(bound.statusCode, 200, bound.body);
  // Beside them, an option misspelled is still refused.
  assertError(await call(ctx, "folders", "GET", `${NOTES2}/folderOf?ID='F1'&top=1`), 400, "VALIDATION_ERROR", misspelled("top", "top"));
});

E2E.run();
