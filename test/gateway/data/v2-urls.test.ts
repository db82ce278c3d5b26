/**
 * The rewriting of V2 answers' URLs (src/gateway/data/v2-urls.ts): only the
 * places where OData puts URLs, only URLs under the back end's service root,
 * every other byte as it came, whatever the chunks the answer arrives in.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import fc from "fast-check";
import { Readable } from "node:stream";
import zlib from "node:zlib";
import { clientUrl } from "../../../src/gateway/data/headers.js";
import { ServiceRoot } from "../../../src/gateway/data/service-root.js";
import { rewriteV2Answer, v2UrlRewriter } from "../../../src/gateway/data/v2-urls.js";

const root = new ServiceRoot({ baseUrl: "http://backend:8080/sap/opu/odata/sap", servicePath: (s) => s, sapClient: "" }, "API_BP");
const client = { origin: "https://gw.example", proto: "https", host: "gw.example", path: "/odata/sap/API_BP" };
const rewrite = (url: string) => clientUrl(url, root, client);
const BE = "http://backend:8080/sap/opu/odata/sap/API_BP";
const GW = "https://gw.example/odata/sap/API_BP";

async function through(format: "json" | "xml", chunks: Buffer[]): Promise<string> {
  const out: Buffer[] = [];
  for await (const c of Readable.from(chunks).pipe(v2UrlRewriter(format, rewrite))) out.push(c as Buffer);
  return Buffer.concat(out).toString("utf8");
}

/** Splits `bytes` at the given (sorted, deduplicated) cut points. */
function split(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const p of [...points, bytes.length]) {
    if (p > from) chunks.push(bytes.subarray(from, p));
    from = Math.max(from, p);
  }
  return chunks;
}

const JSON_IN =
  `\uFEFF{"d" : {"results":[{"__metadata":{"id":"${BE}/A('1')","uri":"${BE}/A('1')","type":"API_BP.A","media_src":"/sap/opu/odata/sap/API_BP/A('1')/$value","edit_media":"${BE}/A('1')/$value"},` +
  `"Url":"${BE}/A('2')","uri":"${BE}/A('3')","Name":"Zoë \\"Ω\\" 😀","N":{"__deferred":{"uri":"${BE}/A('1')/to_B"}},"X":{"__deferred":{"uri":"http://other:1/sap/opu/odata/sap/API_BP/A"}},` +
  `"E":{"results":[{"__metadata":{"uri":"${BE.replace("/", "\\/")}/B(1)"},"n":-1.5e3,"t":true,"f":null}],"__next":"${BE}/A('1')/E?$skiptoken=1"},"Other":{"__metadata":{"uri":"http://backend:8080/sap/opu/odata/sap/API_BPX/A"}}}],` +
  `"__count":"2","__next":"${BE}/A?$skiptoken=2&$top=9"}}\n`;

const JSON_OUT =
  `\uFEFF{"d" : {"results":[{"__metadata":{"id":"${GW}/A('1')","uri":"${GW}/A('1')","type":"API_BP.A","media_src":"${GW}/A('1')/$value","edit_media":"${GW}/A('1')/$value"},` +
  `"Url":"${BE}/A('2')","uri":"${BE}/A('3')","Name":"Zoë \\"Ω\\" 😀","N":{"__deferred":{"uri":"${GW}/A('1')/to_B"}},"X":{"__deferred":{"uri":"http://other:1/sap/opu/odata/sap/API_BP/A"}},` +
  `"E":{"results":[{"__metadata":{"uri":"${GW}/B(1)"},"n":-1.5e3,"t":true,"f":null}],"__next":"${GW}/A('1')/E?$skiptoken=1"},"Other":{"__metadata":{"uri":"http://backend:8080/sap/opu/odata/sap/API_BPX/A"}}}],` +
  `"__count":"2","__next":"${GW}/A?$skiptoken=2&$top=9"}}\n`;

const ATOM = "http://www.w3.org/2005/Atom";
const D = "http://schemas.microsoft.com/ado/2007/08/dataservices";
const M = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata";
const xml = (root: string) =>
  `<?xml version="1.0" encoding="utf-8"?>\n<feed xml:base="${root}/" xmlns="${ATOM}" xmlns:d="${D}" xmlns:m="${M}">` +
  `<id>${root}/A</id><title type="text">A</title><!-- a comment with ${BE}/A -->` +
  `<entry m:etag="W/&quot;1&quot;"><id>\n  ${root}/A('1')\n</id><link href="A('1')" rel="edit" title="A"/>` +
  `<link href = '${root}/A(&apos;1&apos;)/to_B' rel="http://schemas.microsoft.com/ado/2007/08/dataservices/related/to_B" type="application/atom+xml;type=feed"/>` +
  `<content type="application/octet-stream" src="${root}/A('1')/$value"/>` +
  `<m:properties><d:Url>${BE}/A('2')</d:Url><d:uri>${BE}/A('3')</d:uri><d:Name>Zoë &lt;Ω&gt; 😀</d:Name><d:Cdata><![CDATA[${BE}/A]]></d:Cdata></m:properties></entry>` +
  `<link rel="next" href="${root}/A?$skiptoken=2&amp;$top=9"/><link rel="self" href="http://other:1/x"/></feed>`;
const XML_IN = xml(BE).replace(`<link rel="self" href="http://other:1/x"/>`, `<link rel="self" href="http://other:1/x"/><link rel="alternate" href="/sap/opu/odata/sap/API_BP/A"/>`);
const XML_OUT = xml(GW)
  .replace(`<link rel="self" href="http://other:1/x"/>`, `<link rel="self" href="http://other:1/x"/><link rel="alternate" href="${GW}/A"/>`)
  .replace(`<!-- a comment with ${GW}/A -->`, `<!-- a comment with ${BE}/A -->`)
  .replace(`<d:Url>${GW}/A('2')</d:Url><d:uri>${GW}/A('3')</d:uri>`, `<d:Url>${BE}/A('2')</d:Url><d:uri>${BE}/A('3')</d:uri>`)
  .replace(`<![CDATA[${GW}/A]]>`, `<![CDATA[${BE}/A]]>`);

const T = suite("V2 answers' URLs rewritten as they stream");

T("JSON: URL members under the service root name erplink; data values, other hosts and other services stay; every other byte as it came", async () => {
  assert.is(await through("json", [Buffer.from(JSON_IN)]), JSON_OUT);
});

T("JSON: split at every byte, the answer is the same", async () => {
  const bytes = Buffer.from(JSON_IN);
  assert.is(await through("json", [...bytes].map((b) => Buffer.from([b]))), JSON_OUT);
});

T("JSON: split into random chunks, the answer is the one of a single chunk", async () => {
  const bytes = Buffer.from(JSON_IN);
  await fc.assert(fc.asyncProperty(fc.array(fc.nat(), { maxLength: 40 }), async (cuts) => (await through("json", split(bytes, cuts))) === JSON_OUT), { numRuns: 300, seed: 7 });
});

T("Atom: xml:base, <id>, link/@href and content/@src name erplink; properties, comments, CDATA and other hosts stay", async () => {
  assert.is(await through("xml", [Buffer.from(XML_IN)]), XML_OUT);
});

T("Atom: split at every byte, and into random chunks, the answer is the one of a single chunk", async () => {
  const bytes = Buffer.from(XML_IN);
  assert.is(await through("xml", [...bytes].map((b) => Buffer.from([b]))), XML_OUT);
  await fc.assert(fc.asyncProperty(fc.array(fc.nat(), { maxLength: 40 }), async (cuts) => (await through("xml", split(bytes, cuts))) === XML_OUT), { numRuns: 300, seed: 7 });
});

T("a $links answer's <uri> names erplink", async () => {
  const links = `<links xmlns="${D}"><uri>${BE}/B(1)</uri><uri>${BE}/B(2)</uri></links>`;
  assert.is(await through("xml", [Buffer.from(links)]), `<links xmlns="${D}"><uri>${GW}/B(1)</uri><uri>${GW}/B(2)</uri></links>`);
});

T("what does not parse passes unchanged from where it stops parsing, bytes intact", async () => {
  const broken = Buffer.concat([Buffer.from(`{"d":{"__next":"${BE}/A"}} garbage \u00ff`), Buffer.from([0xff, 0xfe, 0x00])]);
  const out = await through("json", [broken]);
  assert.ok(out.startsWith(`{"d":{"__next":"${GW}/A"}}`));
  const html = Buffer.from(`<html><body><a href="${BE}/A">x</a><br></body></html>`);
  assert.is(await through("xml", [html]), html.toString());
  const latin1 = Buffer.from(`<?xml version="1.0" encoding="ISO-8859-1"?><feed xmlns="${ATOM}" xml:base="${BE}/"><title>\u00e9</title></feed>`, "latin1");
  const out1: Buffer[] = [];
  for await (const c of Readable.from([latin1]).pipe(v2UrlRewriter("xml", rewrite))) out1.push(c as Buffer);
  assert.equal(Buffer.concat(out1), latin1);
});

T("a gzip-coded answer is decoded, rewritten and passed without coding or length", async () => {
  const headers: Record<string, string | string[]> = { "content-type": "application/json", "content-encoding": "gzip", "content-length": "99" };
  const body = rewriteV2Answer(Readable.from([zlib.gzipSync(JSON_IN)]), headers, rewrite);
  const out: Buffer[] = [];
  for await (const c of body) out.push(c as Buffer);
  assert.is(Buffer.concat(out).toString(), JSON_OUT);
  assert.equal(headers, { "content-type": "application/json" });
});

T("an answer that does not name the back end's root in its first 64 KB passes byte for byte, untokenized; one that does is rewritten, in any chunking (fast-check)", async () => {
  const read = async (body: Readable) => {
    const out: Buffer[] = [];
    for await (const c of body) out.push(c as Buffer);
    return Buffer.concat(out);
  };
  // As a back end that honours X-Forwarded-* writes it: erplink's URLs, and (invalid JSON further on, which a tokenizer would stop at) nothing of its own root.
  const named = Buffer.from(JSON_IN);
  const unnamed = Buffer.from(JSON_OUT.replaceAll("/sap/opu/odata/sap/API_BP", "/sap/opu/odata/sap/API_OTHER").replace("}}\n", "}} not json"));
  await fc.assert(
    fc.asyncProperty(fc.array(fc.nat(), { maxLength: 8 }), async (cuts) => {
      const h1: Record<string, string | string[]> = { "content-type": "application/json", "content-length": "1" };
      assert.equal(await read(rewriteV2Answer(Readable.from(split(unnamed, cuts)), h1, rewrite, "/sap/opu/odata/sap/API_BP")), unnamed);
      const h2: Record<string, string | string[]> = { "content-type": "application/json" };
      assert.is((await read(rewriteV2Answer(Readable.from(split(named, cuts)), h2, rewrite, "/sap/opu/odata/sap/API_BP"))).toString(), JSON_OUT);
    }),
    { numRuns: 100 },
  );
  // Past the probe: a large answer whose first 64 KB name the root is rewritten to its end.
  const big = Buffer.from(`{"d":{"results":[${Array.from({ length: 2000 }, (_, i) => `{"__metadata":{"uri":"${BE}/A('${i}')"},"Name":"${"x".repeat(40)}"}`).join(",")}]}}`);
  const out = (await read(rewriteV2Answer(Readable.from(split(big, [1000, 70_000, 150_000])), { "content-type": "application/json" }, rewrite, "/sap/opu/odata/sap/API_BP"))).toString();
  assert.ok(big.length > 2 * 64 * 1024);
  assert.is(out.split(`${GW}/A('`).length - 1, 2000);
  assert.not.ok(out.includes(BE));
});

T("answers of other types, another charset or an unknown coding pass as they are, with their headers", async () => {
  const cases: Record<string, string>[] = [{ "content-type": "text/plain" }, { "content-type": "application/json; charset=iso-8859-1" }, { "content-type": "application/json", "content-encoding": "zstd" }, { "content-type": "multipart/mixed; boundary=b" }];
  for (const h of cases) {
    const headers: Record<string, string | string[]> = { ...h, "content-length": "3" };
    const body = Readable.from([Buffer.from("abc")]);
    assert.is(rewriteV2Answer(body, headers, rewrite), body);
    assert.equal(headers, { ...h, "content-length": "3" });
  }
});

T("a gzip coding that does not decode is the back end's fault: a 502", async () => {
  const headers: Record<string, string | string[]> = { "content-type": "application/json", "content-encoding": "gzip" };
  const body = rewriteV2Answer(Readable.from([Buffer.from("not gzip at all")]), headers, rewrite);
  try {
    for await (const _ of body) void _;
    assert.unreachable("it decoded");
  } catch (err) {
    assert.is((err as { statusCode?: number; status?: number }).statusCode ?? (err as { status?: number }).status, 502);
  }
});

T.run();
