/**
 * The route table against the service descriptors: every RPC is either
 * routed or marked internal-only, and no route points at an unknown RPC.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { createConnectRouter } from "@connectrpc/connect";
import { INTERNAL_ONLY_RPCS, ROUTES, fastifyPath } from "../../src/gateway/route-table.js";
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

Table.run();
