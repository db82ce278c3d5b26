/**
 * An instance's changes reach the data plane as a key's do: at once in the
 * process that made them (created, edited, renamed, deleted), and within the
 * key-sync interval in another process over the same store; a read in flight
 * when a change is made is not kept.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { DataPlane } from "../../src/services/data-plane.js";
import { createServiceDeps } from "../../src/services/context.js";
import { json, patch, post } from "../../test-support/http.js";
import { ENCRYPTION_KEY, MASTER_KEY, createWorld, type World } from "../../test-support/world.js";

const Changes = suite<{ w: World }>("instance changes reach the data plane");
Changes.before.each(async (ctx) => {
  ctx.w = await createWorld();
});
Changes.after.each(async (ctx) => {
  await ctx.w.close();
});

async function createInstance(w: World, name: string, baseUrl: string): Promise<string> {
  const sys = json(await post(w.app, "/admin/systems", { name: `S-${name}` })).data.id;
  const res = await post(w.app, `/admin/systems/${sys}/instances`, { name, base_url: baseUrl });
  assert.is(res.statusCode, 201, res.body);
  return json(res).data.id;
}

Changes("in the process that made them: created after a miss, edited, renamed and deleted instances are in force at once", async ({ w }) => {
  const plane = w.layer.dataPlane;
  assert.is(await plane.instance("prod"), undefined, "looked up before it exists: remembered as unknown");
  const id = await createInstance(w, "prod", "http://erp-a.example/odata/");
  assert.is((await plane.instance("prod"))?.baseUrl, "http://erp-a.example/odata");
  assert.is((await patch(w.app, `/admin/instances/${id}`, { base_url: "http://erp-b.example/odata/" })).statusCode, 200);
  assert.is((await plane.instance("prod"))?.baseUrl, "http://erp-b.example/odata");
  assert.is((await patch(w.app, `/admin/instances/${id}`, { name: "prod2" })).statusCode, 200);
  assert.is(await plane.instance("prod"), undefined);
  assert.is((await plane.instance("prod2"))?.baseUrl, "http://erp-b.example/odata");
  assert.is((await w.app.inject({ method: "DELETE", url: `/admin/instances/${id}`, headers: { authorization: `Bearer ${MASTER_KEY}` } })).statusCode, 200);
  assert.is(await plane.instance("prod2"), undefined);
});

Changes("in another process over the same store: the old instance until the key-sync interval has passed, the new one after", async ({ w }) => {
  let now = w.now.getTime();
  const deps = createServiceDeps(w.store, {
    dataLimits: { perMinute: 100, perDay: 1000 },
    encryptionKey: ENCRYPTION_KEY,
    onBackgroundError: () => {},
    clock: () => new Date(now),
    sessionRefreshMs: 2_000,
  });
  const other = new DataPlane(deps, () => false);
  const id = await createInstance(w, "prod", "http://erp-a.example/odata/");
  assert.is((await other.instance("prod"))?.baseUrl, "http://erp-a.example/odata");
  assert.is((await patch(w.app, `/admin/instances/${id}`, { base_url: "http://erp-b.example/odata/" })).statusCode, 200);
  now += 1_999;
  assert.is((await other.instance("prod"))?.baseUrl, "http://erp-a.example/odata", "within the interval: as read");
  now += 1;
  assert.is((await other.instance("prod"))?.baseUrl, "http://erp-b.example/odata", "after it: as changed");
});

Changes("a read in flight when the instance changes is not kept", async ({ w }) => {
  const id = await createInstance(w, "prod", "http://erp-a.example/odata/");
  const plane = w.layer.dataPlane;
  const reading = plane.instance("prod");
  assert.is((await patch(w.app, `/admin/instances/${id}`, { base_url: "http://erp-b.example/odata/" })).statusCode, 200);
  await reading;
  assert.is((await plane.instance("prod"))?.baseUrl, "http://erp-b.example/odata");
});

Changes.run();
