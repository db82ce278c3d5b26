/**
 * The shared security suite: walks the route table and checks that every
 * /admin route rejects a missing, malformed or wrong token with 401, the
 * envelope and `WWW-Authenticate: Bearer`, before reading the body.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { ROUTES } from "../../src/gateway/route-table.js";
import { MASTER_KEY, createWorld, type World } from "../../test-support/world.js";

const Security = suite<{ world: World }>("admin authentication");

Security.before(async (ctx) => {
  ctx.world = await createWorld();
});
Security.after(async (ctx) => {
  await ctx.world.close();
});

/** A concrete URL for a route: ids of the right type, so only auth can fail. */
function urlOf(path: string): string {
  return path
    .replace("/admin/systems/{id}", "/admin/systems/sys_00000000000000000000000000")
    .replace("/admin/instances/{id}", "/admin/instances/ins_00000000000000000000000000")
    .replace(/\{([a-z_]+)\}/g, ":$1");
}

const BAD_TOKENS: [string, Record<string, string>, string][] = [
  ["no Authorization header", {}, "missing bearer token: send Authorization: Bearer <token>"],
  ["an empty header", { authorization: "" }, "missing bearer token: send Authorization: Bearer <token>"],
  ["Basic credentials", { authorization: `Basic ${Buffer.from(`admin:${MASTER_KEY}`).toString("base64")}` }, "missing bearer token: send Authorization: Bearer <token>"],
  ["Bearer without a token", { authorization: "Bearer " }, "missing bearer token: send Authorization: Bearer <token>"],
  ["a wrong token", { authorization: "Bearer erpl_wrong_0123456789abcdefghijklmnopqrstuvw" }, "invalid bearer token"],
  ["the master key with one character changed", { authorization: `Bearer ${MASTER_KEY.slice(0, -1)}X` }, "invalid bearer token"],
  ["a prefix of the master key", { authorization: `Bearer ${MASTER_KEY.slice(0, 20)}` }, "invalid bearer token"],
  ["the master key plus a suffix", { authorization: `Bearer ${MASTER_KEY}x` }, "invalid bearer token"],
];

for (const route of ROUTES) {
  Security(`${route.method} ${route.path} rejects every bad token with 401`, async ({ world }) => {
    for (const [what, headers, message] of BAD_TOKENS) {
      const res = await world.app.inject({
        method: route.method,
        url: urlOf(route.path),
        // A malformed body: authentication must answer first.
        headers: { ...headers, "content-type": "application/json" },
        payload: route.body ? "{not json" : undefined,
      });
      assert.is(res.statusCode, 401, `${what}: status`);
      assert.is(res.headers["www-authenticate"], "Bearer", `${what}: WWW-Authenticate`);
      assert.equal(
        JSON.parse(res.body),
        { error: { code: "UNAUTHORIZED", message, requestId: res.headers["x-request-id"] } },
        what,
      );
    }
  });
}

Security("every /admin route refuses a data key with 403 and revoked or expired admin keys with 401", async ({ world }) => {
  const create = async (body: object) => {
    const res = await world.app.inject({
      method: "POST",
      url: "/admin/api-keys",
      headers: { authorization: `Bearer ${MASTER_KEY}`, "content-type": "application/json" },
      payload: body,
    });
    assert.is(res.statusCode, 201);
    return JSON.parse(res.body).data as { id: string; key: string };
  };
  const dataKey = await create({ name: "app", permissions: { prod: { "*": { "*": ["list"] } } } });
  const revoked = await create({ name: "old admin", type: "admin" });
  const expiring = await create({ name: "temp admin", type: "admin", expires_at: new Date(world.now.getTime() + 60_000).toISOString() });
  const del = await world.app.inject({ method: "DELETE", url: `/admin/api-keys/${revoked.id}`, headers: { authorization: `Bearer ${MASTER_KEY}` } });
  assert.is(del.statusCode, 200);
  const cases: [string, number, string, string][] = [
    ["a data key", 403, "FORBIDDEN", "API key is not an admin key"],
    ["a revoked admin key", 401, "UNAUTHORIZED", "invalid bearer token"],
    ["an expired admin key", 401, "UNAUTHORIZED", "API key expired"],
  ];
  world.now = new Date(world.now.getTime() + 61_000);
  for (const route of ROUTES) {
    for (const [[what, status, code, message], token] of cases.map((c, i) => [c, [dataKey.key, revoked.key, expiring.key][i]!] as const)) {
      const res = await world.app.inject({
        method: route.method,
        url: urlOf(route.path),
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        payload: route.body ? "{not json" : undefined,
      });
      assert.is(res.statusCode, status, `${route.method} ${route.path}, ${what}`);
      assert.equal(JSON.parse(res.body), { error: { code, message, requestId: res.headers["x-request-id"] } });
      assert.is(res.headers["www-authenticate"], status === 401 ? "Bearer" : undefined);
      assert.is(res.headers["x-ratelimit-limit"], undefined, "not counted");
    }
  }
});

Security("the bearer scheme is case-insensitive and the master key works on every route", async ({ world }) => {
  for (const route of ROUTES) {
    const res = await world.app.inject({
      method: route.method,
      url: urlOf(route.path),
      headers: { authorization: `bearer ${MASTER_KEY}`, "content-type": "application/json" },
      payload: route.body ? "{}" : undefined,
    });
    assert.ok(res.statusCode !== 401, `${route.method} ${route.path}: ${res.statusCode}`);
  }
});

Security.run();
