/**
 * The cost of rewriting a V2 answer's URLs (src/gateway/data/v2-urls.ts) on
 * a 1 MB OData V2 JSON answer (SAP-style entities with __metadata and
 * __deferred URLs), against passing the same bytes through a no-op stream,
 * in the same run, in 64 KiB chunks as a socket delivers them.
 *
 *     node --import tsx bench/v2-urls.ts
 */
import { PassThrough, Readable } from "node:stream";
import { clientUrl } from "../src/gateway/data/headers.js";
import { ServiceRoot } from "../src/gateway/data/service-root.js";
import { rewriteV2Answer } from "../src/gateway/data/v2-urls.js";

const root = new ServiceRoot({ baseUrl: "http://backend:8080/sap/opu/odata/sap", servicePath: (s) => s, sapClient: "" }, "API_BUSINESS_PARTNER");
const client = { origin: "https://gw.example", proto: "https", host: "gw.example", path: "/odata/sap/API_BUSINESS_PARTNER" };
const BE = root.url;

function answer(bytes: number): Buffer {
  const rows: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const uri = `${BE}/A_BusinessPartner('${1000000 + i}')`;
    const row = JSON.stringify({
      __metadata: { id: uri, uri, type: "API_BUSINESS_PARTNER.A_BusinessPartnerType" },
      BusinessPartner: String(1000000 + i),
      BusinessPartnerFullName: `Partner ${i} GmbH`,
      SearchTerm1: "PARTNER",
      CreationDate: "/Date(1704067200000)/",
      IsNaturalPerson: false,
      to_BusinessPartnerAddress: { __deferred: { uri: `${uri}/to_BusinessPartnerAddress` } },
      to_Customer: { __deferred: { uri: `${uri}/to_Customer` } },
    });
    rows.push(row);
    size += row.length + 1;
  }
  return Buffer.from(JSON.stringify({ d: { results: "@" } }).replace('"@"', `[${rows.join(",")}]`));
}

async function run(body: Buffer, through: (answer: Readable) => Readable): Promise<number> {
  const chunks: Buffer[] = [];
  for (let i = 0; i < body.length; i += 65536) chunks.push(body.subarray(i, i + 65536));
  const started = performance.now();
  let out = 0;
  for await (const c of through(Readable.from(chunks))) out += (c as Buffer).length;
  if (out === 0) throw new Error("nothing came out");
  return performance.now() - started;
}

const body = answer(1 << 20);
// The same answer from a back end that honours X-Forwarded-*: its URLs name erplink already.
const named = Buffer.from(body.toString().replaceAll(BE, `${client.origin}${client.path}`));
const rewrite = (url: string) => clientUrl(url, root, client);
const json = () => ({ "content-type": "application/json" });
const cases: [string, Buffer, (answer: Readable) => Readable][] = [
  ["pass-through", body, (a) => a.pipe(new PassThrough())],
  ["rewrite", body, (a) => rewriteV2Answer(a, json(), rewrite, root.path)],
  ["X-Forwarded", named, (a) => rewriteV2Answer(a, json(), rewrite, root.path)],
];
const ROUNDS = 30;
const times: Record<string, number[]> = {};
for (let round = -5; round < ROUNDS; round++) {
  for (const [name, input, through] of cases) {
    const ms = await run(input, through);
    if (round >= 0) (times[name] ??= []).push(ms);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`answer: ${(body.length / 1024).toFixed(0)} KiB of V2 JSON, ${ROUNDS} rounds after 5 warm-up, 64 KiB chunks`);
for (const [name] of cases) {
  const m = median(times[name]!);
  console.log(`${name.padEnd(13)} median ${m.toFixed(2)} ms  (${((body.length / 1048576) / (m / 1000)).toFixed(0)} MB/s)`);
}
