/**
 * gRPC server reflection (v1 and v1alpha) over an in-process Connect
 * transport: what grpcurl asks (list, file by symbol, by name, extensions)
 * and that the descriptors it gets back are complete enough to rebuild every
 * served service, its messages and the error detail types; that shutdown
 * ends open streams, that a stream ended any way is no longer counted open,
 * and that an open stream holds none of the requests it answered.
 */
import { create, createFileRegistry, fromBinary, toBinary, type DescService, type MessageInitShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { Http2SessionManager, connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { SystemService } from "../../../src/gen/erplink/admin/v1/system_pb.js";
import { InstanceService } from "../../../src/gen/erplink/admin/v1/instance_pb.js";
import { AuthorizationService } from "../../../src/gen/erplink/authz/v1/authorization_pb.js";
import { file_erplink_errors_v1_bad_request } from "../../../src/gen/erplink/errors/v1/bad_request_pb.js";
import { file_google_rpc_status } from "../../../src/gen/google/rpc/status_pb.js";
import {
  ServerReflection,
  ServerReflectionRequestSchema,
  type ServerReflectionRequest,
  type ServerReflectionResponse,
} from "../../../src/gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionAlpha } from "../../../src/gen/grpc/reflection/v1alpha/reflection_pb.js";
import { createReflection } from "../../../src/gateway/rpc/reflection.js";

setFlagsFromString("--expose-gc");
/** A full garbage collection (the flag set above holds for functions made after it). */
const collectGarbage = runInNewContext("gc") as () => void;

const test = suite("gRPC server reflection");

const SERVICES: DescService[] = [SystemService, InstanceService, AuthorizationService, ServerReflection, ServerReflectionAlpha];

function transport(services: () => DescService[] = () => SERVICES) {
  const reflection = createReflection({ services, extraFiles: [file_google_rpc_status, file_erplink_errors_v1_bad_request] });
  return createRouterTransport((router) => {
    router.service(ServerReflection, reflection.v1);
    router.service(ServerReflectionAlpha, reflection.v1alpha);
  });
}

/** Sends the requests on one stream and collects the answers. */
async function exchange(requests: MessageInitShape<typeof ServerReflectionRequestSchema>[], t = transport()): Promise<ServerReflectionResponse[]> {
  const client = createClient(ServerReflection, t);
  async function* input() {
    for (const r of requests) yield create(ServerReflectionRequestSchema, r);
  }
  const out: ServerReflectionResponse[] = [];
  for await (const res of client.serverReflectionInfo(input())) out.push(res);
  return out;
}

function files(res: ServerReflectionResponse): FileDescriptorProto[] {
  assert.is(res.messageResponse.case, "fileDescriptorResponse", JSON.stringify(res.messageResponse.value));
  const value = res.messageResponse.value as { fileDescriptorProto: Uint8Array[] };
  return value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b));
}

test("list_services: every service served, sorted; host echoed and the request returned", async () => {
  const [res] = await exchange([{ host: "localhost:8080", messageRequest: { case: "listServices", value: "*" } }]);
  assert.is(res!.validHost, "localhost:8080");
  assert.is(res!.originalRequest?.messageRequest.case, "listServices");
  assert.equal(res!.messageResponse, {
    case: "listServicesResponse",
    value: res!.messageResponse.value,
  });
  const names = (res!.messageResponse.value as { service: { name: string }[] }).service.map((s) => s.name);
  assert.equal(names, [
    "erplink.admin.v1.InstanceService",
    "erplink.admin.v1.SystemService",
    "erplink.authz.v1.AuthorizationService",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
  ]);
});

test("list_services reads the services at each stream: one registered later is listed", async () => {
  const served: DescService[] = [SystemService];
  const t = transport(() => served);
  const names = async () => {
    const [res] = await exchange([{ messageRequest: { case: "listServices", value: "" } }], t);
    return (res!.messageResponse.value as { service: { name: string }[] }).service.map((s) => s.name);
  };
  assert.equal(await names(), ["erplink.admin.v1.SystemService"]);
  served.push(AuthorizationService);
  assert.equal(await names(), ["erplink.admin.v1.SystemService", "erplink.authz.v1.AuthorizationService"]);
});

test("file_containing_symbol: the file first, then its imports; imports already sent on the stream are not sent again", async () => {
  const [first, second, third] = await exchange([
    { messageRequest: { case: "fileContainingSymbol", value: "erplink.admin.v1.SystemService" } },
    { messageRequest: { case: "fileContainingSymbol", value: "erplink.admin.v1.System" } },
    { messageRequest: { case: "fileContainingSymbol", value: "erplink.admin.v1.InstanceService.ListInstances" } },
  ]);
  const a = files(first!).map((f) => f.name);
  assert.is(a[0], "erplink/admin/v1/system.proto");
  assert.equal([...a].sort(), [
    "erplink/admin/v1/system.proto",
    "erplink/options/v1/field_rules.proto",
    "google/protobuf/descriptor.proto",
    "google/protobuf/field_mask.proto",
    "google/protobuf/timestamp.proto",
  ]);
  // The requested file is always sent, even if sent before.
  assert.equal(files(second!).map((f) => f.name), ["erplink/admin/v1/system.proto"]);
  const c = files(third!).map((f) => f.name);
  assert.is(c[0], "erplink/admin/v1/instance.proto");
  assert.ok(!c.includes("erplink/options/v1/field_rules.proto"), "already sent");
  assert.ok(c.includes("erplink/admin/v1/diagnostics.proto"));
});

test("the descriptors rebuild every served service, its messages, the error details and our field options", async () => {
  const responses = await exchange([
    ...SERVICES.map((s) => ({ messageRequest: { case: "fileContainingSymbol" as const, value: s.typeName } })),
    { messageRequest: { case: "fileContainingSymbol", value: "erplink.errors.v1.BadRequest" } },
    { messageRequest: { case: "fileContainingSymbol", value: "google.rpc.Status" } },
  ]);
  // As a client does: every import must be among the files received.
  const byName = new Map(responses.flatMap(files).map((f) => [f.name, f]));
  const ordered: FileDescriptorProto[] = [];
  const visit = (name: string, importer: string) => {
    const file = byName.get(name);
    assert.ok(file, `${name}, imported by ${importer}, was not sent`);
    if (ordered.includes(file)) return;
    for (const dep of file.dependency) visit(dep, name);
    ordered.push(file);
  };
  for (const name of byName.keys()) visit(name, "(requested)");
  const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: ordered }));
  for (const s of SERVICES) {
    const rebuilt = registry.getService(s.typeName);
    assert.ok(rebuilt, s.typeName);
    assert.equal(rebuilt.methods.map((m) => [m.name, m.input.typeName, m.output.typeName, m.methodKind]), s.methods.map((m) => [m.name, m.input.typeName, m.output.typeName, m.methodKind]));
  }
  assert.equal(registry.getMessage("erplink.errors.v1.BadRequest")?.fields.map((f) => f.name), ["field_violations"]);
  assert.equal(registry.getMessage("google.rpc.Status")?.fields.map((f) => f.name), ["code", "message", "details"]);
  // Our field rules travel in the options, so a client can read them too.
  const name = registry.getMessage("erplink.admin.v1.System")?.fields.find((f) => f.name === "name");
  assert.ok(name?.proto.options !== undefined, "options kept");
  assert.ok(registry.getExtension("erplink.options.v1.field"));
});

test("symbols: methods, fields, enums and enum values resolve to their file", async () => {
  const responses = await exchange([
    { messageRequest: { case: "fileContainingSymbol", value: "erplink.authz.v1.AuthorizationService.Authorize" } },
    { messageRequest: { case: "fileContainingSymbol", value: "erplink.authz.v1.AuthorizeRequest.api_key" } },
    { messageRequest: { case: "fileContainingSymbol", value: "erplink.authz.v1.Operation" } },
    { messageRequest: { case: "fileContainingSymbol", value: "erplink.authz.v1.OPERATION_GET" } },
  ]);
  for (const res of responses) assert.is(files(res)[0]!.name, "erplink/authz/v1/authorization.proto");
});

test("file_by_filename: the vendored status.proto and a WKT; unknown names and symbols are NOT_FOUND error responses", async () => {
  const [byName, wkt, noFile, noSymbol] = await exchange([
    { messageRequest: { case: "fileByFilename", value: "google/rpc/status.proto" } },
    { messageRequest: { case: "fileByFilename", value: "google/protobuf/timestamp.proto" } },
    { messageRequest: { case: "fileByFilename", value: "nope.proto" } },
    { messageRequest: { case: "fileContainingSymbol", value: "erplink.admin.v1.Nope" } },
  ]);
  assert.equal(files(byName!).map((f) => f.name), ["google/rpc/status.proto", "google/protobuf/any.proto"]);
  assert.equal(files(wkt!).map((f) => f.name), ["google/protobuf/timestamp.proto"]);
  assert.equal(noFile!.messageResponse, { case: "errorResponse", value: noFile!.messageResponse.value });
  assert.is((noFile!.messageResponse.value as { errorCode: number }).errorCode, Code.NotFound);
  assert.is((noFile!.messageResponse.value as { errorMessage: string }).errorMessage, "file not found: nope.proto");
  assert.is((noSymbol!.messageResponse.value as { errorMessage: string }).errorMessage, "symbol not found: erplink.admin.v1.Nope");
});

test("extensions: erplink.options.v1.field by containing type and number; all numbers of FieldOptions", async () => {
  const [ext, numbers, none, unknownType] = await exchange([
    { messageRequest: { case: "fileContainingExtension", value: { containingType: "google.protobuf.FieldOptions", extensionNumber: 51001 } } },
    { messageRequest: { case: "allExtensionNumbersOfType", value: "google.protobuf.FieldOptions" } },
    { messageRequest: { case: "fileContainingExtension", value: { containingType: "google.protobuf.FieldOptions", extensionNumber: 7 } } },
    { messageRequest: { case: "allExtensionNumbersOfType", value: "no.Such" } },
  ]);
  assert.is(files(ext!)[0]!.name, "erplink/options/v1/field_rules.proto");
  assert.equal(numbers!.messageResponse, {
    case: "allExtensionNumbersResponse",
    value: numbers!.messageResponse.value,
  });
  assert.equal((numbers!.messageResponse.value as { extensionNumber: number[] }).extensionNumber, [51001]);
  assert.is(none!.messageResponse.case, "errorResponse");
  assert.is(unknownType!.messageResponse.case, "errorResponse");
});

test("v1alpha answers the same as v1", async () => {
  const client = createClient(ServerReflectionAlpha, transport());
  const request = ServerReflectionAlpha.method.serverReflectionInfo.input;
  async function* input() {
    yield create(request, { messageRequest: { case: "listServices", value: "" } });
    yield create(request, { messageRequest: { case: "fileContainingSymbol", value: "erplink.authz.v1.AuthorizationService" } });
  }
  const out = [];
  for await (const res of client.serverReflectionInfo(input())) out.push(res);
  assert.is(out.length, 2);
  assert.equal((out[0]!.messageResponse.value as { service: { name: string }[] }).service.length, SERVICES.length);
  const first = (out[1]!.messageResponse.value as { fileDescriptorProto: Uint8Array[] }).fileDescriptorProto[0]!;
  assert.is(fromBinary(FileDescriptorProtoSchema, first).name, "erplink/authz/v1/authorization.proto");
});

test("a request naming nothing ends the stream with INVALID_ARGUMENT (as grpc-go does)", async () => {
  try {
    await exchange([{ messageRequest: { case: undefined } }]);
    assert.unreachable("expected an error");
  } catch (err) {
    assert.instance(err, ConnectError);
    assert.is((err as ConnectError).code, Code.InvalidArgument);
  }
});

test("shutdown ends open streams (status OK, after the answers given) and streams opened later, whatever the client still sends", async () => {
  const reflection = createReflection({ services: () => SERVICES, extraFiles: [] });
  const t = createRouterTransport((router) => {
    router.service(ServerReflection, reflection.v1);
    router.service(ServerReflectionAlpha, reflection.v1alpha);
  });
  // An idle client: one request, then nothing, never the end of its stream.
  let asked: () => void;
  const firstAsked = new Promise<void>((r) => (asked = r));
  async function* idle(): AsyncGenerator<{ messageRequest: { case: "listServices"; value: string } }> {
    yield { messageRequest: { case: "listServices", value: "" } };
    asked();
    await new Promise(() => {});
  }
  const answers: string[] = [];
  const v1 = (async () => {
    for await (const res of createClient(ServerReflection, t).serverReflectionInfo(idle())) answers.push(res.messageResponse.case ?? "");
  })();
  const v1alpha = (async () => {
    for await (const res of createClient(ServerReflectionAlpha, t).serverReflectionInfo(idle())) answers.push(`alpha ${res.messageResponse.case}`);
  })();
  await firstAsked;
  await new Promise((r) => setTimeout(r, 20));
  reflection.shutdown();
  let timer: NodeJS.Timeout | undefined;
  const ended = await Promise.race([
    Promise.all([v1, v1alpha]).then(() => "ended"),
    new Promise((r) => (timer = setTimeout(() => r("still open after 2 s"), 2000))),
  ]);
  clearTimeout(timer);
  assert.is(ended, "ended");
  assert.equal(answers.sort(), ["alpha listServicesResponse", "listServicesResponse"]);
  assert.equal(await exchange([{ messageRequest: { case: "listServices", value: "" } }], t), []);
});

test("a long-lived stream keeps none of the requests it answered (reflection is unauthenticated: one stream must not grow the heap per message)", async () => {
  const reflection = createReflection({ services: () => SERVICES, extraFiles: [] });
  const requests: WeakRef<object>[] = [];
  async function* many() {
    for (let i = 0; i < 50; i++) {
      const req = create(ServerReflectionRequestSchema, { host: `h${i}`, messageRequest: { case: "listServices", value: "" } });
      requests.push(new WeakRef(req));
      yield req;
    }
    // An idle client from then on: the stream stays open.
    await new Promise(() => {});
  }
  const stream = reflection.v1.serverReflectionInfo(many(), undefined as never) as AsyncGenerator<ServerReflectionResponse>;
  for (let i = 0; i < 50; i++) await stream.next();
  // The answers went out (and were dropped); the stream waits for the next request.
  const pending = stream.next();
  for (let i = 0; i < 2; i++) {
    await new Promise((r) => setTimeout(r, 10));
    collectGarbage();
  }
  // The last may live on in a suspended generator's frame (the client's, or the handler's loop variable).
  assert.is(requests.slice(0, -1).filter((r) => r.deref() !== undefined).length, 0, "requests answered are still held");
  reflection.shutdown();
  assert.equal(await pending, { done: true, value: undefined });
});

test("many streams open at once (more than an EventTarget's 10 listeners) raise no process warning, and shutdown ends them all", async () => {
  const reflection = createReflection({ services: () => SERVICES, extraFiles: [] });
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
  process.on("warning", onWarning);
  try {
    async function* idle() {
      yield create(ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "" } });
      await new Promise(() => {});
    }
    const streams = Array.from({ length: 20 }, () => reflection.v1.serverReflectionInfo(idle(), undefined as never) as AsyncGenerator<ServerReflectionResponse>);
    for (const s of streams) assert.is((await s.next()).done, false);
    const pending = streams.map((s) => s.next());
    await new Promise((r) => setTimeout(r, 20));
    assert.is(reflection.openStreams(), 20);
    reflection.shutdown();
    assert.equal((await Promise.all(pending)).map((r) => r.done), streams.map(() => true));
    assert.is(reflection.openStreams(), 0);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(warnings, []);
  } finally {
    process.off("warning", onWarning);
  }
});

test("over HTTP/2, a stream ended any way is no longer open (client half-close, server error, client cancel, reset); after shutdown one ends at once", async () => {
  const reflection = createReflection({ services: () => SERVICES, extraFiles: [] });
  const server = http2.createServer(connectNodeAdapter({ routes: (router) => router.service(ServerReflection, reflection.v1) }));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sessions = new Http2SessionManager(baseUrl);
  const client = createClient(ServerReflection, createGrpcTransport({ baseUrl, sessionManager: sessions }));
  const raw = http2.connect(baseUrl);
  const list = () => create(ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "" } });
  async function* idle() {
    yield list();
    await new Promise(() => {});
  }
  const settle = () => new Promise((r) => setTimeout(r, 50));
  /** The answers' cases, then the error's code if the call failed. */
  const answers = async (requests: AsyncIterable<ServerReflectionRequest>, signal?: AbortSignal) => {
    const cases: string[] = [];
    try {
      for await (const res of client.serverReflectionInfo(requests, { signal })) cases.push(res.messageResponse.case ?? "");
    } catch (err) {
      cases.push(Code[ConnectError.from(err).code]!);
    }
    return cases;
  };
  try {
    for (let i = 0; i < 12; i++) {
      assert.equal(await answers((async function* () { yield list(); })()), ["listServicesResponse"], "half-close");
      async function* naming() {
        yield create(ServerReflectionRequestSchema, {});
        await new Promise(() => {});
      }
      assert.equal(await answers(naming()), ["InvalidArgument"], "server error");
      const cancel = new AbortController();
      const cancelled = answers(idle(), cancel.signal);
      await settle();
      cancel.abort();
      assert.equal(await cancelled, ["listServicesResponse", "Canceled"], "client cancel");
      // Reset (CANCEL) after the first answer, the request side never ended.
      const message = toBinary(ServerReflectionRequestSchema, list());
      const frame = Buffer.alloc(5 + message.length);
      frame.writeUInt32BE(message.length, 1);
      frame.set(message, 5);
      const stream = raw.request({ ":method": "POST", ":path": `/${ServerReflection.typeName}/ServerReflectionInfo`, "content-type": "application/grpc", te: "trailers" });
      stream.write(frame);
      await new Promise<void>((resolve) => stream.once("data", () => resolve()));
      stream.close(http2.constants.NGHTTP2_CANCEL);
    }
    await settle();
    assert.is(reflection.openStreams(), 0);
    const open = Array.from({ length: 12 }, () => answers(idle()));
    await settle();
    assert.is(reflection.openStreams(), 12);
    reflection.shutdown();
    assert.equal(await Promise.all(open), open.map(() => ["listServicesResponse"]));
    assert.is(reflection.openStreams(), 0);
    assert.equal(await answers(idle()), []);
    assert.is(reflection.openStreams(), 0);
  } finally {
    raw.close();
    sessions.abort();
    await new Promise((resolve) => server.close(resolve));
  }
});

test.run();
