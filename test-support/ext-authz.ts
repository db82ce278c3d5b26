/**
 * Envoy's ext_authz Check as a test client sees it: a `CheckRequest` built
 * from a request of the data path's case table (test-support/data-cases.ts)
 * as Envoy's HTTP filter sends one (lower-case headers, the body buffered
 * whole as `raw_body` with `x-envoy-auth-partial-body: false`, the stream's
 * id), and the answer read back as plain values. Lives outside test/
 * because uvu runs every file there.
 */
import { create } from "@bufbuild/protobuf";
import {
  AttributeContextSchema,
  AttributeContext_HttpRequestSchema,
  AttributeContext_RequestSchema,
} from "../src/gen/envoy/service/auth/v3/attribute_context_pb.js";
import { CheckRequestSchema, type CheckRequest, type CheckResponse } from "../src/gen/envoy/service/auth/v3/external_auth_pb.js";
import type { HeaderValueOption } from "../src/gen/envoy/config/core/v3/base_pb.js";
import type { DataCase } from "./data-cases.js";

/** A request as Envoy describes it to the authorization service. */
export interface EnvoyRequest {
  readonly id?: string;
  readonly method: string;
  readonly path: string;
  readonly host?: string;
  /** Lower-cased by this helper, as Envoy does. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Sent as `raw_body` (or as `body` with `asText`), with `x-envoy-auth-partial-body: false`. */
  readonly body?: string | Buffer;
  readonly asText?: boolean;
  readonly contextExtensions?: Readonly<Record<string, string>>;
  /** The client's address as Envoy saw it. */
  readonly sourceIp?: string;
}

/** A `CheckRequest` for `r`. */
export function checkRequest(r: EnvoyRequest): CheckRequest {
  // No prototype: a header named `__proto__` stays a header.
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(r.headers ?? {})) headers[name.toLowerCase()] = value;
  const body = r.body === undefined ? undefined : Buffer.from(r.body);
  if (body !== undefined && body.length > 0) headers["x-envoy-auth-partial-body"] ??= "false";
  return create(CheckRequestSchema, {
    attributes: create(AttributeContextSchema, {
      source: r.sourceIp === undefined ? undefined : { address: { address: { case: "socketAddress", value: { address: r.sourceIp, portSpecifier: { case: "portValue", value: 40000 } } } } },
      request: create(AttributeContext_RequestSchema, {
        http: create(AttributeContext_HttpRequestSchema, {
          id: r.id ?? "",
          method: r.method,
          path: r.path,
          host: r.host ?? "gateway.example",
          scheme: "http",
          protocol: "HTTP/1.1",
          headers,
          size: BigInt(body?.length ?? 0),
          ...(body === undefined || body.length === 0 ? {} : r.asText ? { body: body.toString("utf8") } : { rawBody: new Uint8Array(body) }),
        }),
      }),
      contextExtensions: { ...r.contextExtensions },
    }),
  });
}

/** The Envoy request for a case of the data path's table, with its key's `Authorization`, as the data path test sends it. */
export function caseRequest(c: DataCase, key: string, id: string): EnvoyRequest {
  const body = c.body ?? "";
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...c.headers };
  if (body !== "" || c.method === "POST") headers["content-length"] = String(Buffer.byteLength(body));
  return { id, method: c.method, path: c.url, headers, ...(body !== "" ? { body } : {}) };
}

/** A check's answer as plain values. */
export interface Decision {
  /** `CheckResponse.status.code`. */
  readonly code: number;
  readonly allowed: boolean;
  /** Denied: the HTTP status, the parsed body and the headers. */
  readonly status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly body: any;
  readonly headers: Readonly<Record<string, string>>;
  /** Allowed: the request's header changes and the answer's added headers. */
  readonly headersToRemove: readonly string[];
  readonly responseHeaders: Readonly<Record<string, string>>;
}

function headerMap(options: readonly HeaderValueOption[]): Record<string, string> {
  return Object.fromEntries(options.map((o) => [o.header?.key ?? "", o.header?.value ?? ""]));
}

/** Reads a `CheckResponse`. */
export function decision(res: CheckResponse): Decision {
  const r = res.httpResponse;
  if (r.case === "okResponse") {
    return {
      code: res.status?.code ?? 0,
      allowed: true,
      status: 0,
      body: undefined,
      headers: headerMap(r.value.headers),
      headersToRemove: r.value.headersToRemove,
      responseHeaders: headerMap(r.value.responseHeadersToAdd),
    };
  }
  if (r.case === "deniedResponse") {
    let body: unknown;
    try {
      body = JSON.parse(r.value.body);
    } catch {
      body = r.value.body;
    }
    return {
      code: res.status?.code ?? 0,
      allowed: false,
      status: r.value.status?.code ?? 0,
      body,
      headers: headerMap(r.value.headers),
      headersToRemove: [],
      responseHeaders: {},
    };
  }
  throw new Error(`unexpected CheckResponse: ${r.case ?? "no http_response"}`);
}

/**
 * The data-case table's requests (test-support/data-cases.ts) the data path
 * forwards respelt and Envoy would forward as the client wrote them, so Check
 * refuses them (src/gateway/ext-authz/spelling.ts): a raw ';', '&' or '+' in
 * a key or a value, an option name in upper case.
 */
export const RESPELT_CASES: ReadonlySet<string> = new Set([
  "/odata/prod/SALES/Customers('a%20b;c&e+f..g')",
  "/odata/prod/SALES/SalesOrders?$EXPAND=Customer&expand-me=1",
  "/odata/prod/SALES/SalesOrders?$filter=Note+eq+'a;b%2Bc'&sap-language=EN&flag&$top=2",
]);
