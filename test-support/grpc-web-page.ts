/**
 * The script of the browser page in test/e2e/grpc-web-browser.test.ts,
 * bundled by esbuild: the official grpc-web client (`grpc-web` on npm, its
 * default text mode) calling erplink from another origin, with protobuf-es
 * (de)serializing the messages. It exposes promise-returning calls on
 * `window.erplinkGrpcWeb` that resolve to plain results (never reject), so
 * the suite can compare them exactly.
 */
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { GrpcWebClientBase, MethodDescriptor, type RpcError } from "grpc-web";
import { AuthorizeRequestSchema, AuthorizeResponseSchema, Operation } from "../src/gen/erplink/authz/v1/authorization_pb.js";
import { ListSystemsRequestSchema, ListSystemsResponseSchema } from "../src/gen/erplink/admin/v1/system_pb.js";
import { HealthCheckRequestSchema, HealthCheckResponseSchema } from "../src/gen/grpc/health/v1/health_pb.js";

/** What a call resolved to. */
export type CallResult =
  | { readonly ok: true; readonly message: unknown; readonly headers: Record<string, string> }
  | { readonly ok: false; readonly code: number; readonly message: string };

/** A descriptor whose (de)serializers are protobuf-es' own. */
function descriptor<I extends DescMessage, O extends DescMessage>(path: string, input: I, output: O) {
  // grpc-web only passes these constructors around; the functions do the work.
  const Ctor = Object as unknown as new () => never;
  return new MethodDescriptor<MessageShape<I>, MessageShape<O>>(
    path,
    "unary",
    Ctor,
    Ctor,
    (req: MessageShape<I>) => toBinary(input, req),
    (bytes: Uint8Array) => fromBinary(output, bytes),
  );
}

async function call<I extends DescMessage, O extends DescMessage>(
  baseUrl: string,
  path: string,
  input: I,
  output: O,
  request: MessageShape<I>,
  metadata: Record<string, string>,
): Promise<CallResult> {
  const client = new GrpcWebClientBase({ format: "text" });
  const headers: Record<string, string> = {};
  try {
    const message = await new Promise<MessageShape<O>>((resolve, reject) => {
      const stream = client.rpcCall(`${baseUrl}${path}`, request, metadata, descriptor(path, input, output), (err, res) =>
        err ? reject(err) : resolve(res),
      );
      stream.on("metadata", (md) => Object.assign(headers, md));
    });
    return { ok: true, message: JSON.parse(JSON.stringify(message, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))), headers };
  } catch (err) {
    const e = err as RpcError;
    return { ok: false, code: e.code, message: e.message };
  }
}

const api = {
  authorize: (baseUrl: string, apiKey: string) =>
    call(
      baseUrl,
      "/erplink.authz.v1.AuthorizationService/Authorize",
      AuthorizeRequestSchema,
      AuthorizeResponseSchema,
      create(AuthorizeRequestSchema, { apiKey, instance: "prod", service: "API_BP", entity: "A_BusinessPartner", operation: Operation.GET }),
      {},
    ),
  listSystems: (baseUrl: string, token: string) =>
    call(baseUrl, "/erplink.admin.v1.SystemService/ListSystems", ListSystemsRequestSchema, ListSystemsResponseSchema, create(ListSystemsRequestSchema, {}), {
      authorization: `Bearer ${token}`,
    }),
  check: (baseUrl: string) =>
    call(baseUrl, "/grpc.health.v1.Health/Check", HealthCheckRequestSchema, HealthCheckResponseSchema, create(HealthCheckRequestSchema, {}), {}),
  unknown: (baseUrl: string) =>
    call(baseUrl, "/erplink.admin.v1.SystemService/Nope", HealthCheckRequestSchema, HealthCheckResponseSchema, create(HealthCheckRequestSchema, {}), {}),
};

(globalThis as unknown as { erplinkGrpcWeb: typeof api }).erplinkGrpcWeb = api;
