/**
 * Unit and property tests of src/gateway/odata/target.ts, erplink's own
 * encoder of the upstream request target, and of the analyzer's canonical
 * target: what is encoded decodes back to exactly the input under every
 * decoder a back end may use (decodeURIComponent, form decoding with
 * URLSearchParams, Node's querystring), the WHATWG URL parser leaves it
 * unchanged, and nothing in it can be read as structure (no `/`, `?`, `#`,
 * `\`, `&`, `;`, `=` or `+` where they would split or join); the analyzer is
 * a fixed point on what it writes.
 */
import querystring from "node:querystring";
import fc from "fast-check";
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { parseMetadata } from "../../../src/gateway/odata/metadata.js";
import { analyzeRequest } from "../../../src/gateway/odata/request.js";
import { Refusal } from "../../../src/gateway/odata/syntax.js";
import { encodeQueryValue, encodeSegment, serializeQuery, serializeTarget } from "../../../src/gateway/odata/target.js";
import { V2_METADATA, V4_METADATA } from "../../../test-support/odata/fixtures.js";

const SEED = Number(process.env.ERPLINK_FUZZ_SEED ?? 20261124);

const T = suite("target: encoder");

const refusal = (fn: () => unknown): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (err instanceof Refusal) return err.message;
    throw err;
  }
};

T("structure stays, data inside literals is encoded, doubled quotes stay", () => {
  const cases: [string, string][] = [
    ["SalesOrders", "SalesOrders"],
    ["SalesOrders(1)", "SalesOrders(1)"],
    ["Customers('O''Neil')", "Customers('O''Neil')"],
    ["PriceConditions(OrderID=1,Type='a,b')", "PriceConditions(OrderID=1,Type='a%2Cb')"],
    ["A('c=d&e;f h+i..')", "A('c%3Dd%26e%3Bf%20h%2Bi..')"],
    ["A(datetime'2020-01-01T00:00')", "A(datetime'2020-01-01T00%3A00')"],
    ["A(Date=2020-01-01T00:00:00+01:00)", "A(Date=2020-01-01T00:00:00+01:00)"],
    ["A('ü€😀')", "A('%C3%BC%E2%82%AC%F0%9F%98%80')"],
    ["Ünïcode", "%C3%9Cn%C3%AFcode"],
    ["$count", "$count"],
    ["A(@p)", "A(@p)"],
  ];
  for (const [input, output] of cases) assert.is(encodeSegment(input), output, input);
});

T("what cannot be written unambiguously is refused, naming the character", () => {
  const cases: [string, string][] = [
    ["", "empty path segment"],
    ["..", "dot segments are not allowed in the path"],
    [".", "dot segments are not allowed in the path"],
    ["A\\B", "character '\\' is not allowed in path segment 'A\\B' outside a quoted literal"],
    ["A#", "character '#' is not allowed in path segment 'A#' outside a quoted literal"],
    ["A?b", "character '?' is not allowed in path segment 'A?b' outside a quoted literal"],
    ["A/B", "character '/' is not allowed in path segment 'A/B' outside a quoted literal"],
    ["A;x=1", "character ';' is not allowed in path segment 'A;x=1' outside a quoted literal"],
    ["A%25", "character '%' is not allowed in path segment 'A%25' outside a quoted literal"],
    ["A\u0000", "character U+0000 is not allowed in path segment 'A\u0000' outside a quoted literal"],
    ["A\u00a0", "character U+00A0 is not allowed in path segment 'A\u00a0' outside a quoted literal"],
    ['F(p=["a"])', "character '[' is not allowed in path segment 'F(p=[\"a\"])' outside a quoted literal"],
    ["A('x)", "unterminated string literal in path segment 'A('x)'"],
    // A back end that trims a segment would read ` $entity` as the system resource `$entity`.
    [" $entity", "character U+0020 is not allowed in path segment ' $entity' outside a quoted literal"],
    ["A(ID = 1)", "character U+0020 is not allowed in path segment 'A(ID = 1)' outside a quoted literal"],
    ...["\\", "/", "#", "?", "%"].map((c): [string, string] => [
      `A_Currency('${c}..${c}A_BusinessPartner')`,
      `character '${c}' in a quoted literal of path segment 'A_Currency('${c}..${c}A_BusinessPartner')' cannot be forwarded unambiguously ` +
        (c === "%" ? "(a back end that decodes the path twice would decode what follows it)" : "(a back end that decodes the path first would read it as structure)") +
        ": select by it with $filter instead",
    ]),
  ];
  for (const [input, message] of cases) assert.is(refusal(() => encodeSegment(input)), message, JSON.stringify(input));
  assert.is(refusal(() => serializeQuery([{ name: " $expand", value: "x" }])), "query option name ' $expand' is not a plain token");
  // Back ends that decode the whole query before splitting it (SAP CAP) read a decoded '&' as a separator.
  const sep = "a back end that decodes the query before splitting it (SAP CAP does) would read another option there";
  assert.is(refusal(() => serializeQuery([{ name: "foo", value: "x&$expand=Items" }])), `query option 'foo' holds '&' in its value: ${sep}`);
  assert.is(refusal(() => serializeQuery([{ name: "@p", value: "'a&b'" }])), `query option '@p' holds '&' in its value: ${sep}`);
  assert.is(refusal(() => serializeQuery([{ name: "$search", value: "a&b" }])), `query option '$search' holds '&' in its value: ${sep}`);
  assert.is(refusal(() => serializeQuery([{ name: "$filter", value: "Name eq 'a'&$expand=Items" }])), `query option '$filter' holds '&' outside a quoted literal: ${sep}`);
  assert.is(serializeQuery([{ name: "$filter", value: "Name eq 'AT&T' or Name eq 'it''s&'" }]), "$filter=Name%20eq%20%27AT%26T%27%20or%20Name%20eq%20%27it%27%27s%26%27");
  // CAP's tokens for JSON, lists and double-quoted strings end without regard to single quotes; its nested $search at ';' or ')'.
  for (const [name, value, ch, where] of [
    ["$filter", "ID ne {'}&$expand=Items&x='}", "&", "beside JSON, a list or a double-quoted string"],
    ["$filter", "ID ne [']&$expand=Items&x=']", "&", "beside JSON, a list or a double-quoted string"],
    ["$orderby", "concat(ID,{'})&$expand=Items&x='})", "&", "beside JSON, a list or a double-quoted string"],
    ["$expand", "Customer($search=x';$expand=Orders;$search=')", ";", "inside a quoted literal of nested options"],
    ["$expand", "Customer($search=\"x;$expand=Orders;$search=\")", ";", "beside JSON, a list or a double-quoted string"],
    ["$expand", "Customer($search=[;$expand=Orders;$search=])", ";", "beside JSON, a list or a double-quoted string"],
    ["$expand", "Customer($search='x)',Orders)", ")", "inside a quoted literal of nested options"],
  ]) {
    assert.is(refusal(() => serializeQuery([{ name: name!, value: value! }])), `query option '${name}' holds '${ch}' ${where}: ${sep}`, value);
  }
  assert.is(serializeQuery([{ name: "$expand", value: "Items($filter=Name eq 'a';$top=1)" }]), "$expand=Items($filter%3DName%20eq%20%27a%27%3B$top%3D1)");
});

T("query values: unreserved and $ ( ) , / : @ * ! stay; everything else is encoded", () => {
  assert.is(encodeQueryValue("Name eq 'a+b;c&d=e#f?g%h'"), "Name%20eq%20%27a%2Bb%3Bc%26d%3De%23f%3Fg%25h%27");
  assert.is(encodeQueryValue("Items($select=ID,Note;$top=1)/x:y@z*!"), "Items($select%3DID,Note%3B$top%3D1)/x:y@z*!");
  assert.is(serializeTarget({ segments: [], query: [{ name: "$format", value: "json" }] }), "?$format=json");
  assert.is(serializeTarget({ segments: ["E"], query: [{ name: "flag", value: undefined }, { name: "x", value: "" }] }), "E?flag&x=");
});

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** encodeURIComponent, but a lone surrogate becomes the malformed UTF-8 a client would send for it. */
const clientEncode = (s: string) => s.replace(/[\s\S]/gu, (c) => (LONE_SURROGATE.test(c) ? "%ED%A0%80" : encodeURIComponent(c)));

/** Characters that make parsers disagree, mixed into arbitrary text. */
const hostile = fc.constantFrom(
  "\\", "#", "?", "/", "%", "%2F", "%25", "%2e", ".", "..", ";", "&", "=", "+", " ", "\t", "'", "''", '"', "(", ")", ",", "@", "$",
  "\u00a0", "\u3000", "\u2028", "\u0000", "\u007f", "ü", "😀", "\ud800", "[", "]", "{", "}", "<", ">", "`", "^", "|",
);
const text = fc.array(fc.oneof(fc.string({ maxLength: 4 }), hostile, fc.constantFrom("A_Currency", "SalesOrders", "'x'", "ID=1")), { maxLength: 12 }).map((a) => a.join(""));

T("property: an encoded segment decodes back exactly, is left alone by the WHATWG parser and holds no delimiter", () => {
  fc.assert(
    fc.property(text, (s) => {
      let out: string;
      try {
        out = encodeSegment(s);
      } catch (err) {
        if (err instanceof Refusal) return true;
        throw err;
      }
      assert.ok(/^[A-Za-z0-9\-._~()=,:@$+'%]+$/.test(out), `unexpected character in ${out}`);
      assert.is(decodeURIComponent(out), s);
      assert.ok(out !== "." && out !== ".." && !/^(\.|%2e){1,2}$/i.test(out));
      const url = new URL(`http://erp.example/root/${out}/next`);
      assert.is(url.pathname, `/root/${out}/next`);
      return true;
    }),
    { numRuns: 3000, seed: SEED },
  );
});

T("property: an encoded query value reads back exactly under decodeURIComponent, URLSearchParams, querystring and WHATWG", () => {
  fc.assert(
    fc.property(text, (v) => {
      let out: string;
      try {
        out = encodeQueryValue(v);
      } catch (err) {
        if (err instanceof Refusal && LONE_SURROGATE.test(v)) return true; // not Unicode: cannot be UTF-8 encoded
        throw err;
      }
      assert.ok(!/[&;=+#? '"\\]/.test(out), `a delimiter left raw in ${out}`);
      assert.is(decodeURIComponent(out), v);
      assert.is(new URLSearchParams(`x=${out}`).get("x"), v);
      assert.is(querystring.parse(`x=${out}`).x, v);
      assert.is(new URL(`http://erp.example/r?x=${out}`).search, `?x=${out}`);
      return true;
    }),
    { numRuns: 3000, seed: SEED },
  );
});

T.run();

// ---------------------------------------------------------------------------

const Fix = suite("target: the analyzer is a fixed point on what it writes");

const MODELS = [parseMetadata(V4_METADATA), parseMetadata(V2_METADATA), undefined];
const SETS = ["SalesOrders", "Customers", "Products", "Categories", "SalesOrderSet", "CustomerSet", "ProductSet"];
const NAVS = ["Items", "Customer", "Orders", "Note", "Category", "Parent", "Children", "ToItems", "ToCustomer", "$count", "$value", "$ref", "$links"];
/** A key predicate: well-formed mostly, hostile text inside a literal or bare sometimes. */
const key = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom("(1)", "('a')", "('O''Neil')", "(OrderID=1,Type='x')", "(ID=2)", "('1001')") },
  { weight: 3, arbitrary: text.map((t) => `('${t.replaceAll("'", "''")}')`) },
  { weight: 1, arbitrary: text.map((t) => `(${t})`) },
);
/** A decoded resource path: grammar first, hostile text mixed in. */
const decodedPath = fc
  .tuple(
    fc.constantFrom(...SETS),
    fc.option(key, { freq: 2 }),
    fc.array(fc.tuple(fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...NAVS) }, { weight: 1, arbitrary: text }), fc.option(key, { freq: 4 })), { maxLength: 2 }),
  )
  .map(([set, k, rest]) => [`${set}${k ?? ""}`, ...rest.map(([n, kk]) => `${n}${kk ?? ""}`)]);
/** A segment as a client may send it: encoded, or raw where that is possible in a request line. */
const sent = (s: string, raw: boolean) => (raw && /^[A-Za-z0-9_'(),=@$.:\\-]*$/.test(s) ? s : clientEncode(s));
const rawPath = fc.tuple(decodedPath, fc.boolean()).map(([segs, raw]) => segs.map((s) => sent(s, raw)).join("/"));
const option = fc.tuple(
  fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom("$filter", "$expand", "$select", "$top", "expand", "$EXPAND", "@p", "sap-language", "x", "$skip", "$orderby") },
    { weight: 1, arbitrary: fc.oneof(text, fc.constantFrom(" $expand", "$expand ", "\u3000$expand", "$exp%61nd")) },
  ),
  fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom("Customer", "Items($expand=Product)", "Note eq 'x'", "1", "Customer/Name eq @p", "ID,Note", "Orders($top=1;$select=ID)") },
    { weight: 2, arbitrary: text },
  ),
).map(([n, v]) => `${clientEncode(n)}=${clientEncode(v)}`);
const rawQuery = fc.array(option, { maxLength: 3 }).map((o) => o.join("&"));

Fix("property: analyzing what erplink writes gives the same target, the same text and the same accesses", () => {
  let accepted = 0;
  fc.assert(
    fc.property(fc.constantFrom(0, 1, 2), fc.constantFrom("GET", "GET", "DELETE", "PATCH"), rawPath, rawQuery, (m, method, path, query) => {
      const model = MODELS[m];
      const first = analyzeRequest({ method, path, query, headers: {}, ...(model ? { model } : {}) });
      if (first.kind === "denied" || first.kind === "invalid") return true;
      accepted++;
      const q = first.forward.indexOf("?");
      const again = analyzeRequest({
        method,
        path: q < 0 ? first.forward : first.forward.slice(0, q),
        query: q < 0 ? "" : first.forward.slice(q + 1),
        headers: {},
        ...(model ? { model } : {}),
      });
      assert.equal(again, first);
      return true;
    }),
    { numRuns: 20_000, seed: SEED },
  );
  // The property says nothing about refused requests: enough must pass for it to mean something.
  assert.ok(accepted >= 1000, `only ${accepted} of 20000 generated requests were accepted`);
});

Fix.run();
