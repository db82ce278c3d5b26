/**
 * Envoy in front of a back end, as the ext_authz fuzzer models it
 * (test/gateway/ext-authz-fuzz.test.ts): a client's request as it arrives
 * on the wire, the `CheckRequest` Envoy's ext_authz HTTP filter builds from
 * it, and the request Envoy forwards once `Check` answers OK (the client's
 * own request, with the answer's header changes applied and the route's
 * prefix rewritten). What Envoy does here follows its source
 * (`source/extensions/filters/common/ext_authz/check_request_utils.cc`,
 * `source/extensions/filters/http/ext_authz/ext_authz.cc`):
 *
 * - `attributes.request.http.path` is `:path`, and every header value, with
 *   each byte that is not UTF-8 replaced by `!` (`sanitizeUtf8String`);
 *   repeated headers are joined with `,`; the client's own
 *   `x-envoy-auth-partial-body` is left out; pseudo-headers are in the map;
 *   `Host` is `:authority`. With `encode_raw_headers` the headers go as a
 *   list of raw values instead (`header_map`).
 * - The body, when the filter buffers it (`with_request_body`), is
 *   `raw_body` (`pack_as_bytes`) or `body` (sanitized), cut at
 *   `max_request_bytes` when `allow_partial_message` lets it through, with
 *   Envoy's `x-envoy-auth-partial-body: true|false`; a request without body
 *   bytes is not buffered (no marker).
 * - OK: `headers` with `OVERWRITE_IF_EXISTS_OR_ADD` (or `append: false`)
 *   replace every value of the header, `APPEND_IF_EXISTS_OR_ADD` adds one;
 *   then `headers_to_remove` removes every value (never a pseudo-header nor
 *   `Host`); query parameter changes rewrite the query.
 * - The route: `/odata/<instance>/<service>` (exactly, or followed by `/`
 *   or `?`) rewritten to the service root (`prefix_rewrite`), or the back
 *   end's own path forwarded as it is (with `context_extensions`).
 *   `normalize_path` and `merge_slashes` off: the weakest setting the README
 *   allows (with them on, Check sees the normalized path Envoy forwards).
 *
 * Lives outside test/ because uvu runs every file there.
 */
import type { IncomingHttpHeaders } from "node:http";
import { create } from "@bufbuild/protobuf";
import { HeaderValueOption_HeaderAppendAction } from "../../src/gen/envoy/config/core/v3/base_pb.js";
import {
  AttributeContextSchema,
  AttributeContext_HttpRequestSchema,
  AttributeContext_RequestSchema,
} from "../../src/gen/envoy/service/auth/v3/attribute_context_pb.js";
import { CheckRequestSchema, type CheckRequest, type OkHttpResponse } from "../../src/gen/envoy/service/auth/v3/external_auth_pb.js";

/** How the ext_authz filter buffers bodies. */
export type BodyMode =
  /** `with_request_body` with `pack_as_bytes: true`: `raw_body`. */
  | "raw"
  /** `with_request_body` without `pack_as_bytes`: `body`, bytes that are not UTF-8 written as `!`. */
  | "text"
  /** `with_request_body` with `allow_partial_message: true` and a small `max_request_bytes`. */
  | "partial"
  /** No `with_request_body`: Check sees no body. */
  | "none";

/** One Envoy setup. */
export interface EnvoySetup {
  /** `odata`: `/odata/<instance>/<service>/…` rewritten to the root; `backend`: the back end's paths, with `context_extensions`. */
  readonly form: "odata" | "backend";
  readonly body: BodyMode;
  readonly protocol: "HTTP/1.1" | "HTTP/2";
  /** `encode_raw_headers: true`. */
  readonly rawHeaders: boolean;
  /** `max_request_bytes` for `partial`. */
  readonly maxRequestBytes: number;
}

/** A client's request as it arrives at Envoy. */
export interface WireRequest {
  readonly method: string;
  /** The request target's bytes. */
  readonly target: Buffer;
  /** Header lines as sent (any case), values as latin1 strings. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body: Buffer;
}

/** The request Envoy forwards, as a back end's parser (Node's) hands it over. */
export interface ForwardedRequest {
  readonly method: string;
  /** The request target, bytes read as latin1 (as Node hands them over). */
  readonly target: string;
  /** Header lines after Envoy's changes (lower-case names, in order). */
  readonly lines: readonly (readonly [string, string])[];
  /** The lines joined as Node joins repeated headers. */
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** Envoy's `MessageUtil::sanitizeUtf8String`: every byte that does not start or belong to a well-formed UTF-8 sequence becomes `!` (same length). */
export function sanitizeUtf8(bytes: Buffer): string {
  let out = "";
  for (let i = 0; i < bytes.length; ) {
    const n = utf8SequenceAt(bytes, i);
    if (n === 0) {
      out += "!";
      i++;
    } else {
      out += bytes.subarray(i, i + n).toString("utf8");
      i += n;
    }
  }
  return out;
}

/** The length of the well-formed UTF-8 sequence at `i` (RFC 3629: no overlongs, no surrogates), or 0. */
function utf8SequenceAt(b: Buffer, i: number): number {
  const c = b[i]!;
  if (c < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf) => i + k < b.length && b[i + k]! >= lo && b[i + k]! <= hi;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c === 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if ((c >= 0xe1 && c <= 0xec) || c === 0xee || c === 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c === 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (c === 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c === 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

const PARTIAL = "x-envoy-auth-partial-body";

/** The request's headers as Envoy holds them: lower-case names, `Host` as `:authority`, pseudo-headers first, Envoy's own added. */
function envoyHeaderLines(wire: WireRequest): [string, string][] {
  const lines: [string, string][] = [];
  let authority = "";
  for (const [name, value] of wire.headers) {
    const n = name.toLowerCase();
    if (n === "host") authority ||= value;
    else lines.push([n, value]);
  }
  return [
    [":authority", authority],
    [":path", wire.target.toString("latin1")],
    [":method", wire.method],
    [":scheme", "http"],
    ...lines,
    ...(lines.some(([n]) => n === "x-forwarded-proto") ? [] : ([["x-forwarded-proto", "http"]] as [string, string][])),
  ];
}

/** The `CheckRequest` Envoy sends for `wire`. */
export function envoyCheckRequest(
  wire: WireRequest,
  setup: EnvoySetup,
  options: { readonly id: string; readonly contextExtensions: Readonly<Record<string, string>>; readonly sourceIp?: string },
): CheckRequest {
  const lines = envoyHeaderLines(wire).filter(([n]) => n !== PARTIAL);
  let partial: string | undefined;
  let rawBody: Buffer | undefined;
  let textBody: string | undefined;
  if (setup.body !== "none" && wire.body.length > 0) {
    const length = setup.body === "partial" ? Math.min(wire.body.length, setup.maxRequestBytes) : wire.body.length;
    const data = wire.body.subarray(0, length);
    if (setup.body === "text") textBody = sanitizeUtf8(data);
    else rawBody = data;
    partial = length !== wire.body.length ? "true" : "false";
  }
  const authority = lines.find(([n]) => n === ":authority")![1];
  // No prototype: Envoy's map holds a `__proto__` or `constructor` header as any other.
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  let headerMap: { key: string; raw: Buffer }[] | undefined;
  if (setup.rawHeaders) {
    headerMap = lines.map(([key, value]) => ({ key, raw: Buffer.from(value, "latin1") }));
    if (partial !== undefined) headerMap.push({ key: PARTIAL, raw: Buffer.from(partial) });
  } else {
    for (const [key, value] of lines) {
      const v = sanitizeUtf8(Buffer.from(value, "latin1"));
      headers[key] = headers[key] === undefined ? v : `${headers[key]},${v}`;
    }
    if (partial !== undefined) headers[PARTIAL] = partial;
  }
  const http = create(AttributeContext_HttpRequestSchema, {
    id: options.id,
    method: sanitizeUtf8(Buffer.from(wire.method, "latin1")),
    path: sanitizeUtf8(wire.target),
    host: sanitizeUtf8(Buffer.from(authority, "latin1")),
    scheme: "http",
    protocol: setup.protocol,
    headers,
    size: BigInt(wire.body.length),
    ...(rawBody !== undefined ? { rawBody: new Uint8Array(rawBody) } : {}),
    ...(textBody !== undefined ? { body: textBody } : {}),
  });
  if (headerMap !== undefined) {
    http.headerMap = {
      $typeName: "envoy.config.core.v3.HeaderMap",
      headers: headerMap.map(({ key, raw }) => ({ $typeName: "envoy.config.core.v3.HeaderValue" as const, key, value: "", rawValue: new Uint8Array(raw) })),
    };
  }
  return create(CheckRequestSchema, {
    attributes: create(AttributeContextSchema, {
      ...(options.sourceIp !== undefined
        ? { source: { address: { address: { case: "socketAddress", value: { address: options.sourceIp, portSpecifier: { case: "portValue", value: 40000 } } } } } }
        : {}),
      request: create(AttributeContext_RequestSchema, { http }),
      contextExtensions: { ...options.contextExtensions },
    }),
  });
}

/** Headers Node keeps once (the first), as `IncomingMessage` does; `cookie` is joined with `; `, the rest with `, `. */
const NODE_SINGLE = new Set([
  "age", "authorization", "content-length", "content-type", "etag", "expires", "from", "host", "if-modified-since", "if-unmodified-since",
  "last-modified", "location", "max-forwards", "proxy-authorization", "referer", "retry-after", "server", "user-agent",
]);

/** Joins header lines as Node's HTTP parser hands them to a back end. */
export function nodeHeaders(lines: readonly (readonly [string, string])[]): IncomingHttpHeaders {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of lines) {
    const seen = out[name];
    if (name === "set-cookie") out[name] = [...((seen as string[] | undefined) ?? []), value];
    else if (seen === undefined) out[name] = value;
    else if (NODE_SINGLE.has(name)) continue;
    else out[name] = `${seen as string}${name === "cookie" ? "; " : ", "}${value}`;
  }
  return out;
}

/**
 * The request Envoy forwards after an OK with `ok`: the header changes
 * applied as Envoy applies them (sets, then appends, then removals; no
 * pseudo-header or `Host` removed), the route's rewrite (`rewrite`: the
 * client's prefix and the root it becomes), and the client's own body.
 * Undefined when no route would take the request (`/odata/<i>/<s>X…`).
 */
export function envoyForward(
  wire: WireRequest,
  ok: OkHttpResponse,
  rewrite: { readonly from: string; readonly to: string } | undefined,
  upstreamHost: string,
): ForwardedRequest | undefined {
  let target = wire.target.toString("latin1");
  if (rewrite !== undefined) {
    const rest = target.slice(rewrite.from.length);
    if (!target.startsWith(rewrite.from) || !(rest === "" || rest.startsWith("/") || rest.startsWith("?"))) return undefined;
    target = `${rewrite.to}${rest === "" ? "" : rest}`;
  }
  if (ok.queryParametersToSet.length > 0 || ok.queryParametersToRemove.length > 0) {
    throw new Error("the model does not rewrite queries: Check answered with query parameter changes");
  }
  let lines: [string, string][] = [];
  for (const [name, value] of wire.headers) {
    const n = name.toLowerCase();
    // auto_host_rewrite (the README requires it): the back end's own host.
    lines.push(n === "host" ? ["host", upstreamHost] : [n, value]);
  }
  if (!lines.some(([n]) => n === "x-forwarded-proto")) lines.push(["x-forwarded-proto", "http"]);
  const sets: [string, string][] = [];
  const appends: [string, string][] = [];
  for (const option of ok.headers) {
    const key = (option.header?.key ?? "").toLowerCase();
    const value = option.header?.value ?? "";
    const append = option.append !== undefined ? option.append : option.appendAction === HeaderValueOption_HeaderAppendAction.APPEND_IF_EXISTS_OR_ADD;
    (append ? appends : sets).push([key, value]);
  }
  for (const [key, value] of sets) {
    if (key.startsWith(":") || key === "host") continue;
    lines = lines.filter(([n]) => n !== key);
    lines.push([key, value]);
  }
  for (const [key, value] of appends) lines.push([key, value]);
  for (const name of ok.headersToRemove) {
    const key = name.toLowerCase();
    if (key.startsWith(":") || key === "host") continue;
    lines = lines.filter(([n]) => n !== key);
  }
  return { method: wire.method, target, lines, headers: nodeHeaders(lines), body: wire.body };
}
