/**
 * An Envoy `CheckRequest` read as the data path's request: the HTTP request
 * Envoy is about to forward (`attributes.request.http`: method, request
 * target, headers, and the body when Envoy buffered it), and which erplink
 * service it addresses, from the route's `context_extensions`
 * (`erplink_instance`, `erplink_service`) or from an
 * `/odata/<instance>/<service>/…` path.
 *
 * Two forms of request target:
 * - `odata`: `/odata/<instance>/<service>/<resource path>?<query>`, split as
 *   the data path splits it (the route rewrites the prefix to the service's
 *   root on the back end before forwarding);
 * - `backend`: the back end's own path, below the service's root
 *   (`<service root path>/<resource path>?<query>`), forwarded unchanged;
 *   it needs `context_extensions` to name the instance and the service, and
 *   is split once the instance is known (`splitBackendTarget`).
 *
 * Everything read here is what Envoy reported; what erplink cannot read
 * exactly as Envoy will forward it is refused: a target that is not
 * printable ASCII, a `body` in which Envoy replaced bytes that are not UTF-8
 * (`!`), a partial body (`x-envoy-auth-partial-body: true`), a body Envoy
 * did not send.
 */
import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { AttributeContext_HttpRequest } from "../../gen/envoy/service/auth/v3/attribute_context_pb.js";
import { GatewayError } from "../errors.js";
import { BODILESS } from "../data/exchange.js";
import { splitTarget } from "../data/record.js";

/** The `context_extensions` erplink reads (set per route in Envoy's `ext_authz` filter). */
export const CONTEXT_EXTENSIONS = {
  instance: "erplink_instance",
  service: "erplink_service",
  injectCredentials: "erplink_inject_credentials",
} as const;

/** Envoy's marker of a buffered body: `true` when it was cut at `max_request_bytes`. */
export const PARTIAL_BODY_HEADER = "x-envoy-auth-partial-body";

/** A request id as the gateway accepts one (`X-Request-Id`). */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request Envoy asks about, as Envoy reported it. */
export interface CheckedRequest {
  /** `request.http.id` when it is a well-formed request id, else a fresh `req_…`: the denied envelope's and the log's. */
  readonly requestId: string;
  readonly method: string;
  /** The request target (path and query) exactly as Envoy will forward it. */
  readonly target: string;
  /** Lower-case names; repeated headers joined with `, `; no pseudo-headers, no Envoy marker. */
  readonly headers: Readonly<Record<string, string>>;
  /** `http` or `https`, and the host the client addressed (`:authority`). */
  readonly scheme: string;
  readonly host: string;
  /** Whether the route asks for the back end's credentials (`erplink_inject_credentials: "true"`). */
  readonly injectCredentials: boolean;
  /** The instance and service the route names in `context_extensions`, if it does. */
  readonly extensions: { readonly instance: string; readonly service: string } | undefined;
  /** Envoy's partial-body marker, if it buffered the body. */
  readonly partialBody: string | undefined;
}

/** Which erplink service a request addresses, and where below it. */
export interface Addressed {
  readonly instanceName: string;
  readonly serviceName: string;
  /** `odata`: `/odata/<instance>/<service>/…`; `backend`: the back end's own path below the service's root. */
  readonly form: "odata" | "backend";
}

/** Where below the service root a request goes (raw), and where the client addressed the service. */
export interface Placed {
  readonly rawPath: string;
  readonly rawQuery: string;
  readonly clientPath: string;
}

/** A refusal of the check call itself (a route configured wrongly), not of the HTTP request: Envoy fails closed. */
function misconfigured(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

/** Decodes a path segment as the router does; undefined when it is not valid percent-encoding. */
function decodeSegment(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

/** The request's headers: from `headers`, or from `header_map` when Envoy sends raw headers. */
function headersOf(http: AttributeContext_HttpRequest): Map<string, string> {
  const out = new Map<string, string>();
  const raw = http.headerMap?.headers ?? [];
  if (raw.length > 0) {
    // Raw values are bytes, read as Node reads header bytes (latin1).
    for (const h of raw) addHeader(out, h.key, h.rawValue.length > 0 ? Buffer.from(h.rawValue).toString("latin1") : h.value);
  } else {
    for (const [name, value] of Object.entries(http.headers)) addHeader(out, name, value);
  }
  return out;
}

/** Adds a header to `out`, joining repeated names with `, `. (A module function: see `referenceResolverOf` in src/gateway/data/analyze.ts.) */
function addHeader(out: Map<string, string>, name: string, value: string): void {
  const key = name.toLowerCase();
  const seen = out.get(key);
  out.set(key, seen === undefined ? value : `${seen}, ${value}`);
}

/**
 * Reads a check's HTTP request. Throws a ConnectError for a check erplink
 * cannot answer for any request: no HTTP request, `context_extensions`
 * that name only one of instance and service, or a flag that is neither
 * `"true"` nor `"false"`.
 */
export function readCheck(http: AttributeContext_HttpRequest | undefined, extensions: Readonly<Record<string, string>>): CheckedRequest {
  if (http === undefined) {
    throw misconfigured("the check names no HTTP request (attributes.request.http): erplink authorizes HTTP requests, with Envoy's ext_authz HTTP filter");
  }
  const inject = extensions[CONTEXT_EXTENSIONS.injectCredentials];
  if (inject !== undefined && inject !== "true" && inject !== "false") {
    throw misconfigured(`context_extensions.${CONTEXT_EXTENSIONS.injectCredentials} must be "true" or "false"`);
  }
  const instance = extensions[CONTEXT_EXTENSIONS.instance];
  const service = extensions[CONTEXT_EXTENSIONS.service];
  if ((instance === undefined) !== (service === undefined) || instance === "" || service === "") {
    throw misconfigured(
      `context_extensions must name both ${CONTEXT_EXTENSIONS.instance} and ${CONTEXT_EXTENSIONS.service}, or neither (then the path is /odata/<instance>/<service>/…)`,
    );
  }
  const all = headersOf(http);
  // No prototype: a client's `__proto__` or `constructor` header must stay a header (and be removed as one).
  const headers: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of all) {
    // Pseudo-headers are Envoy's view of the request line; the marker is Envoy's own.
    if (!name.startsWith(":") && name !== PARTIAL_BODY_HEADER) headers[name] = value;
  }
  return {
    requestId: REQUEST_ID.test(http.id) ? http.id : `req_${randomUUID()}`,
    method: http.method,
    target: http.path,
    headers,
    scheme: http.scheme === "" ? "http" : http.scheme,
    host: http.host,
    injectCredentials: inject === "true",
    extensions: instance === undefined || service === undefined ? undefined : { instance, service },
    partialBody: all.get(PARTIAL_BODY_HEADER),
  };
}

/**
 * The instance and service a request addresses: from an
 * `/odata/<instance>/<service>/…` target (which must agree with the route's
 * `context_extensions`, if they name them), else from the extensions.
 * Refused (400): a target that is not a path of printable ASCII, not valid
 * percent-encoding, or that names no service.
 */
export function addressOf(c: CheckedRequest): Addressed {
  // The request line as a client writes it. (Envoy reports no fragment.)
  if (!c.target.startsWith("/") || !/^[!-~]+$/.test(c.target)) {
    throw new GatewayError(400, "the request target must be a path of printable ASCII characters");
  }
  // Envoy reports each byte that is not UTF-8 as '!' and forwards the byte: what is read here would not be what is sent.
  if (c.target.includes("!")) {
    throw new GatewayError(400, "the request target holds '!', which Envoy also writes for bytes that are not UTF-8: percent-encode it (%21)");
  }
  const q = c.target.indexOf("?");
  const path = q < 0 ? c.target : c.target.slice(0, q);
  if (decodeSegment(path) === undefined) throw new GatewayError(400, "the request path is not valid percent-encoding");
  const segments = path.split("/");
  if (segments[1] === "odata" && segments.length >= 4 && segments[2] !== "" && segments[3] !== "") {
    const instanceName = decodeSegment(segments[2]!)!;
    const serviceName = decodeSegment(segments[3]!)!;
    const ext = c.extensions;
    if (ext !== undefined && (instanceName !== ext.instance || serviceName !== ext.service)) {
      throw new GatewayError(
        400,
        `the request path names instance '${instanceName}' and service '${serviceName}', but the route's context_extensions name '${ext.instance}' and '${ext.service}'`,
      );
    }
    return { instanceName, serviceName, form: "odata" };
  }
  if (c.extensions === undefined) {
    throw new GatewayError(
      400,
      `the request path names no erplink service: send /odata/<instance>/<service>/…, or name them in the route's context_extensions (${CONTEXT_EXTENSIONS.instance}, ${CONTEXT_EXTENSIONS.service})`,
    );
  }
  return { instanceName: c.extensions.instance, serviceName: c.extensions.service, form: "backend" };
}

/**
 * Where below the service root the request goes: an `/odata/…` target is
 * split as the data path splits it (its instance and service written as
 * they are, not percent-encoded, else 400); a back-end target must lie below the
 * service's root path on the back end (`rootPath`, the data path's
 * `ServiceRoot.path`), else it is refused (400): Envoy would forward it
 * to something else than the service the route names.
 */
export function placeOf(c: CheckedRequest, address: Addressed, rootPath: string): Placed {
  if (address.form === "odata") {
    const place = splitTarget(c.target);
    // As Envoy's routes match them (raw): names read here after decoding could be routed as others.
    if (place.clientPath.includes("%")) {
      throw new GatewayError(400, "the instance and service of an /odata path may not be percent-encoded: Envoy's routes match them as written");
    }
    return place;
  }
  const q = c.target.indexOf("?");
  const path = q < 0 ? c.target : c.target.slice(0, q);
  if (path !== rootPath && !path.startsWith(`${rootPath}/`)) {
    throw new GatewayError(400, `the request path is not below the service's root on the back end (${rootPath}/), which the route's context_extensions name`);
  }
  return { rawPath: path.slice(rootPath.length), rawQuery: q < 0 ? "" : c.target.slice(q + 1), clientPath: rootPath };
}

/**
 * The body's exact bytes, or undefined when the request has none. Refused:
 * a partial body (413): Envoy's marker beside body bytes says anything but
 * `false` (a marker repeated in a raw header map is joined, and counts as
 * partial), or the bytes are not as many as `Content-Length` says (an Envoy
 * that writes no marker); a `body` string holding a `!`, which Envoy also
 * writes for each byte that is not UTF-8, so the bytes forwarded could be
 * others than the ones analyzed (400); a body Envoy did not send: nothing
 * buffered, on a method that may carry one, without `Content-Length: 0`
 * (400), whatever marker the request carries (Envoy writes one only beside
 * body bytes, so one without them is not Envoy's). (A declared body on GET,
 * HEAD or DELETE is the analyzer's to refuse.)
 */
export function bodyOf(http: AttributeContext_HttpRequest, c: CheckedRequest): Buffer | undefined {
  const buffered = http.rawBody.length > 0 || http.body !== "";
  const marker = c.partialBody?.trim().toLowerCase();
  // Whatever the marker says, fewer bytes than the request declares are part of the body.
  const declared = c.headers["content-length"]?.trim();
  const cut = buffered && declared !== undefined && declared !== String(http.rawBody.length > 0 ? http.rawBody.length : Buffer.byteLength(http.body, "utf8"));
  if ((buffered && marker !== undefined && marker !== "false") || cut) {
    throw new GatewayError(
      413,
      "the request body is larger than the ext_authz filter's with_request_body.max_request_bytes: Envoy sent only part of it, and erplink authorizes only what it can read",
    );
  }
  if (http.rawBody.length > 0) return Buffer.from(http.rawBody);
  if (http.body !== "") {
    if (http.body.includes("!")) {
      throw new GatewayError(
        400,
        "the request body came as text with '!' in it, which Envoy also writes for bytes that are not UTF-8: set with_request_body.pack_as_bytes: true on the ext_authz filter so that erplink reads the exact bytes",
      );
    }
    return Buffer.from(http.body, "utf8");
  }
  if (!BODILESS.has(c.method)) {
    const length = c.headers["content-length"];
    if (length === undefined || length.trim() !== "0" || c.headers["transfer-encoding"] !== undefined) {
      throw new GatewayError(
        400,
        "Envoy sent this request without its body, which erplink must read to authorize it: configure with_request_body (with pack_as_bytes: true) on the ext_authz filter, or send Content-Length: 0",
      );
    }
  }
  return undefined;
}
