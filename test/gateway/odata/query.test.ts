/**
 * Unit tests of src/gateway/odata/query.ts on its own: system query option
 * names and query-string parsing (decoding once, aliases, duplicates),
 * table-driven. What the options authorize is tested through
 * analyzeRequest in request.test.ts.
 */
import { suite } from "uvu";
import * as assert from "uvu/assert";
import { AccessList } from "../../../src/gateway/odata/accesses.js";
import { parseQuery, systemOptionName } from "../../../src/gateway/odata/parse/query.js";
import { Refusal } from "../../../src/gateway/odata/syntax.js";

function refusal(run: () => unknown): { kind: string; message: string } | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    assert.instance(error, Refusal);
    return { kind: (error as Refusal).kind, message: (error as Refusal).message };
  }
}

const names = suite("query: system option names");

const nameCases: [string, string | undefined][] = [
  ["$filter", "filter"],
  ["filter", "filter"],
  ["$FILTER", "filter"],
  ["Expand", "expand"],
  ["$InlineCount", "inlinecount"],
  ["$skiptoken", "skiptoken"],
  ["sap-client", undefined],
  ["filters", undefined],
  ["", undefined],
];
for (const [name, expected] of nameCases) {
  names(`'${name}' -> ${String(expected)}`, () => {
    assert.is(systemOptionName(name), expected);
  });
}

names("an unknown $ name is invalid", () => {
  assert.equal(refusal(() => systemOptionName("$filterx")), { kind: "invalid", message: "unknown system query option '$filterx'" });
});

names.run();

const parse = suite("query: parseQuery");

const parseCases: [string, string, [string, string][], [string, string][]][] = [
  ["empty", "", [], []],
  ["system options, decoded once", "$filter=Name%20eq%20'a%2527'&$top=2", [["filter", "Name eq 'a%27'"], ["top", "2"]], []],
  ["a plus is a space", "$filter=Name+eq+'a'", [["filter", "Name eq 'a'"]], []],
  ["an encoded name", "%24expand=Items&%40p=1", [["expand", "Items"]], [["@p", "1"]]],
  ["custom options are dropped", "sap-language=EN&x=1&$select=A", [["select", "A"]], []],
  ["empty parts are skipped", "&&$top=1&", [["top", "1"]], []],
  ["an option without value", "$count", [["count", ""]], []],
  ["aliases keep their case", "@P=1&@p=2", [], [["@P", "1"], ["@p", "2"]]],
  ["the first = splits", "$filter=a%20eq%20'x=y'", [["filter", "a eq 'x=y'"]], []],
];
for (const [name, query, options, aliases] of parseCases) {
  parse(name, () => {
    const parsed = parseQuery(query);
    assert.equal([...parsed.options], options);
    assert.equal([...parsed.aliases], aliases);
  });
}

const parseRefusals: [string, string, string][] = [
  ["a repeated option in another spelling", "$top=1&TOP=2", "system query option $top is given more than once"],
  ["a repeated alias", "@a=1&@a=1", "parameter alias '@a' is given more than once"],
  ["a malformed alias", "@1=2", "malformed parameter alias '@1'"],
  ["bad percent-encoding in a value", "$filter=%G1", "malformed percent-encoding in query option '$filter'"],
  ["bad percent-encoding in a name", "%G1=1", "malformed percent-encoding in a query option name"],
  ["a NUL", "$filter=a%00", "control character in query option '$filter'"],
  ["a too long query", "x".repeat(40_000), "query string is longer than 32768 characters"],
];
for (const [name, query, message] of parseRefusals) {
  parse(`invalid: ${name}`, () => {
    assert.equal(refusal(() => parseQuery(query)), { kind: "invalid", message });
  });
}

parse.run();

const list = suite("query: AccessList");

list("keeps the first of equal (entity set, operation) pairs, in order", () => {
  const accesses = new AccessList();
  accesses.add("A", "list", "first");
  accesses.add("B", "get", "second");
  accesses.add("A", "list", "again");
  accesses.add("A", "get", "third");
  assert.equal(accesses.items, [
    { entitySet: "A", operation: "list", reason: "first" },
    { entitySet: "B", operation: "get", reason: "second" },
    { entitySet: "A", operation: "get", reason: "third" },
  ]);
});

list.run();
