/**
 * The OpenAPI 3.1 document: valid for a real validator, generated from the
 * route table (every route present), and the reference page is served.
 */
import { Validator } from "@seriousme/openapi-schema-validator";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ROUTES } from "../../src/gateway/route-table.js";
import { createWorld, type World } from "../../test-support/world.js";

const OpenApi = suite<{ world: World; doc: Record<string, any> }>("openapi");

OpenApi.before(async (ctx) => {
  ctx.world = await createWorld();
  const res = await ctx.world.app.inject({ method: "GET", url: "/api-reference/openapi.json" });
  assert.is(res.statusCode, 200);
  assert.match(res.headers["content-type"] as string, /^application\/json/);
  ctx.doc = JSON.parse(res.body);
});
OpenApi.after(async (ctx) => {
  await ctx.world.close();
});

OpenApi("validates as OpenAPI 3.1", async ({ doc }) => {
  assert.is(doc.openapi, "3.1.0");
  const validator = new Validator();
  const result = await validator.validate(structuredClone(doc));
  assert.equal(result.errors, undefined);
  assert.is(result.valid, true);
  assert.is(validator.version, "3.1");
});

OpenApi("lists every routed /admin path and method, with id path parameters", ({ doc }) => {
  const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
    Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
  );
  const routed = ROUTES.map((r) => `${r.method} ${r.path}`);
  assert.equal(documented.sort(), routed.sort());
  for (const path of ["/admin/systems/{id}", "/admin/systems/{id}/instances", "/admin/instances/{id}"]) {
    for (const op of Object.values(doc.paths[path]) as { parameters: { name: string; in: string; required: boolean }[] }[]) {
      const param = op.parameters.find((p) => p.in === "path");
      assert.equal({ name: param?.name, required: param?.required }, { name: "id", required: true });
    }
  }
});

OpenApi("describes bodies, envelopes, errors and the bearer scheme", ({ doc }) => {
  assert.equal(doc.components.securitySchemes.bearer.scheme, "bearer");
  assert.equal(doc.components.securitySchemes.bearer.type, "http");
  const create = doc.paths["/admin/systems"].post;
  assert.is(create.operationId, "CreateSystem");
  assert.equal(create.requestBody.content["application/json"].schema, { $ref: "#/components/schemas/SystemCreate" });
  assert.equal(Object.keys(create.responses).sort(), ["201", "400", "401", "403", "404", "405", "409", "413", "415", "429", "500", "503"]);
  const envelope = create.responses["201"].content["application/json"].schema;
  assert.equal(envelope.properties.data, { $ref: "#/components/schemas/System" });
  assert.equal(envelope.required, ["data", "meta"]);
  const list = doc.paths["/admin/systems"].get;
  assert.equal(list.parameters.map((p: { name: string }) => p.name), ["page_size", "page_token"]);
  assert.equal(list.parameters[0].schema, { type: "integer", minimum: 1, maximum: 500, default: 50 });

  const system = doc.components.schemas.System;
  assert.is(system.properties.id.readOnly, true);
  assert.is(system.properties.name.maxLength, 100);
  assert.is(system.properties.created_at.format, "date-time");
  assert.match(system.properties.name.description, /unique across all systems/);
  const systemCreate = doc.components.schemas.SystemCreate;
  assert.equal(systemCreate.required, ["name"]);
  assert.equal(Object.keys(systemCreate.properties), ["name", "description", "labels"]);
  assert.is(systemCreate.additionalProperties, false);
  const instancePatch = doc.components.schemas.InstanceUpdate;
  assert.is(instancePatch.minProperties, 1);
  assert.is(instancePatch.required, undefined);
  assert.is(doc.components.schemas.InstanceCreate.properties.name.pattern, "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");
  assert.equal(doc.components.schemas.Error.properties.error.required, ["code", "message", "requestId"]);
  const keyCreate = doc.components.schemas.ApiKeyCreate;
  assert.equal(keyCreate.properties.type, {
    type: "string",
    enum: ["data", "admin"],
    description: "`data` (the default) or `admin`. Set at creation; never changes.",
  });
  assert.equal(Object.keys(keyCreate.properties), ["name", "type", "permissions", "rate_limits", "expires_at"]);
  assert.is(doc.components.schemas.ApiKeyUpdate.properties.type, undefined);
  const created = doc.paths["/admin/api-keys"].post.responses["201"];
  assert.equal(Object.keys(created.headers), [
    "X-Request-Id",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "RateLimit-Policy",
    "RateLimit",
  ]);
});

OpenApi("an optional field's pattern admits \"\" (unset), as the services do; a required one's does not", ({ doc }) => {
  for (const name of ["Instance", "InstanceCreate", "InstanceUpdate"]) {
    assert.is(doc.components.schemas[name].properties.sap_client.pattern, "^$|^[0-9]{3}$", name);
  }
  assert.is(doc.components.schemas.InstanceCreate.properties.name.pattern, "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");
});

OpenApi("serves a browsable reference page without a token", async ({ world }) => {
  const res = await world.app.inject({ method: "GET", url: "/api-reference" });
  const page = res.statusCode === 302 ? await world.app.inject({ method: "GET", url: res.headers.location as string }) : res;
  assert.is(page.statusCode, 200);
  assert.match(page.headers["content-type"] as string, /^text\/html/);
  assert.match(page.body, /swagger-ui/i);
  // Same origin as the dashboard: its own files only (no inline script or style, nothing from elsewhere), never framed.
  assert.is(
    page.headers["content-security-policy"],
    "default-src 'none'; script-src 'self'; script-src-attr 'none'; style-src 'self' 'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='; img-src 'self' data:; font-src 'self' data:; " +
      "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'",
  );
});

OpenApi.run();
