/**
 * The self-check before sending: what erplink wrote for the back end is read
 * again, by the WHATWG URL parser (the parser of undici, `fetch` and most
 * HTTP stacks a request meets on its way: proxies, load balancers, Node back
 * ends) and by erplink's own analyzer, and must come out as exactly what was
 * authorized: the same request target byte for byte, the same canonical
 * target, the same accesses in the same order, and for a `$batch` the same
 * body. Anything else is refused (400) with the reason. The encoder is
 * built so that this never happens; the check turns a mistake in it, or a
 * case nobody thought of, into a refusal instead of a bypass.
 */
import { GatewayError } from "../errors.js";
import { analyzeBatch } from "../odata/batch.js";
import type { Access } from "../odata/accesses.js";
import { analyzeRequest } from "../odata/request.js";
import { sameTarget } from "../odata/target.js";
import type { Authorized } from "./exchange.js";
import type { DataKey, Operation } from "./ports.js";

/** A difference between what was authorized and what would be sent. */
function refuse(why: string): never {
  throw new GatewayError(400, `erplink cannot forward this request unambiguously: ${why}`);
}

function sameAccesses(a: readonly Access[], b: readonly Access[]): boolean {
  return a.length === b.length && a.every((x, i) => x.entitySet === b[i]!.entitySet && x.operation === b[i]!.operation && x.reason === b[i]!.reason);
}

/**
 * Checks that `path` (the request target erplink will write into the
 * request line) reads as the authorized request, with the `headers` that go
 * with it and the body as the analyzer saw it.
 */
export function verifyForward<K extends DataKey>(a: Authorized<K>, path: string, headers: Readonly<Record<string, string>>): void {
  const { root } = a;
  let url: URL;
  try {
    url = new URL(`${root.origin}${path}`);
  } catch {
    refuse("the upstream URL does not parse");
  }
  if (url.origin !== root.origin) refuse("the upstream URL names another origin");
  if (url.hash !== "" || url.username !== "" || url.password !== "") refuse("the upstream URL has a fragment or credentials");
  if (`${url.pathname}${url.search}` !== path) refuse("a URL parser would rewrite the upstream request target");
  verifyReading(a, url, headers);
}

/**
 * Checks that `url` (an upstream URL as a URL parser read it), with the
 * `headers` that go with it and the body as the analyzer saw it, lies below
 * the service root and is analyzed as exactly the authorized request. Part
 * of {@link verifyForward}; Envoy's check (`../ext-authz/`) runs it on the
 * client's own request target, which Envoy forwards instead of erplink's.
 */
export function verifyReading<K extends DataKey>(
  a: Authorized<K>,
  url: URL,
  headers: Readonly<Record<string, string>>,
  /** The instance's SAP client, when `url` is the client's and may name it (the analyzer then reads it as the instance's). */
  sapClient?: string,
): void {
  const { root, request } = a;
  const prefix = `${root.path}/`;
  if (!url.pathname.startsWith(prefix)) refuse("the upstream URL leaves the service root");
  let query = url.search.startsWith("?") ? url.search.slice(1) : "";
  if (root.instanceQuery !== "") {
    if (query !== root.instanceQuery && !query.endsWith(`&${root.instanceQuery}`)) refuse("the instance's query options are not where they belong");
    query = query.slice(0, Math.max(0, query.length - root.instanceQuery.length - 1));
  }
  const again = analyzeRequest({
    method: request.method,
    path: url.pathname.slice(prefix.length),
    query,
    headers,
    model: request.model,
    body: request.analyzedBody,
    resolveReference: request.resolveReference,
    sapClient,
  });
  if (again.kind === "denied" || again.kind === "invalid" || again.kind === "stopped") refuse(`read again, it is refused: ${again.message}`);
  if (again.kind !== request.kind) refuse("read again, it is another kind of request");
  if (!sameTarget(again.target, request.target) || again.forward !== request.forward) refuse("read again, it addresses another target");
  // A batch's accesses are its parts' (see verifyBatch).
  if (request.kind === "access" && !sameAccesses(again.kind === "access" ? again.accesses : [], request.accesses)) {
    refuse("read again, it needs other accesses");
  }
}

/**
 * Checks a `$batch` body as written: analyzed again it needs the same
 * accesses and is written identically (erplink's writer is a fixed point),
 * and every part URL resolves below the service root as written.
 */
export function verifyBatch<K extends DataKey>(a: Authorized<K>, may: (entitySet: string, operation: Operation) => boolean): void {
  const { root, request } = a;
  if (request.body === undefined) refuse("the batch has no body");
  const again = analyzeBatch({
    contentType: request.body.contentType,
    body: request.body.bytes,
    clientRoot: a.client.path,
    model: request.model,
    may,
    sapClient: a.instance.sapClient,
  });
  if (again.kind !== "access") refuse(`read again, the batch is refused: ${again.message}`);
  if (!sameAccesses(again.accesses, request.accesses)) refuse("read again, the batch needs other accesses");
  if (!again.body.equals(request.body.bytes)) refuse("read again, the batch would be written differently");
  const base = `${root.url}/`;
  for (const [i, part] of request.partUrls.entries()) {
    let url: URL;
    try {
      url = new URL(part, base);
    } catch {
      refuse(`the URL of batch part ${i + 1} does not parse`);
    }
    if (url.href !== `${base}${part}`) refuse(`a URL parser would rewrite the URL of batch part ${i + 1}`);
  }
}
