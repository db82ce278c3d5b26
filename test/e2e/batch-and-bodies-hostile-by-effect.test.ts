/**
 * `$batch` framing, request bodies and HTTP/1.1 framing from narrow data
 * keys, judged by effect: each request goes through erplink to SAP CAP (V4
 * and V2) or SAP's Fiori elements mock server (V2 API_BUSINESS_PARTNER), and
 * what the back end's data layer read and wrote for it must be covered by
 * the accesses erplink authorized (the effect lab, test-support/effect-lab.ts);
 * on a refusal the back end receives nothing, and the request log says so.
 *
 * The keys may get one note (`noteGetter`), or get, create, update and
 * delete notes (`noteWriter`), or get one business partner; every attempt
 * aims at a note's secret (a Secrets row, the note's `label`) or at a write
 * the key lacks, through what the back ends read beyond what erplink checks:
 * SAP CAP's multipart and JSON batch readers (CAP takes any Content-Type
 * containing `application/json` for a JSON batch, and skips reading the
 * body of any POST whose Content-Type contains `multipart/mixed`), SAP's mock
 * server's line-based batch parser, bodies under other content types,
 * encodings and spellings, and requests hidden in the framing of another.
 */
import net from "node:net";
import type { AddressInfo } from "node:net";
import * as assert from "uvu/assert";
import { assertForwardedAsAuthorized } from "../../test-support/forwarded.js";
import { BP, CAP_NOTES, JSON_TYPE, NOTES2, NOTES4, onCap, type Permissions } from "../../test-support/effect-lab.js";
import { assertError, call, capEffects, effectLabSuite, entity, lacks, mockEffects, serviceOf } from "../../test-support/effect-lab.js";

const permissions: Permissions = {
  noteGetter: onCap({ API_NOTES: { Notes: ["get"] } }),
  noteWriter: onCap({ API_NOTES: { Notes: ["get", "create", "update", "delete"] } }),
  partnerGetter: { sap: { API_BUSINESS_PARTNER: { A_BusinessPartner: ["get"] } } },
};

const E2E = effectLabSuite("$batch framing, bodies and HTTP framing from narrow keys, judged by what the back ends did", permissions);

const N1 = "Notes(folder_ID='F1',ID='N1')";
const SECRET = `${CAP_NOTES}/Secrets('S1')`;
const multipart = (boundary: string) => ({ "content-type": `multipart/mixed; boundary=${boundary}` });
const noSecret = "API key has no access to entity 'Secrets'";

/** A GET part's request. */
const get = (url: string) => [`GET ${url} HTTP/1.1`, "Accept: application/json", "", ""].join("\r\n");

/** A multipart body of `parts` outside change sets, with extra MIME headers, line ending `nl`, and (unless `close` is false) the close delimiter. */
function framed(boundary: string, parts: string[], { mime = [] as string[], nl = "\r\n", close = true } = {}): string {
  return [...parts.flatMap((p) => [`--${boundary}`, "Content-Type: application/http", ...mime, "", p]), ...(close ? [`--${boundary}--`] : []), ""].join(nl);
}

/** A multipart body (boundary `b`) of one change set (boundary `c`) of `parts`, each with its MIME headers. */
function changeSet(...parts: { mime?: string[]; http: string }[]): string {
  const inner = parts.flatMap((p) => ["--c", "Content-Type: application/http", ...(p.mime ?? []), "", p.http]);
  return ["--b", "Content-Type: multipart/mixed; boundary=c", "", ...inner, "--c--", "--b--", ""].join("\r\n");
}

const createNote = (id: string) => `POST Notes HTTP/1.1\r\nContent-Type: application/json\r\n\r\n${JSON.stringify({ folder_ID: "F1", ID: id })}`;

E2E("multipart framing the back ends read otherwise (a quoted boundary, bare LF, a missing close delimiter, a boundary inside a body, a nested change set, base64 parts) reaches no set but the one granted", async (ctx) => {
  const B = `${NOTES4}/$batch`;
  const secretBefore = await entity(ctx, "cap", SECRET);
  // Accepted framings are forwarded rewritten, and read the one note.
  for (const [body, headers] of [
    [framed("b", [get(N1)]), { "content-type": 'multipart/mixed; boundary="b"' }],
    [framed("b", [get(N1).replace(/\r\n/g, "\n")], { nl: "\n" }), multipart("b")],
  ] as const) {
    const res = await call(ctx, "noteGetter", "POST", B, body, headers);
    assert.is(res.statusCode, 200, res.body);
    assert.equal(await capEffects(ctx, res, "API_NOTES"), ["get Notes"]);
  }
  const refused: [body: string, headers: Record<string, string>, status: number, code: string, message: string][] = [
    [framed("b", [get(N1)], { close: false }), multipart("b"), 400, "VALIDATION_ERROR", "the batch body is not terminated: the close delimiter '--b--' is missing"],
    [framed("b", [get(N1)]), { "content-type": "multipart/mixed; boundary=b; boundary=c" }, 400, "VALIDATION_ERROR", "the batch Content-Type gives parameter 'boundary' twice"],
    [framed("b", [get(N1)], { mime: ["Content-Transfer-Encoding: base64"] }), multipart("b"), 400, "VALIDATION_ERROR", "batch part 1: Content-Transfer-Encoding 'base64' is not supported (only binary)"],
    [framed("b", [get(N1)], { mime: ["Content-Transfer-Encoding: quoted-printable"] }), multipart("b"), 400, "VALIDATION_ERROR", "batch part 1: Content-Transfer-Encoding 'quoted-printable' is not supported (only binary)"],
    // A PATCH whose body goes on into a delimiter and a GET of the secret: the key may not update, and that is all erplink reads.
    [
      framed("b", [`PATCH ${N1} HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"text":"x"}\r\n--b\r\nContent-Type: application/http\r\n\r\nGET Secrets('S1') HTTP/1.1\r\n`]),
      multipart("b"),
      403,
      "FORBIDDEN",
      lacks("update", "Notes", "resource path"),
    ],
    [
      `--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: multipart/mixed; boundary=d\r\n\r\n--d\r\nContent-Type: application/http\r\n\r\nDELETE ${N1} HTTP/1.1\r\n\r\n\r\n--d--\r\n--c--\r\n--b--\r\n`,
      multipart("b"),
      400,
      "VALIDATION_ERROR",
      "batch part 1: a change set cannot contain another change set",
    ],
  ];
  for (const [body, headers, status, code, message] of refused) assertError(await call(ctx, "noteGetter", "POST", B, body, headers), status, code, message);
  assert.equal(await entity(ctx, "cap", SECRET), secretBefore);
});

E2E("a batch part's URL reaches only its own service root: other hosts, instances and services, dot segments (plain, encoded, behind %2F) and a method tunnel in the part are read as erplink reads them", async (ctx) => {
  const B = `${NOTES4}/$batch`;
  const cases: [url: string, status: number, code: string, message: string][] = [
    ["Secrets('S1')", 403, "FORBIDDEN", `${noSecret} (batch part 1: resource path)`],
    // The host is not compared: the part reaches this service, where the key may not read secrets.
    ["http://evil.example/odata/s4/API_NOTES/Secrets('S1')", 403, "FORBIDDEN", `${noSecret} (batch part 1: resource path)`],
    ["/Secrets('S1')", 403, "FORBIDDEN", `${noSecret} (batch part 1: resource path)`],
    [`/odata/s4v2/API_NOTES/${N1}`, 403, "NOT_ALLOWED", `batch part 1 (GET /odata/s4v2/API_NOTES/${N1}): URL leaves the service root`],
    ["/odata/s4/API_BUSINESS_PARTNER/A_BusinessPartner('1')", 403, "NOT_ALLOWED", "batch part 1 (GET /odata/s4/API_BUSINESS_PARTNER/A_BusinessPartner('1')): URL leaves the service root"],
    [`${N1}/../../Secrets('S1')`, 403, "NOT_ALLOWED", `batch part 1 (GET ${N1}/../../Secrets('S1')): URL leaves the service root`],
    [`${N1}/%2e%2e/%2E%2E/Secrets('S1')`, 403, "NOT_ALLOWED", `batch part 1 (GET ${N1}/%2e%2e/%2E%2E/Secrets('S1')): URL leaves the service root`],
    ["Notes%2F..%2FSecrets('S1')", 403, "NOT_ALLOWED", "batch part 1 (GET Notes%2F..%2FSecrets('S1')): URL leaves the service root"],
    [
      `${N1}%252F..%252FSecrets`,
      400,
      "VALIDATION_ERROR",
      `batch part 1 (GET ${N1}%252F..%252FSecrets): character '%' is not allowed in path segment '${N1}%2F..%2FSecrets' outside a quoted literal`,
    ],
  ];
  for (const [url, status, code, message] of cases) {
    const res = await call(ctx, "noteGetter", "POST", B, framed("b", [get(url)]), multipart("b"));
    assert.is(res.statusCode, status, `${url}: ${res.body}`);
    const error = JSON.parse(res.body).error;
    assert.equal([error.code, error.message], [code === "NOT_ALLOWED" ? "FORBIDDEN" : code, message]);
  }
  // X-HTTP-Method in a part names the method the back end acts on: a delete, which the key lacks.
  assertError(
    await call(ctx, "noteGetter", "POST", B, framed("b", [`POST ${N1} HTTP/1.1\r\nX-HTTP-Method: DELETE\r\n\r\n`]), multipart("b")),
    403,
    "FORBIDDEN",
    lacks("delete", "Notes", "resource path"),
  );
  // A key that may delete has it forwarded as the DELETE it is (judged by what CAP did).
  const tunnelled = await call(ctx, "noteWriter", "POST", B, changeSet({ http: `POST Notes(folder_ID='F1',ID='NX') HTTP/1.1\r\nX-HTTP-Method: DELETE\r\n\r\n` }), multipart("b"));
  assert.is(tunnelled.statusCode, 200, tunnelled.body);
  assert.is(JSON.parse(tunnelled.body).responses[0].status, 404);
});

E2E("a Content-ID reference reaches only what its part may: duplicate ids, a request id only in the request's headers, references through a navigation, a bind or V2 $links to the secret, JSON dependsOn through an atomicity group", async (ctx) => {
  const B = `${NOTES4}/$batch`;
  const secretBefore = await entity(ctx, "cap", SECRET);
  const dup =
    `--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\nContent-Type: application/http\r\nContent-ID: 1\r\n\r\n${createNote("NA")}\r\n--c--\r\n` +
    `--b\r\nContent-Type: multipart/mixed; boundary=d\r\n\r\n--d\r\nContent-Type: application/http\r\nContent-ID: 1\r\n\r\n${createNote("NB")}\r\n--d\r\nContent-Type: application/http\r\n\r\nDELETE $1/label HTTP/1.1\r\n\r\n\r\n--d--\r\n--b--\r\n`;
  assertError(await call(ctx, "noteWriter", "POST", B, dup, multipart("b")), 400, "VALIDATION_ERROR", "batch part 3 (DELETE $1/label): $1 is ambiguous: Content-ID '1' is used more than once in the batch");
  const viaLabel = changeSet({ mime: ["Content-ID: 1"], http: createNote("NC") }, { http: `PATCH $1/label HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"value":"pwned"}` });
  assertError(await call(ctx, "noteWriter", "POST", B, viaLabel, multipart("b")), 403, "FORBIDDEN", `${noSecret} (batch part 2: resource path)`);
  const bind = changeSet({ mime: ["Content-ID: 1"], http: createNote("ND") }, { http: `PATCH $1 HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"label@odata.bind":"Secrets('S1')"}` });
  assertError(await call(ctx, "noteWriter", "POST", B, bind, multipart("b")), 403, "FORBIDDEN", `${noSecret} (batch part 2: bind label)`);
  const links = changeSet({ http: `POST Notes HTTP/1.1\r\nContent-ID: 1\r\nContent-Type: application/json\r\n\r\n{"folder_ID":"F1","ID":"NF"}` }, { http: `PUT $1/$links/label HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"uri":"Secrets('S1')"}` });
  assertError(await call(ctx, "noteWriter", "POST", `${NOTES2}/$batch`, links, multipart("b")), 403, "FORBIDDEN", `${noSecret} (batch part 2: link change (a back end may create the linked entity))`);
  const group = {
    requests: [
      { id: "1", atomicityGroup: "g", method: "POST", url: "Notes", headers: { "content-type": "application/json" }, body: { folder_ID: "F1", ID: "NG" } },
      { id: "2", dependsOn: ["g"], method: "PATCH", url: "$1/label", headers: { "content-type": "application/json" }, body: { value: "x" } },
    ],
  };
  assertError(await call(ctx, "noteWriter", "POST", B, JSON.stringify(group), JSON_TYPE), 403, "FORBIDDEN", `${noSecret} (batch part 2: resource path)`);
  const undeclared = { requests: [{ id: "1", method: "POST", url: "Notes", headers: { "content-type": "application/json" }, body: { folder_ID: "F1", ID: "NH" } }, { id: "2", method: "DELETE", url: "$1" }] };
  assertError(await call(ctx, "noteWriter", "POST", B, JSON.stringify(undeclared), JSON_TYPE), 400, "VALIDATION_ERROR", "batch part 2 (DELETE $1): $1 needs '1' in dependsOn");
  // A request id given only in the request's headers is still the reference CAP resolves (erplink copies it to the MIME headers).
  const own = changeSet({ http: `POST Notes HTTP/1.1\r\nContent-ID: 1\r\nContent-Type: application/json\r\n\r\n{"folder_ID":"F1","ID":"NE"}` }, { http: `PATCH $1 HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{"text":"t"}` });
  const created = await call(ctx, "noteWriter", "POST", B, own, multipart("b"));
  assert.is(created.statusCode, 200, created.body);
  assert.equal(JSON.parse(created.body).responses.map((r: { status: number }) => r.status), [201, 200]);
  assert.equal(await capEffects(ctx, created, "API_NOTES"), ["create Notes", "get Notes", "update Notes"]);
  assert.equal(await entity(ctx, "cap", SECRET), secretBefore);
});

E2E("a JSON batch reaches only what its parts may: a part without a Content-Type or with a text one is still read as the JSON CAP reads, other roots and names CAP's lookup table answers to are refused", async (ctx) => {
  const B = `${NOTES4}/$batch`;
  const deep = { label: { value: "pwned" } };
  for (const part of [
    { id: "1", method: "PATCH", url: N1, body: deep },
    { id: "1", method: "PATCH", url: N1, headers: { "content-type": "text/plain" }, body: JSON.stringify(deep) },
  ]) {
    assertError(await call(ctx, "noteWriter", "POST", B, JSON.stringify({ requests: [part] }), JSON_TYPE), 403, "FORBIDDEN", `${noSecret} (batch part 1: deep update label)`);
  }
  const abs = { requests: [{ id: "1", method: "GET", url: "http://h/odata/s4/API_NOTES/Secrets('S1')" }] };
  assertError(await call(ctx, "noteWriter", "POST", B, JSON.stringify(abs), JSON_TYPE), 403, "FORBIDDEN", `${noSecret} (batch part 1: resource path)`);
  // CAP looks request ids up in a plain object, where `constructor` is always found.
  const inherited = { requests: [{ id: "1", method: "GET", url: "$constructor" }] };
  assertError(await call(ctx, "noteWriter", "POST", B, JSON.stringify(inherited), JSON_TYPE), 400, "VALIDATION_ERROR", "batch part 1 (GET $constructor): $constructor does not refer to a request of this batch");
});

E2E("a JSON batch's Content-Type is OData's: a quoted parameter naming multipart/mixed, which SAP CAP reads as a multipart batch and answers with 500, is refused with 400 and nothing is forwarded", async (ctx) => {
  const body = JSON.stringify({ requests: [{ id: "1", method: "GET", url: N1 }] });
  for (const type of ['application/json; x="multipart/mixed; boundary=b"', 'application/json;odata.metadata="multipart/mixed"']) {
    const res = await call(ctx, "noteGetter", "POST", `${NOTES4}/$batch`, body, { "content-type": type });
    const name = type.includes("odata.metadata") ? "odata.metadata" : "x";
    assertError(res, 400, "VALIDATION_ERROR", `the batch Content-Type's parameter '${name}' must be a token, as OData's JSON format parameters are: '${name === "x" ? "multipart/mixed; boundary=b" : "multipart/mixed"}'`);
  }
  // OData's own parameters pass as they are.
  const ok = await call(ctx, "noteGetter", "POST", `${NOTES4}/$batch`, body, { "content-type": 'application/json;odata.metadata=minimal;IEEE754Compatible=true;charset="utf-8"' });
  assert.is(ok.statusCode, 200, ok.body);
  assert.equal(await capEffects(ctx, ok, "API_NOTES"), ["get Notes"]);
});

E2E("SAP's mock server's line-based batch parser reads what erplink wrote: a part Content-Type with parameters reads the one partner, a GET in a change set and an $expand the key lacks are refused", async (ctx) => {
  const B = `${BP}/$batch`;
  for (const mime of ["application/http", "application/http; x=y"]) {
    const res = await call(ctx, "partnerGetter", "POST", B, `--b\r\nContent-Type: ${mime}\r\n\r\nGET A_BusinessPartner('1000001') HTTP/1.1\r\n\r\n\r\n--b--\r\n`, multipart("b"));
    assert.is(res.statusCode, 200, res.body);
    assert.equal(await mockEffects(ctx, res), ["get A_BusinessPartner"]);
  }
  assertError(
    await call(ctx, "partnerGetter", "POST", B, `--b\r\nContent-Type: multipart/mixed; boundary="c=d"\r\n\r\n--c=d\r\nContent-Type: application/http\r\n\r\nGET A_BusinessPartner('1000001') HTTP/1.1\r\n\r\n\r\n--c=d--\r\n--b--\r\n`, multipart("b")),
    400,
    "VALIDATION_ERROR",
    "batch part 1 (GET A_BusinessPartner('1000001')): a change set cannot contain GET requests",
  );
  assertError(
    await call(ctx, "partnerGetter", "POST", B, framed("b", [get("A_BusinessPartner('1000001')?$expand=to_Customer")]), multipart("b")),
    403,
    "FORBIDDEN",
    "API key has no access to entity 'A_Customer' (batch part 1: $expand to_Customer)",
  );
});

E2E("a body reaches no set but the one written, however it is spelled: deep inserts and updates (V4 and V2), escaped member names, binds in other cases and forms, V2 __deferred, text/plain, a byte order mark, duplicate members, charsets and content codings", async (ctx) => {
  const N = `${NOTES4}/${N1}`;
  const NV2 = `${NOTES2}/${N1}`;
  const secretBefore = await entity(ctx, "cap", SECRET);
  const cases: [method: string, url: string, body: string, headers: Record<string, string>, status: number, code: string, message: string][] = [
    ["POST", `${NOTES4}/Notes`, JSON.stringify({ folder_ID: "F1", ID: "P1", label: { ID: "S9", value: "x" } }), JSON_TYPE, 403, "FORBIDDEN", noSecret],
    ["PATCH", N, JSON.stringify({ label: { value: "pwned" } }), JSON_TYPE, 403, "FORBIDDEN", noSecret],
    ["PATCH", N, '{"lab\\u0065l":{"value":"pwned"}}', JSON_TYPE, 403, "FORBIDDEN", noSecret],
    ["PATCH", N, `{"label\\u0040odata.bind":"Secrets('S1')"}`, JSON_TYPE, 403, "FORBIDDEN", noSecret],
    ["PATCH", N, JSON.stringify({ "label@ODATA.BIND": "Secrets('S1')" }), JSON_TYPE, 403, "FORBIDDEN", noSecret],
    ["PATCH", N, JSON.stringify({ "label@odata.bind": "http://evil/odata/s4/API_NOTES/Secrets('S1')" }), JSON_TYPE, 403, "FORBIDDEN", noSecret],
    ["PATCH", N, JSON.stringify({ "label@odata.bind": "$1" }), JSON_TYPE, 403, "FORBIDDEN", "'$1' in 'label@odata.bind' does not refer to an earlier request of this batch"],
    ["PATCH", N, JSON.stringify({ "label@odata.bind": "/odata/s4/API_BUSINESS_PARTNER/A_BusinessPartner('1')" }), JSON_TYPE, 403, "FORBIDDEN", "'/odata/s4/API_BUSINESS_PARTNER/A_BusinessPartner('1')' in 'label@odata.bind' leaves the service root"],
    ["PATCH", N, JSON.stringify({ Label: { value: "pwned" } }), JSON_TYPE, 403, "FORBIDDEN", "cannot authorize property 'Label' of 'API_NOTES.Notes': only declared properties may hold objects or arrays"],
    ["PATCH", N, JSON.stringify({ "@odata.type": "#API_NOTES.Secrets", value: "pwned" }), JSON_TYPE, 400, "VALIDATION_ERROR", "'#API_NOTES.Secrets' in '@odata.type' is not 'API_NOTES.Notes' or a type derived from it"],
    ["PATCH", N, '{"text":"a","text":"b"}', JSON_TYPE, 400, "VALIDATION_ERROR", "request body is not valid JSON: duplicate member 'text' at offset 12"],
    ["PATCH", N, `\ufeff${JSON.stringify({ text: "a" })}`, JSON_TYPE, 400, "VALIDATION_ERROR", "a request body that reads as JSON may not start with a byte order mark: back ends disagree on whether it belongs to the JSON"],
    ["PATCH", N, JSON.stringify({ label: { value: "pwned" } }), { "content-type": "text/plain" }, 403, "FORBIDDEN", noSecret],
    ["PATCH", N, JSON.stringify({ label: { value: "pwned" } }), { "content-type": "" }, 415, "UNSUPPORTED_MEDIA_TYPE", "request body must be application/json"],
    ["PATCH", N, JSON.stringify({ text: "a" }), { "content-type": "application/json; charset=utf-16" }, 415, "UNSUPPORTED_MEDIA_TYPE", "JSON request bodies must be UTF-8, not 'utf-16'"],
    ...(["gzip", "deflate", "GZIP, identity"].map((coding) => [
      "PATCH",
      N,
      JSON.stringify({ text: "a" }),
      { ...JSON_TYPE, "content-encoding": coding },
      415,
      "UNSUPPORTED_MEDIA_TYPE",
      "request bodies with a Content-Encoding are not supported: send them unencoded",
    ]) as [string, string, string, Record<string, string>, number, string, string][]),
    // CAP skips reading the body of a POST whose Content-Type mentions multipart/mixed; erplink reads it all the same.
    ["POST", `${NOTES4}/Notes`, JSON.stringify({ folder_ID: "F1", ID: "P2", label: { ID: "S8", value: "x" } }), { "content-type": 'application/json; x="multipart/mixed"' }, 403, "FORBIDDEN", noSecret],
    ["MERGE", NV2, JSON.stringify({ label: { value: "pwned" } }), JSON_TYPE, 403, "FORBIDDEN", noSecret],
    ["MERGE", NV2, JSON.stringify({ label: { __deferred: { uri: "Secrets('S1')" } } }), JSON_TYPE, 403, "FORBIDDEN", noSecret],
    ["PUT", NV2, JSON.stringify({ folder_ID: "F1", ID: "N1", text: "t", label: { ID: "S1", value: "pwned" } }), JSON_TYPE, 403, "FORBIDDEN", noSecret],
    ["POST", `${NOTES2}/Notes`, JSON.stringify({ folder_ID: "F1", ID: "P3", label: { ID: "S7", value: "x" } }), JSON_TYPE, 403, "FORBIDDEN", noSecret],
    ["PATCH", N, JSON.stringify({ text: "a" }), { ...JSON_TYPE, "x-http-method": "DELETE" }, 403, "FORBIDDEN", "X-HTTP-Method is only allowed on POST, not on PATCH"],
  ];
  for (const [method, url, body, headers, status, code, message] of cases) assertError(await call(ctx, "noteWriter", method, url, body, headers), status, code, message);
  // What passes writes the note only: an identity coding, a foreign key of its own, V2 __metadata naming another entity.
  for (const [method, url, body, headers] of [
    ["PATCH", N, JSON.stringify({ text: "a" }), { ...JSON_TYPE, "content-encoding": "identity" }],
    ["PATCH", N, JSON.stringify({ label_ID: "S1" }), JSON_TYPE],
    ["PATCH", N, JSON.stringify({ "@odata.context": "$metadata#Secrets/$entity", text: "t" }), JSON_TYPE],
    ["MERGE", NV2, JSON.stringify({ __metadata: { uri: "Secrets('S1')" }, text: "x" }), JSON_TYPE],
  ] as const) {
    const res = await call(ctx, "noteWriter", method, url, body, headers);
    assert.ok(res.statusCode === 200 || res.statusCode === 204, `${method} ${body}: ${res.statusCode} ${res.body}`);
    assert.ok((await capEffects(ctx, res, "API_NOTES")).every((e) => e === "update Notes" || e === "get Notes"));
  }
  assert.equal(await entity(ctx, "cap", SECRET), secretBefore);
});

/** Sends `bytes` on one connection and reads until the server closes it (or `ms` pass). */
function rawExchange(port: number, bytes: string, ms = 3000): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let out = "";
    const timer = setTimeout(() => socket.destroy(), ms);
    socket.on("connect", () => socket.write(bytes));
    socket.on("data", (c: Buffer) => (out += c.toString("latin1")));
    socket.on("error", () => undefined);
    socket.on("close", () => (clearTimeout(timer), resolve(out)));
  });
}

/** Each answer's status and request id, in order. */
function answers(out: string): { status: number; id: string }[] {
  return [...out.matchAll(/HTTP\/1\.1 (\d{3}) [^\r]*\r\n((?:[^\r]+\r\n)*)\r\n/g)]
    .filter((m) => m[1] !== "100")
    .map((m) => ({ status: Number(m[1]), id: /x-request-id: ([^\r]+)/i.exec(m[2]!)?.[1] ?? "" }));
}

E2E("HTTP/1.1 framing hides nothing: Transfer-Encoding with Content-Length, conflicting lengths and a length past the body are refused; chunked trailers, Expect: 100-continue and a request pipelined behind a body each do only what they say, judged by effect", async (ctx) => {
  await ctx.world.app.listen({ port: 0, host: "127.0.0.1" });
  const port = (ctx.world.app.server.address() as AddressInfo).port;
  const auth = `Authorization: Bearer ${ctx.keys.noteWriter}`;
  const body = JSON.stringify({ text: "framed" });
  const N = `${NOTES4}/${N1}`;
  const head = (extra: string) => `PATCH ${N} HTTP/1.1\r\nHost: erplink\r\n${auth}\r\nAccept: application/json\r\nContent-Type: application/json\r\n${extra}`;
  const chunk = `${body.length.toString(16)}\r\n${body}\r\n`;
  const secretBefore = await entity(ctx, "cap", SECRET);
  const judge = async (id: string) => assertForwardedAsAuthorized({ store: ctx.world.store, flush: () => ctx.world.layer.logWriter.flush() }, ctx.capProxy, serviceOf(ctx, N), id, body);
  const cases: [label: string, bytes: string, expected: number[]][] = [
    ["Transfer-Encoding with Content-Length", `${head("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n")}\r\n${chunk}0\r\n\r\n`, [400]],
    ["two Content-Lengths", `${head(`Content-Length: ${body.length}\r\nContent-Length: 3\r\nConnection: close\r\n`)}\r\n${body}`, [400]],
    // The trailers name another method and type: neither reaches the back end, which updates the note.
    ["chunked with trailers", `${head("Transfer-Encoding: chunked\r\nTrailer: X-HTTP-Method, Content-Type\r\nConnection: close\r\n")}\r\n${chunk}0\r\nX-HTTP-Method: DELETE\r\nContent-Type: text/plain\r\n\r\n`, [200]],
    ["Expect: 100-continue", `${head(`Expect: 100-continue\r\nContent-Length: ${body.length}\r\nConnection: close\r\n`)}\r\n${body}`, [200]],
    // A second request behind the first one's body is a request of its own, authorized as such.
    ["pipelined", `${head(`Content-Length: ${body.length}\r\n`)}\r\n${body}GET ${NOTES4}/Secrets('S1') HTTP/1.1\r\nHost: erplink\r\n${auth}\r\nAccept: application/json\r\nConnection: close\r\n\r\n`, [200, 403]],
  ];
  for (const [label, bytes, expected] of cases) {
    const got = answers(await rawExchange(port, bytes));
    assert.equal(got.map((a) => a.status), expected, label);
    for (const a of got) {
      if (a.status === 400) continue; // refused by the HTTP parser, before any route: nothing logged, nothing forwarded
      await judge(a.id);
    }
  }
  // A Content-Length past the body: the request never completes, and nothing is forwarded for it.
  const before = ctx.capProxy.received.length;
  const cut = answers(await rawExchange(port, `${head(`Content-Length: ${body.length + 60}\r\nConnection: close\r\n`)}\r\n${body}`, 1500));
  assert.equal(cut.map((a) => a.status), []);
  assert.is(ctx.capProxy.received.length, before);
  assert.is((await entity(ctx, "cap", `${CAP_NOTES}/${N1}`)).text, "framed");
  assert.equal(await entity(ctx, "cap", SECRET), secretBefore);
});

E2E.run();
