/**
 * OData data aggregation (`$apply`) through erplink to SAP CAP, which
 * implements it, judged by effect (test-support/effect-lab.ts: what CAP's
 * database read must be covered by what erplink authorized, and on a
 * refusal CAP receives nothing). A key that may list the entity set gets
 * CAP's own answer for `groupby`, `aggregate($count as …)` and
 * `filter(…)/groupby(…)`; a `groupby` through a navigation reads the
 * navigation's target set, so a key without it is refused (403) and one
 * with it gets CAP's answer; transformations erplink does not analyze are
 * refused (400), and V2 has no `$apply`.
 */
import * as assert from "uvu/assert";
import type { LightMyRequestResponse } from "fastify";
import { ALL, BP2, BP4, CAP_BP, CAP_NOTES, NOTES4, onCap, type Permissions } from "../../test-support/effect-lab.js";
import { assertError, call, direct, effectLabSuite, type EffectLab } from "../../test-support/effect-lab.js";

const permissions: Permissions = {
  everything: onCap({ API_BUSINESS_PARTNER: { "*": ALL }, API_NOTES: { "*": ALL } }),
  partnerLister: onCap({ API_BUSINESS_PARTNER: { A_BusinessPartner: ["list"] } }),
  addressLister: onCap({ API_BUSINESS_PARTNER: { A_BusinessPartnerAddress: ["list"] } }),
  addressAndPartnerLister: onCap({ API_BUSINESS_PARTNER: { A_BusinessPartnerAddress: ["list"], A_BusinessPartner: ["list"] } }),
  noteLister: onCap({ API_NOTES: { Notes: ["list"] } }),
  partnerGetter: onCap({ API_BUSINESS_PARTNER: { A_BusinessPartner: ["get"] } }),
};

const E2E = effectLabSuite("$apply through erplink to SAP CAP, judged by effect", permissions);

/** The `value` of a V4 collection answer. */
function valueOf(body: string): unknown {
  return JSON.parse(body).value;
}

/** Asserts that erplink answered 200 with CAP's own answer to the same `$apply` (asked straight, with CAP's credentials). */
async function sameAsCap(lab: EffectLab, res: LightMyRequestResponse, capPath: string): Promise<unknown> {
  assert.is(res.statusCode, 200, res.body);
  const straight = await direct(lab, "cap", "GET", capPath);
  assert.is(straight.status, 200, straight.body);
  assert.equal(valueOf(res.body), valueOf(straight.body));
  return valueOf(res.body);
}

const GROUP_BY_CATEGORY = "$apply=groupby((BusinessPartnerCategory))";
const COUNT = "$apply=aggregate($count%20as%20C)";
const FILTERED_GROUPS = "$apply=filter(BusinessPartnerIsBlocked%20eq%20false)/groupby((BusinessPartnerCategory),aggregate($count%20as%20C))";
const THROUGH_NAVIGATION = "$apply=groupby((to_BusinessPartner/BusinessPartnerCategory))";

E2E("groupby, aggregate($count) and filter/groupby answer as CAP does for a key with '*' and for one that may only list the set", async (ctx) => {
  for (const key of ["everything", "partnerLister"]) {
    const groups = await sameAsCap(ctx, await call(ctx, key, "GET", `${BP4}/A_BusinessPartner?${GROUP_BY_CATEGORY}`), `${CAP_BP}/A_BusinessPartner?${GROUP_BY_CATEGORY}`);
    assert.equal(
      (groups as { BusinessPartnerCategory: string }[]).map((g) => g.BusinessPartnerCategory).sort(),
      ["1", "2"],
    );
    const count = await sameAsCap(ctx, await call(ctx, key, "GET", `${BP4}/A_BusinessPartner?${COUNT}`), `${CAP_BP}/A_BusinessPartner?${COUNT}`);
    assert.is((count as { C: number }[]).length, 1);
    assert.ok((count as { C: number }[])[0]!.C >= 4, JSON.stringify(count));
    const filtered = await sameAsCap(ctx, await call(ctx, key, "GET", `${BP4}/A_BusinessPartner?${FILTERED_GROUPS}`), `${CAP_BP}/A_BusinessPartner?${FILTERED_GROUPS}`);
    assert.ok((filtered as { C: number }[]).every((g) => typeof g.C === "number" && g.C > 0), JSON.stringify(filtered));
  }
});

E2E("an alias of aggregate is a name for $filter and $orderby after $apply", async (ctx) => {
  const query = "$apply=groupby((BusinessPartnerCategory),aggregate($count%20as%20C))&$filter=C%20gt%200&$orderby=C%20desc";
  await sameAsCap(ctx, await call(ctx, "partnerLister", "GET", `${BP4}/A_BusinessPartner?${query}`), `${CAP_BP}/A_BusinessPartner?${query}`);
});

E2E("a groupby through a navigation reads its target set: refused without it, nothing forwarded; CAP's answer with it", async (ctx) => {
  assertError(
    await call(ctx, "addressLister", "GET", `${BP4}/A_BusinessPartnerAddress?${THROUGH_NAVIGATION}`),
    403,
    "FORBIDDEN",
    "API key has no access to entity 'A_BusinessPartner'",
  );
  assertError(await call(ctx, "noteLister", "GET", `${NOTES4}/Notes?$apply=groupby((label/value))`), 403, "FORBIDDEN", "API key has no access to entity 'Secrets'");
  assertError(
    await call(ctx, "noteLister", "GET", `${NOTES4}/Notes?$apply=filter(label/value%20eq%20'TOP%20SECRET')/aggregate($count%20as%20C)`),
    403,
    "FORBIDDEN",
    "API key has no access to entity 'Secrets'",
  );
  for (const key of ["addressAndPartnerLister", "everything"]) {
    await sameAsCap(ctx, await call(ctx, key, "GET", `${BP4}/A_BusinessPartnerAddress?${THROUGH_NAVIGATION}`), `${CAP_BP}/A_BusinessPartnerAddress?${THROUGH_NAVIGATION}`);
  }
  await sameAsCap(ctx, await call(ctx, "everything", "GET", `${NOTES4}/Notes?$apply=groupby((label/value))`), `${CAP_NOTES}/Notes?$apply=groupby((label/value))`);
});

E2E("a key that may only get entities may not aggregate the set", async (ctx) => {
  assertError(
    await call(ctx, "partnerGetter", "GET", `${BP4}/A_BusinessPartner?${COUNT}`),
    403,
    "FORBIDDEN",
    "API key lacks permission 'list' for entity 'A_BusinessPartner'",
  );
});

E2E("transformations erplink does not analyze are refused with 400 naming them, and V2 has no $apply", async (ctx) => {
  assertError(
    await call(ctx, "everything", "GET", `${BP4}/A_BusinessPartner?$apply=ancestors($root/A_BusinessPartner,H,BusinessPartner,filter(BusinessPartner%20eq%20'1'),keep%20start)`),
    400,
    "VALIDATION_ERROR",
    "$apply transformation 'ancestors' is not supported",
  );
  assertError(
    await call(ctx, "everything", "GET", `${BP4}/A_BusinessPartner?$apply=topcount(2,BusinessPartnerCategory)`),
    400,
    "VALIDATION_ERROR",
    "$apply transformation 'topcount' is not supported",
  );
  assertError(
    await call(ctx, "everything", "GET", `${BP2}/A_BusinessPartner?${GROUP_BY_CATEGORY}`),
    403,
    "FORBIDDEN",
    "$apply is not allowed: OData V2 has no data aggregation",
  );
});

E2E.run();
