/**
 * The gRPC conventions over a real port with @grpc/grpc-js (HTTP/2, h2c):
 * health Check and Watch following the store check (turned off and on by
 * the test), reflection over a bidirectional stream, UNIMPLEMENTED for an
 * unknown service and method, and a served method next to them. grpcurl and
 * grpc-health-probe do the same from Go in test-external/grpc-tools.ts.
 */
import { create, fromBinary, toBinary, type DescMessage, type DescMethod, type MessageShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  Health,
  HealthCheckRequestSchema,
  HealthCheckResponse_ServingStatus as S,
  type HealthCheckResponse,
} from "../../src/gen/grpc/health/v1/health_pb.js";
import { ServerReflection, type ServerReflectionResponse } from "../../src/gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionAlpha } from "../../src/gen/grpc/reflection/v1alpha/reflection_pb.js";
import { AUTH, createWorld, type World } from "../../test-support/world.js";
import { within } from "../../test-support/e2e.js";

interface Ctx {
  world: World;
  storeUp: boolean;
  address: string;
  clients: grpc.Client[];
}

const test = suite<Ctx>("e2e: gRPC health, reflection and UNIMPLEMENTED with grpc-js");

test.before.each(async (ctx) => {
  ctx.storeUp = true;
  ctx.clients = [];
  ctx.world = await createWorld({
    dualProtocol: true,
    ready: () => (ctx.storeUp ? ctx.world.store.ping() : Promise.reject(new Error("store unavailable"))),
    healthWatchIntervalMs: 50,
  });
  await ctx.world.app.listen({ port: 0, host: "127.0.0.1" });
  const addr = ctx.world.app.server.address() as { port: number };
  ctx.address = `127.0.0.1:${addr.port}`;
});

test.after.each(async (ctx) => {
  for (const c of ctx.clients) c.close();
  await ctx.world.close();
});

/** A grpc-js method definition from a protobuf-es method (any streaming kind). */
function definition(method: DescMethod): grpc.MethodDefinition<unknown, unknown> {
  const input = method.input as DescMessage;
  const output = method.output as DescMessage;
  return {
    path: `/${method.parent.typeName}/${method.name}`,
    requestStream: method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming",
    responseStream: method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming",
    requestSerialize: (m) => Buffer.from(toBinary(input, m as MessageShape<DescMessage>)),
    requestDeserialize: (b: Buffer) => fromBinary(input, b),
    responseSerialize: (m) => Buffer.from(toBinary(output, m as MessageShape<DescMessage>)),
    responseDeserialize: (b: Buffer) => fromBinary(output, b),
  };
}

function client(ctx: Ctx): grpc.Client {
  const c = new grpc.Client(ctx.address, grpc.credentials.createInsecure());
  ctx.clients.push(c);
  return c;
}

function unary<O>(c: grpc.Client, def: grpc.MethodDefinition<unknown, unknown>, request: unknown, metadata = new grpc.Metadata()): Promise<O> {
  return new Promise((resolve, reject) => {
    c.makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, request, metadata, { deadline: Date.now() + 5000 }, (err, res) =>
      err ? reject(err) : resolve(res as O),
    );
  });
}

async function unaryError(c: grpc.Client, path: string): Promise<grpc.ServiceError> {
  const check = definition(Health.method.check);
  try {
    await unary(c, { ...check, path }, create(HealthCheckRequestSchema, {}));
  } catch (err) {
    return err as grpc.ServiceError;
  }
  throw new Error(`expected ${path} to fail`);
}

test("Check over h2c, no credentials: SERVING, NOT_SERVING while the store check fails, SERVING again", async (ctx) => {
  const c = client(ctx);
  const check = definition(Health.method.check);
  const status = async (service: string) => S[(await unary<HealthCheckResponse>(c, check, create(HealthCheckRequestSchema, { service }))).status];
  assert.is(await status(""), "SERVING");
  assert.is(await status("erplink.admin.v1.SystemService"), "SERVING");
  ctx.storeUp = false;
  assert.is(await status(""), "NOT_SERVING");
  assert.is(await status("erplink.authz.v1.AuthorizationService"), "NOT_SERVING");
  assert.is(await status("grpc.reflection.v1.ServerReflection"), "SERVING");
  ctx.storeUp = true;
  assert.is(await status(""), "SERVING");
  try {
    await unary(c, check, create(HealthCheckRequestSchema, { service: "no.Such" }));
    assert.unreachable("unknown service");
  } catch (err) {
    assert.is((err as grpc.ServiceError).code, grpc.status.NOT_FOUND);
  }
});

test("Watch: the current status, then each change as the store goes and comes back", async (ctx) => {
  const c = client(ctx);
  const watch = definition(Health.method.watch);
  const call = c.makeServerStreamRequest(watch.path, watch.requestSerialize, watch.responseDeserialize, create(HealthCheckRequestSchema, { service: "" }), new grpc.Metadata(), {});
  const seen: string[] = [];
  const waiters: (() => void)[] = [];
  call.on("data", (res: HealthCheckResponse) => {
    seen.push(S[res.status]);
    waiters.shift()?.();
  });
  call.on("error", () => undefined);
  const next = () => new Promise<void>((resolve) => waiters.push(resolve));
  await within(3000, "first status", next());
  ctx.storeUp = false;
  await within(3000, "NOT_SERVING", next());
  ctx.storeUp = true;
  await within(3000, "SERVING again", next());
  assert.equal(seen, ["SERVING", "NOT_SERVING", "SERVING"]);
  call.cancel();
});

test("reflection v1 and v1alpha over a bidirectional stream: list, then the file of a service, decodable", async (ctx) => {
  for (const service of [ServerReflection, ServerReflectionAlpha]) {
    const c = client(ctx);
    const info = definition(service.method.serverReflectionInfo);
    const call = c.makeBidiStreamRequest(info.path, info.requestSerialize, info.responseDeserialize, new grpc.Metadata(), {});
    const answers: ServerReflectionResponse[] = [];
    const done = new Promise<void>((resolve, reject) => {
      call.on("data", (res: ServerReflectionResponse) => answers.push(res));
      call.on("end", resolve);
      call.on("error", reject);
    });
    const request = service.method.serverReflectionInfo.input;
    call.write(create(request, { messageRequest: { case: "listServices", value: "" } }));
    call.write(create(request, { messageRequest: { case: "fileContainingSymbol", value: "erplink.authz.v1.AuthorizationService" } }));
    call.end();
    await within(5000, `${service.typeName} stream`, done);
    const names = (answers[0]!.messageResponse.value as { service: { name: string }[] }).service.map((s) => s.name);
    assert.ok(names.includes("erplink.admin.v1.SystemService"), names.join());
    assert.ok(names.includes("grpc.health.v1.Health"));
    assert.ok(names.includes(service.typeName));
    const file = (answers[1]!.messageResponse.value as { fileDescriptorProto: Uint8Array[] }).fileDescriptorProto[0]!;
    assert.is(fromBinary(FileDescriptorProtoSchema, file).name, "erplink/authz/v1/authorization.proto");
  }
});

test("an unknown service and an unknown method are UNIMPLEMENTED (status 12) with grpc-go's messages; a served method still answers", async (ctx) => {
  const c = client(ctx);
  const unknownService = await unaryError(c, "/erplink.admin.v1.NoSuchService/Get");
  assert.is(unknownService.code, grpc.status.UNIMPLEMENTED);
  assert.is(unknownService.details, "unknown service erplink.admin.v1.NoSuchService");
  const unknownMethod = await unaryError(c, "/erplink.admin.v1.SystemService/Nope");
  assert.is(unknownMethod.code, grpc.status.UNIMPLEMENTED);
  assert.is(unknownMethod.details, "unknown method Nope for service erplink.admin.v1.SystemService");
  // The same connection goes on serving.
  const md = new grpc.Metadata();
  md.set("authorization", AUTH.authorization);
  const listDef = { ...definition(Health.method.check), path: "/erplink.admin.v1.SystemService/ListSystems" };
  const res = await unary<unknown>(c, { ...listDef, requestSerialize: () => Buffer.alloc(0), responseDeserialize: (b: Buffer) => b }, {}, md);
  assert.ok(Buffer.isBuffer(res));
});

test.run();
