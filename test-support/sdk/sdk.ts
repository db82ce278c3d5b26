/**
 * Small helpers around the SAP Cloud SDK for the e2e suites: the SDK's own
 * HTTP client (to follow server-driven paging links, which the SDK 4.5 does
 * not do by itself), its log level, the HTTP answer behind an SDK error (and
 * the check that it is erplink's refusal), RFC 3986 resolution of the links a
 * server writes, and reading what the SDK put into and got out of a `$batch`.
 *
 * npm installed `@sap-cloud-sdk/http-client` and `-util` nested under each of
 * `@sap-cloud-sdk/odata-v2` and `-v4`; they are loaded from there, so they are
 * the very copies the generated clients run on.
 */
import { createRequire } from "node:module";
import { Writable } from "node:stream";
import * as assert from "uvu/assert";

/** The parts of an SDK destination the suite uses. */
export interface SdkDestination {
  readonly url: string;
  readonly headers?: Record<string, string>;
  readonly proxyConfiguration?: { readonly host: string; readonly port: number; readonly protocol: "http" };
}

/** An HTTP response as the SDK's http-client (axios) returns it. */
export interface SdkHttpResponse {
  readonly status: number;
  readonly headers: Record<string, unknown>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly data: any;
}

/** `executeHttpRequest` of `@sap-cloud-sdk/http-client`. */
export type ExecuteHttpRequest = (
  destination: SdkDestination,
  request: { readonly method: string; readonly url: string; readonly headers?: Record<string, string> },
  options?: { readonly fetchCsrfToken?: boolean },
) => Promise<SdkHttpResponse>;

function sdkRequire(odataVersion: "v2" | "v4"): NodeJS.Require {
  return createRequire(createRequire(import.meta.url).resolve(`@sap-cloud-sdk/odata-${odataVersion}`));
}

/** The SDK's generic HTTP client, the copy `@sap-cloud-sdk/odata-<version>` runs on. */
export function sdkHttpClient(odataVersion: "v2" | "v4"): ExecuteHttpRequest {
  return (sdkRequire(odataVersion)("@sap-cloud-sdk/http-client") as { executeHttpRequest: ExecuteHttpRequest }).executeHttpRequest;
}

/**
 * Sets the log level of every SDK logger (both copies of `@sap-cloud-sdk/util`).
 * The suites keep it at `error`: the SDK warns of much that is not theirs to
 * judge; the CSRF suites capture its warnings instead ({@link captureSdkLogs}).
 */
export function setSdkLogLevel(level: "error" | "warn" | "info" | "debug"): void {
  for (const v of ["v2", "v4"] as const) {
    (sdkRequire(v)("@sap-cloud-sdk/util") as { setGlobalLogLevel(level: string): void }).setGlobalLogLevel(level);
  }
}

/** One line the SDK logged. */
export interface SdkLogLine {
  readonly level: string;
  /** The SDK module that logged it (`csrf-middleware`, …). */
  readonly context: string;
  readonly message: string;
}

/**
 * Captures what every SDK logger (both copies of `@sap-cloud-sdk/util`)
 * logs at `warn` and above, through a winston transport of the SDK's own
 * winston, in place of its console. `stop()` puts the console back at the
 * level `setSdkLogLevel` sets and returns the lines.
 */
export function captureSdkLogs(restoreLevel: "error" | "warn" | "info" | "debug" = "error"): { readonly lines: SdkLogLine[]; stop(): SdkLogLine[] } {
  const lines: SdkLogLine[] = [];
  const utils = (["v2", "v4"] as const).map((v) => {
    const utilRequire = createRequire(sdkRequire(v).resolve("@sap-cloud-sdk/util"));
    const util = utilRequire("@sap-cloud-sdk/util") as { setGlobalLogLevel(level: string): void; setGlobalTransports(t: unknown): void };
    const winston = utilRequire("winston") as { transports: { Console: new () => unknown; Stream: new (o: { stream: NodeJS.WritableStream }) => unknown } };
    return { util, winston };
  });
  for (const { util, winston } of utils) {
    const stream = new Writable({
      objectMode: true,
      write(info: Record<string, unknown>, _encoding, done) {
        lines.push({ level: String(info.level), context: String(info.messageContext ?? ""), message: String(info.message) });
        done();
      },
    });
    // One transport for every logger of the container: each pipes into it.
    util.setGlobalTransports(shared(new winston.transports.Stream({ stream })));
    util.setGlobalLogLevel("warn");
  }
  return {
    lines,
    stop() {
      for (const { util, winston } of utils) {
        util.setGlobalTransports(shared(new winston.transports.Console()));
        util.setGlobalLogLevel(restoreLevel);
      }
      return lines;
    },
  };
}

/** A transport that every SDK logger pipes into (some 30): no listener-count warning. */
function shared<T>(transport: T): T {
  (transport as unknown as { setMaxListeners(n: number): void }).setMaxListeners(0);
  return transport;
}

/** The HTTP answer behind an SDK error, found by walking its `cause` chain. */
export interface HttpCause {
  readonly status: number;
  readonly headers: Record<string, unknown>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly data: any;
  /** The messages of the chain, outermost first. */
  readonly messages: readonly string[];
}

/** Finds the HTTP response in an error's `cause` chain (the SDK wraps axios errors in `ErrorWithCause`). */
export function httpCauseOf(err: unknown): HttpCause | undefined {
  const messages: string[] = [];
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 10; depth++) {
    const o = e as { message?: unknown; response?: { status?: unknown; headers?: unknown; data?: unknown }; cause?: unknown };
    if (typeof o.message === "string") messages.push(o.message);
    if (o.response && typeof o.response.status === "number") {
      return { status: o.response.status, headers: (o.response.headers ?? {}) as Record<string, unknown>, data: o.response.data, messages };
    }
    e = o.cause;
  }
  return undefined;
}

/** Awaits a promise that must reject and returns its reason. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected the SDK call to fail, but it succeeded");
}

/**
 * Resolves a link as a server wrote it (`@odata.nextLink`, `__next`) against
 * the URL of the request it answered (RFC 3986 §5.2, for the absolute,
 * absolute-path and relative-path forms servers use), keeping its bytes: no
 * re-encoding, unlike `new URL()`.
 */
export function resolveLink(requestUrl: string, link: string): string {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link)) return link;
  const origin = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(requestUrl)![0];
  if (link.startsWith("//")) return `${requestUrl.slice(0, requestUrl.indexOf(":") + 1)}${link}`;
  if (link.startsWith("/")) return `${origin}${link}`;
  const path = requestUrl.slice(origin.length).replace(/[?#].*$/s, "");
  const dir = path.slice(0, path.lastIndexOf("/") + 1) || "/";
  return `${origin}${dir}${link}`;
}

/** What erplink answers when it refuses a request: the status and its envelope's `code` and `message`. */
export interface ErplinkRefusal {
  readonly status: number;
  readonly code: string;
  readonly message: string;
}

/**
 * Asserts that an SDK error carries erplink's refusal: the HTTP answer in its
 * cause chain has the status and exactly the envelope
 * `{ error: { code, message, requestId } }` (the request id that of the
 * answer's `X-Request-Id`), and one of the SDK's messages names it.
 * `shown` is added to failure messages (the exchanges, say). Returns the cause.
 */
export function assertErplinkRefusal(err: unknown, expected: ErplinkRefusal, shown = ""): HttpCause {
  const cause = httpCauseOf(err);
  assert.ok(cause !== undefined, `no HTTP answer in the error chain: ${String((err as Error)?.stack ?? err)}`);
  assert.is(cause.status, expected.status, shown);
  const requestId = cause.headers["x-request-id"];
  assert.type(requestId, "string", `no X-Request-Id on erplink's answer\n${shown}`);
  assert.equal(cause.data, { error: { code: expected.code, message: expected.message, requestId } }, shown);
  assert.ok(
    cause.messages.some((m) => m.includes(expected.message)),
    `the SDK's error messages do not name the refusal: ${cause.messages.join(" <- ")}`,
  );
  return cause;
}

/** The request lines of the parts of a multipart `$batch` body, in order: `GET /A_SalesOrder(…)`. */
export function batchPartLines(body: string): string[] {
  return [...body.matchAll(/^(GET|POST|PUT|PATCH|MERGE|DELETE) (\S+) HTTP\/1\.1\r?$/gm)].map((m) => `${m[1]} ${m[2]}`);
}

/** A batch response of the SDK as text, for messages (the SDK's objects are circular). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function showBatchResponse(r: any): string {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const one = (x: any) => ({ responseType: x?.responseType, httpCode: x?.httpCode, body: x?.body });
  return JSON.stringify(r?.responses ? { responses: r.responses.map(one) } : one(r));
}
