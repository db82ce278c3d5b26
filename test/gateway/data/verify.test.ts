/**
 * Unit tests of the self-check (src/gateway/data/verify.ts): the encoder is
 * built so that it never fires, so these hand-build requests in which what
 * would be sent and what was authorized differ, and assert that each is
 * refused with its reason. A check that cannot fail would prove nothing.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import type { Authorized, CanonicalRequest } from "../../../src/gateway/data/exchange.js";
import { ServiceRoot } from "../../../src/gateway/data/service-root.js";
import { verifyBatch, verifyForward } from "../../../src/gateway/data/verify.js";
import { GatewayError } from "../../../src/gateway/errors.js";
import { analyzeBatch } from "../../../src/gateway/odata/batch.js";
import { parseMetadata } from "../../../src/gateway/odata/metadata.js";
import { analyzeRequest } from "../../../src/gateway/odata/request.js";
import { V4_METADATA } from "../../../test-support/odata/fixtures.js";

const model = parseMetadata(V4_METADATA);
const root = new ServiceRoot({ baseUrl: "https://erp.example:8443/sap/opu", servicePath: () => "odata4/sales/0001", sapClient: "100" }, "SALES");
const CLIENT = { origin: "http://gw.example", proto: "http", host: "gw.example", path: "/odata/prod/SALES" };

/** The authorized request for a GET of `path?query`, as the analyze and authorize stages would leave it. */
function authorized(method: string, path: string, query = "", headers: Record<string, string> = {}): Authorized<{ id: string }> {
  const a = analyzeRequest({ method, path, query, headers, model });
  if (a.kind === "denied" || a.kind === "invalid" || a.kind === "stopped") throw new Error(a.message);
  const request: CanonicalRequest = {
    kind: a.kind,
    method: a.kind === "access" ? a.effectiveMethod : method,
    target: a.target,
    forward: a.forward,
    accesses: a.kind === "access" ? a.accesses : [],
    headers,
    body: undefined,
    analyzedBody: undefined,
    resolveReference: () => undefined,
    upsertEntitySet: undefined,
      answer: [],
    partUrls: [],
    model,
  };
  return { root, request, client: CLIENT, ifMatchStar: false } as unknown as Authorized<{ id: string }>;
}

function refusal(fn: () => void): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    assert.instance(err, GatewayError);
    assert.is((err as GatewayError).status, 400);
    return (err as GatewayError).message;
  }
}

const PREFIX = "erplink cannot forward this request unambiguously: ";
const V = suite("data path: the self-check before sending");

V("what erplink writes passes", () => {
  const a = authorized("GET", "Customers('a%20b')", "$expand=Orders&$select=Name");
  assert.is(a.request.forward, "Customers('a%20b')?$expand=Orders&$select=Name");
  assert.is(refusal(() => verifyForward(a, root.pathOf(a.request.forward), {})), undefined);
  assert.is(root.pathOf(a.request.forward), "/sap/opu/odata4/sales/0001/Customers('a%20b')?$expand=Orders&$select=Name&sap-client=100");
});

V("a target the URL parser would rewrite is refused: a backslash, a dot segment, a fragment, another origin", () => {
  const a = authorized("GET", "SalesOrders(1)");
  const cases: [string, string][] = [
    [`${root.path}/SalesOrders(1)\\..\\Customers?sap-client=100`, "a URL parser would rewrite the upstream request target"],
    [`${root.path}/x/../SalesOrders(1)?sap-client=100`, "a URL parser would rewrite the upstream request target"],
    [`${root.path}/SalesOrders(1)?sap-client=100#frag`, "the upstream URL has a fragment or credentials"],
    [`@evil.example${root.path}/SalesOrders(1)?sap-client=100`, "the upstream URL names another origin"],
    [`/other/SalesOrders(1)?sap-client=100`, "the upstream URL leaves the service root"],
    [`${root.path}/SalesOrders(1)`, "the instance's query options are not where they belong"],
  ];
  for (const [path, why] of cases) assert.is(refusal(() => verifyForward(a, path, {})), `${PREFIX}${why}`, path);
});

V("a target that reads as another request is refused: another target, other accesses, another kind", () => {
  const a = authorized("GET", "SalesOrders(1)");
  assert.is(refusal(() => verifyForward(a, root.pathOf("Customers('1')"), {})), `${PREFIX}read again, it addresses another target`);
  assert.is(refusal(() => verifyForward(a, root.pathOf("SalesOrders(1)?$expand=Customer"), {})), `${PREFIX}read again, it addresses another target`);
  assert.is(refusal(() => verifyForward(a, root.pathOf("$metadata"), {})), `${PREFIX}read again, it is another kind of request`);
  assert.is(refusal(() => verifyForward(a, root.pathOf("Nope"), {})), `${PREFIX}read again, it is refused: entity set 'Nope' not found`);
  const tampered = { ...a, request: { ...a.request, accesses: [] } } as typeof a;
  assert.is(refusal(() => verifyForward(tampered, root.pathOf(a.request.forward), {})), `${PREFIX}read again, it needs other accesses`);
  // A header the analyzer reads changes the reading: a tunnel sent beside the method.
  const del = authorized("PATCH", "SalesOrders(1)", "", { "if-match": "*" });
  assert.is(refusal(() => verifyForward(del, root.pathOf(del.request.forward), { "x-http-method": "DELETE" })), `${PREFIX}read again, it is refused: X-HTTP-Method is only allowed on POST, not on PATCH`);
});

V("a batch that would be written differently, or needs other accesses, is refused", () => {
  const text = JSON.stringify({ requests: [{ id: "1", method: "get", url: "SalesOrders(1)" }] });
  const batch = analyzeBatch({ contentType: "application/json", body: Buffer.from(text), clientRoot: CLIENT.path, model, may: () => true });
  if (batch.kind !== "access") throw new Error(batch.message);
  const a = authorized("POST", "$batch");
  const withBody = (bytes: Buffer, accesses = batch.accesses) =>
    ({
      ...a,
      instance: { sapClient: "100" },
      request: { ...a.request, accesses, body: { bytes, contentType: "application/json" }, partUrls: batch.partUrls },
    }) as unknown as typeof a;
  assert.is(refusal(() => verifyBatch(withBody(batch.body), () => true)), undefined);
  assert.is(refusal(() => verifyBatch(withBody(Buffer.from(text)), () => true)), `${PREFIX}read again, the batch would be written differently`);
  assert.is(refusal(() => verifyBatch(withBody(batch.body, []), () => true)), `${PREFIX}read again, the batch needs other accesses`);
  const other = Buffer.from(JSON.stringify({ requests: [{ id: "1", method: "GET", url: "Customers('1')" }] }));
  assert.is(refusal(() => verifyBatch(withBody(other), () => true)), `${PREFIX}read again, the batch needs other accesses`);
});

V.run();
