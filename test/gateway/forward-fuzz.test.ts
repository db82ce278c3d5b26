/**
 * Property-based differential fuzzing of the data path (in process): an
 * erplink on a real port (raw HTTP/1.1 bytes, so nothing normalizes the
 * target before erplink sees it) in front of a recording upstream serving
 * two services (test-support/fuzz/model.ts), a data key with partial
 * permissions, and generated OData requests mixed with adversarial bytes
 * (test-support/fuzz/generators.ts). For every request, erplink must either
 * refuse it (an answer of its own, nothing forwarded) or forward exactly one
 * request that, read by every interpretation of test-support/fuzz/oracle.ts
 * (WHATWG URL, Node's legacy url.parse, a lenient back end, SAP CAP's
 * decode-first reading, SAP CAP's own OData parser), stays inside
 * the service root and touches only what the key may; reads and deletes
 * carry no body, a plain write's body is the client's, and the request log's
 * accesses are what erplink's analyzer makes of the received request.
 *
 * Environment: ERPLINK_FUZZ_SEED (default fixed), ERPLINK_FUZZ_RUNS (10000),
 * ERPLINK_FUZZ_TIME_MS (45000; a run that has not done ERPLINK_FUZZ_RUNS
 * requests by then fails), ERPLINK_FUZZ_SURVEY=<n> (also enumerate up to n distinct classes of
 * counterexamples, each shrunk, instead of stopping at the first;
 * ERPLINK_FUZZ_SURVEY_EXCLUDE=<regex> skips requests whose method, target or
 * body match, to look past a class already understood),
 * ERPLINK_FUZZ_DOUBLE_DECODE=1 (add the double-decoding interpretation).
 */
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { fuzzCase } from "../../test-support/fuzz/generators.js";
import {
  ShapeStats,
  checkExchange,
  classOf,
  envInt,
  fuzzSeed,
  provision,
  report,
  runCase,
  runParameters,
  startFuzzGateway,
  type Exchange,
  type FuzzGateway,
  type Problem,
} from "../../test-support/fuzz/harness.js";
import { FUZZ_UNIVERSE } from "../../test-support/fuzz/model.js";
import { readRequest, recompose, rfc3986Resolve, violations } from "../../test-support/fuzz/oracle.js";
import { RawClient } from "../../test-support/fuzz/raw-client.js";
import { startRecordingUpstream, type RecordingUpstream } from "../../test-support/fuzz/upstream.js";

interface Ctx {
  upstream: RecordingUpstream;
  gateway: FuzzGateway;
  client: RawClient;
  key: string;
}

const U = FUZZ_UNIVERSE;
const Fuzz = suite<Ctx>("forwarding fuzzer (in process)");

Fuzz.before(async (ctx) => {
  ctx.upstream = await startRecordingUpstream({ universe: U });
  ctx.gateway = await startFuzzGateway();
  ctx.key = await provision((m, p, b) => ctx.gateway.admin(m, p, b), U, ctx.upstream.baseUrl);
  ctx.client = new RawClient(ctx.gateway.host, ctx.gateway.port);
});

Fuzz.after(async (ctx) => {
  ctx.client?.close();
  await ctx.gateway?.close();
  await ctx.upstream?.close();
});

/** Runs one generated case and checks it. */
async function exchange(ctx: Ctx, c: Parameters<typeof runCase>[3]): Promise<{ ex: Exchange; problems: Problem[] }> {
  const ex = await runCase(ctx.client, ctx.upstream, ctx.key, c, (id, ms) => ctx.gateway.entry(id, ms));
  return { ex, problems: checkExchange(U, ex, { compareLog: true }) };
}

Fuzz("the upstream receives nothing the key may not do, under every reading of the request line", async (ctx) => {
  const seed = fuzzSeed();
  const numRuns = envInt("ERPLINK_FUZZ_RUNS", 10_000);
  const timeLimit = envInt("ERPLINK_FUZZ_TIME_MS", 45_000);
  const stats = { runs: 0, forwarded: 0, refused: 0, batches: 0 };
  const shapes = new ShapeStats();
  const started = Date.now();
  const property = fc.asyncProperty(fuzzCase(U), async ({ case: c }) => {
    stats.runs++;
    if (c.kind !== "plain") stats.batches++;
    const { ex, problems } = await exchange(ctx, c);
    if (ex.forwarded.length > 0) stats.forwarded++;
    else stats.refused++;
    shapes.count(c, ex.forwarded.length > 0);
    if (problems.length > 0) throw new Error(`\n${report(ex, problems)}\n`);
  });
  try {
    await fc.assert(property, runParameters(seed, numRuns, timeLimit));
    // The time limit is a safety net, not a way to pass on fewer requests.
    assert.ok(stats.runs >= numRuns, `only ${stats.runs} of ${numRuns} requests ran within ${timeLimit} ms`);
  } finally {
    console.log(
      `forward-fuzz: seed ${seed}, ${stats.runs} requests (shrinking included) in ${((Date.now() - started) / 1000).toFixed(1)} s: ` +
        `${stats.forwarded} forwarded, ${stats.refused} refused, ${stats.batches} $batch; by shape (forwarded/requests): ${shapes}`,
    );
  }
});

Fuzz("the oracle itself: known requests read as expected under each interpretation", () => {
  const root = { instance: "prod", service: "SALES" };
  const read = (method: string, target: string, body = "", headers: Record<string, string> = {}) =>
    Object.fromEntries(
      readRequest(U, root, { method, target, headers: { "if-match": "*", prefer: "return=minimal", ...headers }, body: Buffer.from(body) }).map((r) => [
        r.interpretation,
        violations(U, "SALES", r).map((v) => v.kind),
      ]),
    );
  const clean = { whatwg: [], legacy: [], lenient: [], decodefirst: [], capgrammar: [] };
  assert.equal(read("GET", "/svc/v4/sales/Orders(1)?$expand=Customer($select=Name)&$filter=Customer/Name%20eq%20'x'&sap-client=100"), clean);
  assert.equal(read("PATCH", "/svc/v4/sales/OrderItems(OrderID=1,ItemNo=2)", '{"Quantity":1}'), clean);
  assert.equal(read("POST", "/svc/v4/sales/$batch", "--b\r\nContent-Type: application/http\r\n\r\nGET Orders?$top=1 HTTP/1.1\r\n\r\n\r\n--b--\r\n", { "content-type": "multipart/mixed; boundary=b" }), clean);
  // Backslashes and a fragment: every URL parser walks out of the key into Products.
  assert.equal(read("GET", "/svc/v4/sales/Orders('\\..\\Products#')"), {
    whatwg: ["unpermitted"],
    legacy: ["unresolved-mention", "unresolved-mention"],
    lenient: ["unpermitted"],
    decodefirst: [],
    capgrammar: [],
  });
  // Option names a lenient back end normalizes, and ';' as a separator.
  assert.equal(read("GET", "/svc/v4/sales/Orders?%20$expand=Items"), { whatwg: [], legacy: [], lenient: ["unpermitted"], decodefirst: ["unpermitted"], capgrammar: ["unpermitted"] });
  assert.equal(read("GET", "/svc/v4/sales/Orders?$top=1;$expand=Items"), { whatwg: [], legacy: [], lenient: ["unpermitted"], decodefirst: [], capgrammar: [] });
  assert.equal(read("GET", "/svc/v4/sales/Orders?$top=1;sap-client=200"), { whatwg: [], legacy: [], lenient: ["sap-switch"], decodefirst: [], capgrammar: [] });
  // An encoded '&' splits the query for a back end that decodes first (SAP CAP), but not inside a quoted literal of an expression.
  assert.equal(read("GET", "/svc/v4/sales/Orders?x=a%26$expand%3DItems"), { ...clean, decodefirst: ["unpermitted"], capgrammar: ["unpermitted"] });
  assert.equal(read("GET", "/svc/v4/sales/Orders?$filter=Note%20eq%20'a%26$expand%3DItems'"), clean);
  // Encoded separators in a literal: a decode-first back end leaves the service.
  assert.equal(read("GET", "/svc/v4/sales/Orders('%5C..%5C..%5Cmaster%5CBusinessPartners')"), { whatwg: [], legacy: [], lenient: ["escape"], decodefirst: [], capgrammar: [] });
  // SAP CAP's own grammar: a JSON object or list ends at its first '}' or ']' whatever quotes lie between, a nested
  // $search at the first ')'; inside a lambda a path without the variable is the collection's.
  assert.equal(read("GET", `/svc/v4/sales/Orders?$filter=ID eq {"a":"'"} or Customer/Favorite/Name eq 'x' or ID eq {"b":"'"}`), { ...clean, capgrammar: ["unpermitted"] });
  assert.equal(read("GET", `/svc/v4/sales/Orders?$filter=ID eq ["'"] or Customer/Favorite/Name eq 'x' or ID eq ["'"]`), { ...clean, capgrammar: ["unpermitted"] });
  assert.equal(read("GET", "/svc/v4/sales/Orders?$expand=Customer($search='x),Items($search=')"), { ...clean, capgrammar: ["unpermitted"] });
  assert.equal(read("GET", "/svc/v4/sales/Customers?$filter=Orders/any(d:Items/any())").capgrammar, ["unpermitted"]);
  // A lone name that is no navigation where it stands, a lambda variable named like one: no reader follows them.
  assert.equal(read("GET", "/svc/v4/sales/Customers?$filter=Items%20eq%20null"), clean);
  assert.equal(read("GET", "/svc/v4/sales/Customers?$filter=Orders/any(Items:Items/Status%20eq%20'x')"), clean);
  // Navigations in expressions, and in a batch part.
  assert.equal(read("GET", "/svc/v4/sales/Orders?$filter=Items/any(d:d/Product/Name%20eq%20'x')").whatwg, ["unpermitted", "unpermitted"]);
  assert.equal(read("POST", "/svc/v4/sales/$batch", "--b\r\n\r\nGET Products HTTP/1.1\r\n\r\n\r\n--b--\r\n", { "content-type": "multipart/mixed; boundary=b" }).lenient, ["unpermitted"]);
  // A deep insert in a body, whatever the content type says.
  assert.equal(read("POST", "/svc/v4/sales/Products", '\ufeff{"Supplier":{"ID":"S"}}', { "content-type": "text/plain" }).whatwg, ["unpermitted"]);
  // URLs in bodies, read as each interpretation resolves them (the service root is the base): a reader that resolves
  // nothing (decodefirst) reads the first set written, readers that remove dot segments (encoded ones too, after
  // decoding, or with matrix parameters, leniently) the set they lead to; a reference is a read, not a create.
  const item = "/svc/v4/sales/OrderItems(OrderID=1,ItemNo=1)";
  const bind = (url: string, extra = "") => read("MERGE", item, `{${extra}"Order@odata.bind":${JSON.stringify(url)}}`);
  assert.equal(bind("Orders(1)"), clean);
  assert.equal(bind("http://localhost/odata/prod/SALES/Orders(1)"), clean);
  assert.equal(bind("http://localhost/odata/prod/SALES/Products('x')/../Orders(1)"), { ...clean, decodefirst: ["unpermitted"] });
  assert.equal(bind("Orders(1)/../Products('x')"), {
    whatwg: ["unpermitted"],
    legacy: ["unpermitted"],
    lenient: ["unpermitted"],
    decodefirst: ["unresolved-mention", "unresolved-mention"],
    capgrammar: ["unpermitted"],
  });
  assert.equal(bind("Orders(1)/%2e%2e/Products('x')").whatwg, ["unpermitted"]);
  assert.equal(bind("Orders(1)/..;x=1/Products('x')").lenient, ["unpermitted"]);
  // Another service's root, directly, or as the base a context URL sets for relative URLs.
  assert.equal(bind("/odata/prod/MASTER/BusinessPartners('1')"), { whatwg: ["escape"], legacy: ["escape"], lenient: ["escape"], decodefirst: ["escape"], capgrammar: ["escape"] });
  assert.equal(bind("Orders(1)", '"@odata.context":"$metadata/../../master/$metadata#X",'), { whatwg: ["escape"], legacy: ["escape"], lenient: ["escape"], decodefirst: [], capgrammar: ["escape"] });
  assert.equal(bind("Orders(1)", '"@odata.context":"$metadata#OrderItems/$entity",'), clean);
  // Encoded delimiters in the authority: a reader that decodes first finds another path there.
  assert.equal(bind("http://..%5CProducts('x')%23h/odata/prod/SALES/Orders(1)"), { ...clean, lenient: ["unpermitted"] });
  // A nested entity reference links (a read); with data beside it, it is an entity (a create, and an update).
  assert.equal(read("MERGE", item, '{"Order":{"@odata.id":"Orders(1)"}}'), clean);
  assert.equal(read("MERGE", item, '{"Order":{"@odata.id":"Orders(1)","Note":"x"}}').whatwg, ["unpermitted", "unpermitted"]);
});

Fuzz("the oracle itself: operations need their grant, links and compositions what back ends do with them", () => {
  const read = (service: string, instance: string, method: string, target: string, body = "", headers: Record<string, string> = {}) =>
    Object.fromEntries(
      readRequest(U, { instance, service }, { method, target, headers: { "if-match": "*", prefer: "return=minimal", ...headers }, body: Buffer.from(body) }).map((r) => [
        r.interpretation,
        [...new Set(violations(U, service, r).map((v) => v.kind))],
      ]),
    );
  const clean = { whatwg: [], legacy: [], lenient: [], decodefirst: [], capgrammar: [] };
  const all = (kind: string) => ({ whatwg: [kind], legacy: [kind], lenient: [kind], decodefirst: [kind], capgrammar: [kind] });
  const G = "01234567-89ab-cdef-0123-456789abcdef";
  const shipment = `/svc/v4/logistics/Shipments(${G})`;
  // A call needs the operation's grant (by its qualified name, whether the call is qualified or not; an import by its
  // own name), a read of what it is bound to and of the set its result lies in.
  assert.equal(read("LOGISTICS", "prod", "GET", `${shipment}/Lg.Track(at=2024-01-31T10:00:00Z)`), clean);
  assert.equal(read("LOGISTICS", "prod", "GET", `${shipment}/Track(at=2024-01-31T10:00:00Z)`), clean);
  assert.equal(read("LOGISTICS", "prod", "POST", `${shipment}/Lg.Dispatch`, '{"mode":"Air"}'), all("unpermitted"));
  assert.equal(read("SALES", "prod", "GET", "/svc/v4/sales/TopCustomers(limit=1)"), clean);
  assert.equal(read("SALES", "prodv2", "GET", "/svc/v2/sales/TopCustomers?limit=1"), clean);
  assert.equal(read("SALES", "prod", "POST", "/svc/v4/sales/Reset"), all("unpermitted"));
  assert.equal(read("SALES", "prod", "GET", "/svc/v4/sales/Orders(1)/Fz.Recent()"), all("unpermitted"));
  // An operation named in an expression may read anything (CAP's own parser refuses the name).
  assert.equal(read("SALES", "prod", "GET", "/svc/v4/sales/Orders?$filter=Total%20gt%201"), { ...all("touches-anything"), capgrammar: [] });
  // Reading links lists both sets; removing one deletes its source, and a composition's child.
  assert.equal(read("SALES", "prod", "GET", "/svc/v4/sales/Orders(1)/Items/$ref"), all("unpermitted"));
  assert.equal(read("LOGISTICS", "prod", "GET", `${shipment}/Parcels/$ref`), clean);
  assert.equal(read("LOGISTICS", "prod", "DELETE", `${shipment}/Parcels(ShipmentID=${G},ParcelNo=1)/$ref`), clean);
  assert.equal(read("SALES", "prod", "DELETE", "/svc/v4/sales/Orders(1)/Items(OrderID=1,ItemNo=2)/$ref"), all("unpermitted"));
  // A single-valued composition set to null deletes its child; replaced by a new one, creates and updates it too.
  assert.equal(read("LOGISTICS", "prod", "PATCH", shipment, '{"Manifest":null}'), clean);
  assert.equal(read("LOGISTICS", "prod", "PATCH", shipment, '{"Manifest":{"ManifestID":1}}'), all("unpermitted"));
  assert.equal(read("LOGISTICS", "prod", "PATCH", shipment, '{"Parcels":[]}'), clean);
  // An update is answered with what it changed, unless it asks for no answer.
  assert.equal(read("SALES", "prod", "MERGE", "/svc/v4/sales/OrderItems(OrderID=1,ItemNo=2)", '{"Quantity":1}', { prefer: "" }), all("unpermitted"));
  // V4 control information means nothing in a V2 body; in a V4 one the reference is read.
  const escaping = `{"Parcels":[{"@odata.id":"../master/BusinessPartners('1')"}]}`;
  assert.equal(read("LOGISTICS", "prodv2", "POST", "/svc/v2/logistics/Shipments", escaping), clean);
  assert.equal(read("LOGISTICS", "prod", "POST", "/svc/v4/logistics/Shipments", escaping), { ...all("escape"), decodefirst: [] });
});

Fuzz("the oracle's own RFC 3986 reference resolution: the RFC's examples (§5.4), fragments dropped", () => {
  const base = "http://a/b/c/d;p?q";
  const examples: [string, string][] = [
    ["g:h", "g:h"], ["g", "http://a/b/c/g"], ["./g", "http://a/b/c/g"], ["g/", "http://a/b/c/g/"], ["/g", "http://a/g"], ["//g", "http://g"],
    ["?y", "http://a/b/c/d;p?y"], ["g?y", "http://a/b/c/g?y"], ["#s", "http://a/b/c/d;p?q#s"], ["g#s", "http://a/b/c/g#s"], ["g?y#s", "http://a/b/c/g?y#s"],
    [";x", "http://a/b/c/;x"], ["g;x", "http://a/b/c/g;x"], ["g;x?y#s", "http://a/b/c/g;x?y#s"], ["", "http://a/b/c/d;p?q"], [".", "http://a/b/c/"],
    ["./", "http://a/b/c/"], ["..", "http://a/b/"], ["../", "http://a/b/"], ["../g", "http://a/b/g"], ["../..", "http://a/"], ["../../", "http://a/"],
    ["../../g", "http://a/g"],
    // §5.4.2, abnormal examples.
    ["../../../g", "http://a/g"], ["../../../../g", "http://a/g"], ["/./g", "http://a/g"], ["/../g", "http://a/g"], ["g.", "http://a/b/c/g."],
    [".g", "http://a/b/c/.g"], ["g..", "http://a/b/c/g.."], ["..g", "http://a/b/c/..g"], ["./../g", "http://a/b/g"], ["./g/.", "http://a/b/c/g/"],
    ["g/./h", "http://a/b/c/g/h"], ["g/../h", "http://a/b/c/h"], ["g;x=1/./y", "http://a/b/c/g;x=1/y"], ["g;x=1/../y", "http://a/b/c/y"],
    ["g?y/./x", "http://a/b/c/g?y/./x"], ["g?y/../x", "http://a/b/c/g?y/../x"], ["g#s/./x", "http://a/b/c/g#s/./x"], ["g#s/../x", "http://a/b/c/g#s/../x"],
    ["http:g", "http:g"],
  ];
  for (const [ref, expected] of examples) assert.is(recompose(rfc3986Resolve(base, ref)), expected.split("#")[0], ref);
});

const surveyClasses = Number(process.env.ERPLINK_FUZZ_SURVEY ?? 0);
if (surveyClasses > 0) {
  Fuzz("survey: distinct classes of counterexamples, each shrunk", async (ctx) => {
    const seed = fuzzSeed();
    // Exploration only: requests matching this pattern are skipped, to look past a class already understood.
    const exclude = process.env.ERPLINK_FUZZ_SURVEY_EXCLUDE ? new RegExp(process.env.ERPLINK_FUZZ_SURVEY_EXCLUDE, "i") : undefined;
    const known = new Map<string, string>();
    for (let round = 0; round < surveyClasses; round++) {
      const property = fc.asyncProperty(fuzzCase(U), async ({ case: c }) => {
        if (exclude !== undefined) fc.pre(!exclude.test(`${c.method} ${c.target} ${c.body?.toString("latin1") ?? ""}`));
        const { ex, problems } = await exchange(ctx, c);
        if (problems.length === 0) return;
        const cls = classOf(problems);
        // A class already found passes, so that the search (and the shrinking) stays on a new one.
        if (known.has(cls)) return;
        throw new Error(`${cls}\n${report(ex, problems)}`);
      });
      const out = await fc.check(property, runParameters(seed + round, envInt("ERPLINK_FUZZ_RUNS", 10_000), envInt("ERPLINK_FUZZ_TIME_MS", 45_000)));
      if (!out.failed || out.errorInstance === undefined) break;
      const message = String((out.errorInstance as Error).message ?? out.errorInstance);
      const cls = message.split("\n")[0]!;
      known.set(cls, message);
      console.log(`\n=== class ${known.size}: ${cls} (seed ${out.seed}, path ${out.counterexamplePath}, shrunk ${out.numShrinks}x)\n${message.split("\n").slice(1).join("\n")}`);
    }
    console.log(`survey: ${known.size} classes: ${[...known.keys()].join(", ")}`);
  });
}

Fuzz.run();
