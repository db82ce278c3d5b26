/**
 * The route table against the service descriptors: every RPC is either
 * routed or marked internal-only, and no route points at an unknown RPC.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createConnectRouter } from "@connectrpc/connect";
import fc from "fast-check";
import { checkServiceName } from "../../src/gateway/data/resolve-instance.js";
import { bodySchema } from "../../src/gateway/json-schema.js";
import { INTERNAL_ONLY_RPCS, ROUTES, fastifyPath } from "../../src/gateway/route-table.js";
import { ApiKeySchema, UpdateApiKeyRequestSchema } from "../../src/gen/erplink/admin/v1/api_key_pb.js";
import { docs } from "../../src/gen/docs.js";
import { createRoutes } from "../../src/services/routes.js";
import { openTestStore } from "../../test-support/world.js";
import { createServiceDeps } from "../../src/services/context.js";

const Table = suite("route table");

Table("every RPC served is routed on the REST facade or marked internal-only", async () => {
  const store = await openTestStore();
  try {
    const router = createConnectRouter();
    createRoutes(createServiceDeps(store, { dataLimits: {}, encryptionKey: Buffer.alloc(32), onBackgroundError: () => undefined }))(router);
    const served = router.handlers.map((h) => `${h.service.typeName}.${h.method.name}`).sort();
    assert.ok(served.length >= 10);
    const routed = new Set(ROUTES.map((r) => `${r.rpc.parent.typeName}.${r.rpc.name}`));
    const missing = served.filter((rpc) => !routed.has(rpc) && !INTERNAL_ONLY_RPCS.has(rpc));
    assert.equal(missing, []);
    for (const rpc of routed) assert.ok(served.includes(rpc), `${rpc} is routed but not served`);
  } finally {
    await store.dispose();
  }
});

Table("routes are unique and their params exist in the request message", () => {
  const keys = ROUTES.map((r) => `${r.method} ${r.path}`);
  assert.is(new Set(keys).size, keys.length);
  for (const route of ROUTES) {
    for (const [param, path] of Object.entries(route.params ?? {})) {
      assert.ok(route.path.includes(`{${param}}`), `${route.path} has {${param}}`);
      let message = route.rpc.input;
      const parts = path.split(".");
      for (const [i, part] of parts.entries()) {
        const field = message.fields.find((f) => f.name === part);
        assert.ok(field, `${route.rpc.name}: ${path}`);
        if (i < parts.length - 1) message = field!.message!;
      }
    }
    assert.ok(route.rpc.output.fields.some((f) => f.name === route.data), `${route.rpc.name} has ${route.data}`);
    assert.is(fastifyPath(route.path).includes("{"), false);
  }
});

Table("body extras are fields of the request message beside the body's own, none sharing a name with the body message's fields", () => {
  const withExtras = ROUTES.filter((r) => (r.body?.extras ?? []).length > 0);
  assert.equal(withExtras.map((r) => `${r.method} ${r.path} ${r.body!.extras!.join(",")}`), ["POST /admin/api-keys/{id}/explain permissions"]);
  for (const route of withExtras) {
    for (const name of route.body!.extras!) {
      assert.ok(route.rpc.input.fields.some((f) => f.name === name), `${route.rpc.name} has ${name}`);
      assert.is(route.body!.schema.fields.some((f) => f.name === name), false, `${name} is not a field of ${route.body!.schema.name}`);
      assert.is(name === route.body!.field || Object.values(route.params ?? {}).some((p) => p.split(".")[0] === name), false, name);
    }
  }
});

Table("bodySchema: the extras join every alternative of a message of variants; an unknown or clashing extra is a startup error", () => {
  const input = UpdateApiKeyRequestSchema;
  const schema = bodySchema(input, { schema: ApiKeySchema, extras: ["update_mask"] }, false);
  assert.equal(schema.properties && Object.keys(schema.properties as object).at(-1), "update_mask");
  const variants = bodySchema(input, { schema: ApiKeySchema, extras: ["update_mask"] }, true).oneOf as { properties: Record<string, unknown>; additionalProperties: boolean }[];
  assert.is(variants.length, 3);
  for (const v of variants) assert.equal([v.properties.update_mask, v.additionalProperties], [{ type: "string", description: docs["erplink.admin.v1.UpdateApiKeyRequest.update_mask"] }, false]);
  assert.throws(() => bodySchema(input, { schema: ApiKeySchema, extras: ["nope"] }, false), /erplink.admin.v1.UpdateApiKeyRequest has no field nope/);
  assert.throws(() => bodySchema(input, { schema: input, extras: ["api_key"] }, false), /body extra api_key is already a field of the body message erplink.admin.v1.UpdateApiKeyRequest/);
});

Table("every path parameter has the form of its values; every 201 route names the created resource's path; every list names its items' id type", () => {
  for (const route of ROUTES) {
    for (const param of Object.keys(route.params ?? {})) {
      assert.type(route.paramSchemas?.[param]?.pattern, "string", `${route.method} ${route.path} {${param}}`);
    }
    assert.is(route.location !== undefined, route.status === 201, `${route.method} ${route.path}: Location iff 201`);
    if (route.location !== undefined) {
      // The created resource's own path is a route of the table (one that reads or deletes it).
      assert.ok(ROUTES.some((r) => r.path === route.location && (r.method === "GET" || r.method === "DELETE")), route.location);
    }
    assert.is(route.listOf !== undefined, route.list === true && route.query?.includes("page_token") === true, `${route.path}: listOf`);
  }
});

Table("the catalog's {service} pattern accepts exactly the service names the data path takes (property)", () => {
  const route = ROUTES.find((r) => r.path === "/admin/instances/{id}/services/{service}/catalog")!;
  const schema = route.paramSchemas!.service!;
  const re = new RegExp(schema.pattern, "u");
  const takes = (name: string) => {
    try {
      checkServiceName(name);
      return true;
    } catch {
      return false;
    }
  };
  const published = (name: string) => re.test(name) && [...name].length <= schema.maxLength!;
  const chars = fc.constantFrom(..."abAZ09_.~!$&'()*+,;=:@-/%? \u00e9#".split(""));
  fc.assert(
    fc.property(fc.oneof(fc.string({ unit: chars, maxLength: 8 }), fc.string({ maxLength: 8 }), fc.constantFrom(".", "..", "...", "a".repeat(200), "a".repeat(201))), (name) =>
      published(name) === takes(name),
    ),
    { numRuns: 3000, seed: 13 },
  );
});

Table.run();
