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
import { JSON_TYPE, SALES, type DataCase } from "./data-cases.js";

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
  "/odata/prod/SALES/SalesOrders(1)?$EXPAND=Customer&expand-me=1",
  "/odata/prod/SALES/SalesOrders?$filter=Note+eq+'a;b%2Bc'&sap-language=EN&flag&$top=2",
]);

/**
 * The keys of the operation cases, by name: `invoker` may call some
 * functions and actions of the case world's services by name (`invoke`),
 * with reads of the sets they are called on and return, and not others;
 * `blind` may call Sales.Approve but read nothing.
 */
export const OPERATION_KEYS: Readonly<Record<string, unknown>> = {
  invoker: {
    prod: {
      SALES: { SalesOrders: ["list", "get"], "Sales.Approve": ["invoke"], "Sales.TopOrders": ["invoke"], Search: ["invoke"] },
      SALES2: { SalesOrderSet: ["get"], ReleaseOrder: ["invoke"] },
    },
  },
  blind: { prod: { SALES: { "Sales.Approve": ["invoke"] } } },
};

/**
 * Calls of functions and actions (test-support/odata/fixtures.ts: V4
 * imports Search and ResetAll, bound Sales.GetTotal, Sales.TopOrders and
 * Sales.Approve; V2 ReleaseOrder) by the keys of {@link OPERATION_KEYS}
 * (and the case world's `reader` and `app`): allowed ones, and ones refused
 * for the grant, for a binding or a result the key may not read, for the
 * method. The first four are allowed.
 */
export const OPERATION_CASES: readonly DataCase[] = [
  // Allowed: a bound action (with and without a body), a bound function on the collection, a V2 function import.
  { key: "invoker", method: "POST", url: `${SALES}/SalesOrders(1)/Sales.Approve`, headers: JSON_TYPE, body: "{}" },
  { key: "invoker", method: "POST", url: `${SALES}/SalesOrders(1)/Sales.Approve` },
  { key: "invoker", method: "GET", url: `${SALES}/SalesOrders/Sales.TopOrders(count=3)` },
  { key: "invoker", method: "POST", url: "/odata/prod/SALES2/ReleaseOrder?SalesOrderID='1'" },
  // Refused for the grant: a bound operation not named (by a key that may read its binding), the same for another key.
  { key: "invoker", method: "GET", url: `${SALES}/SalesOrders(1)/Sales.GetTotal()` },
  { key: "reader", method: "POST", url: `${SALES}/SalesOrders(1)/Sales.Approve` },
  // An import the key does not name is refused at the entity step before erplink looks the name up, as an entity set's would be.
  { key: "invoker", method: "POST", url: `${SALES}/ResetAll`, headers: JSON_TYPE, body: "{}" },
  { key: "app", method: "POST", url: "/odata/prod/SALES2/ReleaseOrder?SalesOrderID='1'" },
  // Refused for a read: the result lies in a set the key may not read (Products), the binding in one (SalesOrders).
  { key: "invoker", method: "GET", url: `${SALES}/Search(text='x')` },
  { key: "blind", method: "POST", url: `${SALES}/SalesOrders(1)/Sales.Approve` },
  // Refused for the method: an action called with GET, a function with POST.
  { key: "invoker", method: "GET", url: `${SALES}/SalesOrders(1)/Sales.Approve` },
  { key: "invoker", method: "POST", url: `${SALES}/SalesOrders/Sales.TopOrders(count=3)` },
];
