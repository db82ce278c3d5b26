/**
 * Unit tests of src/gateway/odata/batch.ts: multipart (V4 and V2) and JSON
 * batches on the sample services of test-support/odata/fixtures.ts map to
 * the exact accesses, and the body (and Content-Type) forwarded to the back
 * end is checked byte for byte (relative URLs, `If-Match: *`, compacted JSON
 * part bodies, exact Content-Lengths, Content-Types written anew, lower-case
 * JSON header names); then what a lenient back end (SAP CAP, its V2 adapter)
 * could read differently: requests hidden in part bodies, charsets,
 * boundaries, headers; Content-ID references in URLs and bodies, URLs
 * leaving the service root, denied and malformed parts (each named in the
 * message), limits, and hostile input, which must answer quickly and never
 * throw.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import {
  MAX_BATCH_PARTS,
  MAX_JSON_DEPTH,
  MAX_LINE_LENGTH,
  analyzeBatch,
  type BatchAnalysis,
  type BatchInput,
} from "../../../src/gateway/odata/batch.js";
import { parseMetadata, type ServiceModel } from "../../../src/gateway/odata/metadata.js";
import type { Access } from "../../../src/gateway/odata/request.js";
import { acc, LINEAR_BOUND_MS, noAccess } from "../../../test-support/odata/analysis.js";
import { V2_METADATA, V4_METADATA } from "../../../test-support/odata/fixtures.js";

const V4 = parseMetadata(V4_METADATA);
const V2 = parseMetadata(V2_METADATA);
const ROOT = "/odata/prod/SALES";
const BOUNDARY = "batch_1";
const MULTIPART = `multipart/mixed; boundary=${BOUNDARY}`;
const JSON_TYPE = "application/json";

interface Options {
  readonly contentType?: string;
  readonly model?: ServiceModel | undefined;
  readonly may?: (entitySet: string, operation: string) => boolean;
  readonly clientRoot?: string;
  readonly entityStep?: (entitySet: string) => string | undefined;
}

function run(body: string | Buffer, o: Options = {}): BatchAnalysis {
  const input: BatchInput = {
    contentType: o.contentType ?? MULTIPART,
    body: typeof body === "string" ? Buffer.from(body, "utf8") : body,
    clientRoot: o.clientRoot ?? ROOT,
    model: "model" in o ? o.model : V4,
    may: o.may ?? (() => true),
    ...(o.entityStep ? { entityStep: o.entityStep } : {}),
  };
  return analyzeBatch(input);
}

const crlf = (...lines: string[]): string => lines.join("\r\n");

/** `a` and `b` alternating (`a[0]`, `b[0]`, `a[1]`, …), the rest of the longer one at the end. */
function interleave(a: readonly string[], b: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (i < a.length) out.push(a[i]!);
    if (i < b.length) out.push(b[i]!);
  }
  return out;
}

/** A multipart body: each part after its delimiter line, then the close delimiter and a line break. */
function multipart(boundary: string, ...parts: string[]): string {
  return `--${boundary}\r\n${parts.join(`\r\n--${boundary}\r\n`)}\r\n--${boundary}--\r\n`;
}

/** An `application/http` body part. */
function http(requestLine: string, o: { id?: string; headers?: string[]; body?: string } = {}): string {
  return crlf(
    "Content-Type: application/http",
    "Content-Transfer-Encoding: binary",
    ...(o.id !== undefined ? [`Content-ID: ${o.id}`] : []),
    "",
    requestLine,
    ...(o.headers ?? []),
    "",
    o.body ?? "",
  );
}

/** A JSON request part. */
const json = (requestLine: string, body: string, o: { id?: string; headers?: string[] } = {}): string =>
  http(requestLine, { ...o, headers: ["Content-Type: application/json", ...(o.headers ?? [])], body });

/** A change set body part. */
function changeSet(boundary: string, ...parts: string[]): string {
  return `Content-Type: multipart/mixed; boundary=${boundary}\r\n\r\n${multipart(boundary, ...parts)}`;
}

const batch = (...parts: string[]): string => multipart(BOUNDARY, ...parts);

/** A JSON batch of these request objects. */
const jsonRef = (...requests: object[]): string => JSON.stringify({ requests });

/**
 * A JSON batch as erplink writes it for the back end: members in the order
 * id, method (upper case), url, atomicityGroup, dependsOn, headers (names in
 * lower case), body; compact; a null body left out.
 */
function writtenJson(...requests: Record<string, unknown>[]): string {
  const order = ["id", "method", "url", "atomicityGroup", "dependsOn", "headers", "body"];
  return JSON.stringify({
    requests: requests.map((r) => {
      const out: Record<string, unknown> = {};
      for (const k of order) {
        const v = r[k];
        if (v === undefined || (k === "body" && v === null)) continue;
        if (k === "method") out[k] = String(v).toUpperCase();
        else if (k === "headers") out[k] = Object.fromEntries(Object.entries(v as Record<string, string>).map(([n, x]) => [n.toLowerCase(), x]));
        else out[k] = v;
      }
      return out;
    }),
  });
}

/** Asserts an `access` outcome: its accesses, part count and forwarded body (as text), exactly. */
function expectAccess(r: BatchAnalysis, parts: number, body: string | Buffer, accesses: Access[], contentType = MULTIPART): void {
  if (r.kind !== "access") {
    assert.unreachable(`expected access, got ${r.kind}: ${r.message}`);
    return;
  }
  assert.equal(r.accesses, accesses);
  assert.is(r.parts, parts);
  if (typeof body === "string") assert.is(r.body.toString("utf8"), body);
  else assert.ok(r.body.equals(body), "the forwarded body differs from the expected bytes");
  assert.is(r.contentType, contentType);
}

const invalid = (message: string): BatchAnalysis => ({ kind: "invalid", message });
const denied = (message: string): BatchAnalysis => ({ kind: "denied", message });

// ---------------------------------------------------------------------------

const mp = suite("batch: multipart");

mp("V4: GETs around a change set (create, $1 reference, bind, update); forwarded byte-identical", () => {
  const body = batch(
    http("GET Customers('C1')?$expand=Orders HTTP/1.1", { headers: ["Accept: application/json"] }),
    changeSet(
      "changeset_a",
      json("POST SalesOrders HTTP/1.1", `{"Note":"n","Customer@odata.bind":"Customers('C1')"}`, { id: "1" }),
      json("POST $1/Items HTTP/1.1", `{"ItemNo":1,"Product@odata.bind":"Products('P1')"}`, { id: "2" }),
      json("PATCH SalesOrders(7) HTTP/1.1", `{"Note":"x"}`, { id: "3", headers: [`If-Match: W/"7"`] }),
    ),
    http("GET $metadata HTTP/1.1"),
    http("GET Products?$expand=Category HTTP/1.1"),
  );
  expectAccess(run(body), 6, body, [
    acc("Customers", "get", "part 1: resource path"),
    acc("SalesOrders", "list", "part 1: $expand Orders"),
    acc("SalesOrders", "create", "part 2: resource path"),
    acc("SalesOrders", "get", "part 3: navigation source in resource path"),
    acc("Products", "get", "part 3: bind Product"),
    acc("SalesOrders", "update", "part 4: resource path"),
    acc("Products", "list", "part 6: resource path"),
    acc("Categories", "list", "part 6: $expand Category"),
  ]);
});

mp("V2 (SAP style): MERGE, tunnelled MERGE and a Content-ID reference in a change set", () => {
  const body = batch(
    http("GET SalesOrderSet('1')/ToItems?$expand=ToProduct HTTP/1.1"),
    changeSet(
      "changeset_v2",
      json("POST SalesOrderSet HTTP/1.1", `{"SalesOrderID":"2","Note":"n"}`, { id: "id-1" }),
      json("POST $id-1/ToItems HTTP/1.1", `{"ItemPosition":"10"}`, { id: "id-2" }),
      json("MERGE SalesOrderSet('1') HTTP/1.1", `{"Note":"m"}`),
      json("POST CustomerSet('C1') HTTP/1.1", `{"Name":"x"}`, { headers: ["X-HTTP-Method: MERGE"] }),
    ),
  );
  // The tunnelled part is forwarded with the method it names, without the tunnel.
  const forwarded = body.replace("POST CustomerSet('C1') HTTP/1.1", "MERGE CustomerSet('C1') HTTP/1.1").replace("\r\nX-HTTP-Method: MERGE", "");
  assert.is.not(forwarded, body);
  expectAccess(run(body, { model: V2 }), 5, forwarded, [
    acc("SalesOrderSet", "get", "part 1: navigation source in resource path"),
    acc("SalesOrderItemSet", "list", "part 1: resource path"),
    acc("ProductSet", "list", "part 1: $expand ToProduct"),
    acc("SalesOrderSet", "create", "part 2: resource path"),
    acc("SalesOrderItemSet", "create", "part 3: resource path"),
    acc("SalesOrderSet", "update", "part 4: resource path"),
    acc("CustomerSet", "update", "part 5: resource path"),
    acc("CustomerSet", "get", "part 5: the answer"),
  ]);
});

mp("absolute paths and absolute URLs below the service root are forwarded relative (exact bytes)", () => {
  const body = batch(
    http(`GET ${ROOT}/Customers('C1')?$select=Name HTTP/1.1`, { headers: ["Host: erp.example.com"] }),
    http(`GET https://gateway.example.com:8443${ROOT}/Products HTTP/1.1`),
    changeSet(
      "cs",
      json(`POST http://other-host${ROOT}/SalesOrders HTTP/1.1`, `{"Note":"n"}`, { id: "1" }),
      json(`POST ${ROOT}/$1/Items HTTP/1.1`, `{"ItemNo":1}`, { id: "2" }),
    ),
  );
  // A part's Host is not forwarded: every part URL is, relative to the service root.
  const forwarded = batch(
    http("GET Customers('C1')?$select=Name HTTP/1.1"),
    http("GET Products HTTP/1.1"),
    changeSet("cs", json("POST SalesOrders HTTP/1.1", `{"Note":"n"}`, { id: "1" }), json("POST $1/Items HTTP/1.1", `{"ItemNo":1}`, { id: "2" })),
  );
  expectAccess(run(body, { clientRoot: `${ROOT}/` }), 4, forwarded, [
    acc("Customers", "get", "part 1: resource path"),
    acc("Products", "list", "part 2: resource path"),
    acc("SalesOrders", "create", "part 3: resource path"),
    acc("SalesOrders", "get", "part 4: navigation source in resource path"),
  ]);
});

mp("If-Match: * is added to upserting PUT/PATCH parts only where the key may not create (exact bytes)", () => {
  const body = batch(
    changeSet(
      "cs",
      json("PUT SalesOrders(1) HTTP/1.1", `{"Note":"a"}`),
      json("PATCH Customers('C1') HTTP/1.1", `{"Name":"b"}`),
      json("PATCH SalesOrders(2) HTTP/1.1", `{"Note":"c"}`, { headers: ["If-Match: W/\"2\""] }),
      json("PUT SalesOrders(3) HTTP/1.1", `{"Note":"d"}`, { headers: ["If-None-Match: *"] }),
    ),
    http("PUT SalesOrders(4)/Note HTTP/1.1", { headers: ["Content-Type: text/plain"], body: "e" }),
    "Content-Type: application/http\r\n\r\nPATCH SalesOrders(5) HTTP/1.1\r\n",
  );
  const forwarded = batch(
    changeSet(
      "cs",
      json("PUT SalesOrders(1) HTTP/1.1", `{"Note":"a"}`, { headers: ["If-Match: *"] }),
      json("PATCH Customers('C1') HTTP/1.1", `{"Name":"b"}`),
      json("PATCH SalesOrders(2) HTTP/1.1", `{"Note":"c"}`, { headers: ["If-Match: W/\"2\""] }),
      json("PUT SalesOrders(3) HTTP/1.1", `{"Note":"d"}`, { headers: ["If-None-Match: *"] }),
    ),
    http("PUT SalesOrders(4)/Note HTTP/1.1", { headers: ["Content-Type: text/plain"], body: "e" }),
    "Content-Type: application/http\r\n\r\nPATCH SalesOrders(5) HTTP/1.1\r\nIf-Match: *\r\n",
  );
  expectAccess(run(body, { may: (set, op) => op !== "create" || set === "Customers" }), 6, forwarded, [
    acc("SalesOrders", "update", "part 1: resource path"),
    acc("SalesOrders", "get", "part 1: the answer"),
    acc("Customers", "update", "part 2: resource path"),
    acc("Customers", "create", "part 2: resource path (upsert)"),
    acc("Customers", "get", "part 2: the answer"),
    acc("SalesOrders", "create", "part 4: resource path (If-None-Match: *)"),
  ]);
  // With create allowed everywhere the body is unchanged; the upserts' creates are authorized with the rest.
  expectAccess(run(body), 6, body, [
    acc("SalesOrders", "update", "part 1: resource path"),
    acc("SalesOrders", "create", "part 1: resource path (upsert)"),
    acc("SalesOrders", "get", "part 1: the answer"),
    acc("Customers", "update", "part 2: resource path"),
    acc("Customers", "create", "part 2: resource path (upsert)"),
    acc("Customers", "get", "part 2: the answer"),
  ]);
});

mp("binary part bodies without line breaks pass byte-exact (every other byte value, NUL, UTF-8), also when the part is rewritten", () => {
  // Every byte value but CR and LF; no two equal bytes in a row, so no '--'.
  const bytes = Buffer.from(Array.from({ length: 1024 }, (_, i) => (i * 7) % 256).filter((b) => b !== 0x0a && b !== 0x0d));
  const head = (url: string) =>
    Buffer.from(
      crlf("Content-Type: application/http", "Content-Transfer-Encoding: binary", "", `PUT ${url} HTTP/1.1`, "Content-Type: image/png", "", ""),
      "latin1",
    );
  const utf8 = json("PATCH Customers('C1') HTTP/1.1", `{"Name":"Zoë 日本 \\u00e9"}`);
  const build = (url: string) =>
    Buffer.concat([
      Buffer.from(`--${BOUNDARY}\r\n`),
      head(url),
      bytes,
      Buffer.from(`\r\n--${BOUNDARY}\r\n${utf8}\r\n--${BOUNDARY}--\r\n`, "utf8"),
    ]);
  const body = build("Products('P1')/$value");
  const accesses = [
    acc("Products", "update", "part 1: resource path"),
    acc("Products", "get", "part 1: the answer"),
    acc("Customers", "update", "part 2: resource path"),
    acc("Customers", "create", "part 2: resource path (upsert)"),
    acc("Customers", "get", "part 2: the answer"),
  ];
  expectAccess(run(body), 2, body, accesses);
  expectAccess(run(build(`${ROOT}/Products('P1')/$value`)), 2, body, accesses);
});

mp("bare-LF framing, a preamble, an epilogue and transport padding are normalized; parts keep their bytes", () => {
  const body = [
    "This is a preamble.",
    `--${BOUNDARY}  `,
    "Content-Type: application/http",
    "",
    "GET Customers HTTP/1.1",
    "",
    "",
    `--${BOUNDARY}--\t`,
    "an epilogue",
    "",
  ].join("\n");
  const forwarded = `--${BOUNDARY}\r\nContent-Type: application/http\r\n\r\nGET Customers HTTP/1.1\r\n\r\n\r\n--${BOUNDARY}--\r\n`;
  expectAccess(run(body), 1, forwarded, [acc("Customers", "list", "part 1: resource path")]);
});

mp("a request without a blank line after its request line, and a close delimiter at the very end", () => {
  const body = `--${BOUNDARY}\r\nContent-Type: application/http\r\n\r\nGET Customers HTTP/1.1\r\n--${BOUNDARY}--`;
  expectAccess(run(body), 1, body, [acc("Customers", "list", "part 1: resource path")]);
});

mp("the boundary may be quoted and the Content-Type may carry more parameters; the Content-Type forwarded is written anew", () => {
  const body = multipart("a b:c", http("GET Customers HTTP/1.1"));
  const contentType = `Multipart/Mixed ; charset="UTF-8"; boundary="a b:c"`;
  expectAccess(run(body, { contentType }), 1, body, [acc("Customers", "list", "part 1: resource path")], `multipart/mixed; boundary="a b:c"`);
});

mp("bare-LF framing inside a change set; a JSON body with line breaks is forwarded compacted", () => {
  const body = [
    `--${BOUNDARY}`,
    "Content-Type: multipart/mixed; boundary=cs",
    "",
    "--cs",
    "Content-Type: application/http",
    "Content-ID: 1",
    "",
    "PATCH SalesOrders(1) HTTP/1.1",
    "Content-Type: application/json",
    "",
    `{\r\n  "Note": "line 1",\n\t"Tags": [1, 2]\n}`,
    "--cs--",
    `--${BOUNDARY}--`,
  ].join("\n");
  const forwarded = batch(
    `Content-Type: multipart/mixed; boundary=cs\r\n\r\n--cs\r\nContent-Type: application/http\r\nContent-ID: 1\r\n\r\nPATCH SalesOrders(1) HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"Note":"line 1","Tags":[1,2]}\r\n--cs--`,
  ).replace(/\r\n$/, "");
  expectAccess(run(body), 1, forwarded, [
    acc("SalesOrders", "update", "part 1: resource path"),
    acc("SalesOrders", "create", "part 1: resource path (upsert)"),
    acc("SalesOrders", "get", "part 1: the answer"),
  ]);
});

mp("a MIME-level Content-Length follows a rewritten part and its change set; untouched parts keep theirs", () => {
  const part = (url: string, length: number) =>
    `Content-Type: application/http\r\nContent-Length: ${length}\r\n\r\nDELETE ${url} HTTP/1.1\r\n\r\n`;
  const cs = (inner: string, length: number) => `Content-Type: multipart/mixed; boundary=cs\r\nContent-Length: ${length}\r\n\r\n${multipart("cs", inner)}`;
  const body = batch(cs(part(`${ROOT}/Customers('C1')`, 53), 123), part("Customers('C2')", 35));
  const forwarded = batch(cs(part("Customers('C1')", 35), 105), part("Customers('C2')", 35));
  expectAccess(run(body), 2, forwarded, [acc("Customers", "delete", "part 1: resource path")]);
});

mp("a request's Content-Length (equal to or below the body length) is forwarded exact, in one spelling", () => {
  const body = batch(
    json("POST SalesOrders HTTP/1.1", `{"Note":"x"}`, { headers: ["Content-Length: 12"] }),
    json("POST Customers HTTP/1.1", `{"ID":"C1"}\r\n`, { headers: ["Content-Length: 11"] }),
    json("POST Categories HTTP/1.1", `{ "ID": 3 }`, { headers: ["content-length:5"] }),
    http("PUT SalesOrders(4)/Note HTTP/1.1", { headers: ["Content-Type: text/plain", "Content-Length:  1"], body: "abc" }),
  );
  const forwarded = batch(
    json("POST SalesOrders HTTP/1.1", `{"Note":"x"}`, { headers: ["Content-Length: 12"] }),
    json("POST Customers HTTP/1.1", `{"ID":"C1"}`, { headers: ["Content-Length: 11"] }),
    json("POST Categories HTTP/1.1", `{"ID":3}`, { headers: ["content-length: 8"] }),
    http("PUT SalesOrders(4)/Note HTTP/1.1", { headers: ["Content-Type: text/plain", "Content-Length: 3"], body: "abc" }),
  );
  expectAccess(run(body), 4, forwarded, [
    acc("SalesOrders", "create", "part 1: resource path"),
    acc("Customers", "create", "part 2: resource path"),
    acc("Categories", "create", "part 3: resource path"),
    acc("SalesOrders", "update", "part 4: resource path"),
    acc("SalesOrders", "get", "part 4: the answer"),
  ]);
});

mp("a MIME-level Content-Length below the part is made exact; MIME Content-Types are written anew", () => {
  const body = batch(
    "content-type: application/http;msgtype=request\r\nContent-Length:10\r\n\r\nGET Customers HTTP/1.1\r\n",
    `Content-Type: multipart/mixed; charset=utf-8; boundary=cs\r\n\r\n${multipart("cs", json("POST Customers HTTP/1.1", "{}"))}`,
  );
  const forwarded = batch(
    "content-type: application/http\r\nContent-Length: 24\r\n\r\nGET Customers HTTP/1.1\r\n",
    changeSet("cs", json("POST Customers HTTP/1.1", "{}")),
  );
  expectAccess(run(body), 2, forwarded, [acc("Customers", "list", "part 1: resource path"), acc("Customers", "create", "part 2: resource path")]);
});

mp.run();

// ---------------------------------------------------------------------------

const js = suite("batch: JSON");

js("requests, an atomicity group, $1 references through dependsOn; written anew in canonical form", () => {
  const requests = [
    { id: "r1", method: "get", url: "Customers('C1')?$select=Name" },
    { id: "1", atomicityGroup: "g1", method: "post", url: "SalesOrders", headers: { "content-type": "application/json" }, body: { Note: "n" } },
    { id: "2", atomicityGroup: "g1", dependsOn: ["1"], method: "post", url: "$1/Items", body: { ItemNo: 1 } },
    { id: "3", dependsOn: ["g1"], method: "PATCH", url: "$1", headers: { "if-match": "*" }, body: { Note: "changed" } },
    { id: "4", method: "delete", url: "Categories(3)" },
    { id: "5", method: "put", url: "Products('P1')/$value", headers: { "content-type": "text/plain" }, body: "plain text" },
  ];
  const text = JSON.stringify({ requests, "@Core.Description": "annotations are dropped" });
  const r = run(Buffer.from(text, "utf8"), { contentType: JSON_TYPE });
  expectAccess(
    r,
    6,
    writtenJson(...requests),
    [
      acc("Customers", "get", "part 1: resource path"),
      acc("SalesOrders", "create", "part 2: resource path"),
      acc("SalesOrders", "get", "part 3: navigation source in resource path"),
      acc("SalesOrders", "update", "part 4: resource path"),
      acc("Categories", "delete", "part 5: resource path"),
      acc("Products", "update", "part 6: resource path"),
      acc("Products", "get", "part 6: the answer"),
    ],
    JSON_TYPE,
  );
});

js("absolute URLs are written relative and If-Match: * added; bodies stay as written (numbers too)", () => {
  const text = `{ "requests": [
  {"id": "a", "method": "get", "url": "${ROOT}/Customers('C1')"},
  {"id": "b", "method": "get", "url": "https://h.example${ROOT}/Products?$top=2", "headers": {}},
  {"id": "c", "method": "put", "url": "SalesOrders(1)", "headers": {"content-type": "application/json"}, "body": {"Note": "é", "Amount": 12345678901234567890.10}},
  {"id": "d", "method": "patch", "url": "${ROOT}/SalesOrders(2)", "body": {"Note": "x"}}
] }`;
  const expected =
    `{"requests":[{"id":"a","method":"GET","url":"Customers('C1')"},{"id":"b","method":"GET","url":"Products?$top=2"},` +
    `{"id":"c","method":"PUT","url":"SalesOrders(1)","headers":{"content-type":"application/json","if-match":"*"},"body":{"Note":"é","Amount":12345678901234567890.10}},` +
    `{"id":"d","method":"PATCH","url":"SalesOrders(2)","headers":{"if-match":"*"},"body":{"Note":"x"}}]}`;
  expectAccess(
    run(text, { contentType: JSON_TYPE, may: (_set, op) => op !== "create" }),
    4,
    expected,
    [
    acc("Customers", "get", "part 1: resource path"),
    acc("Products", "list", "part 2: resource path"),
    acc("SalesOrders", "update", "part 3: resource path"),
    acc("SalesOrders", "get", "part 3: the answer"),
  ],
    JSON_TYPE,
  );
});

js("a bind to $1 and a reference to a request of another atomicity group named by its group", () => {
  const requests = [
    { id: "1", atomicityGroup: "g1", method: "post", url: "Customers", body: { ID: "C9" } },
    { id: "2", atomicityGroup: "g2", dependsOn: ["g1"], method: "post", url: "SalesOrders", body: { "Customer@odata.bind": "$1" } },
    { id: "3", atomicityGroup: "g2", dependsOn: ["g1"], method: "post", url: "$1/Orders", body: { Note: "n" } },
  ];
  expectAccess(
    run(JSON.stringify({ requests }), { contentType: JSON_TYPE }),
    3,
    writtenJson(...requests),
    [
      acc("Customers", "create", "part 1: resource path"),
      acc("SalesOrders", "create", "part 2: resource path"),
      acc("Customers", "get", "part 2: bind Customer"),
    ],
    JSON_TYPE,
  );
});

js("a null body is no body; $metadata needs no access", () => {
  const requests = [
    { id: "1", method: "get", url: "$metadata", body: null },
    { id: "2", method: "delete", url: "Customers('C1')", body: null },
  ];
  expectAccess(run(jsonRef(...requests), { contentType: JSON_TYPE }), 2, writtenJson(...requests), [acc("Customers", "delete", "part 2: resource path")], JSON_TYPE);
});

js.run();

// ---------------------------------------------------------------------------

const refs = suite("batch: Content-ID references");

refs("a bind to $1 in a change set reads the navigation target; $1 itself is left to the back end", () => {
  const body = batch(
    changeSet(
      "cs",
      json("POST Customers HTTP/1.1", `{"ID":"C9"}`, { id: "1" }),
      json("POST SalesOrders HTTP/1.1", `{"Customer@odata.bind":"$1"}`, { id: "2" }),
    ),
  );
  expectAccess(run(body), 2, body, [
    acc("Customers", "create", "part 1: resource path"),
    acc("SalesOrders", "create", "part 2: resource path"),
    acc("Customers", "get", "part 2: bind Customer"),
  ]);
});

refs("a composite key placeholder: $1/… of a PriceConditions create", () => {
  const body = batch(
    changeSet("cs", json("POST PriceConditions HTTP/1.1", `{"OrderID":1,"Type":"A"}`, { id: "1" }), json("PATCH $1 HTTP/1.1", `{"Value":2}`, { id: "2" })),
  );
  expectAccess(run(body), 2, body, [
    acc("PriceConditions", "create", "part 1: resource path"),
    acc("PriceConditions", "update", "part 2: resource path"),
    acc("PriceConditions", "get", "part 2: the answer"),
  ]);
});

refs("a reference to an entity erplink knows the address of is forwarded as that address, not as $<id>", () => {
  // CAP resolves $1 by writing the referenced entity's Location (built from its stored key, unescaped) into the URL.
  const body = batch(changeSet("cs", json("PATCH SalesOrders(1) HTTP/1.1", `{"Note":"a"}`, { id: "1" }), json("PATCH $1/Customer HTTP/1.1", `{"Name":"b"}`, { id: "2" })));
  const forwarded = batch(
    changeSet("cs", json("PATCH SalesOrders(1) HTTP/1.1", `{"Note":"a"}`, { id: "1" }), json("PATCH SalesOrders(1)/Customer HTTP/1.1", `{"Name":"b"}`, { id: "2" })),
  );
  expectAccess(run(body), 2, forwarded, [
    acc("SalesOrders", "update", "part 1: resource path"),
    acc("SalesOrders", "create", "part 1: resource path (upsert)"),
    acc("SalesOrders", "get", "part 1: the answer"),
    acc("Customers", "update", "part 2: resource path"),
    acc("Customers", "list", "part 2: navigation 'Customer' (a back end may scan the set for it)"),
    acc("Customers", "create", "part 2: resource path (upsert)"),
    acc("Customers", "get", "part 2: the answer"),
  ]);
  const requests = [
    { id: "1", method: "patch", url: "Customers('C1')", body: { Name: "x" } },
    { id: "2", dependsOn: ["1"], method: "get", url: "$1/Orders?$top=1" },
  ];
  expectAccess(
    run(jsonRef(...requests), { contentType: JSON_TYPE }),
    2,
    writtenJson(requests[0]!, { ...requests[1]!, url: "Customers('C1')/Orders?$top=1" }),
    [
      acc("Customers", "update", "part 1: resource path"),
      acc("Customers", "create", "part 1: resource path (upsert)"),
      acc("Customers", "get", "part 1: the answer"),
      acc("SalesOrders", "list", "part 2: resource path"),
    ],
    JSON_TYPE,
  );
});

refs("a reference to an entity created with key values that are not plain is refused; plain ones are the back end's to resolve", () => {
  const notPlain =
    "cannot be referred to: back ends resolve a reference by writing the entity's address, from its stored key, into the URL unescaped, " +
    "and erplink cannot vouch for it (the request creates the entity with key values that are not plain: letters, digits, '_', '.', ':', '+', '-'; " +
    "or reaches it through another reference)";
  const attack = [
    { id: "1", method: "post", url: "Customers", body: { ID: "C1')/Orders(1", Name: "x" } },
    { id: "2", dependsOn: ["1"], method: "get", url: "$1" },
  ];
  assert.equal(run(jsonRef(...attack), { contentType: JSON_TYPE }), invalid(`batch part 2 (GET $1): $1 ${notPlain}`));
  const lowerCased = [{ ...attack[0]!, body: { id: "C1'/x", Name: "x" } }, attack[1]!];
  assert.equal(run(jsonRef(...lowerCased), { contentType: JSON_TYPE }), invalid(`batch part 2 (GET $1): $1 ${notPlain}`));
  const plain = [{ ...attack[0]!, body: { ID: "C-1.a:b+c_d", Name: "it's a name; any characters" } }, attack[1]!];
  expectAccess(run(jsonRef(...plain), { contentType: JSON_TYPE }), 2, writtenJson(...plain), [acc("Customers", "create", "part 1: resource path"), acc("Customers", "get", "part 2: resource path")], JSON_TYPE);
  // Through a reference to a created entity, a part that does not create is not referable in turn.
  const chain = [plain[0]!, { id: "2", dependsOn: ["1"], method: "patch", url: "$1", body: { Name: "y" } }, { id: "3", dependsOn: ["2"], method: "get", url: "$2" }];
  assert.equal(run(jsonRef(...chain), { contentType: JSON_TYPE }), invalid(`batch part 3 (GET $2): $2 ${notPlain}`));
  // Bodies are forwarded as written: a bind by reference may only name a created entity.
  const bind = [
    { id: "1", method: "patch", url: "Customers('C1')", body: { Name: "x" } },
    { id: "2", dependsOn: ["1"], method: "post", url: "SalesOrders", body: { "Customer@odata.bind": "$1" } },
  ];
  assert.equal(
    run(jsonRef(...bind), { contentType: JSON_TYPE }),
    denied("batch part 2 (POST SalesOrders): '$1' in a body may only refer to an entity created in the batch; name this one by its address"),
  );
});

refs("a create that nests an entity cannot be referred to (a navigation may feed a key); binds and flat complex values may stay", () => {
  const notReferable = (id: string) =>
    `$${id} cannot be referred to: back ends resolve a reference by writing the entity's address, from its stored key, into the URL unescaped, ` +
    "and erplink cannot vouch for it (the request creates the entity with key values that are not plain: letters, digits, '_', '.', ':', '+', '-'; " +
    "or reaches it through another reference)";
  const then = (create: Record<string, unknown>, url = "SalesOrders") => [
    { id: "1", method: "post", url, body: create },
    { id: "2", dependsOn: ["1"], method: "patch", url: "$1", body: { Note: "x" } },
  ];
  // CAP fills a key association's foreign key from a nested object: any string reaches the stored key.
  for (const create of [
    { ID: 1, Customer: { ID: "C1')/Orders(2" } },
    { ID: 1, Items: [{ ItemNo: 1 }] },
    { ID: 1, "Customer@odata.bind": "Customers('C$&')" },
    // A qualified bind is a bind, as the body walk reads it.
    { ID: 1, "Customer@odata.bind#q": "Customers('C$&')" },
  ]) {
    const r = run(jsonRef(...then(create)), { contentType: JSON_TYPE });
    assert.equal(r, invalid(`batch part 2 (PATCH $1): ${notReferable("1")}`), JSON.stringify(create));
  }
  // V2's `d` beside other members (CAP's V2 adapter would take `d`): denied at the create already.
  const wrapped = run(jsonRef(...then({ d: { ID: 1, Customer: { ID: "x" } }, other: 1 })), { contentType: JSON_TYPE });
  assert.is(wrapped.kind === "denied" && wrapped.message, "batch part 1 (POST SalesOrders): cannot authorize property 'd' of 'Sales.SalesOrder': only declared properties may hold objects or arrays");
  // A bind names a row by a key without '/', '?', '#': at most another row of the bound set. A flat complex value is data.
  for (const create of [{ ID: 1, "Customer@odata.bind": "Customers('C1')" }, { ID: 1, ShipTo: { City: "Lisbon" } }, { ID: 1, Tags: ["a", "b"] }]) {
    const r = run(jsonRef(...then(create)), { contentType: JSON_TYPE });
    assert.is(r.kind, "access", JSON.stringify(create));
  }
});

refs("every key value a create could store must be plain, from the path and from binds too", () => {
  const notReferable = (id: string) =>
    `$${id} cannot be referred to: back ends resolve a reference by writing the entity's address, from its stored key, into the URL unescaped, ` +
    "and erplink cannot vouch for it (the request creates the entity with key values that are not plain: letters, digits, '_', '.', ':', '+', '-'; " +
    "or reaches it through another reference)";
  const then = (url: string, body: Record<string, unknown>) => [
    { id: "1", method: "post", url, body },
    { id: "2", dependsOn: ["1"], method: "patch", url: "$1", body: { Note: "x" } },
  ];
  const refused = [
    // The parent's key in the path becomes the child's: CAP wrote `$'` from it into the URL, and String.replace re-inserted the rest.
    then("Customers('C1''%2CID%3D''N1''%29%24''%26%24expand%3DOrders')/Orders", { ID: 9 }),
    // A bind's key, decoded by the back end, may feed a key too.
    then("SalesOrders", { ID: 9, "Customer@odata.bind": "Customers('C%24x')" }),
    // A parent reached through a single-valued navigation: its stored key was never in a URL.
    then("SalesOrders(1)/Customer/Orders", { ID: 9 }),
  ];
  for (const requests of refused) {
    assert.equal(run(jsonRef(...requests), { contentType: JSON_TYPE }), invalid(`batch part 2 (PATCH $1): ${notReferable("1")}`), requests[0]!.url);
  }
  // A bind's quoted key holding structure is refused before that, in the part that has it.
  const structured = then("SalesOrders", { ID: 9, "Customer@odata.bind": "Customers('C1''%29%24''%26%24expand%3DItems')" });
  assert.equal(
    run(jsonRef(...structured), { contentType: JSON_TYPE }),
    invalid("batch part 1 (POST SalesOrders): body URLs are forwarded as written: a quoted value in 'Customers('C1''%29%24''%26%24expand%3DItems')' may not hold '=', ',' or parentheses in 'Customer@odata.bind'"),
  );
  for (const requests of [then("Customers('C-1')/Orders", { ID: 9 }), then("SalesOrders", { ID: 9, "Customer@odata.bind": "Customers('C1')" })]) {
    assert.is(run(jsonRef(...requests), { contentType: JSON_TYPE }).kind, "access", requests[0]!.url);
  }
});

refs("a part URL may not start with the id of a request of the batch (CAP takes it for a reference, `$` or not)", () => {
  const requests = [
    { id: "Customers", method: "post", url: "Customers", body: { ID: "C9" } },
    { id: "n2", dependsOn: ["Customers"], method: "get", url: "Customers/$count?foo=$Customers" },
  ];
  assert.equal(
    run(jsonRef(...requests), { contentType: JSON_TYPE }),
    invalid("batch part 1 (POST Customers): its URL starts with 'Customers', the id of a request of this batch: a back end would take it for a reference"),
  );
  const group = [{ id: "1", atomicityGroup: "Products", method: "get", url: "Products?$top=1" }];
  assert.equal(
    run(jsonRef(...group), { contentType: JSON_TYPE }),
    invalid("batch part 1 (GET Products?$top=1): its URL starts with 'Products', the id of a request of this batch: a back end would take it for a reference"),
  );
  const multipart = batch(changeSet("cs", json("POST SalesOrders HTTP/1.1", `{"Note":"n"}`, { id: "SalesOrders" })));
  assert.equal(run(multipart), invalid("batch part 1 (POST SalesOrders): its URL starts with 'SalesOrders', the id of a request of this batch: a back end would take it for a reference"));
});

const refCases: [string, string, BatchAnalysis][] = [
  [
    "to an unknown Content-ID",
    batch(changeSet("cs", json("POST SalesOrders HTTP/1.1", "{}", { id: "1" }), json("POST $9/Items HTTP/1.1", "{}", { id: "2" }))),
    invalid("batch part 2 (POST $9/Items): $9 does not refer to a request of this batch"),
  ],
  [
    "to a part of another change set",
    batch(changeSet("a", json("POST SalesOrders HTTP/1.1", "{}", { id: "1" })), changeSet("b", json("POST $1/Items HTTP/1.1", "{}", { id: "2" }))),
    invalid("batch part 2 (POST $1/Items): $1 must refer to a preceding request in the same change set"),
  ],
  [
    "to a part outside any change set",
    batch(json("POST SalesOrders HTTP/1.1", "{}", { id: "1" }), json("POST $1/Items HTTP/1.1", "{}", { id: "2" })),
    invalid("batch part 2 (POST $1/Items): $1 must refer to a preceding request in the same change set"),
  ],
  [
    "to a following part",
    batch(changeSet("cs", json("POST $2/Items HTTP/1.1", "{}", { id: "1" }), json("POST SalesOrders HTTP/1.1", "{}", { id: "2" }))),
    invalid("batch part 1 (POST $2/Items): $2 must refer to a preceding request in the same change set"),
  ],
  [
    "to a part that yields no single entity",
    batch(changeSet("cs", http("POST SalesOrders(1)/Sales.Approve HTTP/1.1", { id: "1" }), json("POST $1/Items HTTP/1.1", "{}", { id: "2" }))),
    invalid("batch part 2 (POST $1/Items): $1 refers to a request that does not yield a single entity"),
  ],
  [
    "to a Content-ID used in two change sets",
    batch(
      changeSet("a", json("POST Customers HTTP/1.1", "{}", { id: "1" })),
      changeSet("b", json("POST SalesOrders HTTP/1.1", "{}", { id: "1" }), json("POST $1/Items HTTP/1.1", "{}", { id: "2" })),
    ),
    invalid("batch part 3 (POST $1/Items): $1 is ambiguous: Content-ID '1' is used more than once in the batch"),
  ],
  [
    "a Content-ID twice in one change set",
    batch(changeSet("cs", json("POST Customers HTTP/1.1", "{}", { id: "1" }), json("POST SalesOrders HTTP/1.1", "{}", { id: "1" }))),
    invalid("batch part 2 (POST SalesOrders): Content-ID '1' is used twice in the change set"),
  ],
  [
    "Content-IDs of the part and of its request disagree",
    batch(changeSet("cs", json("POST Customers HTTP/1.1", "{}", { id: "1", headers: ["Content-ID: 2"] }))),
    invalid("batch part 1 (POST Customers): Content-ID '1' of the part and '2' of its request disagree"),
  ],
  [
    "a Content-ID naming a system resource",
    batch(changeSet("cs", json("POST Customers HTTP/1.1", "{}", { id: "metadata" }))),
    invalid("batch part 1 (POST Customers): Content-ID 'metadata' is reserved: $metadata names a system resource"),
  ],
  [
    "a Content-ID that is no request-id",
    batch(changeSet("cs", json("POST Customers HTTP/1.1", "{}", { id: "<a@b>" }))),
    invalid("batch part 1 (POST Customers): Content-ID '<a@b>' must consist of letters, digits, '-', '.', '_' and '~'"),
  ],
];
for (const [name, body, expected] of refCases) {
  refs(`multipart: a reference ${name}`, () => assert.equal(run(body), expected));
}

const jsonRefCases: [string, string, BatchAnalysis][] = [
  [
    "without dependsOn",
    jsonRef({ id: "1", method: "post", url: "SalesOrders", body: {} }, { id: "2", method: "post", url: "$1/Items", body: {} }),
    invalid("batch part 2 (POST $1/Items): $1 needs '1' in dependsOn"),
  ],
  [
    "into an atomicity group without naming it or the request",
    jsonRef(
      { id: "1", atomicityGroup: "g1", method: "post", url: "SalesOrders", body: {} },
      { id: "x", method: "get", url: "Customers" },
      { id: "2", dependsOn: ["x"], method: "post", url: "$1/Items", body: {} },
    ),
    invalid("batch part 3 (POST $1/Items): $1 needs '1' or 'g1' in dependsOn"),
  ],
  [
    "to a later request",
    jsonRef({ id: "1", method: "post", url: "$2/Items", body: {} }, { id: "2", method: "post", url: "SalesOrders", body: {} }),
    invalid("batch part 1 (POST $2/Items): $2 must refer to a preceding request"),
  ],
  [
    "with dependsOn naming a later request",
    jsonRef({ id: "1", dependsOn: ["2"], method: "get", url: "Customers" }, { id: "2", method: "get", url: "Products" }),
    invalid("batch part 1 (GET Customers): dependsOn names '2', which is not a preceding request or atomicity group"),
  ],
  [
    "to a request that yields no single entity",
    jsonRef({ id: "1", method: "get", url: "SalesOrders" }, { id: "2", dependsOn: ["1"], method: "get", url: "$1/Items" }),
    invalid("batch part 2 (GET $1/Items): $1 refers to a request that does not yield a single entity"),
  ],
];
for (const [name, text, expected] of jsonRefCases) {
  refs(`JSON: a reference ${name}`, () => assert.equal(run(text, { contentType: JSON_TYPE }), expected));
}

refs.run();

// ---------------------------------------------------------------------------

const hidden = suite("batch: requests hidden in part bodies (back ends that parse a batch as HTTP requests)");

const hiddenCases: [string, string, BatchAnalysis][] = [
  [
    "regression: a GET part with a request in its body (CAP deleted EUR)",
    batch(http("GET Customers('C1') HTTP/1.1", { body: "DELETE /Categories(1) HTTP/1.1\r\n\r\n" })),
    invalid("batch part 1 (GET Customers('C1')): a GET request cannot have a body"),
  ],
  [
    "a DELETE part with a body",
    batch(http("DELETE Customers('C1') HTTP/1.1", { body: "x" })),
    invalid("batch part 1 (DELETE Customers('C1')): a DELETE request cannot have a body"),
  ],
  [
    "a HEAD part with a body",
    batch(http("HEAD Customers('C1') HTTP/1.1", { body: "{}" })),
    invalid("batch part 1 (HEAD Customers('C1')): a HEAD request cannot have a body"),
  ],
  [
    "a GET part whose body is only whitespace and a line break is read without it",
    batch(http("GET Customers HTTP/1.1", { body: " \r\n" })),
    { kind: "access", accesses: [{ entitySet: "Customers", operation: "list", reason: "part 1: resource path" }], parts: 1, partUrls: ["Customers"], body: Buffer.from(batch(http("GET Customers HTTP/1.1"))), contentType: MULTIPART },
  ],
  [
    "regression: a text/plain body with a blank line and a request after it (CAP deleted CHF)",
    batch(http("PUT SalesOrders(1)/Note HTTP/1.1", { headers: ["Content-Type: text/plain"], body: "x\r\n\r\nDELETE /Categories(1) HTTP/1.1" })),
    invalid("batch part 1 (PUT SalesOrders(1)/Note): a non-JSON body in a multipart batch cannot contain line breaks; send it as a request of its own"),
  ],
  [
    "a one-line body starting with 'Group ID' (where CAP cuts the part and hangs)",
    batch(http("PUT Customers('C1')/Name/$value HTTP/1.1", { headers: ["Content-Type: text/plain"], body: "Group ID" })),
    invalid("batch part 1 (PUT Customers('C1')/Name/$value): a non-JSON body in a multipart batch cannot start with 'Group ID'; send it as a request of its own"),
  ],
  [
    "a non-JSON body with a bare LF",
    batch(http("PUT SalesOrders(1)/Note HTTP/1.1", { headers: ["Content-Type: text/plain"], body: "a\nb" })),
    invalid("batch part 1 (PUT SalesOrders(1)/Note): a non-JSON body in a multipart batch cannot contain line breaks; send it as a request of its own"),
  ],
  [
    "a non-JSON body with a bare CR",
    batch(http("PUT SalesOrders(1)/Note HTTP/1.1", { headers: ["Content-Type: text/plain"], body: "a\rb" })),
    invalid("batch part 1 (PUT SalesOrders(1)/Note): a non-JSON body in a multipart batch cannot contain line breaks; send it as a request of its own"),
  ],
  [
    "a non-JSON body with U+2028 (a line terminator to JavaScript)",
    batch(http("PUT SalesOrders(1)/Note HTTP/1.1", { headers: ["Content-Type: text/plain"], body: "a\u2028--x--" })),
    invalid("batch part 1 (PUT SalesOrders(1)/Note): a non-JSON body in a multipart batch cannot contain line breaks; send it as a request of its own"),
  ],
  [
    "a body without Content-Type (not JSON) with a line break",
    batch(http("PUT SalesOrders(1)/Note HTTP/1.1", { body: "{\n}" })),
    invalid("batch part 1 (PUT SalesOrders(1)/Note): a non-JSON body in a multipart batch cannot contain line breaks; send it as a request of its own"),
  ],
  [
    "binary media with line breaks",
    batch(http("PUT Products('P1')/$value HTTP/1.1", { headers: ["Content-Type: image/png"], body: "\x89PNG\r\n\x1a\n" })),
    invalid("batch part 1 (PUT Products('P1')/$value): a non-JSON body in a multipart batch cannot contain line breaks; send it as a request of its own"),
  ],
  [
    "a non-JSON body starting with '--' (a boundary line to CAP and the V2 adapter)",
    batch(http("PUT SalesOrders(1)/Note HTTP/1.1", { headers: ["Content-Type: text/plain"], body: "--zz" })),
    invalid("batch part 1 (PUT SalesOrders(1)/Note): a non-JSON body in a multipart batch cannot start with '--'; send it as a request of its own"),
  ],
  [
    "a non-JSON body ending in 'content-length: <digits>' (CAP deletes it with the line break after it)",
    batch(http("PUT SalesOrders(1)/Note HTTP/1.1", { headers: ["Content-Type: text/plain"], body: "x Content-Length: 5" })),
    invalid("batch part 1 (PUT SalesOrders(1)/Note): a non-JSON body in a multipart batch cannot end in 'content-length: <digits>'; send it as a request of its own"),
  ],
];
for (const [name, body, expected] of hiddenCases) {
  hidden(name, () => assert.equal(run(body), expected));
}

hidden("JSON part bodies are forwarded compacted from their own text: numbers as written, strings untouched, U+2028/U+2029 escaped", () => {
  const note = `a  b\\r\\n \\"q\\" {}[],: \u00e9 日本`;
  const pretty = `{\r\n  "Note" :\t"${note}",\n  "Amount": 12345678901234567890.10,\n  "Tags": [ 1 , -2e+3 , true , null ],\n  "ShipTo": { "City": "x\u2028y\u2029z" }\n}\r\n`;
  const compact = `{"Note":"${note}","Amount":12345678901234567890.10,"Tags":[1,-2e+3,true,null],"ShipTo":{"City":"x\\u2028y\\u2029z"}}`;
  const length = Buffer.byteLength(compact);
  const body = batch(
    json("PATCH SalesOrders(1) HTTP/1.1", pretty, { headers: [`Content-Length: ${Buffer.byteLength(pretty)}`] }),
    json(`POST ${ROOT}/SalesOrders HTTP/1.1`, pretty),
  );
  const forwarded = batch(json("PATCH SalesOrders(1) HTTP/1.1", compact, { headers: [`Content-Length: ${length}`] }), json("POST SalesOrders HTTP/1.1", compact));
  expectAccess(run(body), 2, forwarded, [
    acc("SalesOrders", "update", "part 1: resource path"),
    acc("SalesOrders", "create", "part 1: resource path (upsert)"),
    acc("SalesOrders", "get", "part 1: the answer"),
  ]);
  assert.not.ok(/[\r\n]|\u00e2\u0080[\u00a8\u00a9]/.test(forwarded.split("\r\n\r\n")[2].split("\r\n")[0]), "no line break in the compacted body");
});

hidden("regression: the JSON batch format is not affected; a non-JSON body there may hold line breaks (a JSON string)", () => {
  const request = { id: "1", method: "put", url: "SalesOrders(1)/Note", headers: { "content-type": "text/plain" }, body: "x\r\n\r\nDELETE /Categories(1) HTTP/1.1" };
  expectAccess(run(jsonRef(request), { contentType: JSON_TYPE }), 1, writtenJson(request), [
    acc("SalesOrders", "update", "part 1: resource path"),
    acc("SalesOrders", "get", "part 1: the answer"),
  ], JSON_TYPE);
  assert.equal(
    run(jsonRef({ id: "1", method: "delete", url: "Customers('C1')", headers: { "content-type": "text/plain" }, body: "x" }), { contentType: JSON_TYPE }),
    invalid("batch part 1 (DELETE Customers('C1')): a DELETE request cannot have a body"),
  );
});

hidden.run();

// ---------------------------------------------------------------------------

const reading = suite("batch: headers, charsets and boundaries a back end could read differently");

const listCustomers = http("GET Customers HTTP/1.1");

reading("regression: a header mentioning content-length is refused (CAP deleted 'content-length: 1' CRLF and with it the If-Match below: an upsert)", () => {
  const put = (headers: string[]) => batch(changeSet("cs", json("PUT SalesOrders(1) HTTP/1.1", `{"Note":"x"}`, { headers })));
  assert.equal(
    run(put(["X-A: content-length: 1", `If-Match: W/"1"`])),
    invalid("batch part 1 (PUT SalesOrders(1)): header 'X-A' cannot mention content-length: only the Content-Length header may"),
  );
  assert.equal(
    run(put(["X-Content-Length: 5"])),
    invalid("batch part 1 (PUT SalesOrders(1)): header 'X-Content-Length' cannot mention content-length: only the Content-Length header may"),
  );
  assert.equal(
    run(batch("Content-Type: application/http\r\nX-Note: CONTENT-LENGTH: 3\r\n\r\nGET Customers HTTP/1.1\r\n")),
    invalid("batch part 1: header 'X-Note' cannot mention content-length: only the Content-Length header may"),
  );
});

reading("lines starting with '--' are delimiter lines only (CAP and the V2 adapter read any as a boundary)", () => {
  assert.equal(
    run(batch(http("POST SalesOrders HTTP/1.1", { headers: ["--x:y", "Content-Type: application/json"], body: "{}" }))),
    invalid("batch part 1 (POST SalesOrders): header line '--x:y' starts with '--', as only delimiter lines may"),
  );
  assert.equal(run(batch("--x: 1\r\nContent-Type: application/http\r\n\r\nGET Customers HTTP/1.1\r\n")), invalid("batch part 1: header line '--x: 1' starts with '--', as only delimiter lines may"));
  assert.equal(run(batch(http("--X Customers HTTP/1.1"))), invalid("batch part 1: the request line starts with '--', as only delimiter lines may"));
});

reading("non-ASCII characters in header values are refused (U+2028 in UTF-8 starts a line for CAP)", () => {
  assert.equal(
    run(batch(http("GET Customers HTTP/1.1", { headers: ["X-A: a\u2028--zz--"] }))),
    invalid("batch part 1 (GET Customers): non-ASCII character in header 'X-A'"),
  );
  assert.equal(run(batch(http("GET Customers HTTP/1.1", { headers: ["X-A: Zoë"] }))), invalid("batch part 1 (GET Customers): non-ASCII character in header 'X-A'"));
});

const charsetCases: [string, string, string, BatchAnalysis][] = [
  ["the multipart batch Content-Type: utf-7", `${MULTIPART}; charset=utf-7`, batch(listCustomers), invalid("the batch Content-Type names charset 'utf-7'; only UTF-8 is supported")],
  ["the multipart batch Content-Type: quoted UTF-16", `${MULTIPART}; charset="UTF-16"`, batch(listCustomers), invalid("the batch Content-Type names charset 'UTF-16'; only UTF-8 is supported")],
  [
    "a change set Content-Type",
    MULTIPART,
    batch(`Content-Type: multipart/mixed; charset=utf-7; boundary=cs\r\n\r\n${multipart("cs", json("POST Customers HTTP/1.1", "{}"))}`),
    invalid("batch part 1: change set: its Content-Type names charset 'utf-7'; only UTF-8 is supported"),
  ],
  [
    "regression: a part's JSON Content-Type (UTF-7 turned a note into a deep insert)",
    MULTIPART,
    batch(http("PATCH Customers('C1') HTTP/1.1", { headers: ["Content-Type: application/json;charset=utf-7"], body: `{"Name":"a+ACI-,+ACI-Orders+ACI-:+AFsAXQ-"}` })),
    invalid("batch part 1 (PATCH Customers('C1')): the request's Content-Type names charset 'utf-7'; only UTF-8 is supported"),
  ],
  [
    "a JSON batch part's Content-Type",
    JSON_TYPE,
    jsonRef({ id: "1", method: "patch", url: "Customers('C1')", headers: { "content-type": "application/json; charset=utf-7" }, body: { Name: "a" } }),
    invalid("batch part 1 (PATCH Customers('C1')): the request's Content-Type names charset 'utf-7'; only UTF-8 is supported"),
  ],
];
for (const [name, contentType, body, expected] of charsetCases) {
  reading(`charset: ${name}`, () => assert.equal(run(body, { contentType }), expected));
}

reading("charset: utf8 (an alias CAP and clients use) passes", () => {
  const body = batch(http("PATCH Customers('C1') HTTP/1.1", { headers: ["Content-Type: application/json;charset=utf8"], body: `{"Name":"x"}` }));
  expectAccess(run(body, { contentType: `${MULTIPART}; charset=utf8` }), 1, body, [
    acc("Customers", "update", "part 1: resource path"),
    acc("Customers", "create", "part 1: resource path (upsert)"),
    acc("Customers", "get", "part 1: the answer"),
  ]);
});

reading("charset: absent, utf-8 and \"UTF-8\" pass everywhere", () => {
  const body = batch(
    changeSet("cs", http("PATCH Customers('C1') HTTP/1.1", { headers: [`Content-Type: application/json; charset="UTF-8"`], body: `{"Name":"Zoë"}` })),
    http("PATCH Customers('C2') HTTP/1.1", { headers: ["Content-Type: application/json;charset=utf-8"], body: `{"Name":"x"}` }),
  );
  const contentType = `${MULTIPART}; charset=UTF-8`;
  expectAccess(run(body, { contentType }), 2, body, [
    acc("Customers", "update", "part 1: resource path"),
    acc("Customers", "create", "part 1: resource path (upsert)"),
    acc("Customers", "get", "part 1: the answer"),
  ]);
});

reading("regression: boundary ambiguity: the forwarded Content-Types name the boundary erplink split at, and nothing else", () => {
  const inner = json("POST Customers HTTP/1.1", "{}");
  const body = batch(
    `Content-Type: multipart/mixed; xboundary=zz; x="boundary=zz"; boundary=cs\r\n\r\n${multipart("cs", inner)}`,
    `Content-Type: application/http; x="boundary=zz"\r\n\r\nGET Customers HTTP/1.1\r\n`,
  );
  const forwarded = batch(changeSet("cs", inner), "Content-Type: application/http\r\n\r\nGET Customers HTTP/1.1\r\n");
  const accesses = [acc("Customers", "create", "part 1: resource path"), acc("Customers", "list", "part 2: resource path")];
  for (const contentType of [`multipart/mixed; xboundary=zz; boundary=${BOUNDARY}`, `multipart/mixed; x="boundary=zz"; boundary=${BOUNDARY}`, `multipart/mixed;boundary="${BOUNDARY}"`]) {
    expectAccess(run(body, { contentType }), 2, forwarded, accesses, MULTIPART);
  }
});

const boundaryCases: [string, BatchAnalysis][] = [
  [`multipart/mixed; boundary="a;b"`, invalid(`the batch Content-Type has a malformed boundary 'a;b'`)],
  [`multipart/mixed; boundary=a*b`, invalid(`the batch Content-Type has a malformed boundary 'a*b'`)],
  [`multipart/mixed; boundary="a\\"b"`, invalid(`the batch Content-Type has a malformed boundary 'a"b'`)],
  [`multipart/mixed; boundary="ab "`, invalid(`the batch Content-Type has a malformed boundary 'ab '`)],
  [`multipart/mixed; boundary=""`, invalid(`the batch Content-Type has a malformed boundary ''`)],
];
for (const [contentType, expected] of boundaryCases) {
  reading(`a boundary outside RFC 2046 bchars: ${contentType}`, () => assert.equal(run(batch(listCustomers), { contentType }), expected));
}

reading("regression: a Content-ID given only in the request headers is also written to the MIME headers (CAP read $r1 as its own first request)", () => {
  const body = batch(
    json("POST Categories HTTP/1.1", `{"ID":9}`),
    changeSet("cs", json("POST Customers HTTP/1.1", `{"ID":"C9"}`, { headers: ["Content-ID: r1"] }), http("DELETE $r1 HTTP/1.1")),
  );
  const forwarded = batch(
    json("POST Categories HTTP/1.1", `{"ID":9}`),
    changeSet(
      "cs",
      crlf("Content-Type: application/http", "Content-Transfer-Encoding: binary", "Content-ID: r1", "", "POST Customers HTTP/1.1", "Content-Type: application/json", "Content-ID: r1", "", `{"ID":"C9"}`),
      http("DELETE $r1 HTTP/1.1"),
    ),
  );
  expectAccess(run(body), 3, forwarded, [
    acc("Categories", "create", "part 1: resource path"),
    acc("Customers", "create", "part 2: resource path"),
    acc("Customers", "delete", "part 3: resource path"),
  ]);
});

reading("on a V2 service a Content-ID stays where the client put it (V2 back ends read it from the request's headers; a copy makes the V2 adapter see it twice)", () => {
  const body = batch(
    changeSet(
      "cs",
      json("POST SalesOrderSet HTTP/1.1", `{"SalesOrderID":"9"}`, { headers: ["Content-ID: id-1700000000000-12"] }),
      json("POST $id-1700000000000-12/ToItems HTTP/1.1", `{"ItemNo":"1"}`),
    ),
  );
  const r = run(body, { model: V2 });
  assert.is(r.kind, "access", r.kind === "access" ? "" : r.message);
  if (r.kind === "access") assert.is(r.body.toString("utf8"), body);
});

reading("regression: JSON batch header names are forwarded in lower case (CAP ignored 'If-Match': a key without create upserted)", () => {
  const text = `{"requests":[
  {"id":"1","method":"put","url":"SalesOrders(1)","headers":{ "Content-Type" : "application/json", "If-Match":"*" },"body":{"Note":"a"}},
  {"id":"2","method":"put","url":"SalesOrders(2)","headers":{"\\u0041ccept":"application/json"},"body":{"Note":"b"}},
  {"id":"3","method":"get","url":"Customers","headers":{"accept":"application/json"}}
]}`;
  const expected =
    `{"requests":[{"id":"1","method":"PUT","url":"SalesOrders(1)","headers":{"content-type":"application/json","if-match":"*"},"body":{"Note":"a"}},` +
    `{"id":"2","method":"PUT","url":"SalesOrders(2)","headers":{"accept":"application/json","if-match":"*"},"body":{"Note":"b"}},` +
    `{"id":"3","method":"GET","url":"Customers","headers":{"accept":"application/json"}}]}`;
  expectAccess(
    run(text, { contentType: JSON_TYPE, may: (_set, op) => op !== "create" }),
    3,
    expected,
    [
    acc("SalesOrders", "update", "part 1: resource path"),
    acc("SalesOrders", "get", "part 1: the answer"),
    acc("Customers", "list", "part 3: resource path"),
  ],
    JSON_TYPE,
  );
});

// A blank If-Match is no precondition (the analyzer adds If-Match: * where the key may not create), so the
// part's own blank line must not be forwarded beside the added one: the back end would get two If-Match headers
// ('' and '*'; in JSON a duplicate member), and one that keeps the first reads no precondition and upserts.
// The top level replaces the header (forward.ts); unguarded, both would be forwarded.
reading("a part's blank If-Match is replaced by If-Match: * where the key may not create, never forwarded beside it", () => {
  const body = batch(
    json("PUT SalesOrders(1) HTTP/1.1", `{"Note":"a"}`, { headers: ["If-Match:"] }),
    json("PUT SalesOrders(2) HTTP/1.1", `{"Note":"b"}`, { headers: ["if-match:   "] }),
  );
  expectAccess(
    run(body, { may: (_set, op) => op !== "create" }),
    2,
    batch(json("PUT SalesOrders(1) HTTP/1.1", `{"Note":"a"}`, { headers: ["If-Match: *"] }), json("PUT SalesOrders(2) HTTP/1.1", `{"Note":"b"}`, { headers: ["If-Match: *"] })),
    [acc("SalesOrders", "update", "part 1: resource path"), acc("SalesOrders", "get", "part 1: the answer")],
  );
  // The answer is authorized whatever the part's own Prefer says (back ends read it differently), and the Prefer passes as written.
  const text = jsonRef({ id: "1", method: "PUT", url: "SalesOrders(1)", headers: { "If-Match": " ", Prefer: "return=minimal" }, body: { Note: "a" } });
  expectAccess(
    run(text, { contentType: JSON_TYPE, may: (_set, op) => op !== "create" }),
    1,
    `{"requests":[{"id":"1","method":"PUT","url":"SalesOrders(1)","headers":{"prefer":"return=minimal","if-match":"*"},"body":{"Note":"a"}}]}`,
    [acc("SalesOrders", "update", "part 1: resource path"), acc("SalesOrders", "get", "part 1: the answer")],
    JSON_TYPE,
  );
});

reading("a part's own Prefer cannot spare a key that may not read the answer: it is replaced by return=minimal (SAP CAP honours the first return=)", () => {
  const text = jsonRef({ id: "1", method: "PATCH", url: "SalesOrders(1)", headers: { Prefer: "return=representation,return=minimal" }, body: { Note: "a" } });
  expectAccess(
    run(text, { contentType: JSON_TYPE, may: (_set, op) => op !== "get" }),
    1,
    `{"requests":[{"id":"1","method":"PATCH","url":"SalesOrders(1)","headers":{"prefer":"return=minimal"},"body":{"Note":"a"}}]}`,
    [acc("SalesOrders", "update", "part 1: resource path"), acc("SalesOrders", "create", "part 1: resource path (upsert)")],
    JSON_TYPE,
  );
  // OData V2 has no return=minimal: in a V2 batch the key must be allowed the answer.
  const v2 = batch(changeSet("cs", json("MERGE SalesOrderSet('1') HTTP/1.1", `{"Note":"a"}`, { headers: ["Prefer: return=minimal"] })));
  const answered = run(v2, { model: V2, may: (_set, op) => op !== "get" });
  assert.equal(
    answered.kind === "access" ? answered.accesses : answered,
    [
      acc("SalesOrderSet", "update", "part 1: resource path"),
      acc("SalesOrderSet", "get", "part 1: the answer (OData V2 answers an update with the entity)"),
    ],
  );
});

reading("a POST part whose body is one empty line (the SAP Cloud SDK's function import in a change set) has no body, and none is forwarded", () => {
  const part = (body: string) =>
    crlf("Content-Type: application/http", "Content-Transfer-Encoding: binary", "", "POST ReleaseOrder?SalesOrderID='1' HTTP/1.1", "Content-Type: application/json", "", body);
  const forwarded = batch(changeSet("cs_1", part("")).replace("SalesOrderID='1'", "SalesOrderID=%271%27"));
  const accesses = [acc("ReleaseOrder", "invoke", "part 1: action ReleaseOrder"), acc("SalesOrderSet", "get", "part 1: result of ReleaseOrder")];
  for (const blank of ["\r\n", "\r\n\r\n", " \t"]) expectAccess(run(batch(changeSet("cs_1", part(blank))), { model: V2 }), 1, forwarded, accesses);
  // Anything else in the body of a JSON part is still read as JSON.
  assert.equal(run(batch(changeSet("cs_1", part("\r\nx"))), { model: V2 }).kind, "invalid");
});

reading("clients that copy Authorization and Cookie into every part keep their batch: both are stripped, never forwarded", () => {
  const creds = ["Authorization: Bearer erpl_client_secret", "Proxy-Authorization: Basic eA==", "Cookie: SAP_SESSIONID=1"];
  const body = batch(http("GET Customers HTTP/1.1", { headers: ["Accept: application/json", ...creds] }));
  expectAccess(run(body), 1, batch(http("GET Customers HTTP/1.1", { headers: ["Accept: application/json"] })), [acc("Customers", "list", "part 1: resource path")]);
  const requests = [{ id: "1", method: "get", url: "Customers", headers: { Authorization: "Bearer erpl_x", Cookie: "a=1", Accept: "application/json" } }];
  expectAccess(
    run(jsonRef(...requests), { contentType: JSON_TYPE }),
    1,
    writtenJson({ ...requests[0], headers: { accept: "application/json" } }),
    [acc("Customers", "list", "part 1: resource path")],
    JSON_TYPE,
  );
});

// Part headers follow the same allowlist as the top level: forwarding every header but credentials and tunnels
// would let `X-Original-URL`, `X-Forwarded-Host`, `sap-language` or any vendor header reach the back end inside a part.
const DROPPED_IN_PARTS = [
  "X-Original-URL: /sap/opu/odata/sap/OTHER/Secrets",
  "X-Rewrite-URL: /Secrets",
  "X-Forwarded-Host: evil.example",
  "X-Forwarded-Path: /odata/prod/OTHER",
  "sap-language: DE",
  "X-Custom: 1",
  "Host: erp.internal",
  "User-Agent: client/1.0",
  "Accept-Encoding: gzip",
  "Cache-Control: no-cache",
  "If-Range: W/\"1\"",
  // A batch is repeated as a whole, by the batch request's own repeatability headers.
  "Repeatability-Request-ID: r-1",
  "Repeatability-Client-ID: c-1",
  "Content-Transfer-Encoding: binary",
];

reading("multipart part headers follow the data path's allowlist: others are dropped from requests and MIME headers alike; allowed ones pass as written", () => {
  const allowedGet = ["Accept: application/json", "Prefer: odata.maxpagesize=10", "OData-Version: 4.0", "Accept-Language: de", `If-None-Match: W/"1"`, "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"];
  const allowedPatch = ["Content-Type: application/json", `If-Match: W/"7"`, "Prefer: return=minimal", "Content-ID: 1", "Content-Length: 12"];
  const mime = (...lines: string[]) => ["Content-Type: application/http", "Content-Transfer-Encoding: binary", ...lines];
  const body = batch(
    crlf(...mime("X-Original-URL: /odata/prod/SALES/Products", "X-Custom: m"), "", "GET Customers HTTP/1.1", ...interleave(allowedGet, DROPPED_IN_PARTS), "", ""),
    crlf(
      "Content-Type: multipart/mixed; boundary=cs",
      "X-Custom: c",
      "",
      multipart("cs", crlf(...mime("Content-ID: 1", "X-Forwarded-Host: evil.example"), "", "PATCH SalesOrders(7) HTTP/1.1", ...interleave(allowedPatch, DROPPED_IN_PARTS), "", `{"Note":"x"}`)),
    ),
  );
  const forwarded = batch(
    crlf(...mime(), "", "GET Customers HTTP/1.1", ...allowedGet, "", ""),
    crlf("Content-Type: multipart/mixed; boundary=cs", "", multipart("cs", crlf(...mime("Content-ID: 1"), "", "PATCH SalesOrders(7) HTTP/1.1", ...allowedPatch, "", `{"Note":"x"}`))),
  );
  expectAccess(run(body), 2, forwarded, [acc("Customers", "list", "part 1: resource path"), acc("SalesOrders", "update", "part 2: resource path"), acc("SalesOrders", "get", "part 2: the answer")]);
});

reading("JSON part headers follow the same allowlist, lower-cased; Content-ID and Content-Length, multipart framing, are dropped there", () => {
  const dropped = Object.fromEntries([...DROPPED_IN_PARTS, "Content-ID: 1", "Content-Length: 12"].map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 2)]));
  const allowed = { Accept: "application/json", "Content-Type": "application/json", "If-Match": `W/"7"`, Prefer: "return=minimal", "OData-Version": "4.01" };
  const requests = [{ id: "1", method: "patch", url: "SalesOrders(7)", headers: { ...dropped, ...allowed }, body: { Note: "x" } }];
  expectAccess(
    run(jsonRef(...requests), { contentType: JSON_TYPE }),
    1,
    writtenJson({ ...requests[0], headers: allowed }),
    [acc("SalesOrders", "update", "part 1: resource path"), acc("SalesOrders", "get", "part 1: the answer")],
    JSON_TYPE,
  );
});

// OData 4.01 Part 1 §11.7.7.1: an individual request MUST NOT include these; refused, not dropped, as documented.
for (const line of ["Expect: 100-continue", "From: ops@example.com", "Max-Forwards: 1", "Range: bytes=0-9", "TE: trailers"]) {
  const name = line.slice(0, line.indexOf(":"));
  reading(`a part with ${name} is still refused (multipart and JSON), not silently dropped`, () => {
    assert.equal(run(batch(http("GET Customers HTTP/1.1", { headers: [line] }))), invalid(`batch part 1 (GET Customers): header '${name}' is not allowed in a batch part`));
    const requests = [{ id: "1", method: "get", url: "Customers", headers: { [name]: line.slice(name.length + 2) } }];
    assert.equal(run(jsonRef(...requests), { contentType: JSON_TYPE }), invalid(`batch part 1 (GET Customers): header '${name}' is not allowed in a batch part`));
  });
}

reading("part URLs are forwarded in canonical form: data in literals encoded, option names canonical, values re-encoded", () => {
  const body = batch(http("GET Customers('a%20b;c')?%24FILTER=Name%20eq%20'x'&$select=Name HTTP/1.1"), http("GET Products?expand=Category HTTP/1.1"));
  const forwarded = batch(http("GET Customers('a%20b%3Bc')?$filter=Name%20eq%20%27x%27&$select=Name HTTP/1.1"), http("GET Products?$expand=Category HTTP/1.1"));
  expectAccess(run(body), 2, forwarded, [
    acc("Customers", "get", "part 1: resource path"),
    acc("Products", "list", "part 2: resource path"),
    acc("Categories", "list", "part 2: $expand Category"),
  ]);
});

reading("part URLs that cannot be written unambiguously are refused: a backslash or '#' outside a literal, a name that is not a plain token", () => {
  assert.equal(
    run(batch(http("GET Customers%5CProducts HTTP/1.1"))),
    invalid("batch part 1 (GET Customers%5CProducts): character '\\' is not allowed in path segment 'Customers\\Products' outside a quoted literal"),
  );
  assert.equal(run(batch(http("GET Customers%5C..%5CProducts HTTP/1.1"))), denied("batch part 1 (GET Customers%5C..%5CProducts): URL leaves the service root"));
  assert.equal(
    run(batch(http("GET Customers('x')%23/Orders HTTP/1.1"))),
    invalid("batch part 1 (GET Customers('x')%23/Orders): character '#' is not allowed in path segment 'Customers('x')#' outside a quoted literal"),
  );
  assert.equal(
    run(batch(http("GET Customers?%20$expand=Orders HTTP/1.1"))),
    invalid("batch part 1 (GET Customers?%20$expand=Orders): query option name ' $expand' is not a plain token (letters, digits, '_', '.', '-', after an optional '$' or '@')"),
  );
  assert.equal(
    run(jsonRef({ id: "1", method: "get", url: "Customers?$expand=Orders&%20$expand=Orders" }), { contentType: JSON_TYPE }),
    invalid("batch part 1 (GET Customers?$expand=Orders&%20$expand=Orders): query option name ' $expand' is not a plain token (letters, digits, '_', '.', '-', after an optional '$' or '@')"),
  );
});

reading.run();

// ---------------------------------------------------------------------------

const bodyRefs = suite("batch: $<Content-ID> references in part bodies");

bodyRefs("multipart: a bind to $1/Customer walks the referenced part's entity path", () => {
  const body = batch(
    changeSet(
      "cs",
      json("POST SalesOrders HTTP/1.1", `{"Note":"n"}`, { id: "1" }),
      json("POST SalesOrders HTTP/1.1", `{"Customer@odata.bind":"$1/Customer"}`, { id: "2" }),
    ),
  );
  expectAccess(run(body), 2, body, [
    acc("SalesOrders", "create", "part 1: resource path"),
    acc("Customers", "get", "part 2: bind Customer"),
    acc("Customers", "list", "part 2: bind Customer: navigation 'Customer' (a back end may scan the set for it)"),
    acc("SalesOrders", "get", "part 2: bind Customer"),
  ]);
});

bodyRefs("JSON: a bind to $1 through dependsOn; an absolute $1 goes the same way", () => {
  const requests = [
    { id: "1", method: "post", url: "SalesOrders", body: { Note: "n" } },
    { id: "2", dependsOn: ["1"], method: "post", url: "SalesOrders", body: { "Customer@odata.bind": `https://h${ROOT}/$1/Customer` } },
  ];
  expectAccess(
    run(jsonRef(...requests), { contentType: JSON_TYPE }),
    2,
    writtenJson(...requests),
    [acc("SalesOrders", "create", "part 1: resource path"), acc("Customers", "get", "part 2: bind Customer"), acc("Customers", "list", "part 2: bind Customer: navigation 'Customer' (a back end may scan the set for it)"), acc("SalesOrders", "get", "part 2: bind Customer")],
    JSON_TYPE,
  );
});

const bodyRefCases: [string, string, string, BatchAnalysis][] = [
  [
    "multipart: to an unknown Content-ID",
    MULTIPART,
    batch(changeSet("cs", json("POST SalesOrders HTTP/1.1", "{}", { id: "1" }), json("POST SalesOrders HTTP/1.1", `{"Customer@odata.bind":"$nope/Orders(5)/Customer"}`))),
    denied("batch part 2 (POST SalesOrders): '$nope/Orders(5)/Customer' in 'Customer@odata.bind' does not refer to an earlier request of this batch"),
  ],
  [
    "multipart: to a part of another change set",
    MULTIPART,
    batch(changeSet("a", json("POST Customers HTTP/1.1", `{"ID":"C9"}`, { id: "1" })), changeSet("b", json("POST SalesOrders HTTP/1.1", `{"Customer@odata.bind":"$1"}`))),
    denied("batch part 2 (POST SalesOrders): '$1' in 'Customer@odata.bind' does not refer to an earlier request of this batch"),
  ],
  [
    "multipart: to a later part",
    MULTIPART,
    batch(changeSet("cs", json("POST SalesOrders HTTP/1.1", `{"Customer@odata.bind":"$2"}`, { id: "1" }), json("POST Customers HTTP/1.1", `{"ID":"C9"}`, { id: "2" }))),
    denied("batch part 1 (POST SalesOrders): '$2' in 'Customer@odata.bind' does not refer to an earlier request of this batch"),
  ],
  [
    // A back end that decodes the URL before parsing it reads host '..' and path /Products('P1') (forwarding fuzzer).
    "multipart: by an absolute URL with encoded delimiters in its authority",
    MULTIPART,
    batch(json("POST SalesOrders HTTP/1.1", `{"Customer@odata.bind":"http://..%5CProducts('P1')%23h${ROOT}/Customers('C1')"}`)),
    denied("batch part 1 (POST SalesOrders): 'http://..%5CProducts('P1')%23h/odata/prod/SALES/Customers...' in 'Customer@odata.bind' leaves the service root"),
  ],
  [
    "multipart: to a system resource",
    MULTIPART,
    batch(json("POST SalesOrders HTTP/1.1", `{"Customer@odata.bind":"$metadata"}`)),
    denied("batch part 1 (POST SalesOrders): '$metadata' in 'Customer@odata.bind' does not refer to an earlier request of this batch"),
  ],
  [
    "JSON: without dependsOn",
    JSON_TYPE,
    jsonRef({ id: "1", method: "post", url: "Customers", body: { ID: "C9" } }, { id: "2", method: "post", url: "SalesOrders", body: { "Customer@odata.bind": "$1" } }),
    denied("batch part 2 (POST SalesOrders): '$1' in 'Customer@odata.bind' does not refer to an earlier request of this batch"),
  ],
];
for (const [name, contentType, body, expected] of bodyRefCases) {
  bodyRefs(`a bind ${name} is denied`, () => assert.equal(run(body, { contentType }), expected));
}

bodyRefs.run();

// ---------------------------------------------------------------------------

const root = suite("batch: URLs leaving the service root");

const leaving: [string, BatchAnalysis][] = [
  ["/odata/prod/OTHER/Customers", denied("batch part 1 (GET /odata/prod/OTHER/Customers): URL leaves the service root")],
  ["/odata/prod/SALESX/Customers", denied("batch part 1 (GET /odata/prod/SALESX/Customers): URL leaves the service root")],
  [`${ROOT}/../OTHER/Customers`, denied(`batch part 1 (GET ${ROOT}/../OTHER/Customers): URL leaves the service root`)],
  ["../OTHER/Customers", denied("batch part 1 (GET ../OTHER/Customers): URL leaves the service root")],
  ["Customers/%2E%2E/%2e%2e/OTHER", denied("batch part 1 (GET Customers/%2E%2E/%2e%2e/OTHER): URL leaves the service root")],
  ["Customers%2F..%2FOTHER", denied("batch part 1 (GET Customers%2F..%2FOTHER): URL leaves the service root")],
  ["./Customers", denied("batch part 1 (GET ./Customers): URL leaves the service root")],
  ["https://evil.example/Customers", denied("batch part 1 (GET https://evil.example/Customers): URL leaves the service root")],
  [`ftp://h.example${ROOT}/Customers`, denied(`batch part 1 (GET ftp://h.example${ROOT}/Customers): URL leaves the service root`)],
  [`//evil.example${ROOT}/Customers`, denied(`batch part 1 (GET //evil.example${ROOT}/Customers): URL leaves the service root`)],
  ["urn:x:Customers", denied("batch part 1 (GET urn:x:Customers): URL leaves the service root")],
  ["?$top=1", denied("batch part 1 (GET ?$top=1): URL leaves the service root: it addresses no resource below it")],
  [ROOT, denied(`batch part 1 (GET ${ROOT}): the service document cannot be requested in a batch`)],
  [`https://h${ROOT}/?x=1`, denied(`batch part 1 (GET https://h${ROOT}/?x=1): the service document cannot be requested in a batch`)],
  ["Customers#top", invalid("batch part 1 (GET Customers#top): the URL has a fragment")],
  ["Customers\\..\\x", invalid("batch part 1 (GET Customers\\..\\x): the URL contains a backslash")],
];
for (const [url, expected] of leaving) {
  root(`multipart: GET ${url}`, () => assert.equal(run(batch(http(`GET ${url} HTTP/1.1`))), expected));
}

root("an absolute path that is not an erplink path is relative to the service root (the SAP Cloud SDK writes them so); forwarded relative", () => {
  const body = batch(http("GET /Customers('C1')?$select=Name HTTP/1.1"), changeSet("cs", json("POST /SalesOrders HTTP/1.1", `{"Note":"n"}`, { id: "1" })));
  const forwarded = batch(http("GET Customers('C1')?$select=Name HTTP/1.1"), changeSet("cs", json("POST SalesOrders HTTP/1.1", `{"Note":"n"}`, { id: "1" })));
  expectAccess(run(body), 2, forwarded, [acc("Customers", "get", "part 1: resource path"), acc("SalesOrders", "create", "part 2: resource path")]);
  const text = jsonRef({ id: "1", method: "get", url: "/Customers('C1')" });
  expectAccess(run(text, { contentType: JSON_TYPE }), 1, writtenJson({ id: "1", method: "get", url: "Customers('C1')" }), [acc("Customers", "get", "part 1: resource path")], JSON_TYPE);
  // Not in bodies: a bind to an absolute path outside the root is denied.
  const bind = run(batch(json("POST SalesOrders HTTP/1.1", `{"Customer@odata.bind":"/Customers('C1')"}`)));
  assert.is(bind.kind, "denied");
});

root("JSON: an absolute path outside the root, naming the part", () => {
  const text = jsonRef({ id: "1", method: "get", url: "Customers" }, { id: "2", method: "get", url: "/odata/prod/OTHER/Customers" });
  assert.equal(run(text, { contentType: JSON_TYPE }), denied("batch part 2 (GET /odata/prod/OTHER/Customers): URL leaves the service root"));
});

root("an absolute URL in a part body (bind) goes through the same resolution", () => {
  const inside = batch(json("POST SalesOrders HTTP/1.1", `{"Customer@odata.bind":"https://h${ROOT}/Customers('C1')"}`));
  expectAccess(run(inside), 1, inside, [acc("SalesOrders", "create", "part 1: resource path"), acc("Customers", "get", "part 1: bind Customer")]);
  const outside = run(batch(json("POST SalesOrders HTTP/1.1", `{"Customer@odata.bind":"/odata/prod/OTHER/Customers('C1')"}`)));
  assert.is(outside.kind, "denied");
  assert.ok(outside.kind === "denied" && outside.message.startsWith("batch part 1 (POST SalesOrders): "), outside.kind === "denied" ? outside.message : "");
});

root.run();

// ---------------------------------------------------------------------------

const deny = suite("batch: denied parts");

deny("a nested $batch is denied, however it is addressed", () => {
  assert.equal(run(batch(http("POST $batch HTTP/1.1"))), denied("batch part 1 (POST $batch): a batch cannot contain another batch"));
  assert.equal(run(batch(http(`POST ${ROOT}/$batch HTTP/1.1`))), denied(`batch part 1 (POST ${ROOT}/$batch): a batch cannot contain another batch`));
  assert.equal(
    run(jsonRef({ id: "1", method: "post", url: "$batch", body: {} }), { contentType: JSON_TYPE }),
    denied("batch part 1 (POST $batch): a batch cannot contain another batch"),
  );
});

deny("a change set inside a change set is invalid", () => {
  const body = batch(changeSet("outer_cs", json("POST Customers HTTP/1.1", "{}"), changeSet("inner_cs", json("POST Customers HTTP/1.1", "{}"))));
  assert.equal(run(body), invalid("batch part 2: a change set cannot contain another change set"));
});

deny("a denied part 3 names part 3; the first failing part wins", () => {
  assert.equal(
    run(batch(http("GET Customers HTTP/1.1"), changeSet("cs", json("POST SalesOrders HTTP/1.1", "{}"), http("POST Search(text='a') HTTP/1.1")))),
    denied("batch part 3 (POST Search(text='a')): function 'Search' must be called with GET, not POST"),
  );
  assert.equal(
    run(batch(http("GET Nowhere HTTP/1.1"), http("POST ResetAll HTTP/1.1"))),
    { kind: "stopped", status: 404, entitySet: "Nowhere", reason: "part 1: resource path", message: "batch part 1 (GET Nowhere): entity set 'Nowhere' not found", accesses: [] },
  );
});

deny("the entity step stops the batch at the first part naming a set the key may not touch, alike whether it exists; what came before is kept", () => {
  // The key may touch SalesOrders, Customers and Nope (which the service lacks); not Products, nor Secrets (which it lacks).
  const entityStep = (set: string) => (["SalesOrders", "Customers", "Nope"].includes(set) ? undefined : noAccess(set));
  for (const set of ["Products", "Secrets"]) {
    // A later part that is malformed, or names an unknown property, is never read.
    const body = batch(http("DELETE SalesOrders(1) HTTP/1.1"), http(`GET ${set}('1')?$expand=Nope HTTP/1.1`), http("GET SalesOrders(1)/Nope HTTP/1.1"));
    assert.equal(run(body, { entityStep }), {
      kind: "stopped",
      status: 403,
      entitySet: set,
      reason: "part 2: resource path",
      message: noAccess(set),
      accesses: [acc("SalesOrders", "delete", "part 1: resource path"), acc(set, "get", "part 2: resource path")],
    });
    const inJson = jsonRef({ id: "1", method: "get", url: "Customers" }, { id: "2", method: "post", url: "SalesOrders", body: { "Customer@odata.bind": `${set}('1')` } }, { id: "3", method: "get", url: "Nope(" });
    assert.equal(run(inJson, { contentType: JSON_TYPE, entityStep }), {
      kind: "stopped",
      status: 403,
      entitySet: set,
      reason: "part 2: bind Customer",
      message: noAccess(set),
      accesses: [
        acc("Customers", "list", "part 1: resource path"),
        acc("SalesOrders", "create", "part 2: resource path"),
        acc("Customers", "get", "part 2: bind Customer"),
        acc(set, "get", "part 2: bind Customer"),
      ],
    });
  }
  // A set the key may touch that the service lacks: 404 naming the part.
  assert.equal(run(batch(http("GET Customers HTTP/1.1"), http("GET Nope HTTP/1.1"), http("GET Products HTTP/1.1")), { entityStep }), {
    kind: "stopped",
    status: 404,
    entitySet: "Nope",
    reason: "part 2: resource path",
    message: "batch part 2 (GET Nope): entity set 'Nope' not found",
    accesses: [acc("Customers", "list", "part 1: resource path")],
  });
});

deny("the analyzer's refusals come through with the part named (collection-wide DELETE, deep insert without metadata)", () => {
  assert.equal(run(batch(http("DELETE SalesOrders HTTP/1.1"))), denied("batch part 1 (DELETE SalesOrders): DELETE on a whole collection is not allowed"));
  const r = run(batch(json("POST SalesOrders HTTP/1.1", `{"Customer":{"ID":"C9"}}`)), { model: undefined });
  assert.is(r.kind, "denied");
  assert.ok(r.kind === "denied" && r.message.startsWith("batch part 1 (POST SalesOrders): "), r.kind === "denied" ? r.message : "");
});

deny("JSON: a conditional request ('if') is denied", () => {
  assert.equal(
    run(jsonRef({ id: "1", method: "get", url: "Customers" }, { id: "2", dependsOn: ["1"], if: "$1/$succeeded", method: "get", url: "Products" }), {
      contentType: JSON_TYPE,
    }),
    denied("batch part 2 (GET Products): conditional requests ('if') are not supported"),
  );
});

deny.run();

// ---------------------------------------------------------------------------

const bad = suite("batch: malformed input");

const get = http("GET Customers HTTP/1.1");
const malformed: [string, string, string | Buffer, BatchAnalysis][] = [
  ["a Content-Type without boundary", "multipart/mixed", batch(get), invalid("the batch Content-Type has no boundary parameter")],
  ["an unsupported Content-Type", "text/plain", "x", invalid("unsupported batch Content-Type 'text/plain': expected multipart/mixed or application/json")],
  ["a malformed Content-Type", "multipart", "x", invalid("the batch Content-Type 'multipart' is malformed")],
  ["an unterminated quoted boundary", `multipart/mixed; boundary="abc`, "x", invalid(`the batch Content-Type 'multipart/mixed; boundary="abc' is malformed`)],
  ["a boundary of 71 characters", `multipart/mixed; boundary=${"b".repeat(71)}`, "x", invalid(`the batch Content-Type has a malformed boundary '${"b".repeat(57)}...'`)],
  ["a body without delimiter line", MULTIPART, "hello", invalid("the batch body has no delimiter line '--batch_1'")],
  [
    "a body without close delimiter",
    MULTIPART,
    `--${BOUNDARY}\r\n${get}`,
    invalid("the batch body is not terminated: the close delimiter '--batch_1--' is missing"),
  ],
  ["a body with only the close delimiter", MULTIPART, `--${BOUNDARY}--\r\n`, invalid("the batch body has no body parts")],
  [
    "the boundary inside a part body",
    MULTIPART,
    batch(json("POST SalesOrders HTTP/1.1", `{"Note":"--batch_1x"}`)),
    invalid("the batch body: the boundary 'batch_1' appears inside a body part (offset 150)"),
  ],
  [
    "the boundary after the close delimiter",
    MULTIPART,
    `${batch(get)}--${BOUNDARY}\r\n${get}`,
    invalid("the batch body: the boundary 'batch_1' appears after the close delimiter"),
  ],
  ["an empty part", MULTIPART, `--${BOUNDARY}\r\n\r\n--${BOUNDARY}--`, invalid("batch part 1: the body part is empty")],
  ["a part without Content-Type", MULTIPART, batch("X-Other: 1\r\n\r\nGET Customers HTTP/1.1\r\n"), invalid("batch part 1: the body part has no Content-Type (expected application/http)")],
  [
    "a part with another Content-Type",
    MULTIPART,
    batch("Content-Type: text/plain\r\n\r\nhello"),
    invalid("batch part 1: unsupported Content-Type 'text/plain' (expected application/http or multipart/mixed)"),
  ],
  [
    "part headers without the empty line",
    MULTIPART,
    batch("Content-Type: application/http"),
    invalid("batch part 1: the body part's headers are not followed by an empty line"),
  ],
  ["a part without request line", MULTIPART, batch("Content-Type: application/http\r\n\r\n"), invalid("batch part 1: the body part holds no request line")],
  [
    "a request line without version",
    MULTIPART,
    batch(http("GET Customers")),
    invalid("batch part 1: malformed request line 'GET Customers' (expected 'METHOD URL HTTP/1.1')"),
  ],
  [
    "a request line with two spaces",
    MULTIPART,
    batch(http("GET  Customers HTTP/1.1")),
    invalid("batch part 1: malformed request line 'GET  Customers HTTP/1.1' (expected 'METHOD URL HTTP/1.1')"),
  ],
  ["HTTP/2.0", MULTIPART, batch(http("GET Customers HTTP/2.0")), invalid("batch part 1 (GET Customers): unsupported HTTP version 'HTTP/2.0'")],
  ["a raw non-ASCII URL", MULTIPART, batch(http("GET Kundén HTTP/1.1")), invalid("batch part 1: the request line has a control or non-ASCII character")],
  [
    "a JSON syntax error in a part body",
    MULTIPART,
    batch(json("POST SalesOrders HTTP/1.1", `{"Note" "x"}`)),
    invalid("batch part 1 (POST SalesOrders): the request body is not valid JSON: expected ':' at offset 8"),
  ],
  [
    "a duplicate member in a part body",
    MULTIPART,
    batch(json("POST SalesOrders HTTP/1.1", `{"Note":"a","Note":"b"}`)),
    invalid("batch part 1 (POST SalesOrders): the request body is not valid JSON: duplicate member 'Note' at offset 12"),
  ],
  [
    "a part body that is not UTF-8",
    MULTIPART,
    Buffer.concat([Buffer.from(`--${BOUNDARY}\r\n${json("POST SalesOrders HTTP/1.1", "")}`, "latin1"), Buffer.from([0x7b, 0xff, 0x7d]), Buffer.from(`\r\n--${BOUNDARY}--`)]),
    invalid("batch part 1 (POST SalesOrders): the request body is not valid UTF-8"),
  ],
  [
    "a folded header line",
    MULTIPART,
    batch(http("GET Customers HTTP/1.1", { headers: ["Accept: application/json,", " text/plain"] })),
    invalid("batch part 1 (GET Customers): folded header lines are not supported"),
  ],
  [
    "a header with a space before the colon",
    MULTIPART,
    batch(http("GET Customers HTTP/1.1", { headers: ["Accept : application/json"] })),
    invalid("batch part 1 (GET Customers): malformed header line 'Accept : application/json'"),
  ],
  [
    "a header given twice",
    MULTIPART,
    batch(http("GET Customers HTTP/1.1", { headers: ["Accept: a", "accept: b"] })),
    invalid("batch part 1 (GET Customers): header 'accept' is given twice"),
  ],
  [
    "a bare CR in a header value",
    MULTIPART,
    batch(http("GET Customers HTTP/1.1", { headers: ["Accept: a\rX-Evil: 1"] })),
    invalid("batch part 1 (GET Customers): control character in header 'Accept'"),
  ],
  [
    "Transfer-Encoding in a part",
    MULTIPART,
    batch(json("POST SalesOrders HTTP/1.1", "2\r\n{}\r\n0\r\n\r\n", { headers: ["Transfer-Encoding: chunked"] })),
    invalid("batch part 1 (POST SalesOrders): Transfer-Encoding is not supported in batch parts"),
  ],
  [
    "Content-Transfer-Encoding base64",
    MULTIPART,
    batch("Content-Type: application/http\r\nContent-Transfer-Encoding: base64\r\n\r\nR0VUIEN1c3RvbWVycyBIVFRQLzEuMQ=="),
    invalid("batch part 1: Content-Transfer-Encoding 'base64' is not supported (only binary)"),
  ],
  [
    "a Content-Length beyond the body",
    MULTIPART,
    batch(json("POST SalesOrders HTTP/1.1", `{"Note":"x"}`, { headers: ["Content-Length: 99"] })),
    invalid("batch part 1 (POST SalesOrders): Content-Length 99 exceeds the 12 bytes of the body"),
  ],
  [
    "a GET in a change set",
    MULTIPART,
    batch(changeSet("cs", get)),
    invalid("batch part 1 (GET Customers): a change set cannot contain GET requests"),
  ],
  [
    "a change set without boundary",
    MULTIPART,
    batch(`Content-Type: multipart/mixed\r\n\r\n${multipart("cs", get)}`),
    invalid("batch part 1: change set: its Content-Type has no boundary parameter"),
  ],
  [
    "a change set with the batch's boundary",
    MULTIPART,
    batch(`Content-Type: multipart/mixed; boundary=${BOUNDARY}\r\n\r\n`),
    invalid("batch part 1: change set: its boundary must differ from the batch boundary"),
  ],
  [
    "a change set boundary that extends the batch boundary",
    MULTIPART,
    batch(changeSet(`${BOUNDARY}_cs`, json("POST Customers HTTP/1.1", "{}"))),
    invalid("the batch body: the boundary 'batch_1' appears inside a body part (offset 65)"),
  ],
  [
    "the change set boundary inside a body",
    MULTIPART,
    batch(changeSet("cs", json("POST Customers HTTP/1.1", `{"Name":"x--cs"}`))),
    invalid("batch part 1: change set: the boundary 'cs' appears inside a body part (offset 201)"),
  ],
  ["an empty change set", MULTIPART, batch("Content-Type: multipart/mixed; boundary=cs\r\n\r\n--cs--"), invalid("batch part 1: change set is empty")],
  [
    "an unterminated change set",
    MULTIPART,
    batch(`Content-Type: multipart/mixed; boundary=cs\r\n\r\n--cs\r\n${json("POST Customers HTTP/1.1", "{}")}`),
    invalid("batch part 1: change set is not terminated: the close delimiter '--cs--' is missing"),
  ],
  ["JSON: not JSON", JSON_TYPE, "{requests:[]}", invalid("the batch body is not valid JSON: expected a member name at offset 1")],
  ["JSON: trailing text", JSON_TYPE, `{"requests":[]} x`, invalid("the batch body is not valid JSON: unexpected text after the value at offset 16")],
  ["JSON: not UTF-8", JSON_TYPE, Buffer.from([0x7b, 0xc3, 0x28, 0x7d]), invalid("the batch body is not valid UTF-8")],
  ["JSON: a charset other than UTF-8", "application/json;charset=utf-16", "{}", invalid("the batch Content-Type names charset 'utf-16'; only UTF-8 is supported")],
  ["JSON: an array", JSON_TYPE, "[]", invalid("a JSON batch must be an object with a member 'requests'")],
  ["JSON: no requests", JSON_TYPE, "{}", invalid("a JSON batch needs an array 'requests'")],
  ["JSON: an unknown batch member", JSON_TYPE, `{"requests":[],"extra":1}`, invalid("unknown member 'extra' in the batch")],
  ["JSON: a duplicate batch member", JSON_TYPE, `{"requests":[],"requests":[]}`, invalid("the batch body is not valid JSON: duplicate member 'requests' at offset 15")],
  ["JSON: a request that is no object", JSON_TYPE, `{"requests":[1]}`, invalid("batch part 1: a request must be a JSON object")],
  [
    "JSON: an unknown request member",
    JSON_TYPE,
    jsonRef({ id: "1", method: "get", url: "Customers", foo: 1 }),
    invalid("batch part 1 (GET Customers): unknown member 'foo'"),
  ],
  ["JSON: a request without id", JSON_TYPE, jsonRef({ method: "get", url: "Customers" }), invalid("batch part 1 (GET Customers): member 'id' is missing")],
  ["JSON: a request without url", JSON_TYPE, jsonRef({ id: "1", method: "get" }), invalid("batch part 1: member 'url' is missing")],
  ["JSON: a url that is no string", JSON_TYPE, jsonRef({ id: "1", method: "get", url: 1 }), invalid("batch part 1: 'url' must be a string")],
  [
    "JSON: MERGE",
    JSON_TYPE,
    jsonRef({ id: "1", method: "merge", url: "Customers('C1')", body: {} }),
    invalid("batch part 1 (MERGE Customers('C1')): method 'merge' is not one of delete, get, patch, post, put"),
  ],
  [
    "JSON: a request id used twice",
    JSON_TYPE,
    jsonRef({ id: "1", method: "get", url: "Customers" }, { id: "1", method: "get", url: "Products" }),
    invalid("batch part 2 (GET Products): request id '1' is used twice"),
  ],
  [
    "JSON: a split atomicity group",
    JSON_TYPE,
    jsonRef(
      { id: "1", atomicityGroup: "g", method: "post", url: "Customers", body: {} },
      { id: "2", method: "get", url: "Products" },
      { id: "3", atomicityGroup: "g", method: "post", url: "Customers", body: {} },
    ),
    invalid("batch part 3 (POST Customers): the requests of atomicity group 'g' must be adjacent"),
  ],
  [
    "JSON: an atomicity group named like a request",
    JSON_TYPE,
    jsonRef({ id: "1", method: "get", url: "Products" }, { id: "2", atomicityGroup: "1", method: "post", url: "Customers", body: {} }),
    invalid("batch part 2 (POST Customers): '1' names both a request and an atomicity group"),
  ],
  [
    "JSON: a body on a GET",
    JSON_TYPE,
    jsonRef({ id: "1", method: "get", url: "Customers", body: {} }),
    invalid("batch part 1 (GET Customers): a GET request cannot have a body"),
  ],
  [
    "JSON: a header that is no string",
    JSON_TYPE,
    jsonRef({ id: "1", method: "get", url: "Customers", headers: { accept: 1 } }),
    invalid("batch part 1 (GET Customers): header 'accept' must be a string"),
  ],
  [
    "JSON: a header given twice in different case",
    JSON_TYPE,
    jsonRef({ id: "1", method: "get", url: "Customers", headers: { Accept: "a", accept: "b" } }),
    invalid("batch part 1 (GET Customers): header 'accept' is given twice"),
  ],
  [
    "JSON: an object body with a non-JSON content type",
    JSON_TYPE,
    jsonRef({ id: "1", method: "put", url: "Products('P1')/$value", headers: { "content-type": "image/png" }, body: {} }),
    invalid("batch part 1 (PUT Products('P1')/$value): a body of type 'image/png' must be a string"),
  ],
  [
    "JSON: a method tunnel",
    JSON_TYPE,
    jsonRef({ id: "1", method: "post", url: "Customers('C1')", headers: { "X-HTTP-Method": "DELETE" } }),
    invalid("batch part 1 (POST Customers('C1')): method tunnelling (X-HTTP-Method) is not supported in a JSON batch: give the method in 'method'"),
  ],
];
for (const [name, contentType, body, expected] of malformed) {
  bad(name, () => assert.equal(run(body, { contentType }), expected));
}

bad.run();

// ---------------------------------------------------------------------------

const limits = suite("batch: limits and hostile input");

limits(`${MAX_BATCH_PARTS} parts pass, one more is refused (multipart, change sets, JSON)`, () => {
  const many = (n: number) => batch(...Array.from({ length: n }, () => get));
  const ok = run(many(MAX_BATCH_PARTS));
  assert.is(ok.kind === "access" && ok.parts, MAX_BATCH_PARTS);
  assert.equal(run(many(MAX_BATCH_PARTS + 1)), invalid(`the batch has more than ${MAX_BATCH_PARTS} parts`));
  const post = json("POST Customers HTTP/1.1", "{}");
  const sets = batch(...Array.from({ length: MAX_BATCH_PARTS / 2 }, () => changeSet("cs", post, post)), get);
  assert.equal(run(sets), invalid(`the batch has more than ${MAX_BATCH_PARTS} parts`));
  const requests = (n: number) => jsonRef(...Array.from({ length: n }, (_, i) => ({ id: `r${i}`, method: "get", url: "Customers" })));
  const okJson = run(requests(MAX_BATCH_PARTS), { contentType: JSON_TYPE });
  assert.is(okJson.kind === "access" && okJson.parts, MAX_BATCH_PARTS);
  assert.equal(run(requests(MAX_BATCH_PARTS + 1), { contentType: JSON_TYPE }), invalid(`the batch has more than ${MAX_BATCH_PARTS} parts`));
});

limits("header lines: at most 100 per block, each at most 64 KiB", () => {
  const headers = (n: number) => Array.from({ length: n }, (_, i) => `X-H${i}: v`);
  assert.is(run(batch(http("GET Customers HTTP/1.1", { headers: headers(100) }))).kind, "access");
  assert.equal(run(batch(http("GET Customers HTTP/1.1", { headers: headers(101) }))), invalid("batch part 1: more than 100 header lines"));
  assert.equal(
    run(batch(http("GET Customers HTTP/1.1", { headers: [`X-Long: ${"v".repeat(MAX_LINE_LENGTH)}`] }))),
    invalid(`batch part 1: a header line is longer than ${MAX_LINE_LENGTH} characters`),
  );
});

limits(`JSON nested more than ${MAX_JSON_DEPTH} levels is refused`, () => {
  const nested = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
  assert.is(run(batch(json("POST SalesOrders HTTP/1.1", `{"Tags":${nested(MAX_JSON_DEPTH - 1)}}`))).kind, "access");
  assert.equal(
    run(batch(json("POST SalesOrders HTTP/1.1", `{"Tags":${nested(MAX_JSON_DEPTH)}}`))),
    invalid(`batch part 1 (POST SalesOrders): the request body is not valid JSON: nested more than ${MAX_JSON_DEPTH} levels deep at offset ${8 + MAX_JSON_DEPTH - 1}`),
  );
});

limits("adversarial shapes of 4 MiB answer in linear time (under 2 s) and never throw", () => {
  const mb = 4 * 1024 * 1024;
  // Each part costs what analyzeRequest costs (linear in its URL): 1 MiB, the gateway's default body limit, of long filters.
  const filter = `$filter=${Array(100).fill("Customer/Name%20eq%20'x'").join("%20or%20")}`;
  const shapes: [string, string, string][] = [
    ["delimiters only", MULTIPART, `--${BOUNDARY}\r\n`.repeat(mb / 12)],
    ["one endless request line", MULTIPART, `--${BOUNDARY}\r\nContent-Type: application/http\r\n\r\n${"a".repeat(mb)}\r\n--${BOUNDARY}--`],
    ["endless headers", MULTIPART, `--${BOUNDARY}\r\nContent-Type: application/http\r\n\r\nGET Customers HTTP/1.1\r\n${"X: y\r\n".repeat(mb / 6)}\r\n--${BOUNDARY}--`],
    ["endless part headers", MULTIPART, `--${BOUNDARY}\r\n${"X: y\r\n".repeat(mb / 6)}\r\n--${BOUNDARY}--`],
    ["dashes", "multipart/mixed; boundary=-", "-".repeat(mb)],
    ["1 MiB of parts with long filters", MULTIPART, batch(...Array.from({ length: 300 }, () => http(`GET SalesOrders?${filter} HTTP/1.1`)))],
    ["a JSON part body of whitespace and short strings (compacted)", MULTIPART, batch(json("POST SalesOrders HTTP/1.1", `{"Tags":[${'"a" ,\r\n\t'.repeat(mb / 10)}"a"]}`))],
    ["deep JSON", JSON_TYPE, "[".repeat(mb)],
    ["a long JSON string", JSON_TYPE, `{"requests":"${"a".repeat(mb)}"}`],
    ["many JSON escapes", JSON_TYPE, `{"requests":"${"\\u0041".repeat(mb / 6)}"}`],
  ];
  for (const [name, contentType, body] of shapes) {
    const started = performance.now();
    const r = run(body, { contentType });
    const elapsed = performance.now() - started;
    assert.ok(elapsed < LINEAR_BOUND_MS, `${name} took ${elapsed.toFixed(0)} ms`);
    assert.ok(["access", "invalid", "denied"].includes(r.kind), name);
  }
});

limits("regression: change sets with distinct boundaries before a large part stay linear (no search past a change set)", () => {
  const remove = crlf("Content-Type: application/http", "", "DELETE Customers('C1') HTTP/1.1", "", "");
  const sets = Array.from({ length: MAX_BATCH_PARTS - 1 }, (_, i) => `Content-Type: multipart/mixed; boundary=cs${i}\r\n\r\n${multipart(`cs${i}`, remove)}`);
  const large = http("PUT Products('P1')/$value HTTP/1.1", { headers: ["Content-Type: text/plain"], body: "x".repeat(4 * 1024 * 1024) });
  const started = performance.now();
  const r = run(batch(...sets, large));
  const elapsed = performance.now() - started;
  assert.ok(elapsed < LINEAR_BOUND_MS, `took ${elapsed.toFixed(0)} ms`);
  assert.is(r.kind === "access" && r.parts, MAX_BATCH_PARTS);
});

limits("regression: header values with long inner runs of spaces are trimmed in linear time", () => {
  const headers = Array.from({ length: 60 }, (_, i) => `X-H${i}: x${" ".repeat(60_000)}x`);
  const started = performance.now();
  const r = run(batch(http("GET Customers HTTP/1.1", { headers })));
  const elapsed = performance.now() - started;
  assert.ok(elapsed < LINEAR_BOUND_MS, `took ${elapsed.toFixed(0)} ms`);
  assert.is(r.kind, "access");
});

limits("truncated and mutated batches never throw nor reach the catch-all", () => {
  const samples: [string, string][] = [
    [
      MULTIPART,
      batch(
        http("GET Customers('C1')?$expand=Orders HTTP/1.1"),
        changeSet("cs", json("POST SalesOrders HTTP/1.1", `{"Note":"n"}`, { id: "1" }), json("POST $1/Items HTTP/1.1", `{"ItemNo":1}`, { id: "2" })),
      ),
    ],
    [
      JSON_TYPE,
      jsonRef(
        { id: "1", atomicityGroup: "g", method: "post", url: "SalesOrders", body: { Note: "n" } },
        { id: "2", atomicityGroup: "g", dependsOn: ["1"], method: "post", url: "$1/Items", body: { ItemNo: 1 } },
      ),
    ],
  ];
  let seed = 42;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const alphabet = ["\r", "\n", "-", ":", " ", '"', "{", "}", "$", "/", "\u0000", "é"];
  for (const [contentType, body] of samples) {
    const variants: string[] = [];
    for (let i = 0; i <= body.length; i++) variants.push(body.slice(0, i));
    for (let n = 0; n < 2000; n++) {
      const at = Math.floor(random() * body.length);
      variants.push(body.slice(0, at) + alphabet[Math.floor(random() * alphabet.length)] + body.slice(at + (random() < 0.5 ? 1 : 0)));
    }
    for (const v of variants) {
      const r = run(v, { contentType });
      assert.ok(["access", "invalid", "denied", "stopped"].includes(r.kind));
      if (r.kind === "denied") assert.is.not(r.message, "the batch could not be analyzed", JSON.stringify(v));
    }
  }
});

limits.run();

const media = suite("batch: bodies CAP reads as JSON whatever their Content-Type");

media("a media create whose one-line body is a JSON object is analyzed as an entity: its deep insert needs create", () => {
  // Products has a stream: as media, the body would be opaque (create Products only).
  const body = batch(http("POST Products HTTP/1.1", { headers: ["Content-Type: text/plain"], body: '{"ID":"P9","Category":{"ID":9}}' }));
  expectAccess(run(body), 1, body, [
    acc("Products", "create", "part 1: resource path"),
    acc("Categories", "create", "part 1: deep insert Category"),
  ]);
  // Opaque text stays opaque: a media create of the set only.
  const text = batch(http("POST Products HTTP/1.1", { headers: ["Content-Type: text/plain"], body: "{not json" }));
  expectAccess(run(text), 1, text, [acc("Products", "create", "part 1: resource path")]);
});

media("a JSON batch's string body of another type is read as Atom or JSON when it reads so, as text or as the base64url bytes it encodes", () => {
  const entry =
    '<entry xmlns="http://www.w3.org/2005/Atom"><link rel="http://schemas.microsoft.com/ado/2007/08/dataservices/related/Supplier"/><content/></entry>';
  const part = (contentType: string, body: string) => jsonRef({ id: "1", method: "POST", url: "Products", headers: { "content-type": contentType }, body });
  const atomDenial = denied(
    "batch part 1 (POST Products): only JSON request bodies can be authorized for entity writes; got application/atom+xml (a media entity in 'Products' is created from the media itself, not an Atom entry)",
  );
  assert.equal(run(part("text/plain", entry), { contentType: JSON_TYPE }), atomDenial);
  assert.equal(run(part("application/octet-stream", Buffer.from(entry).toString("base64url")), { contentType: JSON_TYPE }), atomDenial);
  // A JSON object in a string, as text or base64url: a deep insert that needs create on Categories.
  const deep = '{"ID":"P9","Category":{"ID":9}}';
  for (const body of [deep, Buffer.from(deep).toString("base64url")]) {
    expectAccess(
      run(part("image/png", body), { contentType: JSON_TYPE }),
      1,
      writtenJson({ id: "1", method: "POST", url: "Products", headers: { "content-type": "image/png" }, body }),
      [acc("Products", "create", "part 1: resource path"), acc("Categories", "create", "part 1: deep insert Category")],
      JSON_TYPE,
    );
  }
  assert.equal(
    run(part("text/plain", `\u00a0${deep}`), { contentType: JSON_TYPE }),
    invalid("batch part 1 (POST Products): a body that reads as JSON may not start with a byte order mark or whitespace JSON does not allow"),
  );
  // Opaque media stays a media create of the set only.
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).toString("base64url");
  expectAccess(
    run(part("image/png", png), { contentType: JSON_TYPE }),
    1,
    writtenJson({ id: "1", method: "POST", url: "Products", headers: { "content-type": "image/png" }, body: png }),
    [acc("Products", "create", "part 1: resource path")],
    JSON_TYPE,
  );
});

media("a JSON batch's string body that lenient base64 decoders read as JSON or Atom is analyzed as that, not as opaque media", () => {
  const part = (contentType: string, body: string) => jsonRef({ id: "1", method: "POST", url: "Products", headers: { "content-type": contentType }, body });
  const deep = '{"ID":"P9","Category":{"ID":9}}';
  const std = Buffer.from(deep).toString("base64");
  // What Node's Buffer.from(s, "base64"), Python's b64decode or atob read:
  // line breaks and spaces skipped (MIME), the decoding ended at a `=`
  // padding the middle, the url alphabet's `-` skipped by a standard decoder.
  const bodies = [
    `${std.slice(0, 8)}\n${std.slice(8)}`,
    `${std.slice(0, 8)} ${std.slice(8)}`,
    `${std}QUFB`,
    `${std.slice(0, 4)}-${std.slice(4)}`,
  ];
  for (const body of bodies) {
    assert.equal(Buffer.from(body.replace(/[-_]/g, ""), "base64").toString(), deep);
    const r = run(part("image/png", body), { contentType: JSON_TYPE });
    assert.equal(r.kind, "access", JSON.stringify(body));
    assert.ok(
      r.kind === "access" && r.accesses.some((a) => a.entitySet === "Categories" && a.operation === "create"),
      `${JSON.stringify(body)}: ${JSON.stringify(r)}`,
    );
  }
  const entry =
    '<entry xmlns="http://www.w3.org/2005/Atom"><link rel="http://schemas.microsoft.com/ado/2007/08/dataservices/related/Supplier"/><content/></entry>';
  const wrapped = Buffer.from(entry).toString("base64").replace(/.{76}/g, "$&\r\n");
  assert.equal(
    run(part("application/octet-stream", wrapped), { contentType: JSON_TYPE }),
    denied(
      "batch part 1 (POST Products): only JSON request bodies can be authorized for entity writes; got application/atom+xml (a media entity in 'Products' is created from the media itself, not an Atom entry)",
    ),
  );
  // Media in lenient base64 stays a media create of the set only.
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d]).toString("base64").replace(/.{8}/, "$&\r\n");
  const r = run(part("image/png", png), { contentType: JSON_TYPE });
  assert.ok(r.kind === "access" && r.accesses.length === 1, JSON.stringify(r));
});

media.run();

const sap = suite("batch: SAP client and session switches");

sap("sap-client and SAP session headers are refused in parts, and the query options in part URLs", () => {
  assert.equal(
    run(batch(http("GET Customers HTTP/1.1", { headers: ["sap-client: 200"] }))),
    invalid("batch part 1 (GET Customers): header 'sap-client' is not allowed in a batch part"),
  );
  assert.equal(
    run(batch(http("GET Customers HTTP/1.1", { headers: ["SAP-ContextId-Accept: header"] }))),
    invalid("batch part 1 (GET Customers): header 'SAP-ContextId-Accept' is not allowed in a batch part"),
  );
  assert.equal(
    run(batch(http("GET Customers?sap%2Dclient=200 HTTP/1.1"))),
    denied("batch part 1 (GET Customers?sap%2Dclient=200): query option 'sap-client' is not allowed: the instance decides it"),
  );
});

sap.run();
