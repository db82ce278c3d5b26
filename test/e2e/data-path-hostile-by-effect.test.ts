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
import { json, patch } from "../../test-support/http.js";
import { NOTES2, NOTES4, onCap, type Permissions } from "../../test-support/effect-lab.js";
import { assertError, call, capEffects, effectLabSuite, type EffectLab } from "../../test-support/effect-lab.js";

const permissions: Permissions = {
  // get of one entity set, nothing else
  noteGetter: onCap({ API_NOTES: { Notes: ["get"] } }),
  noteLister: onCap({ API_NOTES: { Notes: ["list", "get"] } }),
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

E2E("a reliable-pagination $skiptoken reaches only the listed set's own columns at SAP CAP: a navigation path in it reads nothing of the set it leads to", async (ctx) => {
  // SAP CAP turns a base64 JSON $skiptoken ({"c":[{"k":name,"v":value,"a":ascending}]}) into conditions on the names it holds.
  const token = (c: unknown) => encodeURIComponent(Buffer.from(JSON.stringify({ c, r: 0 })).toString("base64"));
  const own = await call(ctx, "noteLister", "GET", `${NOTES4}/Notes?$skiptoken=${token([{ k: "label_ID", v: "A", a: true }])}`);
  assert.is(own.statusCode, 200, own.body);
  assert.equal(await capEffects(ctx, own, "API_NOTES"), ["list Notes"]);
  const viaV2 = await call(ctx, "noteLister", "GET", `${NOTES2}/Notes?$skiptoken=${token([{ k: "label_ID", v: "A", a: true }])}`);
  assert.is(viaV2.statusCode, 200, viaV2.body);
  assert.equal(await capEffects(ctx, viaV2, "API_NOTES"), ["list Notes"]);
  // A path through the note's label (a Secrets row), as a name or as the compared value: CAP reads no secret.
  const path = await call(ctx, "noteLister", "GET", `${NOTES4}/Notes?$skiptoken=${token([{ k: "label.value", v: "A", a: true }])}`);
  assert.is(path.statusCode, 400, path.body);
  assert.equal(await capEffects(ctx, path, "API_NOTES"), []);
  const value = await call(ctx, "noteLister", "GET", `${NOTES4}/Notes?$skiptoken=${token([{ k: "ID", v: { ref: ["label", "value"] }, a: true }])}`);
  assert.is(value.statusCode, 200, value.body);
  assert.equal(JSON.parse(value.body).value, [], "the reference is a value, compared as such");
  assert.equal(await capEffects(ctx, value, "API_NOTES"), ["list Notes"]);
  // On one entity a $skiptoken is no paging, and is refused.
  assertError(
    await call(ctx, "noteGetter", "GET", `${NOTES4}/Notes(folder_ID='F1',ID='N1')?$skiptoken=${token([{ k: "label_ID", v: "A", a: true }])}`),
    400,
    "VALIDATION_ERROR",
    "$skiptoken applies to collections, and the resource path addresses one entity",
  );
});

E2E("key values that SAP CAP's V2 adapter splits at '=' and ',' before it unquotes them stay a read of one note: at most another row of the same set, never the set or another one", async (ctx) => {
  // The adapter keeps `name=value` of each ','-separated piece up to a second '=': these keys reach CAP changed, or broken.
  const keys = [`folder_ID='F1',ID='x=y'',z'`, `folder_ID='F1=',ID='N1'`, `folder_ID='F1',ID='N1='`, `folder_ID='F1,ID',ID='N1'`, `folder_ID='F1',ID='a,ID=''N1'''`, `ID='N1',folder_ID='F1=x,='`];
  for (const key of keys) {
    const res = await call(ctx, "noteGetter", "GET", `${NOTES2}/Notes(${key})`);
    assert.ok([400, 404].includes(res.statusCode), `${key}: ${res.statusCode} ${res.body}`);
    const effects = await capEffects(ctx, res, "API_NOTES");
    assert.ok(effects.every((e) => e === "get Notes"), `${key}: ${effects.join(", ")}`);
  }
  // A list of notes, or any read of another set, stays refused however the key is spelled.
  assertError(await call(ctx, "noteGetter", "GET", `${NOTES2}/Notes(ID='N1')`), 400, "VALIDATION_ERROR", "the key of Notes must name exactly the key properties folder_ID, ID");
  assertError(await call(ctx, "noteGetter", "GET", `${NOTES2}/Notes('N1')`), 400, "VALIDATION_ERROR", "the key of Notes needs a named value for each key property (folder_ID, ID)");
  assertError(await call(ctx, "noteGetter", "GET", `${NOTES2}/Notes(folder_ID='F1',ID='N1')/$LINKS/label`), 400, "VALIDATION_ERROR", "unknown path segment '$LINKS'");
  assertError(await call(ctx, "noteGetter", "GET", `${NOTES2}/Notes(folder_ID='F1',ID='N1')?search=x`), 400, "VALIDATION_ERROR", "$search applies to collections, and the resource path addresses one entity");
});

E2E.run();
