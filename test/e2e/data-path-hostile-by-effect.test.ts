/**
 * Hostile requests from a narrow data key, judged by effect: each goes
 * through erplink to SAP CAP (V4 and V2) or SAP's Fiori elements mock server
 * (V2 API_BUSINESS_PARTNER and API_SALES_ORDER_SRV, V4 TripPin), and what
 * the back end's data layer read and wrote for it must be covered by the
 * accesses erplink authorized (the effect lab, test-support/effect-lab.ts);
 * on a refusal the back end receives nothing, and the request log says so.
 *
 * The keys are as narrow as a key gets: `get` of one entity set of one
 * service. The requests aim past that grant through the forwarder's own
 * machinery (its connection gate, its deadlines) and through what the back
 * ends read beyond the OData grammar (SAP CAP's reliable-pagination
 * `$skiptoken`, its V2 adapter's function-import and key conversions, SAP's
 * mock server's key parser, which decodes twice).
 */
import * as assert from "uvu/assert";
import type { LightMyRequestResponse } from "fastify";
import { json, patch } from "../../test-support/http.js";
import { BP4, NOTES2, NOTES4, onCap, type Permissions } from "../../test-support/effect-lab.js";
import { assertError, call, capEffects, direct, effectLabSuite, type EffectLab } from "../../test-support/effect-lab.js";

const permissions: Permissions = {
  // get of one entity set, nothing else
  noteGetter: onCap({ API_NOTES: { Notes: ["get"] } }),
  noteLister: onCap({ API_NOTES: { Notes: ["list", "get"] } }),
  partnerGetter: onCap({ API_BUSINESS_PARTNER: { A_BusinessPartner: ["get"] } }),
};

const E2E = effectLabSuite("hostile data requests from a narrow key, judged by what the back ends did", permissions);

/** The id of the lab's instance `name`. */
async function instanceId(ctx: EffectLab, name: string): Promise<string> {
  const auth = { authorization: `Bearer ${(await import("../../test-support/world.js")).MASTER_KEY}` };
  const systems = json(await ctx.world.app.inject({ method: "GET", url: "/admin/systems", headers: auth })).data as { id: string }[];
  for (const s of systems) {
    const instances = json(await ctx.world.app.inject({ method: "GET", url: `/admin/systems/${s.id}/instances`, headers: auth })).data as { id: string; name: string }[];
    const found = instances.find((i) => i.name === name);
    if (found !== undefined) return found.id;
  }
  throw new Error(`no instance ${name}`);
}

E2E("a request refused for want of a back-end connection is logged as forwarding nothing, and the back end received nothing for it", async (ctx) => {
  const id = await instanceId(ctx, "s4");
  const limit = async (n: number) => assert.is((await patch(ctx.world.app, `/admin/instances/${id}`, { upstream_connections: n })).statusCode, 200);
  await limit(1);
  try {
    // One connection, eight may wait: of 40 reads sent at once most are refused with 503 at the gate.
    const url = `${NOTES4}/Notes(folder_ID='F1',ID='N1')`;
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        ctx.world.app.inject({ method: "GET", url, headers: { authorization: `Bearer ${ctx.keys.noteGetter}`, accept: "application/json" } }),
      ),
    );
    const refused = answers.filter((a) => a.statusCode === 503);
    assert.ok(refused.length > 0, `some reads were refused at the gate: ${answers.map((a) => a.statusCode).join(",")}`);
    for (const res of refused) {
      assertError(res, 503, "UNAVAILABLE", "too many requests are waiting for this instance's back end: retry shortly");
      // The log says what was sent: nothing, as the back end saw.
      await ctx.world.layer.logWriter.flush();
      const entry = (await ctx.world.store.logs.query({ limit: 1000 })).items.find((e) => e.requestId === res.headers["x-request-id"]);
      assert.equal([entry?.status, entry?.upstreamMethod, entry?.upstreamUrl], [503, "", ""]);
      assert.is(ctx.capProxy.received.filter((r) => r.headers["x-request-id"] === res.headers["x-request-id"]).length, 0);
    }
    for (const res of answers.filter((a) => a.statusCode !== 503)) assert.is(res.statusCode, 200, res.body);
  } finally {
    await limit(0);
  }
});

E2E.run();
