/**
 * Instance service routes and back-end credentials over REST: secrets are
 * write-only, sealed at rest (bound to their instance) and never returned.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { openBackendAuth } from "../../src/services/backend-auth.js";
import { createSecretBox } from "../../src/services/secret-box.js";
import { AUTH, ENCRYPTION_KEY, createWorld, type World } from "../../test-support/world.js";
import { json, patch, post } from "../../test-support/http.js";

const Auth = suite<{ world: World; systemId: string }>("instance services and back-end credentials");

Auth.before.each(async (ctx) => {
  ctx.world = await createWorld();
  ctx.systemId = json(await post(ctx.world.app, "/admin/systems", { name: "S4" })).data.id;
});
Auth.after.each(async (ctx) => {
  await ctx.world.close();
});

const BASE = { name: "s4-prod", base_url: "https://s4.example.com/" };

Auth("basic credentials: the password is accepted, sealed, and never returned", async ({ world, systemId }) => {
  const res = await post(world.app, `/admin/systems/${systemId}/instances`, {
    ...BASE,
    services: { API_PO: { path: "srvd_a2x/sap/purchaseorder/0001" } },
    auth: { type: "basic", username: "ERPLINK_USER", password: "s3cr3t-Passw0rd!" },
  });
  assert.is(res.statusCode, 201);
  const created = json(res).data;
  assert.equal(created.auth, { type: "basic", username: "ERPLINK_USER" });
  assert.equal(created.services, { API_PO: { path: "srvd_a2x/sap/purchaseorder/0001" } });
  for (const url of [`/admin/instances/${created.id}`, `/admin/systems/${systemId}/instances`]) {
    const got = await world.app.inject({ method: "GET", url, headers: AUTH });
    assert.is(got.statusCode, 200);
    assert.not.match(got.body, /s3cr3t/);
  }
  const rec = await world.store.instances.get(created.id);
  assert.not.match(JSON.stringify(rec), /s3cr3t/);
  assert.match(rec!.auth!.sealed!, /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/);
  const box = createSecretBox(ENCRYPTION_KEY);
  assert.equal(openBackendAuth(rec!.auth!, created.id, box), {
    type: "basic",
    username: "ERPLINK_USER",
    password: "s3cr3t-Passw0rd!",
  });
  // Sealed for this instance only: another id cannot open it.
  assert.throws(() => openBackendAuth(rec!.auth!, "ins_00000000000000000000000000", box));
});

Auth("each type needs its fields and refuses the others", async ({ world, systemId }) => {
  const cases: [object, { field: string; message: string }[]][] = [
    [{ type: "bearer" }, [{ field: "auth.token", message: "is required with type 'bearer'" }]],
    [
      { type: "basic", username: "u", password: "p", token: "t" },
      [{ field: "auth.token", message: "is not used with type 'basic'" }],
    ],
    [{ username: "u" }, [{ field: "auth.type", message: "is required: none, basic, bearer or oauth2_client_credentials" }]],
    [
      { type: "oauth2_client_credentials", client_id: "c" },
      [
        { field: "auth.token_url", message: "is required with type 'oauth2_client_credentials'" },
        { field: "auth.client_secret", message: "is required with type 'oauth2_client_credentials'" },
      ],
    ],
    [
      { type: "oauth2_client_credentials", token_url: "ftp://idp.example.com/token", client_id: "c", client_secret: "s" },
      [{ field: "auth.token_url", message: "must be an absolute http or https URL" }],
    ],
    [{ type: "none", password: "p" }, [{ field: "auth.password", message: "is not used with type 'none'" }]],
  ];
  for (const [auth, details] of cases) {
    const res = await post(world.app, `/admin/systems/${systemId}/instances`, { ...BASE, auth });
    assert.is(res.statusCode, 400, JSON.stringify(auth));
    assert.equal(json(res).error.details, details, JSON.stringify(auth));
    assert.not.match(res.body, /"p"|"s"|"t"/);
  }
  assert.is(await world.store.instances.countBySystem(systemId), 0);
});

Auth("service paths must be relative URL paths without dot segments", async ({ world, systemId }) => {
  for (const path of ["../etc", "a/../b", "/abs", "a//b", "a/b?x=1", "a b", "%2e%2e/x", ""]) {
    const res = await post(world.app, `/admin/systems/${systemId}/instances`, { ...BASE, services: { S: { path } } });
    assert.is(res.statusCode, 400, path);
    assert.is(json(res).error.details[0].field, "services.S.path", path);
  }
  const badName = await post(world.app, `/admin/systems/${systemId}/instances`, { ...BASE, services: { "a/b": { path: "x" } } });
  assert.is(badName.statusCode, 400);
  assert.is(json(badName).error.details[0].field, "services.a/b");
});

Auth("PATCH replaces the credentials or, with null, removes them", async ({ world, systemId }) => {
  const created = json(
    await post(world.app, `/admin/systems/${systemId}/instances`, { ...BASE, auth: { type: "bearer", token: "tok-1" } }),
  ).data;
  const changed = await patch(world.app, `/admin/instances/${created.id}`, { auth: { type: "bearer", token: "tok-2" } });
  assert.is(changed.statusCode, 200);
  const rec = await world.store.instances.get(created.id);
  assert.is(openBackendAuth(rec!.auth!, created.id, createSecretBox(ENCRYPTION_KEY)).token, "tok-2");
  const removed = await patch(world.app, `/admin/instances/${created.id}`, { auth: null });
  assert.is(removed.statusCode, 200);
  assert.is(json(removed).data.auth, undefined);
  assert.is((await world.store.instances.get(created.id))?.auth, undefined);
});

Auth.run();
