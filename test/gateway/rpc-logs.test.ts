/**
 * Calls of the admin services over Connect and gRPC-Web (the public RPC
 * server) produce one request-log entry each, like REST `/admin` requests:
 * the caller as the services recognised it, the outcome as its code (gRPC-Web
 * answers HTTP 200 whatever the code), the RPC path. `Authorize` calls,
 * the internal hot path, are not logged.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { GetSystemRequestSchema } from "../../src/gen/erplink/admin/v1/system_pb.js";
import { AUTH, createWorld, type World } from "../../test-support/world.js";
import { json, post } from "../../test-support/http.js";

const Rpc = suite<{ world: World }>("request log of admin RPCs");

Rpc.before.each(async (ctx) => {
  ctx.world = await createWorld();
});
Rpc.after.each(async (ctx) => {
  await ctx.world.close();
});

async function entryOf(world: World, requestId: string) {
  await world.layer.logWriter.flush();
  const all = (await world.store.logs.query({ limit: 100 })).items.filter((e) => e.requestId === requestId);
  assert.is(all.length, 1, `one entry for ${requestId}`);
  const e = all[0]!;
  // Nothing is forwarded for an RPC call: no upstream method or URL.
  return [e.apiKeyId, e.method, e.path, e.status, e.errorCode, e.instance, e.accesses.length, e.upstreamMethod, e.upstreamUrl];
}

const connect = (world: World, method: string, body: unknown, headers: Record<string, string>) =>
  world.app.inject({
    method: "POST",
    url: `/erplink.admin.v1.SystemService/${method}`,
    headers: { "content-type": "application/json", "user-agent": "connect-test", ...headers },
    payload: JSON.stringify(body),
  });

Rpc("Connect calls: success, unknown id, no credential and a data key each log one entry with caller and outcome", async (ctx) => {
  const w = ctx.world;
  const ok = await connect(w, "ListSystems", {}, { ...AUTH, "x-request-id": "rid-list" });
  assert.is(ok.statusCode, 200, ok.body);
  assert.equal(await entryOf(w, "rid-list"), ["master", "POST", "/erplink.admin.v1.SystemService/ListSystems", 200, "", "", 0, "", ""]);

  const missing = await connect(w, "GetSystem", { id: "sys_00000000000000000000000000" }, { ...AUTH, "x-request-id": "rid-missing" });
  assert.is(missing.statusCode, 404, missing.body);
  assert.equal(await entryOf(w, "rid-missing"), ["master", "POST", "/erplink.admin.v1.SystemService/GetSystem", 404, "NOT_FOUND", "", 0, "", ""]);

  const anonymous = await connect(w, "ListSystems", {}, { "x-request-id": "rid-anon" });
  assert.is(anonymous.statusCode, 401, anonymous.body);
  assert.equal(await entryOf(w, "rid-anon"), ["", "POST", "/erplink.admin.v1.SystemService/ListSystems", 401, "UNAUTHORIZED", "", 0, "", ""]);

  const key = json(await post(w.app, "/admin/api-keys", { name: "reader", permissions: { prod: { "*": { "*": ["list"] } } } })).data;
  const dataKey = await connect(w, "ListSystems", {}, { authorization: `Bearer ${key.key}`, "x-request-id": "rid-data" });
  assert.is(dataKey.statusCode, 403, dataKey.body);
  assert.equal(await entryOf(w, "rid-data"), [key.id, "POST", "/erplink.admin.v1.SystemService/ListSystems", 403, "FORBIDDEN", "", 0, "", ""]);
  // The message answered is kept (the envelope's words, not a driver's or a stack).
  const messages = (await w.store.logs.query({ limit: 100 })).items.filter((e) => e.requestId.startsWith("rid-")).map((e): [string, string] => [e.requestId, e.errorMessage]);
  assert.equal(new Map(messages), new Map([
    ["rid-list", ""],
    ["rid-missing", JSON.parse(missing.body).message],
    ["rid-anon", JSON.parse(anonymous.body).message],
    ["rid-data", JSON.parse(dataKey.body).message],
  ]));
  assert.ok(messages.every(([id, m]) => id === "rid-list" || m.length > 0));
});

Rpc("gRPC-Web answers 200 whatever the code; the entry records the code's status", async (ctx) => {
  const msg = toBinary(GetSystemRequestSchema, create(GetSystemRequestSchema, { id: "sys_00000000000000000000000000" }));
  const frame = Buffer.alloc(5 + msg.length);
  frame.writeUInt32BE(msg.length, 1);
  Buffer.from(msg).copy(frame, 5);
  const res = await ctx.world.app.inject({
    method: "POST",
    url: "/erplink.admin.v1.SystemService/GetSystem",
    headers: { ...AUTH, "content-type": "application/grpc-web+proto", "x-request-id": "rid-grpcweb" },
    payload: frame,
  });
  assert.is(res.statusCode, 200);
  assert.match(res.rawPayload.toString("latin1"), /grpc-status: ?5/);
  assert.equal(await entryOf(ctx.world, "rid-grpcweb"), ["master", "POST", "/erplink.admin.v1.SystemService/GetSystem", 404, "NOT_FOUND", "", 0, "", ""]);
});

Rpc("Authorize calls are not logged", async (ctx) => {
  const res = await ctx.world.app.inject({
    method: "POST",
    url: "/erplink.authz.v1.AuthorizationService/Authorize",
    headers: { "content-type": "application/json", "x-request-id": "rid-authz" },
    payload: JSON.stringify({ apiKey: "erpl_nope", instance: "prod", service: "S", entity: "E", operation: "OPERATION_LIST" }),
  });
  assert.is(res.statusCode, 200, res.body);
  await ctx.world.layer.logWriter.flush();
  assert.equal((await ctx.world.store.logs.query({ limit: 100 })).items.filter((e) => e.requestId === "rid-authz"), []);
});

Rpc.run();
